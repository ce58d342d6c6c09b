# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# PostgreSQL: a private cluster on 127.0.0.1:$PG_PORT, run as the postgres user. Sourced by
# scripts/cluster.sh, which says what each command does.

pg_bindir=""
find_pg_bindir() {
  local dir
  # Debian keeps each major version's server binaries in /usr/lib/postgresql/N/bin.
  dir="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k5 -n | tail -n 1)"
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
