#!/usr/bin/env python3
"""ls2c data parallel beside PyTorch DDP with torch.compile: tokens/s and scaling efficiency.

Weak scaling, as DDP is used: every GPU trains on its own batch of the configuration's size
(side_by_side.py's configurations: the presets as they are, dropout included, or with the fields
it names):

    bert-base      32 x 512 tokens per GPU, fp16 (AMP + GradScaler)
    gpt2-medium    16 x 1024 tokens per GPU, bf16 (AMP)
    (the default two; side_by_side.py's transformer-base, transformer-base-512 and vit-b16 run too)

Rank R's batch is batches.make_batch(seed 1 + R) of equal-length sequences (rank 0's is the
batch of side_by_side.py), in DIR/C/batch.R.safetensors; ls2c and PyTorch read the same files.

    prepare --out DIR [--config C ...] [--ranks 8]     (compiler machine, no torch needed)
        DIR/C/model.json, model.ls2b (--arch, default sm_90) and stats.json as
        `side_by_side.py prepare` writes them, and batch.R.safetensors for R < --ranks
        (0.3 MiB each; a bundle is about 2 MiB)
    run --dir DIR --gpu-step BIN [--gpus 1,2] [--steps 20] [--warmup 5]   (GPU machine)
        for each configuration and each world size N of --gpus (default 1,2; e.g. 1,2,4,8;
        sizes above the machine's GPU count are skipped, and said so; batch files still missing
        are written first), ls2c first:
        ls2c: N processes of `BIN DIR/C/model.ls2b --init-seed 1 --batch
            DIR/C/batch.{rank}.safetensors --steps WARMUP+STEPS --time --data-parallel` (plus
            --ls2c-args) with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
            MASTER_ADDR=127.0.0.1, a free MASTER_PORT); N = 1: one process on batch.0, without
            --data-parallel. Step time: per rank, the median over the steps after the first
            WARMUP of `time T ms` (device time, CUDA events: gradient zeroing,
            @accumulate_gradients, the NCCL all-reduce, @optimizer_step), the slowest rank's;
            beside it the all-reduce's part (`(all-reduce A ms)`) and the wall-clock interval
            between consecutive step lines (host synchronization and downloads included). A tool
            whose data-parallel step lines lack the all-reduce (built before --time counted it) is
            measured by the wall-clock interval instead, at every N of that configuration.
        PyTorch: `python -m torch.distributed.run --standalone --nproc_per_node N` of this
            file's `worker`: bench/torch_models.Model with fp32 parameters, autocast, fused
            AdamW, clipping and the schedule (torch_train.TrainStep, as side_by_side.py). N > 1:
            DistributedDataParallel(model, device_ids=[local rank]) with its defaults (25 MiB
            buckets, no static graph), then torch.compile of the DDP module (default mode;
            torch._dynamo.config.optimize_ddp left as PyTorch sets it, and recorded). N = 1:
            torch.compile of the bare model, no DDP wrapper, so that all of DDP's cost counts
            in the scaling efficiency. The first step (the compilation) is timed on the host
            clock, then WARMUP steps, a barrier, and STEPS steps each timed with CUDA events;
            every rank's median, the slowest reported (also the wall time of the timed loop per
            step); peak memory = torch.cuda.max_memory_allocated, the largest rank's.

Figures per configuration, N and system: median step ms, tokens/s = N x tokens per GPU / step
seconds, scaling efficiency = tokens/s at N / (N x tokens/s at N = 1) of the same system, and
ls2c / DDP tokens/s. Prints one markdown table last; --json writes the runs and the figures,
merged with the runs of an earlier file for other (configuration, N, system), so runs split over
several calls make one table; the file is rewritten after every run. Every subprocess has a
timeout (--ls2c-timeout, --torch-timeout, cut to end within --budget): a failed or timed-out run
prints one FAILED line and the next run goes on. Exit status 0; 1 if a run failed; 2 on bad
input (one line on stderr).
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import socket
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
from bench_cli import Parser, fail, run_mode  # noqa: E402 (after the path)
from side_by_side import CONFIGS, parse_ls2c  # noqa: E402 (after the path)
from side_by_side import prepare as prepare_bundles  # noqa: E402

DEFAULT = ["bert-base", "gpt2-medium"]
SYSTEMS = ("ddp", "ls2c")
GiB = float(1 << 30)


# ---------------------------------------------------------------------------- batches

def batch_path(cfg_dir, rank):
    return os.path.join(cfg_dir, f"batch.{rank}.safetensors")


def write_batches(cfg_dir, name, ranks):
    """batch.R.safetensors for R < ranks that are missing (make_batch, seed 1 + R); the count
    written."""
    from batches import make_batch, save_batch
    from descriptions import config
    c = config(json.load(open(os.path.join(cfg_dir, "model.json"))))
    _, nseq, seqlen, _ = CONFIGS[name]
    written = 0
    for r in range(ranks):
        if not os.path.exists(batch_path(cfg_dir, r)):
            arrays, _ = make_batch(c, nseq, seqlen or c["max_seq_len"], seed=1 + r, uniform=True)
            save_batch(arrays, batch_path(cfg_dir, r))
            written += 1
    return written


def batch_tokens(path):
    """Tokens of a batch file as side_by_side.py counts them (per side for encoder-decoder)."""
    from safetensors.numpy import load_file
    a = load_file(path)
    return int((a["cu_seqlens"] if "cu_seqlens" in a else a["src_cu_seqlens"])[-1])


# ---------------------------------------------------------------------------- prepare

def prepare(args):
    if not (os.path.isfile(args.ls2c) and os.access(args.ls2c, os.X_OK)):
        fail(f"--ls2c {args.ls2c}: no such executable (build ls2c, or name it)")
    if args.ranks < 1:
        fail(f"--ranks {args.ranks}: must be >= 1")
    configs = args.config or DEFAULT
    prepare_bundles(argparse.Namespace(out=args.out, config=configs, ls2c=args.ls2c, arch=args.arch))
    for name in configs:
        d = os.path.join(args.out, name)
        for f in os.listdir(d):  # an earlier prepare's batches: made again
            if f.startswith("batch.") and f.endswith(".safetensors"):
                os.remove(os.path.join(d, f))
        write_batches(d, name, args.ranks)
        mib = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / (1 << 20)
        print(f"{name}: {args.ranks} batch files of {batch_tokens(batch_path(d, 0))} tokens; "
              f"{d}: {mib:.1f} MiB")
    return 0


# ---------------------------------------------------------------------------- processes

def free_port():
    """A TCP port free on this host now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_count():
    """GPUs this process may use: nvidia-smi -L (limited by CUDA_VISIBLE_DEVICES), else torch's
    count in a child process, else 0."""
    n = None
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=60).stdout
            n = sum(1 for line in out.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            n = None
    if n is None:
        try:
            out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                                 capture_output=True, text=True, timeout=120).stdout
            n = int(out.split()[-1])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            n = 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip()]))
    return n


