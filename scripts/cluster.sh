#!/usr/bin/env bash
# A real Temporal cluster on PostgreSQL on this machine (DESIGN §10/§11, issue 14).
#
#   bash scripts/cluster.sh up       # idempotent; last two lines: TEMPORAL_ADDRESS=… and TEMPORAL_UI=…
#   bash scripts/cluster.sh up --telemetry     # also Jaeger and Prometheus, the workers wired to
#                                    # them (kept for later `up`s until `up --no-telemetry`)
#   bash scripts/cluster.sh down     # stops everything `up` started; the data stays
#   bash scripts/cluster.sh status   # what runs, where; exit status 0 only when all of it runs
#   bash scripts/cluster.sh topology # the plane workers `up` starts, as JSON lines (starts nothing)
#   bash scripts/cluster.sh restart lifecycle-1   # one worker stopped (it drains) and started again
#   bash scripts/cluster.sh rollout  # lifecycle workers of the build in the checkout now: started,
#                                    # made current; the old build's workers drain (DESIGN §16)
#   bash scripts/cluster.sh drain    # stops old-build lifecycle workers that no sandbox is pinned to
#   bash scripts/cluster.sh purge    # down, then delete the data too (PostgreSQL, engines, SQLite)
#   bash scripts/cluster.sh env      # `export` lines pointing sandboxctl and the temporal CLI at the
#                                    # cluster with the operator's certificate: eval "$(… env)"
#
# Ports (127.0.0.1 only, away from the dev server's 7233 and the tests' random ports):
# PostgreSQL 15432; frontend gRPC 17233 and HTTP 17243; history 17234, matching 17235,
# worker 17239 (identity only: the worker service serves no gRPC); membership 169xx (same
# last two digits); UI 18233, its codec server 18234, the gateway 18787. Each plane worker serves Prometheus
# metrics on 19464 (store), 19465-19466 (lifecycle-1, -2), 19467-19468 (docker-a, -b), or 10
# up when one is held (a rollout's new lifecycle workers, beside the draining ones); with
# --telemetry, Jaeger takes OTLP on 14318 and its UI 26686, Prometheus 19090.
# SANDBOXPLANE_CLUSTER_{PG,FRONTEND,FRONTEND_HTTP,UI,CODEC,GATEWAY}_PORT move them.
#
# `up`, as root on Debian:
#   1. PostgreSQL from Debian's packages (apt-get if missing), a private cluster on
#      127.0.0.1:$PG_PORT, run as the `postgres` user, its data in
#      /var/lib/sandboxplane-cluster/<key>/postgres (linked as .data/cluster/postgres); the
#      system cluster, if any, is never touched.
#   2. The Temporal server $SERVER_VERSION (scripts/temporal-server: the released server with
#      a role for each client certificate, DESIGN §18), its SQL schema tool and the UI server
#      the pinned CLI embeds, built once with Go into .tools/bin (cached: later runs only read
#      a file).
#   3. Databases `temporal` and `temporal_visibility`, created and migrated with the schema tool
#      (the schemas are embedded in it; `update-schema` is a no-op when current).
#   4. The server as four processes (frontend, history, matching, worker) sharing one config,
#      then the namespace and the search attributes of DESIGN §11, then the UI server. Every
#      gRPC (and HTTP) port of the server requires mTLS (DESIGN §18): a CA and certificates
#      made once with openssl in .data/cluster/tls/ (make_tls below): the frontend's and the
#      internode one, and client certificates for the workers, the operator, the gateway
#      and the UI. A process without one gets nothing from the cluster.
#   5. Two private Docker engines, a and b (own socket, data root and bridge each), with the
#      moto image, standing in for two machines' engines.
#   6. The plane: one store worker (the only SQLite file, .data/cluster/plane/), two lifecycle
#      workers, and one docker worker per engine (host ids a and b), all `sandboxctl worker`
#      on task queue $SANDBOXPLANE_TASK_QUEUE (default sandboxplane); then the codec server
#      the UI decrypts payloads through (`sandboxctl codec-server`, the checkout's codec keys),
#      and the gateway agents use (`sandboxctl gateway`, with the gateway's certificate, beside
#      the store's SQLite file whose key table it reads).
#   7. With --telemetry: scripts/telemetry.sh (Jaeger, Prometheus scraping every worker), started
#      before the workers so their first spans have somewhere to go.
# Anything missing is started again: after a crash, `up` restores what is gone.
# Logs: .data/cluster/logs/; pid files: .data/cluster/run/. Progress goes to stderr, so
# `eval "$(bash scripts/cluster.sh up | tail -n 2)"` works.
set -euo pipefail

SERVER_VERSION="v1.29.1"      # the server the pinned temporal CLI (v1.5.1) embeds; docker-compose.yml names it
SERVER_MODULE="go.temporal.io/server"
UI_VERSION="v2.42.1"          # the ui-server module the pinned temporal CLI (v1.5.1) embeds
UI_MODULE="github.com/temporalio/ui-server/v2"
MIN_GO_TOOLCHAIN="go1.25.0"    # used only when the installed go is older (see go_build)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  PATH="$PATH:/usr/local/go/bin"
fi

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

# ---------------------------------------------------------------------------------------------
# Binaries
# ---------------------------------------------------------------------------------------------

module_version() { go version -m "$1" 2>/dev/null | awk -v mod="$2" '$1 == "mod" && $2 == mod { print $3 }'; }

# go_toolchain WHAT: the GOTOOLCHAIN that builds WHAT. The server's go.mod wants Go >= 1.25. An
# older go (>= 1.21) fetches that toolchain itself through the module proxy
# (golang.org/toolchain) when GOTOOLCHAIN names it; this machine's go env says
# GOTOOLCHAIN=local, which never switches on its own.
go_toolchain() {
  local toolchain go_minor
  toolchain="$(go env GOTOOLCHAIN)"
  go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')"
  if [[ -n "$go_minor" ]] && ((go_minor < 25)); then
    ((go_minor >= 21)) || fail "Go $(go env GOVERSION) is too old to build $1 (needs >= 1.25, or >= 1.21 to fetch 1.25)"
    toolchain="$MIN_GO_TOOLCHAIN"
  fi
  echo "$toolchain"
}

# build_server: .tools/bin/temporal-server from scripts/temporal-server (go.temporal.io/server
# $SERVER_VERSION, with the certificate roles of DESIGN §18), once per change of its source.
build_server() {
  local src="$root/scripts/temporal-server" target="$tools_bin/temporal-server" version toolchain tmp started=$SECONDS
  version="$SERVER_VERSION+roles-$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)"
  if [[ -x "$target" && "$(cat "$target.version" 2>/dev/null)" == "$version" ]]; then return 0; fi
  command -v go >/dev/null 2>&1 || fail "Go is needed to build the Temporal server once (install Go >= 1.21)"
  toolchain="$(go_toolchain "the Temporal server")"
  tmp="$(mktemp -d)"
  say "building the Temporal server $SERVER_VERSION with its certificate roles (scripts/temporal-server); once, a few minutes"
  if ! (cd "$src" && GOTOOLCHAIN="$toolchain" GOFLAGS=-mod=readonly go build -o "$tmp/temporal-server" .); then
    rm -rf "$tmp"
    fail "go build of scripts/temporal-server failed (output above)"
  fi
  mkdir -p "$tools_bin"
  mv -f "$tmp/temporal-server" "$target"
  rm -rf "$tmp"
  echo "$version" >"$target.version"
  say "installed $target ($((SECONDS - started))s)"
}

# go_build BIN MODULE PACKAGE VERSION: installs PACKAGE@VERSION as .tools/bin/BIN once.
go_build() {
  local bin="$1" module="$2" pkg="$3" version="$4" target="$tools_bin/$1"
  local version_file="$target.version"
  if [[ -x "$target" && "$(cat "$version_file" 2>/dev/null)" == "$version" ]]; then return 0; fi
  command -v go >/dev/null 2>&1 || fail "Go is needed to build $pkg@$version once (install Go >= 1.21; the module's own go line picks the toolchain through the module proxy)"
  if [[ -x "$target" && "$(module_version "$target" "$module")" == "$version" ]]; then
    echo "$version" >"$version_file"
    return 0
  fi
  local toolchain tmp started=$SECONDS
  toolchain="$(go_toolchain "$pkg@$version")"
  tmp="$(mktemp -d)"
  say "building $pkg@$version with $(go env GOVERSION) (GOTOOLCHAIN=$toolchain); once, a few minutes"
  # GOBIN names the binary after the package's last element (`server`, `sql`): build aside, then rename.
  if ! GOTOOLCHAIN="$toolchain" GOBIN="$tmp" go install "$pkg@$version"; then
    rm -rf "$tmp"
    fail "go install $pkg@$version failed (output above)"
  fi
  mkdir -p "$tools_bin"
  mv -f "$tmp/$(basename "$pkg")" "$target"
  rm -rf "$tmp"
  echo "$version" >"$version_file"
  say "installed $target ($((SECONDS - started))s)"
}

