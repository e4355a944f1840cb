#!/usr/bin/env python3
"""A result claims what this run had (DESIGN.md "Trust boundaries", issue 9 item 11):
result.backend.controls lists the controls enforced for THIS run, never the backend's
whole list.  A run whose policy allows the network does not list network_deny; one that
allows subprocesses does not list subprocess_deny; a named workdir is no fresh_workdir;
no limit, no claim of it.  Runs, exec and calls alike."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

ALWAYS = ("wall_time", "output_bounds", "env_allowlist", "process_tree_kill", "fd_hygiene")
LIMITS = ("memory_aggregate", "memory_per_process", "cpu_time_aggregate",
          "cpu_time_per_process", "pids_aggregate", "open_files_per_process",
          "file_size_per_process")


def _need_restricted():
    g.need_python()
    if not g.backend_available("restricted"):
        raise g.Skip("the restricted backend is not available here")


def _report(name):
    return [b for b in g.backends() if b["name"] == name][0]


def _controls(t, argv):
    r = t.run(argv)
    doc = r.result()
    g.eq(doc["status"], "success", "status (diagnostics %r)" % (doc.get("diagnostics"),))
    ctl = doc["backend"]["controls"]
    g.check(isinstance(ctl, list) and all(isinstance(c, str) for c in ctl),
            "backend.controls is a list of names: %r" % (ctl,))
    g.check(len(set(ctl)) == len(ctl), "backend.controls has duplicates: %r" % (ctl,))
    return doc, ctl


def _has(ctl, names, what):
    for c in names:
        g.check(c in ctl, "%s: %r missing from backend.controls %r" % (what, c, ctl))


def _lacks(ctl, names, what):
    for c in names:
        g.check(c not in ctl, "%s: backend.controls claims %r: %r" % (what, c, ctl))


def test_strict_claims_its_denials(t):
    """strict on restricted: the denials and the limits it sets are this run's."""
    _need_restricted()
    doc, ctl = _controls(t, ["run", "--preset", "strict", "--json", "-c", "pass"])
    g.eq(doc["backend"]["name"], "restricted", "backend")
    _has(ctl, ALWAYS + ("network_deny", "subprocess_deny", "fs_read_allowlist",
                        "fs_write_allowlist", "fresh_workdir"), "strict")
    rep = _report("restricted")
    g.check(set(ctl) <= set(rep["enforced"]),
            "claims beyond the backend's report: %r" % sorted(set(ctl) - set(rep["enforced"])))
    # strict sets memory, cpu, processes, open files and file size: claimed as far as the
    # backend enforces them here
    for c in LIMITS:
        if c in rep["enforced"]:
            g.check(c in ctl, "strict sets the limit behind %r, enforced here, not listed: %r"
                    % (c, ctl))


def test_network_allowed_no_network_deny(t):
    """network allowed on restricted: connecting out is possible, so no network_deny."""
    _need_restricted()
    pol = t.policy("net.json", base="strict", network="allow")
    doc, ctl = _controls(t, ["run", "--policy", pol, "--backend", "restricted", "--json",
                             "-c", "pass"])
    g.eq(doc["backend"]["name"], "restricted", "backend")
    _lacks(ctl, ["network_deny"], "network allowed")
    _has(ctl, ["subprocess_deny", "fs_read_allowlist"], "network allowed, rest strict")


def test_subprocess_allowed_no_subprocess_deny(t):
    """subprocess allowed on restricted: no subprocess_deny."""
    _need_restricted()
    pol = t.policy("sub.json", base="strict", subprocess="allow")
    doc, ctl = _controls(t, ["run", "--policy", pol, "--backend", "restricted", "--json",
                             "-c", "pass"])
    g.eq(doc["backend"]["name"], "restricted", "backend")
    _lacks(ctl, ["subprocess_deny"], "subprocess allowed")
    _has(ctl, ["network_deny"], "subprocess allowed, network still denied")


