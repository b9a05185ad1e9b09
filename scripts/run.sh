#!/usr/bin/env bash
# The main job: sets ls2c up and trains a character-level GPT on the bundled
# examples/data/tinyshakespeare with `ls2c train`, which runs on the GPU when
# it finds one (ls2c-cuda.so loads and sees a CUDA device) and on the CPU
# reference backend otherwise.
#  - With an NVIDIA GPU: examples/gpt-shakespeare.json (6 layers, 384 hidden,
#    bf16), 2000 steps: on an H200 about 25 s, validation loss 4.2 -> 1.45,
#    in runs/gpt-shakespeare/.
#  - Otherwise: examples/tiny-gpt.json, 1000 steps: on 2 cores about 2
#    minutes (after the first build), validation loss from ln 65 = 4.17 to
#    about 2.44, in runs/tiny-gpt/.
# Extra arguments go to `ls2c train` (e.g. --steps 3000, --resume; see
# `ls2c train --help`). LS2C_DEVICE=cpu forces the CPU path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LS2C=build/tools/ls2c/ls2c
"$LS2C" --version
DATA=examples/data/tinyshakespeare/input.txt
DEVICE=${LS2C_DEVICE:-auto}
MODEL=examples/tiny-gpt.json
# The larger model only on a GPU, and then --device cuda: were ls2c unable
# to use the GPU nvidia-smi lists (built without CUDA, an old driver), it
# says why and stops rather than train this model for days on the CPU.
if [ "$DEVICE" != cpu ] && command -v nvidia-smi > /dev/null &&
   nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  MODEL=examples/gpt-shakespeare.json
  DEVICE=cuda
fi
NAME=$(basename "$MODEL" .json)
"$LS2C" check "$MODEL"
# Running the main job again replaces its run, unless --resume continues it.
REPLACE=--overwrite
for a in "$@"; do [ "$a" = --resume ] && REPLACE=; done
STEPS=1000
[ "$MODEL" = examples/gpt-shakespeare.json ] && STEPS=2000
exec "$LS2C" train "$MODEL" --data "$DATA" --device "$DEVICE" --out "runs/$NAME" \
  --steps "$STEPS" $REPLACE "$@"
