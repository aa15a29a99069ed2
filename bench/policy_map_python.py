#!/usr/bin/python3
"""The map's cell for conveyor.DataLoader over a Python Dataset (bench/policy_map.sh, issue 50):
for each batch size, the loader's step-0 rate (latency_aware, prefetch_factor 2) is its
capacity; then, per prefetch_factor and demand (a share of that capacity), both policies
alternating, each on a fresh loader: the trainer's stall share (waits after the first batch over
the time after it) and samples/s. One CSV row per run, appended to --csv in the map's columns
(recipe "python", GPUs 1: a DataLoader is one trainer's), with the indices each epoch lacked
(lost) and gave twice (duplicates) as the trainer counted them. The Dataset:
bench/python_dataset.py's heavy tail (dataset[i] sleeps a cost around 5 ms, 1% at 20x).

  PYTHONPATH=build-ci/python CONVEYOR_NODE=build-ci/apps/conveyor-node/conveyor-node \\
    /usr/bin/python3 bench/policy_map_python.py --csv FILE --load idle|busy
    [--samples 400] [--batches 8,32] [--prefetch 1,4] [--demands 0.70,0.85,1.00]
"""
import argparse
import collections
import os
import sys
import time

import conveyor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_dataset  # noqa: E402  (the datasets and the timed loop of issue 47's benchmark)


def numbers(kind):
    return lambda text: [kind(x) for x in text.split(",") if x]


def timed(dataset, args, batch, prefetch, policy, step_s):
    """One fresh loader over args.epochs epochs, `step_s` of 'training' per batch: (stall share
    and samples/s after the first batch, hand-offs, indices lost, indices given twice)."""
    loader = conveyor.DataLoader(dataset, batch_size=batch, num_workers=args.workers,
                                 prefetch_factor=prefetch, policy=policy, seed=1)
    lost = duplicates = samples = 0
    stall, first = 0.0, None
    try:
        for _ in range(args.epochs):
            seen = collections.Counter()
            waited = time.perf_counter()
            for _, index in loader:
                now = time.perf_counter()
                seen.update(int(i) for i in index)
                if first is None:
                    first = now
                else:
                    stall += now - waited
                    samples += len(index)
                time.sleep(step_s)
                waited = time.perf_counter()
            lost += len(dataset) - len(seen)
            duplicates += sum(seen.values()) - len(seen)
        elapsed = time.perf_counter() - first
        handoffs = loader.report().get("handoffs", 0)
    finally:
        loader.close()
    return stall / elapsed, samples / elapsed, handoffs, lost, duplicates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", required=True)
    parser.add_argument("--load", required=True, help="the machine's condition, as recorded")
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batches", type=numbers(int), default=[8, 32])
    parser.add_argument("--prefetch", type=numbers(int), default=[1, 4])
    parser.add_argument("--demands", type=numbers(float), default=[0.70, 0.85, 1.00])
    args = parser.parse_args()
    dataset = python_dataset.HeavyTailed(args.samples, 5.0)
    cell = 0
    with open(args.csv, "a") as out:
        for batch in args.batches:
            capacity = timed(dataset, args, batch, 2, "latency_aware", 0)[1]
            print(f"python {args.load} batch {batch}: capacity {capacity:.1f} samples/s",
                  flush=True)
            for prefetch in args.prefetch:
                for demand in args.demands:
                    step_s = batch / (demand * capacity)
                    order = ["in_order", "latency_aware"]
                    if cell % 2:
                        order.reverse()
                    cell += 1
                    for policy in order:
                        stall, rate, handoffs, lost, duplicates = timed(
                            dataset, args, batch, prefetch, policy, step_s)
                        print(f"python {args.load} batch {batch} prefetch {prefetch} demand "
                              f"{demand:.2f} {policy}: stall {stall:.4f}, {rate:.1f} samples/s",
                              flush=True)
                        row = ["python", args.load, 1, batch, prefetch, f"{demand:.2f}", policy,
                               f"{1000 * step_s:.3f}", f"{stall:.6f}", f"{rate:.3f}",
                               handoffs, lost, duplicates]
                        out.write(",".join(str(x) for x in row) + "\n")
                        out.flush()


if __name__ == "__main__":
    main()
