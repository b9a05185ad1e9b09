#!/usr/bin/env bash
# Real training runs on one GPU (issue 8), each with `ls2c train`'s data through ls2c-gpu-train:
#   transformer-multi30k  English -> German on Multi30k (encoder_decoder, 6+6, fp16; parallel
#                         text tokenized in process with a joint BPE of 8000 ids); its final
#                         checkpoint then translates test_2016_flickr with ls2c-gpu-generate
#                         (beam 5), scored with BLEU
#   bert-wikitext2        BERT masked LM on WikiText-2 token files (encoder, 6 layers, bf16)
#   vit-fashion-mnist     ViT on Fashion-MNIST's IDX files (vit, 6 layers, patch 4, bf16)
# The descriptions are bench/models/<name>.json.
#
# On the compiler machine (MLIR, no GPU):
#   scripts/gpu-real-runs.sh [prepare]  builds ls2c and ls2c-gpu-train in $LS2C_BUILD_DIR (default
#                                       build; LS2C_NO_BUILD=1 uses the binaries as they are) and
#                                       writes .gpu-real/ (git-ignored, about 45 MiB): bundles/
#                                       (each model's train bundle and its --program=eval bundle,
#                                       sm_90), data/ (Multi30k's train, val and test_2016_flickr
#                                       text and the BPE model trained on its train split;
#                                       WikiText-2's train and valid token files; Fashion-MNIST's
#                                       four IDX files), bin/ls2c-gpu-train and lib/ (libfmt,
#                                       libsentencepiece). Data from $LS2C_DATA_DIR (default
#                                       ../shared/data) and $LS2C_FASHION_DIR (default
#                                       /usr/share/datasets/fashion-mnist, Debian's
#                                       dataset-fashion-mnist, which scripts/setup.sh installs).
# On the GPU machine (carry .gpu-real):
#   scripts/gpu-real-runs.sh run [--out DIR] [--only NAME]... [--pack]
#     trains each model (or those --only names) for at most its time limit of training
#     ($LS2C_MT_SECONDS, default 150; $LS2C_BERT_SECONDS, 75; $LS2C_VIT_SECONDS, 75), about 6
#     minutes for all three. Results in DIR (default $OUT, else .gpu-real/out): NAME.log,
#     NAME.metrics.jsonl (ls2c train's JSON lines), transformer-multi30k.safetensors (the final
#     checkpoint in ls2c train's format), and last a table of steps, time, throughput, validation
#     loss and accuracy. Exit status: non-zero if a run failed (the others still run).
#   scripts/gpu-real-runs.sh run --torch [--out DIR] [--only NAME]...
#     the same, and after each ls2c run its PyTorch twin (bench/real_side_by_side.py torch, with
#     $LS2C_TORCH_PYTHON, default /opt/torch/.venv/bin/python3 else python3) for the same time
#     limit: NAME.torch.json, NAME.torch.log and, for the Transformer,
#     transformer-multi30k.torch.test_2016_flickr.ids; about twice the time.
#   --pack (with either): at the end DIR holds only real-runs.tgz, every result but the
#     checkpoints (the device tool returns a few files of limited size; unpack it into DIR here).
# Back on the compiler machine, with DIR fetched:
#   .venv/bin/python bench/real_side_by_side.py summarize --out DIR
#     scores both translations with sacreBLEU and writes DIR/real_side_by_side.json and a table.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-real
MODELS=(transformer-multi30k bert-wikitext2 vit-fashion-mnist)

