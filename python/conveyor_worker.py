"""Conveyor's Python workers: the zygote of one pool, and the workers forked from it, each the
process one preprocessor or straggler actor owns.

The zygote is forked from the trainer by conveyor.DataLoader (fork_zygote: the trainer runs
none of the runtime's threads, which run in its node), as torch's DataLoader forks its workers;
or, where there is no trainer to fork it from, spawned by core/python/worker_zygote.cpp as
`python3 conveyor_worker.py` with its end of a SOCK_SEQPACKET socket as descriptor 3, never
forked from a process that runs the runtime's threads. Each worker is a fork of the zygote,
which runs no thread. The protocol is core/python/worker_protocol.hpp's; this file is its
other half:

  start  (owner -> spawned zygote): a sealed memfd holding two pickles (write_setup's):
         multiprocessing.spawn.get_preparation_data(...) (or None), applied first, as spawn
         does (sys.path, the working directory, the main module as __mp_main__), then
         {"dataset": the Dataset, "worker_init_fn": a callable or None,
         "worker_info": what torch.utils.data.get_worker_info() says (optional),
         "whole_samples": each sample goes as one pickled leaf (optional: a loader's
         collate_fn is given the samples as __getitem__ returned them, of any shape)}
  ready / failed (zygote -> owner): once the dataset is unpickled (its modules imported: every
         worker shares them); or the exception that stopped it.
  fork   (owner -> zygote): a worker id and the worker's end of its socket. The zygote forks;
  forked (zygote -> owner): the worker's pid, a pidfd of it and the read end of a pipe on which
         the zygote writes the worker's wait status once it has reaped it.
  ready / failed (worker -> owner): after worker_init_fn(worker_id) ran, or its exception.
  sample (owner -> worker): epoch, index, seed. The worker seeds `random`, `numpy.random` and
         `torch` from the seed, runs dataset[index], and answers
  done   (worker -> owner): the sample as a structure (JSON) and a table of fields whose bytes
         lie in the worker's own outbox memfd (made once, written again for each answer: its
         owner copies them out before it asks again); or
  raised (worker -> owner): the exception's type, message and the traceback's last frame.
  apply  (owner -> worker): a topology's Python step (core/python/python_transform.hpp): the
         step's number, epoch, index, seed and the fields it reads (a table as done's, their
         bytes in the owner's inbox memfd for this worker, mapped once). The worker calls
         function(fields, rng), `fields` a dict of NumPy arrays (copies: the function may
         write them), `rng` a numpy.random.Generator seeded with the seed, and answers done
         with the fields the step makes, in its order, their bytes in its outbox, or raised.
  stop   (owner -> either): it exits.

A zygote spawned for a topology's Python steps
(`python -c "from conveyor import conveyor_worker; conveyor_worker.main()"`) gets a JSON setup
instead of a pickle: {"steps": [{"where", "function", "reads", "makes"}]}; it imports every
step's function before it says ready.

Both ignore SIGINT (Ctrl-C is the owner's to handle: it stops its workers) and exit by
themselves when their owner is gone (their socket hangs up).
"""

import array
import functools
import gc
import io
import json
import mmap
import os
import pickle
import random
import select
import selectors
import signal
import socket
import struct
import sys
import threading
import traceback

PROTOCOL = 3
MAGIC = b"CVPW"
SOCKET_FD = 3  # a spawned zygote's socket
# Set in a spawned zygote and its workers: conveyor.DataLoader refuses to start there (a
# trainer's main module without `if __name__ == "__main__":` re-runs its training on import).
BOOTSTRAPPING = "CONVEYOR_WORKER_BOOTSTRAPPING"
# The key of a setup that holds no dataset, only why it cannot be pickled (a trainer forked its
# zygote without pickling it): a zygote started from it fails with that reason.
UNPICKLABLE = "unpicklable"
MAX_MESSAGE = 1 << 20

