"""What the Python tests share: the settings CTest passes them in the environment, and a
conveyor-node process to attach to."""
import contextlib
import os
import subprocess


def env(name):
    """The environment variable `name`; the test stops, naming it, when it is not set."""
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set")
    return value


@contextlib.contextmanager
def node_process(command, work, cwd=None):
    """conveyor-node run as `command`, its stdout (its report) kept in work/node.out and its
    stderr in work/node.err; yields the process. On the way out it is killed if it still runs,
    and its log is the process's `log`."""
    with open(os.path.join(work, "node.err"), "w+") as err, \
            open(os.path.join(work, "node.out"), "w") as out:
        node = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd)
        try:
            yield node
        finally:
            if node.poll() is None:
                node.kill()
                node.wait(timeout=30)
            err.seek(0)
            node.log = err.read()
