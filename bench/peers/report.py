"""Turns bench/peers/run.sh's JSON lines into PREFIX.csv (one row per run), a Markdown table of
medians over rounds with the issue's targets (appended to PREFIX.md) and PREFIX.png.
Usage: report.py RUNS.jsonl PREFIX"""
import csv
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TORCH = ("torch", "cv2", "full")  # the reference of "x torch": DataLoader as its recipes write it
COLUMNS = ["round", "demand", "step_ms", "contender", "policy", "decode", "samples",
           "samples_per_s", "wall_s", "epoch2_s", "stall_fraction", "epoch2_stall_fraction",
           "tree_peak_rss_mb", "tree_peak_pss_mb", "cpu_ms_per_sample", "cores_used", "lost",
           "duplicates", "rc"]


def label(key):
    kind, policy, decode = key
    if kind == "ceiling":
        return "bare-loop ceiling" + (", scaled decode" if decode == "scaled" else "")
    if kind == "torch":
        return f"PyTorch DataLoader, {'TurboJPEG' if policy == 'turbojpeg' else policy} decode"
    return f"conveyor-node {policy}" + (", scaled decode" if decode == "scaled" else "")


def derived(run):
    """One run's row: its own fields plus the epoch-2 and per-sample figures."""
    ends, stalls = run.get("epoch_end_s", []), run.get("epoch_stall_s", [])
    if "wall_s" not in run:  # the contender failed before it printed its figures
        epoch2 = stall2 = None
    elif len(ends) >= 2:
        epoch2 = ends[1] - ends[0]
        stall2 = stalls[1] / epoch2 if epoch2 > 0 else None
    else:  # the ceiling runs its epochs back to back: no boundary to time
        epoch2, stall2 = run["wall_s"] / run["epochs"], None
    trainer = run["contender"] != "ceiling" and run["demand"] > 0
    row = {k: run.get(k) for k in COLUMNS}
    if "wall_s" not in run:  # only the sampler's figures, of a process that did no work
        row.update(tree_peak_rss_mb=None, tree_peak_pss_mb=None)
    row.update(
        epoch2_s=epoch2,
        stall_fraction=run.get("stall_fraction") if trainer else None,
        epoch2_stall_fraction=stall2 if trainer else None,
        cpu_ms_per_sample=1000 * run["cpu_s"] / run["samples"] if run.get("samples") else None,
        cores_used=run["cpu_s"] / run["wall_s"] if run.get("wall_s") else None,
        lost=run.get("lost", run.get("failed", 0)),
    )
    return row


def load(path):
    with open(path) as f:
        return [derived(json.loads(line)) for line in f if line.strip()]


def key_of(row):
    return row["contender"], row["policy"], row["decode"]


def add_ratios(rows):
    """Each run's samples/s over that of the ceiling with the same decode (torch: the full one)
    and torch's of the same round (and demand), and its samples per CPU-second over the
    ceiling's."""
    ceilings = [r for r in rows if r["contender"] == "ceiling"]
    ceiling = {(r["round"], r["decode"]): r["samples_per_s"] for r in ceilings}
    ceiling_cpu = {(r["round"], r["decode"]): r["cpu_ms_per_sample"] for r in ceilings}
    torch = {(r["round"], r["demand"]): r["samples_per_s"] for r in rows if key_of(r) == TORCH}
    for r in rows:
        same = (r["round"], r["decode"])
        c, t, mine = ceiling.get(same), torch.get((r["round"], r["demand"])), r["samples_per_s"]
        r["x_ceiling"] = mine / c if c and mine is not None else None
        r["x_torch"] = mine / t if t and mine is not None and r["contender"] != "ceiling" else None
        c_cpu, mine_cpu = ceiling_cpu.get(same), r["cpu_ms_per_sample"]
        r["x_ceiling_cpu"] = c_cpu / mine_cpu if c_cpu and mine_cpu else None