def test_no_limits_no_limit_controls(t):
    """restricted with no memory/cpu/process/file limits: none of them is claimed."""
    _need_restricted()
    pol = t.policy("nolimits.json", base="strict",
                   limits={"memory_bytes": None, "cpu_ms": None, "processes": None,
                           "open_files": None, "file_size_bytes": None})
    doc, ctl = _controls(t, ["run", "--policy", pol, "--backend", "restricted", "--json",
                             "-c", "pass"])
    _lacks(ctl, LIMITS, "no limits set")
    _has(ctl, ["network_deny", "subprocess_deny"], "no limits, denials kept")


def test_named_workdir_no_fresh_workdir(t):
    """a named workdir is not a fresh one."""
    g.need_python()
    wd = t.path("wd")
    os.mkdir(wd)
    os.chmod(t.tmp, 0o711)
    os.chmod(wd, 0o777)
    pol = t.policy("wd.json", base="trusted", workdir=wd)
    doc, ctl = _controls(t, ["run", "--policy", pol, "--json", "-c", "pass"])
    _lacks(ctl, ["fresh_workdir"], "named workdir")
    doc, ctl = _controls(t, ["run", "--preset", "trusted", "--json", "-c", "pass"])
    _has(ctl, ["fresh_workdir"], "fresh workdir")


def test_trusted_claims_no_denial_or_limit(t):
    """trusted on controlled (no limits but wall time and output): only what applied."""
    g.need_python()
    doc, ctl = _controls(t, ["run", "--preset", "trusted", "--json", "-c", "pass"])
    g.eq(doc["backend"]["name"], "controlled", "backend")
    _has(ctl, ALWAYS + ("fresh_workdir",), "trusted")
    _lacks(ctl, LIMITS + ("network_deny", "subprocess_deny", "fs_read_allowlist",
                          "fs_write_allowlist", "syscall_filter", "landlock"), "trusted")
    pol = t.policy("nofile.json", base="trusted", limits={"open_files": 512})
    doc, ctl = _controls(t, ["run", "--policy", pol, "--backend", "controlled", "--json",
                             "-c", "pass"])
    _has(ctl, ["open_files_per_process"], "trusted with an open-files limit")
    _lacks(ctl, ["memory_per_process", "cpu_time_per_process", "file_size_per_process"],
           "trusted with an open-files limit")


def test_exec_and_call_same_rule(t):
    """govex exec and govex call list their own run's controls by the same rule."""
    _need_restricted()
    pol = t.policy("net.json", base="strict", network="allow", subprocess="allow")
    doc, ctl = _controls(t, ["exec", "--policy", pol, "--backend", "restricted", "--json",
                             "--", "/bin/true"])
    _lacks(ctl, ["network_deny", "subprocess_deny"], "exec, network and subprocess allowed")
    _has(ctl, ["fs_write_allowlist"], "exec")
    m = t.write("m.py", "def f():\n    return 1\n")
    doc, ctl = _controls(t, ["call", "--policy", pol, "--backend", "restricted", "--json",
                             m + ":f"])
    _lacks(ctl, ["network_deny", "subprocess_deny"], "call, network and subprocess allowed")
    doc, ctl = _controls(t, ["call", "--preset", "strict", "--json", m + ":f"])
    _has(ctl, ["network_deny", "subprocess_deny"], "call under strict")


TESTS = [
    ("strict on restricted lists its denials and enforced limits", test_strict_claims_its_denials),
    ("network allowed on restricted: no network_deny", test_network_allowed_no_network_deny),
    ("subprocess allowed on restricted: no subprocess_deny",
     test_subprocess_allowed_no_subprocess_deny),
    ("no limits set: no memory/cpu/pids/rlimit controls claimed", test_no_limits_no_limit_controls),
    ("named workdir: no fresh_workdir", test_named_workdir_no_fresh_workdir),
    ("trusted on controlled: no denials, no unset limits", test_trusted_claims_no_denial_or_limit),
    ("exec and call follow the same rule", test_exec_and_call_same_rule),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
