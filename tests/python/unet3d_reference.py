#!/usr/bin/python3
"""MLPerf UNet3D (KiTS19) training input recipe, transcribed to NumPy/SciPy with injectable draws.

Groundwork for issue 31: Conveyor's C++ UNet3D recipe is to be tested exact against the
reference given the same random draws. This module is that reference, in a form whose every
random draw can be fed from outside.

Source followed (cited per class below as [REF]):
    mlcommons/training, image_segmentation/pytorch/data_loading/pytorch_loader.py
    at commit 6b277bbef8c03875ed41db9fea1f7f5498d4c014 (git blob
    bb71d32f77caadce2b1db4281d191bdf430898cb). The file was last changed by 871d20e1756e0cbc
    ("Add U-Net3D to MLPerf Training v1.0 (#441)"); commit 3c81f6f9559547ae ("Retire some
    benchmarks (#756)") moved it unchanged (same blob) to
    retired_benchmarks/unet3d/pytorch/data_loading/pytorch_loader.py, where it still is at
    aa344c7fb900e82ed19fb94aebfed50c63ab2204 (the newest snapshot read).
Preprocessing ([PRE]): image_segmentation/pytorch/preprocess_dataset.py at the same commit
    (blob 25fb4f03eb3fcebdc5f003a7cef09d9f5a043e83); only pad_to_min_shape and
    normalize_intensity are transcribed (the resampling needs torch; see docs/unet3d-reference.md).

The reference draws from TWO generators: Python's `random` module (random.random,
random.randrange) and NumPy's global legacy RandomState (np.random.choice, np.random.uniform,
np.random.normal). Every draw here goes through a `Draws` object, named by its site:

    site                 generator  call in [REF]                         value
    crop.oversample      random     random.random()                      float in [0, 1)
    crop.corner0..2      random     random.randrange(S_a - P_a)          int in [0, S_a-P_a); skipped if S_a == P_a
    crop.class           numpy      np.random.choice(classes)            index in [0, len(classes))
    crop.object          random     random.randrange(k), k in {1, 2}     int in [0, k)  (drawn even when k == 1)
    crop.adjust0..2      random     random.randrange(|diff_a|)           int in [0, |diff_a|); skipped if diff_a == 0
    flip0..2             random     random.random()                      float in [0, 1)
    brightness.apply     random     random.random()                      float in [0, 1)
    brightness.factor    numpy      np.random.uniform(0.7, 1.3, size=1)  float64 in [0.7, 1.3)
    noise.apply          random     random.random()                      float in [0, 1)
    noise.std            numpy      np.random.uniform(0.0, 0.1)          float64 in [0, 0.1)
    noise.z              numpy      np.random.normal(0, std, shape)      float64 standard normals, image shape
                                                                          (noise = 0.0 + std * z, as legacy normal does)

Draws objects: ReferenceDraws (draws with random.Random / np.random.RandomState seeded like the
reference's random.seed / np.random.seed, the same calls in the same order), ScriptedDraws (replays
a list of (site, value), checking site names and ranges: what a C++ test feeds), RecordingDraws
(wraps another and records the sequence).

CLI:  unet3d_reference.py selfcheck
      runs the reference file's own class code (embedded verbatim, checked against its git blob
      id) with seeded global RNGs and this transcription with ReferenceDraws of the same seed, on
      synthetic volumes, asserts bit-identical outputs, replays the recorded draws through
      ScriptedDraws, and prints OK.
"""
import hashlib
import random
import sys
import types
import warnings

try:
    import numpy as np
    import scipy.ndimage
except ImportError:  # ctest reads 77 as skipped (Debian: python3-numpy, python3-scipy)
    print("SKIP: numpy or scipy is not installed")
    sys.exit(77)

REFERENCE_COMMIT = "6b277bbef8c03875ed41db9fea1f7f5498d4c014"
REFERENCE_PATH = "image_segmentation/pytorch/data_loading/pytorch_loader.py"
REFERENCE_BLOB = "bb71d32f77caadce2b1db4281d191bdf430898cb"

PATCH_SIZE = (128, 128, 128)  # runtime/arguments.py --input_shape default
OVERSAMPLING = 0.4  # runtime/arguments.py --oversampling default

