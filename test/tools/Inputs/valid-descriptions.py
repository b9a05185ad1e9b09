#!/usr/bin/env python3
"""valid-descriptions.py LS2C OUTDIR [COUNT] [SEED]: writes COUNT model
descriptions that vary every choice a description has (architecture, dtype,
norm, activation, optimizer and schedule type, grouped-query heads, tying,
checkpointing, odd sizes, fields left to their defaults), then requires of
each: `ls2c check` accepts it or refuses it with exit status 2 and one line
"ls2c: error: ...", and every accepted one compiles to an sm_90 bundle
(`ls2c compile --arch=sm_90 -o`). At least 90% must be accepted, so a check
that refuses everything fails too. Prints a line per description and a count.
"""
import json
import os
import random
import subprocess
import sys

ARCHITECTURES = ["encoder", "decoder", "encoder_decoder", "vit", "llama"]
DTYPES = ["fp32", "fp16", "bf16"]
NORMS = ["pre", "post", None]
ACTIVATIONS = ["relu", "gelu", "gelu_tanh", "silu", None]
SCHEDULES = [None, "constant", "linear", "cosine", "inverse_sqrt"]
OPTIMIZERS = [None, "adamw", "adam", "defaults"]
# (hidden, heads, kv_heads): head dims 4-32 and odd ones (12, 20, 6).
WIDTHS = [(64, 4, 4), (48, 4, 2), (36, 3, 3), (40, 2, 1), (24, 4, 4), (96, 6, 3), (32, 1, 1)]


def schedule(kind, rng):
    if kind is None:
        return None
    s = {"type": kind}
    if kind in ("linear", "cosine"):
        s["warmup_steps"] = rng.choice([0, 5])
        s["total_steps"] = s["warmup_steps"] + rng.choice([1, 100])
        if rng.random() < 0.5:
            s["min_lr_ratio"] = rng.choice([0.0, 0.1, 1.0])
    elif kind == "inverse_sqrt":
        s["warmup_steps"] = rng.choice([1, 10])
    elif rng.random() < 0.5:
        s["warmup_steps"] = rng.choice([0, 3])
    return s


def optimizer(kind, sched, rng):
    if kind is None and sched is None:
        return None
    o = {}
    if kind in ("adamw", "adam"):
        o["type"] = kind
        o["lr"] = rng.choice([1e-3, 3e-4])
        if rng.random() < 0.5:
            o["clip_norm"] = rng.choice([0.0, 1.0])
        if rng.random() < 0.5:
            o["weight_decay"] = rng.choice([0.0, 0.1])
        if rng.random() < 0.3:
            o["betas"] = [0.9, 0.95]
    if sched is not None:
        o["schedule"] = sched
    return o


