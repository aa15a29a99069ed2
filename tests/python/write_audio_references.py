#!/usr/bin/python3
"""python3-soundfile's own audio files for tests/test_audio_decoder.cpp: WAV (16-bit PCM,
24-bit PCM, float), FLAC (16 and 24 bit), OGG/Vorbis, OGG/Opus and MP3, mono and stereo, and
damaged ones.

Usage: write_audio_references.py DIR. For each good case writes DIR/<case>.<ext>,
DIR/<case>.ref (soundfile's float32 read of that file, frames x channels), DIR/<case>.src (the
signal that was encoded, scaled as libsndfile scales integers: int / 2^(bits-1)),
DIR/<case>.mono (NumPy's mean over the channels of the .ref samples), and a manifest line
"<case> <file> <rate> <frames> <channels> <exact|lossy>". Damaged files are listed on
"bad <file>" lines. Exits 77 where NumPy or soundfile is missing.
"""
import os
import struct
import sys

try:
    import numpy as np
    import soundfile as sf
except ImportError as missing:
    print(f"SKIP: {missing} (Debian: python3-numpy python3-soundfile)")
    sys.exit(77)


def pcm(rng, frames, channels, bits):
    """Integer samples over the whole range, and their float value as libsndfile scales it."""
    top = 2 ** (bits - 1)
    ints = rng.integers(-top, top, size=(frames, channels), dtype=np.int32)
    ints[:2, 0] = [-top, top - 1]
    return ints, (ints / float(top)).astype(np.float32)


def tone(frames, channels, rate):
    t = np.arange(frames) / rate
    columns = [0.4 * np.sin(2 * np.pi * (220 + 110 * c) * t) for c in range(channels)]
    return np.stack(columns, axis=1).astype(np.float32)


def cases(rng):
    """(case, extension, rate, signal to write, what libsndfile must read, exact?, options)."""
    out = []
    for name, channels, bits, fmt, subtype, rate in [
            ("wav16_mono", 1, 16, "WAV", "PCM_16", 16000),
            ("wav16_stereo", 2, 16, "WAV", "PCM_16", 44100),
            ("wav24_stereo", 2, 24, "WAV", "PCM_24", 48000),
            ("flac16_stereo", 2, 16, "FLAC", "PCM_16", 44100),
            ("flac24_mono", 1, 24, "FLAC", "PCM_24", 16000)]:
        ints, floats = pcm(rng, 20000, channels, bits)
        # soundfile takes int32 as full-scale 32-bit: shift so the file holds `ints`.
        out.append((name, fmt.lower(), rate, ints << (32 - bits), floats, True,
                    {"format": fmt, "subtype": subtype}))
    floats = (rng.standard_normal((12345, 3)) * 0.3).astype(np.float32)
    out.append(("wavf32_3ch", "wav", 22050, floats, floats, True,
                {"format": "WAV", "subtype": "FLOAT"}))
    signal = tone(16000, 1, 16000)
    out.append(("vorbis_mono", "ogg", 16000, signal, signal, False,
                {"format": "OGG", "subtype": "VORBIS"}))
    signal = tone(22050, 2, 44100)
    out.append(("vorbis_stereo", "ogg", 44100, signal, signal, False,
                {"format": "OGG", "subtype": "VORBIS"}))
    signal = tone(30000, 1, 48000)
    out.append(("opus_mono", "opus", 48000, signal, signal, False,
                {"format": "OGG", "subtype": "OPUS"}))
    signal = tone(30000, 2, 16000)
    out.append(("mp3_stereo", "mp3", 16000, signal, signal, False,
                {"format": "MP3", "subtype": "MPEG_LAYER_III"}))
    return out


def write_bad(out_dir, manifest, rng):
    """Damaged and hostile files, each of which the decoder must refuse (in strict mode)."""
    def put(name, data):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        manifest.write(f"bad {name}\n")

    def read(name):
        with open(os.path.join(out_dir, name), "rb") as f:
            return f.read()

    wav = read("wav16_stereo.wav")
    flac = read("flac16_stereo.flac")
    ogg = read("vorbis_stereo.ogg")
    data_at = wav.find(b"data")
    put("empty.wav", b"")
    put("noise.wav", bytes(rng.integers(0, 256, size=4000, dtype=np.uint8)))
    put("truncated.wav", wav[: len(wav) // 2 + 1])
    put("lying_size.wav", wav[: data_at + 4] + struct.pack("<I", 10**9) + wav[data_at + 8:])
    put("rate0.wav", wav[:24] + struct.pack("<I", 0) + wav[28:])
    put("channels5000.wav", wav[:22] + struct.pack("<H", 5000) + wav[24:])
    put("truncated.flac", flac[: len(flac) // 2])
    flipped = bytearray(flac)
    flipped[len(flac) // 2] ^= 0x01
    put("bitflip.flac", bytes(flipped))
    put("truncated.ogg", ogg[: len(ogg) // 2])


def main():
    out_dir = sys.argv[1]
    rng = np.random.default_rng(29)
    with open(os.path.join(out_dir, "manifest.txt"), "w") as manifest:
        for name, ext, rate, written, expected, exact, options in cases(rng):
            path = os.path.join(out_dir, f"{name}.{ext}")
            sf.write(path, written, rate, **options)
            read, read_rate = sf.read(path, dtype="float32", always_2d=True)
            assert read_rate == rate
            for suffix, array in [("ref", read), ("src", expected),
                                  ("mono", read.mean(axis=1, dtype=np.float32))]:
                with open(os.path.join(out_dir, f"{name}.{suffix}"), "wb") as f:
                    f.write(np.ascontiguousarray(array, dtype=np.float32).tobytes())
            fields = [name, f"{name}.{ext}", rate, read.shape[0], read.shape[1],
                      "exact" if exact else "lossy"]
            manifest.write(" ".join(str(f) for f in fields) + "\n")
        write_bad(out_dir, manifest, rng)


if __name__ == "__main__":
    main()
