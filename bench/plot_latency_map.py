"""Turns bench/latency_map.sh's CSV into a Markdown table (appended to PREFIX.md) and a
heatmap (PREFIX.png) of the stall fraction of both policies over batch x window x demand.
Usage: plot_latency_map.py CSV PREFIX"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    runs = defaultdict(dict)
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (int(row["batch"]), int(row["window"]), float(row["demand"]))
            runs[key][row["policy"]] = row
    return runs


def table(runs):
    lines = [
        "| batch | window | demand | stall in_order | stall latency_aware | difference (pp) "
        "| epoch_s in_order | epoch_s latency_aware | in_order / latency_aware epoch | handoffs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (b, w, d), p in sorted(runs.items()):
        io, la = p["in_order"], p["latency_aware"]
        s_io, s_la = float(io["stall_fraction"]), float(la["stall_fraction"])
        e_io, e_la = float(io["epoch_s"]), float(la["epoch_s"])
        lines.append(
            f"| {b} | {w} | {d:.0%} | {s_io:.1%} | {s_la:.1%} | {100 * (s_la - s_io):+.1f} "
            f"| {e_io:.2f} | {e_la:.2f} | {e_io / e_la:.2f} | {la['handoffs']} |")
    return "\n".join(lines)


def heatmap(runs, out):
    batches = sorted({k[0] for k in runs})
    windows = sorted({k[1] for k in runs})
    demands = sorted({k[2] for k in runs})
    fig, axes = plt.subplots(1, len(windows), figsize=(5.5 * len(windows), 4.2), squeeze=False)
    for ax, w in zip(axes[0], windows):
        grid = [[100 * (float(runs[(b, w, d)]["latency_aware"]["stall_fraction"]) -
                        float(runs[(b, w, d)]["in_order"]["stall_fraction"]))
                 for d in demands] for b in batches]
        im = ax.imshow(grid, cmap="RdYlGn_r", vmin=-20, vmax=20, aspect="auto")
        for i, b in enumerate(batches):
            for j, d in enumerate(demands):
                io = 100 * float(runs[(b, w, d)]["in_order"]["stall_fraction"])
                la = 100 * float(runs[(b, w, d)]["latency_aware"]["stall_fraction"])
                ax.text(j, i, f"{io:.1f} -> {la:.1f}%", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(demands)), [f"{d:.0%}" for d in demands])
        ax.set_yticks(range(len(batches)), [str(b) for b in batches])
        ax.set_xlabel("trainer demand (share of CPU capacity)")
        ax.set_ylabel("batch size")
        ax.set_title(f"window (prefetch_batches) = {w}")
    fig.suptitle("stall fraction, in_order -> latency_aware (green: latency_aware stalls less)")
    fig.colorbar(im, ax=axes[0].tolist(), label="stall difference (percentage points)")
    fig.savefig(out, dpi=110, bbox_inches="tight")


def main():
    csv_path, prefix = sys.argv[1], sys.argv[2]
    runs = load(csv_path)
    with open(prefix + ".md", "a") as f:
        f.write(table(runs) + "\n\n![map](latency_map.png)\n")
    heatmap(runs, prefix + ".png")


main()
