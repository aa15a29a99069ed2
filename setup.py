"""Builds the `conveyor` package through the project's CMake build (pyproject.toml): the
compiled module, the worker script, the programs conveyor-node and conveyor-pack (run through
the console scripts of conveyor._programs) and the recipes (config/*.toml, as
conveyor.recipes). CONVEYOR_BUILD_DIR names a build tree to use (configured already, e.g. the
release build of scripts/build: only what the package needs is built there); otherwise a
release build is configured in setuptools' temporary directory. CONVEYOR_BUILD_JOBS caps the
parallel jobs (default: every core)."""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["conveyor_python", "conveyor_pipeline_python", "conveyor-node", "conveyor-pack"]
PROGRAMS = {"conveyor-node": "apps/conveyor-node", "conveyor-pack": "apps/conveyor-pack"}


class CMakeBuild(build_ext):
    """The extension conveyor._native is CMake's conveyor_python target, and
    conveyor._pipeline (built with it, copied with the package) its conveyor_pipeline_python;
    the programs and recipes go into the package beside them."""

    def build_extension(self, ext):
        build = self.cmake_tree()
        jobs = os.environ.get("CONVEYOR_BUILD_JOBS", str(os.cpu_count() or 1))
        self.run_step(["cmake", "--build", build, "-j", jobs, "--target"] + TARGETS)
        package = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        # The package as CMake lays it out (python/CMakeLists.txt: the module, the worker
        # script, the Python files, the recipes), then the programs.
        shutil.copytree(os.path.join(build, "python", "conveyor"), package, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        for program, folder in PROGRAMS.items():
            shutil.copy2(os.path.join(build, folder, program), os.path.join(package, "bin"))

    def cmake_tree(self):
        """CONVEYOR_BUILD_DIR, or a release tree configured here for this interpreter."""
        given = os.environ.get("CONVEYOR_BUILD_DIR")
        if given:
            if not os.path.isfile(os.path.join(given, "CMakeCache.txt")):
                raise SystemExit(f"CONVEYOR_BUILD_DIR={given} is not a configured CMake build tree")
            return os.path.abspath(given)
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        self.run_step(["cmake", "-S", SOURCE, "-B", build, "-G", "Ninja",
                       "-DCMAKE_BUILD_TYPE=Release", "-DCONVEYOR_BUILD_TESTS=OFF",
                       "-DCONVEYOR_BUILD_BENCH=OFF", f"-DPYTHON_EXECUTABLE={sys.executable}"])
        return build

    @staticmethod
    def run_step(command):
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)


setup(ext_modules=[Extension("conveyor._native", sources=[])], cmdclass={"build_ext": CMakeBuild},
      package_dir={"": "python"})
