#!/usr/bin/env python3
"""A short table of a GPU bench run: parity.py's and side_by_side.py's JSON files.

Usage: summary.py [--parity parity.json ...] [--bench side_by_side.json ...]
(files of several calls are concatenated; a missing file is skipped)
Parity rows: case, dtype, worst relative loss error over the steps, tolerance, result.
Benchmark rows: ms per train step (median) of PyTorch eager, torch.compile and ls2c, the
speedups (PyTorch ms / ls2c ms) and peak memory in GiB (PyTorch: max_memory_allocated;
ls2c: the plan's estimate).
"""
import argparse
import json
import os
import re

GiB = float(1 << 30)


def f(x, spec):
    """format(x, spec), or "-" padded to the spec's width when x is missing."""
    if isinstance(x, (int, float)):
        return format(x, spec)
    width = re.match(r"\d*", spec).group()
    return "-".rjust(int(width or 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parity", action="append", default=[])
    ap.add_argument("--bench", action="append", default=[])
    a = ap.parse_args()
    parity = [r for p in a.parity if os.path.exists(p) for r in json.load(open(p))]
    benches = [json.load(open(p)) for p in a.bench if os.path.exists(p)]
    if parity:
        print("parity (loss curves, ls2c vs PyTorch, same init and batch, dropout 0):")
        for r in parity:
            if "error" in r:
                print(f"  {r['case']:18} FAIL {r['error'][:70]}")
            else:
                print(f"  {r['case']:18} {r['dtype']:5} {r['steps']:3d} steps  worst {r['worst_loss_rel_err']:.1e}"
                      f" (tol {r['tolerance']:g})  {'ok' if r['ok'] else 'FAIL'}")
    if benches:
        d = {"meta": benches[0]["meta"], "results": [r for b in benches for r in b["results"]]}
        print(f"side by side ({d['meta']['gpu']}, torch {d['meta']['torch']}; ms/step, x = PyTorch / ls2c):")
        print(f"  {'config':20} {'eager':>7} {'compile':>7} {'ls2c':>8} {'x eager':>7} {'x comp':>7} "
              f"{'GiB eager/comp/ls2c':>20}")
        for r in d["results"]:
            e, k, l = r.get("eager", {}), r.get("compile", {}), r.get("ls2c", {})
            lm = l.get("ms")
            plan = r["ls2c_stats"].get("estimated_peak_bytes")
            mem = f"{f(e.get('peak_gib'), '.1f')}/{f(k.get('peak_gib'), '.1f')}/{f(plan / GiB if plan else None, '.1f')}"
            print(f"  {r['config']:20} {f(e.get('ms'), '7.1f')} {f(k.get('ms'), '7.1f')} {f(lm, '8.1f')} "
                  f"{f(e['ms'] / lm if lm and e.get('ms') else None, '7.2f')} "
                  f"{f(k['ms'] / lm if lm and k.get('ms') else None, '7.2f')} {mem:>20}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
