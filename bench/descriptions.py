"""Model descriptions as the PyTorch models and the benchmarks read them, without torch.

config() fills in docs/model-description.md's defaults and rounds the numbers ls2c keeps as
float32; torch_models re-exports it. Kept apart from torch_models so that scripts that only
make batches or read descriptions (bench/ddp_side_by_side.py prepare) run where torch is absent.
"""
import numpy as np

# Defaults of docs/model-description.md, per architecture.
_DEFAULTS = {
    "encoder": dict(norm="post", activation="gelu", layer_norm_eps=1e-12, tie_embeddings=True, padding_idx=0,
                    hidden_dropout=0.1, attention_dropout=0.1),
    "decoder": dict(norm="pre", activation="gelu_tanh", layer_norm_eps=1e-5, tie_embeddings=True, padding_idx=-1,
                    hidden_dropout=0.1, attention_dropout=0.1),
    "encoder_decoder": dict(norm="post", activation="relu", layer_norm_eps=1e-5, tie_embeddings=False,
                            padding_idx=1, hidden_dropout=0.1, attention_dropout=0.0),
    "vit": dict(norm="pre", activation="gelu", layer_norm_eps=1e-6, hidden_dropout=0.0, attention_dropout=0.0),
}
_OPT_DEFAULTS = dict(type="adamw", lr=1e-4, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.01, clip_norm=0.0)
_SCHED_DEFAULTS = dict(type="constant", warmup_steps=0, total_steps=0, min_lr_ratio=0.0)


def f32(x):
    """The value ls2c keeps for a number field: rounded to the nearest float32."""
    return float(np.float32(x))


def config(desc):
    """The description (a dict from model.json) with the documented defaults filled in and
    the numbers ls2c keeps as float32 (rates, eps, optimizer numbers) rounded to float32."""
    c = dict(_DEFAULTS[desc["architecture"]], label_smoothing=0.0, type_vocab_size=2, channels=3,
             share_embeddings=False, activation_dropout=0.0, dtype="fp32")
    c.update(desc)
    c.setdefault("kv_heads", c["heads"])
    c.setdefault("src_vocab", c.get("vocab"))
    if c["architecture"] == "vit":
        c.setdefault("max_seq_len", (c["image_size"] // c["patch_size"]) ** 2 + 1)
    for k in ("layer_norm_eps", "label_smoothing", "hidden_dropout", "attention_dropout", "activation_dropout"):
        c[k] = f32(c[k])
    opt = dict(_OPT_DEFAULTS, **desc.get("optimizer", {}))
    opt["schedule"] = dict(_SCHED_DEFAULTS, **opt.get("schedule", {}))
    for k in ("lr", "eps", "weight_decay", "clip_norm"):
        opt[k] = f32(opt[k])
    opt["betas"] = [f32(b) for b in opt["betas"]]
    opt["schedule"]["min_lr_ratio"] = f32(opt["schedule"]["min_lr_ratio"])
    c["optimizer"] = opt
    return c
