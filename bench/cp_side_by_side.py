#!/usr/bin/env python3
"""Issue 10's benchmark: ls2c's sequence-parallel attention (its DistAttn and zigzag-ring
schedules) beside PyTorch's context parallelism (ring attention), on one attention layer's forward
and backward spread over P GPUs of one host.

    run --ls2c BIN --bundle FILE [--gpus 1,2] [--seq 32768,65536,131072] [--batch 1] [--heads 16]
        [--head-dim 128] [--causal | --no-causal] [--schedules distattn,zigzag[:BACKEND]]
        [--torch-backends flash] [--rotate alltoall] [--warmup 3] [--iters 10] [--budget 540]
        [--run-timeout 300] [--max-length] [--json F] [--logs DIR]
        [--torch-script bench/cp_torch.py] [--torchrun CMD] [--skip-ls2c] [--skip-torch]
    summary --json F        (the tables again, from the file)

For each P of --gpus (counts above this machine's GPUs are skipped, and said so) and each length S
of --seq (tokens per sequence, whole; each rank holds S / P), in that order:

  torch-cp, once per backend of --torch-backends (flash, cudnn, efficient):
      TORCHRUN --standalone --nproc-per-node P bench/cp_torch.py --seq S --batch B --heads H
          --head-dim D --causal|--no-causal --backend BE --rotate R --warmup W --iters N
      (cp_torch.py's docstring says what it times); rank 0's line `CP_RESULT {json}`.
  ls2c, once per schedule of --schedules (distattn or zigzag, each optionally :kernels, :cudnn or
      :auto, the blocks' attention backend): P processes started here, one per rank (as
      ddp_side_by_side.py starts ls2c-gpu-step), each
          BIN BUNDLE --batch B --seq S --schedule SCH --time N --warmup W --json-line
              [--attention BACKEND]
      with RANK=r, WORLD_SIZE=P, LOCAL_RANK=r, LOCAL_WORLD_SIZE=P, MASTER_ADDR=127.0.0.1 and a
      MASTER_PORT free when the run starts (the OS's pick for a socket bound to port 0); P = 1:
      BIN alone, none of these variables set (removed if this script's environment has them).
      Rank 0's line `SP_RESULT {json}`: system, schedule, ranks, batch, heads, kv_heads,
      head_dim, seq, causal, forward_ms, backward_ms, step_ms, tokens_per_s, tflops_per_gpu,
      max_memory_gib, or {"oom": true, ...} when it cannot allocate. The bundle fixes heads,
      head_dim and the mask: a result whose shape differs from --heads, --head-dim, --causal (or
      from the batch, S and P asked) is marked `shape differs` and gets no ratio.

TORCHRUN is --torchrun (torch-cp's launcher only), by default this Python's
`-m torch.distributed.run` (sys.executable), for P = 1 too. Every subprocess runs with
NCCL_NVLS_ENABLE=0 (the machine forbids NVLink multicast) and PYTHONUNBUFFERED=1; ls2c's through
`stdbuf -oL` where there is one. Each process's stdout and stderr are read together.

A run with an oom result line (ls2c: from any rank; torch-cp: in torchrun's output) and no
other result line is recorded as OOM, whatever the exit statuses (cp_torch.py's rank that runs out
exits 3 so that torchrun stops its peers), and that system stops at longer S for that P (skipped,
"oom at a shorter length"). Without a result line the run failed: its record keeps the exit status
and the last 40 lines of the process that failed (ls2c: the first rank seen to exit with a nonzero
status, rank 0 when none did; its field tail_of names it, and rank_rc has every rank's status;
torch-cp: torchrun's), and that system stops too at longer S for that P. torch-cp needs S to be a
multiple of 2P (causal) or P; other lengths are skipped for it.

Budget: --budget seconds for the whole call (default 540, to end within a 600 s device call).
Each run's timeout is --run-timeout cut to end by then (15 s kept for stopping it); a run that
would get less than --min-run seconds (default 30) is not started and is recorded as skipped. A
run still going 30 s after a result or oom line (peers stuck in teardown, or waiting for a rank
that ran out) is stopped and its result kept, with a warning. An ls2c rank that exits with a nonzero
status while others still run gets its peers stopped at once (they would wait for it). Stopping a
run: SIGTERM to each process's group (ls2c's ranks; torchrun, which stops its workers), SIGKILL
10 s later to the groups still there and to every descendant found before.

--max-length: after the table, for each P, system and variant, S doubles from the largest --seq
(a run of --probe-warmup 1 + --probe-iters 1 iterations; torch-cp with --inputs local, so that
its P full tensors do not bound it) until it is out of memory, fails, times out, reaches
--max-seq (default 16,777,216) or the budget is spent; lengths go up together (every P and
system at 2S before any at 4S). The longest length that ran, and what stopped it, are recorded.

Output: one line per run while running; then the table (per P and S: forward, backward and step
ms, tokens/s = B x S / step, TFLOP/s per GPU = 3.5 x 4 x B x H x S x S x D (x 0.5 causal) / P /
step, both computed here from each result's own shape, the step time over the fastest torch-cp
backend's at that P and S (< 1: faster than torch-cp), peak GiB as each tool reports it), and with
--max-length a table of the longest lengths. --json writes the runs, the longest lengths and the
figures, rewritten after every run and merged with the runs of an earlier file (a new run replaces
one of the same system, variant, shape, P and S, except that a skip replaces no run that ran).
--logs DIR keeps each run's whole output, written as it comes, its first line the command (with
the rank's variables): DIR/SYSTEM-VARIANT-PP-SS[-probe].log for torchrun's output and ls2c at
P = 1; one file per rank for ls2c at P > 1, ...-SS[-probe].rankR.log.
Exit status 0; 1 if a run failed (OOM and skips are results); 2 on bad input (one line on stderr).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_cli import Parser, fail, run_mode  # noqa: E402 (after the path)
from ddp_side_by_side import free_port, gpu_count, stop_process_groups  # noqa: E402 (no torch at import)

SYSTEMS = ("torch-cp", "ls2c")
MARKERS = {"torch-cp": "CP_RESULT", "ls2c": "SP_RESULT"}
TORCH_BACKENDS = ("flash", "cudnn", "efficient")
STOP_RESERVE_S = 15.0   # kept from the budget for stopping a run that times out
TAIL_LINES = 40
RESULT_KEYS = ("forward_ms", "backward_ms", "step_ms")


# ---------------------------------------------------------------------------- figures

def attention_flops(batch, heads, seq, head_dim, causal):
    """Forward FLOPs (FlashAttention's convention); backward 2.5x, a step 3.5x."""
    return 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)


