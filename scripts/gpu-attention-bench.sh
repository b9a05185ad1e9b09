#!/usr/bin/env bash
# Issues 7 and 26's attention benchmark: our generated kernels beside PyTorch's FlashAttention-2
# and cuDNN backends, in one device call (bench/attention_side_by_side.py): issue 7's shapes,
# with and without dropout 0.1, and the attention of BERT-base (32x12x512x64, dropout),
# GPT-2 medium (16x16x1024x64 causal, dropout) and ViT-B/16 (64x12x197x64).
# Here (MLIR, no GPU):  scripts/gpu-attention-bench.sh prepare [NAME...]
#   compiles the one-layer models bench/models/attention-NAME.json for sm_90 with a batch of B
#   sequences of S tokens each, into .gpu-attn/ (git-ignored).
# There (the device tool, carry [".gpu-attn"]):  scripts/gpu-attention-bench.sh run [NAME...]
#   prints the table (ms, TFLOP/s, ours over FlashAttention-2) and writes $OUT/attention.json.
# NAME: BxHxSxD-full|causal[-dropout] (default: all of NAMES below).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-attn
NAMES=(4x16x4096x128-full 4x16x4096x128-causal 8x16x2048x64-full 8x16x2048x64-causal
       1x32x16384x128-full 1x32x16384x128-causal 4x8x4096x256-full 4x8x4096x256-causal
       4x16x4096x128-full-dropout 8x16x2048x64-full-dropout 32x12x512x64-full-dropout
       16x16x1024x64-causal-dropout 64x12x197x64-full)
[ $# -ge 1 ] || { echo "usage: $0 prepare [NAME...] | run [NAME...]" >&2; exit 2; }
what=$1
shift
[ $# -gt 0 ] && NAMES=("$@")
for name in "${NAMES[@]}"; do
  [ -f "bench/models/attention-$name.json" ] ||
    { echo "$0: $name: no bench/models/attention-$name.json" >&2; exit 2; }
done
case "$what" in
prepare)
  specs=()
  for name in "${NAMES[@]}"; do
    IFS=x read -r b h s d <<< "${name%%-*}"
    specs+=("bench/models/attention-$name.json:${b}x$s")
  done
  LS2C_PROF_DIR=$G scripts/gpu-profile.sh "${specs[@]}" ;;
run)
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  [ -x "$G/ls2c-gpu-step" ] || { echo "$G is missing: run $0 prepare here and carry $G" >&2; exit 2; }
  py=python3
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  mkdir -p "${OUT:-$G/out}"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader || true
  "$py" bench/attention_side_by_side.py --dir "$G" --gpu-step "$G/ls2c-gpu-step" \
    --json "${OUT:-$G/out}/attention.json" "${NAMES[@]}" ;;
*)
  echo "usage: $0 prepare [NAME...] | run [NAME...]" >&2
  exit 2 ;;
esac
