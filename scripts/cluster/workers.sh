# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# The plane's workers (one store, two lifecycle, one docker worker per engine), the gateway and
# telemetry. Sourced by scripts/cluster.sh, which says what each command does.

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
  local name stopped=0
  for name in "${WORKERS[@]}"; do alive_as "$(pid_of "$name")" node || stopped=1; done
  # The compiled CLI (dist/), the Node packages and the temporal CLI: what `npm run setup`
  # makes. Only when a worker is to start: a rebuild removes dist/ under running ones.
  ((stopped)) && bash "$root/scripts/setup.sh" >&2
  mkdir -p "$PLANE_DIR"
  # The first start adopts the checkout's build for the lifecycle workers; later ones keep theirs.
  [[ -n "$(current_build)" ]] || adopt_build "$(checkout_build)"
  # With the old builds still draining (`rollout`): their pinned sandboxes need them too.
  for name in "${WORKERS[@]}" $(draining); do start_worker "$name"; done
  for name in "${WORKERS[@]}" $(draining); do wait_for_worker "$name"; done
}

# The gateway (DESIGN §18): the compiled CLI with the gateway's certificate, reading the key
# table of the store worker's file. Agents get a key (`sandboxctl keys add`), never a certificate.
start_gateway() {
  local env_args=()
  mapfile -t env_args < <(tls_plane_env gateway)
  telemetry_on && env_args+=("OTEL_EXPORTER_OTLP_ENDPOINT=http://$HOST:$TELEMETRY_OTLP_PORT")
  start_daemon gateway gateway node "$GATEWAY_PORT" "http://$HOST:$GATEWAY_PORT" \
    env -u DOCKER_HOST "$WORKER_MARK" "${env_args[@]}" TEMPORAL_ADDRESS="$HOST:$FRONTEND_PORT" TEMPORAL_NAMESPACE="$NAMESPACE" \
    SANDBOXPLANE_TASK_QUEUE="$TASK_QUEUE" SANDBOXPLANE_DB="$PLANE_DIR/sandboxplane.sqlite" SANDBOXPLANE_LOG_LEVEL="${SANDBOXPLANE_LOG_LEVEL:-info}" \
    node "$root/bin/sandboxctl.js" gateway --listen "$HOST:$GATEWAY_PORT"
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