def shape_of(r):
    """The attention shape a record was asked for: (batch, heads, head_dim, causal)."""
    return (r["batch"], r["heads"], r["head_dim"], bool(r["causal"]))


def key(r):
    return (r["system"], r["variant"], r["ranks"], r["seq"]) + shape_of(r) + (r.get("purpose", "table"),)


def label(r):
    return f"{r['system']} {r['variant']}"


def derived(r):
    """tokens/s and TFLOP/s per GPU from the result's step time and its own shape (None where it
    has none)."""
    res = r.get("result") or {}
    ms = res.get("step_ms")
    if r["status"] != "ok" or not isinstance(ms, (int, float)) or ms <= 0:
        return None, None
    b, h, d = (res.get(k, r[k]) for k in ("batch", "heads", "head_dim"))
    s, p, causal = res.get("seq", r["seq"]), res.get("ranks", r["ranks"]), res.get("causal", r["causal"])
    sec = ms / 1000.0
    return b * s / sec, 3.5 * attention_flops(b, h, s, d, causal) / p / sec / 1e12


def figures(runs):
    """Per table run (purpose "table"): tokens/s, TFLOP/s per GPU and the step time over the
    fastest torch-cp backend's at the same shape, P and S. Rows ordered by shape, P, S, system."""
    table = [r for r in runs if r.get("purpose", "table") == "table"]
    best = {}
    for r in table:
        if r["system"] == "torch-cp" and r["status"] == "ok" and not r.get("mismatch"):
            k = shape_of(r) + (r["ranks"], r["seq"])
            ms = r["result"]["step_ms"]
            best[k] = min(best.get(k, ms), ms)
    order = {s: i for i, s in enumerate(SYSTEMS)}
    rows = []
    for r in sorted(table, key=lambda r: (shape_of(r), r["ranks"], r["seq"], order.get(r["system"], 9),
                                          r["variant"])):
        tokens, tflops = derived(r)
        base = best.get(shape_of(r) + (r["ranks"], r["seq"]))
        ratio = None
        if r["status"] == "ok" and base and not r.get("mismatch"):
            ratio = r["result"]["step_ms"] / base
        rows.append({"key": list(key(r)), "tokens_per_s": tokens, "tflops_per_gpu": tflops,
                     "step_vs_torch_cp": ratio})
    return rows


def _num(x, spec):
    return "-" if x is None else format(x, spec)


def shape_text(shape):
    b, h, d, causal = shape
    return f"batch {b}, {h} heads, head_dim {d}, {'causal' if causal else 'not causal'}"


