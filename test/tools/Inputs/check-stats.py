#!/usr/bin/env python3
"""Checks `ls2c compile --stats` of every preset against the fusion and planning issue's
targets: the arena within 1.05x of its lower bound, launch counts for every layer, and for
BERT-base at most 20 launches per encoder layer (GEMMs included, the attention core not) and an
estimated peak device memory (32x512 tokens, fp16, AdamW) below the 10.2 GiB torch.compile
peaked at; what is live at the arena's peak (all of it, the rows past the eighth summed) adds up
to the lower bound. Prints one line per preset with the most launches any layer of each stack takes
(attention calls not counted); exits 1 naming the broken target.
Usage: check-stats.py LS2C EXAMPLES_DIR PRESET..."""
import re
import subprocess
import sys

ls2c, examples, presets = sys.argv[1], sys.argv[2], sys.argv[3:]
TORCH_COMPILE_BERT_BASE_PEAK = 10.2 * 2**30  # bytes, ../shared/DESIGN.md
failed = False
for name in presets:
    out = subprocess.run([ls2c, "compile", f"{examples}/{name}.json", "--stats"],
                         capture_output=True, text=True, check=True).stdout
    arena, bound = map(int, re.search(
        r"arena \(forward \+ backward\): (\d+) bytes .*lower bound (\d+) bytes", out).groups())
    peak = int(re.search(r"estimated peak device memory: (\d+) bytes", out).group(1))
    layers = {}
    for scope, n, attention in re.findall(
            r"^  (\S*layers?\.\d+|\S*\.h\.\d+|blocks\.\d+): (\d+) launches "
            r"\(\d+ kernels, \d+ GEMMs, (\d+) attention", out, re.M):
        layers.setdefault(re.sub(r"\.\d+$", "", scope), set()).add(int(n) - int(attention))
    problems = []
    at_peak = re.search(r"live at its peak \(step (\d+) of (\d+)\):\n((?:    .*\n)+)", out)
    if not at_peak:
        problems.append("no breakdown of the arena's peak")
    else:
        step, steps = int(at_peak.group(1)), int(at_peak.group(2))
        rows = [int(b) for b in re.findall(r"^    (\d+) bytes ", at_peak.group(3), re.M)]
        if not 0 <= step < steps:
            problems.append(f"peak step {step} outside [0, {steps})")
        if sum(rows) != bound:
            problems.append(f"the peak's rows sum to {sum(rows)} bytes, not the lower bound {bound}")
    if arena > 1.05 * bound:
        problems.append(f"arena {arena} > 1.05 x lower bound {bound}")
    if not layers:
        problems.append("no per-layer launch counts")
    if name == "bert-base" and peak >= TORCH_COMPILE_BERT_BASE_PEAK:
        problems.append(f"peak {peak} bytes >= torch.compile's 10.2 GiB")
    if name == "bert-base" and max(layers.get("bert.encoder.layer", {99})) > 20:
        problems.append(f"{max(layers['bert.encoder.layer'])} launches in an encoder layer > 20")
    per_layer = ", ".join(f"{s} {max(c)}" for s, c in sorted(layers.items()))
    print(f"{name}: arena/lower bound {arena / max(bound, 1):.3f}, peak {peak / 2**30:.3f} GiB, "
          f"launches per layer: {per_layer}" + (": FAIL " + "; ".join(problems) if problems else ""))
    failed |= bool(problems)
sys.exit(1 if failed else 0)
