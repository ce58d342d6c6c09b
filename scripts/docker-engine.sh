#!/usr/bin/env bash
# Makes a Docker engine available and prints `DOCKER_HOST=...` as its last line of stdout.
#
# 1. An engine already answering at $DOCKER_HOST, at the default socket or at our private
#    socket is used as it is (re-running while the engine runs does nothing).
# 2. Otherwise, as root on Debian: install `docker.io` (apt-get update first) if dockerd is
#    missing, start dockerd on a private socket with its own data root, and wait for it.
# 3. Otherwise: a clear error and exit status 1.
#
# Progress goes to stderr, so `eval "$(bash scripts/docker-engine.sh | tail -n 1)"` or
# `export "$(bash scripts/docker-engine.sh | tail -n 1)"` works.
set -euo pipefail

RUN_DIR="${SANDBOXPLANE_DOCKER_RUN_DIR:-/run/sandboxplane-docker}"
DATA_ROOT="${SANDBOXPLANE_DOCKER_DATA_ROOT:-/var/lib/sandboxplane-docker}"
SOCKET="$RUN_DIR/docker.sock"
PIDFILE="$RUN_DIR/dockerd.pid"
LOG_FILE="$DATA_ROOT/dockerd.log"
PRIVATE_HOST="unix://$SOCKET"
DEFAULT_HOST="unix:///var/run/docker.sock"
WAIT_SECONDS="${SANDBOXPLANE_DOCKER_WAIT_SECONDS:-60}"
ADDRESS_POOL="${SANDBOXPLANE_DOCKER_ADDRESS_POOL:-base=10.203.0.0/16,size=28}"

say() { printf 'docker-engine: %s\n' "$*" >&2; }
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

use() {
  if [[ -n "${DOCKER_HOST:-}" && "$DOCKER_HOST" != "$1" ]]; then say "no engine answers at DOCKER_HOST=$DOCKER_HOST; use $1"; fi
  printf 'DOCKER_HOST=%s\n' "$1"
  exit 0
}

candidates=()
[[ -n "${DOCKER_HOST:-}" ]] && candidates+=("$DOCKER_HOST")
candidates+=("$DEFAULT_HOST" "$PRIVATE_HOST")
for host in "${candidates[@]}"; do
  if answers "$host"; then use "$host"; fi
done

if [[ "$(id -u)" != 0 ]]; then
  fail "no Docker engine answers (tried ${candidates[*]}), and starting one needs root. Start Docker, or set DOCKER_HOST to an engine that runs."
fi

if ! command -v dockerd >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || fail "no Docker engine answers and dockerd is not installed; this script installs it only on Debian (apt-get). Install Docker, or set DOCKER_HOST."
  say "installing docker.io (apt-get update, then apt-get install)"
  apt_log="$(mktemp)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io; } >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    fail "apt-get could not install docker.io (output above)"
  fi
  rm -f "$apt_log"
  # A package that started its own engine (a machine with systemd) is just as good.
  if answers "$DEFAULT_HOST"; then use "$DEFAULT_HOST"; fi
fi

mkdir -p "$RUN_DIR" "$DATA_ROOT"
chmod 0711 "$RUN_DIR"

# True when pid $1 is a live $2: not a zombie, not a recycled pid of another program.
alive_as() {
  local pid="$1" name="$2" _pid comm state
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  read -r _pid comm state _ <"/proc/$pid/stat" 2>/dev/null || return 1
  [[ "$comm" == "($name)" && "$state" != Z ]]
}
dockerd_alive() { alive_as "$1" dockerd; }

# What a killed engine leaves behind would stop a new one from starting: its pidfile and
# socket, and a containerd pidfile that dockerd would trust and then wait on for ever.
clear_stale_state() {
  rm -f "$PIDFILE" "$SOCKET"
  local containerd_pidfile="$RUN_DIR/exec/containerd/containerd.pid"
  if [[ -f "$containerd_pidfile" ]] && ! alive_as "$(cat "$containerd_pidfile" 2>/dev/null)" containerd; then
    rm -f "$containerd_pidfile"
  fi
}

start_dockerd() {
  say "starting dockerd on $PRIVATE_HOST (data root $DATA_ROOT/data, log $LOG_FILE${*:+, options: $*})"
  # setsid + nohup: the engine outlives this script and the shell that ran it.
  # --live-restore: sandboxes' containers keep running while dockerd restarts.
  # --default-address-pool: every sandbox gets a network of its own (docs/security.md,
  # "Sealed sandboxes"); Docker's default pools hold about thirty, these /28s 4096.
  setsid nohup dockerd \
    --live-restore \
    --default-address-pool "$ADDRESS_POOL" \
    --host="$PRIVATE_HOST" \
    --data-root="$DATA_ROOT/data" \
    --exec-root="$RUN_DIR/exec" \
    --pidfile="$PIDFILE" \
    "$@" >>"$LOG_FILE" 2>&1 </dev/null &
  engine_pid=$!
}

# 0 when the engine answers; 1 when dockerd died; 2 when it is alive but silent too long.
wait_for_engine() {
  local deadline=$((SECONDS + WAIT_SECONDS))
  while ((SECONDS < deadline)); do
    if answers "$PRIVATE_HOST"; then return 0; fi
    dockerd_alive "$engine_pid" || return 1
    sleep 0.5
  done
  return 2
}

engine_pid="$(cat "$PIDFILE" 2>/dev/null || true)"
if dockerd_alive "$engine_pid"; then
  say "dockerd (pid $engine_pid) is running but not answering yet; waiting"
else
  clear_stale_state
  start_dockerd
fi

status=0
wait_for_engine || status=$?
if ((status == 0)); then use "$PRIVATE_HOST"; fi

if ((status == 1)); then
  # overlay2 and iptables work on these machines; where they do not (no overlay module,
  # no netfilter), the vfs driver and the userland proxy still give loopback ports.
  tail -n 5 "$LOG_FILE" >&2 || true
  say "dockerd exited; retrying with --storage-driver=vfs --iptables=false"
  clear_stale_state
  start_dockerd --storage-driver=vfs --iptables=false
  status=0
  wait_for_engine || status=$?
  if ((status == 0)); then use "$PRIVATE_HOST"; fi
fi

tail -n 30 "$LOG_FILE" >&2 || true
if ((status == 2)); then
  fail "dockerd (pid $engine_pid) did not answer on $PRIVATE_HOST within ${WAIT_SECONDS}s (log above, full log in $LOG_FILE)"
fi
fail "dockerd could not start (log above, full log in $LOG_FILE)"
