#!/usr/bin/python3
"""The MLPerf RNN-T (LibriSpeech) training input steps as a competent PyTorch user writes them:
PyTorch's DataLoader over a torch/torchaudio Dataset, the baseline of the speech benchmark
(issue 32) that Conveyor's C++ recipe is compared against.

usage: speech_dataloader.py DIR [--epochs E] [--step-ms S] [--gpus G] [--workers W]
                            [--batch-size B] [--seed N] [--cost-draws K] [--bucketing N]
                            [--persistent-workers] [--skip-rate] [--check K]

DIR is a LibriSpeech-layout directory: DIR/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac
(16 kHz mono 16-bit FLAC) and per chapter <speaker>-<chapter>.trans.txt with lines
"<utt id> <TRANSCRIPT>". At start every FLAC's duration is read with soundfile.info and the
utterances longer than 16.7 s (before perturbation) are dropped, as the reference's manifest
filter does (original_duration <= 16.7 is kept); the count of both goes into the JSON.

Per utterance (SpeechDataset.__getitem__), the steps of docs/rnnt-reference.md (the DALI
pipeline of the reference, then its GPU augmentations), in torch/torchaudio:
  1. decode with soundfile as int16, float32 = x / 32768, downmixed to mono (mean of channels);
  2. speed perturbation: u ~ U[0.85, 1.15], resampled from 16000 Hz to u * 16000 Hz and then
     treated as 16 kHz (u > 1 lengthens). torchaudio.transforms.Resample(16000, f) builds a
     (f/g) x (16000/g) polyphase kernel (g = gcd), so an arbitrary rate (g = 1) would cost
     thousands of phases per utterance: the new rate is ROUNDED TO A MULTIPLE OF 100 Hz
     (f = 100 * round(160 u), 49 rates from 13600 to 18400 Hz, at most 50 Hz = 0.003 in u from
     the drawn rate; f = 16000, i.e. u in [0.996875, 1.003125), is an identity). With 100 Hz
     steps the kernel is at most 183 phases x 176 taps (about 1 ms to build); at 10 Hz steps it
     would be ~1500 x 1600 (100 ms to build, 3-4x slower to apply), at 1 Hz ~15000 x 16000
     (about 1 GiB). Each worker keeps a cache of Resample objects, built the first time that
     worker meets the rate. torchaudio's resampler is a
     Hann-windowed sinc (lowpass_filter_width 6, rolloff 0.99) that low-passes when it
     downsamples; DALI's (the reference's) does not, so the perturbed audio differs from the
     reference's by a few % relative RMS for u < 1 (doc section 6): same step, not the same bits;
  3. silence trimming as DALI's NonsilentRegion(cutoff_db=-60, window 2048) does (doc section 7):
     the moving mean square over W = min(2048, n) samples from a float64 cumulative sum,
     threshold = max * 1e-6, kept [first loud window start, last loud window start + W).
     DALI sums in float32, a running sum recomputed every 8192 samples: right after loud speech
     its rounding error is of the order of the -60 dB threshold itself, so on espeak-ng speech
     DALI's region (rnnt_reference.nonsilent_region) ends elsewhere than this exact one in
     about 40% of the utterances of scripts/make-speech-set's sets (mostly by 1-30 samples, at
     worst about 4000, usually later; 0.05% of the audio less here in all); the starts agree;
  4. dither: + 1e-5 * randn;
  5. preemphasis as DALI's: y[0] = x[0] - 0.97 x[0], y[t] = x[t] - 0.97 x[t-1];
  6. torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_fft=512, win_length=320,
     hop_length=160, f_min=0, f_max=8000, n_mels=80, window_fn=DALI's Hann
     0.5 (1 - cos(2 pi (t + 0.5) / 320)), power=2, center=True, pad_mode='reflect',
     norm='slaney', mel_scale='slaney'): (80, T), T = n // 160 + 1;
  7. log(clamp(x, min=1e-20));
  8. per-band normalisation over time: mean, variance with ddof 0, (x - mean) / sqrt(var), a band
     of zero variance -> 0;
  9. SpecAugment per utterance: 2 frequency masks of width in [0, 20] (start in [0, 80 - w]),
     10 time masks of width in [0, round(0.03 T)] (Python's round) starting uniformly in
     [0, T - w] (within the utterance: the reference draws the start over the batch's padded
     length, which a per-sample Dataset cannot know); masked cells = 0;
 10. frame splicing: 3 frames stacked, subsampled by 3 -> float32 (ceil(T/3), 240), time-major,
     row j = (frame 3j: 80 mels, 3j+1: 80, 3j+2: 80), frames past the end 0;
 11. the transcript, lower-cased and stripped as the reference's manifest stores it, kept as str.
All the random draws (u, dither, SpecAugment) come from torch's default generator, which
PyTorch seeds in each worker (base seed from the loader's seeded generator + worker id).
Collate: features zero-padded to the batch's longest -> float32 [B, Tmax, 240], int32 lengths
[B] (the spliced frame counts), the transcripts as a list of str.

Threads: each DataLoader worker runs with torch.get_num_threads() == 1 (PyTorch sets it in every
worker), so a worker is one core's worth of work; the main process keeps torch's default
(it only takes batches). The per-sample cost (--cost-draws) is measured in the main process
with torch.set_num_threads(1), like a worker.

The DataLoader: batch_size B per GPU, shuffle=True with a seeded torch.Generator (one GPU) or a
DistributedSampler(seed, drop_last=False) per rank (several; set_epoch each epoch),
drop_last=False, num_workers W, persistent_workers off (--persistent-workers keeps them: the
per-worker Resample cache then survives the epoch), pin_memory only where CUDA is available.
--bucketing N (N >= 1) replaces the sampler by a batch sampler that does what the reference's
common/data/dali/sampler.py BucketingSampler does (N = 1 is the reference's train.sh setting):
with np.random.default_rng(seed), the same on every rank, for all E epochs at once: the
utterances sorted by duration, split into N equal buckets (np.array_split), each bucket permuted,
the buckets concatenated; per epoch, random utterances dropped to leave a multiple of the global
batch B x G (so here drop_last does not apply: up to B x G - 1 utterances an epoch are left out,
"sampler_dropped_per_epoch" in the JSON), that split into global batches in order (a batch can
straddle two buckets), and the global batches shuffled; rank r takes elements r, r + G, ... of
each global batch.

Measures, printed as one JSON line (as bench/unet3d_dataloader.py):
  - samples_per_s: at trainer step 0 (the trainer takes each batch and asks for the next), over
    E epochs, from the end of the first batch (worker start-up left out; later epochs' worker
    restarts are in); samples_per_s_incl_start counts from the start.
  - padding: over every batch of the step-0 run, sum(B x Tmax) / sum(lengths) in spliced frames
    (1.0 = no padding); padding_batch_mean: the mean of the per-batch ratios.
  - with --step-ms S > 0, a second run of E epochs where the trainer sleeps S ms per batch:
    stall_fraction = time waiting in next(batch) / (that + time sleeping), every batch included;
    stall_fraction_after_first leaves each rank's first batch out.
  - with --cost-draws K > 0, cost_ms: the per-sample cost of __getitem__ in this one process, over
    every kept utterance K times in a seeded shuffled order: mean, p50, p90, p99, max in ms
    (nearest-rank); stage_ms: the mean per stage (decode, resample incl. building a Resample,
    trim, features = dither to normalisation, augment = SpecAugment + splicing); resample_ms:
    the resampling time alone over the draws that resampled (f != 16000), and resample_build_ms
    what building the Resample objects cost (49 rates at most per process).
  - utterances (kept), dropped_over_16_7_s.
With --gpus G > 1, G rank processes (fork) run at once, each with its own DataLoader of W workers
over its share, each trainer on its own; samples_per_s is the ranks' samples together over the
span from the first rank's first batch to the last rank's end.

--check K: no benchmark; for K utterances with u = 1 (no resampling), dither off and SpecAugment
off, the (80, T) normalised features are compared with tests/python/rnnt_reference.py's
dali_features(trim_silence(x), None, filterbank="librosa") (trim boundaries and max |diff|), and
the SpecAugment + splicing of this file, given the values it drew, with the reference's
spec_augment + frame_splicing fed the same values (bit-exact expected); one JSON line.
"""
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import soundfile
import torch
import torchaudio
from torch.utils.data import DataLoader, Dataset, Sampler
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataloader_timing import (item_seconds, loader_arguments, loader_figures,  # noqa: E402
                               nearest_rank, run_ranks, time_rank)

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_DIR = os.path.join(HERE, "..", "tests", "python")

