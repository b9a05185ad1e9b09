#!/usr/bin/env python3
"""The compiled train step on a GPU against the CPU reference backend.

prepare: for each tiny preset writes, under .gpu-run/step/<preset>/, random parameters and a
packed batch (test/oracle/run_oracle.py's generators), the CPU reference result of
`ls2c step --steps 3` (f32, dropout on) and the bundle `ls2c compile --arch=sm_90`. With
--probes also the large-batch probes (PROBES: tiny widths at up to 16,384 tokens, dropout off
unless a probe sets it, in fp32, fp16 and bf16), where full-size models went wrong on the H200
(fp32 bias gradients, a bf16 NaN gradient norm) while the tiny presets at a few dozen tokens
were right; the -ragged ones pack sequences of random lengths (cuDNN's ragged layouts and
padding masks).
On the GPU machine (scripts/gpu-all.sh run does this), for each case P:
    ls2c-gpu-step .gpu-run/step/P/model.ls2b --params .gpu-run/step/P/params.safetensors \
        --batch .gpu-run/step/P/batch.safetensors -o $OUT/P.safetensors --steps 3
and, for fp16/bf16 cases, again with --attention cudnn -o $OUT/P.cudnn.safetensors.
compare DIR: compares DIR/<preset>.safetensors (fetched back) with the reference: losses,
gradient norms, learning rates, first-step gradients and final parameters, relative L2 error
against a train step's tolerance for the model's dtype (DESIGN.md: 10x the per-kernel one: fp32
1e-4, fp16 5e-2, bf16 2e-1). Gradients
that are zero in exact arithmetic are measured against the norm of all gradients, and the
parameters they update are left out (see compare()). A P.cudnn.safetensors is compared with the
reference alike, and its first step with the kernels' run within the per-kernel tolerance.
Usage: scripts/gpu-step-check.py prepare [--probes] [--only PROBE]... [--ls2c BIN] | compare DIR
(needs JAX for prepare: run it with the project's .venv/bin/python)
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "test", "oracle"))
import jax_models as jm  # noqa: E402
import run_oracle as ro  # noqa: E402

PRESETS = ["tiny-bert", "tiny-bert-max-predictions", "tiny-gpt", "tiny-transformer", "tiny-vit",
           "llama-tiny"]
# name: (preset, overrides, sequences, length)
PROBES = {
    "probe-gpt-fp32": ("tiny-gpt", {"dtype": "fp32"}, 4, 4096),
    "probe-gpt-bf16": ("tiny-gpt", {"dtype": "bf16"}, 4, 4096),
    "probe-bert-fp32": ("tiny-bert", {"dtype": "fp32"}, 32, 512),
    # An FFN bias of 3,072 columns needs 96 column-reduction counters; the 64-wide ones left
    # their partial sums over counters 64-95 (the scratch layout bug behind the wrong fp32 bias
    # gradients of BERT-base, fixed 2026-11-30).
    "probe-bert-ffn3072-fp32": ("tiny-bert", {"dtype": "fp32", "ffn": 3072}, 8, 400),
    # cuDNN's fused attention (--attention cudnn runs these too): packed sequences of
    # random lengths (ragged offsets, padding masks), head dims 16, 32 and 64, causal and
    # not, grouped-query attention.
    "probe-bert-bf16-ragged": ("tiny-bert", {"dtype": "bf16"}, 32, 512),
    # The masked-LM head on the labelled rows (max_predictions): ~2,458 of 16,384 tokens
    # labelled, two passes of the nonzero scan, the scatter_add into 16,384 rows.
    "probe-bert-fp32-gathered": ("tiny-bert", {"dtype": "fp32", "max_predictions": 3072}, 32, 512),
    "probe-gpt-fp16-d64-ragged": ("tiny-gpt", {"dtype": "fp16", "hidden": 256, "ffn": 512},
                                  8, 1024),
    "probe-gpt-bf16-gqa-ragged": ("tiny-gpt", {"dtype": "bf16", "hidden": 256, "ffn": 512,
                                               "heads": 8, "kv_heads": 2}, 8, 1024),
    # A vocabulary longer than a row kernel's registers hold (GPT-2's 50,257): the cross
    # entropy re-reads its logits from memory in each pass, at a padded row stride.
    "probe-gpt-bf16-vocab50257": ("tiny-gpt", {"dtype": "bf16", "vocab": 50257}, 4, 1024),
    # A pre-LN ViT without dropout, head dim 64 as ViT-B's (its residual add and the layer
    # norm after it are one row kernel, the QKV bias a GEMM epilogue): 128 images of 17 tokens.
    "probe-vit-bf16": ("tiny-vit", {"dtype": "bf16", "hidden": 256, "heads": 4, "ffn": 512},
                       128, None),
    # Llama at head dim 64 (the wgmma attention), grouped-query, rotary angles at positions up
    # to 1,023; and with activation checkpointing (its rotary table in a loop of its own).
    "probe-llama-bf16-gqa-ragged": ("llama-tiny", {"dtype": "bf16", "hidden": 256, "ffn": 688,
                                                   "heads": 4, "kv_heads": 2}, 8, 1024),
    "probe-llama-bf16-checkpointed": ("llama-tiny", {"dtype": "bf16", "hidden": 256, "ffn": 688,
                                                     "heads": 4, "kv_heads": 1,
                                                     "activation_checkpointing": True}, 4, 512),
    # Checkpointing that keeps no attention results (recompute_attention): the backward runs
    # each attention forward again, with dropout drawing the forward's mask.
    "probe-llama-bf16-recompute-attention": ("llama-tiny", {"dtype": "bf16", "hidden": 256,
                                                            "ffn": 688, "heads": 4, "kv_heads": 1,
                                                            "activation_checkpointing": True,
                                                            "recompute_attention": True}, 4, 512),
    # Attention dropout on the tensor-core kernels (fp16/bf16 only; the fp32 presets run the
    # warp-per-row kernels): their masks must be the reference's bit for bit, or gradients
    # differ by tens of percent. Head dim 64, causal, 8 sequences of 1,024.
    "probe-gpt-bf16-d64-dropout": ("tiny-gpt", {"dtype": "bf16", "hidden": 256, "ffn": 512,
                                                "attention_dropout": 0.1}, 8, 1024),
    "probe-bert-fp32-dropout-recompute-attention": ("tiny-bert", {"dtype": "fp32",
                                                                  "attention_dropout": 0.1,
                                                                  "hidden_dropout": 0.1,
                                                                  "activation_checkpointing": True,
                                                                  "recompute_attention": True},
                                                    8, 128),
}
# Probes whose sequences have random lengths in [1, length] (the rest equal lengths).
RAGGED = {name for name in PROBES if name.endswith("-ragged")}
STEPS = 3
TOL = 1e-4
# A whole train step may take 10x the per-kernel tolerances of DESIGN.md.
STEP_TOL = {"fp32": 1e-4, "fp16": 5e-2, "bf16": 2e-1}
WORK = os.path.join(ROOT, ".gpu-run", "step")


def probe_batch(d, seqs, length, rng, ragged=False):
    """Packed sequences of `length` tokens (ragged: random lengths in [1, length]):
    next-token labels (decoder) or 15% masked-LM labels; for a ViT `seqs` images."""
    if d["architecture"] == "vit":
        S, C = d["image_size"], d["channels"]
        n = (S // d["patch_size"]) ** 2 + 1
        return dict(pixels=rng.normal(size=(seqs, C, S, S)).astype(np.float32),
                    cu_seqlens=(np.arange(seqs + 1) * n).astype(np.int32),
                    labels=rng.integers(0, d["num_classes"], seqs).astype(np.int32))
    lengths = rng.integers(1, length + 1, seqs) if ragged else np.full(seqs, length)
    n = int(lengths.sum())
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    pos = np.concatenate([np.arange(m) for m in lengths]).astype(np.int32)
    ids = rng.integers(1, d["vocab"], n).astype(np.int32)
    if d["architecture"] == "encoder":
        labels = np.where(rng.random(n) < 0.15, rng.integers(0, d["vocab"], n), -100)
        return dict(input_ids=ids, token_type_ids=np.zeros(n, np.int32), position_ids=pos,
                    cu_seqlens=cu, labels=labels.astype(np.int32))
    labels = np.append(ids[1:], -100).astype(np.int32)
    labels[cu[1:] - 1] = -100
    return dict(input_ids=ids, position_ids=pos, cu_seqlens=cu, labels=labels)


def cases(probes):
    """(name, description, batch shape or None) of the presets and, with probes, the probes."""
    out = [(n, json.load(open(os.path.join(ROOT, "examples", n + ".json"))), None) for n in PRESETS]
    for name, (preset, overrides, seqs, length) in (PROBES.items() if probes else []):
        d = json.load(open(os.path.join(ROOT, "examples", preset + ".json")))
        if d["architecture"] == "vit":  # an image's tokens: its patches and the class token
            tokens = (d["image_size"] // d["patch_size"]) ** 2 + 1
            d.update(overrides, name=name, max_batch_tokens=seqs * tokens)
        else:
            d.update(overrides, name=name, max_seq_len=length, max_batch_tokens=seqs * length)
        for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
            if k in d and k not in overrides:
                d[k] = 0.0
        out.append((name, d, (seqs, length)))
    return out


def exclude_from_git(folder):
    """Adds /folder/ to the clone's info/exclude so the prepared files never travel as
    untracked files of the working tree."""
    try:
        path = subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return
    path = os.path.join(ROOT, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    if f"/{folder}/" not in lines:
        with open(path, "a") as f:
            f.write(f"/{folder}/\n")


def prepare(ls2c, probes, only=frozenset()):
    exclude_from_git(".gpu-run")
    for name, d, shape in cases(probes):
        if only and name in PROBES and name not in only:
            continue
        out = os.path.join(WORK, name)
        os.makedirs(out, exist_ok=True)
        json.dump(d, open(os.path.join(out, "model.json"), "w"))
        c = jm.config(ro.description(os.path.join(out, "model.json")))
        rng = np.random.default_rng(ro.SEED)
        save_file(ro.parameters(c, rng), os.path.join(out, "params.safetensors"))
        batch = (ro.batch(c, rng) if shape is None
                 else probe_batch(d, *shape, rng, ragged=name in RAGGED))
        save_file(batch, os.path.join(out, "batch.safetensors"))
        subprocess.run([ls2c, "step", os.path.join(out, "model.json"), "--device", "cpu",
                        "--params", os.path.join(out, "params.safetensors"),
                        "--batch", os.path.join(out, "batch.safetensors"),
                        "-o", os.path.join(out, "reference.safetensors"),
                        "--steps", str(STEPS), "--precision", "f32"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([ls2c, "compile", os.path.join(out, "model.json"), "--arch=sm_90",
                        "-o", os.path.join(out, "model.ls2b")], check=True)
        print(f"{name}: prepared in {out}")


def rel(a, b):
    den = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / den) if den > 0 else float(np.linalg.norm(a - b))


def step_errors(got, ref):
    """Relative L2 errors of a GPU run's outputs against the reference's: loss, grad_norm, lr,
    the worst first-step gradient and the worst final parameter (with their names), and how
    many parameters were left out."""
    errs = {k: rel(got[k], ref[k]) for k in ("loss", "grad_norm", "lr")}
    grads = [k for k in ref if k.startswith("grad/")]
    # A gradient that is zero in exact arithmetic (attention's key bias:
    # softmax ignores a constant added to a row's scores) holds only
    # rounding noise on both sides; it is measured against 1e-4 of the
    # norm of all gradients instead of its own norm (run_oracle.py does
    # the same with 1e-6 in float64).
    scale = float(np.sqrt(sum(float(np.sum(ref[k] ** 2)) for k in grads)))
    gerr = {k: float(np.linalg.norm(got[k] - ref[k]) /
                     max(np.linalg.norm(ref[k]), 1e-4 * scale)) for k in grads}
    # Adam turns that noise into learning-rate-sized updates of opposite
    # signs, so parameters are compared where their gradient is not zero.
    perr, excluded = {}, 0
    for k in grads:
        pname = k[len("grad/"):]
        keep = np.abs(ref[k]) > 1e-7 * scale
        excluded += int(np.sum(~keep))
        a, b = got["param/" + pname][keep], ref["param/" + pname][keep]
        perr["param/" + pname] = rel(a, b) if b.size else 0.0

    # A NaN error (a NaN or infinite output) is the worst of all.
    def badness(errors, k):
        return (not math.isfinite(errors[k]), errors[k] if math.isfinite(errors[k]) else 0.0)
    worst_g = max(gerr, key=lambda k: badness(gerr, k))
    worst_p = max(perr, key=lambda k: badness(perr, k))
    errs["grads"] = gerr[worst_g]
    errs["params"] = perr[worst_p]
    return errs, worst_g, worst_p, excluded


def compare(directory):
    failed = 0
    print(f"{'case':26} {'loss':>9} {'grad_norm':>9} {'lr':>9} {'grads':>9} {'params':>9} "
          f"{'zero-g':>6}")
    names = PRESETS + [p for p in PROBES if os.path.isdir(os.path.join(WORK, p))]
    agreement = []
    for name in names:
        if not os.path.exists(os.path.join(WORK, name, "reference.safetensors")):
            sys.exit(f"{os.path.join(WORK, name)}: no CPU reference; run "
                     "`scripts/gpu-step-check.py prepare` (or scripts/gpu-all.sh prepare) first")
        dtype = json.load(open(os.path.join(WORK, name, "model.json"))).get("dtype", "fp32")
        tol = STEP_TOL.get(dtype, TOL)
        ref = load_file(os.path.join(WORK, name, "reference.safetensors"))
        path = os.path.join(directory, name + ".safetensors")
        if not os.path.exists(path):
            print(f"{name:26} missing {path}")
            failed += 1
            continue
        runs = [(name, load_file(path))]
        # The same case with cuDNN's attention (--attention cudnn), where it ran.
        cudnn = os.path.join(directory, name + ".cudnn.safetensors")
        if os.path.exists(cudnn):
            runs.append((name + " cudnn", load_file(cudnn)))
        for label, got in runs:
            errs, worst_g, worst_p, excluded = step_errors(got, ref)
            ok = all(math.isfinite(v) and v <= tol for v in errs.values())
            failed += not ok
            print(f"{label:26} " + " ".join(f"{errs[k]:9.2e}" for k in
                                            ("loss", "grad_norm", "lr", "grads", "params"))
                  + f"  {excluded:6d}  {tol:.0e}" + ("  ok" if ok else
                                          f"  FAIL (worst gradient {worst_g}, parameter {worst_p})"))
        if len(runs) == 2:
            # cuDNN against the generated kernels, both on the GPU in the model's dtype: the
            # first step's loss and gradients within the per-kernel tolerance (the step's / 10).
            # Gradients that are zero in exact arithmetic (below 1e-4 of all gradients' norm in
            # the reference) are rounding noise in both runs: the rows above bound them.
            (_, kern), (_, cud) = runs
            grads = [k for k in ref if k.startswith("grad/")]
            scale = float(np.sqrt(sum(float(np.sum(ref[k] ** 2)) for k in grads)))
            kept = [k for k in grads if np.linalg.norm(ref[k]) >= 1e-4 * scale]
            gerr = {k: rel(cud[k], kern[k]) for k in kept}
            worst_g = max(gerr, key=lambda k: (not math.isfinite(gerr[k]),
                                              gerr[k] if math.isfinite(gerr[k]) else 0.0))
            lerr = rel(cud["loss"], kern["loss"])
            ok = all(math.isfinite(e) and e <= tol / 10 for e in (lerr, gerr[worst_g]))
            failed += not ok
            agreement.append(f"{name:26} loss {lerr:9.2e}  grads {gerr[worst_g]:9.2e}"
                             f"  ({len(grads) - len(kept)} zero)  {tol / 10:.0e}" +
                             ("  ok" if ok else f"  FAIL ({worst_g})"))
    print("relative L2 errors; grads and params: the worst tensor; then the parameters left out "
          "of the comparison because their gradient is zero in exact arithmetic, and the "
          "tolerance (a train step's: 10x DESIGN.md's per-kernel one for the model's dtype)")
    if agreement:
        print("\ncuDNN's attention against the generated kernels (first step, both on the GPU):")
        print("\n".join(agreement))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["prepare", "compare"])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--ls2c", default=os.path.join(ROOT, "build", "tools", "ls2c", "ls2c"))
    ap.add_argument("--probes", action="store_true",
                    help="prepare: also the 16,384-token probes (a few minutes of CPU)")
    ap.add_argument("--only", action="append", default=[], metavar="PROBE",
                    help="prepare: of the probes, only these (repeatable; implies --probes)")
    a = ap.parse_args()
    unknown = [p for p in a.only if p not in PROBES]
    if unknown:
        ap.error(f"--only {unknown[0]}: not a probe ({', '.join(PROBES)})")
    if a.mode == "prepare":
        prepare(a.ls2c, a.probes or bool(a.only), set(a.only))
        return 0
    if not a.dir:
        ap.error("compare needs DIR, the folder of the GPU outputs (<preset>.safetensors)")
    return compare(a.dir)


if __name__ == "__main__":
    sys.exit(main())