build_binaries() {
  build_server
  go_build temporal-sql-tool "$SERVER_MODULE" "$SERVER_MODULE/cmd/tools/sql" "$SERVER_VERSION"
  go_build temporal-ui-server "$UI_MODULE" "$UI_MODULE/cmd/server" "$UI_VERSION"
  local cli
  cli="$(bash "$root/scripts/install-temporal-cli.sh" | tail -n 1)" || fail "no temporal CLI (scripts/install-temporal-cli.sh failed)"
  [[ "$cli" == "$cli_bin" ]] || cli_bin="$cli"
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------

pg_bindir=""
find_pg_bindir() {
  local dir
  # Debian keeps each major version's server binaries in /usr/lib/postgresql/N/bin.
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1 || true)"
  if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then pg_bindir="$dir"; return 0; fi
  return 1
}

install_postgres() {
  find_pg_bindir && return 0
  [[ "$(id -u)" == 0 ]] || fail "PostgreSQL is not installed and installing it needs root"
  command -v apt-get >/dev/null 2>&1 || fail "PostgreSQL is not installed; this script installs it only on Debian (apt-get)"
  say "installing postgresql (apt-get update, then apt-get install)"
  local apt_log
  apt_log="$(mktemp)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql postgresql-client; } >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    fail "apt-get could not install postgresql (output above)"
  fi
  rm -f "$apt_log"
  find_pg_bindir || fail "postgresql installed, but no /usr/lib/postgresql/*/bin/initdb"
}

as_postgres() { runuser -u postgres -- "$@"; }

pg_password() { cat "$PG_PASSWORD_FILE"; }

