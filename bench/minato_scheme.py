"""A transcription of MinatoLoader's scheme (its artifact's Minato/data_loading, as
../shared/notes/python-workers.md describes it), for issue 47's benchmark only:

- `num_workers` producer processes, each with a fixed slice of the indices (the same every
  epoch: no reshuffle), run each sample in a 2-thread pool and wait `timeout` seconds (fixed,
  2 s) for it; a sample that takes longer goes to the slow queue by index, and its thread keeps
  running (its result is thrown away);
- `slow_workers` (3) processes redo each slow sample from scratch;
- the consumer builds full batches only, from the fast queue, taking slow samples only when
  more than `slow_threshold` (5) wait; samples travel pickled through torch.multiprocessing
  queues (tensors in torch's shared memory); a slow sample that comes after its epoch ended is
  dropped (the scheme has no exactly-once).

Processes start with the platform's default (fork on Linux), as MinatoLoader's do.
"""
import collections
import concurrent.futures
import queue

import torch
import torch.multiprocessing as mp

_POLL_S = 0.01  # how often the consumer looks at both queues while it waits


def _producer(dataset, indices, timeout, commands, fast, slow_indices):
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    while True:
        epoch = commands.get()
        if epoch is None:
            return
        for i in indices:
            future = pool.submit(dataset.__getitem__, i)
            try:
                fast.put((epoch, future.result(timeout=timeout)))
            except concurrent.futures.TimeoutError:
                slow_indices.put((epoch, i))  # its thread keeps running; the result is lost
        fast.put((epoch, None))  # this producer's slice of the epoch is done


def _slow_worker(dataset, slow_indices, slow):
    while True:
        item = slow_indices.get()
        if item is None:
            return
        epoch, i = item
        slow.put((epoch, dataset[i]))


class MinatoScheme:
    """for batch in scheme: one epoch of full batches (default_collate), as MinatoLoader's."""

    def __init__(self, dataset, batch_size, num_workers=2, timeout=2.0, slow_workers=3,
                 slow_threshold=5):
        self.batch_size, self.slow_threshold = batch_size, slow_threshold
        self.length = len(dataset)
        self.epoch = 0
        self.fast, self.slow_indices, self.slow = mp.Queue(), mp.Queue(), mp.Queue()
        self.commands = [mp.Queue() for _ in range(num_workers)]
        order = torch.randperm(self.length, generator=torch.Generator().manual_seed(0)).tolist()
        self.processes = [
            mp.Process(target=_producer, daemon=True,
                       args=(dataset, order[k::num_workers], timeout, self.commands[k],
                             self.fast, self.slow_indices))
            for k in range(num_workers)]
        self.processes += [mp.Process(target=_slow_worker, daemon=True,
                                      args=(dataset, self.slow_indices, self.slow))
                           for _ in range(slow_workers)]
        for p in self.processes:
            p.start()

    def __len__(self):
        return self.length // self.batch_size

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        for c in self.commands:
            c.put(epoch)
        return self._batches(epoch)

    def _batches(self, epoch):
        producing = len(self.commands)
        waiting = collections.deque()  # slow samples of this epoch, done
        for _ in range(len(self)):
            batch = []
            while len(batch) < self.batch_size:
                self._drain(self.slow, epoch, waiting)
                if len(waiting) > self.slow_threshold or (producing == 0 and waiting):
                    batch.append(waiting.popleft())
                    continue
                try:
                    got_epoch, sample = self.fast.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                if got_epoch != epoch:
                    continue  # left over from an earlier epoch
                if sample is None:
                    producing -= 1
                else:
                    batch.append(sample)
            yield torch.utils.data.default_collate(batch)

    @staticmethod
    def _drain(q, epoch, into):
        while True:
            try:
                got_epoch, sample = q.get_nowait()
            except queue.Empty:
                return
            if got_epoch == epoch:
                into.append(sample)

    def close(self):
        for c in self.commands:
            c.put(None)
        for _ in range(len(self.processes) - len(self.commands)):
            self.slow_indices.put(None)
        for p in self.processes:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