# [PRE] preprocess_dataset.py constants
MEAN_VAL = 101.0
STDDEV_VAL = 76.9
MIN_CLIP_VAL = -79.0
MAX_CLIP_VAL = 304.0
TARGET_SPACING = [1.6, 1.2, 1.2]
TARGET_SHAPE = [128, 128, 128]


# --------------------------------------------------------------------------------------------
# Draws
# --------------------------------------------------------------------------------------------
class Draws:
    """Where every random value of the recipe comes from. Subclasses implement the five kinds."""

    def random(self, site):  # Python random.random(): float in [0, 1)
        raise NotImplementedError

    def randrange(self, site, n):  # Python random.randrange(n), n >= 1: int in [0, n)
        raise NotImplementedError

    def choice_index(self, site, n):  # index drawn by np.random.choice(a) with len(a) == n
        raise NotImplementedError

    def uniform(self, site, low, high):  # np.random.uniform(low, high): float64 in [low, high)
        raise NotImplementedError

    def standard_normal(self, site, shape):  # float64 standard normals of `shape`
        raise NotImplementedError


class ReferenceDraws(Draws):
    """Draws exactly as the reference does after random.seed(seed); np.random.seed(seed)
    (runtime/distributed_utils.py seed_everything seeds both with the same value)."""

    def __init__(self, seed=None, py_rng=None, np_rng=None):
        self.py = py_rng if py_rng is not None else random.Random(seed)
        self.np = np_rng if np_rng is not None else np.random.RandomState(seed)

    def random(self, site):
        return self.py.random()

    def randrange(self, site, n):
        return self.py.randrange(n)

    def choice_index(self, site, n):
        # np.random.choice(a) (1-D a, no p, replace) draws randint(0, len(a)) and returns
        # a[idx]; choice(n) takes the same path with pop_size n and returns idx.
        return int(self.np.choice(n))

    def uniform(self, site, low, high):
        if site == "brightness.factor":
            # [REF] draws with size=1; same stream as size=None, kept literal.
            return float(self.np.uniform(low=low, high=high, size=1)[0])
        return float(self.np.uniform(low=low, high=high))

    def standard_normal(self, site, shape):
        # legacy RandomState.normal(loc, scale, size) is loc + scale * legacy_gauss() per
        # element; standard_normal(size) is legacy_gauss() per element: the same stream.
        return self.np.standard_normal(size=shape)


class RecordingDraws(Draws):
    """Passes every draw to `inner` and records (site, value) in self.log."""

    def __init__(self, inner):
        self.inner = inner
        self.log = []

    def _rec(self, site, value):
        self.log.append((site, value))
        return value

    def random(self, site):
        return self._rec(site, self.inner.random(site))

    def randrange(self, site, n):
        return self._rec(site, self.inner.randrange(site, n))

    def choice_index(self, site, n):
        return self._rec(site, self.inner.choice_index(site, n))

    def uniform(self, site, low, high):
        return self._rec(site, self.inner.uniform(site, low, high))

    def standard_normal(self, site, shape):
        return self._rec(site, self.inner.standard_normal(site, shape))


class ScriptedDraws(Draws):
    """Replays a list of (site, value) in order; raises if the site asked for is not the next one
    in the script or the value is outside the range the reference could have drawn."""

    def __init__(self, script):
        self.script = list(script)
        self.pos = 0

    def _next(self, site):
        if self.pos >= len(self.script):
            raise ValueError(f"script exhausted at draw {self.pos} ({site})")
        want, value = self.script[self.pos]
        if want != site:
            raise ValueError(f"draw {self.pos}: script has {want}, transform asks for {site}")
        self.pos += 1
        return value

    def random(self, site):
        v = float(self._next(site))
        if not 0.0 <= v < 1.0:
            raise ValueError(f"{site}: {v} not in [0, 1)")
        return v

    def randrange(self, site, n):
        v = int(self._next(site))
        if not 0 <= v < n:
            raise ValueError(f"{site}: {v} not in [0, {n})")
        return v

    def choice_index(self, site, n):
        v = int(self._next(site))
        if not 0 <= v < n:
            raise ValueError(f"{site}: {v} not in [0, {n})")
        return v

    def uniform(self, site, low, high):
        v = float(self._next(site))
        if not low <= v < high:
            raise ValueError(f"{site}: {v} not in [{low}, {high})")
        return v

    def standard_normal(self, site, shape):
        v = np.asarray(self._next(site), dtype=np.float64)
        if v.shape != tuple(shape):
            raise ValueError(f"{site}: shape {v.shape}, image is {tuple(shape)}")
        return v

    def exhausted(self):
        return self.pos == len(self.script)


