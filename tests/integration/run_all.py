#!/usr/bin/env python3
"""Run every test_*.py here (or those named), echo their TAP, print a summary.

Usage: GOVEX=/path/to/govex python3 tests/integration/run_all.py [test_x.py ...]
Exit status: 0 when every test passed or was skipped, 1 otherwise.
"""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT_TIMEOUT = 600


def main(argv):
    scripts = argv or sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    passed = failed = skipped = 0
    for path in scripts:
        name = os.path.basename(path)
        print("# %s" % name, flush=True)
        try:
            p = subprocess.run([sys.executable, path], stdout=subprocess.PIPE,
                               timeout=SCRIPT_TIMEOUT, start_new_session=True)
            out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode("utf-8", "replace"), "timeout"
        sys.stdout.write(out)
        plan, seen = None, 0
        for line in out.splitlines():
            m = re.match(r"^1\.\.(\d+)", line)
            if m:
                plan = int(m.group(1))
            elif line.startswith("ok "):
                seen += 1
                if re.search(r"#\s*SKIP", line, re.I):
                    skipped += 1
                else:
                    passed += 1
            elif line.startswith("not ok "):
                seen += 1
                failed += 1
        if rc != 0 or plan is None or seen != plan:
            print("not ok - %s: script exit %r, planned %r, ran %d" % (name, rc, plan, seen))
            failed += max(1, (plan or 0) - seen)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