def markdown(runs):
    """The main table, one per shape."""
    rows = {tuple(row["key"]): row for row in figures(runs)}
    table = {key(r): r for r in runs if r.get("purpose", "table") == "table"}
    head = ["P", "seq", "system", "fwd ms", "bwd ms", "step ms", "tokens/s", "TFLOP/s per GPU",
            "step / torch-cp", "max GiB"]
    out = []
    for shape in sorted({shape_of(r) for r in table.values()}):
        out += [f"{shape_text(shape)}:\n", "| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
        for k, row in rows.items():
            r = table[k]
            if shape_of(r) != shape:
                continue
            res = r.get("result") or {}
            name = label(r) + (" (shape differs)" if r.get("mismatch") else "")
            if r["status"] == "ok":
                cells = [_num(res.get("forward_ms"), ".2f"), _num(res.get("backward_ms"), ".2f"),
                         _num(res.get("step_ms"), ".2f"), _num(row["tokens_per_s"], ",.0f"),
                         _num(row["tflops_per_gpu"], ".0f"), _num(row["step_vs_torch_cp"], ".2f"),
                         _num(res.get("max_memory_gib"), ".2f")]
            else:
                cells = [{"oom": "OOM"}.get(r["status"], r["status"])] + ["-"] * 6
            out.append("| " + " | ".join([str(r["ranks"]), f"{r['seq']:,}", name] + cells) + " |")
        out.append("")
    return "\n".join(out).rstrip()


def max_length_markdown(entries):
    if not entries:
        return ""
    order = {s: i for i, s in enumerate(SYSTEMS)}
    out = []
    for shape in sorted({shape_of(e) for e in entries}):
        out.append(f"Longest length that ran, {shape_text(shape)}:\n")
        out.append("| P | system | longest seq | tokens per GPU | stopped by |")
        out.append("| --- | --- | --- | --- | --- |")
        rows = sorted((e for e in entries if shape_of(e) == shape),
                      key=lambda e: (e["ranks"], order.get(e["system"], 9), e["variant"]))
        for e in rows:
            longest = e.get("longest")
            out.append(f"| {e['ranks']} | {label(e)} | {_num(longest, ',d')} | "
                       f"{_num(longest // e['ranks'] if longest else None, ',d')} | {e.get('stopped_by', '-')} |")
        out.append("")
    return "\n".join(out).rstrip()


NOTES = ("fwd/bwd/step ms: medians (each tool's own CUDA-event timing, the slowest rank's); bwd = step - fwd. "
         "tokens/s = batch x seq / step; TFLOP/s per GPU = 3.5 x forward FLOPs (4 B H S^2 D, half when "
         "causal) / P / step, both computed here. step / torch-cp: step time over the fastest torch-cp "
         "backend's at the same P and seq (< 1: faster). max GiB: torch-cp max_memory_allocated on rank 0; "
         "ls2c as its tool reports it. OOM or failed: that system stops there for that P (longer: skipped).")


def print_tables(runs, max_length):
    print("\n" + markdown(runs))
    extra = max_length_markdown(max_length)
    if extra:
        print("\n" + extra)
    print("\n" + NOTES)


# ---------------------------------------------------------------------------- processes

def stop(procs):
    """Stops a run's processes: SIGTERM, then SIGKILL after 10 s (ddp_side_by_side's helper)."""
    stop_process_groups(procs, term_wait=10.0, kill_wait=5.0)


class Launch:
    """What launch() saw: per process (one per ls2c rank, or torchrun's one) its exit status and
    output lines; why they were stopped (None when they all ended by themselves); the process that
    failed first (exited with a nonzero status before any was stopped; None if none did); seconds."""

    def __init__(self, n):
        self.codes, self.lines = [None] * n, [[] for _ in range(n)]
        self.why, self.failed, self.seconds = None, None, 0.0


def launch(cmds, envs, timeout, marker, logs=None, linger=30.0):
    """Runs each command with its environment in a process group of its own, stdout and stderr
    together (written as they come to logs[i] when given), until all end, or `timeout` s, or one
    exits with a nonzero status while others still run (its peers would wait for it), or `linger` s
    after a line with `marker` in any output (peers still waiting after rank 0 printed its result,
    or after a rank ran out of memory); then all are stopped. Returns a Launch."""
    t0 = time.monotonic()
    out = Launch(len(cmds))
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    procs, readers, seen, files = [], [], [], []

    def read(i, proc, f):
        for line in proc.stdout:
            line = line.rstrip("\n")
            out.lines[i].append(line)
            if f:
                f.write(line + "\n")
                f.flush()
            if marker in line and not seen:
                seen.append(time.monotonic())

    for i, (cmd, env) in enumerate(zip(cmds, envs)):
        f = None
        if logs:
            f = open(logs[i], "w")
            changed = [f"{k}={shlex.quote(env[k])}" for k in RANK_VARS if k in env]
            f.write("$ " + " ".join(changed + [shlex.quote(c) for c in cmd]) + "\n")
            f.flush()
            files.append(f)
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace", **group)
        except OSError as e:
            out.lines[i].append(f"cannot start {cmd[0]}: {e}")
            if f:
                f.write(out.lines[i][-1] + "\n")
            out.why, out.failed = "not started" + (f" (rank {i})" if len(cmds) > 1 else ""), i
            break
        procs.append(proc)
        readers.append(threading.Thread(target=read, args=(i, proc, f), daemon=True))
        readers[-1].start()
    if out.why:
        stop(procs)
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        if out.failed is None:
            out.failed = next((i for i, p in enumerate(procs) if p.poll() not in (None, 0)), None)
        if now - t0 > timeout:
            out.why = f"timed out after {timeout:.0f} s"
        elif out.failed is not None:
            out.why = f"rank {out.failed} exited {procs[out.failed].returncode}; the other ranks were stopped"
        elif seen and now - seen[0] > linger:
            out.why = f"still running {linger:.0f} s after a {marker} line"
        if out.why:
            stop(procs)
            break
        time.sleep(0.1)
    for t in readers:
        t.join(timeout=10)
    for f in files:
        f.close()
    for i, p in enumerate(procs):
        out.codes[i] = p.returncode
    if out.failed is None and not out.why:  # all ended by themselves
        out.failed = next((i for i, c in enumerate(out.codes) if c), None)
    out.seconds = time.monotonic() - t0
    return out


def parse_results(lines, marker):
    """The result objects of `marker` lines ({"oom": ...} ones included) and the lines that did not
    parse."""
    found, bad = [], []
    for line in lines:
        i = line.find(marker + " ")
        if i < 0:
            continue
        text = line[i + len(marker) + 1:].strip()
        try:
            obj = json.loads(text)
        except ValueError:
            bad.append(line)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        else:
            bad.append(line)
    return found, bad


def mismatch(rec, res):
    """What of the result's shape differs from what was asked ("" when nothing)."""
    want = {"ranks": rec["ranks"], "seq": rec["seq"], "batch": rec["batch"], "heads": rec["heads"],
            "kv_heads": rec["heads"], "head_dim": rec["head_dim"], "causal": rec["causal"]}
    diff = []
    for k, v in want.items():
        if k in res and res[k] != v:
            diff.append(f"{k} {res[k]!r}, asked {v!r}")
    return "; ".join(diff)


def outcome(rec, run, marker):
    """Fills the record's status from a Launch: the result is the first `marker` line of process 0
    (ls2c's rank 0, or torchrun's whole output); without one, an oom line from any process makes it
    OOM; a failure keeps the last lines of the process that failed (rank 0's when none did)."""
    ranks = len(run.codes) > 1
    found, bad = parse_results(run.lines[0], marker)
    ok = [r for r in found if not r.get("oom")]
    ooms = [(i, o) for i, lines in enumerate(run.lines) for o in parse_results(lines, marker)[0] if o.get("oom")]
    who = run.failed if run.failed is not None else 0
    rc = run.codes[who]
    status = f"rank {who} exited {rc}" if ranks else f"exit status {rc}"
    rec["rc"] = rc
    if ranks:
        rec["rank_rc"] = run.codes
    if ok:
        res = ok[0]
        missing = [k for k in RESULT_KEYS if not isinstance(res.get(k), (int, float))]
        if missing:
            rec.update(status="failed", why=f"{marker} line lacks {', '.join(missing)}", result=res)
        else:
            rec.update(status="ok", result=res)
            diff = mismatch(rec, res)
            if diff:
                rec["mismatch"] = diff
            if run.why or any(run.codes):
                rec["warning"] = run.why or f"{status} after the result line"
    elif ooms:
        i, o = ooms[0]
        rank = o.get("rank", i if ranks else None)
        where = f" (rank {rank}{', ' + str(o['phase']) if o.get('phase') else ''})" if rank is not None else ""
        rec.update(status="oom", result=o, why="out of GPU memory" + where)
    else:
        what = run.why or status
        if bad:
            what += f"; unreadable {marker} line: {bad[0][:200]}"
        else:
            what += f"; no {marker} line"
        rec.update(status="failed", why=what)
    if rec["status"] == "failed":
        rec["tail"] = [line for line in run.lines[who] if line.strip()][-TAIL_LINES:]
        if ranks:
            rec["tail_of"] = f"rank {who}"
    return rec


# ---------------------------------------------------------------------------- commands

def torchrun_cmd(args, ranks):
    return shlex.split(args.torchrun) + ["--standalone", "--nproc-per-node", str(ranks)]


def torch_cmd(args, ranks, seq, backend, probe):
    warmup, iters = (args.probe_warmup, args.probe_iters) if probe else (args.warmup, args.iters)
    return torchrun_cmd(args, ranks) + [
        args.torch_script, "--seq", str(seq), "--batch", str(args.batch), "--heads", str(args.heads),
        "--head-dim", str(args.head_dim), "--causal" if args.causal else "--no-causal", "--backend", backend,
        "--rotate", args.rotate, "--warmup", str(warmup), "--iters", str(iters),
        "--inputs", "local" if probe else "full"]


def ls2c_cmd(args, seq, schedule, probe):
    """One ls2c rank's command (the same for every rank: each reads its place from RANK_VARS)."""
    warmup, iters = (args.probe_warmup, args.probe_iters) if probe else (args.warmup, args.iters)
    tool = [args.ls2c]
    if shutil.which("stdbuf"):  # line-buffered, so that a stopped run's last lines are there
        tool = ["stdbuf", "-oL"] + tool
    # "distattn:cudnn": the schedule, then ls2c-seq-parallel's --attention for its blocks.
    schedule, _, backend = schedule.partition(":")
    extra = ["--attention", backend] if backend else []
    return tool + [args.bundle, "--batch", str(args.batch), "--seq", str(seq), "--schedule", schedule,
                   "--time", str(iters), "--warmup", str(warmup), "--json-line"] + extra


RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def environment():
    return dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")


def rank_environments(ranks):
    """ls2c's P environments: torchrun's variables (RANK_VARS) with MASTER_ADDR=127.0.0.1 and a port
    free now (ddp_side_by_side.free_port); P = 1: one, without any of them (ls2c runs alone, as
    when this script's own environment names no ranks)."""
    base = {k: v for k, v in environment().items() if k not in RANK_VARS}
    if ranks == 1:
        return [base]
    port = str(free_port())
    return [dict(base, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(ranks),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port) for r in range(ranks)]


# ---------------------------------------------------------------------------- run

class Session:
    """One `run` call: the budget, the runs so far, the JSON file."""

    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.runs, self.max_length, self.failed = [], [], []
        self.meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "ls2c": args.ls2c, "bundle": args.bundle,
                     "torch_script": args.torch_script, "torchrun": args.torchrun, "warmup": args.warmup,
                     "iters": args.iters, "probe_warmup": args.probe_warmup, "probe_iters": args.probe_iters,
                     "rotate": args.rotate, "budget_s": args.budget}

    def left(self):
        return self.args.budget - (time.monotonic() - self.start)

    def record(self, rec):
        self.runs.append(rec)
        if rec["status"] == "failed":
            self.failed.append(rec)
        if self.args.json:
            self.write()

    def write(self):
        """The runs and longest lengths, merged with the earlier file's (see the docstring)."""
        path = self.args.json
        runs, longest = {}, {}
        if os.path.exists(path):
            try:
                old = json.load(open(path))
                runs = {key(r): r for r in old.get("runs", [])}
                longest = {ml_key(e): e for e in old.get("max_length", [])}
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                runs, longest = {}, {}
        for r in self.runs:
            prev = runs.get(key(r))
            if not (r["status"] == "skipped" and prev is not None and prev["status"] != "skipped"):
                runs[key(r)] = r
        for e in self.max_length:
            longest[ml_key(e)] = e
        merged = list(runs.values())
        meta = dict(self.meta, torch=next((r["result"].get("torch") for r in reversed(merged)
                                           if r["system"] == "torch-cp" and r.get("result")), None))
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"meta": meta, "runs": merged, "max_length": list(longest.values()),
                       "figures": figures(merged)}, f, indent=1)
        os.replace(tmp, path)
        return merged, list(longest.values())

    def one(self, system, variant, ranks, seq, probe=False):
        """One run (or its skip): the record, also kept and written."""
        a = self.args
        rec = {"system": system, "variant": variant, "ranks": ranks, "seq": seq, "batch": a.batch,
               "heads": a.heads, "head_dim": a.head_dim, "causal": a.causal,
               "purpose": "max-length" if probe else "table"}
        timeout = min(a.run_timeout, self.left() - STOP_RESERVE_S)
        if timeout < a.min_run:
            rec.update(status="skipped", why=f"not started: {max(self.left(), 0):.0f} s of the --budget left")
            print(f"{label(rec)}, P={ranks}, S={seq:,}: skipped ({rec['why']})", flush=True)
            self.record(rec)
            return rec
        if system == "torch-cp":  # torchrun starts the P ranks
            envs = [environment()]
            cmds = [torch_cmd(a, ranks, seq, variant, probe)]
        else:  # P processes started here, one per rank
            envs = rank_environments(ranks)
            cmds = [ls2c_cmd(a, seq, variant, probe)] * ranks
        logs = None
        if a.logs:
            # No ':' in file names ("zigzag:cudnn"): copying tools refuse them.
            name = os.path.join(a.logs, f"{system}-{variant.replace(':', '-')}-P{ranks}-S{seq}"
                                        f"{'-probe' if probe else ''}")
            logs = [name + ".log"] if len(cmds) == 1 else [f"{name}.rank{r}.log" for r in range(ranks)]
        run = launch(cmds, envs, timeout, MARKERS[system], logs)
        command = " ".join(shlex.quote(c) for c in cmds[0])
        if len(cmds) > 1:
            others = f"ranks 1..{ranks - 1} with their" if ranks > 2 else "rank 1 with its"
            command = (" ".join(f"{k}={envs[0][k]}" for k in RANK_VARS) + " " + command +
                       f" (and {others} RANK and LOCAL_RANK)")
        rec.update(command=command, seconds=round(run.seconds, 1), timeout_s=round(timeout))
        outcome(rec, run, MARKERS[system])
        say(rec)
        self.record(rec)
        return rec


