#!/usr/bin/env bash
# Makes Debian's Chromium available for the browser test (test/ui-approval.test.ts,
# driven by playwright-core, which never downloads a browser) and prints its path as
# the last line of stdout. Idempotent: when the browser is there it only checks it.
#
# 1. $SANDBOXPLANE_CHROMIUM, or /usr/bin/chromium, when it is an executable: used as is.
# 2. Otherwise, as root on Debian: `apt-get update`, then `apt-get install chromium`.
# 3. Otherwise: a clear error and exit status 1.
#
# Progress goes to stderr.
set -euo pipefail

CHROMIUM="${SANDBOXPLANE_CHROMIUM:-/usr/bin/chromium}"

say() { printf 'chromium: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

if [[ -x "$CHROMIUM" ]]; then
  echo "$CHROMIUM"
  exit 0
fi

if [[ -n "${SANDBOXPLANE_CHROMIUM:-}" ]]; then
  fail "SANDBOXPLANE_CHROMIUM=$CHROMIUM is not an executable file"
fi
if [[ "$(id -u)" != 0 ]]; then
  fail "$CHROMIUM is missing and installing it needs root. Run \`sudo apt-get install chromium\`, or set SANDBOXPLANE_CHROMIUM to a Chromium binary."
fi
command -v apt-get >/dev/null 2>&1 || fail "$CHROMIUM is missing; this script installs it only on Debian (apt-get). Install Chromium, or set SANDBOXPLANE_CHROMIUM."

say "installing chromium (apt-get update, then apt-get install)"
apt_log="$(mktemp)"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >"$apt_log" 2>&1; then
  tail -n 20 "$apt_log" >&2
  fail "apt-get could not install chromium (output above)"
fi
rm -f "$apt_log"
[[ -x "$CHROMIUM" ]] || fail "apt-get installed chromium, but $CHROMIUM is still missing"
say "installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
echo "$CHROMIUM"