# train NAME OUT: one model's run, its options by name.
train() {
  local name=$1 out=$2 b=$G/bundles d=$G/data args
  case "$name" in
  transformer-multi30k)
    # Bucketed pairs change shape every step: step by step, not CUDA graphs (each new shape
    # would be captured once and never replayed).
    args=(--data "$d/multi30k/train.en.gz" --target "$d/multi30k/train.de.gz"
      --tokenizer "$d/multi30k/bpe.model"
      --valid-data "$d/multi30k/val.en.gz" --valid-target "$d/multi30k/val.de.gz"
      --steps 100000 --time-limit "${LS2C_MT_SECONDS:-150}" --eval-interval 1000
      --no-graphs --save "$out/$name.safetensors") ;;
  bert-wikitext2)
    args=(--data "$d/wikitext-2/train.tok" --valid-data "$d/wikitext-2/valid.tok"
      --steps 3000 --time-limit "${LS2C_BERT_SECONDS:-75}" --eval-interval 500 --eval-batches 8
      --no-graphs) ;;
  vit-fashion-mnist)
    # Every batch but an epoch's last holds 256 images: CUDA graphs replay.
    args=(--data "$d/fashion-mnist/train-images-idx3-ubyte.gz"
      --labels "$d/fashion-mnist/train-labels-idx1-ubyte.gz"
      --valid-data "$d/fashion-mnist/t10k-images-idx3-ubyte.gz"
      --valid-labels "$d/fashion-mnist/t10k-labels-idx1-ubyte.gz"
      --steps 4000 --time-limit "${LS2C_VIT_SECONDS:-75}" --eval-interval 1000) ;;
  *)
    echo "unknown model '$name' (${MODELS[*]})" >&2
    return 2 ;;
  esac
  "$G/bin/ls2c-gpu-train" "$b/$name.ls2b" --eval "$b/$name-eval.ls2b" "${args[@]}" \
    --seed 1 --log-interval 200 --metrics "$out/$name.metrics.jsonl"
}

# translate OUT: the trained Transformer translates test_2016_flickr (beam 5, fairseq's
# default, on the GPU through the decoding bundle) and scores it with BLEU (sacreBLEU's
# default); the hypotheses are OUT/transformer-multi30k.test_2016_flickr.de.
translate() {
  local out=$1 d=$G/data/multi30k
  "$G/bin/ls2c-gpu-generate" "$G/bundles/transformer-multi30k-decode.ls2b" \
    --checkpoint "$out/transformer-multi30k.safetensors" --tokenizer "$d/bpe.model" \
    --input "$d/test_2016_flickr.en.gz" --beam 5 --max-new-tokens 100 \
    --reference "$d/test_2016_flickr.de.gz" -o "$out/transformer-multi30k.test_2016_flickr.de"
}

# table OUT NAME...: one row per run from its metrics' final line.
table() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'PY'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
print(f"{'model':<22} {'steps':>6} {'train s':>8} {'tokens/s':>10} {'ms/step':>8} "
      f"{'valid loss':>10} {'accuracy':>8}")
for name in names:
    final = None
    try:
        with open(os.path.join(out, name + ".metrics.jsonl")) as f:
            for line in f:
                row = json.loads(line)
                if row.get("final"):
                    final = row
    except (OSError, ValueError):
        pass
    if final is None:
        print(f"{name:<22} failed (see {name}.log)")
        continue
    # A value no evaluation produced is null in the JSON line.
    num = lambda key, spec: "" if final.get(key) is None else format(final[key], spec)
    print(f"{name:<22} {final['steps']:>6} {num('train_seconds', '.1f'):>8} "
          f"{num('train_tokens_per_second', '.0f'):>10} {num('mean_step_ms', '.2f'):>8} "
          f"{num('valid_loss', '.4f'):>10} {num('valid_accuracy', '.4f'):>8}")
    try:  # its PyTorch twin (run --torch)
        t = json.load(open(os.path.join(out, name + ".torch.json")))
        print(f"{'  in PyTorch':<22} {t['steps']:>6} {t['train_seconds']:>8.1f} {t['tokens_per_second']:>10.0f} "
              f"{t['train_seconds'] * 1e3 / max(t['steps'], 1):>8.2f} {t['valid_loss']:>10.4f} "
              f"{t['valid_accuracy']:>8.4f}")
    except (OSError, ValueError, KeyError, TypeError):
        pass
PY
}

