#!/usr/bin/env python3
"""--audit FILE: JSON lines, the right events in order, never any content."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

CODE_MARK = "CODEMARK_5f0e2a91"
OUT_MARK = "OUTMARK_b7c3d214"          # printed by the snippet, built at run time
STDIN_MARK = "STDINMARK_e49a6c07"
ENV_MARK = "ENVVALUEMARK_19d8f3b2"

CODE = ('# %s\n'
        'import os, sys\n'
        'data = sys.stdin.read()\n'
        'print("OUTMARK" + "_b7c3d214")\n'
        'print(len(data))\n'
        'print(os.environ.get("GOVEX_IT_AUDIT_ENV", "")[::-1])\n') % CODE_MARK


def _events(path):
    with open(path, "rb") as f:
        data = f.read()
    g.check(data.endswith(b"\n"), "audit file does not end with a newline")
    events = []
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            ev = json.loads(line.decode("utf-8"))
        except ValueError as e:
            raise g.Failure("audit line %d is not JSON (%s): %r" % (n, e, line[:200]))
        g.check(isinstance(ev, dict), "audit line %d is not an object" % n)
        g.eq(ev.get("version"), "govex.audit/v1", "audit line %d version" % n)
        g.check(isinstance(ev.get("event"), str), "audit line %d has no event" % n)
        events.append(ev)
    return data, events


def _in_order(names, wanted):
    it = iter(names)
    return all(w in it for w in wanted)


def _setup(t, **changes):
    g.need_python()
    env = {"inherit": False, "set": {"GOVEX_IT_AUDIT_ENV": ENV_MARK}}
    path = t.policy(environment=env, **changes)
    stdin = t.write("in.txt", STDIN_MARK + "\n")
    return path, stdin


def _no_content(data):
    for m in (CODE_MARK, OUT_MARK, STDIN_MARK, ENV_MARK, ENV_MARK[::-1]):
        g.check(m.encode() not in data, "audit file contains %r" % m)


def test_audit_events(t):
    path, stdin = _setup(t)
    audit = t.path("audit.jsonl")
    r = t.run(["run", "--policy", path, "--json", "--stdin", stdin, "--audit", audit,
               "-c", CODE])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["stdout"], "%s\n%d\n%s\n" % (OUT_MARK, len(STDIN_MARK) + 1, ENV_MARK[::-1]),
         "stdout (positive control: markers reached the snippet)")
    data, events = _events(audit)
    names = [e["event"] for e in events]
    g.check(_in_order(names, ["received", "decision", "launch", "finish"]),
            "events not received, decision, launch, finish in order: %r" % names)
    g.eq(names[0], "received", "first event")
    g.eq(names[-1], "finish", "last event")
    finish = events[-1]
    g.eq(finish.get("status"), "success", "finish event status")
    g.check(doc["plan_digest"].encode() in data, "plan digest not in the audit trail")
    _no_content(data)


def test_audit_appends(t):
    path, stdin = _setup(t)
    audit = t.path("audit.jsonl")
    for _ in range(2):
        r = t.run(["run", "--policy", path, "--json", "--stdin", stdin, "--audit", audit,
                   "-c", CODE])
        r.expect_rc(0)
    data, events = _events(audit)
    names = [e["event"] for e in events]
    g.eq(names.count("received"), 2, "received events after two runs")
    g.eq(names.count("finish"), 2, "finish events after two runs")
    _no_content(data)


def test_audit_approval(t):
    path, stdin = _setup(t, network="allow", approval=["network"])
    audit = t.path("audit.jsonl")
    r = t.run(["run", "--policy", path, "--json", "--stdin", stdin, "--audit", audit,
               "--approver", "true", "-c", CODE])
    r.expect_rc(0)
    data, events = _events(audit)
    names = [e["event"] for e in events]
    g.check(_in_order(names, ["received", "approval", "launch", "finish"]),
            "events not received, approval, launch, finish in order: %r" % names)
    g.check("decision" in names, "no decision event: %r" % names)
    _no_content(data)


def test_audit_refused(t):
    path, stdin = _setup(t, network="allow", approval=["network"])
    audit = t.path("audit.jsonl")
    r = t.run(["run", "--policy", path, "--json", "--stdin", stdin, "--audit", audit,
               "--approver", "false", "-c", CODE])
    r.expect_rc(g.EXIT_REFUSED)
    data, events = _events(audit)
    names = [e["event"] for e in events]
    g.eq(names[0], "received", "first event")
    g.check("decision" in names, "no decision event: %r" % names)
    g.check("launch" not in names, "a refused run has a launch event: %r" % names)
    _no_content(data)


def test_plan_audit_names_backend(t):
    """`govex plan` audits the backend its plan chose (the decision was once released
    before the event read it, naming the first backend, controlled, every time)."""
    g.need_python()
    for preset, backend in (("trusted", "controlled"), ("strict", "restricted")):
        if backend == "restricted" and not any(
                b.get("name") == "restricted" and b.get("available")
                for b in g.backends() if isinstance(b, dict)):
            continue
        audit = t.path("plan-%s.jsonl" % preset)
        r = t.run(["plan", "--preset", preset, "--audit", audit, "-c", "print(1)"])
        r.expect_rc(0)
        plan = json.loads(r.stdout)
        _, events = _events(audit)
        planned = [e for e in events if e.get("decision") == "planned"]
        g.eq(len(planned), 1, "planned decisions (%s)" % preset)
        g.eq(planned[0].get("backend"), plan["backend"]["name"], "audited backend")
        g.eq(planned[0].get("backend"), backend, "backend of %s" % preset)


TESTS = [
    ("audit: JSON lines, received/decision/launch/finish in order, no content",
     test_audit_events),
    ("audit appends across runs", test_audit_appends),
    ("audit records the approval", test_audit_approval),
    ("audit of a denied run: no launch, no content", test_audit_refused),
    ("plan: the planned decision names the backend the plan chose",
     test_plan_audit_names_backend),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
