#!/usr/bin/env python3
"""ls2c beside PyTorch eager and torch.compile: train-step time and memory of the same model.

Configurations (the presets as they are, dropout included, or with the fields named below; the batch is one random packed batch
of equal-length sequences, batches.make_batch):

    bert-base          32 x 512 tokens, fp16 (AMP + GradScaler)
    gpt2-medium        16 x 1024 tokens, bf16 (AMP)
    transformer-base   16 x 256 tokens per side (4,096), fp16
    transformer-base-512  2 x 256 tokens per side (512), fp16 (launch-bound)
    vit-b16            64 images of 224 x 224, bf16
    bert-base-ckpt, gpt2-medium-ckpt   as bert-base and gpt2-medium, with activation_checkpointing
                       (PyTorch: torch.utils.checkpoint around each layer)
    gpt-1.3b-32k       one 32,768-token sequence, bench/models/gpt-1.3b-sp.json (24 x 2048, bf16)
                       with max_seq_len = max_batch_tokens = 32,768; gpt-1.3b-32k-ckpt with
                       activation_checkpointing; gpt-1.3b-64k, gpt-1.3b-128k-ckpt and
                       gpt-1.3b-256k-ckpt the same at 65,536, 131,072 and 262,144 tokens

    prepare --out DIR [--config C ...]   (compiler machine) DIR/C/model.json, DIR/C/model.ls2b
                                         and DIR/C/stats.json: `ls2c compile --stats` figures
                                         (estimated peak bytes, launches) and the bundle's
                                         compile time in seconds with an empty NVRTC cache
    run --dir DIR --gpu-step BIN         (GPU machine) for each configuration:
        PyTorch eager, then torch.compile (default mode): bench/torch_models.Model with fp32
        parameters, autocast, fused AdamW, clipping and the schedule (bench/torch_train.py);
        first step timed on the host clock (for torch.compile: the compilation), then --warmup
        steps, then --steps steps each timed with CUDA events: median, in ms; peak memory =
        torch.cuda.max_memory_allocated over the whole run, in GiB.
        ls2c: `ls2c-gpu-step model.ls2b --init-seed 1 --batch B --steps K --profile --time`:
        the step time is the median of its per-step device times (--time: CUDA events around
        the gradient zeroing, @accumulate_gradients and @optimizer_step, CUDA graphs on);
        a tool without --time gives its --profile sum of the last step instead. Memory: the plan's estimated peak
        (stats.json) and, when nvidia-smi exists, the GPU's memory.used during the run minus
        before it (CUDA context and cuBLASLt workspace included).

Prints one table (ratios: PyTorch time / ls2c time, > 1 means ls2c is faster) and writes
--json (merged with the configurations of an earlier run's file). Exit 1 if a run failed.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# config: (description: an examples/ preset or a bench/models/ file, sequences or images,
# tokens per sequence (per side) or None for ViT, fields set over the description's)
GPT_13B = "models/gpt-1.3b-sp.json"
CONFIGS = {
    "bert-base": ("bert-base", 32, 512, {}),
    "gpt2-medium": ("gpt2-medium", 16, 1024, {}),
    "transformer-base": ("transformer-base", 16, 256, {}),
    "transformer-base-512": ("transformer-base", 2, 256, {}),
    "vit-b16": ("vit-b16", 64, None, {}),
    # Activation checkpointing: ls2c's description field, torch.utils.checkpoint per layer in PyTorch.
    "bert-base-ckpt": ("bert-base", 32, 512, {"activation_checkpointing": True}),
    "gpt2-medium-ckpt": ("gpt2-medium", 16, 1024, {"activation_checkpointing": True}),
    # One 32,768-token sequence through a 1.3B-shaped GPT (bf16), without and with checkpointing.
    "gpt-1.3b-32k": (GPT_13B, 1, 32768, {"max_seq_len": 32768, "max_batch_tokens": 32768}),
    "gpt-1.3b-32k-ckpt": (GPT_13B, 1, 32768, {"max_seq_len": 32768, "max_batch_tokens": 32768,
                                              "activation_checkpointing": True}),
    # Longer single sequences: the longest one GPU holds, without and with checkpointing.
    "gpt-1.3b-64k": (GPT_13B, 1, 65536, {"max_seq_len": 65536, "max_batch_tokens": 65536}),
    "gpt-1.3b-128k-ckpt": (GPT_13B, 1, 131072, {"max_seq_len": 131072, "max_batch_tokens": 131072,
                                                "activation_checkpointing": True}),
    "gpt-1.3b-256k-ckpt": (GPT_13B, 1, 262144, {"max_seq_len": 262144, "max_batch_tokens": 262144,
                                                "activation_checkpointing": True}),
}
DEFAULT = ["bert-base", "gpt2-medium", "transformer-base", "vit-b16"]
GiB = float(1 << 30)


# ---------------------------------------------------------------------------- prepare

def prepare(args):
    for name in args.config or DEFAULT:
        source, _, _, fields = CONFIGS[name]
        out = os.path.join(args.out, name)
        os.makedirs(out, exist_ok=True)
        model = os.path.join(out, "model.json")
        path = os.path.join(HERE, source) if source.endswith(".json") else os.path.join(ROOT, "examples",
                                                                                          source + ".json")
        desc = dict(json.load(open(path)), **fields)
        with open(model + ".tmp", "w") as f:
            json.dump(desc, f, indent=1)
        os.replace(model + ".tmp", model)
        stats = subprocess.run([args.ls2c, "compile", model, "--stats"], check=True, capture_output=True,
                               text=True).stdout
        peak = re.search(r"estimated peak device memory: (\d+) bytes", stats)
        launches = re.search(r"train step \(one micro-batch\): (\d+) launches", stats)
        with tempfile.TemporaryDirectory() as cache:  # cold NVRTC cache: the full compile time
            t0 = time.time()
            subprocess.run([args.ls2c, "compile", model, "--arch=" + args.arch, "-o",
                            os.path.join(out, "model.ls2b")], check=True, env=dict(os.environ, LS2C_CACHE_DIR=cache))
            seconds = time.time() - t0
        json.dump({"estimated_peak_bytes": int(peak.group(1)) if peak else None,
                   "launches_per_step": int(launches.group(1)) if launches else None,
                   "compile_seconds": round(seconds, 2)}, open(os.path.join(out, "stats.json"), "w"))
        print(f"{name}: prepared {out} (bundle compiled in {seconds:.1f} s)")
    return 0


# ---------------------------------------------------------------------------- ls2c

class GpuMemorySampler:
    """memory.used of GPU 0 from `nvidia-smi -lms 50` while running; peak() - baseline in bytes."""

    def __init__(self):
        self.values, self.proc = [], None
        exe = shutil.which("nvidia-smi")
        if not exe:
            return
        q = [exe, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"]
        try:
            self.baseline = int(subprocess.run(q, capture_output=True, text=True, timeout=30).stdout.split()[0])
        except Exception:
            return
        self.proc = subprocess.Popen(q + ["-lms", "50"], stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip().isdigit():
                self.values.append(int(line))

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
        if not self.values:
            return None
        return (max(self.values) - self.baseline) * (1 << 20)


STEP_RE = re.compile(r"^step (\d+): loss ([-\w.+]+), grad norm ([-\w.+]+), lr ([-\w.+]+)"
                     r"(?:, time ([\d.]+) ms(?: \(all-reduce (?:([\d.]+) ms|(overlapped))\))?)?")
PROFILE_RE = re.compile(r"^profile of the last train step: ([\d.]+) ms in (\d+) steps")
MEMORY_RE = re.compile(r"^device memory: peak (\d+) bytes")


def parse_ls2c(lines, warmup):
    """Figures from ls2c-gpu-step's stdout: `step K: loss L, grad norm G, lr R` per step and,
    with --profile, `profile of the last train step: X ms in N steps` followed by
    `  ms share calls step` rows; with --time, `, time T ms` at the end of each step line
    (--data-parallel: `, time T ms (all-reduce A ms)`, T including A, or `(all-reduce
    overlapped)` when the buckets' all-reduces run inside T; the rank prefix
    `rank R: ` stripped by the caller) and `device memory: peak N bytes` (in use after a step,
    the most over the run)."""
    r = {"losses": [], "grad_norms": [], "step_ms": [], "allreduce_ms": [], "profile_ms": None, "top": [],
         "peak_bytes": None}
    in_profile = False
    for line in lines:
        if m := STEP_RE.match(line):
            r["losses"].append(float(m.group(2)))
            r["grad_norms"].append(float(m.group(3)))
            if m.group(5):
                r["step_ms"].append(float(m.group(5)))
            if m.group(6):
                r["allreduce_ms"].append(float(m.group(6)))
            if m.group(7):
                r["allreduce_overlapped"] = True
        elif m := PROFILE_RE.match(line):
            r["profile_ms"], in_profile = float(m.group(1)), True
        elif m := MEMORY_RE.match(line):
            r["peak_bytes"] = int(m.group(1))
        elif in_profile and line.startswith("  ") and len(r["top"]) < 6 and not line.strip().startswith("ms"):
            r["top"].append(line.strip())
    timed = r["step_ms"][warmup:] or r["step_ms"]
    r["ms"] = statistics.median(timed) if timed else r["profile_ms"]
    r["ms_source"] = f"median of {len(timed)} steps (--time)" if timed else "profile of the last step"
    return r


def run_ls2c(args, cfg_dir, batch_path):
    exe = args.gpu_step
    usage = subprocess.run([exe], capture_output=True, text=True).stderr
    timed = "--time" in usage
    steps = args.warmup + args.steps if timed else args.ls2c_steps
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        cmd = [exe, os.path.join(cfg_dir, "model.ls2b"), "--init-seed", "1", "--batch", batch_path,
               "--steps", str(steps), "--profile"]
        if args.attention != "kernels":
            cmd += ["--attention", args.attention]
        if timed:  # -o is optional with --time: no multi-GB F64 output file
            cmd.append("--time")
        else:
            cmd += ["-o", os.path.join(tmp, "out.safetensors")]
        if shutil.which("stdbuf"):
            cmd = ["stdbuf", "-oL"] + cmd
        sampler = GpuMemorySampler()
        t0 = time.time()
        first = None
        lines = []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if first is None and line.startswith("step 1:"):
                first = time.time() - t0
        rc = proc.wait()
        wall = time.time() - t0
        measured = sampler.stop()
    if rc != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` exited {rc}: {' | '.join(lines[-5:])}")
    r = parse_ls2c(lines, args.warmup)
    r.update(wall_s=wall, first_step_s=first, nvidia_smi_peak_bytes=measured, steps_run=steps,
             attention=args.attention)
    return r


# ---------------------------------------------------------------------------- PyTorch

def run_torch(c, arrays, lengths, compiled, args):
    import torch
    from batches import to_torch
    from torch_models import Model
    from torch_train import TrainStep
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    if compiled:
        torch._dynamo.reset()
    model = Model(c, seed=1).cuda().train()
    fwd = torch.compile(model, mode=None if args.compile_mode == "default" else args.compile_mode) if compiled else model
    trainer = TrainStep(model, c, forward=fwd)
    batch = to_torch(arrays, lengths, "cuda")
    torch.cuda.synchronize()
    t0 = time.time()
    loss = trainer.step(batch)
    torch.cuda.synchronize()
    first = time.time() - t0
    first_loss = float(loss.detach())
    for _ in range(args.warmup):
        trainer.step(batch)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(args.steps)]
    for a, b in events:
        a.record()
        trainer.step(batch)
        b.record()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) for a, b in events]
    r = {"ms": statistics.median(times), "ms_min": min(times), "ms_max": max(times), "first_step_s": first,
         "first_loss": first_loss, "peak_gib": torch.cuda.max_memory_allocated() / GiB,
         "reserved_gib": torch.cuda.max_memory_reserved() / GiB}
    del trainer, model, batch, loss
    torch.cuda.empty_cache()
    return r


# ---------------------------------------------------------------------------- run

def fmt(x, spec):
    """format(x, spec), or "-" padded to the spec's width when x is missing."""
    if isinstance(x, (int, float)):
        return format(x, spec)
    width = re.match(r"\d*", spec).group()
    return "-".rjust(int(width or 0))


