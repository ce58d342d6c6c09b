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
#      made once with openssl in .data/cluster/tls/ (make_tls, cluster/tls.sh): the frontend's and the
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
#
# The parts, in scripts/cluster/: common.sh (settings, helpers), binaries.sh, postgres.sh,
# schemas.sh, tls.sh, server.sh, ui.sh (and the codec server), engines.sh (through
# scripts/private-dockerd.sh), workers.sh (and the gateway, telemetry, `topology`),
# rollout.sh (`rollout`, `drain`), commands.sh (`up`, `down`, `status`, the others).
set -euo pipefail

SERVER_VERSION="v1.29.1"      # the server the pinned temporal CLI (v1.5.1) embeds; docker-compose.yml names it
SERVER_MODULE="go.temporal.io/server"
UI_VERSION="v2.42.1"          # the ui-server module the pinned temporal CLI (v1.5.1) embeds
UI_MODULE="github.com/temporalio/ui-server/v2"
MIN_GO_TOOLCHAIN="go1.25.0"    # used only when the installed go is older (see go_build, cluster/binaries.sh)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cluster/common.sh
source "$root/scripts/cluster/common.sh"
# shellcheck source=scripts/cluster/binaries.sh
source "$root/scripts/cluster/binaries.sh"
# shellcheck source=scripts/cluster/postgres.sh
source "$root/scripts/cluster/postgres.sh"
# shellcheck source=scripts/cluster/schemas.sh
source "$root/scripts/cluster/schemas.sh"
# shellcheck source=scripts/cluster/tls.sh
source "$root/scripts/cluster/tls.sh"
# shellcheck source=scripts/cluster/server.sh
source "$root/scripts/cluster/server.sh"
# shellcheck source=scripts/cluster/ui.sh
source "$root/scripts/cluster/ui.sh"
# shellcheck source=scripts/cluster/engines.sh
source "$root/scripts/cluster/engines.sh"
# shellcheck source=scripts/cluster/workers.sh
source "$root/scripts/cluster/workers.sh"
# shellcheck source=scripts/cluster/rollout.sh
source "$root/scripts/cluster/rollout.sh"
# shellcheck source=scripts/cluster/commands.sh
source "$root/scripts/cluster/commands.sh"

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
