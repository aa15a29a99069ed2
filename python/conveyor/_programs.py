"""The console scripts of the installed package (pyproject.toml): conveyor-node and
conveyor-pack run the programs the package carries (conveyor/bin), with this process's
arguments, as if they had been run directly."""
import os
import sys

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def program(name):
    """The path of the program `name` the package carries; None where it carries none (the
    package built by CMake into build/python, or installed by cmake --install)."""
    path = os.path.join(BIN, name)
    return path if os.access(path, os.X_OK) else None


def _run(name):
    path = program(name)
    if path is None:
        sys.exit(f"{name}: this conveyor package carries no {name} (installed without pip?)")
    os.execv(path, [name] + sys.argv[1:])


def node():
    _run("conveyor-node")


def pack():
    _run("conveyor-pack")
