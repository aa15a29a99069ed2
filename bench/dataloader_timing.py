"""What the DataLoader baselines share (bench/unet3d_dataloader.py, bench/speech_dataloader.py):
one rank's trainer loop, timing every next() and "computing" step_s per batch (a sleep: no CPU);
the ranks of a run, one in this process or G forked processes started together; and the
figures the benchmarks read from them."""
import argparse
import multiprocessing
import random
import sys
import time


def time_rank(loader, epochs, step_s, rank, start_barrier=None, set_epoch=None, on_batch=None):
    """Takes every batch of `epochs` epochs of `loader`: the wait in next() and the sleep of
    step_s. set_epoch(epoch) is called before each epoch; on_batch(batch) returns the batch's
    samples (and may record what else it wants; default: len of its first element). Returns
    the rank's timings (time.monotonic seconds) and counts."""
    count = on_batch or (lambda batch: batch[0].shape[0])
    if start_barrier is not None:
        start_barrier.wait()
    start = time.monotonic()
    first_end = None
    wait_s = first_wait_s = step_total_s = 0.0
    samples = batches = first_samples = 0
    for epoch in range(epochs):
        if set_epoch is not None:
            set_epoch(epoch)
        it = iter(loader)
        while True:
            t0 = time.monotonic()
            try:
                batch = next(it)
            except StopIteration:
                break
            t1 = time.monotonic()
            wait_s += t1 - t0
            batches += 1
            n = count(batch)
            samples += n
            if first_end is None:
                first_end, first_wait_s, first_samples = t1, t1 - t0, n
            if step_s > 0:
                time.sleep(step_s)
                step_total_s += time.monotonic() - t1
        del it
    end = time.monotonic()
    return {"rank": rank, "start": start, "first_end": first_end, "end": end,
            "samples": samples, "batches": batches, "first_samples": first_samples,
            "wait_s": wait_s, "first_wait_s": first_wait_s, "step_s": step_total_s}


def _rank_process(train_rank, rank, barrier, queue):
    queue.put(train_rank(rank, barrier))


def run_ranks(train_rank, gpus):
    """train_rank(rank, start_barrier) for every rank: in this process for one, else each in a
    forked process of its own (it forks its own workers, so not daemonic), as one process per
    GPU, all starting together. The ranks' results, in rank order of arrival."""
    if gpus == 1:
        return [train_rank(0, None)]
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(gpus), ctx.Queue()
    procs = [ctx.Process(target=_rank_process, args=(train_rank, r, barrier, queue))
             for r in range(gpus)]
    for p in procs:
        p.start()
    ranks = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit("a rank process failed")
    return ranks


def loader_figures(ranks, step_ms):
    """The run's figures: samples/s from the first batch on (and from the start), the stall
    (every batch, and without each rank's first), wall and first-batch times."""
    samples = sum(r["samples"] for r in ranks)
    after_first = samples - sum(r["first_samples"] for r in ranks)
    t_start = min(r["start"] for r in ranks)
    t_first = min(r["first_end"] for r in ranks)
    t_end = max(r["end"] for r in ranks)
    wait = sum(r["wait_s"] for r in ranks)
    first_wait = sum(r["first_wait_s"] for r in ranks)
    step = sum(r["step_s"] for r in ranks)
    out = {
        "step_ms": step_ms,
        "samples": samples,
        "batches": sum(r["batches"] for r in ranks),
        "wall_s": round(t_end - t_start, 3),
        "first_batch_s": round(t_first - t_start, 3),
        "samples_per_s": (round(after_first / (t_end - t_first), 3)
                          if after_first > 0 and t_end > t_first else None),
        "samples_per_s_incl_start": round(samples / (t_end - t_start), 3),
        "stall_s": round(wait, 3),
    }
    if step_ms > 0:
        out["stall_fraction"] = round(wait / (wait + step), 4)
        out["stall_fraction_after_first"] = round(
            (wait - first_wait) / (wait - first_wait + step), 4)
    return out


def nearest_rank(sorted_values, p):
    """The nearest-rank p-th percentile (as core/metrics/latency_tracker.hpp computes it)."""
    k = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(k) - 1]


def loader_arguments(description, sample, batch_size, directory):
    """The command line both baselines take: DIR, --epochs, --step-ms, --gpus, --workers,
    --batch-size (of `sample`s, default `batch_size`), --seed, --cost-draws, --skip-rate,
    --persistent-workers; a script adds its own before parsing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dir", help=directory)
    parser.add_argument("--epochs", type=int, default=1, help="epochs per DataLoader run (1)")
    parser.add_argument("--step-ms", type=float, default=0.0,
                        help="also run with a trainer sleeping this long per batch (0: no)")
    parser.add_argument("--gpus", type=int, default=1, help="simulated ranks (1)")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers per rank (2)")
    parser.add_argument("--batch-size", type=int, default=batch_size,
                        help=f"{sample}s per batch per GPU ({batch_size})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost-draws", type=int, default=0,
                        help=f"per-sample cost: each {sample} this many times (0: not measured)")
    parser.add_argument("--skip-rate", action="store_true",
                        help="leave out the step-0 run (with --step-ms or --cost-draws)")
    parser.add_argument("--persistent-workers", action="store_true",
                        help="keep the workers across epochs")
    return parser


def item_seconds(dataset, draws, seed):
    """Each item of `dataset` `draws` times, in a seeded shuffled order (different draws each
    time), in this process: the seconds each __getitem__ took."""
    order = [i for _ in range(draws) for i in range(len(dataset))]
    random.Random(seed).shuffle(order)
    seconds = []
    for i in order:
        t0 = time.perf_counter()
        dataset[i]
        seconds.append(time.perf_counter() - t0)
    return seconds
