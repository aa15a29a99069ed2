#!/usr/bin/python3
"""The MLPerf UNet3D reference's input pipeline as MLPerf runs it: PyTorch's DataLoader over the
reference's PytTrain, the baseline of bench/unet3d.sh (issue 31).

usage: unet3d_dataloader.py DIR [--epochs E] [--step-ms S] [--gpus G] [--workers W]
                            [--batch-size B] [--seed N] [--cost-draws K] [--persistent-workers]

DIR holds MLPerf-layout cases, case_XXXXX_x.npy (float32 1xDxHxW) and case_XXXXX_y.npy (uint8),
as conveyor-pack --synthetic-volumes writes them; every case is a training case.

What runs is the reference's own code: PytTrain, RandBalancedCrop, RandFlip, Cast,
RandomBrightnessAugmentation, GaussianNoise and get_train_transforms come from the verbatim copy
of image_segmentation/pytorch/data_loading/pytorch_loader.py kept in
tests/python/unet3d_reference.py (_load_reference_module: checked against its git blob id). That
loader stubs the file's two torch imports: torch.utils.data.Dataset becomes `object` (Dataset
adds nothing __getitem__ needs) and torchvision's Compose a class that calls each transform in
order, as torchvision's does (torchvision is not installed here). So each sample is np.load of
x and y, RandBalancedCrop(patch_size=[128,128,128], oversampling=0.4), then Compose([RandFlip(),
Cast((np.float32, np.uint8)), RandomBrightnessAugmentation(factor=0.3, prob=0.1),
GaussianNoise(mean=0.0, std=0.1, prob=0.1)]), drawing from Python's `random` and NumPy's global
RandomState like the original.

The DataLoader is built as the reference's data_loader.py get_data_loaders builds it:
batch_size B per GPU, shuffle=True with one GPU, DistributedSampler(seed, drop_last=False) per
rank with several (set_epoch each epoch), num_workers W, drop_last=True, persistent_workers off
(the reference leaves the default: the workers start again every epoch; --persistent-workers
keeps them), pin_memory only where CUDA is available (the reference pins; there is no GPU here).
Seeded as the reference's seed_everything does (random, np.random, torch) plus a torch.Generator
for the shuffle; each worker is then seeded by PyTorch (random and np.random from the base seed
and its worker id).

Measures, printed as one JSON line:
  - samples_per_s: at trainer step 0 (the trainer takes each batch and asks for the next),
    over E epochs, counted from the end of the first batch (the first batch's wait, worker
    start-up, is left out; later epochs' worker restarts are in). samples_per_s_incl_start
    counts from the start, as conveyor-node's samples_per_s does.
  - with --step-ms S > 0, a second run of E epochs where the trainer "computes" by sleeping S ms
    per batch: stall_fraction = time waiting in next(batch) / (that + time computing), every
    batch included (as conveyor-node's trainer counts it); stall_fraction_after_first leaves
    each rank's first batch out.
  - with --cost-draws K > 0, cost_ms: per-sample cost of the reference (PytTrain.__getitem__:
    np.load of x and y + crop + transforms) in this one process, over every case K times in a
    seeded shuffled order (different draws each time): mean, p50, p90, p99, max in ms
    (nearest-rank percentiles).
With --gpus G > 1, G rank processes run at once, each with its own DataLoader of W workers over
its DistributedSampler share (G x W workers in all: on a 2-core machine, 4 workers share 2
cores), each rank's trainer on its own (no all-reduce between the ranks, like conveyor-node's
simulated trainers); samples_per_s is the ranks' samples together over the span from the first
rank's first batch to the last rank's end.
"""
import importlib.util
import json
import os
import random
import sys
import warnings

import numpy as np
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataloader_timing import (item_seconds, loader_arguments, loader_figures,  # noqa: E402
                               nearest_rank, run_ranks, time_rank)
from unet3d_user_dataset import cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_FILE = os.path.join(HERE, "..", "tests", "python", "unet3d_reference.py")
PATCH_SIZE = [128, 128, 128]  # the reference's runtime/arguments.py --input_shape default
OVERSAMPLING = 0.4  # --oversampling default


