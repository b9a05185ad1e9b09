#!/usr/bin/env python3
"""The real runs of scripts/gpu-real-runs.sh in PyTorch, beside ls2c's: final metric and wall time.

For each of bench/models/{transformer-multi30k,bert-wikitext2,vit-fashion-mnist}.json the PyTorch
twin trains the same description (bench/torch_models.Model's parameters and initialization,
bench/torch_train.TrainStep: autocast fp16/bf16 with fp32 parameters, fp16 loss scaling, the
description's optimizer, clipping and schedule, its dropout with PyTorch's masks,
torch.manual_seed(S)) on the same data, for the same wall-clock limit of training as ls2c's run
(and at most its --steps), then evaluates as ls2c-gpu-train does.

    prepare [--gpu-real .gpu-real] [--ls2c BIN]                 (compiler machine, no torch)
        Multi30k's train, val and test_2016_flickr, both sides, tokenized with
        .gpu-real/data/multi30k/bpe.model by `ls2c tokenize --model bpe.model --keep-empty` (one
        sequence per line, empty ones kept, nothing truncated: the ids ls2c-gpu-train encodes in
        process) into .gpu-real/data/multi30k/torch/SPLIT.LANG.tok (about 2 MiB); each file's
        sequence count is checked against its line count; torch/prepare.json records counts and
        sha256. WikiText-2's token files and Fashion-MNIST's IDX files are used as they are.
    torch --only NAME [--gpu-real .gpu-real] --out OUT [--seconds S] [--seed 1] [--device cuda]
                                                                 (GPU machine, PyTorch)
        Trains NAME and writes OUT/NAME.torch.json (steps, train_seconds, tokens/s, validation
        loss, NLL, accuracy) and its log lines on stdout; transformer-multi30k also translates
        test_2016_flickr (beam 5, length penalty 1, at most 100 new tokens) into
        OUT/transformer-multi30k.torch.test_2016_flickr.ids (one line of model ids per input).
        S defaults to gpu-real-runs.sh's limits ($LS2C_MT_SECONDS 150, $LS2C_BERT_SECONDS 75,
        $LS2C_VIT_SECONDS 75); steps stop at ls2c's --steps too (100000, 3000, 4000).
    summarize --out OUT [--gpu-real .gpu-real] [--ls2c BIN] [--json F]  (compiler machine)
        Reads ls2c's OUT/NAME.metrics.jsonl final lines and PyTorch's OUT/NAME.torch.json, decodes
        both translations (ls2c's OUT/transformer-multi30k.test_2016_flickr.de is text already;
        PyTorch's ids become a token file decoded by `ls2c tokenize --decode`), scores both with
        sacreBLEU (default: 13a, exp smoothing) against test_2016_flickr.de (ls2c's own BLEU line
        of OUT/transformer-multi30k.translate.log is reported beside), writes F (default
        OUT/real_side_by_side.json) and prints a table last.

Batches, ls2c against PyTorch:
    transformer  The same plan: Bucketing.h's rules ported to Python with its SplitMix64 (pair
                 lengths n + 1 per side, truncation to max_seq_len, a seeded tie order, the
                 stable sort by source then target length, the greedy fill to max_batch_tokens on
                 each side, each epoch's seeded batch order), so step k holds the same pairs as
                 ls2c's step k. src = ids + 4, then </s> (2); tgt = </s>, ids + 4; labels = ids
                 + 4, </s>. Difference: ls2c packs the sequences back to back; PyTorch pads each
                 side to the batch's longest (<pad> = 1, ignored by the loss; key padding masks
                 in attention) -- its tokens/s counts real tokens only (source + target, as
                 ls2c's). Validation: every plan batch of val in plan order (as ls2c: all of
                 them), label-smoothed loss, NLL and argmax accuracy over all label tokens.
    bert         The same plan of segments (each token-file sequence cut into pieces of at most
                 max_seq_len - 2 ids, ids + 4, [CLS] s [SEP], lengths n + 2) and epoch orders;
                 validation masks are ls2c's exactly (maskTokens over SplitMix64, epoch 0), on
                 the first 8 plan batches (--eval-batches 8). Training masks: the same rule
                 (15%; 80% [MASK], 10% a random id in [4, vocab), 10% kept; specials and the
                 file's </s>/<unk> never selected) drawn with numpy's generator, not SplitMix64.
                 Padded per batch as for the transformer.
    vit          The same images per step: ImageBatcher's epoch permutations (SplitMix64), 256
                 images a batch (12800 / 50 tokens; an epoch's last batch smaller), pixels / 255
                 normalized with mean 0.5 and std 0.5; validation: all 10000 test images.
Train time: the wall clock of the train steps (evaluation excluded), the device synchronized at
the end; the limit is checked on the host clock every step, as ls2c checks its summed step times.
Beam search follows include/ls2c/Generation/Search.h (fairseq's rules); PyTorch's runs without a
KV cache (the decoder reruns the whole prefix each step), in batches of inputs sorted by length.
"""
import gzip
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_cli import Parser, fail, run_mode  # noqa: E402 (after the path)
from lm_side_by_side import TokenFileError, fnv1a64, read_token_file  # noqa: E402

