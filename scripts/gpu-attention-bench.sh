#!/usr/bin/env bash
# Issue 7's attention benchmark: our generated kernels beside PyTorch's FlashAttention-2 and
# cuDNN backends, in one device call (bench/attention_side_by_side.py).
# Here (MLIR, no GPU):  scripts/gpu-attention-bench.sh prepare
#   compiles the one-layer models bench/models/attention-BxHxSxD-{full,causal}.json for sm_90
#   with a batch of B sequences of S tokens each, into .gpu-attn/ (git-ignored).
# There (the device tool, carry [".gpu-attn"]):  scripts/gpu-attention-bench.sh run
#   prints the table (ms, TFLOP/s, ours over FlashAttention-2) and writes $OUT/attention.json.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-attn
SHAPES=(4x16x4096x128 8x16x2048x64 1x32x16384x128 4x8x4096x256)
[ $# -eq 1 ] || { echo "usage: $0 prepare | run" >&2; exit 2; }
case "$1" in
prepare)
  specs=()
  for shape in "${SHAPES[@]}"; do
    IFS=x read -r b h s d <<< "$shape"
    for mask in full causal; do
      specs+=("bench/models/attention-$shape-$mask.json:${b}x$s")
    done
  done
  LS2C_PROF_DIR=$G scripts/gpu-profile.sh "${specs[@]}" ;;
run)
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  [ -x "$G/ls2c-gpu-step" ] || { echo "$G is missing: run $0 prepare here and carry $G" >&2; exit 2; }
  py=python3
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  names=()
  for shape in "${SHAPES[@]}"; do names+=("$shape-full" "$shape-causal"); done
  mkdir -p "${OUT:-$G/out}"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader || true
  "$py" bench/attention_side_by_side.py --dir "$G" --gpu-step "$G/ls2c-gpu-step" \
    --json "${OUT:-$G/out}/attention.json" "${names[@]}" ;;
*)
  echo "usage: $0 prepare | run" >&2
  exit 2 ;;
esac
