"""Independent PyTorch models of ls2c's four architectures, built from a model description.

The same parameters, by the same reference names and shapes, as ls2c (docs/model-description.md
"Parameters by architecture"), so a safetensors file of parameters (fp32, as `ls2c step` and
`ls2c-gpu-step --params` read them, or an `ls2c train` checkpoint) loads into both. Numerics
follow ls2c's frontend (lib/Frontend) and docs/numerics.md, as the float64 JAX oracle
(test/oracle/jax_models.py) that matches `ls2c step` to 1e-8 does:

    encoder          Hugging Face BertForMaskedLM: word + position + token-type embeddings,
                     LayerNorm, dropout; post-LN layers (pre-LN adds bert.encoder.final_layer_norm);
                     MLM head dense -> activation -> LayerNorm -> tied decoder + cls.predictions.bias
                     (with max_predictions, on the labelled rows only, as ls2c gathers them)
    decoder          Hugging Face GPT2LMHeadModel: Conv1D weights [in, out], fused q|k|v, causal
    encoder_decoder  fairseq TransformerModel: embeddings x sqrt(H) + sinusoidal positions
                     (fairseq's table, row r = position r, computed in float64), post-LN
    vit              timm VisionTransformer: conv patch embedding, class token first, learned
                     pos_embed, final norm, head on the class token

Shared conventions: residual branches are post-LN `LN(x + drop(f(x)))` or pre-LN
`x + drop(f(LN(x)))`; attention scale 1/sqrt(head_dim); grouped-query heads share kv head
h // (heads / kv_heads); `gelu` is the erf form, `gelu_tanh` GPT-2's; layer norm's variance is the
biased one with eps = float32(layer_norm_eps); cross-entropy is PyTorch's (label smoothing eps),
mean over rows whose label is not the ignore index (-100; encoder_decoder: padding_idx), 0 when
there are none. Dropout sites are ls2c's (embeddings, each residual branch, attention
probabilities, after the FFN activation), but PyTorch's random masks, not ls2c's Philox ones.

Tokens are packed as in ls2c: activations are [T, H] rows of sequences laid back to back (no
padding). A batch is a dict of tensors named as ls2c's inputs plus Python tuples of sequence
lengths ("lengths"; encoder_decoder: "src_lengths", "tgt_lengths"). When every sequence has the
same length, attention runs on [B, heads, S, D] through scaled_dot_product_attention (what the
benchmarks use); otherwise on one [T, T] block-diagonal mask.

With the description's `activation_checkpointing` each layer of every architecture runs under
torch.utils.checkpoint (non-reentrant, RNG state preserved): its input is kept and the layer,
attention included, runs again in the backward (ls2c keeps the attention's output and log-sum-exp
instead and does not run attention again).
"""
import math
import re

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

import descriptions

config = descriptions.config  # the description with its defaults (torch-free: descriptions.py)

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


# ---------------------------------------------------------------------------- parameters

