#!/usr/bin/python3
"""A trainer process for bench/speech.sh: attaches to a serving conveyor-node (the speech recipe)
with the `conveyor` module, as a Python trainer does, and takes every batch of every epoch: at
step 0 (it asks for the next batch as soon as it has one) or "computing" step_ms per batch (a
sleep: no CPU). Prints one JSON line:

  samples_per_s             from the end of the first batch to the last (the node's start-up
                            and first batch left out, as bench/speech_dataloader.py leaves out
                            its workers' start-up); samples_per_s_incl_start from the attach
  stall_fraction            time waiting in next() / (that + time computing), every batch;
                            stall_fraction_after_first without each epoch's first batch wait
  padding                   padded frames / real frames of `field` over every batch (the batch's
                            padded length x its samples / the sum of their lengths), and per
                            batch: padding_batch_mean, padding_batch_max
  report                    the node's ledger (delivered, lost, quarantined, filtered)

usage: speech_client.py SOCKET --epochs E [--step-ms S] [--field features] [--timeout 300]
"""
import argparse
import json
import sys
import time

import conveyor


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("socket")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--step-ms", type=float, default=0.0)
    parser.add_argument("--field", default="features")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    step_s = args.step_ms / 1000.0
    padded = real = 0
    per_batch = []
    samples = batches = first_samples = 0
    wait_s = first_wait_s = step_total_s = 0.0
    first_end = None
    with conveyor.attach(args.socket, rank=0, job=0, timeout=args.timeout) as feed:
        start = time.monotonic()
        last = None
        for e in range(args.epochs):
            epoch_first = True
            it = iter(feed.epoch(e))
            while True:
                t0 = time.monotonic()
                try:
                    b = next(it)
                except StopIteration:
                    break
                t1 = time.monotonic()
                wait_s += t1 - t0
                if epoch_first:
                    first_wait_s += t1 - t0
                    epoch_first = False
                if len(b) > 0:
                    lengths = b.lengths(args.field)
                    frames = b[args.field].shape[1]
                    padded += frames * len(b)
                    real += int(lengths.sum())
                    per_batch.append(frames * len(b) / max(int(lengths.sum()), 1))
                    batches += 1
                    samples += len(b)
                if first_end is None:
                    first_end, first_samples = t1, len(b)
                if step_s > 0:
                    time.sleep(step_s)
                    step_total_s += time.monotonic() - t1
                if e + 1 == args.epochs and b.last_in_epoch:
                    last = b  # held: the node cannot finish before the report
                else:
                    b.release()
        end = time.monotonic()
        report = feed.report()
        if last is not None:
            last.release()
    out = {
        "loader": "conveyor-node (served, Python client)",
        "epochs": args.epochs, "step_ms": args.step_ms, "samples": samples, "batches": batches,
        "wall_s": round(end - start, 3),
        "samples_per_s": round((samples - first_samples) / (end - first_end), 3)
        if end > first_end else None,
        "samples_per_s_incl_start": round(samples / (end - start), 3),
        "stall_s": round(wait_s, 3),
        "padding": round(padded / max(real, 1), 4),
        "padding_batch_mean": round(sum(per_batch) / max(len(per_batch), 1), 4),
        "padding_batch_max": round(max(per_batch, default=0), 4),
        "report": {k: report[k] for k in ("delivered", "lost", "quarantined", "filtered",
                                          "duplicates")},
    }
    if step_s > 0:
        out["stall_fraction"] = round(wait_s / (wait_s + step_total_s), 4)
        out["stall_fraction_after_first"] = round(
            (wait_s - first_wait_s) / (wait_s - first_wait_s + step_total_s), 4)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