def load_reference():
    """The namespace of the verbatim reference file (see the module docstring)."""
    spec = importlib.util.spec_from_file_location("unet3d_reference", REFERENCE_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._load_reference_module()


def seed_everything(seed):
    """The reference's runtime/distributed_utils.py seed_everything."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_dataset(ref, images, labels):
    return ref["PytTrain"](images, labels, patch_size=PATCH_SIZE, oversampling=OVERSAMPLING)


def make_loader(dataset, args, rank):
    sampler = None
    if args.gpus > 1:
        sampler = DistributedSampler(dataset, num_replicas=args.gpus, rank=rank, seed=args.seed,
                                     drop_last=False)
    generator = torch.Generator()
    generator.manual_seed(args.seed + rank)
    return DataLoader(dataset, batch_size=args.batch_size, shuffle=sampler is None,
                      sampler=sampler, num_workers=args.workers,
                      pin_memory=torch.cuda.is_available(), drop_last=True,
                      persistent_workers=args.persistent_workers and args.workers > 0,
                      generator=generator)


def train_rank(ref, images, labels, args, rank, step_s, start_barrier=None):
    """One rank's trainer over args.epochs epochs (dataloader_timing.time_rank)."""
    seed_everything(args.seed + rank)
    loader = make_loader(make_dataset(ref, images, labels), args, rank)
    set_epoch = loader.sampler.set_epoch if args.gpus > 1 else None
    return time_rank(loader, args.epochs, step_s, rank, start_barrier, set_epoch)


def run_loader(ref, images, labels, args, step_ms):
    """The DataLoader run(s) at one step time; one dict of figures."""
    step_s = step_ms / 1000.0
    ranks = run_ranks(
        lambda rank, barrier: train_rank(ref, images, labels, args, rank, step_s, barrier),
        args.gpus)
    return loader_figures(ranks, step_ms)


def sample_costs(ref, images, labels, args):
    """Per-sample cost of PytTrain.__getitem__ in this process, each case args.cost_draws times."""
    seed_everything(args.seed)
    dataset = make_dataset(ref, images, labels)
    costs = sorted(s * 1000.0 for s in item_seconds(dataset, args.cost_draws, args.seed))
    return {"samples": len(costs), "mean": round(sum(costs) / len(costs), 2),
            "p50": round(nearest_rank(costs, 50), 2), "p90": round(nearest_rank(costs, 90), 2),
            "p99": round(nearest_rank(costs, 99), 2), "max": round(costs[-1], 2)}


def main():
    parser = loader_arguments(__doc__.split("\n\n")[0], "case", 2,
                              "MLPerf-layout case directory")
    args = parser.parse_args()
    if args.gpus < 1 or args.epochs < 1 or args.batch_size < 1 or args.workers < 0:
        parser.error("--gpus, --epochs and --batch-size must be >= 1, --workers >= 0")
    warnings.simplefilter("ignore", DeprecationWarning)  # scipy.ndimage.measurements, in workers
    ref = load_reference()
    images, labels = cases(args.dir)
    out = {"loader": "torch.utils.data.DataLoader", "torch": torch.__version__,
           "cases": len(images), "gpus": args.gpus, "workers_per_gpu": args.workers,
           "batch_size": args.batch_size, "epochs": args.epochs, "seed": args.seed,
           "persistent_workers": bool(args.persistent_workers),
           "pin_memory": torch.cuda.is_available()}
    if not args.skip_rate:
        out["step0"] = run_loader(ref, images, labels, args, 0.0)
        out["samples_per_s"] = out["step0"]["samples_per_s"]
    if args.step_ms > 0:
        out["stepped"] = run_loader(ref, images, labels, args, args.step_ms)
        out["stall_fraction"] = out["stepped"]["stall_fraction"]
    if args.cost_draws > 0:
        out["cost_ms"] = sample_costs(ref, images, labels, args)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