def ml_key(e):
    return (e["system"], e["variant"], e["ranks"]) + shape_of(e)


def say(rec):
    where = f"{label(rec)}, P={rec['ranks']}, S={rec['seq']:,}{' (probe)' if rec['purpose'] != 'table' else ''}"
    res = rec.get("result") or {}
    if rec["status"] == "ok":
        tokens, tflops = derived(rec)
        extra = f"; {rec['warning']}" if rec.get("warning") else ""
        extra += f"; SHAPE DIFFERS: {rec['mismatch']}" if rec.get("mismatch") else ""
        print(f"{where}: fwd {res['forward_ms']:.2f} ms, bwd {res['backward_ms']:.2f} ms, step "
              f"{res['step_ms']:.2f} ms, {_num(tokens, ',.0f')} tokens/s, {_num(tflops, '.0f')} TFLOP/s per GPU, "
              f"{_num(res.get('max_memory_gib'), '.2f')} GiB ({rec['seconds']:.0f} s){extra}", flush=True)
    elif rec["status"] == "oom":
        print(f"{where}: OOM: {rec['why']} ({rec['seconds']:.0f} s)", flush=True)
    else:
        print(f"{where}: FAILED: {rec['why']} ({rec.get('seconds', 0):.0f} s)"
              + (f"; the last lines of {rec['tail_of']}:" if rec.get("tail_of") else ""), flush=True)
        for line in rec.get("tail", [])[-TAIL_LINES:]:
            print(f"    | {line}", flush=True)


