#!/usr/bin/env python3
"""make-metrics.py DIR: metrics JSON lines for plot-metrics.test, in the formats `ls2c train`
and `ls2c-gpu-train` write: DIR/cpu.jsonl (40 steps, validation every 10, a line cut short
as a killed run leaves it), DIR/gpu.jsonl (validation at step 0, a final summary line),
DIR/no-numbers.jsonl (JSON, but no numeric step), DIR/empty.jsonl."""
import json
import math
import os
import sys

out = sys.argv[1]
with open(os.path.join(out, "cpu.jsonl"), "w") as f:
    for step in range(1, 41):
        f.write(json.dumps({"step": step, "loss": 4.2 * math.exp(-step / 20) + 0.05 * (step % 3),
                            "lr": 1e-3 * min(1, step / 10), "grad_norm": 1.0, "tokens_per_second": 5e3,
                            "finite": True, "elapsed_seconds": step * 0.1}) + "\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "valid_loss": 4.0 * math.exp(-step / 25),
                                "elapsed_seconds": step * 0.1}) + "\n")
    f.write('{"step": 41, "loss": 1.2, "l')
with open(os.path.join(out, "gpu.jsonl"), "w") as f:
    f.write(json.dumps({"step": 0, "valid_loss": 4.17, "eval_seconds": 0.1, "elapsed_seconds": 1}) + "\n")
    for step in range(1, 31):
        f.write(json.dumps({"step": step, "loss": 4.1 - step * 0.05, "lr": 6e-4, "grad_norm": 0.5,
                            "tokens_per_second": 1e6, "step_seconds": 0.01, "finite": True,
                            "elapsed_seconds": 1 + step * 0.01}) + "\n")
    f.write(json.dumps({"step": 30, "valid_loss": 2.6, "eval_seconds": 0.1, "elapsed_seconds": 2}) + "\n")
    f.write(json.dumps({"final": True, "steps": 30, "valid_loss": 2.6, "device": "sm_90"}) + "\n")
with open(os.path.join(out, "no-numbers.jsonl"), "w") as f:
    f.write('{"step": "one", "loss": "high"}\n{"note": "no step"}\nnot json at all\n')
open(os.path.join(out, "empty.jsonl"), "w").close()