# --------------------------------------------------------------------------------------------
# Pure window arithmetic (explicit arguments; what the C++ side computes)
# --------------------------------------------------------------------------------------------
def random_crop_window(shape, patch_size, corner):
    """[REF] RandBalancedCrop._rand_crop / get_cords: window [c, c + p) per spatial axis.
    `shape` is the spatial shape (S0, S1, S2); corner[a] is the drawn offset."""
    return [(int(corner[a]), int(corner[a]) + patch_size[a]) for a in range(3)]


def adjust_axis(start, stop, size, patch, ladj):
    """[REF] RandBalancedCrop.rand_foreg_cropd.adjust for one axis, with the randrange value
    `ladj` given (0 when |diff| == 0, where the reference draws nothing).
    start, stop: the object's bounding box on this axis; size: the volume's extent."""
    diff = patch - (stop - start)
    sign = -1 if diff < 0 else 1
    diff = abs(diff)
    hadj = diff - ladj
    low = max(0, start - sign * ladj)
    high = min(size, stop + sign * hadj)
    diff = patch - (high - low)
    if diff > 0 and low == 0:
        high += diff
    elif diff > 0:
        low -= diff
    return low, high


def adjust_draw_range(start, stop, patch):
    """The n of random.randrange(n) that adjust() draws for this axis (0: no draw)."""
    return abs(patch - (stop - start))


def foreground_objects(label, cl):
    """[REF] rand_foreg_cropd: bounding boxes (4-D slices over (C, X, Y, Z)) of the connected
    components of label == cl, keeping the two with the largest box volume, in np.argsort
    ascending order (so [second largest, largest])."""
    # [REF] calls scipy.ndimage.measurements.label (deprecated alias of scipy.ndimage.label):
    # default structure for a 4-D input = face connectivity (6-connected in space; the channel
    # axis has extent 1).
    foreg_slices = scipy.ndimage.find_objects(scipy.ndimage.label(label == cl)[0])
    foreg_slices = [x for x in foreg_slices if x is not None]
    slice_volumes = [np.prod([s.stop - s.start for s in sl]) for sl in foreg_slices]
    slice_idx = np.argsort(slice_volumes)[-2:]
    return [foreg_slices[i] for i in slice_idx]


# --------------------------------------------------------------------------------------------
# Transforms. Each works on data = {"image": (C,X,Y,Z) array, "label": (C,X,Y,Z) array} like [REF].
# --------------------------------------------------------------------------------------------
class RandBalancedCrop:
    """[REF] class RandBalancedCrop (pytorch_loader.py @ 6b277bbe, lines 17-78)."""

    def __init__(self, patch_size=PATCH_SIZE, oversampling=OVERSAMPLING):
        self.patch_size = patch_size
        self.oversampling = oversampling

    def __call__(self, data, draws):
        image, label = data["image"], data["label"]
        if draws.random("crop.oversample") < self.oversampling:
            image, label, cords = self.rand_foreg_cropd(image, label, draws)
        else:
            image, label, cords = self._rand_crop(image, label, draws)
        data.update({"image": image, "label": label})
        return data

    @staticmethod
    def randrange(draws, site, max_range):
        # [REF] "return 0 if max_range == 0 else random.randrange(max_range)"; a negative
        # max_range (volume smaller than the patch) raises ValueError there, and here.
        if max_range == 0:
            return 0
        if max_range < 0:
            raise ValueError(f"empty range for randrange() ({site}: {max_range})")
        return draws.randrange(site, max_range)

    def _rand_crop(self, image, label, draws):
        ranges = [s - p for s, p in zip(image.shape[1:], self.patch_size)]
        cord = [self.randrange(draws, f"crop.corner{a}", x) for a, x in enumerate(ranges)]
        (low_x, high_x), (low_y, high_y), (low_z, high_z) = random_crop_window(
            image.shape[1:], self.patch_size, cord)
        image = image[:, low_x:high_x, low_y:high_y, low_z:high_z]
        label = label[:, low_x:high_x, low_y:high_y, low_z:high_z]
        return image, label, [low_x, high_x, low_y, high_y, low_z, high_z]

    def rand_foreg_cropd(self, image, label, draws):
        def adjust(foreg_slice, patch_size, label, idx):
            n = adjust_draw_range(foreg_slice[idx].start, foreg_slice[idx].stop,
                                  patch_size[idx - 1])
            ladj = self.randrange(draws, f"crop.adjust{idx - 1}", n)
            return adjust_axis(foreg_slice[idx].start, foreg_slice[idx].stop, label.shape[idx],
                               patch_size[idx - 1], ladj)

        classes = np.unique(label[label > 0])  # sorted ascending
        if classes.size == 0:
            # [REF] np.random.choice of an empty array raises ValueError before any fallback
            raise ValueError("a cannot be empty unless no samples are taken")
        cl = classes[draws.choice_index("crop.class", classes.size)]
        foreg_slices = foreground_objects(label, cl)
        if not foreg_slices:  # unreachable in [REF] (cl occurs, so it has a component); kept
            return self._rand_crop(image, label, draws)
        foreg_slice = foreg_slices[draws.randrange("crop.object", len(foreg_slices))]
        low_x, high_x = adjust(foreg_slice, self.patch_size, label, 1)
        low_y, high_y = adjust(foreg_slice, self.patch_size, label, 2)
        low_z, high_z = adjust(foreg_slice, self.patch_size, label, 3)
        image = image[:, low_x:high_x, low_y:high_y, low_z:high_z]
        label = label[:, low_x:high_x, low_y:high_y, low_z:high_z]
        return image, label, [low_x, high_x, low_y, high_y, low_z, high_z]


