#!/usr/bin/python3
"""conveyor.DataLoader against torch's DataLoader, with real worker processes and datasets
written here (tests/python/loader_datasets.py, imported by the workers as the trainer imports
it). Environment: PYTHONPATH (the built package), CONVEYOR_NODE. Exits 77 where torch is
missing. Run with Debian's python3."""
import os
import sys
import threading
import unittest

try:
    import numpy as np
    import torch
    import psutil
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conveyor  # noqa: E402
from loader_datasets import Mixed, Indexed  # noqa: E402


def same(a, b):
    """a and b are equal, structure, types and values."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


class DataLoaderTest(unittest.TestCase):
    def test_the_same_batches_as_torch_index_by_index(self):
        dataset = Mixed(29)
        want = list(torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2))
        with conveyor.DataLoader(dataset, batch_size=4, num_workers=2, policy="in_order") as got:
            self.assertEqual(len(got), len(want))
            batches = list(got)
        self.assertEqual(len(batches), len(want))
        for i, (a, b) in enumerate(zip(want, batches)):
            self.assertTrue(same(a, b), f"batch {i}:\ntorch    {a}\nconveyor {b}")

    def test_every_index_once_per_epoch_reshuffled(self):
        with conveyor.DataLoader(Indexed(37), batch_size=5, shuffle=True, num_workers=2,
                                 seed=7) as loader:
            epochs = [[int(i) for b in loader for i in b["index"]] for _ in range(2)]
        for seen in epochs:
            self.assertEqual(sorted(seen), list(range(37)))
        self.assertNotEqual(epochs[0], epochs[1])

    def test_collate_fn_gets_the_samples_as_getitem_returned_them(self):
        dataset = Mixed(6)
        with conveyor.DataLoader(dataset, batch_size=3, collate_fn=lambda s: s,
                                 policy="in_order") as loader:
            got = [s for b in loader for s in b]
        self.assertEqual(len(got), 6)
        for i, s in enumerate(got):
            self.assertTrue(same(dataset[i], s), f"sample {i}: {dataset[i]} != {s}")

    def test_arguments_it_cannot_honour_are_type_errors_naming_them(self):
        for kwargs, name in [({"sampler": [0, 1]}, "sampler"),
                             ({"batch_sampler": [[0]]}, "batch_sampler"),
                             ({"multiprocessing_context": "fork"}, "multiprocessing_context"),
                             ({"policy": "fastest"}, "policy")]:
            with self.assertRaisesRegex(TypeError, name):
                conveyor.DataLoader(Indexed(4), **kwargs)

    def test_an_unpicklable_dataset_is_named(self):
        dataset = Indexed(4)
        dataset.lock = threading.Lock()
        with self.assertRaisesRegex(TypeError, "Indexed.*cannot be pickled.*lock"):
            conveyor.DataLoader(dataset)

    def test_close_leaves_no_process(self):
        loader = conveyor.DataLoader(Indexed(8), batch_size=2, num_workers=2)
        next(iter(loader))
        node = psutil.Process(loader._node.pid)
        family = [node] + node.children(recursive=True)
        self.assertGreaterEqual(len(family), 2)  # the node and at least one worker
        loader.close()
        gone, alive = psutil.wait_procs(family, timeout=30)
        self.assertEqual(alive, [])


if __name__ == "__main__":
    unittest.main()
