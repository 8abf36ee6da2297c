#!/usr/bin/env python3
"""Floors of gradsync's layered folders: an include between two folders of trainers/ or of collectives/ may only run
down. module_loops.py forbids loops between files; this forbids them between folders, where a loop of files can be
absent while two folders still lean on each other.

- trainers/: every folder stands on a declared floor (FLOORS below), and a file may include one of another folder
  only on a lower floor. A folder that is on no floor is refused (declare it). A family's folder
  (trainers/families/<name>/) is included by no file of trainers/ outside it: outside its folder a family is named
  only by its line of trainers/core/sync_families.def.
- collectives/: its rooms (each subfolder, and each file directly in it) include each other in no loop.

Prints every include that breaks a rule and exits 1 if there is any, 0 if none. Usage: floors.py [ROOT]"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_loops import strongly_connected  # noqa: E402

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '../..'))
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# trainers/'s floors, the ground first: what every family shares; the configuration as data; the mechanisms; the
# families; the loop that runs them; what a run shows; the command line. A folder includes only lower floors'.
FLOORS = [
    ['core'],
    ['config'],
    ['checkpoint', 'overlap'],
    ['gradient_compression'],
    ['families'],
    ['loop'],
    ['report'],
    ['cli'],
]
FLOOR = {folder: n for n, folders in enumerate(FLOORS) for folder in folders}


def sources(top):
    """(path from root, its includes that name a file of the tree) for every C++ source under `top`."""
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(('.cpp', '.hpp', '.def')):
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
                    targets = [t for t in include.findall(f.read()) if os.path.exists(os.path.join(root, t))]
                yield path, targets


def room(top, path):
    """The room of `path` inside `top`: its first folder there, or the file itself (without extension) when it stands
    directly in `top`; None outside `top`."""
    parts = path.split('/')
    if parts[0] != top:
        return None
    return parts[1] if len(parts) > 2 else os.path.splitext(parts[1])[0] + ' (file)'


problems = []

# trainers/: declared floors, and families named only inside their own folders.
for path, targets in sources('trainers'):
    mine = room('trainers', path)
    if mine.endswith(' (file)'):  # train_main.cpp: the executable stands above every floor
        mine_floor = len(FLOORS)
    elif mine not in FLOOR:
        problems.append(f'{path}: trainers/{mine}/ stands on no floor (declare it in tests/structure/floors.py)')
        continue
    else:
        mine_floor = FLOOR[mine]
    my_parts = path.split('/')
    my_family = my_parts[2] if mine == 'families' and len(my_parts) > 3 else None
    for target in targets:
        theirs = room('trainers', target)
        if theirs is None or theirs.endswith(' (file)'):
            continue
        if theirs != mine:
            if theirs not in FLOOR:
                continue  # reported at that folder's own files
            if FLOOR[theirs] >= mine_floor:
                problems.append(f'{path} includes {target}: trainers/{mine}/ (floor {mine_floor + 1}) may include '
                                f'only lower floors, and trainers/{theirs}/ stands on floor {FLOOR[theirs] + 1}')
        t_parts = target.split('/')
        if theirs == 'families' and len(t_parts) > 3 and t_parts[2] != my_family:
            problems.append(f'{path} includes {target}: outside trainers/families/{t_parts[2]}/ that family is '
                            f'named only by its line of trainers/core/sync_families.def')

# collectives/: no loop between its rooms (Tarjan's strongly connected components on the room graph).
edges: dict[str, dict[str, list[str]]] = {}
for path, targets in sources('collectives'):
    mine = room('collectives', path)
    out = edges.setdefault(mine, {})
    for target in targets:
        theirs = room('collectives', target)
        if theirs is not None and theirs != mine:
            out.setdefault(theirs, []).append(f'{path} includes {target}')
            edges.setdefault(theirs, {})

for loop in strongly_connected(edges):
    members = set(loop)
    problems.append('collectives/ rooms in a loop: ' + ' <-> '.join(loop))
    for m in loop:
        for other in sorted(set(edges[m]) & members):
            problems.extend('  ' + why for why in edges[m][other])

for p in problems:
    print(p)
print(f'{len(problems)} floor problem(s): trainers/ on {len(FLOORS)} floors, collectives/ in {len(edges)} rooms')
sys.exit(1 if problems else 0)
