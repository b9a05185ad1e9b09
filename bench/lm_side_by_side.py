#!/usr/bin/env python3
"""A GPT or a Llama trained on WikiText-2 by ls2c-gpu-train and by PyTorch: validation perplexity and wall time.

The default model is bench/models/gpt-wikitext2.json (GPT-2 style decoder, 6 layers, hidden 512,
8 heads, ffn 2048, 256 tokens, vocab 8000, dropout 0.1, bf16; AdamW 6e-4, betas 0.9/0.95, weight
decay 0.1, clipping at 1.0, cosine schedule with 100 warm-up steps to step 2000; 23.1 M
parameters). --model takes any "decoder" or "llama" description (e.g. examples/llama-125m.json):
the window length L is its max_seq_len and a step's windows B its max_batch_tokens / L (the GPT's
256 and 32). The text is tokenized by ls2c itself: a sentencepiece BPE model (--vocab-size ids,
8000 by default) trained on WikiText-2's train split, each split one stream (`--concat`: every
line followed by </s>).

    prepare --out DIR [--model M.json] [--vocab-size V] [--ls2c BIN] [--gpu-train BIN]
            [--gpu-step BIN] [--data-dir D]                           (compiler machine, no torch)
        DIR/model.json (the description), DIR/eval.json (the same with every dropout 0),
        DIR/wt2.model and DIR/train.tok (`ls2c tokenize D/train.txt.gz --train bpe --vocab-size
        V --concat --max-seq-len L+1`; where sentencepiece refuses V as too high for the text,
        the largest it accepts, the refusal recorded in prepare.json), DIR/valid.tok
        (D/valid.txt with that model), DIR/train.ls2b and DIR/eval.ls2b (`ls2c compile
        --arch=sm_90`; a llama's eval.ls2b is `--program=eval`, the @forward with logits that
        ls2c-gpu-train asks of every architecture but "decoder"), the MLIR-free
        DIR/ls2c-gpu-train and DIR/lib/ (libfmt, libsentencepiece: the GPU machine lacks them),
        and DIR/prepare.json (token counts, sha256 of the data files); about 10 MiB for the GPT.
        A llama also gets DIR/hf/config.json (transformers' LlamaConfig, `ls2c convert --list
        DIR/model.json --hf-config DIR/hf/config.json`) and DIR/hf/state_dict.txt (that
        command's listing: LlamaForCausalLM's parameter names and shapes), and, where
        ls2c-gpu-step is built, DIR/ls2c-gpu-step and DIR/init-batch.safetensors (the first B
        train windows), with which `run` writes ls2c's initial parameters for PyTorch. D
        defaults to <repo>/../shared/data/wikitext-2 (the data are not bundled with the
        repository).
    run --dir DIR [--steps 2000] [--eval-interval 500] [--eval-batches 0] [--seed 1337]
        [--compile] [--torch-init auto|ls2c|own] [--skip-ls2c] [--skip-torch] [--json F]
        [--logs L]                                                            (GPU machine)
        ls2c: `DIR/ls2c-gpu-train DIR/train.ls2b --eval DIR/eval.ls2b --data DIR/train.tok
            --valid-data DIR/valid.tok --steps N --eval-interval K --seed S --metrics
            L/ls2c-metrics.jsonl` (and `--eval-batches E` when E > 0): parameters initialized
            from the description with seed S, random windows of L+1 ids (LMBatcher,
            std::mt19937_64 seeded with S), dropout seeded with S; its `step K: validation loss
            X` lines and its `final:` line are parsed.
        PyTorch (this file's `torch` mode in a child process, --python), eager or, with
            --compile, torch.compile (default mode) of the model, fp32 parameters under bf16
            (or fp16) autocast, fused AdamW on CUDA with the description's lr, betas, eps,
            weight decay, clipping and schedule (bench/torch_train.TrainStep's conventions):
          decoder: bench/torch_models.Model (its own initialization, init_parameters with seed
            S) and bench/torch_train.TrainStep; dropout as the description says (PyTorch's
            masks, torch.manual_seed(S)).
          llama: Hugging Face transformers' LlamaForCausalLM built from DIR/hf/config.json with
            attn_implementation="sdpa" (use_cache off, position ids 0..L-1 per window); the
            loss is the cross entropy of its logits (in fp32) against the window's labels, the
            mean over tokens; weight decay on every weight but the RMSNorm weights (ls2c's
            layout). --torch-init ls2c (the default where DIR/ls2c-gpu-step exists, not with
            --tiny) starts from ls2c's own initial parameters of seed S, the same bits as
            ls2c-gpu-train's: `DIR/ls2c-gpu-step DIR/train.ls2b --init-seed S --batch
            DIR/init-batch.safetensors --save-params L/ls2c-init-seed<S>.safetensors` (one
            step on the GPU, kept for the next call); own: transformers' initialization
            (normal(0, initializer_range 0.02), RMSNorm weights 1) after
            torch.manual_seed(S), the same distributions. A failed ls2c-gpu-step falls back to
            own with a WARNING.
            Training windows are drawn the way LMBatcher draws them -- each of the B windows of
            a step starts at a uniformly random index in [0, N - L - 1] of the train stream, the
            first L ids the inputs and the last L the labels -- but from numpy's generator
            (default_rng(S)), so the batches are not ls2c's.
        Validation, both: every window of L+1 ids that starts at a multiple of L of the valid
            stream (windows = (N - 1) // L: inputs its first L ids, labels its last L, each
            next-token prediction counted once), in batches of B windows (with --eval-batches
            E > 0, the first E batches only: a llama's ls2c-gpu-train scores the accuracy of
            every validation batch from its logits on the host, seconds per batch at a
            32000-id vocabulary), the mean loss over all their tokens, without dropout (ls2c:
            the eval bundle on the master weights cast to bf16; PyTorch: the eager module in
            eval mode under autocast), at step 0, every K steps and after the last. Perplexity
            = exp(mean loss), per BPE token (not comparable with WikiText-2's word-level
            perplexities).
        Train time, both: the wall clock of the train steps only, evaluation and start-up
            excluded (ls2c: each step synchronized, as it reads the loss back; PyTorch: the
            device synchronized before and after each run of steps between evaluations, so its
            first step, torch.compile's compilation included, counts); tokens/s = B x L x
            steps / train seconds, and after the first min(10, steps / 10) warm-up steps.
        Prints a table last: system, final validation loss, perplexity, train seconds, ms/step,
        tokens/s (all steps, and after the warm-up), the first step's seconds (ls2c: its `step
        1/N` line; torch.compile: the compilation), the whole process's seconds, then the
        validation curves. --device cpu with the hidden --tiny (2 layers of 64, 4 x 32 tokens,
        the first 64 validation windows; a llama's config.json resized to match, own
        initialization) smoke-tests the PyTorch side without a GPU. --json writes the runs
        (merged with an earlier file's runs of the other systems when steps, interval, seed,
        model and validation windows are the same, so that ls2c, eager and --compile may run
        in separate calls). Each run has a timeout (--ls2c-timeout, --torch-timeout); a failed
        run prints one FAILED line, the next goes on. Exit status 0; 1 if a run failed; 2 on
        bad input (one line on stderr).
    show FILE.tok      validates a token file (magic, version, sizes, offsets, ids, FNV-1a
                       checksum: include/ls2c/Data/TokenFile.h) and prints its header.

Token files are read with a small numpy reader of the LS2CTOK format (read_token_file); the
train and valid files must come from one tokenizer (same vocab_size and fingerprint), and the
model's vocab must hold the tokenizer's ids (vocab >= vocab_size), as ls2c-gpu-train checks.
"""
import argparse
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_cli import Parser, fail, run_mode  # noqa: E402 (after the path)