def parse_list(option, text, conv=int, minimum=1):
    try:
        items = [conv(x.strip()) for x in text.split(",")]
    except ValueError:
        items = []
    if not items or (conv is int and min(items) < minimum):
        fail(f"{option} {text!r}: expected a comma-separated list of integers >= {minimum}")
    return items


def check(args):
    """Every check before any run: one line and exit 2."""
    args.gpus = sorted(set(parse_list("--gpus", args.gpus)))
    args.seq = sorted(set(parse_list("--seq", args.seq)))
    args.schedules = [s.strip() for s in args.schedules.split(",")]
    if not all(re.fullmatch(r"(distattn|zigzag)(:(kernels|cudnn|auto))?", s) for s in args.schedules):
        fail(f"--schedules {','.join(args.schedules)!r}: expected names like distattn,zigzag, each "
             "optionally with :kernels, :cudnn or :auto (the blocks' attention backend)")
    args.torch_backends = [s.strip() for s in args.torch_backends.split(",")]
    for b in args.torch_backends:
        if b not in TORCH_BACKENDS:
            fail(f"--torch-backends: {b!r} is not one of {', '.join(TORCH_BACKENDS)}")
    for name in ("batch", "heads", "head_dim", "iters", "probe_iters"):
        if getattr(args, name) < 1:
            fail(f"--{name.replace('_', '-')} {getattr(args, name)}: must be >= 1")
    if args.warmup < 0 or args.probe_warmup < 0:
        fail("--warmup and --probe-warmup must be >= 0")
    if args.min_run < 1 or args.run_timeout < args.min_run:
        fail(f"--run-timeout {args.run_timeout:g} / --min-run {args.min_run:g}: need 1 <= min-run <= run-timeout")
    if not args.budget > STOP_RESERVE_S + args.min_run:
        fail(f"--budget {args.budget:g}: must be more than {STOP_RESERVE_S + args.min_run:g} s "
             f"(the shortest run plus {STOP_RESERVE_S:g} s for stopping one)")
    if args.skip_ls2c and args.skip_torch:
        fail("--skip-ls2c and --skip-torch: nothing to run")
    if not args.skip_ls2c:
        if not args.ls2c:
            fail("--ls2c BIN is required (or --skip-ls2c)")
        if not (os.path.isfile(args.ls2c) and os.access(args.ls2c, os.X_OK)):
            fail(f"--ls2c {args.ls2c}: no such executable")
        if not args.bundle or not os.path.isfile(args.bundle):
            fail(f"--bundle {args.bundle}: no such file")
        args.ls2c, args.bundle = os.path.abspath(args.ls2c), os.path.abspath(args.bundle)
    if not args.skip_torch and not os.path.isfile(args.torch_script):
        fail(f"--torch-script {args.torch_script}: no such file")
    args.torch_script = os.path.abspath(args.torch_script)
    try:
        if not shlex.split(args.torchrun):
            raise ValueError("empty")
    except ValueError as e:
        fail(f"--torchrun {args.torchrun!r}: {e}")
    if args.max_seq < max(args.seq):
        fail(f"--max-seq {args.max_seq}: below the longest --seq {max(args.seq)}")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        fail(f"--json {args.json}: no such folder")
    if args.logs:
        os.makedirs(args.logs, exist_ok=True)


