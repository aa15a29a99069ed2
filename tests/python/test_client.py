#!/usr/bin/python3
"""The Python module `conveyor` against a real conveyor-node (serve.socket).

Environment: PYTHONPATH (the built module), CONVEYOR_NODE, CONVEYOR_PACK, CONVEYOR_TOPOLOGY
(config/default.toml). Exits 77 (skipped) where numpy is missing. Run with Debian's python3.
"""
import gc
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (Debian: python3-numpy)")
    sys.exit(77)

import conveyor
from ctest_env import env

SAMPLES = 48
BATCH = 8
EPOCHS = 2
STEPS = 4  # default.toml: decode, random_resized_crop, flip, normalize
WAIT_S = 120


class Node:
    """conveyor-node serving `socket`, started in __init__; stop() returns its rc and output."""

    def __init__(self, work, shards, socket, *extra):
        self.out = open(os.path.join(work, "node.json"), "w+")
        self.err = open(os.path.join(work, "node.err"), "w+")
        self.proc = subprocess.Popen(
            [env("CONVEYOR_NODE"), "--topology", env("CONVEYOR_TOPOLOGY"),
             "--set", f"serve.socket={socket}", "--set", f"dataset.path={shards}",
             "--set", f"pipeline.batch_size={BATCH}", "--set", f"trainer.epochs={EPOCHS}",
             "--set", "monitor.interval_ms=10000", "--set", "gpus=1", *extra],
            stdout=self.out, stderr=self.err)

    def wait(self, timeout=WAIT_S):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.out.close()
        self.err.close()

    def output(self):
        self.out.seek(0)
        self.err.seek(0)
        return self.out.read(), self.err.read()

    def json_lines(self):
        out, _ = self.output()
        lines = []
        for line in out.splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
        return lines


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="conveyor-py.")
        cls.work = cls.tmp.name
        cls.shards = os.path.join(cls.work, "shards")
        subprocess.run([env("CONVEYOR_PACK"), "--synthetic", str(SAMPLES), "--images",
                        os.path.join(cls.work, "images"), "--out", cls.shards],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=WAIT_S)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def node(self, name, *extra):
        work = os.path.join(self.work, name)
        os.makedirs(work)
        socket = os.path.join(work, "n.sock")
        node = Node(work, self.shards, socket, *extra)
        self.addCleanup(node.kill)
        return node, socket

    def assert_node_ok(self, node):
        rc = node.wait()
        out, err = node.output()
        self.assertEqual(rc, 0, f"node rc {rc}\nstdout:\n{out}\nstderr:\n{err}")

    def test_two_epochs(self):
        node, socket = self.node("epochs")
        with conveyor.attach(socket, rank=0, job=0, timeout=30) as feed:
            info = feed.info()
            self.assertEqual((info["rank"], info["job"], info["ranks"], info["jobs"]), (0, 0, 1, 1))
            self.assertEqual(info["epochs"], EPOCHS)
            self.assertEqual(feed.epochs, EPOCHS)
            self.assertEqual((feed.rank, feed.job), (0, 0))
            self.assertEqual(info["dataset_size"], SAMPLES)
            self.assertEqual(info["batch_size"], BATCH)
            self.assertEqual((info["channels"], info["height"], info["width"]), (3, 224, 224))
            self.assertEqual(info["dtype"], "float32")
            self.assertEqual(info["start_epoch"], 0)
            self.assertTrue(info["writable"])  # one job: batches may be written in place
            last = None
            for e in range(info["start_epoch"], feed.epochs):
                ids = []
                batches = 0
                for b in feed.epoch(e):
                    self.assertEqual(b.epoch, e)
                    self.assertEqual(b.index, batches)
                    self.assertEqual(b.rank, 0)
                    self.assertGreater(len(b), 0)
                    self.assertEqual(len(b), b.size)
                    images = b.images
                    self.assertEqual(images.dtype, np.float32)
                    self.assertEqual(images.shape, (len(b), 3, 224, 224))
                    if len(b) == BATCH:
                        self.assertEqual(images.shape, (BATCH, 3, 224, 224))
                    # Zero-copy: the array is a view of the shared memory, its base the batch.
                    self.assertFalse(images.flags.owndata)
                    self.assertIs(images.base, b)
                    self.assertTrue(images.flags.writeable)
                    self.assertTrue(images.flags.c_contiguous)
                    self.assertTrue(np.isfinite(images).all())
                    self.assertGreater(float(np.abs(images).sum()), 0)
                    self.assertEqual(b.labels.dtype, np.int32)
                    self.assertEqual(b.labels.shape, (len(b),))
                    self.assertEqual(b.sample_ids.dtype, np.uint64)
                    self.assertEqual(len(b.keys), len(b))
                    self.assertTrue(all(isinstance(k, str) and k for k in b.keys))
                    self.assertGreater(b.ready_ns, 0)
                    ids.extend(int(i) for i in b.sample_ids)
                    batches += 1
                    if b.last_in_epoch:
                        # Held across report(): the node cannot finish before we release it.
                        last = b
                    else:
                        b.release()
                self.assertEqual(sorted(ids), list(range(SAMPLES)), f"epoch {e}")
                self.assertEqual(batches, SAMPLES // BATCH)
                if last is not None and e + 1 < feed.epochs:
                    last.release()
                    last = None
            report = feed.report()
            self.assertEqual(report["delivered"], SAMPLES * EPOCHS)
            self.assertEqual(report["duplicates"], 0)
            self.assertEqual(report["lost"], 0)
            self.assertEqual(report["quarantined"], 0)
            self.assertEqual(report["steps_executed"], SAMPLES * EPOCHS * STEPS)
            with self.assertRaises(conveyor.EndOfData) as caught:
                feed.next()
            self.assertEqual(caught.exception.code, "not_found")
            with self.assertRaises(conveyor.EndOfData):
                feed.epoch(EPOCHS)
            if last is not None:
                last.release()
        self.assert_node_ok(node)
        final = [j for j in node.json_lines() if "steps_executed" in j]
        self.assertTrue(final, node.output()[0])
        self.assertEqual(final[-1]["steps_executed"], SAMPLES * EPOCHS * STEPS)

    def test_release_and_context_manager(self):
        node, socket = self.node("release")
        feed = conveyor.attach(socket, timeout=30)
        try:
            b = feed.next()
            self.assertGreater(len(b), 0)
            images = b.images
            self.assertIs(images.base, b)
            b.release()
            self.assertTrue(b.released)
            b.release()  # idempotent
            with self.assertRaises(conveyor.Error) as caught:
                b.images
            self.assertIn("released", str(caught.exception))
            # What was copied stays readable.
            self.assertEqual(len(b.sample_ids), len(b))
            self.assertEqual(len(b.labels), len(b))
            del images, b

            with feed.next() as b:
                self.assertFalse(b.released)
                self.assertEqual(b.images.shape[0], len(b))
            self.assertTrue(b.released)
            with self.assertRaises(conveyor.Error):
                b.images

            # The feed's memory holds every batch; a release with a stream (after an
            # asynchronous copy) gives the batch back too: once the stream's work completed,
            # or, where CUDA cannot queue on it (no GPU here), at once.
            memory = feed.memory()
            b = feed.next()
            start = b.images.ctypes.data
            self.assertTrue(memory["address"] <= start < memory["address"] + memory["bytes"])
            self.assertEqual(memory["writable"], b.writable)
            b.release(stream=1)  # cudaStreamLegacy
            self.assertTrue(b.released)
            del b

            # An array keeps its batch (and the memory) alive after the Batch object is gone.
            b = feed.next()
            first = b.images[0, 0, 0, 0].copy()
            images = b.images
            del b
            gc.collect()
            self.assertEqual(images[0, 0, 0, 0], first)
            self.assertIsInstance(images.base, conveyor.Batch)
            del images  # the batch goes back here
            gc.collect()

            # The slots come back: the rest of both epochs can be read, holding one batch at a
            # time (more than pipeline.prefetch_batches + 1 batches in all).
            count = 4
            while True:
                try:
                    b = feed.next()
                except conveyor.EndOfData:
                    break
                count += 1
                b = None
            self.assertGreaterEqual(count, SAMPLES * EPOCHS // BATCH)
            # An epoch that has ended is an error that says so.
            with self.assertRaises(conveyor.Error) as caught:
                feed.epoch(0)
            self.assertIn("has ended", str(caught.exception))
        finally:
            feed.close()
        feed.close()  # idempotent
        self.assertTrue(feed.closed)
        with self.assertRaises(conveyor.Error) as caught:
            feed.next()
        self.assertIn("closed", str(caught.exception))
        self.assert_node_ok(node)

    def test_epoch_out_of_turn(self):
        node, socket = self.node("turn")
        with conveyor.attach(socket, timeout=30) as feed:
            with self.assertRaises(conveyor.Error) as caught:
                feed.epoch(1)
            self.assertNotIsInstance(caught.exception, conveyor.EndOfData)
            self.assertIn("epoch 0", str(caught.exception))
            self.assertEqual(caught.exception.code, "invalid_argument")
            for e in range(feed.epochs):
                for b in feed.epoch(e):
                    b.release()
        self.assert_node_ok(node)

    def test_bad_attaches(self):
        missing = os.path.join(self.work, "missing.sock")
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.attach(missing)
        self.assertNotIsInstance(caught.exception, conveyor.EndOfData)
        self.assertIsInstance(caught.exception, conveyor.NotFound)
        self.assertIn(missing, str(caught.exception))
        self.assertEqual(caught.exception.code, "not_found")
        # os.PathLike works too.
        import pathlib
        with self.assertRaises(conveyor.Error):
            conveyor.attach(pathlib.Path(missing))

        node, socket = self.node("badrank")
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.attach(socket, rank=5, timeout=30)
        self.assertNotIsInstance(caught.exception, conveyor.EndOfData)
        self.assertIn("rank 5", str(caught.exception))
        # The node still serves rank 0 afterwards.
        with conveyor.attach(socket, rank=0, timeout=30) as feed:
            for e in range(feed.epochs):
                for b in feed.epoch(e):
                    b.release()
        self.assert_node_ok(node)

    def test_jobs_share_read_only_batches(self):
        # serve.jobs = 2: both jobs read the same batches, which must not be written.
        node, socket = self.node("jobs", "--set", "serve.jobs=2")
        with conveyor.attach(socket, job=0, timeout=30) as a, \
                conveyor.attach(socket, job=1, timeout=30) as b:
            self.assertFalse(a.info()["writable"])
            self.assertEqual(a.info()["jobs"], 2)
            for e in range(a.epochs):
                ids = []
                for x, y in zip(a.epoch(e), b.epoch(e)):
                    self.assertFalse(x.writable)
                    self.assertFalse(x.images.flags.writeable)
                    with self.assertRaises(ValueError):
                        x.images[0, 0, 0, 0] = 1
                    self.assertTrue(np.array_equal(x.images, y.images))
                    self.assertEqual(list(x.sample_ids), list(y.sample_ids))
                    self.assertEqual(x.last_in_epoch, y.last_in_epoch)
                    ids.extend(int(i) for i in x.sample_ids)
                    x.release()
                    y.release()
                self.assertEqual(sorted(ids), list(range(SAMPLES)))
        self.assert_node_ok(node)

    def test_feeds_in_threads_of_one_process(self):
        # A trainer that drives its GPUs from threads: a feed per thread, two ranks of one job
        # or two jobs, each thread takes every batch of its feed; batches are given back by
        # collection (no release() call), and the feeds close in their own threads.
        for name, extra, pairs in (("threads-ranks", ("--set", "gpus=2"), ((0, 0), (1, 0))),
                                   ("threads-jobs", ("--set", "serve.jobs=2"), ((0, 0), (0, 1)))):
            with self.subTest(name):
                node, socket = self.node(name, *extra)
                feeds = [conveyor.attach(socket, rank=r, job=j, timeout=30, next_timeout=WAIT_S)
                         for r, j in pairs]
                ids = {}
                errors = []

                def take(feed):
                    try:
                        seen = []
                        for e in range(feed.epochs):
                            for b in feed.epoch(e):
                                seen.extend((e, int(i)) for i in b.sample_ids)
                                del b  # collected: given back by the Batch's destructor
                        feed.close()
                        ids[(feed.rank, feed.job)] = seen
                    except Exception as error:  # reported below, in the test's thread
                        errors.append(repr(error))

                threads = [threading.Thread(target=take, args=(f,)) for f in feeds]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=WAIT_S)
                self.assertFalse(any(t.is_alive() for t in threads), "a feed's thread hangs")
                self.assertEqual(errors, [])
                if name == "threads-ranks":
                    both = sorted(ids[(0, 0)] + ids[(1, 0)])
                    self.assertEqual(both, [(e, i) for e in range(EPOCHS) for i in range(SAMPLES)])
                else:
                    for seen in ids.values():
                        self.assertEqual(sorted(seen),
                                         [(e, i) for e in range(EPOCHS) for i in range(SAMPLES)])
                self.assert_node_ok(node)

    def test_resume_from_state_dict(self):
        # A trainer takes 3 batches and checkpoints the feed's state_dict() with its model
        # (pickled, as torch.save does); its node dies. A new node with serve.resume = true
        # and the trainer attached with that state deliver exactly the rest of each epoch.
        node, socket = self.node("resume-before")
        received = {e: [] for e in range(EPOCHS)}
        with conveyor.attach(socket, timeout=30) as feed:
            for _ in range(3):
                with feed.next() as b:
                    received[b.epoch].extend(int(i) for i in b.sample_ids)
            saved = pickle.dumps({"model": {}, "loader": feed.state_dict()})
        node.kill()
        state = pickle.loads(saved)["loader"]
        self.assertEqual(sorted(state), ["conveyor_state"])
        self.assertIsInstance(state["conveyor_state"], bytes)
        self.assertLess(len(state["conveyor_state"]), 200)

        node, socket = self.node("resume-after", "--set", "serve.resume=true")
        with conveyor.attach(socket, timeout=30, state=state) as feed:
            for e in range(feed.info()["start_epoch"], feed.epochs):
                for b in feed.epoch(e):
                    received[b.epoch].extend(int(i) for i in b.sample_ids)
                    b.release()
        self.assert_node_ok(node)
        for e in range(EPOCHS):
            self.assertEqual(sorted(received[e]), list(range(SAMPLES)), f"epoch {e}")

    def test_signed_states(self):
        # A node with serve.state_key_file signs what state_dict() returns; a restarted node
        # with the same key resumes from it, and refuses the same bytes with the signature
        # tampered with.
        key = os.path.join(self.work, "signed.key")
        node, socket = self.node("signed-before", "--set", f"serve.state_key_file={key}")
        received = []
        with conveyor.attach(socket, timeout=30) as feed:
            for _ in range(2):
                with feed.next() as b:
                    received.extend((b.epoch, int(i)) for i in b.sample_ids)
            state = feed.state_dict()
        node.kill()
        blob = state["conveyor_state"]
        self.assertIn(b"CVYRSIGN", blob)
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        node, socket = self.node("signed-after", "--set", "serve.resume=true",
                                 "--set", f"serve.state_key_file={key}")
        tampered = {"conveyor_state": blob[:-1] + bytes([blob[-1] ^ 1])}
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.attach(socket, timeout=30, next_timeout=30, state=tampered)
        self.assertIn("not signed by this node's key", str(caught.exception))
        with conveyor.attach(socket, timeout=30, state=state) as feed:
            for e in range(feed.info()["start_epoch"], feed.epochs):
                for b in feed.epoch(e):
                    received.extend((b.epoch, int(i)) for i in b.sample_ids)
                    b.release()
        self.assert_node_ok(node)
        self.assertEqual(sorted(received), [(e, i) for e in range(EPOCHS) for i in range(SAMPLES)])

    def test_bad_states(self):
        node, socket = self.node("bad-state", "--set", "serve.resume=true")
        for bad in ({"other": b"x"}, b"", 42):
            with self.assertRaises(conveyor.Error) as caught:
                conveyor.attach(socket, timeout=30, state=bad)
            self.assertIn("state", str(caught.exception))
        damaged = {"conveyor_state": b"CVYRESUM" + bytes(40)}
        with self.assertRaises(conveyor.Error) as caught:
            conveyor.attach(socket, timeout=30, next_timeout=30, state=damaged)
        self.assertIn("resume state", str(caught.exception))
        node.kill()

    def test_timeout(self):
        # A node whose batches take far longer than next_timeout: next() raises
        # conveyor.TimeoutError, which is also the builtin TimeoutError.
        node, socket = self.node("slow", "--set", "faults.delay_ms=3000",
                                 "--set", "faults.delay_probability=1")
        feed = conveyor.attach(socket, timeout=30, next_timeout=0.3)
        try:
            with self.assertRaises(TimeoutError) as caught:
                feed.next()
            self.assertIsInstance(caught.exception, conveyor.TimeoutError)
            self.assertEqual(caught.exception.code, "timed_out")
        finally:
            feed.close()
        node.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)
