"""The toy examples docs/extending.md shows as diffs, read once for the tests that use them (docs_examples.py compiles
each, toy_method.py builds the toy allreduce into a copy of the tree and runs the collectives' grid on it).
toy_diffs(root) -> (examples, appended): examples, the files a diff adds (`--- /dev/null` then `+++ PATH`), as
(path, text); appended, the lines a diff adds to an existing file (the registry's .def lists), by path."""
import os
import re


def toy_diffs(root):
    text = open(os.path.join(root, 'docs', 'extending.md'), encoding='utf-8').read()
    examples, appended = [], {}
    for block in re.findall(r'```diff\n(.*?)```', text, re.S):
        lines = block.split('\n')
        for i, line in enumerate(lines):
            head = line.strip()
            follows = lines[i + 1].strip() if i + 1 < len(lines) else ''
            if head.startswith('--- ') and head != '--- /dev/null' and follows == '+++ ' + head[4:]:
                for follow in lines[i + 2:]:
                    stripped = follow.strip()
                    if stripped.startswith('--- '):
                        break
                    if stripped.startswith('+'):
                        appended.setdefault(head[4:], []).append(stripped[1:])
            if head == '--- /dev/null' and follows.startswith('+++ '):
                body = []
                for follow in lines[i + 2:]:
                    stripped = follow.strip()
                    if stripped.startswith('--- ') or not stripped.startswith('+'):
                        break
                    body.append(follow.lstrip()[1:])
                examples.append((follows[4:], '\n'.join(body) + '\n'))
    return examples, appended
