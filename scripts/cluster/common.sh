# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# The cluster's settings (ports, paths) and the helpers every part uses. Sourced first by
# scripts/cluster.sh (which sets $root and says what each command does).

tools_bin="$root/.tools/bin"
# Canonical: the keys below are derived from it, whatever directory `down` is run from.
DATA="$(realpath -m "${SANDBOXPLANE_CLUSTER_DIR:-$root/.data/cluster}")"
HOST="127.0.0.1"
# Away from the dev server's 7233 and the tests' random ports.
PG_PORT="${SANDBOXPLANE_CLUSTER_PG_PORT:-15432}"
FRONTEND_PORT="${SANDBOXPLANE_CLUSTER_FRONTEND_PORT:-17233}"
FRONTEND_HTTP_PORT="${SANDBOXPLANE_CLUSTER_FRONTEND_HTTP_PORT:-17243}"
HISTORY_PORT=17234
MATCHING_PORT=17235
WORKER_PORT=17239
MEMBERSHIP_BASE=16900             # membership (ringpop) port = base + last two digits of the gRPC port
UI_PORT="${SANDBOXPLANE_CLUSTER_UI_PORT:-18233}"
# The payload codec server the UI decrypts through (`sandboxctl codec-server`, the workers' keys).
CODEC_PORT="${SANDBOXPLANE_CLUSTER_CODEC_PORT:-18234}"
# The gateway agents reach the plane through (`sandboxctl gateway`, API keys; DESIGN §18).
GATEWAY_PORT="${SANDBOXPLANE_CLUSTER_GATEWAY_PORT:-18787}"
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
RETENTION="${SANDBOXPLANE_CLUSTER_RETENTION:-72h}"
LOG_LEVEL="${SANDBOXPLANE_CLUSTER_LOG_LEVEL:-info}"
NUM_HISTORY_SHARDS=4              # fixed for the life of the data: changing it needs a new database
WAIT_SECONDS="${SANDBOXPLANE_CLUSTER_WAIT_SECONDS:-90}"
SERVICES=(history matching frontend worker)   # start order; stop order is the reverse

# Keyed by $DATA: the paths below that must live outside it.
KEY="$(printf '%s' "$DATA" | sha256sum | cut -c1-8)"
# PostgreSQL runs as the `postgres` user, who may not reach into $DATA (a checkout under
# /root, say): its data directory and log live under /var/lib, linked from $DATA.
PG_HOME="/var/lib/sandboxplane-cluster/$KEY"
PG_DATA="$PG_HOME/postgres"
PG_LOG="$PG_HOME/postgres.log"
PG_USER="temporal"                # superuser of the private cluster (as in docker-compose.yml)
PG_PASSWORD_FILE="$DATA/secrets/postgres-password"
LOG_DIR="$DATA/logs"
RUN_DIR="$DATA/run"
CONFIG_DIR="$DATA/config"
UI_DIR="$DATA/ui"
TLS_DIR="$DATA/tls"

server_bin="$tools_bin/temporal-server"
sql_tool_bin="$tools_bin/temporal-sql-tool"
ui_bin="$tools_bin/temporal-ui-server"
cli_bin="$tools_bin/temporal"

say() { printf 'cluster: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
need_root() { [[ "$(id -u)" == 0 ]] || fail "cluster.sh $1 runs as root (PostgreSQL runs as the postgres user; dockerd, bridges)"; }

grpc_port() {
  case "$1" in
    frontend) echo "$FRONTEND_PORT" ;; history) echo "$HISTORY_PORT" ;;
    matching) echo "$MATCHING_PORT" ;; worker) echo "$WORKER_PORT" ;;
  esac
}
membership_port() { local p; p="$(grpc_port "$1")"; echo $((MEMBERSHIP_BASE + p % 100)); }

# True when something accepts TCP connections on $HOST:$1.
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# True when pid $1 is a live process whose command name is $2 (not a zombie, not a recycled pid).
alive_as() {
  local pid="$1" name="$2" _pid comm state
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  read -r _pid comm state _ <"/proc/$pid/stat" 2>/dev/null || return 1
  [[ "$comm" == "(${name:0:15})" && "$state" != Z ]]
}
# True when pid $1 lives and is no zombie, whatever its name: just after `setsid nohup … &`
# the child may not have exec'd the server yet.
alive() {
  local pid="$1" _pid comm state
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  read -r _pid comm state _ <"/proc/$pid/stat" 2>/dev/null || return 1
  [[ "$state" != Z ]]
}
pid_of() { cat "$RUN_DIR/$1.pid" 2>/dev/null || true; }

wait_for_port() {
  local name="$1" port="$2" pid="$3" log="$4" deadline=$((SECONDS + WAIT_SECONDS))
  until port_open "$port"; do
    if ! alive "$pid"; then
      tail -n 20 "$log" >&2
      fail "$name exited (log above, full log in $log)"
    fi
    ((SECONDS < deadline)) || { tail -n 20 "$log" >&2; fail "$name does not listen on $port after ${WAIT_SECONDS}s (log $log)"; }
    sleep 0.5
  done
}

# start_daemon NAME WHAT COMM PORT URL COMMAND...: COMMAND, logging to $LOG_DIR/NAME.log, unless
# $RUN_DIR/NAME.pid names a live COMM already; then waits until it listens on PORT. WHAT names
# it in messages, URL says where it answers.
start_daemon() {
  local name="$1" what="$2" comm="$3" port="$4" url="$5" pid log="$LOG_DIR/$1.log"
  shift 5
  pid="$(pid_of "$name")"
  if alive_as "$pid" "$comm"; then
    say "$what already runs (pid $pid)"
  else
    rm -f "$RUN_DIR/$name.pid"
    port_open "$port" && fail "port $port ($what) is taken by something else"
    say "starting $what on $url (log $log)"
    # setsid + nohup: the process outlives this script and the shell that ran it.
    setsid nohup "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/$name.pid"
  fi
  wait_for_port "$what" "$port" "$(pid_of "$name")" "$log"
}

# SIGTERM to the process of pid file NAME if it is a live COMM, SIGKILL after 30s.
stop_process() {
  local name="$1" comm="$2" pid deadline
  pid="$(pid_of "$name")"
  if alive_as "$pid" "$comm"; then
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 30))
    while alive_as "$pid" "$comm" && ((SECONDS < deadline)); do sleep 0.2; done
    if alive_as "$pid" "$comm"; then
      say "$name (pid $pid) ignored SIGTERM for 30s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || fail "cannot kill $name (pid $pid)"
      deadline=$((SECONDS + 10))
      while alive_as "$pid" "$comm" && ((SECONDS < deadline)); do sleep 0.1; done
    fi
  fi
  rm -f "$RUN_DIR/$name.pid"
}
