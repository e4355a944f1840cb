#!/usr/bin/env python3
"""The govex test suites' one piece of runner logic; `meson test` is the runner.

Every suite (tests/meson.build registers them: unit, fuzz, integration, escape, call,
worker, mcp, install, valgrind) prints TAP on stdout.  meson runs each through

  harness.py tap -- ARGV...

which passes the TAP through unchanged but for one rule, kept here and nowhere else: a
skip whose reason starts with "feature:NAME" becomes a failure when NAME is listed in
GOVEX_REQUIRE_FEATURES (comma-separated; CI sets it to what its machine has).  Its exit
status is the suite's (128+N when a signal killed it), so meson sees a crash.

  harness.py summary BUILD/meson-logs/testlog.json

prints the cases of the last `meson test` summed: "N passed, N failed, N skipped" (a suite
that timed out, crashed or broke its TAP plan counts one more failure; a suite skipped
whole, one skip).  Exit status 1
when anything failed or nothing passed.  tests/run-all prints this as its last line.

  harness.py registered NAME...

a TAP suite of its own: every tests/*/test_*.py and tests/*/test_*.sh is among the NAMEs
meson registered, so a new suite file cannot be left out of `meson test` unnoticed.
"""
import json
import os
import re
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAP_LINE = re.compile(r'^(not ok|ok)\b\s*(\d+)?\s*-?\s*(.*)$')
SKIP = re.compile(r'#\s*SKIP\b\s*(.*)$', re.I)
FEATURE = re.compile(r'feature:([\w-]+)')


def required_features(env=None):
    env = os.environ if env is None else env
    return {f for f in env.get('GOVEX_REQUIRE_FEATURES', '').split(',') if f}


def filter_line(line, required):
    """LINE, or a failure in its place when it skips for a required feature."""
    plan = re.match(r'^1\.\.0\b.*#\s*SKIP\b\s*(.*)$', line, re.I)
    if plan:
        fm = FEATURE.match(plan.group(1).strip())
        if fm and fm.group(1) in required:
            return ('1..1\nnot ok 1 - whole suite skipped for required feature %s: %s'
                    % (fm.group(1), plan.group(1).strip()))
        return line
    m = TAP_LINE.match(line)
    if not m or m.group(1) != 'ok':
        return line
    skip = SKIP.search(m.group(3))
    if not skip:
        return line
    fm = FEATURE.match(skip.group(1).strip())
    if not fm or fm.group(1) not in required:
        return line
    desc = m.group(3)[:skip.start()].rstrip()
    return 'not ok %s - %s (required feature skipped: %s)' % (
        m.group(2) or '', desc, skip.group(1).strip())


def cmd_tap(argv):
    if argv and argv[0] == '--':
        argv = argv[1:]
    if not argv:
        print('usage: harness.py tap -- ARGV...', file=sys.stderr)
        return 2
    required = required_features()
    # No session of its own: meson kills the test's process group on timeout, and that
    # must reach the suite and every govex it started.  The working directory is meson's
    # (the source root for the script suites, as tests/meson.build says).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    for raw in proc.stdout:
        line = raw.decode('utf-8', 'replace').rstrip('\n')
        sys.stdout.write(filter_line(line, required) + '\n')
        sys.stdout.flush()
    rc = proc.wait()
    return 128 - rc if rc < 0 else rc


def count_tap(text):
    """(passed, failed, skipped) of TAP TEXT, already filtered."""
    passed = failed = skipped = 0
    for line in text.splitlines():
        m = TAP_LINE.match(line)
        if not m:
            continue
        if m.group(1) == 'not ok':
            failed += 1
        elif SKIP.search(m.group(3)):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def cmd_summary(args):
    if len(args) != 1:
        print('usage: harness.py summary TESTLOG.json', file=sys.stderr)
        return 2
    total = [0, 0, 0]
    with open(args[0], encoding='utf-8', errors='replace') as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            p, fl, s = count_tap(t.get('stdout') or '')
            result = t.get('result')
            # A suite that died, timed out or broke its plan: one failure more, as meson
            # says it failed but its TAP may not show why.
            if result in ('TIMEOUT', 'ERROR', 'INTERRUPT') or (result == 'FAIL' and not fl):
                fl += 1
            elif result == 'SKIP' and not (p or fl or s):
                s += 1          # "1..0 # SKIP reason": the whole suite, one skip
            total[0] += p
            total[1] += fl
            total[2] += s
    print('%d passed, %d failed, %d skipped' % tuple(total))
    return 1 if total[1] or not total[0] else 0


def cmd_registered(names):
    names = set(names)
    files = []
    for sub in sorted(os.listdir(os.path.join(ROOT, 'tests'))):
        d = os.path.join(ROOT, 'tests', sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.startswith('test_') and name.endswith(('.py', '.sh')):
                files.append(sub + '/' + name)
    print('1..%d' % len(files))
    for i, f in enumerate(files, 1):
        if f in names:
            print('ok %d - %s is registered with meson test' % (i, f))
        else:
            print('not ok %d - %s is registered with meson test' % (i, f))
            print('# add it to tests/meson.build')
    return 0


def main():
    cmds = {'tap': cmd_tap, 'summary': cmd_summary, 'registered': cmd_registered}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == '__main__':
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
