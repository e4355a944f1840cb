#!/usr/bin/env python3
"""Start-up overhead of govex over a bare interpreter, measured side by side.

Interleaves, in one run, `govex run --preset trusted -c 'print(6*7)'` (with the
interpreter pinned to the real executable, as `auto` resolves it) and
`python3 -I -S -c 'print(6*7)'`, and prints the median of each and their ratio.
A benchmark, not a test: it never fails on noise.

usage: bench/startup.py [--govex build/govex] [--rounds 40] [--preset trusted]
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
    g = [args.govex, 'run', '--policy', pfile, '-c', code]
    p = [py, '-I', '-S', '-c', code]
    try:
        for _ in range(3):  # warm caches (including govex's interpreter probe cache)
            timed(g)
            timed(p)
        tg, tp = [], []
        for i in range(args.rounds):
            # alternate the order so neither side always runs first
            if i % 2:
                tg.append(timed(g))
                tp.append(timed(p))
            else:
                tp.append(timed(p))
                tg.append(timed(g))
    finally:
        os.unlink(pfile)
    mg, mp = statistics.median(tg), statistics.median(tp)
    print('interpreter: %s' % py)
    print('rounds: %d (interleaved)' % args.rounds)
    print('govex run --preset %s: median %.2f ms' % (args.preset, mg * 1e3))
    print('python3 -I -S:        median %.2f ms' % (mp * 1e3))
    print('ratio (median govex / median python): %.3f' % (mg / mp))
    ratios = sorted(a / b for a, b in zip(tg, tp))
    print('per-round ratio median: %.3f' % statistics.median(ratios))
    return 0


if __name__ == '__main__':
    sys.exit(main())
