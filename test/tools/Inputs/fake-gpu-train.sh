#!/usr/bin/env bash
# A stand-in for ls2c-gpu-train in bench/lm_side_by_side.py's test (no GPU), also used as the
# "python" of its PyTorch child: takes --steps N and --eval-interval K from anywhere in its
# arguments and prints the lines the real tool prints (validation loss 9.0 at step 0, then
# 9.0 - 0.001 s at step s; 20 ms per step; 8192 tokens per step), with the token counts of
# --data and --valid-data (or DIR/train.tok and DIR/valid.tok of --dir DIR).
# FAKE_GPU_TRAIN=fail exits 1 after step 0, =hang sleeps, =old prints the final line without
# the perplexity, =short stops one step early, =tokens reports one validation token more.
steps=0 interval=0 data='' valid=''
while [ $# -gt 0 ]; do
  case "$1" in
  --steps) steps=$2; shift ;;
  --eval-interval) interval=$2; shift ;;
  --data) data=$2; shift ;;
  --valid-data) valid=$2; shift ;;
  --dir) data=$2/train.tok valid=$2/valid.tok; shift ;;
  esac
  shift
done
mode=${FAKE_GPU_TRAIN:-}
count() { od -An -t u8 -j 32 -N 8 "$1" | tr -d ' '; } # num_tokens of a token file's header
train_tokens=$(count "$data") valid_tokens=$(count "$valid")
[ "$mode" = tokens ] && valid_tokens=$((valid_tokens + 1))
echo "train.ls2b: model gpt-wikitext2 (bf16), 23142400 parameters, 34 kernels on sm_90; eval eval.ls2b"
echo "train.tok: $train_tokens training and $valid_tokens validation tokens, vocab 8000; batch 32 x 256 tokens"
echo "step 0: validation loss 9.0000 (0.50 s)"
if [ "$mode" = fail ]; then
  echo "ls2c-gpu-train: error: CUDA error: out of memory" >&2
  exit 1
fi
[ "$mode" = hang ] && exec sleep 3600
[ "$mode" = short ] && steps=$((steps - 1))
loss() { awk -v s="$1" 'BEGIN { printf "%.4f", 9.0 - 0.001 * s }'; }
for ((s = 1; s <= steps; s++)); do
  if [ "$s" -eq 1 ] || [ "$s" -eq "$steps" ] || { [ "$interval" -gt 0 ] && [ $((s % interval)) -eq 0 ]; }; then
    echo "step $s/$steps: loss $(loss "$s") (smoothed $(loss "$s")), lr 0.0006, grad norm 1.000, 20.0 ms/step, 409600 tok/s"
  fi
  if { [ "$interval" -gt 0 ] && [ $((s % interval)) -eq 0 ]; } || [ "$s" -eq "$steps" ]; then
    echo "step $s: validation loss $(loss "$s") (0.50 s)"
  fi
done
final=$(loss "$steps")
ppl=$(awk -v l="$final" 'BEGIN { printf "%.2f", exp(l) }')
train=$(awk -v n="$steps" 'BEGIN { printf "%.1f", n * 0.02 }')
if [ "$mode" = old ]; then
  echo "final: $steps steps, validation loss $final, train $train s, 409600 train tokens/s (409600 after 1 warm-up steps), 20.0 ms/step, total 3.0 s"
else
  echo "final: $steps steps, validation loss $final (perplexity $ppl), train $train s, 409600 train tokens/s (409600 after 1 warm-up steps), 20.0 ms/step, total 3.0 s"
fi
echo "CUDA graphs on (train program): 2 captured, $((steps - 2)) replayed, 0 runs step by step"
