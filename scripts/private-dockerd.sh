#!/usr/bin/env bash
# One private dockerd, started and stopped: the one place that knows how. The shared engine
# (scripts/docker-engine.sh), the cluster's two engines (scripts/cluster.sh) and the tests'
# own engines (test/helpers/private-docker-engine.ts) all run it.
#
#   private-dockerd.sh start --run-dir DIR --home DIR --address-pool POOL [--log FILE]
#                            [--bridge NAME [--bridge-address CIDR]] [--wait-seconds N] [--fallback]
#   private-dockerd.sh stop  --run-dir DIR [--containers] [--term-seconds N]
#   private-dockerd.sh clear --run-dir DIR --home DIR [--bridge NAME]
#   private-dockerd.sh answers HOST
#
# --run-dir: the socket (docker.sock: the engine answers at unix://DIR/docker.sock), the pidfile
#   (dockerd.pid) and the exec root (exec/). Keep it short: a Unix socket path has at most 107 bytes.
# --home: the data root (data/), the log (dockerd.log, unless --log names another) and, with
#   --bridge before Docker 23, the engine's own key (daemon.json, key.json).
# --address-pool: dockerd's --default-address-pool, e.g. base=10.203.0.0/16,size=28.
# --bridge NAME: a second engine of this machine, beside the first (which owns docker0 and the
#   DOCKER iptables chains): its default network on bridge NAME (made, with --bridge-address as
#   its address, when missing), no iptables rules of its own (a second engine rewriting the
#   chains would break the first one's port forwards; published 127.0.0.1 ports go through
#   docker-proxy instead), no masquerading (no outbound NAT), and an engine id of its own.
#
# start: exits 0 once the engine answers; at once when it already runs, after waiting (up to
#   --wait-seconds, 60) when its dockerd runs but does not answer yet. With --fallback, a dockerd
#   that exits at start is tried once more with the vfs driver and without iptables.
# stop: SIGTERM to dockerd, SIGKILL after --term-seconds (60); returns once it is gone. With
#   --containers, the running containers are stopped first (with --live-restore they run on).
# clear: what a stopped engine leaves: mounts under --home and --run-dir, the bridge, the run dir.
# answers: exit status 0 when an engine answers at HOST.
# Progress goes to stderr; exit status 1 and the end of dockerd's log when it fails.
set -euo pipefail

