"""Float64 JAX models of ls2c's five architectures: an oracle independent of ls2c's frontend.

Each model is written from its public reference implementation, with ls2c's documented
conventions (docs/model-description.md, docs/numerics.md): parameter names and shapes of
the reference, sequences packed without padding (`cu_seqlens`), attention only within a
sequence, 0-based positions, PyTorch's cross-entropy. Every number that ls2c keeps as a
32-bit float (dropout rates, label_smoothing, layer_norm_eps, rms_norm_eps, rope_theta, every
optimizer number) is rounded to f32 here as well, then used in float64.

    bert_loss                 Hugging Face BertForMaskedLM
    gpt_loss                  Hugging Face GPT2LMHeadModel
    transformer_loss          fairseq TransformerModel (sinusoidal positions, embeddings x sqrt(H))
    vit_loss                  timm VisionTransformer (class-token pooling)
    llama_loss                Hugging Face LlamaForCausalLM (RMSNorm, rotary positions, gated FFN)
    train                     K steps of Adam/AdamW with clipping and the lr schedule
"""
import math
import re

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

# Defaults of docs/model-description.md, per architecture.
_DEFAULTS = {
    "encoder": dict(norm="post", activation="gelu", layer_norm_eps=1e-12, tie_embeddings=True, padding_idx=0),
    "decoder": dict(norm="pre", activation="gelu_tanh", layer_norm_eps=1e-5, tie_embeddings=True, padding_idx=-1),
    "encoder_decoder": dict(norm="post", activation="relu", layer_norm_eps=1e-5, tie_embeddings=False,
                            padding_idx=1),
    "vit": dict(norm="pre", activation="gelu", layer_norm_eps=1e-6),
    "llama": dict(norm="pre", activation="silu", rms_norm_eps=1e-6, rope_theta=10000.0, tie_embeddings=False,
                  padding_idx=-1),
}
_OPT_DEFAULTS = dict(type="adamw", lr=1e-4, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.01, clip_norm=0.0)
_SCHED_DEFAULTS = dict(type="constant", warmup_steps=0, total_steps=0, min_lr_ratio=0.0)


def f32(x):
    """The value ls2c keeps for a number field: rounded to nearest float32."""
    return float(np.float32(x))


def config(desc):
    """The description with the documented defaults filled in and f32 numbers rounded."""
    c = dict(_DEFAULTS[desc["architecture"]], label_smoothing=0.0, type_vocab_size=2, channels=3,
             share_embeddings=False)
    c.update(desc)
    c.setdefault("kv_heads", c["heads"])
    c.setdefault("src_vocab", c.get("vocab"))
    # llama has rms_norm_eps and rope_theta, the others layer_norm_eps.
    for k in ("layer_norm_eps", "rms_norm_eps", "rope_theta"):
        if k in c:
            c[k] = f32(c[k])
    c["label_smoothing"] = f32(c["label_smoothing"])
    opt = dict(_OPT_DEFAULTS, **desc.get("optimizer", {}))
    opt["schedule"] = dict(_SCHED_DEFAULTS, **opt.get("schedule", {}))
    for k in ("lr", "eps", "weight_decay", "clip_norm"):
        opt[k] = f32(opt[k])
    opt["betas"] = [f32(b) for b in opt["betas"]]
    opt["schedule"]["min_lr_ratio"] = f32(opt["schedule"]["min_lr_ratio"])
    c["optimizer"] = opt
    return c


# ---------------------------------------------------------------------------- parameters

