#!/usr/bin/python3
"""NumPy's own .npy files for tests/test_npy_decoder.cpp: every dtype Conveyor holds, C and
Fortran order, little and big endian, rank 0 to 4, format versions 1.0, 2.0 and 3.0.

Usage: write_npy_references.py DIR. Writes DIR/<case>.npy, DIR/<case>.raw (the elements in C
order and this machine's byte order: what the decoder must give) and DIR/manifest.txt, one
line per case: "<case> <dtype> <rank> <extents...>". Exits 77 where NumPy is missing.
"""
import os
import sys

try:
    import numpy as np
except ImportError as missing:
    print(f"SKIP: {missing} (Debian: python3-numpy)")
    sys.exit(77)

SHAPES = [(), (7,), (3, 5), (2, 3, 4), (2, 3, 4, 5), (0,), (4, 0, 3)]
DTYPES = ["u1", "i2", "i4", "i8", "f2", "f4"]
CONVEYOR = {"u1": "uint8", "b1": "uint8", "i2": "int16", "i4": "int32", "i8": "int64",
            "f2": "float16", "f4": "float32"}


def values(code, shape, rng):
    """Values that use the whole range of the type, so a wrong byte order shows."""
    if code == "b1":
        return rng.integers(0, 2, size=shape).astype(bool)
    if code[0] == "f":
        return (rng.standard_normal(size=shape) * 1000).astype(np.dtype(code))
    info = np.iinfo(np.dtype(code))
    return rng.integers(info.min, info.max, size=shape, dtype=np.dtype(code), endpoint=True)


def write_case(out_dir, name, array, version, manifest):
    with open(os.path.join(out_dir, name + ".npy"), "wb") as f:
        np.lib.format.write_array(f, array, version=version)
    code = array.dtype.str[1:]
    native = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
    with open(os.path.join(out_dir, name + ".raw"), "wb") as f:
        f.write(native.astype(np.uint8).tobytes() if code == "b1" else native.tobytes(order="C"))
    fields = [name, CONVEYOR[code], str(array.ndim)] + [str(e) for e in array.shape]
    manifest.write(" ".join(fields) + "\n")


def main():
    out_dir = sys.argv[1]
    rng = np.random.default_rng(29)
    with open(os.path.join(out_dir, "manifest.txt"), "w") as manifest:
        for code in DTYPES + ["b1"]:
            for rank, shape in enumerate(SHAPES):
                base = values(code, shape, rng)
                write_case(out_dir, f"{code}_r{rank}_c", base, (1, 0), manifest)
                big = base.astype(base.dtype.newbyteorder(">"))
                write_case(out_dir, f"{code}_r{rank}_big_c", big, (2, 0), manifest)
                if base.ndim >= 2:  # NumPy writes fortran_order only for rank 2 and up
                    write_case(out_dir, f"{code}_r{rank}_f", np.asfortranarray(base), (1, 0),
                               manifest)
                    write_case(out_dir, f"{code}_r{rank}_big_f", np.asfortranarray(big), (3, 0),
                               manifest)
        # A Fortran-order volume larger than the decoder's tiles, with odd extents.
        volume = values("f4", (37, 70, 45), rng)
        write_case(out_dir, "volume_f", np.asfortranarray(volume), (1, 0), manifest)
        # A 1 x D x H x W volume, as MLPerf's UNet3D preprocessing saves them.
        volume = values("f4", (1, 9, 70, 45), rng)
        write_case(out_dir, "volume_1dhw_f", np.asfortranarray(volume), (1, 0), manifest)
        # Files NumPy writes but Conveyor does not hold: the decoder must refuse them.
        for name, array in [("refuse_f8", np.zeros(3, "<f8")), ("refuse_u2", np.zeros(3, "<u2")),
                            ("refuse_rank5", np.zeros((1, 2, 1, 2, 1), "<f4")),
                            ("refuse_structured", np.zeros(2, dtype=[("x", "<f4"), ("y", "<i4")]))]:
            with open(os.path.join(out_dir, name + ".npy"), "wb") as f:
                np.lib.format.write_array(f, array)


if __name__ == "__main__":
    main()