def parameter_specs(c):
    """{name: (shape, init, std)} of the trainable parameters in ls2c's order and with its
    initialization (lib/Model/ParameterLayout.cpp): init is "normal" (std), "xavier", "ones" or
    "zeros". Shapes in elements, row-major."""
    H, F_, heads = c["hidden"], c["ffn"], c["heads"]
    KV = c["kv_heads"] * H // heads
    arch, pre = c["architecture"], c["norm"] == "pre"
    s = {}

    def add(name, shape, init="normal", std=0.02):
        s[name] = (tuple(shape), init, std)

    def ln(name):
        add(name + ".weight", (H,), "ones", 0.0)
        add(name + ".bias", (H,), "zeros", 0.0)

    def lin(name, out, inp, init="normal", std=0.02):  # torch.nn.Linear: [out, in]
        add(name + ".weight", (out, inp), init, std)
        add(name + ".bias", (out,), "zeros", 0.0)

    def conv1d(name, inp, out, std):  # GPT-2 Conv1D: [in, out]
        add(name + ".weight", (inp, out), "normal", std)
        add(name + ".bias", (out,), "zeros", 0.0)

    if arch == "encoder":
        V, L = c["vocab"], c["max_seq_len"]
        add("bert.embeddings.word_embeddings.weight", (V, H))
        add("bert.embeddings.position_embeddings.weight", (L, H))
        add("bert.embeddings.token_type_embeddings.weight", (c["type_vocab_size"], H))
        ln("bert.embeddings.LayerNorm")
        for i in range(c["encoder_layers"]):
            p = f"bert.encoder.layer.{i}."
            lin(p + "attention.self.query", H, H)
            lin(p + "attention.self.key", KV, H)
            lin(p + "attention.self.value", KV, H)
            lin(p + "attention.output.dense", H, H)
            ln(p + "attention.output.LayerNorm")
            lin(p + "intermediate.dense", F_, H)
            lin(p + "output.dense", H, F_)
            ln(p + "output.LayerNorm")
        if pre:
            ln("bert.encoder.final_layer_norm")
        add("cls.predictions.bias", (V,), "zeros", 0.0)
        lin("cls.predictions.transform.dense", H, H)
        ln("cls.predictions.transform.LayerNorm")
        if not c["tie_embeddings"]:
            add("cls.predictions.decoder.weight", (V, H))
    elif arch == "decoder":
        V, L = c["vocab"], c["max_seq_len"]
        proj_std = 0.02 / math.sqrt(2.0 * c["decoder_layers"])
        add("transformer.wte.weight", (V, H))
        add("transformer.wpe.weight", (L, H))
        for i in range(c["decoder_layers"]):
            p = f"transformer.h.{i}."
            ln(p + "ln_1")
            conv1d(p + "attn.c_attn", H, H + 2 * KV, 0.02)
            conv1d(p + "attn.c_proj", H, H, proj_std)
            ln(p + "ln_2")
            conv1d(p + "mlp.c_fc", H, F_, 0.02)
            conv1d(p + "mlp.c_proj", F_, H, proj_std)
        if pre:
            ln("transformer.ln_f")
        if not c["tie_embeddings"]:
            add("lm_head.weight", (V, H))
    elif arch == "encoder_decoder":
        emb_std = 1.0 / math.sqrt(H)

        def att(p):
            for w, out in (("q_proj", H), ("k_proj", KV), ("v_proj", KV), ("out_proj", H)):
                lin(p + w, out, H, "xavier", 0.0)

        add("encoder.embed_tokens.weight", (c["src_vocab"], H), "normal", emb_std)
        for side, n in (("encoder", c["encoder_layers"]), ("decoder", c["decoder_layers"])):
            if side == "decoder" and not c["share_embeddings"]:
                add("decoder.embed_tokens.weight", (c["vocab"], H), "normal", emb_std)
            for i in range(n):
                p = f"{side}.layers.{i}."
                att(p + "self_attn.")
                ln(p + "self_attn_layer_norm")
                if side == "decoder":
                    att(p + "encoder_attn.")
                    ln(p + "encoder_attn_layer_norm")
                lin(p + "fc1", F_, H, "xavier", 0.0)
                lin(p + "fc2", H, F_, "xavier", 0.0)
                ln(p + "final_layer_norm")
            if pre:
                ln(side + ".layer_norm")
        if not c["tie_embeddings"]:
            add("decoder.output_projection.weight", (c["vocab"], H), "normal", emb_std)
    elif arch == "vit":
        ps, C = c["patch_size"], c["channels"]
        P = (c["image_size"] // ps) ** 2
        add("cls_token", (1, 1, H))
        add("pos_embed", (1, P + 1, H))
        add("patch_embed.proj.weight", (H, C, ps, ps))
        add("patch_embed.proj.bias", (H,), "zeros", 0.0)
        for i in range(c["encoder_layers"]):
            p = f"blocks.{i}."
            ln(p + "norm1")
            lin(p + "attn.qkv", H + 2 * KV, H)
            lin(p + "attn.proj", H, H)
            ln(p + "norm2")
            lin(p + "mlp.fc1", F_, H)
            lin(p + "mlp.fc2", H, F_)
        if pre:
            ln("norm")
        lin("head", c["num_classes"], H)
    else:
        raise ValueError(f"unknown architecture {arch!r}")
    return s


_NORM = re.compile(r"(^|\.)(LayerNorm|\w*layer_norm|ln_\w+|norm\d?)\.(weight|bias)$")


def weight_decayed(name):
    """ls2c's rule: biases, norm parameters and ViT's cls_token/pos_embed are not decayed."""
    return not (name.endswith(".bias") or _NORM.search(name) or name in ("cls_token", "pos_embed"))


def init_parameters(c, seed):
    """{name: float32 ndarray} drawn from ls2c's initial distributions (Normal(0, std), Xavier
    uniform over [out, in], ones, zeros) with numpy's generator: the same distributions as
    `ls2c-gpu-step --init-seed`, not the same bits. Write it with safetensors.numpy.save_file
    and pass the file to both ls2c (--params) and load_parameters()."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, init, std) in parameter_specs(c).items():
        if init == "normal":
            x = rng.normal(0.0, std, size=shape)
        elif init == "xavier":
            fan_out = shape[0]
            fan_in = int(np.prod(shape)) // fan_out
            a = math.sqrt(6.0 / (fan_in + fan_out))
            x = rng.uniform(-a, a, size=shape)
        elif init == "ones":
            x = np.ones(shape)
        else:
            x = np.zeros(shape)
        out[name] = x.astype(np.float32)
    return out


def sinusoidal_table(rows, dim):
    """fairseq's sinusoidal positions [rows, dim] as ls2c computes them (sinusoidalTable in
    lib/Training/Workspace.cpp): float64, sin in the first dim/2 columns, cos in the rest,
    frequency 10000^(-i / (dim/2 - 1)), an odd dim's last column 0; returned as float32."""
    half = dim // 2
    step = math.log(10000.0) / (half - 1) if half > 1 else 0.0
    ang = np.arange(rows, dtype=np.float64)[:, None] * np.exp(-step * np.arange(half))[None, :]
    t = np.zeros((rows, dim))
    t[:, :half], t[:, half:2 * half] = np.sin(ang), np.cos(ang)
    return torch.from_numpy(t.astype(np.float32))


