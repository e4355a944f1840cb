#!/usr/bin/env python3
"""strict is refused where no backend can enforce its denials, and says which."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def _expect_missing_controls(r, must_name):
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "policy_refused", "status")
    g.eq(doc["termination"], "refused", "termination")
    g.eq(doc["exit_code"], None, "exit_code")
    g.eq(doc["stdout"], "", "stdout")
    d = g.diag(doc, "missing_controls")
    controls = d.get("controls")
    g.check(isinstance(controls, list) and all(isinstance(c, str) for c in controls),
            "missing_controls diagnostic has no controls array: %r" % d)
    for c in must_name:
        g.check(c in controls, "missing_controls does not name %r: %r" % (c, controls))
    g.check(isinstance(d.get("message"), str) and d["message"],
            "diagnostic has no message: %r" % d)
    return doc


def _marker_code(t):
    return "open(%r, 'w').write('ran'); print(6*7)" % t.path("ran.marker")


def test_strict_default(t):
    """--preset strict (and no preset at all) runs on restricted, else is refused."""
    g.need_python()
    for args in (["--preset", "strict"], []):
        r = t.run(["run"] + args + ["--json", "-c", "print(6*7)"])
        if g.backend_available("restricted"):
            r.expect_rc(0)
            doc = r.result()
            g.eq(doc["status"], "success", "status")
            g.eq(doc["stdout"], "42\n", "stdout")
            g.eq(doc["backend"]["name"], "restricted", "backend.name")
            for c in ("network_deny", "subprocess_deny"):
                g.check(c in doc["backend"]["controls"],
                        "restricted run does not report %r enforced" % c)
        else:
            _expect_missing_controls(r, ["network_deny"])


def test_strict_on_controlled_refused(t):
    g.need_python()
    code = _marker_code(t)
    r = t.run(["run", "--backend", "controlled", "--preset", "strict", "--json", "-c", code])
    _expect_missing_controls(r, ["network_deny", "subprocess_deny"])
    g.check(not os.path.exists(t.path("ran.marker")), "the refused snippet ran")


def test_default_policy_on_controlled_refused(t):
    g.need_python()
    code = _marker_code(t)
    r = t.run(["run", "--backend", "controlled", "--json", "-c", code])
    _expect_missing_controls(r, ["network_deny", "subprocess_deny"])
    g.check(not os.path.exists(t.path("ran.marker")), "the refused snippet ran")


def test_strict_refused_plain(t):
    g.need_python()
    r = t.run(["run", "--backend", "controlled", "--preset", "strict", "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    g.eq(r.stdout, b"", "stdout")
    g.check(b"network_deny" in r.stderr, "stderr does not name network_deny: %r" % r.stderr)


TESTS = [
    ("strict runs on restricted when available, else policy_refused naming network_deny",
     test_strict_default),
    ("--backend controlled --preset strict: policy_refused, exit 125, missing_controls",
     test_strict_on_controlled_refused),
    ("no policy given = strict: refused on --backend controlled",
     test_default_policy_on_controlled_refused),
    ("strict on controlled without --json: exit 125, stderr names the control",
     test_strict_refused_plain),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
