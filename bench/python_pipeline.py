#!/usr/bin/python3
"""One run of bench/python_pipeline.sh: a topology's batches taken by Python, either through
conveyor.Pipeline in this process or from conveyor-node serving conveyor.attach, with the same
settings. The trainer only iterates and releases (it never reads the arrays).

usage: python_pipeline.py pipeline|node TOPOLOGY SETTINGS_JSON
SETTINGS_JSON: {"dataset.path": ..., "pipeline.batch_size": 8, ...}, as conveyor.Pipeline's
`set` (and --set for the node). Environment (node): CONVEYOR_NODE, the program.
Prints one JSON line: mode, samples, steady_s and steady_samples_per_s (from the first batch to
the last: start-up left out), whole_s and whole_samples_per_s (from the start, the pipeline's
opening or the node's start, to the last batch; the close and the node's exit left out).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import conveyor


def iterate(source, gpu_args):
    """Takes every batch of every epoch: (samples, the first batch's size, the times of the
    first batch and of the last)."""
    samples = first_size = 0
    first = None
    for e in range(source.epochs):
        for b in source.epoch(e, *gpu_args):
            if first is None:
                first, first_size = time.monotonic(), len(b)
            samples += len(b)
            b.release()
    return samples, first_size, first, time.monotonic()


def run_pipeline(topology, values):
    with conveyor.Pipeline(topology, set=values) as p:
        return iterate(p, (0,))


def run_node(topology, values):
    with tempfile.TemporaryDirectory(prefix="conveyor-bench.") as work:
        socket = os.path.join(work, "n.sock")
        command = [os.environ["CONVEYOR_NODE"], "--topology", topology,
                   "--set", f"serve.socket={socket}"]
        for key, value in values.items():
            command += ["--set", f"{key}={json.dumps(value)}"]
        with open(os.path.join(work, "node.err"), "w+") as err:
            node = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
            try:
                with conveyor.attach(socket, timeout=120) as feed:
                    got = iterate(feed, ())
                if node.wait(timeout=120) != 0:
                    err.seek(0)
                    sys.exit(f"conveyor-node failed:\n{err.read()[-3000:]}")
                return got
            finally:
                if node.poll() is None:
                    node.kill()
                    node.wait()


def main():
    mode, topology, values = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    start = time.monotonic()
    run = run_pipeline if mode == "pipeline" else run_node
    samples, first_size, first, last = run(topology, values)
    steady = last - first
    print(json.dumps({"mode": mode, "samples": samples, "steady_s": steady,
                      "steady_samples_per_s": (samples - first_size) / steady,
                      "whole_s": last - start, "whole_samples_per_s": samples / (last - start)}))


if __name__ == "__main__":
    main()
