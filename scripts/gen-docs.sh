#!/usr/bin/env bash
# Regenerates docs/dialect.md from the ls2 ODS (run after changing LS2Ops.td;
# test/Dialect/ls2/docs-up-to-date.test fails until you do).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build "${LS2C_BUILD_DIR:-build}" --target LS2DocGen
cp "${LS2C_BUILD_DIR:-build}/dialects/ls2/IR/LS2Dialect.md" docs/dialect.md
echo "docs/dialect.md updated"
