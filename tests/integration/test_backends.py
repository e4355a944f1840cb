#!/usr/bin/env python3
"""govex backends --json: capability reports of exactly the documented shape."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

KEYS = {"version", "name", "backend_version", "available", "enforced", "unavailable"}


def test_backends_json(t):
    reps = g.backends()
    g.check(len(reps) >= 1, "no backends reported")
    names = []
    for rep in reps:
        g.check(isinstance(rep, dict), "report is not an object: %r" % (rep,))
        # the restricted backend adds the size of its seccomp allowlist when it has one
        extra = {"syscalls_allowed"} if (rep.get("name") == "restricted"
                                         and "syscall_filter" in rep.get("enforced", [])) else set()
        # and where its cgroups come from (DESIGN.md "Hosts")
        if rep.get("name") == "restricted":
            extra.add("cgroups")
            cg = rep.get("cgroups")
            g.check(isinstance(cg, dict) and set(cg) == {"source", "detail"}
                    and cg["source"] in ("v1", "root", "delegated", "systemd", "host", "none")
                    and isinstance(cg["detail"], str) and cg["detail"], "cgroups: %r" % (cg,))
            aggregate = {"memory_aggregate", "pids_aggregate"} & set(rep["enforced"])
            if cg["source"] == "none":
                g.check(not aggregate, "no cgroup, yet %r claimed" % sorted(aggregate))
        g.eq(set(rep), KEYS | extra, "keys of report %r" % rep.get("name"))
        if extra:
            n = rep["syscalls_allowed"]
            g.check(isinstance(n, int) and not isinstance(n, bool) and 100 < n < 400,
                    "syscalls_allowed: %r" % (n,))
        g.eq(rep["version"], "govex.backend/v1", "version of %r" % rep["name"])
        g.check(isinstance(rep["name"], str) and rep["name"], "name: %r" % rep["name"])
        g.check(isinstance(rep["backend_version"], str), "backend_version: %r" % rep)
        g.check(isinstance(rep["available"], bool), "available: %r" % rep)
        g.check(isinstance(rep["enforced"], list)
                and all(isinstance(c, str) for c in rep["enforced"]), "enforced: %r" % rep)
        g.check(isinstance(rep["unavailable"], list), "unavailable: %r" % rep)
        for u in rep["unavailable"]:
            g.check(isinstance(u, dict) and set(u) == {"control", "reason"}
                    and isinstance(u["control"], str) and isinstance(u["reason"], str),
                    "unavailable entry of %r: %r" % (rep["name"], u))
        g.check(not set(rep["enforced"]) & {u["control"] for u in rep["unavailable"]},
                "%r both enforces and lacks a control" % rep["name"])
        names.append(rep["name"])
    g.eq(len(names), len(set(names)), "backend names unique")
    ctl = [r for r in reps if r["name"] == "controlled"]
    g.check(ctl, "no 'controlled' backend: %r" % names)
    ctl = ctl[0]
    g.eq(ctl["available"], True, "controlled.available")
    g.eq(ctl["backend_version"], "govex.controlled/v1", "controlled.backend_version")
    for c in ("wall_time", "output_bounds", "env_allowlist", "fresh_workdir"):
        g.check(c in ctl["enforced"], "controlled does not enforce %r: %r" % (c, ctl["enforced"]))
    for c in ("network_deny", "subprocess_deny", "fs_read_allowlist", "fs_write_allowlist"):
        g.check(c not in ctl["enforced"], "controlled claims to enforce %r" % c)


def test_backends_plain(t):
    r = t.run(["backends"])
    r.expect_rc(0)
    g.check(b"controlled" in r.stdout, "plain listing lacks 'controlled': %r" % r.stdout)


def test_result_backend_matches_report(t):
    g.need_python()
    ctl = [r for r in g.backends() if r["name"] == "controlled"][0]
    r = t.run(["run", "--preset", "trusted", "--json", "-c", "pass"])
    r.expect_rc(0)
    b = r.result()["backend"]
    g.eq(b["version"], ctl["backend_version"], "result backend.version")
    g.check(set(b["controls"]) <= set(ctl["enforced"]),
            "result claims controls the backend does not enforce: %r"
            % sorted(set(b["controls"]) - set(ctl["enforced"])))


TESTS = [
    ("backends --json: array of govex.backend/v1 reports, controlled available",
     test_backends_json),
    ("backends without --json lists controlled", test_backends_plain),
    ("result backend fields agree with the controlled report", test_result_backend_matches_report),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
