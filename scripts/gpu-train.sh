#!/usr/bin/env bash
# `ls2c train` on the GPU machine, which has no MLIR.
#   scripts/gpu-train.sh prepare   (here) builds a self-contained ls2c
#       (LS2C_STATIC_MLIR=ON in build-static/: MLIR and LLVM linked in) and
#       ls2c-cuda.so, and puts them in .gpu-train/bin with, in .gpu-train/lib,
#       the libraries the GPU machine lacks (fmt, sentencepiece, OpenBLAS and
#       its Fortran runtime).
#   scripts/gpu-train.sh run OUT   (there; carry .gpu-train) the checks of
#       issue 27's first item, each a plain `ls2c train`:
#       1. the main job: examples/gpt-shakespeare.json, 2000 steps, no device
#          option and no bundle (the GPU is found, the programs compiled in
#          process);
#       2. the same seed and batches on both devices (tiny-gpt, fp32, 20
#          steps): loss curves within the step tolerance;
#       3. a CPU checkpoint resumed on the GPU continues the CPU's curve;
#       4. `ls2c step` on given parameters and batch, CPU against GPU;
#       5. `ls2c generate` from 1.'s checkpoint on both devices;
#       6. a second run of 1. starts from the program cache;
#       7. llama-tiny (issue 28) the same way: 20 steps on both devices, three
#          `ls2c step`s on given parameters and batch, greedy `ls2c generate`.
#     Logs and metrics go to OUT; a table last.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/gpu-train.sh prepare | run OUT" >&2; exit 2; }
[ $# -ge 1 ] || usage
DIR=.gpu-train

if [ "$1" = prepare ]; then
  [ $# -eq 1 ] || usage
  # shellcheck source=scripts/gpu-carry.sh
  source scripts/gpu-carry.sh
  cmake -S . -B build-static -G Ninja -DCMAKE_BUILD_TYPE=Release -DLS2C_STATIC_MLIR=ON \
    -DLS2C_BUILD_TESTS=OFF -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-19/lib/cmake/llvm -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" \
    > /dev/null
  cmake --build build-static --target ls2c ls2c-cuda
  carry_start "$DIR"
  cp build-static/tools/ls2c/ls2c build-static/tools/ls2c/ls2c-cuda.so "$DIR/bin/"
  for lib in $(ldd "$DIR/bin/ls2c" "$DIR/bin/ls2c-cuda.so" |
               awk '/libfmt|libsentencepiece|libopenblas|libgfortran|libquadmath/ {print $3}' |
               sort -u); do
    cp -L "$lib" "$DIR/lib/"
  done
  # `ls2c step`'s inputs: tiny-gpt parameters and a batch (the oracle's
  # generators; the GPU machine runs the same steps on both devices).
  mkdir -p "$DIR/step"
  .venv/bin/python test/tools/Inputs/make-step-inputs.py . "$DIR/step" > /dev/null
  find "$DIR/step" -name '*.safetensors' ! -name params.safetensors ! -name batch.safetensors \
    -delete
  # The same for llama-tiny (run_oracle.py's generators of any preset).
  mkdir -p "$DIR/step-llama"
  .venv/bin/python - "$DIR/step-llama" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
sys.dont_write_bytecode = True
sys.path.insert(0, "test/oracle")
import jax_models as jm, run_oracle as ro
d = ro.description("examples/llama-tiny.json")
c = jm.config(d)
rng = np.random.default_rng(7)
json.dump(d, open(os.path.join(sys.argv[1], "model.json"), "w"))
save_file(ro.parameters(c, rng), os.path.join(sys.argv[1], "params.safetensors"))
save_file(ro.batch(c, rng), os.path.join(sys.argv[1], "batch.safetensors"))
PY
  # OpenBLAS (36 MB, every CPU's kernels) travels compressed; run unpacks it.
  xz -T0 "$DIR/lib/libopenblas.so.0"
  if ldd "$DIR/bin/ls2c" | grep -q 'libLLVM\|libMLIR'; then
    echo "gpu-train.sh: error: $DIR/bin/ls2c links MLIR dynamically" >&2
    exit 1
  fi
  carry_size_check "$DIR" 40 "share of a device call"
  exit 0
fi

[ "$1" = run ] && [ $# -eq 2 ] || usage
OUT=$2
mkdir -p "$OUT"
for f in "$DIR"/lib/*.xz; do
  [ -e "$f" ] && python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "$f" "${f%.xz}"
done
export LD_LIBRARY_PATH=$PWD/$DIR/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export LS2C_CACHE_DIR=$OUT/cache
LS2C=$DIR/bin/ls2c
DATA=examples/data/tinyshakespeare/input.txt
ldd "$LS2C" | grep -q libcuda && { echo "error: ls2c links libcuda" >&2; exit 1; }
echo "ldd ls2c: no libcuda, no libLLVM/libMLIR"

# 1. The main job, as a user types it.
/usr/bin/time -f "%e s wall" "$LS2C" train examples/gpt-shakespeare.json --data "$DATA" \
  --steps 2000 --out "$OUT/main" --no-progress > "$OUT/main.out" 2> "$OUT/main.err"
cat "$OUT/main.err" "$OUT/main.out"

# 2. Same seed and batches on both devices.
TINY=(examples/tiny-gpt.json --data "$DATA" --batch-sequences 8 --eval-interval 10
      --eval-batches 4 --no-progress)
"$LS2C" train "${TINY[@]}" --steps 20 --device cpu --out "$OUT/tiny-cpu" 2> "$OUT/tiny-cpu.err"
"$LS2C" train "${TINY[@]}" --steps 20 --out "$OUT/tiny-gpu" 2> "$OUT/tiny-gpu.err"
# 3. Ten steps on the CPU, resumed on the GPU to twenty.
"$LS2C" train "${TINY[@]}" --steps 10 --device cpu --out "$OUT/tiny-resume" \
  2> "$OUT/tiny-resume-cpu.err"
"$LS2C" train "${TINY[@]}" --steps 20 --device cuda --out "$OUT/tiny-resume" --resume \
  2> "$OUT/tiny-resume-gpu.err"
grep -h "device:" "$OUT"/tiny-*.err
# 4. `ls2c step`: three steps of tiny-gpt on given parameters and batch, on
#    both devices.
STEP=("$DIR/step/model.json" --params "$DIR/step/params.safetensors"
      --batch "$DIR/step/batch.safetensors" --steps 3 --dropout-seed 5)
"$LS2C" step "${STEP[@]}" --device cpu -o "$OUT/step-cpu.safetensors" > /dev/null
"$LS2C" step "${STEP[@]}" -o "$OUT/step-gpu.safetensors" > /dev/null 2> "$OUT/step-gpu.err"
grep -h "device:" "$OUT/step-gpu.err"
# 5. `ls2c generate` from the main job's checkpoint, greedy, on both devices.
GEN=(examples/gpt-shakespeare.json --checkpoint "$OUT/main/checkpoint.safetensors" --text "$DATA"
     --prompt "ROMEO:" --max-new-tokens 100)
"$LS2C" generate "${GEN[@]}" --device cpu -o "$OUT/generate-cpu.txt" 2> "$OUT/generate-cpu.err"
"$LS2C" generate "${GEN[@]}" -o "$OUT/generate-gpu.txt" 2> "$OUT/generate-gpu.err"
cat "$OUT/generate-cpu.err" "$OUT/generate-gpu.err"
echo "--- CPU:"; cat "$OUT/generate-cpu.txt"; echo "--- GPU:"; cat "$OUT/generate-gpu.txt"
cmp -s "$OUT/generate-cpu.txt" "$OUT/generate-gpu.txt" && echo "generate: the same text on both devices"
# 6. The main job again: its kernels from the cache.
"$LS2C" train examples/gpt-shakespeare.json --data "$DATA" --steps 20 --eval-interval 0 \
  --out "$OUT/again" --no-progress > /dev/null 2> "$OUT/again.err"
grep -h "compiled for" "$OUT/main.err" "$OUT/again.err"
# 7. llama-tiny: both devices, resumed, `ls2c step`, `ls2c generate`.
LLAMA=(examples/llama-tiny.json --data "$DATA" --batch-sequences 8 --eval-interval 10
       --eval-batches 4 --no-progress)
"$LS2C" train "${LLAMA[@]}" --steps 20 --device cpu --out "$OUT/llama-cpu" 2> "$OUT/llama-cpu.err"
"$LS2C" train "${LLAMA[@]}" --steps 20 --out "$OUT/llama-gpu" 2> "$OUT/llama-gpu.err"
grep -h "device:" "$OUT"/llama-*.err
LSTEP=("$DIR/step-llama/model.json" --params "$DIR/step-llama/params.safetensors"
       --batch "$DIR/step-llama/batch.safetensors" --steps 3)
"$LS2C" step "${LSTEP[@]}" --device cpu -o "$OUT/llama-step-cpu.safetensors" > /dev/null
"$LS2C" step "${LSTEP[@]}" -o "$OUT/llama-step-gpu.safetensors" > /dev/null
LGEN=(examples/llama-tiny.json --checkpoint "$OUT/llama-cpu/checkpoint.safetensors" --text "$DATA"
      --prompt "ROMEO:" --max-new-tokens 20)
"$LS2C" generate "${LGEN[@]}" --device cpu -o "$OUT/llama-generate-cpu.txt" 2> /dev/null
"$LS2C" generate "${LGEN[@]}" -o "$OUT/llama-generate-gpu.txt" 2> "$OUT/llama-generate-gpu.err"
cat "$OUT/llama-generate-gpu.err"
cmp -s "$OUT/llama-generate-cpu.txt" "$OUT/llama-generate-gpu.txt" &&
  echo "llama generate: the same text on both devices"

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def read(path):
    train, valid, final = {}, {}, None
    for line in open(path):
        r = json.loads(line)
        if 'loss' in r:
            train[r['step']] = r['loss']
        if 'valid_loss' in r:
            valid[r['step']] = r['valid_loss']
    return train, valid
def worst(a, b, steps):
    return max(abs(a[s] - b[s]) / abs(b[s]) for s in steps)
main_t, main_v = read(f'{out}/main/metrics.jsonl')
cpu_t, cpu_v = read(f'{out}/tiny-cpu/metrics.jsonl')
gpu_t, gpu_v = read(f'{out}/tiny-gpu/metrics.jsonl')
res_t, res_v = read(f'{out}/tiny-resume/metrics.jsonl')
steps = sorted(cpu_t)
print('| check | figure |')
print('| --- | --- |')
print(f'| main job: steps, last validation loss | {max(main_t)}, {main_v[max(main_v)]:.4f} |')
print(f'| tiny-gpt fp32, 20 steps: worst relative loss difference GPU vs CPU | {worst(gpu_t, cpu_t, steps):.2e} |')
print(f'| same, validation losses (steps {sorted(cpu_v)}) | {worst(gpu_v, cpu_v, sorted(cpu_v)):.2e} |')
print(f'| CPU checkpoint at 10 resumed on the GPU: worst difference, steps 11-20, vs CPU run | {worst(res_t, cpu_t, range(11, 21)):.2e} |')
print(f'| CPU losses step 1, 20 | {cpu_t[1]:.5f}, {cpu_t[20]:.5f} |')
from safetensors.numpy import load_file
import numpy as np
c, g = load_file(f'{out}/step-cpu.safetensors'), load_file(f'{out}/step-gpu.safetensors')
def rel(name):
    return float(np.linalg.norm(g[name] - c[name]) / np.linalg.norm(c[name]))
grads = max(rel(k) for k in c if k.startswith('grad/'))
params = max(rel(k) for k in c if k.startswith('param/'))
print(f'| ls2c step tiny-gpt, 3 steps, GPU vs CPU: losses, worst gradient, worst parameter (relative L2) | {rel("loss"):.2e}, {grads:.2e}, {params:.2e} |')
print(f'| GPU losses step 1, 20 | {gpu_t[1]:.5f}, {gpu_t[20]:.5f} |')
lc_t, lc_v = read(f'{out}/llama-cpu/metrics.jsonl')
lg_t, lg_v = read(f'{out}/llama-gpu/metrics.jsonl')
print(f'| llama-tiny fp32, 20 steps: worst relative loss difference GPU vs CPU | {worst(lg_t, lc_t, sorted(lc_t)):.2e} |')
print(f'| same, validation losses (steps {sorted(lc_v)}) | {worst(lg_v, lc_v, sorted(lc_v)):.2e} |')
c, g = load_file(f'{out}/llama-step-cpu.safetensors'), load_file(f'{out}/llama-step-gpu.safetensors')
grads = max(rel(k) for k in c if k.startswith('grad/'))
params = max(rel(k) for k in c if k.startswith('param/'))
print(f'| ls2c step llama-tiny, 3 steps, GPU vs CPU: losses, worst gradient, worst parameter (relative L2) | {rel("loss"):.2e}, {grads:.2e}, {params:.2e} |')
PY
