"""Conveyor from Python: feeds of batches from a Conveyor node (`attach`), and
`DataLoader`, a drop-in for torch.utils.data.DataLoader that runs your own Dataset under
Conveyor's actors (python/conveyor/loader.py), and `recipes`, the topologies it comes with."""

from ._native import *  # noqa: F401,F403  (attach, Feed, Batch and the errors)
from ._native import __doc__ as _native_doc  # noqa: F401
from .loader import DataLoader  # noqa: F401
from . import recipes  # noqa: F401
