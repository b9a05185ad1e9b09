#!/usr/bin/env bash
# The GPU bench cycle: loss-curve parity with PyTorch (bench/parity.py) and the side-by-side
# benchmark against PyTorch eager and torch.compile (bench/side_by_side.py).
#
# On the compiler machine (MLIR, no GPU):
#   scripts/gpu-bench.sh [prepare [CONFIG...]]
#                                       builds ls2c and ls2c-gpu-step in $LS2C_BUILD_DIR (default
#                                       build; LS2C_NO_BUILD=1 uses the binaries as they are) and
#                                       writes .gpu-bench/ (git-ignored, < 64 MiB): bin/ (the
#                                       MLIR-free ls2c-gpu-step, and libfmt if it links it), parity/
#                                       (descriptions + sm_90 bundles of the parity cases), bench/
#                                       (bundles + compile statistics of the default benchmark
#                                       configs, and of the CONFIGs named)
# On the GPU machine (carry .gpu-bench; bench/*.py travel with the tree):
#   scripts/gpu-bench.sh run [all|parity [CASE...]|bench [CONFIG...]] [--out DIR]
#                            [--compile-mode MODE]... [--skip-eager]
#     parity: bench/parity.py on the GPU cases (tiny-*, bert-base and gpt2-small in fp32, in
#             their preset dtype and checkpointed in it, 50 steps; or the CASEs named;
#             $PARITY_ARGS adds options such as --noise-floor); bench: bench/side_by_side.py
#             (default configs, or the CONFIGs named; ls2c's attention: $LS2C_ATTENTION, kernels
#             (default), cudnn or auto); all: both (about 15 minutes). Each ends with
#             bench/summary.py's short table. Results: DIR (default $OUT, else
#             .gpu-bench/out)/parity.json, side_by_side.json and the logs. --compile-mode MODE
#             (repeatable, e.g. default and reduce-overhead): the bench once per
#             torch.compile mode, into side_by_side-MODE.json, PyTorch eager in the first
#             only (--skip-eager: in none). Exit status: non-zero if a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-bench

run_gpu() {
  local what=${1:-all}
  [ $# -gt 0 ] && shift
  case "$what" in
  all|parity|bench) ;;
  *) echo "usage: $0 run [all|parity [CASE...]|bench [CONFIG...]] [--out DIR] [--compile-mode MODE]... [--skip-eager]" >&2; return 2 ;;
  esac
  if [ ! -x "$G/bin/ls2c-gpu-step" ]; then
    echo "$G is missing: run scripts/gpu-bench.sh prepare here and carry $G" >&2
    return 2
  fi
  local out=${OUT:-$G/out} cases=() configs=() modes=() skip_eager=0
  while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --compile-mode) modes+=("$2"); shift 2 ;;
    --skip-eager) skip_eager=1; shift ;;
    *) case "$what" in
       parity) cases+=(--case "$1") ;;
       bench) configs+=(--config "$1") ;;
       *) echo "usage: $0 run [all|parity [CASE...]|bench [CONFIG...]] [--out DIR] [--compile-mode MODE]... [--skip-eager]" >&2; return 2 ;;
       esac
       shift ;;
    esac
  done
  mkdir -p "$out"
  local py=python3
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  local status=0
  if [ "$what" = all ] || [ "$what" = parity ]; then
    "$py" bench/parity.py run --backend gpu --dir "$G/parity" --gpu-step "$G/bin/ls2c-gpu-step" \
      --json "$out/parity.json" ${PARITY_ARGS:-} "${cases[@]}" 2>&1 | tee "$out/parity.log" || status=1
  fi
  local jsons=()
  if [ "$what" = all ] || [ "$what" = bench ]; then
    if [ ${#modes[@]} -eq 0 ]; then
      jsons=("$out/side_by_side.json")
      "$py" bench/side_by_side.py run --dir "$G/bench" --gpu-step "$G/bin/ls2c-gpu-step" \
        --attention "${LS2C_ATTENTION:-kernels}" $([ $skip_eager = 0 ] || echo --skip-eager) \
        --tmp "${TMPDIR:-/tmp}" --json "$out/side_by_side.json" "${configs[@]}" 2>&1 |
        tee "$out/side_by_side.log" || status=1
    fi
    local first=1 mode
    for mode in "${modes[@]}"; do
      jsons+=("$out/side_by_side-$mode.json")
      "$py" bench/side_by_side.py run --dir "$G/bench" --gpu-step "$G/bin/ls2c-gpu-step" \
        --attention "${LS2C_ATTENTION:-kernels}" --compile-mode "$mode" \
        $([ $first = 1 ] && [ $skip_eager = 0 ] || echo --skip-eager) \
        --tmp "${TMPDIR:-/tmp}" --json "$out/side_by_side-$mode.json" "${configs[@]}" 2>&1 |
        tee "$out/side_by_side-$mode.log" || status=1
      first=0
    done
  fi
  echo
  [ ${#jsons[@]} -gt 0 ] || jsons=("$out/side_by_side.json")
  local j
  for j in "${jsons[@]}"; do
    "$py" bench/summary.py --parity "$out/parity.json" --bench "$j"
  done
  return $status
}

case "${1:-prepare}" in
run)
  shift
  run_gpu "$@"
  exit $? ;;
prepare) [ $# -gt 0 ] && shift ;;
*)
  echo "usage: $0 [prepare [CONFIG...]] | run [all|parity [CASE...]|bench [CONFIG...]] [--out DIR]" >&2
  exit 2 ;;
esac
# The default configurations, and those named (bench/side_by_side.py's CONFIGS).
extra=()
if [ $# -gt 0 ]; then
  defaults=" bert-base gpt2-medium transformer-base vit-b16 "
  for c in $defaults; do extra+=(--config "$c"); done
  for c in "$@"; do [[ $defaults == *" $c "* ]] || extra+=(--config "$c"); done
fi

. scripts/gpu-carry.sh
carry_build ls2c-gpu-step
carry_start "$G"
carry_tool "$BUILD/tools/ls2c-gpu-step/ls2c-gpu-step" "$G"
"$PY" bench/parity.py prepare --out "$G/parity" --ls2c "$BUILD/tools/ls2c/ls2c"
"$PY" bench/side_by_side.py prepare --out "$G/bench" --ls2c "$BUILD/tools/ls2c/ls2c" "${extra[@]}"
carry_size_check "$G" 64 "a device call carries"
echo
echo "On the GPU machine (carry $G), one command runs the checks and the benchmark:"
echo "  scripts/gpu-bench.sh run all --out \$OUT"
echo "or, within 10-minute calls: scripts/gpu-bench.sh run parity --out \$OUT; then"
echo "  scripts/gpu-bench.sh run bench bert-base gpt2-medium --out \$OUT; scripts/gpu-bench.sh run bench transformer-base vit-b16 --out \$OUT"
