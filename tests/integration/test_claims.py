#!/usr/bin/env python3
"""Issue 9 item 11: a result claims what THIS run had (contract 8).

result.backend.controls = the plan's required controls plus the backend's always-on
controls that applied: no network_deny when the network is allowed, no subprocess_deny
when subprocesses are allowed, no fresh_workdir for a named workdir, no *_aggregate
or *_per_process limit control without that limit, and never a control outside the
plan's required set and the backend's always-on set.  Prints TAP."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

# Controls a backend may add to the plan's required set on every run (they hold for
# any policy it runs).  Limit-backed controls are added only with their limit below.
ALWAYS_ON = {
    "restricted": {"wall_time", "output_bounds", "env_allowlist", "process_tree_kill",
                   "fd_hygiene", "syscall_filter", "no_new_privileges", "landlock"},
    "controlled": {"wall_time", "output_bounds", "env_allowlist", "process_tree_kill",
                   "fd_hygiene"},
}
LIMIT_CONTROLS = {
    "memory_bytes": ("memory_aggregate", "memory_per_process"),
    "cpu_ms": ("cpu_time_aggregate", "cpu_time_per_process"),
    "processes": ("pids_aggregate",),
    "open_files": ("open_files_per_process",),
    "file_size_bytes": ("file_size_per_process",),
}


def _need(name):
    if not g.backend_available(name):
        raise g.Skip("feature:%s the %s backend is not available here"
                     % ("userns" if name == "restricted" else name, name))


def _policy(t, name, base, backend, **changes):
    pol = g.preset(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(pol.get(k), dict):
            pol[k] = dict(pol[k], **v)
        else:
            pol[k] = v
    pol["backend"] = backend
    return t.write_json(name, pol), pol


def _plan_and_run(t, polfile, code="print(1)"):
    p = t.run(["plan", "--policy", polfile, "-c", code])
    p.expect_rc(0)
    plan = p.json()
    required = set(plan["controls"]["required"])
    r = t.run(["run", "--policy", polfile, "--json", "-c", code])
    doc = r.result()
    g.eq(doc["status"], "success", "status (%s)" % (doc.get("diagnostics"),))
    return required, doc


def _check_claims(polfile, pol, required, doc, backend):
    claimed = set(doc["backend"]["controls"])
    g.eq(doc["backend"]["name"], backend, "backend")
    allowed = required | ALWAYS_ON[backend]
    limits = pol.get("limits") or {}
    for lim, ctls in LIMIT_CONTROLS.items():
        if limits.get(lim):
            allowed |= set(ctls) & required | {c for c in ctls if c.endswith("_per_process")}
    extra = sorted(claimed - allowed)
    g.check(not extra, "the result claims %s: neither required by the plan (%s) nor "
            "always on in %s" % (extra, sorted(required), backend))
    for lim, ctls in LIMIT_CONTROLS.items():
        if not limits.get(lim):
            wrong = sorted(set(ctls) & claimed)
            g.check(not wrong, "the result claims %s without a %s limit" % (wrong, lim))
    missing = sorted(required - claimed)
    g.check(not missing, "the result drops required controls %s" % missing)
    return claimed


def test_network_allow_restricted(t):
    _need("restricted")
    f, pol = _policy(t, "net.json", "strict", "restricted", network="allow")
    required, doc = _plan_and_run(t, f)
    claimed = _check_claims(f, pol, required, doc, "restricted")
    g.check("network_deny" not in claimed,
            "network allowed, yet the result lists network_deny: %r" % sorted(claimed))


def test_subprocess_allow_restricted(t):
    _need("restricted")
    f, pol = _policy(t, "sub.json", "strict", "restricted", subprocess="allow")
    required, doc = _plan_and_run(t, f)
    claimed = _check_claims(f, pol, required, doc, "restricted")
    g.check("subprocess_deny" not in claimed,
            "subprocesses allowed, yet the result lists subprocess_deny: %r" % sorted(claimed))


def test_named_workdir_restricted(t):
    _need("restricted")
    os.chmod(t.tmp, 0o711)
    wd = t.path("wd")
    os.mkdir(wd)
    os.chmod(wd, 0o777)
    f, pol = _policy(t, "wd.json", "strict", "restricted", workdir=wd,
                     filesystem={"write": [wd]})
    required, doc = _plan_and_run(t, f)
    claimed = _check_claims(f, pol, required, doc, "restricted")
    g.check("fresh_workdir" not in claimed,
            "a named workdir, yet the result lists fresh_workdir: %r" % sorted(claimed))


def test_no_limits_restricted(t):
    _need("restricted")
    nolim = {k: None for k in ("memory_bytes", "cpu_ms", "processes", "open_files",
                               "file_size_bytes")}
    f, pol = _policy(t, "nolim.json", "strict", "restricted", limits=nolim)
    required, doc = _plan_and_run(t, f)
    _check_claims(f, pol, required, doc, "restricted")


def test_strict_claims_subset(t):
    _need("restricted")
    f, pol = _policy(t, "strict.json", "strict", "restricted")
    required, doc = _plan_and_run(t, f)
    _check_claims(f, pol, required, doc, "restricted")


def test_trusted_controlled(t):
    f, pol = _policy(t, "trusted.json", "trusted", "controlled")
    required, doc = _plan_and_run(t, f)
    claimed = _check_claims(f, pol, required, doc, "controlled")
    g.check("fresh_workdir" in claimed or "fresh_workdir" not in required,
            "fresh_workdir: %r" % sorted(claimed))


def test_call_claims(t):
    """A call's result claims what the call's plan had, too."""
    _need("restricted")
    f, pol = _policy(t, "net.json", "strict", "restricted", network="allow",
                     subprocess="allow")
    m = t.write("m.py", "def f():\n    return 1\n")
    r = t.run(["call", "--policy", f, "--json", m + ":f"])
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    claimed = set(doc["backend"]["controls"])
    wrong = sorted(claimed & {"network_deny", "subprocess_deny"})
    g.check(not wrong, "a call with network and subprocesses allowed claims %s" % wrong)


if __name__ == "__main__":
    sys.exit(g.main([
        ("network allow on restricted: no network_deny claimed", test_network_allow_restricted),
        ("subprocess allow on restricted: no subprocess_deny claimed",
         test_subprocess_allow_restricted),
        ("named workdir: no fresh_workdir claimed", test_named_workdir_restricted),
        ("no limits: no aggregate or per-process limit control claimed",
         test_no_limits_restricted),
        ("strict: claims within required + always-on", test_strict_claims_subset),
        ("trusted on controlled: claims within required + always-on", test_trusted_controlled),
        ("a call claims what its plan had", test_call_claims),
    ]))