def variants(args):
    out = []
    if not args.skip_torch:
        out += [("torch-cp", b) for b in args.torch_backends]
    if not args.skip_ls2c:
        out += [("ls2c", s) for s in args.schedules]
    return out


def torch_fits(args, ranks, seq):
    unit = 2 * ranks if args.causal and ranks > 1 else ranks
    return seq % unit == 0, unit


def run(args):
    check(args)
    s = Session(args)
    available = gpu_count() if args.visible_gpus is None else args.visible_gpus
    s.meta["gpus_available"] = available
    todo = variants(args)
    shape = shape_text((args.batch, args.heads, args.head_dim, args.causal))
    print(f"{available} GPU(s) here; P in {args.gpus}; S in {args.seq}; {shape}; "
          f"{', '.join(f'{a} {b}' for a, b in todo)}; budget {args.budget:g} s", flush=True)
    gpus = []
    for p in args.gpus:
        if p > available:
            print(f"P={p}: skipped, this machine has {available} GPU(s)", flush=True)
            for system, variant in todo:
                for seq in args.seq:
                    s.record({"system": system, "variant": variant, "ranks": p, "seq": seq, "batch": args.batch,
                              "heads": args.heads, "head_dim": args.head_dim, "causal": args.causal,
                              "purpose": "table", "status": "skipped",
                              "why": f"{p} GPUs asked, this machine has {available}"})
        else:
            gpus.append(p)
    stopped = {}  # (system, variant, P) -> why no longer lengths are tried
    for p in gpus:
        print(f"\n== P = {p}", flush=True)
        for seq in args.seq:
            for system, variant in todo:
                base = {"system": system, "variant": variant, "ranks": p, "seq": seq, "batch": args.batch,
                        "heads": args.heads, "head_dim": args.head_dim, "causal": args.causal, "purpose": "table"}
                fits, unit = torch_fits(args, p, seq)
                if system == "torch-cp" and not fits:
                    base.update(status="skipped", why=f"S is not a multiple of {unit}, as torch-cp needs")
                elif (system, variant, p) in stopped:
                    base.update(status="skipped", why=stopped[(system, variant, p)])
                else:
                    rec = s.one(system, variant, p, seq)
                    if rec["status"] in ("oom", "failed"):  # longer lengths would do the same
                        stopped[(system, variant, p)] = f"{rec['status']} at a shorter length ({seq:,})"
                    continue
                print(f"{label(base)}, P={p}, S={seq:,}: skipped ({base['why']})", flush=True)
                s.record(base)
    if args.max_length:
        search_max_length(s, gpus, todo)
    runs, longest = s.write() if args.json else (s.runs, s.max_length)
    print_tables(runs, longest)
    if args.json:
        print(f"wrote {args.json}")
    if s.failed:
        print(f"{len(s.failed)} run(s) failed: " + ", ".join(f"{label(r)} P={r['ranks']} S={r['seq']}"
                                                            for r in s.failed))
    return 1 if s.failed else 0


