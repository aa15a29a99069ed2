#!/usr/bin/env python3
"""Trains a model on one GPU for a fixed number of steps, fed one way, and prints one JSON line
of figures. bench/gpu_train.sh runs every feed (each in a process of its own, starting the node
where one is needed) and tabulates the lines with bench/gpu_train_table.py. What is trained (bench/train_tasks.py):
a torchvision ResNet on an ImageFolder (--model resnet50, ...), or, with --model unet3d, a small
3D U-Net on the MLPerf UNet3D reference's own Dataset (PytTrain) over a case directory.

usage: gpu_train.py --feed FEED [--data DIR] [--socket PATH] [--device cuda|cpu]
                    [--model resnet50] [--batch 128] [--steps 100] [--warmup 20] [--workers 16]
                    [--amp bf16|off] [--attach-timeout 120]

FEED (the step is the same for all: bf16 autocast, channels_last(_3d), SGD, cross-entropy):
  synthetic     random tensors of the task's shapes made once on the device: the ceiling, no
                input pipeline at all
  dataloader    PyTorch's DataLoader, --workers processes, over the task's Dataset: torchvision
                ImageFolder over --data (PIL decode), RandomResizedCrop(224) +
                RandomHorizontalFlip + ToTensor + Normalize; or (unet3d) PytTrain over the
                cases in --data; shuffle, drop_last, persistent workers, pin_memory,
                .cuda(non_blocking=True) on the training stream
  pydataset     the same user's Dataset and the same arguments given to conveyor.DataLoader
                instead: the one line a user changes; its node (CONVEYOR_NODE) runs dataset[i]
                in --workers worker processes and stragglers
  conveyor      (the image task) a conveyor-node serving --socket, attached with the Python
                module as rank 0 of job 0. The feed's shared memory is pinned once
                (feed.memory(), cudaHostRegister; "pinned" in the JSON line), each batch is
                copied to the device asynchronously on a side stream and, when it comes as
                uint8, normalized there; the training stream waits for that stream, and the
                batch is released with it at once (b.release(stream=...)): the node hears of it
                when the copy is done. Where CUDA refuses to pin the memory, the copies are
                pageable (they wait for their stream) and each batch is held until its copy is
                done. float32 batches (the node normalized them) are only copied.
Short batches (an epoch's last) are dropped by every feed, as drop_last does.

Figures, over the timed steps only (after --warmup steps that are not timed; the device is
synchronized once before and once after them, never in between):
  samples_per_s     steps x batch / wall seconds (images, or UNet3D patches)
  fetch_wait_share  the share of the wall time spent taking the next batch (time.perf_counter
                    around the fetch, the copy and normalize calls included). The CPU may run
                    ahead of the GPU, so this is the trainer's wait, not the GPU's.
  busy_share        the share of the wall time the training stream was busy: the sum over the
                    steps of the CUDA-event time from an event recorded before forward to one
                    recorded after optimizer.step (busy_method "cuda_events"); on the CPU,
                    perf_counter around the same span ("perf_counter"). 1 - busy_share is the
                    GPU's stall.
  gpu_util          mean of nvidia-smi's utilization.gpu, sampled every 200 ms during the timed
                    steps (null where there is no nvidia-smi or no CUDA)
"""
import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_tasks import MEAN, STD, make_task  # noqa: E402

