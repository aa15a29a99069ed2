#!/usr/bin/python3
"""conveyor.DataLoader's epochs, draws and resume: state_dict() at several points of an epoch
and a new loader that goes on from it; set_epoch before the first iteration; the same sample per
index whatever the number of workers; a rank's pad batch drawn as its worker drew it. Real
worker processes and datasets (tests/python/loader_datasets.py). Environment: PYTHONPATH (the
built package), CONVEYOR_NODE. Exits 77 where torch is missing. Run with Debian's python3."""
import os
import sys
import unittest

try:
    import numpy as np  # noqa: F401
    import torch
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conveyor  # noqa: E402
from loader_datasets import Drawn, Indexed  # noqa: E402

N, BATCH, SEED = 23, 4, 11


def indices(batch):
    return [int(i) for i in batch["index"]]


def loader(n=N, **kwargs):
    args = dict(batch_size=BATCH, shuffle=True, num_workers=2, seed=SEED, policy="in_order")
    args.update(kwargs)
    return conveyor.DataLoader(Indexed(n), **args)


class ResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with loader() as whole:
            cls.epochs = [[indices(b) for b in whole] for _ in range(3)]

    def resumed(self, stop, seed=None):
        """Batches of epochs 0 and 1 when a loader stops after `stop` batches of epoch 0 (None:
        after the whole epoch, the loop ended) and a new one, seeded `seed` (None: drawn),
        loads its state."""
        first = loader()
        before = []
        it = iter(first)
        for batch in it:
            before.append(indices(batch))
            if stop is not None and len(before) == stop:
                break
        state = first.state_dict()
        first.close()
        second = loader(seed=seed)  # the state's seed wins
        second.load_state_dict(state)
        with second:
            after = [[indices(b) for b in second] for _ in range(2)]
        return before, after, state

    def check(self, stop, seed=None):
        before, after, state = self.resumed(stop, seed)
        self.assertLess(len(state["conveyor_state"]), 200, "the state must be small")
        if stop is None:  # the next iteration is epoch 1
            self.assertEqual([before] + after, self.epochs)
            return
        self.assertEqual(before + after[0], self.epochs[0], f"epoch 0 stopped after {stop}")
        self.assertEqual(after[1], self.epochs[1])

    def test_resume_after_the_first_batch(self):
        self.check(1)

    def test_resume_in_the_middle_of_an_epoch(self):
        self.check(3)

    def test_resume_in_a_later_epoch_by_a_loader_given_the_same_seed(self):
        with loader() as first:
            list(first)
            it = iter(first)
            before = [indices(next(it)) for _ in range(2)]
            state = first.state_dict()
        second = loader(seed=SEED)
        second.load_state_dict(state)
        with second:
            after = [indices(b) for b in second]
        self.assertEqual(before + after, self.epochs[1])

    def test_resume_after_the_last_batch_inside_the_loop(self):
        self.check(len(self.epochs[0]))

    def test_resume_between_epochs(self):
        self.check(None)

    def test_a_samplers_order_resumes_with_the_rest_of_its_epoch_then_its_next_ones(self):
        # The state holds the epoch's order (the sampler is not asked again for it) and the
        # sampler's generator's state (its next orders are the ones it would have given).
        def sampled():
            sampler = torch.utils.data.WeightedRandomSampler(
                [1.0 + i % 4 for i in range(N)], 30, generator=torch.Generator().manual_seed(2))
            return loader(shuffle=None, sampler=sampler)

        with sampled() as whole:
            want = [[indices(b) for b in whole] for _ in range(2)]
        with sampled() as first:
            it = iter(first)
            before = [indices(next(it)) for _ in range(3)]
            state = first.state_dict()
        self.assertEqual(len(state["order"]), 30)
        second = sampled()
        second.load_state_dict(state)
        with second:
            after = [[indices(b) for b in second] for _ in range(2)]
        self.assertEqual(before + after[0], want[0])
        self.assertEqual(after[1], want[1])
        with self.assertRaisesRegex(ValueError, "the state is of a loader in its sampler's own "
                                                "order, this one is in Conveyor's order"):
            loader(shuffle=False).load_state_dict(state)
        with self.assertRaisesRegex(ValueError, "the state is of a loader in Conveyor's order"):
            sampled().load_state_dict(loader().state_dict())
        state["order"] = torch.zeros((2, 15), dtype=torch.int64)
        with self.assertRaisesRegex(ValueError, r"the state's order is no list of dataset "
                                                r"indices \(int64 of shape \(2, 15\)\)"):
            sampled().load_state_dict(state)

    def test_a_state_of_another_loader_is_refused_naming_the_argument(self):
        with loader() as first:
            state = first.state_dict()
        with self.assertRaisesRegex(ValueError, "batch_size=4.*this one has 5"):
            loader(batch_size=5).load_state_dict(state)

    def test_a_rank_resumes_its_own_share_and_its_pad(self):
        # 9 samples over 2 ranks in batches of 2: rank 1's share of 4 ends with a pad, the
        # first sample of its epoch, which the state must carry past the restart.
        share = dict(n=9, batch_size=2, num_workers=1, rank=1, world_size=2)
        with loader(**share) as whole:
            want = [[indices(b) for b in whole] for _ in range(2)]
        first = loader(**share)
        before = [indices(next(iter(first)))]
        state = first.state_dict()
        first.close()
        with loader(**share) as second:
            second.load_state_dict(state)
            after = [[indices(b) for b in second] for _ in range(2)]
        self.assertEqual([before + after[0], after[1]], want)
        self.assertEqual(want[0][-1], [want[0][0][0]], "rank 1 pads with its first sample")

    def test_set_epoch_before_the_first_iteration_starts_there(self):
        with loader() as later:
            later.set_epoch(1)
            self.assertEqual([indices(b) for b in later], self.epochs[1])


