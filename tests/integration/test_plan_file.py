#!/usr/bin/env python3
"""run --plan PLAN FILE runs exactly what was planned, or nothing."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SRC = "open(%r, 'w').write('ran')\nprint('ran')\n"


def _setup(t):
    g.need_python()
    marker = t.path("ran.marker")
    src = t.write("prog.py", SRC % marker)
    pol = t.policy("pol.json")
    r = t.run(["plan", "--policy", pol, src])
    r.expect_rc(0)
    plan = t.write("plan.json", r.stdout)
    return marker, src, pol, plan, r.stdout


def test_run_plan(t):
    marker, src, pol, plan, plan_bytes = _setup(t)
    g.check(not os.path.exists(marker), "govex plan ran the code")
    r = t.run(["run", "--policy", pol, "--json", "--plan", plan, src])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "ran\n", "stdout")
    g.eq(doc["plan_digest"], g.sha256_digest(plan_bytes), "plan_digest vs the plan file")
    g.check(os.path.exists(marker), "planned code did not run")


def test_source_changed(t):
    marker, src, pol, plan, _ = _setup(t)
    with open(src, "rb") as f:
        data = f.read()
    i = data.index(b"print('ran')") + len(b"print('r")
    data = data[:i] + b"A" + data[i + 1:]          # 'ran' -> 'rAn': one byte differs
    with open(src, "wb") as f:
        f.write(data)
    r = t.run(["run", "--policy", pol, "--json", "--plan", plan, src])
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "source_mismatch", "status")
    g.eq(doc["stdout"], "", "stdout")
    g.check(not os.path.exists(marker), "the changed source ran")


def test_source_one_byte_appended(t):
    marker, src, pol, plan, _ = _setup(t)
    with open(src, "ab") as f:
        f.write(b"\n")
    r = t.run(["run", "--policy", pol, "--json", "--plan", plan, src])
    r.expect_rc(g.EXIT_REFUSED)
    g.eq(r.result()["status"], "source_mismatch", "status")
    g.check(not os.path.exists(marker), "the changed source ran")


def test_policy_changed(t):
    marker, src, pol, plan, _ = _setup(t)
    t.policy("pol.json", limits={"wall_ms": 4000})
    r = t.run(["run", "--policy", pol, "--json", "--plan", plan, src])
    r.expect_rc(g.EXIT_REFUSED)
    g.eq(r.result()["status"], "policy_refused", "status")
    g.check(not os.path.exists(marker), "the snippet ran under a changed policy")


def test_plan_tampered(t):
    marker, src, pol, plan, plan_bytes = _setup(t)
    t.write("plan.json", plan_bytes.replace(b"govex.plan/v1", b"govex.plan/v9", 1))
    r = t.run(["run", "--policy", pol, "--json", "--plan", plan, src])
    r.expect_rc(g.EXIT_REFUSED)
    g.check(not os.path.exists(marker), "a tampered plan ran")


def test_plan_misspelt_field(t):
    """A plan with a misspelt field is refused, naming the field it is nearest to."""
    marker, src, pol, plan, plan_bytes = _setup(t)
    doc = json.loads(plan_bytes)
    doc["netwrok"] = doc.pop("network")
    t.write("plan.json", json.dumps(doc))
    r = t.run(["run", "--policy", pol, "--plan", plan, src])
    r.expect_rc(g.EXIT_REFUSED)
    want = 'plan: netwrok: unknown field "netwrok" (did you mean "network"?)'
    g.check(want in r.err, "stderr does not say %r: %r" % (want, r.err))
    g.check(not os.path.exists(marker), "a misspelt plan ran")


TESTS = [
    ("run --plan PLAN FILE runs the planned source", test_run_plan),
    ("source changed by one byte: source_mismatch, exit 125, nothing runs", test_source_changed),
    ("source with one byte appended: source_mismatch, nothing runs",
     test_source_one_byte_appended),
    ("policy changed after planning: policy_refused, nothing runs", test_policy_changed),
    ("plan with a wrong version string is refused", test_plan_tampered),
    ("plan with a misspelt field: refused, did you mean the nearest", test_plan_misspelt_field),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
