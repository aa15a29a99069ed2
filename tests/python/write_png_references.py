#!/usr/bin/python3
"""PIL's own PNG files for tests/test_png_decoder.cpp: 8-bit L, LA, RGB, RGBA, P (with and
without transparency, 8 and 4 bits), 1-bit and 16-bit 'I;16' gray, and the pixels PIL reads
from each, for both channel policies of the decoder; also an Adam7-interlaced RGB file written
here (PIL writes none) and PIL's reading of it.

Usage: write_png_references.py DIR. Writes DIR/<image>.png, DIR/<case>.raw (the pixels as the
decoder must give them: HWC, C order, uint8, or int32 for 16-bit) and DIR/manifest.txt, one
line per case: "<case> <image>.png <keep|rgb> <dtype> <rank> <extents...>". Also writes
DIR/huge.png, a valid header of 100000 x 100000 pixels with a few bytes of data, and
DIR/rgba16_huge.png, one of 16384 x 16384 16-bit RGBA pixels (within the pixel limit, 4 GiB
decoded) with as few. Exits 77
where NumPy or PIL is missing.
"""
import os
import struct
import sys
import warnings
import zlib

try:
    import numpy as np
    from PIL import Image
except ImportError as missing:
    print(f"SKIP: {missing} (Debian: python3-numpy python3-pil)")
    sys.exit(77)

WIDTH, HEIGHT = 37, 23


def images(rng):
    """(name, PIL image, save options) for every kind of PNG the decoder reads."""
    def noise(*channels):
        return rng.integers(0, 256, size=(HEIGHT, WIDTH) + channels, dtype=np.uint8)
    palette = Image.fromarray(noise(3)).quantize(colors=200)
    small_palette = Image.fromarray(noise(3)).quantize(colors=12)
    transparent = palette.copy()
    transparent.info["transparency"] = bytes(rng.integers(0, 256, size=200, dtype=np.uint8))
    wide = rng.integers(0, 65536, size=(HEIGHT, WIDTH), dtype=np.uint16)
    wide[0, :4] = [0, 1, 65534, 65535]
    return [
        ("gray", Image.fromarray(noise(), "L"), {}),
        ("gray_alpha", Image.fromarray(noise(2), "LA"), {}),
        ("rgb", Image.fromarray(noise(3), "RGB"), {}),
        ("rgba", Image.fromarray(noise(4), "RGBA"), {}),
        ("palette", palette, {}),
        ("palette_4bit", small_palette, {"bits": 4}),
        ("palette_alpha", transparent, {"transparency": transparent.info["transparency"]}),
        ("bilevel", Image.fromarray(noise() > 127).convert("1"), {}),
        ("gray16", Image.fromarray(wide, "I;16"), {}),
    ]


def expected_pixels(path, policy):
    """What the decoder must give, from PIL's reading of the file."""
    image = Image.open(path)
    image.load()
    if image.mode in ("I", "I;16", "I;16B"):
        pixels = np.asarray(image).astype(np.int32)[:, :, None]
        return np.repeat(pixels, 3, axis=2) if policy == "rgb" else pixels
    if policy == "rgb":
        return np.asarray(image.convert("RGB"))
    if image.mode == "P":
        mode = "RGBA" if "transparency" in image.info else "RGB"
        return np.asarray(image.convert(mode))
    if image.mode == "1":
        return np.asarray(image.convert("L"))[:, :, None]
    pixels = np.asarray(image)
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_interlaced(path, pixels):
    """An Adam7-interlaced 8-bit RGB PNG of `pixels` (PIL writes none; it reads them)."""
    height, width, _ = pixels.shape
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
              (0, 1, 1, 2)]
    data = b""
    for x0, y0, dx, dy in passes:
        if x0 < width:
            for y in range(y0, height, dy):
                data += b"\0" + pixels[y, x0::dx].tobytes()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 1)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b""))


def write_huge(path, size=100000, bit_depth=8, colour_type=0):
    """A well-formed header that asks for size x size pixels (10^10 by default): refused
    before any allocation."""
    header = struct.pack(">IIBBBBB", size, size, bit_depth, colour_type, 0, 0, 0)
    data = zlib.compress(b"\0" * 64)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) +
                chunk(b"IEND", b""))


def main():
    # PIL suggests RGBA for palette images with transparency; reading them is the point here.
    warnings.filterwarnings("ignore", "Palette images with Transparency")
    out_dir = sys.argv[1]
    rng = np.random.default_rng(29)
    write_interlaced(os.path.join(out_dir, "interlaced.png"),
                     rng.integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8))
    with open(os.path.join(out_dir, "manifest.txt"), "w") as manifest:
        for name, image, options in images(rng) + [("interlaced", None, None)]:
            path = os.path.join(out_dir, name + ".png")
            if image is not None:
                image.save(path, **options)
            for policy in ("keep", "rgb"):
                pixels = np.ascontiguousarray(expected_pixels(path, policy))
                case = f"{name}_{policy}"
                with open(os.path.join(out_dir, case + ".raw"), "wb") as f:
                    f.write(pixels.tobytes())
                dtype = "int32" if pixels.dtype == np.int32 else "uint8"
                fields = [case, name + ".png", policy, dtype, str(pixels.ndim)]
                manifest.write(" ".join(fields + [str(e) for e in pixels.shape]) + "\n")
    write_huge(os.path.join(out_dir, "huge.png"))
    write_huge(os.path.join(out_dir, "rgba16_huge.png"), 16384, 16, 6)


if __name__ == "__main__":
    main()