def search_max_length(s, gpus, todo):
    """Doubles S from the largest --seq per P and system until OOM, failure, --max-seq or the
    budget; every P and system at one length before any at the next."""
    a = s.args
    top = max(a.seq)
    state = {}
    for p in gpus:
        for system, variant in todo:
            table = [r for r in s.runs if r["system"] == system and r["variant"] == variant and r["ranks"] == p
                     and r["purpose"] == "table"]
            ok = [r["seq"] for r in table if r["status"] == "ok"]
            e = {"system": system, "variant": variant, "ranks": p, "batch": a.batch, "heads": a.heads,
                 "head_dim": a.head_dim, "causal": a.causal, "longest": max(ok) if ok else None,
                 "stopped_by": None}
            at_top = next((r for r in table if r["seq"] == top), None)
            if at_top is None or at_top["status"] != "ok":  # the first length that did not run says why
                bad = sorted((r for r in table if r["status"] != "ok"), key=lambda r: r["seq"])
                first = next((r for r in bad if r["status"] != "skipped"), bad[0] if bad else None)
                e["stopped_by"] = (f"{first['status']} at {first['seq']:,} (the table)" if first
                                   else f"not run at {top:,}")
            state[(system, variant, p)] = e
            s.max_length.append(e)
    print("\n== longest lengths", flush=True)
    seq = top
    while any(e["stopped_by"] is None for e in state.values()):
        seq *= 2
        for (system, variant, p), e in state.items():
            if e["stopped_by"] is not None:
                continue
            if seq > a.max_seq:
                e["stopped_by"] = f"--max-seq {a.max_seq:,}"
                continue
            rec = s.one(system, variant, p, seq, probe=True)
            if rec["status"] == "ok":
                e["longest"] = seq
            elif rec["status"] == "oom":
                e["stopped_by"] = f"OOM at {seq:,}"
            elif rec["status"] == "skipped":
                e["stopped_by"] = f"budget (at {seq:,})"
            elif "timed out" in rec.get("why", ""):
                e["stopped_by"] = f"timed out at {seq:,}"
            else:
                e["stopped_by"] = f"failed at {seq:,}"
            if a.json:
                s.write()