class RandFlip:
    """[REF] class RandFlip (lines 81-95): each of axes 1, 2, 3 flipped when its draw < 1/3."""

    def __init__(self):
        self.axis = [1, 2, 3]
        self.prob = 1 / len(self.axis)

    def flip(self, data, axis):
        data["image"] = np.flip(data["image"], axis=axis).copy()
        data["label"] = np.flip(data["label"], axis=axis).copy()
        return data

    def __call__(self, data, draws):
        for axis in self.axis:
            if draws.random(f"flip{axis - 1}") < self.prob:
                data = self.flip(data, axis)
        return data


class Cast:
    """[REF] class Cast (lines 98-105), used as Cast(types=(np.float32, np.uint8)). No draws."""

    def __init__(self, types=(np.float32, np.uint8)):
        self.types = types

    def __call__(self, data, draws=None):
        data["image"] = data["image"].astype(self.types[0])
        data["label"] = data["label"].astype(self.types[1])
        return data


class RandomBrightnessAugmentation:
    """[REF] class RandomBrightnessAugmentation (lines 108-119), used with factor=0.3, prob=0.1.

    NB the reference multiplies by (1 + f) with f ~ U[1 - factor, 1 + factor) = U[0.7, 1.3),
    so the image is scaled by 1.7 .. 2.3, never darkened. f is a float64 array of shape (1,),
    so the product is computed in float64 and rounded back to the image dtype."""

    def __init__(self, factor=0.3, prob=0.1):
        self.prob = prob
        self.factor = factor

    def __call__(self, data, draws):
        image = data["image"]
        if draws.random("brightness.apply") < self.prob:
            factor = np.array([draws.uniform("brightness.factor",
                                             1.0 - self.factor, 1.0 + self.factor)],
                              dtype=np.float64)
            image = (image * (1 + factor)).astype(image.dtype)
            data.update({"image": image})
        return data


class GaussianNoise:
    """[REF] class GaussianNoise (lines 122-134), used with mean=0.0, std=0.1, prob=0.1:
    scale ~ U[0, 0.1), noise = float32(0.0 + scale * z), z standard normal per voxel, image + noise
    in float32. The label is untouched."""

    def __init__(self, mean=0.0, std=0.1, prob=0.1):
        self.mean = mean
        self.std = std
        self.prob = prob

    def __call__(self, data, draws):
        image = data["image"]
        if draws.random("noise.apply") < self.prob:
            scale = draws.uniform("noise.std", 0.0, self.std)
            z = draws.standard_normal("noise.z", image.shape)
            noise = (self.mean + scale * z).astype(image.dtype)
            data.update({"image": image + noise})
        return data


