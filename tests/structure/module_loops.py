#!/usr/bin/env python3
"""Module loops in gradsync's C++ tree: a module is a .cpp with its .hpp (one path without its extension), and a loop
is a set of modules that include each other through any chain. Prints each loop with the includes that close it and
exits 1 if there is any, 0 if none. Usage: module_loops.py [ROOT]"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_loops import strongly_connected  # noqa: E402

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '../..'))
skip = {'build', 'build-mpich', '.git', 'plots'}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

edges: dict[str, set[str]] = {}
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith('build')]
    for name in filenames:
        if not name.endswith(('.cpp', '.hpp')):
            continue
        path = os.path.relpath(os.path.join(dirpath, name), root)
        module = os.path.splitext(path)[0]
        deps = edges.setdefault(module, set())
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            for target in include.findall(f.read()):
                if os.path.exists(os.path.join(root, target)):
                    other = os.path.splitext(target)[0]
                    if other != module:
                        deps.add(other)

loops = strongly_connected(edges)

for loop in loops:
    members = set(loop)
    print('module loop: ' + ' <-> '.join(loop))
    for m in loop:
        for d in sorted(edges[m] & members):
            print(f'  {m} includes {d}')
print(f'{len(loops)} module loop(s) among {len(edges)} modules')
sys.exit(1 if loops else 0)