FEEDS = ("synthetic", "dataloader", "pydataset", "conveyor")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--feed", choices=FEEDS, required=True)
    p.add_argument("--label", help="the feed's name in the JSON line and the table "
                                   "(default: --feed)")
    p.add_argument("--data", help="an ImageFolder directory, or (unet3d) an MLPerf-layout "
                                  "case directory (dataloader, pydataset)")
    p.add_argument("--socket", help="the node's serve.socket (conveyor)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--model", default="resnet50", help="a torchvision.models constructor, "
                                                         "or unet3d")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps before them")
    p.add_argument("--workers", type=int, default=16, help="DataLoader worker processes")
    p.add_argument("--amp", default="bf16", choices=("bf16", "off"))
    p.add_argument("--attach-timeout", type=float, default=120,
                   help="seconds to wait for the node to listen (conveyor)")
    args = p.parse_args()
    if args.feed in ("dataloader", "pydataset") and not args.data:
        p.error(f"--feed {args.feed} needs --data")
    if args.feed == "conveyor" and not args.socket:
        p.error("--feed conveyor needs --socket")
    if args.feed == "conveyor" and args.model == "unet3d":
        p.error("--feed conveyor serves the image task's batches, not --model unet3d")
    if args.steps < 1 or args.warmup < 0 or args.batch < 1:
        p.error("--steps >= 1, --warmup >= 0 and --batch >= 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: this torch sees no CUDA device (use --device cpu)")
    return args


# --- feeds: next() gives (inputs, targets) on the device, ready for the training stream --------

class SyntheticFeed:
    """The same random batch every step, made once on the device."""

    def __init__(self, task, batch, device):
        self.x, self.y = task.on_device(*task.synthetic(batch, device))

    def next(self):
        return self.x, self.y

    def close(self):
        pass


class LoaderFeed:
    """The task's Dataset in the workers of `loader` (torch's DataLoader, or conveyor.DataLoader
    given the same arguments), epoch after epoch."""

    def __init__(self, task, data, batch, workers, device, loader):
        dataset = task.dataset(data)
        if len(dataset) < batch:
            sys.exit(f"gpu_train: {data} has {len(dataset)} samples, fewer than a batch of {batch}")
        self.task = task
        self.loader = loader(
            dataset, batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
            pin_memory=device.type == "cuda", persistent_workers=workers > 0)
        self.device = device
        self.batches = self._epochs()

    def _epochs(self):
        while True:
            yield from self.loader

    def next(self):
        x, y = next(self.batches)
        return self.task.on_device(x.to(self.device, non_blocking=True),
                                   y.to(self.device, non_blocking=True))

    def close(self):
        self.batches.close()
        if hasattr(self.loader, "close"):  # conveyor.DataLoader: its node and workers
            self.loader.close()


