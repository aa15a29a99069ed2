"""Writes the setup a Conveyor Python worker starts from (python/conveyor_worker.py), as a
loader makes it: the spawn preparation of this process, and the pickled dataset and
worker_init_fn. For tests/test_python_worker.cpp.

Usage: worker_setup.py MODULE_DIR MODULE CLASS OUT [INIT_FN]
  MODULE_DIR  where MODULE (a .py file the test wrote) lies
  CLASS       the Dataset class in MODULE, made with no arguments
  INIT_FN     a function of MODULE to run as worker_init_fn(worker_id)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from conveyor_worker import write_setup  # noqa: E402


def main(module_dir, module, cls, out, init_fn=None):
    sys.path.insert(0, module_dir)
    mod = __import__(module)
    inner = {"dataset": getattr(mod, cls)(),
             "worker_init_fn": getattr(mod, init_fn) if init_fn else None}
    with open(out, "wb") as f:
        write_setup(f, inner)


if __name__ == "__main__":
    main(*sys.argv[1:])
