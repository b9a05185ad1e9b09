"""The CPU parts of bench/lm_side_by_side.py's llama side, without torch (lm-side-by-side.test):
llama_hf_fields (hf/config.json checked against model.json, or resized for --tiny),
parse_state_dict_listing, write_safetensors / read_safetensors against the safetensors package,
init_batch, and a file that is no safetensors file.

    lm-side-by-side-parts.py BENCH_DIR LLAMA_FOLDER   (the folder: model.json, hf/config.json,
                                                       hf/state_dict.txt)"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

bench, folder = sys.argv[1], sys.argv[2]
sys.dont_write_bytecode = True  # nothing written beside the sources
sys.path.insert(0, bench)
import lm_side_by_side as m  # noqa: E402 (after the path)


def fields(f, keys):
    return ", ".join(f"{k} {f[k]}" for k in keys)


cfg = json.load(open(os.path.join(folder, "hf", "config.json")))
desc = json.load(open(os.path.join(folder, "model.json")))
f = m.llama_hf_fields(cfg, desc, False)
print("fields: " + fields(f, ("hidden_size", "intermediate_size", "num_key_value_heads", "head_dim",
                              "max_position_embeddings")) + ("; no torch_dtype" if "torch_dtype" not in f else ""))
t = m.llama_hf_fields(cfg, m.tiny_description(desc, 10), True)
print("tiny: " + fields(t, ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                            "num_key_value_heads", "head_dim", "max_position_embeddings", "vocab_size")))
try:
    m.llama_hf_fields(cfg, dict(desc, hidden=128), False)
    print("not refused")
except ValueError as e:
    print(f"refused: {e}")

listing = m.parse_state_dict_listing(open(os.path.join(folder, "hf", "state_dict.txt")).read())
print(f"listing: {len(listing)} tensors, "
      + " ".join(repr(x) for x in sorted(listing) if x[0] in ("lm_head.weight", "model.layers.1.mlp.down_proj.weight")))

arrays = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.linspace(0, 1, 5, dtype=np.float32),
          "c": np.array([7, -8], dtype=np.int64), "empty": np.zeros((0, 4), dtype=np.float32)}
ours, theirs = os.path.join(folder, "ours.safetensors"), os.path.join(folder, "theirs.safetensors")
m.write_safetensors(ours, arrays)
save_file(arrays, theirs)
a, b = load_file(ours), m.read_safetensors(theirs)


def same(x, y):
    return sorted(x) == sorted(y) and all(x[k].dtype == y[k].dtype and x[k].shape == y[k].shape
                                          and (x[k] == y[k]).all() for k in x)


print(f"safetensors: ours read by the package {same(a, arrays)}; the package's read by ours {same(b, arrays)}")

batch = m.init_batch(np.arange(100, dtype=np.uint16), 4, 3)
print(f"init batch: cu_seqlens {batch['cu_seqlens'].tolist()} {batch['cu_seqlens'].dtype}, "
      f"position_ids {batch['position_ids'][:6].tolist()} {batch['position_ids'].dtype}, "
      f"labels follow ids {bool((batch['labels'] == batch['input_ids'] + 1).all())}, "
      f"windows from 0 {batch['input_ids'].tolist() == list(range(12))}")

bad = os.path.join(folder, "bad.safetensors")
with open(bad, "wb") as out:
    out.write(b"\xff" * 16)
try:
    m.read_safetensors(bad)
except ValueError as e:
    print(f"bad file: {e}")
