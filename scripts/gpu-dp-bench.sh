#!/usr/bin/env bash
# ls2c data parallel beside PyTorch DDP + torch.compile on 1..8 GPUs (issue 9, item 4):
# bench/ddp_side_by_side.py, tokens/s and scaling efficiency of BERT-base and GPT-2 medium.
#
# On the compiler machine (MLIR, no GPU):
#   scripts/gpu-dp-bench.sh [prepare]   builds ls2c and ls2c-gpu-step in $LS2C_BUILD_DIR (default
#                                       build; LS2C_NO_BUILD=1 uses the binaries as they are) and
#                                       writes .gpu-dp-bench/ (git-ignored, about 9 MiB): bin/ (the
#                                       MLIR-free ls2c-gpu-step), lib/ (libfmt if it links it),
#                                       bench/ (sm_90 bundles and 8 ranks' batches of each config)
# On the GPU machine (carry .gpu-dp-bench; bench/*.py travel with the tree):
#   scripts/gpu-dp-bench.sh run [CONFIG...] [--gpus 1,2,4,8] [--out DIR] [-- MORE...]
#     CONFIGs: bert-base gpt2-medium (default both); --gpus: world sizes (default 1,2; sizes above
#     the machine's GPUs are skipped); MORE: options of `ddp_side_by_side.py run` (--steps 20,
#     --warmup 5, --ls2c-args "...", --torch-timeout 480, --skip-torch, --budget S, ...). The
#     whole run ends within --budget (default $DP_BENCH_BUDGET, else 540 s: a device call's 10
#     minutes less a margin; runs that no longer fit are skipped and said so), so that no
#     process outlives the call. Ends with the markdown table. The runs accumulate in
#     .gpu-dp-bench-results/ddp_side_by_side.json (git-ignored, not carried: it stays on a warm
#     machine between calls, and a file fetched earlier can be put there and carried too), so
#     runs split over calls by config or --gpus make one table; it, the log and logs.tar.gz (each
#     run's output) are copied to DIR (default $OUT, else only .gpu-dp-bench-results).
#     Exit status: non-zero if a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-dp-bench

usage() {
  echo "usage: $0 [prepare] | run [CONFIG...] [--gpus 1,2,4,8] [--out DIR] [-- MORE...]" >&2
  exit 2
}

run_gpu() {
  if [ ! -x "$G/bin/ls2c-gpu-step" ] || [ ! -d "$G/bench" ]; then
    echo "$G is missing: run scripts/gpu-dp-bench.sh prepare here and carry $G" >&2
    return 2
  fi
  local results=$G-results
  local out=${OUT:-$results} gpus=1,2 configs=() more=()
  while [ $# -gt 0 ]; do
    case "$1" in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --gpus) [ $# -ge 2 ] || usage; gpus=$2; shift 2 ;;
    --) shift; more=("$@"); break ;;
    -*) usage ;;
    *) configs+=(--config "$1"); shift ;;
    esac
  done
  mkdir -p "$out" "$results"
  local py=python3
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  # This machine's rule for multi-GPU runs: no NVLink SHARP (multicast) in NCCL.
  export NCCL_NVLS_ENABLE=0
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
  local status=0
  "$py" bench/ddp_side_by_side.py run --dir "$G/bench" --gpu-step "$G/bin/ls2c-gpu-step" --gpus "$gpus" \
    --budget "${DP_BENCH_BUDGET:-540}" --json "$results/ddp_side_by_side.json" --logs "$results/logs" \
    "${configs[@]}" "${more[@]}" 2>&1 | tee -a "$results/ddp_side_by_side.log" || status=$?
  tar -czf "$results/logs.tar.gz" -C "$results" logs 2>/dev/null || true
  if [ "$(cd "$out" && pwd)" != "$(cd "$results" && pwd)" ]; then
    # Three files: what a device call brings back is a few files, not a folder of logs.
    cp "$results/ddp_side_by_side.json" "$results/ddp_side_by_side.log" "$results/logs.tar.gz" "$out/" 2>/dev/null ||
      true
  fi
  return $status
}

case "${1:-prepare}" in
run)
  shift
  run_gpu "$@"
  exit $? ;;
prepare) ;;
*) usage ;;
esac

. scripts/gpu-carry.sh
carry_build ls2c-gpu-step
carry_start "$G"
carry_tool "$BUILD/tools/ls2c-gpu-step/ls2c-gpu-step" "$G"
"$PY" bench/ddp_side_by_side.py prepare --out "$G/bench" --ls2c "$BUILD/tools/ls2c/ls2c" --ranks 8
carry_size_check "$G" 50 "kept for a device call's carry"
echo
echo "On the GPU machine (carry $G), one configuration per 10-minute call, e.g.:"
echo "  scripts/gpu-dp-bench.sh run bert-base --gpus 1,2"
echo "  scripts/gpu-dp-bench.sh run gpt2-medium --gpus 1,2"
echo "(each call's table holds the runs of the earlier calls on the same warm machine)"
