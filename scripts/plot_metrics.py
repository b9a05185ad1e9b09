#!/usr/bin/env python3
"""Draws the loss, validation loss and learning-rate curves of training runs.

Reads the metrics JSON lines that `ls2c train` (OUT/metrics.jsonl) and `ls2c-gpu-train
--metrics FILE` write, one object per line:

    {"step": 10, "loss": 3.91, "lr": 0.001, "grad_norm": 1.2, ...}   a training step
    {"step": 100, "valid_loss": 2.71, ...}                            a validation
    {"final": true, "steps": 2000, "valid_loss": 1.45, ...}            ls2c-gpu-train's summary

and writes one picture (PNG, SVG or PDF, from the output's extension) with the training loss
(optionally smoothed) and validation loss against the step on top and the learning rate
below. Several files are drawn on the same axes, labelled by file (or --label). Lines that
are not JSON objects (a run killed mid-line leaves one) and records without a numeric "step"
are skipped and counted on stderr.

usage: plot_metrics.py METRICS.jsonl [METRICS.jsonl ...] -o curves.png [--label NAME ...]
                       [--smooth N] [--title TEXT] [--log-y]

Exit status: 0 written; 2 bad input (a missing or unreadable file, no numeric records, an
unsupported output format), with one line on stderr naming the file and the rule.
"""
import argparse
import json
import math
import os
import sys
import tempfile

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


class BadInput(Exception):
    pass


def number(v):
    """A finite JSON number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def read_metrics(path):
    """{"loss": [(step, v)], "valid_loss": [...], "lr": [...]} and the skipped-line count."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot open: {e.strerror}")
    series = {"loss": [], "valid_loss": [], "lr": []}
    skipped = 0
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        step = number(record.get("step")) if isinstance(record, dict) else None
        if step is None:
            # ls2c-gpu-train's final summary has no step; anything else is not a record.
            skipped += not (isinstance(record, dict) and record.get("final") is True)
            continue
        for key in series:
            v = number(record.get(key))
            if v is not None:
                series[key].append((step, v))
    if not any(series.values()):
        raise BadInput(f"{path}: no metrics records (JSON lines with a numeric \"step\" and "
                       f"a numeric \"loss\", \"valid_loss\" or \"lr\")")
    for key in series:
        series[key].sort()
    return series, skipped


def smoothed(values, window):
    """Trailing moving average over `window` points."""
    if window <= 1:
        return values
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot(runs, output, title, smooth, log_y):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_lr = any(s["lr"] for _, s in runs)
    fig, axes = plt.subplots(2 if has_lr else 1, 1, sharex=True, squeeze=False,
                             figsize=(8, 6 if has_lr else 4),
                             gridspec_kw={"height_ratios": [3, 1] if has_lr else [1]})
    loss_ax = axes[0][0]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, s) in enumerate(runs):
        color = colors[i % len(colors)]
        if s["loss"]:
            steps, values = zip(*s["loss"])
            loss_ax.plot(steps, smoothed(list(values), smooth), color=color, linewidth=1,
                         label=f"{label} loss" + (f" (mean of {smooth})" if smooth > 1 else ""))
        if s["valid_loss"]:
            steps, values = zip(*s["valid_loss"])
            loss_ax.plot(steps, values, color=color, linestyle="--", marker="o", markersize=3,
                         label=f"{label} validation loss")
        if has_lr and s["lr"]:
            steps, values = zip(*s["lr"])
            axes[1][0].plot(steps, values, color=color, linewidth=1, label=f"{label} lr")
    loss_ax.set_ylabel("loss")
    if log_y:
        loss_ax.set_yscale("log")
    loss_ax.grid(True, alpha=0.3)
    loss_ax.legend(fontsize="small")
    if title:
        loss_ax.set_title(title)
    if has_lr:
        axes[1][0].set_ylabel("learning rate")
        axes[1][0].ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        axes[1][0].grid(True, alpha=0.3)
    axes[-1][0].set_xlabel("step")
    fig.tight_layout()
    # Written beside the output and renamed: never a half-written picture.
    directory = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(prefix=".plot-", suffix=os.path.splitext(output)[1], dir=directory)
    os.close(fd)
    try:
        fig.savefig(tmp, format=FORMATS[os.path.splitext(output)[1].lower()], dpi=120)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 is not what a new file gets
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", nargs="+", help="metrics JSON-lines files")
    ap.add_argument("-o", "--output", required=True, help="picture to write (.png, .svg, .pdf)")
    ap.add_argument("--label", action="append", default=[], help="legend name per file")
    ap.add_argument("--smooth", type=int, default=1, help="moving average of the training loss")
    ap.add_argument("--title", default="")
    ap.add_argument("--log-y", action="store_true", help="logarithmic loss axis")
    a = ap.parse_args(argv)
    try:
        ext = os.path.splitext(a.output)[1].lower()
        if ext not in FORMATS:
            raise BadInput(f"{a.output}: unsupported picture format '{ext or '(none)'}' "
                           f"(use {', '.join(FORMATS)})")
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.output))):
            raise BadInput(f"{a.output}: no such directory")
        if a.label and len(a.label) != len(a.metrics):
            raise BadInput(f"{len(a.label)} --label for {len(a.metrics)} metrics files")
        if a.smooth < 1:
            raise BadInput(f"--smooth {a.smooth} must be at least 1")
        runs, notes = [], []
        for i, path in enumerate(a.metrics):
            series, skipped = read_metrics(path)
            runs.append((a.label[i] if a.label else path, series))
            if skipped:
                notes.append(f"{path}: skipped {skipped} line(s) that are not metrics records")
        plot(runs, a.output, a.title, a.smooth, a.log_y)
    except BadInput as e:
        print(f"plot_metrics.py: error: {e}", file=sys.stderr)
        return 2
    for n in notes:
        print(f"plot_metrics.py: note: {n}", file=sys.stderr)
    for label, s in runs:
        parts = [f"{len(s['loss'])} steps"]
        if s["loss"]:
            parts.append(f"last loss {s['loss'][-1][1]:.4f}")
        if s["valid_loss"]:
            step, best = min(s["valid_loss"], key=lambda x: x[1])
            parts.append(f"best validation loss {best:.4f} at step {step:g}")
        print(f"{label}: {', '.join(parts)}")
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
