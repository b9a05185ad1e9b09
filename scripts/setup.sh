#!/usr/bin/env bash
# Installs ls2c's dependencies from Debian's packages and the test tools from PyPI
# into .venv (both idempotent), then configures and builds.
# Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ python3 python3-venv
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libfmt-dev nlohmann-json3-dev libgtest-dev
  libopenblas-dev libsentencepiece-dev libssl-dev zlib1g-dev
  libzstd-dev  # LS2C_STATIC_MLIR: LLVMSupport links zstd
  dataset-fashion-mnist
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

# The test tools (JAX, NumPy, safetensors) go into a virtualenv of the project,
# reinstalled only when scripts/requirements-test.txt changes.
VENV=.venv
if [ ! -x "$VENV/bin/python" ] || ! cmp -s scripts/requirements-test.txt "$VENV/.requirements"; then
  echo "setup: installing Python test tools into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
  cp scripts/requirements-test.txt "$VENV/.requirements"
else
  echo "setup: Python test tools present in $VENV"
fi

[ "${1:-}" = "--no-build" ] && exit 0
scripts/build.sh
