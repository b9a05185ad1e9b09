#!/usr/bin/env bash
# Prepares full-size train-step profiles for the GPU machine: builds ls2c and
# ls2c-gpu-step, compiles each preset for sm_90 and writes a random packed
# batch of its benchmark shape (BERT: 32 x 512, GPT-2: 16 x 1024, as in
# ../shared/DESIGN.md's baselines), under .gpu-prof/ (or $LS2C_PROF_DIR, a
# folder name at the top of the checkout, which is replaced).
# On the GPU machine (carry .gpu-prof):
#   export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib
#   .gpu-prof/ls2c-gpu-step .gpu-prof/P.ls2b --init-seed 1 --batch .gpu-prof/P.batch.safetensors \
#     -o $OUT/P.safetensors --steps 3 --profile
# Usage: scripts/gpu-profile.sh [MODEL[:SEQSxLEN]]...   (default: bert-base gpt2-medium)
#   MODEL is a preset name (examples/MODEL.json) or a description's path;
#   SEQSxLEN overrides the batch shape (e.g. 4x4096). Files are named after
#   the description's file name.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESETS=("${@:-bert-base}")
[ $# -eq 0 ] && PRESETS=(bert-base gpt2-medium)
BUILD=${LS2C_BUILD_DIR:-build}
# The project's Python (scripts/setup.sh's .venv has numpy and safetensors).
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
P=${LS2C_PROF_DIR:-.gpu-prof}
case "$P" in
''|*/*|.|..) echo "$0: LS2C_PROF_DIR must be a folder name at the top of the checkout, not '$P'" >&2; exit 2 ;;
esac
# Every argument is checked before anything is built or removed.
model_of() { # MODEL[:SHAPE] -> the description's path
  local m=${1%%:*}
  if [ -f "$m" ]; then echo "$m"; elif [ -f "examples/$m.json" ]; then echo "examples/$m.json"; fi
}
for spec in "${PRESETS[@]}"; do
  model=$(model_of "$spec")
  [ -n "$model" ] || { echo "$0: $spec: no such description (a path or examples/NAME.json)" >&2; exit 2; }
  if [ "$spec" != "${spec%%:*}" ] && ! [[ "${spec#*:}" =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]]; then
    echo "$0: $spec: the batch shape must be SEQSxLEN, e.g. 4x4096" >&2
    exit 2
  fi
  "$PY" - "$model" "${spec#*:}" "$spec" <<'PY' || exit 2
import json, sys
c = json.load(open(sys.argv[1]))
if c.get("architecture") not in ("encoder", "decoder"):
    sys.exit(f"{sys.argv[3]}: profiles cover encoder and decoder descriptions, not {c.get('architecture')}")
if "x" in sys.argv[2]:
    seqs, length = map(int, sys.argv[2].split("x"))
    if length > c["max_seq_len"] or seqs * length > c["max_batch_tokens"]:
        sys.exit(f"{sys.argv[3]}: {seqs} x {length} exceeds max_seq_len {c['max_seq_len']} or "
                 f"max_batch_tokens {c['max_batch_tokens']}")
PY
done
cmake --build "$BUILD" --target ls2c ls2c-gpu-step
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx "/$P/" "$EXCLUDE" 2>/dev/null || echo "/$P/" >> "$EXCLUDE"
rm -rf "$P"
mkdir -p "$P"
cp "$BUILD/tools/ls2c-gpu-step/ls2c-gpu-step" "$P/"
for spec in "${PRESETS[@]}"; do
  model=$(model_of "$spec")
  shape=$([ "${spec%%:*}" = "$spec" ] && echo "" || echo "${spec#*:}")
  p=$(basename "$model" .json)
  "$BUILD/tools/ls2c/ls2c" compile "$model" --arch=sm_90 -o "$P/$p.ls2b"
  "$PY" - "$model" "$P/$p.batch.safetensors" "$shape" <<'PY'
import json, sys
import numpy as np
from safetensors.numpy import save_file
c = json.load(open(sys.argv[1]))
rng = np.random.default_rng(0)
arch = c["architecture"]
if arch not in ("encoder", "decoder"):
    sys.exit(f"{sys.argv[1]}: profiles cover encoder and decoder presets, not {arch}")
seqs, length = (32, 512) if arch == "encoder" else (16, 1024)
if sys.argv[3]:
    seqs, length = map(int, sys.argv[3].split("x"))
n = seqs * length
cu = (np.arange(seqs + 1) * length).astype(np.int32)
pos = np.tile(np.arange(length), seqs).astype(np.int32)
ids = rng.integers(1, c["vocab"], n).astype(np.int32)
if arch == "encoder":  # masked LM: 15% of the tokens carry a label
    labels = np.where(rng.random(n) < 0.15, rng.integers(0, c["vocab"], n), -100).astype(np.int32)
    batch = dict(input_ids=ids, token_type_ids=np.zeros(n, np.int32), position_ids=pos,
                 cu_seqlens=cu, labels=labels)
else:  # next token within each sequence
    labels = np.append(ids[1:], -100).astype(np.int32)
    labels[cu[1:] - 1] = -100
    batch = dict(input_ids=ids, position_ids=pos, cu_seqlens=cu, labels=labels)
save_file(batch, sys.argv[2])
PY
done
du -sh "$P"
