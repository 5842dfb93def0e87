#!/usr/bin/env bash
# Builds the real, unmodified Ignition client (and ignition-validate) from the Go module
# proxy, once per version, into bin/ignition-<version>/ (shared recipe ignition-client.md),
# installing the C headers cgo needs when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
V=v2.27.0
out=$PWD/bin/ignition-$V
if [ -x "$out/ignition" ] && [ -x "$out/ignition-validate" ]; then ln -sfn "ignition-$V" bin/ignition-client; exit 0; fi
if [ ! -f /usr/include/blkid/blkid.h ]; then
  echo "installing libblkid-dev (cgo needs blkid/blkid.h)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq libblkid-dev >/dev/null
fi
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "building ignition $V (once; cached in $out)" >&2
GOBIN=$tmp GOFLAGS=-mod=mod go install \
  -ldflags "-X github.com/coreos/ignition/v2/internal/version.Raw=$V -X github.com/coreos/ignition/v2/internal/distro.selinuxRelabel=false" \
  "github.com/coreos/ignition/v2/internal@$V"
GOBIN=$tmp GOFLAGS=-mod=mod go install "github.com/coreos/ignition/v2/validate@$V"
mv "$tmp/internal" "$out/ignition"
mv "$tmp/validate" "$out/ignition-validate"
ln -sfn "ignition-$V" bin/ignition-client
echo "$out"