# Message kinds (core/python/worker_protocol.hpp).
START, SAMPLE, STOP, FORK, APPLY = 1, 2, 3, 4, 5
READY, FAILED, DONE, RAISED, FORKED = 1, 2, 3, 4, 5

# Field kinds: what a leaf of the sample was, so that the consumer rebuilds it.
TENSOR, NDARRAY, INT, FLOAT, BOOL, STR, BYTES, PICKLED = range(8)

# Element types on the wire (core/python/worker_protocol.hpp: worker_dtype).
DTYPES = {
    "bool": 0, "uint8": 1, "int8": 2, "int16": 3, "uint16": 4, "int32": 5, "uint32": 6,
    "int64": 7, "uint64": 8, "float16": 9, "bfloat16": 10, "float32": 11, "float64": 12,
}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}

ALIGN = 64

try:
    import numpy
except ImportError:  # a dataset without numpy still runs
    numpy = None


def torch_module():
    """torch, if the dataset's code imported it (a worker never imports it by itself)."""
    return sys.modules.get("torch")


class Leaves:
    """The fields of one sample, in the order the structure names them."""

    def __init__(self):
        self.fields = []  # (kind, dtype name, shape, bytes-like, name)

    def add(self, kind, dtype, shape, data, name):
        self.fields.append((kind, dtype, tuple(int(d) for d in shape), data, name))
        return len(self.fields) - 1


def bytes_of(array):
    """The bytes of a C-contiguous array, without a copy."""
    return memoryview(array.reshape(-1)).cast("B") if array.size else b""


def array_leaf(leaves, kind, array, name):
    # NumPy 1.x's ascontiguousarray makes a 0-d array 1-d: a scalar keeps no dimensions.
    array = numpy.ascontiguousarray(array) if array.ndim else numpy.array(array)
    dtype = array.dtype.name
    if dtype not in DTYPES:
        raise TypeError(f"{name}: arrays of {dtype} cannot be batched")
    return leaves.add(kind, dtype, array.shape, bytes_of(array), name)


def tensor_leaf(leaves, tensor, name):
    torch = torch_module()
    tensor = tensor.detach().cpu().contiguous()
    dtype = str(tensor.dtype).replace("torch.", "")
    if dtype not in DTYPES:
        raise TypeError(f"{name}: tensors of {dtype} cannot be batched")
    if dtype == "bfloat16":  # NumPy has no bfloat16: its bits travel as int16
        data = tensor.view(torch.int16).numpy()
    else:
        data = tensor.numpy()
    return leaves.add(TENSOR, dtype, tensor.shape, bytes_of(data), name)


def scalar_leaf(leaves, value, name):
    if isinstance(value, bool):
        return leaves.add(BOOL, "bool", (), struct.pack("<?", value), name)
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return leaves.add(INT, "int64", (), struct.pack("<q", value), name)
    if isinstance(value, float):
        return leaves.add(FLOAT, "float64", (), struct.pack("<d", value), name)
    return None


def flatten(value, leaves, name):
    """The structure of `value` (JSON-ready), its leaves appended to `leaves`."""
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        return {"f": tensor_leaf(leaves, value, name)}
    if numpy is not None and isinstance(value, numpy.ndarray):
        return {"f": array_leaf(leaves, NDARRAY, value, name)}
    if numpy is not None and isinstance(value, numpy.generic) and value.dtype.name in DTYPES:
        return {"f": array_leaf(leaves, NDARRAY, numpy.asarray(value), name)}
    leaf = scalar_leaf(leaves, value, name)
    if leaf is not None:
        return {"f": leaf}
    if isinstance(value, str):
        return {"f": leaves.add(STR, "uint8", (len(value.encode()),), value.encode(), name)}
    if isinstance(value, (bytes, bytearray)):
        return {"f": leaves.add(BYTES, "uint8", (len(value),), bytes(value), name)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        items = [flatten(v, leaves, f"{name}.{k}") for k, v in zip(value._fields, value)]
        cls = pickle.dumps(type(value))
        return {"namedtuple": leaves.add(PICKLED, "uint8", (len(cls),), cls, name), "items": items}
    if isinstance(value, (tuple, list)):
        items = [flatten(v, leaves, f"{name}.{i}") for i, v in enumerate(value)]
        return {"tuple" if isinstance(value, tuple) else "list": items}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: flatten(v, leaves, f"{name}.{k}") for k, v in value.items()}}
    return whole(value, leaves, name)