psql_q() { PGPASSWORD="$(pg_password)" "$pg_bindir/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 -qtAc "$1"; }

init_postgres() {
  id postgres >/dev/null 2>&1 || fail "no 'postgres' user (Debian's postgresql package creates it)"
  mkdir -p "$DATA/secrets" "$LOG_DIR"
  chmod 0700 "$DATA/secrets"
  if [[ ! -s "$PG_PASSWORD_FILE" ]]; then
    (umask 077; od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$PG_PASSWORD_FILE")
  fi
  mkdir -p "$PG_HOME"
  chmod 0755 "$PG_HOME" "$(dirname "$PG_HOME")"
  touch "$PG_LOG"
  chown postgres: "$PG_LOG"
  ln -sfn "$PG_LOG" "$LOG_DIR/postgres.log"
  ln -sfn "$PG_DATA" "$DATA/postgres"
  [[ -f "$PG_DATA/PG_VERSION" ]] && return 0
  say "initdb $PG_DATA (superuser $PG_USER, password in $PG_PASSWORD_FILE)"
  rm -rf "$PG_DATA"
  mkdir -p "$PG_DATA"
  chown postgres: "$PG_DATA"
  chmod 0700 "$PG_DATA"
  local pwfile
  pwfile="$(mktemp)"
  cp "$PG_PASSWORD_FILE" "$pwfile"
  chown postgres: "$pwfile"
  if ! as_postgres "$pg_bindir/initdb" -D "$PG_DATA" -U "$PG_USER" --pwfile="$pwfile" \
      --auth-host=scram-sha-256 --auth-local=peer -E UTF8 --locale=C >"$LOG_DIR/initdb.log" 2>&1; then
    rm -f "$pwfile"
    tail -n 20 "$LOG_DIR/initdb.log" >&2
    fail "initdb failed (output above)"
  fi
  rm -f "$pwfile"
}

pg_running() { [[ -f "$PG_DATA/PG_VERSION" ]] && as_postgres "$pg_bindir/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; }

start_postgres() {
  if pg_running; then
    say "postgres already runs ($PG_DATA)"
  else
    port_open "$PG_PORT" && fail "port $PG_PORT is taken by something else (ss -ltnp 'sport = :$PG_PORT')"
    say "starting postgres on $HOST:$PG_PORT (log $PG_LOG)"
    # No Unix socket (-k ''): nothing of ours lands in /var/run/postgresql.
    if ! as_postgres "$pg_bindir/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$WAIT_SECONDS" \
        -o "-p $PG_PORT -h $HOST -k '' -N 200" start >/dev/null; then
      tail -n 20 "$PG_LOG" >&2
      fail "postgres did not start (log above)"
    fi
  fi
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$pg_bindir/pg_isready" -q -h "$HOST" -p "$PG_PORT"; do
    ((SECONDS < deadline)) || fail "postgres does not answer on $HOST:$PG_PORT"
    sleep 0.5
  done
}

stop_postgres() {
  find_pg_bindir || return 0
  if pg_running; then
    say "stopping postgres"
    as_postgres "$pg_bindir/pg_ctl" -D "$PG_DATA" -m fast -w -t "$WAIT_SECONDS" stop >/dev/null
  fi
}

# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------

sql_tool() {
  SQL_PASSWORD="$(pg_password)" "$sql_tool_bin" --plugin postgres12 --ep "$HOST" -p "$PG_PORT" -u "$PG_USER" "$@"
}

migrate() {
  local db="$1" schema="$2" log="$LOG_DIR/schema.log"
  if [[ -z "$(psql_q "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
    say "creating database $db"
    sql_tool --db "$db" create-database >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "create-database $db failed"; }
  fi
  local has_versioning
  has_versioning="$(PGPASSWORD="$(pg_password)" "$pg_bindir/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" -qtAc \
    "SELECT 1 FROM information_schema.tables WHERE table_name = 'schema_version'")"
  if [[ -z "$has_versioning" ]]; then
    sql_tool --db "$db" setup-schema -v 0.0 >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "setup-schema $db failed"; }
  fi
  # The schemas ship inside the tool (also in the module cache: …/server@$SERVER_VERSION/schema/$schema).
  sql_tool --db "$db" update-schema --schema-name "$schema" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "update-schema $db failed"; }
  say "database $db at schema version $(PGPASSWORD="$(pg_password)" "$pg_bindir/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" -qtAc 'SELECT curr_version FROM schema_version')"
}

# ---------------------------------------------------------------------------------------------
# TLS: a private CA and every party's certificate (DESIGN §18)
# ---------------------------------------------------------------------------------------------

# Every certificate of the server names these (and localhost, 127.0.0.1): clients check the
# frontend's against TLS_SERVER_NAME, the services each other's against TLS_INTERNODE_NAME.
TLS_SERVER_NAME="sandboxplane-temporal"
TLS_INTERNODE_NAME="sandboxplane-internode"
# Client certificates, by file name (CN sandboxplane-NAME): the plane's workers, operators
# (sandboxctl, the temporal CLI, this script), `sandboxctl gateway`, the UI server.
TLS_CLIENTS=(worker operator gateway ui)
TLS_CA_DAYS=3650
TLS_LEAF_DAYS=397
TLS_RENEW_SECONDS=$((30 * 86400))  # a certificate with less left is made again by `up`
TLS_REMADE=()                        # what this `up` made again while the server ran

tls_cert() { echo "$TLS_DIR/$1.pem"; }
tls_key() { echo "$TLS_DIR/$1-key.pem"; }

# The CA: made when missing (every certificate is then made again, signed by the new one).
make_ca() {
  [[ -s "$TLS_DIR/ca.pem" && -s "$TLS_DIR/ca-key.pem" ]] && return 0
  say "making the cluster's CA in $TLS_DIR (ca.pem; its key ca-key.pem signs every certificate here)"
  local conf
  conf="$(mktemp)"
  printf '[req]\ndistinguished_name = dn\n[dn]\n[ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n' >"$conf"
  if ! (umask 077; openssl req -x509 -new -newkey rsa:2048 -nodes -sha256 -days "$TLS_CA_DAYS" -config "$conf" -extensions ca \
      -subj "/O=sandboxplane/CN=sandboxplane cluster CA" -keyout "$TLS_DIR/ca-key.pem.partial" -out "$TLS_DIR/ca.pem.partial" 2>"$TLS_DIR/openssl.log"); then
    rm -f "$conf"
    cat "$TLS_DIR/openssl.log" >&2
    fail "openssl could not make the CA (output above)"
  fi
  rm -f "$conf"
  chmod 0600 "$TLS_DIR/ca-key.pem.partial"
  chmod 0644 "$TLS_DIR/ca.pem.partial"
  mv -f "$TLS_DIR/ca-key.pem.partial" "$TLS_DIR/ca-key.pem"
  mv -f "$TLS_DIR/ca.pem.partial" "$TLS_DIR/ca.pem"
}

# make_leaf NAME CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]: NAME.pem and NAME-key.pem (0600),
# signed by the CA; kept while they verify against it with more than 30 days left.
make_leaf() {
  local name="$1" cn="$2" usage="$3" san="${4:-}" cert key ext
  cert="$(tls_cert "$name")"; key="$(tls_key "$name")"
  if [[ -s "$cert" && -s "$key" ]] && openssl verify -CAfile "$TLS_DIR/ca.pem" "$cert" >/dev/null 2>&1 &&
      openssl x509 -in "$cert" -noout -checkend "$TLS_RENEW_SECONDS" >/dev/null 2>&1; then
    return 0
  fi
  [[ -s "$cert" ]] && TLS_REMADE+=("$name")
  say "making certificate $name (CN=$cn) in $TLS_DIR"
  ext="$(mktemp)"
  printf 'basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = %s\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n' "$usage" >"$ext"
  [[ -z "$san" ]] || printf 'subjectAltName = %s\n' "$san" >>"$ext"
  if ! { (umask 077; openssl req -new -newkey rsa:2048 -nodes -subj "/O=sandboxplane/CN=$cn" -keyout "$key.partial" -out "$TLS_DIR/$name.csr") &&
      openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca-key.pem" -set_serial "0x$(openssl rand -hex 16)" \
        -days "$TLS_LEAF_DAYS" -sha256 -extfile "$ext" -out "$cert.partial"; } 2>"$TLS_DIR/openssl.log"; then
    rm -f "$ext" "$TLS_DIR/$name.csr" "$key.partial" "$cert.partial"
    cat "$TLS_DIR/openssl.log" >&2
    fail "openssl could not make certificate $name (output above)"
  fi
  rm -f "$ext" "$TLS_DIR/$name.csr"
  chmod 0600 "$key.partial"
  chmod 0644 "$cert.partial"
  mv -f "$key.partial" "$key"
  mv -f "$cert.partial" "$cert"
}

# Made once and kept (`up` makes again only what is missing, expiring or not signed by the CA):
# the frontend's certificate, the internode one (history, matching and worker serve with it,
# and every service presents it to the others and, as the server's system worker, to the
# frontend), and a client certificate for each of TLS_CLIENTS.
make_tls() {
  command -v openssl >/dev/null 2>&1 || fail "no openssl: the cluster's certificates are made with it (apt-get install openssl)"
  mkdir -p "$TLS_DIR"
  chmod 0700 "$TLS_DIR"
  make_ca
  local hosts="DNS:localhost,IP:$HOST" name
  make_leaf server "$TLS_SERVER_NAME" serverAuth "DNS:$TLS_SERVER_NAME,$hosts"
  make_leaf internode "$TLS_INTERNODE_NAME" serverAuth,clientAuth "DNS:$TLS_INTERNODE_NAME,DNS:$TLS_SERVER_NAME,$hosts"
  for name in "${TLS_CLIENTS[@]}"; do make_leaf "$name" "sandboxplane-$name" clientAuth; done
  rm -f "$TLS_DIR/openssl.log"
  if ((${#TLS_REMADE[@]})); then
    say "made again: ${TLS_REMADE[*]}; processes that run already keep the old ones until they start again (\`cluster.sh down\`, then \`up\`)"
  fi
}

# The temporal CLI's flags for a client certificate (operator by default).
tls_cli_flags() {
  local name="${1:-operator}"
  echo "--tls-cert-path=$(tls_cert "$name")"
  echo "--tls-key-path=$(tls_key "$name")"
  echo "--tls-ca-path=$TLS_DIR/ca.pem"
  echo "--tls-server-name=$TLS_SERVER_NAME"
}

# sandboxctl's variables for a client certificate, as KEY=VALUE lines.
tls_plane_env() {
  local name="$1"
  echo "SANDBOXPLANE_TEMPORAL_TLS_CERT=$(tls_cert "$name")"
  echo "SANDBOXPLANE_TEMPORAL_TLS_KEY=$(tls_key "$name")"
  echo "SANDBOXPLANE_TEMPORAL_TLS_CA=$TLS_DIR/ca.pem"
  echo "SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME=$TLS_SERVER_NAME"
}

# ---------------------------------------------------------------------------------------------
# Temporal server
# ---------------------------------------------------------------------------------------------

write_server_config() {
  mkdir -p "$CONFIG_DIR"
  local services="" svc
  for svc in frontend history matching worker; do
    services+="  $svc:
    rpc:
      grpcPort: $(grpc_port "$svc")
      membershipPort: $(membership_port "$svc")
      bindOnIP: $HOST
"
    [[ "$svc" == frontend ]] && services+="      httpPort: $FRONTEND_HTTP_PORT
"
  done
  local datastore
  datastore() {
    cat <<EOF
    $1:
      sql:
        pluginName: postgres12
        databaseName: $2
        connectAddr: "$HOST:$PG_PORT"
        connectProtocol: tcp
        user: $PG_USER
        password: "$(pg_password)"
        maxConns: $3
        maxIdleConns: $3
        maxConnLifetime: 1h
EOF
  }
  (umask 077; cat >"$CONFIG_DIR/cluster.yaml" <<EOF
# Written by scripts/cluster.sh on every \`up\`: edit the script, not this file.
log:
  stdout: true
  level: $LOG_LEVEL

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: $NUM_HISTORY_SHARDS
  datastores:
$(datastore postgres-default temporal 10)
$(datastore postgres-visibility temporal_visibility 5)

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "$HOST"
  pprof:
    port: 0
  # mTLS everywhere (DESIGN §18; make_tls): the frontend (gRPC and HTTP) and the internal
  # services answer only a client certificate signed by the cluster's CA.
  tls:
    internode:
      server:
        certFile: "$(tls_cert internode)"
        keyFile: "$(tls_key internode)"
        requireClientAuth: true
        clientCaFiles: ["$TLS_DIR/ca.pem"]
      client:
        serverName: $TLS_INTERNODE_NAME
        rootCaFiles: ["$TLS_DIR/ca.pem"]
    frontend:
      server:
        certFile: "$(tls_cert server)"
        keyFile: "$(tls_key server)"
        requireClientAuth: true
        clientCaFiles: ["$TLS_DIR/ca.pem"]
      client:
        serverName: $TLS_SERVER_NAME
        rootCaFiles: ["$TLS_DIR/ca.pem"]
    # The server's own clients of the frontend (its system workers, through publicClient).
    systemWorker:
      certFile: "$(tls_cert internode)"
      keyFile: "$(tls_key internode)"
      client:
        serverName: $TLS_SERVER_NAME
        rootCaFiles: ["$TLS_DIR/ca.pem"]

services:
$services
publicClient:
  hostPort: "$HOST:$FRONTEND_PORT"

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$HOST:$FRONTEND_PORT"
      httpAddress: "$HOST:$FRONTEND_HTTP_PORT"

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: "$CONFIG_DIR/dynamicconfig.yaml"
  pollInterval: 10s
EOF
  )
  cat >"$CONFIG_DIR/dynamicconfig.yaml" <<'EOF'
# Written by scripts/cluster.sh. Same as the dev server the tests use (src/temporal-dev/dev-server.ts).
system.enableActivityEagerExecution:
  - value: true
# Worker Versioning (DESIGN §16), on by default in this server: said so a later default cannot take it away.
system.enableDeploymentVersions:
  - value: true
frontend.workerVersioningWorkflowAPIs:
  - value: true
EOF
}

start_service() {
  local svc="$1" pid port
  pid="$(pid_of "$svc")"
  port="$(grpc_port "$svc")"
  if alive_as "$pid" temporal-server; then
    say "$svc already runs (pid $pid)"
    return 0
  fi
  rm -f "$RUN_DIR/$svc.pid"
  port_open "$port" && fail "port $port ($svc) is taken by something else (ss -ltnp 'sport = :$port')"
  port_open "$(membership_port "$svc")" && fail "port $(membership_port "$svc") ($svc membership) is taken by something else"
  say "starting $svc on $HOST:$port (log $LOG_DIR/$svc.log)"
  # setsid + nohup: the service outlives this script and the shell that ran it.
  setsid nohup "$server_bin" --root "$DATA" --config config --env cluster --allow-no-auth \
    start --service "$svc" >>"$LOG_DIR/$svc.log" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/$svc.pid"
}

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

# The temporal CLI as an operator (the operator's client certificate).
temporal_cli() {
  local tls=()
  mapfile -t tls < <(tls_cli_flags operator)
  "$cli_bin" "$@" --address "$HOST:$FRONTEND_PORT" "${tls[@]}"
}

wait_for_frontend() {
  local deadline=$((SECONDS + WAIT_SECONDS))
  until temporal_cli operator cluster health 2>/dev/null | grep SERVING >/dev/null; do
    ((SECONDS < deadline)) || { tail -n 20 "$LOG_DIR/frontend.log" >&2; fail "frontend not SERVING on $HOST:$FRONTEND_PORT after ${WAIT_SECONDS}s"; }
    sleep 1
  done
}

# The worker service serves no gRPC: its port is only its identity. It is ready once it
# listens on its membership port; the others once their gRPC port answers.
wait_for_service() {
  local svc="$1" port
  port="$(grpc_port "$svc")"
  [[ "$svc" == worker ]] && port="$(membership_port "$svc")"
  wait_for_port "$svc" "$port" "$(pid_of "$svc")" "$LOG_DIR/$svc.log"
}

# Moved ports must not share a membership port (base + last two digits).
check_ports() {
  local svc seen=" " port
  for svc in "${SERVICES[@]}"; do
    for port in "$(grpc_port "$svc")" "$(membership_port "$svc")"; do
      [[ "$seen" == *" $port "* ]] && fail "port $port is used twice ($svc): move SANDBOXPLANE_CLUSTER_FRONTEND_PORT to a port whose last two digits are not 34, 35 or 39"
      seen+="$port "
    done
  done
}

start_server() {
  check_ports
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  make_tls
  write_server_config
  # On a new database every service writes the cluster metadata at start, and all but the
  # first fail ("failed to initialize current cluster metadata"): the first service starts
  # alone, the others once it is ready.
  local svc
  start_service "${SERVICES[0]}"
  wait_for_service "${SERVICES[0]}"
  for svc in "${SERVICES[@]:1}"; do start_service "$svc"; done
  for svc in "${SERVICES[@]:1}"; do wait_for_service "$svc"; done
  wait_for_frontend
}

# Namespace and the search attributes of DESIGN §11.
SEARCH_ATTRIBUTES=(SandboxState:Keyword SandboxPrincipal:Keyword SandboxCapability:Keyword SandboxExpiresAt:Datetime SandboxHost:Keyword IacState:Keyword IacTarget:Keyword)

register_namespace() {
  local deadline=$((SECONDS + WAIT_SECONDS)) out
  if ! temporal_cli operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; then
    say "registering namespace $NAMESPACE (retention $RETENTION)"
    until out="$(temporal_cli operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" 2>&1)" || [[ "$out" == *"already"* ]]; do
      ((SECONDS < deadline)) || fail "cannot register namespace $NAMESPACE: $out"
      sleep 1
    done
  fi
  local existing sa name type missing=()
  # A new namespace reaches the services' namespace caches within seconds (not at once).
  until existing="$(temporal_cli operator search-attribute list --namespace "$NAMESPACE" -o json 2>&1)"; do
    ((SECONDS < deadline)) || fail "cannot list search attributes of $NAMESPACE: $existing"
    sleep 1
  done
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do
    name="${sa%%:*}"
    grep -q "\"$name\"" <<<"$existing" || missing+=("$sa")
  done
  ((${#missing[@]})) || return 0
  local args=()
  for sa in "${missing[@]}"; do args+=(--name "${sa%%:*}" --type "${sa#*:}"); done
  say "adding search attributes: ${missing[*]}"
  until out="$(temporal_cli operator search-attribute create --namespace "$NAMESPACE" "${args[@]}" 2>&1)"; do
    ((SECONDS < deadline)) || fail "cannot add search attributes: $out"
    sleep 1
  done
}

# ---------------------------------------------------------------------------------------------
# UI server
# ---------------------------------------------------------------------------------------------

start_ui() {
  mkdir -p "$UI_DIR/config"
  cat >"$UI_DIR/config/cluster.yaml" <<EOF
# Written by scripts/cluster.sh (the same settings as the temporal CLI's dev server UI).
temporalGrpcAddress: "$HOST:$FRONTEND_PORT"
host: "$HOST"
port: $UI_PORT
enableUi: true
defaultNamespace: $NAMESPACE
hideLogs: true
cors:
  cookieInsecure: true
# The frontend requires a client certificate: the UI server presents its own.
tls:
  caFile: "$TLS_DIR/ca.pem"
  certFile: "$(tls_cert ui)"
  keyFile: "$(tls_key ui)"
  serverName: $TLS_SERVER_NAME
  enableHostVerification: true
# Workflow payloads are encrypted (docs/security.md, "Payload encryption"): without this the
# UI shows no summary, details or signal payloads. The codec server starts with the workers.
codec:
  endpoint: "http://$HOST:$CODEC_PORT"
EOF
  local pid
  pid="$(pid_of ui)"
  if alive_as "$pid" temporal-ui-server; then
    say "ui already runs (pid $pid)"
  else
    rm -f "$RUN_DIR/ui.pid"
    port_open "$UI_PORT" && fail "port $UI_PORT (ui) is taken by something else"
    say "starting ui on http://$HOST:$UI_PORT (log $LOG_DIR/ui.log)"
    setsid nohup "$ui_bin" --root "$UI_DIR" --config config --env cluster start >>"$LOG_DIR/ui.log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/ui.pid"
  fi
  wait_for_port ui "$UI_PORT" "$(pid_of ui)" "$LOG_DIR/ui.log"
}

# ---------------------------------------------------------------------------------------------
# Docker engines: two private dockerd, as two machines' engines would be
# ---------------------------------------------------------------------------------------------

# Each engine has its own socket, data root, exec root, pidfile and Linux bridge, so the
# cluster never touches the engine of `npm test`/`npm start` (scripts/docker-engine.sh).
# No iptables rules of their own (the machine's first engine owns the DOCKER chains; the
# published 127.0.0.1 ports go through docker-proxy) and no masquerading (no outbound NAT).
# Sandbox networks come from small ranges (/28s): one network per sandbox (docs/security.md,
# "Sealed sandboxes"). Each engine has a /16 of its own (10.N.0.0/16, N its bridge's third
# octet): engines that share a pool race to the same free range when they create networks
# at once, and a docker-proxy then forwards one sandbox's port to another's container.
# --live-restore, and `down` stops the containers itself before it stops dockerd: an engine
# with address pools and without live restore that starts again on its old data deletes the
# link named docker0 (Docker 20.10's daemon does, whichever engine owns it), and with it the
# default bridge of the machine's first engine. After `up`, each READY sandbox's health watch
# finds its emulator stopped and restarts it once (docs/deploy.md, "Stopping the cluster").
ENGINES=(a b)
# The socket path must stay short (a Unix socket path has at most 107 bytes): /run, keyed by $DATA.
ENGINE_RUN_ROOT="/run/sandboxplane-cluster/$KEY"
ENGINE_SUBNETS=(250 251 252 253 254)   # bridge 172.31.N.0/24, sandbox networks 10.N.0.0/16; test/helpers/private-docker-engine.ts uses 100-249

# Every engine is started, stopped and cleared by scripts/private-dockerd.sh (--bridge: no
# iptables rules, no masquerading, an engine id of its own).
private_dockerd() { bash "$root/scripts/private-dockerd.sh" "$@"; }

engine_dir() { echo "$DATA/engines/$1"; }
engine_run_dir() { echo "$ENGINE_RUN_ROOT/$1"; }
engine_socket() { echo "unix://$(engine_run_dir "$1")/docker.sock"; }
engine_bridge() { echo "spc$(basename "$ENGINE_RUN_ROOT" | cut -c1-6)$1"; }
engine_pid() { cat "$(engine_run_dir "$1")/dockerd.pid" 2>/dev/null || true; }
engine_answers() { private_dockerd answers "$(engine_socket "$1")"; }

# The bridge's /24, chosen on the first `up` and kept in the engine's directory.
engine_subnet() {
  local file dir n
  dir="$(engine_dir "$1")"
  file="$dir/subnet"
  if [[ ! -s "$file" ]]; then
    local taken
    taken="$(ip -o -4 addr show)"
    for n in "${ENGINE_SUBNETS[@]}"; do
      grep -q "172\.31\.$n\." <<<"$taken" && continue
      grep -q " 10\.$n\." <<<"$taken" && continue
      grep -qsx "$n" "$DATA"/engines/*/subnet && continue
      mkdir -p "$dir"
      echo "$n" >"$file"
      break
    done
    [[ -s "$file" ]] || fail "no free 172.31.{${ENGINE_SUBNETS[*]}}.0/24 for engine $1's bridge"
  fi
  cat "$file"
}

start_engine() {
  local name="$1" pid subnet containerd_pid
  command -v dockerd >/dev/null 2>&1 || fail "no dockerd: install Debian's docker.io (bash scripts/docker-engine.sh does)"
  pid="$(engine_pid "$name")"
  if alive_as "$pid" dockerd && engine_answers "$name"; then
    say "engine $name already runs (pid $pid)"
    return 0
  fi
  alive_as "$pid" dockerd && fail "engine $name (pid $pid) runs but does not answer on $(engine_socket "$name")"
  containerd_pid="$(cat "$(engine_run_dir "$name")/exec/containerd/containerd.pid" 2>/dev/null || true)"
  alive_as "$containerd_pid" containerd && fail "engine $name's containerd (pid $containerd_pid) outlived its dockerd: \`bash scripts/cluster.sh down\` stops it"
  subnet="$(engine_subnet "$name")"
  say "starting engine $name (bridge $(engine_bridge "$name") 172.31.$subnet.0/24)"
  private_dockerd start --run-dir "$(engine_run_dir "$name")" --home "$(engine_dir "$name")" --log "$LOG_DIR/engine-$name.log" \
    --bridge "$(engine_bridge "$name")" --bridge-address "172.31.$subnet.1/24" \
    --address-pool "base=10.$subnet.0.0/16,size=28" --wait-seconds "$WAIT_SECONDS" || fail "engine $name did not start (above)"
}

# With --live-restore dockerd would leave the containers running: stopped while it answers.
stop_engine() {
  private_dockerd stop --run-dir "$(engine_run_dir "$1")" --containers || fail "cannot stop engine $1"
  clear_engine "$1"
}

# What a stopped engine leaves: mounts, its bridge, its run directory.
clear_engine() { private_dockerd clear --run-dir "$(engine_run_dir "$1")" --home "$(engine_dir "$1")" --bridge "$(engine_bridge "$1")"; }

# The moto image in every engine: copied with `docker save | docker load` (the id stays the
# same) from the machine's own engine when that has it already (after `npm test` or
# `npm start`), else built into the first engine (scripts/build-moto-image.sh, cached), and
# from the first into the others.
MOTO_IMAGE=""
copy_image() {
  local image="$1" from="$2" to="$3"
  DOCKER_HOST="$from" docker save "$image" | DOCKER_HOST="$to" docker load --quiet >/dev/null
}
load_images() {
  local first="${ENGINES[0]}" name source MOTO_TAG
  MOTO_TAG="$(bash "$root/scripts/build-moto-image.sh" --tag)"
  if ! DOCKER_HOST="$(engine_socket "$first")" docker image inspect "$MOTO_TAG" >/dev/null 2>&1; then
    for source in ${DOCKER_HOST:-} unix:///run/sandboxplane-docker/docker.sock unix:///var/run/docker.sock; do
      DOCKER_HOST="$source" timeout 10 docker image inspect "$MOTO_TAG" >/dev/null 2>&1 || continue
      say "copying $MOTO_TAG from the engine at $source into engine $first"
      copy_image "$MOTO_TAG" "$source" "$(engine_socket "$first")" && break
    done
  fi
  MOTO_IMAGE="$(DOCKER_HOST="$(engine_socket "$first")" bash "$root/scripts/build-moto-image.sh" | tail -n 1)"
  [[ "$MOTO_IMAGE" == sha256:* ]] || fail "scripts/build-moto-image.sh printed no image id (last line: $MOTO_IMAGE)"
  for name in "${ENGINES[@]:1}"; do
    DOCKER_HOST="$(engine_socket "$name")" docker image inspect "$MOTO_IMAGE" >/dev/null 2>&1 && continue
    say "copying the moto image into engine $name"
    copy_image "$MOTO_IMAGE" "$(engine_socket "$first")" "$(engine_socket "$name")" || fail "docker save | docker load of $MOTO_IMAGE into engine $name failed"
  done
}

# ---------------------------------------------------------------------------------------------
# The plane's workers: one store, two lifecycle, one docker worker per engine
# ---------------------------------------------------------------------------------------------

# The topology docker-compose.yml describes too (test/unit/compose-file.test.ts compares them
# through `cluster.sh topology`). Start order: the store first (docker workers register their
# host through it), then lifecycle, then docker; `down` stops them in reverse.
WORKERS=(store lifecycle-1 lifecycle-2 docker-a docker-b)
METRICS_BASE_PORT=19464           # + the worker's index in WORKERS
TELEMETRY_OTLP_PORT=14318
TELEMETRY_JAEGER_PORT=26686
TELEMETRY_PROMETHEUS_PORT=19090
TASK_QUEUE="${SANDBOXPLANE_TASK_QUEUE:-sandboxplane}"
PLANE_DIR="$DATA/plane"

# Where a worker serves its metrics: the address its last start chose ($RUN_DIR/NAME.metrics,
# which a rollout hands on to the draining worker with its pid), or, before any start, its
# slot's port: METRICS_BASE_PORT + its index in WORKERS.
metrics_address() {
  local i
  if [[ -s "$RUN_DIR/$1.metrics" ]]; then cat "$RUN_DIR/$1.metrics"; return 0; fi
  for i in "${!WORKERS[@]}"; do [[ "${WORKERS[$i]}" == "$1" ]] && { echo "$HOST:$((METRICS_BASE_PORT + i))"; return 0; }; done
  return 0
}

# Chooses the metrics address a worker about to start takes: its slot's port unless another
# worker of ours holds it (a draining one, after a rollout) or it is taken; then the next
# free one 10 up, and so on.
choose_metrics_address() {
  local name="$1" port held f
  port="$(metrics_address "$name" | cut -d: -f2)"
  [[ -n "$port" ]] || return 0
  while :; do
    held=false
    for f in "$RUN_DIR"/*.metrics; do
      [[ -e "$f" && "$f" != "$RUN_DIR/$name.metrics" && "$(cat "$f")" == "$HOST:$port" ]] && held=true
    done
    if ! $held && ! port_open "$port"; then break; fi
    port=$((port + 10))
  done
  echo "$HOST:$port" >"$RUN_DIR/$name.metrics"
  write_scrape_targets
}

# Prometheus's file of scrape targets (file_sd), rewritten whenever a worker takes or gives
# up an address: scripts/telemetry.sh points Prometheus at it, which reloads it by itself.
write_scrape_targets() {
  local f targets=()
  mkdir -p "$DATA/telemetry-data"
  for f in "$RUN_DIR"/*.metrics; do [[ -s "$f" ]] && targets+=("\"$(cat "$f")\""); done
  printf '[{"targets": [%s], "labels": {"cluster": "sandboxplane"}}]\n' "$(IFS=,; echo "${targets[*]}")" >"$DATA/telemetry-data/targets.json.partial"
  mv "$DATA/telemetry-data/targets.json.partial" "$DATA/telemetry-data/targets.json"
}

telemetry_on() { [[ -f "$DATA/telemetry" ]]; }

worker_role() { case "$1" in store) echo store ;; lifecycle-* | drain-*) echo lifecycle ;; docker-*) echo docker ;; esac; }
worker_host() { [[ "$1" == docker-* ]] && echo "${1#docker-}"; return 0; }

# The environment a worker runs with, as KEY=VALUE lines: the plane's coordinates and its
# role, then the local feature flags (on unless the caller set them). Every other
# SANDBOXPLANE_* of the caller's environment passes through unchanged.
worker_env() {
  local name="$1" role host
  role="$(worker_role "$name")"; host="$(worker_host "$name")"
  echo "TEMPORAL_ADDRESS=$HOST:$FRONTEND_PORT"
  echo "TEMPORAL_NAMESPACE=$NAMESPACE"
  echo "SANDBOXPLANE_TASK_QUEUE=$TASK_QUEUE"
  # The store worker also runs IaC against operators' targets: its AWS credential chain is the one they use.
  echo "SANDBOXPLANE_WORKER_ROLES=$([[ "$role" == store ]] && echo store,targets || echo "$role")"
  echo "SANDBOXPLANE_LOG_LEVEL=${SANDBOXPLANE_LOG_LEVEL:-info}"
  # Snapshot content: the docker hosts write and read it, the store removes it; one directory for all.
  echo "SANDBOXPLANE_SNAPSHOT_DIR=$PLANE_DIR/snapshots"
  # The workers' client certificate: the frontend answers nothing without one.
  tls_plane_env worker
  local metrics
  metrics="$(metrics_address "$name")"
  [[ -z "$metrics" ]] || echo "SANDBOXPLANE_METRICS_ADDRESS=$metrics"
  telemetry_on && echo "OTEL_EXPORTER_OTLP_ENDPOINT=http://$HOST:$TELEMETRY_OTLP_PORT"
  # The flags the dev launcher turns on (`local` in src/domain/feature-flags.ts).
  local flag
  for flag in CLOUD_SANDBOX IAC_LOCAL ADAPTER_MEMORY ADAPTER_MOTO ADAPTER_FLOCI; do
    local var="SANDBOXPLANE_FLAG_$flag"
    echo "$var=${!var:-1}"
  done
  case "$name" in
    # An old build's worker keeps its id; the current ones take the id `rollout` was given, if any.
    drain-*) echo "SANDBOXPLANE_BUILD_ID=$(cat "$RUN_DIR/$name.build")" ;;
    lifecycle-*) echo "SANDBOXPLANE_BUILD_ID=$(current_build)" ;;
  esac
  case "$role" in
    store) echo "SANDBOXPLANE_DB=$PLANE_DIR/sandboxplane.sqlite" ;;
    docker)
      echo "SANDBOXPLANE_HOST_ID=$host"
      echo "DOCKER_HOST=$(engine_socket "$host")"
      echo "SANDBOXPLANE_MOTO_IMAGE=$MOTO_IMAGE"
      ;;
  esac
}

# `topology`: the workers `up` starts, one JSON object per line (name, role, hostId, the
# names of the variables it sets). Reads nothing and starts nothing.
cmd_topology() {
  local name vars
  for name in "${WORKERS[@]}"; do
    vars="$(worker_env "$name" | cut -d= -f1 | sed 's/.*/"&"/' | paste -sd,)"
    printf '{"name":"%s","role":"%s","hostId":%s,"dockerHost":%s,"taskQueue":"%s","env":[%s]}\n' \
      "$name" "$(worker_role "$name")" \
      "$( [[ -n "$(worker_host "$name")" ]] && printf '"%s"' "$(worker_host "$name")" || echo null)" \
      "$( [[ -n "$(worker_host "$name")" ]] && printf '"%s"' "$(engine_socket "$(worker_host "$name")")" || echo null)" \
      "$TASK_QUEUE" "$vars"
  done
}

# The mark by which `down` finds a worker of this cluster that lost its pid file.
WORKER_MARK="SANDBOXPLANE_CLUSTER_DIR=$DATA"

start_worker() {
  local name="$1" pid log cli="$root/bin/sandboxctl.js"
  # An old build's worker runs the copy of its build that `rollout` kept.
  # Lifecycle workers run a kept copy of their build, never the checkout's dist/: a rebuild
  # must not move them to other workflow code under their pinned sandboxes (only `rollout` does).
  case "$name" in
    lifecycle-*) cli="$(build_dir "$(current_build)")/bin/sandboxctl.js" ;;
    drain-*) cli="$(build_dir "$(cat "$RUN_DIR/$name.build")")/bin/sandboxctl.js" ;;
  esac
  pid="$(pid_of "$name")"; log="$LOG_DIR/$name.log"
  if alive_as "$pid" node; then
    say "$name already runs (pid $pid)"
    return 0
  fi
  rm -f "$RUN_DIR/$name.pid"
  touch "$log"
  stat -c %s "$log" >"$RUN_DIR/$name.logstart"
  choose_metrics_address "$name"
  local env_args=()
  mapfile -t env_args < <(worker_env "$name")
  say "starting worker $name (log $log)"
  # Only the store worker gets a SQLite path, only docker workers an engine.
  setsid nohup env -u DOCKER_HOST -u SANDBOXPLANE_DB -u SANDBOXPLANE_BUILD_ID "$WORKER_MARK" "${env_args[@]}" node "$cli" worker >>"$log" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/$name.pid"
}

# Ready once it has logged `worker ready` since it started.
wait_for_worker() {
  local name="$1" log="$LOG_DIR/$1.log" pid from deadline=$((SECONDS + WAIT_SECONDS))
  pid="$(pid_of "$name")"
  from="$(cat "$RUN_DIR/$name.logstart" 2>/dev/null || echo 0)"
  # grep reads to the end (no -q): with pipefail, an early exit would fail tail with SIGPIPE.
  until tail -c "+$((from + 1))" "$log" | grep -F '"msg":"worker ready"' >/dev/null; do
    alive "$pid" || { tail -n 20 "$log" >&2; fail "worker $name exited (log above, full log $log)"; }
    ((SECONDS < deadline)) || { tail -n 20 "$log" >&2; fail "worker $name not ready after ${WAIT_SECONDS}s (log $log)"; }
    sleep 0.5
  done
}

start_workers() {
  local name missing=0
  for name in "${WORKERS[@]}"; do alive_as "$(pid_of "$name")" node || missing=1; done
  # The compiled CLI (dist/), the Node packages and the temporal CLI: what `npm run setup`
  # makes. Only when a worker is to start: a rebuild removes dist/ under running ones.
  ((missing)) && bash "$root/scripts/setup.sh" >&2
  mkdir -p "$PLANE_DIR"
  # The first start adopts the checkout's build for the lifecycle workers; later ones keep theirs.
  [[ -n "$(current_build)" ]] || adopt_build "$(checkout_build)"
  # With the old builds still draining (`rollout`): their pinned sandboxes need them too.
  for name in "${WORKERS[@]}" $(draining); do start_worker "$name"; done
  for name in "${WORKERS[@]}" $(draining); do wait_for_worker "$name"; done
}

# ---------------------------------------------------------------------------------------------
# down / status
# ---------------------------------------------------------------------------------------------

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

# The codec server: the compiled CLI (so after start_workers, which builds it), with the keys
# of this checkout (.data/codec-keys, as the workers read them), answering only the UI's origin.
start_codec() {
  local pid log="$LOG_DIR/codec.log"
  pid="$(pid_of codec)"
  if alive_as "$pid" node; then
    say "codec server already runs (pid $pid)"
  else
    rm -f "$RUN_DIR/codec.pid"
    port_open "$CODEC_PORT" && fail "port $CODEC_PORT (codec server) is taken by something else"
    say "starting codec server on http://$HOST:$CODEC_PORT for the ui (log $log)"
    setsid nohup env "$WORKER_MARK" node "$root/bin/sandboxctl.js" codec-server --port "$CODEC_PORT" --origin "http://$HOST:$UI_PORT" >>"$log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/codec.pid"
  fi
  wait_for_port "codec server" "$CODEC_PORT" "$(pid_of codec)" "$log"
}

# The gateway (DESIGN §18): the compiled CLI with the gateway's certificate, reading the key
# table of the store worker's file. Agents get a key (`sandboxctl keys add`), never a certificate.
start_gateway() {
  local pid log="$LOG_DIR/gateway.log"
  pid="$(pid_of gateway)"
  if alive_as "$pid" node; then
    say "gateway already runs (pid $pid)"
  else
    rm -f "$RUN_DIR/gateway.pid"
    port_open "$GATEWAY_PORT" && fail "port $GATEWAY_PORT (gateway) is taken by something else"
    say "starting gateway on http://$HOST:$GATEWAY_PORT (log $log)"
    local env_args=()
    mapfile -t env_args < <(tls_plane_env gateway)
    telemetry_on && env_args+=("OTEL_EXPORTER_OTLP_ENDPOINT=http://$HOST:$TELEMETRY_OTLP_PORT")
    setsid nohup env -u DOCKER_HOST "$WORKER_MARK" "${env_args[@]}" TEMPORAL_ADDRESS="$HOST:$FRONTEND_PORT" TEMPORAL_NAMESPACE="$NAMESPACE" \
      SANDBOXPLANE_TASK_QUEUE="$TASK_QUEUE" SANDBOXPLANE_DB="$PLANE_DIR/sandboxplane.sqlite" SANDBOXPLANE_LOG_LEVEL="${SANDBOXPLANE_LOG_LEVEL:-info}" \
      node "$root/bin/sandboxctl.js" gateway --listen "$HOST:$GATEWAY_PORT" >>"$log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/gateway.pid"
  fi
  wait_for_port "gateway" "$GATEWAY_PORT" "$(pid_of gateway)" "$log"
}

# Jaeger and Prometheus (scripts/telemetry.sh), scraping every worker's metrics address.
start_telemetry() {
  local pid log="$LOG_DIR/telemetry.log"
  pid="$(pid_of telemetry)"
  if alive_as "$pid" bash; then
    say "telemetry already runs (pid $pid)"
    return 0
  fi
  : >"$log"
  [[ -f "$DATA/telemetry-data/targets.json" ]] || write_scrape_targets
  say "starting Jaeger and Prometheus (log $log)"
  setsid nohup env "$WORKER_MARK" bash "$root/scripts/telemetry.sh" --scrape-file "$DATA/telemetry-data/targets.json" --data "$DATA/telemetry-data" \
    --otlp-port "$TELEMETRY_OTLP_PORT" --jaeger-port "$TELEMETRY_JAEGER_PORT" --prometheus-port "$TELEMETRY_PROMETHEUS_PORT" >>"$log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$RUN_DIR/telemetry.pid"
  local deadline=$((SECONDS + 600))   # the first run builds Jaeger
  until grep -q '^TELEMETRY_READY' "$log"; do
    alive "$pid" || { tail -n 20 "$log" >&2; fail "Jaeger or Prometheus did not start (log above)"; }
    ((SECONDS < deadline)) || fail "Jaeger and Prometheus not ready after 600s (log $log)"
    sleep 0.5
  done
  grep '^telemetry: ' "$log" | sed 's/^telemetry: //' | while read -r line; do say "$line"; done
}

# Pids of our processes that lost their pid file: servers and the UI started with `--root`
# this cluster's directory, engines on its sockets, workers carrying the cluster's mark.
# `strays all` adds what a SIGKILLed dockerd leaves running: its containerd and the
# containers' shims (they name the engines' run root) and its port forwarders (to a
# container on one of our bridges); while the engine runs they are its own.
strays() {
  local everything="${1:-}" f pid args subnets=() subnet
  # The default bridge (172.31.N) and the sandbox networks (10.N) of each engine.
  for f in "$DATA"/engines/*/subnet; do [[ -s "$f" ]] && subnets+=("-container-ip 172.31.$(cat "$f")." "-container-ip 10.$(cat "$f").") ; done
  for f in /proc/[0-9]*/cmdline; do
    pid="${f#/proc/}"; pid="${pid%/cmdline}"
    args="$( { tr '\0' ' ' <"$f"; } 2>/dev/null || true)"
    case "$args" in
      "$server_bin --root $DATA "* | "$ui_bin --root $UI_DIR "* | "dockerd --host=unix://$ENGINE_RUN_ROOT/"*) echo "$pid" ;;
      *"$ENGINE_RUN_ROOT/"*) [[ -n "$everything" ]] && echo "$pid" ;;
      # scripts/telemetry.sh, its Jaeger and its Prometheus: all name the cluster's telemetry data.
      *"$DATA/telemetry-data"*) echo "$pid" ;;
      *docker-proxy*)
        if [[ -n "$everything" ]]; then
          for subnet in "${subnets[@]}"; do [[ "$args" == *"$subnet"* ]] && echo "$pid"; done
        fi
        ;;
      "node $root/bin/sandboxctl.js worker"* | "node $root/bin/sandboxctl.js codec-server"* | "node $root/bin/sandboxctl.js gateway"* | "node $DATA/builds/"*"/bin/sandboxctl.js worker"*)
        { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -xF "$WORKER_MARK" >/dev/null && echo "$pid"
        ;;
    esac
  done
  return 0
}

cmd_down() {
  need_root down
  local i pid name
  for ((i = ${#WORKERS[@]} - 1; i >= 0; i--)); do stop_process "${WORKERS[i]}" node; done
  for name in $(draining); do stop_process "$name" node; done
  stop_process telemetry bash
  stop_process gateway node
  stop_process codec node
  for ((i = ${#ENGINES[@]} - 1; i >= 0; i--)); do stop_engine "${ENGINES[i]}"; done
  stop_process ui temporal-ui-server
  for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do stop_process "${SERVICES[i]}" temporal-server; done
  for pid in $(strays all); do
    say "stopping pid $pid (no pid file)"
    kill -TERM "$pid" 2>/dev/null || true
  done
  for _ in $(seq 1 300); do [[ -z "$(strays all)" ]] && break; sleep 0.2; done
  for pid in $(strays all); do kill -KILL "$pid" 2>/dev/null || true; done
  for name in "${ENGINES[@]}"; do clear_engine "$name"; done
  stop_postgres
  rmdir "$ENGINE_RUN_ROOT" 2>/dev/null || true
  say "down (data kept in $DATA)"
}

# `restart NAME`: one worker stopped (SIGTERM, it drains) and started again, e.g. on a new build.
cmd_restart() {
  need_root restart
  local name="${1:-}" known=" ${WORKERS[*]} "
  [[ -n "$name" && "$known" == *" $name "* ]] || fail "restart takes one of: ${WORKERS[*]}"
  [[ "$(worker_role "$name")" == docker ]] && load_images
  stop_process "$name" node
  start_worker "$name"
  wait_for_worker "$name"
}

# ---------------------------------------------------------------------------------------------
# rollout / drain (DESIGN §16): lifecycle workers by build, with Worker Versioning
# ---------------------------------------------------------------------------------------------

LIFECYCLE_WORKERS=(lifecycle-1 lifecycle-2)

# `sandboxctl` against this cluster's plane.
plane_cli() {
  local tls=()
  mapfile -t tls < <(tls_plane_env operator)
  env "TEMPORAL_ADDRESS=$HOST:$FRONTEND_PORT" "TEMPORAL_NAMESPACE=$NAMESPACE" "SANDBOXPLANE_TASK_QUEUE=$TASK_QUEUE" "${tls[@]}" node "$root/bin/sandboxctl.js" "$@"
}

# Where a lifecycle build's code is kept (bin/, dist/, package.json; node_modules, .data and .tools linked), so
# its workers start the same code after any rebuild of the checkout, until it has drained.
build_dir() { echo "$DATA/builds/$1"; }

# The build the lifecycle workers run (`up` adopts the checkout's the first time; `rollout` moves it).
current_build() { cat "$DATA/builds/current" 2>/dev/null || true; }

# The build id of the checkout's dist/: SANDBOXPLANE_BUILD_ID, or what the worker derives
# (wf- and the first 16 hex digits of the workflow bundle's sha256, src/worker/workflow-code.ts).
checkout_build() {
  if [[ -n "${SANDBOXPLANE_BUILD_ID:-}" ]]; then echo "$SANDBOXPLANE_BUILD_ID"; return; fi
  echo "wf-$(sha256sum "$root/dist/workflow-bundle.js" | cut -c1-16)"
}

# Keeps a copy of the checkout's build as build $1 and makes it the lifecycle workers' build.
adopt_build() {
  local id="$1"
  [[ -n "$id" ]] || fail "no build id"
  if [[ ! -d "$(build_dir "$id")" ]]; then
    say "keeping build $id in $(build_dir "$id") for the lifecycle workers"
    mkdir -p "$(build_dir "$id")"
    cp -a "$root/bin" "$root/dist" "$root/package.json" "$(build_dir "$id")/"
  fi
  # The checkout's packages, and its .data and .tools: the same codec keys and defaults as every other worker.
  local shared
  for shared in node_modules .data .tools; do ln -sfn "$root/$shared" "$(build_dir "$id")/$shared"; done
  echo "$id" >"$DATA/builds/current"
}

# The old-build lifecycle workers still draining: drain-<build>-lifecycle-N.
draining() {
  local f
  for f in "$RUN_DIR"/drain-*.build; do [[ -e "$f" ]] && basename "$f" .build; done
  return 0
}

# The number of sandboxes pinned to build $1 (`sandboxctl deployment --json`), or "current".
pinned_runs() {
  plane_cli deployment --json | node -e '
    const report = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const build = report.builds.find((b) => b.buildId === process.argv[1]);
    console.log(build === undefined ? 0 : build.current ? "current" : build.openRuns);' "$1"
}

# `rollout`: the lifecycle workers of the checkout's build (`npm run build`; its id is
# SANDBOXPLANE_BUILD_ID or derived from its workflow code) start beside the old ones, become
# current, and the old ones drain: every sandbox they started stays pinned to them until it
# ends (DESIGN §16). Store and docker workers stay as they are (their activities change only
# additively; `restart` them). `drain` (or the next rollout) stops the old ones once nothing
# is pinned to them.
cmd_rollout() {
  need_root rollout
  local name old new
  bash "$root/scripts/setup.sh" >&2
  old="$(current_build)"
  new="$(checkout_build)"
  if [[ "$new" == "$old" ]]; then
    say "the checkout's lifecycle build is $new already: nothing to roll out (\`restart lifecycle-1\` restarts a worker)"
    return 0
  fi
  adopt_build "$new"
  for name in "${LIFECYCLE_WORKERS[@]}"; do
    [[ -n "$old" ]] && alive_as "$(pid_of "$name")" node || continue
    # Same process, new name: it goes on serving its pinned runs, logging to the same file.
    echo "$old" >"$RUN_DIR/drain-$old-$name.build"
    mv "$RUN_DIR/$name.pid" "$RUN_DIR/drain-$old-$name.pid"
    mv "$LOG_DIR/$name.log" "$LOG_DIR/drain-$old-$name.log"
    mv "$RUN_DIR/$name.logstart" "$RUN_DIR/drain-$old-$name.logstart" 2>/dev/null || true
    mv "$RUN_DIR/$name.metrics" "$RUN_DIR/drain-$old-$name.metrics" 2>/dev/null || true
  done
  for name in "${LIFECYCLE_WORKERS[@]}"; do start_worker "$name"; done
  for name in "${LIFECYCLE_WORKERS[@]}"; do wait_for_worker "$name"; done
  say "promoting build $new (was ${old:-none})"
  plane_cli deployment promote "$new" >&2 || fail "sandboxctl deployment promote $new failed (above)"
  cmd_drain
}

# `drain`: stops each old-build lifecycle worker once no sandbox is pinned to its build (and
# forgets the kept copy of the build); says how many still are for the others.
cmd_drain() {
  local name build runs
  for name in $(draining); do
    build="$(cat "$RUN_DIR/$name.build")"
    runs="$(pinned_runs "$build")" || fail "sandboxctl deployment failed"
    if [[ "$runs" == current ]]; then
      # Promoted back (a rollback): a worker of the current build is not draining.
      say "$name runs build $build, which is current again; it stays"
    elif [[ "$runs" == 0 ]]; then
      stop_process "$name" node
      rm -f "$RUN_DIR/$name.build" "$RUN_DIR/$name.logstart" "$RUN_DIR/$name.metrics"
      write_scrape_targets
      say "$name drained (build $build has no pinned sandbox left)"
    else
      say "$name still serves $runs sandbox(es) pinned to build $build; \`cluster.sh drain\` stops it once they end"
    fi
  done
  local dir
  for dir in "$DATA"/builds/*/; do
    [[ -d "$dir" ]] || continue
    build="$(basename "$dir")"
    [[ "$build" == "$(current_build)" ]] && continue
    ls "$RUN_DIR"/drain-"$build"-*.build >/dev/null 2>&1 || rm -rf "$dir"
  done
}

# `purge`: `down`, then the data as well (PostgreSQL, the engines, the SQLite projection, logs).
cmd_purge() {
  cmd_down
  say "removing $DATA and $PG_HOME"
  rm -rf "$DATA" "$PG_HOME"
  rmdir "$(dirname "$PG_HOME")" 2>/dev/null || true
}

# `env [NAME]`: `export` lines that point sandboxctl, the SDK and the temporal CLI at this
# cluster with client certificate NAME (operator by default; gateway for `sandboxctl gateway`):
#   eval "$(bash scripts/cluster.sh env)"
cmd_env() {
  local name="${1:-operator}" known=" ${TLS_CLIENTS[*]} " line
  [[ "$known" == *" $name "* ]] || fail "env takes one of: ${TLS_CLIENTS[*]}"
  [[ -s "$(tls_cert "$name")" && -r "$(tls_key "$name")" ]] ||
    fail "no readable certificate $name in $TLS_DIR: \`cluster.sh up\` makes it (as root; its keys are root's, 0600)"
  printf 'export TEMPORAL_ADDRESS=%q\n' "$HOST:$FRONTEND_PORT"
  printf 'export TEMPORAL_NAMESPACE=%q\n' "$NAMESPACE"
  printf 'export SANDBOXPLANE_TASK_QUEUE=%q\n' "$TASK_QUEUE"
  while IFS= read -r line; do printf 'export %s=%q\n' "${line%%=*}" "${line#*=}"; done < <(tls_plane_env "$name")
  # The temporal CLI's own names for the same files.
  printf 'export TEMPORAL_TLS_CLIENT_CERT_PATH=%q\n' "$(tls_cert "$name")"
  printf 'export TEMPORAL_TLS_CLIENT_KEY_PATH=%q\n' "$(tls_key "$name")"
  printf 'export TEMPORAL_TLS_SERVER_CA_CERT_PATH=%q\n' "$TLS_DIR/ca.pem"
  printf 'export TEMPORAL_TLS_SERVER_NAME=%q\n' "$TLS_SERVER_NAME"
}

cmd_status() {
  local svc pid state all=0
  line() { printf '%-12s %-8s %-8s %s\n' "$@"; }
  line component state pid where
  if find_pg_bindir && pg_running; then
    line postgres running "$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null)" "$HOST:$PG_PORT"
  else
    line postgres stopped - "$HOST:$PG_PORT"; all=1
  fi
  for svc in "${SERVICES[@]}"; do
    pid="$(pid_of "$svc")"; state=stopped
    if alive_as "$pid" temporal-server; then state=running; else pid=-; all=1; fi
    line "$svc" "$state" "$pid" "$HOST:$(grpc_port "$svc")"
  done
  pid="$(pid_of ui)"; state=stopped
  if alive_as "$pid" temporal-ui-server; then state=running; else pid=-; all=1; fi
  line ui "$state" "$pid" "http://$HOST:$UI_PORT"
  pid="$(pid_of codec)"; state=stopped
  if alive_as "$pid" node; then state=running; else pid=-; all=1; fi
  line codec "$state" "$pid" "http://$HOST:$CODEC_PORT"
  pid="$(pid_of gateway)"; state=stopped
  if alive_as "$pid" node; then state=running; else pid=-; all=1; fi
  line gateway "$state" "$pid" "http://$HOST:$GATEWAY_PORT"
  if telemetry_on; then
    pid="$(pid_of telemetry)"; state=stopped
    if alive_as "$pid" bash; then state=running; else pid=-; all=1; fi
    line telemetry "$state" "$pid" "Jaeger http://$HOST:$TELEMETRY_JAEGER_PORT, Prometheus http://$HOST:$TELEMETRY_PROMETHEUS_PORT"
  fi
  local name host
  for name in "${ENGINES[@]}"; do
    pid="$(engine_pid "$name")"; state=stopped
    if alive_as "$pid" dockerd; then state=running; else pid=-; all=1; fi
    line "engine-$name" "$state" "$pid" "$(engine_socket "$name")"
  done
  for name in "${WORKERS[@]}" $(draining); do
    pid="$(pid_of "$name")"; state=stopped
    if alive_as "$pid" node; then state=running; else pid=-; all=1; fi
    host="$(worker_host "$name")"
    line "$name" "$state" "$pid" "--role $(worker_role "$name")${host:+ --host-id $host}"
  done
  local known=" " stray
  for svc in "${SERVICES[@]}" ui codec gateway telemetry "${WORKERS[@]}" $(draining); do known+="$(pid_of "$svc") "; done
  for name in "${ENGINES[@]}"; do known+="$(engine_pid "$name") "; done
  # Jaeger and Prometheus are scripts/telemetry.sh's children.
  [[ -z "$(pid_of telemetry)" ]] || known+="$(pgrep -P "$(pid_of telemetry)" | paste -sd' ' || true) "
  for stray in $(strays); do
    [[ "$known" == *" $stray "* ]] || { line stray running "$stray" "(no pid file; \`down\` stops it)"; all=1; }
  done
  return "$all"
}

cmd_up() {
  need_root up
  local started=$SECONDS name
  mkdir -p "$DATA" "$LOG_DIR" "$RUN_DIR"
  case "${1:-}" in
    --telemetry) touch "$DATA/telemetry" ;;
    --no-telemetry) rm -f "$DATA/telemetry"; stop_process telemetry bash ;;
    "") ;;
    *) fail "up takes --telemetry or --no-telemetry, not $1" ;;
  esac
  install_postgres
  build_binaries
  init_postgres
  start_postgres
  migrate temporal postgresql/v12/temporal
  migrate temporal_visibility postgresql/v12/visibility
  start_server
  register_namespace
  start_ui
  for name in "${ENGINES[@]}"; do start_engine "$name"; done
  load_images
  telemetry_on && start_telemetry
  start_workers
  start_codec
  start_gateway
  say "up in $((SECONDS - started))s (data $DATA, logs $LOG_DIR)"
  say "the frontend requires client certificates (CA $TLS_DIR/ca.pem): as an operator, eval \"\$(bash scripts/cluster.sh env)\" points sandboxctl and the temporal CLI at it; agents reach the plane through the gateway at http://$HOST:$GATEWAY_PORT with a key (sandboxctl keys add PRINCIPAL)"
  telemetry_on && say "traces in Jaeger at http://$HOST:$TELEMETRY_JAEGER_PORT, metrics in Prometheus at http://$HOST:$TELEMETRY_PROMETHEUS_PORT (for sandboxctl's own spans: export OTEL_EXPORTER_OTLP_ENDPOINT=http://$HOST:$TELEMETRY_OTLP_PORT)"
  printf 'TEMPORAL_ADDRESS=%s\n' "$HOST:$FRONTEND_PORT"
  printf 'TEMPORAL_UI=%s\n' "http://$HOST:$UI_PORT"
}

case "${1:-}" in
  up) cmd_up "${2:-}" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  topology) cmd_topology ;;
  purge) cmd_purge ;;
  restart) cmd_restart "${2:-}" ;;
  rollout) cmd_rollout ;;
  drain) cmd_drain ;;
  env) cmd_env "${2:-}" ;;
  *) printf 'usage: %s up|down|status|topology|purge|restart WORKER|rollout|drain|env [operator|gateway|worker|ui]\n' "$0" >&2; exit 2 ;;
esac
