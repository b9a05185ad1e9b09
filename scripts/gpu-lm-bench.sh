#!/usr/bin/env bash
# A GPT on WikiText-2, trained by ls2c-gpu-train and by PyTorch side by side: final validation
# loss and perplexity, train wall time and tokens/s, both validation curves
# (bench/lm_side_by_side.py; the model is bench/models/gpt-wikitext2.json).
#
# On the compiler machine (MLIR, no GPU):
#   scripts/gpu-lm-bench.sh [prepare]   builds ls2c and ls2c-gpu-train in $LS2C_BUILD_DIR (default
#                                       build; LS2C_NO_BUILD=1 uses the binaries as they are) and
#                                       writes .gpu-lm/ (git-ignored, about 10 MiB): the BPE
#                                       tokenizer (8000 ids) and token files of WikiText-2's train
#                                       and valid splits from $LS2C_DATA_DIR (default
#                                       ../shared/data/wikitext-2), train.ls2b and eval.ls2b
#                                       (sm_90), the MLIR-free ls2c-gpu-train and lib/ (libfmt, libsentencepiece)
# On the GPU machine (carry .gpu-lm; bench/*.py travel with the tree):
#   scripts/gpu-lm-bench.sh run [--out DIR] [lm_side_by_side.py run options: --steps 2000
#       --eval-interval 500 --seed 1337 --compile --skip-ls2c --skip-torch ...]
#     ls2c-gpu-train, then PyTorch (eager, or torch.compile with --compile) on the same
#     description and token files; about 2-3 minutes for both at 2000 steps. Results: DIR
#     (default $OUT, else .gpu-lm/out)/lm_side_by_side.json (runs of separate calls merged),
#     the logs and ls2c's metrics. Exit status: non-zero if a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-lm

run_gpu() {
  if [ ! -x "$G/ls2c-gpu-train" ]; then
    echo "$G is missing: run scripts/gpu-lm-bench.sh prepare here and carry $G" >&2
    return 2
  fi
  local out=${OUT:-$G/out} args=()
  while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
    esac
  done
  mkdir -p "$out"
  local py=python3
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  local status=0
  "$py" bench/lm_side_by_side.py run --dir "$G" --json "$out/lm_side_by_side.json" --logs "$out" \
    "${args[@]}" 2>&1 | tee "$out/lm_side_by_side.log" || status=$?
  return $status
}

case "${1:-prepare}" in
run)
  shift
  run_gpu "$@"
  exit $? ;;
prepare) ;;
*)
  echo "usage: $0 [prepare] | run [--out DIR] [lm_side_by_side.py run options]" >&2
  exit 2 ;;
esac

. scripts/gpu-carry.sh
carry_build ls2c-gpu-train
rm -rf "$G"
"$PY" bench/lm_side_by_side.py prepare --out "$G" --ls2c "$BUILD/tools/ls2c/ls2c" \
  --gpu-train "$BUILD/tools/ls2c-gpu-train/ls2c-gpu-train" ${LS2C_DATA_DIR:+--data-dir "$LS2C_DATA_DIR"}
carry_size_check "$G" 64 "a device call carries"
echo
echo "On the GPU machine (carry $G): scripts/gpu-lm-bench.sh run --out \$OUT"
echo "  (then, for torch.compile: scripts/gpu-lm-bench.sh run --skip-ls2c --compile --out \$OUT)"