def stop_process_groups(procs, term_wait, kill_wait):
    """SIGTERM to each process's group (torchrun stops its workers on it), SIGKILL to the groups
    still there after `term_wait` seconds, then to every descendant found before (torchrun puts its
    workers in sessions of their own)."""
    tree = [q for p in procs for q in descendants(p.pid)]
    for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, kill_wait)):
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
        t0 = time.monotonic()
        while any(p.poll() is None for p in procs) and time.monotonic() - t0 < wait:
            time.sleep(0.1)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def descendants(pid):
    """Process ids below `pid` (children, theirs, ...) from /proc; [] where /proc is absent."""
    parent = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


class Group:
    """Processes started together, each in its own process group, their output lines read with the
    host time each arrived. wait() stops them all (SIGTERM, then SIGKILL) at the deadline, or
    `grace` seconds after one exits with an error (its peers would wait for it)."""

    def __init__(self, cmds, envs, log=None):
        self.lines = [[] for _ in cmds]  # [(seconds since start, line)] per process
        self.start = time.monotonic()
        self.log = log
        self.procs, self.threads = [], []
        for i, (cmd, env) in enumerate(zip(cmds, envs)):
            # A process group of its own (not a session: a session outlives a killed caller).
            group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 errors="replace", **group)
            self.procs.append(p)
            t = threading.Thread(target=self._read, args=(i, p), daemon=True)
            t.start()
            self.threads.append(t)

    def _read(self, i, p):
        for line in p.stdout:
            self.lines[i].append((time.monotonic() - self.start, line.rstrip("\n")))

    def _stop(self):
        stop_process_groups(self.procs, term_wait=45, kill_wait=10)

    def wait(self, timeout, grace=30.0):
        """None when every process ended by itself, else why they were stopped."""
        why, failed_at = None, None
        while any(p.poll() is None for p in self.procs):
            now = time.monotonic()
            if now - self.start > timeout:
                why = f"timed out after {timeout:g} s"
            elif failed_at is None and any(p.poll() not in (None, 0) for p in self.procs):
                failed_at = now
            elif failed_at is not None and now - failed_at > grace:
                why = f"stopped {grace:g} s after a process failed"
            if why:
                self._stop()
                break
            time.sleep(0.1)
        for t in self.threads:
            t.join(timeout=10)
        if self.log:
            with open(self.log, "w") as f:
                for i, lines in enumerate(self.lines):
                    f.writelines(f"[{i}] {t:9.3f} {line}\n" for t, line in lines)
        return why

    def returncodes(self):
        return [p.returncode for p in self.procs]


