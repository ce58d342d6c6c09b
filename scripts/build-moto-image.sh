#!/usr/bin/env bash
# Builds the moto AWS emulator image offline from any image registry (none is reachable
# here): a Debian bookworm minbase root file system made with debootstrap from the Debian
# mirror, python3 from Debian, and moto[server] with pinned dependencies from PyPI in a
# venv at /opt/moto; imported with `docker import` and tagged. The container runs
# `moto_server -H 0.0.0.0 -p 5000` as user moto (uid/gid 10001).
#
# Rebuilt only when the tag is missing. Prints the image id (sha256:...) as the last line
# of stdout; progress goes to stderr. Building needs root (debootstrap, chroot) on Debian
# or a system with apt-get/debootstrap. Downloaded .debs and wheels are kept under
# $SANDBOXPLANE_CACHE_DIR (default /var/cache/sandboxplane) so a rebuild after an image
# prune is faster; the cache is optional and safe to delete.
#
# Needs DOCKER_HOST (or the default socket) to reach an engine: run
# scripts/docker-engine.sh first.
set -euo pipefail

MOTO_VERSION=5.2.5
# Bumped whenever the image's recipe changes (r2: the CloudFormation types label), so an
# engine holding the older image builds the new one instead of reusing it.
IMAGE_REVISION=r2
TAG="${SANDBOXPLANE_MOTO_IMAGE:-local/sandboxplane-moto:$MOTO_VERSION-$IMAGE_REVISION}"
# `--tag`: print the tag this script builds, and do nothing else.
if [[ "${1:-}" == --tag ]]; then echo "$TAG"; exit 0; fi
SUITE=bookworm
MIRROR="${SANDBOXPLANE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE_ROOT="${SANDBOXPLANE_CACHE_DIR:-/var/cache/sandboxplane}"
CACHE_DIR="$CACHE_ROOT/moto-$MOTO_VERSION"
MOTO_PORT=5000
MOTO_ID=10001
CHROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# moto[server]==5.2.5 and the exact versions of everything it pulls in (resolved for
# CPython 3.11, bookworm's python3, on linux). `moto[server]` already covers s3, sqs, sns,
# dynamodb, iam, sts, kms, secretsmanager, ssm, events, logs, cloudformation and
# stepfunctions in server mode (it is a superset of moto[all]). Wheels only, so no
# compiler is needed. Change a pin here and the image tag together.
REQUIREMENTS='
moto[server]==5.2.5
annotated-types==0.8.0
antlr4-python3-runtime==4.13.2
attrs==26.1.0
aws-xray-sdk==2.15.0
blinker==1.9.0
boto3==1.44.8
botocore==1.44.8
certifi==2026.10.19.post1
cffi==2.1.1
cfn-lint==1.58.0
charset-normalizer==3.5.3
click==8.5.1
cryptography==50.0.2
docker==7.2.0
Flask==3.1.3
flask-cors==6.0.5
graphql-core==3.3.2
idna==3.20
itsdangerous==2.2.0
Jinja2==3.1.6
jmespath==1.1.0
joserfc==1.8.0
jsonpatch==1.48
jsonpath-ng==1.16.0
jsonpointer==3.12
jsonschema==4.26.0
jsonschema-path==0.5.0
jsonschema-specifications==2025.9.1
lazy-object-proxy==1.13.0
MarkupSafe==3.0.4
mpmath==1.3.0
networkx==3.6.1
openapi-schema-validator==0.9.0
openapi-spec-validator==0.9.0
pathable==0.6.0
py-partiql-parser==0.6.3
pycparser==3.12
pydantic==2.14.4
pydantic-settings==2.16.3
pydantic_core==2.50.5
pyparsing==3.3.3
python-dateutil==2.9.0.post0
python-dotenv==1.2.4
PyYAML==6.0.4
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
responses==0.26.3
rfc3339-validator==0.1.4
rpds-py==2026.9.1
s3transfer==0.19.3
six==1.17.0
sympy==1.14.0
typing-inspection==0.4.5
typing_extensions==4.16.0
urllib3==2.8.0
Werkzeug==3.1.9
wrapt==2.5.2
xmltodict==1.0.4
'