def layout(fields):
    """Each field's offset in the region, and the region's size."""
    offsets, at = [], 0
    for field in fields:
        offsets.append(at)
        at += (len(field[3]) + ALIGN - 1) // ALIGN * ALIGN
    return offsets, at


def write_fields(fd, fields, offsets):
    """Every field's bytes at its offset in `fd`, written by the kernel (pwrite), never through
    a mapping: a fresh memfd's pages faulted in one by one cost 15x as much (8 MiB: 62 ms
    against 3.8 ms here)."""
    for field, at in zip(fields, offsets):
        data = field[3]
        while len(data):
            data = data[os.pwrite(fd, data, at + len(field[3]) - len(data)):]


def field_entry(field, offset):
    kind, dtype, shape, data, name = field
    name = name.encode()
    head = struct.pack("<BBBxH", kind, DTYPES[dtype], len(shape), len(name))
    dims = struct.pack(f"<{len(shape)}Q", *shape)
    return head + name + dims + struct.pack("<QQ", offset, len(data))


def done_message(index, structure, fields, offsets, size):
    spec = json.dumps(structure, separators=(",", ":")).encode()
    table = b"".join(field_entry(f, at) for f, at in zip(fields, offsets))
    head = struct.pack("<BxxxQQII", DONE, index, size, len(fields), len(spec))
    return head + spec + table


def text(value, limit=4096):
    data = str(value).encode("utf-8", "replace")[:limit]
    return struct.pack("<I", len(data)) + data


