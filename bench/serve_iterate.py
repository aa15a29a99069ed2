#!/usr/bin/python3
"""A Python trainer that only iterates and releases: the serving benchmark's client.

usage: serve_iterate.py SOCKET [RANK [JOB]]
Prints one JSON line: samples, seconds (first attach to last batch), samples_per_s and the
hand-over latency of its batches (now - batch.ready_ns, CLOCK_MONOTONIC) p50/p99 in us.
With STEP_MS set, each batch is held that long before it is released (a training step); with
IDS_FILE set, "epoch id" of every sample is appended there (an audit of exactly-once).
"""
import json
import os
import sys
import time

import conveyor


def main():
    socket = sys.argv[1]
    rank = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    job = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    step_s = float(os.environ.get("STEP_MS", "0")) / 1000
    ids = open(os.environ["IDS_FILE"], "a") if os.environ.get("IDS_FILE") else None
    feed = conveyor.attach(socket, rank=rank, job=job, timeout=60)
    start = time.monotonic()
    samples = 0
    latencies = []
    for e in range(feed.info()["start_epoch"], feed.epochs):
        for b in feed.epoch(e):
            latencies.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC) - b.ready_ns)
            samples += len(b)
            if ids:
                ids.writelines(f"{e} {i}\n" for i in b.sample_ids)
            if step_s:
                time.sleep(step_s)
            b.release()
    seconds = time.monotonic() - start
    latencies.sort()
    pick = lambda p: latencies[int(p / 100 * (len(latencies) - 1))] / 1000 if latencies else 0
    print(json.dumps({"samples": samples, "seconds": seconds,
                      "samples_per_s": samples / seconds if seconds else 0,
                      "handover_p50_us": pick(50), "handover_p99_us": pick(99)}))
    feed.close()


if __name__ == "__main__":
    main()
