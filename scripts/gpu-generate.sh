#!/usr/bin/env bash
# Generation on the GPU against the CPU reference (issue 8): ls2c-gpu-generate (the decoding
# bundle on the runtime, KV cache on the device) must write what `ls2c generate` (the same
# decoding module in the reference interpreter) writes, for greedy and beam search, with and
# without CUDA graphs.
#   tiny-gpt          a character GPT trained 60 steps on tinyshakespeare here (fp32, bf16)
#   tiny-transformer  a translation model trained 30 steps on Multi30k's val split (fp32, bf16)
# fp32 must give the same tokens and scores within 1e-4; bf16 (whose rounding the interpreter
# emulates op by op, not in the GPU's order) reports how many outputs match.
#
# On the compiler machine (MLIR, no GPU):
#   scripts/gpu-generate.sh [prepare]   builds ls2c and ls2c-gpu-generate in $LS2C_BUILD_DIR
#                                       (LS2C_NO_BUILD=1: as they are) and writes .gpu-gen/
#                                       (git-ignored, about 4 MiB): the decoding bundles (sm_90),
#                                       checkpoints, tokenizer, inputs, the CPU's outputs (ref/),
#                                       bin/ls2c-gpu-generate and lib/
# On the GPU machine (carry .gpu-gen):
#   scripts/gpu-generate.sh run [--out DIR]
#     runs every case, compares with ref/ and prints a table last; exit status non-zero if an
#     fp32 case differs or a run fails. Results in DIR (default $OUT, else .gpu-gen/out).
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-gen

# cases: name model-dir options, one per line (the same for both tools).
cases() {
  local t=tinyshakespeare
  cat <<EOF2
gpt-greedy tiny-gpt --text $G/data/$t.txt --input $G/data/prompts.txt --max-new-tokens 40
gpt-beam tiny-gpt --text $G/data/$t.txt --input $G/data/prompts.txt --max-new-tokens 24 --beam 4 --nbest 4
gpt-bf16-greedy tiny-gpt-bf16 --text $G/data/$t.txt --input $G/data/prompts.txt --max-new-tokens 40
mt-greedy tiny-transformer --tokenizer $G/data/mt.model --input $G/data/src.de --max-new-tokens 30
mt-beam tiny-transformer --tokenizer $G/data/mt.model --input $G/data/src.de --max-new-tokens 30 --beam 5 --nbest 2
mt-bf16-beam tiny-transformer-bf16 --tokenizer $G/data/mt.model --input $G/data/src.de --max-new-tokens 30 --beam 5
EOF2
}

run_gpu() {
  if [ ! -x "$G/bin/ls2c-gpu-generate" ]; then
    echo "$G is missing: run scripts/gpu-generate.sh prepare here and carry $G" >&2
    return 2
  fi
  local out=${OUT:-$G/out} status=0 name model opts
  [ "${1:-}" = --out ] && out=$2
  mkdir -p "$out"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  while read -r name model opts; do
    for mode in graphs steps; do
      local extra=()
      [ "$mode" = steps ] && extra=(--no-graphs)
      # shellcheck disable=SC2086 # opts is a word list
      if ! "$G/bin/ls2c-gpu-generate" "$G/bundles/$model.ls2b" \
        --checkpoint "$G/checkpoints/${model%-bf16}.safetensors" $opts --json "${extra[@]}" \
        -o "$out/$name-$mode.jsonl" 2> "$out/$name-$mode.err"; then
        echo "$name ($mode) failed:" >&2
        cat "$out/$name-$mode.err" >&2
        status=1
      fi
    done
  done < <(cases)
  python3 - "$G/ref" "$out" <<'PY' || status=1
import json, os, sys
ref, out = sys.argv[1], sys.argv[2]
bad = False
print(f"{'case':<18} {'mode':<7} {'outputs':>7} {'same tokens':>11} {'max |score diff|':>16}  tokens/s")
for name in sorted(f[:-6] for f in os.listdir(ref) if f.endswith(".jsonl")):
    want = [json.loads(l) for l in open(os.path.join(ref, name + ".jsonl"))]
    for mode in ("graphs", "steps"):
        path = os.path.join(out, f"{name}-{mode}.jsonl")
        if not os.path.exists(path):
            print(f"{name:<18} {mode:<7} missing"); bad = True; continue
        got = [json.loads(l) for l in open(path)]
        same = sum(a["tokens"] == b["tokens"] for a, b in zip(got, want)) if len(got) == len(want) else 0
        diff = max((abs(a["score"] - b["score"]) for a, b in zip(got, want)
                    if a["tokens"] == b["tokens"]), default=float("nan"))
        speed = open(os.path.join(out, f"{name}-{mode}.err")).read().split(",")[-1].strip()
        print(f"{name:<18} {mode:<7} {len(got):>7} {same:>5} of {len(want):<3} {diff:>16.2e}  {speed}")
        if "bf16" not in name and (same != len(want) or len(got) != len(want) or not diff <= 1e-4):
            bad = True
print("fp32 cases: " + ("DIFFER" if bad else "same tokens, scores within 1e-4"))
sys.exit(1 if bad else 0)
PY
  return $status
}