def exception_message(kind, index, exc, where=None):
    """The exception's type, message (after `where`, a step's name, when given) and last frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    message = exc if where is None else f"{where}: {exc}"
    return (struct.pack("<BxxxQ", kind, index) + text(type(exc).__qualname__) + text(message)
            + text(last))


def seed_everything(seed):
    """Seeds `random`, `numpy.random` and, where the dataset's code imported torch, torch's
    generators, as torch.manual_seed does."""
    random.seed(seed)
    if numpy is not None:
        numpy.random.seed(seed & 0xFFFFFFFF)
    torch = torch_module()
    if torch is not None:
        if cpu_only(torch):
            torch.default_generator.manual_seed(seed)
        else:
            torch.manual_seed(seed)


@functools.lru_cache(maxsize=None)
def cpu_only(torch):
    """Whether this torch was built for no device but the CPU: then torch.manual_seed seeds
    only its CPU generator, and still queues a seed for CUDA (and XPU) on the way, formatting
    the stack each time (traceback.format_stack): 60-300 us a sample, where torch's own
    workers seed once. Seeding the CPU generator alone gives the same draws."""
    xpu = getattr(torch, "xpu", None)
    custom = getattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuse1")()
    return not (torch.backends.cuda.is_built() or torch.backends.mps.is_built()
                or (xpu is not None and xpu._is_compiled())
                or custom != "privateuse1")  # a device a plugin registered


class SamplePickler(pickle.Pickler):
    """pickle, with a plain contiguous CPU tensor reduced to torch.from_numpy of its NumPy
    array (its bytes copied once, and unpickled as an array is: a third of torch's own
    reduction's cost, which goes through torch.save). Tensors of a subclass, with
    requires_grad, names, other strides (channels_last, expanded) or a dtype NumPy has not
    (bfloat16) keep torch's reduction. Views of one storage come back as copies."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.torch = torch_module()  # once, not for every object pickled
        self.tensor = self.torch.Tensor if self.torch is not None else None

    def reducer_override(self, obj):
        torch = self.torch
        if type(obj) is not self.tensor or obj.requires_grad:
            return NotImplemented
        try:
            if obj.layout != torch.strided or not obj.is_contiguous() or obj.has_names():
                return NotImplemented
            return torch.from_numpy, (obj.numpy(),)
        except (TypeError, RuntimeError):  # bfloat16, sparse, on a device, conjugate bit set
            return NotImplemented


def whole(value, leaves, name):
    """The structure of `value` carried as one pickled leaf: samples whose shapes or structure
    vary from one to the next (a collate_fn's to batch) lie in one batch as they are."""
    out = io.BytesIO()
    SamplePickler(out).dump(value)
    data = out.getbuffer()
    return {"f": leaves.add(PICKLED, "uint8", (len(data),), data, name)}


def run_sample(sock, dataset, message, whole_samples=False):
    _, epoch, index, seed = struct.unpack("<BxxxxxxxQQQ", message)
    seed_everything(seed)
    try:
        leaves = Leaves()
        structure = (whole if whole_samples else flatten)(dataset[index], leaves, "sample")
        answer = OUTBOX.write(leaves.fields)
    except Exception as exc:  # the sample's failure, the parent's to retry or quarantine
        sock.sendmsg([exception_message(RAISED, index, exc)])
        return
    send_done(sock, index, structure, leaves.fields, answer)


def send_done(sock, index, structure, fields, answer):
    """The done reply: the fields' table, and the outbox where their bytes lie (OUTBOX.write's
    `answer`: offsets, size, descriptor)."""
    offsets, size, fd = answer
    reply = done_message(index, structure, fields, offsets, size)
    if fd is None:
        sock.sendmsg([reply])
    else:
        socket.send_fds(sock, [reply], [fd])


class Inbox:
    """The owner's inbox memfd, mapped once (again when its size changes: it only grows)."""

    def __init__(self):
        self.key, self.map = None, None

    def view(self, fd):
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_size)
        if key != self.key:
            if self.map is not None:
                self.map.close()
            self.map = mmap.mmap(fd, st.st_size, prot=mmap.PROT_READ) if st.st_size else None
            self.key = key
        return self.map


class Outbox:
    """This worker's own memfd for its answers (a sample's, a step's): made once, written by
    the kernel (pwrite) into pages already there, where a memfd made per answer has its pages
    allocated, zeroed and freed each time (a 3x224x224 float32 sample: 272 us against 70 here);
    its owner copies an answer out before it asks again. Grown as needed; cut back to the
    answer's size after one a quarter of its size or less, once past SHRINK_ABOVE, so that a
    rare large sample does not keep its pages in every worker that made one."""

    SHRINK_ABOVE = 8 << 20

    def __init__(self):
        self.fd, self.size = None, 0

    def write(self, fields):
        """Writes `fields` (Leaves.fields): their offsets, the size they take, and the
        descriptor they lie in (None when there are no bytes)."""
        offsets, size = layout(fields)
        if size == 0:
            return offsets, size, None
        if self.fd is None:
            self.fd = os.memfd_create("conveyor-answer", os.MFD_CLOEXEC)
        if size > self.size or (self.size > self.SHRINK_ABOVE and 4 * size <= self.size):
            os.ftruncate(self.fd, size)
            self.size = size
        write_fields(self.fd, fields, offsets)
        return offsets, size, self.fd


INBOX, OUTBOX = Inbox(), Outbox()


