#!/usr/bin/env python3
"""Plans and policies have one canonical byte form and a stable digest."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

ENV_VALUE = "PLANENVVALUE_3a9c1f"


def _check_canonical(data, what):
    g.check(data.endswith(b"\n") and not data.endswith(b"\n\n"),
            "%s does not end in exactly one newline" % what)
    try:
        obj = json.loads(data.decode("utf-8"))
    except ValueError as e:
        raise g.Failure("%s is not JSON: %s" % (what, e))
    g.eq(data, g.canonical_bytes(obj), "%s bytes vs their canonical form" % what)
    g.check(not _has_float(obj), "%s contains a float" % what)
    return obj


def _has_float(v):
    if isinstance(v, float):
        return True
    if isinstance(v, dict):
        return any(_has_float(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_float(x) for x in v)
    return False


def test_plan_canonical_and_stable(t):
    g.need_python()
    path = t.policy(environment={"inherit": False, "set": {"GOVEX_IT_PLAN_ENV": ENV_VALUE}})
    args = ["plan", "--policy", path, "-c", "print(6*7)"]
    r1 = t.run(args)
    r1.expect_rc(0)
    plan = _check_canonical(r1.stdout, "plan")
    g.eq(plan.get("version"), "govex.plan/v1", "plan.version")
    r2 = t.run(args)
    r2.expect_rc(0)
    g.eq(r2.stdout, r1.stdout, "second plan's bytes")
    g.check(ENV_VALUE.encode() not in r1.stdout, "the plan contains an environment value")
    g.check(b"GOVEX_IT_PLAN_ENV" in r1.stdout, "the plan does not name the environment")
    # The run executes that same plan.
    r = t.run(["run", "--policy", path, "--json", "-c", "print(6*7)"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["plan_digest"], g.sha256_digest(r1.stdout), "run's plan_digest vs sha256(plan)")


def test_plan_runs_nothing(t):
    g.need_python()
    marker = t.path("ran.marker")
    r = t.run(["plan", "--preset", "trusted", "-c", "open(%r, 'w').write('x')" % marker])
    r.expect_rc(0)
    g.check(not os.path.exists(marker), "govex plan ran the code")


def test_plan_depends_on_code(t):
    g.need_python()
    a = t.run(["plan", "--preset", "trusted", "-c", "print(1)"])
    b = t.run(["plan", "--preset", "trusted", "-c", "print(2)"])
    a.expect_rc(0)
    b.expect_rc(0)
    g.check(a.stdout != b.stdout, "plans of different code are identical")


def test_policy_canon_and_digest(t):
    pol = g.preset("trusted")
    pol["limits"]["wall_ms"] = 7000
    path = t.write_json("a.json", pol)
    r = t.run(["policy", "canon", path])
    r.expect_rc(0)
    canon = r.stdout
    obj = _check_canonical(canon, "policy canon")
    g.eq(obj.get("version"), "govex.policy/v1", "canon version")
    g.eq(obj["limits"]["wall_ms"], 7000, "canon limits.wall_ms")
    r = t.run(["policy", "digest", path])
    r.expect_rc(0)
    digest = r.out.strip()
    g.check(g.DIGEST_RE.match(digest), "digest format: %r" % r.out)
    g.eq(r.out, digest + "\n", "digest output line")
    g.eq(digest, g.sha256_digest(canon), "policy digest vs sha256(canon bytes)")
    # Same policy, keys reversed and re-indented: same canon, same digest.
    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(sorted(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v
    path2 = t.write_json("b.json", reverse(pol), indent=7)
    r = t.run(["policy", "digest", path2])
    r.expect_rc(0)
    g.eq(r.out.strip(), digest, "digest after reordering keys and whitespace")
    r = t.run(["policy", "canon", path2])
    r.expect_rc(0)
    g.eq(r.stdout, canon, "canon after reordering keys and whitespace")
    # A different value changes it.
    pol["limits"]["wall_ms"] = 7001
    path3 = t.write_json("c.json", pol)
    r = t.run(["policy", "digest", path3])
    r.expect_rc(0)
    g.check(r.out.strip() != digest, "different policies have the same digest")


def test_minimal_policy_defaults(t):
    path = t.write("min.json", '{"version":"govex.policy/v1"}')
    r = t.run(["policy", "canon", path])
    r.expect_rc(0)
    obj = _check_canonical(r.stdout, "canon of the minimal policy")
    lim = obj.get("limits", {})
    g.eq(lim.get("wall_ms"), 5000, "default limits.wall_ms")
    g.eq(lim.get("code_bytes"), 65536, "default limits.code_bytes")
    g.eq(lim.get("stdout_bytes"), 65536, "default limits.stdout_bytes")
    g.eq(lim.get("stderr_bytes"), 65536, "default limits.stderr_bytes")
    g.eq(obj.get("network"), "deny", "default network")
    g.eq(obj.get("subprocess"), "deny", "default subprocess")
    g.eq(obj.get("workdir"), "fresh", "default workdir")


def test_show_is_canonical_and_digest_matches_run(t):
    g.need_python()
    for name in ("strict", "workspace", "trusted"):
        r = t.run(["policy", "show", name])
        r.expect_rc(0)
        _check_canonical(r.stdout, "policy show %s" % name)
    r = t.run(["policy", "show", "trusted"])
    path = t.write("trusted.json", r.stdout)
    d = t.run(["policy", "digest", path])
    d.expect_rc(0)
    run = t.run(["run", "--policy", path, "--json", "-c", "pass"])
    run.expect_rc(0)
    g.eq(run.result()["policy_digest"], d.out.strip(), "run's policy_digest vs policy digest")
    run = t.run(["run", "--preset", "trusted", "--json", "-c", "pass"])
    run.expect_rc(0)
    g.eq(run.result()["policy_digest"], d.out.strip(),
         "--preset trusted policy_digest vs digest of policy show trusted")


TESTS = [
    ("govex plan: canonical govex.plan/v1, identical twice, no env values, = run's digest",
     test_plan_canonical_and_stable),
    ("govex plan runs nothing", test_plan_runs_nothing),
    ("plans of different code differ", test_plan_depends_on_code),
    ("policy digest = sha256(policy canon); key order and whitespace do not matter",
     test_policy_canon_and_digest),
    ("policy canon fills the documented defaults", test_minimal_policy_defaults),
    ("presets show canonical; run's policy_digest matches policy digest",
     test_show_is_canonical_and_digest_matches_run),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
