#!/usr/bin/env python3
"""clang-tidy findings against a baseline.

  tidy-baseline.py BASELINE < run-clang-tidy output      exit 1 on a finding not in it
  tidy-baseline.py --write BASELINE < output             record today's findings

A finding is "FILE [CHECK]" counted per file, not per line, so edits that move code do
not churn the baseline; a file whose count of a check grows fails.  The baseline holds
what the tree had when the check was added to CI (fixing them is src/ work): lower its
counts as findings are fixed, never raise them.
"""
import collections
import re
import sys

ANSI = re.compile(r'\x1b\[[0-9;]*m')
FINDING = re.compile(r'(?:^|/)(src/[^:\s]+):(\d+):\d+: (?:warning|error): .*\[([\w.,-]+)\]$')


def findings(text):
    seen = set()
    counts = collections.Counter()
    for line in text.splitlines():
        m = FINDING.search(ANSI.sub('', line).strip())
        if m and (m.group(1), m.group(2), m.group(3)) not in seen:
            seen.add((m.group(1), m.group(2), m.group(3)))   # headers repeat per unit
            counts['%s [%s]' % (m.group(1), m.group(3))] += 1
    return counts


def main():
    write = sys.argv[1] == '--write'
    path = sys.argv[-1]
    now = findings(sys.stdin.read())
    if write:
        with open(path, 'w') as f:
            f.write('# clang-tidy findings in src/ accepted for now: COUNT FILE [CHECK]\n'
                    '# (.ci/tidy-baseline.py; lower a count when you fix one)\n')
            for k in sorted(now):
                f.write('%d %s\n' % (now[k], k))
        return 0
    base = collections.Counter()
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith('#'):
                n, k = line.rstrip('\n').split(' ', 1)
                base[k] = int(n)
    new = {k: n for k, n in now.items() if n > base.get(k, 0)}
    for k, n in sorted(new.items()):
        print('lint: clang-tidy: %s: %d finding(s), baseline %d' % (k, n, base.get(k, 0)))
    fixed = sum(max(0, n - now.get(k, 0)) for k, n in base.items())
    print('lint: clang-tidy: %d finding(s) in src/, %d in the baseline, %d new%s' % (
        sum(now.values()), sum(base.values()), sum(n - base.get(k, 0) for k, n in new.items()),
        ('; %d fixed: lower .ci/clang-tidy.baseline' % fixed) if fixed else ''))
    return 1 if new else 0


if __name__ == '__main__':
    sys.exit(main())
