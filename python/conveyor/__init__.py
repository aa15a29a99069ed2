"""Conveyor from Python: feeds of batches from a Conveyor node (`attach`), `Pipeline`, a
topology (any recipe) run in this process, `DataLoader`, a drop-in for
torch.utils.data.DataLoader that runs your own Dataset under Conveyor's actors
(python/conveyor/loader.py), and `recipes`, the topologies it comes with. `Pipeline` is loaded
on first use (conveyor.pipeline): a process that only attaches never maps the runtime."""

from ._native import *  # noqa: F401,F403  (attach, Feed, Batch and the errors)
from ._native import __doc__ as _native_doc  # noqa: F401
from .loader import DataLoader  # noqa: F401
from . import recipes  # noqa: F401


def __getattr__(name):
    if name == "Pipeline":
        from .pipeline import Pipeline
        return Pipeline
    raise AttributeError(f"module 'conveyor' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + ["Pipeline"])
