"""What the Python tests share: the settings CTest passes them in the environment."""
import os


def env(name):
    """The environment variable `name`; the test stops, naming it, when it is not set."""
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set")
    return value