PROG = "real_side_by_side.py"
MODELS = ("transformer-multi30k", "bert-wikitext2", "vit-fashion-mnist")
# gpu-real-runs.sh's run: (time-limit variable, default seconds, --steps, --eval-batches (0: all))
RUNS = {"transformer-multi30k": ("LS2C_MT_SECONDS", 150, 100000, 0),
        "bert-wikitext2": ("LS2C_BERT_SECONDS", 75, 3000, 8),
        "vit-fashion-mnist": ("LS2C_VIT_SECONDS", 75, 4000, 0)}
SPLITS = ("train", "val", "test_2016_flickr")
SPECIALS = 4  # ids before the tokenizer's: <s> <pad> </s> <unk> / [PAD] [CLS] [SEP] [MASK]
EOS, PAD = 2, 1  # translation dictionary (fairseq)
CLS, SEP, MASK = 1, 2, 3  # encoder dictionary
BEAM, MAX_NEW, LENPEN = 5, 100, 1.0

# ---------------------------------------------------------------------------- SplitMix64 (Bucketing.h)

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
TIE_STREAM, EPOCH_STREAM = 0x7469652D6F726472, 0x65706F63682D6F72
MASK_STREAM, IMAGE_STREAM = 0x6D61736B2D6C6D31, 0x696D6167652D6F72


