#!/usr/bin/env python3
"""Writes tiny-gpt inputs for `ls2c step` into DIR: a valid model.json, params and batch
(from test/oracle/run_oracle.py's generators), and one broken copy per rule the command
enforces. Usage: make-step-inputs.py SRC_ROOT DIR"""
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

d = ro.description(os.path.join(root, "examples", "tiny-gpt.json"))
c = jm.config(d)
rng = np.random.default_rng(7)
params = ro.parameters(c, rng)
batch = ro.batch(c, rng)
json.dump(d, open(os.path.join(out, "model.json"), "w"))
save_file(params, os.path.join(out, "params.safetensors"))
save_file(batch, os.path.join(out, "batch.safetensors"))


def variant(name, tensors):
    save_file(tensors, os.path.join(out, name + ".safetensors"))


variant("params-missing", {k: v for k, v in params.items() if k != "transformer.ln_f.bias"})
variant("params-extra", dict(params, **{"transformer.extra": np.zeros(3, np.float32)}))
variant("params-shape", dict(params, **{"transformer.ln_f.bias": np.zeros(63, np.float32)}))
variant("params-int", dict(params, **{"transformer.ln_f.bias": np.zeros(64, np.int32)}))
variant("params-inf", dict(params, **{"transformer.ln_f.bias": np.full(64, np.inf, np.float32)}))
variant("batch-missing", {k: v for k, v in batch.items() if k != "labels"})
variant("batch-extra", dict(batch, pixels=np.zeros(1, np.float32)))
variant("batch-float-ids", dict(batch, input_ids=batch["input_ids"].astype(np.float32)))
bad_cu = dict(batch)
bad_cu["cu_seqlens"] = np.array([0, 3, 2], np.int32)
variant("batch-cu-seqlens", bad_cu)
