#!/usr/bin/env bash
# Prepares the GPU main job: builds ls2c and ls2c-gpu-train, compiles the
# character-level GPT (examples/gpt-shakespeare.json) into a training bundle
# and, with every dropout at 0, an evaluation bundle, under .gpu-train/.
# On the GPU machine (carry .gpu-train):
#   export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib
#   .gpu-train/ls2c-gpu-train .gpu-train/train.ls2b --eval .gpu-train/eval.ls2b \
#     --data examples/data/tinyshakespeare/input.txt --steps 2000 --eval-interval 250 \
#     --seed 1337 --metrics $OUT/metrics.jsonl
# Usage: scripts/gpu-train.sh [MODEL.json]
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/gpu-train.sh [MODEL.json]" >&2; exit 2; }
# Arguments first: nothing is built or removed for a mistyped one.
case "${1:-}" in
  -h | --help) echo "usage: scripts/gpu-train.sh [MODEL.json]"; exit 0 ;;
  -*) echo "gpu-train.sh: error: unknown option '$1'" >&2; usage ;;
esac
[ $# -le 1 ] || { echo "gpu-train.sh: error: one MODEL.json at most" >&2; usage; }
MODEL=${1:-examples/gpt-shakespeare.json}
[ -f "$MODEL" ] || { echo "gpu-train.sh: error: $MODEL: no such file" >&2; exit 2; }
cmake --build build --target ls2c ls2c-gpu-train
rm -rf .gpu-train
mkdir -p .gpu-train
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.gpu-train/' "$EXCLUDE" 2>/dev/null || echo '/.gpu-train/' >> "$EXCLUDE"
cp build/tools/ls2c-gpu-train/ls2c-gpu-train .gpu-train/
# libfmt and libsentencepiece, which the GPU machine lacks, where the tool looks (its rpath).
mkdir -p .gpu-train/lib
for lib in $(ldd .gpu-train/ls2c-gpu-train | awk '/libfmt|libsentencepiece/ {print $3}'); do
  cp -L "$lib" .gpu-train/lib/
done
build/tools/ls2c/ls2c compile "$MODEL" --arch=sm_90 -o .gpu-train/train.ls2b
python3 - "$MODEL" .gpu-train/eval.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
    if k in d:
        d[k] = 0.0
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
build/tools/ls2c/ls2c compile .gpu-train/eval.json --arch=sm_90 -o .gpu-train/eval.ls2b
du -sh .gpu-train
