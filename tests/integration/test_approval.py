#!/usr/bin/env python3
"""--approver: exit 0 approves, anything else denies, none configured denies."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def _setup(t):
    g.need_python()
    path = t.policy(network="allow", approval=["network"])
    marker = t.path("ran.marker")
    code = "open(%r, 'w').write('ran'); print(6*7)" % marker
    return path, marker, code


def _refused(t, r, marker, code_name):
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "policy_refused", "status")
    g.eq(doc["termination"], "refused", "termination")
    g.diag(doc, code_name)
    g.check(not os.path.exists(marker), "the snippet ran without approval")


def test_no_approver(t):
    path, marker, code = _setup(t)
    r = t.run(["run", "--policy", path, "--json", "-c", code])
    _refused(t, r, marker, "approval_required")


def test_approver_true(t):
    path, marker, code = _setup(t)
    r = t.run(["run", "--policy", path, "--json", "--approver", "true", "-c", code])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "42\n", "stdout")
    g.check(os.path.exists(marker), "approved snippet did not run")


def test_approver_false(t):
    path, marker, code = _setup(t)
    r = t.run(["run", "--policy", path, "--json", "--approver", "false", "-c", code])
    _refused(t, r, marker, "approval_denied")


def test_approver_exit_3_denies(t):
    path, marker, code = _setup(t)
    r = t.run(["run", "--policy", path, "--json", "--approver", "exit 3", "-c", code])
    _refused(t, r, marker, "approval_denied")


def test_approver_sees_plan(t):
    path, marker, code = _setup(t)
    seen = t.path("seen.plan")
    r = t.run(["run", "--policy", path, "--json", "--approver", "cat > '%s'" % seen,
               "-c", code])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    with open(seen, "rb") as f:
        data = f.read()
    try:
        plan = json.loads(data.decode("utf-8"))
    except ValueError as e:
        raise g.Failure("approver's stdin is not a JSON plan (%s): %r" % (e, data[:300]))
    g.eq(plan.get("version"), "govex.plan/v1", "plan.version on the approver's stdin")
    g.eq(g.sha256_digest(data), doc["plan_digest"],
         "digest of the approver's plan bytes vs result plan_digest")


def test_no_approval_needed_without_approval_list(t):
    g.need_python()
    path = t.policy(network="allow", approval=[])
    r = t.run(["run", "--policy", path, "--json", "--approver", "false", "-c", "print(1)"])
    r.expect_rc(0)
    g.eq(r.result()["status"], "success", "status")


TESTS = [
    ("approval [network], no approver: policy_refused, approval_required", test_no_approver),
    ("approval [network], --approver true: runs", test_approver_true),
    ("approval [network], --approver false: policy_refused, approval_denied",
     test_approver_false),
    ("approver exiting 3 denies", test_approver_exit_3_denies),
    ("approver receives the canonical plan on stdin (digest = plan_digest)",
     test_approver_sees_plan),
    ("empty approval list: approver not consulted", test_no_approval_needed_without_approval_list),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
