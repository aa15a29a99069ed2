"""Runs one contender and measures it from the outside, the same way for every contender.

    measure.py [--interval S] [--tag KEY=VALUE]... -- COMMAND...

COMMAND prints one JSON object as the last line of its stdout. This prints that object with
these fields added:
  tree_peak_rss_mb  peak of the summed RSS of COMMAND's process tree (the process and every
                    descendant alive at the sample), sampled every --interval seconds. Pages
                    shared between processes (forked workers, shared-memory batches) count
                    once per process that maps them, so this overstates multi-process loaders.
  tree_peak_pss_mb  the same with PSS (/proc/PID/smaps_rollup): each shared page is divided
                    among the processes that map it, so the sum is the tree's real footprint.
                    Reading smaps_rollup walks every mapping (~50 ms of CPU for a DataLoader
                    with two workers), so PSS is read only when the tree's RSS has grown 2%
                    past its value at the last PSS reading, and only while the sampler has
                    spent under 2% of one core: the PSS peak is taken near the RSS peak.
  pss_samples       how many PSS readings that made.
  cpu_s             user + system CPU seconds of COMMAND and its waited-for descendants.
  sampler_cpu_s     what this sampler itself spent, for honesty: it shares the cores.
  rc                COMMAND's exit status.
  KEY               each --tag (VALUE as JSON where it parses, else as a string).
A short-lived peak between two samples can be missed; an RSS sample costs under a millisecond.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def children(pid):
    """The direct children of pid (all its threads' children), [] once it is gone."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return kids


def process_tree(root):
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children(pid))
    return tree


def rss_kib(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE_KIB


def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def tree_kib(root, read):
    total = 0
    for pid in process_tree(root):
        try:
            total += read(pid)
        except (OSError, ValueError, IndexError):
            pass  # exited between listing and reading
    return total


class tree_sampler(threading.Thread):
    """Samples the tree of `pid` until stop(); keeps the peaks in KiB."""

    pss_growth = 1.02  # read PSS again once the tree's RSS grew this much since the last reading
    max_cpu_share = 0.02  # of one core, for PSS readings

    def __init__(self, pid, interval):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = self.pss_samples = 0
        self.cpu_s = 0.0
        self._done = threading.Event()

    def run(self):
        cpu0, wall0 = time.thread_time(), time.monotonic()
        rss_at_pss = 0
        while not self._done.is_set():
            rss = tree_kib(self.pid, rss_kib)
            self.peak_rss = max(self.peak_rss, rss)
            affordable = (time.thread_time() - cpu0 <=
                          self.max_cpu_share * (time.monotonic() - wall0))
            if rss > rss_at_pss * self.pss_growth and (affordable or self.pss_samples == 0):
                self.peak_pss = max(self.peak_pss, tree_kib(self.pid, pss_kib))
                self.pss_samples += 1
                rss_at_pss = rss
            self._done.wait(self.interval)
        self.cpu_s = time.thread_time() - cpu0

    def stop(self):
        self._done.set()
        self.join()


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def tag(text):
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--tag", type=tag, action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    sampler = tree_sampler(proc.pid, args.interval)
    sampler.start()
    out = proc.stdout.read()
    # Stop sampling before reaping: a reaped pid could be reused by another process.
    sampler.stop()
    rc = proc.wait()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = last_json_line(out)
    result.update(
        tree_peak_rss_mb=round(sampler.peak_rss / 1024, 1),
        tree_peak_pss_mb=round(sampler.peak_pss / 1024, 1),
        cpu_s=round(used.ru_utime + used.ru_stime, 3),
        pss_samples=sampler.pss_samples,
        sampler_cpu_s=round(sampler.cpu_s, 3),
        rc=rc,
    )
    result.update(args.tag)
    print(json.dumps(result))
    return rc


if __name__ == "__main__":
    sys.exit(main())
