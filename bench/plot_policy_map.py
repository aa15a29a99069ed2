"""Turns bench/policy_map.sh's CSV into Markdown (appended to PREFIX.md: the targets, then a
table per recipe) and a chart (PREFIX.png: per recipe, GPUs and load, the stall ratio
latency_aware / in_order of every cell, batch and prefetch down, demand across).
Usage: plot_policy_map.py CSV PREFIX"""
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# latency_aware's stall <= in_order's + MARGIN everywhere, <= HALF x in_order's where in_order
# stalls more than STALLS.
MARGIN, HALF, STALLS = 0.005, 0.5, 0.02


def load(path):
    runs = defaultdict(dict)
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (row["recipe"], row["load"], int(row["gpus"]), int(row["batch"]),
                   int(row["prefetch"]), float(row["demand"]))
            runs[key][row["policy"]] = row
    return {k: v for k, v in runs.items() if len(v) == 2}


def stalls(p):
    return float(p["in_order"]["stall_fraction"]), float(p["latency_aware"]["stall_fraction"])


def verdict(io, la):
    """'' when the cell meets both targets, else what it misses."""
    missed = []
    if la > io + MARGIN:
        missed.append("worse")
    if io > STALLS and la > HALF * io:
        missed.append("not halved")
    return ", ".join(missed)


def summary(runs):
    cells = len(runs)
    worse = [k for k, p in runs.items() if "worse" in verdict(*stalls(p))]
    stalled = [k for k, p in runs.items() if stalls(p)[0] > STALLS]
    halved = [k for k in stalled if "not halved" not in verdict(*stalls(runs[k]))]
    return [
        "| target | cells | met | |",
        "|---|---|---|---|",
        f"| latency_aware stall <= in_order's + {100 * MARGIN:.1f} pp | {cells} | "
        f"{cells - len(worse)} | {'met' if not worse else '**not met**'} |",
        f"| latency_aware stall <= {HALF} x in_order's where in_order stalls > {100 * STALLS:.0f}% "
        f"| {len(stalled)} | {len(halved)} | {'met' if len(halved) == len(stalled) else '**not met**'} |",
    ]


def table(runs, recipe):
    lines = [
        f"### {recipe}", "",
        "| load | GPUs | batch | prefetch | demand | stall in_order | stall latency_aware "
        "| ratio | samples/s in_order | samples/s latency_aware | hand-offs | missed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(k for k in runs if k[0] == recipe):
        _, load_, gpus, batch, prefetch, demand = key
        p = runs[key]
        io, la = stalls(p)
        ratio = f"{la / io:.2f}" if io > 0 else "-"
        lines.append(
            f"| {load_} | {gpus} | {batch} | {prefetch} | {demand:.0%} | {io:.1%} | {la:.1%} "
            f"| {ratio} | {float(p['in_order']['samples_per_s']):.1f} "
            f"| {float(p['latency_aware']['samples_per_s']):.1f} "
            f"| {p['latency_aware']['handoffs']} | {verdict(io, la)} |")
    return lines


def chart(runs, out):
    panels = sorted({k[:3] for k in runs})
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4.2 * rows), squeeze=False,
                             gridspec_kw={"hspace": 0.45})
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    im = None
    for ax, panel in zip(axes.flat, panels):
        keys = [k for k in runs if k[:3] == panel]
        ys = sorted({(k[3], k[4]) for k in keys})
        xs = sorted({k[5] for k in keys})
        grid, text = [], []
        for b, w in ys:
            row, labels = [], []
            for d in xs:
                p = runs.get(panel + (b, w, d))
                if p is None:
                    row.append(float("nan"))
                    labels.append("")
                    continue
                io, la = stalls(p)
                # log2 of the ratio; a cell where both hardly stall reads as even
                row.append(math.log2(max(la, 0.001) / max(io, 0.001)))
                labels.append(f"{100 * io:.1f}->{100 * la:.1f}%")
            grid.append(row)
            text.append(labels)
        im = ax.imshow(grid, cmap="RdYlGn_r", vmin=-3, vmax=3, aspect="auto")
        for i, labels in enumerate(text):
            for j, label in enumerate(labels):
                ax.text(j, i, label, ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(xs)), [f"{d:.0%}" for d in xs])
        ax.set_yticks(range(len(ys)), [f"b{b} p{w}" for b, w in ys])
        ax.set_xlabel("demand")
        ax.set_title(f"{panel[0]}, {panel[1]}, {panel[2]} GPU(s)")
    fig.suptitle("stall in_order -> latency_aware; colour: log2 of their ratio "
                 "(green: latency_aware stalls less)")
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), label="log2(stall latency_aware / in_order)")
    fig.savefig(out, dpi=100, bbox_inches="tight")


def main():
    csv_path, prefix = sys.argv[1], sys.argv[2]
    runs = load(csv_path)
    recipes = sorted({k[0] for k in runs})
    lines = summary(runs) + [""]
    for r in recipes:
        lines += table(runs, r) + [""]
    lines.append(f"![map]({os.path.basename(prefix)}.png)")
    with open(prefix + ".md", "a") as f:
        f.write("\n".join(lines) + "\n")
    chart(runs, prefix + ".png")


main()
