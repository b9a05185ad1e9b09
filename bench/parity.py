#!/usr/bin/env python3
"""Loss-curve parity of ls2c and an independent PyTorch model (bench/torch_models.py).

Each case is a preset (examples/*.json) made deterministic for the check: every dropout rate 0
and the warmup shortened to steps // 10 (total_steps of a linear or cosine schedule set to
2 x steps), so the N steps train at a real learning rate (some cases scale the lr, see CASES).
Both sides start from the same parameters (a safetensors file drawn from ls2c's initial distributions, init_parameters())
and train N steps (default 50) on the same fixed packed batch (batches.make_batch): ls2c through
`ls2c step` (CPU reference backend, f32) or `ls2c-gpu-step` (a bundle on the GPU), PyTorch through
torch_train.TrainStep (AMP for fp16/bf16, GradScaler for fp16, fused AdamW on CUDA, TF32 off).
Per step the losses must agree within a relative 1e-4 (fp32) or 1e-2 (fp16, bf16); the learning
rates within 1e-5 of the peak. Gradient norms and the worst first-step gradients (relative L2
error per parameter, ls2c's grad/<name> against PyTorch's unscaled, unclipped ones) are printed,
not checked; --noise-floor also prints how far PyTorch's own AMP curve drifts from its fp32 one.

    prepare --out DIR [--case C ...]     (compiler machine) DIR/C/model.json and, unless
                                         --no-bundle, DIR/C/model.ls2b (ls2c compile --arch)
    run --backend cpu [--case C ...]     ls2c step on this machine; torch on --device (cpu)
    run --backend gpu --dir DIR          ls2c-gpu-step on DIR's bundles; torch on cuda

Prints a table per case and a summary; writes --json; exits 1 if any case fails, 2 on a
missing input.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# case: (preset, dtype override or None, sequences, max tokens per sequence, uniform lengths,
#        factor on the preset's lr). gpt2-small trains at a quarter of its lr 6e-4: at the full rate
#        (and a 5-step warmup) a loss spike at step 4 makes the 50 steps chaotic, and PyTorch's own
#        bf16 AMP curve drifts 25% from its fp32 curve (0.8% at a quarter; H200, 2026-11-29).
CASES = {
    "tiny-bert": ("tiny-bert", None, 4, 32, False, 1.0),
    "tiny-gpt": ("tiny-gpt", None, 4, 32, False, 1.0),
    "tiny-transformer": ("tiny-transformer", None, 4, 32, False, 1.0),
    "tiny-vit": ("tiny-vit", None, 8, 0, True, 1.0),
    "bert-base-fp32": ("bert-base", "fp32", 8, 512, False, 1.0),
    "bert-base": ("bert-base", None, 8, 512, False, 1.0),
    "gpt2-small-fp32": ("gpt2-small", "fp32", 8, 1024, False, 0.25),
    "gpt2-small": ("gpt2-small", None, 8, 1024, False, 0.25),
    "bert-base-ckpt": ("bert-base", None, 8, 512, False, 1.0),
    "gpt2-small-ckpt": ("gpt2-small", None, 8, 1024, False, 0.25),
}
# Description fields a case sets on its preset: the checkpointed cases run the fp16/bf16 train
# step that casts each layer's compute copy on its own and recomputes it in the backward.
CASE_FIELDS = {
    "bert-base-ckpt": {"activation_checkpointing": True},
    "gpt2-small-ckpt": {"activation_checkpointing": True},
}
CPU_CASES = ["tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit"]
GPU_CASES = CPU_CASES + ["bert-base-fp32", "bert-base", "gpt2-small-fp32", "gpt2-small",
                         "bert-base-ckpt", "gpt2-small-ckpt"]
TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
LR_TOL = 1e-5
SEED = 1234


def parity_description(case, steps):
    """The case's description: the preset, dropout 0, a schedule shortened to `steps`, the
    case's lr factor."""
    preset, dtype = CASES[case][:2]
    lr_factor = CASES[case][5]
    d = json.load(open(os.path.join(ROOT, "examples", preset + ".json")))
    d["name"] = "parity-" + case
    for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
        d[k] = 0.0
    if dtype:
        d["dtype"] = dtype
    d.update(CASE_FIELDS.get(case, {}))
    opt = d.setdefault("optimizer", {})
    if lr_factor != 1.0:
        opt["lr"] = opt.get("lr", 1e-4) * lr_factor
    sched = opt.setdefault("schedule", {})
    if sched.get("warmup_steps", 0) > 0:
        sched["warmup_steps"] = max(1, min(sched["warmup_steps"], steps // 10))
    if sched.get("type") in ("linear", "cosine"):
        sched["total_steps"] = max(2 * steps, sched["warmup_steps"])
    return d


def prepare(args):
    for case in args.case or GPU_CASES:
        out = os.path.join(args.out, case)
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "model.json")
        json.dump(parity_description(case, args.steps), open(path, "w"), indent=1)
        json.dump({"case": case, "steps": args.steps}, open(os.path.join(out, "case.json"), "w"))
        if not args.no_bundle:
            subprocess.run([args.ls2c, "compile", path, "--arch=" + args.arch, "-o",
                            os.path.join(out, "model.ls2b")], check=True)
        print(f"{case}: prepared {out}")
    return 0


def run_ls2c(args, case_dir, c, steps):
    """Runs ls2c on case_dir's params and batch; returns {"loss", "grad_norm", "lr"} lists."""
    from safetensors.numpy import load_file
    out = os.path.join(case_dir, "ls2c-out.safetensors")
    p, b = os.path.join(case_dir, "params.safetensors"), os.path.join(case_dir, "batch.safetensors")
    if args.backend == "cpu":
        cmd = [args.ls2c, "step", os.path.join(case_dir, "model.json"), "--params", p, "--batch", b,
               "-o", out, "--steps", str(steps), "--precision", "f32"]
    else:
        cmd = [args.gpu_step, os.path.join(case_dir, "model.ls2b"), "--params", p, "--batch", b,
               "-o", out, "--steps", str(steps)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    f = load_file(out)
    if not args.keep:
        os.remove(out)  # F64 gradients and parameters: 1.7 GB for BERT-base
    r = {k: [float(x) for x in f[k]] for k in ("loss", "grad_norm", "lr")}
    r["grads"] = {k[5:]: v for k, v in f.items() if k.startswith("grad/")}
    return r, time.time() - t0


def run_torch(args, case_dir, c, arrays, lengths, params, steps):
    import torch
    from batches import to_torch
    from torch_models import Model, load_parameters
    from torch_train import TrainStep
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device(args.device or ("cuda" if args.backend == "gpu" else "cpu"))
    model = Model(c).to(dev)
    load_parameters(model, params)
    model.train()
    grads = {}

    def keep(m):  # the first step's unscaled gradients, before clipping
        grads.update({n: p.grad.detach().double().cpu().numpy() for n, p in m.named_reference_parameters()
                      if p.grad is not None})

    trainer = TrainStep(model, c, track=True, grad_hook=keep)
    batch = to_torch(arrays, lengths, dev)
    t0 = time.time()
    for _ in range(steps):
        trainer.step(batch)
    dt = time.time() - t0
    h = trainer.history
    return {"loss": [x[0] for x in h], "grad_norm": [x[1] for x in h], "lr": [x[2] for x in h],
            "skipped": [x[3] for x in h], "grads": grads}, dt


def gradient_errors(ours, theirs):
    """First-step gradients, parameter by parameter: [(relative L2 error, name, |ls2c| / |torch|)],
    worst first. A gradient that is zero in exact arithmetic (attention key biases) is measured
    against 1e-4 of the norm of all gradients, as scripts/gpu-step-check.py does."""
    import numpy as np
    scale = float(np.sqrt(sum(float(np.sum(g * g)) for g in theirs.values())))
    out = []
    for name, b in theirs.items():
        a = ours.get(name)
        if a is None or a.shape != b.shape:
            out.append((float("inf"), name, float("nan")))
            continue
        nb = float(np.linalg.norm(b))
        out.append((float(np.linalg.norm(a - b)) / max(nb, 1e-4 * scale, 1e-30), name,
                    float(np.linalg.norm(a)) / nb if nb > 0 else float("nan")))
    return sorted(out, reverse=True)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def check_case(args, case):
    import numpy as np
    from safetensors.numpy import save_file
    from batches import make_batch, save_batch
    from torch_models import config, init_parameters
    preset, _, nseq, seqlen, uniform, _ = CASES[case]
    case_dir = os.path.join(args.dir, case)
    os.makedirs(case_dir, exist_ok=True)
    desc_path = os.path.join(case_dir, "model.json")
    if args.backend == "cpu" and not os.path.exists(desc_path):
        json.dump(parity_description(case, args.steps), open(desc_path, "w"), indent=1)
    if not os.path.exists(desc_path) or (args.backend == "gpu" and
                                         not os.path.exists(os.path.join(case_dir, "model.ls2b"))):
        raise FileNotFoundError(f"{case_dir}: model.json/model.ls2b missing (run `parity.py prepare`)")
    c = config(json.load(open(desc_path)))
    params = init_parameters(c, SEED)
    save_file(params, os.path.join(case_dir, "params.safetensors"))
    arrays, lengths = make_batch(c, nseq, seqlen or c["max_seq_len"], seed=SEED, uniform=uniform)
    save_batch(arrays, os.path.join(case_dir, "batch.safetensors"))
    ours, t_ours = run_ls2c(args, case_dir, c, args.steps)
    theirs, t_theirs = run_torch(args, case_dir, c, arrays, lengths, params, args.steps)
    floor = None
    if args.noise_floor and c["dtype"] != "fp32":  # PyTorch AMP against PyTorch fp32: low precision's own drift
        ref, _ = run_torch(args, case_dir, dict(c, dtype="fp32"), arrays, lengths, params, args.steps)
        floor = max(rel(a, b) for a, b in zip(theirs["loss"], ref["loss"]))
    tol, peak = TOL[c["dtype"]], c["optimizer"]["lr"]
    errs = [rel(a, b) for a, b in zip(ours["loss"], theirs["loss"])]
    lr_errs = [abs(a - b) / peak for a, b in zip(ours["lr"], theirs["lr"])]
    worst = int(np.argmax(errs))
    ok = max(errs) <= tol and max(lr_errs) <= LR_TOL and all(np.isfinite(ours["loss"]))
    tokens = int(arrays["cu_seqlens"][-1]) if "cu_seqlens" in arrays else int(arrays["tgt_cu_seqlens"][-1])
    print(f"\n{case} ({c['dtype']}, {len(arrays.get('cu_seqlens', arrays.get('src_cu_seqlens'))) - 1} "
          f"sequences, {tokens} tokens, {args.steps} steps; ls2c {t_ours:.1f} s, torch {t_theirs:.1f} s)")
    print(f"  {'step':>4} {'ls2c loss':>12} {'torch loss':>12} {'rel err':>9} {'ls2c |g|':>10} "
          f"{'torch |g|':>10} {'lr':>9}")
    n = args.steps
    rows = sorted({s for s in range(n) if s < 5 or (s + 1) % 10 == 0 or s == n - 1} | {worst})
    for s in rows:
        mark = " <- worst" if s == worst else ""
        skip = " (torch skipped)" if theirs["skipped"][s] else ""
        print(f"  {s + 1:4d} {ours['loss'][s]:12.6f} {theirs['loss'][s]:12.6f} {errs[s]:9.2e} "
              f"{ours['grad_norm'][s]:10.4g} {theirs['grad_norm'][s]:10.4g} {ours['lr'][s]:9.3g}{skip}{mark}")
    gerr = gradient_errors(ours.pop("grads"), theirs.pop("grads"))
    print("  first-step gradients, worst relative L2 errors: " + "; ".join(
        f"{n} {e:.2e} (norm ratio {q:.3g})" for e, n, q in gerr[:3]))
    if floor is not None:
        print(f"  noise floor: PyTorch {c['dtype']} AMP against PyTorch fp32, worst loss difference {floor:.2e}")
    verdict = "ok" if ok else "FAIL"
    print(f"  {verdict}: worst loss error {errs[worst]:.2e} at step {worst + 1} (tolerance {tol:g}); "
          f"worst lr error {max(lr_errs):.1e} of the peak (tolerance {LR_TOL:g}); "
          f"loss {ours['loss'][0]:.4f} -> {ours['loss'][-1]:.4f}")
    return {"case": case, "dtype": c["dtype"], "tokens": tokens, "steps": n, "ok": bool(ok),
            "worst_loss_rel_err": errs[worst], "worst_step": worst + 1, "tolerance": tol,
            "worst_lr_err": max(lr_errs), "ls2c": ours, "torch": theirs,
            "worst_first_step_gradients": [{"name": n, "rel_err": e, "norm_ratio": q} for e, n, q in gerr[:5]],
            "seconds": {"ls2c": t_ours, "torch": t_theirs}, "noise_floor": floor}


def run(args):
    args.dir = args.dir or tempfile.mkdtemp(prefix="ls2c-parity-")
    results, failed = [], 0
    for case in args.case or (CPU_CASES if args.backend == "cpu" else GPU_CASES):
        try:
            r = check_case(args, case)
        except FileNotFoundError as e:
            print(f"{case}: error: {e}", file=sys.stderr)
            return 2
        except Exception as e:  # one case's crash is that case's failure
            print(f"\n{case}: FAIL: {type(e).__name__}: {e}")
            r = {"case": case, "ok": False, "error": str(e)}
        results.append(r)
        failed += not r["ok"]
    print(f"\nparity of loss curves, ls2c ({args.backend}) vs PyTorch:")
    print(f"  {'case':18} {'dtype':5} {'tokens':>6} {'steps':>5} {'worst rel err':>13} {'tol':>6}  result")
    for r in results:
        if "error" in r:
            print(f"  {r['case']:18} {'':5} {'':>6} {'':>5} {'':>13} {'':>6}  FAIL ({r['error'][:60]})")
        else:
            print(f"  {r['case']:18} {r['dtype']:5} {r['tokens']:6d} {r['steps']:5d} "
                  f"{r['worst_loss_rel_err']:13.2e} {r['tolerance']:6g}  {'ok' if r['ok'] else 'FAIL'}")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--no-bundle", action="store_true")
    p.add_argument("--arch", default="sm_90")
    r = sub.add_parser("run")
    r.add_argument("--backend", choices=["cpu", "gpu"], default="cpu")
    r.add_argument("--dir", help="case folders (gpu: those of `prepare`; cpu: default a temporary one)")
    r.add_argument("--gpu-step", default=os.path.join(ROOT, "build/tools/ls2c-gpu-step/ls2c-gpu-step"))
    r.add_argument("--device", help="torch device (default cpu for --backend cpu, cuda for gpu)")
    r.add_argument("--keep", action="store_true", help="keep ls2c's output files")
    r.add_argument("--json", help="write the results here")
    r.add_argument("--noise-floor", action="store_true",
                   help="fp16/bf16 cases: also train PyTorch in fp32 and print how far its AMP curve drifts from it")
    for x in (p, r):
        x.add_argument("--case", action="append", choices=sorted(CASES))
        x.add_argument("--steps", type=int, default=50)
        x.add_argument("--ls2c", default=os.path.join(ROOT, "build/tools/ls2c/ls2c"))
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"--steps must be >= 1, got {args.steps}")
    if args.mode == "prepare" and not args.no_bundle and not os.access(args.ls2c, os.X_OK):
        ap.error(f"--ls2c {args.ls2c}: not an executable (build ls2c, or give --no-bundle)")
    return prepare(args) if args.mode == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
