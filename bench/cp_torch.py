#!/usr/bin/env python3
"""PyTorch's context parallelism on one attention layer's forward and backward: the baseline of
issue 10's sequence-parallel attention benchmark (bench/cp_side_by_side.py runs it).

    python -m torch.distributed.run --standalone --nproc-per-node P bench/cp_torch.py \\
        --seq S [--batch 1] [--heads 16] [--kv-heads H] [--head-dim 128] [--causal | --no-causal]
        [--backend flash|cudnn|efficient] [--rotate alltoall|allgather] [--inputs full|local]
        [--warmup 3] [--iters 10] [--seed 1]
    python bench/cp_torch.py --seq S ...        (one process: P = 1)

P > 1: ring attention in torch.distributed (torch >= 2.5): `mesh = init_device_mesh("cuda", (P,))`,
`torch.distributed.tensor.experimental.context_parallel(mesh, buffers=(q, k, v, dout),
buffer_seq_dims=(2, 2, 2, 2))` shards the sequence, and F.scaled_dot_product_attention inside the
context runs the ring (the KV shards travel around the ranks; the output and lse merge per step).
Causal: torch's head-tail load balancing (rank r holds chunks r and 2P - 1 - r, i.e. zigzag),
which needs S to be a multiple of 2P; not causal: contiguous shards (torch refuses load balancing
without a causal mask). The rotate method (how the KV shards move) is set with
`_attention.set_rotate_method` where it exists: alltoall (the ring: one point-to-point permute per
step, the default here) or allgather (torch's default: one all-gather of every KV shard); the
backward's dK/dV always travel by permute. P = 1: plain scaled_dot_product_attention, no context
parallelism (the single-GPU baseline).

Inputs, bf16, from a generator seeded with --seed: q [B, H, S, D], k and v [B, Hkv, S, D], and the
output gradient dout [B, H, S, D] (torch.randn, scale 1). --inputs full (the default): every rank
makes the same full tensors and context_parallel shards them (buffers not restored); each rank
copies its shards, leaves that context and frees the full tensors. --inputs local: each rank makes
only its own shards, from the generator seeded with seed + rank (values differ from `full`, shapes
and work do not): for the longest lengths, where the full tensors would not fit one GPU. Either way
the timed loop runs in a second context_parallel, over one tiny buffer, that patches SDPA, and the
peak memory counts what the ring needs, the shards included. Hkv must equal H: SDPA under context
parallelism takes no GQA.

Timing: --warmup W untimed then --iters N timed iterations, a barrier before each; CUDA events
before the forward, after it and after the backward (out.backward(dout)); per rank the median
forward and the median forward + backward, the slowest rank's reported. backward = (forward +
backward) - forward. FLOPs follow FlashAttention's convention: forward 4*B*H*S*S*D (half when
causal), backward 2.5x forward; TFLOP/s per GPU = FLOPs / P / time. tokens/s = B*S / step time.

Output: every rank prints a line `rank R: ...`; rank 0 then prints one line
`CP_RESULT {json}` with system "torch-cp", torch, backend, rotate_method, load_balance, inputs,
ranks, batch, heads, kv_heads, head_dim, seq, causal, forward_ms, backward_ms, step_ms,
max_memory_gib (torch.cuda.max_memory_allocated on rank 0, after the inputs were made),
max_memory_gib_ranks, tokens_per_s, tflops_per_gpu, forward_tflops_per_gpu,
backward_tflops_per_gpu, per-rank medians, iters, warmup.
Out of GPU memory: `CP_RESULT {"oom": true, ...the shape..., "rank": R, "phase": ...}` from the rank
that ran out; P = 1 exits 0; P > 1 exits 3 at once (its peers would wait for it in NCCL; torchrun
stops them on a nonzero exit), so the caller takes an oom line whatever torchrun's status is.
Bad input, or a torch without context_parallel: one line on stderr, exit 2.
"""
import argparse
import contextlib
import inspect
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cli import Parser, fail  # noqa: E402 (after the path)

GiB = float(1 << 30)
BACKENDS = ("flash", "cudnn", "efficient")


def attention_flops(batch, heads, seq, head_dim, causal):
    """Forward FLOPs (FlashAttention's convention); the backward is 2.5x this."""
    return 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)


def is_oom(torch, e):
    """CUDA out of memory, as torch raises it or as a library's message says it."""
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in text or "alloc_failed" in text)