# ---------------------------------------------------------------------------- attention

def _block_mask(q_lengths, k_lengths, causal, device):
    """[Tq, Tk] bool, True where query row i sees key j: same sequence, and for causal key index
    <= query index + (Lk - Lq) within the sequence (bottom-right, as FlashAttention-2)."""
    def seg(lengths):
        lengths = torch.tensor(lengths, device=device)
        seq = torch.repeat_interleave(torch.arange(len(lengths), device=device), lengths)
        start = torch.cumsum(lengths, 0) - lengths
        return seq, torch.arange(int(lengths.sum()), device=device) - start[seq], lengths[seq]
    sq, iq, lq = seg(q_lengths)
    sk, ik, _ = seg(k_lengths)
    m = sq[:, None] == sk[None, :]
    if causal:
        lk = torch.tensor(k_lengths, device=device)[sq]
        m &= ik[None, :] <= (iq + lk - lq)[:, None]
    return m


def attention(q, k, v, heads, kv_heads, q_lengths, k_lengths, causal, dropout_p):
    """Multi-head attention on packed rows: q [Tq, heads*D], k and v [Tk, kv_heads*D] (any float
    dtype) -> [Tq, heads*D]; sequence i of the queries attends to sequence i of the keys."""
    Tq, Tk, D = q.shape[0], k.shape[0], q.shape[1] // heads
    B = len(q_lengths)
    uniform = len(set(q_lengths)) == 1 and len(set(k_lengths)) == 1 and len(k_lengths) == B
    if uniform and not (causal and q_lengths[0] != k_lengths[0]):
        Sq, Sk, mask = q_lengths[0], k_lengths[0], None
    else:
        B, Sq, Sk = 1, Tq, Tk
        mask = _block_mask(q_lengths, k_lengths, causal, q.device)
        causal = False
    qh = q.reshape(B, Sq, heads, D).transpose(1, 2)
    kh = k.reshape(B, Sk, kv_heads, D).transpose(1, 2)
    vh = v.reshape(B, Sk, kv_heads, D).transpose(1, 2)
    if kv_heads != heads:
        kh = kh.repeat_interleave(heads // kv_heads, dim=1)
        vh = vh.repeat_interleave(heads // kv_heads, dim=1)
    o = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
    return o.transpose(1, 2).reshape(Tq, heads * D)


# ---------------------------------------------------------------------------- the model

def _attr(name):
    return "p__" + name.replace(".", "__")


class Model(nn.Module):
    """ls2c's model for a description `c` (see config()); forward(batch) -> mean loss (fp32
    scalar). Parameters are fp32 (AMP casts them per op, as ls2c casts its fp32 master copy);
    named_reference_parameters() yields them by their reference names."""

    def __init__(self, c, seed=0):
        super().__init__()
        self.c = c
        self.specs = parameter_specs(c)
        init = init_parameters(c, seed)
        for name in self.specs:
            self.register_parameter(_attr(name), nn.Parameter(torch.from_numpy(init[name])))
        if c["architecture"] == "encoder_decoder":
            self.register_buffer("pos_table", sinusoidal_table(c["max_seq_len"], c["hidden"]))

    def p(self, name):
        return getattr(self, _attr(name))

    def named_reference_parameters(self):
        return [(name, self.p(name)) for name in self.specs]

    # building blocks -------------------------------------------------------
    def _drop(self, x, rate):
        return F.dropout(x, rate, self.training) if rate > 0 else x

    def _ln(self, x, name):
        return F.layer_norm(x, (x.shape[-1],), self.p(name + ".weight"), self.p(name + ".bias"),
                            self.c["layer_norm_eps"])

    def _linear(self, x, name):  # nn.Linear weight [out, in]
        return F.linear(x, self.p(name + ".weight"), self.p(name + ".bias"))

    def _conv1d(self, x, name):  # GPT-2 Conv1D weight [in, out]
        return torch.addmm(self.p(name + ".bias"), x, self.p(name + ".weight"))

    def _act(self, x):
        a = self.c["activation"]
        if a == "relu":
            return F.relu(x)
        return F.gelu(x, approximate="tanh" if a == "gelu_tanh" else "none")

    def _residual(self, x, norm, branch):
        drop = self.c["hidden_dropout"]
        if self.c["norm"] == "pre":
            return x + self._drop(branch(self._ln(x, norm)), drop)
        return self._ln(x + self._drop(branch(x), drop), norm)

    def _layer(self, body, x):
        """body(x) for one layer, under torch.utils.checkpoint with activation_checkpointing."""
        if self.c.get("activation_checkpointing") and self.training and torch.is_grad_enabled():
            return torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False)
        return body(x)

    def _ffn(self, x, fc1, fc2, proj):
        return proj(self._drop(self._act(proj(x, fc1)), self.c["activation_dropout"]), fc2)

    def _attn(self, q, k, v, q_lengths, k_lengths, causal):
        c = self.c
        p = c["attention_dropout"] if self.training else 0.0
        return attention(q, k, v, c["heads"], c["kv_heads"], q_lengths, k_lengths, causal, p)

    def _loss(self, logits, labels, ignore_index):
        """Mean cross-entropy over the rows whose label is not ignore_index (0 if none)."""
        total = F.cross_entropy(logits, labels.long(), ignore_index=ignore_index,
                                label_smoothing=self.c["label_smoothing"], reduction="sum")
        return total.float() / (labels != ignore_index).sum().clamp(min=1)

    # architectures ---------------------------------------------------------
    def forward(self, batch):
        return getattr(self, "_" + self.c["architecture"])(batch)

    def _encoder(self, b):
        c, lengths = self.c, b["lengths"]
        x = (F.embedding(b["input_ids"], self.p("bert.embeddings.word_embeddings.weight"))
             + F.embedding(b["position_ids"], self.p("bert.embeddings.position_embeddings.weight"))
             + F.embedding(b["token_type_ids"], self.p("bert.embeddings.token_type_embeddings.weight")))
        x = self._drop(self._ln(x, "bert.embeddings.LayerNorm"), c["hidden_dropout"])
        for i in range(c["encoder_layers"]):
            n = f"bert.encoder.layer.{i}."

            def attn(h, n=n):  # bound now: a checkpointed layer runs again after the loop
                q, k, v = (self._linear(h, n + "attention.self." + w) for w in ("query", "key", "value"))
                return self._linear(self._attn(q, k, v, lengths, lengths, False), n + "attention.output.dense")

            def layer(x, n=n, attn=attn):
                x = self._residual(x, n + "attention.output.LayerNorm", attn)
                return self._residual(x, n + "output.LayerNorm",
                                      lambda h: self._ffn(h, n + "intermediate.dense", n + "output.dense",
                                                          self._linear))

            x = self._layer(layer, x)
        if c["norm"] == "pre":
            x = self._ln(x, "bert.encoder.final_layer_norm")
        labels = b["labels"]
        if c.get("max_predictions"):
            # ls2c's gathered head: the labelled rows in order, then unlabelled ones (-100, no
            # loss) up to the bound, a static shape as NVIDIA's BERT gathers them.
            rows = torch.argsort((labels == -100).to(torch.int8), stable=True)[:c["max_predictions"]]
            x, labels = x.index_select(0, rows), labels.index_select(0, rows)
        h = self._ln(self._act(self._linear(x, "cls.predictions.transform.dense")),
                     "cls.predictions.transform.LayerNorm")
        w = self.p("bert.embeddings.word_embeddings.weight" if c["tie_embeddings"] else "cls.predictions.decoder.weight")
        logits = F.linear(h, w, self.p("cls.predictions.bias"))
        return self._loss(logits, labels, -100)

    def _decoder(self, b):
        c, lengths = self.c, b["lengths"]
        H = c["hidden"]
        KV = c["kv_heads"] * H // c["heads"]
        x = F.embedding(b["input_ids"], self.p("transformer.wte.weight")) + \
            F.embedding(b["position_ids"], self.p("transformer.wpe.weight"))
        x = self._drop(x, c["hidden_dropout"])
        for i in range(c["decoder_layers"]):
            n = f"transformer.h.{i}."

            def attn(h, n=n):  # bound now: a checkpointed layer runs again after the loop
                qkv = self._conv1d(h, n + "attn.c_attn")
                q, k, v = qkv[:, :H], qkv[:, H:H + KV], qkv[:, H + KV:]
                return self._conv1d(self._attn(q, k, v, lengths, lengths, True), n + "attn.c_proj")

            def layer(x, n=n, attn=attn):
                x = self._residual(x, n + "ln_1", attn)
                return self._residual(x, n + "ln_2",
                                      lambda h: self._ffn(h, n + "mlp.c_fc", n + "mlp.c_proj", self._conv1d))

            x = self._layer(layer, x)
        if c["norm"] == "pre":
            x = self._ln(x, "transformer.ln_f")
        logits = F.linear(x, self.p("transformer.wte.weight" if c["tie_embeddings"] else "lm_head.weight"))
        return self._loss(logits, b["labels"], -100)

    def _encoder_decoder(self, b):
        c = self.c
        src_len, tgt_len = b["src_lengths"], b["tgt_lengths"]
        scale = math.sqrt(c["hidden"])
        src_emb = self.p("encoder.embed_tokens.weight")
        tgt_emb = src_emb if c["share_embeddings"] else self.p("decoder.embed_tokens.weight")

        def att(n, xq, xkv, ql, kl, causal):
            q, k, v = self._linear(xq, n + "q_proj"), self._linear(xkv, n + "k_proj"), self._linear(xkv, n + "v_proj")
            return self._linear(self._attn(q, k, v, ql, kl, causal), n + "out_proj")

        def ffn(n):
            return lambda h: self._ffn(h, n + "fc1", n + "fc2", self._linear)

        x = scale * F.embedding(b["src_ids"], src_emb) + F.embedding(b["src_position_ids"], self.pos_table)
        x = self._drop(x, c["hidden_dropout"])
        for i in range(c["encoder_layers"]):
            def enc_layer(x, n=f"encoder.layers.{i}."):  # n bound now: a checkpointed layer runs again later
                x = self._residual(x, n + "self_attn_layer_norm",
                                   lambda h: att(n + "self_attn.", h, h, src_len, src_len, False))
                return self._residual(x, n + "final_layer_norm", ffn(n))

            x = self._layer(enc_layer, x)
        if c["norm"] == "pre":
            x = self._ln(x, "encoder.layer_norm")
        enc = x
        y = scale * F.embedding(b["tgt_ids"], tgt_emb) + F.embedding(b["tgt_position_ids"], self.pos_table)
        y = self._drop(y, c["hidden_dropout"])
        for i in range(c["decoder_layers"]):
            def dec_layer(y, n=f"decoder.layers.{i}."):
                y = self._residual(y, n + "self_attn_layer_norm",
                                   lambda h: att(n + "self_attn.", h, h, tgt_len, tgt_len, True))
                y = self._residual(y, n + "encoder_attn_layer_norm",
                                   lambda h: att(n + "encoder_attn.", h, enc, tgt_len, src_len, False))
                return self._residual(y, n + "final_layer_norm", ffn(n))

            y = self._layer(dec_layer, y)
        if c["norm"] == "pre":
            y = self._ln(y, "decoder.layer_norm")
        w = tgt_emb if c["tie_embeddings"] else self.p("decoder.output_projection.weight")
        pad = c["padding_idx"]
        return self._loss(F.linear(y, w), b["labels"], pad if pad >= 0 else -100)

    def _vit(self, b):
        c = self.c
        H, ps = c["hidden"], c["patch_size"]
        pix = b["pixels"]
        B = pix.shape[0]
        x = F.conv2d(pix, self.p("patch_embed.proj.weight"), self.p("patch_embed.proj.bias"), stride=ps)
        x = x.flatten(2).transpose(1, 2)  # [B, patches, H], row-major patch grid
        x = torch.cat([self.p("cls_token").expand(B, 1, H).to(x.dtype), x], dim=1) + self.p("pos_embed")
        N = x.shape[1]
        x = self._drop(x.reshape(B * N, H), c["hidden_dropout"])
        lengths = (N,) * B
        KV = c["kv_heads"] * H // c["heads"]
        for i in range(c["encoder_layers"]):
            n = f"blocks.{i}."

            def attn(h, n=n):  # bound now: a checkpointed layer runs again after the loop
                qkv = self._linear(h, n + "attn.qkv")
                q, k, v = qkv[:, :H], qkv[:, H:H + KV], qkv[:, H + KV:]
                return self._linear(self._attn(q, k, v, lengths, lengths, False), n + "attn.proj")

            def layer(x, n=n, attn=attn):
                x = self._residual(x, n + "norm1", attn)
                return self._residual(x, n + "norm2", lambda h: self._ffn(h, n + "mlp.fc1", n + "mlp.fc2", self._linear))

            x = self._layer(layer, x)
        if c["norm"] == "pre":
            x = self._ln(x, "norm")
        logits = self._linear(x.reshape(B, N, H)[:, 0], "head")
        return self._loss(logits, b["labels"], -100)


def load_parameters(model, tensors):
    """Copies {reference name: array or tensor} (e.g. safetensors.numpy.load_file of a file
    ls2c reads with --params, or an `ls2c train` checkpoint) into the model's fp32 parameters.
    Every parameter must be present with its shape; other entries are ignored."""
    with torch.no_grad():
        for name, p in model.named_reference_parameters():
            if name not in tensors:
                raise KeyError(f"missing parameter {name!r}")
            t = torch.as_tensor(np.asarray(tensors[name]))
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"{name}: shape {tuple(t.shape)}, the model has {tuple(p.shape)}")
            p.copy_(t.to(torch.float32))
