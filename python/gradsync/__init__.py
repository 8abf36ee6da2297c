"""gradsync: allreduce methods, gradient compressors and a cost model over MPI, from Python.

``import gradsync.torch`` registers the torch.distributed backend ``"gradsync"`` (docs/pytorch.md);
``gradsync.hooks`` holds the DDP communication hook that runs gradsync's compressors on a bucket.
This module imports nothing itself, so ``import gradsync`` never starts MPI.
"""
