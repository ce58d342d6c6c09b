# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# The commands: up, down, status, restart, purge, env (topology is in workers.sh, rollout and
# drain in rollout.sh). Sourced by scripts/cluster.sh, which says what each command does.

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

# `purge`: `down`, then the data as well (PostgreSQL, the engines, the SQLite projection, logs).
cmd_purge() {
  cmd_down
  remove_sandbox_bridges
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

# One row of the status table.
row() { printf '%-12s %-8s %-8s %s\n' "$@"; }

# component NAME PID COMM WHERE: NAME's row, running when PID is a live COMM; status 1 when it is not.
component() {
  local name="$1" pid="$2" comm="$3" where="$4"
  if alive_as "$pid" "$comm"; then row "$name" running "$pid" "$where"; else row "$name" stopped - "$where"; return 1; fi
}

cmd_status() {
  local svc all=0
  row component state pid where
  if find_pg_bindir && pg_running; then
    row postgres running "$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null)" "$HOST:$PG_PORT"
  else
    row postgres stopped - "$HOST:$PG_PORT"; all=1
  fi
  for svc in "${SERVICES[@]}"; do component "$svc" "$(pid_of "$svc")" temporal-server "$HOST:$(grpc_port "$svc")" || all=1; done
  component ui "$(pid_of ui)" temporal-ui-server "http://$HOST:$UI_PORT" || all=1
  component codec "$(pid_of codec)" node "http://$HOST:$CODEC_PORT" || all=1
  component gateway "$(pid_of gateway)" node "http://$HOST:$GATEWAY_PORT" || all=1
  if telemetry_on; then
    component telemetry "$(pid_of telemetry)" bash "Jaeger http://$HOST:$TELEMETRY_JAEGER_PORT, Prometheus http://$HOST:$TELEMETRY_PROMETHEUS_PORT" || all=1
  fi
  local name host
  for name in "${ENGINES[@]}"; do component "engine-$name" "$(engine_pid "$name")" dockerd "$(engine_socket "$name")" || all=1; done
  for name in "${WORKERS[@]}" $(draining); do
    host="$(worker_host "$name")"
    component "$name" "$(pid_of "$name")" node "--role $(worker_role "$name")${host:+ --host-id $host}" || all=1
  done
  local known=" " stray
  for svc in "${SERVICES[@]}" ui codec gateway telemetry "${WORKERS[@]}" $(draining); do known+="$(pid_of "$svc") "; done
  for name in "${ENGINES[@]}"; do known+="$(engine_pid "$name") "; done
  # Jaeger and Prometheus are scripts/telemetry.sh's children.
  [[ -z "$(pid_of telemetry)" ]] || known+="$(pgrep -P "$(pid_of telemetry)" | paste -sd' ' || true) "
  for stray in $(strays); do
    [[ "$known" == *" $stray "* ]] || { row stray running "$stray" "(no pid file; \`down\` stops it)"; all=1; }
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