def summary(args):
    if not os.path.isfile(args.json):
        fail(f"--json {args.json}: no such file")
    try:
        data = json.load(open(args.json))
        runs, longest = data["runs"], data.get("max_length", [])
        for r in runs:
            key(r)
    except (ValueError, KeyError, TypeError) as e:
        fail(f"--json {args.json}: not a cp_side_by_side.py result file ({type(e).__name__}: {e})")
    meta = data.get("meta", {})
    print(f"{args.json}: {meta.get('date', '?')}, torch {meta.get('torch') or '?'}, "
          f"{meta.get('gpus_available', '?')} GPU(s), {meta.get('warmup', '?')} warm-up + "
          f"{meta.get('iters', '?')} timed iterations")
    print_tables(runs, longest)
    return 0


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run", help="the benchmark (GPU machine)")
    r.add_argument("--ls2c", help="the sequence-parallel attention tool (one process per rank, started here)")
    r.add_argument("--bundle", help="its bundle (one attention layer: heads, head_dim, mask)")
    r.add_argument("--gpus", default="1,2", help="values of P, comma-separated (default 1,2)")
    r.add_argument("--seq", default="32768,65536,131072", help="lengths S, comma-separated (whole sequence)")
    r.add_argument("--batch", type=int, default=1)
    r.add_argument("--heads", type=int, default=16)
    r.add_argument("--head-dim", type=int, default=128)
    r.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    r.add_argument("--schedules", default="distattn,zigzag", help="ls2c's schedules (default distattn,zigzag), each optionally "
                   "SCHEDULE:BACKEND (kernels, cudnn, auto: the blocks' attention)")
    r.add_argument("--torch-backends", default="flash", help="SDPA backends for torch-cp, comma-separated: "
                   "flash, cudnn, efficient (default flash)")
    r.add_argument("--rotate", choices=("alltoall", "allgather"), default="alltoall",
                   help="torch-cp's rotate method (default alltoall: the ring)")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--iters", type=int, default=10)
    r.add_argument("--budget", type=float, default=540.0, help="seconds for the whole call (default 540)")
    r.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run at most (default 300)")
    r.add_argument("--min-run", type=float, default=30.0, help="a run that would get less is skipped (default 30)")
    r.add_argument("--max-length", action="store_true", help="then double S until OOM or the budget")
    r.add_argument("--max-seq", type=int, default=1 << 24, help="--max-length stops there (default 16777216)")
    r.add_argument("--probe-warmup", type=int, default=1)
    r.add_argument("--probe-iters", type=int, default=1)
    r.add_argument("--torch-script", default=os.path.join(HERE, "cp_torch.py"))
    r.add_argument("--torchrun", default=f"{shlex.quote(sys.executable)} -m torch.distributed.run",
                   help="torch-cp's launcher (default: this Python's torch.distributed.run)")
    r.add_argument("--skip-ls2c", action="store_true")
    r.add_argument("--skip-torch", action="store_true")
    r.add_argument("--visible-gpus", type=int, help="GPUs to assume instead of counting them (tests)")
    r.add_argument("--logs", help="folder for each run's whole output")
    r.add_argument("--json")
    m = sub.add_parser("summary", help="the tables again, from --json")
    m.add_argument("--json", required=True)
    args = ap.parse_args()
    return run_mode({"run": run, "summary": summary}, args)


if __name__ == "__main__":
    sys.exit(main())