def parameter_shapes(c):
    """{name: shape} of the trainable parameters, as tabulated in docs/model-description.md."""
    H, F, heads = c["hidden"], c["ffn"], c["heads"]
    KV = c["kv_heads"] * H // heads
    arch, pre = c["architecture"], c["norm"] == "pre"
    s = {}

    def ln(name):
        s[name + ".weight"] = (H,)
        s[name + ".bias"] = (H,)

    def lin(name, out, inp):  # torch.nn.Linear: [out, in]
        s[name + ".weight"] = (out, inp)
        s[name + ".bias"] = (out,)

    if arch == "encoder":
        V, L = c["vocab"], c["max_seq_len"]
        s["bert.embeddings.word_embeddings.weight"] = (V, H)
        s["bert.embeddings.position_embeddings.weight"] = (L, H)
        s["bert.embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], H)
        ln("bert.embeddings.LayerNorm")
        for i in range(c["encoder_layers"]):
            p = f"bert.encoder.layer.{i}."
            lin(p + "attention.self.query", H, H)
            lin(p + "attention.self.key", KV, H)
            lin(p + "attention.self.value", KV, H)
            lin(p + "attention.output.dense", H, H)
            ln(p + "attention.output.LayerNorm")
            lin(p + "intermediate.dense", F, H)
            lin(p + "output.dense", H, F)
            ln(p + "output.LayerNorm")
        if pre:
            ln("bert.encoder.final_layer_norm")
        s["cls.predictions.bias"] = (V,)
        lin("cls.predictions.transform.dense", H, H)
        ln("cls.predictions.transform.LayerNorm")
        if not c["tie_embeddings"]:
            s["cls.predictions.decoder.weight"] = (V, H)
    elif arch == "decoder":
        V, L = c["vocab"], c["max_seq_len"]
        s["transformer.wte.weight"] = (V, H)
        s["transformer.wpe.weight"] = (L, H)
        for i in range(c["decoder_layers"]):
            p = f"transformer.h.{i}."
            ln(p + "ln_1")
            s[p + "attn.c_attn.weight"], s[p + "attn.c_attn.bias"] = (H, H + 2 * KV), (H + 2 * KV,)  # Conv1D: [in, out]
            s[p + "attn.c_proj.weight"], s[p + "attn.c_proj.bias"] = (H, H), (H,)
            ln(p + "ln_2")
            s[p + "mlp.c_fc.weight"], s[p + "mlp.c_fc.bias"] = (H, F), (F,)
            s[p + "mlp.c_proj.weight"], s[p + "mlp.c_proj.bias"] = (F, H), (H,)
        if pre:
            ln("transformer.ln_f")
        if not c["tie_embeddings"]:
            s["lm_head.weight"] = (V, H)
    elif arch == "encoder_decoder":
        def att(p):
            lin(p + "q_proj", H, H)
            lin(p + "k_proj", KV, H)
            lin(p + "v_proj", KV, H)
            lin(p + "out_proj", H, H)

        s["encoder.embed_tokens.weight"] = (c["src_vocab"], H)
        for side, n in (("encoder", c["encoder_layers"]), ("decoder", c["decoder_layers"])):
            if side == "decoder" and not c["share_embeddings"]:
                s["decoder.embed_tokens.weight"] = (c["vocab"], H)
            for i in range(n):
                p = f"{side}.layers.{i}."
                att(p + "self_attn.")
                ln(p + "self_attn_layer_norm")
                if side == "decoder":
                    att(p + "encoder_attn.")
                    ln(p + "encoder_attn_layer_norm")
                lin(p + "fc1", F, H)
                lin(p + "fc2", H, F)
                ln(p + "final_layer_norm")
            if pre:
                ln(side + ".layer_norm")
        if not c["tie_embeddings"]:
            s["decoder.output_projection.weight"] = (c["vocab"], H)
    elif arch == "vit":
        p_, C = c["patch_size"], c["channels"]
        P = (c["image_size"] // p_) ** 2
        s["cls_token"] = (1, 1, H)
        s["pos_embed"] = (1, P + 1, H)
        s["patch_embed.proj.weight"], s["patch_embed.proj.bias"] = (H, C, p_, p_), (H,)
        for i in range(c["encoder_layers"]):
            p = f"blocks.{i}."
            ln(p + "norm1")
            lin(p + "attn.qkv", H + 2 * KV, H)
            lin(p + "attn.proj", H, H)
            ln(p + "norm2")
            lin(p + "mlp.fc1", F, H)
            lin(p + "mlp.fc2", H, F)
        if pre:
            ln("norm")
        lin("head", c["num_classes"], H)
    elif arch == "llama":  # nn.Linear without biases, [out, in]; RMSNorm weights only
        V = c["vocab"]
        s["model.embed_tokens.weight"] = (V, H)
        for i in range(c["decoder_layers"]):
            p = f"model.layers.{i}."
            s[p + "self_attn.q_proj.weight"] = (H, H)
            s[p + "self_attn.k_proj.weight"] = (KV, H)
            s[p + "self_attn.v_proj.weight"] = (KV, H)
            s[p + "self_attn.o_proj.weight"] = (H, H)
            s[p + "mlp.gate_proj.weight"] = (F, H)
            s[p + "mlp.up_proj.weight"] = (F, H)
            s[p + "mlp.down_proj.weight"] = (H, F)
            s[p + "input_layernorm.weight"] = (H,)
            s[p + "post_attention_layernorm.weight"] = (H,)
        s["model.norm.weight"] = (H,)
        if not c["tie_embeddings"]:
            s["lm_head.weight"] = (V, H)
    return s


_NORM = re.compile(r"(^|\.)(LayerNorm|\w*layer_?norm|ln_\w+|norm\d?)\.(weight|bias)$")


def is_norm(name):
    return bool(_NORM.search(name))


def weight_decayed(name):
    """Biases and norm parameters are never decayed, nor ViT's cls_token and pos_embed
    (timm's no_weight_decay()); every other trainable parameter is (model-description.md)."""
    return not (name.endswith(".bias") or is_norm(name) or name in ("cls_token", "pos_embed"))


# ---------------------------------------------------------------------------- building blocks

def layer_norm(x, p, name, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)  # biased, as torch.nn.LayerNorm
    return (x - mu) / jnp.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def rms_norm(x, p, name, eps):
    """Llama's RMSNorm (T5's LayerNorm): no mean subtracted, no bias."""
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + eps) * p[name + ".weight"]


def linear(x, p, name):  # torch.nn.Linear, weight [out, in]
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def conv1d(x, p, name):  # GPT-2's Conv1D, weight [in, out]
    return x @ p[name + ".weight"] + p[name + ".bias"]


def activation(kind, x):
    if kind == "relu":
        return jnp.where(x > 0, x, 0.0)  # gradient 0 at 0, as torch.relu
    if kind == "gelu":
        return 0.5 * x * (1.0 + jax.scipy.special.erf(x / math.sqrt(2.0)))
    if kind == "gelu_tanh":
        return 0.5 * x * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if kind == "silu":
        return x * jax.nn.sigmoid(x)
    raise ValueError(kind)


def segments(cu):
    """Per packed token: (sequence index, position within the sequence)."""
    cu = np.asarray(cu)
    t = np.arange(cu[-1])
    seq = np.searchsorted(cu, t, side="right") - 1
    return seq, t - cu[seq]


def attention_mask(cu_q, cu_k, causal):
    """[Tq, Tk] visibility: same sequence i (query sequence i attends to key sequence i);
    causal masks bottom-right aligned within the sequence (numerics.md)."""
    sq, iq = segments(cu_q)
    sk, ik = segments(cu_k)
    m = sq[:, None] == sk[None, :]
    if causal:
        lq = np.diff(cu_q)[sq]
        lk = np.diff(cu_k)[sq]
        m &= ik[None, :] <= (iq + lk - lq)[:, None]
    return jnp.asarray(m)


def attention(q, k, v, heads, kv_heads, mask):
    """Multi-head scaled dot-product attention on packed rows; q [Tq, heads*D], k, v [Tk, kv_heads*D].
    Query head h uses key/value head h // (heads / kv_heads)."""
    D = q.shape[-1] // heads
    q = q.reshape(q.shape[0], heads, D)
    k = jnp.repeat(k.reshape(k.shape[0], kv_heads, D), heads // kv_heads, axis=1)
    v = jnp.repeat(v.reshape(v.shape[0], kv_heads, D), heads // kv_heads, axis=1)
    s = jnp.einsum("qhd,khd->hqk", q, k) / math.sqrt(D)
    s = jnp.where(mask[None], s, -jnp.inf)
    a = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("hqk,khd->qhd", a, v).reshape(q.shape[0], heads * D)


def rotary(x, positions, theta):
    """Rotary position embedding (Su et al. 2021) in Hugging Face Llama's rotate-half layout:
    x [T, n, D]; pair (i, i + D/2) of each head is rotated by position * theta^(-2i/D)."""
    D = x.shape[-1]
    inv_freq = 1.0 / theta ** (np.arange(0, D, 2) / D)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([ang, ang], axis=-1)[:, None, :]  # [T, 1, D]
    cos, sin = jnp.asarray(np.cos(emb)), jnp.asarray(np.sin(emb))
    rotated = jnp.concatenate([-x[..., D // 2:], x[..., :D // 2]], axis=-1)
    return x * cos + rotated * sin


def residual(x, branch, norm, pre):
    """Post-LN: norm(x + branch(x)); pre-LN: x + branch(norm(x))."""
    return x + branch(norm(x)) if pre else norm(x + branch(x))


def cross_entropy(logits, targets, ignore_index, eps):
    """torch.nn.functional.cross_entropy(logits, targets, ignore_index, label_smoothing=eps),
    reduction mean over the non-ignored rows (0 when there are none)."""
    targets = jnp.asarray(targets)
    valid = targets != ignore_index
    lse = jax.scipy.special.logsumexp(logits, axis=-1)
    x_t = jnp.take_along_axis(logits, jnp.where(valid, targets, 0)[:, None], axis=-1)[:, 0]
    per_row = (1.0 - eps) * (lse - x_t) + eps * (lse - logits.mean(-1))
    return jnp.where(valid, per_row, 0.0).sum() / jnp.maximum(valid.sum(), 1)


# ---------------------------------------------------------------------------- models

def bert_loss(c, p, b):
    """Hugging Face BertForMaskedLM (post-LN; ls2c's optional pre-LN variant adds
    bert.encoder.final_layer_norm). No pooler; MLM head transform -> tied decoder + bias."""
    eps, pre, act = c["layer_norm_eps"], c["norm"] == "pre", c["activation"]
    x = (p["bert.embeddings.word_embeddings.weight"][b["input_ids"]]
         + p["bert.embeddings.position_embeddings.weight"][b["position_ids"]]
         + p["bert.embeddings.token_type_embeddings.weight"][b["token_type_ids"]])
    x = layer_norm(x, p, "bert.embeddings.LayerNorm", eps)
    mask = attention_mask(b["cu_seqlens"], b["cu_seqlens"], causal=False)
    for i in range(c["encoder_layers"]):
        n = f"bert.encoder.layer.{i}."

        def attn(h):
            q, k, v = (linear(h, p, n + "attention.self." + w) for w in ("query", "key", "value"))
            return linear(attention(q, k, v, c["heads"], c["kv_heads"], mask), p, n + "attention.output.dense")

        def ffn(h):
            return linear(activation(act, linear(h, p, n + "intermediate.dense")), p, n + "output.dense")

        x = residual(x, attn, lambda h: layer_norm(h, p, n + "attention.output.LayerNorm", eps), pre)
        x = residual(x, ffn, lambda h: layer_norm(h, p, n + "output.LayerNorm", eps), pre)
    if pre:
        x = layer_norm(x, p, "bert.encoder.final_layer_norm", eps)
    h = activation(act, linear(x, p, "cls.predictions.transform.dense"))
    h = layer_norm(h, p, "cls.predictions.transform.LayerNorm", eps)
    w = p["bert.embeddings.word_embeddings.weight" if c["tie_embeddings"] else "cls.predictions.decoder.weight"]
    logits = h @ w.T + p["cls.predictions.bias"]
    return cross_entropy(logits, b["labels"], -100, c["label_smoothing"])


def gpt_loss(c, p, b):
    """Hugging Face GPT2LMHeadModel (pre-LN, Conv1D [in, out] weights, fused q|k|v, causal;
    labels are the already-shifted next tokens)."""
    eps, pre, H = c["layer_norm_eps"], c["norm"] == "pre", c["hidden"]
    KV = c["kv_heads"] * H // c["heads"]
    x = p["transformer.wte.weight"][b["input_ids"]] + p["transformer.wpe.weight"][b["position_ids"]]
    mask = attention_mask(b["cu_seqlens"], b["cu_seqlens"], causal=True)
    for i in range(c["decoder_layers"]):
        n = f"transformer.h.{i}."

        def attn(h):
            qkv = conv1d(h, p, n + "attn.c_attn")
            q, k, v = qkv[:, :H], qkv[:, H:H + KV], qkv[:, H + KV:]
            return conv1d(attention(q, k, v, c["heads"], c["kv_heads"], mask), p, n + "attn.c_proj")

        def mlp(h):
            return conv1d(activation(c["activation"], conv1d(h, p, n + "mlp.c_fc")), p, n + "mlp.c_proj")

        x = residual(x, attn, lambda h: layer_norm(h, p, n + "ln_1", eps), pre)
        x = residual(x, mlp, lambda h: layer_norm(h, p, n + "ln_2", eps), pre)
    if pre:
        x = layer_norm(x, p, "transformer.ln_f", eps)
    logits = x @ p["transformer.wte.weight" if c["tie_embeddings"] else "lm_head.weight"].T
    return cross_entropy(logits, b["labels"], -100, c["label_smoothing"])


def sinusoidal_table(rows, dim):
    """fairseq SinusoidalPositionalEmbedding.get_embedding: sin in the first dim/2 columns,
    cos in the rest, frequency 10000^(-i / (dim/2 - 1)); odd dim: last column 0. Row r is
    position r (ls2c indexes from 0; it does not use fairseq's padding_idx + 1 offset)."""
    half = dim // 2
    freq = np.exp(np.arange(half) * -(math.log(10000.0) / (half - 1)))
    ang = np.arange(rows)[:, None] * freq[None, :]
    t = np.concatenate([np.sin(ang), np.cos(ang)], axis=1)
    if dim % 2:
        t = np.concatenate([t, np.zeros((rows, 1))], axis=1)
    return jnp.asarray(t)


def transformer_loss(c, p, b):
    """fairseq TransformerModel (transformer_vaswani_wmt_en_de_big family): token embeddings
    scaled by sqrt(H) plus sinusoidal positions, post-LN layers (pre-LN: normalize_before, with
    encoder/decoder.layer_norm), causal decoder self-attention, encoder-decoder attention,
    ReLU FFN, label-smoothed cross-entropy ignoring padding_idx (torch's definition)."""
    eps, pre, H = c["layer_norm_eps"], c["norm"] == "pre", c["hidden"]
    table = sinusoidal_table(c["max_seq_len"], H)
    src_emb = p["encoder.embed_tokens.weight"]
    tgt_emb = src_emb if c["share_embeddings"] else p["decoder.embed_tokens.weight"]
    scale = math.sqrt(H)

    def att(n, xq, xkv, mask):
        q, k, v = linear(xq, p, n + "q_proj"), linear(xkv, p, n + "k_proj"), linear(xkv, p, n + "v_proj")
        return linear(attention(q, k, v, c["heads"], c["kv_heads"], mask), p, n + "out_proj")

    def ffn(n):
        return lambda h: linear(activation(c["activation"], linear(h, p, n + "fc1")), p, n + "fc2")

    def ln(name):
        return lambda h: layer_norm(h, p, name, eps)

    enc_mask = attention_mask(b["src_cu_seqlens"], b["src_cu_seqlens"], causal=False)
    x = scale * src_emb[b["src_ids"]] + table[b["src_position_ids"]]
    for i in range(c["encoder_layers"]):
        n = f"encoder.layers.{i}."
        x = residual(x, lambda h: att(n + "self_attn.", h, h, enc_mask), ln(n + "self_attn_layer_norm"), pre)
        x = residual(x, ffn(n), ln(n + "final_layer_norm"), pre)
    if pre:
        x = layer_norm(x, p, "encoder.layer_norm", eps)
    enc = x

    self_mask = attention_mask(b["tgt_cu_seqlens"], b["tgt_cu_seqlens"], causal=True)
    cross_mask = attention_mask(b["tgt_cu_seqlens"], b["src_cu_seqlens"], causal=False)
    y = scale * tgt_emb[b["tgt_ids"]] + table[b["tgt_position_ids"]]
    for i in range(c["decoder_layers"]):
        n = f"decoder.layers.{i}."
        y = residual(y, lambda h: att(n + "self_attn.", h, h, self_mask), ln(n + "self_attn_layer_norm"), pre)
        y = residual(y, lambda h: att(n + "encoder_attn.", h, enc, cross_mask), ln(n + "encoder_attn_layer_norm"),
                     pre)
        y = residual(y, ffn(n), ln(n + "final_layer_norm"), pre)
    if pre:
        y = layer_norm(y, p, "decoder.layer_norm", eps)
    logits = y @ (tgt_emb if c["tie_embeddings"] else p["decoder.output_projection.weight"]).T
    return cross_entropy(logits, b["labels"], c["padding_idx"], c["label_smoothing"])


def vit_loss(c, p, b):
    """timm VisionTransformer (global_pool='token'): conv patch embedding (row-major patch
    grid), class token first, learned pos_embed, pre-LN blocks with fused qkv, final norm,
    head on the class token; cross-entropy over the labels [B]."""
    eps, pre, H, ps = c["layer_norm_eps"], c["norm"] == "pre", c["hidden"], c["patch_size"]
    KV = c["kv_heads"] * H // c["heads"]
    pix = jnp.asarray(b["pixels"], dtype=jnp.float64)
    B, C, S, _ = pix.shape
    g = S // ps
    patches = pix.reshape(B, C, g, ps, g, ps).transpose(0, 2, 4, 1, 3, 5).reshape(B, g * g, C * ps * ps)
    x = patches @ p["patch_embed.proj.weight"].reshape(H, -1).T + p["patch_embed.proj.bias"]
    x = jnp.concatenate([jnp.broadcast_to(p["cls_token"], (B, 1, H)), x], axis=1) + p["pos_embed"]
    N = g * g + 1
    x = x.reshape(B * N, H)
    cu = np.asarray(b["cu_seqlens"])
    assert (cu == np.arange(B + 1) * N).all()
    mask = attention_mask(cu, cu, causal=False)
    for i in range(c["encoder_layers"]):
        n = f"blocks.{i}."

        def attn(h):
            qkv = linear(h, p, n + "attn.qkv")
            q, k, v = qkv[:, :H], qkv[:, H:H + KV], qkv[:, H + KV:]
            return linear(attention(q, k, v, c["heads"], c["kv_heads"], mask), p, n + "attn.proj")

        def mlp(h):
            return linear(activation(c["activation"], linear(h, p, n + "mlp.fc1")), p, n + "mlp.fc2")

        x = residual(x, attn, lambda h: layer_norm(h, p, n + "norm1", eps), pre)
        x = residual(x, mlp, lambda h: layer_norm(h, p, n + "norm2", eps), pre)
    if pre:
        x = layer_norm(x, p, "norm", eps)
    logits = linear(x[cu[:-1]], p, "head")
    return cross_entropy(logits, b["labels"], -100, c["label_smoothing"])


def llama_loss(c, p, b):
    """Hugging Face LlamaForCausalLM: token embeddings (no position table), pre-RMSNorm layers of
    causal grouped-query attention with rotary q and k (no biases) and the gated feed-forward
    down(act(gate(h)) * up(h)), a final RMSNorm, the LM head (or the tied embeddings); labels
    are the already-shifted next tokens."""
    eps, H, heads, kv_heads = c["rms_norm_eps"], c["hidden"], c["heads"], c["kv_heads"]
    D = H // heads
    T = len(b["input_ids"])
    x = p["model.embed_tokens.weight"][b["input_ids"]]
    mask = attention_mask(b["cu_seqlens"], b["cu_seqlens"], causal=True)

    def rope(y, n):
        return rotary(y.reshape(T, n, D), b["position_ids"], c["rope_theta"]).reshape(T, n * D)

    for i in range(c["decoder_layers"]):
        n = f"model.layers.{i}."
        h = rms_norm(x, p, n + "input_layernorm", eps)
        q = rope(h @ p[n + "self_attn.q_proj.weight"].T, heads)
        k = rope(h @ p[n + "self_attn.k_proj.weight"].T, kv_heads)
        v = h @ p[n + "self_attn.v_proj.weight"].T
        x = x + attention(q, k, v, heads, kv_heads, mask) @ p[n + "self_attn.o_proj.weight"].T
        h = rms_norm(x, p, n + "post_attention_layernorm", eps)
        gate, up = h @ p[n + "mlp.gate_proj.weight"].T, h @ p[n + "mlp.up_proj.weight"].T
        x = x + (activation(c["activation"], gate) * up) @ p[n + "mlp.down_proj.weight"].T
    x = rms_norm(x, p, "model.norm", eps)
    logits = x @ p["model.embed_tokens.weight" if c["tie_embeddings"] else "lm_head.weight"].T
    return cross_entropy(logits, b["labels"], -100, c["label_smoothing"])


LOSSES = {"encoder": bert_loss, "decoder": gpt_loss, "encoder_decoder": transformer_loss, "vit": vit_loss,
          "llama": llama_loss}


def loss_fn(c, batch):
    """jit-compiled params -> loss for the description `c` (see config) and a fixed batch."""
    f = LOSSES[c["architecture"]]
    return jax.jit(lambda params: f(c, params, batch))


# ---------------------------------------------------------------------------- optimizer

def learning_rate(opt, s):
    """Learning rate of optimizer step s (from 0), model-description.md's optimizer.schedule."""
    sc, lr = opt["schedule"], opt["lr"]
    w, T, r = sc["warmup_steps"], sc["total_steps"], sc["min_lr_ratio"]
    if s < w:
        return lr * s / w
    if sc["type"] == "constant":
        return lr
    if sc["type"] in ("linear", "cosine") and T <= w:
        return lr * r  # a decay of no length: at its end after warmup
    if sc["type"] == "linear":
        return lr * (r + (1 - r) * max(0, T - s) / (T - w))
    if sc["type"] == "cosine":
        return lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * min(1.0, (s - w) / (T - w)))))
    if sc["type"] == "inverse_sqrt":
        return lr * math.sqrt(w / s)
    raise ValueError(sc["type"])


def train(c, params, batch, steps):
    """`steps` optimizer steps on one batch, as torch would take them: clip_grad_norm_
    (coefficient min(1, clip / (norm + 1e-6)) over all gradients), then torch.optim.AdamW
    (decoupled: p -= lr*wd*p) or torch.optim.Adam (L2: g += wd*p) with bias correction;
    weight decay only where weight_decayed(name). Returns (losses [steps], first step's raw
    gradients, final parameters, {"lr": [steps], "grad_norm": [steps]} of each step)."""
    opt = c["optimizer"]
    b1, b2 = opt["betas"]
    model = LOSSES[c["architecture"]]
    f = jax.jit(jax.value_and_grad(lambda prm: model(c, prm, batch)))
    p = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in params.items()}
    m = {k: jnp.zeros_like(v) for k, v in p.items()}
    v2 = {k: jnp.zeros_like(v) for k, v in p.items()}
    losses, first, lrs, norms = [], None, [], []
    for t in range(1, steps + 1):
        loss, g = f(p)
        losses.append(float(loss))
        if first is None:
            first = g
        norm = math.sqrt(sum(float(jnp.sum(x * x)) for x in g.values()))
        coef = min(1.0, opt["clip_norm"] / (norm + 1e-6)) if opt["clip_norm"] > 0 else 1.0
        lr = learning_rate(opt, t - 1)
        lrs.append(lr)
        norms.append(norm)
        for k in p:
            gk = g[k] * coef
            wd = opt["weight_decay"] if weight_decayed(k) else 0.0
            if opt["type"] == "adamw":
                p[k] = p[k] - lr * wd * p[k]
            else:
                gk = gk + wd * p[k]
            m[k] = b1 * m[k] + (1 - b1) * gk
            v2[k] = b2 * v2[k] + (1 - b2) * gk * gk
            p[k] = p[k] - lr * (m[k] / (1 - b1 ** t)) / (jnp.sqrt(v2[k] / (1 - b2 ** t)) + opt["eps"])
    return (np.array(losses), {k: np.asarray(x) for k, x in first.items()}, {k: np.asarray(x) for k, x in p.items()},
            {"lr": np.array(lrs), "grad_norm": np.array(norms)})
