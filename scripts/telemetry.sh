#!/usr/bin/env bash
# Runs Jaeger (traces) and Prometheus (metrics) for the plane, in the foreground until
# SIGINT or SIGTERM, on loopback only (DESIGN §17; docs/observability.md).
#
#   bash scripts/telemetry.sh [--scrape host:port[,host:port…] | --scrape-file FILE] [--data DIR]
#                             [--otlp-port 4318] [--jaeger-port 16686] [--prometheus-port 9090]
#
# --scrape lists the workers' SANDBOXPLANE_METRICS_ADDRESS values (default 127.0.0.1:9464);
# --scrape-file names a Prometheus file_sd JSON file instead, which Prometheus re-reads when
# it changes (scripts/cluster.sh keeps one as its workers come and go).
# Jaeger keeps traces in memory; Prometheus keeps its data under DIR (default
# .data/telemetry). When both answer it prints, and then waits:
#   telemetry: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
#   telemetry: Jaeger UI at http://127.0.0.1:16686
#   telemetry: Prometheus at http://127.0.0.1:9090
#   TELEMETRY_READY
# Jaeger comes from scripts/install-jaeger.sh (built from the Go module proxy), Prometheus
# from scripts/install-prometheus.sh (Debian's package). SANDBOXPLANE_JAEGER_UI may name a
# built Jaeger UI (its index.html and static/) for Jaeger to serve; the binary built from the
# module proxy embeds only a placeholder page, and its HTTP API works either way.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

scrape="127.0.0.1:9464"
scrape_file=""
data="$root/.data/telemetry"
otlp_port=4318
jaeger_port=16686
prometheus_port=9090
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scrape) scrape="$2"; shift 2 ;;
    --scrape-file) scrape_file="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --otlp-port) otlp_port="$2"; shift 2 ;;
    --jaeger-port) jaeger_port="$2"; shift 2 ;;
    --prometheus-port) prometheus_port="$2"; shift 2 ;;
    *) printf 'telemetry: unknown argument %s (see the top of %s)\n' "$1" "$0" >&2; exit 2 ;;
  esac
done

say() { printf 'telemetry: %s\n' "$*"; }

jaeger="$(bash "$root/scripts/install-jaeger.sh" | tail -n 1)"
prometheus="$(bash "$root/scripts/install-prometheus.sh" | tail -n 1)"
mkdir -p "$data/prometheus"

ui_assets=""
if [[ -n "${SANDBOXPLANE_JAEGER_UI:-}" ]]; then
  [[ -f "$SANDBOXPLANE_JAEGER_UI/index.html" ]] || { say "SANDBOXPLANE_JAEGER_UI=$SANDBOXPLANE_JAEGER_UI holds no index.html" >&2; exit 2; }
  ui_assets="    ui:
      assets_path: $SANDBOXPLANE_JAEGER_UI"
fi
cat >"$data/jaeger.yaml" <<YAML
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memory
$ui_assets
    http:
      endpoint: 127.0.0.1:$jaeger_port
    grpc:
      endpoint: 127.0.0.1:0
  jaeger_storage:
    backends:
      memory:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$otlp_port
processors:
  batch: {}
exporters:
  jaeger_storage_exporter:
    trace_storage: memory
YAML

if [[ -n "$scrape_file" ]]; then
  targets_config="    file_sd_configs:
      - files: ['$scrape_file']"
  scrape="the targets in $scrape_file"
else
  targets_config="    static_configs:
      - targets: [$(printf '%s' "$scrape" | sed "s/[^,][^,]*/'&'/g; s/,/, /g")]"
fi
cat >"$data/prometheus.yml" <<YAML
global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
  - $root/docs/observability-alerts.yml
scrape_configs:
  - job_name: sandboxplane
$targets_config
YAML

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
# Asked to stop: stop both, and that is success. Anything else that ends the script stops them too.
trap 'stop; exit 0' INT TERM
trap stop EXIT

"$jaeger" --config "file:$data/jaeger.yaml" >"$data/jaeger.log" 2>&1 &
pids+=($!)
"$prometheus" --config.file="$data/prometheus.yml" --storage.tsdb.path="$data/prometheus" \
  --web.listen-address="127.0.0.1:$prometheus_port" >"$data/prometheus.log" 2>&1 &
pids+=($!)

answers() { curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null; }
for _ in $(seq 1 120); do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { say "a server stopped at start; its log:" >&2; tail -n 20 "$data/jaeger.log" "$data/prometheus.log" >&2; exit 1; }
  done
  if answers "http://127.0.0.1:$jaeger_port/api/services" && answers "http://127.0.0.1:$prometheus_port/-/ready"; then
    say "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$otlp_port"
    say "Jaeger UI at http://127.0.0.1:$jaeger_port"
    say "Prometheus at http://127.0.0.1:$prometheus_port (scraping $scrape)"
    echo TELEMETRY_READY
    wait -n "${pids[@]}" || true
    say "a server stopped; its log is under $data" >&2
    exit 1
  fi
  sleep 0.5
done
say "Jaeger or Prometheus did not answer within 60 s; logs under $data" >&2
exit 1
