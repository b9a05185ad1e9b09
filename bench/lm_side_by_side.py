#!/usr/bin/env python3
"""A GPT trained on WikiText-2 by ls2c-gpu-train and by PyTorch: validation perplexity and wall time.

The model is bench/models/gpt-wikitext2.json (GPT-2 style decoder, 6 layers, hidden 512, 8 heads,
ffn 2048, 256 tokens, vocab 8000, dropout 0.1, bf16; AdamW 6e-4, betas 0.9/0.95, weight decay
0.1, clipping at 1.0, cosine schedule with 100 warm-up steps to step 2000; 23.1 M parameters).
The text is tokenized by ls2c itself: a sentencepiece BPE model of 8000 ids trained on
WikiText-2's train split, each split one stream (`--concat`: every line followed by </s>).

    prepare --out DIR [--ls2c BIN] [--gpu-train BIN] [--data-dir D]   (compiler machine, no torch)
        DIR/model.json (the description), DIR/eval.json (the same with every dropout 0),
        DIR/wt2.model and DIR/train.tok (`ls2c tokenize D/train.txt.gz --train bpe --vocab-size
        8000 --concat --max-seq-len 257`), DIR/valid.tok (D/valid.txt with that model),
        DIR/train.ls2b and DIR/eval.ls2b (`ls2c compile --arch=sm_90`), the MLIR-free
        DIR/ls2c-gpu-train and DIR/lib/ (libfmt, libsentencepiece: the GPU machine lacks them), and
        DIR/prepare.json (token counts, sha256 of the data files); about 10 MiB. D defaults to
        <repo>/../shared/data/wikitext-2 (the data are not bundled with the repository).
    run --dir DIR [--steps 2000] [--eval-interval 500] [--seed 1337] [--compile]
        [--skip-ls2c] [--skip-torch] [--json F] [--logs L]                 (GPU machine)
        ls2c: `DIR/ls2c-gpu-train DIR/train.ls2b --eval DIR/eval.ls2b --data DIR/train.tok
            --valid-data DIR/valid.tok --steps N --eval-interval K --seed S --metrics
            L/ls2c-metrics.jsonl`: parameters initialized from the description with seed S,
            random windows of 257 ids (LMBatcher, std::mt19937_64 seeded with S), dropout seeded
            with S; its `step K: validation loss X` lines and its `final:` line are parsed.
        PyTorch (this file's `torch` mode in a child process, --python): the same description
            through bench/torch_models.Model (its own initialization, init_parameters with seed
            S) and bench/torch_train.TrainStep (autocast bf16, fp32 parameters, fused AdamW,
            clipping, the schedule), eager or, with --compile, torch.compile (default mode) of
            the model; dropout as the description says (PyTorch's masks, torch.manual_seed(S)).
            Training windows are drawn the way LMBatcher draws them -- each of the 32 windows of
            a step starts at a uniformly random index in [0, N - 257] of the train stream, the
            first 256 ids the inputs and the last 256 the labels -- but from numpy's generator
            (default_rng(S)), so the batches are not ls2c's.
        Validation, both: every window of 257 ids that starts at a multiple of 256 of the valid
            stream (windows = (N - 1) // 256: inputs its first 256 ids, labels its last 256,
            each next-token prediction counted once), in batches of 32 windows, the mean loss
            over all their tokens, without dropout (ls2c: the eval bundle on the master weights
            cast to bf16; PyTorch: the eager module in eval mode under autocast), at step 0,
            every K steps and after the last. Perplexity = exp(mean loss), per BPE token (not
            comparable with WikiText-2's word-level perplexities).
        Train time, both: the wall clock of the train steps only, evaluation and start-up
            excluded (ls2c: each step synchronized, as it reads the loss back; PyTorch: the
            device synchronized before and after each run of steps between evaluations, so its
            first step, torch.compile's compilation included, counts); tokens/s = 32 x 256 x
            steps / train seconds, and after the first min(10, steps / 10) warm-up steps.
        Prints a table last: system, final validation loss, perplexity, train seconds, ms/step,
        tokens/s (all steps, and after the warm-up), the first step's seconds (ls2c: its `step
        1/N` line; torch.compile: the compilation), the whole process's seconds, then the
        validation curves. --device cpu with the hidden --tiny (2 layers of 64, 4 x 32 tokens,
        the first 64 validation windows) smoke-tests the PyTorch side without a GPU. --json writes the runs (merged with an earlier
        file's runs of the other systems when steps, interval and seed are the same, so that
        ls2c, eager and --compile may run in separate calls). Each run has a timeout
        (--ls2c-timeout, --torch-timeout); a failed run prints one FAILED line, the next goes
        on. Exit status 0; 1 if a run failed; 2 on bad input (one line on stderr).
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
    # description first, then a decoder whose vocabulary holds the tokenizer's.
    r = subprocess.run([args.ls2c, "check", args.model], capture_output=True, text=True)
    if r.returncode != 0:
        fail((r.stderr.strip().splitlines() or [f"ls2c check exited {r.returncode}"])[-1])
    if desc.get("architecture") != "decoder":
        fail(f"--model {args.model}: architecture {desc.get('architecture')!r}: a language model "
             "on WikiText-2 needs a decoder")
    if args.vocab_size < 1 or args.vocab_size > desc.get("vocab", 0):
        fail(f"--vocab-size {args.vocab_size}: must be in [1, the model's vocab "
             f"{desc.get('vocab')}]")
    out = args.out
    os.makedirs(out, exist_ok=True)
    for f in ("model.json", "eval.json", "wt2.model", "train.tok", "valid.tok", "train.ls2b", "eval.ls2b",
              "ls2c-gpu-train", "prepare.json"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    shutil.rmtree(os.path.join(out, "lib"), ignore_errors=True)
    P = lambda f: os.path.join(out, f)  # noqa: E731
    L = desc["max_seq_len"]
    json.dump(desc, open(P("model.json"), "w"), indent=1)
    ev = dict(desc, **{k: 0.0 for k in DROPOUTS})
    json.dump(ev, open(P("eval.json"), "w"), indent=1)
    ls2c = args.ls2c
    check_call([ls2c, "check", P("model.json")], "check")
    try:
        check_call([ls2c, "tokenize", train_txt, "-o", P("train.tok"), "--train", "bpe", "--vocab-size",
                    str(args.vocab_size), "--concat", "--max-seq-len", str(L + 1), "--model-out", P("wt2.model")],
                   "tokenize train")
        check_call([ls2c, "tokenize", valid_txt, "-o", P("valid.tok"), "--model", P("wt2.model"), "--concat",
                    "--max-seq-len", str(L + 1)], "tokenize valid")
        train, valid = read_corpus(P("train.tok"), P("valid.tok"), desc["vocab"], L + 1)
    except (RuntimeError, TokenFileError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    seconds = {}
    for name, model in (("train", "model.json"), ("eval", "eval.json")):
        t0 = time.time()
        try:
            check_call([ls2c, "compile", P(model), "--arch=" + args.arch, "-o", P(name + ".ls2b")],
                       f"compile {name}.ls2b")
        except RuntimeError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
        seconds[name] = round(time.time() - t0, 2)
    shutil.copy2(args.gpu_train, P("ls2c-gpu-train"))
    libs = []
    ldd = shutil.which("ldd")
    if ldd:  # libfmt and libsentencepiece: the non-CUDA, non-base libraries the tool links that the GPU machine lacks
        for line in subprocess.run([ldd, P("ls2c-gpu-train")], capture_output=True, text=True).stdout.splitlines():
            m = re.match(r"\s*(libfmt\S*|libsentencepiece\S*) => (\S+)", line)
            if m and os.path.exists(m.group(2)):
                os.makedirs(P("lib"), exist_ok=True)
                shutil.copy(m.group(2), P(os.path.join("lib", m.group(1))))  # follows the link
                libs.append(m.group(1))
    B = desc["max_batch_tokens"] // L
    info = {"model": os.path.relpath(args.model, ROOT) if args.model.startswith(ROOT) else args.model,
            "data_dir": os.path.abspath(d), "vocab_size": train["vocab_size"],
            "tokenizer_fingerprint": f"{train['fingerprint']:016x}",
            "train_tokens": train["num_tokens"], "valid_tokens": valid["num_tokens"],
            "valid_windows": eval_windows(valid["num_tokens"], L), "batch": [B, L],
            "sha256": {os.path.basename(train_txt): sha256(train_txt), "valid.txt": sha256(valid_txt)},
            "bundle_compile_seconds": seconds, "libs": libs, "arch": args.arch,
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    json.dump(info, open(P("prepare.json"), "w"), indent=1)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print(f"{out}: {train['num_tokens']} train and {valid['num_tokens']} valid tokens (vocab "
          f"{train['vocab_size']}; {info['valid_windows']} validation windows of {L + 1}); "
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
    print(f"\n== ls2c: {' '.join(cmd)}", flush=True)
    rc, lines, wall = run_logged(cmd, os.path.join(log_dir, "ls2c.log"), args.ls2c_timeout, train_env(d))
    r = finish("ls2c", rc, lines, wall, args.ls2c_timeout, expect)
    r["command"] = " ".join(cmd)
    return r


def run_torch(args, expect, log_dir, compiled):
    name = "torch compile" if compiled else "torch eager"
    cmd = args.python.split() + [os.path.abspath(__file__), "torch", "--dir", args.dir, "--steps", str(args.steps),
                                 "--eval-interval", str(args.eval_interval), "--seed", str(args.seed),
                                 "--device", args.device] + (["--compile"] if compiled else []) + \
        (["--tiny"] if args.tiny else [])
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
    print(f"\nGPT on WikiText-2 ({meta['steps']} steps of {meta['batch'][0]} x {meta['batch'][1]} tokens, "
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
            print(f"{name} train s / ls2c train s = {r['final']['train_s'] / base['train_s']:.2f}; "
                  f"perplexity {r['final']['perplexity']:.2f} against ls2c's {base['perplexity']:.2f}")


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
    if args.skip_ls2c and args.skip_torch:
        fail("--skip-ls2c and --skip-torch: nothing to run")
    try:
        desc = json.load(open(os.path.join(d, "model.json")))
        if args.tiny:
            desc = tiny_description(desc, args.steps)
        L, vocab, B = desc["max_seq_len"], desc["vocab"], desc["max_batch_tokens"] // desc["max_seq_len"]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        fail(f"{os.path.join(d, 'model.json')}: not a decoder description ({type(e).__name__}: {e})")
    try:
        train, valid = read_corpus(os.path.join(d, "train.tok"), os.path.join(d, "valid.tok"), vocab, L + 1)
    except TokenFileError as e:
        fail(str(e))
    log_dir = args.logs or os.path.join(d, "out")
    os.makedirs(log_dir, exist_ok=True)
    expect = {"steps": args.steps, "train_tokens": train["num_tokens"], "valid_tokens": valid["num_tokens"]}
    meta = {"steps": args.steps, "eval_interval": args.eval_interval, "seed": args.seed, "batch": [B, L],
            "model": desc.get("name"), "vocab_size": train["vocab_size"], "train_tokens": train["num_tokens"],
            "valid_tokens": valid["num_tokens"], "valid_windows": eval_windows(valid["num_tokens"], L),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    if args.tiny:  # PyTorch's smoke test (no ls2c run matches it)
        meta.update(tiny=True, valid_windows=min(meta["valid_windows"], 64))
    print(f"{d}: {train['num_tokens']} train and {valid['num_tokens']} valid tokens, vocab {train['vocab_size']} "
          f"(model {vocab}); {args.steps} steps of {B} x {L}, validation {'every ' + str(args.eval_interval) if args.eval_interval else 'at the start and the end'} "
          f"over {meta['valid_windows']} windows; seed {args.seed}", flush=True)
    earlier = {}  # runs of an earlier call of the same steps, interval, seed and data
    if args.json and os.path.exists(args.json):
        same = ("steps", "eval_interval", "seed", "batch", "valid_tokens", "tiny")
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
        record("torch compile" if args.compile else "torch eager", run_torch(args, expect, log_dir, args.compile))
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


def train_torch(args):
    """The PyTorch side of `run` (a child process): prints ls2c-gpu-train's lines."""
    import numpy as np
    import torch
    from descriptions import config
    from torch_models import Model
    from torch_train import TrainStep

    t_start = time.time()
    d = args.dir
    desc = json.load(open(os.path.join(d, "model.json")))
    if args.tiny:
        desc = tiny_description(desc, args.steps)
    c = config(desc)
    L = c["max_seq_len"]
    B = c["max_batch_tokens"] // L
    try:
        train, valid = read_corpus(os.path.join(d, "train.tok"), os.path.join(d, "valid.tok"), c["vocab"], L + 1)
    except TokenFileError as e:
        fail(str(e))
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)  # dropout masks
    model = Model(c, seed=args.seed).to(dev).train()
    fwd = torch.compile(model) if args.compile else model
    trainer = TrainStep(model, c, forward=fwd)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"{d}/model.json: model {c.get('name')} ({c['dtype']}), {nparams} parameters, PyTorch "
          f"{torch.__version__} {'torch.compile' if args.compile else 'eager'} on "
          f"{torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev.type}", flush=True)
    print(f"{d}/train.tok: {train['num_tokens']} training and {valid['num_tokens']} validation tokens, vocab "
          f"{train['vocab_size']}; batch {B} x {L} tokens", flush=True)

    train_ids = torch.from_numpy(train["tokens"].astype(np.int64)).to(dev)
    valid_ids = torch.from_numpy(valid["tokens"].astype(np.int64)).to(dev)
    span = torch.arange(L + 1, device=dev)
    rng = np.random.default_rng(args.seed)  # LMBatcher's draw: starts uniform in [0, N - L - 1]
    starts = torch.from_numpy(rng.integers(0, train["num_tokens"] - L - 1, size=(args.steps, B), endpoint=True)).to(dev)
    positions = torch.arange(L, device=dev, dtype=torch.int64).repeat(B)

    def batch_of(windows):
        n = windows.shape[0]
        return {"input_ids": windows[:, :-1].reshape(-1), "labels": windows[:, 1:].reshape(-1),
                "position_ids": positions[:n * L], "lengths": (L,) * n}

    nwin = eval_windows(valid["num_tokens"], L)
    if args.tiny:  # a smoke test: the first 64 windows
        nwin = min(nwin, 64)
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
             "train_loss_last": float(losses[-1])}
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
        r.add_argument("--compile", action="store_true", help="torch.compile (default mode) instead of eager")
        r.add_argument("--device", default="cuda", help="PyTorch's device (cpu: a smoke test)")
        r.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # PyTorch: a tiny model (smoke test)
        if name == "run":
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
