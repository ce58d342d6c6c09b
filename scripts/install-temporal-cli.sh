#!/usr/bin/env bash
# Makes the pinned Temporal CLI available and prints its path as the last line.
# Order: a binary already recorded in .tools/, one on PATH at the pinned version,
# then `go install` into .tools/bin. Idempotent: a second run only reads a file.
set -euo pipefail

PINNED_VERSION="v1.5.1"
MODULE="github.com/temporalio/cli"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_bin="$root/.tools/bin"
local_bin="$tools_bin/temporal"
version_file="$tools_bin/temporal.version"

say() { printf 'temporal-cli: %s\n' "$*" >&2; }

# Go's official tarball installs to /usr/local/go; a non-login shell may lack it on PATH.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  PATH="$PATH:/usr/local/go/bin"
fi

# A go-built binary prints 0.0.0-DEV for --version; its build info knows the module version.
module_version() {
  command -v go >/dev/null 2>&1 || return 1
  go version -m "$1" 2>/dev/null | awk -v mod="$MODULE" '$1 == "mod" && $2 == mod { print $3 }'
}

release_version() {
  "$1" --version 2>/dev/null | sed -n 's/^temporal version \([0-9][0-9.]*\).*/v\1/p'
}

is_pinned() {
  local bin="$1" v
  v="$(release_version "$bin" || true)"
  [ "$v" = "$PINNED_VERSION" ] && return 0
  v="$(module_version "$bin" || true)"
  [ "$v" = "$PINNED_VERSION" ]
}

if [ -x "$local_bin" ] && [ "$(cat "$version_file" 2>/dev/null)" = "$PINNED_VERSION" ]; then
  echo "$local_bin"
  exit 0
fi

# Built earlier but never recorded (an interrupted run): trust its build info.
if [ -x "$local_bin" ] && [ ! -L "$local_bin" ] && is_pinned "$local_bin"; then
  echo "$PINNED_VERSION" >"$version_file"
  echo "$local_bin"
  exit 0
fi

if on_path="$(command -v temporal 2>/dev/null)" && is_pinned "$on_path"; then
  mkdir -p "$tools_bin"
  ln -sf "$on_path" "$local_bin"
  echo "$PINNED_VERSION" >"$version_file"
  say "using $on_path ($PINNED_VERSION)"
  echo "$local_bin"
  exit 0
fi

go_ok=false
if command -v go >/dev/null 2>&1; then
  go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')"
  [ -n "$go_minor" ] && [ "$go_minor" -ge 25 ] && go_ok=true
fi
if ! $go_ok; then
  cat >&2 <<EOF
temporal-cli: cannot find or build the Temporal CLI $PINNED_VERSION. Any one of these fixes it:
  - install Go >= 1.25 and run this again (it runs: go install $MODULE/cmd/temporal@$PINNED_VERSION);
  - put the temporal CLI $PINNED_VERSION on PATH (https://docs.temporal.io/cli);
  - set SANDBOXPLANE_TEMPORAL_CLI to the path of such a binary.
EOF
  exit 1
fi

say "building $MODULE/cmd/temporal@$PINNED_VERSION with $(go env GOVERSION) (a few minutes, once)"
mkdir -p "$tools_bin"
rm -f "$local_bin" "$version_file"
GOBIN="$tools_bin" go install "$MODULE/cmd/temporal@$PINNED_VERSION"
echo "$PINNED_VERSION" >"$version_file"
say "installed $local_bin"
echo "$local_bin"