class DrawsTest(unittest.TestCase):
    def samples(self, workers):
        out = {}
        with conveyor.DataLoader(Drawn(17), batch_size=3, shuffle=True, seed=5,
                                 num_workers=workers) as got:
            for batch in got:
                for k, i in enumerate(batch["index"].tolist()):
                    out[i] = (batch["numpy"][k].clone(), batch["torch"][k].clone(),
                              float(batch["random"][k]))
        return out

    def test_the_same_sample_per_index_with_one_and_three_workers(self):
        one, three = self.samples(1), self.samples(3)
        self.assertEqual(sorted(one), list(range(17)))
        self.assertEqual(sorted(three), list(range(17)))
        for i in range(17):
            for a, b in zip(one[i], three[i]):
                self.assertTrue(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b,
                                f"index {i}: {one[i]} != {three[i]}")
        self.assertNotEqual(one[0][2], one[1][2], "the draws must differ between indices")

    def test_a_pad_is_its_sample_drawn_again_and_leaves_the_trainer_draws_alone(self):
        # 9 samples over 2 ranks: shares of 5 and 4; batches of 2 give 3 and 2, so rank 1 pads
        # with a batch of one, its epoch's first sample.
        with conveyor.DataLoader(Drawn(9), batch_size=2, shuffle=True, seed=5, rank=1,
                                 world_size=2, num_workers=1) as got:
            self.assertEqual(len(got), 3)
            torch.manual_seed(123)
            batches = list(got)
            after = torch.rand(1)
        torch.manual_seed(123)
        self.assertTrue(torch.equal(after, torch.rand(1)), "the pad moved the trainer's draws")
        self.assertEqual([len(b["index"]) for b in batches], [2, 2, 1])
        first, pad = batches[0], batches[2]
        self.assertEqual(int(pad["index"][0]), int(first["index"][0]))
        for key in ("numpy", "torch", "random"):
            self.assertTrue(torch.equal(pad[key][0], first[key][0]), key)


if __name__ == "__main__":
    unittest.main()