def medians(rows):
    """{(demand, key): {field: median over rounds}}, None where no run has the field."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["demand"], key_of(r))].append(r)
    out = {}
    for group, runs in groups.items():
        out[group] = {f: median([r[f] for r in runs]) for f in runs[0] if f not in
                      ("contender", "policy", "decode", "round")}
        out[group]["runs"] = len(runs)
        out[group]["failed"] = sum(1 for r in runs if r["rc"] != 0 or r["lost"] or r["duplicates"])
    return out


def median(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def fmt(value, spec, suffix=""):
    return "—" if value is None else f"{value:{spec}}{suffix}"


def order(key):
    return (key[0] == "torch", key[0] != "ceiling", key[2], key[1])


def table(med):
    lines = [
        "| demand | step (ms) | contender | samples/s | x ceiling | x torch | epoch 2 (s) "
        "| stall, run | stall, epoch 2 | peak RSS, tree (MB) | peak PSS, tree (MB) "
        "| CPU ms / sample | cores used | runs (failed) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for demand, key in sorted(med, key=lambda g: (g[0], order(g[1]))):
        m = med[(demand, key)]
        lines.append(
            f"| {'step 0' if demand == 0 else f'{demand:.0%}'} | {m['step_ms']:.1f} | {label(key)} "
            f"| {fmt(m['samples_per_s'], '.1f')} | {fmt(m['x_ceiling'], '.3f')} "
            f"| {fmt(m['x_torch'], '.2f')} | {fmt(m['epoch2_s'], '.2f')} "
            f"| {fmt(pct(m['stall_fraction']), '.1f', '%')} "
            f"| {fmt(pct(m['epoch2_stall_fraction']), '.1f', '%')} "
            f"| {fmt(m['tree_peak_rss_mb'], '.0f')} | {fmt(m['tree_peak_pss_mb'], '.0f')} "
            f"| {fmt(m['cpu_ms_per_sample'], '.2f')} | {fmt(m['cores_used'], '.2f')} "
            f"| {m['runs']} ({m['failed']}) |")
    return "\n".join(lines)


def pct(value):
    return None if value is None else 100 * value


def verdict(ok):
    return "n/a" if ok is None else ("met" if ok else "NOT met")


def targets(med):
    """The issue's targets, one line each, from the medians."""
    nodes = sorted({k for _, k in med if k[0] == "node"}, key=order)
    lines = ["## Targets (2-core machine, heavy-tailed set; PyTorch: its cv2 row)", ""]
    for k in nodes:
        m = med.get((0, k), {})
        x = m.get("x_ceiling")
        lines.append(f"- step 0, {label(k)} >= 0.95 x the ceiling with the same decode: "
                     f"{fmt(x, '.3f')} ({verdict(None if x is None else x >= 0.95)}; per "
                     f"CPU-second: {fmt(m.get('x_ceiling_cpu'), '.3f')})")
        if k[2] == "scaled":
            x = m.get("x_torch")
            lines.append(f"- step 0, {label(k)} >= 2 x PyTorch's samples/s: {fmt(x, '.2f')} "
                         f"({verdict(None if x is None else x >= 2)})")
    if not any(k[2] == "scaled" for k in nodes):
        lines.append("- step 0, scaled decode >= 2 x PyTorch: not measured (no `scaled` decode)")
    if not any(d == 0.85 for d, _ in med):
        lines.append("- demand 85%: not measured (not among DEMANDS)")
    for field, span in (("stall_fraction", "over the run"),
                        ("epoch2_stall_fraction", "in epoch 2")):
        if not any(d == 0.85 for d, _ in med):
            break
        torch85 = med.get((0.85, TORCH), {}).get(field)
        for k in nodes:
            s = med.get((0.85, k), {}).get(field)
            ok = None if s is None or torch85 is None else s <= 0.02 and torch85 > 0.10
            lines.append(f"- demand 85%, {label(k)}: stall {span} {fmt(pct(s), '.1f', '%')} <= 2% "
                         f"where PyTorch's is {fmt(pct(torch85), '.1f', '%')} > 10%: {verdict(ok)}")
    for field, name in (("tree_peak_pss_mb", "PSS"), ("tree_peak_rss_mb", "RSS")):
        torch_peak = peak(med, TORCH, field)
        for k in nodes:
            p = peak(med, k, field)
            ok = None if p is None or torch_peak is None else p < torch_peak
            lines.append(f"- peak {name} (highest median over demands), {label(k)}: "
                         f"{fmt(p, '.0f')} MB < PyTorch's {fmt(torch_peak, '.0f')} MB: "
                         f"{verdict(ok)}")
    return "\n".join(lines)


def peak(med, key, field):
    values = [m[field] for (_, k), m in med.items() if k == key and m[field] is not None]
    return max(values) if values else None


def short_label(key):
    return (label(key).replace("conveyor-node ", "node ").replace(", scaled decode", ", scaled")
            .replace("PyTorch DataLoader, ", "torch, ").replace(" decode", ""))


