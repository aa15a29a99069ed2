#!/usr/bin/python3
"""Pixel parity with torchvision: a model must see what it would have seen with the loader it
came from. Conveyor's transform chain (tests/tools/transform_probe.cpp, the steps a node runs,
at the default settings: scaled decode on, bilinear interpolation) against torchvision on PIL
images, on a generated heavy-tailed set (10% of the images 1800-3200 px):

- the ImageNet evaluation recipe: Resize(256), CenterCrop(224);
- random_resized_crop with given boxes, against torchvision.transforms.functional.resized_crop,
  boxes drawn at random and boxes touching every edge;
- flip and normalize on the same pixels: exactly.

PSNR in pixel units (uint8 outputs): every image >= 40 dB, the median >= 45 dB.

Environment: CONVEYOR_PROBE (transform_probe), CONVEYOR_PACK (conveyor-pack). Exits 77
(skipped) where numpy, PIL or torchvision is missing. Run with Debian's python3.
"""
import os
import random
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    import torch
    from PIL import Image
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
except ImportError as missing:
    print(f"SKIP: {missing} (Debian: python3-torchvision python3-pil)")
    sys.exit(77)

from ctest_env import env

IMAGES = 60
MIN_DB = 40.0
MEDIAN_DB = 45.0


def chain(*transforms):
    """A topology whose chain is decode (default settings) followed by `transforms`."""
    text = '[dataset]\npath = "unused"\n[[transform]]\nop = "decode"\n'
    for t in transforms:
        text += "[[transform]]\n" + t + "\n"
    return text


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


class Parity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        images = os.path.join(cls.dir.name, "images")
        subprocess.run([env("CONVEYOR_PACK"), "--synthetic", str(IMAGES), "--images", images,
                        "--out", os.path.join(cls.dir.name, "shards"),
                        "--large-fraction", "0.1", "--seed", "19"],
                       check=True, capture_output=True)
        cls.files = sorted(os.path.join(root, f) for root, _, names in os.walk(images)
                           for f in names if f.endswith(".jpg"))
        assert len(cls.files) == IMAGES, cls.files
        cls.large = sum(max(Image.open(f).size) >= 1800 for f in cls.files)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def probe(self, topology, lines):
        """The outputs of our chain for LIST `lines`, as arrays (CHW)."""
        base = os.path.join(self.dir.name, f"probe{random.random()}")
        with open(base + ".toml", "w") as f:
            f.write(topology)
        with open(base + ".list", "w") as f:
            f.write("\n".join(lines) + "\n")
        run = subprocess.run([env("CONVEYOR_PROBE"), base + ".toml", base + ".list",
                              base + ".out"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        data = open(base + ".out", "rb").read()
        out, at = [], 0
        for shape in run.stdout.splitlines():
            c, h, w, dtype = shape.split()
            n = int(c) * int(h) * int(w) * (4 if dtype == "float32" else 1)
            out.append(np.frombuffer(data[at:at + n], dtype=dtype).reshape(int(c), int(h),
                                                                             int(w)))
            at += n
        return out

    def assert_parity(self, what, ours, theirs):
        db = [psnr(a, b) for a, b in zip(ours, theirs)]
        median = float(np.median(db))
        print(f"{what}: median {median:.1f} dB, worst {min(db):.1f} dB over {len(db)} images "
              f"({self.large} of {IMAGES} >= 1800 px)", file=sys.stderr)
        self.assertGreaterEqual(min(db), MIN_DB, f"{what}: worst image")
        self.assertGreaterEqual(median, MEDIAN_DB, f"{what}: median")

    def test_the_eval_recipe_matches_torchvision(self):
        ours = self.probe(chain('op = "resize"\nsize = 256', 'op = "center_crop"\nsize = 224',
                                'op = "to_uint8"'), self.files)
        recipe = T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor()])
        theirs = [recipe(Image.open(f).convert("RGB")).numpy() for f in self.files]
        self.assert_parity("eval recipe", ours, theirs)

    def given_boxes(self):
        """Per image a random box (torchvision's own draw) and one touching each edge."""
        rng = random.Random(7)
        torch.manual_seed(7)
        boxes = []
        for f in self.files:
            w, h = Image.open(f).size
            top, left, bh, bw = T.RandomResizedCrop.get_params(
                Image.new("RGB", (w, h)), scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
            boxes.append((f, left, top, bw, bh))
            bw, bh = rng.randint(w // 8, w), rng.randint(h // 8, h)
            corners = [(0, 0), (w - bw, 0), (0, h - bh), (w - bw, h - bh)]
            left, top = corners[rng.randrange(4)]
            boxes.append((f, left, top, bw, bh))
        return boxes

    def test_crops_of_given_boxes_match_resized_crop(self):
        boxes = self.given_boxes()
        ours = self.probe(chain('op = "random_resized_crop"\nsize = 224', 'op = "to_uint8"'),
                          [" ".join(map(str, b)) for b in boxes])
        theirs = [F.pil_to_tensor(F.resized_crop(Image.open(f).convert("RGB"), top, left, h, w,
                                                 [224, 224])).numpy()
                  for f, left, top, w, h in boxes]
        self.assert_parity("given-box crops", ours, theirs)

    def test_flip_and_normalize_are_exact(self):
        lines = self.files[:12]
        crop = ('op = "resize"\nsize = [96, 128]',)
        plain = self.probe(chain(*crop, 'op = "to_uint8"'), lines)
        flipped = self.probe(chain(*crop, 'op = "flip"\np = 1.0', 'op = "to_uint8"'), lines)
        normalized = self.probe(chain(*crop, 'op = "normalize"'), lines)
        normalize = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        for p, fl, n in zip(plain, flipped, normalized):
            np.testing.assert_array_equal(fl, torch.flip(torch.from_numpy(p), [2]).numpy())
            theirs = normalize(torch.from_numpy(p.copy()).float().div(255)).numpy()
            np.testing.assert_allclose(n, theirs, rtol=0, atol=2e-6)


if __name__ == "__main__":
    unittest.main(verbosity=2)
