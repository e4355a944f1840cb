#!/usr/bin/env python3
"""Start-up overhead of govex over a bare interpreter, measured side by side.

Interleaves, in one run, `govex run --preset P -c 'print(6*7)'` (with the interpreter
pinned to the real executable, as `auto` resolves it), `python3 -I -S -c 'print(6*7)'`
and, with --bwrap, bubblewrap running the same interpreter with comparable isolation
(all namespaces, read-only binds of the interpreter's files, private /tmp, /proc, /dev;
bwrap has no seccomp filter or Landlock here).  Prints the medians and their ratios to
python.  A benchmark, not a test: it never fails on noise.

usage: bench/startup.py [--govex build/govex] [--rounds 40] [--preset trusted|strict]
                        [--bwrap] [--compare OTHER_GOVEX] [--pyenv]

--compare times a second govex binary (an earlier build, say) with the same policy in the
same interleaved run, so that before and after are measured side by side.

--pyenv also times the same run with the interpreter left to `auto` while `python3` on
PATH is a script shim (pyenv's): the cost a user pays from an ordinary pyenv shell,
against the run with the interpreter named directly (the first row).  Start the
benchmark with an interpreter that is not the shim (e.g. /usr/bin/python3): pyenv puts
the real interpreter first on PATH for what the shim runs.
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


def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--govex', default=os.path.join(ROOT, 'build', 'govex'))
    ap.add_argument('--rounds', type=int, default=40)
    ap.add_argument('--preset', default='trusted')
    ap.add_argument('--python', default=None, help='interpreter (default: python3 on PATH, resolved)')
    ap.add_argument('--bwrap', action='store_true', help='also time bubblewrap')
    ap.add_argument('--compare', default=None, help='another govex binary, timed alongside')
    ap.add_argument('--pyenv', action='store_true',
                    help='also time interpreter auto through the python3 shim on PATH')
    args = ap.parse_args()
    py = args.python or subprocess.run(['python3', '-c', 'import sys; print(sys.executable)'],
                                       capture_output=True, text=True, check=True).stdout.strip()
    py = os.path.realpath(py)
    policy = json.loads(subprocess.run([args.govex, 'policy', 'show', args.preset],
                                       capture_output=True, text=True, check=True).stdout)
    policy['python']['interpreter'] = py
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
        json.dump(policy, f)
        pfile = f.name
    code = 'print(6*7)'
    cmds = [('govex run --preset %s' % args.preset, [args.govex, 'run', '--policy', pfile,
                                                       '-c', code]),
            ('python3 -I -S', [py, '-I', '-S', '-c', code])]
    if args.compare:
        cmds.insert(1, ('%s (compared)' % os.path.basename(os.path.dirname(
            os.path.abspath(args.compare))), [args.compare, 'run', '--policy', pfile, '-c', code]))
    if args.pyenv:
        auto = dict(policy, python=dict(policy['python'], interpreter='auto'))
        with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
            json.dump(auto, f)
            afile = f.name
        cmds.insert(1, ('govex run (python3 = PATH shim)',
                        [args.govex, 'run', '--policy', afile, '-c', code]))
        if args.compare:
            cmds.insert(3, ('compared (python3 = PATH shim)',
                            [args.compare, 'run', '--policy', afile, '-c', code]))
    if args.bwrap:
        prefix = subprocess.run([py, '-I', '-S', '-c', 'import sys; print(sys.base_prefix)'],
                                capture_output=True, text=True, check=True).stdout.strip()
        bw = ['bwrap', '--unshare-all', '--die-with-parent', '--new-session',
              '--cap-drop', 'ALL', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib',
              '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin',
              '--ro-bind', prefix, prefix, '--proc', '/proc', '--dev', '/dev',
              '--tmpfs', '/tmp', '--chdir', '/tmp', '--clearenv', py, '-I', '-S', '-c', code]
        cmds.append(('bwrap (comparable isolation)', bw))
    times = {name: [] for name, _ in cmds}
    try:
        for _ in range(3):  # warm caches (including govex's probe caches)
            for _, argv in cmds:
                timed(argv)
        for i in range(args.rounds):
            # rotate the order so no command always runs first
            k = i % len(cmds)
            for name, argv in cmds[k:] + cmds[:k]:
                times[name].append(timed(argv))
    finally:
        os.unlink(pfile)
        if args.pyenv:
            os.unlink(afile)
    base = statistics.median(times['python3 -I -S'])
    print('interpreter: %s' % py)
    print('rounds: %d (interleaved)' % args.rounds)
    for name, _ in cmds:
        m = statistics.median(times[name])
        print('%-34s median %6.2f ms   ratio to python %.3f' % (name, m * 1e3, m / base))
    return 0


if __name__ == '__main__':
    sys.exit(main())