def failure(why, codes, lines):
    """One line: why the group failed and the last lines of the first process that did."""
    bad = next((i for i, c in enumerate(codes) if c), 0)
    tail = [line for _, line in lines[bad] if line.strip()][-4:]
    what = why or f"process {bad} exited {codes[bad]}"
    return f"{what}: {' | '.join(tail)}"[:600]


# ---------------------------------------------------------------------------- ls2c

def strip_rank(line):
    """`rank R: step ...` (a --data-parallel rank's line) -> `step ...`."""
    if line.startswith("rank "):
        head, sep, rest = line.partition(": ")
        if sep and head[5:].isdigit():
            return rest
    return line


def step_intervals(timed_lines, warmup):
    """Wall-clock ms between consecutive `step K:` lines for the steps after the first
    `warmup` (the interval ending at step K + 1 is step K + 1's)."""
    at = {}
    for t, line in timed_lines:
        line = strip_rank(line)
        if line.startswith("step ") and ":" in line:
            k = line[5:line.index(":")]
            if k.isdigit():
                at[int(k)] = t
    return [(at[k] - at[k - 1]) * 1000.0 for k in sorted(at) if k > max(warmup, 1) and k - 1 in at]


def parse_rank(timed_lines, warmup):
    """One ls2c-gpu-step process's figures (side_by_side.parse_ls2c of its lines) plus the
    all-reduce median and the wall-clock step interval median."""
    r = parse_ls2c([strip_rank(line) for _, line in timed_lines], warmup)
    ar = r["allreduce_ms"][warmup:] or r["allreduce_ms"]
    r["allreduce_median_ms"] = statistics.median(ar) if ar else None
    wall = step_intervals(timed_lines, warmup)
    r["wall_ms"] = statistics.median(wall) if wall else None
    return r


def tool_usage(exe):
    try:
        p = subprocess.run([exe], capture_output=True, text=True, timeout=60)
        return p.stdout + p.stderr
    except (OSError, subprocess.SubprocessError):
        return ""


