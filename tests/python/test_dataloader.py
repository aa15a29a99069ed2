#!/usr/bin/python3
"""conveyor.DataLoader against torch's DataLoader, with real worker processes and datasets
written here (tests/python/loader_datasets.py, imported by the workers as the trainer imports
it). Environment: PYTHONPATH (the built package), CONVEYOR_NODE. Exits 77 where torch is
missing. Run with Debian's python3."""
import importlib.util
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

try:
    import numpy as np
    import torch
    import psutil
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conveyor  # noqa: E402
from loader_datasets import (Mixed, Indexed, Drawn, PerWorker, open_per_worker,  # noqa: E402
                             Detection, Tokens, pad_tokens, Texts, Large, seed_worker)


# A training script as many are written: its Dataset defined in it, no `if __name__ ==
# "__main__":` guard. Workers forked from the trainer re-run nothing of it; spawned ones would
# re-run it on import.
UNGUARDED_SCRIPT = """
import sys
import torch
import conveyor

class Local(torch.utils.data.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.tensor([i * 10])

context = None if sys.argv[1] == "none" else sys.argv[1]
print("training starts", flush=True)
with conveyor.DataLoader(Local(), batch_size=2, num_workers=2, seed=1,
                         multiprocessing_context=context) as loader:
    print(sorted(int(x) for batch in loader for x in batch), flush=True)
"""


# A script that leaves its loader open in a global, mid-epoch, and exits.
LEFT_OPEN_SCRIPT = """
import torch
import conveyor

class Local(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return torch.tensor([i])

loader = conveyor.DataLoader(Local(), batch_size=4, num_workers=2, seed=1)
next(iter(loader))
print(loader._dir, loader._node.pid, flush=True)
"""


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


def free_port():
    """A port of 127.0.0.1 nothing is bound to now, below Linux's ephemeral range (32768-60999),
    so that no outgoing connection takes it before the node listens."""
    while True:
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


