#!/usr/bin/python3
"""The speech recipe's steps (config/examples/rnnt-librispeech.toml) against the MLPerf RNN-T
reference (tests/python/rnnt_reference.py, the DALI training pipeline transcribed with every
draw injectable; its selfcheck runs the reference's own features.py and pipeline.py) and against
torchaudio, given the same draws. tests/tools/chain_probe runs each topology's chain in C++ on
the same files; the draws the reference made are replayed into it, site for site.

  1. mel power spectrogram and log (dither and augmentation off) against torchaudio's
     MelSpectrogram with the reference's settings, built and run in float64: within 1e-4
     relative per mel bin above -80 dB of the maximum (and |log error| <= 1e-4 there);
  2. speed perturbation against the reference resampler (DALI's windowed sinc, transcribed):
     exactly ceil(n * u) samples, within 1e-3 relative RMS; the "soxr" method against
     torchaudio's band-limited resampler on in-band signals, within 1e-3 relative RMS away
     from the ends;
  3. silence trimming: the reference's region exactly;
  4. per-feature normalisation, SpecAugment and frame splicing: the reference's cells exactly
     (given its 24 draws), normalisation within 2 ulp;
  5. end to end, the whole recipe on int16 FLAC files with the reference's recorded draws
     (speed, dither, SpecAugment): the same frames, within 1e-3 absolute.

Prints each figure; docs/recipes.md ("Speech") quotes them. Environment (CTest sets it): CONVEYOR_CHAIN_PROBE,
CONVEYOR_RECIPE. Exit 77 (skipped) without NumPy, torch, torchaudio or soundfile."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import soundfile
    import torch
    import torchaudio  # noqa: F401 (rnnt_reference needs it)
    import rnnt_reference as r
except ImportError as missing:
    print(f"skipped: {missing}")
    sys.exit(77)
from ctest_env import env

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def chirp(rng, seconds=1.0, rate=16000):
    """A sweep from 50 Hz to 7.9 kHz with a little noise: energy on every filter's edges."""
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * (50 * t + (7900 - 50) * t * t / (2 * seconds))
    return (0.3 * np.sin(phase) + 0.003 * rng.standard_normal(t.size)).astype(np.float32)


def signals():
    """(name, float32 samples) to hold the steps to."""
    rng = np.random.default_rng(32)
    out = [(f"utterance {k}", r.pcm16_to_float(r.synthetic_utterance(rng, seconds=s)))
           for k, s in enumerate((1.3, 2.5, 0.6))]
    out.append(("chirp to 7.9 kHz", chirp(rng)))
    out.append(("white noise", (0.1 * rng.standard_normal(3200)).astype(np.float32)))
    return out