def run_ls2c(args, cfg_dir, n, log, timeout):
    """N processes of ls2c-gpu-step on one configuration: the run's record (or its error)."""
    usage = tool_usage(args.gpu_step)
    if "usage:" not in usage:
        return {"error": f"{args.gpu_step} does not run: {' | '.join(usage.strip().splitlines()[-3:])}"[:600]}
    if "--time" not in usage:
        return {"error": f"{args.gpu_step} has no --time (rebuild ls2c-gpu-step)"}
    if n > 1 and "--data-parallel" not in usage:
        return {"error": f"{args.gpu_step} has no --data-parallel (rebuild ls2c-gpu-step)"}
    steps = args.warmup + args.steps
    port = free_port()
    cmds, envs = [], []
    for rank in range(n):
        cmd = [args.gpu_step, os.path.join(cfg_dir, "model.ls2b"), "--init-seed", "1", "--batch",
               os.path.join(cfg_dir, "batch.{rank}.safetensors" if n > 1 else "batch.0.safetensors"),
               "--steps", str(steps), "--time"] + (["--data-parallel"] if n > 1 else [])
        cmd += shlex.split(args.ls2c_args)
        if shutil.which("stdbuf"):  # line-buffered: each step line's arrival time is its end
            cmd = ["stdbuf", "-oL"] + cmd
        env = dict(os.environ)
        if n > 1:
            env.update(RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port))
        cmds.append(cmd)
        envs.append(env)
    g = Group(cmds, envs, log)
    why = g.wait(timeout)
    codes = g.returncodes()
    if why or any(codes):
        return {"error": failure(why, codes, g.lines), "command": " ".join(cmds[-1])}
    ranks = [parse_rank(lines, args.warmup) for lines in g.lines]
    for i, r in enumerate(ranks):
        if not r["step_ms"]:
            return {"error": f"rank {i}: no `step K: ..., time T ms` lines in its output",
                    "command": " ".join(cmds[i])}
    device = [r["ms"] for r in ranks]
    walls = [r["wall_ms"] for r in ranks]
    ars = [r["allreduce_median_ms"] for r in ranks]
    peaks = [r["peak_bytes"] for r in ranks if r["peak_bytes"]]
    return {
        "ms_device": max(device),
        "ms_wall": max(walls) if all(w is not None for w in walls) else None,
        "allreduce_ms": max(ars) if all(a is not None for a in ars) else None,
        # The device time is the whole step on one GPU, or with the all-reduce counted.
        "device_complete": n == 1 or all(r["allreduce_ms"] or r.get("allreduce_overlapped")
                                         for r in ranks),
        "peak_gib": max(peaks) / GiB if peaks else None,
        "first_loss": ranks[0]["losses"][0] if ranks[0]["losses"] else None,
        "last_loss": ranks[0]["losses"][-1] if ranks[0]["losses"] else None,
        "ranks": [{k: r[k] for k in ("ms", "wall_ms", "allreduce_median_ms", "peak_bytes", "losses")}
                  for r in ranks],
        "steps_run": steps, "command": " ".join(cmds[-1]),
    }


# ---------------------------------------------------------------------------- PyTorch

