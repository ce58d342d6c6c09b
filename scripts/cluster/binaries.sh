# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# Binaries: the Temporal server, its SQL tool and the UI server, built once with Go into
# .tools/bin. Sourced by scripts/cluster.sh, which says what each command does.

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  PATH="$PATH:/usr/local/go/bin"
fi

module_version() { go version -m "$1" 2>/dev/null | awk -v mod="$2" '$1 == "mod" && $2 == mod { print $3 }'; }

# go_toolchain WHAT: the GOTOOLCHAIN that builds WHAT. The server's go.mod wants Go >= 1.25. An
# older go (>= 1.21) fetches that toolchain itself through the module proxy
# (golang.org/toolchain) when GOTOOLCHAIN names it; this machine's go env says
# GOTOOLCHAIN=local, which never switches on its own.
go_toolchain() {
  local toolchain go_minor
  toolchain="$(go env GOTOOLCHAIN)"
  go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')"
  if [[ -n "$go_minor" ]] && ((go_minor < 25)); then
    ((go_minor >= 21)) || fail "Go $(go env GOVERSION) is too old to build $1 (needs >= 1.25, or >= 1.21 to fetch 1.25)"
    toolchain="$MIN_GO_TOOLCHAIN"
  fi
  echo "$toolchain"
}

# build_server: .tools/bin/temporal-server from scripts/temporal-server (go.temporal.io/server
# $SERVER_VERSION, with the certificate roles of DESIGN §18), once per change of its source.
build_server() {
  local src="$root/scripts/temporal-server" target="$tools_bin/temporal-server" version toolchain tmp started=$SECONDS
  version="$SERVER_VERSION+roles-$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)"
  if [[ -x "$target" && "$(cat "$target.version" 2>/dev/null)" == "$version" ]]; then return 0; fi
  command -v go >/dev/null 2>&1 || fail "Go is needed to build the Temporal server once (install Go >= 1.21)"
  toolchain="$(go_toolchain "the Temporal server")"
  tmp="$(mktemp -d)"
  say "building the Temporal server $SERVER_VERSION with its certificate roles (scripts/temporal-server); once, a few minutes"
  if ! (cd "$src" && GOTOOLCHAIN="$toolchain" GOFLAGS=-mod=readonly go build -o "$tmp/temporal-server" .); then
    rm -rf "$tmp"
    fail "go build of scripts/temporal-server failed (output above)"
  fi
  mkdir -p "$tools_bin"
  mv -f "$tmp/temporal-server" "$target"
  rm -rf "$tmp"
  echo "$version" >"$target.version"
  say "installed $target ($((SECONDS - started))s)"
}

# go_build BIN MODULE PACKAGE VERSION: installs PACKAGE@VERSION as .tools/bin/BIN once.
go_build() {
  local module="$2" pkg="$3" version="$4" target="$tools_bin/$1"
  local version_file="$target.version"
  if [[ -x "$target" && "$(cat "$version_file" 2>/dev/null)" == "$version" ]]; then return 0; fi
  command -v go >/dev/null 2>&1 || fail "Go is needed to build $pkg@$version once (install Go >= 1.21; the module's own go line picks the toolchain through the module proxy)"
  if [[ -x "$target" && "$(module_version "$target" "$module")" == "$version" ]]; then
    echo "$version" >"$version_file"
    return 0
  fi
  local toolchain tmp started=$SECONDS
  toolchain="$(go_toolchain "$pkg@$version")"
  tmp="$(mktemp -d)"
  say "building $pkg@$version with $(go env GOVERSION) (GOTOOLCHAIN=$toolchain); once, a few minutes"
  # GOBIN names the binary after the package's last element (`server`, `sql`): build aside, then rename.
  if ! GOTOOLCHAIN="$toolchain" GOBIN="$tmp" go install "$pkg@$version"; then
    rm -rf "$tmp"
    fail "go install $pkg@$version failed (output above)"
  fi
  mkdir -p "$tools_bin"
  mv -f "$tmp/$(basename "$pkg")" "$target"
  rm -rf "$tmp"
  echo "$version" >"$version_file"
  say "installed $target ($((SECONDS - started))s)"
}

build_binaries() {
  build_server
  go_build temporal-sql-tool "$SERVER_MODULE" "$SERVER_MODULE/cmd/tools/sql" "$SERVER_VERSION"
  go_build temporal-ui-server "$UI_MODULE" "$UI_MODULE/cmd/server" "$UI_VERSION"
  local cli
  cli="$(bash "$root/scripts/install-temporal-cli.sh" | tail -n 1)" || fail "no temporal CLI (scripts/install-temporal-cli.sh failed)"
  [[ "$cli" == "$cli_bin" ]] || cli_bin="$cli"
}