say() { printf 'build-moto-image: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

command -v docker >/dev/null 2>&1 || fail "the docker client is missing; run scripts/docker-engine.sh first"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  fail "no Docker engine answers at ${DOCKER_HOST:-the default socket}; run scripts/docker-engine.sh and export the DOCKER_HOST it prints"

image_id() { docker image inspect --format '{{.Id}}' "$TAG" 2>/dev/null; }

if id="$(image_id)"; then
  printf '%s\n' "$id"
  exit 0
fi

[[ "$(id -u)" == 0 ]] || fail "$TAG is missing and building it needs root (debootstrap, chroot)"

mkdir -p "$CACHE_DIR/debs" "$CACHE_DIR/wheels"
# One build at a time; a second caller waits, then finds the tag.
exec 9>"$CACHE_ROOT/build-moto-image.lock"
flock 9
if id="$(image_id)"; then
  printf '%s\n' "$id"
  exit 0
fi

# Runs "$@" quietly; on failure shows the tail of its output and fails with message $1.
quiet() {
  local what="$1" log
  shift
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    fail "$what failed (output above)"
  fi
  rm -f "$log"
}

apt_updated=
install_pkg() { # install_pkg <debian package>
  command -v apt-get >/dev/null 2>&1 || fail "$1 is needed and there is no apt-get to install it"
  if [[ -z "$apt_updated" ]]; then
    say "apt-get update"
    quiet "apt-get update" apt-get update -qq
    apt_updated=1
  fi
  say "installing $1"
  quiet "apt-get install $1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1"
}
command -v debootstrap >/dev/null 2>&1 || install_pkg debootstrap
[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] || install_pkg debian-archive-keyring
# pip inside the chroot verifies PyPI's certificate against the build host's CA bundle
# (which also holds the CA of any TLS-intercepting egress proxy).
host_ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
[[ -r "$host_ca" ]] || { install_pkg ca-certificates; host_ca=/etc/ssl/certs/ca-certificates.crt; }
[[ -r "$host_ca" ]] || fail "no CA bundle at $host_ca"

work="$(mktemp -d "${TMPDIR:-/var/tmp}/sandboxplane-moto.XXXXXX")"
root="$work/rootfs"

# Everything mounted under the root file system, deepest first.
mounts_under_root() {
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
cleanup() {
  local m
  for m in $(mounts_under_root); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  if [[ -n "$(mounts_under_root)" ]]; then
    say "warning: mounts remain under $root; leaving $work in place"
    return
  fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_root() { # runs a command in the chroot with a clean environment
  env -i PATH="$CHROOT_PATH" HOME=/root LANG=C.UTF-8 PIP_CERT=/tmp/build-ca.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120 \
    ${PIP_INDEX_URL:+PIP_INDEX_URL="$PIP_INDEX_URL"} \
    chroot "$root" "$@"
}

say "building $TAG (debootstrap $SUITE from $MIRROR; this takes a few minutes)"
started=$SECONDS
quiet "debootstrap" debootstrap --variant=minbase --include=python3,python3-venv \
  --cache-dir="$CACHE_DIR/debs" \
  --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
  "$SUITE" "$root" "$MIRROR"
say "debootstrap done ($((SECONDS - started))s); installing moto==$MOTO_VERSION"

cp "$host_ca" "$root/tmp/build-ca.crt"
printf '%s\n' "$REQUIREMENTS" | sed '/^$/d' >"$root/tmp/requirements.txt"
mkdir -p "$root/tmp/wheels"
cp -a "$CACHE_DIR/wheels/." "$root/tmp/wheels/"

quiet "python3 -m venv" in_root python3 -m venv /opt/moto
# Download (only what the wheel cache lacks), keep the wheels, then install offline from them.
quiet "pip download" in_root /opt/moto/bin/pip download --only-binary=:all: \
  -d /tmp/wheels -r /tmp/requirements.txt
cp -an "$root/tmp/wheels/." "$CACHE_DIR/wheels/"
quiet "pip install" in_root /opt/moto/bin/pip install --no-index --only-binary=:all: \
  --find-links /tmp/wheels -r /tmp/requirements.txt
quiet "pip check" in_root /opt/moto/bin/pip check
quiet "pip uninstall pip setuptools" in_root /opt/moto/bin/pip uninstall -y -q pip setuptools

say "cleaning the root file system"
printf 'moto:x:%s:%s:moto:/home/moto:/usr/sbin/nologin\n' "$MOTO_ID" "$MOTO_ID" >>"$root/etc/passwd"
printf 'moto:x:%s:\n' "$MOTO_ID" >>"$root/etc/group"
[[ -f "$root/etc/shadow" ]] && printf 'moto:*:19000:0:99999:7:::\n' >>"$root/etc/shadow"
install -d -m 0750 -o "$MOTO_ID" -g "$MOTO_ID" "$root/home/moto"
rm -rf "$root/tmp/"* "$root/tmp/".[!.]* "$root/var/tmp/"* \
  "$root/var/cache/apt/"* "$root/var/lib/apt/lists/"* "$root/var/cache/debconf/"*-old \
  "$root/var/log/"* "$root/root/.cache" \
  "$root/usr/share/doc/"* "$root/usr/share/man/"* "$root/usr/share/info/"* \
  "$root/usr/share/locale/"* "$root/usr/share/lintian" "$root/usr/share/linda"
find "$root/opt/moto" -type d -name tests -path '*/site-packages/*/tests' -prune \
  -exec rm -rf {} + 2>/dev/null || true
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"
chmod 1777 "$root/tmp"
# Import every module the server dispatches to, so a missing dependency
# (or an over-eager clean-up) fails the build.
quiet "moto import check" in_root /opt/moto/bin/python -B -c '
import importlib, moto, moto.server, cfnlint.api, sympy, networkx
for name in ("s3", "sqs", "sns", "dynamodb", "iam", "sts", "kms", "secretsmanager", "ssm",
             "events", "logs", "cloudformation", "stepfunctions"):
    importlib.import_module("moto." + name + ".responses")
assert moto.__version__ == "'"$MOTO_VERSION"'", moto.__version__
'

# The resource types moto's CloudFormation creates, read from the moto just installed (its
# model map), not written by hand: an IaC plan names every other type as unsupported. A
# label, so a worker reads it from the container it plans against, with no extra call.
cfn_types="$(in_root /opt/moto/bin/python -B -c '
import re
from moto.cloudformation.parsing import get_model_map
# The map also holds its base classes placeholders ("?", AWS::SERVICE::RESOURCE).
types = sorted(t for t in get_model_map() if re.fullmatch(r"AWS::[A-Za-z0-9]+::[A-Za-z0-9]+", t) and t != "AWS::SERVICE::RESOURCE")
assert "AWS::S3::Bucket" in types and "AWS::SQS::Queue" in types, types
print(",".join(types))
')" || fail "listing moto's CloudFormation resource types failed"
say "moto's CloudFormation creates $(tr ',' '\n' <<<"$cfn_types" | wc -l) resource types"

say "importing into the engine"
tar --numeric-owner --one-file-system -C "$root" \
  --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --exclude='./run/*' -c . |
  docker import \
    --change "USER $MOTO_ID:$MOTO_ID" \
    --change 'WORKDIR /home/moto' \
    --change 'ENV HOME=/home/moto' \
    --change 'ENV PATH=/opt/moto/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PYTHONUNBUFFERED=1' \
    --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
    --change "ENV MOTO_PORT=$MOTO_PORT" \
    --change "EXPOSE $MOTO_PORT/tcp" \
    --change "LABEL io.sandboxplane.moto.version=$MOTO_VERSION" \
    --change "LABEL io.sandboxplane.cloudformation.types=$cfn_types" \
    --change "CMD [\"/opt/moto/bin/moto_server\", \"-H\", \"0.0.0.0\", \"-p\", \"$MOTO_PORT\"]" \
    --message "cloud-sandbox-plane moto $MOTO_VERSION (debian $SUITE minbase)" \
    - "$TAG" >/dev/null

say "built $TAG in $((SECONDS - started))s"
image_id
