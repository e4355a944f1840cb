"""Escape tests against warm runs: a chosen set of this directory's files run again with
GOVEX_WARM=1 (the CLI's runtime forks its runs from warm templates even for one run,
src/cli/session.c), so CI attacks warm runs with the same tests as cold ones; and once
more with GOVEX_WARM_SPARE=1 too, where each run waits for a spare made for it and runs
on it (template_spare.c: every step of the run taken before the request), as a
long-lived server's runs do.

Each file's subtests are reported here as "FILE: NAME" (skips passed through), and a
last check reads GOVEX_WARM_LOG: the runs really were forked ("warm" lines), and every
run that went cold says why and for a reason that is by design (COLD_BY_DESIGN) --
never because a template failed.

The full suite warm: GOVEX_WARM=1 meson test -C build-test --suite escape.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Fast enough for CI and covering what warm runs change: namespaces and processes,
# network and subprocess denials (counted by the run's init), the filesystem and the
# per-run identity files, files in and out, the seccomp allowlist, limits.
FILES = [
    "test_isolation.py",
    "test_process.py",
    "test_network.py",
    "test_filesystem.py",
    "test_redteam_denials.py",
    "test_redteam_identity.py",
    "test_redteam_files.py",
    "test_seccomp_allowlist.py",
    "test_limits.py",
]
# why a run may go cold by design (GOVEX_WARM_LOG "cold WHY"): a policy binding the
# host's / (a host workdir), a test's policy naming the controlled backend, a test's
# interpreter that is not one (the runtime cannot probe it: no template), govex exec
COLD_BY_DESIGN = ("host_workdir", "the policy binds the host's /",
                  "overlaps interpreter files: the policy's runs are refused",
                  "need the restricted backend", "probe failed", "probe killed",
                  "extra_files", "argv")
# the spares' pass: the same files, and the red team's attacks on warm runs
SPARE_FILES = FILES + ["test_redteam_warm.py"]
TIMEOUT = 280

TAP = re.compile(r"^(not ok|ok) \d+ - (.*)$")


def run_files(n, files, env, what):
    for f in files:
        n += 1
        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, f)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=TIMEOUT)
            out = p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") + "\ntimed out"
        bad, seen, lines = [], 0, []
        for line in out.splitlines():
            m = TAP.match(line)
            if m:
                seen += 1
                lines.append("# %s: %s" % (f, line))
                if m.group(1) == "not ok":
                    bad.append(m.group(2))
            elif line.startswith("#"):
                lines.append("# " + line)
        if bad or not seen:
            print("not ok %d - %s %s: %s" % (n, f, what, "; ".join(bad) or "no TAP output"))
            print("\n".join(lines[-60:]))
            if not seen:
                print("\n".join("# " + l for l in out.splitlines()[-30:]))
        else:
            print("ok %d - %s %s (%d subtests)" % (n, f, what, seen))
        sys.stdout.flush()
    return n


def check_log(n, log, want, what):
    n += 1
    try:
        with open(log) as fh:
            entries = fh.read().splitlines()
    except OSError:
        entries = []
    warm = sum(1 for e in entries if e == want)
    cold = [e for e in entries if e.startswith("cold")]
    wrong = [e for e in cold if not any(c in e for c in COLD_BY_DESIGN)]
    if warm == 0 or wrong:
        print("not ok %d - the runs were %s (%r %d, cold %d: %s)"
              % (n, what, want, warm, len(cold), sorted(set(wrong))[:5]))
    else:
        print("ok %d - the runs were %s (%r %d, cold by design %d)"
              % (n, what, want, warm, len(cold)))
    return n


def main():
    print("TAP version 13")
    print("1..%d" % (len(FILES) + len(SPARE_FILES) + 2))
    n = 0
    with tempfile.TemporaryDirectory(prefix="govex-warm-suite-") as tmp:
        log = os.path.join(tmp, "warm.log")
        env = dict(os.environ, GOVEX_WARM="1", GOVEX_WARM_LOG=log)
        env.pop("GOVEX_WARM_SPARE", None)
        n = run_files(n, FILES, env, "warm")
        n = check_log(n, log, "warm", "forked from templates")
        log = os.path.join(tmp, "spare.log")
        env = dict(env, GOVEX_WARM_SPARE="1", GOVEX_WARM_LOG=log)
        n = run_files(n, SPARE_FILES, env, "warm, on spares")
        n = check_log(n, log, "warm spare", "run on spares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
