#!/usr/bin/env python3
"""A stand-in for `python -m torch.distributed.run` in bench/cp_side_by_side.py's test (no torch):
`--standalone --nproc-per-node N SCRIPT ARGS...` runs N copies of this Python on SCRIPT with
torchrun's variables; when a worker exits with a nonzero status it stops the others and exits 1
(as torchrun does); else it exits 0 once all have."""
import os
import subprocess
import sys
import time

args = sys.argv[1:]
if args[:2] != ["--standalone", "--nproc-per-node"]:
    sys.exit(f"fake-cp-torchrun: unexpected arguments {args}")
n, cmd = int(args[2]), [sys.executable] + args[3:]
env = dict(os.environ, WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(n)]
while True:
    codes = [q.poll() for q in procs]
    if any(c not in (None, 0) for c in codes):
        for q in procs:
            if q.poll() is None:
                q.kill()
        print(f"fake-cp-torchrun: worker exited {next(c for c in codes if c)}; ChildFailedError", flush=True)
        sys.exit(1)
    if all(c == 0 for c in codes):
        sys.exit(0)
    time.sleep(0.02)
