#!/usr/bin/python3
"""The speech recipe served to a Python trainer that trains with torch, as its users run it: a
LibriSpeech-style set spoken by espeak-ng (scripts/make-speech-set), a serving conveyor-node
with config/examples/rnnt-librispeech.toml, and a process that attaches with the `conveyor`
module and trains a small CTC model (a GRU over the 240 stacked features, the recipe's 28
characters plus a blank) for a few epochs. Checked: every utterance once per epoch, each batch's
transcripts those of its utterances' trans.txt lines and its tokens their characters, lengths
that fit the padded features (and leave CTC room), and the loss going down.

Environment: PYTHONPATH (the built module), CONVEYOR_NODE, CONVEYOR_SOURCE (the source tree).
Exits 77 (skipped) where numpy, torch or espeak-ng is missing. Run with Debian's python3.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    import torch
except ImportError:
    print("SKIP: numpy or torch is not installed (Debian: python3-numpy, python3-torch)")
    sys.exit(77)
if shutil.which("espeak-ng") is None:
    print("SKIP: espeak-ng is not installed (scripts/install-deps installs it)")
    sys.exit(77)

import conveyor
from ctest_env import env, node_process

UTTERANCES = 40
BATCH = 8
EPOCHS = 4
WAIT_S = 120
BLANK = 28
CHARACTERS = " abcdefghijklmnopqrstuvwxyz'"


def transcripts(directory):
    """utterance id -> its trans.txt text."""
    out = {}
    for path in glob.glob(os.path.join(directory, "**", "*.trans.txt"), recursive=True):
        with open(path) as f:
            for line in f:
                key, text = line.rstrip("\n").split(" ", 1)
                out[key] = text
    return out


class SmallCtc(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(240, 96)
        self.rnn = torch.nn.GRU(96, 96, batch_first=True)
        self.out = torch.nn.Linear(96, BLANK + 1)

    def forward(self, x):
        h, _ = self.rnn(torch.relu(self.inp(x)))
        return self.out(h).log_softmax(-1)


class SpeechTraining(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="conveyor-speech.")
        cls.set = os.path.join(cls.work, "librispeech")
        source = env("CONVEYOR_SOURCE")
        subprocess.run(["/usr/bin/python3", os.path.join(source, "scripts", "make-speech-set"),
                        str(UTTERANCES), cls.set], check=True, stdout=subprocess.DEVNULL,
                       timeout=WAIT_S)
        cls.recipe = os.path.join(source, "config", "examples", "rnnt-librispeech.toml")
        cls.vocabulary = os.path.join(source, "config", "examples", "rnnt-characters.txt")
        cls.text = transcripts(cls.set)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def check_batch(self, b):
        """The batch's fields against its utterances; (features, lengths, targets, target
        lengths) as torch tensors (copies: the batch is released after)."""
        features = b["features"]
        lengths = b.lengths("features")
        self.assertEqual(features.dtype, np.float32)
        self.assertEqual(features.shape[0], len(b))
        self.assertEqual(features.shape[2], 240)
        self.assertEqual(lengths.max(), features.shape[1], "padded to the batch's longest")
        tokens = b["tokens"]
        offsets = b.offsets("tokens")
        strings = b.strings("transcript")
        for i, key in enumerate(b.keys):
            utterance = os.path.splitext(os.path.basename(key))[0]
            text = self.text[utterance]
            self.assertEqual(strings[i].decode(), text, utterance)
            want = [CHARACTERS.index(c) for c in text.lower()]
            self.assertEqual(tokens[offsets[i]:offsets[i + 1]].tolist(), want, utterance)
            self.assertGreaterEqual(lengths[i], len(want), "room for CTC's alignment")
            self.assertFalse(features[i, lengths[i]:].any(), "padding is zeros")
        targets = torch.from_numpy(tokens.astype(np.int64))
        target_lengths = torch.from_numpy(np.diff(offsets))
        return (torch.from_numpy(features.copy()), torch.from_numpy(lengths.astype(np.int64)),
                targets, target_lengths)

    def test_a_ctc_model_trains_on_the_served_features(self):
        socket = os.path.join(self.work, "n.sock")
        torch.manual_seed(0)
        model = SmallCtc()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        ctc = torch.nn.CTCLoss(blank=BLANK, zero_infinity=True)
        losses = []
        with node_process(
                [env("CONVEYOR_NODE"), "--topology", self.recipe,
                 "--set", f"dataset.path={self.set}", "--set", f"serve.socket={socket}",
                 "--set", f"pipeline.batch_size={BATCH}", "--set", f"trainer.epochs={EPOCHS}",
                 "--set", "pipeline.preprocessors=2", "--set", "monitor.interval_ms=10000",
                 "--set", "gpus=1"],
                self.work, cwd=env("CONVEYOR_SOURCE")) as node:
            with conveyor.attach(socket, rank=0, job=0, timeout=60) as feed:
                self.assertEqual(feed.info()["dataset_size"], UTTERANCES)
                last = None
                for e in range(EPOCHS):
                    keys, epoch_loss = [], []
                    for b in feed.epoch(e):
                        x, x_len, y, y_len = self.check_batch(b)
                        keys.extend(b.keys)
                        if e + 1 == EPOCHS and b.last_in_epoch:
                            last = b  # held: the node cannot finish before report()
                        else:
                            b.release()
                        log_probs = model(x).transpose(0, 1)  # T, N, C
                        loss = ctc(log_probs, y, x_len, y_len)
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                        epoch_loss.append(loss.item())
                    self.assertEqual(len(keys), UTTERANCES, f"epoch {e}")
                    self.assertEqual(len(set(keys)), UTTERANCES, f"epoch {e}: every one once")
                    losses.append(sum(epoch_loss) / len(epoch_loss))
                report = feed.report()
                if last is not None:
                    last.release()
                self.assertEqual(
                    (report["delivered"], report["lost"], report["quarantined"],
                     report["filtered"]), (UTTERANCES * EPOCHS, 0, 0, 0))
            self.assertEqual(node.wait(timeout=WAIT_S), 0)
        self.assertNotIn("error", node.log.lower(), node.log)
        print("CTC loss per epoch:", " ".join(f"{v:.3f}" for v in losses))
        self.assertLess(losses[-1], 0.85 * losses[0], f"the loss goes down: {losses}")
        for before, after in zip(losses, losses[1:]):
            self.assertLess(after, 1.02 * before, f"epoch after epoch: {losses}")


if __name__ == "__main__":
    unittest.main()
