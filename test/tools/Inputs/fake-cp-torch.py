#!/usr/bin/env python3
"""A stand-in for bench/cp_torch.py in bench/cp_side_by_side.py's test (no torch, no GPU), started
by Inputs/fake-cp-torchrun.py: its options, and on rank 0 one `CP_RESULT {json}` line with the shape
asked, a step of 8 (S / 1024)^2 / P ms (forward 2/7 of it) and S / 1024 / P GiB.
FAKE_CP_OOM=S0: at S >= S0 the last rank prints an oom line and exits 3 at P > 1, 0 at P = 1 (as
cp_torch.py does); the other ranks wait."""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
for o in ("--seq", "--batch", "--heads", "--head-dim", "--warmup", "--iters"):
    ap.add_argument(o, type=int, required=True)
ap.add_argument("--causal", action=argparse.BooleanOptionalAction, required=True)
ap.add_argument("--backend", choices=("flash", "cudnn", "efficient"), required=True)
ap.add_argument("--rotate", choices=("alltoall", "allgather"), required=True)
ap.add_argument("--inputs", choices=("full", "local"), required=True)
a = ap.parse_args()
p, r = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
shape = {"system": "torch-cp", "torch": "0.0+fake", "backend": a.backend, "rotate_method": a.rotate,
         "inputs": a.inputs, "ranks": p, "batch": a.batch, "heads": a.heads, "kv_heads": a.heads,
         "head_dim": a.head_dim, "seq": a.seq, "causal": a.causal}
if a.seq >= int(os.environ.get("FAKE_CP_OOM") or sys.maxsize):
    if r == p - 1:
        print("CP_RESULT " + json.dumps(dict(shape, oom=True, rank=r, phase="forward")), flush=True)
        sys.exit(3 if p > 1 else 0)
    time.sleep(600)  # a peer waiting in NCCL, stopped by torchrun
step = 8.0 * (a.seq / 1024) ** 2 / p
if r == 0:
    print("CP_RESULT " + json.dumps(dict(shape, forward_ms=step * 2 / 7, backward_ms=step * 5 / 7, step_ms=step,
                                         max_memory_gib=a.seq / 1024 / p)), flush=True)