def run_ddp(args, cfg_dir, n, log, timeout):
    """torchrun of this file's worker on N GPUs: rank 0's record (or the error)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        cmd = shlex.split(args.torchrun) + ["--standalone", "--nproc_per_node", str(n), os.path.abspath(__file__),
                                            "worker", "--dir", cfg_dir, "--steps", str(args.steps),
                                            "--warmup", str(args.warmup), "--result", result,
                                            "--device", args.torch_device]
        g = Group([cmd], [dict(os.environ)], log)
        why = g.wait(timeout, grace=0)
        codes = g.returncodes()
        if why or any(codes) or not os.path.exists(result):
            if not why and not any(codes):
                why = "the worker wrote no result"
            return {"error": failure(why, codes, g.lines), "command": " ".join(cmd)}
        r = json.load(open(result))
    r["command"] = " ".join(cmd)
    return r


def worker(args):
    """One rank of the PyTorch run (started by torchrun): see the module's docstring. --device
    cpu (a smoke test where there is no GPU) uses gloo, host-clock step times and no memory."""
    import torch
    import torch.distributed as dist
    from safetensors.numpy import load_file
    from batches import lengths_of, to_torch
    from torch_models import Model, config
    from torch_train import TrainStep
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    cuda = args.device == "cuda"
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(local)
    ddp = world > 1
    if ddp:
        if cuda:
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("gloo")
    c = config(json.load(open(os.path.join(args.dir, "model.json"))))
    arrays = load_file(batch_path(args.dir, rank))
    batch = to_torch(arrays, lengths_of(arrays), device)
    torch.manual_seed(rank)  # dropout masks differ by rank, as in a real data-parallel run
    model = Model(c, seed=1).to(device).train()
    net = model
    if ddp:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local] if cuda else None)
    trainer = TrainStep(model, c, forward=torch.compile(net))

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def barrier():
        sync()
        if ddp:
            dist.barrier(**({"device_ids": [local]} if cuda else {}))

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    barrier()
    t0 = time.time()
    loss = trainer.step(batch)
    sync()
    first = time.time() - t0
    first_loss = float(loss.detach())
    for _ in range(args.warmup):
        trainer.step(batch)
    barrier()
    times = []
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(args.steps)] if cuda else []
    t0 = time.perf_counter()
    for i in range(args.steps):
        if cuda:
            events[i][0].record()
        else:
            t1 = time.perf_counter()
        loss = trainer.step(batch)
        if cuda:
            events[i][1].record()
        else:
            times.append((time.perf_counter() - t1) * 1000.0)
    sync()
    wall = (time.perf_counter() - t0) * 1000.0 / args.steps
    if cuda:
        times = [a.elapsed_time(b) for a, b in events]
    mine = {"rank": rank, "ms": statistics.median(times), "ms_min": min(times), "ms_max": max(times),
            "wall_ms": wall, "first_step_s": first, "first_loss": first_loss, "last_loss": float(loss.detach()),
            "peak_gib": torch.cuda.max_memory_allocated() / GiB if cuda else None,
            "reserved_gib": torch.cuda.max_memory_reserved() / GiB if cuda else None}
    ranks = [mine]
    if ddp:
        ranks = [None] * world
        dist.all_gather_object(ranks, mine)
    if rank == 0:
        dynamo = torch._dynamo.config
        peaks = [x["peak_gib"] for x in ranks if x["peak_gib"] is not None]
        r = {"ms": max(x["ms"] for x in ranks), "wall_ms": max(x["wall_ms"] for x in ranks),
             "first_step_s": max(x["first_step_s"] for x in ranks), "peak_gib": max(peaks) if peaks else None,
             "first_loss": first_loss, "last_loss": mine["last_loss"], "ranks": ranks, "ddp": ddp,
             "bucket_cap_mb": getattr(net, "bucket_bytes_cap", 0) / (1 << 20) if ddp else None,
             "optimize_ddp": str(getattr(dynamo, "optimize_ddp", None)), "torch": torch.__version__,
             "gpu": torch.cuda.get_device_name(local) if cuda else "cpu"}
        with open(args.result, "w") as f:
            json.dump(r, f)
        per_rank = ", ".join("%.2f" % x["ms"] for x in ranks)
        print(f"torch {'DDP + ' if ddp else ''}compile, {world} rank(s) on {r['gpu']}: {r['ms']:.2f} ms/step "
              f"(per rank {per_rank}), first step {first:.1f} s, optimize_ddp {r['optimize_ddp']}", flush=True)
    if ddp:
        barrier()
        dist.destroy_process_group()
    return 0


# ---------------------------------------------------------------------------- figures

def key(run):
    return (run["config"], run["gpus"], run["system"])


def figures(runs):
    """Rows per (configuration, N), configurations in the order of `runs`, N ascending: per system the step ms used, tokens/s,
    scaling efficiency against N = 1 of the same system, and ls2c / DDP tokens/s. ls2c uses
    its device time, or the wall-clock interval at every N of a configuration where a
    data-parallel run's device time lacks the all-reduce."""
    by = {key(r): r for r in runs}
    source = {}
    for r in runs:
        if r["system"] == "ls2c" and "error" not in r and "skipped" not in r and not r.get("device_complete", True):
            source[r["config"]] = "wall"
    rows, seen = [], set()
    for r in runs:
        k = (r["config"], r["gpus"])
        if k in seen:
            continue
        seen.add(k)
        row = {"config": r["config"], "gpus": r["gpus"], "tokens_per_gpu": r.get("tokens_per_gpu")}
        for s in SYSTEMS:
            run = by.get(k + (s,))
            row[s] = cell(run, by.get((r["config"], 1, s)), source.get(r["config"], "device"))
        d, l = row["ddp"].get("tokens_per_s"), row["ls2c"].get("tokens_per_s")
        row["ls2c_vs_ddp"] = l / d if d and l else None
        rows.append(row)
    order = {}
    for r in runs:
        order.setdefault(r["config"], len(order))
    return sorted(rows, key=lambda row: (order[row["config"]], row["gpus"]))


