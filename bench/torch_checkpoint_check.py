#!/usr/bin/env python3
"""Checks bench/torch_models.py's activation checkpointing: for the four tiny presets (dropout off,
fp32, CUDA if present), the loss and every parameter gradient with `activation_checkpointing`
equal those without it within 1e-6 relative L2 (the recomputation runs the same ops again).
Prints one line per preset; exit 1 if any differs."""
import json
import os
import sys

try:
    import torch
except ModuleNotFoundError as e:  # a user error, not a bug: say which Python has it
    sys.exit(f"torch_checkpoint_check.py: error: needs PyTorch ({e}); run it with a Python that has torch "
             "(on the GPU machine /opt/torch/.venv/bin/python3)")

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from batches import make_batch, to_torch  # noqa: E402
from torch_models import Model, config  # noqa: E402


def grads(c, batch):
    model = Model(c, seed=1).to(batch["device"]).train()
    loss = model({k: v for k, v in batch.items() if k != "device"})
    loss.backward()
    return float(loss.detach()), {n: p.grad.detach().double() for n, p in model.named_reference_parameters()}


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failed = 0
    for preset in ("tiny-gpt", "tiny-bert", "tiny-vit", "tiny-transformer"):
        desc = json.load(open(os.path.join(HERE, "..", "examples", preset + ".json")))
        for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
            desc[k] = 0.0
        desc["dtype"] = "fp32"
        c = config(desc)
        arrays, lengths = make_batch(c, 3, c["max_seq_len"] if c["architecture"] == "vit" else 17, seed=2,
                                     uniform=True)
        batch = dict(to_torch(arrays, lengths, device), device=device)
        loss, g = grads(c, batch)
        loss_ck, g_ck = grads(dict(c, activation_checkpointing=True), batch)
        worst = max(float((g[n] - g_ck[n]).norm() / g[n].norm().clamp(min=1e-30)) for n in g)
        ok = abs(loss - loss_ck) <= 1e-6 * abs(loss) and worst <= 1e-6
        failed += not ok
        print(f"{preset}: loss {loss:.6f} vs {loss_ck:.6f} checkpointed, worst gradient relative L2 "
              f"{worst:.2e}: {'ok' if ok else 'DIFFERS'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