PROG = "lm_side_by_side.py"
MODEL = os.path.join(HERE, "models", "gpt-wikitext2.json")
DEFAULT_DATA = os.path.join(ROOT, "..", "shared", "data", "wikitext-2")
VOCAB = 8000
DROPOUTS = ("hidden_dropout", "attention_dropout", "activation_dropout")
ARCHITECTURES = ("decoder", "llama")  # the language models this bench trains
TITLES = {"decoder": "GPT", "llama": "Llama"}
# sentencepiece's refusal of a vocabulary larger than the text allows (trainer_interface.cc).
VOCAB_TOO_HIGH_RE = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")
MiB = float(1 << 20)


# ---------------------------------------------------------------------------- token files

class TokenFileError(ValueError):
    pass


def fnv1a64(data, h=0xCBF29CE484222325):
    """FNV-1a 64 of `data` (bytes), from `h` (ls2c::fnv1a64)."""
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_token_file(path, checksum=True):
    """A token file of `ls2c tokenize` (include/ls2c/Data/TokenFile.h), validated as ls2c's
    reader validates it: magic, version 1, token_bytes 2 or 4 as vocab_size needs, flags, the
    exact file size, the special ids, the reserved field, the offsets, every id < vocab_size and
    (checksum=True) the FNV-1a 64 checksum. Returns a dict of the header fields and "tokens"
    (numpy uint16/uint32, file order) and "offsets" (uint64). Raises TokenFileError naming the
    file and the rule."""
    import numpy as np

    def bad(rule):
        raise TokenFileError(f"{path}: {rule}")

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TokenFileError(f"{path}: cannot read ({e.strerror})")
    if len(data) < 80:
        bad(f"{len(data)} bytes, shorter than the 80-byte header")
    if data[:8] != b"LS2CTOK\0":
        bad("not a token file (no LS2CTOK magic)")
    h = np.frombuffer(data, dtype="<u4", count=20)
    version, token_bytes, vocab, flags = (int(x) for x in h[2:6])
    nseq, ntok = (int(x) for x in np.frombuffer(data, dtype="<u8", count=2, offset=24))
    special = [int(x) for x in h[10:14]]
    fingerprint, stored, reserved = (int(x) for x in np.frombuffer(data, dtype="<u8", count=3, offset=56))
    if version != 1:
        bad(f"version {version}, expected 1")
    if vocab < 1:
        bad("vocab_size 0")
    if token_bytes != (2 if vocab <= 65536 else 4):
        bad(f"token_bytes {token_bytes} for vocab_size {vocab} (expected {2 if vocab <= 65536 else 4})")
    if flags & ~1:
        bad(f"flags 0x{flags:x} has unknown bits")
    if reserved != 0:
        bad("reserved header field is not zero")
    for name, v in zip(("bos_id", "eos_id", "unk_id", "pad_id"), special):
        if v != 0xFFFFFFFF and v >= vocab:
            bad(f"{name} {v} >= vocab_size {vocab}")
    size = 80 + 8 * (nseq + 1) + token_bytes * ntok
    if len(data) != size:
        bad(f"{len(data)} bytes, but its header ({nseq} sequences, {ntok} tokens of {token_bytes} bytes) "
            f"says {size}")
    if checksum and fnv1a64(memoryview(data)[72:], fnv1a64(memoryview(data)[:64])) != stored:
        bad(f"checksum mismatch (stored 0x{stored:016x}): the file is corrupted")
    offsets = np.frombuffer(data, dtype="<u8", count=nseq + 1, offset=80)
    if offsets[0] != 0 or offsets[-1] != ntok or (nseq and (np.diff(offsets.astype(np.int64)) < 0).any()):
        bad("sequence offsets do not run from 0 to num_tokens without decreasing")
    tokens = np.frombuffer(data, dtype="<u2" if token_bytes == 2 else "<u4", count=ntok,
                           offset=80 + 8 * (nseq + 1))
    if ntok and int(tokens.max()) >= vocab:
        i = int(np.argmax(tokens >= vocab))
        bad(f"token {i} is {int(tokens[i])}, not below vocab_size {vocab}")
    names = ("bos", "eos", "unk", "pad")
    return dict(path=path, version=version, token_bytes=token_bytes, vocab_size=vocab,
                concatenated=bool(flags & 1), num_sequences=nseq, num_tokens=ntok,
                special={n: (None if v == 0xFFFFFFFF else v) for n, v in zip(names, special)},
                fingerprint=fingerprint, checksum=stored, offsets=offsets, tokens=tokens)


def read_corpus(train_path, valid_path, model_vocab, min_tokens, checksum=True):
    """Both token files, checked as ls2c's loadTokenCorpus checks them (one tokenizer, at least
    `min_tokens` ids each) and against the model's vocab. Raises TokenFileError."""
    train, valid = read_token_file(train_path, checksum), read_token_file(valid_path, checksum)
    if (train["vocab_size"], train["fingerprint"]) != (valid["vocab_size"], valid["fingerprint"]):
        raise TokenFileError(f"{valid_path}: not of {train_path}'s tokenizer (vocab_size "
                             f"{valid['vocab_size']} against {train['vocab_size']}, or another fingerprint)")
    for t in (train, valid):
        if t["num_tokens"] < min_tokens:
            raise TokenFileError(f"{t['path']}: {t['num_tokens']} tokens, fewer than {min_tokens} "
                                 "(max_seq_len + 1)")
    if train["vocab_size"] > model_vocab:
        raise TokenFileError(f"{train_path}: a vocabulary of {train['vocab_size']} ids exceeds the model's "
                             f"vocab {model_vocab}")
    return train, valid


def show(args):
    try:
        t = read_token_file(args.file)
    except TokenFileError as e:
        fail(str(e))
    sp = ", ".join(f"{n} {'none' if v is None else v}" for n, v in t["special"].items())
    print(f"{t['path']}: token file version {t['version']}, checksum ok")
    print(f"  vocab_size {t['vocab_size']}, uint{8 * t['token_bytes']} ids")
    print(f"  {t['num_sequences']} sequences, {t['num_tokens']} tokens"
          f"{' (concatenated streams)' if t['concatenated'] else ''}")
    print(f"  {sp}")
    print(f"  tokenizer fingerprint {t['fingerprint']:016x}")
    if t["num_tokens"]:
        print(f"  ids: first {[int(x) for x in t['tokens'][:8]]}, max {int(t['tokens'].max())}")
    return 0


