#!/usr/bin/env bash
# The GPU check cycle in one device call (issue 6: one script builds what the GPU machine needs,
# runs the checks there and prints a short table last). The PyTorch side-by-side benchmark and
# loss-curve parity are scripts/gpu-bench.sh's (a separate call: they take longer).
#
# Here (MLIR, no GPU):  scripts/gpu-all.sh prepare
#   builds the tools, then writes .gpu-all/ (git-ignored): bin/ (ls2c-kernel-check, ls2c-gemm-check, ls2c-gpu-step: no MLIR), cases/
#   (generated kernels against the interpreter: the tensor-core attention set, the
#   embedding gradients (also with many tokens), the cross entropy over padded rows of a
#   50,257-token vocabulary, the LayerNorm-dropout groups and the column reductions of
#   tiny-bert and of a hidden-1024 bf16 model, the masked-LM head's nonzero and
#   scatter_add at BERT-base's max_predictions),
#   step/ (scripts/gpu-step-check.py's tiny presets and large-batch probes with their CPU
#   references), prof/ (BERT-base and GPT-2 medium bundles and batches),
#   packed into .gpu-all.tgz (the folder is over the 64 MiB a device call carries; the archive
#   is not).
# There (the device tool, carry [".gpu-all.tgz"]):  scripts/gpu-all.sh run   (unpacks it; a
#   carried .gpu-all/, or parts of it such as bin/, step/ and prof/ alone, run as they are)
#   runs each check with a time limit and prints one line per check (fp16/bf16 step cases and
#   the BERT-base and GPT-2 medium timings also with --attention cudnn); the logs and the step
#   outputs travel back as one archive in 15 MiB parts, $OUT/gpu-all.tar.gz.00, .01, ...
#   (default OUT: .gpu-all/out), since the device tool returns at most 8 files of 16 MiB. Exit status: non-zero if a check failed.
# Back here:  scripts/gpu-all.sh compare DIR   (DIR: the fetched $OUT with the parts, or a
#   folder holding the unpacked outputs) compares the step outputs with the CPU references
#   (scripts/gpu-step-check.py compare).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-all
BUILD=${LS2C_BUILD_DIR:-build}