def get_train_transforms():
    """[REF] get_train_transforms (lines 8-14): Compose([RandFlip, Cast, Brightness, Noise])."""
    return [RandFlip(), Cast(types=(np.float32, np.uint8)),
            RandomBrightnessAugmentation(factor=0.3, prob=0.1),
            GaussianNoise(mean=0.0, std=0.1, prob=0.1)]


def train_sample(image, label, draws, patch_size=PATCH_SIZE, oversampling=OVERSAMPLING,
                 transforms=None):
    """[REF] PytTrain.__getitem__ (lines 137-152): crop, then the four transforms, in that order.
    image: float32 (1, X, Y, Z) as np.load gives it; label: uint8 (1, X, Y, Z).
    Returns (image float32 (1, P0, P1, P2), label uint8 (1, P0, P1, P2))."""
    data = {"image": image, "label": label}
    data = RandBalancedCrop(patch_size=patch_size, oversampling=oversampling)(data, draws)
    for t in (transforms if transforms is not None else get_train_transforms()):
        data = t(data, draws)
    return data["image"], data["label"]


# --------------------------------------------------------------------------------------------
# [PRE] preprocess_dataset.py pieces a synthetic-case generator needs
# --------------------------------------------------------------------------------------------
def normalize_intensity(image):
    """[PRE] Preprocessor.normalize_intensity: clip to [-79, 304], then (x - 101) / 76.9, in the
    image's dtype (float32: NumPy keeps float32 for float32 array op Python float)."""
    image = np.clip(image, MIN_CLIP_VAL, MAX_CLIP_VAL)
    image = (image - MEAN_VAL) / STDDEV_VAL
    return image


