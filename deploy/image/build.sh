#!/usr/bin/env bash
# The recipe of the lakefs-mirror image: a Debian root filesystem (mmdebstrap, no base image to pull), a venv with
# the project's wheel and the extras a server needs, a non-root user; committed with buildah and written as an
# OCI archive (`podman load` / `docker load` accept it). Driven, cached and timed by `scripts/dev image`
# (tests/deploy/image.py), which passes the wheel it built; running it by hand works too:
#   deploy/image/build.sh WHEEL CONSTRAINTS OUT.oci.tar VERSION [TAG]
# Needs root, mmdebstrap and buildah (Debian packages). SUITE defaults to this machine's Debian release.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 WHEEL CONSTRAINTS OUT.oci.tar VERSION [TAG]" >&2; exit 2; }
WHEEL=$(realpath "$1"); CONSTRAINTS=$(realpath "$2"); OUT=$3; VERSION=$4; TAG=${5:-localhost/lakefs-mirror:$VERSION}
SUITE=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")}
# The extras `serve` and a PostgreSQL mirrors database need (S3, local and the sync loop are in the base install).
EXTRAS=${EXTRAS:-service,postgres}
APP=/opt/lakefs-mirror
UID_GID=10001

work=$(mktemp -d "${TMPDIR:-/tmp}/lakefs-mirror-image.XXXXXX")
ctr=
cleanup() {
  [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The root filesystem: Python and CA certificates only, no documentation, manuals or translations (their
#    copyright files stay), no apt lists or caches. minbase has no compiler, and nothing below installs one.
mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log "$1"/var/log/apt/*' \
  "$SUITE" "$work/rootfs.tar"

# 2. The application: a venv with the wheel and its extras at the versions the test suite pins (constraints.txt).
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$work/rootfs.tar" /
python_ok=$(buildah run --isolation chroot "$ctr" -- python3 -c 'import sys; print(int(sys.version_info >= (3, 11)))')
[ "$python_ok" = 1 ] || { echo "the $SUITE image's python3 is older than 3.11, which the package requires" >&2; exit 1; }
buildah run --isolation chroot "$ctr" -- mkdir -p /tmp/wheel
buildah copy --quiet "$ctr" "$WHEEL" "$CONSTRAINTS" /tmp/wheel/
wheel_name=$(basename "$WHEEL")
# pip trusts the build machine's CA bundle (a TLS-inspecting proxy's CA, for one), mounted for this step only:
# the image keeps Debian's own ca-certificates.
HOST_CA=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
buildah run --isolation chroot --network host --volume "$HOST_CA:/run/build-ca.crt:ro" \
  --env PIP_CERT=/run/build-ca.crt ${PIP_INDEX_URL:+--env PIP_INDEX_URL=$PIP_INDEX_URL} "$ctr" -- sh -euc "
  python3 -m venv $APP
  $APP/bin/pip install --quiet --no-cache-dir --disable-pip-version-check --only-binary=:all: \
    -c /tmp/wheel/$(basename "$CONSTRAINTS") '/tmp/wheel/$wheel_name[$EXTRAS]'
  # A runtime image installs nothing more: no pip, no wheel files, no caches.
  $APP/bin/pip uninstall --quiet --yes pip setuptools 2>/dev/null || true
  rm -rf /tmp/wheel /root/.cache
  # The non-root user the process runs as (numeric, so Kubernetes' runAsNonRoot can check it).
  echo 'lakefs-mirror:x:$UID_GID:$UID_GID:lakefs-mirror:/home/lakefs-mirror:/usr/sbin/nologin' >>/etc/passwd
  echo 'lakefs-mirror:x:$UID_GID:' >>/etc/group
  mkdir -p /home/lakefs-mirror /etc/lakefs-mirror
  chown $UID_GID:$UID_GID /home/lakefs-mirror
  $APP/bin/lakefs-mirror --version
"

# 3. How it runs: `lakefs-mirror` as the entrypoint (the chart passes `serve` or `sync`), the config mounted at
#    /etc/lakefs-mirror/config.yaml (REPLICATION_CONFIG), the service port, the version as OCI labels.
buildah config \
  --entrypoint "[\"$APP/bin/lakefs-mirror\"]" --cmd '["--help"]' \
  --user "$UID_GID:$UID_GID" --workingdir /home/lakefs-mirror \
  --env PATH="$APP/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --env PYTHONUNBUFFERED=1 --env HOME=/home/lakefs-mirror \
  --env REPLICATION_CONFIG=/etc/lakefs-mirror/config.yaml \
  --port 8008 \
  --label org.opencontainers.image.title=lakefs-mirror \
  --label org.opencontainers.image.version="$VERSION" \
  --label org.opencontainers.image.description="lakefs-mirror: serve (mirror REST API) and sync (replication loop)" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label org.opencontainers.image.base.name="debian:$SUITE (mmdebstrap minbase)" \
  "$ctr"
buildah commit --quiet --squash --rm "$ctr" "$TAG" >/dev/null
ctr=
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT.tmp"
buildah push --quiet "$TAG" "oci-archive:$OUT.tmp:$TAG"
mv "$OUT.tmp" "$OUT"
