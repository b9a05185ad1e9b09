#!/usr/bin/env python3
"""Writes tiny-bert-max-predictions inputs for `ls2c step` and `ls2c-gpu-step` into DIR:
model.json (max_predictions P, dropout-free as run_oracle.py makes it), full.json (the same
model without max_predictions: the head on every token), params.safetensors, and batches of
40 tokens with P - 5 labels (batch), exactly P (at-bound) and P + 1 (over: refused).
Usage: make-mlm-step-inputs.py SRC_ROOT DIR"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

root, out = sys.argv[1], sys.argv[2]
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(root, "test", "oracle"))
import jax_models as jm  # noqa: E402
import run_oracle as ro  # noqa: E402

d = ro.description(os.path.join(root, "examples", "tiny-bert-max-predictions.json"))
P = d["max_predictions"]
full = {k: v for k, v in d.items() if k != "max_predictions"}
c = jm.config(d)
rng = np.random.default_rng(26)
json.dump(d, open(os.path.join(out, "model.json"), "w"))
json.dump(full, open(os.path.join(out, "full.json"), "w"))
save_file(ro.parameters(c, rng), os.path.join(out, "params.safetensors"))
ids, pos, cu = ro.packed([17, 9, 14], rng, 1, c["vocab"])
tt = rng.integers(0, c["type_vocab_size"], ids.size).astype(np.int32)
order = rng.permutation(ids.size)
for name, count in (("batch", P - 5), ("at-bound", P), ("over", P + 1)):
    labels = np.full(ids.size, -100, np.int32)
    labels[order[:count]] = rng.integers(0, c["vocab"], count)
    save_file(dict(input_ids=ids, token_type_ids=tt, position_ids=pos, cu_seqlens=cu, labels=labels),
              os.path.join(out, name + ".safetensors"))
