#!/usr/bin/env python3
"""--help works for govex and every subcommand; unknown input is refused."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SUBCOMMANDS = ["run", "plan", "policy", "backends"]


def _help_test(sub):
    def fn(t):
        r = t.run([sub, "--help"])
        r.expect_rc(0)
        g.check(sub.encode() in r.stdout, "`govex %s --help` stdout does not mention %r: %r"
                % (sub, sub, r.stdout[:300]))
    return fn


def test_top_help(t):
    r = t.run(["--help"])
    r.expect_rc(0)
    for sub in SUBCOMMANDS:
        g.check(sub.encode() in r.stdout, "`govex --help` does not mention %r" % sub)


def test_unknown_subcommand(t):
    r = t.run(["frobnicate"])
    g.check(r.returncode not in (0, None) and not r.hard_timeout,
            "unknown subcommand exit status %r" % r.returncode)
    g.check(r.stderr, "unknown subcommand: nothing on stderr")


def test_unknown_option(t):
    r = t.run(["run", "--frobnicate", "-c", "pass"])
    r.expect_rc(g.EXIT_REFUSED)
    g.check(b"frobnicate" in r.stderr, "stderr does not name the option: %r" % r.stderr)


TESTS = [("govex --help lists the subcommands", test_top_help)] + [
    ("govex %s --help exits 0 and mentions %s" % (s, s), _help_test(s)) for s in SUBCOMMANDS
] + [
    ("unknown subcommand fails with a message", test_unknown_subcommand),
    ("run with an unknown option exits 125 naming it", test_unknown_option),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
