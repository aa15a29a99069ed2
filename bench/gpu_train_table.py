#!/usr/bin/env python3
"""The Markdown table of bench/gpu_train.py's JSON lines (one line per feed): each feed's rate
against the synthetic feed's, its data stall against the dataloader feed's. Needs no torch, so
that a report written under a time limit (bench/gpu_figures.sh's steps) does not pay for its
import after the last feed.

usage: gpu_train_table.py RUNS.jsonl
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_format import fmt, pct  # noqa: E402


def table(runs):
    """The table of `runs` (gpu_train.py's JSON lines, parsed), under its one-line caption."""
    ceiling = next((r["samples_per_s"] for r in runs if r["feed"] == "synthetic"), None)
    torch_stall = next((r["fetch_wait_share"] for r in runs if r["feed"] == "dataloader"), None)
    first = runs[0]
    out = [f"{first['model']} on {first['device_name']} (torch {first['torch']}), batch "
           f"{first['batch']}, {first['steps']} timed steps after {first['warmup']}, "
           f"amp {first['amp']}, {first['memory_format']}; busy by {first['busy_method']}", "",
           f"| feed | {first['unit']}/s | vs synthetic | data stall (fetch wait) | vs dataloader "
           "| device busy | device idle | GPU util (nvidia-smi) | served dtype |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        vs = fmt(r["samples_per_s"] / ceiling, 3) if ceiling else "n/a"
        vs_torch = fmt(r["fetch_wait_share"] / torch_stall, 3) if torch_stall else "n/a"
        util = "n/a" if r["gpu_util"] is None else f"{r['gpu_util']:.1f}% ({r['gpu_util_samples']})"
        rate = fmt(r["samples_per_s"], 1 if r["samples_per_s"] >= 10 else 3)
        out.append(f"| {r['feed']} | {rate} | {vs} | "
                   f"{pct(r['fetch_wait_share'])} | {vs_torch} | {pct(r['busy_share'])} | "
                   f"{pct(1 - r['busy_share'])} | {util} | {r['served_dtype'] or '-'} |")
    return "\n".join(out)


def read_runs(path):
    """The JSON lines of `path`; exits naming the file and line where one is not a feed's."""
    runs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except ValueError as e:
                sys.exit(f"gpu_train_table: {path}:{number}: not JSON ({e})")
            if not isinstance(run, dict) or not {"feed", "samples_per_s"} <= run.keys():
                sys.exit(f"gpu_train_table: {path}:{number}: not a gpu_train.py line")
            runs.append(run)
    if not runs:
        sys.exit(f"gpu_train_table: {path}: no feed's line")
    return runs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    print(table(read_runs(sys.argv[1])))


if __name__ == "__main__":
    main()
