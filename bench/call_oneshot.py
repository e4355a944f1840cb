#!/usr/bin/env python3
"""One-shot `govex call` against the raw python one-liner, measured side by side.

Interleaves, in one run, `govex call --policy P examples/mod.py:add --args '{"a":1,"b":2}'`
(P: preset PRESET with the interpreter pinned to PYTHON; a private, warmed
XDG_CACHE_HOME per govex binary) and `PYTHON -I -S -c 'import mod; print(...)'`, and,
with --compare, a second govex binary (an earlier build) in the same rounds.  Prints the
medians and their ratios to python.  A benchmark, not a test: it never fails on noise.

usage: bench/call_oneshot.py [--govex build/govex] [--compare OTHER] [--rounds 20]
                             [--preset strict] [--python PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv, env):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=env, cwd=ROOT)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--govex', default=os.path.join(ROOT, 'build', 'govex'))
    ap.add_argument('--compare', default=None)
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--preset', default='strict')
    ap.add_argument('--python', default=os.path.realpath(sys.executable))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='govex-bench-call-')
    policy = json.loads(subprocess.run([args.govex, 'policy', 'show', args.preset],
                                       capture_output=True, check=True).stdout)
    policy['python']['interpreter'] = args.python
    pfile = os.path.join(tmp, 'policy.json')
    with open(pfile, 'w') as f:
        json.dump(policy, f)
    target = ['examples/mod.py:add', '--args', '{"a":1,"b":2}']
    cmds = []
    for label, g in (('govex call', args.govex), ('govex call (compare)', args.compare)):
        if not g:
            continue
        xdg = os.path.join(tmp, 'xdg-%d' % len(cmds))
        os.mkdir(xdg, 0o700)
        cmds.append(('%s %s' % (label, os.path.abspath(g)),
                     [g, 'call', '--policy', pfile] + target,
                     dict(os.environ, XDG_CACHE_HOME=xdg)))
    code = ('import sys,json; sys.path.insert(0,"examples"); import mod; '
            'print(json.dumps(mod.add(1,2)))')
    cmds.append(('python -I -S', [args.python, '-I', '-S', '-c', code], dict(os.environ)))
    for _, argv, env in cmds:  # warm: caches, page cache
        for _ in range(3):
            timed(argv, env)
    times = {label: [] for label, _, _ in cmds}
    for i in range(args.rounds):
        order = cmds[i % len(cmds):] + cmds[:i % len(cmds)]
        for label, argv, env in order:
            times[label].append(timed(argv, env))
    py = statistics.median(times['python -I -S'])
    print('interpreter: %s, preset %s, %d rounds, interleaved' % (args.python, args.preset,
                                                                  args.rounds))
    for label, _, _ in cmds:
        m = statistics.median(times[label])
        print('%-70s median %7.2f ms  %5.2fx python' % (label, m * 1e3, m / py))


if __name__ == '__main__':
    main()