def scrape(port):
    """Every sample of the node's /metrics, parsed by Prometheus' own client
    (parse_metrics.py): {(name, labels): value}."""
    from parse_metrics import samples
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(name, labels): value for _, name, labels, value in samples(text)}


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

    def test_a_collate_fn_batches_samples_of_any_shape_as_torchs_does(self):
        # Images of their own sizes with 0 to 3 boxes (torchvision's detection recipe), token
        # lists of their own lengths with texts up to 45000 characters: with the first
        # sample's shapes alone, two in three of them were quarantined.
        for dataset, collate in [(Detection(11), lambda s: tuple(zip(*s))),
                                 (Tokens(10), pad_tokens)]:
            want = list(torch.utils.data.DataLoader(dataset, batch_size=3, num_workers=2,
                                                    collate_fn=collate))
            with conveyor.DataLoader(dataset, batch_size=3, num_workers=2, collate_fn=collate,
                                     policy="in_order") as loader:
                got = list(loader)
                self.assertEqual(loader.report()["quarantined"], 0, loader.report())
            self.assertEqual(len(got), len(want))
            for i, (a, b) in enumerate(zip(want, got)):
                self.assertTrue(same(a, b), f"{type(dataset).__name__} batch {i}")

    def test_a_collate_fn_gets_samples_larger_than_a_fixed_bound_would_allow(self):
        # Whole samples of 20 MB: the room of each is sized from the first (4 times its bytes).
        collate = torch.utils.data.default_collate
        with conveyor.DataLoader(Large(), batch_size=2, collate_fn=collate,
                                 policy="in_order") as loader:
            got = [(tuple(x.shape), [int(i) for i in y], float(x[1, -1])) for x, y in loader]
            self.assertEqual(loader.report()["quarantined"], 0, loader.report())
        self.assertEqual(got, [((2, 5 * 1024 * 1024), [0, 1], 1.0),
                               ((2, 5 * 1024 * 1024), [2, 3], 3.0)])

    def test_strings_up_to_max_object_bytes_are_batched_and_one_past_it_is_quarantined(self):
        # Every sample at the most a batch slot holds for it, and one a byte past it: batches
        # of such samples once ran past their slot and killed the node.
        dataset = Texts(13, 4096, at=5, long=4097)
        with conveyor.DataLoader(dataset, batch_size=4, num_workers=2, policy="in_order",
                                 max_object_bytes=4096) as loader:
            got = {int(i): s for texts, indices in loader for s, i in zip(texts, indices)}
            report = loader.report()
        self.assertEqual(sorted(got), [i for i in range(13) if i != 5])
        self.assertTrue(all(got[i] == dataset[i][0] for i in got))
        [quarantined] = [q for q in report["quarantined_samples"] if q["epoch"] == 0]
        self.assertEqual(quarantined["index"], 5)
        self.assertIn("element sample.0 takes 4097 bytes, past the 4096 a sample's may "
                      "(python.max_text_bytes; conveyor.DataLoader's max_object_bytes)",
                      quarantined["reason"])
        with conveyor.DataLoader(Texts(9, 20000), batch_size=4, policy="in_order") as loader:
            self.assertEqual([len(s) for texts, _ in loader for s in texts], [20000] * 9)

    def test_a_distributed_sampler_gives_its_rank_its_share_of_the_epoch_it_sets(self):
        # A DDP script's sampler=DistributedSampler(dataset), with sampler.set_epoch(e) before
        # each epoch (here epoch 1 skipped, as a resumed script does).
        dataset, shares = Indexed(11), {}
        for rank in range(2):
            sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=2, rank=rank,
                                                          shuffle=True, seed=4)
            with conveyor.DataLoader(dataset, batch_size=2, sampler=sampler, num_workers=1,
                                     policy="in_order") as loader:
                self.assertEqual((loader.rank, loader.world_size, loader.seed, loader.shuffle),
                                 (rank, 2, 4, True))
                self.assertIs(loader.sampler, sampler)
                for epoch in (0, 2):
                    loader.sampler.set_epoch(epoch)  # as scripts write it, or sampler.set_epoch
                    shares[rank, epoch] = [int(i) for b in loader for i in b["index"]]
            with conveyor.DataLoader(dataset, batch_size=2, shuffle=True, seed=4, rank=rank,
                                     world_size=2, num_workers=1, policy="in_order") as plain:
                plain.set_epoch(2)
                self.assertEqual([int(i) for b in plain for i in b["index"]], shares[rank, 2])
        for epoch in (0, 2):
            a, b = shares[0, epoch], shares[1, epoch]
            self.assertEqual((len(a), len(b)), (6, 5))
            self.assertEqual(sorted(a + b), list(range(11)), f"epoch {epoch}")
        self.assertNotEqual(shares[0, 0], shares[0, 2])

    def test_samplers_that_say_shuffle_or_not_are_conveyors_own_order(self):
        dataset = Indexed(5)
        data = torch.utils.data
        for sampler, shuffled in [(data.SequentialSampler(dataset), False),
                                  (data.RandomSampler(dataset), True)]:
            with conveyor.DataLoader(dataset, sampler=sampler, batch_size=5, seed=2) as loader:
                self.assertEqual(loader.shuffle, shuffled)
                self.assertIs(loader.sampler, sampler)
                self.assertEqual(sorted(int(i) for b in loader for i in b["index"]),
                                 list(range(5)))
        self.assertIsInstance(conveyor.DataLoader(dataset, shuffle=True).sampler,
                              data.RandomSampler)  # as torch's loader makes it
        self.assertEqual(len(conveyor.DataLoader(dataset).sampler), 5)
        with self.assertRaisesRegex(ValueError, "mutually exclusive with shuffle"):
            conveyor.DataLoader(dataset, sampler=data.SequentialSampler(dataset), shuffle=True)
        with self.assertRaisesRegex(ValueError, "rank=1, its sampler's is 0"):
            conveyor.DataLoader(dataset, rank=1, world_size=2, sampler=data.DistributedSampler(
                dataset, num_replicas=2, rank=0))

    def test_any_other_samplers_order_gives_torchs_batches_index_by_index(self):
        # Drawn as torch's loader draws it, by iterating the sampler as each epoch begins:
        # repeats (with replacement), a subset, a plain list, a rank's share with drop_last.
        dataset = Mixed(29)
        data = torch.utils.data
        samplers = [
            lambda: data.WeightedRandomSampler([1.0 + i % 3 for i in range(29)], 40,
                                               generator=torch.Generator().manual_seed(3)),
            lambda: data.RandomSampler(dataset, replacement=True, num_samples=17,
                                       generator=torch.Generator().manual_seed(5)),
            lambda: data.SubsetRandomSampler(range(0, 29, 2),
                                             generator=torch.Generator().manual_seed(4)),
            lambda: [5, 3, 3, 28, 0],
            lambda: data.DistributedSampler(dataset, num_replicas=2, rank=1, drop_last=True,
                                            seed=9)]
        for made in samplers:
            name = type(made()).__name__
            want = data.DataLoader(dataset, batch_size=4, sampler=made(), num_workers=2)
            want = [b for epoch in range(3) for b in want]
            with conveyor.DataLoader(dataset, batch_size=4, sampler=made(), num_workers=2,
                                     policy="in_order") as loader:
                self.assertEqual(len(loader), len(want) // 3, name)
                got = [b for epoch in range(3) for b in loader]
            self.assertEqual(len(got), len(want), name)
            for i, (a, b) in enumerate(zip(want, got)):
                self.assertTrue(same(a, b), f"{name}, batch {i}:\ntorch    {a}\nconveyor {b}")

    def test_a_distributed_sampler_with_drop_last_follows_set_epoch_and_ends_its_workers(self):
        # set_epoch on the loader reaches the sampler (its order is the sampler's); each epoch's
        # node stops at its end (its workers do not wait through a validation pass), and its
        # report stays.
        dataset = Indexed(23)
        data = torch.utils.data

        def made():
            return data.DistributedSampler(dataset, num_replicas=2, rank=1, drop_last=True,
                                           seed=4)

        reference, want = made(), []
        for epoch in range(3):
            reference.set_epoch(epoch)
            want.append(list(reference))
        with conveyor.DataLoader(dataset, batch_size=4, sampler=made(),
                                 policy="in_order") as loader:
            self.assertEqual((loader.rank, loader.world_size), (1, 2))
            got = []
            for epoch in range(3):
                loader.set_epoch(epoch)
                got.append([int(i) for b in loader for i in b["index"]])
                self.assertIsNone(loader._node)
                self.assertEqual(loader.report()["delivered"], 11)
        self.assertEqual(got, want)
        self.assertNotEqual(want[0], want[1])

    def test_a_batch_sampler_of_torchs_is_its_sampler_cut_into_batches(self):
        dataset = Mixed(29)
        data = torch.utils.data
        for made in [lambda: data.BatchSampler(data.SequentialSampler(dataset), 3, True),
                     lambda: data.BatchSampler(data.WeightedRandomSampler(
                         [1.0 + i % 5 for i in range(29)], 30,
                         generator=torch.Generator().manual_seed(6)), 4, False)]:
            want = data.DataLoader(dataset, batch_sampler=made(), num_workers=2)
            want = [b for epoch in range(2) for b in want]
            with conveyor.DataLoader(dataset, batch_sampler=made(), num_workers=2,
                                     policy="in_order") as loader:
                got = [b for epoch in range(2) for b in loader]
            self.assertEqual(len(got), len(want))
            for i, (a, b) in enumerate(zip(want, got)):
                self.assertTrue(same(a, b), f"batch {i}:\ntorch    {a}\nconveyor {b}")
        with self.assertRaisesRegex(TypeError, "batch_sampler list is not supported"):
            conveyor.DataLoader(dataset, batch_sampler=[[0, 1], [2]])
        with self.assertRaisesRegex(ValueError, "mutually exclusive with batch_size"):
            conveyor.DataLoader(dataset, batch_size=2, batch_sampler=made())

    def test_a_sampler_that_gives_no_index_of_the_dataset_is_named(self):
        data = torch.utils.data
        for sampler, error, said in [
                ([0, 4], ValueError, r"sampler list gave 4 at position 1, past the dataset "
                                     r"\(len\(dataset\) is 4\)"),
                ([0, -1], ValueError, "gave -1 at position 1, past the dataset"),
                ([0, 1.5], TypeError, "sampler list gave 1.5 at position 1: not an index"),
                ([], ValueError, "sampler list gave no index")]:
            loader = conveyor.DataLoader(Indexed(4), sampler=sampler)
            with self.assertRaisesRegex(error, said):
                iter(loader)
            self.assertIsNone(loader._dir)
        with self.assertRaisesRegex(TypeError, "sampler int cannot be iterated"):
            conveyor.DataLoader(Indexed(4), sampler=5)
        with self.assertRaisesRegex(ValueError, "sampler WeightedRandomSampler gives its own"):
            conveyor.DataLoader(Indexed(4), sampler=data.WeightedRandomSampler([1.0] * 4, 4),
                                rank=0, world_size=2)
        # numpy and torch integer scalars are indices, as dataset[i] takes them in torch
        with conveyor.DataLoader(Indexed(4), sampler=[np.int64(3), torch.tensor(1)],
                                 batch_size=2) as loader:
            self.assertEqual([int(i) for b in loader for i in b["index"]], [3, 1])

    def test_arguments_it_cannot_honour_are_type_errors_naming_them(self):
        for kwargs, name in [({"pin_memory_device": "cuda:1"}, "pin_memory_device"),
                             ({"multiprocessing_context": "threads"}, "multiprocessing_context"),
                             ({"policy": "fastest"}, "policy"),
                             ({"max_object_bytes": 0}, "max_object_bytes"),
                             ({"max_object_bytes": 2**30 + 1}, "max_object_bytes")]:
            with self.assertRaisesRegex(TypeError, name):
                conveyor.DataLoader(Indexed(4), **kwargs)
        with self.assertRaisesRegex(ValueError, r"no samples \(len\(dataset\) is 0\)"):
            conveyor.DataLoader(Indexed(0))

    def test_torch_2_6s_in_order_says_the_policy(self):
        for kwargs, policy in [({}, "latency_aware"), ({"in_order": True}, "in_order"),
                               ({"in_order": False}, "latency_aware"),
                               ({"in_order": True, "policy": "in_order"}, "in_order")]:
            self.assertEqual(conveyor.DataLoader(Indexed(4), **kwargs).policy, policy, kwargs)
        with self.assertRaisesRegex(ValueError, "in_order=False and policy='in_order' "
                                                "contradict"):
            conveyor.DataLoader(Indexed(4), in_order=False, policy="in_order")

    def test_pin_memory_without_cuda_warns_and_changes_nothing(self):
        if torch.cuda.is_available():
            self.skipTest("CUDA is here: pin_memory pins")
        dataset = Mixed(4)
        with self.assertWarnsRegex(UserWarning, "no CUDA device"):
            loader = conveyor.DataLoader(dataset, batch_size=2, pin_memory=True,
                                         policy="in_order")
        with loader:
            got = [b for b in loader]
        reference = list(torch.utils.data.DataLoader(dataset, batch_size=2))
        for a, b in zip(reference, got):
            self.assertTrue(same(a, b), f"{a} != {b}")

    def test_get_worker_info_in_a_worker_says_what_it_says_in_torchs(self):
        for context in (None, "spawn"):
            with conveyor.DataLoader(PerWorker(12), batch_size=3, num_workers=2, seed=11,
                                     worker_init_fn=open_per_worker,
                                     multiprocessing_context=context) as loader:
                samples = [{k: int(v[j]) for k, v in b.items()} for b in loader
                           for j in range(len(b["index"]))]
                processes = loader.num_workers + loader.stragglers
            self.assertEqual(sorted(s["index"] for s in samples), list(range(12)))
            for s in samples:
                self.assertEqual(s["opened_by"], s["id"], f"{context}: {s}")
                self.assertIn(s["id"], range(processes), f"{context}: {s}")
                self.assertEqual(s["num_workers"], processes, f"{context}: {s}")
                self.assertEqual(s["seed"], 11 + s["id"], f"{context}: {s}")
        self.assertIsNone(torch.utils.data.get_worker_info())  # none in the trainer

    def test_a_dataset_that_cannot_be_pickled_runs_forked_as_torchs_and_is_named_spawned(self):
        # A lambda in a dataset's transforms (torchvision's transforms.Lambda): torch's forked
        # workers never pickle it, and neither does a zygote forked from the trainer.
        dataset = Mixed(7)
        dataset.transform = lambda x: x
        dataset.lock = threading.Lock()
        want = list(torch.utils.data.DataLoader(dataset, batch_size=3))
        with conveyor.DataLoader(dataset, batch_size=3, policy="in_order") as loader:
            got = list(loader)
        self.assertEqual(len(got), len(want))
        for a, b in zip(want, got):
            self.assertTrue(same(a, b), f"{a} != {b}")
        for context in ("spawn", "forkserver"):  # raised as its workers start, as torch's is
            loader = conveyor.DataLoader(dataset, multiprocessing_context=context)
            with self.assertRaisesRegex(TypeError, "Mixed.*cannot be pickled.*lambda"):
                iter(loader)
            self.assertIsNone(loader._dir)  # nothing left behind

    def test_a_seeded_generator_gives_the_same_batches_every_run(self):
        # torch's reproducibility recipe: generator=torch.Generator().manual_seed(0), and a
        # worker_init_fn seeding numpy and random from torch.initial_seed(). (Batches as
        # latency_aware fills them depend on which samples are ready first; their samples,
        # draws included, do not.)
        def batches(seed):
            with conveyor.DataLoader(Drawn(23), batch_size=4, shuffle=True, num_workers=2,
                                     worker_init_fn=seed_worker, policy="in_order",
                                     generator=torch.Generator().manual_seed(seed)) as loader:
                self.assertIsInstance(loader.generator, torch.Generator)
                return [b for epoch in range(2) for b in loader]

        first, again, other = batches(0), batches(0), batches(1)
        self.assertEqual(len(first), 12)
        for a, b in zip(first, again):
            self.assertTrue(same(a, b), f"{a} != {b}")
        self.assertFalse(all(same(a, b) for a, b in zip(first, other)))
        data = torch.utils.data
        sampled = data.RandomSampler(Drawn(23), generator=torch.Generator().manual_seed(0))
        with conveyor.DataLoader(sampled.data_source, batch_size=4, sampler=sampled,
                                 num_workers=2, policy="in_order") as loader:
            by_sampler = [b for epoch in range(2) for b in loader]
        for a, b in zip(first, by_sampler):
            self.assertTrue(same(a, b), f"{a} != {b}")
        with self.assertRaisesRegex(TypeError, "generator must be a torch.Generator, not int"):
            conveyor.DataLoader(Drawn(3), generator=0)

    def test_the_same_batches_from_a_spawned_zygote_as_from_the_trainers_fork(self):
        dataset = Mixed(7)
        batches = {}
        for context in (None, "spawn"):
            with conveyor.DataLoader(dataset, batch_size=3, shuffle=True, seed=5,
                                     multiprocessing_context=context) as loader:
                batches[context] = [b for epoch in range(2) for b in loader]
        self.assertEqual(len(batches[None]), 6)
        for a, b in zip(batches[None], batches["spawn"]):
            self.assertTrue(same(a, b), f"{a} != {b}")

    def test_a_script_without_a_main_guard_runs_once_unless_spawned(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as f:
                f.write(UNGUARDED_SCRIPT)
            forked = subprocess.run([sys.executable, script, "none"], capture_output=True,
                                    text=True, timeout=300)
            spawned = subprocess.run([sys.executable, script, "spawn"], capture_output=True,
                                     text=True, timeout=300)
        self.assertEqual(forked.returncode, 0, forked.stderr)
        self.assertEqual(forked.stdout, "training starts\n[0, 10, 20, 30, 40, 50]\n")
        self.assertNotEqual(spawned.returncode, 0)
        self.assertIn("if __name__ == '__main__'", spawned.stderr)
        self.assertEqual(spawned.stdout.count("training starts"), 1, spawned.stdout)

    @unittest.skipUnless(importlib.util.find_spec("prometheus_client"),
                         "python3-prometheus-client is not installed")
    def test_its_node_serves_metrics_with_the_trainers_wait_and_each_worker(self):
        port = free_port()
        wait = ("conveyor_client_wait_seconds_total", (("job", "0"), ("rank", "0")))
        with conveyor.DataLoader(Indexed(4000), batch_size=4, num_workers=2, seed=3,
                                 metrics=f"127.0.0.1:{port}") as loader:
            batches = iter(loader)
            began = time.monotonic()
            # Each batch dropped goes back to the node with the loader's wait so far; the
            # workers report once a second. Bounded by the epoch (1000 batches) and a deadline.
            for _ in range(1000):
                next(batches)
                got = scrape(port)
                workers = [k for k in got if k[0] == "conveyor_python_worker_samples_in_flight"]
                if got.get(wait, 0) > 0 and len(workers) >= 2:
                    break
                self.assertLess(time.monotonic() - began, 120, got)
            self.assertGreater(got[wait], 0)
            self.assertLessEqual(got[wait], time.monotonic() - began)  # waited in next() only
            self.assertGreater(got[("conveyor_samples_delivered_total", ())], 0)
            for key in workers:
                self.assertIn(got[key], (0, 1), key)

    def test_a_metrics_address_the_node_cannot_take_is_named(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            loader = conveyor.DataLoader(Indexed(8), batch_size=2, metrics=f"127.0.0.1:{port}")
            with self.assertRaises(RuntimeError) as caught:
                next(iter(loader))
            # nothing of the start that failed is left (a loader kept by the traceback)
            self.assertIsNone(loader._dir)
            self.assertIsNone(loader._node)
        self.assertIn(f"monitor.metrics: cannot listen at 127.0.0.1:{port}", str(caught.exception))
        with self.assertRaises(TypeError):
            conveyor.DataLoader(Indexed(8), metrics=9464)

    def test_close_leaves_no_process(self):
        loader = conveyor.DataLoader(Indexed(8), batch_size=2, num_workers=2)
        next(iter(loader))
        # The node, the zygote this process forked, the workers forked from the zygote.
        family = psutil.Process().children(recursive=True)
        self.assertIn(loader._node.pid, [p.pid for p in family])
        self.assertGreaterEqual(len(family), 4)
        loader.close()
        gone, alive = psutil.wait_procs(family, timeout=30)
        self.assertEqual(alive, [])

    def test_a_loader_left_open_at_exit_leaves_nothing_behind(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as f:
                f.write(LEFT_OPEN_SCRIPT)
            run = subprocess.run([sys.executable, script], capture_output=True, text=True,
                                 timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        directory, node = run.stdout.split()
        self.assertFalse(os.path.exists(directory), "the loader's directory outlived it")
        self.assertFalse(psutil.pid_exists(int(node)) and
                         psutil.Process(int(node)).status() != psutil.STATUS_ZOMBIE)


if __name__ == "__main__":
    unittest.main()
