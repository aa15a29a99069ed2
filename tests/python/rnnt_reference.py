#!/usr/bin/python3
"""MLPerf RNN-T (LibriSpeech) training input pipeline, transcribed to NumPy/torch with injectable
draws.

Groundwork for issue 32: Conveyor's C++ recipe config/examples/rnnt-librispeech.toml is to be
tested against the reference. This module is that reference in a form whose every random draw
can be fed from outside. The specification, with line numbers and the reasoning behind every
constant, is docs/rnnt-reference.md.

Sources followed:
  [REF]  mlcommons/training at commit 6b277bbef8c03875ed41db9fea1f7f5498d4c014 (the parent of
         3c81f6f9 "Retire some benchmarks (#756)", which moved rnn_speech_recognition/pytorch
         unchanged to retired_benchmarks/rnnt/pytorch; the blobs below are the same at aa344c7f,
         the newest snapshot read):
           rnn_speech_recognition/pytorch/common/data/dali/pipeline.py  blob 0ca66da679e2...
           rnn_speech_recognition/pytorch/common/data/features.py       blob 8f2d64a143e5...
           rnn_speech_recognition/pytorch/configs/baseline_v3-1023sp.yaml blob 6635c4dc5ec2...
           rnn_speech_recognition/pytorch/train.py, common/data/dali/data_loader.py,
           common/data/dali/iterator.py, rnnt/config.py, Dockerfile (DALI 0.28.0).
  [DALI] NVIDIA/DALI C++ kernels behind the DALI operators the training pipeline calls (the
         Dockerfile pins nvidia-dali-cuda110==0.28.0; train.sh runs them on the CPU). DALI does not
         run here (not installed), so these are transcriptions of its source, not executions; the
         files and the uncertainty about their 0.28 versions are listed in the doc, section 2.

Training uses the DALI pipeline (train.py builds DaliDataLoader); FilterbankFeatures in
features.py is used only by inference.py. Per utterance, in this order:

  decode 16-bit PCM /32768 -> speed perturbation (DALI windowed-sinc resampling to u*16000 Hz,
  u ~ U[0.85, 1.15), float32) -> NonsilentRegion(-60 dB) + Slice -> dither (+1e-5 * N(0,1)) ->
  preemphasis 0.97 (y[0] = x[0] - 0.97 x[0]) -> Spectrogram (nfft 512, Hann window 320 of DALI's
  form, step 160, centred, reflect padding, power 2) -> MelFilterBank (80, Slaney mel, Slaney
  area norm, 0..8000 Hz) -> ToDecibels (ln(max(x, 1e-20))) -> Normalize over time per mel band
  (ddof 0, no epsilon) -> [batch pad] -> SpecAugment (2 freq masks <= 20 bins, 10 time masks
  <= round(0.03 T)) -> frame stacking 3 / subsampling 3 -> (240, ceil(T / 3)).

Draw sites (every draw goes through a Draws object, by site name):

    site                  generator      reference call                          value
    speed                 DALI Uniform   ops.Uniform(range=[0.85, 1.15])         float32 in [0.85, 1.15]
    dither                DALI Normal    ops.NormalDistribution() (audio shape)  float32 standard normals (n,)
    specaug.freq{k}.w     torch CPU      torch.randint(0, 21, (1,))              int in [0, 20], k = 0, 1
    specaug.freq{k}.f0    torch CPU      torch.randint(0, max(1, 80-w+1), (1,))  int in [0, 80-w]
    specaug.time{k}.w     torch CPU      torch.randint(0, M+1, (1,)),            int in [0, M], k = 0..9
                                         M = int(round(T * 0.03))
    specaug.time{k}.t0    torch CPU      torch.randint(0, max(1, Tb-w+1), (1,))  int in [0, max(0, Tb-w)]
                                         (Tb: the padded BATCH length)

Draws objects: ReferenceDraws(seed) (the SpecAugment draws exactly as the reference makes them
after torch.manual_seed(seed); the DALI draws from NumPy, since DALI's own generators are seeded
at random by the reference and cannot be reproduced), ScriptedDraws (replays a list of
(site, value), checking names and ranges: what a C++ test feeds), RecordingDraws.

CLI:  rnnt_reference.py selfcheck
      Checks the transcription: against torchaudio (spectrogram, mel filters, the 1e-4 mel/log
      criterion), against a direct windowed-sinc resampler, against a transcription of librosa's
      Slaney filter formula, and against the reference's own code: features.py (SpecAugment,
      FrameSplicing, FilterbankFeatures) and pipeline.py (DaliPipeline.define_graph, with the DALI
      operators implemented by this module) run verbatim with their imports stubbed. The reference
      files are not copied into this project: they are read at run time from a git clone of
      mlcommons/training ($RNNT_REFERENCE_GIT, default /work/.mirror/mlcommons+training/repo) or
      a checkout ($RNNT_REFERENCE_DIR), and checked against their git blob ids. Exit 0 and "OK"
      when everything ran and passed; 77 when a dependency or the reference source is missing
      (after running what can run); 1 on a mismatch.
"""
import contextlib
import hashlib
import io
import linecache
import math
import os
import subprocess
import sys
import types
import warnings

try:
    import numpy as np
    import torch
    import torchaudio
except ImportError as missing:  # ctest reads 77 as skipped
    print(f"SKIP: {missing} (Debian: python3-numpy python3-torch python3-torchaudio)")
    sys.exit(77)

REFERENCE_COMMIT = "6b277bbef8c03875ed41db9fea1f7f5498d4c014"
REFERENCE_ROOT = "rnn_speech_recognition/pytorch"
RETIRED_ROOT = "retired_benchmarks/rnnt/pytorch"
REFERENCE_BLOBS = {
    "common/data/features.py": "8f2d64a143e57912923eaf9faf4c95484c055593",
    "common/data/dali/pipeline.py": "0ca66da679e28b7f053830eb3eab9a4a17898cfe",
}
DEFAULT_REFERENCE_GIT = "/work/.mirror/mlcommons+training/repo"

# configs/baseline_v3-1023sp.yaml and DaliPipeline.from_config (pipeline.py lines 124-163)
SAMPLE_RATE = 16000
SPEED_MIN, SPEED_MAX = 0.85, 1.15          # speed_perturbation min_rate / max_rate (p = 1.0 unused)
SILENCE_DB = -60.0                         # trim_silence: true -> silence_threshold = -60
NONSILENT_WINDOW = 2048                    # NonsilentRegion defaults: window_length,
NONSILENT_RESET = 8192                     # reset_interval
DITHER = 1e-5                              # filterbank_features.dither 0.00001
PREEMPH = 0.97                             # preemph_coeff = .97 (hard-coded in from_config)
N_FFT = 512
WIN_LENGTH = 320                           # window_size 0.02 * 16000
HOP_LENGTH = 160                           # window_stride 0.01 * 16000
N_MELS = 80                                # n_filt
LOG_FLOOR = 1e-20                          # ToDecibels cutoff_db = ln(1e-20), multiplier ln(10)
FREQ_MASKS, MIN_FREQ, MAX_FREQ = 2, 0, 20  # spec_augment
TIME_MASKS, MIN_TIME, MAX_TIME = 10, 0, 0.03
STACKING, SUBSAMPLING = 3, 3               # frame_splicing
MAX_DURATION = 16.7                        # input_train.audio_dataset.max_duration (seconds)
RESAMPLE_QUALITY = 50.0                    # AudioDecoder `quality` default -> 16 lobes


# --------------------------------------------------------------------------------------------
# Draws
# --------------------------------------------------------------------------------------------
class Draws:
    """Where every random value of the recipe comes from."""

    def uniform_f32(self, site, low, high):  # DALI ops.Uniform: float32 in [low, high]
        raise NotImplementedError

    def normal_f32(self, site, n):  # DALI ops.NormalDistribution: n float32 standard normals
        raise NotImplementedError

    def randint(self, site, low, high):  # torch.randint(low, high, (1,)).item(): int in [low, high)
        raise NotImplementedError


