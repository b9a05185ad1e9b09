#!/usr/bin/env python3
"""ls2c's generated attention kernels, and cuDNN's fused attention as ls2c's runtime calls it,
beside PyTorch's scaled_dot_product_attention (its FlashAttention-2 and cuDNN backends) in one
run, on issue 7's shapes.

Ours: `ls2c-gpu-step --profile` on a one-layer model per shape (bench/models/attention-*.json,
compiled to DIR/<name>.ls2b with a batch of b sequences of s tokens by scripts/gpu-profile.sh);
its kernel table gives the forward (forward_attention_0) and the backward (dq + dk/dv); again
with --attention cudnn (cudnn_attention_forward, cudnn_attention_backward). PyTorch:
bench/attention_torch.py's medians in the same process run. FLOPs follow FlashAttention's
convention: forward 4*b*h*s*s*d (half when causal), backward 2.5x that. Prints a table (ms,
TFLOP/s, our time over FlashAttention-2's) and writes JSON to --json.
Usage: attention_side_by_side.py --dir DIR --gpu-step BIN [--json OUT] [--iters N] NAME...
  NAME: bxhxsxd-full|causal[-dropout], e.g. 4x16x4096x128-causal (bf16; -dropout: the
        model's attention_dropout is 0.1, and PyTorch's dropout_p too)
"""
import argparse
import json
import re
import subprocess
import sys


def ours(gpu_step, directory, name, backend="kernels"):
    """Milliseconds of our forward and backward attention in one profiled step: the generated
    kernels, or (backend cudnn) cuDNN's fused attention called by ls2c's runtime."""
    model = f"{directory}/attention-{name}"
    out = subprocess.run([gpu_step, f"{model}.ls2b", "--init-seed", "1", "--batch",
                          f"{model}.batch.safetensors", "--steps", "3", "--profile",
                          "--attention", backend],
                         capture_output=True, text=True, check=True).stdout
    ms = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9.]+)\s+[0-9.]+%\s+\d+\s+(\S+)$", line)
        if m and "attention" in m.group(2) and m.group(2) != "attention_kernels_follow":
            ms[m.group(2)] = float(m.group(1))
    backward = ("_dq", "_dkdv", "cudnn_attention_backward")
    fwd = sum(v for k, v in ms.items() if not k.endswith(backward))
    bwd = sum(v for k, v in ms.items() if k.endswith(backward))
    if backend == "cudnn" and not {"cudnn_attention_forward", "cudnn_attention_backward"} <= ms.keys():
        raise RuntimeError(f"{model}: cuDNN did not run its attention:\n{out}")
    if not fwd or not bwd:
        raise RuntimeError(f"{model}: no attention kernels in the profile:\n{out}")
    return fwd, bwd, ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--gpu-step", required=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import attention_torch  # PyTorch: only on the GPU machine
    except ImportError as e:
        sys.exit(f"attention_side_by_side.py: PyTorch is needed for the baselines: {e}")
    rows = []
    for name in a.names:
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)-(full|causal)(-dropout)?", name)
        if not m:
            sys.exit(f"{name}: expected bxhxsxd-full|causal[-dropout]")
        dropout = 0.1 if m.group(6) else 0.0
        b, h, s, d = map(int, m.groups()[:4])
        causal = m.group(5) == "causal"
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        fwd, bwd, kernels = ours(a.gpu_step, a.dir, name)
        cfwd, cbwd, ckernels = ours(a.gpu_step, a.dir, name, "cudnn")
        torch_rows = {r["backend"]: r for r in
                      attention_torch.run(f"{b},{h},{s},{d},{m.group(5)},bf16,{dropout}", a.iters)}
        row = dict(name=name, flops=flops, dropout=dropout, ours=dict(forward_ms=fwd, backward_ms=bwd, kernels=kernels),
                   ours_cudnn=dict(forward_ms=cfwd, backward_ms=cbwd, kernels=ckernels),
                   torch=torch_rows)
        rows.append(row)
        fa = torch_rows.get("flash", {})
        cu = torch_rows.get("cudnn", {})
        def cell(ms, mult):
            return f"{ms:7.3f} ms {mult * flops / ms / 1e9:5.0f}" if ms else "   refused    "
        print(f"{name:24s} forward  ours {cell(fwd, 1)}  ls2c-cuDNN {cell(cfwd, 1)}  "
              f"FA2 {cell(fa.get('forward_ms'), 1)}  cuDNN {cell(cu.get('forward_ms'), 1)}  "
              f"ours/FA2 {fwd / fa['forward_ms'] if fa.get('forward_ms') else float('nan'):.2f}")
        print(f"{'':24s} backward ours {cell(bwd, 2.5)}  ls2c-cuDNN {cell(cbwd, 2.5)}  "
              f"FA2 {cell(fa.get('backward_ms'), 2.5)}  cuDNN {cell(cu.get('backward_ms'), 2.5)}  "
              f"ours/FA2 {bwd / fa['backward_ms'] if fa.get('backward_ms') else float('nan'):.2f}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