class ConveyorFeed:
    """Batches of a serving conveyor-node, rank 0 of job 0, copied to the device on a side
    stream (normalized there when they come as uint8). From pinned feed memory a batch is
    released with that stream at once (the node hears of it when the copy is done); from
    pageable memory it is held until the next fetch and released once its copy has completed:
    the device never reads released memory."""

    def __init__(self, task, socket, batch, device, attach_timeout):
        import conveyor
        # The node's memory is read-only to its clients: torch warns, once, that it cannot
        # protect it. Nothing here writes to it.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        self.feed = conveyor.attach(socket, rank=0, job=0, timeout=attach_timeout)
        self.info = self.feed.info()
        if self.info["batch_size"] != batch:
            sys.exit(f"gpu_train: the node serves batches of {self.info['batch_size']}, "
                     f"not --batch {batch}")
        if self.info["dtype"] not in ("uint8", "float32"):
            sys.exit(f"gpu_train: the node serves {self.info['dtype']} images; this trainer "
                     "takes uint8 (to_uint8) or float32 (normalize on the CPU)")
        self.task, self.batch, self.device = task, batch, device
        self.epoch = self.info["start_epoch"]
        self.batches = iter(self.feed.epoch(self.epoch))
        cuda = device.type == "cuda"
        self.copy_stream = torch.cuda.Stream(device) if cuda else None
        self.pinned = self._pin() if cuda else None
        self.mean255 = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
        self.inv_std255 = 1 / (torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255)
        self.held = None  # (batch, the copy's event or None)

    def _pin(self):
        """Pins the feed's memory for asynchronous copies: its address, or None where CUDA
        refuses (the copies are then pageable)."""
        m = self.feed.memory()
        flags = 0 if m["writable"] else 8  # cudaHostRegisterReadOnly
        err = torch.cuda.cudart().cudaHostRegister(m["address"], m["bytes"], flags)
        if int(err) != 0:
            print(f"gpu_train: cudaHostRegister of the feed's {m['bytes']} bytes failed "
                  f"({err}): pageable copies", file=sys.stderr)
            return None
        return m["address"]

    def _next_full_batch(self):
        while True:
            try:
                b = next(self.batches)
            except StopIteration:
                self.epoch += 1
                if self.epoch >= self.feed.epochs:
                    sys.exit(f"gpu_train: the node's {self.feed.epochs} epochs ran out "
                             "(raise its trainer.epochs)")
                self.batches = iter(self.feed.epoch(self.epoch))
                continue
            if len(b) == self.batch:
                return b
            b.release()

    def _release_held(self):
        if self.held is not None:
            b, copied = self.held
            if copied is not None:
                copied.synchronize()
            b.release()
            self.held = None

    def _on_device(self, b):
        x = torch.from_numpy(b.images).to(self.device, non_blocking=True)
        y = torch.from_numpy(b.labels).to(self.device, non_blocking=True)
        if x.dtype == torch.uint8:
            x = (x.float() - self.mean255) * self.inv_std255
        return self.task.on_device(x, y)

    def next(self):
        b = self._next_full_batch()
        self._release_held()
        if self.copy_stream is None:
            x, y = self._on_device(b)
            self.held = (b, None)
            return x, y
        with torch.cuda.stream(self.copy_stream):
            x, y = self._on_device(b)
            copied = torch.cuda.Event()
            copied.record(self.copy_stream)
        training = torch.cuda.current_stream(self.device)
        training.wait_stream(self.copy_stream)
        x.record_stream(training)  # made on the copy stream, used and freed on the training one
        y.record_stream(training)
        if self.pinned is not None:
            b.release(stream=self.copy_stream.cuda_stream)  # the node hears once copied
        else:
            self.held = (b, copied)
        return x, y

    def close(self):
        self._release_held()
        self.batches = None
        if self.pinned is not None:
            torch.cuda.synchronize(self.device)
            torch.cuda.cudart().cudaHostUnregister(self.pinned)
        self.feed.close()


def open_feed(args, task, device):
    if args.feed == "synthetic":
        return SyntheticFeed(task, args.batch, device)
    if args.feed == "dataloader":
        return LoaderFeed(task, args.data, args.batch, args.workers, device,
                          torch.utils.data.DataLoader)
    if args.feed == "pydataset":
        import conveyor
        return LoaderFeed(task, args.data, args.batch, args.workers, device, conveyor.DataLoader)
    return ConveyorFeed(task, args.socket, args.batch, device, args.attach_timeout)


# --- timing ------------------------------------------------------------------------------------

class EventTimer:
    """The training stream's busy time: per step, the CUDA-event time between an event before
    forward and one after optimizer.step; read once, after the last step."""
    method = "cuda_events"

    def __init__(self):
        self.spans = []

    def start(self):
        self.begin = torch.cuda.Event(enable_timing=True)
        self.begin.record()

    def stop(self):
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self.spans.append((self.begin, end))

    def busy_s(self):
        self.spans[-1][1].synchronize()
        return sum(b.elapsed_time(e) for b, e in self.spans) / 1000


class ClockTimer:
    """The same span by perf_counter, where the work is synchronous (the CPU)."""
    method = "perf_counter"

    def __init__(self):
        self.total = 0.0

    def start(self):
        self.begin = time.perf_counter()

    def stop(self):
        self.total += time.perf_counter() - self.begin

    def busy_s(self):
        return self.total


class UtilSampler:
    """nvidia-smi's utilization.gpu of the device every 200 ms, in the background, each line
    stamped with perf_counter as it arrives."""

    def __init__(self, device):
        command = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                   "-lms", "200", "-i", smi_id(device)]
        if shutil.which("stdbuf"):
            command = ["stdbuf", "-oL"] + command  # a line as soon as it is sampled
        self.samples = []
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append((time.perf_counter(), float(line)))
            except ValueError:  # "[N/A]" and the like
                pass

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=10)

    def mean(self, t0, t1):
        """The mean utilisation (%) of the samples taken in [t0, t1], and their count."""
        inside = [v for t, v in self.samples if t0 <= t <= t1]
        return (sum(inside) / len(inside) if inside else None), len(inside)


