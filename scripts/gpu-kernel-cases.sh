#!/usr/bin/env bash
# Prepares the GPU check of generated kernels: builds ls2c-kernel-cases and
# ls2c-kernel-check, writes a case (cubin, random inputs, the reference
# interpreter's outputs) for every distinct kernel of the tiny presets and
# of the size variants in test/gpu/Inputs (hidden 20 with 70,000 rows, 100
# in bf16 with a 50,257 vocabulary, 384 in fp16, 767, 1024 in bf16, a 512-wide
# llama's loops, the erf GELU in fp16 and bf16, the
# masked-LM head's gather kernels at 12,000 tokens) and, for the
# tensor-core attention kernels, of test/gpu/Inputs/attention-*.json (head
# dims 16 to 128 and 256, f16 and bf16, causal, cross, GQA/MQA, dropout) at 400
# tokens, so sequences span several 64-row tiles, under .gpu-run/.
# On the GPU machine (no MLIR there) run:
#   .gpu-run/bin/ls2c-kernel-check .gpu-run/<set>...
# Each call to the device tool carries at most 64 MiB: pass a set name to
# write only those sets (tiny, sizes, attention, attention-edge).
# attention-edge: issue 7's edge cases against a float64 reference: one
# token at head dim 16 with inputs x3 in fp16 beside an all-padding
# sequence, cross-attention with (query, key) lengths (76,1), (34,1),
# (146,1) and (5,3), (1,4), (0,2), key lengths 1 ... 8193 (one head: about 30 MB), and
# head dim 256 at lengths 1 ... 511 (about 15 MB).
# Usage: scripts/gpu-kernel-cases.sh [tiny|sizes|attention|attention-edge]...
set -euo pipefail
cd "$(dirname "$0")/.."
SETS=("${@:-tiny}")
for SET in "${SETS[@]}"; do
  case "$SET" in
  tiny|sizes|attention|attention-edge) ;;
  *) echo "usage: $0 [tiny|sizes|attention|attention-edge]..." >&2; exit 2 ;;
  esac
done
cmake --build build --target ls2c-kernel-cases ls2c-kernel-check
CASES=build/test/gpu/ls2c-kernel-cases
rm -rf .gpu-run
mkdir -p .gpu-run/bin
cp build/test/gpu/ls2c-kernel-check .gpu-run/bin/
grep -qx '/.gpu-run/' "$(git rev-parse --git-path info/exclude)" 2>/dev/null ||
  { mkdir -p "$(dirname "$(git rev-parse --git-path info/exclude)")";
    echo '/.gpu-run/' >> "$(git rev-parse --git-path info/exclude)"; }
for SET in "${SETS[@]}"; do
case "$SET" in
tiny)
  for m in tiny-bert tiny-bert-max-predictions tiny-gpt tiny-transformer tiny-vit llama-tiny; do
    "$CASES" "examples/$m.json" ".gpu-run/$m" --tokens 19
  done ;;
sizes)
  "$CASES" test/gpu/Inputs/sizes-h100-bf16-v50257.json .gpu-run/sizes-h100-bf16-v50257 \
    --tokens 19 --max-case-bytes 8000000
  "$CASES" test/gpu/Inputs/sizes-h384-fp16.json .gpu-run/sizes-h384-fp16 \
    --tokens 19 --max-case-bytes 3000000
  "$CASES" test/gpu/Inputs/sizes-h767.json .gpu-run/sizes-h767 --tokens 19 \
    --max-case-bytes 3000000
  "$CASES" test/gpu/Inputs/sizes-h1024-bf16.json .gpu-run/sizes-h1024-bf16 --tokens 96 \
    --max-case-bytes 2500000
  # The erf GELU of 16-bit models (ls2_erf_approx), forward, gradient and the masked-LM
  # head's GELU + LayerNorm, in fp16 at hidden 768 and bf16 at 384.
  "$CASES" test/gpu/Inputs/scatter-h768-fp16.json .gpu-run/gelu-erf-h768-fp16 --tokens 64 \
    --only gelu
  "$CASES" test/gpu/Inputs/attention-d96-bf16-encoder.json .gpu-run/gelu-erf-h384-bf16 \
    --tokens 64 --only gelu
  # Llama's loops (rotary embeddings at positions up to 4,095 with theta 500,000, SiLU and
  # its gradient) at 200 tokens.
  "$CASES" test/gpu/Inputs/llama-h512-bf16.json .gpu-run/llama-h512-loops --tokens 200 \
    --only loop --max-case-bytes 4000000
  "$CASES" test/gpu/Inputs/sizes-h20-rows70000.json .gpu-run/rows70000 --tokens 70000 \
    --only forward_embedding_layer_norm
  # The masked-LM head's labelled rows at BERT-base's bounds (max_predictions 3,072 of
  # 16,384 tokens): the nonzero scan over 12,000 random mask bits (two passes, the bound
  # reached) and the scatter_add into 12,000 rows.
  for k in nonzero scatter_add_0; do
    "$CASES" test/gpu/Inputs/mlm-gather-h128-bf16.json ".gpu-run/mlm-gather-$k" \
      --tokens 12000 --only "$k"
  done ;;
attention)
  for m in test/gpu/Inputs/attention-*.json; do
    # attention-d64-fp16-long serves the attention-edge set (gpu-kernel-cases.sh).
    [ "${m%-long.json}" = "$m" ] || continue
    "$CASES" "$m" ".gpu-run/$(basename "$m" .json)" --tokens 400 --only attention
  done ;;
attention-edge)
  I=test/gpu/Inputs
  "$CASES" $I/attention-d16-fp16-mqa.json .gpu-run/edge-len1-x3 --only attention \
    --seqlens 1:1,0:0 --input-scale 3 --reference f64
  "$CASES" $I/attention-d32-fp16-cross.json .gpu-run/edge-cross-k1 --only attention \
    --seqlens 76:1,34:1,146:1 --reference f64
  "$CASES" $I/attention-d32-fp16-cross.json .gpu-run/edge-cross-small --only attention \
    --seqlens 5:3,1:4,0:2 --reference f64
  "$CASES" $I/attention-d64-fp16-long.json .gpu-run/edge-key-lengths --only attention \
    --seqlens 1:1,3:3,7:7,24:24,33:33,127:127,128:128,129:129,511:511,513:513,2049:2049,8193:8193 \
    --reference f64
  "$CASES" $I/attention-d256-bf16-encoder.json .gpu-run/edge-d256-lengths --only attention \
    --seqlens 1:1,3:3,63:63,64:64,65:65,129:129,511:511 --reference f64 ;;
*)
  echo "usage: $0 [tiny|sizes|attention|attention-edge]..." >&2
  exit 2 ;;
esac
done
du -sh .gpu-run
