# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# Docker engines: two private dockerd, as two machines' engines would be. Sourced by
# scripts/cluster.sh, which says what each command does.

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

# The sandbox networks of a stopped engine stay in the kernel as bridges, 10.<subnet>.x
# (dockerd removes one only when asked): once `purge` deletes its data root nothing ever
# would, and a machine's failed runs would hold the five engine subnets for good.
remove_sandbox_bridges() {
  local file dev
  for file in "$DATA"/engines/*/subnet; do
    [[ -s "$file" ]] || continue
    for dev in $(ip -o -4 addr show | awk -v net="10.$(cat "$file")." 'index($4, net) == 1 { print $2 }' | sort -u); do
      ip link del "$dev" 2>/dev/null || true
    done
  done
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
