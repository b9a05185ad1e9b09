#!/usr/bin/env bash
# Configures and builds ls2c into build/ (Release with assertions off by default).
# Environment: LS2C_BUILD_DIR (default build), LS2C_JOBS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${LS2C_BUILD_DIR:-build}
JOBS=${LS2C_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=${LS2C_BUILD_TYPE:-Release} \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
  -DLLVM_DIR=/usr/lib/llvm-19/lib/cmake/llvm \
  -DCUDAToolkit_ROOT=${CUDA_HOME:-/usr/local/cuda} "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
