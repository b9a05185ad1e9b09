#!/usr/bin/env python3
"""Compares two `ls2c step` outputs tensor by tensor (loss, gradients, parameters, ...):
prints the largest relative L2 difference and exits 1 past TOL.
Usage: same-step-outputs.py A B TOL"""
import sys

import numpy as np
from safetensors.numpy import load_file

a, b, tol = load_file(sys.argv[1]), load_file(sys.argv[2]), float(sys.argv[3])
if set(a) != set(b):
    sys.exit(f"tensors differ: {sorted(set(a) ^ set(b))[:5]}")
worst, where = 0.0, ""
for k in sorted(a):
    x, y = a[k].astype(np.float64), b[k].astype(np.float64)
    if x.shape != y.shape:
        sys.exit(f"{k}: shape {x.shape} against {y.shape}")
    err = float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-300))
    if err > worst:
        worst, where = err, k
print(f"{len(a)} tensors, largest relative difference {worst:.1e} ({where or '-'})")
sys.exit(0 if worst <= tol else 1)