def read_fields(message, at, count, fds):
    """The fields of an apply message: {name: array}, each the function's own copy."""
    region = INBOX.view(fds[0]) if fds else None
    fields = {}
    for _ in range(count):
        _kind, dtype, ndim, name_size = struct.unpack_from("<BBBxH", message, at)
        at += 6
        name = message[at:at + name_size].decode()
        at += name_size
        shape = struct.unpack_from(f"<{ndim}Q", message, at)
        at += 8 * ndim
        offset, size = struct.unpack_from("<QQ", message, at)
        at += 16
        dtype = numpy.dtype(DTYPE_NAMES[dtype])
        if size:
            array = numpy.frombuffer(region, dtype, size // dtype.itemsize, offset).copy()
        else:
            array = numpy.zeros(0, dtype)
        fields[name] = array.reshape(shape)
    return fields


def made_leaves(made, makes):
    """The fields a step returned, in the order it declares them."""
    if not isinstance(made, dict):
        raise TypeError(f"returned {type(made).__name__}, not a dict of the fields it makes "
                        f"({', '.join(makes)})")
    for name in made:
        if name not in makes:
            raise KeyError(f"returned field {name!r}, which it does not declare in makes")
    leaves = Leaves()
    for name in makes:
        if name not in made:
            raise KeyError(f"did not return field {name!r}, which it declares in makes")
        structure = flatten(made[name], leaves, name)
        if "f" not in structure or leaves.fields[-1][0] in (STR, BYTES, PICKLED):
            raise TypeError(f"field {name!r} is {type(made[name]).__name__}, not an array")
    return leaves


def run_step(sock, steps, message, fds):
    _, step, epoch, index, seed, count = struct.unpack_from("<BxxxIQQQI", message)
    where, function, makes = steps[step]
    try:
        fields = read_fields(message, 36, count, fds)
        made = function(fields, numpy.random.default_rng(seed))
        leaves = made_leaves(made, makes)
        answer = OUTBOX.write(leaves.fields)
    except Exception as exc:  # the sample's failure, the owner's to retry or quarantine
        sock.sendmsg([exception_message(RAISED, index, exc, where)])
        return
    send_done(sock, index, {"dict": {}}, leaves.fields, answer)


def import_function(where, function):
    """The callable "package.module:attribute" names, or an error naming the step."""
    import importlib
    module_name, _, attribute = function.partition(":")
    try:
        value = importlib.import_module(module_name)
    except Exception as exc:
        raise ImportError(f"{where}: function {function!r}: module {module_name!r} does not "
                          f"import: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise AttributeError(f"{where}: function {function!r}: {module_name!r} has no "
                                 f"attribute {attribute!r}")
        value = getattr(value, part)
    if not callable(value):
        raise TypeError(f"{where}: function {function!r} is a {type(value).__name__}, not "
                        "callable")
    return value


def steps_setup(setup):
    """A topology's Python steps: (where, function, makes) each, every function imported."""
    if numpy is None:
        raise ImportError("a topology's Python steps need numpy, which does not import")
    steps = [(s["where"], import_function(s["where"], s["function"]), list(s["makes"]))
             for s in json.loads(setup)["steps"]]
    return {"steps": steps}


def start(message, fds):
    """The setup the start message's memfd holds, the trainer's main module prepared first."""
    magic, version, size = struct.unpack("<4sIQ", message[4:20])
    if magic != MAGIC or version != PROTOCOL or len(fds) != 1:
        raise RuntimeError(f"a start message this zygote cannot read (protocol {version})")
    with mmap.mmap(fds[0], size, prot=mmap.PROT_READ) as region:
        if region[:1] == b"{":
            return steps_setup(bytes(region))
        preparation = pickle.load(region)  # read from the mapping: no copy of it all
        if preparation:
            import multiprocessing.spawn
            multiprocessing.spawn.prepare(preparation)
        setup = pickle.load(region)
    if UNPICKLABLE in setup:
        raise RuntimeError(setup[UNPICKLABLE])
    return setup


def write_setup(f, setup):
    """Writes what a spawned zygote starts from (start reads it) to the binary file `f`:
    spawn's preparation of this process, then `setup` pickled with protocol 5, which writes a
    NumPy array's or tensor's buffer to `f` as it is, never first into one large bytes object.
    An object that cannot be pickled raises as pickle.dump does, and `f` then holds the
    preparation only."""
    import multiprocessing.spawn
    preparation = multiprocessing.spawn.get_preparation_data("conveyor-worker")
    preparation.pop("authkey", None)  # multiprocessing's own secret: never written out
    pickle.dump(preparation, f, protocol=5)
    start = f.tell()
    try:
        pickle.dump(setup, f, protocol=5)
    except BaseException:
        f.seek(start)
        f.truncate()
        raise


def watch_owner(sock):
    """Ends this process once its owner is gone (its socket hangs up): an owner killed cannot
    stop its workers, and a worker busy with a sample reads no socket."""
    fd = sock.fileno()

    def watch():
        hangup = select.poll()
        hangup.register(fd, 0)  # hang-ups and errors are always reported
        while True:
            for _, events in hangup.poll():
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    os._exit(0)

    threading.Thread(target=watch, daemon=True, name="conveyor-owner-watch").start()


def set_worker_info(torch, setup, worker_id):
    """torch.utils.data.get_worker_info() in this worker says what it says in torch's workers:
    id, num_workers, seed (the loader's seed + id) and the dataset (this worker's copy)."""
    info = setup.get("worker_info")
    if torch is None or info is None:
        return
    from torch.utils.data._utils import worker
    worker._worker_info = worker.WorkerInfo(id=worker_id, num_workers=info["num_workers"],
                                            seed=info["seed"] + worker_id,
                                            dataset=setup["dataset"])


class Receiver:
    """The owner's next message and its descriptor (at most one), into one buffer kept for
    every message: socket.recv_fds allocates MAX_MESSAGE bytes per message, whose mapping and
    unmapping cost more than a small step itself."""

    def __init__(self):
        self.buffer = bytearray(MAX_MESSAGE)
        self.ancillary = socket.CMSG_LEN(array.array("i").itemsize)

    def __call__(self, sock):
        size, ancillary, _, _ = sock.recvmsg_into([self.buffer], self.ancillary)
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        return bytes(self.buffer[:size]), list(fds)


def serve_worker(sock, setup, worker_id):
    """A worker's life: worker_init_fn, then one sample at a time until told to stop."""
    watch_owner(sock)
    torch = torch_module()
    if torch is not None:
        torch.set_num_threads(1)  # as torch's DataLoader's workers
    try:
        set_worker_info(torch, setup, worker_id)
        if setup.get("worker_init_fn") is not None:
            setup["worker_init_fn"](worker_id)
    except BaseException as exc:
        sock.sendmsg([exception_message(FAILED, 0, exc)])
        return
    sock.sendmsg([struct.pack("<B", READY)])
    receive = Receiver()
    while True:
        message, fds = receive(sock)
        try:
            if not message or message[0] == STOP:
                return
            if message[0] == SAMPLE:
                run_sample(sock, setup["dataset"], message, setup.get("whole_samples", False))
            elif message[0] == APPLY:
                run_step(sock, setup["steps"], message, fds)
        finally:
            for fd in fds:
                os.close(fd)


class Zygote:
    """Forks the workers, single-threaded, and reaps them: each one's wait status goes to the
    pipe whose read end its owner holds."""

    def __init__(self, sock, setup):
        self.sock, self.setup = sock, setup
        self.statuses = {}  # pid -> the write end of its status pipe
        self.wakeup = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wakeup[1])
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        self.warned = False

    def serve(self):
        ready = selectors.DefaultSelector()
        ready.register(self.sock, selectors.EVENT_READ)
        ready.register(self.wakeup[0], selectors.EVENT_READ)
        while True:
            for key, _ in ready.select():
                if key.fileobj == self.wakeup[0]:
                    self.reap()
                elif not self.request():
                    return

    def request(self):
        """Answers one request; False once told to stop (or the owner is gone)."""
        message, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 1)
        if message and message[0] == FORK and len(message) == 8 and len(fds) == 1:
            self.fork(struct.unpack("<I", message[4:8])[0], fds[0])
            return True
        for fd in fds:
            os.close(fd)
        return bool(message) and message[0] != STOP

    def reap(self):
        try:
            while os.read(self.wakeup[0], 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            fd = self.statuses.pop(pid, None)
            if fd is not None:
                try:
                    os.write(fd, struct.pack("<i", status))
                except OSError:
                    pass  # its owner stopped waiting for it
                os.close(fd)

    def fork(self, worker_id, fd):
        self.warn_of_threads()
        status = os.pipe2(os.O_CLOEXEC)
        try:
            pid = os.fork()
        except OSError as exc:
            for f in (fd, *status):
                os.close(f)
            self.sock.sendmsg([exception_message(FAILED, 0, exc)])
            return
        if pid == 0:
            self.become_worker(worker_id, fd, status)
        os.close(fd)
        self.statuses[pid] = status[1]
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(self.sock, [struct.pack("<BxxxI", FORKED, pid)], [pidfd, status[0]])
        finally:
            os.close(pidfd)
            os.close(status[0])

    def become_worker(self, worker_id, fd, status):
        """The forked child: drops the zygote's descriptors and serves as worker `worker_id`."""
        code = 0
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for f in (*self.wakeup, *status, *self.statuses.values()):
                os.close(f)
            self.sock.close()
            with socket.socket(fileno=fd) as sock:
                serve_worker(sock, self.setup, worker_id)
        except BaseException:
            code = 1
        finally:
            os._exit(code)

    def warn_of_threads(self):
        threads = len(os.listdir("/proc/self/task"))
        if threads > 1 and not self.warned:
            self.warned = True
            print(f"conveyor: the workers' zygote runs {threads} threads (the dataset's modules "
                  "started them): a worker is forked from it all the same, as torch's "
                  "DataLoader forks its trainer", file=sys.stderr, flush=True)


def serve_zygote(sock, setup):
    """The zygote's life once it holds its setup: it tells its owner it is ready, then forks
    workers until told to stop or its owner is gone."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)  # a trainer's handlers are not a worker's
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what the workers share is never written by a collection
    sock.sendmsg([struct.pack("<B", READY)])
    Zygote(sock, setup).serve()


def fork_zygote(setup):
    """Forks the zygote from this process (a trainer's, which runs none of the runtime's
    threads: they run in its node), as torch's DataLoader forks its workers from it: the
    zygote and its workers share this process's modules, main module and dataset copy-on-write
    and import or re-run nothing. Its pid and the owner's end of its socket (for the node)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for stream in (sys.stdout, sys.stderr):  # or the children write this process's buffers
        if stream is not None:
            stream.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            ours.close()
            serve_zygote(theirs, setup)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    return pid, ours


def main():
    """A zygote spawned by its node (no trainer to fork it from: a node restarting its
    zygote, a C++ trainer's pipeline): its setup comes pickled in the start message, the
    trainer's main module is prepared as spawn does."""
    sock = socket.socket(fileno=SOCKET_FD)
    try:
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
        os.environ[BOOTSTRAPPING] = "1"  # a DataLoader the main module makes now is refused
        try:
            if not message or message[0] != START:
                raise RuntimeError("the first message was not a start message")
            setup = start(message, fds)
        except BaseException as exc:
            sock.sendmsg([exception_message(FAILED, 0, exc)])
            return
        finally:
            del os.environ[BOOTSTRAPPING]
            for fd in fds:
                os.close(fd)
        serve_zygote(sock, setup)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the owner went away
    finally:
        sock.close()


if __name__ == "__main__":
    main()
