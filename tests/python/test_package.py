#!/usr/bin/python3
"""What the `conveyor` package carries besides the module: the recipes (conveyor.recipes) and
the way to its programs (conveyor._programs), as CMake lays it out in build/python; pip's
install of it is scripts/check-install's. Environment: PYTHONPATH (the built package),
CONVEYOR_NODE. Run with Debian's python3."""
import os
import subprocess
import sys
import tempfile
import unittest

import conveyor


class PackageTest(unittest.TestCase):
    def test_every_recipe_of_the_source_tree_is_carried(self):
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config")
        want = {"default"} | {n[:-5] for n in os.listdir(os.path.join(source, "examples"))
                              if n.endswith(".toml")}
        self.assertEqual(set(conveyor.recipes.names()), want)
        for name in want:
            with open(conveyor.recipes.path(name)) as f:
                self.assertIn("[dataset]", f.read(), name)

    def test_an_unknown_recipe_is_named_with_those_there_are(self):
        with self.assertRaisesRegex(ValueError, r"no recipe 'unet3d'; there are .*unet3d-kits19"):
            conveyor.recipes.path("unet3d")

    def test_the_node_runs_a_recipe_it_carries(self):
        # The ImageNet recipe on a set conveyor-pack makes, 1 epoch: every sample delivered.
        with tempfile.TemporaryDirectory() as work:
            pack = os.environ.get("CONVEYOR_PACK")
            if not pack:
                self.skipTest("CONVEYOR_PACK is not set")
            subprocess.run([pack, "--synthetic", "12", "--images", os.path.join(work, "images"),
                            "--out", os.path.join(work, "shards")], check=True,
                           capture_output=True)
            run = subprocess.run([os.environ["CONVEYOR_NODE"], "--topology",
                                  conveyor.recipes.path("default"), "--set",
                                  f"dataset.path={os.path.join(work, 'shards')}", "--set",
                                  "trainer.epochs=1", "--set", "pipeline.batch_size=4"],
                                 capture_output=True, text=True, timeout=240)
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
            self.assertIn('"samples":12,', run.stdout)
            self.assertIn('"lost":0,', run.stdout)

    def test_a_package_built_by_cmake_carries_no_programs(self):
        from conveyor._programs import program
        self.assertIsNone(program("conveyor-node"))  # found through CONVEYOR_NODE or PATH
        script = "import sys; sys.argv = ['conveyor-node']; import conveyor._programs as p; p.node()"
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("carries no conveyor-node", run.stderr)


if __name__ == "__main__":
    unittest.main()
