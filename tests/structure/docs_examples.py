#!/usr/bin/env python3
"""The toy examples of docs/extending.md cannot rot: every file a diff there adds (`--- /dev/null` then `+++ PATH`) is
compiled against today's headers (-fsyntax-only, C++20), so a renamed field or header fails this test.
Usage: docs_examples.py ROOT COMPILER [-I DIR ...] [-D NAME=VALUE ...]. Exit 1 naming the example that fails."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toy_diffs import toy_diffs  # noqa: E402

root, compiler, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
examples, appended = toy_diffs(root)
if not examples:
    sys.exit('docs_examples: no example files found in docs/extending.md')
failed = 0
with tempfile.TemporaryDirectory() as tmp:
    # The diffs' added lines, in copies of their files under a root searched before the tree's own.
    shadow = os.path.join(tmp, 'shadow')
    for path, added in appended.items():
        os.makedirs(os.path.dirname(os.path.join(shadow, path)), exist_ok=True)
        original = open(os.path.join(root, path), encoding='utf-8').read()
        open(os.path.join(shadow, path), 'w').write(original + '\n'.join(added) + '\n')
    for path, body in examples:
        source = os.path.join(tmp, os.path.basename(path))
        open(source, 'w').write(body)
        cmd = [compiler, '-std=c++20', '-fsyntax-only', '-I', shadow, '-I', root, *flags, source]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            failed += 1
            print(f'FAIL {path} (docs/extending.md): it no longer compiles:\n{result.stderr[:3000]}')
        else:
            print(f'ok   {path} (docs/extending.md) compiles')
print(f'{len(examples) - failed} passed, {failed} failed')
sys.exit(1 if failed else 0)