def _finalize(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64

    def next(self):
        self.state = (self.state + GOLDEN) & M64
        return _finalize(self.state)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53

    def below(self, n):
        threshold = ((1 << 64) - n) % n
        while True:
            r = self.next()
            if r >= threshold:
                return r % n


def mix_seed(seed, key):
    return _finalize((seed ^ _finalize((key + GOLDEN) & M64)) & M64)


def seeded_permutation(n, seed):
    p = list(range(n))
    rng = SplitMix64(seed)
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def plan_batches(lengths, max_tokens, max_len, seed, target_lengths=None, min_len=1):
    """Bucketing.h's plan (Truncate, Packed counting, no sequence limit): (batches, clipped
    lengths, clipped target lengths); batches are lists of indices, each in sorted order."""
    n = len(lengths)
    clip = lambda x: -1 if x < min_len else min(x, max_len)  # noqa: E731
    src = [clip(x) for x in lengths]
    tgt = [clip(x) for x in target_lengths] if target_lengths is not None else [0] * n
    kept = [i for i in range(n) if src[i] >= 0 and tgt[i] >= 0]
    perm = seeded_permutation(len(kept), mix_seed(seed, TIE_STREAM))
    order = sorted((kept[p] for p in perm), key=lambda i: (src[i], tgt[i]))  # stable
    batches, batch, s_sum, t_sum = [], [], 0, 0
    for i in order:
        if batch and (s_sum + src[i] > max_tokens or (target_lengths is not None and t_sum + tgt[i] > max_tokens)):
            batches.append(batch)
            batch, s_sum, t_sum = [], 0, 0
        batch.append(i)
        s_sum += src[i]
        t_sum += tgt[i]
    if batch:
        batches.append(batch)
    return batches, src, tgt


def epoch_order(num_batches, seed, epoch, stream=EPOCH_STREAM):
    return seeded_permutation(num_batches, mix_seed(mix_seed(seed, stream), epoch))


class EpochBatches:
    """Batch (index list) of run step k: ls2c's `batch(k / n, k % n)`."""

    def __init__(self, batches, seed):
        self.batches, self.seed, self.epoch, self.order = batches, seed, -1, None

    def index(self, k):
        """The plan index of step k's batch."""
        n = len(self.batches)
        if k // n != self.epoch:
            self.epoch, self.order = k // n, epoch_order(n, self.seed, k // n)
        return self.order[k % n]

    def __call__(self, k):
        return self.batches[self.index(k)]


# ---------------------------------------------------------------------------- data (numpy)

def sequences(tok):
    """A token file's sequences as int64 arrays, ids + SPECIALS."""
    import numpy as np
    ids, off = tok["tokens"].astype(np.int64) + SPECIALS, tok["offsets"].astype(np.int64)
    return [ids[off[i]:off[i + 1]] for i in range(len(off) - 1)]


def pad_rows(rows, value):
    import numpy as np
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out


def translation_batch(src, tgt, indices, max_len):
    """Padded [B, S] src and [B, T] tgt/labels of pairs `indices` (ParallelCorpus.h's layout,
    truncated as it does: the first max_len - 1 ids, then </s>)."""
    import numpy as np
    s_rows, t_rows, l_rows = [], [], []
    for i in indices:
        s, t = src[i][:max_len - 1], tgt[i][:max_len - 1]
        s_rows.append(np.concatenate([s, [EOS]]))
        t_rows.append(np.concatenate([[EOS], t]))
        l_rows.append(np.concatenate([t, [EOS]]))
    return {"src": pad_rows(s_rows, PAD), "tgt": pad_rows(t_rows, PAD), "labels": pad_rows(l_rows, PAD),
            "tokens": sum(map(len, s_rows)) + sum(map(len, t_rows))}


def bert_segments(tok, room):
    """MaskedLMData's segments: each sequence cut into pieces of at most `room` ids (+ 4)."""
    return [s[k:k + room] for s in sequences(tok) for k in range(0, len(s), room)]


def mask_exact(ids, vocab, specials, key):
    """maskTokens over SplitMix64(key): (masked ids, labels) as lists (MaskedLM.cpp)."""
    rng, out, labels = SplitMix64(key), list(ids), [-100] * len(ids)
    for j, x in enumerate(ids):
        u = rng.uniform()
        if x in specials or not u < 0.15:
            continue
        labels[j] = x
        v = rng.uniform()
        if v < 0.8:
            out[j] = MASK
        elif v < 0.9:
            out[j] = SPECIALS + rng.below(vocab - SPECIALS)
    return out, labels


def mask_numpy(ids, vocab, special, rng):
    """The same rule with numpy's generator: ids int64 [n] -> (ids, labels)."""
    import numpy as np
    sel = (rng.random(len(ids)) < 0.15) & ~special
    v = rng.random(len(ids))
    labels = np.where(sel, ids, -100)
    out = np.where(sel & (v < 0.8), MASK, ids)
    rand = sel & (v >= 0.8) & (v < 0.9)
    out = np.where(rand, rng.integers(SPECIALS, vocab, len(ids)), out)
    return out, labels


def mlm_batch(segs, indices, masker):
    """Padded [B, W] input_ids, labels (-100 at padding), lengths of segments `indices` laid out
    [CLS] s [SEP]; masker(i, ids) -> (ids, labels)."""
    import numpy as np
    rows, labs = [], []
    for i in indices:
        ids = np.concatenate([[CLS], segs[i], [SEP]]).astype(np.int64)
        m, lab = masker(i, ids)
        rows.append(np.asarray(m, dtype=np.int64))
        labs.append(np.asarray(lab, dtype=np.int64))
    return {"input_ids": pad_rows(rows, 0), "labels": pad_rows(labs, -100), "tokens": sum(map(len, rows))}


def read_idx(path):
    """An IDX file (gzip or not): uint8 array of its shape."""
    import numpy as np
    data = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    rank = data[3]
    shape = [int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


# ---------------------------------------------------------------------------- beam search

def beam_search(candidates, n, beam=BEAM, max_new=MAX_NEW, eos=EOS, lenpen=LENPEN):
    """fairseq's beam search (Search.h) over `n` inputs; returns per input the best hypothesis's
    token list (eos excluded). candidates(active, tokens, cum, step, last) gets the live inputs'
    indices [A], their beams' generated tokens [A, beam, step] and cumulative log-probs [A, beam]
    (float64) and returns the top 2 x beam extensions per input by cumulative log-prob, best
    first: (scores [A, 2beam], beam index [A, 2beam], token [A, 2beam]); at step 0 only beam 0
    extends, <pad> never, and when `last` only eos."""
    import numpy as np
    tokens = np.zeros((n, beam, 0), dtype=np.int64)
    cum = np.zeros((n, beam))
    done = [[] for _ in range(n)]  # (score, tokens)
    active = np.arange(n)
    for step in range(max_new):
        last = step == max_new - 1
        scores, beams, toks = candidates(active, tokens[active], cum[active], step, last)
        new_tokens = np.zeros((len(active), beam, step + 1), dtype=np.int64)
        new_cum = np.zeros((len(active), beam))
        still = []
        for a, i in enumerate(active):
            kept = 0
            for r in range(2 * beam):
                b, t, s = int(beams[a, r]), int(toks[a, r]), float(scores[a, r])
                if t == eos:
                    if r < beam and len(done[i]) < beam:
                        done[i].append((s / (step + 1) ** lenpen, list(tokens[i, b])))
                    continue
                if kept < beam:
                    new_tokens[a, kept, :step] = tokens[i, b]
                    new_tokens[a, kept, step] = t
                    new_cum[a, kept] = s
                    kept += 1
            if len(done[i]) < beam:
                still.append(a)
        grown = np.zeros((n, beam, step + 1), dtype=np.int64)
        grown[active] = new_tokens
        tokens = grown
        cum[active] = new_cum
        active = active[still]
        if not len(active):
            break
    return [[int(x) for x in max(d, key=lambda x: x[0])[1]] if d else [] for d in done]


def numpy_candidates(logprobs_fn, beam, eos, pad):
    """candidates() of beam_search for log-probs from logprobs_fn(active, tokens [A, beam, t]) ->
    [A, beam, V] (numpy; the torch run does the same on the GPU)."""
    import numpy as np

    def candidates(active, tokens, cum, step, last):
        lp = np.array(logprobs_fn(active, tokens), dtype=np.float64)
        if pad >= 0:
            lp[:, :, pad] = -np.inf
        if last:
            keep = lp[:, :, eos].copy()
            lp[:] = -np.inf
            lp[:, :, eos] = keep
        total = cum[:, :, None] + lp
        if step == 0:
            total[:, 1:] = -np.inf
        flat = total.reshape(len(active), -1)
        idx = np.argsort(-flat, axis=1, kind="stable")[:, :2 * beam]
        V = lp.shape[2]
        return np.take_along_axis(flat, idx, 1), idx // V, idx % V
    return candidates


# ---------------------------------------------------------------------------- prepare

def count_lines(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return f.read().count(b"\n")


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def prepare(args):
    if not (os.path.isfile(args.ls2c) and os.access(args.ls2c, os.X_OK)):
        fail(f"--ls2c {args.ls2c}: no such executable (build ls2c, or name it)")
    d = os.path.join(args.gpu_real, "data", "multi30k")
    model = os.path.join(d, "bpe.model")
    if not os.path.isfile(model):
        fail(f"{model}: missing (run scripts/gpu-real-runs.sh prepare first)")
    out = os.path.join(d, "torch")
    os.makedirs(out, exist_ok=True)
    info = {"bpe_model_sha256": sha256(model), "files": {}}
    for split in SPLITS:
        for lang in ("en", "de"):
            src = os.path.join(d, f"{split}.{lang}.gz")
            if not os.path.isfile(src):
                fail(f"{src}: missing (run scripts/gpu-real-runs.sh prepare first)")
            dst = os.path.join(out, f"{split}.{lang}.tok")
            p = subprocess.run([args.ls2c, "tokenize", src, "--model", model, "--keep-empty", "-o", dst],
                               capture_output=True, text=True)
            if p.returncode:
                fail(f"ls2c tokenize {src}: exited {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1]}")
            t = read_token_file(dst)
            lines = count_lines(src)
            if t["num_sequences"] != lines:
                fail(f"{dst}: {t['num_sequences']} sequences for {lines} lines of {src}: not aligned")
            info["files"][f"{split}.{lang}"] = {"lines": lines, "tokens": t["num_tokens"], "sha256": sha256(dst)}
            print(f"{dst}: {lines} lines, {t['num_tokens']} tokens")
    json.dump(info, open(os.path.join(out, "prepare.json"), "w"), indent=1)
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{out}: {size / 2**20:.1f} MiB; carry {d} (and .gpu-real/bin, lib, bundles for ls2c)")
    return 0


# ---------------------------------------------------------------------------- PyTorch

def padded_forward(model, b, logits_only=False):
    """Model's encoder or encoder_decoder on padded [B, W] batches with key padding masks
    (Model's own forward packs and would need a [T, T] mask for unequal lengths); the same
    parameters, helpers and dropout sites. Returns (logits [B, W, V], labels [B, W])."""
    import torch
    import torch.nn.functional as F
    c = model.c
    H, heads, kvh = c["hidden"], c["heads"], c["kv_heads"]
    D = H // heads

    def attn(q, k, v, key_ok, causal):
        B, Sq, Sk = q.shape[0], q.shape[1], k.shape[1]
        qh = q.reshape(B, Sq, heads, D).transpose(1, 2)
        kh = k.reshape(B, Sk, kvh, D).transpose(1, 2)
        vh = v.reshape(B, Sk, kvh, D).transpose(1, 2)
        if kvh != heads:
            kh, vh = kh.repeat_interleave(heads // kvh, 1), vh.repeat_interleave(heads // kvh, 1)
        mask = None if key_ok is None else key_ok[:, None, None, :]
        p = c["attention_dropout"] if model.training else 0.0
        o = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, dropout_p=p, is_causal=causal)
        return o.transpose(1, 2).reshape(B, Sq, H)

    lin, drop = model._linear, model._drop
    if c["architecture"] == "encoder":
        ids = b["input_ids"]
        ok = ids != 0 if "key_ok" not in b else b["key_ok"]
        pos = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        x = (F.embedding(ids, model.p("bert.embeddings.word_embeddings.weight"))
             + F.embedding(pos, model.p("bert.embeddings.position_embeddings.weight"))
             + F.embedding(torch.zeros_like(ids), model.p("bert.embeddings.token_type_embeddings.weight")))
        x = drop(model._ln(x, "bert.embeddings.LayerNorm"), c["hidden_dropout"])
        for i in range(c["encoder_layers"]):
            n = f"bert.encoder.layer.{i}."
            x = model._residual(x, n + "attention.output.LayerNorm", lambda h: lin(attn(
                *(lin(h, n + "attention.self." + w) for w in ("query", "key", "value")), ok, False),
                n + "attention.output.dense"))
            x = model._residual(x, n + "output.LayerNorm",
                                lambda h: model._ffn(h, n + "intermediate.dense", n + "output.dense", lin))
        if c["norm"] == "pre":
            x = model._ln(x, "bert.encoder.final_layer_norm")
        h = model._ln(model._act(lin(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
        w = model.p("bert.embeddings.word_embeddings.weight" if c["tie_embeddings"] else "cls.predictions.decoder.weight")
        return F.linear(h, w, model.p("cls.predictions.bias")), b["labels"]
    enc, src_ok = b.get("enc"), b["src"] != PAD
    scale = math.sqrt(H)
    emb = model.p("encoder.embed_tokens.weight")
    temb = emb if c["share_embeddings"] else model.p("decoder.embed_tokens.weight")

    def att(n, xq, xkv, ok, causal):
        return lin(attn(lin(xq, n + "q_proj"), lin(xkv, n + "k_proj"), lin(xkv, n + "v_proj"), ok, causal),
                   n + "out_proj")

    def ffn(n):
        return lambda h: model._ffn(h, n + "fc1", n + "fc2", lin)

    if enc is None:
        src = b["src"]
        x = scale * F.embedding(src, emb) + model.pos_table[:src.shape[1]]
        x = drop(x, c["hidden_dropout"])
        for i in range(c["encoder_layers"]):
            n = f"encoder.layers.{i}."
            x = model._residual(x, n + "self_attn_layer_norm", lambda h: att(n + "self_attn.", h, h, src_ok, False))
            x = model._residual(x, n + "final_layer_norm", ffn(n))
        if c["norm"] == "pre":
            x = model._ln(x, "encoder.layer_norm")
        enc = x
        if b.get("encode_only"):
            return enc, None
    tgt = b["tgt"]
    y = scale * F.embedding(tgt, temb) + model.pos_table[:tgt.shape[1]]
    y = drop(y, c["hidden_dropout"])
    for i in range(c["decoder_layers"]):
        n = f"decoder.layers.{i}."
        # Right padding: causal attention alone keeps a real row off padded keys.
        y = model._residual(y, n + "self_attn_layer_norm", lambda h: att(n + "self_attn.", h, h, None, True))
        y = model._residual(y, n + "encoder_attn_layer_norm", lambda h: att(n + "encoder_attn.", h, enc, src_ok, False))
        y = model._residual(y, n + "final_layer_norm", ffn(n))
    if c["norm"] == "pre":
        y = model._ln(y, "decoder.layer_norm")
    w = temb if c["tie_embeddings"] else model.p("decoder.output_projection.weight")
    return F.linear(y, w), b.get("labels")


def train_torch(args):
    import numpy as np
    import torch
    import torch.nn.functional as F
    from descriptions import config
    from torch_models import Model
    from torch_train import TrainStep

    name, G = args.only, args.gpu_real
    var, default_s, max_steps, eval_batches = RUNS[name]
    limit = args.seconds if args.seconds is not None else float(os.environ.get(var, default_s))
    c = config(json.load(open(os.path.join(ROOT, "bench", "models", name + ".json"))))
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    model = Model(c, seed=args.seed).to(dev).train()
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(c["dtype"])
    arch = c["architecture"]
    ignore = PAD if arch == "encoder_decoder" else -100
    ls = c["label_smoothing"]
    T = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev, non_blocking=True)  # noqa: E731

    def loss_of(b):
        logits, labels = padded_forward(model, b)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=ignore,
                               label_smoothing=ls, reduction="sum") / (labels != ignore).sum().clamp(min=1)

    d = os.path.join(G, "data")
    if arch == "encoder_decoder":
        tok = {f"{s}.{l}": read_token_file(os.path.join(d, "multi30k", "torch", f"{s}.{l}.tok"))
               for s in SPLITS for l in ("en", "de")}
        seqs = {k: sequences(v) for k, v in tok.items()}
        L, MT = c["max_seq_len"], c["max_batch_tokens"]

        def plan(split):
            s, t = seqs[split + ".en"], seqs[split + ".de"]
            return plan_batches([len(x) + 1 for x in s], MT, L, args.seed, [len(x) + 1 for x in t])[0]
        train_plan, valid_plan = plan("train"), plan("val")
        pick = EpochBatches(train_plan, args.seed)

        def to_dev(bt):
            return {k: T(v) for k, v in bt.items() if k != "tokens"}, bt["tokens"]

        # The plan's few batches (about 60) built once, on the device: no per-step host work.
        built = [to_dev(translation_batch(seqs["train.en"], seqs["train.de"], b, L)) for b in train_plan]

        def train_batch(k):
            return built[pick.index(k)]
        valid = [to_dev(translation_batch(seqs["val.en"], seqs["val.de"], b, L)) for b in valid_plan]
        forward = loss_of
    elif arch == "encoder":
        tr = read_token_file(os.path.join(d, "wikitext-2", "train.tok"))
        va = read_token_file(os.path.join(d, "wikitext-2", "valid.tok"))
        room, vocab = c["max_seq_len"] - 2, tr["vocab_size"] + SPECIALS
        specials = {CLS, SEP, MASK, 0} | {v + SPECIALS for v in tr["special"].values() if v is not None}
        segs, vsegs = bert_segments(tr, room), bert_segments(va, room)
        train_plan = plan_batches([len(s) + 2 for s in segs], c["max_batch_tokens"], c["max_seq_len"], args.seed)[0]
        valid_plan = plan_batches([len(s) + 2 for s in vsegs], c["max_batch_tokens"], c["max_seq_len"], args.seed)[0]
        pick = EpochBatches(train_plan, args.seed)
        rng = np.random.default_rng(args.seed)
        spec = np.array(sorted(specials))
        vkey = mix_seed(mix_seed(args.seed, MASK_STREAM), 0)

        def to_dev(bt):
            return {"input_ids": T(bt["input_ids"]), "labels": T(bt["labels"])}, bt["tokens"]

        def train_batch(k):
            return to_dev(mlm_batch(segs, pick(k), lambda i, ids: mask_numpy(ids, vocab, np.isin(ids, spec), rng)))
        valid = [to_dev(mlm_batch(vsegs, b, lambda i, ids: mask_exact(list(map(int, ids)), vocab, specials,
                                                                     mix_seed(vkey, i))))
                 for b in valid_plan[:eval_batches or None]]
        forward = loss_of
    else:
        f = os.path.join(d, "fashion-mnist")
        X = read_idx(os.path.join(f, "train-images-idx3-ubyte.gz"))
        Y = read_idx(os.path.join(f, "train-labels-idx1-ubyte.gz")).astype(np.int64)
        VX = read_idx(os.path.join(f, "t10k-images-idx3-ubyte.gz"))
        VY = read_idx(os.path.join(f, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
        per = c["max_batch_tokens"] // ((c["image_size"] // c["patch_size"]) ** 2 + 1)
        Xd = (torch.from_numpy(X.copy()).to(dev).float()[:, None] / 255.0 - 0.5) / 0.5
        Yd = torch.from_numpy(Y).to(dev)
        nb = (len(X) + per - 1) // per
        tokens_per = (c["image_size"] // c["patch_size"]) ** 2 + 1
        # Every epoch's permutation the step limit can reach, drawn before the clock starts.
        orders = [torch.tensor(seeded_permutation(len(X), mix_seed(mix_seed(args.seed, IMAGE_STREAM), e)), device=dev)
                  for e in range((max_steps + nb - 1) // nb)]

        def train_batch(k):
            e = k // nb
            idx = orders[e][(k % nb) * per:(k % nb + 1) * per]
            return {"pixels": Xd[idx], "labels": Yd[idx]}, len(idx) * tokens_per
        VXd = (torch.from_numpy(VX.copy()).to(dev).float()[:, None] / 255.0 - 0.5) / 0.5
        valid = [({"pixels": VXd[k:k + per], "labels": T(VY[k:k + per])}, 0) for k in range(0, len(VX), per)]
        forward = model

    def evaluate():
        model.eval()
        tot = nll = hits = count = 0.0
        captured = {}
        if arch == "vit":
            model._loss = lambda logits, labels, ii: captured.update(lg=logits, lb=labels) or torch.zeros(())
        with torch.no_grad(), torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
            for b, _ in valid:
                if arch == "vit":
                    model(b)
                    logits, labels = captured["lg"], captured["lb"]
                else:
                    logits, labels = padded_forward(model, b)
                lg = logits.reshape(-1, logits.shape[-1]).float()
                lb = labels.reshape(-1)
                ok = lb != ignore
                lg, lb = lg[ok], lb[ok]
                tot += float(F.cross_entropy(lg, lb, label_smoothing=ls, reduction="sum"))
                nll += float(F.cross_entropy(lg, lb, reduction="sum"))
                hits += float((lg.argmax(-1) == lb).sum())
                count += int(ok.sum())
        if arch == "vit":
            del model._loss
        model.train()
        return {"valid_loss": tot / count, "valid_nll_loss": nll / count, "valid_accuracy": hits / count,
                "valid_labels": int(count)}

    trainer = TrainStep(model, c, forward=forward)
    print(f"{name}: PyTorch {torch.__version__} on {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev.type}, "
          f"{sum(p.numel() for p in model.parameters())} parameters, time limit {limit:.0f} s, at most {max_steps} steps",
          flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.time()
    step, tokens, loss = 0, 0, None
    while step < max_steps and time.time() - t0 < limit:
        b, n = train_batch(step)
        loss = trainer.step(b)
        tokens += n
        step += 1
        if step % args.log_interval == 0 or step == 1:
            print(f"step {step}: loss {float(loss):.4f}, lr {trainer.opt.param_groups[0]['lr']:.3g}, "
                  f"{time.time() - t0:.1f} s", flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    train_s = time.time() - t0
    r = {"model": name, "framework": "torch", "torch": torch.__version__, "steps": step, "train_seconds": train_s,
         "train_tokens": tokens, "tokens_per_second": tokens / train_s, "time_limit": limit, "max_steps": max_steps,
         "final_train_loss": float(loss) if loss is not None else None}
    if arch == "vit":
        r["images_per_second"] = step and tokens / tokens_per / train_s
    r.update(evaluate())
    print(f"final: {step} steps in {train_s:.1f} s, {r['tokens_per_second']:.0f} tokens/s, validation loss "
          f"{r['valid_loss']:.4f} (NLL {r['valid_nll_loss']:.4f}), accuracy {r['valid_accuracy']:.4f}", flush=True)
    if arch == "encoder_decoder":
        t1 = time.time()
        hyps = translate_torch(model, seqs["test_2016_flickr.en"], c, dev, amp)
        path = os.path.join(args.out, name + ".torch.test_2016_flickr.ids")
        with open(path, "w") as f:
            for h in hyps:
                f.write(" ".join(map(str, h)) + "\n")
        r["translate_seconds"] = time.time() - t1
        print(f"translated {len(hyps)} sentences in {r['translate_seconds']:.1f} s: {path}", flush=True)
    json.dump(r, open(os.path.join(args.out, name + ".torch.json"), "w"), indent=1)
    return 0


def translate_torch(model, src, c, dev, amp, batch=128):
    """Beam search (beam_search's rules) with log-probs from padded_forward, inputs sorted by
    length in batches of `batch`."""
    import numpy as np
    import torch
    model.eval()
    L = c["max_seq_len"]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    hyps = [None] * len(src)
    for k in range(0, len(order), batch):
        idx = order[k:k + batch]
        rows = [np.concatenate([src[i][:L - 1], [EOS]]) for i in idx]
        s = torch.from_numpy(pad_rows(rows, PAD)).to(dev)
        with torch.no_grad(), torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
            enc, _ = padded_forward(model, {"src": s, "encode_only": True})
        max_new = min(MAX_NEW, L - 1)

        def candidates(active, tokens, cum, step, last):
            A = len(active)
            a = torch.from_numpy(active).to(dev)
            e = enc[a].repeat_interleave(BEAM, 0)
            sr = s[a].repeat_interleave(BEAM, 0)
            t = torch.cat([torch.full((A * BEAM, 1), EOS, device=dev),
                           torch.from_numpy(tokens.reshape(A * BEAM, tokens.shape[2])).to(dev)], 1)
            with torch.no_grad(), torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
                logits, _ = padded_forward(model, {"src": sr, "enc": e, "tgt": t})
            lp = torch.log_softmax(logits[:, -1].double(), -1).reshape(A, BEAM, -1)
            lp[:, :, PAD] = -math.inf
            if last:
                keep = lp[:, :, EOS].clone()
                lp.fill_(-math.inf)
                lp[:, :, EOS] = keep
            total = torch.from_numpy(cum).to(dev)[:, :, None] + lp
            if step == 0:
                total[:, 1:] = -math.inf
            sc, ix = total.reshape(A, -1).topk(2 * BEAM, dim=1)
            V = lp.shape[2]
            return sc.cpu().numpy(), (ix // V).cpu().numpy(), (ix % V).cpu().numpy()
        for i, h in zip(idx, beam_search(candidates, len(idx), max_new=max_new)):
            hyps[i] = h
    model.train()
    return hyps


# ---------------------------------------------------------------------------- summarize

def write_token_file(path, seqs, like):
    """A token file (TokenFile.h) of `seqs` (tokenizer ids) with `like`'s header fields."""
    import numpy as np
    ntok = sum(map(len, seqs))
    off = np.zeros(len(seqs) + 1, dtype="<u8")
    off[1:] = np.cumsum([len(s) for s in seqs]) if seqs else []
    ids = np.array([x for s in seqs for x in s], dtype="<u2" if like["token_bytes"] == 2 else "<u4")
    sp = [0xFFFFFFFF if like["special"][k] is None else like["special"][k] for k in ("bos", "eos", "unk", "pad")]
    head = bytearray(80)
    head[:8] = b"LS2CTOK\0"
    head[8:24] = np.array([1, like["token_bytes"], like["vocab_size"], 0], dtype="<u4").tobytes()
    head[24:40] = np.array([len(seqs), ntok], dtype="<u8").tobytes()
    head[40:56] = np.array(sp, dtype="<u4").tobytes()
    head[56:64] = np.array([like["fingerprint"]], dtype="<u8").tobytes()
    body = off.tobytes() + ids.tobytes()
    head[64:72] = np.array([fnv1a64(body, fnv1a64(bytes(head[72:80]), fnv1a64(bytes(head[:64]))))],
                           dtype="<u8").tobytes()
    open(path, "wb").write(bytes(head) + body)


def sacre_bleu(hyp_lines, ref_lines, ls2c):
    """(score, how): sacrebleu's corpus BLEU, or `ls2c bleu --json` where sacrebleu is missing."""
    try:
        import sacrebleu
        return sacrebleu.corpus_bleu(hyp_lines, [ref_lines]).score, f"sacrebleu {sacrebleu.__version__}"
    except ImportError:
        import tempfile
        with tempfile.TemporaryDirectory() as t:
            h, r = os.path.join(t, "h"), os.path.join(t, "r")
            open(h, "w").write("\n".join(hyp_lines) + "\n")
            open(r, "w").write("\n".join(ref_lines) + "\n")
            out = subprocess.run([ls2c, "bleu", h, r, "--json"], capture_output=True, text=True, check=True).stdout
            return json.loads(out)["bleu"], "ls2c bleu"


def summarize(args):
    out, G = args.out, args.gpu_real
    if not os.path.isdir(out):
        fail(f"--out {out}: no such folder (the GPU run's output)")
    d = os.path.join(G, "data", "multi30k")
    refs = gzip.open(os.path.join(d, "test_2016_flickr.de.gz"), "rt", encoding="utf-8").read().splitlines()
    res = {}
    for name in MODELS:
        row = {}
        final = None
        nll = None  # the final line leaves the NLL out: the last evaluation's
        try:
            for line in open(os.path.join(out, name + ".metrics.jsonl")):
                x = json.loads(line)
                if x.get("final"):
                    final = x
                elif "valid_nll_loss" in x:
                    nll = x["valid_nll_loss"]
        except (OSError, ValueError):
            pass
        if final:
            final.setdefault("valid_nll_loss", nll)
            row["ls2c"] = {k: final.get(k) for k in ("steps", "train_seconds", "train_tokens_per_second",
                                                     "valid_loss", "valid_nll_loss", "valid_accuracy")}
            row["ls2c"]["tokens_per_second"] = row["ls2c"].pop("train_tokens_per_second")
        try:
            row["torch"] = json.load(open(os.path.join(out, name + ".torch.json")))
        except (OSError, ValueError):
            pass
        if name == "transformer-multi30k":
            hyp = os.path.join(out, name + ".test_2016_flickr.de")
            if "ls2c" in row and os.path.isfile(hyp):
                lines = open(hyp, encoding="utf-8").read().splitlines()
                row["ls2c"]["bleu"], how = sacre_bleu(lines, refs, args.ls2c)
                row["ls2c"]["bleu_by"] = how
                try:
                    m = re.search(r"BLEU\s*=?\s*([0-9.]+)", open(os.path.join(out, name + ".translate.log")).read())
                    row["ls2c"]["bleu_ls2c_line"] = float(m.group(1)) if m else None
                except OSError:
                    pass
            ids = os.path.join(out, name + ".torch.test_2016_flickr.ids")
            if "torch" in row and os.path.isfile(ids):
                like = read_token_file(os.path.join(d, "torch", "test_2016_flickr.de.tok"))
                seqs = [[int(x) - SPECIALS for x in line.split() if int(x) >= SPECIALS]
                        for line in open(ids).read().splitlines()]
                tok = os.path.join(out, name + ".torch.test_2016_flickr.tok")
                text = os.path.join(out, name + ".torch.test_2016_flickr.de")
                write_token_file(tok, seqs, like)
                subprocess.run([args.ls2c, "tokenize", "--decode", tok, "--model", os.path.join(d, "bpe.model"),
                                "-o", text], check=True, capture_output=True)
                lines = open(text, encoding="utf-8").read().splitlines()
                lines += [""] * (len(seqs) - len(lines))
                row["torch"]["bleu"], row["torch"]["bleu_by"] = sacre_bleu(lines, refs, args.ls2c)
        res[name] = row
    path = args.json or os.path.join(out, "real_side_by_side.json")
    json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": res}, open(path, "w"), indent=1)
    print(f"wrote {path}")
    f = lambda r, k, s: format(r[k], s) if isinstance(r.get(k), (int, float)) else "-"  # noqa: E731
    print("| model | system | steps | train s | tokens/s | valid loss | valid NLL | accuracy | BLEU |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in res.items():
        for sysname in ("ls2c", "torch"):
            r = row.get(sysname)
            if r is None:
                print(f"| {name} | {sysname} | missing | | | | | | |")
                continue
            print(f"| {name} | {sysname} | {f(r, 'steps', 'd')} | {f(r, 'train_seconds', '.1f')} | "
                  f"{f(r, 'tokens_per_second', ',.0f')} | {f(r, 'valid_loss', '.4f')} | {f(r, 'valid_nll_loss', '.4f')} | "
                  f"{f(r, 'valid_accuracy', '.4f')} | {f(r, 'bleu', '.2f')} |")
    return 0


# ---------------------------------------------------------------------------- main

def main():
    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True, parser_class=Parser)
    default_ls2c = os.path.join(ROOT, "build/tools/ls2c/ls2c")
    default_g = os.path.join(ROOT, ".gpu-real")
    p = sub.add_parser("prepare")
    p.add_argument("--gpu-real", default=default_g)
    p.add_argument("--ls2c", default=default_ls2c)
    t = sub.add_parser("torch")
    t.add_argument("--only", required=True, choices=MODELS)
    t.add_argument("--gpu-real", default=default_g)
    t.add_argument("--out", required=True)
    t.add_argument("--seconds", type=float)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--device", default="cuda")
    t.add_argument("--log-interval", type=int, default=200)
    s = sub.add_parser("summarize")
    s.add_argument("--out", required=True)
    s.add_argument("--gpu-real", default=default_g)
    s.add_argument("--ls2c", default=default_ls2c)
    s.add_argument("--json")
    args = ap.parse_args()
    try:
        return run_mode({"prepare": prepare, "torch": train_torch, "summarize": summarize}, args)
    except TokenFileError as e:
        fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
