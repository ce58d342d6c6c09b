#!/usr/bin/env bash
# `npm start`: set up, make sandboxes possible, run the dev launcher in the foreground.
# Arguments go to `sandboxctl dev` (--port, --ui-port, --db), except --telemetry: then
# Jaeger and Prometheus run beside it (scripts/telemetry.sh), the plane sends its traces
# to Jaeger and serves its metrics on 127.0.0.1:9464 for Prometheus (docs/observability.md):
#   npm start -- --telemetry
#   1. scripts/setup.sh: Node packages, the Temporal CLI, dist/.
#   2. A Docker engine (scripts/docker-engine.sh) and the moto image
#      (scripts/build-moto-image.sh), unless SANDBOXPLANE_MOTO_IMAGE is already set.
#      Without an engine the launcher still runs, with the memory adapter only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/setup.sh

if host_line="$(bash scripts/docker-engine.sh | tail -n 1)" && [[ "$host_line" == DOCKER_HOST=* ]]; then
  export "${host_line?}"
  if [[ -z "${SANDBOXPLANE_MOTO_IMAGE:-}" ]]; then
    SANDBOXPLANE_MOTO_IMAGE="$(bash scripts/build-moto-image.sh | tail -n 1)"
    export SANDBOXPLANE_MOTO_IMAGE
  fi
  printf 'start: Docker engine at %s, moto image %s\n' "$DOCKER_HOST" "$SANDBOXPLANE_MOTO_IMAGE" >&2
  if [[ -z "${SANDBOXPLANE_WARM_POOL:-}" ]]; then
    printf 'start: warm pools are off; `SANDBOXPLANE_WARM_POOL=moto=2 npm start` keeps two moto containers started, so a create skips the container start (docs/operations.md#warm-pools)\n' >&2
  else
    printf 'start: warm pool %s (sandboxctl pools shows it)\n' "$SANDBOXPLANE_WARM_POOL" >&2
  fi
else
  printf 'start: no Docker engine; moto and Floci sandboxes are off (the memory adapter works)\n' >&2
fi

telemetry=false
dev_args=()
for arg in "$@"; do
  if [[ "$arg" == "--telemetry" ]]; then telemetry=true; else dev_args+=("$arg"); fi
done
if ! $telemetry; then
  exec node bin/sandboxctl.js dev "${dev_args[@]}"
fi

export SANDBOXPLANE_METRICS_ADDRESS="${SANDBOXPLANE_METRICS_ADDRESS:-127.0.0.1:9464}"
telemetry_log="$root/.data/telemetry.log"
mkdir -p "$root/.data"
bash scripts/telemetry.sh --scrape "$SANDBOXPLANE_METRICS_ADDRESS" >"$telemetry_log" 2>&1 &
telemetry_pid=$!
trap 'kill "$telemetry_pid" 2>/dev/null || true; wait "$telemetry_pid" 2>/dev/null || true' EXIT
until grep -q '^TELEMETRY_READY' "$telemetry_log" 2>/dev/null; do
  if ! kill -0 "$telemetry_pid" 2>/dev/null; then
    cat "$telemetry_log" >&2
    printf 'start: Jaeger and Prometheus did not start (above)\n' >&2
    exit 1
  fi
  sleep 0.5
done
grep '^telemetry: ' "$telemetry_log" | sed 's/^telemetry: /start: /' >&2
export OTEL_EXPORTER_OTLP_ENDPOINT="${OTEL_EXPORTER_OTLP_ENDPOINT:-$(sed -n 's/^telemetry: OTEL_EXPORTER_OTLP_ENDPOINT=//p' "$telemetry_log")}"
printf 'start: the worker serves its metrics at http://%s/metrics; traces go to %s\n' "$SANDBOXPLANE_METRICS_ADDRESS" "$OTEL_EXPORTER_OTLP_ENDPOINT" >&2
printf 'start: to trace sandboxctl calls too, in their shell: export OTEL_EXPORTER_OTLP_ENDPOINT=%s\n' "$OTEL_EXPORTER_OTLP_ENDPOINT" >&2
# The launcher runs as this script's child (not exec'd: Jaeger and Prometheus are stopped
# after it), so a signal sent to the script alone is passed on to it, and waited for.
node bin/sandboxctl.js dev "${dev_args[@]}" &
dev_pid=$!
trap 'kill -TERM "$dev_pid" 2>/dev/null || true' INT TERM
status=0
wait "$dev_pid" || status=$?
# A trapped signal ends the first wait early: wait again for the launcher to finish stopping.
while kill -0 "$dev_pid" 2>/dev/null; do wait "$dev_pid" || status=$?; done
exit "$status"