def chart(med, out):
    keys = sorted({k for _, k in med}, key=order)
    fig, ((rate, memory), (stall_run, stall_e2)) = plt.subplots(2, 2, figsize=(14, 9))
    bars(rate, keys, [(med.get((0, k)) or {}).get("samples_per_s") for k in keys])
    rate.set_xlabel("samples/s (median)")
    rate.set_title("step 0: throughput")
    bars(memory, keys, [peak(med, k, "tree_peak_pss_mb") for k in keys], offset=-0.2)
    memory.barh([y + 0.2 for y in range(len(keys))],
                [peak(med, k, "tree_peak_rss_mb") or 0 for k in keys], height=0.4,
                color="lightgrey")
    memory.set_xlabel("MB over the process tree, highest median over demands")
    memory.set_title("peak memory: PSS (colour), RSS (grey)")
    demands = sorted({d for d, _ in med if d > 0})
    for ax, field, title in ((stall_run, "stall_fraction", "over the whole run"),
                             (stall_e2, "epoch2_stall_fraction", "in epoch 2")):
        for k in keys:
            ys = [pct(med.get((d, k), {}).get(field)) for d in demands]
            if any(y is not None for y in ys):
                ax.plot([100 * d for d in demands], [float("nan") if y is None else y for y in ys],
                        "o-", label=short_label(k), color=colour(k))
        ax.set_ylim(bottom=0)
        ax.set_xlabel("trainer demand (% of the full-decode ceiling's samples/s)")
        ax.set_ylabel("stall fraction (%)")
        ax.set_title(f"time the trainer waits for batches, {title}")
    if stall_run.get_legend_handles_labels()[0]:
        stall_run.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def bars(ax, keys, values, offset=0.0):
    """One horizontal bar per contender, in its colour; None draws nothing."""
    ys = [y + offset for y in range(len(keys))]
    ax.barh(ys, [v or 0 for v in values], height=0.4 if offset else 0.8,
            color=[colour(k) for k in keys])
    ax.set_yticks(list(range(len(keys))), [short_label(k) for k in keys])
    ax.invert_yaxis()


def colour(key):
    if key[0] == "ceiling":
        return "grey" if key[2] == "full" else "darkgrey"
    if key == TORCH:
        return "tab:red"
    if key[0] == "torch":
        return "tab:orange"
    return {("in_order", "full"): "tab:blue", ("latency_aware", "full"): "tab:green",
            ("in_order", "scaled"): "tab:cyan", ("latency_aware", "scaled"): "tab:olive"
            }.get(key[1:], "tab:purple")


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS + ["x_ceiling", "x_torch", "x_ceiling_cpu"])
        writer.writeheader()
        writer.writerows(rows)


NOTES = """
How to read it:
- samples/s: samples delivered / wall time of the whole run (both epochs, start-up included:
  the node's actors, torch's worker processes). x ceiling and x torch are medians of per-round
  ratios (the contenders of one round ran back to back): x ceiling against the ceiling with
  the same decode (torch: the full one), x torch against the cv2 row. epoch 2 (s): the second
  epoch alone, as the trainer saw it (the ceiling has no epoch boundary: wall time / epochs).
- stall: the time the simulated trainer waited for batches / (that + its steps), over the run
  (as conveyor-node reports it; it includes the wait for the first batch) and over epoch 2
  alone (waits / epoch time). Not defined at step 0.
- peak RSS / PSS: sampled from outside (bench/peers/measure.py) over the contender's whole
  process tree, the same way for all; PSS shares pages between forked workers fairly, RSS
  counts them once per process. CPU ms / sample: user + system time of the tree / samples
  (torch's includes starting Python and importing torch); cores used: that time / wall time.
- runs (failed): runs that exited non-zero, lost or duplicated a sample within an epoch.
"""


def busy_note(rows):
    """A warning when the ceiling did not get every core: then samples/s compares CPU shares."""
    cores = [r["cores_used"] for r in rows if r["contender"] == "ceiling" and r["cores_used"]]
    busy = sum(1 for c in cores if c < 0.9 * os.cpu_count())
    if not busy:
        return ""
    return (f"\n**Other work shared the machine** in {busy} of {len(cores)} ceiling runs (they "
            f"used fewer than {0.9 * os.cpu_count():.1f} cores): samples/s then compares the CPU "
            "shares the contenders won as much as their efficiency; samples per CPU-second (CPU "
            "ms / sample) is the steadier comparison.\n")


def main():
    rows = load(sys.argv[1])
    prefix = sys.argv[2]
    add_ratios(rows)
    write_csv(rows, prefix + ".csv")
    med = medians(rows)
    name = prefix.rsplit("/", 1)[-1]
    with open(prefix + ".md", "a") as f:
        f.write("\n" + table(med) + "\n" + busy_note(rows) + NOTES + "\n" + targets(med) + "\n\n"
                f"![peers]({name}.png)\n")
    chart(med, prefix + ".png")


main()
