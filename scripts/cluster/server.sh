# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# Temporal server: four processes (history, matching, frontend, worker) on one config. Sourced
# by scripts/cluster.sh, which says what each command does.

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
  local existing sa name missing=()
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
