#!/usr/bin/env bash
# Installs ls2c's dependencies from Debian's packages (idempotent), then configures
# and builds. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ python3
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libfmt-dev nlohmann-json3-dev libgtest-dev
  libopenblas-dev libsentencepiece-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

[ "${1:-}" = "--no-build" ] && exit 0
scripts/build.sh
