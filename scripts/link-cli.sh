#!/usr/bin/env bash
# Puts `sandboxctl` where a shell finds it without `npx` (about a second a call); run by
# scripts/setup.sh, quiet when the links are already right. npm does not link a package's
# own bin into its own node_modules/.bin, and `npm link` would reinstall its dependencies.
#   node_modules/.bin/sandboxctl -> ../../bin/sandboxctl.js, always;
#   <npm's global prefix>/bin/sandboxctl -> this checkout's bin/sandboxctl.js, when that
#   folder is writable (it is on PATH where npm installed node); it says when it links,
#   and which checkout the link pointed at before. SANDBOXPLANE_LINK_GLOBAL=0 skips it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf 'setup: %s\n' "$*" >&2; }

target="$root/bin/sandboxctl.js"
local_hint="export PATH=\"$root/node_modules/.bin:\$PATH\""

mkdir -p node_modules/.bin
if [ "$(readlink node_modules/.bin/sandboxctl 2>/dev/null || true)" != "../../bin/sandboxctl.js" ]; then
  ln -sfn ../../bin/sandboxctl.js node_modules/.bin/sandboxctl
fi

if [ "${SANDBOXPLANE_LINK_GLOBAL:-1}" = 0 ]; then
  exit 0
fi

# npm run exports its global prefix; asking npm costs a fifth of a second.
prefix="${npm_config_global_prefix:-$(npm prefix -g 2>/dev/null || true)}"
if [ -z "$prefix" ]; then
  say "npm names no global prefix; sandboxctl is linked in node_modules/.bin only: $local_hint"
  exit 0
fi
global_bin="$prefix/bin"
link="$global_bin/sandboxctl"

if [ -L "$link" ] && [ "$(readlink -f "$link" 2>/dev/null || true)" = "$(readlink -f "$target")" ]; then
  exit 0
fi
if [ -e "$link" ] && [ ! -L "$link" ]; then
  say "$link is a file, not a link; left alone. For this checkout's sandboxctl: $local_hint"
  exit 0
fi
if [ ! -d "$global_bin" ] || [ ! -w "$global_bin" ]; then
  say "cannot write $global_bin, so sandboxctl is linked in node_modules/.bin only: $local_hint"
  exit 0
fi

previous="$(readlink "$link" 2>/dev/null || true)"
ln -sfn "$target" "$link"
case ":$PATH:" in
  *":$global_bin:"*) on_path="" ;;
  *) on_path="; $global_bin is not on PATH: add it, or $local_hint" ;;
esac
if [ -n "$previous" ]; then
  say "linked $link -> $target (it pointed at $previous; now at this checkout)$on_path"
else
  say "linked $link -> $target$on_path"
fi