run_gpu() {
  if [ ! -x "$G/bin/ls2c-gpu-train" ]; then
    echo "$G is missing: run scripts/gpu-real-runs.sh prepare here and carry $G" >&2
    return 2
  fi
  local out=${OUT:-$G/out} only=() name status=0 torch=0 pack=0 py
  while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --torch) torch=1; shift ;;
    --only) only+=("$2"); shift 2 ;;
    --pack) pack=1; shift ;;
    *) echo "unknown option $1" >&2; return 2 ;;
    esac
  done
  [ ${#only[@]} -gt 0 ] || only=("${MODELS[@]}")
  mkdir -p "$out"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/$G/lib
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  for name in "${only[@]}"; do
    echo "=== $name"
    if ! train "$name" "$out" > >(tee "$out/$name.log") 2>&1; then
      echo "=== $name failed" >&2
      status=1
    elif [ "$name" = transformer-multi30k ]; then
      echo "=== $name translates test_2016_flickr"
      translate "$out" > >(tee "$out/$name.translate.log") 2>&1 || status=1
    fi
    if [ $torch = 1 ]; then
      py=${LS2C_TORCH_PYTHON:-/opt/torch/.venv/bin/python3}
      [ -x "$py" ] || py=python3
      echo "=== $name in PyTorch"
      "$py" bench/real_side_by_side.py torch --only "$name" --gpu-real "$G" --out "$out" \
        > >(tee "$out/$name.torch.log") 2>&1 || { echo "=== $name in PyTorch failed" >&2; status=1; }
    fi
  done
  echo
  table "$out" "${only[@]}"
  if [ $pack = 1 ]; then
    # The device tool returns a few files under a size limit: one archive of
    # the logs, metrics and hypotheses, the checkpoints left out.
    tar czf "$out.tgz" --exclude='*.safetensors' -C "$out" . && rm -rf "$out" && mkdir -p "$out" &&
      mv "$out.tgz" "$out/real-runs.tgz" && echo "packed: $out/real-runs.tgz"
  fi
  return $status
}

case "${1:-prepare}" in
run)
  shift
  run_gpu "$@"
  exit $? ;;
prepare) ;;
*)
  echo "usage: $0 [prepare] | run [--torch] [--pack] [--out DIR] [--only NAME]..." >&2
  exit 2 ;;
esac

. scripts/gpu-carry.sh
carry_build ls2c-gpu-train ls2c-gpu-generate
DATA=${LS2C_DATA_DIR:-../shared/data}
FASHION=${LS2C_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
for f in "$DATA/multi30k/train.en.gz" "$DATA/wikitext-2/train.txt.gz" \
  "$FASHION/train-images-idx3-ubyte.gz"; do
  [ -f "$f" ] || { echo "error: $f: no such file (LS2C_DATA_DIR, LS2C_FASHION_DIR)" >&2; exit 2; }
done
carry_start "$G"
carry_tool "$BUILD/tools/ls2c-gpu-train/ls2c-gpu-train" "$G"
carry_tool "$BUILD/tools/ls2c-gpu-generate/ls2c-gpu-generate" "$G"
L=$BUILD/tools/ls2c/ls2c
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$G/bundles" "$G/data/multi30k" "$G/data/wikitext-2" "$G/data/fashion-mnist"

# Multi30k: the text as it is (tokenized in process) and a joint BPE of both sides.
for f in train val test_2016_flickr; do
  cp "$DATA/multi30k/$f.en.gz" "$DATA/multi30k/$f.de.gz" "$G/data/multi30k/"
done
"$L" tokenize "$DATA/multi30k/train.en.gz" "$DATA/multi30k/train.de.gz" --train bpe \
  --vocab-size 8000 -o "$TMP/multi30k.tok" --model-out "$G/data/multi30k/bpe.model" > /dev/null
# WikiText-2: a BPE of the train split, one line one sequence (MaskedLM cuts segments).
"$L" tokenize "$DATA/wikitext-2/train.txt.gz" --train bpe --vocab-size 8000 \
  -o "$G/data/wikitext-2/train.tok" --model-out "$TMP/wikitext-2.model" > /dev/null
"$L" tokenize "$DATA/wikitext-2/valid.txt" --model "$TMP/wikitext-2.model" \
  -o "$G/data/wikitext-2/valid.tok" > /dev/null
cp "$FASHION"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$G/data/fashion-mnist/"

for name in "${MODELS[@]}"; do
  "$L" compile "bench/models/$name.json" --arch=sm_90 -o "$G/bundles/$name.ls2b"
  "$L" compile "bench/models/$name.json" --program=eval --arch=sm_90 -o "$G/bundles/$name-eval.ls2b"
done
"$L" compile bench/models/transformer-multi30k.json --program=decode --arch=sm_90 \
  -o "$G/bundles/transformer-multi30k-decode.ls2b"
# PyTorch's twins: Multi30k tokenized here (the GPU machine has no sentencepiece).
# (numpy: the project's virtualenv, scripts/setup.sh)
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
"$PY" bench/real_side_by_side.py prepare --gpu-real "$G" --ls2c "$L"
carry_size_check "$G" 60 "budget (a device call carries 64 MiB with the source tree)"
echo
echo "On the GPU machine (carry $G): scripts/gpu-real-runs.sh run --out \$OUT"
