"""conveyor.DataLoader: torch.utils.data.DataLoader's arguments and batches, your own map-style
Dataset run under Conveyor's actors.

The loader starts a private Conveyor node (`conveyor-node`, found as $CONVEYOR_NODE or on PATH)
for the dataset and attaches to it as a trainer process does. The node's preprocessors and
straggler actors each lease a worker process (python/conveyor_worker.py) that runs dataset[i]
for one sample at a time. Workers are forked from a zygote, which this process forks when the
first epoch starts, as torch's DataLoader forks its workers (multiprocessing_context None or
"fork"): they share its modules and dataset copy-on-write and re-run nothing; this process runs
none of the runtime's threads (they run in the node). With "spawn" or "forkserver" the node
spawns the zygote instead (posix_spawn), which imports the main module as spawn does. A node
whose zygote died spawns a new one (from the dataset pickled: one that cannot be pickled, a
lambda in its transforms, is allowed forked, as torch allows it, and then quarantines what is
left of the epoch naming why). A sample past its latency budget keeps its worker and joins a
later batch of the same epoch while other workers take the next samples. Batches are collated as
torch.utils.data.default_collate does (tensors and arrays stacked into tensors, ints to int64,
floats to float64, bools to bool, str and bytes to lists (tuples inside a tuple, list or
namedtuple, as default_collate's zip makes them), tuples to lists, dicts and namedtuples
kept), over the node's shared memory without a copy: a batch's tensors are valid while any of
them lives. With a collate_fn each sample travels pickled, whole, and the collate_fn gets the
samples as __getitem__ returned them, whatever their shapes.
"""

import atexit
import collections
import json
import operator
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
import weakref

_DTYPE_VIEWS = {"bfloat16": "int16"}  # NumPy has no bfloat16: its bits travel as uint16

_MAX_OBJECT_BYTES = 1 << 30  # [python] max_text_bytes at most
_START_TIMEOUT_S = 120  # a worker's start ([python] start_timeout_s)
_EPOCHS = 1000000  # the node's run: as many epochs as a trainer asks for

# what a state_dict must share with the loader that loads it
_SAME_RUN = {"batch_size": "batch_size", "shuffle": "shuffle", "drop_last": "drop_last",
             "rank": "rank", "world_size": "world_size", "length": "_length"}

# python/conveyor_worker.py's leaf kinds
from .conveyor_worker import (BOOTSTRAPPING as _BOOTSTRAPPING, BOOL as _BOOL, BYTES as _BYTES,
                              FLOAT as _FLOAT, INT as _INT, NDARRAY as _NDARRAY,
                              PICKLED as _PICKLED, STR as _STR, TENSOR as _TENSOR,
                              UNPICKLABLE as _UNPICKLABLE, fork_zygote, write_setup)


def _torch():
    import torch
    return torch


def _numpy():
    import numpy
    return numpy


def _node_binary():
    """$CONVEYOR_NODE, else the program the package carries (pip install), else PATH's."""
    from ._programs import program
    node = os.environ.get("CONVEYOR_NODE") or program("conveyor-node") or \
        shutil.which("conveyor-node")
    if not node:
        raise RuntimeError("conveyor.DataLoader needs the conveyor-node program: set "
                           "CONVEYOR_NODE to its path or put it on PATH")
    return node


_DIR_PREFIX = "conveyor-loader-"


