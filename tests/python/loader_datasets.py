"""Datasets of tests/python/test_dataloader.py, in a module of their own as a user's would be
(the loader's workers import it as the trainer did)."""
import numpy as np
import torch


class Mixed(torch.utils.data.Dataset):
    """Every kind of leaf default_collate knows: arrays, tensors, ints, floats, bools, str and
    bytes, nested in a tuple, a dict and a list (a str in a sequence collates to a tuple)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (np.full((2, 3), i, np.float32), torch.arange(3, dtype=torch.int64) + i,
                {"n": i, "x": i / 4, "even": i % 2 == 0, "name": f"s{i}"},
                [f"t{i}", bytes([i]), i])


class Indexed(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"index": i, "values": np.full((4,), i, np.float64)}


class Drawn(torch.utils.data.Dataset):
    """Draws from random, numpy.random and torch in __getitem__, as augmentations do: a sample
    is the same wherever it runs only if its draws are seeded from its own index."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import random
        return {"index": i, "numpy": np.random.rand(3), "torch": torch.rand(2),
                "random": random.random()}


class PerWorker(torch.utils.data.Dataset):
    """State each worker opens for itself in worker_init_fn through get_worker_info(), as
    torch's documentation shows (a file handle per worker, here the worker's id)."""

    def __init__(self, n):
        self.n, self.opened_by = n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return {"index": i, "opened_by": self.opened_by, "id": info.id,
                "num_workers": info.num_workers, "seed": info.seed}


def open_per_worker(worker_id):
    info = torch.utils.data.get_worker_info()
    assert info.id == worker_id, (info, worker_id)
    info.dataset.opened_by = worker_id


class Faulty(torch.utils.data.Dataset):
    """Samples that fail as user code fails: `raises` always raise; `dies` kill their worker
    with SIGKILL from another process (as the OOM killer would) the first time, marked in
    directory `marks`; `hangs` never return."""

    def __init__(self, n, marks, raises=(), dies=(), hangs=()):
        self.n, self.marks = n, marks
        self.raises, self.dies, self.hangs = set(raises), set(dies), set(hangs)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import os
        import subprocess
        import threading
        if i in self.raises:
            raise ValueError(f"no sample {i}")
        mark = os.path.join(self.marks, f"died-{i}")
        if i in self.dies and not os.path.exists(mark):
            open(mark, "w").close()
            subprocess.run(["kill", "-KILL", str(os.getpid())], check=True)
        if i in self.hangs:
            threading.Event().wait()
        return {"index": i}


class Detection(torch.utils.data.Dataset):
    """As torchvision's detection datasets: an image of its own size and a target dict with
    as many boxes as the image has objects (0 to 3), for a collate_fn to batch."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = torch.full((3, 20 + i, 30 - i % 7), float(i))
        k = i % 4
        target = {"boxes": torch.arange(4 * k, dtype=torch.float32).reshape(k, 4) + i,
                  "labels": torch.arange(k), "image_id": i}
        return image, target


class Tokens(torch.utils.data.Dataset):
    """Token lists of i tokens and texts of 5000 * i characters: a collate_fn pads them."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return list(range(100, 100 + i)), "x" * (5000 * i)


def pad_tokens(samples):
    tokens, texts = zip(*samples)
    longest = max(len(t) for t in tokens)
    return torch.tensor([t + [0] * (longest - len(t)) for t in tokens]), list(texts)


class Texts(torch.utils.data.Dataset):
    """Strings of `size` characters, one of `long` characters at index `at`."""

    def __init__(self, n, size, at=None, long=0):
        self.n, self.size, self.at, self.long = n, size, at, long

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return chr(65 + i % 26) * (self.long if i == self.at else self.size), i


class Large(torch.utils.data.Dataset):
    """Samples of 20 MB (a volume's size), the first one like the others."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.full((5 * 1024 * 1024,), float(i)), i


def seed_worker(worker_id):
    """torch's reproducibility recipe's worker_init_fn (docs: "Randomness in multi-process data
    loading")."""
    import random
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)