def cp_api(torch):
    """context_parallel and the module that holds its options: torch.distributed.tensor.experimental.
    _attention (torch 2.5 on; a re-exporting stub of _context_parallel._attention in later ones)."""
    impl = None
    try:
        from torch.distributed.tensor.experimental import _attention as impl
        context_parallel = impl.context_parallel
    except (ImportError, AttributeError):
        try:
            from torch.distributed.tensor.experimental import context_parallel
        except ImportError:
            fail(f"torch {torch.__version__} has no torch.distributed.tensor.experimental.context_parallel "
                 "(context parallelism needs torch >= 2.5)")
    if not callable(context_parallel):
        fail(f"torch {torch.__version__}: context_parallel is {context_parallel!r}, not a function")
    return context_parallel, impl


def set_rotate(impl, wanted):
    """Sets the rotate method where torch lets us; returns the one in force ("alltoall",
    "allgather", or "unknown")."""
    setter = getattr(impl, "set_rotate_method", None)
    if setter is not None:
        setter(wanted)
    options = getattr(impl, "_cp_options", None)
    method = getattr(options, "rotate_method", None)
    name = getattr(method, "name", "")
    used = {"ALL_TO_ALL": "alltoall", "ALL_GATHER": "allgather"}.get(name, "unknown")
    if used != wanted:
        print(f"cp_torch.py: warning: asked for rotate method {wanted}, torch {method!r} in force "
              f"(set_rotate_method {'present' if setter else 'absent'})", file=sys.stderr, flush=True)
    return used


def set_load_balance(impl, on):
    """torch's head-tail load balancing (causal only); returns what is in force (None: unknown)."""
    options = getattr(impl, "_cp_options", None)
    if options is None or not hasattr(options, "enable_load_balance"):
        return None
    options.enable_load_balance = on
    return bool(options.enable_load_balance)


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq", type=int, required=True, help="tokens per sequence, whole (all ranks)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, help="default: --heads (must equal it)")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--backend", choices=BACKENDS, default="flash", help="SDPA backend (sdpa_kernel)")
    ap.add_argument("--rotate", choices=("alltoall", "allgather"), default="alltoall",
                    help="how the KV shards move (default alltoall: the ring)")
    ap.add_argument("--inputs", choices=("full", "local"), default="full")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    kv_heads = a.heads if a.kv_heads is None else a.kv_heads
    for name in ("seq", "batch", "heads", "head_dim", "iters"):
        if getattr(a, name) < 1:
            fail(f"--{name.replace('_', '-')} {getattr(a, name)}: must be >= 1")
    if kv_heads < 1 or a.warmup < 0:
        fail(f"--kv-heads {kv_heads} / --warmup {a.warmup}: must be >= 1 / >= 0")
    if kv_heads != a.heads:
        fail(f"--kv-heads {kv_heads} differs from --heads {a.heads}: scaled_dot_product_attention "
             "under context parallelism takes no GQA (H must equal Hkv)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    unit = 2 * world if a.causal and world > 1 else world
    if a.seq % unit:
        fail(f"--seq {a.seq}: must be a multiple of {unit} ({'2P: causal load balancing' if unit > world else 'P'}"
             f", P = {world})")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the GPU machine forbids NVLink multicast
    try:
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ModuleNotFoundError as e:
        fail(f"needs torch (with torch.nn.attention.sdpa_kernel): {e}")
    if not torch.cuda.is_available():
        fail("no CUDA device visible")
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "efficient": SDPBackend.EFFICIENT_ATTENTION}[a.backend]
    shape = {"system": "torch-cp", "torch": torch.__version__, "backend": a.backend, "ranks": world,
             "batch": a.batch, "heads": a.heads, "kv_heads": kv_heads, "head_dim": a.head_dim,
             "seq": a.seq, "causal": a.causal, "inputs": a.inputs}
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)

    context_parallel = impl = mesh = None
    rotate, load_balance = "none", None
    if world > 1:
        context_parallel, impl = cp_api(torch)
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cuda", (world,))
        rotate = set_rotate(impl, a.rotate)
        # torch refuses load balancing without a causal mask; with one it is torch's default.
        load_balance = set_load_balance(impl, a.causal)
    shape.update(rotate_method=rotate, load_balance=load_balance)

    def barrier():
        if world > 1:
            dist.barrier(device_ids=[local])
        else:
            torch.cuda.synchronize()

    phase = "inputs"
    try:
        gen = torch.Generator(device=device)
        gen.manual_seed(a.seed + (rank if a.inputs == "local" else 0))
        s_local = a.seq // world if a.inputs == "local" else a.seq

        def randn(h):
            return torch.randn((a.batch, h, s_local, a.head_dim), generator=gen, device=device,
                               dtype=torch.bfloat16)

        q, k, v, dout = randn(a.heads), randn(kv_heads), randn(kv_heads), randn(a.heads)
        if world > 1 and a.inputs == "full":
            q, k, v, dout = shard_full(context_parallel, mesh, [q, k, v, dout])
        cm = contextlib.nullcontext() if world == 1 else patch_sdpa(context_parallel, mesh, world, device)
        with cm:
            for t in (q, k, v):
                t.requires_grad_(True)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            phase = "attention"
            fwd, step = [], []
            with sdpa_kernel(backend):
                for i in range(a.warmup + a.iters):
                    barrier()
                    for t in (q, k, v):
                        t.grad = None
                    e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                    e[0].record()
                    # Looked up at each call: context_parallel patches F.scaled_dot_product_attention.
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
                    e[1].record()
                    out.backward(dout)
                    e[2].record()
                    del out
                    if i >= a.warmup:
                        e[2].synchronize()
                        fwd.append(e[0].elapsed_time(e[1]))
                        step.append(e[0].elapsed_time(e[2]))
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated(device) / GiB
    except Exception as e:  # noqa: BLE001 (OOM is a result; anything else is re-raised)
        if not is_oom(torch, e):
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        line = dict(shape, oom=True, rank=rank, phase=phase, error=first[:300])
        print("CP_RESULT " + json.dumps(line), flush=True)
        if world > 1:
            sys.stderr.flush()
            os._exit(3)  # the peers would wait in NCCL for this rank: torchrun stops them
        return 0

    mine = {"rank": rank, "forward_ms": statistics.median(fwd), "step_ms": statistics.median(step),
            "max_memory_gib": peak}
    print(f"rank {rank}: forward {mine['forward_ms']:.3f} ms, forward+backward {mine['step_ms']:.3f} ms "
          f"(median of {a.iters}), peak {peak:.2f} GiB", flush=True)
    ranks = [mine]
    if world > 1:
        ranks = [None] * world
        dist.all_gather_object(ranks, mine)
    if rank == 0:
        fwd_ms = max(r["forward_ms"] for r in ranks)
        step_ms = max(r["step_ms"] for r in ranks)
        bwd_ms = step_ms - fwd_ms
        flops = attention_flops(a.batch, a.heads, a.seq, a.head_dim, a.causal)
        result = dict(shape, forward_ms=fwd_ms, backward_ms=bwd_ms, step_ms=step_ms,
                      max_memory_gib=ranks[0]["max_memory_gib"],
                      max_memory_gib_ranks=[r["max_memory_gib"] for r in ranks],
                      tokens_per_s=a.batch * a.seq / (step_ms / 1000.0),
                      tflops_per_gpu=3.5 * flops / world / (step_ms / 1000.0) / 1e12,
                      forward_tflops_per_gpu=flops / world / (fwd_ms / 1000.0) / 1e12,
                      backward_tflops_per_gpu=(2.5 * flops / world / (bwd_ms / 1000.0) / 1e12
                                               if bwd_ms > 0 else None),
                      forward_ms_ranks=[r["forward_ms"] for r in ranks],
                      step_ms_ranks=[r["step_ms"] for r in ranks],
                      iters=a.iters, warmup=a.warmup, gpu=torch.cuda.get_device_name(device))
        print("CP_RESULT " + json.dumps(result), flush=True)
    if world > 1:
        dist.barrier(device_ids=[local])
        dist.destroy_process_group()
    return 0


