#!/usr/bin/python3
"""A topology's Python steps (`[[transform]] op = "python"`) in a real conveyor-node serving a
real client: the same samples as the recipe without them, changed exactly as the function
changes them; draws that depend on the sample, never on the worker; bad functions stopping
start-up with exit code 2 naming the step; bad answers, exceptions, dead and hung workers
retried, then quarantined, naming the step, while every other sample arrives exactly once.

Environment: PYTHONPATH (the built module), CONVEYOR_NODE, CONVEYOR_PACK. Exits 77 (skipped)
where numpy is missing. Run with Debian's python3.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (Debian: python3-numpy)")
    sys.exit(77)

import conveyor
from ctest_env import env, node_process

SAMPLES = 24
BATCH = 8
WAIT_S = 120

# The steps the topologies name, importable from the node's working directory.
STEPS_MODULE = '''
import hashlib
import os
import time
import numpy as np

def identity(fields, rng):
    return {"image": fields["image"]}

def invert(fields, rng):
    fields["image"][...] = 255 - fields["image"]  # its input is its own to write
    return {"image": fields["image"]}

def summary(fields, rng):
    return {"mean": np.float32(fields["image"].mean()),
            "draw": np.int64(rng.integers(0, 1 << 62))}

def draw(fields, rng):
    return {"draw": np.int64(rng.integers(0, 1 << 62))}

def float_image_for_class_1(fields, rng):
    image = fields["image"]
    return {"image": image.astype(np.float64) if fields["label"] == 1 else image}

def raise_for_class_2(fields, rng):
    if fields["label"] == 2:
        raise ValueError("class 2 is refused")
    return {"image": fields["image"]}

def exit_once_per_class_0_sample(fields, rng):
    # A worker that dies: its first try of each class-0 sample ends its process.
    if fields["label"] == 0:
        marker = os.path.join("exited", hashlib.sha1(fields["image"].tobytes()).hexdigest())
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(3)
    return {"image": fields["image"]}

def hang_for_class_1(fields, rng):
    if fields["label"] == 1:
        time.sleep(3600)
    return {"image": fields["image"]}

not_callable = 42
'''


def topology(work, steps, preprocessors=2, python=""):
    """A serving topology of the image recipe (16x16 crops, uint8) with `steps` after the crop."""
    return textwrap.dedent(f"""\
        gpus = 1
        [dataset]
        path = "{work}/../shards"
        format = "shards"
        [pipeline]
        batch_size = {BATCH}
        preprocessors = {preprocessors}
        [trainer]
        epochs = 1
        [monitor]
        interval_ms = 100000
        [serve]
        socket = "{work}/n.sock"
        [supervision]
        backoff_min_ms = 1
        backoff_max_ms = 10
        {python}
        [[transform]]
        op = "decode"
        [[transform]]
        op = "random_resized_crop"
        size = 16
        """) + steps + textwrap.dedent("""
        [[transform]]
        op = "to_uint8"
        """)


def python_step(function, extra=""):
    return f'[[transform]]\nop = "python"\nfunction = "{function}"\n{extra}\n'


class PythonStepsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="conveyor-steps.")
        cls.root = cls.tmp.name
        subprocess.run([env("CONVEYOR_PACK"), "--synthetic", str(SAMPLES), "--classes", "3",
                        "--images", os.path.join(cls.root, "images"),
                        "--out", os.path.join(cls.root, "shards")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=WAIT_S)
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def work(self):
        type(self).runs += 1
        work = os.path.join(self.root, f"run{self.runs}")
        os.makedirs(os.path.join(work, "exited"))
        with open(os.path.join(work, "steps_mod.py"), "w") as f:
            f.write(STEPS_MODULE)
        return work

    def serve(self, steps, **kw):
        """Runs the node on `steps` and reads its one epoch: ({sample id: {field: array}},
        its report, its log)."""
        work = self.work()
        path = os.path.join(work, "node.toml")
        with open(path, "w") as f:
            f.write(topology(work, steps, **kw))
        samples = {}
        command = [env("CONVEYOR_NODE"), "--topology", path]
        with node_process(command, work, cwd=work) as node:
            with conveyor.attach(os.path.join(work, "n.sock"), timeout=60) as feed:
                for b in feed.epoch(0):
                    for i, sample in enumerate(b.sample_ids):
                        self.assertNotIn(int(sample), samples, "a sample came twice")
                        samples[int(sample)] = {name: np.array(b[name][i])
                                                for name in ("image", "mean", "draw") if name in b}
                    b.release()
            node.wait(timeout=WAIT_S)
        with open(os.path.join(work, "node.out")) as out:
            report = json.loads(out.read().splitlines()[-1])
        return samples, report, node.log

    def refused_at_start(self, steps):
        """Runs the node on `steps`, which must stop it at start: its log."""
        work = self.work()
        path = os.path.join(work, "node.toml")
        with open(path, "w") as f:
            f.write(topology(work, steps))
        with node_process([env("CONVEYOR_NODE"), "--topology", path], work, cwd=work) as node:
            rc = node.wait(timeout=WAIT_S)
        self.assertEqual(rc, 2, node.log)
        return node.log

    def test_steps_change_samples_exactly_as_their_functions_do(self):
        plain, report, _ = self.serve("")
        self.assertEqual(sorted(plain), list(range(SAMPLES)))
        same, _, _ = self.serve(python_step("steps_mod:identity"))
        changed, report, _ = self.serve(
            python_step("steps_mod:invert") +
            python_step("steps_mod:summary", 'makes = ["mean", "draw"]\n'
                        'dtypes = ["float32", "int64"]\nranks = [0, 0]'))
        self.assertEqual((report["delivered"], report["quarantined"]), (SAMPLES, 0))
        for i in range(SAMPLES):
            np.testing.assert_array_equal(same[i]["image"], plain[i]["image"])
            np.testing.assert_array_equal(changed[i]["image"], 255 - plain[i]["image"])
            self.assertEqual(changed[i]["mean"].dtype, np.float32)
            self.assertEqual(changed[i]["mean"].shape, ())
            self.assertAlmostEqual(float(changed[i]["mean"]),
                                   float((255 - plain[i]["image"]).mean()), places=3)

    def test_a_pipeline_in_this_process_runs_them_as_the_node_does(self):
        steps = python_step("steps_mod:invert") + python_step(
            "steps_mod:draw", 'makes = ["draw"]\ndtypes = ["int64"]\nranks = [0]')
        served, _, _ = self.serve(steps)
        work = self.work()
        path = os.path.join(work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(topology(work, steps))
        here = os.getcwd()
        os.chdir(work)  # the workers import steps_mod from the working directory
        self.addCleanup(os.chdir, here)
        samples = {}
        with conveyor.Pipeline(path, set={"serve.socket": ""}) as p:
            for b in p.epoch(0, gpu=0):
                for i, sample in enumerate(b.sample_ids):
                    samples[int(sample)] = (np.array(b["image"][i]), int(b["draw"][i]))
                b.release()
            self.assertEqual(p.report()["quarantined"], 0)
        self.assertEqual(sorted(samples), list(range(SAMPLES)))
        for i in range(SAMPLES):
            np.testing.assert_array_equal(samples[i][0], served[i]["image"])
            self.assertEqual(samples[i][1], int(served[i]["draw"]))

    def test_draws_depend_on_the_sample_not_on_the_worker(self):
        step = python_step("steps_mod:draw", 'makes = ["draw"]\ndtypes = ["int64"]\nranks = [0]')
        one, _, _ = self.serve(step, preprocessors=1)
        two, _, _ = self.serve(step, preprocessors=2)
        draws = [int(one[i]["draw"]) for i in range(SAMPLES)]
        self.assertEqual(draws, [int(two[i]["draw"]) for i in range(SAMPLES)])
        self.assertEqual(len(set(draws)), SAMPLES)

    def test_bad_answers_exceptions_and_dead_workers_are_retried_then_quarantined(self):
        steps = (python_step("steps_mod:float_image_for_class_1", 'reads = ["image", "label"]') +
                 python_step("steps_mod:raise_for_class_2", 'reads = ["image", "label"]') +
                 python_step("steps_mod:exit_once_per_class_0_sample", 'reads = ["image", "label"]'))
        samples, report, log = self.serve(steps)
        per_class = SAMPLES // 3
        self.assertEqual(report["quarantined"], 2 * per_class, log)
        self.assertEqual(report["delivered"], per_class, log)
        self.assertEqual(len(samples), per_class)
        self.assertEqual(len(os.listdir(os.path.join(self.root, f"run{self.runs}", "exited"))),
                         per_class, "each class-0 sample's first try ended its worker")
        self.assertIn("transform[2] (python steps_mod:float_image_for_class_1): field 'image' is "
                      "float64 [16, 16, 3], declared uint8 [16, 16, 3]", log)
        self.assertIn("ValueError: transform[3] (python steps_mod:raise_for_class_2): class 2 is "
                      "refused", log)
        self.assertIn("exited with code 3", log)

    def test_a_hung_call_is_killed_then_quarantined(self):
        samples, report, log = self.serve(
            python_step("steps_mod:hang_for_class_1", 'reads = ["image", "label"]'),
            python="[python]\nhang_timeout_s = 0.5")
        self.assertEqual(report["quarantined"], SAMPLES // 3, log)
        self.assertEqual(len(samples), SAMPLES - SAMPLES // 3)
        self.assertIn("no answer within hang_timeout", log)

    def test_a_function_that_cannot_run_stops_start_up_naming_the_step(self):
        cases = [
            (python_step("no_such_module:f"),
             "transform[2] (python no_such_module:f): function 'no_such_module:f': module "
             "'no_such_module' does not import"),
            (python_step("steps_mod:no_such_function"),
             "'steps_mod' has no attribute 'no_such_function'"),
            (python_step("steps_mod:not_callable"),
             "function 'steps_mod:not_callable' is a int, not callable"),
            (python_step("steps_mod"), 'expected "package.module:callable"'),
            (python_step("steps_mod:identity", 'reads = ["mask"]'),
             "transform 2 (python): field 'mask' is not made by any step before it"),
            (python_step("steps_mod:summary", 'makes = ["mean"]'),
             "field 'mean' is made without `dtypes` and `ranks`"),
            # A float image where to_uint8 reads an image: as for any step's field types.
            (python_step("steps_mod:identity", 'dtypes = ["float32"]\nranks = [3]'),
             "transform 3 (to_uint8): field 'image' is float32 [?, ?, ?], not an image"),
        ]
        for steps, says in cases:
            with self.subTest(says=says):
                self.assertIn(says, self.refused_at_start(steps))


if __name__ == "__main__":
    unittest.main()
