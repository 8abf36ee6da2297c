#!/usr/bin/env python3
"""The toy allreduce of docs/extending.md ("star") is one file plus one registry line, and passes the collectives'
grid: the diff's new file and its line in collectives/methods.def go into a copy of the tree, which is configured
and builds only the collectives library and its grid (gradsync_grid_tests, tests/CMakeLists.txt), and the grid's
doctest suite "sweep" runs on the toy alone (GRADSYNC_TEST_METHODS) at P = 1, 3 and 6, with its own option at its
default and given. Nothing else is edited: if the toy needs more, this fails.
Usage: toy_method.py ROOT WORK MPIEXEC [MPIEXEC_FLAG ...] -- [CMAKE_ARG ...]
WORK is a folder of its own (emptied and reused: with ccache a second run rebuilds little). Exit 1 on a failure."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toy_diffs import toy_diffs  # noqa: E402

RANKS = (1, 3, 6)
# The toy's grid runs: its default options, and its own option given (the grid adds the cases its properties ask).
RUNS = ('star', 'star:root={last}')
SKIP_DIRS = {'.git', 'plots', 'data', 'docs', 'examples'}


def copy_tree(root, dst):
    def ignore(folder, names):
        top = os.path.abspath(folder) == os.path.abspath(root)
        return [n for n in names if top and (n in SKIP_DIRS or n.startswith('build'))]
    shutil.copytree(root, dst, ignore=ignore, symlinks=True)


def add_toy(root, src):
    examples, appended = toy_diffs(root)
    toys = [(path, body) for path, body in examples if path.startswith('collectives/')]
    registry = appended.get('collectives/methods.def', [])
    if len(toys) != 1 or len(registry) != 1:
        sys.exit(f'toy_method: docs/extending.md should add one collectives/ file and one methods.def line, '
                 f'found {len(toys)} and {len(registry)}')
    path, body = toys[0]
    open(os.path.join(src, path), 'w').write(body)
    with open(os.path.join(src, 'collectives', 'methods.def'), 'a') as f:
        f.write(registry[0] + '\n')
    print(f'added {path} and "{registry[0]}" to collectives/methods.def')


def run(cmd, **kw):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, **kw).returncode


def build_toy(argv, add, target, *cmake_extra):
    """The toy tests' common start. `argv`: ROOT WORK MPIEXEC [MPIEXEC_FLAG ...] -- [CMAKE_ARG ...]. Copies ROOT into
    WORK/src, lets `add(root, src)` put the toy in, configures WORK/build and builds `target` alone. Returns
    (WORK, MPIEXEC and its flags, the build folder), or None when the configuration or the build failed."""
    cut = argv.index('--') if '--' in argv else len(argv)
    root, work, mpiexec = argv[0], argv[1], argv[2:cut]
    src, build = os.path.join(work, 'src'), os.path.join(work, 'build')
    shutil.rmtree(src, ignore_errors=True)
    copy_tree(root, src)
    add(root, src)
    if run(['cmake', '-S', src, '-B', build, *cmake_extra, *argv[cut + 1:]], stdout=subprocess.DEVNULL) != 0:
        return None
    if run(['cmake', '--build', build, '--target', target, '-j2']) != 0:
        return None
    return work, mpiexec, build


def main():
    built = build_toy(sys.argv[1:], add_toy, 'gradsync_grid_tests', '-DBUILD_TESTING=ON')
    if not built:
        return 1
    _, mpiexec, build = built
    grid = os.path.join(build, 'bin', 'gradsync_grid_tests')
    failed = 0
    for p in RANKS:
        for spec in RUNS:
            env = dict(os.environ, GRADSYNC_TEST_METHODS=spec.format(last=p - 1))
            cmd = [mpiexec[0], '-n', str(p), *mpiexec[1:], grid, '--test-suite=sweep']
            status = run(cmd, env=env)
            print(f'{"ok  " if status == 0 else "FAIL"} the grid for {env["GRADSYNC_TEST_METHODS"]} at P = {p}',
                  flush=True)
            failed += status != 0
    print(f'{len(RANKS) * len(RUNS) - failed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
