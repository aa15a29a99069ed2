#!/usr/bin/python3
"""PyTorch DDP training fed by one conveyor-node: 2 CPU ranks (gloo) attach to the node as
ranks 0 and 1, train a small CNN on the batches (torch.from_numpy over the shared memory), and
must see disjoint samples whose union is each epoch, with a loss that goes down.

Environment: PYTHONPATH (the built module), CONVEYOR_NODE, CONVEYOR_PACK, CONVEYOR_TOPOLOGY.
Exits 77 (skipped) where torch or numpy is missing. Ranks are plain processes with the env://
variables set (Debian's torchrun crashes on Python 3.11).
"""
import argparse
import json
import os
import socket as socketlib
import subprocess
import sys
import tempfile

SAMPLES = 64
BATCH = 8
EPOCHS = 6
RANKS = 2
WAIT_S = 240


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import conveyor

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=args.rank, world_size=RANKS)
    feed = conveyor.attach(args.socket, rank=args.rank, job=0, timeout=60, next_timeout=120)
    info = feed.info()
    classes = max(10, args.classes)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(info["channels"], 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Linear(128, classes))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    ids = {}
    losses = {}
    for e in range(info["start_epoch"], feed.epochs):
        ids[e] = []
        losses[e] = []
        with ddp.join():  # the ranks' batch counts may differ by one
            for b in feed.epoch(e):
                x = torch.from_numpy(b.images)
                assert x.data_ptr() == b.images.ctypes.data, "torch.from_numpy copied"
                y = torch.from_numpy(b.labels).long()
                assert int(y.max()) < classes
                loss = F.cross_entropy(ddp(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses[e].append(float(loss))
                ids[e].extend(int(i) for i in b.sample_ids)
                del x
                b.release()
    # Every rank ends with the same parameters.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(RANKS)]
    dist.all_gather(gathered, flat)
    same = all(torch.equal(gathered[0], g) for g in gathered)
    feed.close()
    dist.destroy_process_group()
    with open(args.out, "w") as f:
        json.dump({"rank": args.rank, "ids": ids, "losses": losses, "same_params": same}, f)
    leave(0)


def leave(code):
    """Ends a rank at once, its results written. Neither the interpreter's teardown nor even the
    return from rank_main may run: with Debian's torch 1.13 freeing the DDP model deadlocks now
    and then (seen here under load, about one run in ten; gdb: the main thread, holding the GIL,
    destroys DDP's reducer, whose ProcessGroupGloo joins its worker thread, which waits for the
    GIL to free a tensor's Python object)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def free_port():
    with socketlib.socket(socketlib.AF_INET, socketlib.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(proc, what):
    try:
        return proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
        raise SystemExit(f"FAIL: {what} did not finish within {WAIT_S} s")


def parent_main():
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
        import torch.distributed as dist
    except ImportError as e:
        print(f"SKIP: {e} (Debian: python3-torch python3-numpy)")
        return 77
    if not dist.is_available() or not dist.is_gloo_available():
        print("SKIP: torch.distributed with gloo is not available")
        return 77
    node_bin = os.environ["CONVEYOR_NODE"]
    pack_bin = os.environ["CONVEYOR_PACK"]
    with open(os.environ["CONVEYOR_TOPOLOGY"]) as f:
        topology = f.read()
    assert "size = 224" in topology, "the topology's crop size moved: update this test"
    topology = topology.replace("size = 224", "size = 32")

    with tempfile.TemporaryDirectory(prefix="conveyor-ddp.") as work:
        small = os.path.join(work, "small.toml")
        with open(small, "w") as f:
            f.write(topology)
        shards = os.path.join(work, "shards")
        subprocess.run([pack_bin, "--synthetic", str(SAMPLES), "--images",
                        os.path.join(work, "images"), "--out", shards],
                       check=True, stdout=subprocess.DEVNULL, timeout=WAIT_S)
        with open(os.path.join(shards, "manifest.txt")) as f:
            classes = sum(1 for line in f if line.startswith("class "))
        sock = os.path.join(work, "n.sock")
        node_out = open(os.path.join(work, "node.json"), "w+")
        node_err = open(os.path.join(work, "node.err"), "w+")
        node = subprocess.Popen(
            [node_bin, "--topology", small, "--set", f"dataset.path={shards}",
             "--set", f"serve.socket={sock}", "--set", f"gpus={RANKS}",
             "--set", f"pipeline.batch_size={BATCH}", "--set", f"trainer.epochs={EPOCHS}",
             "--set", "batching.policy=in_order", "--set", "monitor.interval_ms=10000"],
            stdout=node_out, stderr=node_err)
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   WORLD_SIZE=str(RANKS), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        ranks = []
        outs = []
        try:
            for r in range(RANKS):
                out = os.path.join(work, f"rank{r}.json")
                outs.append(out)
                ranks.append(subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), "--rank", str(r), "--socket", sock,
                     "--out", out, "--classes", str(classes)],
                    env=dict(env, RANK=str(r), LOCAL_RANK=str(r))))
            rcs = [wait(p, f"rank {r}") for r, p in enumerate(ranks)]
            node_rc = wait(node, "the node")
        finally:
            for p in ranks + [node]:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=30)
        node_out.seek(0)
        node_err.seek(0)
        node_log = node_out.read() + node_err.read()
        node_out.close()
        node_err.close()

        failures = []
        if rcs != [0] * RANKS:
            failures.append(f"rank exit codes {rcs}")
        if node_rc != 0:
            failures.append(f"node exit code {node_rc}:\n{node_log}")
        if failures:
            print("FAIL: " + "\n".join(failures))
            return 1
        results = []
        for out in outs:
            with open(out) as f:
                results.append(json.load(f))

    for e in range(EPOCHS):
        sets = [set(r["ids"][str(e)]) for r in results]
        counts = [len(r["ids"][str(e)]) for r in results]
        if sum(counts) != SAMPLES or sets[0] & sets[1] or (sets[0] | sets[1]) != set(range(SAMPLES)):
            failures.append(f"epoch {e}: ranks got {counts} samples, overlap "
                            f"{sorted(sets[0] & sets[1])}, missing "
                            f"{sorted(set(range(SAMPLES)) - sets[0] - sets[1])}")
    if not all(r["same_params"] for r in results):
        failures.append("the ranks' parameters differ after training (DDP did not synchronise)")
    mean = lambda xs: sum(xs) / len(xs)
    first = mean([x for r in results for x in r["losses"]["0"]])
    last = mean([x for r in results for x in r["losses"][str(EPOCHS - 1)]])
    print(f"mean loss: epoch 0 {first:.4f}, epoch {EPOCHS - 1} {last:.4f}")
    for r in results:
        print(f"rank {r['rank']} losses: " + " | ".join(
            " ".join(f"{x:.3f}" for x in r["losses"][str(e)]) for e in range(EPOCHS)))
    if not last < first:
        failures.append(f"the loss did not go down: epoch 0 {first:.4f}, "
                        f"epoch {EPOCHS - 1} {last:.4f}")
    if failures:
        print("FAIL: " + "\n".join(failures))
        return 1
    print(f"OK: {RANKS} ranks x {EPOCHS} epochs, disjoint samples covering each epoch, "
          f"loss {first:.4f} -> {last:.4f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int)
    parser.add_argument("--socket")
    parser.add_argument("--out")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()
    sys.exit(rank_main(args) if args.rank is not None else parent_main())