def bench_config(args, name):
    import torch
    from batches import make_batch, save_batch
    from torch_models import config
    cfg_dir = os.path.join(args.dir, name)
    c = config(json.load(open(os.path.join(cfg_dir, "model.json"))))
    stats = json.load(open(os.path.join(cfg_dir, "stats.json")))
    _, nseq, seqlen, _ = CONFIGS[name]
    arrays, lengths = make_batch(c, nseq, seqlen or c["max_seq_len"], seed=1, uniform=True)
    tokens = int((arrays.get("cu_seqlens") if "cu_seqlens" in arrays else arrays["src_cu_seqlens"])[-1])
    res = {"config": name, "dtype": c["dtype"], "sequences": nseq, "tokens": tokens, "ls2c_stats": stats}
    print(f"\n== {name}: {nseq} sequences, {tokens} tokens{' per side' if 'src_ids' in arrays else ''}, "
          f"{c['dtype']}", flush=True)
    if not args.skip_ls2c:
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            path = os.path.join(tmp, "batch.safetensors")
            save_batch(arrays, path)
            try:
                res["ls2c"] = run_ls2c(args, cfg_dir, path)
                r = res["ls2c"]
                print(f"ls2c: {fmt(r['ms'], '.2f')} ms/step ({r['ms_source']}), first loss "
                      f"{fmt(r['losses'][0] if r['losses'] else None, '.4f')}, start to first step "
                      f"{fmt(r['first_step_s'], '.1f')} s; top: {r['top'][:3]}", flush=True)
            except Exception as e:
                res["ls2c"] = {"error": str(e)}
                print(f"ls2c: FAILED: {e}", flush=True)
    modes = ([] if args.skip_eager else ["eager"]) + ([] if args.skip_compile else ["compile"])
    for mode in [] if args.skip_torch else modes:
        try:
            res[mode] = run_torch(c, arrays, lengths, mode == "compile", args)
            r = res[mode]
            print(f"torch {mode}: {r['ms']:.2f} ms/step (min {r['ms_min']:.2f}, max {r['ms_max']:.2f}), peak "
                  f"{r['peak_gib']:.2f} GiB, first step {r['first_step_s']:.1f} s, first loss {r['first_loss']:.4f}",
                  flush=True)
        except Exception as e:
            res[mode] = {"error": f"{type(e).__name__}: {e}"[:500]}
            print(f"torch {mode}: FAILED: {res[mode]['error']}", flush=True)
            torch.cuda.empty_cache()
    return res


