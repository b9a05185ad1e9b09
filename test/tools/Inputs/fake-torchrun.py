"""A stand-in for `python -m torch.distributed.run` in bench/ddp_side_by_side.py's test (no
torch, no GPU): for `--standalone --nproc_per_node N SCRIPT worker --dir D ... --result F` it
checks rank R's batch D/batch.R.safetensors exists for R < N and writes the result rank 0 would:
50 + 5 (N - 1) ms per step. FAKE_TORCHRUN=fail exits 1 as a crashed worker does."""
import json
import os
import sys

a = sys.argv[1:]
n = int(a[a.index("--nproc_per_node") + 1])
d, result = a[a.index("--dir") + 1], a[a.index("--result") + 1]
for r in range(n):
    if not os.path.exists(os.path.join(d, f"batch.{r}.safetensors")):
        sys.exit(f"fake torchrun: no batch for rank {r}")
if os.environ.get("FAKE_TORCHRUN") == "fail":
    print("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: worker failed")
    sys.exit(1)
ms = 50.0 + 5.0 * (n - 1)
ranks = [{"rank": r, "ms": ms, "wall_ms": ms + 0.5, "peak_gib": 10.0} for r in range(n)]
json.dump({"ms": ms, "wall_ms": ms + 0.5, "first_step_s": 30.0, "peak_gib": 10.0, "first_loss": 10.6,
           "last_loss": 10.4, "ranks": ranks, "ddp": n > 1, "bucket_cap_mb": 25.0 if n > 1 else None,
           "optimize_ddp": "True", "torch": "fake", "gpu": "fake"}, open(result, "w"))
print(f"fake torchrun: {n} ranks, {ms} ms")
