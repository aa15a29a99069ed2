"""The MLPerf UNet3D reference's training Dataset as a user holds it: the reference's verbatim
pytorch_loader.py (tests/python/unet3d_reference.py keeps it, checked against its git blob id)
written to a directory as the module `mlperf_pytorch_loader` and imported from there, so that a
spawned worker process imports it the same way (the directory goes on sys.path, which spawn
hands its children). Unlike bench/unet3d_dataloader.py, nothing is stubbed: the file imports
torch's Dataset and torchvision's transforms, as it does in MLPerf. Two lines go before it, for
a SciPy that no longer has ndimage.measurements (deprecated since 1.8; the reference calls its
label): they alias it to scipy.ndimage.label there, and do nothing where it is still present.

  reference()                        tests/python/unet3d_reference.py, its blob checked
  reference_pyt_train(work)          the reference's PytTrain class
  cases(path)                        (images, labels): the reference's load_data of an
                                     MLPerf-layout directory (case_XXXXX_x.npy, case_XXXXX_y.npy)
  pyt_train(path, work)              PytTrain over the cases in `path`, as the reference's
                                     get_data_loaders makes it (patch 128^3, oversampling 0.4)
"""
import functools
import glob
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The reference's copy: tests/python in a source tree and in the GPU bundle (scripts/gpu-bundle).
REFERENCE_DIR = os.path.join(HERE, "..", "tests", "python")
MODULE = "mlperf_pytorch_loader"
SCIPY_SHIM = ("import scipy.ndimage, types  # noqa\n"
              "if not hasattr(scipy.ndimage, 'measurements'):\n"
              "    scipy.ndimage.measurements = types.SimpleNamespace(label=scipy.ndimage.label)\n")


@functools.lru_cache(maxsize=None)  # checked once per process
def reference():
    sys.path.insert(0, REFERENCE_DIR)
    import unet3d_reference as ref
    if ref._git_blob_id(ref._REFERENCE_SOURCE) != ref.REFERENCE_BLOB:
        raise SystemExit(f"{REFERENCE_DIR}/unet3d_reference.py: the embedded MLPerf source is not "
                         f"the reference's blob {ref.REFERENCE_BLOB}")
    return ref


def reference_pyt_train(work):
    """The reference's PytTrain, from its source written to `work`/mlperf_pytorch_loader.py."""
    ref = reference()
    with open(os.path.join(work, MODULE + ".py"), "w") as f:
        f.write(SCIPY_SHIM + ref._REFERENCE_SOURCE)
    sys.path.insert(0, work)  # the workers' sys.path too (spawn's preparation)
    return importlib.import_module(MODULE).PytTrain


def cases(path):
    """The reference's load_data: the sorted *_x.npy and *_y.npy of `path`; exits naming `path`
    where they are missing or do not pair up."""
    images = sorted(glob.glob(os.path.join(path, "*_x.npy")))
    labels = sorted(glob.glob(os.path.join(path, "*_y.npy")))
    if not images or len(images) != len(labels):
        raise SystemExit(f"{path}: {len(images)} *_x.npy, {len(labels)} *_y.npy: not an "
                         "MLPerf-layout set")
    return images, labels


def pyt_train(path, work):
    """PytTrain over the cases in `path` with the reference's defaults."""
    ref = reference()
    images, labels = cases(path)
    return reference_pyt_train(work)(images, labels, patch_size=ref.PATCH_SIZE,
                                     oversampling=ref.OVERSAMPLING)
