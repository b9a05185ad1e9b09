"""Random packed batches in ls2c's input format, for ls2c (a safetensors file) and PyTorch.

make_batch() returns numpy arrays named as the inputs of ls2c's @accumulate_gradients
(docs/architecture.md "Frontend"): token ids, 0-based position_ids, labels and cu_seqlens are
int32 [T] ([B + 1] for cu_seqlens) over sequences packed back to back; ViT's pixels are float32
[B, C, S, S] (ls2c casts them to the compute dtype) with labels [B]. Lengths are all `seq_len`
(uniform=True) or drawn from [seq_len / 2, seq_len]. save_batch() writes the arrays for
`ls2c step --batch` / `ls2c-gpu-step --batch`; to_torch() gives the dict torch_models.Model takes
(the arrays as tensors on a device, ids as int64, plus the Python tuples of lengths); lengths_of()
gives those tuples back from a batch's cu_seqlens. Only to_torch() needs torch.
"""
import numpy as np
from safetensors.numpy import save_file


def _lengths(rng, n, seq_len, uniform):
    if uniform:
        return [seq_len] * n
    return [int(x) for x in rng.integers(max(1, seq_len // 2), seq_len + 1, size=n)]


def _packed(rng, lengths, lo, hi):
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    pos = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    return rng.integers(lo, hi, size=int(cu[-1])).astype(np.int32), pos, cu


def make_batch(c, num_seqs, seq_len, seed=0, uniform=True, tgt_len=None):
    """Arrays of one batch for description `c` (torch_models.config) and the lengths:
    (arrays, lengths) where lengths is {"lengths": (...)} or, for encoder_decoder,
    {"src_lengths": (...), "tgt_lengths": (...)}. num_seqs sequences (images for ViT) of
    seq_len tokens; encoder_decoder targets have tgt_len tokens (default seq_len).
    Encoder (MLM): ids in [1, vocab) (no padding id, which ls2c does not treat specially),
    labels on about 15% of tokens, -100 elsewhere. Decoder: labels are the next token of the
    same sequence, -100 at each sequence's end. Encoder-decoder: ids and labels above padding_idx."""
    rng = np.random.default_rng(seed)
    arch = c["architecture"]
    if arch == "vit":
        S, C = c["image_size"], c["channels"]
        n = (S // c["patch_size"]) ** 2 + 1
        return (dict(pixels=rng.normal(size=(num_seqs, C, S, S)).astype(np.float32),
                     cu_seqlens=(np.arange(num_seqs + 1) * n).astype(np.int32),
                     labels=rng.integers(0, c["num_classes"], num_seqs).astype(np.int32)),
                {"lengths": (n,) * num_seqs})
    if arch == "encoder_decoder":
        lo = max(c["padding_idx"], -1) + 1
        src_l = _lengths(rng, num_seqs, seq_len, uniform)
        tgt_l = _lengths(rng, num_seqs, tgt_len or seq_len, uniform)
        src, src_pos, src_cu = _packed(rng, src_l, lo, c["src_vocab"])
        tgt, tgt_pos, tgt_cu = _packed(rng, tgt_l, lo, c["vocab"])
        labels = rng.integers(lo, c["vocab"], tgt.size).astype(np.int32)
        return (dict(src_ids=src, src_position_ids=src_pos, src_cu_seqlens=src_cu, tgt_ids=tgt,
                     tgt_position_ids=tgt_pos, tgt_cu_seqlens=tgt_cu, labels=labels),
                {"src_lengths": tuple(src_l), "tgt_lengths": tuple(tgt_l)})
    lengths = _lengths(rng, num_seqs, seq_len, uniform)
    if arch == "encoder":
        ids, pos, cu = _packed(rng, lengths, 1, c["vocab"])
        labels = np.where(rng.random(ids.size) < 0.15, rng.integers(1, c["vocab"], ids.size), -100)
        tt = np.concatenate([np.repeat([0, 1], [n // 2, n - n // 2]) for n in lengths])
        return (dict(input_ids=ids, token_type_ids=tt.astype(np.int32), position_ids=pos, cu_seqlens=cu,
                     labels=labels.astype(np.int32)), {"lengths": tuple(lengths)})
    if arch == "decoder":
        ids, pos, cu = _packed(rng, lengths, 0, c["vocab"])
        labels = np.append(ids[1:], -100).astype(np.int32)
        labels[cu[1:] - 1] = -100
        return dict(input_ids=ids, position_ids=pos, cu_seqlens=cu, labels=labels), {"lengths": tuple(lengths)}
    raise ValueError(arch)


def save_batch(arrays, path):
    """The batch as ls2c reads it (int32 ids, float32 pixels)."""
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, path)


def lengths_of(arrays):
    """The lengths dict make_batch returns beside `arrays`, from their cu_seqlens (a batch read
    back from a file): {"lengths": (...)} or, for encoder_decoder, src_ and tgt_lengths."""
    def of(cu):
        return tuple(int(n) for n in np.diff(np.asarray(cu)))
    if "src_cu_seqlens" in arrays:
        return {"src_lengths": of(arrays["src_cu_seqlens"]), "tgt_lengths": of(arrays["tgt_cu_seqlens"])}
    return {"lengths": of(arrays["cu_seqlens"])}


def to_torch(arrays, lengths, device):
    """The dict torch_models.Model.forward takes: tensors on `device` (int ids as int64,
    pixels float32) and the lengths tuples."""
    import torch
    out = {}
    for k, v in arrays.items():
        t = torch.from_numpy(np.ascontiguousarray(v))
        out[k] = (t.long() if t.dtype == torch.int32 else t).to(device)
    out.update(lengths)
    return out