def print_table(results):
    print("\nside by side (ms per train step, median; speedup = PyTorch ms / ls2c ms; memory in GiB):")
    print(f"{'config':20} {'tokens':>6} {'eager':>8} {'compile':>8} {'ls2c':>8} {'vs eager':>8} {'vs comp':>8} "
          f"{'mem eager':>9} {'mem comp':>8} {'ls2c plan':>9} {'ls2c smi':>8} {'compile s':>9} {'ls2c s':>6}")
    for r in results:
        e, k, l = r.get("eager", {}), r.get("compile", {}), r.get("ls2c", {})
        lm = l.get("ms")
        sp = lambda t: t.get("ms") / lm if t.get("ms") and lm else None  # noqa: E731
        plan = r["ls2c_stats"].get("estimated_peak_bytes")
        # The sampler's growth over the device's use before the run; ls2c-gpu-step's own
        # peak (cudaMemGetInfo: the whole device, this process's torch memory from earlier
        # configs included) is the fallback.
        smi = l.get("nvidia_smi_peak_bytes") or l.get("peak_bytes")
        print(f"{r['config']:20} {r['tokens']:6d} {fmt(e.get('ms'), '8.2f')} {fmt(k.get('ms'), '8.2f')} "
              f"{fmt(lm, '8.2f')} {fmt(sp(e), '8.2f')} {fmt(sp(k), '8.2f')} {fmt(e.get('peak_gib'), '9.2f')} "
              f"{fmt(k.get('peak_gib'), '8.2f')} {fmt(plan / GiB if plan else None, '9.2f')} "
              f"{fmt(smi / GiB if smi else None, '8.2f')} {fmt(k.get('first_step_s'), '9.1f')} "
              f"{fmt(r['ls2c_stats'].get('compile_seconds'), '6.1f')}")
    print("compile s: torch.compile's first step; ls2c s: the bundle's compile (NVRTC, empty cache) on the "
          "compiler machine. ls2c plan: estimated peak of the static plan; ls2c smi: nvidia-smi memory.used "
          "during the run minus before (CUDA context included).")