class ReferenceDraws(Draws):
    """SpecAugment draws exactly as [REF] makes them after torch.manual_seed(seed): torch.randint
    without a generator uses the default CPU generator, and a torch.Generator seeded with the same
    value gives the same stream. The DALI draws (speed, dither) come from NumPy's PCG64: the
    reference builds its DALI pipeline without a seed (DALI then seeds itself at random), so no
    run's DALI stream is reproducible, and the contract is "the same output given the same
    draws"."""

    def __init__(self, seed=None, torch_generator=None):
        self.np = np.random.default_rng(seed)
        if torch_generator is None:
            torch_generator = torch.Generator()
            torch_generator.manual_seed(0 if seed is None else int(seed))
        self.tg = torch_generator

    def uniform_f32(self, site, low, high):
        return np.float32(self.np.uniform(low, high))

    def normal_f32(self, site, n):
        return self.np.standard_normal(n).astype(np.float32)

    def randint(self, site, low, high):
        return int(torch.randint(low, high, size=(1,), generator=self.tg).item())


class RecordingDraws(Draws):
    """Passes every draw to `inner` and records (site, value) in self.log."""

    def __init__(self, inner):
        self.inner = inner
        self.log = []

    def _rec(self, site, value):
        self.log.append((site, value))
        return value

    def uniform_f32(self, site, low, high):
        return self._rec(site, self.inner.uniform_f32(site, low, high))

    def normal_f32(self, site, n):
        return self._rec(site, self.inner.normal_f32(site, n))

    def randint(self, site, low, high):
        return self._rec(site, self.inner.randint(site, low, high))


class ScriptedDraws(Draws):
    """Replays (site, value) pairs in order; raises if the site asked for is not the next one in
    the script or the value is outside what the reference could have drawn."""

    def __init__(self, script):
        self.script = list(script)
        self.pos = 0

    def _next(self, site):
        if self.pos >= len(self.script):
            raise ValueError(f"script exhausted at draw {self.pos} ({site})")
        want, value = self.script[self.pos]
        if want != site:
            raise ValueError(f"draw {self.pos}: script has {want}, pipeline asks for {site}")
        self.pos += 1
        return value

    def uniform_f32(self, site, low, high):
        v = np.float32(self._next(site))
        # std::uniform_real_distribution<float> can round up to `high`: accept the closed range
        if not np.float32(low) <= v <= np.float32(high):
            raise ValueError(f"{site}: {v} not in [{low}, {high}]")
        return v

    def normal_f32(self, site, n):
        v = np.asarray(self._next(site), dtype=np.float32)
        if v.shape != (n,):
            raise ValueError(f"{site}: shape {v.shape}, audio has {n} samples")
        return v

    def randint(self, site, low, high):
        v = int(self._next(site))
        if not low <= v < high:
            raise ValueError(f"{site}: {v} not in [{low}, {high})")
        return v

    def exhausted(self):
        return self.pos == len(self.script)


# --------------------------------------------------------------------------------------------
# Decoding and utterance filter
# --------------------------------------------------------------------------------------------
def pcm16_to_float(samples):
    """[DALI] AudioDecoder(dtype=FLOAT) reads through libsndfile's sf_read_float, which scales
    16-bit PCM by 1/32768 (exact in float32)."""
    return (np.asarray(samples, dtype=np.int16).astype(np.float32) * np.float32(1.0 / 32768.0))


def keep_utterance(original_duration, max_duration=MAX_DURATION):
    """[REF] data_loader.py line 98: an utterance is kept iff manifest original_duration (seconds,
    sox's duration of the unperturbed 16 kHz file) <= max_duration. Training only (validation
    keeps everything: PipelineParams max_duration default inf)."""
    return original_duration <= max_duration


# --------------------------------------------------------------------------------------------
# Speed perturbation: DALI's windowed-sinc resampler (kernels/signal/resampling.h)
# --------------------------------------------------------------------------------------------
def resample_lobes(quality=RESAMPLE_QUALITY):
    """[DALI] audio_decoder_op.h: lobes = round(0.007 q^2 - 0.09 q + 3); q = 50 -> 16."""
    return int(round(0.007 * quality * quality - 0.09 * quality + 3))


def sinc_window_lookup(lobes=16, coeffs=None):
    """[DALI] resampling.h windowed_sinc(): a table of `coeffs` = lobes*64+1 samples of
    sinc(x) * Hann(x / lobes) for x in [-lobes, lobes], with one zero on either side.
    Returns (lookup float32 (coeffs+2,), scale, center) as ResamplingWindow holds them."""
    if coeffs is None:
        coeffs = lobes * 64 + 1                           # audio_decoder_op.h: lobes * 64 + 1
    scale = np.float32(np.float32(2.0 * lobes) / np.float32(coeffs - 1))
    scale_env = np.float32(np.float32(2.0) / np.float32(coeffs))
    center = int(np.float32(coeffs - 1) * np.float32(0.5))
    i = np.arange(coeffs)
    x = ((i - center).astype(np.float32) * scale).astype(np.float32)
    y = ((i - center).astype(np.float32) * scale_env).astype(np.float32)
    hann = 0.5 * (1.0 + np.cos(y.astype(np.float64) * np.pi))
    lookup = np.zeros(coeffs + 2, dtype=np.float32)
    lookup[1:coeffs + 1] = (np.sinc(x.astype(np.float64)) * hann).astype(np.float32)
    return lookup, np.float32(1.0 / scale), np.float32(center + 1)


def _window_eval(lookup, wscale, wcenter, x, sse_round):
    """ResamplingWindow::operator(): linear interpolation in the table at fi = x*scale + center.
    The scalar code takes i = floor(fi); the SSE2 code (the 4-tap groups on x86) takes
    i = _mm_cvtps_epi32(fi), i.e. round-half-even, and then extrapolates from [i, i+1] when
    fi < i (a DALI bug fixed in 2022, #3745, present in 0.28)."""
    fi = (x * wscale + wcenter).astype(np.float32)
    i = np.rint(fi) if sse_round else np.floor(fi)
    di = (fi - i).astype(np.float32)
    i = np.clip(i.astype(np.int64), 0, lookup.shape[0] - 2)   # (taps outside +-lobes unused)
    return lookup[i] + di * (lookup[i + 1] - lookup[i])


def resampled_length(n_in, in_rate, out_rate):
    """[DALI] resampling.h resampled_length: ceil(n_in * out_rate / in_rate), in double."""
    return int(math.ceil(n_in * float(out_rate) / float(in_rate)))