SAMPLE_RATE = 16000
MAX_DURATION = 16.7          # input_train.audio_dataset.max_duration (kept iff <= 16.7 s)
SPEED_MIN, SPEED_MAX = 0.85, 1.15
RATE_STEP = 100              # the perturbed rate is rounded to a multiple of this (Hz)
TRIM_WINDOW = 2048           # NonsilentRegion window_length
TRIM_RATIO = 1e-6            # cutoff_db = -60 on a power: 10^(-60/10)
DITHER = 1e-5
PREEMPH = 0.97
N_FFT, WIN_LENGTH, HOP_LENGTH, N_MELS = 512, 320, 160, 80
LOG_FLOOR = 1e-20
FREQ_MASKS, MAX_FREQ = 2, 20
TIME_MASKS, MAX_TIME = 10, 0.03
STACKING = 3                 # frame stacking = subsampling = 3
STAGES = ("decode", "resample", "trim", "features", "augment")


def dali_hann_window(n, **_):
    """DALI's Hann window: 0.5 (1 - cos(2 pi (t + 0.5) / n)), computed in double, float32."""
    t = torch.arange(n, dtype=torch.float64)
    return (0.5 * (1.0 - torch.cos(2.0 * math.pi * (t + 0.5) / n))).to(torch.float32)


