#!/usr/bin/env python3
"""Helpers of ls2c-convert.test (numpy, safetensors; the project's .venv).

  hf-check.py random-params SRC_ROOT MODEL.json OUT      random F32 parameters by ls2c name
  hf-check.py hf-file SRC_ROOT MODEL.json HF OURS         HF holds exactly what transformers'
                                                          state_dict() holds, bit-identical
                                                          to OURS (tied names to their source)
  hf-check.py same-parameters A B                         every tensor of B is in A, bit for bit
                                                          (A may hold more: optimizer state)
  hf-check.py same-parameters-f16 A B                     B is A rounded to F16, widened to F32
  hf-check.py broken HF DIR                               one broken copy of HF per rule
  hf-check.py legacy SRC_ROOT MODEL.json HF OUT           HF as older checkpoints store it
  hf-check.py compare-guard SRC_ROOT DIR                  bench/hf_logits.py compare: runs when
                                                          torch and transformers exist, else
                                                          must refuse with exit status 2
"""
import json
import os
import subprocess
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

sys.dont_write_bytecode = True


def hf_logits(root):
    sys.path.insert(0, os.path.join(root, "bench"))
    import hf_logits as h  # noqa: E402
    return h


def metadata(path):
    with safe_open(path, "np") as f:
        return f.metadata() or {}


def fail(msg):
    sys.exit("FAIL: " + msg)


def main(cmd, *args):
    if cmd == "random-params":
        root, model, out = args
        h = hf_logits(root)
        cfg = h.hf_config(h.description(model))
        tied = h.tied_names(cfg)
        rng = np.random.default_rng(3)
        save_file({n: rng.normal(0, 0.5, s).astype(np.float32)
                   for n, s in h.hf_state_dict(cfg) if n not in tied}, out)
    elif cmd == "hf-file":
        root, model, hf, ours = args
        h = hf_logits(root)
        cfg = h.hf_config(h.description(model))
        a, b = load_file(hf), load_file(ours)
        expected = {n: s for n, s in h.hf_state_dict(cfg)}
        if {n: list(t.shape) for n, t in a.items()} != expected:
            fail(f"names or shapes differ: {sorted(set(a) ^ set(expected))[:5]}")
        if metadata(hf).get("format") != "pt":
            fail("metadata format is not 'pt' (from_pretrained requires it)")
        tied = h.tied_names(cfg)
        for n, t in a.items():
            src = b[tied.get(n, n)]
            if t.dtype != src.dtype or t.tobytes() != src.tobytes():
                fail(f"{n} is not bit-identical to {tied.get(n, n)}")
        print(f"{cfg['architectures'][0]}: {len(a)} tensors as transformers names them, "
              f"{len(tied)} tied, bit-identical")
    elif cmd == "same-parameters":
        a, b = load_file(args[0]), load_file(args[1])
        for n, t in b.items():
            if n not in a or a[n].dtype != t.dtype or a[n].tobytes() != t.tobytes():
                fail(f"{n} differs")
        print(f"{len(b)} parameters bit-identical")
    elif cmd == "same-parameters-f16":
        # B was converted from an F16 copy of A: A rounded to F16, widened back exactly.
        a, b = load_file(args[0]), load_file(args[1])
        for n, t in b.items():
            want = a[n].astype(np.float16).astype(np.float32)
            if t.dtype != np.float32 or t.tobytes() != want.tobytes():
                fail(f"{n} is not A rounded to F16 and widened")
        print(f"{len(b)} parameters are the F16 values, widened exactly")
    elif cmd == "broken":
        hf, out = args
        t = load_file(hf)
        first = next(n for n in t if n.endswith("ln_f.bias") or n.endswith("embeddings.LayerNorm.bias"))
        pos = next(n for n in t if n.endswith("wpe.weight") or n.endswith("position_embeddings.weight"))
        tied = "lm_head.weight" if "lm_head.weight" in t else "cls.predictions.decoder.weight"
        variants = {
            "missing": {k: v for k, v in t.items() if k != first},
            "shape": dict(t, **{pos: np.zeros((2 * t[pos].shape[0], t[pos].shape[1]), np.float32)}),
            "extra": dict(t, **{"transformer.h.0.attn.rotary.inv_freq": np.zeros(8, np.float32)}),
            "int": dict(t, **{first: np.zeros(t[first].shape, np.int32)}),
            "untied": dict(t, **{tied: t[tied] + 1}),
        }
        for name, tensors in variants.items():
            save_file(tensors, os.path.join(out, f"hf-{name}.safetensors"), metadata={"format": "pt"})
    elif cmd == "legacy":
        root, model, hf, out = args
        h = hf_logits(root)
        cfg = h.hf_config(h.description(model))
        t = load_file(hf)
        if cfg["model_type"] == "bert":
            # BertForPreTraining as saved before transformers 4.31: gamma/beta, position_ids,
            # the pooler and the NSP head; tied names left out as save_pretrained does; F16.
            legacy = {}
            for n, v in t.items():
                if n.startswith("cls.predictions.decoder."):
                    continue
                if "LayerNorm" in n:
                    n = n.replace(".weight", ".gamma").replace(".bias", ".beta")
                legacy[n] = v.astype(np.float16)
            H, L = cfg["hidden_size"], cfg["max_position_embeddings"]
            legacy["bert.embeddings.position_ids"] = np.arange(L, dtype=np.int64)[None]
            legacy["bert.pooler.dense.weight"] = np.zeros((H, H), np.float32)
            legacy["bert.pooler.dense.bias"] = np.zeros(H, np.float32)
            legacy["cls.seq_relationship.weight"] = np.zeros((2, H), np.float32)
            legacy["cls.seq_relationship.bias"] = np.zeros(2, np.float32)
        else:
            # openai-community/gpt2's layout: GPT2Model names, the causal-mask buffers.
            L = cfg["n_positions"]
            legacy = {n[len("transformer."):]: v for n, v in t.items() if n.startswith("transformer.")}
            for i in range(cfg["n_layer"]):
                legacy[f"h.{i}.attn.bias"] = np.tril(np.ones((L, L), np.float32))[None, None]
        save_file(legacy, out, metadata={"format": "pt"})
    elif cmd == "compare-guard":
        root, d = args
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
            have = True
        except ImportError:
            have = False
        r = subprocess.run([sys.executable, os.path.join(root, "bench", "hf_logits.py"), "compare", d],
                           capture_output=True, text=True)
        if have:
            print(r.stdout, end="")
            if r.returncode != 0:
                fail(f"compare exited {r.returncode}: {r.stderr}")
        else:
            if r.returncode != 2 or "needs torch and transformers" not in r.stderr:
                fail(f"without torch/transformers, compare must refuse (exit 2): {r.returncode} {r.stderr}")
            print("compare refused without torch and transformers: " + r.stderr.strip())
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(*sys.argv[1:])