def dali_resample(x, in_rate, out_rate, lobes=16, align="edge", sse=True, exact_window=False):
    """[DALI] Resampler::Resample (single channel) for float32 x; returns float32 of
    resampled_length(len(x), in_rate, out_rate) samples.

    Output j is sum_i x[i] * w(i - p_j), w = sinc * Hann over +-lobes input samples, with
    p_j = j * in_rate / out_rate ("edge" alignment: the version with the SSE2 path, DALI PR #2240,
    Aug 2020, before 0.28); "center" gives the older (j + 0.5) * scale - 0.5. There is NO
    low-pass scaling for downsampling (u < 1 aliases the band above u * 8 kHz) and taps outside
    the signal are dropped (no renormalisation at the ends). Positions are generated as DALI
    does: per block of 1024 outputs, the block start in double, then float32 increments of
    float32(scale). exact_window=True evaluates sinc*Hann directly instead of the table
    (for checks); sse=False uses floor interpolation on every tap."""
    x = np.asarray(x, dtype=np.float32)
    n_in = x.shape[0]
    n_out = resampled_length(n_in, in_rate, out_rate)
    out = np.zeros(n_out, dtype=np.float32)
    if n_in == 0 or n_out == 0:
        return out
    lookup, wscale, wcenter = sinc_window_lookup(lobes)
    scale = float(in_rate) / float(out_rate)
    fscale = np.float32(scale)
    block = 1 << 10
    offsets = np.arange(-lobes, lobes + 2)                    # candidate taps relative to floor
    xd = x.astype(np.float64)
    for out_block in range(0, n_out, block):
        block_end = min(out_block + block, n_out)
        if align == "edge":
            in_block_f = out_block * scale
        else:
            in_block_f = (out_block + 0.5) * scale - 0.5
        in_block_i = math.floor(in_block_f)
        steps = np.full(block_end - out_block, fscale, dtype=np.float32)
        steps[0] = np.float32(in_block_f - in_block_i)
        in_pos = np.add.accumulate(steps, dtype=np.float32)  # sequential float32 additions
        i0 = (np.ceil(in_pos) - lobes).astype(np.int64)
        i1 = (np.floor(in_pos) + lobes).astype(np.int64)
        i0 = np.maximum(i0, -in_block_i)
        i1 = np.minimum(i1, n_in - 1 - in_block_i)
        base = np.floor(in_pos).astype(np.int64)
        taps = base[:, None] + offsets[None, :]               # (m, 2*lobes+2)
        valid = (taps >= i0[:, None]) & (taps <= i1[:, None])
        xpos = (taps.astype(np.float32) - in_pos[:, None]).astype(np.float32)
        if exact_window:
            xp = xpos.astype(np.float64)
            w = np.sinc(xp) * 0.5 * (1.0 + np.cos(np.pi * xp / lobes))
            w[np.abs(xp) > lobes] = 0.0
        else:
            # taps i0 .. i0 + 4*floor(count/4) - 1 go through the SSE2 loop, the rest are scalar
            rank = taps - i0[:, None]
            count = (i1 - i0 + 1)[:, None]
            in_sse = sse & (rank < (count // 4) * 4)
            w = np.where(in_sse, _window_eval(lookup, wscale, wcenter, xpos, True),
                         _window_eval(lookup, wscale, wcenter, xpos, False)).astype(np.float64)
        idx = np.clip(taps + in_block_i, 0, n_in - 1)
        f = np.where(valid, xd[idx] * w, 0.0).sum(axis=1)
        out[out_block:block_end] = f.astype(np.float32)
    return out


def speed_rate(u, sample_rate=SAMPLE_RATE):
    """[REF] pipeline.py line 185: resample_coeffs = Uniform() * sample_rate (float32 * int in
    DALI arithmetic: float32)."""
    return np.float32(np.float32(u) * np.float32(sample_rate))


def speed_perturb(x, u, sample_rate=SAMPLE_RATE, **kw):
    """[REF] lines 185-186: decode resampled to u * 16000 Hz; the result is then treated as
    16 kHz, so u > 1 lengthens (slows) the utterance: n_out = ceil(n * u)."""
    return dali_resample(x, sample_rate, float(speed_rate(u, sample_rate)), **kw)


# --------------------------------------------------------------------------------------------
# Silence trimming: DALI NonsilentRegion(cutoff_db=-60) + Slice
# --------------------------------------------------------------------------------------------
def moving_mean_square(x, window=NONSILENT_WINDOW, reset_interval=NONSILENT_RESET):
    """[DALI] kernels/signal/moving_mean_square.cc (float input): out[i] = mean(x[i:i+W]^2) for
    i in [0, n-W], float32. Running sum (float32) recomputed from scratch at window_begin = 0,
    then every (reset_interval - W + 1) positions; between resets sumsq += x[i+W-1]^2 - x[i-1]^2
    with the difference rounded to float32 first. Emulated exactly (sequential float32 sums)."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[0]
    sq = (x * x).astype(np.float32)
    mean_factor = np.float32(1.0) / np.float32(window)
    out = np.empty(n - window + 1, dtype=np.float32)
    reset = n if reset_interval == -1 else reset_interval
    begin = 0
    while begin <= n - window:
        interval_end = min(begin + reset, n) - window + 1
        first = np.add.accumulate(sq[begin:begin + window], dtype=np.float32)[-1]
        diffs = (sq[begin + window:interval_end + window - 1]
                 - sq[begin:interval_end - 1]).astype(np.float32)
        sums = np.add.accumulate(np.concatenate([[first], diffs]).astype(np.float32),
                                 dtype=np.float32)
        out[begin:interval_end] = (sums * mean_factor).astype(np.float32)
        begin = interval_end
    return out


def nonsilent_region(x, cutoff_db=SILENCE_DB, window=NONSILENT_WINDOW,
                     reset_interval=NONSILENT_RESET):
    """[DALI] operators/audio/nonsilence_op.h DetectNonsilenceRegion: W = min(window, n);
    mms = moving_mean_square; threshold = max(mms) * 10^(cutoff_db / 10) (float32);
    begin = first i with mms[i] >= threshold, end = last such i; returns
    (begin, end - begin + 1 + W - 1), i.e. the region [begin, end + W). (0, 0) if none."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[0]
    if n == 0:
        return 0, 0
    w = min(window, n)
    mms = moving_mean_square(x, w, reset_interval)
    ref = mms.max()
    threshold = np.float32(ref * np.float32(np.power(np.float32(10.0),
                                                     np.float32(cutoff_db) * np.float32(0.1))))
    loud = np.nonzero(mms >= threshold)[0]
    if loud.size == 0:
        return 0, 0
    begin, end = int(loud[0]), int(loud[-1])
    return begin, end - begin + 1 + w - 1


def trim_silence(x, **kw):
    """[REF] pipeline.py _remove_silence (lines 175-178): Slice(x, begin, length) on axis 0."""
    begin, length = nonsilent_region(x, **kw)
    return np.asarray(x, dtype=np.float32)[begin:begin + length]


# --------------------------------------------------------------------------------------------
# Dither, preemphasis, spectrogram, mel, log, normalisation
# --------------------------------------------------------------------------------------------
def dither(x, z, coeff=DITHER):
    """[REF] line 197: audio + NormalDistribution(audio) * dither_coeff, float32 throughout."""
    return (np.asarray(x, np.float32) + (np.asarray(z, np.float32) * np.float32(coeff))
            ).astype(np.float32)


def preemphasis(x, coeff=PREEMPH):
    """[DALI] PreemphasisFilter (CPU): y[0] = x[0] - c*x[0] (the first sample is scaled by 0.03,
    not kept), y[t] = x[t] - c*x[t-1]; float32. (features.py's torch path keeps x[0].)"""
    x = np.asarray(x, dtype=np.float32)
    c = np.float32(coeff)
    y = np.empty_like(x)
    if x.size:
        y[0] = x[0] - c * x[0]
        y[1:] = x[1:] - c * x[:-1]
    return y


def dali_hann_window(n):
    """[DALI] kernels/signal/window/window_functions.h HannWindow: w[t] = 0.5(1 - cos(2 pi (t +
    0.5) / N)), computed in double, stored float32. Neither torch.hann_window(periodic=True)
    nor (periodic=False): it is sampled at half-sample offsets, never 0, symmetric."""
    t = np.arange(n, dtype=np.float64)
    return (0.5 * (1.0 - np.cos(2.0 * np.pi / n * (t + 0.5)))).astype(np.float32)


def num_frames(n, hop=HOP_LENGTH):
    """[DALI] ExtractWindows with centred windows: n // step + 1 frames."""
    return n // hop + 1


def reflect_index(idx, n):
    """[DALI] extract_windows_cpu.cc: -i on the left, 2n-2-i on the right, repeated (numpy's
    'reflect', edge sample not repeated)."""
    idx = np.array(idx, dtype=np.int64)
    for _ in range(64):
        lo, hi = idx < 0, idx >= n
        if not (lo.any() or hi.any()):
            return idx
        idx = np.where(lo, -idx, idx)
        idx = np.where(idx >= n, 2 * n - 2 - idx, idx)
    raise ValueError("reflection did not converge (signal of length 1?)")


def power_spectrogram(x, n_fft=N_FFT, win_length=WIN_LENGTH, hop=HOP_LENGTH):
    """[DALI] Spectrogram(nfft=512, window_length=320, window_step=160), defaults: Hann window of
    window_length, center_windows=True (window t centred on sample t*160, i.e. it covers
    [t*160 - 160, t*160 + 160)), reflect_padding=True, power=2, layout "ft". The 320 windowed
    samples are zero-padded to 512 for the FFT (where the zeros go does not change |X|^2).
    Returns float32 (n_fft//2+1, n_frames)."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[0]
    frames = num_frames(n, hop)
    w = dali_hann_window(win_length)
    starts = np.arange(frames) * hop - win_length // 2
    idx = reflect_index(starts[:, None] + np.arange(win_length)[None, :], n)
    windowed = (x[idx] * w[None, :]).astype(np.float32)
    spec = np.fft.rfft(windowed.astype(np.float64), n=n_fft, axis=1)
    return (spec.real ** 2 + spec.imag ** 2).astype(np.float32).T


def _slaney_hz_to_mel_f32(hz):
    """[DALI] kernels/audio/mel_scale/mel_scale.h SlaneyMelScale<float>::hz_to_mel."""
    f32 = np.float32
    fsp = f32(200.0 / 3.0)
    min_log_hz = f32(1000.0)
    min_log_mel = f32(min_log_hz / fsp)
    step_log = f32(0.068751777)
    hz = f32(hz)
    if hz >= min_log_hz:
        return f32(min_log_mel + f32(np.log(f32(hz / min_log_hz))) / step_log)
    return f32(hz / fsp)


def _slaney_mel_to_hz_f32(mel):
    """[DALI] SlaneyMelScale<float>::mel_to_hz."""
    f32 = np.float32
    fsp = f32(200.0 / 3.0)
    min_log_hz = f32(1000.0)
    min_log_mel = f32(min_log_hz / fsp)
    step_log = f32(0.068751777)
    mel = f32(mel)
    if mel >= min_log_mel:
        return f32(min_log_hz * f32(np.exp(f32(step_log * f32(mel - min_log_mel)))))
    return f32(mel * fsp)


def dali_mel_filterbank(n_mels=N_MELS, n_fft=N_FFT, sample_rate=SAMPLE_RATE, f_min=0.0,
                        f_max=None, normalize=True):
    """[DALI] kernels/audio/mel_scale/mel_filter_bank_cpu.cc MelFilterBankCpu::Impl, as a dense
    float32 (n_mels, n_fft//2+1) matrix. Mel points are walked in float32 with a double step
    (mel1 += mel_delta); each FFT bin k (f = k * sr / nfft) in [f0, f1) of interval j gets
    weight_down = (f1 - f)/(f1 - f0) for filter j-1 and 1 - weight_down for filter j, each times
    the Slaney area norm 2 / (f_{j+2} - f_j). Equal to librosa.filters.mel(htk=False,
    norm='slaney') and torchaudio melscale_fbanks(norm='slaney', mel_scale='slaney') to ~1e-6."""
    f32 = np.float32
    if f_max is None:
        f_max = sample_rate / 2
    mel_low = _slaney_hz_to_mel_f32(f_min)
    mel_high = _slaney_hz_to_mel_f32(f_max)
    hz_step = float(f32(f32(sample_rate) / f32(n_fft)))
    mel_delta = float(f32(f32(mel_high - mel_low) / f32(n_mels + 1)))
    nbins = n_fft // 2 + 1
    inv_hz_step = 1.0 / hz_step
    start = max(0, math.ceil(f_min * inv_hz_step))
    end = min(nbins - 1, math.floor(f_max * inv_hz_step))
    weights_down = np.zeros(nbins, dtype=np.float32)
    intervals = np.full(nbins, -1, dtype=np.int64)
    norm = np.ones(n_mels, dtype=np.float32)
    mel0 = mel_low
    mel1 = f32(float(mel_low) + mel_delta)
    fftbin = start
    f = f32(fftbin * hz_step)
    for interval in range(n_mels + 1):
        if interval == n_mels:
            mel1 = mel_high
        f0, f1 = _slaney_mel_to_hz_f32(mel0), _slaney_mel_to_hz_f32(mel1)
        if normalize and interval < n_mels:
            f2 = _slaney_mel_to_hz_f32(f32(float(mel1) + mel_delta))
            norm[interval] = f32(f32(2.0) / f32(f2 - f0))
        slope = f32(f32(1.0) / f32(f1 - f0))
        while fftbin <= end and f < f1:
            weights_down[fftbin] = f32(f32(f1 - f) * slope)
            intervals[fftbin] = interval
            fftbin += 1
            f = f32(fftbin * hz_step)
        mel0 = mel1
        mel1 = f32(float(mel1) + mel_delta)
    fb = np.zeros((n_mels, nbins), dtype=np.float32)
    for k in range(start, end + 1):
        up = intervals[k]
        down = up - 1
        if down >= 0:
            fb[down, k] = weights_down[k] * (norm[down] if normalize else f32(1))
        if 0 <= up < n_mels:
            fb[up, k] = f32(f32(1) - weights_down[k]) * (norm[up] if normalize else f32(1))
    return fb


def librosa_slaney_mel_filterbank(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS, fmin=0.0,
                                  fmax=None):
    """A transcription of librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False,
    norm='slaney' (librosa < 0.7: norm=1, the same), dtype=float32): computed in float64, stored
    float32. This is what features.py's FilterbankFeatures (the inference path) asks librosa for;
    librosa is not installed here, so the selfcheck uses it as the stub."""
    if fmax is None:
        fmax = sr / 2.0
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0

    def hz_to_mel(f):
        f = np.asarray(f, dtype=np.float64)
        return np.where(f >= min_log_hz,
                        min_log_mel + np.log(np.maximum(f, 1e-300) / min_log_hz) / logstep,
                        f / f_sp)

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)),
                        f_sp * m)

    fftfreqs = np.linspace(0, float(sr) / 2, int(1 + n_fft // 2), endpoint=True)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    weights = np.zeros((n_mels, int(1 + n_fft // 2)), dtype=np.float32)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, np.newaxis]
    return weights


def torchaudio_mel_filterbank(n_mels=N_MELS, n_fft=N_FFT, sample_rate=SAMPLE_RATE):
    """torchaudio.functional.melscale_fbanks with the settings that match (n_mels, bins)."""
    fb = torchaudio.functional.melscale_fbanks(n_fft // 2 + 1, 0.0, sample_rate / 2.0, n_mels,
                                               sample_rate, norm="slaney", mel_scale="slaney")
    return fb.numpy().T.astype(np.float32)


_FB_CACHE = {}


def mel_filterbank(kind="dali"):
    """The (80, 257) filters: "dali" = dali_mel_filterbank() (what ran: DALI's float32
    construction, as transcribed); "librosa" = librosa_slaney_mel_filterbank() (the same filters
    computed in double, = torchaudio's to 5e-5; what the C++ recipe should build, see the doc,
    section 7). The two give mel values up to ~2e-4 apart (relative)."""
    if kind not in _FB_CACHE:
        _FB_CACHE[kind] = {"dali": dali_mel_filterbank,
                           "librosa": librosa_slaney_mel_filterbank}[kind]()
    return _FB_CACHE[kind]


def mel_spectrogram(power, fb=None, filterbank="dali"):
    """[DALI] MelFilterBank(sample_rate=16000, nfilter=80, normalize=True): fb @ power."""
    if fb is None:
        fb = mel_filterbank(filterbank)
    return (fb.astype(np.float64) @ power.astype(np.float64)).astype(np.float32)


def log_mel(mel):
    """[DALI] ToDecibels(multiplier=ln 10, reference=1.0, cutoff_db=ln 1e-20): the multiplier
    ln(10) on log10 makes it the natural log, and min_ratio = 10^(cutoff_db / multiplier) = 1e-20:
    ln(max(x, 1e-20)). (features.py's torch path uses log(x + 1e-20) instead.)"""
    floor = np.float32(LOG_FLOOR)
    return np.log(np.maximum(np.asarray(mel, np.float32), floor)).astype(np.float32)


def normalize_per_feature(x):
    """[DALI] Normalize(axes=[1]) on the (80, T) "ft" features: per mel band, mean and standard
    deviation over time, ddof = 0, epsilon = 0; out = (x - mean) * (1/std); a band with zero
    variance maps to 0 (ScaleRSqrtKeepZero). (features.py's normalize_batch, not used in
    training, uses ddof = 1 and std + 1e-5.)"""
    x = np.asarray(x, dtype=np.float32)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=1, keepdims=True).astype(np.float32)
    var = ((xd - mean) ** 2).mean(axis=1, keepdims=True)
    inv = np.where(var > 0, 1.0 / np.sqrt(np.where(var > 0, var, 1.0)), 0.0).astype(np.float32)
    return ((x - mean) * inv).astype(np.float32)


def dali_features(x, z=None, filterbank="dali"):
    """pipeline.py lines 196-207 on trimmed samples x: dither (z: standard normals, None = off),
    preemphasis, power spectrogram, mel, log, per-feature normalisation. float32 (80, T)."""
    if z is not None:
        x = dither(x, z)
    p = power_spectrogram(preemphasis(x))
    return normalize_per_feature(log_mel(mel_spectrogram(p, filterbank=filterbank)))


# --------------------------------------------------------------------------------------------
# SpecAugment and frame splicing (features.py, torch, on the GPU after the DALI pipeline)
# --------------------------------------------------------------------------------------------
def adaptive_max_time(length, max_time=MAX_TIME):
    """[REF] features.py lines 96-98: int(round(T * 0.03)) with Python's round (half to even) of
    the double product; T is the utterance's own frame count."""
    return int(round(length * max_time)) if 0 < max_time < 1.0 else int(max_time)


def spec_augment(x, draws, batch_frames=None, n_freq_masks=FREQ_MASKS, min_freq=MIN_FREQ,
                 max_freq=MAX_FREQ, n_time_masks=TIME_MASKS, min_time=MIN_TIME,
                 max_time=MAX_TIME):
    """[REF] features.py SpecAugment.calculate_features (lines 79-117) for one utterance
    x (80, T) (T = its own length). batch_frames is the padded length of the batch it sits in
    (default T): the time-mask start is drawn over it. Masked cells are set to 0
    (noise_magnitude = 0). Draw order: freq masks (w then f0) x2, then time masks (w, t0) x10."""
    x = np.array(x, dtype=np.float32, copy=True)
    n_feat, length = x.shape
    tb = length if batch_frames is None else int(batch_frames)
    mask = np.zeros(x.shape, dtype=bool)
    for k in range(n_freq_masks):
        w = draws.randint(f"specaug.freq{k}.w", min_freq, max_freq + 1)
        f0 = draws.randint(f"specaug.freq{k}.f0", 0, max(1, n_feat - w + 1))
        mask[f0:f0 + w, :] = True
    time_masks = n_time_masks
    if 0 < time_masks < 1.0:
        time_masks = int(round(length * time_masks))
    mt = adaptive_max_time(length, max_time)
    for k in range(time_masks):
        w = draws.randint(f"specaug.time{k}.w", min_time, mt + 1)
        t0 = draws.randint(f"specaug.time{k}.t0", 0, max(1, tb - w + 1))
        mask[:, t0:t0 + w] = True
    x[mask] = 0.0
    return x


def frame_splicing(x, stacking=STACKING, subsampling=SUBSAMPLING):
    """[REF] features.py stack_subsample_frames (lines 144-165) for one utterance x (80, T):
    out[k*80 + m, j] = x[m, 3j + k] (0 past the end), j < ceil(T / 3). float32 (240, ceil(T/3))."""
    x = np.asarray(x, dtype=np.float32)
    n_feat, length = x.shape
    seq = [x]
    for n in range(1, stacking):
        tmp = np.zeros_like(x)
        tmp[:, :length - n] = x[:, n:]
        seq.append(tmp)
    out = np.concatenate(seq, axis=0)[:, ::subsampling]
    out_len = math.ceil(length / subsampling) if subsampling > 1 else length
    return np.ascontiguousarray(out[:, :out_len])


# --------------------------------------------------------------------------------------------
# The whole training sample
# --------------------------------------------------------------------------------------------
def dali_train_stages(samples, draws, resample_kw=None, filterbank="dali"):
    """[REF] DaliPipeline(train).define_graph (pipeline.py lines 180-211) for one utterance:
    decode, speed perturbation, trimming, dither, preemphasis, spectrogram, mel, log,
    normalisation. samples: int16 PCM at 16 kHz (or float32 already /32768). Draws: speed, then
    dither. Returns a dict of every intermediate; "normalized" (float32 (80, T)) is what the
    DALI iterator hands to train.py."""
    x = np.asarray(samples)
    x = pcm16_to_float(x) if x.dtype == np.int16 else x.astype(np.float32)
    u = draws.uniform_f32("speed", SPEED_MIN, SPEED_MAX)
    perturbed = speed_perturb(x, u, **(resample_kw or {}))
    trimmed = trim_silence(perturbed)
    z = draws.normal_f32("dither", trimmed.shape[0])
    dithered = dither(trimmed, z)
    emph = preemphasis(dithered)
    power = power_spectrogram(emph)
    mel = mel_spectrogram(power, filterbank=filterbank)
    logm = log_mel(mel)
    feats = normalize_per_feature(logm)
    return dict(decoded=x, speed=u, perturbed=perturbed, trimmed=trimmed, dithered=dithered,
                preemphasized=emph, power=power, mel=mel, log=logm, normalized=feats,
                frames=feats.shape[1])


def train_sample(samples, draws, batch_frames=None, stages=False, resample_kw=None,
                 filterbank="dali"):
    """One training utterance, [REF] train.py: DaliPipeline(train), then SpecAugment and
    FrameSplicing (train_augmentations, train.py lines 278-282). Draws: speed, dither, then the
    24 SpecAugment draws. Returns float32 (240, ceil(T/3)); with stages=True the dict of
    dali_train_stages plus "augmented", "output", "out_frames". filterbank: mel_filterbank()."""
    st = dali_train_stages(samples, draws, resample_kw, filterbank)
    augmented = spec_augment(st["normalized"], draws, batch_frames=batch_frames)
    out = frame_splicing(augmented)
    if not stages:
        return out
    st.update(augmented=augmented, output=out, out_frames=out.shape[1])
    return st


def val_sample(samples, draws, filterbank="dali"):
    """The validation pipeline: no speed perturbation (the decoder is asked for 16 kHz), no
    SpecAugment; trimming and dither (1e-5, also in input_val) stay on; frame splicing."""
    x = np.asarray(samples)
    x = pcm16_to_float(x) if x.dtype == np.int16 else x.astype(np.float32)
    trimmed = trim_silence(x)
    z = draws.normal_f32("dither", trimmed.shape[0])
    return frame_splicing(dali_features(trimmed, z, filterbank))


# --------------------------------------------------------------------------------------------
# Helpers for the exactness tests (docs/rnnt-reference.md section 11)
# --------------------------------------------------------------------------------------------
def torchaudio_mel(emphasized, dtype=torch.float32):
    """torchaudio's mel power spectrogram with the reference's settings; input: the
    pre-emphasised (and, if any, dithered) float32 samples. (80, T), float64 if dtype is
    torch.float64 (transform and input in double: a reference free of float32 FFT noise)."""
    transform = torchaudio.transforms.MelSpectrogram(
        sample_rate=SAMPLE_RATE, n_fft=N_FFT, win_length=WIN_LENGTH, hop_length=HOP_LENGTH,
        f_min=0.0, f_max=SAMPLE_RATE / 2.0, n_mels=N_MELS,
        window_fn=lambda n, **_: torch.from_numpy(dali_hann_window(n)),
        power=2.0, center=True, pad_mode="reflect", norm="slaney", mel_scale="slaney").to(dtype)
    with torch.no_grad():
        x = torch.from_numpy(np.asarray(emphasized, np.float32)).to(dtype)
        return transform(x).numpy()


def compare_mel(got, want, floor_db=-80.0, rtol=1e-4):
    """The issue's criterion: per bin, |got - want| <= rtol * want where want >= max(want) *
    10^(floor_db/10); for the log features, |ln got - ln want| <= rtol on the same bins (the
    same bound to first order). Returns (ok, worst mel relative error, worst log error,
    bins checked)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, math.inf, math.inf, 0
    sel = want >= want.max() * 10.0 ** (floor_db / 10.0)
    rel = np.abs(got[sel] - want[sel]) / want[sel]
    logerr = np.abs(np.log(np.maximum(got[sel], 1e-20)) - np.log(want[sel]))
    worst_rel = float(rel.max()) if rel.size else 0.0
    worst_log = float(logerr.max()) if logerr.size else 0.0
    return worst_rel <= rtol and worst_log <= rtol, worst_rel, worst_log, int(sel.sum())


def relative_rms(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return math.inf
    return float(np.sqrt(np.mean((got - want) ** 2) / max(np.mean(want ** 2), 1e-300)))


# --------------------------------------------------------------------------------------------
# The reference's own code, run verbatim (read at run time, never copied here)
# --------------------------------------------------------------------------------------------
def _git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def reference_source(relpath):
    """The text of [REF] rnn_speech_recognition/pytorch/<relpath> at REFERENCE_COMMIT (or an
    identical blob), from $RNNT_REFERENCE_DIR (a checkout) or $RNNT_REFERENCE_GIT (a clone;
    default the mirror path). None if unavailable; raises if found but different."""
    want = REFERENCE_BLOBS[relpath]
    root = os.environ.get("RNNT_REFERENCE_DIR")
    data = None
    if root:
        for base in (REFERENCE_ROOT, RETIRED_ROOT, ""):
            p = os.path.join(root, base, relpath)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    data = f.read()
                break
    if data is None:
        gitdir = os.environ.get("RNNT_REFERENCE_GIT", DEFAULT_REFERENCE_GIT)
        if os.path.isdir(gitdir):
            for spec in (f"{REFERENCE_COMMIT}:{REFERENCE_ROOT}/{relpath}", want):
                try:
                    data = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "-p", spec],
                                          check=True, capture_output=True).stdout
                    break
                except (OSError, subprocess.CalledProcessError):
                    data = None
    if data is None:
        return None
    if _git_blob_id(data) != want:
        raise AssertionError(f"{relpath}: blob {_git_blob_id(data)} is not {want}")
    return data.decode("utf-8")


def _exec_reference(relpath, source, stubs):
    """Executes the reference file with the given sys.modules stubs; the text is registered in
    linecache so that torch.jit.script can read it back."""
    filename = f"<{REFERENCE_ROOT}/{relpath}@{REFERENCE_COMMIT[:12]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    saved = {k: sys.modules.get(k) for k in stubs}
    sys.modules.update(stubs)
    try:
        namespace = {"__name__": "rnnt_ref_" + relpath.replace("/", "_").replace(".py", "")}
        exec(compile(source, filename, "exec"), namespace)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return namespace


def load_reference_features():
    """features.py with `librosa` stubbed by librosa_slaney_mel_filterbank (librosa is not
    installed) and `apex.amp` by a no-op disable_casts (optim_level 0 never calls it)."""
    source = reference_source("common/data/features.py")
    if source is None:
        return None
    fake_librosa = types.ModuleType("librosa")

    def mel(sr, n_fft, n_mels=128, fmin=0.0, fmax=None, htk=False, norm="slaney"):
        assert not htk and norm in ("slaney", 1)
        return librosa_slaney_mel_filterbank(sr, n_fft, n_mels, fmin, fmax)

    fake_librosa.filters = types.SimpleNamespace(mel=mel)
    fake_apex = types.ModuleType("apex")
    fake_apex.amp = types.SimpleNamespace(disable_casts=contextlib.nullcontext)
    return _exec_reference("common/data/features.py", source,
                           {"librosa": fake_librosa, "apex": fake_apex})


class _Node(np.ndarray):
    """A DALI DataNode stand-in for one sample: an ndarray with .gpu()."""

    def gpu(self):
        return self


def _node(a):
    return np.asarray(a).view(_Node)


def _fake_dali(draws, encoded):
    """nvidia.dali stand-ins whose operators are this module's transcriptions, with the
    arguments DaliPipeline passes them checked against what the transcription assumes. One
    sample per "batch". `encoded` is the int16 PCM the reader yields."""
    calls = []

    class Op:
        def __init__(self, **kw):
            self.kw = kw
            calls.append((type(self).__name__, kw))

    class FileReader(Op):
        def __call__(self):
            return _node(np.asarray(encoded, np.int16)), _node(np.int32(0))

    class Uniform(Op):
        def __call__(self):
            lo, hi = self.kw["range"]
            return _node(np.float32(draws.uniform_f32("speed", lo, hi)))

    class AudioDecoder(Op):
        def __call__(self, data, sample_rate=None):
            assert self.kw["dtype"] == "FLOAT" and self.kw["downmix"]
            rate = sample_rate if sample_rate is not None else self.kw.get("sample_rate")
            x = pcm16_to_float(data)
            if rate is not None:
                rate = np.float32(rate)
                if rate != SAMPLE_RATE:
                    x = dali_resample(x, SAMPLE_RATE, float(rate))
            return _node(x), _node(np.float32(rate if rate is not None else SAMPLE_RATE))

    class NonsilentRegion(Op):
        def __call__(self, x):
            b, n = nonsilent_region(np.asarray(x), cutoff_db=self.kw["cutoff_db"])
            return _node(np.int32(b)), _node(np.int32(n))

    class Slice(Op):
        def __call__(self, x, begin, length):
            assert self.kw["axes"] == [0] and not self.kw["normalized_anchor"]
            b, n = int(begin), int(length)
            assert b == begin and n == length
            return _node(np.asarray(x)[b:b + n])

    class Cast(Op):
        def __call__(self, x):
            return _node(np.asarray(x).astype(np.float32))

    class NormalDistribution(Op):
        def __call__(self, x):
            return _node(draws.normal_f32("dither", np.asarray(x).shape[0]))

    class PreemphasisFilter(Op):
        def __call__(self, x):
            return _node(preemphasis(np.asarray(x), self.kw["preemph_coeff"]))

    class Spectrogram(Op):
        def __call__(self, x):
            wl, ws = self.kw["window_length"], self.kw["window_step"]
            assert wl == int(wl) and ws == int(ws)           # 0.02 * 16000 = 320.0 etc.
            return _node(power_spectrogram(np.asarray(x), self.kw["nfft"], int(wl), int(ws)))

    class MelFilterBank(Op):
        def __call__(self, x):
            fb = dali_mel_filterbank(self.kw["nfilter"], N_FFT, self.kw["sample_rate"],
                                     normalize=self.kw["normalize"])
            return _node(mel_spectrogram(np.asarray(x), fb))

    class ToDecibels(Op):
        def __call__(self, x):
            mul, ref, cut = self.kw["multiplier"], self.kw["reference"], self.kw["cutoff_db"]
            assert ref == 1.0 and abs(mul - math.log(10)) < 1e-12
            assert abs(10 ** (cut / mul) - LOG_FLOOR) < 1e-30
            return _node(log_mel(np.asarray(x)))

    class Shapes(Op):
        def __call__(self, x):
            return _node(np.array(np.asarray(x).shape, dtype=np.int64))

    class Normalize(Op):
        def __call__(self, x):
            assert self.kw["axes"] == [1]
            return _node(normalize_per_feature(np.asarray(x)))

    class Pad(Op):
        def __call__(self, x):
            return x                                          # one sample: nothing to pad to

    class Pipeline:
        def __init__(self, batch_size, num_threads, device_id):
            self.batch_size = batch_size

    ops = types.ModuleType("nvidia.dali.ops")
    for cls in (FileReader, Uniform, AudioDecoder, NonsilentRegion, Slice, Cast,
                NormalDistribution, PreemphasisFilter, Spectrogram, MelFilterBank, ToDecibels,
                Shapes, Normalize, Pad):
        setattr(ops, cls.__name__, cls)
    dali_types = types.ModuleType("nvidia.dali.types")
    dali_types.FLOAT = "FLOAT"
    pipeline_mod = types.ModuleType("nvidia.dali.pipeline")
    pipeline_mod.Pipeline = Pipeline
    dali = types.ModuleType("nvidia.dali")
    dali.ops, dali.types, dali.pipeline = ops, dali_types, pipeline_mod
    nvidia = types.ModuleType("nvidia")
    nvidia.dali = dali
    stubs = {"nvidia": nvidia, "nvidia.dali": dali, "nvidia.dali.ops": ops,
             "nvidia.dali.types": dali_types, "nvidia.dali.pipeline": pipeline_mod}
    return stubs, calls


def run_reference_dali_pipeline(samples, draws, train=True):
    """pipeline.py run verbatim: DaliPipeline.from_config with the baseline config's values and
    define_graph() on one utterance, the DALI operators being this module's transcriptions.
    Returns (features (80, T), T, [(op, kwargs)...]) or None without the reference source."""
    source = reference_source("common/data/dali/pipeline.py")
    if source is None:
        return None
    stubs, calls = _fake_dali(draws, samples)
    ns = _exec_reference("common/data/dali/pipeline.py", source, stubs)
    config_data = {"sample_rate": SAMPLE_RATE, "max_duration": MAX_DURATION if train else
                   float("inf"), "trim_silence": True, "normalize_transcripts": True,
                   "speed_perturbation": {"min_rate": SPEED_MIN, "max_rate": SPEED_MAX, "p": 1.0}
                   if train else None}
    config_features = {"normalize": "per_feature", "sample_rate": SAMPLE_RATE,
                       "window_size": 0.02, "window_stride": 0.01, "window": "hann",
                       "n_fft": N_FFT, "n_filt": N_MELS, "dither": DITHER}
    sampler = types.SimpleNamespace(is_sampler_random=lambda: False,
                                    get_file_list_path=lambda: "/nonexistent")
    with contextlib.redirect_stdout(io.StringIO()):          # _dali_init_log prints the args
        pipe = ns["DaliPipeline"].from_config(
            pipeline_type="train" if train else "val", device_id=0, batch_size=1,
            file_root="/nonexistent", sampler=sampler, config_data=config_data,
            config_features=config_features, device_type="cpu", num_cpu_threads=1)
    audio, label, audio_len = pipe.define_graph()
    return np.asarray(audio), int(np.asarray(audio_len)[1]), calls


# --------------------------------------------------------------------------------------------
# selfcheck
# --------------------------------------------------------------------------------------------
def synthetic_utterance(rng, seconds=1.3, lead=0.25, tail=0.3, sample_rate=SAMPLE_RATE):
    """int16 PCM: near-silence (+-2 LSB noise), a speech-like stretch (harmonics of a gliding
    pitch under a syllable envelope, plus some noise), near-silence."""
    n_lead, n_body, n_tail = (int(lead * sample_rate), int(seconds * sample_rate),
                              int(tail * sample_rate))
    t = np.arange(n_body) / sample_rate
    f0 = 110 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    voiced = sum((0.6 / h) * np.sin(h * phase + rng.uniform(0, 2 * np.pi)) for h in range(1, 25))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * np.minimum(t / 0.25, 1))) * (
        0.6 + 0.4 * np.sin(2 * np.pi * 3.1 * t) ** 2)
    body = 0.25 * envelope * voiced + 0.01 * rng.standard_normal(n_body)
    x = np.concatenate([rng.integers(-2, 3, n_lead) / 32768.0, body,
                        rng.integers(-2, 3, n_tail) / 32768.0])
    return np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)


class _Check:
    def __init__(self, verbose):
        self.verbose = verbose
        self.failed = []
        self.skipped = []

    def __call__(self, ok, what):
        if self.verbose:
            print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            self.failed.append(what)

    def skip(self, what):
        if self.verbose:
            print("skip  " + what)
        self.skipped.append(what)


def selfcheck(verbose=True):
    check = _Check(verbose)
    rng = np.random.default_rng(32)
    warnings.filterwarnings("ignore", message=".*return_complex.*")

    # 1. mel filters: DALI's algorithm, librosa's formula and torchaudio agree
    fb_dali = dali_mel_filterbank()
    fb_lib = librosa_slaney_mel_filterbank()
    fb_ta = torchaudio_mel_filterbank()
    scale = fb_lib.max()
    d1 = float(np.abs(fb_dali - fb_lib).max() / scale)
    d2 = float(np.abs(fb_ta - fb_lib).max() / scale)
    check(d1 < 1e-5 and d2 < 1e-5, f"mel filters 80x257: DALI transcription vs librosa formula "
          f"{d1:.1e}, torchaudio slaney/slaney vs librosa {d2:.1e} (of the largest weight)")

    # 2. spectrogram and the mel/log criterion against torchaudio
    pcm = synthetic_utterance(rng)
    x = pcm16_to_float(pcm)
    emph = preemphasis(x)
    p = power_spectrogram(emph)
    st = torch.stft(torch.from_numpy(emph).double(), n_fft=N_FFT, hop_length=HOP_LENGTH,
                    win_length=WIN_LENGTH,
                    window=torch.from_numpy(dali_hann_window(WIN_LENGTH)).double(),
                    center=True, pad_mode="reflect", return_complex=True)
    p_torch = (st.abs() ** 2).numpy()
    ok, rel, _, nb = compare_mel(p, p_torch, floor_db=-60.0, rtol=1e-4)
    check(ok and p.shape == (257, len(x) // HOP_LENGTH + 1),
          f"power spectrogram {p.shape} vs torch.stft(center, reflect, DALI window, float64): "
          f"worst {rel:.1e} over {nb} bins above -60 dB")
    want = torchaudio_mel(emph)
    ok, rel, lerr, nb = compare_mel(mel_spectrogram(p, filterbank="librosa"), want)
    check(ok, f"mel (librosa-formula filters) vs torchaudio MelSpectrogram(slaney, slaney): "
          f"worst {rel:.1e}, log {lerr:.1e} over {nb} bins above -80 dB (criterion 1e-4)")
    want64 = torchaudio_mel(emph, dtype=torch.float64)
    ok, rel, lerr, nb = compare_mel(mel_spectrogram(p, filterbank="librosa"), want64)
    check(ok, f"mel (librosa-formula filters) vs torchaudio in float64: worst {rel:.1e}, "
          f"log {lerr:.1e} (criterion 1e-4)")
    _, rel, _, _ = compare_mel(mel_spectrogram(p, filterbank="dali"), want64)
    if check.verbose:
        print(f"info  mel with DALI's float32 filter construction (as transcribed) vs torchaudio "
              f"float64: worst {rel:.1e} (why the C++ should build the filters in double)")

    # 3. the resampler against a direct windowed sinc, and the variants
    for u in (np.float32(0.85), np.float32(0.9731), np.float32(1.15)):
        out = speed_perturb(x, u)
        exact = speed_perturb(x, u, exact_window=True)
        nosse = speed_perturb(x, u, sse=False)
        n_ok = out.shape[0] == math.ceil(len(x) * float(speed_rate(u)) / SAMPLE_RATE)
        e1, e2 = relative_rms(out, exact), relative_rms(nosse, exact)
        check(n_ok and e1 < 1e-3 and e2 < 1e-3,
              f"speed {float(u):.4f}: {out.shape[0]} samples; table+SSE vs direct sinc*Hann "
              f"{e1:.1e} rel RMS, table+floor {e2:.1e} (criterion 1e-3)")
        if check.verbose:
            centre = relative_rms(speed_perturb(x, u, align="center"), out)
            line = (f"info  speed {float(u):.4f}: the pre-Aug-2020 centre alignment differs by "
                    f"{centre:.1e}")
            rate = float(speed_rate(u))
            if rate == int(rate):                 # torchaudio needs integer rates
                ta = torchaudio.functional.resample(torch.from_numpy(x), SAMPLE_RATE,
                                                    int(rate)).numpy()
                m = min(len(ta), len(out))
                line += (f"; torchaudio.functional.resample (rolloff 0.99, anti-aliased) by "
                         f"{relative_rms(ta[:m], out[:m]):.1e}")
            print(line)

    # 4. silence trimming
    b, n = nonsilent_region(x)
    mms = moving_mean_square(x)
    mms64 = np.array([np.mean(x[i:i + NONSILENT_WINDOW].astype(np.float64) ** 2)
                      for i in range(0, len(mms), 997)])
    lead = int(0.25 * SAMPLE_RATE)
    check(abs(b - (lead - NONSILENT_WINDOW)) < 600 and b + n <= len(x)
          and float(np.abs(mms[::997] - mms64).max() / mms64.max()) < 1e-5,
          f"nonsilent region [{b}, {b + n}) of {len(x)} (speech from {lead}); MMS float32 "
          "emulation vs float64")

    # 5. SpecAugment draw ranges and frame splicing shapes
    f = normalize_per_feature(log_mel(mel_spectrogram(p)))
    rec = RecordingDraws(ReferenceDraws(5))
    aug = spec_augment(f, rec)
    again = spec_augment(f, ScriptedDraws(rec.log))
    check(np.array_equal(aug, again) and len(rec.log) == 2 * 2 + 2 * 10,
          f"SpecAugment: {len(rec.log)} draws, scripted replay identical")
    spl = frame_splicing(aug)
    check(spl.shape == (240, math.ceil(f.shape[1] / 3)) and
          np.array_equal(spl[80:160, 0], aug[:, 1]),
          f"frame splicing {f.shape} -> {spl.shape}")

    # 6. verbatim reference code
    feats_ns = load_reference_features()
    if feats_ns is None:
        check.skip("features.py verbatim (reference source not found: set RNNT_REFERENCE_GIT "
                   "or RNNT_REFERENCE_DIR)")
    else:
        _check_features_verbatim(check, feats_ns, rng)
    for train in (True, False):
        draws = RecordingDraws(ReferenceDraws(11 if train else 12))
        got = run_reference_dali_pipeline(pcm, draws, train=train)
        if got is None:
            check.skip("pipeline.py verbatim (reference source not found)")
            break
        audio, length, calls = got
        script = ScriptedDraws(draws.log)
        if train:
            want = dali_train_stages(pcm, script)["normalized"]
        else:
            want = None
            xs = trim_silence(pcm16_to_float(pcm))
            want = dali_features(xs, script.normal_f32("dither", xs.shape[0]))
        check(script.exhausted() and audio.shape == want.shape and length == want.shape[1]
              and np.array_equal(audio, want),
              f"pipeline.py DaliPipeline({'train' if train else 'val'}).define_graph verbatim "
              f"with transcribed operators == transcription: {audio.shape}, "
              f"{len(calls)} operators built")

    if check.failed:
        print(f"FAILED: {len(check.failed)} check(s)")
        return 1
    if check.skipped:
        print("SKIP: the reference source was not found; transcription checks passed")
        return 77
    return 0


def _check_features_verbatim(check, ns, rng):
    """features.py run verbatim: SpecAugment and FrameSplicing (training path) bit for bit,
    FilterbankFeatures (inference path) against a transcription of it."""
    spec = ns["SpecAugment"](optim_level=0, freq_masks=FREQ_MASKS, min_freq=MIN_FREQ,
                             max_freq=MAX_FREQ, time_masks=TIME_MASKS, min_time=MIN_TIME,
                             max_time=MAX_TIME)
    splice = ns["FrameSplicing"](optim_level=0, frame_stacking=STACKING,
                                 frame_subsampling=SUBSAMPLING)
    trials = 0
    for seed in range(6):
        lengths = [int(v) for v in rng.integers(20, 700, size=3)]
        if seed == 0:
            lengths = [50, 150, 250]          # T*0.03 = 1.5, 4.5, 7.5: round half to even
        tb = max(lengths)
        batch = np.zeros((3, N_MELS, tb), dtype=np.float32)
        for i, n in enumerate(lengths):
            batch[i, :, :n] = rng.standard_normal((N_MELS, n)).astype(np.float32)
        torch.manual_seed(seed)
        xa, la = spec([torch.from_numpy(batch.copy()), torch.tensor(lengths, dtype=torch.int32)])
        xs, ls = splice([xa, la])
        draws = ReferenceDraws(seed)
        for i, n in enumerate(lengths):
            rec = RecordingDraws(draws)
            mine = spec_augment(batch[i, :, :n], rec, batch_frames=tb)
            ok = np.array_equal(xa[i].numpy()[:, :n], mine) and not xa[i].numpy()[:, n:].any()
            mine_s = frame_splicing(mine)
            ref_s = xs[i].numpy()[:, :int(ls[i])]
            ok = ok and int(ls[i]) == math.ceil(n / 3) and np.array_equal(ref_s, mine_s)
            replay = spec_augment(batch[i, :, :n], ScriptedDraws(rec.log), batch_frames=tb)
            ok = ok and np.array_equal(replay, mine)
            check(ok, f"features.py SpecAugment+FrameSplicing verbatim, seed {seed}, T={n} of "
                      f"{tb}: bit-identical, {len(rec.log)} draws replayed")
            trials += 1
    # inference-path FilterbankFeatures (not used by training): transcription of its arithmetic
    fbf = ns["FilterbankFeatures"](optim_level=0, sample_rate=SAMPLE_RATE, window_size=0.02,
                                   window_stride=0.01, window="hann", normalize="per_feature",
                                   n_fft=N_FFT, preemph=PREEMPH, n_filt=N_MELS, dither=0.0)
    x = pcm16_to_float(synthetic_utterance(rng, seconds=0.9))
    with torch.no_grad():
        ref, ref_len = fbf([torch.from_numpy(x[None, :].copy()),
                            torch.tensor([len(x)], dtype=torch.int32)])
    mine, mine_len = filterbank_features_inference(x)
    err = float(np.abs(ref[0].numpy() - mine).max())
    check(int(ref_len[0]) == mine_len and err < 2e-3,
          f"features.py FilterbankFeatures verbatim (inference path) vs transcription: "
          f"max |diff| {err:.1e} of normalised features, {mine_len} frames")
    dali_path = normalize_per_feature(log_mel(mel_spectrogram(power_spectrogram(preemphasis(x)))))
    diff = float(np.abs(ref[0].numpy()[:, :mine_len] - dali_path[:, :mine_len]).max())
    if check.verbose:
        print(f"info  FilterbankFeatures (inference) differs from the DALI training features "
              f"by up to {diff:.2f} (normalised units): not the training reference")


def filterbank_features_inference(x):
    """features.py FilterbankFeatures.calculate_features with dither 0 (inference.py's path; NOT
    the training pipeline): y[0] = x[0] kept, torch.hann_window(320, periodic=False),
    log(x + 1e-20), per-feature normalisation with torch's unbiased std + 1e-5 over the first
    ceil(n / 160) frames. Returns (features (80, frames), ceil(n / 160))."""
    x = np.asarray(x, np.float32)
    y = np.concatenate([x[:1], x[1:] - np.float32(PREEMPH) * x[:-1]]).astype(np.float32)
    w = np.hanning(WIN_LENGTH).astype(np.float32)          # symmetric = periodic=False
    n = len(y)
    starts = np.arange(num_frames(n)) * HOP_LENGTH - N_FFT // 2 + (N_FFT - WIN_LENGTH) // 2
    idx = reflect_index(starts[:, None] + np.arange(WIN_LENGTH)[None, :], n)
    spec = np.fft.rfft((y[idx] * w).astype(np.float64), n=N_FFT, axis=1)
    p = (spec.real ** 2 + spec.imag ** 2).T
    mel = librosa_slaney_mel_filterbank().astype(np.float64) @ p
    logm = np.log(mel + 1e-20)
    length = math.ceil(n / HOP_LENGTH)
    mean = logm[:, :length].mean(axis=1, keepdims=True)
    std = logm[:, :length].std(axis=1, ddof=1, keepdims=True)
    return ((logm - mean) / (std + 1e-5)).astype(np.float32), length


def main(argv):
    if len(argv) == 2 and argv[1] == "selfcheck":
        rc = selfcheck()
        if rc == 0:
            print("OK")
        return rc
    print(__doc__)
    print("usage: rnnt_reference.py selfcheck", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
