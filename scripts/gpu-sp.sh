#!/usr/bin/env bash
# Issue 10 on the GPU machine: sequence-parallel attention (DistAttn and the zigzag ring) with
# ls2c-seq-parallel, checked against full attention and float64, then timed beside PyTorch's
# context parallelism (bench/cp_side_by_side.py).
#
# Here (MLIR, no GPU):   scripts/gpu-sp.sh prepare
#   builds ls2c and ls2c-seq-parallel (LS2C_NO_BUILD=1: as they are) and writes .gpu-sp/
#   (git-ignored): bin/, lib/ and the --program=sequence-parallel bundles of
#   bench/models/{gpt-1.3b-sp,gpt-1.3b-sp2,sp-gqa-bf16,sp-f32,sp-encoder-fp16,sp-llama-bf16}.json
#   for sm_90, and the train steps of sp-gqa-bf16, sp-llama-bf16 (rotary positions: each rank's
#   at its chunks' global positions) and gpt-1.3b-sp2 (--train; a 1.3B-shaped GPT with
#   activation checkpointing whose memory plan is one of 2 ranks' share of 262,144 tokens).
# There (carry [".gpu-sp"]):
#   scripts/gpu-sp.sh check [nccl] simulated ranks on GPU 0 (P = 1-5 and 8, both schedules, causal
#                                  and not, GQA, lengths not divisible by P, float64 on small
#                                  shapes) and, with 2+ GPUs, real NCCL ranks; one line each;
#                                  exit 1 if any check fails; `nccl`: the real ranks' only
#   scripts/gpu-sp.sh train-time P SEQ [ARGS]   the GQA model's train step (--train) on P real
#                                  ranks, timed (TRAIN_MODEL=gpt-1.3b-sp2: the 1.3B-shaped one;
#                                  RANK_TIMEOUT: seconds per rank process, default 300)
#   scripts/gpu-sp.sh bench [ARGS] bench/cp_side_by_side.py run with the 1.3B-shaped bundle
#                                  (ARGS: its options, e.g. --gpus 1,2 --seq 32768,65536)
# All three write their logs and JSON under $OUT (else .gpu-sp-results).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-sp
MODELS=(gpt-1.3b-sp gpt-1.3b-sp2 sp-gqa-bf16 sp-f32 sp-encoder-fp16 sp-llama-bf16)
# Models whose train step (--train) is compiled too.
TRAIN_MODELS=(sp-gqa-bf16 gpt-1.3b-sp2 sp-llama-bf16)

usage() {
  echo "usage: $0 prepare | check [nccl] | train-time P SEQ [ARGS...] | bench [ARGS...]" >&2
  exit 2
}

