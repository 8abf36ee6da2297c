"""DDP training under mpirun with the gradsync backend or gloo: MNIST on an MLP or a small CNN, or synthetic data on
an MLP with ResNet-18's gradient size (11.64 million parameters; ResNet-18 has 11.69). One line per epoch (loss, test accuracy, seconds,
mean step time, whether every rank holds the same parameter bits), then one line "RESULT {json}" on rank 0 for
scripts. Used by tests/torch/ddp_check.py and bench/torch/bench_ddp.sh.

  mpirun -n 2 python3 bench/torch/ddp_train.py --backend gradsync --method ring --model mlp --epochs 3
  mpirun -n 2 python3 bench/torch/ddp_train.py --backend gradsync --compress powersgd:4
  mpirun -n 2 python3 bench/torch/ddp_train.py --backend gloo --compress torch-powersgd:4   (torch's own hook)
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import gradsync.torch  # registers the backend; sets RANK, MASTER_ADDR, ... from MPI for gloo too
from gradsync.hooks import CompressionState, compression_hook

RESNET18_PARAMETERS = 11_689_512


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="gradsync", choices=["gradsync", "gloo"])
    p.add_argument("--method", default=None, help="gradsync's allreduce method (default $GRADSYNC_METHOD or ring)")
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "resnet18-size"])
    p.add_argument("--compress", default="none",
                   help="none, powersgd:R, topk:F, sign (gradsync hook) or torch-powersgd:R (torch's hook)")
    p.add_argument("--no-error-feedback", action="store_true")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train-subset", type=int, default=0, help="use the first N training images (0: all)")
    p.add_argument("--test-subset", type=int, default=0)
    p.add_argument("--steps", type=int, default=0, help="resnet18-size: steps per epoch (synthetic data)")
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../data/mnist"))
    p.add_argument("--target-accuracy", type=float, default=0.97)
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--threads", type=int, default=1, help="torch's intra-op threads per rank")
    return p.parse_args()


def read_idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def mnist(data, train_subset, test_subset):
    def load(images, labels, n):
        x = torch.from_numpy(read_idx(os.path.join(data, images)).copy()).float().div_(255.0)
        y = torch.from_numpy(read_idx(os.path.join(data, labels)).copy()).long()
        return (x[:n], y[:n]) if n else (x, y)
    return (load("train-images-idx3-ubyte", "train-labels-idx1-ubyte", train_subset),
            load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", test_subset))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x.view(-1, 1, 28, 28))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def model_for(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "cnn":
        return Cnn()
    # 3072 -> 3000 -> 805 -> 10: 11.64 M parameters, ResNet-18's 11.69 M within half a percent.
    return nn.Sequential(nn.Linear(3072, 3000), nn.ReLU(), nn.Linear(3000, 805), nn.ReLU(), nn.Linear(805, 10))


def parameter_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    if a.method:
        os.environ["GRADSYNC_METHOD"] = a.method
    dist.init_process_group(a.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    model = model_for(a.model)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    if a.compress.startswith("torch-powersgd"):
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
        rank_r = int(a.compress.split(":")[1]) if ":" in a.compress else 4
        ddp.register_comm_hook(ps.PowerSGDState(process_group=None, matrix_approximation_rank=rank_r,
                                                start_powerSGD_iter=2, use_error_feedback=not a.no_error_feedback,
                                                warm_start=True, random_seed=a.seed), ps.powerSGD_hook)
    elif a.compress != "none":
        name, _, param = a.compress.partition(":")
        ddp.register_comm_hook(CompressionState(name, float(param or 0), not a.no_error_feedback, seed=a.seed),
                               compression_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9)
    if a.model == "resnet18-size":
        g = torch.Generator().manual_seed(a.seed)
        train_x, train_y = torch.randn(2048, 3072, generator=g), torch.randint(0, 10, (2048,), generator=g)
        test = None
    else:
        (train_x, train_y), test = mnist(a.data, a.train_subset, a.test_subset)
    global_batch = a.batch * size
    steps = a.steps if a.model == "resnet18-size" else len(train_x) // global_batch
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"ddp_train: {a.backend}{' ' + os.environ.get('GRADSYNC_METHOD', 'ring') if a.backend == 'gradsync' else ''}"
              f", {a.model} ({params} parameters), compress {a.compress}, {size} ranks, {steps} steps of "
              f"{global_batch} an epoch", flush=True)
    epochs, reached, elapsed, identical = [], None, 0.0, True
    for epoch in range(a.epochs):
        order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(a.seed * 1000 + epoch))
        ddp.train()
        step_times, loss_sum = [], 0.0
        dist.barrier()
        start = time.perf_counter()
        for s in range(steps):
            t0 = time.perf_counter()
            idx = order[(s * global_batch + rank * a.batch) % len(train_x):][:a.batch]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            step_times.append(time.perf_counter() - t0)
        dist.barrier()
        seconds = time.perf_counter() - start
        elapsed += seconds
        accuracy = None
        if test is not None:
            ddp.eval()
            with torch.no_grad():
                accuracy = (model(test[0]).argmax(1) == test[1]).float().mean().item()
        digests = [None] * size
        dist.all_gather_object(digests, parameter_digest(model))
        same = len(set(digests)) == 1
        identical = identical and same
        if accuracy is not None and reached is None and accuracy >= a.target_accuracy:
            reached = elapsed
        steady = step_times[len(step_times) // 10:] or step_times
        row = {"epoch": epoch + 1, "loss": loss_sum / max(steps, 1), "accuracy": accuracy, "seconds": seconds,
               "step_ms": 1e3 * sum(steady) / len(steady), "identical": same}
        epochs.append(row)
        if rank == 0:
            acc = f"{100 * accuracy:.2f} %" if accuracy is not None else "-"
            print(f"epoch {epoch + 1}: loss {row['loss']:.4f}, accuracy {acc}, {seconds:.2f} s, step "
                  f"{row['step_ms']:.2f} ms, parameters {'identical' if same else 'DIFFER'} across ranks", flush=True)
    if rank == 0:
        print("RESULT " + json.dumps({"backend": a.backend, "method": os.environ.get("GRADSYNC_METHOD", "ring")
                                      if a.backend == "gradsync" else "", "model": a.model, "compress": a.compress,
                                      "ranks": size, "epochs": epochs, "identical": identical,
                                      "seconds_to_target": reached, "target": a.target_accuracy}), flush=True)
    return 0 if identical else 1


def finish(code):
    """Ends the process without the interpreter's teardown. torch 1.13's ProcessGroupGloo destructor, run there (DDP's
    reducer holds the group), joins a gloo thread that waits for the GIL the destructor's thread holds: the rank
    hangs and its peers wait for it in MPI_Finalize. So: finalize MPI (collective), then leave."""
    sys.stdout.flush()
    sys.stderr.flush()
    gradsync.torch._C.finalize_mpi()
    os._exit(code)


if __name__ == "__main__":
    finish(main())
