#!/usr/bin/env bash
# Builds the offline test image (no registry is reachable here): a root file system
# holding Debian's static busybox serving /www over HTTP on port 8080, imported with
# `docker import` and tagged. Rebuilt only when the tag is missing. Prints the image id.
#
# Needs DOCKER_HOST (or the default socket) to reach an engine: run
# scripts/docker-engine.sh first.
set -euo pipefail

TAG="${SANDBOXPLANE_TEST_IMAGE:-local/sandboxplane-testhttp:1}"

say() { printf 'build-test-image: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

command -v docker >/dev/null 2>&1 || fail "the docker client is missing; run scripts/docker-engine.sh first"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  fail "no Docker engine answers at ${DOCKER_HOST:-the default socket}; run scripts/docker-engine.sh and export the DOCKER_HOST it prints"

if id="$(docker image inspect --format '{{.Id}}' "$TAG" 2>/dev/null)"; then
  printf '%s\n' "$id"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The statically linked busybox: the installed one if busybox-static is installed,
# otherwise unpacked from the package without installing it (it would replace busybox).
if dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed'; then
  busybox=/bin/busybox
else
  command -v apt-get >/dev/null 2>&1 || fail "busybox-static is not installed and there is no apt-get to fetch it"
  say "fetching Debian's busybox-static package"
  if ! (cd "$work" && apt-get download busybox-static >/dev/null 2>&1); then
    [[ "$(id -u)" == 0 ]] || fail "apt-get download busybox-static failed; run as root or install busybox-static"
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$work" && apt-get download busybox-static >/dev/null 2>&1) || fail "apt-get download busybox-static failed"
  fi
  dpkg-deb -x "$work"/busybox-static_*.deb "$work/pkg"
  busybox="$work/pkg/bin/busybox"
fi
[[ -x "$busybox" ]] || fail "no busybox binary at $busybox"

say "building $TAG"
root="$work/rootfs"
mkdir -p "$root/bin" "$root/www" "$root/tmp" "$root/etc"
cp "$busybox" "$root/bin/busybox"
for applet in sh httpd wget cat sleep; do ln -s busybox "$root/bin/$applet"; done
printf 'sandboxplane-testhttp ok\n' >"$root/www/index.html"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"

tar --numeric-owner --owner=0 --group=0 -C "$root" -c . |
  docker import \
    --change 'EXPOSE 8080/tcp' \
    --change 'ENV PATH=/bin' \
    --change 'CMD ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"]' \
    --message 'cloud-sandbox-plane offline test image' \
    - "$TAG" >/dev/null

docker image inspect --format '{{.Id}}' "$TAG"
