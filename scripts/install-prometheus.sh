#!/usr/bin/env bash
# Makes Debian's Prometheus available and prints the path of its binary as the last line.
# 1. $SANDBOXPLANE_PROMETHEUS, or /usr/bin/prometheus, when executable: used as is.
# 2. Otherwise, as root on Debian: `apt-get install prometheus` (its service is not started:
#    the plane runs its own Prometheus with its own configuration).
set -euo pipefail

PROMETHEUS="${SANDBOXPLANE_PROMETHEUS:-/usr/bin/prometheus}"
say() { printf 'prometheus: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

if [[ -x "$PROMETHEUS" ]]; then
  echo "$PROMETHEUS"
  exit 0
fi
[[ -z "${SANDBOXPLANE_PROMETHEUS:-}" ]] || fail "SANDBOXPLANE_PROMETHEUS=$PROMETHEUS is not an executable file"
[[ "$(id -u)" == 0 ]] || fail "$PROMETHEUS is missing and installing it needs root. Run \`sudo apt-get install prometheus\`, or set SANDBOXPLANE_PROMETHEUS."
command -v apt-get >/dev/null 2>&1 || fail "$PROMETHEUS is missing; this script installs it only on Debian (apt-get). Install Prometheus, or set SANDBOXPLANE_PROMETHEUS."

say "installing prometheus (apt-get)"
log="$(mktemp)"
# policy-rc.d keeps the package's own service from starting: it would take port 9090.
policy=/usr/sbin/policy-rc.d
made_policy=false
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=true
fi
if ! { apt-get install -y -qq --no-install-recommends prometheus || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; }; } >"$log" 2>&1; then
  $made_policy && rm -f "$policy"
  tail -n 20 "$log" >&2
  fail "apt-get could not install prometheus (output above)"
fi
$made_policy && rm -f "$policy"
rm -f "$log"
[[ -x "$PROMETHEUS" ]] || fail "apt-get installed prometheus, but $PROMETHEUS is still missing"
say "installed $("$PROMETHEUS" --version 2>/dev/null | head -n 1)"
echo "$PROMETHEUS"
