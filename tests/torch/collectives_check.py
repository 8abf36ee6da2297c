"""Every collective of the gradsync backend against torch's own arithmetic on the same random tensors, for every
method, sizes 0 .. 3 MiB (odd ones among them) and every type the backend takes; subgroups (the even and the odd
ranks); and the asynchronous path: several collectives in flight at once, waited for out of order. Every rank draws every rank's input from the seed, so each
computes the expected result itself. Run under the launcher on any number of ranks; exits 1 naming each wrong case.
Usage: mpirun -n 4 python3 collectives_check.py [--break]   (--break expects a wrong sum: must fail)
"""
import sys

import torch
import torch.distributed as dist

import gradsync.torch as gt

torch.set_num_threads(1)
dist.init_process_group("gradsync")
rank, size = dist.get_rank(), dist.get_world_size()
SIZES = [0, 1, 7, 1000, 65537, 786433]  # the last is 3 MiB of float32
wrong = []


def inputs(seed, n, dtype):
    """Every rank's input of one case, the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return [torch.randn(n, generator=g).to(dtype) for _ in range(size)]
    return [torch.randint(-1000, 1000, (n,), generator=g).to(dtype) for _ in range(size)]


def expect(name, got, want, exact, tol=None):
    if got.shape != want.shape or got.dtype != want.dtype:
        wrong.append(f"{name}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}")
        return
    if exact:
        ok = torch.equal(got, want)
    else:
        tol = tol or (2.0 ** -7 if got.dtype == torch.bfloat16 else 1e-5)
        ok = torch.allclose(got.double(), want.double(), rtol=tol, atol=tol * size * 4)
    if not ok:
        wrong.append(f"{name}: differs (max error {(got.double() - want.double()).abs().max().item()})")


REDUCE = {
    dist.ReduceOp.SUM: lambda xs: torch.stack(xs).sum(0),
    dist.ReduceOp.MIN: lambda xs: torch.stack(xs).min(0).values,
    dist.ReduceOp.MAX: lambda xs: torch.stack(xs).max(0).values,
    dist.ReduceOp.PRODUCT: lambda xs: torch.stack(xs).prod(0),
}
broken = "--break" in sys.argv
seed = 0
# Sums through every method the backend offers.
for method in gt.METHODS:
    group = dist.new_group(backend="gradsync", pg_options=method)
    types = [torch.float32, torch.bfloat16] if method == "ring-bf16" else \
        [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.int64]
    for dtype in types:
        for n in SIZES:
            seed += 1
            xs = inputs(seed, n, dtype)
            t = xs[rank].clone()
            dist.all_reduce(t, group=group)
            want = REDUCE[dist.ReduceOp.SUM](xs).to(dtype)
            if broken and n == 7:
                want = want + 1
            # ring-bf16 rounds every partial sum it sends to bfloat16: within that precision, per rank.
            bf16_wire = method == "ring-bf16" and dtype == torch.float32
            expect(f"all_reduce SUM {method} {dtype} n={n}", t, want, exact=not dtype.is_floating_point,
                   tol=2.0 ** -7 if bf16_wire else None)
    dist.destroy_process_group(group)
# The other ops go through MPI whatever the method.
for op in (dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8, torch.bfloat16):
        for n in (0, 7, 65537):
            seed += 1
            xs = inputs(seed, n, dtype)
            if op == dist.ReduceOp.PRODUCT:  # products of small numbers, so that nothing overflows
                xs = [(x.abs() % 3 + 1).to(dtype) if not dtype.is_floating_point else x.clamp(-1.5, 1.5) for x in xs]
            t = xs[rank].clone()
            dist.all_reduce(t, op=op)
            want = REDUCE[op]([x.double() if dtype == torch.bfloat16 else x for x in xs]).to(dtype)
            expect(f"all_reduce {op} {dtype} n={n}", t, want,
                   exact=op != dist.ReduceOp.PRODUCT or not dtype.is_floating_point)
# Broadcast, the gathers, scatter and reduce, from every root, any type.
for dtype in (torch.float32, torch.float64, torch.int64, torch.uint8, torch.bfloat16, torch.bool):
    for n in (0, 1, 1001, 262147):
        seed += 1
        xs = inputs(seed, n, torch.float64)
        xs = [(x > 0) if dtype == torch.bool else x.to(dtype) for x in xs]
        root = seed % size
        t = xs[rank].clone()
        dist.broadcast(t, root)
        expect(f"broadcast {dtype} n={n} root={root}", t, xs[root], True)
        outs = [torch.empty_like(xs[0]) for _ in range(size)]
        dist.all_gather(outs, xs[rank])
        for r in range(size):
            expect(f"all_gather {dtype} n={n} part {r}", outs[r], xs[r], True)
        flat = torch.empty(size * n, dtype=xs[0].dtype)
        dist.all_gather_into_tensor(flat, xs[rank]) if hasattr(dist, "all_gather_into_tensor") else \
            dist._all_gather_base(flat, xs[rank])
        expect(f"all_gather_into_tensor {dtype} n={n}", flat, torch.cat(xs), True)
        gathered = [torch.empty_like(xs[0]) for _ in range(size)] if rank == root else None
        dist.gather(xs[rank], gathered, dst=root)
        if rank == root:
            for r in range(size):
                expect(f"gather {dtype} n={n} part {r}", gathered[r], xs[r], True)
        got = torch.empty_like(xs[0])
        dist.scatter(got, xs if rank == root else None, src=root)
        expect(f"scatter {dtype} n={n} root={root}", got, xs[rank], True)
        if dtype in (torch.float64, torch.int64):
            t = xs[rank].clone()
            dist.reduce(t, root, op=dist.ReduceOp.SUM)
            if rank == root:
                expect(f"reduce {dtype} n={n} root={root}", t, torch.stack(xs).sum(0), dtype == torch.int64)
# Subgroups (MPI_Comm_create_group over the members only): the even and the odd ranks, each summing its own.
evens = dist.new_group(ranks=list(range(0, size, 2)), backend="gradsync", pg_options="rhd")
odds = dist.new_group(ranks=list(range(1, size, 2)), backend="gradsync") if size > 1 else None
xs = inputs(999, 1001, torch.int64)
t = xs[rank].clone()
dist.all_reduce(t, group=evens if rank % 2 == 0 else odds)
expect(f"all_reduce in the subgroup of rank {rank}", t, torch.stack(xs[rank % 2::2]).sum(0), True)
# Asynchronous: eight allreduces in flight, waited for from the last; their futures carry the results.
xs = [inputs(1000 + i, 100003, torch.float64) for i in range(8)]
ts = [x[rank].clone() for x in xs]
works = [dist.all_reduce(t, async_op=True) for t in ts]
for i in reversed(range(8)):
    works[i].wait()
    expect(f"async all_reduce {i}", works[i].get_future().value()[0], torch.stack(xs[i]).sum(0), False)
objects = [None] * size
dist.all_gather_object(objects, {"rank": rank, "wrong": len(wrong)})
dist.barrier()
for line in wrong[:20]:
    print(f"rank {rank}: {line}", flush=True)
total = sum(o["wrong"] for o in objects)
if rank == 0:
    print(f"collectives_check: {size} ranks, methods {', '.join(gt.METHODS)}: {total} wrong", flush=True)
sys.exit(1 if total else 0)