def run(args):
    import torch
    results = []
    for name in args.config or DEFAULT:
        if not os.path.exists(os.path.join(args.dir, name, "model.ls2b")):
            print(f"{name}: missing {args.dir}/{name}/model.ls2b (run `side_by_side.py prepare`)", file=sys.stderr)
            return 2
        results.append(bench_config(args, name))
    print_table(results)
    failed = [r["config"] for r in results for m in ("ls2c", "eager", "compile") if "error" in r.get(m, {})]
    meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "steps": args.steps, "warmup": args.warmup,
            "compile_mode": args.compile_mode}
    if args.json:  # merged with an earlier run's file: configurations benchmarked in separate calls
        done = {r["config"] for r in results}
        if os.path.exists(args.json):
            results = [r for r in json.load(open(args.json))["results"] if r["config"] not in done] + results
        json.dump({"meta": meta, "results": results}, open(args.json, "w"), indent=1)
        print(f"wrote {args.json}")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--ls2c", default=os.path.join(ROOT, "build/tools/ls2c/ls2c"))
    p.add_argument("--arch", default="sm_90")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--gpu-step", default=os.path.join(ROOT, "build/tools/ls2c-gpu-step/ls2c-gpu-step"))
    r.add_argument("--steps", type=int, default=20, help="timed PyTorch steps (and ls2c with --time)")
    r.add_argument("--warmup", type=int, default=3, help="untimed steps after the first")
    r.add_argument("--ls2c-steps", type=int, default=3, help="ls2c steps when it has no --time (profile: the last)")
    r.add_argument("--skip-compile", action="store_true")
    r.add_argument("--skip-eager", action="store_true",
                   help="no PyTorch eager run (a second run in another --compile-mode)")
    r.add_argument("--compile-mode", default="default", help="torch.compile mode (default, reduce-overhead, ...)")
    r.add_argument("--skip-ls2c", action="store_true")
    r.add_argument("--attention", choices=["kernels", "cudnn", "auto"], default="kernels",
                   help="ls2c's attention: the generated kernels, cuDNN's fused attention, or per shape "
                        "the faster of the two (timed on the first step)")
    r.add_argument("--skip-torch", action="store_true", help="ls2c alone (lengths PyTorch would take minutes on)")
    r.add_argument("--tmp", help="folder for ls2c's output files (GBs for big models)")
    r.add_argument("--json")
    for x in (p, r):
        x.add_argument("--config", action="append", choices=sorted(CONFIGS))
    args = ap.parse_args()
    if args.mode == "prepare" and not os.access(args.ls2c, os.X_OK):
        ap.error(f"--ls2c {args.ls2c}: not an executable (build ls2c first)")
    if args.mode == "run" and not os.path.isdir(args.dir):
        ap.error(f"--dir {args.dir}: no such folder (make it with `prepare`)")
    if args.mode == "run" and (min(args.steps, args.ls2c_steps) < 1 or args.warmup < 0):
        ap.error("--steps and --ls2c-steps must be >= 1, --warmup >= 0")
    return prepare(args) if args.mode == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
