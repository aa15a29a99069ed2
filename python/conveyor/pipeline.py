"""conveyor.Pipeline: a topology (any recipe) run inside this process through the embedding
API, its batches the same conveyor.Batch a node's feed gives. Importing this module loads the
runtime (conveyor._pipeline: CAF, OpenCV); `import conveyor` alone does not."""
import math
import os
import sys

from . import _pipeline


def _toml_value(value, key):
    """`value` as TOML text (a --set value): strings and paths quoted, numbers and booleans as
    TOML writes them, lists and tables of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value)  # 'inf', '-inf', '1e-05', '0.5': all TOML
    if isinstance(value, (str, os.PathLike)):
        text = os.fsdecode(value)
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, key) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_value(str(k), key)} = {_toml_value(v, key)}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"conveyor.Pipeline: set[{key!r}] is a {type(value).__name__}; a value "
                    "is a str, path, int, float, bool, or a list or dict of those")


def overrides(settings):
    """The --set overrides ("key.path=value") of `settings`, a dict of key paths and values,
    in its order."""
    if settings is None:
        return []
    if not hasattr(settings, "items"):
        raise TypeError("conveyor.Pipeline: set must be a dict of key paths and values, e.g. "
                        "{\"dataset.path\": \"/data/x\", \"pipeline.batch_size\": 8}")
    return [f"{key}={_toml_value(value, key)}" for key, value in settings.items()]


def _has_python_step(topology):
    """Whether the topology file names a step of op "python" (False when it does not parse:
    the pipeline then says why, naming the line)."""
    import tomllib
    try:
        with open(topology, "rb") as f:
            steps = tomllib.load(f).get("transform", [])
    except (OSError, ValueError):
        return False
    return any(isinstance(s, dict) and s.get("op") == "python" for s in steps)


def _with_interpreter(topology, settings):
    """`settings`, with python.interpreter this process's interpreter where the topology has
    Python steps and does not say which: their workers import what this process imports (a
    virtual environment's packages, conveyor itself)."""
    settings = dict(settings or {})
    if "python.interpreter" not in settings and _has_python_step(topology):
        settings["python.interpreter"] = sys.executable
    return settings


class Pipeline(_pipeline.Pipeline):
    """Runs the topology file `topology` (a str or os.PathLike: a recipe's path,
    conveyor.recipes.path("unet3d-kits19"), or a file of your own) in this process, as
    conveyor-node would with `--set key=value` for every item of `set`
    ({"dataset.path": "/data/x", "pipeline.batch_size": 8}); `state`, a state_dict() of an
    earlier run, goes on from exactly where it stood.

        with conveyor.Pipeline(topology, set={...}) as p:
            for e in range(p.info["start_epoch"], p.epochs):
                for b in p.epoch(e, gpu=0):
                    images = torch.from_numpy(b["image"])   # no copy

    Every sample of an epoch reaches exactly one GPU exactly once (or is quarantined:
    report()). Each GPU's batches must be taken concurrently (one thread per GPU). Waits
    release the GIL and let Ctrl-C through. conveyor.Error (its message naming the file, line
    and key) for a topology, key or state that is not sound.

    Process-wide, as conveyor-node does for itself: glibc's trim threshold (256 MiB) and mmap
    threshold (32 MiB) are raised, so that freed batch buffers are reused instead of mapped and
    faulted in afresh (without it the UNet3D recipe costs 3.5x the node's CPU);
    keep_freed_memory=False leaves the allocator as the process set it."""

    def __init__(self, topology, set=None, state=None, *,  # noqa: A002 (the issue's name)
                 keep_freed_memory=True):
        topology = os.fsdecode(topology)
        super().__init__(topology, overrides(_with_interpreter(topology, set)), state,
                         keep_freed_memory)
