#!/usr/bin/env python3
"""A stand-in for ls2c-gpu-step in bench/ddp_side_by_side.py's test (no GPU): prints its usage
when run bare, and for `BUNDLE ... --batch B --steps K --time [--data-parallel]` the lines the
real tool prints, with step times 40 + 2 (N - 1) + 0.1 R ms for rank R of N, the all-reduce
2 (N - 1) ms of that. FAKE_GPU_STEP=old leaves the all-reduce out of the lines (a tool built
before --time counted it), =fail makes rank 1 (or the one rank) exit 1, =hang sleeps."""
import os
import sys
import time

if len(sys.argv) == 1:
    sys.stderr.write("usage: ls2c-gpu-step BUNDLE (--params P | --init-seed S) --batch B [--steps K] "
                     "[--time] [--data-parallel]\n")
    sys.exit(2)
args = sys.argv[1:]
steps = int(args[args.index("--steps") + 1])
dp = "--data-parallel" in args
rank, world = (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) if dp else (0, 1)
batch = args[args.index("--batch") + 1].replace("{rank}", str(rank))
if not os.path.exists(batch) or not os.path.exists(args[0]):
    sys.exit(f"ls2c-gpu-step: error: {batch if os.path.exists(args[0]) else args[0]}: cannot open")
mode = os.environ.get("FAKE_GPU_STEP", "")
if mode == "hang":
    time.sleep(3600)
if mode == "fail" and rank == world - 1:
    print(f"ls2c-gpu-step: error: rank {rank}: NCCL error: unhandled system error", flush=True)
    sys.exit(1)
print(f"{args[0]}: model bert-base on sm_90, 43 kernels", flush=True)
prefix = f"rank {rank}: " if dp else ""
reduce = 2.0 * (world - 1)
for k in range(1, steps + 1):
    time.sleep(0.005)
    ms = 40.0 + reduce + 0.1 * rank + (5.0 if k == 1 else 0.0)  # a slow first step (graph capture)
    extra = f" (all-reduce {reduce:.3f} ms)" if dp and mode != "old" else ""
    print(f"{prefix}step {k}: loss {10.5 - 0.01 * k:.6f}, grad norm 3.2, lr 1e-08, time {ms:.3f} ms{extra}", flush=True)
print("device memory: peak 1073741824 bytes (in use after a step, cudaMemGetInfo)")
print("CUDA graphs on: 2 captured, 10 replayed, 0 runs step by step")
