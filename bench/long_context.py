#!/usr/bin/env python3
"""The longest sequence one GPU trains: a Llama description at doubling lengths, ls2c beside
Hugging Face's LlamaForCausalLM (issue 28, item 5).

    prepare --model M.json --lengths 32768,65536,... [--recompute-attention] --out DIR
        (compiler machine)
        DIR/T/model.json (max_seq_len = max_batch_tokens = T, activation_checkpointing on,
        recompute_attention with --recompute-attention: the checkpointed layers keep no
        attention output either, as PyTorch's checkpointing of a whole layer),
        DIR/T/model.ls2b (`ls2c compile --arch=sm_90`), DIR/T/stats.txt (`ls2c compile
        --stats`: the plan's peak and where its memory goes) and DIR/T/batch.safetensors
        (one sequence of T random token ids, next-token labels).
    run --dir DIR --gpu-step BIN [--lengths L,...] [--torch-lengths L,...] [--sdpa B]
        [--steps N] [--skip-ls2c] [--skip-torch] --json OUT   (GPU machine)
        ls2c: `BIN DIR/T/model.ls2b --batch DIR/T/batch.safetensors --steps N+1 --time
        --attention cudnn`, the median of steps 2..N+1 (N = 2 by default) and the device
        memory it reports; a run past --timeout keeps the steps it finished.
        PyTorch: transformers' LlamaForCausalLM of the same description (causal SDPA without a
        mask, pinned to one backend with torch.nn.attention.sdpa_kernel, --sdpa flash (default),
        cudnn or efficient; fp32 parameters, bf16 autocast, gradient checkpointing per layer without reentrancy,
        torch.compile, fused AdamW), one warm-up step then N timed with CUDA events; peak =
        torch.cuda.max_memory_allocated. A length that runs out of memory is recorded as such.
        --lengths and --torch-lengths pick which of DIR's lengths each side runs (default
        all). Prints a table (ms a step, tokens/s, GiB) and writes OUT.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np


def prepare(args):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from batches import save_batch
    desc = json.load(open(args.model))
    for t in [int(x) for x in args.lengths.split(",")]:
        d = os.path.join(args.out, str(t))
        os.makedirs(d, exist_ok=True)
        m = dict(desc, max_seq_len=t, max_batch_tokens=t, activation_checkpointing=True)
        if args.recompute_attention:
            m["recompute_attention"] = True
        json.dump(m, open(os.path.join(d, "model.json"), "w"), indent=1)
        subprocess.run([args.ls2c, "compile", os.path.join(d, "model.json"), "--arch=sm_90",
                        "-o", os.path.join(d, "model.ls2b")], check=True)
        with open(os.path.join(d, "stats.txt"), "w") as f:
            subprocess.run([args.ls2c, "compile", os.path.join(d, "model.json"), "--stats"],
                           check=True, stdout=f)
        rng = np.random.default_rng(1)
        ids = rng.integers(0, desc["vocab"], t).astype(np.int32)
        labels = np.append(ids[1:], -100).astype(np.int32)
        save_batch(dict(input_ids=ids, position_ids=np.arange(t, dtype=np.int32),
                        cu_seqlens=np.array([0, t], dtype=np.int32), labels=labels),
                   os.path.join(d, "batch.safetensors"))
        print(f"{d}: prepared", flush=True)


def run_ls2c(args, d):
    cmd = [args.gpu_step, os.path.join(d, "model.ls2b"), "--init-seed", "1", "--batch",
           os.path.join(d, "batch.safetensors"), "--steps", str(args.steps + 1), "--time",
           "--attention", "cudnn"]
    timed_out = False
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        decode = lambda b: b.decode() if isinstance(b, bytes) else (b or "")
        out, rc, timed_out = decode(e.stdout) + decode(e.stderr), None, True
    times = [float(x) for x in re.findall(r"time ([0-9.]+) ms", out)]
    # The last report: at the end of the run, else the last step's (peak so far).
    peaks = re.findall(r"device memory(?: so far:|: peak) (\d+) bytes", out)
    if (rc != 0 and not timed_out) or not times:
        why = f"timed out after {args.timeout} s" if timed_out else (
            out.strip().splitlines()[-1] if out.strip() else f"exit {rc}")
        return {"error": why, "step_ms": times}
    # Only the first step finished in time: it trained, but includes cuDNN's plans.
    r = {"ms": float(np.median(times[1:] or times)), "first_step_ms": times[0], "step_ms": times,
         "peak_bytes": int(peaks[-1]) if peaks else None}
    if timed_out:
        r["timed_out_after_s"] = args.timeout
    return r


SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
                 "efficient": "EFFICIENT_ATTENTION"}


def register_causal_sdpa():
    """"ls2c_causal_sdpa": transformers' attention through scaled_dot_product_attention with
    is_causal=True and no mask. Under torch.compile transformers' own "sdpa" builds the causal
    mask as a [1, 1, T, T] bool tensor (16 GiB at 128K tokens), which FlashAttention cannot
    take."""
    import torch
    import transformers
    import transformers.masking_utils as masking

    def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        groups = query.shape[1] // key.shape[1]  # [batch, heads, tokens, head_dim]
        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, dropout_p=dropout, scale=scaling, is_causal=True)
        return out.transpose(1, 2).contiguous(), None

    transformers.AttentionInterface.register("ls2c_causal_sdpa", attention)
    masking.AttentionMaskInterface.register("ls2c_causal_sdpa", lambda *args, **kwargs: None)


def run_torch(desc, t, sdpa, steps):
    import torch
    import transformers
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = getattr(SDPBackend, SDPA_BACKENDS[sdpa])
    register_causal_sdpa()
    cfg = transformers.LlamaConfig(
        vocab_size=desc["vocab"], hidden_size=desc["hidden"], intermediate_size=desc["ffn"],
        num_hidden_layers=desc["decoder_layers"], num_attention_heads=desc["heads"],
        num_key_value_heads=desc.get("kv_heads", desc["heads"]), max_position_embeddings=t,
        rms_norm_eps=desc.get("rms_norm_eps", 1e-6), rope_theta=desc.get("rope_theta", 10000.0),
        tie_word_embeddings=desc.get("tie_embeddings", False), attn_implementation="ls2c_causal_sdpa",
        use_cache=False)
    torch.manual_seed(1)
    model = transformers.LlamaForCausalLM(cfg).to("cuda", torch.float32).train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    step_fn = torch.compile(model)
    ids = torch.randint(0, desc["vocab"], (1, t), device="cuda")
    torch.cuda.reset_peak_memory_stats()

    def step():
        # The backend pinned for the forward and for the checkpointed
        # recomputation inside the backward.
        with sdpa_kernel(backend):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(input_ids=ids, labels=ids).loss
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    try:
        step()
        times = []
        for _ in range(steps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        return {"ms": float(np.median(times)), "peak_bytes": torch.cuda.max_memory_allocated(),
                "sdpa": sdpa}
    except torch.cuda.OutOfMemoryError:
        return {"error": "out of memory"}
    except Exception as e:  # recorded, so the other lengths still run
        return {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"}
    finally:
        del model, opt, step_fn
        torch._dynamo.reset()
        torch.cuda.empty_cache()


def run(args):
    lengths = sorted(int(x) for x in os.listdir(args.dir) if x.isdigit())
    pick = lambda arg: lengths if not arg else [int(x) for x in arg.split(",")]
    ls2c_lengths, torch_lengths = pick(args.lengths), pick(args.torch_lengths)
    for t in set(ls2c_lengths + torch_lengths) - set(lengths):
        sys.exit(f"--lengths/--torch-lengths: {t} is not a prepared length in {args.dir}")
    results = []
    for t in sorted(set(ls2c_lengths + torch_lengths)):
        d = os.path.join(args.dir, str(t))
        desc = json.load(open(os.path.join(d, "model.json")))
        r = {"tokens": t, "recompute_attention": bool(desc.get("recompute_attention"))}
        if not args.skip_ls2c and t in ls2c_lengths:
            r["ls2c"] = run_ls2c(args, d)
            print(f"{t}: ls2c {r['ls2c']}", flush=True)
        if not args.skip_torch and t in torch_lengths:
            r["torch"] = run_torch(desc, t, args.sdpa, args.steps)
            print(f"{t}: torch.compile {r['torch']}", flush=True)
        results.append(r)
        json.dump({"model": desc["name"], "results": results}, open(args.json, "w"), indent=1)
    print(f"\n{'tokens':>8} | {'ls2c ms':>9} {'tok/s':>7} {'GiB':>6} | {'torch ms':>9} {'tok/s':>7} {'GiB':>6}")
    for r in results:
        cells = []
        for side in ("ls2c", "torch"):
            x = r.get(side, {})
            if "ms" in x:
                gib = x["peak_bytes"] / 2**30 if x.get("peak_bytes") else float("nan")
                cells.append(f"{x['ms']:9.1f} {r['tokens'] / x['ms'] * 1000:7.0f} {gib:6.1f}")
            else:
                cells.append(f"{x.get('error', '-')[:24]:>24}")
        print(f"{r['tokens']:>8} | {cells[0]} | {cells[1]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--model", required=True)
    p.add_argument("--lengths", default="32768,65536,131072")
    p.add_argument("--out", required=True)
    p.add_argument("--ls2c", default="build/tools/ls2c/ls2c")
    p.add_argument("--recompute-attention", action="store_true",
                   help="recompute_attention in each description (the layers keep no attention output)")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--gpu-step", required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--lengths", help="the prepared lengths ls2c runs (default all)")
    r.add_argument("--torch-lengths", help="the prepared lengths PyTorch runs (default all)")
    r.add_argument("--sdpa", choices=sorted(SDPA_BACKENDS), default="flash",
                   help="PyTorch's scaled_dot_product_attention backend")
    r.add_argument("--skip-ls2c", action="store_true")
    r.add_argument("--skip-torch", action="store_true")
    r.add_argument("--steps", type=int, default=2, help="timed steps after one warm-up step")
    r.add_argument("--timeout", type=int, default=240, help="seconds for one ls2c run")
    a = ap.parse_args()
    prepare(a) if a.cmd == "prepare" else run(a)


if __name__ == "__main__":
    main()