gpu_env() {
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  # This machine's rule for multi-GPU runs: no NVLink SHARP (multicast) in NCCL.
  export NCCL_NVLS_ENABLE=0
  [ -x "$G/bin/ls2c-seq-parallel" ] || { echo "$G is missing: run $0 prepare here and carry $G" >&2; exit 2; }
  RESULTS=${OUT:-$G-results}
  mkdir -p "$RESULTS"
  PY=python3
  [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
}

# ranks N ARGS...: N processes of ls2c-seq-parallel, one per GPU, torchrun's variables; rank 0's
# output printed, every rank's kept in $RESULTS/rank-*.log. Status: the first failing rank's.
ranks() {
  local n=$1 port r status=0 pids=()
  shift
  port=$(( 20000 + RANDOM % 20000 ))
  for ((r = 0; r < n; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout "${RANK_TIMEOUT:-300}" "$G/bin/ls2c-seq-parallel" "$@" > "$RESULTS/rank-$r.log" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    local rc=0
    wait "${pids[$r]}" || rc=$?
    [ $status -ne 0 ] || status=$rc
  done
  cat "$RESULTS/rank-0.log"
  if [ $status -ne 0 ]; then
    for ((r = 1; r < n; r++)); do tail -n 5 "$RESULTS/rank-$r.log" | sed "s/^/  rank $r: /"; done
  fi
  return $status
}

check() {
  gpu_env
  local failed=0 log=$RESULTS/check.log
  : > "$log"
  one() { # one LABEL ARGS...: a check, its verdict on one line
    local label=$1 out status=0
    shift
    out=$("$@" 2>&1) || status=$?
    echo "$out" >> "$log"
    if [ $status -eq 0 ]; then
      echo "ok    $label"
    else
      echo "FAIL  $label (exit $status)"
      echo "$out" | tail -n 8 | sed 's/^/      /'
      failed=1
    fi
  }
  local sp=$G/bin/ls2c-seq-parallel s p
  if [ "${1:-}" = nccl ]; then # only the real ranks' checks
    nccl_checks
    return $failed
  fi
  # float64 on small shapes: GQA bf16 (causal), fp32 (causal), fp16 encoder (no mask).
  for s in distattn zigzag; do
    for p in 1 2 3 4 8; do
      one "fp64 $s P=$p f32 3x517" "$sp" "$G/sp-f32.ls2b" --simulate-ranks $p --schedule $s --batch 3 --seq 517 --fp64-reference
    done
    for p in 2 3 8; do
      one "fp64 $s P=$p gqa-bf16 2x600" "$sp" "$G/sp-gqa-bf16.ls2b" --simulate-ranks $p --schedule $s --batch 2 --seq 600 --fp64-reference
    done
    one "fp64 $s P=3 encoder-fp16 2x500" "$sp" "$G/sp-encoder-fp16.ls2b" --simulate-ranks 3 --schedule $s --batch 2 --seq 500 --fp64-reference
    one "fp64 $s P=8 gqa-bf16 1x5 (empty chunks)" "$sp" "$G/sp-gqa-bf16.ls2b" --simulate-ranks 8 --schedule $s --seq 5 --fp64-reference
    # Long: against full attention on the GPU.
    one "full $s P=4 1.3b 1x32768" "$sp" "$G/gpt-1.3b-sp.ls2b" --simulate-ranks 4 --schedule $s --seq 32768 --check
    one "full $s P=5 gqa-bf16 2x20001" "$sp" "$G/sp-gqa-bf16.ls2b" --simulate-ranks 5 --schedule $s --batch 2 --seq 20001 --check
  done
  # A decoder's train step with its attentions sequence-parallel, against the whole sequences.
  one "train distattn P=4 gqa-bf16 2x8190" "$sp" "$G/sp-gqa-bf16.ls2b" --train "$G/sp-gqa-bf16-train.ls2b" --simulate-ranks 4 --schedule distattn --batch 2 --seq 8190 --check
  one "train zigzag P=3 gqa-bf16 2x8190" "$sp" "$G/sp-gqa-bf16.ls2b" --train "$G/sp-gqa-bf16-train.ls2b" --simulate-ranks 3 --schedule zigzag --batch 2 --seq 8190 --check
  one "train distattn P=4 llama-bf16 2x8190" "$sp" "$G/sp-llama-bf16.ls2b" --train "$G/sp-llama-bf16-train.ls2b" --simulate-ranks 4 --schedule distattn --batch 2 --seq 8190 --check
  one "train zigzag P=3 llama-bf16 2x8190" "$sp" "$G/sp-llama-bf16.ls2b" --train "$G/sp-llama-bf16-train.ls2b" --simulate-ranks 3 --schedule zigzag --batch 2 --seq 8190 --check
  nccl_checks
  grep -h '^  \(ok\|FAIL\)' "$log" | sort | uniq -c | sort -rn | head -n 3 || true
  return $failed
}

nccl_checks() {
  local s
  if [ "${GPUS:-0}" -ge 2 ]; then
    for s in distattn zigzag; do
      one "nccl $s P=2 1.3b 1x32768" ranks 2 "$G/gpt-1.3b-sp.ls2b" --schedule $s --seq 32768 --check
      one "nccl $s P=2 gqa-bf16 2x9999" ranks 2 "$G/sp-gqa-bf16.ls2b" --schedule $s --batch 2 --seq 9999 --check
      one "nccl $s P=2 f32 3x517" ranks 2 "$G/sp-f32.ls2b" --schedule $s --batch 3 --seq 517 --fp64-reference
      one "nccl train $s P=2 gqa-bf16 2x8190" ranks 2 "$G/sp-gqa-bf16.ls2b" --train "$G/sp-gqa-bf16-train.ls2b" --schedule $s --batch 2 --seq 8190 --check
      one "nccl train $s P=2 llama-bf16 2x8190" ranks 2 "$G/sp-llama-bf16.ls2b" --train "$G/sp-llama-bf16-train.ls2b" --schedule $s --batch 2 --seq 8190 --check
    done
  else
    echo "skipped: real NCCL ranks (this machine has ${GPUS:-0} GPU)"
  fi
}

case "${1:-}" in
prepare) ;;
check)
  shift
  check "$@"
  exit $? ;;
train-time)
  # train-time P SEQ [ARGS...]: the GQA model's train step (--train) timed on P real ranks
  # (one process per GPU; P = 1 runs the one process).
  [ $# -ge 3 ] || usage
  [[ $2 =~ ^[1-9][0-9]*$ && $3 =~ ^[1-9][0-9]*$ ]] ||
    { echo "train-time P SEQ: P ($2) and SEQ ($3) must be integers >= 1" >&2; exit 2; }
  gpu_env
  p=$2 seq=$3 m=${TRAIN_MODEL:-sp-gqa-bf16}
  shift 3
  if [ "$p" -eq 1 ]; then
    "$G/bin/ls2c-seq-parallel" "$G/$m.ls2b" --train "$G/$m-train.ls2b" --seq "$seq" \
      --time 5 --warmup 2 --json-line "$@"
  else
    ranks "$p" "$G/$m.ls2b" --train "$G/$m-train.ls2b" --seq "$seq" --time 5 \
      --warmup 2 --json-line "$@"
  fi
  exit $? ;;
bench)
  shift
  gpu_env
  exec "$PY" bench/cp_side_by_side.py run --ls2c "$G/bin/ls2c-seq-parallel" \
    --bundle "$G/gpt-1.3b-sp.ls2b" --json "$RESULTS/cp_side_by_side.json" --logs "$RESULTS/logs" "$@" ;;
*) usage ;;
esac

. scripts/gpu-carry.sh
carry_build ls2c-seq-parallel
carry_start "$G"
carry_tool "$BUILD/tools/ls2c-seq-parallel/ls2c-seq-parallel" "$G"
for m in "${MODELS[@]}"; do
  "$BUILD/tools/ls2c/ls2c" compile "bench/models/$m.json" --program=sequence-parallel --arch=sm_90 \
    -o "$G/$m.ls2b"
done
for m in "${TRAIN_MODELS[@]}"; do
  "$BUILD/tools/ls2c/ls2c" compile "bench/models/$m.json" --arch=sm_90 -o "$G/$m-train.ls2b"
done
carry_size_check "$G" 50 "kept for a device call's carry"
echo
echo "On the GPU machine (carry $G): scripts/gpu-sp.sh check; scripts/gpu-sp.sh bench --gpus 1,2"
