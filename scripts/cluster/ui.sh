# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# UI server, and the codec server it decrypts payloads through. Sourced by scripts/cluster.sh,
# which says what each command does.

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
  start_daemon ui ui temporal-ui-server "$UI_PORT" "http://$HOST:$UI_PORT" "$ui_bin" --root "$UI_DIR" --config config --env cluster start
}

# The codec server: the compiled CLI (so after start_workers, which builds it), with the keys
# of this checkout (.data/codec-keys, as the workers read them), answering only the UI's origin.
start_codec() {
  start_daemon codec "codec server" node "$CODEC_PORT" "http://$HOST:$CODEC_PORT for the ui" \
    env "$WORKER_MARK" node "$root/bin/sandboxctl.js" codec-server --port "$CODEC_PORT" --origin "http://$HOST:$UI_PORT"
}
