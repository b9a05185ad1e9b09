#!/usr/bin/env python3
"""Llama checkpoints as transformers saved them before, for ls2c-convert.test (numpy,
safetensors; the project's .venv).

  llama-legacy.py base-model SRC_ROOT MODEL.json HF OUT
      HF (a LlamaForCausalLM state dict) as LlamaModel saved it in the first Llama
      releases: no "model." prefix, no lm_head, and each layer's persistent
      self_attn.rotary_emb.inv_freq buffer (F32, 1 / rope_theta^(2j / head_dim))
  llama-legacy.py extra-layer SRC_ROOT MODEL.json HF OUT
      HF plus the inv_freq buffer of a layer the model does not have
"""
import os
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

sys.dont_write_bytecode = True


def main(cmd, root, model, hf, out):
    sys.path.insert(0, os.path.join(root, "bench"))
    import hf_logits as h  # noqa: E402
    cfg = h.hf_config(h.description(model))
    d = cfg["head_dim"]
    inv_freq = (1.0 / cfg["rope_theta"] ** (np.arange(0, d, 2) / d)).astype(np.float32)
    t = load_file(hf)
    if cmd == "base-model":
        legacy = {n[len("model."):]: v for n, v in t.items() if n.startswith("model.")}
        for i in range(cfg["num_hidden_layers"]):
            legacy[f"layers.{i}.self_attn.rotary_emb.inv_freq"] = inv_freq
    elif cmd == "extra-layer":
        legacy = dict(t)
        legacy[f"model.layers.{cfg['num_hidden_layers']}.self_attn.rotary_emb.inv_freq"] = inv_freq
    else:
        sys.exit("FAIL: unknown command " + cmd)
    save_file(legacy, out, metadata={"format": "pt"})


if __name__ == "__main__":
    main(*sys.argv[1:])