def list_utterances(root):
    """(flac path, transcript, duration s) of every utterance of a LibriSpeech-layout tree,
    sorted by path; the ones over MAX_DURATION separately (the manifest filter)."""
    kept, dropped = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".trans.txt"):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                for line in f:
                    uid, _, text = line.strip().partition(" ")
                    if not uid:
                        continue
                    path = os.path.join(dirpath, uid + ".flac")
                    if not os.path.isfile(path):
                        sys.exit(f"{path}: listed in {name}, not found")
                    duration = soundfile.info(path).duration
                    item = (path, text.lower().strip(), duration)
                    (kept if duration <= MAX_DURATION else dropped).append(item)
    if not kept and not dropped:
        sys.exit(f"{root}: no <speaker>-<chapter>.trans.txt found: not a LibriSpeech-layout set")
    kept.sort()
    return kept, dropped


class SpeechDataset(Dataset):
    """One MLPerf RNN-T training utterance per index (the module docstring lists the steps).
    augment=False (checks only): u = 1, no dither, no SpecAugment."""

    def __init__(self, utterances, augment=True):
        self.utterances = utterances
        self.augment = augment
        self._pid = None
        self.timings = None         # a dict of lists of seconds per stage, when measuring
        self.last_draws = None      # the SpecAugment values of the last item (for --check)

    def __len__(self):
        return len(self.utterances)

    def _transforms(self):
        """The torchaudio transforms, built once per process (each worker builds its own)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self.mel = torchaudio.transforms.MelSpectrogram(
                sample_rate=SAMPLE_RATE, n_fft=N_FFT, win_length=WIN_LENGTH,
                hop_length=HOP_LENGTH, f_min=0.0, f_max=SAMPLE_RATE / 2.0, n_mels=N_MELS,
                window_fn=dali_hann_window, power=2.0, center=True, pad_mode="reflect",
                norm="slaney", mel_scale="slaney")
            self.resamplers = {}
        return self.mel

    def resampler(self, rate):
        r = self.resamplers.get(rate)
        if r is None:
            t0 = time.perf_counter()
            r = self.resamplers[rate] = torchaudio.transforms.Resample(SAMPLE_RATE, rate)
            if self.timings is not None:
                self.timings["resample_build"].append(time.perf_counter() - t0)
        return r

    def __getitem__(self, index):
        path, transcript, _ = self.utterances[index]
        mel = self._transforms()
        timings = self.timings
        t0 = time.perf_counter()
        with torch.no_grad():
            # 1. decode
            pcm, _ = soundfile.read(path, dtype="int16", always_2d=True)
            x = torch.from_numpy(pcm).to(torch.float32).mul_(1.0 / 32768.0)
            x = x[:, 0] if x.shape[1] == 1 else x.mean(dim=1)
            t1 = time.perf_counter()
            # 2. speed perturbation (rate rounded to 100 Hz; 16000 -> identity)
            if self.augment:
                u = SPEED_MIN + (SPEED_MAX - SPEED_MIN) * torch.rand(()).item()
                rate = RATE_STEP * round(u * SAMPLE_RATE / RATE_STEP)
                if rate != SAMPLE_RATE:
                    x = self.resampler(rate)(x)
            t2 = time.perf_counter()
            # 3. trim
            x = trim_silence(x)
            t3 = time.perf_counter()
            # 4-8. dither, preemphasis, mel, log, normalisation
            feats = features(x, mel, dither=self.augment)
            t4 = time.perf_counter()
            # 9-10. SpecAugment, splicing
            if self.augment:
                feats, self.last_draws = spec_augment(feats)
            out = frame_splicing(feats)
            t5 = time.perf_counter()
        if timings is not None:
            for name, a, b in zip(STAGES, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)):
                timings[name].append(b - a)
            if self.augment and rate != SAMPLE_RATE:
                timings["resample_only"].append(t2 - t1)
        return out, transcript


def nonsilent_region(x):
    """DALI's NonsilentRegion(cutoff_db=-60, window_length=2048) on float32 x: (begin, end) of
    the kept region [first loud window start, last loud window start + W). The moving mean
    square comes from a float64 cumulative sum (DALI's is a float32 running sum reset every
    8192 samples: boundaries can differ only where a window sits within rounding of the
    threshold)."""
    n = x.shape[0]
    w = min(TRIM_WINDOW, n)
    if w == 0:
        return 0, 0
    csum = torch.zeros(n + 1, dtype=torch.float64)
    torch.cumsum(x.to(torch.float64).square(), dim=0, out=csum[1:])
    mms = (csum[w:] - csum[:-w]) / w
    loud = torch.nonzero(mms >= mms.max() * TRIM_RATIO).squeeze(1)
    if loud.numel() == 0:
        return 0, 0
    return int(loud[0]), int(loud[-1]) + w


def trim_silence(x):
    begin, end = nonsilent_region(x)
    return x[begin:end]


def features(x, mel, dither=True):
    """Steps 4-8 on trimmed float32 samples: normalised log mel, float32 (80, T)."""
    if dither:
        x = x + DITHER * torch.randn_like(x)
    x = torch.cat((x[:1] - PREEMPH * x[:1], x[1:] - PREEMPH * x[:-1]))
    logm = torch.log(torch.clamp(mel(x), min=LOG_FLOOR))
    mean = logm.mean(dim=1, keepdim=True)
    centred = logm - mean
    var = centred.square().mean(dim=1, keepdim=True)
    inv = torch.where(var > 0, torch.rsqrt(var), torch.zeros_like(var))
    return centred * inv


def spec_augment(feats):
    """Step 9 on (80, T): 2 frequency masks (w in [0, 20], f0 in [0, 80 - w]), 10 time masks
    (w in [0, round(0.03 T)], t0 in [0, max(0, T - w)]), drawn from torch's default generator,
    the masked cells set to 0 (in place). Returns (feats, the drawn (widths, starts))."""
    n_mels, n = feats.shape
    max_t = int(round(n * MAX_TIME))
    fw = torch.randint(0, MAX_FREQ + 1, (FREQ_MASKS,))
    f0 = (torch.rand(FREQ_MASKS, dtype=torch.float64) * (n_mels - fw + 1)).long()
    tw = torch.randint(0, max_t + 1, (TIME_MASKS,))
    t0 = (torch.rand(TIME_MASKS, dtype=torch.float64) * (n - tw + 1).clamp(min=1)).long()
    rows = torch.arange(n_mels).unsqueeze(1)
    cols = torch.arange(n).unsqueeze(1)
    fmask = ((rows >= f0) & (rows < f0 + fw)).any(dim=1)
    tmask = ((cols >= t0) & (cols < t0 + tw)).any(dim=1)
    feats.masked_fill_(fmask.unsqueeze(1) | tmask.unsqueeze(0), 0.0)
    return feats, (fw, f0, tw, t0)


def frame_splicing(feats):
    """Step 10: (80, T) -> (ceil(T/3), 240), out[j, k*80 + m] = feats[m, 3j + k], 0 past T."""
    n_mels, n = feats.shape
    frames = -(-n // STACKING)
    padded = torch.nn.functional.pad(feats, (0, frames * STACKING - n))
    return padded.view(n_mels, frames, STACKING).permute(1, 2, 0).reshape(
        frames, STACKING * n_mels)


def collate(batch):
    """[B, Tmax, 240] float32 zero-padded, int32 lengths [B], transcripts list."""
    feats = [b[0] for b in batch]
    lengths = torch.tensor([f.shape[0] for f in feats], dtype=torch.int32)
    return (torch.nn.utils.rnn.pad_sequence(feats, batch_first=True), lengths,
            [b[1] for b in batch])


class BucketingBatchSampler(Sampler):
    """What MLPerf's common/data/dali/sampler.py BucketingSampler.process_output_files does, as a
    batch sampler of one rank (the module docstring): all epochs drawn at construction with
    np.random.default_rng(seed) in the reference's order of calls; each iteration (one epoch)
    yields that rank's batches of the next epoch."""

    def __init__(self, durations, num_buckets, batch_size, world_size, rank, num_epochs, seed):
        rng = np.random.default_rng(seed)
        len_ids = np.argsort(durations)
        buckets = np.array_split(len_ids, num_buckets)
        gbs = batch_size * world_size
        shuffled = np.array([perm for _ in range(num_epochs) for bucket in buckets
                             for perm in rng.permutation(bucket)])
        epochs = np.reshape(shuffled, [num_epochs, -1])
        to_drop = epochs.shape[1] - (epochs.shape[1] // gbs * gbs)
        for epoch in epochs:
            dropped = rng.choice(epochs.shape[1], to_drop, replace=False)
            epoch[dropped] = -1
        epochs = epochs[epochs != -1].reshape(num_epochs, -1)
        batches = np.reshape(epochs, [num_epochs, -1, gbs])
        for epoch in batches:
            rng.shuffle(epoch, axis=0)
        # [epochs, iterations, batch_size, world] -> this rank's [epochs, iterations, batch_size]
        self.batches = np.reshape(batches, [num_epochs, -1, batch_size, world_size])[..., rank]
        self.dropped_per_epoch = int(to_drop)
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return self.batches.shape[1]

    def __iter__(self):
        for batch in self.batches[self.epoch]:
            yield batch.tolist()


def make_loader(dataset, args, rank):
    generator = torch.Generator()
    generator.manual_seed(args.seed + rank)
    common = dict(num_workers=args.workers, collate_fn=collate,
                  pin_memory=torch.cuda.is_available(),
                  persistent_workers=args.persistent_workers and args.workers > 0,
                  generator=generator)
    if args.bucketing > 0:
        sampler = BucketingBatchSampler([u[2] for u in dataset.utterances], args.bucketing,
                                        args.batch_size, args.gpus, rank, args.epochs, args.seed)
        return DataLoader(dataset, batch_sampler=sampler, **common)
    sampler = None
    if args.gpus > 1:
        sampler = DistributedSampler(dataset, num_replicas=args.gpus, rank=rank, seed=args.seed,
                                     drop_last=False)
    return DataLoader(dataset, batch_size=args.batch_size, shuffle=sampler is None,
                      sampler=sampler, drop_last=False, **common)


class Padding:
    """Padded and real frames of the batches a rank took (on_batch of time_rank)."""

    def __init__(self):
        self.padded = self.real = 0
        self.ratios = []

    def __call__(self, batch):
        feats, lengths, _ = batch
        n, real = feats.shape[0], int(lengths.sum())
        self.padded += n * feats.shape[1]
        self.real += real
        self.ratios.append(n * feats.shape[1] / real)
        return n


def train_rank(utterances, args, rank, step_s, start_barrier=None):
    """One rank's trainer over args.epochs epochs (dataloader_timing.time_rank), with the
    padding of its batches."""
    torch.manual_seed(args.seed + rank)
    loader = make_loader(SpeechDataset(utterances), args, rank)
    if hasattr(loader.batch_sampler, "set_epoch"):
        set_epoch = loader.batch_sampler.set_epoch
    elif isinstance(loader.sampler, DistributedSampler):
        set_epoch = loader.sampler.set_epoch
    else:
        set_epoch = None
    padding = Padding()
    out = time_rank(loader, args.epochs, step_s, rank, start_barrier, set_epoch, padding)
    out.update(padded_frames=padding.padded, real_frames=padding.real,
               batch_ratios=padding.ratios,
               sampler_dropped=getattr(loader.batch_sampler, "dropped_per_epoch", None))
    return out


def run_loader(utterances, args, step_ms):
    """The DataLoader run(s) at one step time; one dict of figures."""
    step_s = step_ms / 1000.0
    ranks = run_ranks(
        lambda rank, barrier: train_rank(utterances, args, rank, step_s, barrier), args.gpus)
    out = loader_figures(ranks, step_ms)
    ratios = [x for r in ranks for x in r["batch_ratios"]]
    out["padding"] = round(sum(r["padded_frames"] for r in ranks)
                           / sum(r["real_frames"] for r in ranks), 4)
    out["padding_batch_mean"] = round(sum(ratios) / len(ratios), 4)
    if ranks[0]["sampler_dropped"] is not None:
        out["sampler_dropped_per_epoch"] = ranks[0]["sampler_dropped"]
    return out


def summary(values_s):
    ms = sorted(v * 1000.0 for v in values_s)
    if not ms:
        return None
    return {"samples": len(ms), "mean": round(sum(ms) / len(ms), 3),
            "p50": round(nearest_rank(ms, 50), 3), "p90": round(nearest_rank(ms, 90), 3),
            "p99": round(nearest_rank(ms, 99), 3), "max": round(ms[-1], 3)}


def sample_costs(utterances, args):
    """Per-sample cost of SpeechDataset.__getitem__ in this process at one torch thread (as a
    worker), each utterance args.cost_draws times in a seeded shuffled order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    dataset = SpeechDataset(utterances)
    dataset.timings = {name: [] for name in STAGES + ("resample_only", "resample_build")}
    costs = item_seconds(dataset, args.cost_draws, args.seed)
    torch.set_num_threads(threads)
    t = dataset.timings
    out = {"cost_ms": summary(costs),
           "stage_ms": {name: round(1000.0 * sum(t[name]) / len(t[name]), 3) for name in STAGES},
           "resample_ms": summary(t["resample_only"]),
           "resample_build_ms": {"builds": len(t["resample_build"]),
                                 "total": round(1000.0 * sum(t["resample_build"]), 2),
                                 "mean": round(1000.0 * sum(t["resample_build"])
                                               / max(1, len(t["resample_build"])), 3)}}
    return out


def check(utterances, count, seed):
    """--check: this file's steps against tests/python/rnnt_reference.py (module docstring)."""
    sys.path.insert(0, REFERENCE_DIR)
    import rnnt_reference as ref
    torch.manual_seed(seed)
    plain = SpeechDataset(utterances, augment=False)
    mel = plain._transforms()
    rows = []
    step = max(1, len(utterances) // count)
    for index in list(range(0, len(utterances), step))[:count]:
        path = utterances[index][0]
        pcm, _ = soundfile.read(path, dtype="int16")
        x = ref.pcm16_to_float(pcm)
        want_region = ref.nonsilent_region(x)
        want = ref.dali_features(ref.trim_silence(x), None, filterbank="librosa")
        xt = torch.from_numpy(x)
        begin, end = nonsilent_region(xt)
        with torch.no_grad():
            got = features(trim_silence(xt), mel, dither=False)
            spliced = plain[index][0].numpy()
        row = {"utterance": os.path.basename(path), "samples": int(x.shape[0]),
               "trim": [begin, end], "trim_reference": [want_region[0],
                                                        want_region[0] + want_region[1]],
               "frames": int(got.shape[1]), "frames_reference": int(want.shape[1])}
        if got.shape == want.shape:
            diff = np.abs(got.numpy() - want)
            row["max_abs_diff"] = float(diff.max())
        row["splice_equal"] = bool(np.array_equal(spliced, ref.frame_splicing(got.numpy()).T))
        # the feature steps alone: this file's steps 4-8 on the reference's trimmed samples
        xr = ref.trim_silence(x)
        with torch.no_grad():
            same = features(torch.from_numpy(xr), mel, dither=False).numpy()
        diff = np.abs(same - want)
        power = ref.mel_spectrogram(ref.power_spectrogram(ref.preemphasis(xr)),
                                    filterbank="librosa")
        loud = power >= power.max() * 1e-8          # cells above -80 dB of the utterance's max
        row["same_trim_max_abs_diff"] = float(diff.max())
        row["same_trim_p99_abs_diff"] = float(np.quantile(diff, 0.99))
        row["same_trim_max_abs_diff_above_80dB"] = float(diff[loud].max())
        # SpecAugment + splicing given this file's draws vs the reference's, bit for bit
        with torch.no_grad():
            aug, (fw, f0, tw, t0) = spec_augment(got.clone())
            mine = frame_splicing(aug).numpy()
        script = []
        for k in range(FREQ_MASKS):
            script += [(f"specaug.freq{k}.w", int(fw[k])), (f"specaug.freq{k}.f0", int(f0[k]))]
        for k in range(TIME_MASKS):
            script += [(f"specaug.time{k}.w", int(tw[k])), (f"specaug.time{k}.t0", int(t0[k]))]
        theirs = ref.frame_splicing(ref.spec_augment(got.numpy(), ref.ScriptedDraws(script))).T
        row["specaug_splice_bit_exact"] = bool(np.array_equal(mine, theirs))
        rows.append(row)
    diffs = [r["max_abs_diff"] for r in rows if "max_abs_diff" in r]
    return {"check": rows, "max_abs_diff": max(diffs) if diffs else None,
            "same_trim_max_abs_diff": max(r["same_trim_max_abs_diff"] for r in rows),
            "same_trim_max_abs_diff_above_80dB": max(r["same_trim_max_abs_diff_above_80dB"]
                                                     for r in rows),
            "trim_equal": all(r["trim"] == r["trim_reference"] for r in rows),
            "splice_equal": all(r["splice_equal"] for r in rows),
            "specaug_bit_exact": all(r["specaug_splice_bit_exact"] for r in rows)}


def main():
    parser = loader_arguments(__doc__.split("\n\n")[0], "utterance", 32,
                              "LibriSpeech-layout directory")
    parser.add_argument("--bucketing", type=int, default=0,
                        help="MLPerf's BucketingSampler with this many buckets (0: off, a plain "
                             "shuffle; 1: the reference's setting)")
    parser.add_argument("--check", type=int, default=0, metavar="K",
                        help="only compare K utterances' features with rnnt_reference.py")
    args = parser.parse_args()
    if (args.gpus < 1 or args.epochs < 1 or args.batch_size < 1 or args.workers < 0
            or args.bucketing < 0):
        parser.error("--gpus, --epochs and --batch-size must be >= 1, --workers and "
                     "--bucketing >= 0")
    warnings.filterwarnings("ignore", message=".*return_complex.*")
    utterances, dropped = list_utterances(args.dir)
    if not utterances:
        sys.exit(f"{args.dir}: every utterance is over {MAX_DURATION} s")
    if args.check > 0:
        print(json.dumps(check(utterances, args.check, args.seed)), flush=True)
        return 0
    if args.bucketing > 0 and len(utterances) < args.batch_size * args.gpus:
        sys.exit("--bucketing: fewer utterances than one global batch")
    out = {"loader": "torch.utils.data.DataLoader", "torch": torch.__version__,
           "torchaudio": torchaudio.__version__, "utterances": len(utterances),
           "dropped_over_16_7_s": len(dropped),
           "audio_s": round(sum(u[2] for u in utterances), 1), "gpus": args.gpus,
           "workers_per_gpu": args.workers, "batch_size": args.batch_size,
           "epochs": args.epochs, "seed": args.seed, "bucketing": args.bucketing,
           "persistent_workers": bool(args.persistent_workers),
           "pin_memory": torch.cuda.is_available()}
    if not args.skip_rate:
        out["step0"] = run_loader(utterances, args, 0.0)
        for key in ("samples_per_s", "samples_per_s_incl_start", "padding",
                    "padding_batch_mean"):
            out[key] = out["step0"][key]
    if args.step_ms > 0:
        out["stepped"] = run_loader(utterances, args, args.step_ms)
        out["stall_fraction"] = out["stepped"]["stall_fraction"]
    if args.cost_draws > 0:
        out.update(sample_costs(utterances, args))
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
