#!/usr/bin/python3
"""conveyor.Pipeline: a topology run inside the Python process (the embedding API), against
conveyor-node serving the same topology to conveyor.attach: the same batches, byte for byte;
every sample once per epoch; resume from state_dict(); errors that name the file and key;
zero-copy torch tensors; `import conveyor` without the runtime; Ctrl-C during a wait.

Environment: PYTHONPATH (the built package), CONVEYOR_NODE, CONVEYOR_PACK, CONVEYOR_TOPOLOGY
(config/default.toml), CONVEYOR_SOURCE (the source tree). Exits 77 (skipped) where numpy is
missing. Run with Debian's python3.
"""
import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (Debian: python3-numpy)")
    sys.exit(77)

import conveyor
from ctest_env import env, node_process

SAMPLES, BATCH, EPOCHS = 40, 8, 2  # the image recipe's set: 5 batches an epoch
STEPS = 4  # default.toml: decode, random_resized_crop, flip, normalize
DETECTION_SAMPLES = 12
WAIT_S = 120


def settings(shards, **more):
    """The `set` of the image recipe over `shards`: in_order, so that a node and a pipeline
    form the same batches."""
    base = {"dataset.path": shards, "pipeline.batch_size": BATCH, "trainer.epochs": EPOCHS,
            "gpus": 1, "monitor.interval_ms": 10000, "batching.policy": "in_order",
            "dataset.seed": 7}
    base.update(more)
    return base


def as_node_flags(values):
    """The same settings as conveyor-node --set flags, written as conveyor.Pipeline writes
    them."""
    flags = []
    for item in conveyor.pipeline.overrides(values):
        flags += ["--set", item]
    return flags


def optional(read, name):
    """read(name), or None where the field has no such part (conveyor.Error)."""
    try:
        return read(name)
    except conveyor.Error:
        return None


def digest(b):
    """Everything a batch holds, every field generically (values, lengths, offsets,
    strings), as comparable plain values."""
    fields = {}
    for name in b.fields:
        values = b[name]
        lengths = optional(b.lengths, name)
        offsets = optional(b.offsets, name)
        fields[name] = (values.dtype.str, values.shape,
                        hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest(),
                        None if lengths is None else lengths.tolist(),
                        None if offsets is None else offsets.tolist())
    return (b.epoch, b.index, b.last_in_epoch, b.sample_ids.tolist(), b.labels.tolist(),
            list(b.keys), fields)


def served_batches(work, topology, values):
    """Every batch of every epoch, digested, as conveyor-node serves `topology` with `values`
    to conveyor.attach."""
    socket = os.path.join(work, "n.sock")
    command = [env("CONVEYOR_NODE"), "--topology", topology, "--set", f"serve.socket={socket}",
               *as_node_flags(values)]
    with node_process(command, work) as node:
        with conveyor.attach(socket, timeout=60) as feed:
            got = [digest(b) for e in range(feed.epochs) for b in feed.epoch(e)]
        rc = node.wait(timeout=WAIT_S)
    assert rc == 0, node.log
    return got


class PipelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The image recipe on record shards of synthetic JPEGs (conveyor-pack).
        work = tempfile.TemporaryDirectory(prefix="conveyor-pipeline.")
        cls.addClassCleanup(work.cleanup)
        cls.work, cls.topology = work.name, env("CONVEYOR_TOPOLOGY")
        cls.shards = os.path.join(cls.work, "shards")
        subprocess.run([env("CONVEYOR_PACK"), "--synthetic", str(SAMPLES), "--images",
                        os.path.join(cls.work, "images"), "--out", cls.shards],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=WAIT_S)

    def folder(self, name):
        path = os.path.join(self.work, name)
        os.makedirs(path)
        return path

    def test_every_sample_once_per_epoch_through_the_batch_api(self):
        with conveyor.Pipeline(self.topology, set=settings(self.shards)) as p:
            self.assertEqual((p.epochs, p.gpus), (EPOCHS, 1))
            info = p.info
            self.assertEqual((info["dataset_size"], info["batch_size"], info["start_epoch"]),
                             (SAMPLES, BATCH, 0))
            self.assertEqual((info["policy"], info["seed"]), ("in_order", 7))
            self.assertIn(self.topology, repr(p))
            last = None
            for e in range(info["start_epoch"], p.epochs):
                ids = []
                for i, b in enumerate(p.epoch(e, gpu=0)):
                    self.assertIs(type(b), conveyor.Batch)  # the feed's class, not a copy of it
                    self.assertEqual((b.epoch, b.index, b.rank), (e, i, 0))
                    image = b["image"]
                    self.assertEqual((image.dtype, image.shape), (np.float32, (len(b), 3, 224, 224)))
                    self.assertIs(image.base, b)
                    self.assertFalse(image.flags.owndata)
                    self.assertTrue(np.isfinite(image).all())
                    self.assertEqual(b.labels.shape, (len(b),))
                    ids.extend(int(s) for s in b.sample_ids)
                    if b.last_in_epoch and e + 1 == p.epochs:
                        last = b  # held across report(): the run cannot finish before
                    else:
                        b.release()
                self.assertEqual(sorted(ids), list(range(SAMPLES)), f"epoch {e}")
            report = p.report()
            self.assertEqual((report["delivered"], report["duplicates"], report["lost"],
                              report["quarantined"]), (SAMPLES * EPOCHS, 0, 0, 0))
            self.assertEqual(report["steps_executed"], SAMPLES * EPOCHS * STEPS)
            self.assertEqual(set(report), set(self.served_report_keys()))
            last.release()
            with self.assertRaises(conveyor.EndOfData):
                p.next()
        self.assertTrue(p.closed)
        self.assertIn("closed", repr(p))
        with self.assertRaisesRegex(conveyor.Error, "closed"):
            p.next()

    def test_its_metrics_on_a_port_the_system_picks(self):
        values = settings(self.shards, **{"monitor.metrics": "127.0.0.1:0",
                                         "monitor.interval_ms": 50})
        with conveyor.Pipeline(self.topology, set=values) as p:
            port = p.info["metrics_port"]
            self.assertGreater(port, 0)
            for b in p.epoch(0, gpu=0):
                b.release()
            url = f"http://127.0.0.1:{port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as r:
                text = r.read().decode()
            delivered = re.search(r"\nconveyor_samples_delivered_total (\S+)\n", text)
            self.assertIsNotNone(delivered, text)
            self.assertGreaterEqual(float(delivered.group(1)), SAMPLES)  # epoch 1 goes on
            self.assertIn('\nconveyor_trainer_wait_seconds_total{gpu="0"} ', text)
        with self.assertRaises(OSError):  # gone with the pipeline
            urllib.request.urlopen(url, timeout=10)
        with conveyor.Pipeline(self.topology, set=settings(self.shards)) as p:
            self.assertEqual(p.info["metrics_port"], 0)

    def served_report_keys(self):
        work = self.folder("report-keys")
        socket = os.path.join(work, "n.sock")
        command = [env("CONVEYOR_NODE"), "--topology", self.topology, "--set",
                   f"serve.socket={socket}", *as_node_flags(settings(self.shards))]
        with node_process(command, work):
            with conveyor.attach(socket, timeout=60) as feed:
                return feed.report().keys()

    def test_the_same_batches_as_a_served_node(self):
        values = settings(self.shards)
        served = served_batches(self.folder("served"), self.topology, values)
        with conveyor.Pipeline(self.topology, set=values) as p:
            mine = [digest(b) for e in range(p.epochs) for b in p.epoch(e)]
        self.assertEqual(len(mine), EPOCHS * SAMPLES // BATCH)
        self.assertEqual(mine, served)

    def test_detection_the_same_padded_and_ragged_fields_as_a_served_node(self):
        data = self.folder("detection")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(env("CONVEYOR_SOURCE"), "scripts", "make-detection-set"),
                        str(DETECTION_SAMPLES), data, "--per-tar", "4", "--seed", "3"],
                       check=True, stdout=subprocess.DEVNULL, timeout=WAIT_S)
        recipe = conveyor.recipes.path("detection")
        values = {"dataset.path": data, "pipeline.batch_size": 4, "trainer.epochs": 1,
                  "gpus": 1, "batching.policy": "in_order", "monitor.interval_ms": 10000}
        served = served_batches(self.folder("detection-served"), recipe, values)
        with conveyor.Pipeline(recipe, set=values) as p:
            mine = [digest(b) for b in p.epoch(0)]
        self.assertEqual(mine, served)
        self.assertEqual(sorted(s for d in mine for s in d[3]), list(range(DETECTION_SAMPLES)))
        fields = mine[0][6]
        self.assertIsNotNone(fields["image"][3], "the images are padded: they have lengths")
        self.assertIsNotNone(fields["boxes"][4], "the boxes are ragged: they have offsets")

    def test_two_gpus_in_two_threads_share_every_epoch(self):
        # One thread per GPU, as a data-parallel trainer has them: each waits with the GIL
        # released, so the other goes on; every sample reaches one GPU once per epoch.
        values = settings(self.shards, gpus=2, **{"pipeline.next_timeout_s": 60})
        with conveyor.Pipeline(self.topology, set=values) as p:
            taken = {0: [], 1: []}
            errors = []

            def consume(gpu):
                try:
                    for e in range(p.epochs):
                        taken[gpu].extend((e, int(s)) for b in p.epoch(e, gpu=gpu)
                                          for s in b.sample_ids)
                except Exception as error:  # noqa: BLE001 (reported by the main thread)
                    errors.append(error)

            threads = [threading.Thread(target=consume, args=(g,)) for g in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])
        self.assertTrue(taken[0] and taken[1], "both GPUs got batches")
        self.assertEqual(sorted(taken[0] + taken[1]),
                         [(e, i) for e in range(EPOCHS) for i in range(SAMPLES)])

    def test_a_state_dict_mid_epoch_resumes_with_exactly_the_rest(self):
        values = settings(self.shards)
        with conveyor.Pipeline(self.topology, set=values) as p:
            taken = []
            for _ in range(3):
                with p.next() as b:
                    taken.extend(int(s) for s in b.sample_ids)
            state = p.state_dict()
            with p.next():
                pass  # taken after the state: it comes again
        self.assertEqual(set(state), {"conveyor_state"})
        self.assertIsInstance(state["conveyor_state"], bytes)
        for given in (state, state["conveyor_state"]):
            with conveyor.Pipeline(self.topology, set=values, state=given) as resumed:
                info = resumed.info
                self.assertEqual((info["start_epoch"], info["delivered_before"]),
                                 (0, len(taken)))
                rest = [int(s) for b in resumed.epoch(0) for s in b.sample_ids]
                self.assertEqual(sorted(rest + taken), list(range(SAMPLES)))
                self.assertFalse(set(rest) & set(taken))
                later = sorted(int(s) for b in resumed.epoch(1) for s in b.sample_ids)
                self.assertEqual(later, list(range(SAMPLES)))

    def test_a_bad_state_is_an_error(self):
        for bad in ({"other": b"x"}, b"", 42):
            with self.assertRaisesRegex(conveyor.Error, "state"):
                conveyor.Pipeline(self.topology, set=settings(self.shards), state=bad)
        damaged = {"conveyor_state": b"CVYRESUM" + bytes(40)}
        with self.assertRaisesRegex(conveyor.Error, "resume state"):
            conveyor.Pipeline(self.topology, set=settings(self.shards), state=damaged)

    def test_a_bad_key_is_named(self):
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.Pipeline(self.topology, set=settings(self.shards, **{"pipeline.batch_sise": 8}))
        self.assertIn("pipeline.batch_sise", str(caught.exception))
        self.assertEqual(caught.exception.code, "invalid_config")
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.Pipeline(self.topology, set=settings(self.shards, **{"pipeline.batch_size": "8"}))
        self.assertIn("pipeline.batch_size", str(caught.exception))
        with self.assertRaisesRegex(TypeError, "set\\['dataset.path'\\] is a object"):
            conveyor.Pipeline(self.topology, set={"dataset.path": object()})

    def test_a_missing_topology_is_named(self):
        missing = os.path.join(self.work, "no-such-topology.toml")
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.Pipeline(missing)
        self.assertNotIsInstance(caught.exception, conveyor.EndOfData)
        self.assertIn(missing, str(caught.exception))
        self.assertEqual(caught.exception.code, "not_found")

    def test_set_is_written_as_toml_values(self):
        from conveyor.pipeline import overrides
        import pathlib
        self.assertEqual(
            overrides({"a.s": 'x "y" \\ z', "a.p": pathlib.Path("/d/e"), "a.i": 8, "a.b": True,
                       "a.f": 0.5, "a.n": float("inf"), "a.l": [1, "t"], "a.t": {"k": False},
                       "a.u": "é\n"}),
            ['a.s="x \\"y\\" \\\\ z"', 'a.p="/d/e"', "a.i=8", "a.b=true", "a.f=0.5", "a.n=inf",
             'a.l=[1, "t"]', 'a.t={"k" = false}', 'a.u="é\\u000a"'])
        self.assertEqual(overrides(None), [])
        with self.assertRaisesRegex(TypeError, "dict"):
            overrides(["dataset.path=/x"])

    def test_torch_tensors_share_the_batch_memory(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (Debian: python3-torch)")
        with conveyor.Pipeline(self.topology, set=settings(self.shards)) as p:
            with p.next() as b:
                image = b["image"]
                tensor = torch.from_numpy(image)
                self.assertEqual(tensor.data_ptr(), image.__array_interface__["data"][0])
                image[0, 0, 0, 0] = 12.5  # one memory: a write through numpy shows in torch
                self.assertEqual(float(tensor[0, 0, 0, 0]), 12.5)
                self.assertEqual(tuple(torch.as_tensor(b["image"]).shape), image.shape)
                self.assertEqual(torch.as_tensor(b["image"]).data_ptr(), tensor.data_ptr())

    def test_import_conveyor_does_not_load_the_runtime(self):
        script = (
            "import sys, conveyor\n"
            "maps = lambda: open('/proc/self/maps').read()\n"
            "print('pipeline' in sys.modules.get('conveyor').__dict__, "
            "'conveyor._pipeline' in sys.modules, 'libcaf' in maps())\n"
            "conveyor.Pipeline\n"
            "print('conveyor._pipeline' in sys.modules, 'libcaf' in maps())\n")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=WAIT_S)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.split("\n")[:2], ["False False False", "True True"])

    def test_ctrl_c_interrupts_a_wait(self):
        # Two GPUs, in order, a window of two batches: batch b goes to GPU b mod 2. GPU 1 is
        # never consumed, so once its two batches fill the window GPU 0 waits for good (the
        # next timeout is 600 s): it takes batches 0 and 2, and its third next() waits.
        # It says "waiting" from a thread once its main thread runs the line of the third
        # next() (seen in its frame: the thread can look only while next() has let the GIL go,
        # or at that line just before), so that the signal cannot land before it, in the print.
        script = (
            "import sys, threading, time, conveyor\n"
            "p = conveyor.Pipeline(sys.argv[1], set={'dataset.path': sys.argv[2], 'gpus': 2,\n"
            "    'pipeline.batch_size': 8, 'batching.policy': 'in_order',\n"
            "    'pipeline.window_samples': 16, 'pipeline.next_timeout_s': 600})\n"
            "for i in range(2):\n"
            "    p.next(0).release()\n"
            "main = threading.main_thread().ident\n"
            "def announce():\n"
            "    while sys._current_frames()[main].f_lineno != 13:\n"
            "        time.sleep(0.001)  # a poll of this process's own frame, not a wait\n"
            "    print('waiting', file=sys.stderr, flush=True)\n"
            "threading.Thread(target=announce, daemon=True).start()\n"
            "p.next(0)\n")
        self.assertEqual(script.splitlines()[12], "p.next(0)")
        path = os.path.join(self.folder("ctrl-c"), "blocked.py")  # a file: the traceback quotes it
        with open(path, "w") as f:
            f.write(script)
        child = subprocess.Popen([sys.executable, path, self.topology, self.shards],
                                 stderr=subprocess.PIPE, text=True)
        watchdog = threading.Timer(WAIT_S, child.kill)  # a child that never says it waits
        watchdog.start()
        try:
            lines = []
            for line in child.stderr:
                lines.append(line)
                if line.strip() == "waiting":
                    break
            self.assertIn("waiting\n", lines, "".join(lines))
            child.send_signal(signal.SIGINT)
            rc = child.wait(timeout=60)  # far below the 600 s the wait would last
            rest = child.stderr.read()
        finally:
            watchdog.cancel()
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
            child.stderr.close()
        self.assertNotEqual(rc, 0)
        self.assertIn("KeyboardInterrupt", rest)
        self.assertIn("p.next(0)", rest)


if __name__ == "__main__":
    unittest.main()