def description(i, rng):
    arch = ARCHITECTURES[i % len(ARCHITECTURES)]
    hidden, heads, kv_heads = WIDTHS[(i // 2) % len(WIDTHS)]
    d = {"name": f"valid-{i:03d}", "architecture": arch, "hidden": hidden,
         "heads": heads, "ffn": rng.choice([hidden * 2, 50, 130])}
    if kv_heads != heads or rng.random() < 0.2:
        d["kv_heads"] = kv_heads
    layers = rng.choice([1, 2])
    if arch in ("encoder", "encoder_decoder", "vit"):
        d["encoder_layers"] = layers
    if arch in ("decoder", "encoder_decoder", "llama"):
        d["decoder_layers"] = rng.choice([1, 2])
    if arch == "vit":
        patch = rng.choice([4, 7])
        d["patch_size"] = patch
        d["image_size"] = patch * rng.choice([1, 2, 3])  # 1: one patch
        if rng.random() < 0.5:
            d["channels"] = rng.choice([1, 3])
        d["num_classes"] = rng.choice([2, 10, 37])
        tokens = (d["image_size"] // patch) ** 2 + 1
        d["max_batch_tokens"] = tokens * rng.choice([1, 4])
    else:
        d["vocab"] = rng.choice([37, 65, 100, 258])
        d["max_seq_len"] = rng.choice([3, 9, 16, 32])
        d["max_batch_tokens"] = d["max_seq_len"] * rng.choice([1, 5, 8])
        if arch == "encoder_decoder" and rng.random() < 0.5:
            d["src_vocab"] = rng.choice([41, 100])
            d["share_embeddings"] = False
        elif arch == "encoder_decoder" and rng.random() < 0.5:
            d["share_embeddings"] = True
        if rng.random() < 0.4:
            d["tie_embeddings"] = rng.random() < 0.5
        if rng.random() < 0.3:
            d["padding_idx"] = rng.choice([-1, 0, 1])
        if arch == "encoder" and rng.random() < 0.4:
            d["max_predictions"] = rng.randint(1, d["max_batch_tokens"])
        if arch == "encoder" and rng.random() < 0.3:
            d["type_vocab_size"] = rng.choice([1, 2, 3])
    dtype = DTYPES[(i // 4) % len(DTYPES)]
    if dtype != "fp32" or rng.random() < 0.5:
        d["dtype"] = dtype
    norm = NORMS[(i // 3) % len(NORMS)]
    if norm and not (arch == "llama" and norm == "post"):  # llama is pre-norm only
        d["norm"] = norm
    act = ACTIVATIONS[(i // 5) % len(ACTIVATIONS)]
    if act:
        d["activation"] = act
    # Llama has attention dropout only, and RMSNorm's rms_norm_eps.
    for field in ("hidden_dropout", "attention_dropout", "activation_dropout"):
        if rng.random() < 0.5:
            d[field] = rng.choice([0.0, 0.1]) if arch != "llama" or field == "attention_dropout" else 0.0
    if rng.random() < 0.3:
        d["label_smoothing"] = rng.choice([0.0, 0.1])
    if rng.random() < 0.3:
        d["rms_norm_eps" if arch == "llama" else "layer_norm_eps"] = rng.choice([1e-5, 1e-12])
    if arch == "llama" and rng.random() < 0.5:
        d["rope_theta"] = rng.choice([10000.0, 500000.0])
    if rng.random() < 0.25:
        d["activation_checkpointing"] = True
        if rng.random() < 0.5:
            d["recompute_attention"] = True
    opt = optimizer(OPTIMIZERS[(i // 7) % len(OPTIMIZERS)],
                    schedule(SCHEDULES[i % len(SCHEDULES)], rng), rng)
    if opt is not None:
        d["optimizer"] = opt
    return d


def main():
    ls2c, out = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 2026
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    accepted = failures = 0
    for i in range(count):
        d = description(i, rng)
        path = os.path.join(out, d["name"] + ".json")
        with open(path, "w") as f:
            json.dump(d, f, indent=1)
        check = subprocess.run([ls2c, "check", path], capture_output=True, text=True)
        if check.returncode != 0:
            err = check.stderr.strip().splitlines()
            if check.returncode != 2 or len(err) != 1 or not err[0].startswith("ls2c: error: "):
                print(f"FAIL {path}: check exited {check.returncode}: {check.stderr}")
                failures += 1
            else:
                print(f"refused {path}: {err[0]}")
            continue
        accepted += 1
        bundle = os.path.join(out, d["name"] + ".ls2b")
        run = subprocess.run([ls2c, "compile", path, "--arch=sm_90", "-o", bundle],
                             capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(bundle):
            print(f"FAIL {path}: check accepts it, compile --arch=sm_90 exited "
                  f"{run.returncode}: {run.stderr.strip()}")
            failures += 1
        else:
            print(f"compiled {path}")
            os.remove(bundle)
    print(f"{accepted} of {count} accepted, {failures} failures (seed {seed})")
    if accepted < 0.9 * count:
        print("FAIL: check refused more than 10% of valid descriptions")
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
