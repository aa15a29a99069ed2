"""PyTorch's DataLoader on a Conveyor shard dataset, with conveyor-node's simulated trainer.

    /usr/bin/python3 torch_loader.py --dataset DIR [--batch-size 64] [--epochs 2]
                                     [--step-ms 0] [--workers N] [--seed 0]
                                     [--decoder cv2|turbojpeg]

The peer the benchmark compares against, set up as a careful PyTorch user would:
- Data: the same record shards conveyor-node reads (manifest.txt + shard files, format v1 of
  core/storage/shard_format.hpp), so both read the same bytes through the same page cache. Each worker
  opens the shard files itself and reads one record with one pread. Record checksums are not
  verified (conveyor-node verifies them: a few GB/s of XXH3, small against JPEG decode).
- Transforms: the ImageNet training recipe of config/default.toml in cv2 + numpy: cv2.imdecode,
  torchvision's RandomResizedCrop(224, scale (0.08, 1), ratio (3/4, 4/3)) box drawing with
  cv2.resize bilinear, horizontal flip p 0.5, normalize with ImageNet's mean/std to a float32
  RGB CHW tensor. cv2 decodes to BGR: the channels are swapped for free while normalising (a
  view), not on the full image: same values, less work, what a user who profiles would write.
- --decoder turbojpeg decodes with libjpeg-turbo's TurboJPEG API instead (Debian's
  libturbojpeg0, through ctypes; the call conveyor-node makes, straight to RGB). On the same
  bytes it gives the same pixels as cv2.imdecode with ~1.6x less CPU: it shows how much of the
  gap to the node is the decoder binding rather than the loader.
- DataLoader(batch_size, shuffle=True, num_workers=cores, persistent_workers=True,
  prefetch_factor=2, pin_memory=False: no GPU here), fork start method (Linux default),
  drop_last=False like the node. torch.set_num_threads(1) and cv2.setNumThreads(0) in the main
  process and every worker: one core per worker, no thread pools underneath (bench_ceiling and
  the node's preprocessors do the same).
- Trainer: conveyor-node's simulated trainer (apps/conveyor-node/simulated_trainer.cpp): per
  batch, time the wait for it (the stall), then sleep step_ms (no CPU used). The clock starts
  before the first iter(), so epoch 1 includes starting the workers; epoch_end_s and
  epoch_stall_s give each epoch on its own.
Prints one JSON line with conveyor-node's field names; exits 1 when a sample was lost or
delivered twice within an epoch.
"""
import argparse
import json
import math
import os
import random
import resource
import struct
import sys
import time

import ctypes
import ctypes.util

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

# core/storage/shard_format.hpp, version 1.
TRAILER = struct.Struct("<QQQQ8s")  # index_offset, record_count, index xxh3, own xxh3, magic
INDEX_ENTRY = struct.Struct("<QQ")  # offset, size (header + key + payload)
RECORD_HEADER = struct.Struct("<4sIiIQQ")  # magic, key_len, label, reserved, payload_len, xxh3

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def read_shard_index(path):
    """[(offset, size)] of every record of one shard, from its trailer and index."""
    with open(path, "rb") as f:
        f.seek(-TRAILER.size, os.SEEK_END)
        index_offset, count, _, _, magic = TRAILER.unpack(f.read(TRAILER.size))
        if magic != b"CNVYEND1":
            raise ValueError(f"{path}: not a v1 shard (bad trailer magic)")
        f.seek(index_offset)
        table = f.read(count * INDEX_ENTRY.size)
    return [INDEX_ENTRY.unpack_from(table, i * INDEX_ENTRY.size) for i in range(count)]


def read_manifest(directory):
    """The shard files of a dataset directory, in manifest order (the node's sample ids)."""
    with open(os.path.join(directory, "manifest.txt")) as f:
        return [os.path.join(directory, line.split()[1]) for line in f
                if line.startswith("shard ")]


def cv2_decode(payload):
    """(HWC uint8 image, is_bgr)."""
    return cv2.imdecode(payload, cv2.IMREAD_COLOR), True


class TurboJpeg:
    """tjDecompress2 to RGB through ctypes; one handle per process (made after the fork)."""

    def __init__(self):
        self.lib = ctypes.CDLL(ctypes.util.find_library("turbojpeg") or "libturbojpeg.so.0")
        self.lib.tjInitDecompress.restype = ctypes.c_void_p
        self.handle = None

    def __call__(self, payload):
        if self.handle is None:
            self.handle = ctypes.c_void_p(self.lib.tjInitDecompress())
        data, size = payload.ctypes.data_as(ctypes.c_void_p), ctypes.c_ulong(payload.size)
        w, h, sub, space = (ctypes.c_int() for _ in range(4))
        if self.lib.tjDecompressHeader3(self.handle, data, size, ctypes.byref(w), ctypes.byref(h),
                                        ctypes.byref(sub), ctypes.byref(space)) != 0:
            return None, False
        image = np.empty((h.value, w.value, 3), np.uint8)
        ok = self.lib.tjDecompress2(self.handle, data, size,
                                    image.ctypes.data_as(ctypes.c_void_p), w, 0, h, 0, 0) == 0
        return (image if ok else None), False  # pixel format 0: TJPF_RGB


DECODERS = {"cv2": lambda: cv2_decode, "turbojpeg": TurboJpeg}