say() { printf 'private-dockerd: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

# True when an engine answers at $1. Uses the HTTP API directly when there is no client yet.
answers() {
  local host="$1"
  if command -v docker >/dev/null 2>&1; then
    DOCKER_HOST="$host" timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
  elif [[ "$host" == unix://* ]] && command -v curl >/dev/null 2>&1; then
    [[ "$(curl -fsS --max-time 5 --unix-socket "${host#unix://}" http://docker/_ping 2>/dev/null)" == OK ]]
  else
    return 1
  fi
}

# True when pid $1 is a live $2: not a zombie, not a recycled pid of another program.
alive_as() {
  local pid="$1" name="$2" _pid comm state
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  read -r _pid comm state _ <"/proc/$pid/stat" 2>/dev/null || return 1
  [[ ("$name" == "" || "$comm" == "($name)") && "$state" != Z ]]
}

command="${1:-}"
[[ $# -gt 0 ]] && shift
run_dir="" home="" log_file="" address_pool="" bridge="" bridge_address="" wait_seconds=60 fallback=false
stop_containers=false term_seconds=60
if [[ "$command" == answers ]]; then
  [[ $# == 1 ]] || fail "answers takes one HOST"
  answers "$1"
  exit
fi
while (($#)); do
  case "$1" in
    --run-dir) run_dir="$2"; shift 2 ;;
    --home) home="$2"; shift 2 ;;
    --log) log_file="$2"; shift 2 ;;
    --address-pool) address_pool="$2"; shift 2 ;;
    --bridge) bridge="$2"; shift 2 ;;
    --bridge-address) bridge_address="$2"; shift 2 ;;
    --wait-seconds) wait_seconds="$2"; shift 2 ;;
    --term-seconds) term_seconds="$2"; shift 2 ;;
    --fallback) fallback=true; shift ;;
    --containers) stop_containers=true; shift ;;
    *) fail "unknown option $1 (usage: the head of $0)" ;;
  esac
done
[[ -n "$run_dir" ]] || fail "$command needs --run-dir"
socket="$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"
host="unix://$socket"
log_file="${log_file:-$home/dockerd.log}"

# A bridge of the engine's own: made once, kept across its restarts (its containers are on it).
ensure_bridge() {
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    [[ -n "$bridge_address" ]] || fail "no bridge $bridge, and no --bridge-address to make it with"
    ip link add "$bridge" type bridge
    ip addr add "$bridge_address" dev "$bridge"
  fi
  ip link set "$bridge" up
}

# What a killed engine leaves behind would stop a new one from starting: its pidfile and
# socket, and a containerd pidfile that dockerd would trust and then wait on for ever.
clear_stale_state() {
  rm -f "$pidfile" "$socket"
  local containerd_pidfile="$run_dir/exec/containerd/containerd.pid"
  if [[ -f "$containerd_pidfile" ]] && ! alive_as "$(cat "$containerd_pidfile" 2>/dev/null)" containerd; then
    rm -f "$containerd_pidfile"
  fi
}

# The options of a second engine (see --bridge above).
second_engine_options() {
  printf '%s\n' "--bridge=$bridge" --iptables=false --ip-masq=false
  # Before Docker 23 the engine id (`docker info` ID) comes from the trust key at
  # /etc/docker/key.json, which every dockerd of the machine shares: this engine gets a key
  # of its own, so it is told apart from the first one as a second machine's would be.
  # From 23 on the id lives in the data root, which is already this engine's own.
  local major
  major="$(dockerd --version | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')"
  if [[ -n "$major" ]] && ((major < 23)); then
    # A setting of daemon.json only: dockerd has no flag for it.
    printf '{"deprecated-key-path": "%s/key.json"}\n' "$home" >"$home/daemon.json"
    printf '%s\n' "--config-file=$home/daemon.json"
  fi
}

engine_pid=""
start_dockerd() {
  local options=()
  [[ -z "$bridge" ]] || mapfile -t options < <(second_engine_options)
  options+=("$@")
  say "starting dockerd on $host (data root $home/data, log $log_file${bridge:+, bridge $bridge}${*:+, options: $*})"
  # setsid + nohup: the engine outlives this script and the process that ran it.
  # --live-restore: without it, dockerd stops every container when it exits (SIGTERM, then
  # SIGKILL), and they stay exited when it comes back (restart policy "no"): each READY sandbox
  # would lose its emulator. With it, containers run on under their shims; only the engine API
  # and the docker-proxy port forwarders (children of dockerd) are gone until it returns and
  # restores them.
  # --default-address-pool: every sandbox gets a network of its own (docs/security.md,
  # "Sealed sandboxes"); Docker's default pools hold about thirty, /28s from a /16 4096.
  # --host first: `cluster.sh status` and `down` find an engine that lost its pidfile by
  # its command line, `dockerd --host=unix://…` (strays in scripts/cluster/commands.sh).
  setsid nohup dockerd \
    --host="$host" \
    --data-root="$home/data" \
    --exec-root="$run_dir/exec" \
    --pidfile="$pidfile" \
    --live-restore \
    --default-address-pool "$address_pool" \
    "${options[@]}" >>"$log_file" 2>&1 </dev/null &
  engine_pid=$!
}

# 0 when the engine answers; 1 when dockerd died; 2 when it is alive but silent too long.
# Just after `setsid nohup … &` the child may not have exec'd dockerd yet: a pid this script
# started is alive whatever its name; one from the pidfile only as dockerd.
wait_for_engine() {
  local name="$1" deadline=$((SECONDS + wait_seconds))
  while ((SECONDS < deadline)); do
    if answers "$host"; then return 0; fi
    alive_as "$engine_pid" "$name" || return 1
    sleep 0.5
  done
  return 2
}

cmd_start() {
  [[ -n "$home" && -n "$address_pool" ]] || fail "start needs --home and --address-pool"
  mkdir -p "$run_dir" "$home"
  chmod 0711 "$run_dir"
  [[ -z "$bridge" ]] || ensure_bridge
  local status=0 started_as=""
  engine_pid="$(cat "$pidfile" 2>/dev/null || true)"
  if alive_as "$engine_pid" dockerd; then
    answers "$host" && return 0
    say "dockerd (pid $engine_pid) is running but not answering yet; waiting"
    started_as=dockerd
  else
    clear_stale_state
    start_dockerd
  fi
  wait_for_engine "$started_as" || status=$?
  ((status == 0)) && return 0
  if ((status == 1)) && $fallback; then
    # overlay2 and iptables work on these machines; where they do not (no overlay module,
    # no netfilter), the vfs driver and the userland proxy still give loopback ports.
    tail -n 5 "$log_file" >&2 || true
    say "dockerd exited; retrying with --storage-driver=vfs --iptables=false"
    clear_stale_state
    start_dockerd --storage-driver=vfs --iptables=false
    status=0
    wait_for_engine "" || status=$?
    ((status == 0)) && return 0
  fi
  tail -n 30 "$log_file" >&2 || true
  if ((status == 2)); then
    fail "dockerd (pid $engine_pid) did not answer on $host within ${wait_seconds}s (log above, full log in $log_file)"
  fi
  fail "dockerd could not start (log above, full log in $log_file)"
}

cmd_stop() {
  local pid deadline
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  alive_as "$pid" dockerd || return 0
  if $stop_containers; then
    local containers
    containers="$(DOCKER_HOST="$host" timeout 30 docker ps -q 2>/dev/null || true)"
    if [[ -n "$containers" ]]; then
      say "stopping $(wc -w <<<"$containers") container(s) of the engine on $host"
      # shellcheck disable=SC2086 # one id per word
      DOCKER_HOST="$host" timeout 120 docker stop --time 10 $containers >/dev/null 2>&1 || true
    fi
  fi
  say "stopping dockerd (pid $pid) on $host"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + term_seconds))
  while alive_as "$pid" dockerd && ((SECONDS < deadline)); do sleep 0.2; done
  if alive_as "$pid" dockerd; then
    say "dockerd (pid $pid) ignored SIGTERM for ${term_seconds}s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || fail "cannot kill dockerd (pid $pid)"
    deadline=$((SECONDS + 10))
    while alive_as "$pid" dockerd && ((SECONDS < deadline)); do sleep 0.1; done
  fi
}

cmd_clear() {
  [[ -n "$home" ]] || fail "clear needs --home"
  local point
  # dockerd leaves its data root and network namespaces (and, after a crash, more) mounted:
  # unmount, deepest first.
  while IFS= read -r point; do
    umount --lazy "$point" 2>/dev/null || true
  done < <(awk -v data="${home%/}/" -v run="${run_dir%/}/" \
    'index($5 "/", data) == 1 || index($5 "/", run) == 1 { print length($5), $5 }' /proc/self/mountinfo | sort -rn | cut -d' ' -f2-)
  [[ -z "$bridge" ]] || ip link del "$bridge" 2>/dev/null || true
  rm -rf "$run_dir"
}

case "$command" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  clear) cmd_clear ;;
  *) fail "usage: $0 start|stop|clear|answers … (the head of this file says more)" ;;
esac
