#!/usr/bin/env bash
# Installs what the dev launcher and the tests need; idempotent and quick when done:
# Node packages (only when package-lock.json changed), `sandboxctl` linked onto PATH
# (scripts/link-cli.sh), the pinned Temporal CLI, and a compiled dist/ (only when a
# source file is newer than the last build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf 'setup: %s\n' "$*" >&2; }

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  say "Node.js >= 20 is required (found $(node --version 2>/dev/null || echo none))"
  exit 1
fi

lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.sandboxplane-lock"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]; then
  say "installing Node packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" >"$stamp"
fi

bash scripts/link-cli.sh

bash scripts/install-temporal-cli.sh >/dev/null

build_stamp="dist/.build-stamp"
if [ ! -f "$build_stamp" ] || [ -n "$(find src tsconfig.json package-lock.json -newer "$build_stamp" -print -quit)" ]; then
  say "compiling TypeScript into dist/"
  rm -rf dist
  npm run --silent build   # tsc, then the workflow bundle workers load
  touch "$build_stamp"
fi
