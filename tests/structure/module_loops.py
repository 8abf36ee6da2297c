#!/usr/bin/env python3
"""Module loops in gradsync's C++ tree: a module is a .cpp with its .hpp (one path without its extension), and a loop
is a set of modules that include each other through any chain. Prints each loop with the includes that close it and
exits 1 if there is any, 0 if none. Usage: module_loops.py [ROOT]"""
import os
import re
import sys

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

# Tarjan's strongly connected components, iteratively (the tree is deep enough to matter for recursion limits).
index: dict[str, int] = {}
low: dict[str, int] = {}
on_stack: set[str] = set()
stack: list[str] = []
loops: list[list[str]] = []
counter = 0
for start in sorted(edges):
    if start in index:
        continue
    work = [(start, iter(sorted(edges.get(start, ()))))]
    index[start] = low[start] = counter
    counter += 1
    stack.append(start)
    on_stack.add(start)
    while work:
        node, children = work[-1]
        advanced = False
        for child in children:
            if child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
                advanced = True
                break
            if child in on_stack:
                low[node] = min(low[node], index[child])
        if advanced:
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

for loop in loops:
    members = set(loop)
    print('module loop: ' + ' <-> '.join(loop))
    for m in loop:
        for d in sorted(edges[m] & members):
            print(f'  {m} includes {d}')
print(f'{len(loops)} module loop(s) among {len(edges)} modules')
sys.exit(1 if loops else 0)
