#!/usr/bin/env python3
"""Runs every govex test suite and sums the results.

Suites are executables or scripts that print TAP on stdout:
  build/tests/unit/unit-*       Check unit tests
  build/tests/fuzz/replay-*     fuzz corpora replayed
  tests/integration/test_*.py   the CLI, real processes
  tests/escape/test_*.py        adversarial snippets against the sandbox
  tests/*/test_*.sh             shell suites

A skip whose reason starts with "feature:NAME" counts as a failure when NAME is listed in
GOVEX_REQUIRE_FEATURES (comma-separated; CI sets it to what its machine has).

The last line is "N passed, N failed, N skipped".  Exit status 1 when anything failed or
nothing passed.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAP_LINE = re.compile(r'^(not ok|ok)\b\s*(\d+)?\s*-?\s*(.*)$')


def discover(build, only):
    suites = []
    for sub, prefix in (('tests/unit', 'unit-'), ('tests/fuzz', 'replay-')):
        d = os.path.join(build, sub)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                p = os.path.join(d, name)
                if name.startswith(prefix) and os.access(p, os.X_OK) and os.path.isfile(p):
                    suites.append(([p], name))
    for sub in sorted(os.listdir(os.path.join(ROOT, 'tests'))):
        d = os.path.join(ROOT, 'tests', sub)
        if not os.path.isdir(d) or sub in ('unit', 'fuzz'):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if name.startswith('test_') and name.endswith('.py'):
                suites.append(([sys.executable, p], sub + '/' + name))
            elif name.startswith('test_') and name.endswith('.sh'):
                suites.append((['bash', p], sub + '/' + name))
    if only:
        suites = [s for s in suites if any(o in s[1] for o in only)]
    return suites


def run_suite(argv, name, env, timeout, required):
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=ROOT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode('utf-8', 'replace')
    passed = failed = skipped = 0
    planned = None
    lines = []
    for line in text.splitlines():
        m = re.match(r'^1\.\.(\d+)', line)
        if m:
            planned = int(m.group(1))
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        ok = m.group(1) == 'ok'
        rest = m.group(3)
        skip = re.search(r'#\s*SKIP\b\s*(.*)$', rest, re.I)
        if ok and skip:
            reason = skip.group(1).strip()
            fm = re.match(r'feature:([\w-]+)', reason)
            if fm and fm.group(1) in required:
                failed += 1
                lines.append('  FAIL (required feature skipped) %s' % line)
            else:
                skipped += 1
                lines.append('  skip %s' % line)
        elif ok:
            passed += 1
        else:
            failed += 1
            lines.append('  FAIL %s' % line)
    counted = passed + failed + skipped
    problem = None
    if timed_out:
        problem = 'timed out after %d s' % timeout
    elif planned is not None and counted != planned:
        problem = 'planned %d tests, saw %d (exit %d)' % (planned, counted, proc.returncode)
    elif counted == 0:
        problem = 'no TAP output (exit %d)' % proc.returncode
    elif proc.returncode < 0:
        problem = 'killed by signal %d' % -proc.returncode
    if problem:
        failed += 1
    elapsed = time.monotonic() - start
    print('%-44s %4d passed %3d failed %3d skipped  %6.1fs%s' % (
        name, passed, failed, skipped, elapsed, ('  [' + problem + ']') if problem else ''))
    for l in lines:
        print(l)
    if failed or os.environ.get('GOVEX_TEST_VERBOSE'):
        # the suite's own output explains its failures
        tail = text.splitlines()[-60:]
        for l in tail:
            if not TAP_LINE.match(l):
                print('    | ' + l)
    sys.stdout.flush()
    return passed, failed, skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--timeout', type=int, default=900)
    ap.add_argument('only', nargs='*', help='run suites whose name contains one of these')
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    env = dict(os.environ)
    env.setdefault('GOVEX', os.path.join(build, 'govex'))
    env.setdefault('GOVEX_BUILD', build)
    env.setdefault('ASAN_OPTIONS', 'detect_leaks=1:abort_on_error=0')
    env.setdefault('UBSAN_OPTIONS', 'print_stacktrace=1:halt_on_error=1')
    required = {f for f in env.get('GOVEX_REQUIRE_FEATURES', '').split(',') if f}
    total = [0, 0, 0]
    suites = discover(build, args.only)
    for argv, name in suites:
        r = run_suite(argv, name, env, args.timeout, required)
        for i in range(3):
            total[i] += r[i]
    print('%d passed, %d failed, %d skipped' % tuple(total))
    return 1 if total[1] or not total[0] else 0


if __name__ == '__main__':
    sys.exit(main())