def step_ms(run, source):
    if run is None or "error" in run or "skipped" in run:
        return None
    if run["system"] == "ddp":
        return run.get("ms")
    return run.get("ms_wall") if source == "wall" else run.get("ms_device")


def cell(run, base, source):
    if run is None:
        return {"status": "not run"}
    if "skipped" in run:
        return {"status": "skipped", "why": run["skipped"]}
    if "error" in run:
        return {"status": "failed", "why": run["error"]}
    ms = step_ms(run, source)
    out = {"status": "ok", "ms": ms, "ms_source": source if run["system"] == "ls2c" else "cuda events"}
    n, tokens = run["gpus"], run.get("tokens_per_gpu")
    if ms and tokens:
        out["tokens_per_s"] = n * tokens / (ms / 1000.0)
        base_ms = step_ms(base, source)
        if base_ms:
            out["efficiency"] = out["tokens_per_s"] / (n * tokens / (base_ms / 1000.0))
    return out


def _num(x, spec, unit=""):
    return "-" if x is None else format(x, spec) + unit


def _status(c, spec, value, unit=""):
    if c["status"] != "ok":
        return c["status"]
    return _num(value, spec, unit)


def markdown(rows, runs):
    """The table: one row per (configuration, N)."""
    by = {key(r): r for r in runs}
    head = ["config", "GPUs", "tokens/GPU", "DDP ms", "DDP tokens/s", "DDP eff.", "DDP GiB", "DDP 1st step s",
            "ls2c ms", "ls2c all-reduce ms", "ls2c wall ms", "ls2c tokens/s", "ls2c eff.", "ls2c GiB",
            "ls2c / DDP"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    for row in rows:
        d, l = row["ddp"], row["ls2c"]
        rd = by.get((row["config"], row["gpus"], "ddp"), {})
        rl = by.get((row["config"], row["gpus"], "ls2c"), {})
        ms_l = l.get("ms")
        if l.get("ms_source") == "wall" and ms_l is not None:
            ms_l_text = _num(ms_l, ".2f") + " (wall)"
        else:
            ms_l_text = _status(l, ".2f", ms_l)
        cells = [row["config"], str(row["gpus"]), _num(row["tokens_per_gpu"], "d"),
                 _status(d, ".2f", d.get("ms")), _status(d, ",.0f", d.get("tokens_per_s")),
                 _status(d, ".1%", d.get("efficiency")), _status(d, ".2f", rd.get("peak_gib")),
                 _status(d, ".1f", rd.get("first_step_s")),
                 ms_l_text, _status(l, ".2f", rl.get("allreduce_ms")), _status(l, ".2f", rl.get("ms_wall")),
                 _status(l, ",.0f", l.get("tokens_per_s")), _status(l, ".1%", l.get("efficiency")),
                 _status(l, ".2f", rl.get("peak_gib")), _num(row["ls2c_vs_ddp"], ".2f", "x")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


NOTES = ("ms: median train step (DDP: CUDA events around each step, the slowest rank; ls2c: its --time "
         "device time with the all-reduce, the slowest rank; `(wall)`: the interval between step lines). "
         "tokens/s = GPUs x tokens/GPU / step time; eff. = tokens/s / (GPUs x tokens/s on 1 GPU), same "
         "system; ls2c / DDP > 1: ls2c is faster. N = 1 runs without DDP or --data-parallel. DDP GiB: "
         "max_memory_allocated; ls2c GiB: cudaMemGetInfo in use (context included). 1st step: "
         "torch.compile's compilation.")


# ---------------------------------------------------------------------------- run

def parse_gpus(text):
    try:
        ns = sorted({int(x) for x in text.split(",")})  # an empty item ("1,,2") is refused
    except ValueError:
        ns = []
    if not ns or ns[0] < 1:
        fail(f"--gpus {text!r}: expected a comma-separated list of GPU counts >= 1, e.g. 1,2,4,8")
    return ns


def write_json(path, meta, runs):
    """The runs, merged with an earlier file's: a new run replaces the old one of its key, except
    that a skip does not replace a run that ran. Returns the merged runs."""
    merged = {}
    if os.path.exists(path):
        try:
            merged = {key(r): r for r in json.load(open(path)).get("runs", [])}
        except (OSError, ValueError, KeyError, TypeError):
            merged = {}
    for r in runs:
        old = merged.get(key(r))
        if not ("skipped" in r and old is not None and "skipped" not in old):
            merged[key(r)] = r
    merged = list(merged.values())
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "runs": merged, "figures": figures(merged)}, f, indent=1)
    os.replace(tmp, path)
    return merged


