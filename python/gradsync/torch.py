"""The torch.distributed backend "gradsync" (docs/pytorch.md).

Importing this module, on every rank of an MPI job (``mpirun -n 4 python3 train.py``):

1. starts MPI with MPI_THREAD_SERIALIZED (unless something else started it) and finalizes it at exit, after
   freeing every gradsync process group;
2. sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from MPI_COMM_WORLD, and MASTER_ADDR, MASTER_PORT
   (rank 0's address, a free port there) for torch's store, each only where the environment does not set it;
3. registers the backend, so that ``dist.init_process_group("gradsync")`` works with nothing else set.

The allreduce method is ``pg_options`` of init_process_group or new_group (a method name), else
$GRADSYNC_METHOD, else "ring": one of ``METHODS``. Collectives return at once and run on one progress thread
per process; the group's timeout arms gradsync's watchdog, which ends the job naming the collective that waited
too long.
"""
import atexit
import os
import socket

import torch.distributed as dist

from gradsync import _C

METHODS = tuple(_C.methods())
COMPRESSORS = tuple(_C.compressors())
DEFAULT_METHOD = "ring"
__version__ = _C.__version__


def _rank0_address(one_node):
    """MASTER_ADDR as rank 0 picks it: loopback when every rank is on this node, else its host's address."""
    if one_node:
        return "127.0.0.1"
    name = socket.gethostname()
    for family, _, _, _, address in socket.getaddrinfo(name, None, socket.AF_INET):
        if not address[0].startswith("127."):
            return address[0]
    raise RuntimeError(f"gradsync: {name} resolves only to loopback addresses; set MASTER_ADDR to rank 0's address")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _environment_from_mpi():
    rank, size, local_rank, local_size = _C.world()
    for name, value in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", local_rank),
                        ("LOCAL_WORLD_SIZE", local_size)):
        os.environ.setdefault(name, str(value))
    # Every rank takes part in the broadcast whatever its environment says, so that none waits for another.
    offer = ""
    if rank == 0:
        addr = os.environ.get("MASTER_ADDR") or _rank0_address(local_size == size)
        offer = f"{addr} {os.environ.get('MASTER_PORT') or _free_port()}"
    addr, port = _C.broadcast_text(offer, 0).split()
    os.environ.setdefault("MASTER_ADDR", addr)
    os.environ.setdefault("MASTER_PORT", port)


def _create(options, pg_options):
    method = pg_options if isinstance(pg_options, str) else getattr(pg_options, "method", None)
    method = method or os.environ.get("GRADSYNC_METHOD") or DEFAULT_METHOD
    return _C.ProcessGroupGradsync(options.group_rank, options.group_size,
                                   [int(r) for r in options.global_ranks_in_group], method,
                                   options.timeout.total_seconds())


_C.init_mpi()
atexit.register(_C.finalize_mpi)
_environment_from_mpi()
if "GRADSYNC" not in dist.Backend._plugins:
    dist.Backend.register_backend("gradsync", _create, extended_api=True)
