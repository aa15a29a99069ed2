"""The topologies Conveyor comes with (config/default.toml, the ImageNet training recipe, and
config/examples): conveyor.recipes.path("unet3d-kits19") is the file to give conveyor-node's
--topology, names() those there are. A recipe's dataset.path (and other paths in it) are to
be set, as --set does. The package carries them, however it was built (pip, CMake's
build/python, cmake --install)."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _folder():
    return os.path.join(_HERE, "recipes")  # the package's, wherever it was built or installed


def names():
    """Every recipe's name (its file's name without .toml), sorted."""
    try:
        return sorted(n[:-5] for n in os.listdir(_folder()) if n.endswith(".toml"))
    except OSError:
        return []


def path(name):
    """The topology file of recipe `name` ("default", "unet3d-kits19", ...). A name there is
    not is a ValueError that lists those there are."""
    candidate = os.path.join(_folder(), str(name) + ".toml")
    if os.path.isfile(candidate):
        return candidate
    raise ValueError(f"conveyor.recipes: no recipe {name!r}; there are {', '.join(names())}")
