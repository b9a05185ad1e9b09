#!/usr/bin/env bash
# The main job: sets ls2c up and trains a character-level GPT on the bundled
# examples/data/tinyshakespeare.
#  - With an NVIDIA GPU (nvidia-smi lists one, and the CUDA toolkit was found
#    at build time): compiles examples/gpt-shakespeare.json (6 layers, 384
#    hidden, bf16) into bundles for the GPU's architecture and trains it with
#    the GPU runtime, 2000 steps (on an H200 about 2 minutes, validation loss
#    4.24 -> 1.45), metrics in runs/gpt-shakespeare-gpu/metrics.jsonl.
#  - Otherwise: the CPU reference backend trains examples/tiny-gpt.json; on
#    2 cores the default 1000 steps take about 2 minutes (after the first
#    build) and bring the validation loss from ln 65 = 4.17 to about 2.44.
#    Extra arguments go to `ls2c train` (e.g. --steps 3000, --resume; see
#    `ls2c train --help`).
# LS2C_DEVICE=cpu forces the CPU path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
LS2C=build/tools/ls2c/ls2c
GPU_TRAIN=build/tools/ls2c-gpu-train/ls2c-gpu-train
"$LS2C" --version
DATA=examples/data/tinyshakespeare/input.txt

if [ "${LS2C_DEVICE:-auto}" != cpu ] && [ -x "$GPU_TRAIN" ] &&
   command -v nvidia-smi > /dev/null && nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  ARCH="sm_${CAP}"
  MODEL=examples/gpt-shakespeare.json
  OUT=runs/gpt-shakespeare-gpu
  mkdir -p "$OUT"
  echo "GPU found ($ARCH): training $MODEL with the GPU runtime"
  "$LS2C" check "$MODEL"
  "$LS2C" compile "$MODEL" --arch="$ARCH" -o "$OUT/train.ls2b"
  python3 - "$MODEL" "$OUT/eval.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
    if k in d:
        d[k] = 0.0
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
  "$LS2C" compile "$OUT/eval.json" --arch="$ARCH" -o "$OUT/eval.ls2b"
  exec "$GPU_TRAIN" "$OUT/train.ls2b" --eval "$OUT/eval.ls2b" --data "$DATA" \
    --steps 2000 --eval-interval 250 --seed 1337 --metrics "$OUT/metrics.jsonl"
fi

"$LS2C" check examples/tiny-gpt.json
# Running the main job again replaces its run, unless --resume continues it.
REPLACE=--overwrite
for a in "$@"; do [ "$a" = --resume ] && REPLACE=; done
"$LS2C" train examples/tiny-gpt.json --data "$DATA" \
  --out runs/tiny-gpt --steps 1000 --eval-interval 100 $REPLACE "$@"
