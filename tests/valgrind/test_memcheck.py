#!/usr/bin/env python3
"""The library under valgrind memcheck: no invalid access, no definite leak.

Runs the plain (unsanitized) govex binary, GOVEX_PLAIN, which links libgovex's objects,
through success, refusal, timeout, output-flood, invalid-policy and plan paths.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOVEX = os.environ.get('GOVEX_PLAIN') or os.path.join(ROOT, 'build', 'govex')

# (name, arguments, expected exit status)
CASES = [
    ('run success', ['run', '--preset', 'trusted', '--json', '-c', 'print(6*7)'], 0),
    ('run refused (strict on controlled)', ['run', '--backend', 'controlled', '-c', '1'], 125),
    ('run timeout', ['run', '--preset', 'trusted', '--timeout-ms', '200', '-c', 'while 1: pass'],
     124),
    ('run output flood', ['run', '--preset', 'trusted', '--json', '-c',
                          'import sys\nfor _ in range(64): sys.stdout.write("x" * 65536)'], 0),
    ('run invalid utf-8 output', ['run', '--preset', 'trusted', '--json', '-c',
                                  'import sys; sys.stdout.buffer.write(b"\\xff\\xfeok")'], 0),
    ('run exit code', ['run', '--preset', 'trusted', '-c', 'raise SystemExit(3)'], 3),
    ('plan', ['plan', '--preset', 'trusted', '-c', 'print(1)'], 0),
    ('policy show', ['policy', 'show', 'strict'], 0),
    ('invalid policy', ['policy', 'check', '@BAD@'], 2),
    ('backends', ['backends', '--json'], 0),
]


def main():
    vg = shutil.which('valgrind')
    print('1..%d' % len(CASES))
    tmp = tempfile.mkdtemp()
    bad = os.path.join(tmp, 'bad.json')
    with open(bad, 'w') as f:
        f.write('{"version": "govex.policy/v1", "limits": {"wall_ms": 0}}')
    try:
        for i, (name, args, want) in enumerate(CASES, 1):
            if not vg:
                print('ok %d - %s # SKIP valgrind is not installed' % (i, name))
                continue
            if not os.path.exists(GOVEX):
                print('not ok %d - %s # no binary at %s' % (i, name, GOVEX))
                continue
            args = [bad if a == '@BAD@' else a for a in args]
            argv = [vg, '--quiet', '--error-exitcode=99', '--leak-check=full',
                    '--errors-for-leak-kinds=definite', '--show-leak-kinds=definite',
                    '--child-silent-after-fork=yes', GOVEX] + args
            try:
                # a cache of its own: under valgrind (which has no open_tree) the sandbox
                # probes as unavailable, and that report is nobody else's business
                env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, 'cache'))
                p = subprocess.run(argv, capture_output=True, timeout=120, cwd=tmp, env=env)
            except subprocess.TimeoutExpired:
                print('not ok %d - %s # timed out' % (i, name))
                continue
            if p.returncode == 99:
                print('not ok %d - %s' % (i, name))
                for line in p.stderr.decode('utf-8', 'replace').splitlines()[:80]:
                    print('# ' + line)
            elif p.returncode != want:
                print('not ok %d - %s # exit %d, expected %d' % (i, name, p.returncode, want))
                for line in p.stderr.decode('utf-8', 'replace').splitlines()[:40]:
                    print('# ' + line)
            else:
                print('ok %d - %s (exit %d)' % (i, name, p.returncode))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
