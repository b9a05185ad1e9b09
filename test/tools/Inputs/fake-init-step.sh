#!/usr/bin/env bash
# A stand-in for ls2c-gpu-step in bench/lm_side_by_side.py's test (no GPU), as `run` calls it
# for a llama's initial parameters: BUNDLE --init-seed S --batch B --save-params P writes P
# (not a real safetensors file: the PyTorch child of the test is a stand-in too) and prints a
# line. FAKE_INIT_STEP=fail exits 1 with a CUDA error, =nofile exits 0 without writing P.
seed='' save=''
while [ $# -gt 0 ]; do
  case "$1" in
  --init-seed) seed=$2; shift ;;
  --save-params) save=$2; shift ;;
  esac
  shift
done
echo "train.ls2b: model llama-tiny on sm_90, 39 kernels"
if [ "${FAKE_INIT_STEP:-}" = fail ]; then
  echo "ls2c-gpu-step: error: CUDA error: no CUDA-capable device is detected" >&2
  exit 1
fi
[ "${FAKE_INIT_STEP:-}" = nofile ] && exit 0
echo "initial parameters of seed $seed" > "$save"
echo "step 1: loss 4.5"
