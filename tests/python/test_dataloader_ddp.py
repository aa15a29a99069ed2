#!/usr/bin/python3
"""conveyor.DataLoader under PyTorch DDP: 2 CPU ranks (gloo), each a plain process with the
env:// variables set, make their loader with no rank arguments (torch.distributed's are taken)
and train a small model with DistributedDataParallel and no join(): every rank must yield the
same number of batches, or the ranks' all-reduces would wait for each other forever. Each
epoch's shares must be disjoint and cover the epoch; 9 samples in batches of 2 give shares of 5
and 4, so rank 1 ends each epoch with a pad (one of its samples again).

Environment: PYTHONPATH (the built package), CONVEYOR_NODE. Exits 77 where torch or gloo is
missing."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_ddp import free_port, leave, wait  # noqa: E402

SAMPLES, BATCH, EPOCHS, RANKS = 9, 2, 2, 2


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import conveyor
    from loader_datasets import Indexed

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=args.rank, world_size=RANKS)
    model = DDP(torch.nn.Linear(4, 1).double())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen = {}
    with conveyor.DataLoader(Indexed(SAMPLES), batch_size=BATCH, shuffle=True, seed=3,
                             num_workers=1) as loader:
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            seen[epoch] = []
            for batch in loader:
                loss = model(batch["values"]).pow(2).mean()
                opt.zero_grad()
                loss.backward()  # an all-reduce with the other rank
                opt.step()
                seen[epoch].append([int(i) for i in batch["index"]])
        batches = len(loader)
    dist.destroy_process_group()
    with open(args.out, "w") as f:
        json.dump({"rank": args.rank, "seen": seen, "len": batches}, f)
    leave(0)


def check(results):
    failures = []
    for e in range(EPOCHS):
        batches = [r["seen"][str(e)] for r in results]
        if len({len(b) for b in batches}) != 1 or len(batches[0]) != results[0]["len"]:
            failures.append(f"epoch {e}: batches per rank {[len(b) for b in batches]}, "
                            f"len(loader) {[r['len'] for r in results]}")
        own = [[i for b in r for i in b] for r in batches]  # rank 1's pad repeats one of its own
        shares = [set(o) for o in own]
        if shares[0] & shares[1] or shares[0] | shares[1] != set(range(SAMPLES)):
            failures.append(f"epoch {e}: shares {own} overlap or miss samples")
        pad = batches[1][-1]
        if len(pad) != 1 or pad[0] != batches[1][0][0]:
            failures.append(f"epoch {e}: rank 1's last batch {pad} is not its first sample")
    return failures


def parent_main():
    try:
        import torch.distributed as dist
    except ImportError as e:
        print(f"SKIP: {e} (Debian: python3-torch)")
        return 77
    if not dist.is_available() or not dist.is_gloo_available():
        print("SKIP: torch.distributed with gloo is not available")
        return 77
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(RANKS), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="conveyor-loader-ddp.") as work:
        outs = [os.path.join(work, f"rank{r}.json") for r in range(RANKS)]
        ranks = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r),
                                   "--out", outs[r]], env=dict(env, RANK=str(r)))
                 for r in range(RANKS)]
        try:
            rcs = [wait(p, f"rank {r}") for r, p in enumerate(ranks)]
        finally:
            for p in ranks:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=30)
        if rcs != [0] * RANKS:
            print(f"FAIL: rank exit codes {rcs}")
            return 1
        results = []
        for out in outs:
            with open(out) as f:
                results.append(json.load(f))
    failures = check(results)
    if failures:
        print("FAIL: " + "\n".join(failures))
        return 1
    print(f"OK: {RANKS} ranks x {EPOCHS} epochs, {results[0]['len']} batches each, disjoint "
          f"shares covering each epoch")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int)
    parser.add_argument("--out")
    args = parser.parse_args()
    sys.exit(rank_main(args) if args.rank is not None else parent_main())