prepare() {
  cmake --build "$BUILD" --target ls2c ls2c-kernel-cases ls2c-kernel-check ls2c-gemm-check \
    ls2c-gpu-step
  local exclude
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$G/" "$exclude" 2>/dev/null || echo "/$G/" >> "$exclude"
  rm -rf "$G"
  mkdir -p "$G/bin" "$G/cases"
  cp "$BUILD/test/gpu/ls2c-kernel-check" "$BUILD/test/gpu/ls2c-gemm-check" \
    "$BUILD/tools/ls2c-gpu-step/ls2c-gpu-step" "$G/bin/"
  local cases="$BUILD/test/gpu/ls2c-kernel-cases" m
  for m in test/gpu/Inputs/attention-*.json; do
    # attention-d64-fp16-long serves the attention-edge set (gpu-kernel-cases.sh); the head
    # dim 256 sets (14 MB) and the d80 and d96 ones (no dropout, 10 MB) are
    # gpu-kernel-cases.sh's attention set alone: with them the archive and the checkout pass
    # the 64 MiB a call carries.
    [ "${m%-long.json}" = "$m" ] || continue
    case "$m" in *-d256-*|*-d80-*|*-d96-*) continue ;; esac
    "$cases" "$m" "$G/cases/$(basename "$m" .json)" --tokens 400 --only attention
  done
  for m in examples/tiny-bert.json test/gpu/Inputs/sizes-h100-bf16-v50257.json; do
    "$cases" "$m" "$G/cases/scatter-$(basename "$m" .json)" --tokens 19 --only scatter_add
  done
  # Padded rows: the cross entropy over a 50,257-token vocabulary reads the logits and
  # writes their gradient through row strides (PaddedRows.h); the LayerNorm-dropout groups of
  # a hidden-1024 bf16 model draw eight numbers per Philox call.
  "$cases" test/gpu/Inputs/sizes-h100-bf16-v50257.json "$G/cases/xent-sizes-h100-bf16-v50257" \
    --tokens 19 --only cross_entropy
  "$cases" test/gpu/Inputs/sizes-h1024-bf16.json "$G/cases/lndrop-sizes-h1024-bf16" \
    --tokens 13 --only layer_norm
  # The small-table paths with enough tokens (ScatterAddKernel.cpp): token lanes and token
  # chunks (partials in scratch, the last block per tile sums them), BERT-base's token-type
  # tile shape at H = 768 (11 chunks) and its position table's (4 lanes, no chunks, two
  # 1024-id windows), a 100-row table (96 tiles x 2 chunks), empty chunks and shared-limited
  # lanes (tiny-bert: 132 chunks, 7 lanes). About 5 MB in the archive (1,100 tokens: the
  # archive and the checkout must stay under the 64 MiB a device call carries).
  "$cases" examples/tiny-bert.json "$G/cases/scatter-many-tiny-bert" --tokens 256 \
    --only scatter_add
  "$cases" test/gpu/Inputs/scatter-h768-fp16.json "$G/cases/scatter-many-h768-fp16" \
    --tokens 1100 --only scatter_add
  # The sorted-ids path (ScatterAddSorted.cpp) with 34 chunks of ids (two groups of 32) and
  # about 33 repeats of every id: a 1,024-row position table, padding id 0 dropped (4.4 MB).
  "$cases" test/gpu/Inputs/scatter-v3000-h64-bf16.json "$G/cases/scatter-sorted-v3000" \
    --tokens 34000 --only scatter_add_0
  # The column reductions (bias and LayerNorm gradients, the gradient norm) of a tiny BERT
  # and of a 2-layer hidden-1024 bf16 model: 1 to 128 column tiles, so the check's scratch
  # (counters zero, the rest garbage) tests the counters that all kernels share.
  for m in examples/tiny-bert.json test/gpu/Inputs/sizes-h1024-bf16.json; do
    "$cases" "$m" "$G/cases/colsum-$(basename "$m" .json)" --tokens 64 --only column_sum \
      --max-case-bytes 4000000
  done
  # Vector column sums whose last tile is partial (264 and 1,320 bf16 columns: tiles of 256);
  # the gradient norm's case (the whole workspace) is left out for the archive's size.
  "$cases" test/gpu/Inputs/sizes-h264-bf16.json "$G/cases/colsum-sizes-h264-bf16" --tokens 40 \
    --only column_sum --max-case-bytes 1000000
  # The masked-LM head's labelled rows (max_predictions 3,072): the nonzero scan over 12,000
  # random mask bits (the bound reached) and the scatter_add into 4,000 token rows (dropped
  # ids included); about 1.4 MB.
  "$cases" test/gpu/Inputs/mlm-gather-h128-bf16.json "$G/cases/mlm-gather-nonzero" \
    --tokens 12000 --only nonzero
  "$cases" test/gpu/Inputs/mlm-gather-h128-bf16.json "$G/cases/mlm-gather-scatter" \
    --tokens 4000 --only scatter_add_0
  # The step check's references (CPU, a few minutes with the probes), then its folder.
  python3 -c 'import jax' 2>/dev/null && py=python3 || py=.venv/bin/python
  "$py" scripts/gpu-step-check.py prepare --probes --ls2c "$BUILD/tools/ls2c/ls2c"
  # The references stay here (.gpu-run/step, for compare): only what the GPU runs travels.
  cp -r .gpu-run/step "$G/step"
  rm -f "$G"/step/*/reference.safetensors
  LS2C_BUILD_DIR=$BUILD scripts/gpu-profile.sh bert-base gpt2-medium
  mv .gpu-prof "$G/prof"
  # The folder is larger than the 64 MiB a device call carries; it travels packed.
  grep -qx "/$G.tgz" "$exclude" 2>/dev/null || echo "/$G.tgz" >> "$exclude"
  tar -czf "$G.tgz" "$G"
  local bytes
  bytes=$(stat -c %s "$G.tgz")
  echo "$G.tgz: $bytes bytes (carry [\"$G.tgz\"])"
  if [ "$bytes" -gt 67108864 ]; then
    echo "$G.tgz is over the 64 MiB a device call carries" >&2
    exit 1
  fi
}

run() {
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  local top=${OUT:-$G/out} failed=0 summary=()
  local out=$top/gpu-all
  # A carried archive replaces whatever an earlier call left in $G (the
  # device machine keeps ignored folders between calls).
  if [ -f "$G.tgz" ]; then
    rm -rf "$G"
    tar -xzf "$G.tgz"
  fi
  if [ ! -x "$G/bin/ls2c-gpu-step" ]; then
    echo "$G is missing: run scripts/gpu-all.sh prepare here and carry $G.tgz to the GPU machine" >&2
    return 2
  fi
  mkdir -p "$out"
  note() { summary+=("$(printf '%-34s %s' "$1" "$2")"); }
  check() { # name, seconds, command...: runs it, logs it, notes ok/FAIL and its last line
    local name=$1 limit=$2 rc=0
    shift 2
    timeout "$limit" "$@" > "$out/$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || failed=1
    note "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAIL (rc $rc)"): $(tail -1 "$out/$name.log")"
  }
  nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader || true
  local d
  # The kernel cases may stay behind when the carry must be smaller (carry $G/bin, $G/step
  # and $G/prof only).
  [ -d "$G/cases" ] || note "cases" "not carried: skipped"
  for d in "$G"/cases/*/; do
    [ -d "$d" ] || continue
    check "cases-$(basename "$d")" 120 "$G/bin/ls2c-kernel-check" "$d"
  done
  check gemm-check 180 "$G/bin/ls2c-gemm-check"
  local p a
  for p in "$G"/step/*/; do
    p=$(basename "$p")
    a=("$G/step/$p/model.ls2b" --params "$G/step/$p/params.safetensors"
       --batch "$G/step/$p/batch.safetensors")
    check "step-$p" 120 "$G/bin/ls2c-gpu-step" "${a[@]}" -o "$out/$p.safetensors" --steps 3
    check "graphs-off-$p" 120 "$G/bin/ls2c-gpu-step" "${a[@]}" -o "$out/$p.eager" --steps 3 \
      --no-graphs
    if cmp -s "$out/$p.safetensors" "$out/$p.eager"; then
      note "graphs-vs-eager-$p" "ok: identical bytes"
    else
      failed=1
      note "graphs-vs-eager-$p" "FAIL: outputs differ"
    fi
    rm -f "$out/$p.eager"
    # fp16/bf16 cases again with cuDNN's fused attention (compare: against the reference and
    # against the kernels' run).
    if grep -Eq '"dtype": "(bf16|fp16)"' "$G/step/$p/model.json"; then
      check "cudnn-$p" 120 "$G/bin/ls2c-gpu-step" "${a[@]}" -o "$out/$p.cudnn.safetensors" \
        --steps 3 --attention cudnn
    fi
  done
  local backend
  for p in bert-base gpt2-medium; do
    for backend in kernels cudnn; do
      check "time-$p-$backend" 240 "$G/bin/ls2c-gpu-step" "$G/prof/$p.ls2b" --init-seed 1 \
        --batch "$G/prof/$p.batch.safetensors" --steps 12 --time --attention "$backend"
      note "  median step" "$(grep -o 'time [0-9.]* ms' "$out/time-$p-$backend.log" |
        tail -10 | awk '{print $2}' | sort -n |
        awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)] " ms"}')"
    done
  done
  printf '%s\n' "${summary[@]}" > "$out/summary.txt"
  # The device tool returns files of at most 16 MiB: the archive travels in 15 MiB parts.
  tar -czf - -C "$out" . | split -b 15m -d - "$top/gpu-all.tar.gz." && rm -rf "$out"
  echo
  printf '%s\n' "${summary[@]}"
  echo "logs and step outputs in $top/gpu-all.tar.gz.NN: compare them here with:"
  echo "  scripts/gpu-all.sh compare DIR   (DIR: the folder holding gpu-all.tar.gz.NN)"
  return $failed
}

case "${1:-}" in
prepare) prepare ;;
run) run ;;
compare)
  [ $# -eq 2 ] || { echo "usage: $0 compare DIR" >&2; exit 2; }
  [ -d "$2" ] || { echo "$0: compare: $2: no such folder" >&2; exit 2; }
  python3 -c 'import jax' 2>/dev/null && py=python3 || py=.venv/bin/python
  dir=$2
  if [ -f "$dir/gpu-all.tar.gz.00" ]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    cat "$2"/gpu-all.tar.gz.[0-9][0-9] | tar -xzf - -C "$dir"
  fi
  "$py" scripts/gpu-step-check.py compare "$dir" ;;
*)
  echo "usage: $0 prepare | run | compare DIR" >&2
  exit 2 ;;
esac
