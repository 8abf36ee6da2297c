"""A DDP communication hook that sums each bucket through one of gradsync's compressors (PowerSGD, top-k, sign)
with error feedback, on the backend's progress thread (docs/pytorch.md). For a process group of the "gradsync"
backend only; compare it with torch's own PowerSGD hook on gloo
(torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook).

    from gradsync.hooks import CompressionState, compression_hook
    ddp.register_comm_hook(CompressionState("powersgd", 4), compression_hook)
"""
import torch.distributed as dist


class CompressionState:
    """What compression_hook runs: `compressor` (gradsync.torch.COMPRESSORS) with `param` (PowerSGD's rank R,
    top-k's kept fraction F; sign takes none), error feedback on or off, on `process_group` (None: the default
    group). `seed` draws PowerSGD's starting Q and must be the same on every rank."""

    def __init__(self, compressor="powersgd", param=4, error_feedback=True, process_group=None, seed=1):
        self.compressor = compressor
        self.param = float(param)
        self.error_feedback = bool(error_feedback)
        self.process_group = process_group
        self.seed = int(seed)


def compression_hook(state, bucket):
    """DDP's hook signature: returns a Future of the bucket's buffer, averaged over the group's ranks."""
    group = state.process_group or dist.distributed_c10d._get_default_group()
    buffer = bucket.buffer()
    base, size = buffer.data_ptr(), buffer.element_size()
    grads = bucket.gradients()
    offsets = [(g.data_ptr() - base) // size for g in grads]
    shapes = [list(g.shape) for g in grads]
    work = group._compressed_allreduce(bucket.index(), buffer, shapes, offsets, state.compressor, state.param,
                                       state.error_feedback, state.seed)
    return work.get_future().then(lambda fut: fut.value()[0])
