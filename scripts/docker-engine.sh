#!/usr/bin/env bash
# Makes a Docker engine available and prints `DOCKER_HOST=...` as its last line of stdout.
#
# 1. An engine already answering at $DOCKER_HOST, at the default socket or at our private
#    socket is used as it is (re-running while the engine runs does nothing).
# 2. Otherwise, as root on Debian: install `docker.io` (apt-get update first) if dockerd is
#    missing, start dockerd on a private socket with its own data root, and wait for it
#    (scripts/private-dockerd.sh; its log is $DATA_ROOT/dockerd.log).
# 3. Otherwise: a clear error and exit status 1.
#
# Progress goes to stderr, so `eval "$(bash scripts/docker-engine.sh | tail -n 1)"` or
# `export "$(bash scripts/docker-engine.sh | tail -n 1)"` works.
set -euo pipefail

RUN_DIR="${SANDBOXPLANE_DOCKER_RUN_DIR:-/run/sandboxplane-docker}"
DATA_ROOT="${SANDBOXPLANE_DOCKER_DATA_ROOT:-/var/lib/sandboxplane-docker}"
SOCKET="$RUN_DIR/docker.sock"
PRIVATE_HOST="unix://$SOCKET"
DEFAULT_HOST="unix:///var/run/docker.sock"
WAIT_SECONDS="${SANDBOXPLANE_DOCKER_WAIT_SECONDS:-60}"
ADDRESS_POOL="${SANDBOXPLANE_DOCKER_ADDRESS_POOL:-base=10.203.0.0/16,size=28}"

say() { printf 'docker-engine: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
launcher="$(dirname "${BASH_SOURCE[0]}")/private-dockerd.sh"
answers() { bash "$launcher" answers "$1"; }

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

# --fallback (vfs, no iptables): the machine's first engine must start on machines without
# an overlay module or netfilter too.
bash "$launcher" start --run-dir "$RUN_DIR" --home "$DATA_ROOT" --address-pool "$ADDRESS_POOL" \
  --wait-seconds "$WAIT_SECONDS" --fallback || exit 1
use "$PRIVATE_HOST"