def cp_kwargs(context_parallel, buffers):
    """context_parallel's keyword arguments: the buffers (sequence dimension 2), none restored at
    exit where torch has no_restore_buffers (every version with context_parallel has)."""
    kwargs = dict(buffers=buffers, buffer_seq_dims=[2] * len(buffers))
    try:
        restore_option = "no_restore_buffers" in inspect.signature(context_parallel).parameters
    except (TypeError, ValueError):
        restore_option = True
    if restore_option:
        kwargs["no_restore_buffers"] = set(buffers)
    return kwargs


def shard_full(context_parallel, mesh, tensors):
    """--inputs full: context_parallel shards the full tensors (in place: the head-tail order when
    load balancing); this rank's shards are copied into fresh memory, the context is left (it holds
    copies of its own while open) and the full tensors are freed. Returns the copies."""
    with context_parallel(mesh, **cp_kwargs(context_parallel, tensors)):
        shards = [t.clone() for t in tensors]  # a resized buffer keeps its full storage
    for t in tensors:
        t.set_()  # frees that storage
    return shards


def patch_sdpa(context_parallel, mesh, world, device):
    """The context the timed loop runs in: context_parallel with one tiny buffer (the API shards at
    least one; (1, 1, 2P, 1) divides as the head-tail balancer needs), for its patched
    F.scaled_dot_product_attention; the inputs are this rank's shards already."""
    import torch
    dummy = torch.zeros((1, 1, 2 * world, 1), device=device, dtype=torch.bfloat16)
    return context_parallel(mesh, **cp_kwargs(context_parallel, [dummy]))


if __name__ == "__main__":
    sys.exit(main())
