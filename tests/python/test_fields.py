#!/usr/bin/python3
"""Named fields through a serving node to a Python trainer, as a detection user has them: a
WebDataset set written with Python's tarfile (scripts/make-detection-set), served by
conveyor-node with config/examples/detection.toml, read by the `conveyor` module. Each
sample's fields are checked against the tar it came from: its image resized to Mask R-CNN's
size (maskrcnn_benchmark's get_size, transcribed below), padded with zeros to the batch's
largest rounded up to 32; its boxes scaled with the image (and mirrored when it was flipped);
its classes and label those of its JSON and cls parts; every sample exactly once per epoch.

Environment: PYTHONPATH (the built module), CONVEYOR_NODE, CONVEYOR_SOURCE (the source tree).
Exits 77 (skipped) where numpy or PIL is missing. Run with Debian's python3.
"""
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest

try:
    import numpy as np
    from PIL import Image
except ImportError:
    print("SKIP: numpy or PIL is not installed (Debian: python3-numpy, python3-pil)")
    sys.exit(77)

import conveyor
from ctest_env import env, node_process

SAMPLES = 22
PER_TAR = 8
BATCH = 4
EPOCHS = 2
WAIT_S = 120
KEY = re.compile(r"sample\d{7}")


def get_size(w, h, size=800, max_size=1333):
    """maskrcnn_benchmark/data/transforms/transforms.py, Resize.get_size: (oh, ow)."""
    min_original, max_original = float(min(w, h)), float(max(w, h))
    if max_original / min_original * size > max_size:
        size = int(round(max_size * min_original / max_original))
    if (w <= h and w == size) or (h <= w and h == size):
        return h, w
    if w < h:
        return int(size * h / w), size
    return size, int(size * w / h)


def read_set(directory):
    """Per key: the image's (width, height), its boxes, classes and label, from the tars."""
    samples = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".tar"):
            continue
        with tarfile.open(os.path.join(directory, name)) as tar:
            for member in tar.getmembers():
                key, ext = member.name.rsplit(".", 1)
                data = tar.extractfile(member).read()
                sample = samples.setdefault(key, {})
                if ext == "jpg":
                    sample["size"] = Image.open(io.BytesIO(data)).size
                elif ext == "json":
                    meta = json.loads(data)
                    sample["boxes"] = np.array(meta["boxes"], dtype=np.float32).reshape(-1, 4)
                    sample["classes"] = meta["classes"]
                elif ext == "cls":
                    sample["label"] = int(data)
    return samples


class FieldsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="conveyor-fields.")
        cls.work = cls.tmp.name
        cls.set = os.path.join(cls.work, "detection")
        source = env("CONVEYOR_SOURCE")
        subprocess.run(["/usr/bin/python3", os.path.join(source, "scripts", "make-detection-set"),
                        str(SAMPLES), cls.set, "--per-tar", str(PER_TAR), "--seed", "3"],
                       check=True, stdout=subprocess.DEVNULL, timeout=WAIT_S)
        cls.samples = read_set(cls.set)
        cls.recipe = os.path.join(source, "config", "examples", "detection.toml")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_sample(self, b, i, image, lengths, boxes, box_rows, classes, class_rows):
        key = KEY.search(b.keys[i]).group(0)
        want = self.samples[key]
        w, h = want["size"]
        oh, ow = get_size(w, h)
        self.assertEqual(tuple(lengths[i]), (oh, ow), key)
        self.assertEqual(int(b.labels[i]), want["label"], key)
        mine = image[i]
        self.assertTrue(np.isfinite(mine[:, :oh, :ow]).all(), key)
        self.assertFalse(mine[:, oh:, :].any(), f"{key}: the rows past its height are 0")
        self.assertFalse(mine[:, :, ow:].any(), f"{key}: the columns past its width are 0")
        got = boxes[box_rows[i]:box_rows[i + 1]]
        self.assertEqual(list(classes[class_rows[i]:class_rows[i + 1]]), want["classes"], key)
        scaled = want["boxes"] * np.array([ow / w, oh / h, ow / w, oh / h], dtype=np.float32)
        mirrored = scaled.copy()
        mirrored[:, 0], mirrored[:, 2] = ow - scaled[:, 2], ow - scaled[:, 0]
        if np.allclose(got, scaled, atol=0.05):
            return False
        self.assertTrue(np.allclose(got, mirrored, atol=0.05), f"{key}: {got} vs {scaled}")
        return len(got) > 0

    def check_batch(self, b):
        self.assertEqual(set(b.fields), {"label", "boxes", "classes", "image"})
        image = b["image"]
        self.assertEqual(image.dtype, np.float32)
        self.assertEqual(image.ndim, 4)
        self.assertEqual((image.shape[0], image.shape[1]), (len(b), 3))
        self.assertFalse(image.flags.owndata)  # a view of the node's shared memory
        lengths = b.lengths("image")
        self.assertEqual(lengths.shape, (len(b), 2))
        # Padded to the batch's largest, rounded up to a multiple of 32.
        self.assertEqual(image.shape[2], -(-int(lengths[:, 0].max()) // 32) * 32)
        self.assertEqual(image.shape[3], -(-int(lengths[:, 1].max()) // 32) * 32)
        boxes, classes = b["boxes"], b["classes"]
        self.assertEqual((boxes.dtype, classes.dtype), (np.float32, np.int64))
        box_rows, class_rows = b.offsets("boxes"), b.offsets("classes")
        self.assertEqual(list(box_rows), list(class_rows))
        self.assertEqual(boxes.shape, (int(box_rows[-1]), 4))
        mirrored = 0
        for i in range(len(b)):
            mirrored += self.check_sample(b, i, image, lengths, boxes, box_rows, classes,
                                          class_rows)
        return mirrored

    def test_detection_batches_hold_each_tar_samples_fields(self):
        socket = os.path.join(self.work, "n.sock")
        with node_process(
                [env("CONVEYOR_NODE"), "--topology", self.recipe,
                 "--set", f"dataset.path={self.set}", "--set", f"serve.socket={socket}",
                 "--set", f"pipeline.batch_size={BATCH}", "--set", f"trainer.epochs={EPOCHS}",
                 "--set", "pipeline.preprocessors=2", "--set", "monitor.interval_ms=10000",
                 "--set", "gpus=1"], self.work) as node:
            mirrored = 0
            with conveyor.attach(socket, rank=0, job=0, timeout=60) as feed:
                self.assertEqual(feed.info()["dataset_size"], SAMPLES)
                last = None
                for e in range(EPOCHS):
                    keys = []
                    for b in feed.epoch(e):
                        mirrored += self.check_batch(b)
                        keys.extend(KEY.search(k).group(0) for k in b.keys)
                        if e + 1 == EPOCHS and b.last_in_epoch:
                            last = b  # held: the node cannot finish before report()
                        else:
                            b.release()
                    self.assertEqual(sorted(keys), sorted(self.samples), f"epoch {e}")
                report = feed.report()
                if last is not None:
                    last.release()
                self.assertEqual((report["delivered"], report["lost"], report["quarantined"]),
                                 (SAMPLES * EPOCHS, 0, 0))
            self.assertGreater(mirrored, 0, "the flip (p 0.5) mirrored some boxes")
            self.assertEqual(node.wait(timeout=WAIT_S), 0)
        self.assertNotIn("error", node.log.lower(), node.log)


if __name__ == "__main__":
    unittest.main()
