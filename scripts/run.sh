#!/usr/bin/env bash
# The main job: sets ls2c up and trains the bundled default model
# (examples/tiny-gpt.json, a character-level GPT) on
# examples/data/tinyshakespeare. Without a GPU runtime yet, training runs on
# the CPU reference backend (docs/architecture.md, "Status"); on 2 cores the
# default 1000 steps take about 2 minutes (after the first build) and bring
# the validation loss from ln 65 = 4.17 to about 2.44. Extra arguments go to
# `ls2c train`
# (e.g. --steps 3000, --resume; see `ls2c train --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LS2C=build/tools/ls2c/ls2c
"$LS2C" --version
"$LS2C" check examples/tiny-gpt.json
"$LS2C" train examples/tiny-gpt.json \
  --data examples/data/tinyshakespeare/input.txt \
  --out runs/tiny-gpt --steps 1000 --eval-interval 100 "$@"
