#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at given shapes, per backend: the baseline the
generated attention kernels are measured against in the same run (issue 7).

Each config is batch x heads x seq x head_dim (dense, every sequence full length), causal or
not, in fp16 or bf16, with an optional dropout probability (dropout_p, 0 by default). Times are medians of CUDA-event timings over --iters calls after
warm-up; FLOPs follow FlashAttention's convention: forward 4*b*h*s*s*d (halved when causal),
backward 2.5x forward. Prints one line per (config, backend) and writes JSON to --json.
Usage: attention_torch.py [--iters N] [--json OUT] CONFIG...
  CONFIG: B,H,S,D,causal|full,fp16|bf16[,DROPOUT]   e.g. 32,12,512,64,full,fp16,0.1
"""
import argparse
import json
import sys

try:
    import torch
except ModuleNotFoundError as e:  # a user error, not a bug: say which Python has it
    sys.exit(f"attention_torch.py: error: needs PyTorch ({e}); run it with a Python that has torch "
             "(on the GPU machine /opt/torch/.venv/bin/python3)")
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def median_ms(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def run(config, iters):
    b, h, s, d, mask, dtype, *rest = config.split(",")
    b, h, s, d = int(b), int(h), int(s), int(d)
    p = float(rest[0]) if rest else 0.0
    causal = mask == "causal"
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
    dout = torch.randn(b, h, s, d, device="cuda", dtype=dt)
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    rows = []
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p)
                fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                       dropout_p=p), iters)
                bwd = median_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), iters)
        except RuntimeError as e:  # a backend that refuses the shape
            rows.append(dict(config=config, backend=name, error=str(e).splitlines()[0]))
            continue
        rows.append(dict(config=config, backend=name, forward_ms=fwd, backward_ms=bwd,
                         forward_tflops=flops / fwd / 1e9, backward_tflops=2.5 * flops / bwd / 1e9))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = [r for c in a.configs for r in run(c, a.iters)]
    for r in rows:
        if "error" in r:
            print(f"{r['config']:28s} {r['backend']:6s} refused: {r['error']}")
        else:
            print(f"{r['config']:28s} {r['backend']:6s} forward {r['forward_ms']:8.3f} ms "
                  f"{r['forward_tflops']:6.1f} TFLOP/s  backward {r['backward_ms']:8.3f} ms "
                  f"{r['backward_tflops']:6.1f} TFLOP/s")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
