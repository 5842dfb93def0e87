#!/usr/bin/env bash
# need-deb.sh COMMAND PACKAGE: installs PACKAGE from Debian's packages when COMMAND is not
# on PATH (tests that drive a real tool need it there).
set -euo pipefail
cmd=$1 pkg=$2
command -v "$cmd" >/dev/null && exit 0
echo "installing $pkg (for $cmd)" >&2
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
$SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq "$pkg" >/dev/null