def run(args):
    # Every check before any output: bad input is one line on stderr and exit 2.
    if not os.path.isdir(args.dir):
        fail(f"--dir {args.dir}: no such folder (run `ddp_side_by_side.py prepare --out DIR` and carry it)")
    configs = args.config or DEFAULT
    for name in configs:
        for f in ("model.json", "model.ls2b"):
            if not os.path.isfile(os.path.join(args.dir, name, f)):
                fail(f"{os.path.join(args.dir, name, f)}: missing (run `ddp_side_by_side.py prepare "
                     f"--config {name}` and carry the folder)")
    gpus = parse_gpus(args.gpus)
    if args.budget is not None and not args.budget > 60:
        fail(f"--budget {args.budget:g}: must be more than the 60 s kept for stopping runs")
    if not args.skip_ls2c and not (os.path.isfile(args.gpu_step) and os.access(args.gpu_step, os.X_OK)):
        fail(f"--gpu-step {args.gpu_step}: no such executable")
    if args.steps < 1 or args.warmup < 1:
        fail(f"--steps {args.steps} / --warmup {args.warmup}: both must be >= 1")
    for option, text in (("--ls2c-args", args.ls2c_args), ("--torchrun", args.torchrun)):
        try:
            shlex.split(text)
        except ValueError as e:
            fail(f"{option} {text!r}: {e}")
    if args.logs:
        os.makedirs(args.logs, exist_ok=True)
    started = time.monotonic()
    available = gpu_count() if args.visible_gpus is None else args.visible_gpus
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "gpus_available": available, "steps": args.steps,
            "warmup": args.warmup, "ls2c_args": args.ls2c_args, "gpu_step": args.gpu_step}
    print(f"{available} GPU(s) here; world sizes {gpus}; configurations {configs}; "
          f"{args.warmup} warm-up + {args.steps} timed steps", flush=True)
    runs, failed = [], []
    for name in configs:
        cfg_dir = os.path.join(args.dir, name)
        for n in gpus:
            print(f"\n== {name}, {n} GPU(s)", flush=True)
            if n > available:
                why = f"{n} GPUs asked, this machine has {available}"
                print(f"skipped: {why}", flush=True)
                for s in SYSTEMS:
                    runs.append({"config": name, "gpus": n, "system": s, "skipped": why})
                continue
            written = write_batches(cfg_dir, name, n)
            if written:
                print(f"wrote {written} missing batch file(s) in {cfg_dir}", flush=True)
            tokens = batch_tokens(batch_path(cfg_dir, 0))
            for s in ("ls2c", "ddp"):
                if (s == "ls2c" and args.skip_ls2c) or (s == "ddp" and args.skip_torch):
                    continue
                log = os.path.join(args.logs, f"{name}.{s}.{n}.log") if args.logs else None
                timeout = args.ls2c_timeout if s == "ls2c" else args.torch_timeout
                if args.budget:  # end by the budget, stopping included (up to a minute)
                    timeout = min(timeout, args.budget - (time.monotonic() - started) - 60)
                    if timeout < 20:
                        why = f"not started: the --budget of {args.budget:g} s is spent"
                        print(f"{s}: skipped, {why}", flush=True)
                        runs.append({"config": name, "gpus": n, "system": s, "skipped": why})
                        continue
                t0 = time.time()
                if s == "ls2c":
                    r = run_ls2c(args, cfg_dir, n, log, timeout)
                else:
                    r = run_ddp(args, cfg_dir, n, log, timeout)
                r.update(config=name, gpus=n, system=s, tokens_per_gpu=tokens, seconds=round(time.time() - t0, 1))
                runs.append(r)
                label = "ls2c" if s == "ls2c" else ("torch DDP + compile" if n > 1 else "torch compile")
                if "error" in r:
                    failed.append(key(r))
                    print(f"{label}: FAILED: {r['error']}", flush=True)
                elif s == "ls2c":
                    print(f"{label}: {_num(r['ms_device'], '.2f')} ms/step device (all-reduce "
                          f"{_num(r['allreduce_ms'], '.2f')} ms), {_num(r['ms_wall'], '.2f')} ms wall; "
                          f"per rank {[round(x['ms'], 2) for x in r['ranks']]}; loss {_num(r['first_loss'], '.4f')}"
                          f" -> {_num(r['last_loss'], '.4f')}", flush=True)
                else:
                    print(f"{label}: {r['ms']:.2f} ms/step (wall {r['wall_ms']:.2f}), first step "
                          f"{r['first_step_s']:.1f} s, peak {_num(r['peak_gib'], '.2f')} GiB, optimize_ddp "
                          f"{r.get('optimize_ddp')}, loss {r['first_loss']:.4f} -> {r['last_loss']:.4f}",
                          flush=True)
                if args.json:
                    write_json(args.json, meta, runs)
    table_runs = write_json(args.json, meta, runs) if args.json else runs
    print("\n" + markdown(figures(table_runs), table_runs))
    print("\n" + NOTES)
    if args.json:
        print(f"wrote {args.json}")
    if failed:
        print(f"{len(failed)} run(s) failed: " + ", ".join(f"{c} x{n} {s}" for c, n, s in failed))
    return 1 if failed else 0


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare", help="bundles and per-rank batches (compiler machine)")
    p.add_argument("--out", required=True)
    p.add_argument("--ls2c", default=os.path.join(ROOT, "build/tools/ls2c/ls2c"))
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--ranks", type=int, default=8, help="batch files batch.R for R < RANKS (default 8)")
    r = sub.add_parser("run", help="the benchmark (GPU machine)")
    r.add_argument("--dir", required=True)
    r.add_argument("--gpu-step", default=os.path.join(ROOT, "build/tools/ls2c-gpu-step/ls2c-gpu-step"))
    r.add_argument("--gpus", default="1,2", help="world sizes, comma-separated (default 1,2)")
    r.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    r.add_argument("--warmup", type=int, default=5, help="untimed steps before them (default 5; PyTorch: "
                   "after the first, compiling step)")
    r.add_argument("--ls2c-args", default="", help="more options for ls2c-gpu-step, e.g. \"--no-graphs\"")
    r.add_argument("--ls2c-timeout", type=float, default=240, help="seconds per ls2c run (default 240)")
    r.add_argument("--torch-timeout", type=float, default=480, help="seconds per PyTorch run, compilation "
                   "included (default 480)")
    r.add_argument("--torchrun", default=f"{shlex.quote(sys.executable)} -m torch.distributed.run",
                   help="the launcher command (default: this Python's torch.distributed.run)")
    r.add_argument("--budget", type=float, help="seconds for the whole run: each run's timeout shrinks to "
                   "end by then, stopping included, and runs that would get under 20 s are skipped")
    r.add_argument("--skip-ls2c", action="store_true")
    r.add_argument("--skip-torch", action="store_true")
    r.add_argument("--visible-gpus", type=int, help="GPUs to assume instead of counting them (tests)")
    r.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda", help=argparse.SUPPRESS)
    r.add_argument("--logs", help="folder for each run's full output")
    r.add_argument("--json")
    w = sub.add_parser("worker", help="one PyTorch rank (started by torchrun)")
    w.add_argument("--dir", required=True)
    w.add_argument("--steps", type=int, default=20)
    w.add_argument("--warmup", type=int, default=5)
    w.add_argument("--result", required=True)
    w.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help=argparse.SUPPRESS)
    for x in (p, r):
        x.add_argument("--config", action="append", choices=sorted(CONFIGS))
    args = ap.parse_args()
    return run_mode({"prepare": prepare, "run": run, "worker": worker}, args)


if __name__ == "__main__":
    sys.exit(main())