def smi_id(device):
    """The device as nvidia-smi -i names it: CUDA_VISIBLE_DEVICES's entry for it (an index or
    a UUID, both of which -i takes), else its index."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    index = device.index or 0
    return visible[index] if index < len(visible) and visible[index] else str(index)


def start_sampler(device):
    if device.type == "cuda" and shutil.which("nvidia-smi"):
        return UtilSampler(device)
    return None


# --- training ----------------------------------------------------------------------------------

def make_model(task, device, batch):
    model = task.model(device).to(memory_format=task.layout).train()
    return model, task.optimizer(model, batch)


def train_step(task, model, optimizer, x, y, autocast):
    with autocast():
        loss = task.loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(args, task, device, feed):
    """--warmup untimed steps, then --steps timed ones: the timed steps' raw figures."""
    model, optimizer = make_model(task, device, args.batch)
    autocast = functools.partial(torch.autocast, device_type=device.type, dtype=torch.bfloat16,
                                 enabled=args.amp == "bf16")
    timer = EventTimer() if device.type == "cuda" else ClockTimer()
    sampler = None
    fetch_s = 0.0
    for step in range(args.warmup + args.steps):
        timed = step >= args.warmup
        if step == args.warmup:
            synchronize(device)  # the warm-up's work is not timed
            t0 = time.perf_counter()
        f0 = time.perf_counter()
        x, y = feed.next()
        if timed:
            fetch_s += time.perf_counter() - f0
        if step == 0:  # after the first fetch: DataLoader workers fork before its thread runs
            sampler = start_sampler(device)
        if timed:
            timer.start()
        loss = train_step(task, model, optimizer, x, y, autocast)
        if timed:
            timer.stop()
    synchronize(device)
    t1 = time.perf_counter()
    util, util_samples = sampler.mean(t0, t1) if sampler else (None, 0)
    if sampler:
        sampler.stop()
    return {"wall_s": t1 - t0, "fetch_s": fetch_s, "busy_s": timer.busy_s(),
            "busy_method": timer.method, "gpu_util": util, "gpu_util_samples": util_samples,
            "loss": float(loss)}


def run(args):
    """One feed's JSON line."""
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
        torch.backends.cudnn.benchmark = True
    task = make_task(args.model)
    feed = open_feed(args, task, device)
    t = train(args, task, device, feed)
    feed.close()
    task.close()
    wall_s = t["wall_s"]
    return {
        "feed": args.label or args.feed, "model": args.model, "unit": task.unit,
        "batch": args.batch, "steps": args.steps, "warmup": args.warmup, "amp": args.amp,
        "memory_format": str(task.layout).replace("torch.", ""),
        "device": args.device, "device_name": device_name(device),
        "torch": torch.__version__, "cpus": os.cpu_count(),
        "workers": args.workers if args.feed in ("dataloader", "pydataset") else None,
        "served_dtype": feed.info["dtype"] if isinstance(feed, ConveyorFeed) else None,
        "pinned": (feed.pinned is not None) if isinstance(feed, ConveyorFeed) else None,
        "wall_s": round(wall_s, 4), "samples_per_s": round(args.steps * args.batch / wall_s, 2),
        "fetch_wait_s": round(t["fetch_s"], 4),
        "fetch_wait_share": round(t["fetch_s"] / wall_s, 4),
        "busy_s": round(t["busy_s"], 4), "busy_share": round(t["busy_s"] / wall_s, 4),
        "busy_method": t["busy_method"],
        "gpu_util": None if t["gpu_util"] is None else round(t["gpu_util"], 1),
        "gpu_util_samples": t["gpu_util_samples"], "final_loss": round(t["loss"], 4),
    }


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads)"


def main():
    args = parse_args()
    print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
