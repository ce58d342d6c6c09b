#!/usr/bin/env bash
# `npm start`: set up, make sandboxes possible, run the dev launcher in the foreground.
# Arguments go to `sandboxctl dev` (--port, --ui-port, --db).
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

exec node bin/sandboxctl.js dev "$@"
