#!/usr/bin/env python3
"""Checks `ls2c step --logits` against the step's own loss: the mean cross-entropy of the
logits (float64 log-softmax here) over the labelled tokens is the first step's loss (the
models have no dropout). Prints the two and their relative difference; exits 1 past 1e-5
(the f32 reference's rounding). Usage: check-step-logits.py LOGITS OUT BATCH"""
import sys

import numpy as np
from safetensors.numpy import load_file

logits = load_file(sys.argv[1])["logits"].astype(np.float64)
loss = float(load_file(sys.argv[2])["loss"][0])
labels = load_file(sys.argv[3])["labels"].astype(np.int64)
if logits.ndim != 2 or logits.shape[0] != labels.shape[0]:
    sys.exit(f"logits {logits.shape} for {labels.shape[0]} labels")
keep = labels != -100
shifted = logits - logits.max(axis=1, keepdims=True)
logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
ce = float(-logp[np.nonzero(keep)[0], labels[keep]].mean())
diff = abs(ce - loss) / abs(loss)
print(f"logits {list(logits.shape)}: cross-entropy {ce:.7f}, step loss {loss:.7f}, "
      f"relative difference {diff:.1e}")
sys.exit(0 if diff <= 1e-5 else 1)