def _remove_orphaned_dirs():
    """Removes the directories of loaders whose process is gone (killed: SIGKILL, the OOM
    killer; it could remove nothing): this user's, in the temporary directory, whose `owner`
    file names a process that no longer runs. Their node ended with its owner."""
    root = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(root) if n.startswith(_DIR_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            with open(os.path.join(path, "owner")) as f:
                owner = int(f.read())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (OSError, ValueError):
            pass  # another user's, being made, or of an older loader: left alone


# Loaders whose node runs, closed at exit while the interpreter still works: one left open in a
# module's globals would otherwise be collected during shutdown, when close() can no longer
# import or remove anything, and its directory would stay until the next loader starts.
_open_loaders = weakref.WeakSet()


@atexit.register
def _close_open_loaders():
    for loader in list(_open_loaders):
        loader.close()


def _toml_text(value):
    return json.dumps(value)  # a JSON string is a TOML basic string


class DataLoader:
    """torch.utils.data.DataLoader for a map-style Dataset (__getitem__, __len__), run under
    Conveyor. Arguments torch has keep torch's meaning where Conveyor can honour them; one it
    cannot is a TypeError naming it. Conveyor's own: `seed` (the epochs' order and draws per
    (seed, epoch, index): the same for any num_workers; where not given, drawn as torch draws
    its base seed, from `generator` (or a RandomSampler's) where one is given, so that a
    seeded generator gives the same batches every run, else from torch's global generator),
    `policy` ("latency_aware", the default, or "in_order"; torch 2.6's `in_order` says it too:
    True "in_order", False "latency_aware"), `stragglers`
    (worker processes that finish slow samples; default num_workers // 2, at least 1),
    `hang_timeout` (seconds one dataset[i] may take before its worker is killed),
    `max_sample_retries`, `metrics` ("host:port": its node serves /metrics for Prometheus and
    its live page there while it runs; docs/node.md "Watching a node"), `max_object_bytes`
    (the bytes one sample's str, bytes or other object may take, pickled; with a collate_fn,
    the whole sample pickled; by default 4 times the first sample's, at least 1 MiB; a sample
    past it is quarantined, naming it. Each batch slot reserves batch_size times as much shared
    memory for each such element, of which only what samples write is used).

    Without a collate_fn every sample must have the first sample's structure, dtypes and
    shapes (default_collate would refuse the batch; here such a sample is quarantined, named in
    report()); with one, samples may differ as torch allows: each goes pickled, whole.

    DDP: `rank` of `world_size` (default torch.distributed's when it is initialised, else 0 of
    1) takes the positions p of each epoch's order with p % world_size == rank, a disjoint share
    (the union is the epoch). Every rank yields len(loader) batches: where an even split cannot
    give them the same number (the smaller shares a multiple of batch_size), a rank with the
    smaller share ends the epoch with a batch of one repeated sample, its epoch's first one
    drawn again as its worker drew it (DistributedSampler pads with repeated samples too); with
    drop_last, a rank with the larger share drops its last full batch. A script's
    `sampler=DistributedSampler(dataset)` is honoured: its rank, num_replicas, shuffle and seed
    are the loader's, and an iteration begins at the epoch its set_epoch set unless the loader
    is past it (where a script never calls it, each epoch is the next one, newly shuffled,
    where torch's would repeat the first; a loader iterated twice after one set_epoch(e) goes
    on at e + 1 and later). RandomSampler (without replacement or num_samples) and
    SequentialSampler over the dataset are shuffle True and False.

    Any other sampler (a WeightedRandomSampler, a SubsetRandomSampler, a list, the script's own)
    gives each epoch's order itself, iterated as the epoch's iteration begins (as torch's
    loader iterates it): with policy="in_order", torch's batches index by index, repeats
    included. Its epochs each run on a node of their own (as torch's workers start anew each
    epoch without persistent_workers). It shares the epoch among ranks itself: rank and
    world_size are refused beside it. A torch BatchSampler is its sampler, batch_size and
    drop_last; another batch_sampler is a TypeError.

    state_dict() / load_state_dict() as torchdata's StatefulDataLoader: taken between batches
    (in the loop's body, or between epochs), saved with the model; a new loader over the same
    dataset and arguments, given it before its first iteration, continues the saved epoch with
    exactly the batches not yet yielded, then the later epochs as if never stopped. The state is
    small: the node's record of the epoch's delivered positions is a prefix and a window."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=2, persistent_workers=False, pin_memory_device="", in_order=None,
                 seed=None, policy=None, stragglers=None, hang_timeout=300.0,
                 max_sample_retries=2, rank=None, world_size=None, metrics=None,
                 max_object_bytes=None):
        if batch_sampler is not None:
            sampler, batch_size, drop_last = _unbatched(batch_sampler, batch_size, shuffle,
                                                        sampler, drop_last)
        if pin_memory_device != "":  # torch's "not given"
            raise TypeError("conveyor.DataLoader: pin_memory_device is not supported")
        if os.environ.get(_BOOTSTRAPPING):
            raise RuntimeError("conveyor.DataLoader: made while a spawned worker process imports "
                               "the trainer's main module: put the training in "
                               "`if __name__ == '__main__':`, or leave multiprocessing_context "
                               "None (workers forked from the trainer re-run nothing)")
        if multiprocessing_context not in (None, "fork", "spawn", "forkserver"):
            raise TypeError(f"conveyor.DataLoader: multiprocessing_context must be None, 'fork', "
                            f"'spawn' or 'forkserver', not {multiprocessing_context!r}")
        if generator is not None and not isinstance(generator, _torch().Generator):
            raise TypeError(f"conveyor.DataLoader: generator must be a torch.Generator, not "
                            f"{type(generator).__name__}")
        self._ordering = None  # a sampler whose own order each epoch takes (_draw_order)
        if sampler is not None:
            honoured = _honoured_sampler(sampler, dataset, shuffle, seed, rank, world_size,
                                         generator)
            if honoured is None:
                self._ordering = _ordering_sampler(sampler, rank, world_size)
            else:
                shuffle, seed, rank, world_size, generator = honoured
        if batch_size is None or int(batch_size) < 1:
            raise TypeError("conveyor.DataLoader: batch_size must be a positive int "
                            "(batch_size=None, unbatched loading, is not supported)")
        self._pin = False
        if pin_memory:
            import torch
            self._pin = torch.cuda.is_available()
            if not self._pin:
                warnings.warn("pin_memory=True but no CUDA device: ignored (as torch does)")
        policy = _policy_of(policy, in_order)
        if policy not in ("latency_aware", "in_order"):
            raise TypeError(f"conveyor.DataLoader: policy must be 'latency_aware' or "
                            f"'in_order', not {policy!r}")
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError("conveyor.DataLoader: the dataset must be map-style "
                            "(__getitem__ and __len__); IterableDataset is not supported")
        self._length = len(dataset)
        if self._length < 1:
            raise ValueError(f"conveyor.DataLoader: the dataset has no samples (len(dataset) is "
                             f"{self._length})")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.num_workers = int(num_workers)
        self.collate_fn = collate_fn
        self.drop_last = bool(drop_last)
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = int(prefetch_factor or 2)
        self.persistent_workers = persistent_workers
        self.pin_memory = bool(pin_memory)
        # What torch's loader has here, for scripts that read it (len(loader.sampler),
        # loader.sampler.set_epoch(e)): the sampler given, else the one torch would make. The
        # order is the loader's own; a DistributedSampler's epoch is followed.
        self.sampler = sampler if sampler is not None else _torch().utils.data.RandomSampler(
            dataset) if self.shuffle else _torch().utils.data.SequentialSampler(dataset)
        self.policy = policy
        self.stragglers = max(1, self.num_workers // 2) if stragglers is None else int(stragglers)
        self.hang_timeout = float(hang_timeout)
        self.max_sample_retries = int(max_sample_retries)
        if metrics is not None and not isinstance(metrics, str):
            raise TypeError(f"conveyor.DataLoader: metrics must be a 'host:port' string, not "
                            f"{metrics!r}")
        self.metrics = metrics
        if max_object_bytes is not None and (not isinstance(max_object_bytes, int) or
                                             not 1 <= max_object_bytes <= _MAX_OBJECT_BYTES):
            raise TypeError(f"conveyor.DataLoader: max_object_bytes must be an int in 1 .. 2**30, "
                            f"not {max_object_bytes!r}")
        self.max_object_bytes = max_object_bytes
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.seed = self._base_seed(generator) if seed is None else int(seed) & (2**63 - 1)
        # With a sampler's own order, the sampler shares the epoch: the rank and world_size
        # are its own (or torch.distributed's), which a state must have been taken with.
        self.rank, self.world_size = _sampler_rank(self._ordering) if self._ordering is not None \
            else _distributed(rank, world_size, self._length)
        self._order = None  # the epoch's order the sampler gave (a numpy int64 array)
        self._ended_report = None  # the report of an epoch's node that ended (a sampler's)
        self._node_epochs = _EPOCHS  # the node's run: epochs it serves
        self._epoch = 0  # the epoch the next iteration begins
        self._live = None  # the epoch being iterated: {"epoch", "yielded", "pad"}
        self._resumed = None  # a saved epoch in progress (load_state_dict), continued next
        self._start_state = None  # the state the node starts from
        self._node_epoch = 0  # the epoch the node's feed is in
        self._node = None
        self._zygote = None  # (pid, pidfd) of the zygote this process forked
        self._feed = None
        self._dir = None
        self._layout = None
        self._held = collections.deque()  # per batch yielded: weak references to its tensors

    @staticmethod
    def _base_seed(generator):
        """Drawn as torch's DataLoader draws its base seed: from `generator` where one is
        given (the same generator state gives the same seed, order and draws), else from
        torch's global generator."""
        import torch
        draw = torch.empty((), dtype=torch.int64).random_(generator=generator)
        return int(draw.item()) & (2**63 - 1)

    def __len__(self):
        """Batches per epoch for every rank (the same for each)."""
        if self.drop_last:
            return self._share(self.world_size - 1) // self.batch_size
        return -(-self._share(0) // self.batch_size)

    def _share(self, rank):
        """How many samples of each epoch are rank `rank`'s (rank 0's share is the largest);
        with a sampler's own order, as many as it gives (len(sampler) before it gave one)."""
        if self._ordering is not None:
            return len(self._order) if self._order is not None else len(self._ordering)
        whole, rest = divmod(self._length, self.world_size)
        return whole + (1 if rank < rest else 0)

    def set_epoch(self, epoch):
        """The epoch the next iteration yields (each iteration otherwise takes the next): as
        DistributedSampler.set_epoch, the order and draws of epoch `epoch`."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError(f"conveyor.DataLoader.set_epoch({epoch}): epochs count from 0")
        if self._feed is not None and epoch < self._node_epoch and self._ordering is None:
            raise ValueError(f"conveyor.DataLoader.set_epoch({epoch}): epoch {self._epoch} is "
                             f"next; a running loader does not go back")
        if self._resumed is not None and epoch != self._resumed["epoch"]:
            self._resumed = None  # a state loaded, then another epoch asked for: that epoch
            self._start_state = None
        self._epoch = epoch
        if self._ordering is not None and hasattr(self._ordering, "set_epoch"):
            self._ordering.set_epoch(epoch)  # a DistributedSampler's (with drop_last) order

    def report(self):
        """What this loader's node did so far (empty before the first iteration; in a sampler's
        own order, its node of the epoch being iterated or, once it ended, of that epoch):
        delivered,
        quarantined, duplicates, lost (the samples of the epochs begun that are neither
        delivered nor quarantined: in flight while `finished` is False, lost once it is True;
        the node runs ahead into the next epoch), retries (samples issued again after an
        exception or a worker's death), restarts, hangs, handoffs (samples finished by a
        straggler worker), sample_ms (one dataset[i]'s time over the last ones: samples, p50,
        p90, p99, max), and quarantined_samples: per sample set aside, {"epoch", "index",
        "reason"} (the exception's type, message and last frame, or how its workers died)."""
        if self._feed is None:  # none yet, or its node of one epoch (a sampler's) ended
            return dict(self._ended_report) if self._ended_report else {}
        report = self._feed.report()
        report["quarantined_samples"] = self._quarantined()
        return report

    def _warn_of_quarantined(self, epoch):
        """Warns at the end of an epoch whose samples were set aside (where torch's loader would
        have raised at the first): how many, and the first one's index and reason. The node
        wrote each before the epoch could end."""
        these = [q for q in self._quarantined() if q["epoch"] == epoch]
        if these:
            warnings.warn(f"conveyor.DataLoader: epoch {epoch}: {len(these)} of "
                          f"{self._share(self.rank)} samples quarantined, the first dataset"
                          f"[{these[0]['index']}]: {these[0]['reason']} (report() names each)",
                          stacklevel=3)

    def _index_of(self, sample_id):
        """The dataset index of the node's sample `sample_id` of the epoch being iterated: its
        position in the order the sampler gave, or the index itself."""
        if self._order is None:
            return sample_id
        if not 0 <= sample_id < len(self._order):
            raise ValueError(f"conveyor.DataLoader: sample {sample_id} is past the epoch's "
                             f"{len(self._order)} positions")
        return int(self._order[sample_id])

    def _quarantined(self):
        try:
            with open(os.path.join(self._dir, "quarantine.tsv"), errors="replace") as f:
                lines = f.read().splitlines()[1:]  # after the header
        except OSError:
            return []
        out = []
        for line in lines:
            parts = line.split("\t", 3)
            if len(parts) == 4 and parts[0].isdigit() and parts[1].isdigit():
                out.append({"epoch": int(parts[0]), "index": self._index_of(int(parts[1])),
                            "reason": parts[3]})
        return out

    # --- resuming ---------------------------------------------------------------------------

    def state_dict(self):
        """Where this loader stands (small; save it with the model's checkpoint): the epoch in
        progress and its batches yielded, or the next epoch between epochs. With a sampler's
        own order, the epoch in progress's order too (8 bytes a sample)."""
        live = self._live or self._resumed
        state = {"epoch": live["epoch"] if live else self._epoch,
                 "yielded": live["yielded"] if live else 0,
                 "pad": live["pad"] if live else None,
                 "seed": self.seed}
        state["own_order"] = self._ordering is not None
        if live and live.get("order") is not None:
            state["order"] = _torch().tensor(live["order"])
        if self._ordering is not None:
            state["sampler"] = _sampler_state(self._ordering)
        state.update({key: getattr(self, name) for key, name in _SAME_RUN.items()})
        if self._feed is not None:
            state["conveyor_state"] = self._feed.state_dict()["conveyor_state"]
        elif self._start_state is not None:
            state["conveyor_state"] = self._start_state
        return state

    def load_state_dict(self, state):
        """Continues from `state` (a state_dict() of a loader over the same dataset, with the
        same batch_size, shuffle, drop_last and rank of the same world_size): the next
        iteration yields the rest of the saved epoch. A running loader stops its node first
        (batches it prepared and did not yield are prepared again). In a sampler's own order,
        the saved epoch's order is the state's, and the sampler gets back its state_dict() or
        its generator's state: its next orders are the ones it would have given (one that
        draws from torch's global generator draws anew). The state's order, pad and mode are
        checked before anything is stopped."""
        own = bool(state.get("own_order", False))
        if own != (self._ordering is not None):
            mode = {True: "in its sampler's own order", False: "in Conveyor's order"}
            raise ValueError(f"conveyor.DataLoader.load_state_dict: the state is of a loader "
                             f"{mode[own]}, this one is {mode[not own]} (its sampler= differs)")
        for key, name in _SAME_RUN.items():
            if key not in state:
                raise ValueError(f"conveyor.DataLoader.load_state_dict: the state has no {key!r} "
                                 f"(not a conveyor.DataLoader.state_dict())")
            if state[key] != getattr(self, name):
                raise ValueError(f"conveyor.DataLoader.load_state_dict: the state is of a loader "
                                 f"with {key}={state[key]!r}, this one has {getattr(self, name)!r}")
        order = state.get("order")
        if order is not None:
            order = self._checked_order(order, "the state's order")
        elif own and int(state["yielded"]) > 0:
            raise ValueError("conveyor.DataLoader.load_state_dict: the state of an epoch in "
                             "progress has no 'order' (not a conveyor.DataLoader.state_dict())")
        pad = state.get("pad")
        if pad is not None and order is not None and not 0 <= int(pad) < len(order):
            raise ValueError(f"conveyor.DataLoader.load_state_dict: its pad {pad} is past its "
                             f"order's {len(order)} positions")
        self.close()
        if own:
            _restore_sampler(self._ordering, state.get("sampler"))
        self.seed = int(state["seed"])  # its workers' get_worker_info().seed too
        self._epoch = int(state["epoch"])
        self._live = None
        self._resumed = {"epoch": self._epoch, "yielded": int(state["yielded"]),
                         "pad": state.get("pad"), "order": order}
        self._start_state = state.get("conveyor_state")

    # --- the node ---------------------------------------------------------------------------

    def _topology(self, zygote_fds):
        d = self._dir
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conveyor_worker.py")
        return "\n".join([
            "gpus = 1",
            "[dataset]",
            f"path = {_toml_text(os.path.join(d, 'dataset.setup'))}",
            'format = "python"',
            f"seed = {self.seed}",
            f"shuffle = {'true' if self.shuffle else 'false'}",
            "[python]",
            f"length = {self._length}",
            f"interpreter = {_toml_text(sys.executable)}",
            f"worker = {_toml_text(worker)}",
            f"hang_timeout_s = {self.hang_timeout}",
            f"start_timeout_s = {_START_TIMEOUT_S}",
            f"layout_file = {_toml_text(os.path.join(d, 'layout.json'))}",
            f"max_text_bytes = {self.max_object_bytes or 0}",  # 0: the node sizes it
        ] + ([f"order_file = {_toml_text(os.path.join(d, 'epoch.order'))}"]
             if self._order is not None else []) + (
            [f"zygote_socket = {zygote_fds[0]}", f"zygote_pidfd = {zygote_fds[1]}"]
            if zygote_fds else []) + [
            "[pipeline]",
            f"batch_size = {self.batch_size}",
            f"preprocessors = {max(1, self.num_workers)}",
            f"stragglers = {self.stragglers}",
            f"prefetch_batches = {max(1, self.prefetch_factor)}",
            "[batching]",
            f'policy = "{self.policy}"',
            "[supervision]",
            f"max_sample_retries = {self.max_sample_retries}",
            f"quarantine_report = {_toml_text(os.path.join(d, 'quarantine.tsv'))}",
            "[trainer]",
            f"epochs = {self._node_epochs}",
        ] + (["[monitor]", f"metrics = {_toml_text(self.metrics)}"] if self.metrics else []) + [
            "[cluster]",
            f"rank = {self.rank if self._order is None else 0}",
            f"world = {self.world_size if self._order is None else 1}",
            "[serve]",
            f"socket = {_toml_text(os.path.join(d, 'node.sock'))}",
            f"resume = {'true' if self._start_state is not None else 'false'}",
            # a node of one epoch (a sampler's order) answers report() after it
            f"linger = {'true' if self._order is not None else 'false'}",
            "",
        ])

    def _start(self, epoch, order=None):
        """Starts the node: from the state loaded, else at `epoch`. With `order` (the epoch's
        order a sampler gave), for that epoch alone: its sample j is dataset[order[j]]."""
        from . import _native
        self._order = order
        self._ended_report = None
        # A node in a sampler's order ends with its epoch: the next one's order is drawn when
        # its iteration begins, as torch's loader iterates its sampler then.
        self._node_epochs = _EPOCHS if order is None else epoch + 1
        if self._start_state is None and epoch > 0:
            self._start_state = _native.state_at_epoch(
                self._length if order is None else len(order), self.seed, self.shuffle,
                self._node_epochs, epoch)
        try:
            self._prepare_dir()
            if order is not None:
                with open(os.path.join(self._dir, "epoch.order"), "wb") as f:
                    f.write(order.astype("<u8").tobytes())
            self._launch()
        except BaseException:
            self.close()  # nothing of a start that failed is left
            raise

    def _prepare_dir(self):
        """The loader's directory (made once until close(): the nodes of epochs in a sampler's
        own order share it), with the setup a zygote the node spawns starts from."""
        if self._dir is not None:
            return
        _remove_orphaned_dirs()
        _open_loaders.add(self)
        self._dir = tempfile.mkdtemp(prefix=_DIR_PREFIX)
        with open(os.path.join(self._dir, "owner"), "w") as f:
            f.write(str(os.getpid()))
        self._write_setup(os.path.join(self._dir, "dataset.setup"))

    def _launch(self):
        """Starts a node in the loader's directory and attaches to it."""
        node = _node_binary()
        socket_path = os.path.join(self._dir, "node.sock")
        if os.path.lexists(socket_path):
            os.unlink(socket_path)  # an earlier epoch's node's
        zygote_fds = self._fork_zygote()
        topology = os.path.join(self._dir, "node.toml")
        with open(topology, "w") as f:
            f.write(self._topology(zygote_fds))
        self._log = open(os.path.join(self._dir, "node.log"), "ab")
        try:
            self._node = subprocess.Popen([node, "--topology", topology,
                                           "--owner", str(os.getpid())],
                                          stdout=subprocess.DEVNULL, stderr=self._log,
                                          start_new_session=True, pass_fds=zygote_fds)
        finally:
            for fd in zygote_fds:
                os.close(fd)  # the node's now: the zygote ends when the node does
        try:
            self._feed = self._attach()
        except Exception as exc:
            raise RuntimeError(f"conveyor.DataLoader: its node did not start: {exc}\n"
                               f"{self._node_log()}") from exc
        with open(os.path.join(self._dir, "layout.json")) as f:
            self._layout = json.load(f)
        self._node_epoch = self._feed.info()["start_epoch"]

    def _attach(self):
        """The feed of the node just started, once it listens (its start: the zygote, the
        workers, the first sample; at most hang_timeout + 120 s); an error as soon as the node
        has exited instead."""
        from . import _native
        # timeout=0 (torch: no limit) still has a bound: every try of one sample hanging, each
        # in a worker started anew.
        next_timeout = self.timeout if self.timeout > 0 else (
            (self.max_sample_retries + 1) * (self.hang_timeout + _START_TIMEOUT_S) + 60)
        deadline = time.monotonic() + self.hang_timeout + 120
        while True:
            try:
                return _native.attach(os.path.join(self._dir, "node.sock"), timeout=1.0,
                                      next_timeout=next_timeout, state=self._start_state)
            except _native.NotFound:
                if self._node.poll() is not None:
                    raise RuntimeError(f"it exited with code {self._node.returncode}") from None
                if time.monotonic() > deadline:
                    raise

    def _write_setup(self, path):
        """Writes the setup a zygote the node spawns starts from (conveyor_worker.py's
        write_setup), at `path`. Forked from this process (as torch's fork context, nothing is
        pickled for it), the zygote needs it only to be started anew if it dies: a dataset
        that cannot be pickled (a lambda in its transforms) is then allowed, and its setup
        names why no zygote can start from it. Otherwise such a dataset is a TypeError naming
        it."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            try:
                write_setup(f, self._worker_setup())
            except OSError:
                raise  # the file's (a full disk): not the dataset's
            except Exception as exc:
                why = (f"the dataset ({type(self.dataset).__name__}) or worker_init_fn cannot "
                       f"be pickled for its worker processes: {exc}")
                if not self._forks():
                    raise TypeError(f"conveyor.DataLoader: {why}") from exc
                pickle.dump({_UNPICKLABLE: f"the zygote forked from the trainer died, and "
                                           f"another cannot be started: {why}"}, f)

    def _worker_setup(self):
        """What the workers start from (conveyor_worker.py): the dataset, worker_init_fn and
        what their get_worker_info() says: num_workers counts every process that runs
        dataset[i] (num_workers, then the stragglers' ids), its seed is seed + id, as torch's;
        with a collate_fn, samples go whole (pickled) and may differ in shape and structure."""
        return {"dataset": self.dataset, "worker_init_fn": self.worker_init_fn,
                "worker_info": {"num_workers": self.num_workers + self.stragglers,
                                "seed": self.seed},
                "whole_samples": self.collate_fn is not None}

    def _forks(self):
        """Whether this process forks the zygote (multiprocessing_context None or "fork")."""
        return self.multiprocessing_context in (None, "fork")

    def _fork_zygote(self):
        """The zygote forked from this process (its socket and a pidfd, for the node), or ()
        where the node is to spawn it."""
        if not self._forks():
            return ()
        pid, sock = fork_zygote(self._worker_setup())
        self._zygote = (pid, os.pidfd_open(pid))
        return (sock.detach(), os.dup(self._zygote[1]))

    def _end_zygote(self):
        """Reaps the zygote this process forked: it exits once its node has (at most 10 s)."""
        if self._zygote is None:
            return
        pid, pidfd = self._zygote
        self._zygote = None
        try:
            if not select.select([pidfd], [], [], 10)[0]:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # reaped already (by a caller's own wait)
        finally:
            os.close(pidfd)

    def _node_log(self, last=40):
        try:
            with open(os.path.join(self._dir, "node.log"), errors="replace") as f:
                return "".join(f.readlines()[-last:])
        except OSError:
            return ""

    def close(self):
        """Stops the node and its workers; removes what the loader wrote. Idempotent."""
        self._stop_node()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _stop_node(self):
        """Stops the node, its workers and the zygote this process forked; the loader's
        directory stays (an epoch in a sampler's own order starts the next node there)."""
        if self._feed is not None:
            self._feed.close()
            self._feed = None
        if self._node is not None:
            self._node.terminate()
            try:
                self._node.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._node.kill()
                self._node.wait()
            self._node = None
            self._log.close()
        self._end_zygote()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # --- batches ----------------------------------------------------------------------------

    def __iter__(self):
        set_by_sampler = getattr(self.sampler, "epoch", None)  # a DistributedSampler's
        if set_by_sampler is not None and set_by_sampler >= self._epoch:
            self.set_epoch(set_by_sampler)  # its set_epoch, as torch's loader follows it
        progress = self._resumed or {"epoch": self._epoch, "yielded": 0, "pad": None}
        if self._ordering is not None:
            # Each epoch in the order its sampler gives when the iteration begins, on a node of
            # its own (as torch's workers without persistent_workers start anew each epoch).
            if progress.get("order") is None:  # not resumed: from its start, in the order drawn now
                progress["order"] = self._draw_order()
                self._start_state = None
            self._stop_node()
            self._start(progress["epoch"], progress["order"])
        elif self._feed is None:
            self._start(progress["epoch"])
        self._resumed = None
        self._epoch = progress["epoch"] + 1
        self._live = progress
        return self._epoch_batches(progress)

    def _epoch_batches(self, progress):
        """The batches of epoch progress["epoch"] from the `yielded`-th on: the node's, then
        the pads that bring this rank to len(self)."""
        epoch = progress["epoch"]
        self._catch_up(epoch)
        if self._node_epoch == epoch:  # else every batch of it came before a resume
            batches = self._feed.epoch(epoch)
            while True:
                batch = self._next_batch(batches)
                if batch is None:
                    break
                if progress["yielded"] >= len(self) or (self.drop_last and
                                                        len(batch) < self.batch_size):
                    batch.release()
                    continue
                if progress["pad"] is None:
                    progress["pad"] = int(batch.sample_ids[0])
                progress["yielded"] += 1
                yield self._pinned(self._collate(batch))
            self._node_epoch = epoch + 1
            self._warn_of_quarantined(epoch)
            if self._ordering is not None:  # its node's one epoch is over: its workers go
                self._ended_report = self.report()
                self._start_state = None
                self._stop_node()
        while progress["yielded"] < len(self):
            if progress["pad"] is None:
                raise RuntimeError(f"conveyor.DataLoader: epoch {epoch} delivered no sample: "
                                   f"each was quarantined (report() says why)")
            progress["yielded"] += 1
            yield self._pinned(self._pad(epoch, progress["pad"]))
        if self._live is progress:
            self._live = None

    def _draw_order(self):
        """The order the sampler gives the epoch about to begin, drawn now by iterating it, as
        torch's loader does: indices of the dataset (ints, or integer numpy or torch scalars),
        repeats allowed. One past the dataset, not an integer, or none at all is named."""
        name = f"sampler {type(self._ordering).__name__}"
        order = []
        for position, index in enumerate(self._ordering):
            try:
                order.append(operator.index(index))
            except TypeError:
                raise TypeError(f"conveyor.DataLoader: {name} gave {index!r} at position "
                                f"{position}: not an index") from None
        return self._checked_order(order, name)

    def _checked_order(self, values, source):
        """`values` (a list, an array or a tensor, on any device: a state torch.load moved) as
        an epoch's order: a numpy int64 array of dataset indices, at least one. What is not
        is a ValueError naming `source` and the first bad position."""
        numpy = _numpy()
        if hasattr(values, "cpu"):
            values = values.cpu()
        order = numpy.asarray(values)
        if order.size == 0:
            raise ValueError(f"conveyor.DataLoader: {source} gave no index")
        if order.ndim != 1 or order.dtype.kind not in "iu":
            raise ValueError(f"conveyor.DataLoader: {source} is no list of dataset indices "
                             f"({order.dtype} of shape {order.shape})")
        bad = numpy.flatnonzero((order < 0) | (order >= self._length))
        if bad.size:
            raise ValueError(f"conveyor.DataLoader: {source} gave {order[bad[0]]} at position "
                             f"{bad[0]}, past the dataset (len(dataset) is {self._length})")
        return order.astype(numpy.int64)

    def _pinned(self, batch):
        """The batch in page-locked memory when pin_memory=True and CUDA is (a copy, made by
        torch's own pin_memory: a shared slot cannot be pinned), else as it is."""
        if not self._pin:
            return batch
        from torch.utils.data._utils.pin_memory import pin_memory
        return pin_memory(batch)

    def _catch_up(self, epoch):
        """Brings the node to `epoch`: the rest of an epoch left by a break is passed over (as
        torch's DataLoader abandons it); further epochs are skipped by starting the node
        anew there."""
        if self._node_epoch + 1 < epoch:
            self.close()
            self._start_state = None
            self._start(epoch)
        while self._node_epoch < epoch:
            for batch in self._feed.epoch(self._node_epoch):
                batch.release()
            self._node_epoch += 1

    def _pad(self, epoch, sample_id):
        """A batch of one: the node's sample `sample_id` (dataset[_index_of(sample_id)]) drawn
        again here as its worker drew it in `epoch` (python/conveyor_worker.py's seeding); the
        trainer's own random state is kept."""
        import random
        import numpy
        from . import _native, conveyor_worker
        torch = _torch()
        cuda = torch.cuda.is_initialized()  # then seed_everything seeds CUDA's generators too
        kept = (random.getstate(), numpy.random.get_state(), torch.get_rng_state(),
                torch.cuda.get_rng_state_all() if cuda else None)
        try:
            conveyor_worker.seed_everything(_native.python_draw_seed(self.seed, epoch, sample_id))
            sample = self.dataset[self._index_of(sample_id)]
        finally:
            random.setstate(kept[0])
            numpy.random.set_state(kept[1])
            torch.set_rng_state(kept[2])
            if cuda:
                torch.cuda.set_rng_state_all(kept[3])
        collate = self.collate_fn or torch.utils.data.default_collate
        return collate([sample])

    def _next_batch(self, batches):
        """The next batch of `batches`, or None at the epoch's end. When the batches the
        trainer still holds take every slot of the node's ring (list(loader), outputs kept),
        the oldest one's tensors are moved to memory of their own (Tensor.set_: the trainer's
        tensors stay valid) and its slot goes back, until a batch can come."""
        from . import _native
        while True:
            try:
                return next(batches)
            except StopIteration:
                return None
            except _native.Error as exc:
                if "holds all" not in str(exc) or not self._held:
                    raise
                self._detach(self._held.popleft())

    @staticmethod
    def _detach(tensors):
        for ref in tensors:
            tensor = ref()
            if tensor is not None:
                tensor.set_(tensor.clone())

    def _columns(self, batch):
        """Each leaf's values for the whole batch: an array over the shared memory (N first),
        or a list (str, bytes, pickled objects)."""
        import numpy
        out = []
        for field in self._layout["fields"]:
            name, kind = field["name"], field["kind"]
            if kind in (_STR, _BYTES, _PICKLED):
                values = batch.strings(name)
                if kind == _STR:
                    values = [v.decode("utf-8") for v in values]
                elif kind == _PICKLED:
                    values = [pickle.loads(v) for v in values]
                out.append(values)
            else:
                array = batch[name]
                view = _DTYPE_VIEWS.get(field["dtype"])
                out.append(array.view(numpy.dtype(view)) if view else array)
        return out

    def _tensor(self, index, values):
        import torch
        field = self._layout["fields"][index]
        if field["kind"] in (_STR, _BYTES, _PICKLED):
            return values
        with warnings.catch_warnings():  # a read-only batch: the tensors must not be written
            warnings.simplefilter("ignore", UserWarning)
            tensor = torch.from_numpy(values)
        return tensor.view(torch.bfloat16) if field["dtype"] in _DTYPE_VIEWS else tensor

    def _sample_leaf(self, index, values, i):
        """Leaf `index` of sample i as __getitem__ returned it (what a collate_fn is given)."""
        import torch
        kind = self._layout["fields"][index]["kind"]
        if kind in (_STR, _BYTES, _PICKLED):
            return values[i]
        if kind == _TENSOR:
            tensor = torch.from_numpy(values[i].copy())
            return tensor.view(torch.bfloat16) if self._layout["fields"][index]["dtype"] in \
                _DTYPE_VIEWS else tensor
        if kind == _NDARRAY:
            return values[i].copy()
        return {_INT: int, _FLOAT: float, _BOOL: bool}[kind](values[i])

    def _collate(self, batch):
        columns = self._columns(batch)
        structure = self._layout["structure"]
        if self.collate_fn is None:
            leaves = [self._tensor(k, v) for k, v in enumerate(columns)]
            while self._held and all(ref() is None for ref in self._held[0]):
                self._held.popleft()  # collected: nothing of that batch to move any more
            self._held.append([weakref.ref(t) for t in leaves if isinstance(t, _torch().Tensor)])
            return _build(structure, leaves, batched=True)
        samples = []
        for i in range(len(batch)):
            leaves = [self._sample_leaf(k, v, i) for k, v in enumerate(columns)]
            samples.append(_build(structure, leaves, batched=False))
        batch.release()  # every sample was copied out
        return self.collate_fn(samples)


def _honoured_sampler(sampler, dataset, shuffle, seed, rank, world_size, generator):
    """(shuffle, seed, rank, world_size, generator) for a sampler of torch's that Conveyor's
    own order stands for, over `dataset`: a DistributedSampler without drop_last (its shuffle,
    seed, rank and num_replicas; each iteration begins at its epoch, set by its set_epoch,
    unless that epoch is past), a RandomSampler without replacement or num_samples (shuffle;
    its generator seeds the loader unless the loader has one) or a SequentialSampler. None for
    any other sampler (its own order is taken: _ordering_sampler). Arguments that contradict
    it are a ValueError naming them."""
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
    if shuffle:
        raise ValueError("conveyor.DataLoader: sampler option is mutually exclusive with shuffle")
    kind = type(sampler)
    if kind is SequentialSampler and sampler.data_source is dataset:
        return False, seed, rank, world_size, generator
    if kind is RandomSampler and sampler.data_source is dataset and not sampler.replacement \
            and sampler._num_samples is None:
        return True, seed, rank, world_size, generator or sampler.generator
    if kind is DistributedSampler and sampler.dataset is dataset and not sampler.drop_last:
        for name, given, its in (("rank", rank, sampler.rank),
                                 ("world_size", world_size, sampler.num_replicas)):
            if given is not None and given != its:
                raise ValueError(f"conveyor.DataLoader: {name}={given}, its sampler's is {its}")
        return sampler.shuffle, sampler.seed if seed is None else seed, sampler.rank, \
            sampler.num_replicas, generator
    return None


def _policy_of(policy, in_order):
    """The batching policy: `policy` where given, else torch 2.6's in_order (True: batches in
    the order's order, "in_order"; False: as samples are ready, "latency_aware"), else
    "latency_aware". The two contradicting is a ValueError naming both."""
    if in_order is None:
        return "latency_aware" if policy is None else policy
    wanted = "in_order" if in_order else "latency_aware"
    if policy is not None and policy != wanted:
        raise ValueError(f"conveyor.DataLoader: in_order={in_order} and policy={policy!r} "
                         f"contradict each other")
    return wanted


def _unbatched(batch_sampler, batch_size, shuffle, sampler, drop_last):
    """(sampler, batch_size, drop_last) a torch.utils.data.BatchSampler stands for: its
    batches are its sampler's order cut every batch_size, the last one short unless
    drop_last, as Conveyor's batches of that order are. Arguments torch refuses beside a
    batch_sampler are refused as torch refuses them; another batch sampler (batches of sizes of
    its own: bucketing by length) is a TypeError naming it."""
    from torch.utils.data import BatchSampler
    if batch_size != 1 or shuffle or sampler is not None or drop_last:
        raise ValueError("conveyor.DataLoader: batch_sampler option is mutually exclusive with "
                         "batch_size, shuffle, sampler, and drop_last")
    if type(batch_sampler) is not BatchSampler:
        raise TypeError(f"conveyor.DataLoader: batch_sampler {type(batch_sampler).__name__} is "
                        f"not supported (its batches may have sizes of their own, where "
                        f"Conveyor's have batch_size samples): a torch BatchSampler over any "
                        f"sampler is")
    return batch_sampler.sampler, batch_sampler.batch_size, batch_sampler.drop_last


def _ordering_sampler(sampler, rank, world_size):
    """`sampler`, whose own order each epoch takes (any iterable of indices: a
    WeightedRandomSampler, a SubsetRandomSampler, a list, one of the script's own): it orders
    and shares the epoch itself, so `rank` and `world_size`, the loader's sharing, are refused
    with it. What cannot be iterated is a TypeError naming it."""
    name = type(sampler).__name__
    if not hasattr(sampler, "__iter__"):
        raise TypeError(f"conveyor.DataLoader: sampler {name} cannot be iterated (a sampler "
                        f"gives the indices of an epoch)")
    if rank is not None or world_size is not None:
        raise ValueError(f"conveyor.DataLoader: rank and world_size share the epoch's order "
                         f"among ranks; sampler {name} gives its own order, and shares it "
                         f"itself (as a DistributedSampler does)")
    return sampler


def _sampler_rank(sampler):
    """(rank, world_size) of a sampler that shares the epoch itself: its rank and num_replicas
    (a DistributedSampler's), else torch.distributed's when it is initialised, else (0, 1)."""
    rank, world = getattr(sampler, "rank", None), getattr(sampler, "num_replicas", None)
    if isinstance(rank, int) and isinstance(world, int):
        return rank, world
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _sampler_state(sampler):
    """What continues a sampler's sequence of orders after a resume: its state_dict() where it
    has one (torchdata's samplers), else its torch.Generator's state, else None (a sampler
    that draws from torch's global generator, or none)."""
    if hasattr(sampler, "state_dict") and hasattr(sampler, "load_state_dict"):
        return {"state_dict": sampler.state_dict()}
    generator = getattr(sampler, "generator", None)
    if isinstance(generator, _torch().Generator):
        return {"generator": generator.get_state()}
    return None


def _restore_sampler(sampler, saved):
    """Gives `sampler` what _sampler_state took (a tensor torch.load moved comes back)."""
    if not saved:
        return
    if "state_dict" in saved and hasattr(sampler, "load_state_dict"):
        sampler.load_state_dict(saved["state_dict"])
    elif "generator" in saved and isinstance(getattr(sampler, "generator", None),
                                             _torch().Generator):
        sampler.generator.set_state(saved["generator"].cpu())


def _distributed(rank, world_size, length):
    """(rank, world_size): as given, else torch.distributed's when it is initialised, else
    (0, 1). Checked: 0 <= rank < world_size <= length."""
    if rank is None or world_size is None:
        import torch.distributed as dist
        initialised = dist.is_available() and dist.is_initialized()
        if rank is None:
            rank = dist.get_rank() if initialised else 0
        if world_size is None:
            world_size = dist.get_world_size() if initialised else 1
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"conveyor.DataLoader: rank {rank} of world_size {world_size}: "
                         f"needs 0 <= rank < world_size")
    if world_size > length:
        raise ValueError(f"conveyor.DataLoader: world_size {world_size} is more than the "
                         f"dataset's {length} samples: a rank would have none")
    return rank, world_size


def _build(structure, leaves, batched, in_sequence=False):
    """The object `structure` (python/conveyor_worker.py's flatten) describes over `leaves`:
    collated as default_collate collates (batched: a tuple becomes a list; the samples' str,
    bytes or objects of one place are a list, a tuple inside a tuple, list or namedtuple,
    where default_collate transposes them with zip), or one sample as __getitem__ returned
    it."""
    if "f" in structure:
        leaf = leaves[structure["f"]]
        return tuple(leaf) if batched and in_sequence and isinstance(leaf, list) else leaf
    if "dict" in structure:
        return {k: _build(v, leaves, batched) for k, v in structure["dict"].items()}
    items = [_build(v, leaves, batched, in_sequence=True) for v in
             structure.get("items", structure.get("tuple", structure.get("list", [])))]
    if "namedtuple" in structure:
        cls = leaves[structure["namedtuple"]]
        return (cls[0] if batched else cls)(*items)
    if "tuple" in structure:
        return items if batched else tuple(items)
    return items
