#!/usr/bin/python3
"""The UNet3D recipe's steps (config/examples/unet3d-kits19.toml: rand_balanced_crop, rand_flip,
cast, rand_brightness, gaussian_noise) against the MLPerf reference's training transforms
(tests/python/unet3d_reference.py, checked against the reference file itself by its selfcheck),
given the same random draws: the reference draws, every draw is recorded (site, value), and
tests/tools/chain_probe replays them through the C++ chain, site for site.

Crop and flip must agree bit for bit (image and label); brightness and noise within float32
rounding of the reference (the test prints the largest difference in units in the last place;
it allows 1). The cases are the selfcheck's: kidneys with tumours, two objects with one at a
border, extents equal to the patch and one more, an object wider than the patch, and small
cases (patch 32) with many objects, equal boxes (argsort ties) and an exact shape. Each case
runs with the reference's own draws and with the branches forced: the foreground crop with
brightness and noise applied, the random crop with neither, every axis flipped.

Environment (CTest sets it): CONVEYOR_CHAIN_PROBE, CONVEYOR_RECIPE. Exit 77 (skipped) without
NumPy or SciPy."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import unet3d_reference as ref
except ImportError as missing:  # numpy or scipy
    print(f"skipped: {missing}")
    sys.exit(77)
from ctest_env import env


class ForcedDraws(ref.Draws):
    """`inner`'s draws, except the sites in `forced` (site -> value), which take that value."""

    def __init__(self, inner, forced):
        self.inner = inner
        self.forced = forced

    def random(self, site):
        value = self.inner.random(site)
        return self.forced.get(site, value)

    def randrange(self, site, n):
        return self.inner.randrange(site, n)

    def choice_index(self, site, n):
        return self.inner.choice_index(site, n)

    def uniform(self, site, low, high):
        return self.inner.uniform(site, low, high)

    def standard_normal(self, site, shape):
        return self.inner.standard_normal(site, shape)


FOREGROUND_BOTH = {"crop.oversample": 0.1, "brightness.apply": 0.05, "noise.apply": 0.05}
RANDOM_NEITHER = {"crop.oversample": 0.9, "brightness.apply": 0.5, "noise.apply": 0.5}
ALL_FLIPS = {"flip0": 0.1, "flip1": 0.2, "flip2": 0.3, "crop.oversample": 0.2,
             "brightness.apply": 0.01}
VARIANTS = [("reference draws", {}), ("foreground + brightness + noise", FOREGROUND_BOTH),
            ("random crop, no intensity", RANDOM_NEITHER), ("every axis flipped", ALL_FLIPS)]


def write_draws(path, log, normals_path):
    with open(path, "w") as out:
        for site, value in log:
            if site == "noise.z":
                np.asarray(value, dtype="<f8").tofile(normals_path)
                value = normals_path
            elif isinstance(value, float):
                value = repr(value)
            out.write(f"{site} {value}\n")


def ulps(a, b):
    """Largest distance between float32 arrays in units in the last place."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


def recipe_with_patch(recipe, patch, path):
    """The recipe with its crop's patch set to `patch`, written to `path`."""
    with open(recipe) as f:
        text = f.read()
    size = "size = [128, 128, 128]"
    if size not in text:
        raise SystemExit(f"{recipe}: no '{size}' to set the patch in")
    with open(path, "w") as f:
        f.write(text.replace(size, f"size = [{patch[0]}, {patch[1]}, {patch[2]}]"))


def main():
    probe = env("CONVEYOR_CHAIN_PROBE")
    recipe = env("CONVEYOR_RECIPE")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        trials = []
        lines = {}  # patch -> chain_probe's lines
        for c, (name, image, label, patch) in enumerate(ref._cases()):
            x, y = os.path.join(tmp, f"case{c}_x.npy"), os.path.join(tmp, f"case{c}_y.npy")
            np.save(x, image)
            np.save(y, label)
            for v, (variant, forced) in enumerate(VARIANTS):
                rec = ref.RecordingDraws(ForcedDraws(ref.ReferenceDraws(1000 * c + v), forced))
                want_image, want_label = ref.train_sample(image, label, rec, patch_size=patch)
                stem = os.path.join(tmp, f"t{c}_{v}")
                write_draws(stem + ".draws", rec.log, stem + ".f64")
                sites = {site for site, _ in rec.log}
                intensity = bool({"brightness.factor", "noise.std"} & sites)
                trials.append((f"{name} / {variant}", stem, want_image, want_label, intensity,
                               sorted(sites)))
                lines.setdefault(tuple(patch), []).append(
                    f"{stem}.draws {stem}.out x.npy={x} y.npy={y}")
        for k, (patch, patch_lines) in enumerate(lines.items()):
            topology, listing = os.path.join(tmp, f"recipe{k}.toml"), os.path.join(tmp, f"list{k}")
            recipe_with_patch(recipe, patch, topology)
            with open(listing, "w") as out:
                out.write("\n".join(patch_lines) + "\n")
            run = subprocess.run([probe, topology, listing], capture_output=True, text=True)
            if run.returncode != 0:
                print(run.stderr)
                print(f"FAIL: chain_probe exited {run.returncode}")
                return 1
        foreground = intensity_trials = 0
        for title, stem, want_image, want_label, intensity, sites in trials:
            if os.path.exists(stem + ".out.error"):
                failures.append(f"{title}: " + open(stem + ".out.error").read().strip())
                continue
            got_image = np.load(stem + ".out.image.npy")
            got_label = np.load(stem + ".out.label.npy")
            foreground += "crop.class" in sites
            intensity_trials += intensity
            problems = []
            if got_image.dtype != np.float32 or got_image.shape != want_image.shape:
                problems.append(f"image {got_image.dtype} {got_image.shape}, "
                                f"reference {want_image.dtype} {want_image.shape}")
            elif not np.array_equal(got_label, want_label) or got_label.dtype != np.uint8:
                problems.append(f"label differs at {int(np.sum(got_label != want_label))} voxels")
            else:
                worst = ulps(got_image, want_image.astype(np.float32))
                if worst > (1 if intensity else 0):
                    problems.append(f"image differs by up to {worst} ulp")
                print(f"ok   {title}: label exact, image within {worst} ulp")
            if problems:
                failures.append(f"{title}: " + "; ".join(problems))
        print(f"{len(trials)} trials: {foreground} foreground crops, "
              f"{intensity_trials} with brightness or noise")
        if foreground == 0 or intensity_trials == 0:
            failures.append("the trials did not reach every branch")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
