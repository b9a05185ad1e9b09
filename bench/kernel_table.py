#!/usr/bin/env python3
"""Per-kernel table of a profiled train step against the H200's measured ceilings.

Reads a bundle's manifest (docs/bundle-format.md) and the profile `ls2c-gpu-step BUNDLE
--profile` printed for it (one line per step label: ms, share, calls, label), and prints a
Markdown table: each label's time, and what it achieved against ../shared/DESIGN.md's measured
ceilings:
  - generated kernels: bytes moved (every buffer argument's bytes at the batch's shape, read or
    written, counted once per launch; kernel scratch left out) per second, against the
    device-to-device copy rate (4.2 TB/s, bytes read + written);
  - GEMMs (`gemm MxNxK`, `/tn` when an operand is transposed, `+epilogue` unless none):
    2*M*N*K FLOP per call, against the dense GEMM rate of the program's dtype (bf16 769, fp16
    734 TFLOP/s);
  - cuDNN's attention (`cudnn_attention_forward/backward`): FlashAttention's count, 4*b*h*s*s*d
    per forward (half when causal), 2.5x that backward, against the same GEMM rate.
The bundle must be the one the profile ran, at a batch of --sequences x --length tokens that
fills max_batch_tokens (the benchmark's: the buffers' bounds are then the batch's sizes).
Usage: kernel_table.py --bundle B.ls2b --profile P.log --sequences N --length S [--top K]
"""
import argparse
import json
import re
import sys

from bench_cli import fail

COPY_TBS = 4.2
GEMM_TFLOPS = {"bf16": 769.0, "f16": 734.0}


def manifest(path):
    """The bundle's manifest: the JSON object after the section table (BundleReader's rule:
    section 0, which starts with {"formatVersion")."""
    data = open(path, "rb").read()
    start = data.find(b'{"formatVersion"')
    if start < 0:
        fail(f"{path}: no bundle manifest found")
    try:
        return json.JSONDecoder().raw_decode(data[start:].decode("utf-8", "replace"))[0]
    except json.JSONDecodeError as e:
        fail(f"{path}: the manifest is not valid JSON: {e}")


def profile_rows(path):
    """(ms, calls, label) of each profile line."""
    rows = []
    for line in open(path):
        m = re.match(r"\s*([0-9.]+)\s+[0-9.]+%\s+(\d+)\s+(.+?)\s*$", line)
        if m:
            rows.append((float(m.group(1)), int(m.group(2)), m.group(3)))
    if not rows:
        fail(f"{path}: no profile lines (run ls2c-gpu-step with --profile)")
    return rows


def launch_bytes(m):
    """Per kernel name: bytes of all its launches in the train step's functions (scratch
    arguments left out), and the launch count."""
    out = {}
    for f in m["functions"]:
        if f["name"] not in ("accumulate_gradients", "optimizer_step"):
            continue
        for s in f["steps"]:
            if s["kind"] != "launch":
                continue
            k = m["kernels"][s["kernel"]]
            b = sum(a["buffer"]["maxBytes"] for a in s["args"]
                    if a["kind"] == "pointer" and not (a["buffer"]["space"] == "arena" and
                                                       a["buffer"]["byteOffset"] == m["scratchOffset"]))
            total, n = out.get(k["name"], (0, 0))
            out[k["name"]] = (total + b, n + 1)
    return out


def attention_flops(m, sequences, length, backward):
    """FLOP of one cuDNN attention call of the train step (FlashAttention's convention)."""
    for f in m["functions"]:
        if f["name"] != "accumulate_gradients":
            continue
        for s in f["steps"]:
            a = s.get("attention")
            if s["kind"] == "attention" and a["backward"] == backward:
                flops = 4.0 * sequences * a["heads"] * length * length * a["headDim"]
                return flops * (0.5 if a["causal"] else 1.0) * (2.5 if backward else 1.0)
    return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--sequences", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--top", type=int, default=0, help="only the K slowest labels")
    a = ap.parse_args()
    m = manifest(a.bundle)
    dtype = m["computeDType"]
    if dtype not in GEMM_TFLOPS:
        fail(f"{a.bundle}: no measured GEMM ceiling for dtype {dtype}")
    kernels = launch_bytes(m)
    rows = profile_rows(a.profile)
    total = sum(ms for ms, _, _ in rows)
    print("| step | calls | ms | share | achieved | of ceiling |\n| --- | --- | --- | --- | --- | --- |")
    shown = sorted(rows, reverse=True)[:a.top] if a.top else sorted(rows, reverse=True)
    for ms, calls, label in shown:
        rate = ""
        g = re.fullmatch(r"gemm (\d+)x(\d+)x(\d+)(?:/[nt]{2})?(?:\+\w+)?", label)
        if g:
            tflops = 2.0 * int(g[1]) * int(g[2]) * int(g[3]) * calls / ms / 1e9
            rate = f"{tflops:.0f} TFLOP/s | {tflops / GEMM_TFLOPS[dtype]:.0%}"
        elif label.startswith("cudnn_attention_"):
            flops = attention_flops(m, a.sequences, a.length, label.endswith("backward"))
            tflops = flops * calls / ms / 1e9
            rate = f"{tflops:.0f} TFLOP/s | {tflops / GEMM_TFLOPS[dtype]:.0%}"
        elif label in kernels:
            nbytes, launches = kernels[label]
            if launches != calls:
                fail(f"{label}: {launches} launches in the bundle, {calls} in the profile: "
                     "not the bundle the profile ran")
            tbs = nbytes / ms / 1e9
            rate = f"{tbs:.2f} TB/s | {tbs / COPY_TBS:.0%}"
        else:
            rate = "- | -"  # copies, skipped fallbacks
        print(f"| {label} | {calls} | {ms:.3f} | {ms / total:.1%} | {rate} |")
    print(f"\n{total:.3f} ms in all; ceilings: copy {COPY_TBS} TB/s (read + written), "
          f"{dtype} GEMM {GEMM_TFLOPS[dtype]:.0f} TFLOP/s (../shared/DESIGN.md).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
