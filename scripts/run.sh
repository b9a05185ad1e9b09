#!/usr/bin/env bash
# The main job: sets ls2c up and runs it on the bundled default model
# (examples/tiny-gpt.json, a character-level GPT for examples/data/tinyshakespeare).
#
# What runs today: the description is validated and sized (`ls2c check`) and its
# forward graph compiled to verified ls2 IR (`ls2c compile --emit=mlir`).
# Training on the CPU backend and the GPU is not built yet (see
# docs/architecture.md, "Status"); this script will run it once it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-examples/tiny-gpt.json}
scripts/setup.sh
LS2C=build/tools/ls2c/ls2c
"$LS2C" --version
"$LS2C" check "$MODEL"
out=build/$(basename "$MODEL" .json).forward.mlir
"$LS2C" compile "$MODEL" --emit=mlir -o "$out"
echo "forward graph: $out ($(grep -c 'ls2\.' "$out") ls2 ops)"
