#!/usr/bin/env python3
"""Where a loader's CPU goes over a user's Dataset: torchvision's ImageFolder training recipe
(bench/train_tasks.py's ImageTask: PIL decode, RandomResizedCrop(224), flip, ToTensor,
Normalize) under torch's DataLoader or conveyor.DataLoader with the same arguments, epochs of
batches taken with no training step. Prints one JSON line: images/s from the second batch on
(start-up not timed) and, over the same span, the CPU seconds of every process of the tree
(psutil), summed by role: the trainer, the worker processes, the node.

usage: python_loader_cpu.py --loader torch|conveyor --data IMAGE_FOLDER [--workers 2]
                            [--batch 32] [--epochs 3] [--stragglers N]
       python_loader_cpu.py --loader serial --data IMAGE_FOLDER   (dataset[i] in a loop: the
                            Dataset's own cost per image on one core)

The figures of bench/results/python_dataset.md's last section, old and new builds alternating
(PYTHONPATH and CONVEYOR_NODE naming each build's package and node).
"""
import argparse
import json
import os
import sys
import time

import psutil
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_tasks import ImageTask  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--loader", required=True, choices=("torch", "conveyor", "serial"))
    p.add_argument("--data", required=True, help="an ImageFolder directory")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--stragglers", type=int, help="conveyor.DataLoader's (default: its own)")
    return p.parse_args()


def role(pid, name):
    if pid == os.getpid():
        return "trainer"
    return "node" if name == "conveyor-node" else "workers"


def tree_cpu():
    """{pid: (role, user + system CPU seconds)} of this process and its descendants."""
    me = psutil.Process()
    out = {}
    for p in [me] + me.children(recursive=True):
        try:
            c = p.cpu_times()
            out[p.pid] = (role(p.pid, p.name()), c.user + c.system)
        except psutil.Error:
            pass  # ended meanwhile
    return out


def serial(dataset):
    torch.set_num_threads(1)  # as a DataLoader worker
    t0 = time.perf_counter()
    for i in range(len(dataset)):
        dataset[i]
    dt = time.perf_counter() - t0
    return {"loader": "serial", "images": len(dataset), "images_per_s": round(len(dataset) / dt, 1),
            "ms_per_image": round(1000 * dt / len(dataset), 2)}


def loaded(args, dataset):
    if args.loader == "torch":
        make, extra = torch.utils.data.DataLoader, {}
    else:
        import conveyor
        make = conveyor.DataLoader
        extra = {} if args.stragglers is None else {"stragglers": args.stragglers}
    loader = make(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                  drop_last=True, persistent_workers=True, **extra)
    batches = iter(loader)
    next(batches)  # the start-up is not timed
    before, t0, images = tree_cpu(), time.perf_counter(), 0
    for epoch in range(args.epochs):
        if epoch > 0:
            batches = iter(loader)
        for x, _ in batches:
            images += x.shape[0]
    dt = time.perf_counter() - t0
    after = tree_cpu()
    cpu = {}
    for pid, (r, seconds) in after.items():
        cpu[r] = cpu.get(r, 0.0) + seconds - before.get(pid, (r, 0.0))[1]
    total = sum(cpu.values())
    return {"loader": args.loader, "workers": args.workers, "images": images,
            "images_per_s": round(images / dt, 1), "cpu_s": round(total, 2),
            "cpu_ms_per_image": round(1000 * total / images, 2),
            **{f"cpu_s_{r}": round(v, 2) for r, v in sorted(cpu.items())}}


def main():
    args = parse_args()
    dataset = ImageTask("resnet50").dataset(args.data)
    print(json.dumps(serial(dataset) if args.loader == "serial" else loaded(args, dataset)))


if __name__ == "__main__":
    main()
