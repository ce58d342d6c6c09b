#!/usr/bin/env bash
# Makes Jaeger's all-in-one (v1.75.0, `cmd/jaeger`) available and prints its path as the
# last line. Built once with `go build` from the Go module proxy into .tools/bin/jaeger
# (a few minutes, about 120 MB); later runs only read .tools/bin/jaeger.version.
# SANDBOXPLANE_JAEGER, when set, names a binary to use instead.
set -euo pipefail

PINNED_VERSION="v1.75.0"
MODULE="github.com/jaegertracing/jaeger"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_bin="$root/.tools/bin"
local_bin="$tools_bin/jaeger"
version_file="$tools_bin/jaeger.version"

say() { printf 'jaeger: %s\n' "$*" >&2; }

if [[ -n "${SANDBOXPLANE_JAEGER:-}" ]]; then
  [[ -x "$SANDBOXPLANE_JAEGER" ]] || { say "SANDBOXPLANE_JAEGER=$SANDBOXPLANE_JAEGER is not an executable file"; exit 1; }
  echo "$SANDBOXPLANE_JAEGER"
  exit 0
fi

if [[ -x "$local_bin" && "$(cat "$version_file" 2>/dev/null)" == "$PINNED_VERSION" ]]; then
  echo "$local_bin"
  exit 0
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then PATH="$PATH:/usr/local/go/bin"; fi
command -v go >/dev/null 2>&1 || {
  say "Go is needed to build Jaeger $PINNED_VERSION (go build $MODULE/cmd/jaeger@$PINNED_VERSION), or set SANDBOXPLANE_JAEGER to a jaeger binary"
  exit 1
}

say "building $MODULE/cmd/jaeger@$PINNED_VERSION with $(go env GOVERSION) (a few minutes, once)"
# A module of its own under .tools, requiring Jaeger and nothing else: `go install pkg@version`
# refuses Jaeger's module (its go.mod has a replace directive). Its go line (1.24) makes an
# older Go fetch a newer toolchain through the module proxy (GOTOOLCHAIN=auto).
work="$root/.tools/jaeger-build"
mkdir -p "$work" "$tools_bin"
rm -f "$local_bin" "$version_file"
(
  cd "$work"
  export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
  [[ -f go.mod ]] || go mod init sandboxplane-jaeger-build >/dev/null 2>&1
  go get "$MODULE/cmd/jaeger@$PINNED_VERSION"
  go build -trimpath -o "$local_bin.partial" "$MODULE/cmd/jaeger"
  mv "$local_bin.partial" "$local_bin"
)
echo "$PINNED_VERSION" >"$version_file"
say "installed $local_bin"
echo "$local_bin"