def write_safetensors(path, arrays):
    """{name: numpy array} as a safetensors file (int32/int64/float32 arrays), without the
    safetensors package: an 8-byte little-endian header length, the JSON header, the data."""
    import numpy as np
    kinds = {np.dtype("<i4"): "I32", np.dtype("<i8"): "I64", np.dtype("<f4"): "F32"}
    header, blobs, offset = {}, [], 0
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        if a.dtype not in kinds:
            raise ValueError(f"{name}: dtype {a.dtype} is not int32, int64 or float32")
        blob = a.tobytes()
        header[name] = {"dtype": kinds[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data 8-byte aligned, as the safetensors package writes them
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """{name: numpy array} of a safetensors file of F32/F64/I32/I64 tensors (what ls2c writes),
    without the safetensors package; raises ValueError naming the file."""
    import numpy as np
    kinds = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8 or 8 + int.from_bytes(data[:8], "little") > len(data):
        raise ValueError(f"{path}: not a safetensors file")
    n = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError:
        raise ValueError(f"{path}: not a safetensors file (its header is not JSON)") from None
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t.get("dtype") not in kinds:
            raise ValueError(f"{path}: {name}: dtype {t.get('dtype')} (expected F32, F64, I32 or I64)")
        a, b = t["data_offsets"]
        count = int(np.prod(t["shape"], dtype=np.int64))
        if b - a != count * np.dtype(kinds[t["dtype"]]).itemsize or 8 + n + b > len(data):
            raise ValueError(f"{path}: {name}: its data offsets do not fit its shape or the file")
        out[name] = np.frombuffer(data, dtype=kinds[t["dtype"]], count=count, offset=8 + n + a).reshape(t["shape"])
    return out


def init_batch(tokens, seq_len, windows):
    """ls2c's @accumulate_gradients inputs for the first `windows` windows of L+1 ids of a
    token stream (as LMBatcher packs them: each window one sequence of L tokens, positions
    0..L-1, labels the next ids): the batch ls2c-gpu-step needs to write the initial
    parameters (its one step's numbers are not used)."""
    import numpy as np
    L = seq_len
    w = np.stack([np.asarray(tokens[i * L:i * L + L + 1], dtype=np.int64) for i in range(windows)])
    return {"input_ids": w[:, :-1].reshape(-1).astype(np.int32), "labels": w[:, 1:].reshape(-1).astype(np.int32),
            "position_ids": np.tile(np.arange(L, dtype=np.int32), windows),
            "cu_seqlens": (np.arange(windows + 1) * L).astype(np.int32)}


def eval_windows(num_tokens, seq_len):
    """Validation windows of LMBatcher::sequentialBatch: (N - 1) // L windows, window w the ids
    [w L, w L + L]."""
    return (num_tokens - 1) // seq_len


# ---------------------------------------------------------------------------- prepare

def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_call(cmd, what):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise RuntimeError(f"{what}: `{' '.join(cmd)}` exited {p.returncode}: {msg[-1] if msg else ''}")
    out = (p.stdout + p.stderr).strip()
    print(f"{what} ({time.time() - t0:.1f} s): {out.splitlines()[-1] if out else 'done'}", flush=True)
    return p.stdout


def tokenize_train(ls2c, train_txt, out_tok, model_out, vocab, seq_len):
    """`ls2c tokenize --train bpe` of the train split; where sentencepiece refuses `vocab` as
    too high for the text (`Vocabulary size too high (V). Please set it to a value <= M`), once
    more with M. Returns (the vocabulary asked of the tokenizer, the refusal or None)."""
    def cmd(v):
        return [ls2c, "tokenize", train_txt, "-o", out_tok, "--train", "bpe", "--vocab-size", str(v), "--concat",
                "--max-seq-len", str(seq_len + 1), "--model-out", model_out]
    try:
        check_call(cmd(vocab), "tokenize train")
        return vocab, None
    except RuntimeError as e:
        m = VOCAB_TOO_HIGH_RE.search(str(e))
        if not m or not 1 <= int(m.group(2)) < vocab:
            raise
        refusal = m.group(0)
        fallback = int(m.group(2))
        print(f"tokenize train: --vocab-size {vocab} refused ({refusal}): {fallback} instead", flush=True)
        check_call(cmd(fallback), "tokenize train")
        return fallback, refusal


def copy_tool(src, dest_dir, name):
    """The MLIR-free tool `src` as DEST/name and, into DEST/lib, libfmt and libsentencepiece
    where it links them (the non-CUDA, non-base libraries the GPU machine lacks). Returns the
    names of the libraries copied."""
    dest = os.path.join(dest_dir, name)
    shutil.copy2(src, dest)
    libs = []
    ldd = shutil.which("ldd")
    if ldd:
        for line in subprocess.run([ldd, dest], capture_output=True, text=True).stdout.splitlines():
            m = re.match(r"\s*(libfmt\S*|libsentencepiece\S*) => (\S+)", line)
            if m and os.path.exists(m.group(2)):
                os.makedirs(os.path.join(dest_dir, "lib"), exist_ok=True)
                shutil.copy(m.group(2), os.path.join(dest_dir, "lib", m.group(1)))  # follows the link
                libs.append(m.group(1))
    return libs


def prepare(args):
    if not executable(args.ls2c):
        fail(f"--ls2c {args.ls2c}: no such executable (build ls2c, or name it)")
    if not executable(args.gpu_train):
        fail(f"--gpu-train {args.gpu_train}: no such executable (build ls2c-gpu-train, or name it)")
    if not os.path.isfile(args.model):
        fail(f"--model {args.model}: no such file")
    d = args.data_dir
    train_txt = next((os.path.join(d, f) for f in ("train.txt.gz", "train.txt") if os.path.isfile(os.path.join(d, f))),
                     None)
    valid_txt = os.path.join(d, "valid.txt")
    if not os.path.isdir(d):
        fail(f"--data-dir {d}: no such folder (WikiText-2: train.txt.gz and valid.txt)")
    if not train_txt or not os.path.isfile(valid_txt):
        fail(f"--data-dir {d}: needs train.txt.gz (or train.txt) and valid.txt")
    try:
        desc = json.load(open(args.model))
    except (OSError, ValueError) as e:
        fail(f"--model {args.model}: {e}")
    # What the run needs, before any work: ls2c's own check of the whole
    # description first, then a language model whose vocabulary holds the tokenizer's.
    r = subprocess.run([args.ls2c, "check", args.model], capture_output=True, text=True)
    if r.returncode != 0:
        fail((r.stderr.strip().splitlines() or [f"ls2c check exited {r.returncode}"])[-1])
    arch = desc.get("architecture")
    if arch not in ARCHITECTURES:
        fail(f"--model {args.model}: architecture {arch!r}: a language model "
             "on WikiText-2 needs a decoder or a llama")
    if args.vocab_size < 1 or args.vocab_size > desc.get("vocab", 0):
        fail(f"--vocab-size {args.vocab_size}: must be in [1, the model's vocab "
             f"{desc.get('vocab')}]")
    llama = arch == "llama"
    gpu_step = args.gpu_step if llama and args.gpu_step and executable(args.gpu_step) else None
    out = args.out
    os.makedirs(out, exist_ok=True)
    for f in ("model.json", "eval.json", "wt2.model", "train.tok", "valid.tok", "train.ls2b", "eval.ls2b",
              "ls2c-gpu-train", "ls2c-gpu-step", "init-batch.safetensors", "prepare.json"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    shutil.rmtree(os.path.join(out, "lib"), ignore_errors=True)
    shutil.rmtree(os.path.join(out, "hf"), ignore_errors=True)
    P = lambda f: os.path.join(out, f)  # noqa: E731
    L = desc["max_seq_len"]
    B = desc["max_batch_tokens"] // L
    json.dump(desc, open(P("model.json"), "w"), indent=1)
    ev = dict(desc, **{k: 0.0 for k in DROPOUTS})
    json.dump(ev, open(P("eval.json"), "w"), indent=1)
    ls2c = args.ls2c
    check_call([ls2c, "check", P("model.json")], "check")
    try:
        vocab_asked, refusal = tokenize_train(ls2c, train_txt, P("train.tok"), P("wt2.model"), args.vocab_size, L)
        check_call([ls2c, "tokenize", valid_txt, "-o", P("valid.tok"), "--model", P("wt2.model"), "--concat",
                    "--max-seq-len", str(L + 1)], "tokenize valid")
        train, valid = read_corpus(P("train.tok"), P("valid.tok"), desc["vocab"], L + 1)
        if llama:
            # transformers' LlamaConfig of the description, and LlamaForCausalLM's names and
            # shapes (the torch side checks its model against them).
            os.makedirs(P("hf"))
            listing = check_call([ls2c, "convert", "--list", P("model.json"), "--hf-config",
                                  P(os.path.join("hf", "config.json"))], "hf config")
            with open(P(os.path.join("hf", "state_dict.txt")), "w") as f:
                f.write(listing)
    except (RuntimeError, TokenFileError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    seconds = {}
    # The GPT's evaluation bundle is a train bundle of eval.json (ls2c-gpu-train takes that of
    # a decoder); every other architecture's must be --program=eval (@forward with the logits).
    for name, model, extra in (("train", "model.json", []),
                               ("eval", "eval.json", ["--program=eval"] if llama else [])):
        t0 = time.time()
        try:
            check_call([ls2c, "compile", P(model), "--arch=" + args.arch] + extra + ["-o", P(name + ".ls2b")],
                       f"compile {name}.ls2b")
        except RuntimeError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
        seconds[name] = round(time.time() - t0, 2)
    libs = copy_tool(args.gpu_train, out, "ls2c-gpu-train")
    if gpu_step:
        libs += [x for x in copy_tool(gpu_step, out, "ls2c-gpu-step") if x not in libs]
        write_safetensors(P("init-batch.safetensors"),
                          init_batch(train["tokens"], L, min(B, eval_windows(train["num_tokens"], L))))
    elif llama:
        print(f"no ls2c-gpu-step ({args.gpu_step}): PyTorch will start from its own initialization", flush=True)
    info = {"model": os.path.relpath(args.model, ROOT) if args.model.startswith(ROOT) else args.model,
            "architecture": arch, "data_dir": os.path.abspath(d), "vocab_size": train["vocab_size"],
            "tokenizer_fingerprint": f"{train['fingerprint']:016x}",
            "train_tokens": train["num_tokens"], "valid_tokens": valid["num_tokens"],
            "valid_windows": eval_windows(valid["num_tokens"], L), "batch": [B, L],
            "sha256": {os.path.basename(train_txt): sha256(train_txt), "valid.txt": sha256(valid_txt)},
            "bundle_compile_seconds": seconds, "libs": libs, "arch": args.arch,
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    if args.vocab_size != vocab_asked:
        info.update(vocab_size_requested=args.vocab_size, vocab_size_refused=refusal)
    if llama:
        info.update(hf_config="hf/config.json", ls2c_init=bool(gpu_step))
    json.dump(info, open(P("prepare.json"), "w"), indent=1)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print(f"{out}: {train['num_tokens']} train and {valid['num_tokens']} valid tokens (vocab "
          f"{train['vocab_size']}{f', {args.vocab_size} refused' if args.vocab_size != vocab_asked else ''}; "
          f"{info['valid_windows']} validation windows of {L + 1}; batch {B} x {L}); "
          f"{total / MiB:.1f} MiB{'; lib: ' + ', '.join(libs) if libs else ''}")
    return 0


# ---------------------------------------------------------------------------- parsing

NUM = r"([-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf|-nan|-inf))"
VALID_RE = re.compile(r"^step (\d+): validation loss " + NUM)
TOKENS_RE = re.compile(r"(\d+) training and (\d+) validation tokens, vocab (\d+)")
FINAL_RE = re.compile(r"^final: (\d+) steps, validation loss " + NUM)
FIELDS = {  # the final line's other fields; each optional
    "perplexity": re.compile(r"perplexity " + NUM),
    "train_s": re.compile(r"train " + NUM + r" s\b"),
    "tokens_per_s": re.compile(NUM + r" train tokens/s"),
    "steady_tokens_per_s": re.compile(r"\(" + NUM + r" after \d+ warm-up steps\)"),
    "warmup_steps": re.compile(r"after (\d+) warm-up steps"),
    "ms_per_step": re.compile(NUM + r" ms/step"),
    "total_s": re.compile(r"total " + NUM + r" s\b"),
}
TORCH_RE = re.compile(r"^torch: (.*)$")
FIRST_RE = re.compile(r"^step 1/\d+: .*, ([\d.]+) ms/step")


def parse_train_output(lines):
    """Figures of ls2c-gpu-train's stdout (the torch mode prints the same lines):
    `step K: validation loss X (S s)` per evaluation, `... N training and M validation tokens,
    vocab V; ...` and `final: N steps, validation loss X (perplexity P), train S s, T train
    tokens/s (U after W warm-up steps), M ms/step, total W s` (the fields after the loss are
    each optional; perplexity defaults to exp(loss)); the first step's time from its `step 1/N:
    ... T ms/step` line; the torch mode adds `torch: {json}` (first_step_s among its fields)."""
    r = {"curve": [], "final": None}
    for line in lines:
        if m := VALID_RE.match(line):
            r["curve"].append([int(m.group(1)), float(m.group(2))])
        elif m := FINAL_RE.match(line):
            f = {"steps": int(m.group(1)), "valid_loss": float(m.group(2))}
            for k, rx in FIELDS.items():
                if mm := rx.search(line):
                    f[k] = int(mm.group(1)) if k == "warmup_steps" else float(mm.group(1))
            if "perplexity" not in f:
                f["perplexity"] = math.exp(f["valid_loss"]) if f["valid_loss"] < 700 else float("inf")
                f["perplexity_from_loss"] = True
            r["final"] = f
        elif m := TORCH_RE.match(line):
            try:
                r["torch"] = json.loads(m.group(1))
                r["first_step_s"] = r["torch"].get("first_step_s")
            except ValueError:
                pass
        elif m := FIRST_RE.match(line):
            r["first_step_s"] = float(m.group(1)) / 1e3
        elif m := TOKENS_RE.search(line):
            r["train_tokens"], r["valid_tokens"], r["vocab"] = (int(x) for x in m.groups())
    return r


# ---------------------------------------------------------------------------- processes

def run_logged(cmd, log_path, timeout, env=None):
    """Runs `cmd` in its own process group, its stdout and stderr printed (prefixed) and written
    to log_path as they come; past `timeout` seconds the group is sent SIGTERM, then SIGKILL.
    Returns (exit status or None on timeout, lines, seconds)."""
    lines = []
    t0 = time.time()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                 start_new_session=True, errors="replace")
        except OSError as e:
            log.write(f"cannot start: {e}\n")
            return 127, [f"cannot start {cmd[0]}: {e.strerror}"], 0.0

        def pump():
            for line in p.stdout:
                line = line.rstrip("\n")
                lines.append(line)
                log.write(line + "\n")
                log.flush()
                print("  " + line, flush=True)

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    pass
        t.join(timeout=10)
    return rc, lines, time.time() - t0


def train_env(d):
    """LD_LIBRARY_PATH with the CUDA libraries and DIR/lib in front."""
    env = dict(os.environ)
    extra = [p for p in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib") if os.path.isdir(p)]
    extra.append(os.path.abspath(os.path.join(d, "lib")))
    env["LD_LIBRARY_PATH"] = ":".join(extra + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env


def finish(name, rc, lines, wall, timeout, expect):
    """One run's record from its exit status and output; prints its one summary line."""
    r = parse_train_output(lines)
    r["wall_s"] = round(wall, 2)
    if rc is None:
        r["error"] = f"timed out after {timeout:g} s"
    elif rc != 0:
        tail = [x for x in lines if x.strip()][-1:] or [""]
        r["error"] = f"exited {rc}: {tail[0]}"[:400]
    elif r["final"] is None:
        r["error"] = "no `final:` line in its output"
    elif r["final"]["steps"] != expect["steps"]:
        r["error"] = f"ran {r['final']['steps']} steps, {expect['steps']} asked"
    if "error" in r:
        print(f"{name}: FAILED: {r['error']}", flush=True)
        return r
    notes = []
    if "valid_tokens" in r and r["valid_tokens"] != expect["valid_tokens"]:
        notes.append(f"it read {r['valid_tokens']} validation tokens, the file holds {expect['valid_tokens']}")
    if "train_tokens" in r and r["train_tokens"] != expect["train_tokens"]:
        notes.append(f"it read {r['train_tokens']} training tokens, the file holds {expect['train_tokens']}")
    r["notes"] = notes
    f = r["final"]
    print(f"{name}: validation loss {f['valid_loss']:.4f}, perplexity {f['perplexity']:.2f}, train "
          f"{fmt(f.get('train_s'), '.1f')} s, {fmt(f.get('tokens_per_s'), ',.0f')} tokens/s"
          + "".join(f"; WARNING: {n}" for n in notes), flush=True)
    return r


def run_ls2c(args, expect, log_dir):
    d = args.dir
    cmd = [os.path.join(d, "ls2c-gpu-train"), os.path.join(d, "train.ls2b"), "--eval", os.path.join(d, "eval.ls2b"),
           "--data", os.path.join(d, "train.tok"), "--valid-data", os.path.join(d, "valid.tok"),
           "--steps", str(args.steps), "--eval-interval", str(args.eval_interval), "--seed", str(args.seed),
           "--metrics", os.path.join(log_dir, "ls2c-metrics.jsonl")]
    if args.eval_batches:
        cmd += ["--eval-batches", str(args.eval_batches)]
    print(f"\n== ls2c: {' '.join(cmd)}", flush=True)
    rc, lines, wall = run_logged(cmd, os.path.join(log_dir, "ls2c.log"), args.ls2c_timeout, train_env(d))
    r = finish("ls2c", rc, lines, wall, args.ls2c_timeout, expect)
    r["command"] = " ".join(cmd)
    return r


def run_torch(args, expect, log_dir, compiled, init_file=None):
    name = "torch compile" if compiled else "torch eager"
    cmd = args.python.split() + [os.path.abspath(__file__), "torch", "--dir", args.dir, "--steps", str(args.steps),
                                 "--eval-interval", str(args.eval_interval), "--seed", str(args.seed),
                                 "--device", args.device] + (["--compile"] if compiled else []) + \
        (["--tiny"] if args.tiny else []) + \
        (["--eval-batches", str(args.eval_batches)] if args.eval_batches else []) + \
        (["--init", init_file] if init_file else [])
    print(f"\n== {name}: {' '.join(cmd)}", flush=True)
    rc, lines, wall = run_logged(cmd, os.path.join(log_dir, name.replace(" ", "-") + ".log"), args.torch_timeout)
    r = finish(name, rc, lines, wall, args.torch_timeout, expect)
    r["command"] = " ".join(cmd)
    return r


# ---------------------------------------------------------------------------- run

def fmt(x, spec):
    """format(x, spec), or "-" when x is missing."""
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def print_table(runs, meta):
    arch = meta.get("architecture", "decoder")
    title = f"{TITLES.get(arch, arch)} {meta['model']}" if arch != "decoder" and meta.get("model") else TITLES.get(arch, arch)
    title += " on WikiText-2"
    print(f"\n{title} ({meta['steps']} steps of {meta['batch'][0]} x {meta['batch'][1]} tokens, "
          f"validation over {meta['valid_windows']} windows of {meta['batch'][1] + 1} ids, seed {meta['seed']}; "
          "perplexity per BPE token; train s = all train steps, the first included, evaluation excluded; "
          "whole run s = the process, start-up and evaluations included):")
    print("| system | final valid loss | perplexity | train s | ms/step | tokens/s | tokens/s after warm-up "
          "| first step s | whole run s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in runs.items():
        if "error" in r:
            print(f"| {name} | failed: {r['error'][:80]} | | | | | | | |")
            continue
        f = r["final"]
        ms = f.get("ms_per_step") or (f["train_s"] * 1e3 / f["steps"] if f.get("train_s") else None)
        print(f"| {name} | {f['valid_loss']:.4f} | {f['perplexity']:.2f} | {fmt(f.get('train_s'), '.1f')} | "
              f"{fmt(ms, '.2f')} | {fmt(f.get('tokens_per_s'), ',.0f')} | {fmt(f.get('steady_tokens_per_s'), ',.0f')} "
              f"| {fmt(r.get('first_step_s'), '.2f')} | {fmt(r.get('wall_s'), '.1f')} |")
    ok = {n: dict(r["curve"]) for n, r in runs.items() if "error" not in r}
    if ok:
        steps = sorted({s for c in ok.values() for s in c})
        print("\nvalidation loss by step:")
        print("| step | " + " | ".join(ok) + " |")
        print("| ---: |" + " ---: |" * len(ok))
        for s in steps:
            print(f"| {s} | " + " | ".join(fmt(c.get(s), ".4f") for c in ok.values()) + " |")
    base = runs.get("ls2c", {}).get("final")
    for name, r in runs.items():
        if name != "ls2c" and base and "error" not in r and r["final"].get("train_s") and base.get("train_s"):
            steady = ""
            if r["final"].get("steady_tokens_per_s") and base.get("steady_tokens_per_s"):
                steady = (f"; tokens/s after warm-up, ls2c / {name} = "
                          f"{base['steady_tokens_per_s'] / r['final']['steady_tokens_per_s']:.2f}")
            print(f"{name} train s / ls2c train s = {r['final']['train_s'] / base['train_s']:.2f}; "
                  f"perplexity {r['final']['perplexity']:.2f} against ls2c's {base['perplexity']:.2f}{steady}")
    for name, r in runs.items():
        if r.get("init") == "ls2c" and "error" not in r:
            print(f"{name} started from ls2c's initial parameters (seed {meta['seed']}): its step-0 validation "
                  "loss should equal ls2c's up to rounding")


def torch_init_choice(args, arch):
    """(how the PyTorch model starts: "ls2c" or "own", why) for --torch-init: auto is ls2c's
    parameters for a llama whose folder has ls2c-gpu-step (not --tiny: another shape), else the
    model's own initialization."""
    has_step = executable(os.path.join(args.dir, "ls2c-gpu-step")) and \
        os.path.isfile(os.path.join(args.dir, "init-batch.safetensors"))
    if args.torch_init == "own":
        return "own", "--torch-init own"
    if args.torch_init == "ls2c":
        if arch != "llama":
            fail(f"--torch-init ls2c: for llama models only ({args.dir}/model.json is a {arch})")
        if args.tiny:
            fail("--torch-init ls2c: not with --tiny (ls2c's parameters are of the full model)")
        if not has_step:
            fail(f"--torch-init ls2c: {args.dir} has no ls2c-gpu-step and init-batch.safetensors "
                 "(prepare it with ls2c-gpu-step built)")
        return "ls2c", "--torch-init ls2c"
    if arch == "llama" and not args.tiny and has_step:
        return "ls2c", "auto: a llama with ls2c-gpu-step"
    return "own", "auto"


def ls2c_initial_parameters(args, log_dir):
    """L/ls2c-init-seed<S>.safetensors, ls2c's initial parameters of seed S (those
    ls2c-gpu-train starts from: initializeWorkspace of the bundle's description), written by
    `DIR/ls2c-gpu-step DIR/train.ls2b --init-seed S --batch DIR/init-batch.safetensors
    --save-params FILE` unless an earlier call left it. Returns (path or None, why not)."""
    d = args.dir
    path = os.path.join(log_dir, f"ls2c-init-seed{args.seed}.safetensors")
    if os.path.isfile(path):
        print(f"\n== ls2c's initial parameters: {path} (written earlier)", flush=True)
        return path, None
    tmp = path + ".part"
    cmd = [os.path.join(d, "ls2c-gpu-step"), os.path.join(d, "train.ls2b"), "--init-seed", str(args.seed),
           "--batch", os.path.join(d, "init-batch.safetensors"), "--save-params", tmp]
    print(f"\n== ls2c's initial parameters: {' '.join(cmd)}", flush=True)
    rc, lines, _ = run_logged(cmd, os.path.join(log_dir, "ls2c-init.log"), args.ls2c_timeout, train_env(d))
    if rc != 0 or not os.path.isfile(tmp):
        tail = [x for x in lines if x.strip()][-1:] or [""]
        why = "timed out" if rc is None else f"exited {rc}: {tail[0]}" if rc else "wrote no file"
        return None, f"ls2c-gpu-step {why}"[:300]
    os.replace(tmp, path)
    return path, None


def run(args):
    d = args.dir
    if not os.path.isdir(d):
        fail(f"--dir {d}: no such folder (run `{PROG} prepare --out DIR` and carry it)")
    need = ["model.json", "train.tok", "valid.tok"]
    if not args.skip_ls2c:
        need += ["train.ls2b", "eval.ls2b", "ls2c-gpu-train"]
    for f in need:
        if not os.path.isfile(os.path.join(d, f)):
            fail(f"{os.path.join(d, f)}: missing (run `{PROG} prepare --out {d}` and carry the folder)")
    if not args.skip_ls2c and not executable(os.path.join(d, "ls2c-gpu-train")):
        fail(f"{os.path.join(d, 'ls2c-gpu-train')}: not executable")
    if args.steps < 1:
        fail(f"--steps {args.steps}: must be >= 1")
    if args.eval_interval < 0:
        fail(f"--eval-interval {args.eval_interval}: must be >= 0 (0: only at the start and the end)")
    if args.eval_batches < 0:
        fail(f"--eval-batches {args.eval_batches}: must be >= 0 (0: every validation window)")
    if args.skip_ls2c and args.skip_torch:
        fail("--skip-ls2c and --skip-torch: nothing to run")
    try:
        desc = json.load(open(os.path.join(d, "model.json")))
        arch = desc.get("architecture", "decoder")
        if args.tiny:
            desc = tiny_description(desc, args.steps)
        L, vocab, B = desc["max_seq_len"], desc["vocab"], desc["max_batch_tokens"] // desc["max_seq_len"]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError, AttributeError) as e:
        fail(f"{os.path.join(d, 'model.json')}: not a decoder description ({type(e).__name__}: {e})")
    if arch not in ARCHITECTURES:
        fail(f"{os.path.join(d, 'model.json')}: architecture {arch!r}: a decoder or a llama is needed")
    if arch == "llama" and not args.skip_torch and not os.path.isfile(os.path.join(d, "hf", "config.json")):
        fail(f"{os.path.join(d, 'hf', 'config.json')}: missing (run `{PROG} prepare --out {d}` and carry the folder)")
    init, init_why = torch_init_choice(args, arch) if not args.skip_torch else (None, None)
    try:
        train, valid = read_corpus(os.path.join(d, "train.tok"), os.path.join(d, "valid.tok"), vocab, L + 1)
    except TokenFileError as e:
        fail(str(e))
    log_dir = args.logs or os.path.join(d, "out")
    os.makedirs(log_dir, exist_ok=True)
    expect = {"steps": args.steps, "train_tokens": train["num_tokens"], "valid_tokens": valid["num_tokens"]}
    nwin = eval_windows(valid["num_tokens"], L)
    meta = {"steps": args.steps, "eval_interval": args.eval_interval, "seed": args.seed, "batch": [B, L],
            "model": desc.get("name"), "architecture": arch, "vocab_size": train["vocab_size"],
            "train_tokens": train["num_tokens"], "valid_tokens": valid["num_tokens"],
            "valid_windows": min(nwin, args.eval_batches * B) if args.eval_batches else nwin,
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    if args.eval_batches:
        meta["eval_batches"] = args.eval_batches
    if args.tiny:  # PyTorch's smoke test (no ls2c run matches it)
        meta.update(tiny=True, valid_windows=min(meta["valid_windows"], 64))
    print(f"{d}: {train['num_tokens']} train and {valid['num_tokens']} valid tokens, vocab {train['vocab_size']} "
          f"(model {vocab}); {args.steps} steps of {B} x {L}, validation {'every ' + str(args.eval_interval) if args.eval_interval else 'at the start and the end'} "
          f"over {meta['valid_windows']} windows; seed {args.seed}", flush=True)
    earlier = {}  # runs of an earlier call of the same steps, interval, seed and data
    if args.json and os.path.exists(args.json):
        same = ("steps", "eval_interval", "seed", "batch", "valid_tokens", "valid_windows", "model", "tiny")
        try:
            old = json.load(open(args.json))
            if all(old.get("meta", {}).get(k) == meta.get(k) for k in same):
                earlier = old.get("runs", {})
            else:
                print(f"{args.json}: an earlier run of other steps, interval, seed or data: replaced")
        except (OSError, ValueError, AttributeError):
            print(f"{args.json}: unreadable: replaced")
    runs = {}

    def record(name, r):  # the JSON is rewritten after every run: a call cut short keeps the runs done
        runs[name] = r
        if args.json:
            json.dump({"meta": meta, "runs": {**{n: x for n, x in earlier.items() if n not in runs}, **runs}},
                      open(args.json, "w"), indent=1)

    if not args.skip_ls2c:
        record("ls2c", run_ls2c(args, expect, log_dir))
    if not args.skip_torch:
        init_file, warning = None, None
        if init == "ls2c":
            init_file, why = ls2c_initial_parameters(args, log_dir)
            if init_file is None:
                warning = f"{why}: PyTorch starts from its own initialization instead of ls2c's parameters"
                print(f"WARNING: {warning}", flush=True)
        r = run_torch(args, expect, log_dir, args.compile, init_file)
        r["init"] = "ls2c" if init_file else "own"
        r["init_reason"] = init_why
        if warning:
            r.setdefault("notes", []).append(warning)
        record("torch compile" if args.compile else "torch eager", r)
    failed = [n for n, r in runs.items() if "error" in r]
    table = {**{n: x for n, x in earlier.items() if n not in runs}, **runs}
    print_table(dict(sorted(table.items(), key=lambda kv: ["ls2c", "torch eager", "torch compile"].index(kv[0])
                            if kv[0] in ("ls2c", "torch eager", "torch compile") else 9)), meta)
    if args.json:
        print(f"wrote {args.json}")
    if failed:
        print(f"{len(failed)} run(s) failed: {', '.join(failed)}")
        return 1
    return 0


# ---------------------------------------------------------------------------- PyTorch

def tiny_description(desc, steps):
    """A CPU smoke test's model: 2 layers of 64, 32 tokens, 4 windows a step (vocab kept); it
    validates on the first 64 windows only."""
    d = dict(desc, decoder_layers=2, hidden=64, heads=2, kv_heads=2, ffn=256, max_seq_len=32, max_batch_tokens=128)
    opt = dict(d.get("optimizer", {}))
    opt["schedule"] = dict(opt.get("schedule", {}), warmup_steps=max(1, steps // 10), total_steps=steps)
    d["optimizer"] = opt
    return d


# LlamaConfig fields that follow the description: hf/config.json's are checked against it, or,
# with --tiny, resized to the tiny description.
HF_FIELDS = {"vocab_size": "vocab", "hidden_size": "hidden", "intermediate_size": "ffn",
             "num_hidden_layers": "decoder_layers", "num_attention_heads": "heads",
             "num_key_value_heads": "kv_heads", "max_position_embeddings": "max_seq_len"}


def llama_hf_fields(cfg, desc, tiny):
    """The keyword arguments of transformers' LlamaConfig: DIR/hf/config.json (`ls2c convert
    --list --hf-config`) less architectures, model_type and the dtype (the parameters are
    fp32 here whatever it says); with tiny=True resized to the tiny description, else checked
    against the description (a config.json of another model raises ValueError)."""
    fields = {k: v for k, v in cfg.items()
              if k not in ("architectures", "model_type", "torch_dtype", "dtype", "transformers_version")}
    want = {k: desc.get(v, desc.get("heads") if v == "kv_heads" else None) for k, v in HF_FIELDS.items()}
    want["head_dim"] = desc["hidden"] // desc["heads"]
    if tiny:
        fields.update(want)
        return fields
    bad = [f"{k} {fields.get(k)} (model.json: {v})" for k, v in want.items() if fields.get(k, v) != v]
    if bad:
        raise ValueError(f"hf/config.json is not model.json's model: {', '.join(bad)}")
    return fields


def parse_state_dict_listing(text):
    """{(name, shape)} of `ls2c convert --list` lines (`name [d0, d1] rule [tied to X]`)."""
    out = set()
    for line in text.splitlines():
        m = re.match(r"(\S+) \[([\d, ]*)\]", line)
        if m:
            out.add((m.group(1), tuple(int(x) for x in m.group(2).split(",") if x.strip())))
    return out


def llama_weight_decay_groups(named):
    """ls2c's layout: weight decay on every weight but the RMSNorm weights (the only 1-D
    parameters of LlamaForCausalLM). Returns (decayed, not decayed) lists of parameters;
    raises ValueError on a 1-D parameter that is not a norm's weight."""
    odd = [n for n, p in named if p.dim() < 2 and not n.endswith("norm.weight")]
    if odd:
        raise ValueError(f"LlamaForCausalLM has 1-D parameters that are no RMSNorm's weight: {odd[:3]}")
    return [p for _, p in named if p.dim() >= 2], [p for _, p in named if p.dim() < 2]


def build_llama(args, desc, c, dev):
    """(module, optimizer parameter groups, facts) of the llama side: transformers'
    LlamaForCausalLM from DIR/hf/config.json with SDPA attention, fp32 parameters on `dev`,
    initialized from --init (ls2c's parameters by name) or by transformers after
    torch.manual_seed(S), wrapped in a module whose forward(batch) is the mean cross entropy
    of the logits against batch["labels"]."""
    import numpy as np
    import torch
    import transformers

    d = args.dir
    try:
        cfg = json.load(open(os.path.join(d, "hf", "config.json")))
        fields = llama_hf_fields(cfg, desc, args.tiny)
    except (OSError, ValueError, KeyError) as e:
        fail(f"{os.path.join(d, 'hf', 'config.json')}: {e}")
    Config = getattr(transformers, "LlamaConfig", None)
    Model = getattr(transformers, "LlamaForCausalLM", None)
    if Model is None:
        fail(f"transformers {transformers.__version__} has no LlamaForCausalLM")
    try:
        config = Config(**fields, attn_implementation="sdpa")
    except TypeError:  # a transformers whose configs do not take it
        config = Config(**fields)
    torch.manual_seed(args.seed)  # transformers' own initialization draws from torch's generator
    hf = Model(config)
    if getattr(hf.config, "_attn_implementation", None) != "sdpa" and hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("sdpa")
    attn = getattr(hf.config, "_attn_implementation", None)
    if attn != "sdpa":
        fail(f"transformers {transformers.__version__}: LlamaForCausalLM's attention is {attn!r}, not sdpa")
    hf = hf.to(device=dev, dtype=torch.float32).train()
    named = list(hf.named_parameters())  # tied weights once, under the name ls2c uses
    listing = os.path.join(d, "hf", "state_dict.txt")
    if not args.tiny and os.path.isfile(listing):
        expected = parse_state_dict_listing(open(listing).read())
        actual = {(n, tuple(p.shape)) for n, p in hf.named_parameters(remove_duplicate=False)}
        if expected != actual:
            fail(f"transformers {transformers.__version__}'s LlamaForCausalLM differs from {listing}: missing "
                 f"{sorted(expected - actual)[:3]}, extra {sorted(actual - expected)[:3]}")
    note = None
    if args.init:
        try:
            tensors = read_safetensors(args.init)
        except (OSError, ValueError) as e:
            fail(f"--init {args.init}: {e}")
        names = {n for n, _ in named}
        if names != set(tensors):
            fail(f"--init {args.init}: not LlamaForCausalLM's parameters: missing {sorted(names - set(tensors))[:3]}, "
                 f"extra {sorted(set(tensors) - names)[:3]}")
        with torch.no_grad():
            for n, p in named:
                if tuple(tensors[n].shape) != tuple(p.shape):
                    fail(f"--init {args.init}: {n} has shape {tuple(tensors[n].shape)}, the model {tuple(p.shape)}")
                p.copy_(torch.from_numpy(np.array(tensors[n], dtype=np.float32)))
        del tensors
        init = "ls2c"
    else:
        # transformers' _init_weights for Llama: every Linear and the embeddings normal(0,
        # initializer_range), RMSNorm weights 1. Checked, and applied here where this version
        # of transformers left something else (nn.Linear's default, an uninitialized tensor).
        r = float(fields.get("initializer_range", 0.02))
        emb = hf.get_input_embeddings().weight
        std = float(emb.detach().float().std())
        ones = all(bool((p.detach() == 1).all()) for _, p in named if p.dim() < 2)
        if not (abs(std - r) < 0.1 * r and ones):
            with torch.no_grad():
                for _, p in named:
                    if p.dim() >= 2:
                        p.normal_(0.0, r)
                    else:
                        p.fill_(1.0)
            note = (f"transformers left embeddings of std {std:.4g}{'' if ones else ' and norms not 1'}: "
                    f"initialized here as its _init_weights says (normal(0, {r}), norms 1)")
            print(f"note: {note}", flush=True)
        init = "own"
    decayed, plain = llama_weight_decay_groups(named)

    class LlamaLM(torch.nn.Module):
        """LlamaForCausalLM and the loss of the GPT path: the mean over tokens of the cross
        entropy (in fp32) of the logits against the labels, which are the next ids already."""

        def __init__(self):
            super().__init__()
            self.hf = hf

        def named_reference_parameters(self):
            return list(self.hf.named_parameters())

        def forward(self, b):
            logits = self.hf(input_ids=b["input_ids"], position_ids=b["position_ids"], use_cache=False).logits
            return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                     b["labels"].reshape(-1))

    facts = {"transformers": transformers.__version__, "model_class": type(hf).__name__,
             "attn_implementation": attn, "init": init, "init_note": note,
             "decayed_tensors": len(decayed), "undecayed_tensors": len(plain)}
    return LlamaLM().to(dev).train(), (decayed, plain), facts


def llama_trainer(model, c, fwd, groups, dev):
    """torch_train.TrainStep (autocast, scaler, clipping over every parameter) with the
    optimizer and schedule rebuilt over the llama's groups: TrainStep's own would decay the
    RMSNorm weights, whose names torch_models.weight_decayed does not know."""
    import torch
    from torch_train import TrainStep, lr_factor

    trainer = TrainStep(model, c, forward=fwd)
    opt = c["optimizer"]
    cls = torch.optim.AdamW if opt["type"] == "adamw" else torch.optim.Adam
    decayed, plain = groups
    trainer.opt = cls([{"params": decayed, "weight_decay": opt["weight_decay"]},
                       {"params": plain, "weight_decay": 0.0}],
                      lr=opt["lr"], betas=tuple(opt["betas"]), eps=opt["eps"],
                      **({"fused": True} if dev.type == "cuda" else {"foreach": False}))
    trainer.sched = torch.optim.lr_scheduler.LambdaLR(trainer.opt, lambda s: lr_factor(c, s))
    return trainer


def train_torch(args):
    """The PyTorch side of `run` (a child process): prints ls2c-gpu-train's lines."""
    import numpy as np
    import torch
    from descriptions import config

    t_start = time.time()
    d = args.dir
    desc = json.load(open(os.path.join(d, "model.json")))
    arch = desc.get("architecture", "decoder")
    if arch not in ARCHITECTURES:
        fail(f"{d}/model.json: architecture {arch!r}: a decoder or a llama is needed")
    llama = arch == "llama"
    if args.tiny:
        desc = tiny_description(desc, args.steps)
    if args.init and (not llama or args.tiny):
        fail("--init: ls2c's parameters load into a llama, without --tiny")
    # descriptions.config() knows no llama defaults; the optimizer's (and its float32
    # rounding) are those of every architecture, which a decoder's config gives.
    c = dict(config(dict(desc, architecture="decoder")), architecture=arch) if llama else config(desc)
    L = c["max_seq_len"]
    B = c["max_batch_tokens"] // L
    try:
        train, valid = read_corpus(os.path.join(d, "train.tok"), os.path.join(d, "valid.tok"), c["vocab"], L + 1)
    except TokenFileError as e:
        fail(str(e))
    dev = torch.device(args.device)
    facts = {}
    if llama:
        model, groups, facts = build_llama(args, desc, c, dev)
        fwd = torch.compile(model) if args.compile else model
        trainer = llama_trainer(model, c, fwd, groups, dev)
        what = (f"transformers {facts['transformers']} {facts['model_class']} ({facts['attn_implementation']}, "
                f"{'ls2c' if facts['init'] == 'ls2c' else 'its own'} initial parameters)")
    else:
        from torch_models import Model
        from torch_train import TrainStep
        torch.manual_seed(args.seed)  # dropout masks
        model = Model(c, seed=args.seed).to(dev).train()
        fwd = torch.compile(model) if args.compile else model
        trainer = TrainStep(model, c, forward=fwd)
        what = "bench/torch_models.Model"
    nparams = sum(p.numel() for p in model.parameters())
    print(f"{d}/model.json: model {c.get('name')} ({c['dtype']}), {nparams} parameters, PyTorch "
          f"{torch.__version__} {'torch.compile' if args.compile else 'eager'} on "
          f"{torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev.type}; {what}", flush=True)
    print(f"{d}/train.tok: {train['num_tokens']} training and {valid['num_tokens']} validation tokens, vocab "
          f"{train['vocab_size']}; batch {B} x {L} tokens", flush=True)

    train_ids = torch.from_numpy(train["tokens"].astype(np.int64)).to(dev)
    valid_ids = torch.from_numpy(valid["tokens"].astype(np.int64)).to(dev)
    span = torch.arange(L + 1, device=dev)
    rng = np.random.default_rng(args.seed)  # LMBatcher's draw: starts uniform in [0, N - L - 1]
    starts = torch.from_numpy(rng.integers(0, train["num_tokens"] - L - 1, size=(args.steps, B), endpoint=True)).to(dev)
    positions = torch.arange(L, device=dev, dtype=torch.int64).repeat(B)
    positions2d = positions.reshape(B, L)

    def batch_of(windows):
        n = windows.shape[0]
        if llama:  # [n, L] each: LlamaForCausalLM's batch of n windows, positions 0..L-1 in each
            return {"input_ids": windows[:, :-1].contiguous(), "labels": windows[:, 1:].contiguous(),
                    "position_ids": positions2d[:n]}
        return {"input_ids": windows[:, :-1].reshape(-1), "labels": windows[:, 1:].reshape(-1),
                "position_ids": positions[:n * L], "lengths": (L,) * n}

    nwin = eval_windows(valid["num_tokens"], L)
    if args.tiny:  # a smoke test: the first 64 windows
        nwin = min(nwin, 64)
    if args.eval_batches:  # the first E batches, as ls2c-gpu-train's --eval-batches
        nwin = min(nwin, args.eval_batches * B)
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(c["dtype"])

    def evaluate(step):
        t0 = time.time()
        model.eval()
        total = torch.zeros((), dtype=torch.float64, device=dev)
        count = 0
        with torch.no_grad(), torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
            for k in range(0, nwin, B):
                idx = torch.arange(k, min(k + B, nwin), device=dev)[:, None] * L + span
                b = batch_of(valid_ids[idx])
                n = b["input_ids"].numel()
                total += model(b).double() * n
                count += n
        loss = float(total) / count
        model.train()
        print(f"step {step}: validation loss {loss:.4f} ({time.time() - t0:.2f} s)", flush=True)
        return loss

    warmup = min(10, args.steps // 10)
    losses = torch.zeros(args.steps, device=dev)
    valid_loss = evaluate(0)
    # Segments of steps timed between synchronizations: to the warm-up's end, to each evaluation.
    marks = {args.steps, warmup} | (set(range(args.eval_interval, args.steps, args.eval_interval))
                                    if args.eval_interval else set())
    marks = sorted(m for m in marks if m > 0)
    train_s = steady_s = first_s = 0.0
    step = 0
    for end in marks:
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0, begin = time.time(), step
        while step < end:
            loss = trainer.step(batch_of(train_ids[starts[step][:, None] + span]))
            losses[step] = loss.detach()
            step += 1
            if step == 1:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                first_s = time.time() - t0
        if dev.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.time() - t0
        train_s += seconds
        if end > warmup:
            steady_s += seconds
        lr = trainer.opt.param_groups[0]["lr"]
        seg = losses[begin:end]
        print(f"step {end}/{args.steps}: loss {float(losses[end - 1]):.4f} (mean of steps {begin + 1}-{end} "
              f"{float(seg.mean()):.4f}), lr {lr:.3g}, {seconds / (end - begin) * 1e3:.1f} ms/step", flush=True)
        if (args.eval_interval and end % args.eval_interval == 0) or end == args.steps:
            valid_loss = evaluate(end)
    tokens = args.steps * B * L
    steady = (args.steps - warmup) * B * L / steady_s if steady_s > 0 else tokens / train_s
    extra = {"torch": torch.__version__, "compile": bool(args.compile), "device": str(dev),
             "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
             "first_step_s": round(first_s, 3), "parameters": nparams,
             "peak_gib": round(torch.cuda.max_memory_allocated(dev) / (1 << 30), 3) if dev.type == "cuda" else None,
             "train_loss_last": float(losses[-1]), **facts}
    print("torch: " + json.dumps(extra), flush=True)
    print(f"final: {args.steps} steps, validation loss {valid_loss:.4f} (perplexity {math.exp(valid_loss):.2f}), "
          f"train {train_s:.1f} s, {tokens / train_s:.0f} train tokens/s ({steady:.0f} after {warmup} warm-up steps), "
          f"{train_s / args.steps * 1e3:.1f} ms/step, total {time.time() - t_start:.1f} s", flush=True)
    return 0


# ---------------------------------------------------------------------------- main

def main():
    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True, parser_class=Parser)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--ls2c", default=os.path.join(ROOT, "build/tools/ls2c/ls2c"))
    p.add_argument("--gpu-train", default=os.path.join(ROOT, "build/tools/ls2c-gpu-train/ls2c-gpu-train"))
    p.add_argument("--gpu-step", default=os.path.join(ROOT, "build/tools/ls2c-gpu-step/ls2c-gpu-step"),
                   help="llama: carried to write ls2c's initial parameters for PyTorch (skipped if absent)")
    p.add_argument("--data-dir", default=os.path.normpath(DEFAULT_DATA))
    p.add_argument("--model", default=MODEL)
    p.add_argument("--vocab-size", type=int, default=VOCAB, help="the BPE tokenizer's ids (default 8000)")
    p.add_argument("--arch", default="sm_90")
    for name in ("run", "torch"):
        r = sub.add_parser(name)
        r.add_argument("--dir", required=True)
        r.add_argument("--steps", type=int, default=2000)
        r.add_argument("--eval-interval", type=int, default=500)
        r.add_argument("--seed", type=int, default=1337)
        r.add_argument("--eval-batches", type=int, default=0,
                       help="validate on the first E batches of B windows (default 0: every window)")
        r.add_argument("--compile", action="store_true", help="torch.compile (default mode) instead of eager")
        r.add_argument("--device", default="cuda", help="PyTorch's device (cpu: a smoke test)")
        r.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # PyTorch: a tiny model (smoke test)
        if name == "torch":
            r.add_argument("--init", help="llama: start from these parameters (ls2c-gpu-step --save-params)")
        if name == "run":
            r.add_argument("--torch-init", choices=("auto", "ls2c", "own"), default="auto",
                           help="llama: PyTorch starts from ls2c's initial parameters (auto: where DIR has "
                                "ls2c-gpu-step) or from its own initialization")
            r.add_argument("--skip-ls2c", action="store_true")
            r.add_argument("--skip-torch", action="store_true")
            r.add_argument("--json")
            r.add_argument("--logs", help="folder for the logs and ls2c's metrics (default DIR/out)")
            r.add_argument("--python", default=sys.executable, help="the Python that runs PyTorch")
            r.add_argument("--ls2c-timeout", type=float, default=300)
            r.add_argument("--torch-timeout", type=float, default=480)
    s = sub.add_parser("show")
    s.add_argument("file")
    args = ap.parse_args()
    return run_mode({"prepare": prepare, "run": run, "torch": train_torch, "show": show}, args)


if __name__ == "__main__":
    sys.exit(main())
