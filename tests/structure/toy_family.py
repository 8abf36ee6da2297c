#!/usr/bin/env python3
"""The toy sync family of docs/extending.md ("independent") is its folder plus one registry line, with a flag and a
report line of its own: the diff's new file under trainers/families/ and its line in trainers/core/sync_families.def
go into a copy of the tree, which is configured and builds `train` alone; then `train` lists the toy's flag in
--help, names the run with it (--print-run), refuses the flag given to another family, and trains one epoch with it
on a tiny generated IDX data set on 2 ranks, printing the toy's report line. Nothing else is edited: if the toy
needs more, this fails.
Usage: toy_family.py ROOT WORK MPIEXEC [MPIEXEC_FLAG ...] -- [CMAKE_ARG ...]
WORK is a folder of its own (emptied and reused: with ccache a second run rebuilds little). Exit 1 on a failure."""
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toy_diffs import toy_diffs  # noqa: E402
from toy_method import build_toy  # noqa: E402

REGISTRY = 'trainers/core/sync_families.def'


def add_toy(root, src):
    examples, appended = toy_diffs(root)
    toys = [(path, body) for path, body in examples if path.startswith('trainers/families/')]
    registry = appended.get(REGISTRY, [])
    if len(toys) != 1 or len(registry) != 1:
        sys.exit(f'toy_family: docs/extending.md should add one trainers/families/ file and one {REGISTRY} line, '
                 f'found {len(toys)} and {len(registry)}')
    path, body = toys[0]
    os.makedirs(os.path.dirname(os.path.join(src, path)), exist_ok=True)
    open(os.path.join(src, path), 'w').write(body)
    with open(os.path.join(src, REGISTRY), 'a') as f:
        f.write(registry[0] + '\n')
    print(f'added {path} and "{registry[0]}" to {REGISTRY}')


def write_idx(folder, rows_train=64, rows_test=32):
    """MNIST-shaped IDX files (28x28 images, labels 0..9) of a few random examples: enough to train one epoch."""
    rng = random.Random(1)
    os.makedirs(folder, exist_ok=True)
    for prefix, rows in (('train', rows_train), ('t10k', rows_test)):
        with open(os.path.join(folder, f'{prefix}-images-idx3-ubyte'), 'wb') as f:
            f.write(struct.pack('>IIII', 0x803, rows, 28, 28))
            f.write(bytes(rng.randrange(256) for _ in range(rows * 28 * 28)))
        with open(os.path.join(folder, f'{prefix}-labels-idx1-ubyte'), 'wb') as f:
            f.write(struct.pack('>II', 0x801, rows))
            f.write(bytes(rng.randrange(10) for _ in range(rows)))


def output(cmd):
    print('+', ' '.join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def main():
    built = build_toy(sys.argv[1:], add_toy, 'train')
    if not built:
        return 1
    work, mpiexec, build = built
    train = os.path.join(build, 'bin', 'train')
    data = os.path.join(work, 'data')
    write_idx(data)
    failed = 0

    def expect(what, ok, text):
        nonlocal failed
        print(f'{"ok  " if ok else "FAIL"} {what}', flush=True)
        if not ok:
            print(text)
            failed += 1

    _, text = output([train, '--help'])
    expect('--help lists --independent-scale', '--independent-scale' in text, text)
    status, text = output([train, '--sync', 'independent', '--independent-scale', '0.5', '--print-run'])
    expect('--sync independent --independent-scale 0.5 --print-run', status == 0 and 'independent' in text, text)
    status, text = output([train, '--sync', 'ring', '--independent-scale', '0.5'])
    expect('--independent-scale refused with --sync ring', status != 0 and 'only with --sync independent' in text,
           text)
    status, text = output([*mpiexec[:1], '-n', '2', *mpiexec[1:], train, '--sync', 'independent',
                           '--independent-scale', '0.5', '--data', data, '--epochs', '1', '--batch', '8'])
    expect('one epoch of --sync independent on 2 ranks, with its report line',
           status == 0 and 'independent replicas on 2 workers, gradients scaled by 0.5' in text and 'done:' in text,
           text)
    print(f'{4 - failed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
