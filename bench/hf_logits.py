#!/usr/bin/env python3
"""Checks a checkpoint converted by `ls2c convert --to-hf` against Hugging Face transformers.

Builds BertForMaskedLM ("encoder" descriptions), GPT2LMHeadModel ("decoder") or
LlamaForCausalLM ("llama") from the config equivalent to MODEL.json, loads the converted
state dict into it, runs it on a packed batch (unpacked to a padded batch with an attention
mask, each sequence's position_ids starting at 0), and compares with ls2c's CPU reference
backend on the same weights and batch (`ls2c step --steps 1 --precision P` on a dropout-free
fp32 copy of the description, with the parameters converted back by
`ls2c convert --from-hf`): the loss (mean cross-entropy over labelled tokens, ls2c's labels:
GPT-2 and Llama labels are the next tokens, not shifted inside the model as transformers'
own loss does) and the gradient of every parameter. transformers' model.state_dict() names
and shapes are also checked against the ones this script derives from the config (and ls2c
lists).

Precision (--precision, recorded by prepare in DIR/check.json): BERT and GPT-2 run in f32
on both sides (transformers in float32, `ls2c step --precision f32`; tolerances 1e-4 for the
loss and gradients, 1e-5 for the logits); Llama runs in f64 on both sides (transformers'
model in float64, `ls2c step --precision f64`; 1e-6 for all), with the float32 islands of
transformers' Llama (the rotary cos/sin, RMSNorm's statistics, the eager softmax) moved to
float64 as compare() says.

Logits: prepare has `ls2c step --logits` write what ls2c's dropout-free forward scores at the
converted parameters (DIR/ls2c-logits.safetensors, "logits" [T, vocab] in packed order);
compare saves transformers' logits beside them (DIR/hf-logits.safetensors) and compares the
two (relative L2, --logits-tol), besides the loss and every gradient.

ls2c needs MLIR, which the GPU machine lacks, and transformers needs torch, which the
development machines lack; so the work is split in two phases that share a directory:

  hf_logits.py prepare MODEL.json HF.safetensors --ls2c LS2C --out DIR   # numpy, safetensors
                  [--precision f32|f64]
  hf_logits.py compare DIR [--device cuda]                              # torch, transformers
  hf_logits.py run MODEL.json HF.safetensors --ls2c LS2C [--out DIR]    # both, one machine
  hf_logits.py config MODEL.json                                        # the config.json
  hf_logits.py self-check MODEL.json... --ls2c LS2C                     # config and names
                                                                        # against ls2c's
Exit status: 0 agree, 1 differ, 2 bad input or a missing dependency.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The build's compiler when it exists (as the other bench scripts default), else ls2c on PATH.
_BUILT_LS2C = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "build", "tools", "ls2c", "ls2c")
DEFAULT_LS2C = _BUILT_LS2C if os.path.isfile(_BUILT_LS2C) else "ls2c"

# Defaults of docs/model-description.md (lib/Model/ModelDescription.cpp's defaultsFor) for
# the architectures transformers has here.
_DEFAULTS = {
    "encoder": dict(norm="post", activation="gelu", hidden_dropout=0.1, attention_dropout=0.1,
                    layer_norm_eps=1e-12, tie_embeddings=True, padding_idx=0, type_vocab_size=2),
    "decoder": dict(norm="pre", activation="gelu_tanh", hidden_dropout=0.1, attention_dropout=0.1,
                    layer_norm_eps=1e-5, tie_embeddings=True, padding_idx=-1),
    "llama": dict(norm="pre", activation="silu", hidden_dropout=0.0, attention_dropout=0.0,
                  rms_norm_eps=1e-6, rope_theta=10000.0, tie_embeddings=False, padding_idx=-1),
}
_HF_ACTIVATION = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new", "silu": "silu"}
_MODEL_CLASS = {"encoder": "BertForMaskedLM", "decoder": "GPT2LMHeadModel",
                "llama": "LlamaForCausalLM"}


class Refused(Exception):
    """A description without a transformers equivalent, bad input or a missing dependency."""


def description(path):
    """MODEL.json with the documented defaults filled in."""
    d = json.load(open(path))
    arch = d.get("architecture")
    if arch not in _DEFAULTS:
        raise Refused(f"{path}: $.architecture: {arch!r}: Hugging Face checkpoints are defined "
                      "for 'encoder' (BertForMaskedLM), 'decoder' (GPT2LMHeadModel) and "
                      "'llama' (LlamaForCausalLM) only")
    c = dict(_DEFAULTS[arch], activation_dropout=0.0, label_smoothing=0.0)
    c.update(d)
    c.setdefault("kv_heads", c["heads"])
    if arch == "encoder" and c["norm"] != "post":
        raise Refused(f"{path}: $.norm: 'pre': BertForMaskedLM is post-LN")
    if arch != "encoder" and c["norm"] != "pre":
        raise Refused(f"{path}: $.norm: 'post': {_MODEL_CLASS[arch]} is pre-norm with a final "
                      "norm")
    if arch != "llama" and c["kv_heads"] != c["heads"]:
        raise Refused(f"{path}: $.kv_heads: {c['kv_heads']}: no grouped-query attention in "
                      "BERT / GPT-2")
    return c


def hf_config(c):
    """config.json of the equivalent BertConfig / GPT2Config / LlamaConfig (what
    `ls2c convert --hf-config` writes)."""
    act = _HF_ACTIVATION[c["activation"]]
    V = c["vocab"]
    if c["architecture"] == "encoder":
        return {
            "architectures": ["BertForMaskedLM"], "model_type": "bert",
            "vocab_size": c["vocab"], "hidden_size": c["hidden"],
            "num_hidden_layers": c["encoder_layers"], "num_attention_heads": c["heads"],
            "intermediate_size": c["ffn"], "hidden_act": act,
            "hidden_dropout_prob": c["hidden_dropout"],
            "attention_probs_dropout_prob": c["attention_dropout"],
            "max_position_embeddings": c["max_seq_len"], "type_vocab_size": c["type_vocab_size"],
            "initializer_range": 0.02, "layer_norm_eps": c["layer_norm_eps"],
            "pad_token_id": c["padding_idx"] if c["padding_idx"] >= 0 else None,
            "position_embedding_type": "absolute", "is_decoder": False,
            "tie_word_embeddings": c["tie_embeddings"], "torch_dtype": "float32",
        }
    if c["architecture"] == "llama":
        # configuration_llama.py's fields; LlamaConfig's bos 1 / eos 2 only where the
        # vocabulary holds them. rope_theta and rope_scaling: the names before
        # transformers 5 (which reads them into rope_parameters).
        return {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": V, "hidden_size": c["hidden"], "intermediate_size": c["ffn"],
            "num_hidden_layers": c["decoder_layers"], "num_attention_heads": c["heads"],
            "num_key_value_heads": c["kv_heads"], "head_dim": c["hidden"] // c["heads"],
            "hidden_act": act, "max_position_embeddings": c["max_seq_len"],
            "initializer_range": 0.02, "rms_norm_eps": c["rms_norm_eps"],
            "rope_theta": c["rope_theta"], "rope_scaling": None, "attention_bias": False,
            "attention_dropout": c["attention_dropout"], "mlp_bias": False,
            "pretraining_tp": 1, "use_cache": True,
            "bos_token_id": 1 if V > 2 else None, "eos_token_id": 2 if V > 2 else None,
            "pad_token_id": c["padding_idx"] if c["padding_idx"] >= 0 else None,
            "tie_word_embeddings": c["tie_embeddings"], "torch_dtype": "float32",
        }
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": c["vocab"], "n_positions": c["max_seq_len"], "n_embd": c["hidden"],
        "n_layer": c["decoder_layers"], "n_head": c["heads"], "n_inner": c["ffn"],
        "activation_function": act, "resid_pdrop": c["hidden_dropout"],
        "embd_pdrop": c["hidden_dropout"], "attn_pdrop": c["attention_dropout"],
        "layer_norm_epsilon": c["layer_norm_eps"], "initializer_range": 0.02,
        "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False, "add_cross_attention": False,
        "tie_word_embeddings": c["tie_embeddings"],
        # GPT2Config's default 50256 lies outside a smaller vocabulary: its last id.
        "bos_token_id": V - 1, "eos_token_id": V - 1, "torch_dtype": "float32",
    }


def hf_state_dict(cfg):
    """[(name, shape)] of model.state_dict() as transformers' modules allocate them
    (modeling_bert.py / modeling_gpt2.py / modeling_llama.py; non-persistent buffers
    excluded, tied names included)."""
    s = []
    if cfg["model_type"] == "llama":
        V, H, I = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
        D = cfg.get("head_dim") or H // cfg["num_attention_heads"]
        Q, KV = cfg["num_attention_heads"] * D, cfg["num_key_value_heads"] * D

        def linear(p, i, o):  # nn.Linear(i, o, bias=False): attention_bias, mlp_bias false
            s.append((p + ".weight", [o, i]))

        # LlamaModel: embed_tokens, layers (LlamaDecoderLayer: self_attn, mlp, the two
        # RMSNorms), norm; rotary_emb's inv_freq is a non-persistent buffer.
        s.append(("model.embed_tokens.weight", [V, H]))
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            linear(p + "self_attn.q_proj", H, Q)
            linear(p + "self_attn.k_proj", H, KV)
            linear(p + "self_attn.v_proj", H, KV)
            linear(p + "self_attn.o_proj", Q, H)
            linear(p + "mlp.gate_proj", H, I)
            linear(p + "mlp.up_proj", H, I)
            linear(p + "mlp.down_proj", I, H)
            s.append((p + "input_layernorm.weight", [H]))
            s.append((p + "post_attention_layernorm.weight", [H]))
        s.append(("model.norm.weight", [H]))
        s.append(("lm_head.weight", [V, H]))
        return s
    if cfg["model_type"] == "bert":
        V, H, I = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]

        def linear(p, i, o):  # nn.Linear(i, o)
            s.extend([(p + ".weight", [o, i]), (p + ".bias", [o])])

        def ln(p):
            s.extend([(p + ".weight", [H]), (p + ".bias", [H])])

        s.append(("bert.embeddings.word_embeddings.weight", [V, H]))
        s.append(("bert.embeddings.position_embeddings.weight", [cfg["max_position_embeddings"], H]))
        s.append(("bert.embeddings.token_type_embeddings.weight", [cfg["type_vocab_size"], H]))
        ln("bert.embeddings.LayerNorm")
        for i in range(cfg["num_hidden_layers"]):
            p = f"bert.encoder.layer.{i}."
            for q in ("query", "key", "value"):
                linear(p + "attention.self." + q, H, H)
            linear(p + "attention.output.dense", H, H)
            ln(p + "attention.output.LayerNorm")
            linear(p + "intermediate.dense", H, I)
            linear(p + "output.dense", I, H)
            ln(p + "output.LayerNorm")
        s.append(("cls.predictions.bias", [V]))
        linear("cls.predictions.transform.dense", H, H)
        ln("cls.predictions.transform.LayerNorm")
        s.extend([("cls.predictions.decoder.weight", [V, H]), ("cls.predictions.decoder.bias", [V])])
        return s
    V, E = cfg["vocab_size"], cfg["n_embd"]
    inner = cfg["n_inner"] or 4 * E

    def conv1d(p, nf, nx):  # Conv1D(nf, nx): weight [nx, nf]
        s.extend([(p + ".weight", [nx, nf]), (p + ".bias", [nf])])

    def ln(p):
        s.extend([(p + ".weight", [E]), (p + ".bias", [E])])

    s.extend([("transformer.wte.weight", [V, E]), ("transformer.wpe.weight", [cfg["n_positions"], E])])
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        ln(p + "ln_1")
        conv1d(p + "attn.c_attn", 3 * E, E)
        conv1d(p + "attn.c_proj", E, E)
        ln(p + "ln_2")
        conv1d(p + "mlp.c_fc", inner, E)
        conv1d(p + "mlp.c_proj", E, inner)
    ln("transformer.ln_f")
    s.append(("lm_head.weight", [V, E]))
    return s


def tied_names(cfg):
    """Second names of tied tensors: {name: the name ls2c keeps}."""
    if cfg["model_type"] == "bert":
        t = {"cls.predictions.decoder.bias": "cls.predictions.bias"}
        if cfg["tie_word_embeddings"]:
            t["cls.predictions.decoder.weight"] = "bert.embeddings.word_embeddings.weight"
        return t
    embeddings = ("model.embed_tokens.weight" if cfg["model_type"] == "llama"
                  else "transformer.wte.weight")
    return {"lm_head.weight": embeddings} if cfg["tie_word_embeddings"] else {}


# ------------------------------------------------------------------------------ batches

def make_batch(c, seed):
    """A packed batch as `ls2c step` reads it: three sequences of different lengths within
    max_seq_len and max_batch_tokens. Input ids avoid padding_idx (transformers' BERT zeroes
    the padding row's embedding gradient, ls2c does not)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    L, budget = c["max_seq_len"], c["max_batch_tokens"]
    lengths = []
    for n in (L, max(1, L // 2), max(1, L // 3 + 1)):
        if sum(lengths) + n <= budget:
            lengths.append(n)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    pos = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    V, T = c["vocab"], int(cu[-1])
    ids = rng.integers(0, V, T)
    pad = c["padding_idx"]
    if pad >= 0:
        ids = np.where(ids == pad, (pad + 1) % V, ids)
    if c["architecture"] == "encoder":
        labels = np.where(rng.random(T) < 0.3, rng.integers(0, V, T), -100)
        labels[0] = ids[0]
        # At most max_predictions labels (ls2c step refuses more): the first ones kept.
        if c.get("max_predictions"):
            labels[np.flatnonzero(labels != -100)[c["max_predictions"]:]] = -100
        return dict(input_ids=ids.astype(np.int32), position_ids=pos,
                    token_type_ids=rng.integers(0, c["type_vocab_size"], T).astype(np.int32),
                    cu_seqlens=cu, labels=labels.astype(np.int32))
    labels = np.append(ids[1:], -100)
    labels[cu[1:] - 1] = -100
    return dict(input_ids=ids.astype(np.int32), position_ids=pos, cu_seqlens=cu,
                labels=labels.astype(np.int32))


def unpack(batch, pad_id):
    """Packed [T] inputs -> padded [B, Lmax] numpy arrays plus attention_mask, and the
    (b, i) coordinates of each packed token."""
    import numpy as np
    cu = batch["cu_seqlens"]
    B = len(cu) - 1
    Lmax = int(max(cu[1:] - cu[:-1]))
    out = {}
    for k in ("input_ids", "position_ids", "token_type_ids"):
        if k in batch:
            a = np.full((B, Lmax), pad_id if k == "input_ids" else 0, np.int64)
            for b in range(B):
                a[b, :cu[b + 1] - cu[b]] = batch[k][cu[b]:cu[b + 1]]
            out[k] = a
    mask = np.zeros((B, Lmax), np.int64)
    coords = []
    for b in range(B):
        n = cu[b + 1] - cu[b]
        mask[b, :n] = 1
        coords.extend((b, i) for i in range(n))
    out["attention_mask"] = mask
    return out, coords


def repack(padded, coords):
    import numpy as np
    return np.stack([padded[b, i] for b, i in coords])


# ------------------------------------------------------------------------------ ls2c side

def ls2c_run(ls2c, *args):
    r = subprocess.run([ls2c, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise Refused(f"{ls2c} {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def default_precision(c):
    """Llama in f64 (its comparison is a float64 one, see compare()), BERT and GPT-2 in f32."""
    return "f64" if c["architecture"] == "llama" else "f32"


# Relative tolerances of the loss and each gradient, and of the logits, per precision.
_TOLERANCES = {"f32": (1e-4, 1e-5), "f64": (1e-6, 1e-6)}


def prepare(model, hf_file, ls2c, out, seed, precision=None):
    """Phase 1 (numpy, safetensors, ls2c): everything compare() needs, in `out`."""
    from safetensors.numpy import save_file
    c = description(model)
    cfg = hf_config(c)
    precision = precision or default_precision(c)
    os.makedirs(out, exist_ok=True)
    json.dump({"precision": precision}, open(os.path.join(out, "check.json"), "w"))
    # The same model without dropout, in fp32 (the parameters are the same).
    d = json.load(open(model))
    for k in ("hidden_dropout", "attention_dropout", "activation_dropout"):
        d[k] = 0.0
    d["dtype"] = "fp32"
    d.setdefault("name", os.path.splitext(os.path.basename(model))[0])
    json.dump(d, open(os.path.join(out, "model.json"), "w"), indent=1)
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    ls2c_cfg = os.path.join(out, "ls2c-config.json")
    ls2c_run(ls2c, "convert", "--list", model, "--hf-config", ls2c_cfg)
    if json.load(open(ls2c_cfg)) != cfg:
        raise Refused(f"the config built here differs from `ls2c convert --hf-config`: "
                      f"{cfg} vs {json.load(open(ls2c_cfg))}")
    shutil.copyfile(hf_file, os.path.join(out, "hf.safetensors"))
    params = os.path.join(out, "params.safetensors")
    ls2c_run(ls2c, "convert", "--from-hf", model, hf_file, "-o", params)
    batch = make_batch(c, seed)
    save_file(batch, os.path.join(out, "batch.safetensors"))
    ls2c_run(ls2c, "step", os.path.join(out, "model.json"), "--params", params, "--batch",
             os.path.join(out, "batch.safetensors"), "-o", os.path.join(out, "ls2c-step.safetensors"),
             "--steps", "1", "--precision", precision,
             "--logits", os.path.join(out, "ls2c-logits.safetensors"))
    print(f"prepared {out}: {cfg['architectures'][0]}, batch of {len(batch['cu_seqlens']) - 1} "
          f"sequences, {len(batch['input_ids'])} tokens, {precision}")


# ------------------------------------------------------------------------------ transformers

def import_torch_transformers():
    try:
        import torch
        import transformers
    except ImportError as e:
        raise Refused(f"compare needs torch and transformers (the GPU machine's Python): {e}")
    return torch, transformers


def rel(a, b):
    import numpy as np
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def llama_in_float64(model, cfg, torch):
    """Makes transformers' Llama compute in float64 the parts it keeps in float32 on purpose.

    For bf16/fp16 training, modeling_llama.py computes three things in float32 whatever the
    model's dtype: LlamaRotaryEmbedding.forward casts inv_freq (itself computed in float32)
    and the positions with .float() and disables autocast, so cos and sin carry float32
    rounding (inv_freq to 6e-8 relative, angles near max_seq_len to about 2e-6 absolute: the
    size of the 1e-6 tolerance); LlamaRMSNorm casts its input to float32 for the statistics;
    and eager attention takes its softmax in float32 (the caller picks SDPA instead, whose
    math kernel keeps float64). In a float64 model these are downcasts, while
    `ls2c step --precision f64` computes every op in double; so for a float64 comparison the
    rotary embedding and the RMSNorms are replaced, per module, by the same formulas in the
    model's dtype: modeling_llama.py's default rope type (inv_freq = 1 / theta^(2j /
    head_dim), angles = position * inv_freq, cat(angles, angles), cos and sin) and
    weight * (x * rsqrt(mean(x^2) + eps)). Nothing else changes, and the tolerance is not
    loosened. (llama-tiny, transformers 5.17: with SDPA but without these replacements the
    logits differed by 4e-7 and the gradients by up to 3.6e-6, over the tolerance; with
    them, by 1e-12 and 3e-12.) Returns the number of modules replaced."""
    import inspect
    theta, dim = float(cfg["rope_theta"]), int(cfg["head_dim"])

    def rotary(module):
        if "position_ids" not in inspect.signature(module.forward).parameters:
            raise Refused(f"{type(module).__name__}.forward takes no position_ids: compare needs "
                          "transformers 4.38 or later for Llama")
        if getattr(module, "attention_scaling", 1.0) != 1.0:
            raise Refused(f"{type(module).__name__}: a rope type other than the default")

        @torch.no_grad()
        def forward(x, position_ids, *args, **kwargs):
            j = torch.arange(0, dim, 2, dtype=torch.float64, device=x.device)
            inv_freq = 1.0 / (theta ** (j / dim))
            angles = position_ids.to(torch.float64)[..., None] * inv_freq  # [B, L, dim / 2]
            emb = torch.cat((angles, angles), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        return forward

    def rms_norm(module):
        def forward(x):
            variance = x.pow(2).mean(-1, keepdim=True)
            return module.weight * (x * torch.rsqrt(variance + module.variance_epsilon))
        return forward

    replaced = {"RotaryEmbedding": 0, "RMSNorm": 0}
    for m in model.modules():
        name = type(m).__name__
        if name.startswith("Llama") and name.endswith("RotaryEmbedding"):
            m.forward = rotary(m)
            replaced["RotaryEmbedding"] += 1
        elif name == "LlamaRMSNorm":
            m.forward = rms_norm(m)
            replaced["RMSNorm"] += 1
    if not replaced["RotaryEmbedding"] or replaced["RMSNorm"] != 2 * cfg["num_hidden_layers"] + 1:
        raise Refused(f"transformers' Llama modules are not the ones expected: replaced {replaced}")
    return sum(replaced.values())


def compare(out, device, tol, logits_tol):
    """Phase 2 (torch, transformers): runs the transformers model and compares."""
    import numpy as np
    from safetensors.numpy import load_file, save_file
    torch, transformers = import_torch_transformers()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    check = os.path.join(out, "check.json")
    precision = json.load(open(check))["precision"] if os.path.exists(check) else "f32"
    dtype = torch.float64 if precision == "f64" else torch.float32
    tol = _TOLERANCES[precision][0] if tol is None else tol
    logits_tol = _TOLERANCES[precision][1] if logits_tol is None else logits_tol
    cfg = json.load(open(os.path.join(out, "config.json")))
    for k in ("hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop",
              "embd_pdrop", "attn_pdrop", "attention_dropout"):
        if k in cfg:
            cfg[k] = 0.0
    fields = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type", "torch_dtype")}
    Config, Model = {
        "bert": (transformers.BertConfig, transformers.BertForMaskedLM),
        "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel),
        "llama": (getattr(transformers, "LlamaConfig", None),
                  getattr(transformers, "LlamaForCausalLM", None)),
    }[cfg["model_type"]]
    if Model is None:
        raise Refused(f"transformers {transformers.__version__} has no LlamaForCausalLM")
    llama = cfg["model_type"] == "llama"
    # Eager attention as written in each modeling file; for Llama in float64, SDPA (its
    # eager softmax is float32, see llama_in_float64).
    attention = "sdpa" if llama and dtype == torch.float64 else "eager"
    try:
        config = Config(**fields, attn_implementation=attention)
    except TypeError:
        config = Config(**fields)
    model = Model(config).to(device=device, dtype=dtype).eval()
    if llama and dtype == torch.float64:
        llama_in_float64(model, cfg, torch)

    problems = []
    # Parameters under every name (tied ones twice), in state_dict() order; buffers left out
    # (older transformers saved position_ids and attn.bias as persistent buffers).
    expected = [(k, tuple(s)) for k, s in hf_state_dict(cfg)]
    actual = [(k, tuple(v.shape)) for k, v in model.named_parameters(remove_duplicate=False)]
    if actual != expected:
        problems.append(f"transformers' parameters differ from the names ls2c uses: missing "
                        f"{sorted(set(expected) - set(actual))[:3]}, extra "
                        f"{sorted(set(actual) - set(expected))[:3]}")
    state = {k: torch.from_numpy(v.copy()) for k, v in load_file(os.path.join(out, "hf.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in tied_names(cfg)]
    if missing or unexpected:
        raise Refused(f"hf.safetensors does not load: missing {missing[:5]}, unexpected {unexpected[:5]}")
    if hasattr(model, "tie_weights"):
        model.tie_weights()

    batch = load_file(os.path.join(out, "batch.safetensors"))
    pad = cfg.get("pad_token_id") or 0
    padded, coords = unpack(batch, pad)
    inputs = {k: torch.from_numpy(v).to(device) for k, v in padded.items()}
    if llama:
        inputs["use_cache"] = False
    logits = model(**inputs).logits  # [B, Lmax, V]
    index = torch.tensor(coords, device=device)
    packed = logits[index[:, 0], index[:, 1]]  # [T, V]
    labels = torch.from_numpy(batch["labels"].astype(np.int64)).to(device)
    loss = torch.nn.functional.cross_entropy(packed, labels, ignore_index=-100)
    loss.backward()

    step = load_file(os.path.join(out, "ls2c-step.safetensors"))
    hf_loss, ls2c_loss = float(loss.detach()), float(step["loss"][0])
    loss_err = abs(hf_loss - ls2c_loss) / max(abs(hf_loss), 1e-30)
    if not loss_err <= tol:
        problems.append(f"loss: transformers {hf_loss:.9g}, ls2c {ls2c_loss:.9g} (rel {loss_err:.2e})")
    worst = (0.0, "")
    theirs_grads = {}
    for key in sorted(step):
        if not key.startswith("grad/"):
            continue
        p = model.get_parameter(key[len("grad/"):])
        theirs_grads[key] = (p.grad if p.grad is not None
                             else torch.zeros_like(p)).detach().double().cpu().numpy()
    # A gradient that is zero in exact arithmetic (attention's key bias: a
    # constant added to a softmax row changes nothing) is rounding noise on
    # both sides; as scripts/gpu-step-check.py does, it is measured against
    # 1e-4 of the norm of all gradients rather than its own.
    scale = float(np.sqrt(sum(float(np.sum(g ** 2)) for g in theirs_grads.values())))
    for key, g in theirs_grads.items():
        name = key[len("grad/"):]
        err = float(np.linalg.norm(g - step[key]) / max(np.linalg.norm(g), 1e-4 * scale, 1e-30))
        worst = max(worst, (err, name))
        if not err <= tol:
            problems.append(f"gradient of {name}: rel L2 error {err:.2e} > {tol:g}")
    save_file({"logits": packed.detach().cpu().numpy()}, os.path.join(out, "hf-logits.safetensors"))
    logits_line = ("logits: not compared (no ls2c-logits.safetensors: prepare with an ls2c "
                   "whose step has --logits)")
    theirs = os.path.join(out, "ls2c-logits.safetensors")
    if os.path.exists(theirs):
        err = rel(packed.detach().double().cpu().numpy(), load_file(theirs)["logits"].astype(np.float64))
        logits_line = f"logits: rel L2 error {err:.2e}"
        if not err <= logits_tol:
            problems.append(f"logits: rel L2 error {err:.2e} > {logits_tol:g}")
    print(f"{cfg['architectures'][0]} on {device} in {precision}: loss transformers "
          f"{hf_loss:.7f}, ls2c {ls2c_loss:.7f} "
          f"(rel {loss_err:.1e}); worst gradient rel L2 error {worst[0]:.1e} ({worst[1]}); {logits_line}")
    for p in problems:
        print("DIFFERS:", p)
    return 1 if problems else 0


# ------------------------------------------------------------------------------ self-check

def parse_list(text):
    """`ls2c convert --list` lines: name [d0, d1] rule [tied to X]."""
    out = []
    for line in text.splitlines():
        if " [" not in line:  # "wrote config.json"
            continue
        name, rest = line.split(" [", 1)
        dims = rest.split("]", 1)[0]
        out.append((name, [int(x) for x in dims.split(", ")] if dims else []))
    return out


def self_check(models, ls2c):
    """What runs without torch: the config and the state-dict names against ls2c's, and the
    batch's unpacking. Returns the number of problems."""
    import numpy as np
    bad = 0
    for model in models:
        c = description(model)
        cfg = hf_config(c)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "config.json")
            listed = parse_list(ls2c_run(ls2c, "convert", "--list", model, "--hf-config", path))
            theirs = json.load(open(path))
        problems = []
        if theirs != cfg:
            problems.append(f"config differs: {sorted(k for k in set(cfg) | set(theirs) if cfg.get(k) != theirs.get(k))}")
        if listed != hf_state_dict(cfg):
            problems.append("state-dict names or shapes differ from `ls2c convert --list`")
        batch = make_batch(c, 1)
        padded, coords = unpack(batch, cfg.get("pad_token_id") or 0)
        for k in ("input_ids", "position_ids", "token_type_ids"):
            if k in batch and not np.array_equal(repack(padded[k], coords), batch[k]):
                problems.append(f"unpacking {k} does not round-trip")
        if int(padded["attention_mask"].sum()) != len(batch["input_ids"]):
            problems.append("attention mask does not count the tokens")
        print(f"{model}: {cfg['architectures'][0]}, {len(listed)} tensors, batch "
              f"{padded['attention_mask'].shape}: {'ok' if not problems else '; '.join(problems)}")
        bad += len(problems)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("config")
    p.add_argument("model")
    p = sub.add_parser("self-check")
    p.add_argument("models", nargs="+")
    p.add_argument("--ls2c", default=DEFAULT_LS2C)
    for name in ("prepare", "run"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("hf_checkpoint")
        p.add_argument("--ls2c", default=DEFAULT_LS2C)
        p.add_argument("--out", required=name == "prepare")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--precision", choices=("f32", "f64"), default=None,
                       help="both sides' precision (default: f64 for llama, else f32)")
        if name == "run":
            p.add_argument("--device", default=None)
            p.add_argument("--tol", type=float, default=None)
            p.add_argument("--logits-tol", type=float, default=None)
    p = sub.add_parser("compare")
    p.add_argument("dir")
    p.add_argument("--device", default=None)
    p.add_argument("--tol", type=float, default=None,
                   help="relative error of the loss and each gradient (whole step; default "
                   "1e-4 in f32, 1e-6 in f64)")
    p.add_argument("--logits-tol", type=float, default=None,
                   help="relative L2 error of the logits (default 1e-5 in f32, 1e-6 in f64)")
    a = ap.parse_args()
    try:
        if a.cmd == "config":
            print(json.dumps(hf_config(description(a.model)), indent=2))
            return 0
        if a.cmd == "self-check":
            return 1 if self_check(a.models, a.ls2c) else 0
        if a.cmd == "prepare":
            prepare(a.model, a.hf_checkpoint, a.ls2c, a.out, a.seed, a.precision)
            return 0
        if a.cmd == "run":
            import_torch_transformers()
            out = a.out or tempfile.mkdtemp(prefix="hf-logits-")
            prepare(a.model, a.hf_checkpoint, a.ls2c, out, a.seed, a.precision)
            a.dir = out
        torch, _ = import_torch_transformers()
        device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
        return compare(a.dir, device, a.tol, a.logits_tol)
    except (Refused, OSError, ValueError) as e:
        # ValueError: a description that is not valid JSON, among others.
        print(f"hf_logits.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
