#!/usr/bin/env python3
"""Writes tiny-gpt inputs for `ls2c step` into DIR: a valid model.json, params and batch
(from test/oracle/run_oracle.py's generators), and one broken copy per rule the command
enforces; the same for tiny-vit as vit-*. Usage: make-step-inputs.py SRC_ROOT DIR"""
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
variant("batch-bool-ids", dict(batch, input_ids=batch["input_ids"] % 2 == 1))


def packed_batch(lengths):
    ids, pos, cu = ro.packed(lengths, rng, 0, c["vocab"])
    return dict(input_ids=ids, position_ids=pos, cu_seqlens=cu, labels=ids)


variant("batch-tokens", packed_batch([32] * 9))  # 288 tokens, max_batch_tokens 256
variant("batch-long-seq", packed_batch([5, 33]))  # max_seq_len 32

# tiny-vit: 3 images of 16 patches + the class token = 17 tokens each.
vd = ro.description(os.path.join(root, "examples", "tiny-vit.json"))
vc = jm.config(vd)
vbatch = ro.batch(vc, rng)
json.dump(vd, open(os.path.join(out, "vit.json"), "w"))
save_file(ro.parameters(vc, rng), os.path.join(out, "vit-params.safetensors"))
save_file(vbatch, os.path.join(out, "vit-batch.safetensors"))
variant("vit-batch-cu-seqlens", dict(vbatch, cu_seqlens=np.array([0, 20, 34, 51], np.int32)))
nan_pixels = vbatch["pixels"].copy()
nan_pixels[1, 0, 2, 3] = np.nan
variant("vit-batch-nan", dict(vbatch, pixels=nan_pixels))
variant("vit-batch-images", dict(  # 17 images, max_batch_tokens 272 allows 16
    pixels=np.zeros((17, 1, 28, 28), np.float32), labels=np.zeros(17, np.int32),
    cu_seqlens=(np.arange(18) * 17).astype(np.int32)))
