#!/usr/bin/python3
"""conveyor.DataLoader against torch's DataLoader and MinatoLoader's scheme on Datasets whose
per-sample cost is heavy-tailed (issue 47's benchmark): `--dataset sleep`, lognormal costs
around `median_ms`, 1% of samples at 20x the median; `--dataset unet3d`, the MLPerf UNet3D
reference's own PytTrain (random balanced crop 128^3, flips, brightness, noise) over generated
volumes (use --batch 2, as MLPerf does); `--dataset image`, torchvision's ImageFolder with the
ImageNet training recipe (RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize)
over generated JPEGs, 95% of ImageNet's size (500x375) and 5% of a camera's (4000x3000). Rounds alternate loaders in one
run. Figures per loader: samples/s with no training step (step 0) from the first batch on, the
time to that first batch (the loader's start), and the trainer's stall
with a simulated step sized to 85% of torch's step-0 rate (demand below supply: a loader that
holds batches back for slow samples stalls the trainer anyway).

  PYTHONPATH=build-ci/python CONVEYOR_NODE=build-ci/apps/conveyor-node/conveyor-node \\
    /usr/bin/python3 bench/python_dataset.py [--workers 2] [--rounds 3] [--samples 400]
    [--dataset sleep|unet3d|image]
Results: bench/results/python_dataset.md
"""
import argparse
import math
import os
import random
import tempfile
import threading
import time

import psutil

import torch

import conveyor
from minato_scheme import MinatoScheme


class HeavyTailed(torch.utils.data.Dataset):
    """dataset[i] sleeps a cost drawn once per index (fixed across loaders and epochs)."""

    def __init__(self, n, median_ms, seed=1):
        rng = random.Random(seed)
        self.costs = []
        for _ in range(n):
            cost = median_ms * math.exp(rng.gauss(0, 0.5))
            if rng.random() < 0.01:
                cost = 20 * median_ms
            self.costs.append(cost / 1000)

    def __len__(self):
        return len(self.costs)

    def __getitem__(self, i):
        time.sleep(self.costs[i])
        return torch.full((3, 32, 32), float(i)), i


class PeakRss:
    """The peak resident memory of this process and every process below it (the loader's
    workers; Conveyor's node and its workers), sampled every 50 ms while it is entered: RSS
    (as `ps` counts it: a page shared by n processes, a library's or a forked parent's, n times)
    and PSS (each shared page split among its processes: the memory the tree really holds)."""

    def __enter__(self):
        self.peak, self.peak_pss, self.stop = 0, 0, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        me = psutil.Process()
        while not self.stop.wait(0.05):
            total = pss = 0
            for p in [me] + me.children(recursive=True):
                try:
                    info = p.memory_full_info()
                    total += info.rss
                    pss += info.pss
                except psutil.Error:
                    pass  # ended meanwhile
            self.peak = max(self.peak, total)
            self.peak_pss = max(self.peak_pss, pss)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def run(loader, epochs, step_s):
    """(samples/s after the first batch, seconds to the first batch, stall seconds after it)
    over `epochs` epochs, `step_s` of 'training' per batch."""
    samples, stall, start = 0, 0.0, time.perf_counter()
    first = None
    for _ in range(epochs):
        waited = time.perf_counter()
        for x, _ in loader:
            now = time.perf_counter()
            if first is None:
                first = now
            else:
                stall += now - waited
                samples += len(x)
            if step_s:
                time.sleep(step_s)
            waited = time.perf_counter()
    return samples / (time.perf_counter() - first), first - start, stall


def loaders(dataset, args):
    common = dict(batch_size=args.batch, num_workers=args.workers)
    yield "torch", lambda: torch.utils.data.DataLoader(dataset, persistent_workers=True,
                                                        prefetch_factor=2, **common)
    for policy in ("in_order", "latency_aware"):
        yield f"conveyor {policy}", lambda p=policy: conveyor.DataLoader(dataset, policy=p,
                                                                          seed=1, **common)
    yield "minato scheme", lambda: MinatoScheme(dataset, args.batch, args.workers)


