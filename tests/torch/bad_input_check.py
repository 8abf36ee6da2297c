"""Bad input to the gradsync backend fails on every rank, at once, with one message that names the problem: a type
the method cannot sum, on every rank or on one only (the others' collective must fail too, not wait); an op the
backend cannot do; an operation it does not implement; sizes that differ between ranks. No case may take longer
than a few seconds, and the group must still work afterwards. A tensor off the CPU takes the one-rank path too
(a refusal), but cannot be made here: Debian's torch has no CUDA, and torch's dispatcher itself refuses meta
tensors on the calling rank before any backend sees them.
Usage: mpirun -n 4 python3 bad_input_check.py [--break]   (--break expects a message no error has: must fail)
"""
import sys
import time

import torch
import torch.distributed as dist

import gradsync.torch  # noqa: F401

torch.set_num_threads(1)
dist.init_process_group("gradsync")
rank, size = dist.get_rank(), dist.get_world_size()
bf16_group = dist.new_group(backend="gradsync", pg_options="ring-bf16")
broken = "--break" in sys.argv


def one_rank_float16():
    dist.all_reduce(torch.ones(4, dtype=torch.float16 if rank == size - 1 else torch.float32))


def mismatched_sizes():
    dist.all_reduce(torch.ones(10 if rank == 0 else 11))


def mismatched_gather():
    outs = [torch.empty(3 + (rank == 0)) for _ in range(size)]
    dist.all_gather(outs, torch.ones(3 + (rank == 0)))


CASES = [  # (name, call, text every rank's message must contain)
    ("AVG", lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.AVG), "ReduceOp.AVG is not supported"),
    ("float16 sum", lambda: dist.all_reduce(torch.ones(4, dtype=torch.float16)), "not float16"),
    ("float16 on one rank", one_rank_float16, f"rank {size - 1}: allreduce SUM float16[4] with ring -- refused"),
    ("int64 on ring-bf16", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int64), group=bf16_group),
     "ring-bf16 sums float32 and bfloat16, not int64"),
    ("bitwise float", lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BOR), "bitwise ops take integer"),
    ("mismatched sizes", mismatched_sizes, "ranks called different collectives"),
    ("mismatched all_gather", mismatched_gather, "ranks called different collectives"),
    ("all_to_all", lambda: dist.all_to_all_single(torch.empty(size), torch.ones(size)),
     "does not support alltoall_base"),
    ("send", lambda: dist.send(torch.ones(1), (rank + 1) % size), "does not support send"),
]
outcomes = []
for name, call, text in CASES:
    start = time.perf_counter()
    try:
        call()
        message = None
    except RuntimeError as e:
        message = str(e)
    seconds = time.perf_counter() - start
    want = text + (" (broken on purpose)" if broken and name == "AVG" else "")
    ok = message is not None and want in message and seconds < 20
    outcomes.append((name, ok, message, seconds))
# The group still works after every refusal (no data moved).
t = torch.ones(5)
dist.all_reduce(t)
after_ok = bool((t == size).all())
everyone = [None] * size
dist.all_gather_object(everyone, (outcomes, after_ok))
if rank == 0:
    failed = 0
    for r, (rank_outcomes, rank_after) in enumerate(everyone):
        for name, ok, message, seconds in rank_outcomes:
            if not ok:
                failed += 1
                print(f"rank {r}: {name}: {'no error' if message is None else repr(message)} after {seconds:.2f} s")
        if not rank_after:
            failed += 1
            print(f"rank {r}: the group gave a wrong sum after the refusals")
    for name, ok, message, seconds in outcomes:
        print(f"{name} ({seconds:.3f} s): {message.splitlines()[0] if message else None}")
    print(f"bad_input_check: {size} ranks, {len(CASES)} cases: {failed} wrong", flush=True)
    sys.exit(1 if failed else 0)
