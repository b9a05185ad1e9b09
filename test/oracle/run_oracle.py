#!/usr/bin/env python3
"""Compares `ls2c step --precision f64` with the float64 JAX models of jax_models.py.

For each tiny preset: writes a dropout-free copy of the description, random parameters
(float32 values, stored F32) and a packed batch of sequences of different lengths, runs
`ls2c step ... --steps 3 --precision f64`, trains the JAX model on the same batch, and
compares the three losses, the first step's gradients and the parameters after three
steps. Prints one line per preset; exits 1 if anything differs by more than the tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file, save_file

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_models as jm  # noqa: E402

PRESETS = ["tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit", "llama-tiny"]
STEPS = 3
TOL = 1e-8
# ls2c builds the schedule from f32 constants (lr, min_lr_ratio, pi, ...): its learning rates
# are checked to 1e-6 of the peak lr; their effect on the parameters stays below TOL.
LR_TOL = 1e-6
SEED = 20240611


def description(src):
    """The preset without dropout. Its schedule is shortened (warmup 1, total 5) so the three
    steps see lr 0 (warmup), the peak, and the decay; tiny-transformer's Adam gets
    weight_decay 0.01 so that the L2 path runs."""
    d = json.load(open(src))
    for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
        if k in d:
            d[k] = 0.0
    opt = d.setdefault("optimizer", {})
    if d["architecture"] == "encoder_decoder":
        opt["weight_decay"] = 0.01
    sched = opt.setdefault("schedule", {})
    if sched.get("type", "constant") != "constant":
        sched["warmup_steps"] = 1
        if sched["type"] in ("linear", "cosine"):
            sched["total_steps"] = 5
    return d


def parameters(c, rng):
    """std 0.1 normals (norm weights 1 + N(0, 0.1^2)), rounded to float32."""
    out = {}
    for name, shape in jm.parameter_shapes(c).items():
        x = rng.normal(0.0, 0.1, size=shape)
        if jm.is_norm(name) and name.endswith(".weight"):
            x += 1.0
        out[name] = x.astype(np.float32)
    return out


def packed(lengths, rng, lo, hi):
    """ids in [lo, hi), 0-based positions and cu_seqlens of sequences packed back to back."""
    lengths = np.asarray(lengths)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    pos = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    return rng.integers(lo, hi, size=cu[-1]).astype(np.int32), pos, cu


def batch(c, rng):
    arch = c["architecture"]
    if arch == "encoder":  # MLM: about half the tokens carry a label; no padding ids in the input
        ids, pos, cu = packed([7, 12, 5], rng, 1, c["vocab"])
        labels = np.where(rng.random(ids.size) < 0.5, rng.integers(0, c["vocab"], ids.size), -100)
        tt = rng.integers(0, c["type_vocab_size"], ids.size)
        return dict(input_ids=ids, token_type_ids=tt.astype(np.int32), position_ids=pos, cu_seqlens=cu,
                    labels=labels.astype(np.int32))
    if arch in ("decoder", "llama"):  # next tokens within each sequence; the last and a few others ignored
        ids, pos, cu = packed([9, 14, 6], rng, 0, c["vocab"])
        labels = np.append(ids[1:], -100)
        labels[cu[1:] - 1] = -100
        labels[[2, 15]] = -100
        return dict(input_ids=ids, position_ids=pos, cu_seqlens=cu, labels=labels.astype(np.int32))
    if arch == "encoder_decoder":  # source and target of different lengths; some targets are padding
        pad = c["padding_idx"]
        lo = pad + 1
        src, src_pos, src_cu = packed([7, 11], rng, lo, c["src_vocab"])
        tgt, tgt_pos, tgt_cu = packed([9, 5], rng, lo, c["vocab"])
        labels = rng.integers(lo, c["vocab"], tgt.size)
        labels[[4, 12]] = pad
        return dict(src_ids=src, src_position_ids=src_pos, src_cu_seqlens=src_cu, tgt_ids=tgt,
                    tgt_position_ids=tgt_pos, tgt_cu_seqlens=tgt_cu, labels=labels.astype(np.int32))
    if arch == "vit":
        B, S, C = 3, c["image_size"], c["channels"]
        n = (S // c["patch_size"]) ** 2 + 1
        return dict(pixels=rng.normal(size=(B, C, S, S)).astype(np.float32),
                    cu_seqlens=(np.arange(B + 1) * n).astype(np.int32),
                    labels=rng.integers(0, c["num_classes"], B).astype(np.int32))
    raise ValueError(arch)


def rel(a, b, floor=0.0):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), floor, 1e-300))


def compare(out, losses, grads, params, history, peak_lr):
    """Worst errors as {kind: (error, where)}, and the problems found."""
    expected = {"loss"} | {f"grad/{k}" for k in grads} | {f"param/{k}" for k in params}
    if set(out) - {"grad_norm", "lr"} != expected:
        return {}, [f"output tensors differ: missing {sorted(expected - set(out))[:5]}, "
                    f"unexpected {sorted(set(out) - expected - {'grad_norm', 'lr'})[:5]}"]
    problems = []
    # ls2c also writes each step's learning rate and raw gradient norm: the first step that
    # differs is reported (it usually explains the rest).
    for key, tol, scale in (("lr", LR_TOL, peak_lr), ("grad_norm", TOL, None)):
        for s, (a, b) in enumerate(zip(out.get(key, []), history[key])):
            if not abs(a - b) <= tol * (scale or abs(b)):
                problems.append(f"{key} of step {s + 1}: ls2c {a:.10g}, oracle {b:.10g}")
                break
    worst = {}
    for s in range(STEPS):
        e = abs(out["loss"][s] - losses[s]) / abs(losses[s])
        if e >= worst.get("loss", (-1,))[0]:
            worst["loss"] = (e, f"step {s + 1}")
    # A gradient that is zero in exact arithmetic (the key projection's bias: softmax ignores a
    # constant added to every score of a row) has only rounding noise on both sides, so its
    # error is measured against 1e-6 times the norm of all gradients instead of its own norm.
    scale = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    for kind, ref, floor in (("grad", grads, 1e-6 * scale), ("param", params, 0.0)):
        for name, b in ref.items():
            a = out[f"{kind}/{name}"]
            e = rel(a, b, floor) if a.shape == b.shape else np.inf
            if e >= worst.get(kind, (-1,))[0]:
                worst[kind] = (e, name)
    for kind, (e, where) in worst.items():
        if not e <= TOL:
            problems.append(f"{kind} error {e:.3g} > {TOL:g} in {where}")
    return worst, problems


def run_preset(name, args):
    d = description(os.path.join(args.examples, name + ".json"))
    c = jm.config(d)
    rng = np.random.default_rng([SEED, PRESETS.index(name) if name in PRESETS else len(PRESETS)])
    params = parameters(c, rng)
    b = batch(c, rng)
    work = os.path.join(args.workdir, name)
    os.makedirs(work, exist_ok=True)
    paths = {k: os.path.join(work, k) for k in ("model.json", "params.safetensors", "batch.safetensors",
                                                 "out.safetensors")}
    json.dump(d, open(paths["model.json"], "w"), indent=2)
    save_file(params, paths["params.safetensors"])
    save_file(b, paths["batch.safetensors"])
    cmd = [args.ls2c, "step", paths["model.json"], "--params", paths["params.safetensors"], "--batch",
           paths["batch.safetensors"], "-o", paths["out.safetensors"], "--steps", str(STEPS), "--precision", "f64"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return f"{name}: FAIL: `{' '.join(cmd)}` exited {r.returncode}: {r.stderr.strip()}", False
    out = load_file(paths["out.safetensors"])
    losses, grads, final, history = jm.train(c, params, b, STEPS)
    worst, problems = compare(out, losses, grads, final, history, c["optimizer"]["lr"])
    if not worst:
        return f"{name}: FAIL: {'; '.join(problems)}", False
    line = ", ".join(f"{k} {worst[k][0]:.1e} ({worst[k][1]})" for k in ("loss", "grad", "param"))
    if problems:
        return f"{name}: FAIL {line}: {'; '.join(problems)}", False
    return f"{name}: OK {line}", True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ls2c", default="ls2c", help="the ls2c binary")
    ap.add_argument("--examples", required=True, help="folder of the preset descriptions")
    ap.add_argument("--preset", action="append", help=f"preset name (repeatable; default {' '.join(PRESETS)})")
    ap.add_argument("--workdir", help="where to write descriptions, parameters, batches and outputs")
    args = ap.parse_args()
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="ls2c-oracle-")
    ok = True
    for name in args.preset or PRESETS:
        line, good = run_preset(name, args)
        print(line, flush=True)
        ok &= good
    if not ok:
        print(f"error: ls2c step disagrees with the JAX float64 oracle (tolerance {TOL:g}); "
              f"inputs and outputs are in {args.workdir}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