case "${1:-prepare}" in
run)
  shift
  run_gpu "$@"
  exit $? ;;
prepare) ;;
*)
  echo "usage: $0 [prepare] | run [--out DIR]" >&2
  exit 2 ;;
esac

. scripts/gpu-carry.sh
carry_build ls2c-gpu-generate
DATA=${LS2C_DATA_DIR:-../shared/data}
carry_start "$G"
carry_tool "$BUILD/tools/ls2c-gpu-generate/ls2c-gpu-generate" "$G"
L=$BUILD/tools/ls2c/ls2c
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$G/bundles" "$G/checkpoints" "$G/data" "$G/ref"
cp examples/data/tinyshakespeare/input.txt "$G/data/tinyshakespeare.txt"
printf 'ROMEO:\nFirst Citizen:\nKING RICHARD III:\nO, \n' > "$G/data/prompts.txt"
"$PY" -c "import gzip, sys; open(sys.argv[2], 'w').write(''.join(gzip.open(sys.argv[1], 'rt').readlines()[:24]))" \
  "$DATA/multi30k/test_2016_flickr.de.gz" "$G/data/src.de"
"$L" tokenize "$DATA/multi30k/val.de.gz" "$DATA/multi30k/val.en.gz" --train bpe --vocab-size 96 \
  --no-byte-fallback -o "$TMP/mt.tok" --model-out "$G/data/mt.model" > /dev/null
"$L" train examples/tiny-gpt.json --data "$G/data/tinyshakespeare.txt" --steps 60 \
  --eval-interval 0 --out "$TMP/gpt" --no-progress > /dev/null
"$L" train examples/tiny-transformer.json --data "$DATA/multi30k/val.de.gz" \
  --target "$DATA/multi30k/val.en.gz" --tokenizer "$G/data/mt.model" --steps 30 \
  --eval-interval 0 --out "$TMP/mt" --no-progress > /dev/null
# The parameters only (the optimizer's moments stay here: the carry is small).
strip() {
  "$PY" - "$1" "$2" <<'PY'
import sys
from safetensors.numpy import load_file, save_file
from safetensors import safe_open
with safe_open(sys.argv[1], "np") as f:
    meta = f.metadata()
tensors = {k: v for k, v in load_file(sys.argv[1]).items() if not k.startswith("ls2c.optimizer.")}
save_file(tensors, sys.argv[2], metadata={"ls2c.model": meta["ls2c.model"]})
PY
}
strip "$TMP/gpt/checkpoint.safetensors" "$G/checkpoints/tiny-gpt.safetensors"
strip "$TMP/mt/checkpoint.safetensors" "$G/checkpoints/tiny-transformer.safetensors"
for m in tiny-gpt tiny-transformer; do
  # The bf16 twin keeps the name, so the fp32 checkpoint loads (rounded to bf16).
  sed 's/"dtype": "fp32"/"dtype": "bf16"/' "examples/$m.json" > "$TMP/$m-bf16.json"
  "$L" compile "examples/$m.json" --program=decode --arch=sm_90 -o "$G/bundles/$m.ls2b"
  "$L" compile "$TMP/$m-bf16.json" --program=decode --arch=sm_90 -o "$G/bundles/$m-bf16.ls2b"
done
declare -A described=([tiny-gpt]=examples/tiny-gpt.json [tiny-transformer]=examples/tiny-transformer.json
  [tiny-gpt-bf16]=$TMP/tiny-gpt-bf16.json [tiny-transformer-bf16]=$TMP/tiny-transformer-bf16.json)
while read -r name model opts; do
  # shellcheck disable=SC2086 # opts is a word list
  "$L" generate "${described[$model]}" --checkpoint "$G/checkpoints/${model%-bf16}.safetensors" $opts \
    --json -o "$G/ref/$name.jsonl" 2> /dev/null
done < <(cases)
carry_size_check "$G" 16 "budget (it travels beside .gpu-real)"
echo
echo "On the GPU machine (carry $G): scripts/gpu-generate.sh run --out \$OUT"