class ShardDataset(Dataset):
    """Sample i = record i of the shards in manifest order; yields (tensor, label, i)."""

    def __init__(self, directory, decoder="cv2", size=224, scale=(0.08, 1.0),
                 ratio=(3 / 4, 4 / 3)):
        self.records = [(shard, offset, nbytes) for shard in read_manifest(directory)
                        for offset, nbytes in read_shard_index(shard)]
        self.decode = DECODERS[decoder]()
        self.size, self.scale, self.ratio = size, scale, ratio
        self.files = {}  # opened lazily, so that each forked worker has its own descriptors

    def __len__(self):
        return len(self.records)

    def read(self, i):
        shard, offset, nbytes = self.records[i]
        fd = self.files.get(shard)
        if fd is None:
            fd = self.files[shard] = os.open(shard, os.O_RDONLY)
        record = os.pread(fd, nbytes, offset)
        magic, key_len, label, _, payload_len, _ = RECORD_HEADER.unpack_from(record)
        if magic != b"REC1":
            raise ValueError(f"{shard}: record at {offset}: bad magic")
        start = RECORD_HEADER.size + key_len
        return np.frombuffer(record, np.uint8, payload_len, start), label

    def __getitem__(self, i):
        payload, label = self.read(i)
        image, is_bgr = self.decode(payload)
        if image is None:
            raise ValueError(f"sample {i}: not a decodable image")
        return torch.from_numpy(self.transform(image, is_bgr)), label, i

    def transform(self, image, is_bgr):
        top, left, h, w = crop_box(image.shape[0], image.shape[1], self.scale, self.ratio)
        out = cv2.resize(image[top:top + h, left:left + w], (self.size, self.size),
                         interpolation=cv2.INTER_LINEAR)
        if random.random() < 0.5:
            out = cv2.flip(out, 1)
        return normalize(out, is_bgr)


def crop_box(height, width, scale, ratio):
    """torchvision RandomResizedCrop.get_params: (top, left, h, w)."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return random.randint(0, height - h), random.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        w, h = int(round(height * max(ratio))), height
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


SCALE = (1.0 / (255.0 * STD)).reshape(3, 1, 1)
OFFSET = (MEAN / STD).reshape(3, 1, 1)


def normalize(image, is_bgr):
    """HWC uint8 (RGB, or BGR when is_bgr) -> RGB CHW float32, (pixel / 255 - mean) / std, in
    one float pass."""
    chw = image.transpose(2, 0, 1)
    if is_bgr:
        chw = chw[::-1]  # a view: the swap happens while normalising
    x = np.empty(chw.shape, np.float32)  # C order, as torch.from_numpy and collate want
    np.multiply(chw, SCALE, out=x)
    x -= OFFSET
    return x


def single_threaded(_worker_id=None):
    torch.set_num_threads(1)
    cv2.setNumThreads(0)


class Record:
    """What the trainer saw: waits, steps, epoch ends and every sample id, per epoch."""

    def __init__(self, epochs):
        self.stall = [0.0] * epochs
        self.step_s = 0.0
        self.end = [0.0] * epochs
        self.ids = [[] for _ in range(epochs)]
        self.batches = 0

    def ledger(self, dataset_size):
        """(lost, duplicates) over every epoch."""
        lost = dups = 0
        for ids in self.ids:
            counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=dataset_size)
            lost += int((counts == 0).sum())
            dups += int(np.maximum(counts - 1, 0).sum())
        return lost, dups


def train(loader, epochs, step_s):
    """The simulated trainer; returns (Record, wall seconds)."""
    rec = Record(epochs)
    start = time.perf_counter()
    for epoch in range(epochs):
        asked = time.perf_counter()
        for _, _, ids in loader:  # iter() (and, in epoch 1, starting the workers) is waited for
            got = time.perf_counter()
            rec.stall[epoch] += got - asked
            rec.ids[epoch].extend(ids.tolist())
            rec.batches += 1
            if step_s > 0:
                time.sleep(step_s)
                rec.step_s += time.perf_counter() - got
            asked = time.perf_counter()
        rec.end[epoch] = time.perf_counter() - start
    return rec, time.perf_counter() - start


def summary(rec, wall, args, dataset_size):
    samples = sum(len(ids) for ids in rec.ids)
    stall = sum(rec.stall)
    busy = stall + rec.step_s
    lost, dups = rec.ledger(dataset_size)
    return {
        "samples": samples, "epochs": args.epochs, "epoch_s": rec.end[-1] / args.epochs,
        "samples_per_s": samples / wall, "stall_s": stall,
        "stall_fraction": stall / busy if busy > 0 else 0, "lost": lost, "duplicates": dups,
        "quarantined": 0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall_s": wall, "batches": rec.batches, "policy": "torch_dataloader",
        "workers": args.workers, "batch_size": args.batch_size, "step_ms": args.step_ms,
        "dataset_size": dataset_size, "epoch_end_s": rec.end, "epoch_stall_s": rec.stall,
        "decoder": args.decoder, "torch": torch.__version__, "opencv": cv2.__version__,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="a conveyor-pack shard directory")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--step-ms", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decoder", choices=sorted(DECODERS), default="cv2")
    args = parser.parse_args()
    single_threaded()
    torch.manual_seed(args.seed)
    dataset = ShardDataset(args.dataset, args.decoder)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        pin_memory=False, worker_init_fn=single_threaded)
    rec, wall = train(loader, args.epochs, args.step_ms / 1000.0)
    result = summary(rec, wall, args, len(dataset))
    print(json.dumps(result), flush=True)
    return 0 if result["lost"] == 0 and result["duplicates"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