def pad_to_min_shape(image, label):
    """[PRE] Preprocessor.pad_to_min_shape: edge-pad each spatial axis shorter than 128 to 128,
    floor(deficit / 2) before and the rest after; image and label alike."""
    current_shape = image.shape[1:]
    bounds = [max(0, TARGET_SHAPE[i] - current_shape[i]) for i in range(3)]
    paddings = [(0, 0)]
    paddings.extend([(bounds[i] // 2, bounds[i] - bounds[i] // 2) for i in range(3)])
    return np.pad(image, paddings, mode="edge"), np.pad(label, paddings, mode="edge")


# --------------------------------------------------------------------------------------------
# The reference file, verbatim (blob bb71d32f77caadce2b1db4281d191bdf430898cb), for selfcheck
# --------------------------------------------------------------------------------------------
_REFERENCE_SOURCE = r'''import random
import numpy as np
import scipy.ndimage
from torch.utils.data import Dataset
from torchvision import transforms


def get_train_transforms():
    rand_flip = RandFlip()
    cast = Cast(types=(np.float32, np.uint8))
    rand_scale = RandomBrightnessAugmentation(factor=0.3, prob=0.1)
    rand_noise = GaussianNoise(mean=0.0, std=0.1, prob=0.1)
    train_transforms = transforms.Compose([rand_flip, cast, rand_scale, rand_noise])
    return train_transforms


class RandBalancedCrop:
    def __init__(self, patch_size, oversampling):
        self.patch_size = patch_size
        self.oversampling = oversampling

    def __call__(self, data):
        image, label = data["image"], data["label"]
        if random.random() < self.oversampling:
            image, label, cords = self.rand_foreg_cropd(image, label)
        else:
            image, label, cords = self._rand_crop(image, label)
        data.update({"image": image, "label": label})
        return data

    @staticmethod
    def randrange(max_range):
        return 0 if max_range == 0 else random.randrange(max_range)

    def get_cords(self, cord, idx):
        return cord[idx], cord[idx] + self.patch_size[idx]

    def _rand_crop(self, image, label):
        ranges = [s - p for s, p in zip(image.shape[1:], self.patch_size)]
        cord = [self.randrange(x) for x in ranges]
        low_x, high_x = self.get_cords(cord, 0)
        low_y, high_y = self.get_cords(cord, 1)
        low_z, high_z = self.get_cords(cord, 2)
        image = image[:, low_x:high_x, low_y:high_y, low_z:high_z]
        label = label[:, low_x:high_x, low_y:high_y, low_z:high_z]
        return image, label, [low_x, high_x, low_y, high_y, low_z, high_z]

    def rand_foreg_cropd(self, image, label):
        def adjust(foreg_slice, patch_size, label, idx):
            diff = patch_size[idx - 1] - (foreg_slice[idx].stop - foreg_slice[idx].start)
            sign = -1 if diff < 0 else 1
            diff = abs(diff)
            ladj = self.randrange(diff)
            hadj = diff - ladj
            low = max(0, foreg_slice[idx].start - sign * ladj)
            high = min(label.shape[idx], foreg_slice[idx].stop + sign * hadj)
            diff = patch_size[idx - 1] - (high - low)
            if diff > 0 and low == 0:
                high += diff
            elif diff > 0:
                low -= diff
            return low, high

        cl = np.random.choice(np.unique(label[label > 0]))
        foreg_slices = scipy.ndimage.find_objects(scipy.ndimage.measurements.label(label==cl)[0])
        foreg_slices = [x for x in foreg_slices if x is not None]
        slice_volumes = [np.prod([s.stop - s.start for s in sl]) for sl in foreg_slices]
        slice_idx = np.argsort(slice_volumes)[-2:]
        foreg_slices = [foreg_slices[i] for i in slice_idx]
        if not foreg_slices:
            return self._rand_crop(image, label)
        foreg_slice = foreg_slices[random.randrange(len(foreg_slices))]
        low_x, high_x = adjust(foreg_slice, self.patch_size, label, 1)
        low_y, high_y = adjust(foreg_slice, self.patch_size, label, 2)
        low_z, high_z = adjust(foreg_slice, self.patch_size, label, 3)
        image = image[:, low_x:high_x, low_y:high_y, low_z:high_z]
        label = label[:, low_x:high_x, low_y:high_y, low_z:high_z]
        return image, label, [low_x, high_x, low_y, high_y, low_z, high_z]


class RandFlip:
    def __init__(self):
        self.axis = [1, 2, 3]
        self.prob = 1 / len(self.axis)

    def flip(self, data, axis):
        data["image"] = np.flip(data["image"], axis=axis).copy()
        data["label"] = np.flip(data["label"], axis=axis).copy()
        return data

    def __call__(self, data):
        for axis in self.axis:
            if random.random() < self.prob:
                data = self.flip(data, axis)
        return data


class Cast:
    def __init__(self, types):
        self.types = types

    def __call__(self, data):
        data["image"] = data["image"].astype(self.types[0])
        data["label"] = data["label"].astype(self.types[1])
        return data


class RandomBrightnessAugmentation:
    def __init__(self, factor, prob):
        self.prob = prob
        self.factor = factor

    def __call__(self, data):
        image = data["image"]
        if random.random() < self.prob:
            factor = np.random.uniform(low=1.0-self.factor, high=1.0+self.factor, size=1)
            image = (image * (1 + factor)).astype(image.dtype)
            data.update({"image": image})
        return data


class GaussianNoise:
    def __init__(self, mean, std, prob):
        self.mean = mean
        self.std = std
        self.prob = prob

    def __call__(self, data):
        image = data["image"]
        if random.random() < self.prob:
            scale = np.random.uniform(low=0.0, high=self.std)
            noise = np.random.normal(loc=self.mean, scale=scale, size=image.shape).astype(image.dtype)
            data.update({"image": image + noise})
        return data


class PytTrain(Dataset):
    def __init__(self, images, labels, **kwargs):
        self.images, self.labels = images, labels
        self.train_transforms = get_train_transforms()
        patch_size, oversampling = kwargs["patch_size"], kwargs["oversampling"]
        self.patch_size = patch_size
        self.rand_crop = RandBalancedCrop(patch_size=patch_size, oversampling=oversampling)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        data = {"image": np.load(self.images[idx]), "label": np.load(self.labels[idx])}
        data = self.rand_crop(data)
        data = self.train_transforms(data)
        return data["image"], data["label"]


class PytVal(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return np.load(self.images[idx]), np.load(self.labels[idx])






'''


def _git_blob_id(text):
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _load_reference_module():
    """Execs the verbatim file with torch's Dataset and torchvision's Compose stubbed (the only
    torch pieces it imports; Compose calls each transform in order, as torchvision's does)."""
    if _git_blob_id(_REFERENCE_SOURCE) != REFERENCE_BLOB:
        raise AssertionError("embedded reference source differs from blob " + REFERENCE_BLOB)

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, img):
            for t in self.transforms:
                img = t(img)
            return img

    fake_torch_data = types.ModuleType("torch.utils.data")
    fake_torch_data.Dataset = object
    fake_torchvision = types.ModuleType("torchvision")
    fake_torchvision.transforms = types.SimpleNamespace(Compose=Compose)
    saved = {k: sys.modules.get(k) for k in
             ("torch", "torch.utils", "torch.utils.data", "torchvision")}
    sys.modules.update({"torch": types.ModuleType("torch"),
                        "torch.utils": types.ModuleType("torch.utils"),
                        "torch.utils.data": fake_torch_data, "torchvision": fake_torchvision})
    try:
        namespace = {"__name__": "mlperf_unet3d_pytorch_loader"}
        exec(compile(_REFERENCE_SOURCE, REFERENCE_PATH, "exec"), namespace)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    if not hasattr(scipy.ndimage, "measurements"):  # removed in some future SciPy
        namespace["scipy"] = types.SimpleNamespace(ndimage=types.SimpleNamespace(
            find_objects=scipy.ndimage.find_objects,
            measurements=types.SimpleNamespace(label=scipy.ndimage.label)))
    return namespace


# --------------------------------------------------------------------------------------------
# selfcheck
# --------------------------------------------------------------------------------------------
def _blob(mask, centre, radii):
    grid = np.ogrid[tuple(slice(0, s) for s in mask.shape)]
    d = sum(((g - c) / r) ** 2 for g, c, r in zip(grid, centre, radii))
    return d <= 1.0


def _synthetic_case(rng, shape, objects):
    """image float32 (1, *shape) ~ N(0, 1); label uint8 (1, *shape) with ellipsoids
    (class, centre, radii), later ones painted over earlier ones."""
    image = rng.standard_normal(size=(1,) + tuple(shape)).astype(np.float32)
    label = np.zeros((1,) + tuple(shape), dtype=np.uint8)
    for obj in objects:
        if len(obj) == 2:  # (class, (lo, hi) per axis): a box, extent hi - lo
            cls, box = obj
            label[0][tuple(slice(lo, hi) for lo, hi in box)] = cls
        else:
            cls, centre, radii = obj
            label[0][_blob(label[0], centre, radii)] = cls
    return image, label


def _cases():
    rng = np.random.default_rng(31)
    P = PATCH_SIZE
    small = (32, 32, 32)
    big = [
        # (name, shape, objects, patch_size)
        ("kidney+tumour", (140, 150, 130),
         [(1, (60, 70, 60), (25, 20, 22)), (2, (65, 75, 62), (8, 7, 9))], P),
        ("two kidneys, one at a border", (140, 150, 130),
         [(1, (30, 40, 50), (20, 18, 16)), (1, (120, 120, 110), (19, 25, 18)),
          (2, (118, 122, 112), (5, 6, 5))], P),
        ("exact patch on one axis, +1 on another", (128, 129, 140),
         [(1, (64, 64, 70), (30, 30, 30)), (2, (64, 64, 70), (6, 6, 6))], P),
        ("object wider than the patch", (140, 150, 130),
         [(1, (70, 75, 65), (68, 70, 20)), (2, (10, 140, 65), (6, 6, 6))], P),
    ]
    small_cases = [
        ("small: many objects, ties and borders", (40, 45, 38),
         [(1, (3, 3, 3), (3, 3, 3)), (1, (20, 22, 19), (5, 4, 6)), (1, (36, 40, 34), (5, 4, 6)),
          (1, (36, 5, 30), (3, 3, 3)), (2, (20, 22, 19), (2, 2, 2)), (2, (5, 40, 5), (4, 4, 4))],
         small),
        ("small: objects larger than the patch", (50, 40, 33),
         [(1, (25, 20, 16), (24, 19, 16)), (2, (25, 20, 16), (3, 20, 5))], small),
        ("small: exact shape", (32, 32, 32), [(2, (16, 16, 16), (10, 5, 7))], small),
        ("small: equal boxes (argsort ties), extent == patch", (48, 40, 36),
         [(1, ((2, 10), (2, 10), (2, 10))), (1, ((30, 38), (25, 33), (20, 28))),
          (1, ((15, 47), (1, 5), (30, 34))), (2, ((12, 20), (10, 42), (3, 35)))], small),
    ]
    out = []
    for name, shape, objects, patch in big + small_cases:
        image, label = _synthetic_case(rng, shape, objects)
        out.append((name, image, label, patch))
    return out


def _run_reference(ref, image, label, patch, oversampling, seed, transform_args):
    random.seed(seed)
    np.random.seed(seed)
    crop = ref["RandBalancedCrop"](patch_size=patch, oversampling=oversampling)
    flip_p, bright_p, noise_p = transform_args
    transforms = [ref["RandFlip"](), ref["Cast"](types=(np.float32, np.uint8)),
                  ref["RandomBrightnessAugmentation"](factor=0.3, prob=bright_p),
                  ref["GaussianNoise"](mean=0.0, std=0.1, prob=noise_p)]
    if flip_p is not None:
        transforms[0].prob = flip_p
    train = ref["transforms"].Compose(transforms)
    data = {"image": image.copy(), "label": label.copy()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # scipy.ndimage.measurements
        data = crop(data)
    data = train(data)
    return data["image"], data["label"]


def _run_transcription(draws, image, label, patch, oversampling, transform_args):
    flip_p, bright_p, noise_p = transform_args
    transforms = [RandFlip(), Cast(types=(np.float32, np.uint8)),
                  RandomBrightnessAugmentation(factor=0.3, prob=bright_p),
                  GaussianNoise(mean=0.0, std=0.1, prob=noise_p)]
    if flip_p is not None:
        transforms[0].prob = flip_p
    return train_sample(image.copy(), label.copy(), draws, patch_size=patch,
                        oversampling=oversampling, transforms=transforms)


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def selfcheck(verbose=True):
    ref = _load_reference_module()
    # Probabilities: the recipe's own, plus settings that force every branch often.
    settings = [
        (OVERSAMPLING, (None, 0.1, 0.1), 12),  # the training recipe as it is
        (1.0, (None, 1.0, 1.0), 6),            # always foreground, brightness and noise
        (0.0, (None, 0.5, 0.5), 6),            # always the plain random crop
    ]
    hits = {}
    samples = 0
    for name, image, label, patch in _cases():
        small = patch != PATCH_SIZE
        for oversampling, targs, n in settings:
            for i in range(n * (8 if small else 1)):
                seed = 1000 * samples + 7
                samples += 1
                want = _run_reference(ref, image, label, patch, oversampling, seed, targs)
                rec = RecordingDraws(ReferenceDraws(seed))
                got = _run_transcription(rec, image, label, patch, oversampling, targs)
                for w, g, what in ((want[0], got[0], "image"), (want[1], got[1], "label")):
                    if not _same(w, g):
                        raise AssertionError(f"{name}: seed {seed}: {what} differs "
                                             f"({w.dtype}{w.shape} vs {g.dtype}{g.shape})")
                # the same draws, fed from a script (as a C++ test would), give the same output
                script = ScriptedDraws(rec.log)
                again = _run_transcription(script, image, label, patch, oversampling, targs)
                if not (script.exhausted() and _same(again[0], got[0])
                        and _same(again[1], got[1])):
                    raise AssertionError(f"{name}: seed {seed}: scripted replay differs")
                for site, value in rec.log:
                    key = site.rstrip("012") if site[-1].isdigit() else site
                    hits[key] = hits.get(key, 0) + 1
                if got[0].shape[1:] != tuple(patch):
                    raise AssertionError(f"{name}: output shape {got[0].shape}")
    # every draw site was exercised
    needed = {"crop.oversample", "crop.corner", "crop.class", "crop.object", "crop.adjust",
              "flip", "brightness.apply", "brightness.factor", "noise.apply", "noise.std",
              "noise.z"}
    missing = needed - set(hits)
    if missing:
        raise AssertionError(f"draw sites never exercised: {sorted(missing)}")
    if verbose:
        print(f"{samples} samples bit-identical to {REFERENCE_PATH}@{REFERENCE_COMMIT[:12]}; "
              "draws per site: " + ", ".join(f"{k} {v}" for k, v in sorted(hits.items())))
    return True


def main(argv):
    if len(argv) == 2 and argv[1] == "selfcheck":
        selfcheck()
        print("OK")
        return 0
    print(__doc__)
    print("usage: unet3d_reference.py selfcheck", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
