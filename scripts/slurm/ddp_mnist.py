#!/usr/bin/env python3
"""PyTorch DistributedDataParallel on MNIST: one process per rank, softmax regression (or an MLP) trained with SGD.

Where each process stands comes from torch.distributed's env:// variables (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), which torchrun sets, and scripts/slurm/torch_env.sh sets from Slurm's under srun. --backend gloo is
PyTorch's own; --backend gradsync imports gradsync.torch, which registers gradsync's allreduce as a backend.

Every rank prints one line with its host and a SHA-256 of its final parameters (DDP keeps the replicas equal, so the
lines must agree); rank 0 evaluates on the test set, prints a 'ddp:' summary line and, with --csv, appends a row:
backend,world,epochs,steps,batch,lr,seed,train_loss,test_accuracy,wall_s
Usage: ddp_mnist.py [--backend gloo|gradsync] [--data DIR] [--epochs N] [--steps N] [--batch N] [--lr X]
                    [--model softmax|mlp] [--seed N] [--csv FILE]
"""
import argparse
import gzip
import hashlib
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def read_idx(folder: Path, name: str) -> np.ndarray:
    """One IDX file of MNIST, raw or gzipped: uint8 images (n, 784) or labels (n,)."""
    path = folder / name
    if not path.exists() and (folder / (name + ".gz")).exists():
        path = folder / (name + ".gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    return array.reshape(shape[0], -1) if dims == 3 else array


def load(folder: Path, split: str):
    images = read_idx(folder, f"{split}-images-idx3-ubyte")
    labels = read_idx(folder, f"{split}-labels-idx1-ubyte")
    return torch.from_numpy(images.astype(np.float32) / 255.0), torch.from_numpy(labels.astype(np.int64))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="gloo", choices=["gloo", "gradsync"])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "data" / "mnist"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="steps per epoch (0: the whole shard)")
    parser.add_argument("--batch", type=int, default=32, help="batch per rank")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--model", default="softmax", choices=["softmax", "mlp"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--csv")
    args = parser.parse_args()

    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            print(f"ddp_mnist.py: {name} is not set (run under torchrun, or srun scripts/slurm/torch_env.sh ...)",
                  file=sys.stderr)
            return 2
    if args.backend == "gradsync":
        import gradsync.torch  # noqa: F401  (registers the "gradsync" backend)
    torch.set_num_threads(1)  # one core per rank, as train's ranks
    dist.init_process_group(args.backend, init_method="env://", timeout=__import__("datetime").timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()

    train_x, train_y = load(Path(args.data), "train")
    torch.manual_seed(args.seed)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = nn.Linear(784, 10) if args.model == "softmax" else nn.Sequential(
        nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    start = time.perf_counter()
    steps_done, loss_sum = 0, 0.0
    for epoch in range(args.epochs):
        # One permutation per epoch, the same on every rank; rank r takes every world-th image of it.
        order = torch.from_numpy(np.random.RandomState(args.seed + epoch).permutation(len(train_x)))[rank::world]
        steps = len(order) // args.batch
        if args.steps:
            steps = min(steps, args.steps)
        loss_sum, steps_done = 0.0, 0
        for step in range(steps):
            idx = order[step * args.batch:(step + 1) * args.batch]
            optimizer.zero_grad()
            loss = loss_fn(ddp(train_x[idx]), train_y[idx])
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
            loss_sum += loss.item()
            steps_done += 1
    wall = time.perf_counter() - start

    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
    # One write per line: print() writes the text and its newline apart when Python runs unbuffered
    # (PYTHONUNBUFFERED), and mpiexec.hydra then joins another rank's line to this one.
    sys.stdout.write(f"ddp rank {rank}/{world} on {socket.gethostname()}: parameters sha256 {digest}\n")
    sys.stdout.flush()
    dist.barrier()
    if rank == 0:
        test_x, test_y = load(Path(args.data), "t10k")
        with torch.no_grad():
            accuracy = (model(test_x).argmax(dim=1) == test_y).float().mean().item()
        train_loss = loss_sum / max(steps_done, 1)
        print(f"ddp: backend {args.backend}, {world} rank(s), {args.epochs} epoch(s) of {steps_done} step(s), "
              f"train loss {train_loss:.4f}, test accuracy {accuracy:.4f}, {wall:.2f}s", flush=True)
        if args.csv:
            new = not Path(args.csv).exists()
            with open(args.csv, "a") as f:
                if new:
                    f.write("backend,world,epochs,steps,batch,lr,seed,train_loss,test_accuracy,wall_s\n")
                f.write(f"{args.backend},{world},{args.epochs},{steps_done},{args.batch},{args.lr},{args.seed},"
                        f"{train_loss:.6f},{accuracy:.6f},{wall:.3f}\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
