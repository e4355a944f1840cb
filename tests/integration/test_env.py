#!/usr/bin/env python3
"""The snippet's environment comes from the policy only."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SECRET_NAME = "GOVEX_TEST_SECRET"
SECRET = "xyz-govex-it-7d1e4c"

# The secret's value is assembled at run time so that it never appears in the
# code text (the check must find it in the environment, not in argv).
CODE = r'''
import json, os
secret = "xyz-govex-" + "it-7d1e4c"
with open("/proc/self/environ", "rb") as f:
    raw = f.read()
print(json.dumps({
    "name_in_environ": "GOVEX_TEST_SECRET" in os.environ,
    "value_in_environ": any(secret in v for v in os.environ.values()),
    "name_in_proc": b"GOVEX_TEST_SECRET=" in raw,
    "value_in_proc": secret.encode() in raw,
    "visible": os.environ.get("GOVEX_IT_VISIBLE"),
}))
'''


def _check(t, args):
    g.need_python()
    r = t.run(args + ["--json", "-c", CODE], extra_env={SECRET_NAME: SECRET})
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    got = json.loads(doc["stdout"])
    g.check(SECRET not in r.out and SECRET not in r.err, "secret value echoed by govex")
    return got


def test_secret_invisible_preset(t):
    got = _check(t, ["run", "--preset", "trusted"])
    g.eq(got, {"name_in_environ": False, "value_in_environ": False, "name_in_proc": False,
               "value_in_proc": False, "visible": None}, "what the snippet saw")


def test_secret_invisible_policy_set_visible(t):
    # Positive control: a value the policy sets is visible, so the probe works.
    path = t.policy(environment={"inherit": False, "set": {"GOVEX_IT_VISIBLE": "yes"}})
    got = _check(t, ["run", "--policy", path])
    g.eq(got, {"name_in_environ": False, "value_in_environ": False, "name_in_proc": False,
               "value_in_proc": False, "visible": "yes"}, "what the snippet saw")


TESTS = [
    ("secret in govex's environment is invisible to the snippet (trusted)",
     test_secret_invisible_preset),
    ("secret invisible, environment.set value visible (policy file)",
     test_secret_invisible_policy_set_visible),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
