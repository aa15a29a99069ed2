#!/usr/bin/python3
"""conveyor.DataLoader when the user's code fails: an exception, a worker killed from outside,
a sample that never returns, and Ctrl-C in the training script. Real worker processes and
datasets (tests/python/loader_datasets.py). Environment: PYTHONPATH (the built package),
CONVEYOR_NODE. Exits 77 where torch or psutil is missing. Run with Debian's python3."""
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

try:
    import psutil
    import torch  # noqa: F401
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import conveyor  # noqa: E402
from loader_datasets import Faulty, Indexed  # noqa: E402

WAIT_S = 120

TRAINING_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
import conveyor
from loader_datasets import Faulty

if __name__ == "__main__":
    loader = conveyor.DataLoader(Faulty(8, {marks!r}, hangs=[5]), batch_size=2, num_workers=2,
                                 policy="in_order", {arguments})
    with loader:
        for batch in loader:
            print("dir", loader._dir, "node", loader._node.pid, flush=True)
"""


def read_line(proc, timeout):
    """A line of proc's stdout within `timeout` seconds, else None."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else None


class FaultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The loaders here, and the scripts' loaders, make their directories in a temporary
        # directory of this test's own: a loader's start removes the directories of loaders
        # whose process is gone, and one of another test running beside this one removed the
        # killed script's before this test could see that the kill left it.
        cls.tmp = tempfile.mkdtemp(prefix="conveyor-faults-")
        tempfile.tempdir = cls.tmp

    @classmethod
    def tearDownClass(cls):
        tempfile.tempdir = None
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_exceptions_deaths_and_hangs_are_retried_then_quarantined_by_index(self):
        with tempfile.TemporaryDirectory() as marks:
            dataset = Faulty(12, marks, raises=[3], dies=[5], hangs=[7])
            with conveyor.DataLoader(dataset, batch_size=4, num_workers=2, hang_timeout=2,
                                     max_sample_retries=1, policy="in_order") as loader, \
                    self.assertWarnsRegex(UserWarning, r"epoch 0: 2 of 12 samples quarantined, "
                                                       r"the first dataset\[[37]\]: "):
                got = sorted(int(i) for b in loader for i in b["index"])
                report = loader.report()
            self.assertTrue(os.path.exists(os.path.join(marks, "died-5")))
        self.assertEqual(got, [i for i in range(12) if i not in (3, 7)])
        # The node may have begun epoch 1 already: its figures count every epoch begun.
        self.assertEqual(report["duplicates"], 0, report)
        self.assertGreaterEqual(report["delivered"], 10, report)
        self.assertGreaterEqual(report["retries"], 3, report)  # 3 and 7 once each, 5 once
        reasons = {q["index"]: q["reason"] for q in report["quarantined_samples"]
                   if q["epoch"] == 0}
        self.assertEqual(sorted(reasons), [3, 7], report)
        self.assertRegex(reasons[3], r"ValueError: no sample 3 \(at .*loader_datasets\.py:\d+ "
                                     r"in __getitem__\) \(failed 2 times\)")
        self.assertRegex(reasons[7], r"dataset\[7\]: no answer within hang_timeout \(2000 ms\): "
                                     r"its worker was killed \(failed 2 times\)")
        self.assertGreaterEqual(report["sample_ms"].get("samples", 0), 10, report)

    def test_in_a_samplers_order_a_quarantined_sample_is_named_by_its_index(self):
        # Index 3 stands at positions 1 and 2 of the sampler's order: each is quarantined and
        # named dataset[3] (in_order: the batches of positions 0-1, 2-3 and 4 lose it).
        with tempfile.TemporaryDirectory() as marks:
            with conveyor.DataLoader(Faulty(8, marks, raises=[3]), batch_size=2,
                                     sampler=[5, 3, 3, 1, 6], max_sample_retries=0,
                                     policy="in_order") as loader, \
                    self.assertWarnsRegex(UserWarning, r"epoch 0: 2 of 5 samples quarantined, "
                                                       r"the first dataset\[3\]: "):
                got = [[int(i) for i in b["index"]] for b in loader]
                report = loader.report()
        self.assertEqual(got, [[5], [1], [6]])
        quarantined = report["quarantined_samples"]
        self.assertEqual([q["index"] for q in quarantined], [3, 3], report)
        for q in quarantined:
            self.assertRegex(q["reason"], r"dataset\[3\] raised ValueError: no sample 3")

    def test_a_killed_zygote_and_its_killed_workers_are_replaced_and_nothing_is_lost(self):
        with conveyor.DataLoader(Indexed(48), batch_size=2, num_workers=2, seed=3,
                                 policy="in_order") as loader:
            batches = iter(loader)
            got = [int(i) for i in next(batches)["index"]]
            zygote = psutil.Process(loader._zygote[0])  # this process forked it
            workers = zygote.children()
            self.assertEqual(len(workers), 3)  # 2 workers and a straggler's
            zygote.kill()
            for w in workers:
                w.kill()
            _, alive = psutil.wait_procs([zygote] + workers, timeout=WAIT_S)
            self.assertEqual(alive, [])
            got += [int(i) for b in batches for i in b["index"]]
            # Its workers forked anew from a zygote the node spawned.
            spawned = [p for p in psutil.Process(loader._node.pid).children()
                       if p.cmdline()[-1].endswith("conveyor_worker.py")]
            self.assertEqual(len(spawned), 1)
            self.assertGreaterEqual(len(spawned[0].children()), 1)
            report = loader.report()
        self.assertEqual(sorted(got), list(range(48)), report)

    def test_a_killed_zygote_of_a_dataset_that_cannot_be_pickled_is_named_in_each_quarantine(self):
        # Forked from the trainer, such a dataset runs (as in torch's forked workers); a zygote
        # killed from outside cannot be started anew from it, and what is left of the epoch is
        # quarantined naming why. Samples 2 to 5 hang until their workers are killed.
        with tempfile.TemporaryDirectory() as marks:
            dataset = Faulty(6, marks, hangs=[2, 3, 4, 5])
            dataset.transform = lambda x: x
            with conveyor.DataLoader(dataset, batch_size=2, num_workers=2, policy="in_order",
                                     max_sample_retries=1) as loader, \
                    self.assertWarnsRegex(UserWarning, "epoch 0: 4 of 6 samples quarantined"):
                batches = iter(loader)
                got = [int(i) for i in next(batches)["index"]]
                zygote = psutil.Process(loader._zygote[0])
                workers = zygote.children()
                zygote.kill()
                for w in workers:
                    w.kill()
                _, alive = psutil.wait_procs([zygote] + workers, timeout=WAIT_S)
                self.assertEqual(alive, [])
                rest = list(batches)
                report = loader.report()
        self.assertEqual(got, [0, 1])
        self.assertEqual(len(rest), 2)  # the epoch's first sample again, as a rank's pads
        reasons = {q["index"]: q["reason"] for q in report["quarantined_samples"]
                   if q["epoch"] == 0}
        self.assertEqual(sorted(reasons), [2, 3, 4, 5], report)
        for index, reason in reasons.items():
            self.assertRegex(reason, r"another cannot be started: the dataset \(Faulty\) or "
                                     r"worker_init_fn cannot be pickled .*lambda", index)

    def stop_the_script(self, sig, arguments=""):
        """Runs a training script until its first batch (sample 5 then holds a worker), sends
        it `sig`; returns its exit code, the processes its loader started (the node, the zygote
        the script forked, the workers forked from that), and its loader's directory."""
        with tempfile.TemporaryDirectory() as marks:
            script = os.path.join(marks, "train.py")
            with open(script, "w") as f:
                f.write(TRAINING_SCRIPT.format(here=HERE, marks=marks, arguments=arguments))
            proc = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, text=True,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1", TMPDIR=self.tmp))
            try:
                line = read_line(proc, WAIT_S)
                self.assertIsNotNone(line, "no first batch")
                _, loader_dir, _, node_pid = line.split()
                family = psutil.Process(proc.pid).children(recursive=True)
                self.assertIn(int(node_pid), [p.pid for p in family])
                self.assertGreaterEqual(len(family), 3)  # the node, the zygote, a worker
                proc.send_signal(sig)
                rc = proc.wait(timeout=WAIT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
        return rc, family, loader_dir

    def test_ctrl_c_stops_the_loader_and_every_process(self):
        # In Conveyor's order, and in a sampler's own (its epoch's node started for it).
        for arguments in ("", "sampler=[0, 1, 5, 2, 3, 4, 6, 7]"):
            rc, family, loader_dir = self.stop_the_script(signal.SIGINT, arguments)
            self.assertNotEqual(rc, 0, arguments)
            _, alive = psutil.wait_procs(family, timeout=WAIT_S)
            self.assertEqual(alive, [], f"processes outlived the script ({arguments})")
            self.assertFalse(os.path.exists(loader_dir), f"its directory outlived it "
                                                         f"({arguments})")

    def test_a_trainer_killed_mid_epoch_leaves_no_node_and_no_worker(self):
        rc, family, loader_dir = self.stop_the_script(signal.SIGKILL)
        self.assertEqual(rc, -signal.SIGKILL)
        _, alive = psutil.wait_procs(family, timeout=WAIT_S)
        self.assertEqual(alive, [], "the node or its workers outlived their trainer")
        self.assertTrue(os.path.isdir(loader_dir))  # a killed process removes nothing
        with conveyor.DataLoader(Indexed(2)) as loader:  # the next loader does
            next(iter(loader))
            self.assertFalse(os.path.exists(loader_dir), "an orphaned directory was left")
            self.assertTrue(os.path.isdir(loader._dir))


if __name__ == "__main__":
    unittest.main()
