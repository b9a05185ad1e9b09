#!/usr/bin/env python3
"""interrupt-train.py SIGNAL OUT LS2C ARGS...: starts `LS2C train ARGS... --out OUT`, waits
until its metrics file records a training step, sends SIGNAL (INT or TERM), and prints the
exit status and the last line of stderr. The run must stop after the step it is on, with its
checkpoint, not die: the status is 128 + the signal, as a shell reports it."""
import json
import os
import signal
import subprocess
import sys
import time

name, out, ls2c, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
proc = subprocess.Popen([ls2c, "train", *args, "--out", out], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
metrics = os.path.join(out, "metrics.jsonl")
deadline = time.time() + 120
while time.time() < deadline and proc.poll() is None:
    try:
        if any("loss" in json.loads(line) for line in open(metrics) if line.strip()):
            break
    except (FileNotFoundError, json.JSONDecodeError):
        pass
    time.sleep(0.05)
else:
    sys.exit(f"interrupt-train.py: no training step recorded in {metrics} in time")
proc.send_signal(getattr(signal, "SIG" + name))
_, err = proc.communicate(timeout=120)
lines = err.strip().splitlines()
print(f"status {proc.returncode}")
print(lines[-1] if lines else "(no stderr)")