class Probe:
    """Runs chain_probe on topologies written here; each sample's fields come back as arrays."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.exe = env("CONVEYOR_CHAIN_PROBE")
        self.count = 0

    def run(self, topology, samples):
        """samples: [(parts {name: path}, draws path or "-")] -> [{field: array}] (or the error
        text under "error")."""
        self.count += 1
        stem = os.path.join(self.tmp, f"probe{self.count}")
        with open(stem + ".toml", "w") as f:
            f.write('[dataset]\npath = "unused"\n' + topology)
        lines = []
        for i, (parts, draws) in enumerate(samples):
            out = f"{stem}_{i}"
            lines.append(" ".join([draws, out] + [f"{k}={v}" for k, v in parts.items()]))
        with open(stem + ".list", "w") as f:
            f.write("\n".join(lines) + "\n")
        run = subprocess.run([self.exe, stem + ".toml", stem + ".list"], capture_output=True,
                             text=True)
        if run.returncode != 0:
            raise SystemExit(f"chain_probe exited {run.returncode}: {run.stderr}")
        results = []
        for i in range(len(samples)):
            out = f"{stem}_{i}"
            if os.path.exists(out + ".error"):
                results.append({"error": open(out + ".error").read()})
                continue
            results.append({name[len(os.path.basename(out)) + 1:-4]: np.load(os.path.join(
                self.tmp, name)) for name in os.listdir(self.tmp)
                if name.startswith(os.path.basename(out) + ".") and name.endswith(".npy")})
        return results


def write_wav(tmp, name, x):
    path = os.path.join(tmp, name + ".wav")
    soundfile.write(path, x, 16000, subtype="FLOAT")
    return path


def write_draws(tmp, name, log):
    """The reference's draws as chain_probe reads them ("site value" lines; an array of normals
    as a file of float64)."""
    path = os.path.join(tmp, name + ".draws")
    with open(path, "w") as out:
        for site, value in log:
            if np.ndim(value) > 0:
                normals = path + "." + site
                np.asarray(value, dtype="<f8").tofile(normals)
                value = normals
            elif isinstance(value, (float, np.floating)):
                value = repr(float(value))
            out.write(f"{site} {value}\n")
    return path


def bandlimited_resample(x, out_rate, in_rate=16000.0, lobes=64, beta=12.0):
    """A reference band-limited resampler, in float64: output j at input position j * in / out,
    a Kaiser-windowed sinc over +-lobes zero crossings, cut off at 0.97 of the lower Nyquist."""
    x = np.asarray(x, np.float64)
    n_out = r.resampled_length(x.size, in_rate, out_rate)
    scale = in_rate / out_rate
    cutoff = 0.97 * min(1.0, 1.0 / scale)
    half = int(np.ceil(lobes / cutoff))
    pos = np.arange(n_out) * scale
    out = np.zeros(n_out)
    for k in range(-half, half + 2):
        taps = np.floor(pos).astype(np.int64) + k
        d = taps - pos
        kaiser = np.i0(beta * np.sqrt(np.clip(1 - (d / (half + 1)) ** 2, 0, 1))) / np.i0(beta)
        inside = (taps >= 0) & (taps < x.size)
        out += np.where(inside, x[np.clip(taps, 0, x.size - 1)], 0.0) * cutoff * np.sinc(
            cutoff * d) * kaiser
    return out


def interior_rms(got, want, edge=400):
    """Relative RMS away from the ends (where two resamplers' filters see different edges)."""
    n = min(got.size, want.size)
    return r.relative_rms(got[edge:n - edge], want[edge:n - edge])


DECODE = '[[transform]]\nop = "decode"\nfrom = "wav"\nto = "audio"\nsample_rate = 16000\n'


def torchaudio_mel_float64(x):
    """torchaudio's MelSpectrogram with the reference's settings, its filters built and run in
    float64 (torch's default dtype set to float64 while it is made)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return r.torchaudio_mel(x, dtype=torch.float64)
    finally:
        torch.set_default_dtype(previous)


def test_mel(probe, inputs):
    spectrogram = DECODE + '[[transform]]\nop = "preemphasis"\n[[transform]]\nop = "mel_spectrogram"\n'
    samples = [({"wav": p}, "-") for _, p, _ in inputs]
    mels = probe.run(spectrogram + "log = false\n", samples)
    logs = probe.run(spectrogram, samples)
    worst_all = worst_all_default = 0.0
    for (name, _, x), mel, log in zip(inputs, mels, logs):
        want = torchaudio_mel_float64(r.preemphasis(x))
        got = mel["features"].T
        ok, worst, _, bins = r.compare_mel(got, want)
        sel = want >= want.max() * 1e-8
        logerr = float(np.max(np.abs(log["features"].T[sel] - np.log(want[sel]))))
        check(ok and logerr <= 1e-4,
              f"mel {name}: {got.shape[1]} frames, worst {worst:.2e} relative, log {logerr:.2e}, "
              f"over {bins} bins above -80 dB (torchaudio in float64; criterion 1e-4)")
        default = r.torchaudio_mel(r.preemphasis(x), dtype=torch.float64)
        worst_all = max(worst_all, worst)
        worst_all_default = max(worst_all_default, r.compare_mel(got, default)[1])
    print(f"info mel: worst {worst_all:.2e} against torchaudio built in float64; "
          f"{worst_all_default:.2e} against torchaudio as it comes (float32 filter weights)")


def test_speed(probe, tmp, inputs):
    rng = np.random.default_rng(7)
    speeds = [0.85, 1.15] + [float(v) for v in rng.uniform(0.85, 1.15, 3)]
    for method in ("sinc", "soxr"):
        topo = DECODE + f'[[transform]]\nop = "speed_perturb"\nmethod = "{method}"\n'
        samples, wants = [], []
        for name, path, x in inputs[:4]:
            for u in speeds:
                u32 = np.float32(u)
                draws = write_draws(tmp, f"speed_{method}_{len(samples)}", [("speed", u32)])
                samples.append(({"wav": path}, draws))
                wants.append((name, u32, x))
        got = probe.run(topo, samples)
        worst = worst_floor = 0.0
        by_input = {}
        lengths_ok = True
        for (name, u32, x), g in zip(wants, got):
            y = g["audio"]
            n_want = r.resampled_length(x.size, 16000, float(r.speed_rate(u32)))
            lengths_ok = lengths_ok and y.size == n_want
            if method == "sinc":
                want = r.speed_perturb(x, u32)
                err = r.relative_rms(y, want)
                floor_err = r.relative_rms(y, r.speed_perturb(x, u32, sse=False))
                worst_floor = max(worst_floor, floor_err)
                by_input[name] = max(by_input.get(name, 0.0), err)
            else:
                err = interior_rms(y, bandlimited_resample(x, float(r.speed_rate(u32))))
            worst = max(worst, err)
        check(lengths_ok, f"speed_perturb ({method}): every output ceil(n * u) samples long")
        # soxr is held to the band it passes: the inputs with content above 0.85 x 8 kHz alias
        # or are cut differently by any two band-limited resamplers.
        if method == "sinc":
            check(worst <= 1e-5, f"speed_perturb (sinc) against the reference resampler "
                  f"(DALI 0.28's windowed sinc, its SSE2 table rounding included): worst "
                  f"{worst:.2e} relative RMS over {len(samples)} trials, u in "
                  f"{speeds[0]:.2f}..{speeds[1]:.2f} (criterion 1e-3; by input: "
                  + ", ".join(f"{k} {v:.1e}" for k, v in by_input.items()) + ")")
            print(f"info speed_perturb (sinc) against the same resampler without the SSE2 "
                  f"rounding (plain table interpolation): worst {worst_floor:.2e}")
        else:
            print(f"info speed_perturb (soxr) against a long band-limited sinc on every input "
                  f"(the chirp and the noise reach above the band): worst {worst:.2e} "
                  f"relative RMS")
    # soxr on in-band content: speech-like utterances, low-passed below 6 kHz.
    band = []
    for name, path, x in inputs[:3]:
        spec = np.fft.rfft(x.astype(np.float64))
        spec[np.fft.rfftfreq(x.size, 1 / 16000) > 5500] = 0
        lp = np.fft.irfft(spec, x.size).astype(np.float32)
        band.append((name, write_wav(tmp, name.replace(" ", "_") + "_lp", lp), lp))
    topo = DECODE + '[[transform]]\nop = "speed_perturb"\nmethod = "soxr"\n'
    samples, wants = [], []
    for name, path, x in band:
        for u in speeds:
            u32 = np.float32(u)
            samples.append(({"wav": path}, write_draws(tmp, f"soxr_{len(samples)}",
                                                        [("speed", u32)])))
            wants.append((u32, x))
    worst = 0.0
    for (u32, x), g in zip(wants, probe.run(topo, samples)):
        want = bandlimited_resample(x, float(r.speed_rate(u32)))
        worst = max(worst, interior_rms(g["audio"], want))
    check(worst <= 1e-3, f"speed_perturb (soxr) against a long band-limited (Kaiser) sinc "
          f"resampler on speech low-passed below 5.5 kHz: worst {worst:.2e} relative RMS away "
          f"from the ends")


def test_trim(probe, inputs):
    got = probe.run(DECODE + '[[transform]]\nop = "trim_silence"\n',
                    [({"wav": p}, "-") for _, p, _ in inputs])
    for (name, _, x), g in zip(inputs, got):
        want = r.trim_silence(x)
        begin, length = r.nonsilent_region(x)
        check(np.array_equal(g["audio"], want),
              f"trim_silence {name}: [{begin}, {begin + length}) of {x.size}, the reference's "
              f"region exactly")


def test_features(probe, tmp):
    """normalize_features, spec_augment, frame_splice on given log-mel arrays: the reference's
    cells given its draws."""
    topo = ('[[transform]]\nop = "decode"\nfrom = "npy"\nto = "features"\ndtype = "float32"\n'
            'rank = 2\ninner_shape = [80]\n[[transform]]\nop = "normalize_features"\n'
            '[[transform]]\nop = "spec_augment"\n[[transform]]\nop = "frame_splice"\n')
    rng = np.random.default_rng(5)
    samples, wants = [], []
    for k, frames in enumerate((50, 150, 250, 1, 2, 3, 641)):
        x = (rng.standard_normal((80, frames)) * 3 - 10).astype(np.float32)
        x[7, :] = -4.0  # a band that does not vary: 0 after normalisation
        path = os.path.join(tmp, f"feat{k}.npy")
        np.save(path, np.ascontiguousarray(x.T))
        rec = r.RecordingDraws(r.ReferenceDraws(100 + k))
        norm = r.normalize_per_feature(x)
        want = r.frame_splicing(r.spec_augment(norm, rec))
        samples.append(({"npy": path}, write_draws(tmp, f"feat{k}", rec.log)))
        wants.append((frames, norm, want))
    for (frames, norm, want), g in zip(wants, probe.run(topo, samples)):
        got = g["features"].T
        same = got.shape == want.shape and np.array_equal(got == 0, want == 0)
        ulp = float(np.max(np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 1e-3)))) \
            if same else float("inf")
        check(ulp <= 2, f"normalize + spec_augment + frame_splice, T = {frames}: {got.shape}, the "
              f"same masked cells, values within {ulp:.0f} ulp (criterion 2)")


def test_end_to_end(probe, tmp, recipe):
    rng = np.random.default_rng(11)
    samples, wants = [], []
    for k, seconds in enumerate((1.3, 3.1, 0.8, 5.0)):
        pcm = r.synthetic_utterance(rng, seconds=seconds)
        flac = os.path.join(tmp, f"utt{k}.flac")
        soundfile.write(flac, pcm, 16000, subtype="PCM_16")
        txt = os.path.join(tmp, f"utt{k}.txt")
        with open(txt, "w") as f:
            f.write("HELLO WORLD")
        rec = r.RecordingDraws(r.ReferenceDraws(700 + k))
        want = r.train_sample(pcm, rec, filterbank="librosa")
        samples.append(({"flac": flac, "txt": txt}, write_draws(tmp, f"e2e{k}", rec.log)))
        wants.append((seconds, want))
    with open(recipe) as f:
        topo = f.read().split("[[transform]]", 1)[1]
    # The recipe names its vocabulary relative to the source tree (where the node is run from).
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(recipe))))
    vocabulary = "config/examples/rnnt-characters.txt"
    topo = topo.replace(f'"{vocabulary}"', f'"{os.path.join(source, vocabulary)}"')
    got = probe.run("[[transform]]" + topo, samples)
    for (seconds, want), g in zip(wants, got):
        if "error" in g:
            check(False, f"end to end {seconds} s: {g['error']}")
            continue
        feats = g["features"].T
        same = feats.shape == want.shape
        err = float(np.max(np.abs(feats - want))) if same else float("inf")
        check(same and err <= 1e-3,
              f"end to end, {seconds} s at the reference's draws: {feats.shape[1]} frames of "
              f"{feats.shape[0]} (reference {want.shape[1]}), worst {err:.2e} absolute")
        tokens = g["tokens"]
        check(list(tokens) == [8, 5, 12, 12, 15, 0, 23, 15, 18, 12, 4],
              f"end to end, {seconds} s: the transcript's tokens")


def main():
    recipe = env("CONVEYOR_RECIPE")
    with tempfile.TemporaryDirectory() as tmp:
        probe = Probe(tmp)
        inputs = [(name, write_wav(tmp, name.replace(" ", "_"), x), x) for name, x in signals()]
        test_mel(probe, inputs)
        test_speed(probe, tmp, inputs)
        test_trim(probe, inputs)
        test_features(probe, tmp)
        test_end_to_end(probe, tmp, recipe)
    for f in FAILURES:
        print("FAIL: " + f)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
