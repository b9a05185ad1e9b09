#!/usr/bin/env python3
"""A stand-in for ls2c's sequence-parallel attention tool in bench/cp_side_by_side.py's test (no
GPU), started once per rank: BUNDLE --batch B --seq S --schedule SCH --time N --warmup W
--json-line [--attention BE]. BUNDLE is a JSON file here ({"heads", "head_dim", "causal"}: what a
real bundle fixes). P = 1 when WORLD_SIZE is unset, and then none of torchrun's variables may be
set; at P > 1 all of them, LOCAL_RANK = RANK, MASTER_ADDR 127.0.0.1. Rank 0 prints
`SP_RESULT {json}` with the bundle's shape, B, S, P, the arguments it got (argv) and a step of
8 (S / 1024)^2 / P ms times 0.75 (distattn), 0.85 (zigzag), less 0.05 with --attention cudnn;
forward 2/7 of it; S / 2048 / P GiB.
FAKE_SP_OOM=SCH:R:S0: rank R of that schedule prints an oom line at S >= S0 and exits 1 (its
peers wait, as they would in NCCL); FAKE_SP_FAIL=SCH:R: rank R prints 50 lines and an error and
exits 1 (its peers wait); R is the last rank where P is smaller. FAKE_SP_HANG=SCH: every rank of
that schedule sleeps."""
import json
import os
import sys
import time

VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def error(message):
    print(f"fake-seq-parallel: error: {message}", flush=True)
    sys.exit(2)


argv = sys.argv[1:]
if not argv or not os.path.isfile(argv[0]):
    error(f"{argv[0] if argv else 'BUNDLE'}: no such bundle")
bundle, rest, opts = json.load(open(argv[0])), argv[1:], {}
while rest:
    a = rest.pop(0)
    if a == "--json-line":
        opts[a] = True
    elif a in ("--batch", "--seq", "--schedule", "--time", "--warmup", "--attention") and rest:
        opts[a] = rest.pop(0)
    else:
        error(f"unknown argument {a}")
if "--json-line" not in opts or any(k not in opts for k in ("--batch", "--seq", "--schedule", "--time", "--warmup")):
    error("--batch, --seq, --schedule, --time, --warmup and --json-line are required")
b, s, sch, attn = int(opts["--batch"]), int(opts["--seq"]), opts["--schedule"], opts.get("--attention", "kernels")
if "WORLD_SIZE" in os.environ:
    missing = [k for k in VARS if k not in os.environ]
    if missing:
        error(f"WORLD_SIZE set without {', '.join(missing)}")
    p, r = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    if os.environ["LOCAL_RANK"] != str(r) or os.environ["LOCAL_WORLD_SIZE"] != str(p) \
            or os.environ["MASTER_ADDR"] != "127.0.0.1" or not 0 < int(os.environ["MASTER_PORT"]) < 65536:
        error("inconsistent rank variables: " + " ".join(f"{k}={os.environ[k]}" for k in VARS))
else:
    p, r = 1, 0
    if any(k in os.environ for k in VARS):
        error("P = 1 but " + ", ".join(k for k in VARS if k in os.environ) + " set")
print(f"rank {r} of {p}: schedule {sch}, attention {attn}, S {s}", flush=True)


def wait_for_peer():
    time.sleep(600)  # stopped by the orchestrator (a peer exited, or the run timed out)


if os.environ.get("FAKE_SP_HANG") == sch:
    wait_for_peer()
oom = os.environ.get("FAKE_SP_OOM", "").split(":")
if oom[0] == sch and s >= int(oom[2]):
    if r == min(int(oom[1]), p - 1):
        print("SP_RESULT " + json.dumps({"oom": True, "system": "ls2c", "rank": r, "phase": "backward",
                                         "ranks": p, "seq": s}), flush=True)
        sys.exit(1)
    wait_for_peer()
fail = os.environ.get("FAKE_SP_FAIL", "").split(":")
if fail[0] == sch:
    if r == min(int(fail[1]), p - 1):
        for i in range(1, 51):
            print(f"rank {r}: block {i} done", flush=True)
        print(f"rank {r}: error: NCCL error: unhandled system error", flush=True)
        sys.exit(1)
    wait_for_peer()
if r == 0:
    step = 8.0 * (s / 1024) ** 2 / p * ({"distattn": 0.75, "zigzag": 0.85}.get(sch, 1.0) - (0.05 if attn == "cudnn" else 0))
    print("SP_RESULT " + json.dumps({
        "system": "ls2c", "schedule": sch, "attention": attn, "ranks": p, "batch": b, "heads": bundle["heads"],
        "kv_heads": bundle["heads"], "head_dim": bundle["head_dim"], "seq": s, "causal": bundle["causal"],
        "forward_ms": step * 2 / 7, "backward_ms": step * 5 / 7, "step_ms": step, "tokens_per_s": 0,
        "tflops_per_gpu": 0, "max_memory_gib": s / 2048 / p, "argv": argv}), flush=True)