def unet3d_dataset(count, work):
    """The MLPerf UNet3D reference's own training Dataset (PytTrain, imported as a user's
    module: unet3d_user_dataset) over `count` generated cases: float32 images of 1 x D x H x W,
    D, H, W in 128..224, with kidney and tumour ellipsoids in the labels."""
    import numpy as np
    from unet3d_user_dataset import reference, reference_pyt_train
    ref = reference()
    rng = np.random.default_rng(47)
    images, labels = [], []
    for i in range(count):
        shape = tuple(int(s) for s in rng.integers(128, 225, size=3))
        centre = [s // 2 for s in shape]
        image, label = ref._synthetic_case(rng, shape, [
            (1, centre, [s // 4 for s in shape]),
            (2, [c + s // 8 for c, s in zip(centre, shape)], [s // 10 for s in shape])])
        images.append(os.path.join(work, f"case_{i:05d}_x.npy"))
        labels.append(os.path.join(work, f"case_{i:05d}_y.npy"))
        np.save(images[-1], image)
        np.save(labels[-1], label)
    return reference_pyt_train(work)(images, labels, patch_size=ref.PATCH_SIZE,
                                     oversampling=ref.OVERSAMPLING)


def image_dataset(count, work):
    """torchvision's ImageFolder and the ImageNet training transforms over `count` JPEGs
    written to `work` (2 classes): 95% at 500x375, 5% at 4000x3000 (decoding those is the
    slow tail); smooth gradients with noise, quality 90."""
    import numpy as np
    import torchvision
    from PIL import Image
    rng = np.random.default_rng(47)
    for c in ("a", "b"):
        os.makedirs(os.path.join(work, c))
    for i in range(count):
        w, h = (4000, 3000) if rng.random() < 0.05 else (500, 375)
        x = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
        y = np.linspace(0, 255, h, dtype=np.float32)[:, None, None]
        pixels = (x * rng.random(3) + y * rng.random(3)) / 2 + rng.normal(0, 8, (h, w, 3))
        Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(
            os.path.join(work, "ab"[i % 2], f"{i:05d}.jpg"), quality=90)
    T = torchvision.transforms
    return torchvision.datasets.ImageFolder(work, transform=T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--median-ms", type=float, default=5.0)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--dataset", choices=("sleep", "unet3d", "image"), default="sleep")
    args = parser.parse_args()
    work = tempfile.TemporaryDirectory(prefix="bench-python-dataset.")
    if args.dataset == "unet3d":
        dataset = unet3d_dataset(args.samples, work.name)
    elif args.dataset == "image":
        dataset = image_dataset(args.samples, work.name)
    else:
        dataset = HeavyTailed(args.samples, args.median_ms)
    figures = {}
    torch_rate = None
    for r in range(args.rounds):
        for name, make in loaders(dataset, args):
            with PeakRss() as rss:
                loader = make()
                rate, startup, _ = run(loader, args.epochs, 0)
            if name == "torch":
                torch_rate = rate if torch_rate is None else min(torch_rate, rate)
            step = args.batch / (0.85 * torch_rate)
            _, _, stall = run(loader, args.epochs, step)
            if hasattr(loader, "close"):
                loader.close()
            figures.setdefault(name, []).append((rate, stall, startup, rss.peak / 2**20,
                                                 rss.peak_pss / 2**20))
            print(f"round {r} {name}: {rate:.1f} samples/s at step 0 (first batch after "
                  f"{startup:.2f} s), stall {stall:.2f} s at step {step * 1000:.1f} ms, peak RSS "
                  f"{rss.peak / 2**20:.0f} MiB, PSS {rss.peak_pss / 2**20:.0f} MiB", flush=True)
    print("median over rounds:")
    base = sorted(f[0] for f in figures["torch"])[len(figures["torch"]) // 2]
    base_stall = sorted(f[1] for f in figures["torch"])[len(figures["torch"]) // 2]
    for name, rows in figures.items():
        rate = sorted(f[0] for f in rows)[len(rows) // 2]
        stall = sorted(f[1] for f in rows)[len(rows) // 2]
        startup = sorted(f[2] for f in rows)[len(rows) // 2]
        rss = max(f[3] for f in rows)
        pss = max(f[4] for f in rows)
        print(f"  {name:24s} {rate:7.1f} samples/s ({rate / base:.2f}x torch)  stall {stall:6.2f} s "
              f"({stall / base_stall if base_stall else float('nan'):.2f}x torch)  first batch "
              f"{startup:.2f} s  peak RSS {rss:.0f} MiB, PSS {pss:.0f} MiB")


if __name__ == "__main__":
    main()
