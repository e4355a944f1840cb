#!/usr/bin/env python3
"""Call mode's inspections kept across processes in the cache directory
($XDG_CACHE_HOME/govex/inspect-v1-*.json): a second `govex call` of the same module
launches no inspection (one "launch" audit event, not two) and plans the same (same call
plan digest, same `govex plan` bytes); a changed source is inspected again; a poisoned
entry (another source digest, invalid JSON, a symlink, a group-writable file) is ignored,
the call still works and the entry is rewritten; another interpreter does not reuse the
entry.  Every test uses its own XDG_CACHE_HOME.  Strict preset (the restricted sandbox).
Prints TAP."""
import glob
import json
import os

import calltest as C
from calltest import check, eq

S = C.Suite()

SRC = """
    def add(a: int, b: int) -> int:
        \"\"\"Adds two integers.\"\"\"
        return a + b
    """


def env_of(t):
    xdg = t.path("xdg")
    os.makedirs(xdg, mode=0o700, exist_ok=True)
    return dict(os.environ, XDG_CACHE_HOME=xdg)


def entries(t):
    return sorted(glob.glob(os.path.join(t.path("xdg"), "govex", "inspect-v1-*.json")))


def audited_call(t, target, opts=("--preset", "strict"), args=None):
    """One `govex call` with --audit; (value, launches, call plan digest)."""
    audit = t.path("audit-%d.jsonl" % len(os.listdir(t.tmp)))
    r = C.call(t, target, args if args is not None else {"a": 1, "b": 2},
               opts=list(opts) + ["--audit", audit], env=env_of(t))
    value = C.value_of(t, r)
    events = [json.loads(line) for line in open(audit) if line.strip()]
    launches = [e for e in events if e.get("event") == "launch"]
    finish = [e for e in events if e.get("event") == "finish"]
    eq(len(finish), 1, "finish events")
    return value, len(launches), finish[0].get("plan_digest")


@S.test("a second call of the same module launches no inspection, same plan")
def _second(t):
    m = C.module(t, "m.py", SRC)
    # the plan before anything is cached
    r = t.run(["plan", "--preset", "strict", m + ":add"], timeout=C.CALL_TIMEOUT,
              env=env_of(t))
    r.expect_rc(0)
    cold_plan = r.stdout
    for e in entries(t):
        os.unlink(e)
    v1, n1, d1 = audited_call(t, m + ":add")
    eq(v1, 3, "first value")
    eq(n1, 2, "first call: inspection and worker launched")
    eq(len(entries(t)), 1, "one inspection entry in the cache directory")
    st = os.lstat(entries(t)[0])
    eq(st.st_mode & 0o777, 0o600, "entry mode")
    v2, n2, d2 = audited_call(t, m + ":add")
    eq(v2, 3, "second value")
    eq(n2, 1, "second call: the worker only (the inspection came from the cache)")
    eq(d2, d1, "call plan digest")
    r = t.run(["plan", "--preset", "strict", m + ":add"], timeout=C.CALL_TIMEOUT,
              env=env_of(t))
    r.expect_rc(0)
    eq(r.stdout, cold_plan, "govex plan bytes with a warm cache")


@S.test("a changed source is inspected again")
def _changed(t):
    m = C.module(t, "m.py", SRC)
    _, n1, d1 = audited_call(t, m + ":add")
    eq(n1, 2, "first call launches")
    eq(len(entries(t)), 1, "one entry")
    C.module(t, "m.py", SRC + "\n    def sub(a: int, b: int) -> int:\n"
             "        return a - b\n")
    v2, n2, d2 = audited_call(t, m + ":add")
    eq(v2, 3, "value")
    eq(n2, 2, "changed source: inspected again")
    check(d2 != d1, "a changed source gives another call plan")
    eq(len(entries(t)), 2, "an entry per source")
    v3, n3, _ = audited_call(t, m + ":sub")
    eq(v3, -1, "sub's value")
    eq(n3, 1, "the changed source's entry is reused")


def poisoned(name, poison):
    @S.test("a poisoned entry is ignored and rewritten: " + name)
    def _poisoned(t):
        m = C.module(t, "m.py", SRC)
        _, n1, d1 = audited_call(t, m + ":add")
        eq(n1, 2, "first call launches")
        es = entries(t)
        eq(len(es), 1, "one entry")
        poison(t, es[0])
        v2, n2, d2 = audited_call(t, m + ":add")
        eq(v2, 3, "the call still works")
        eq(n2, 2, "the poisoned entry is not used: the module is inspected")
        eq(d2, d1, "call plan digest")
        st = os.lstat(es[0])
        check(not os.path.islink(es[0]) and st.st_mode & 0o777 == 0o600,
              "the entry is rewritten as a plain 0600 file (mode %o)" % st.st_mode)
        _, n3, _ = audited_call(t, m + ":add")
        eq(n3, 1, "the rewritten entry is used")
    return _poisoned


def _split(path):
    data = open(path, "rb").read()
    key, _, payload = data.partition(b"\n")
    return key, payload


def wrong_digest(t, path):
    key, payload = _split(path)
    doc = json.loads(payload)
    doc["source_digest"] = "sha256:" + "0" * 64
    with open(path, "wb") as f:
        f.write(key + b"\n" + json.dumps(doc, sort_keys=True,
                                         separators=(",", ":")).encode() + b"\n")


def invalid_json(t, path):
    key, payload = _split(path)
    with open(path, "wb") as f:
        f.write(key + b"\n" + payload[:-10] + b"\n")


def symlink(t, path):
    copy = t.path("entry-copy.json")
    with open(copy, "wb") as f:
        f.write(open(path, "rb").read())
    os.chmod(copy, 0o600)
    os.unlink(path)
    os.symlink(copy, path)


def group_writable(t, path):
    os.chmod(path, 0o620)


def other_module(t, path):
    key, payload = _split(path)
    doc = json.loads(payload)
    doc["module"] = "other"
    with open(path, "wb") as f:
        f.write(key + b"\n" + json.dumps(doc, sort_keys=True,
                                         separators=(",", ":")).encode() + b"\n")


def not_canonical(t, path):
    key, payload = _split(path)
    doc = json.loads(payload)
    with open(path, "wb") as f:
        f.write(key + b"\n" + json.dumps(doc, indent=1).encode() + b"\n")


poisoned("another source digest", wrong_digest)
poisoned("invalid JSON", invalid_json)
poisoned("a symlink", symlink)
poisoned("a group-writable file", group_writable)
poisoned("another module", other_module)
poisoned("not canonical bytes", not_canonical)


@S.test("another interpreter does not reuse the entry")
def _interp(t):
    found = [p for _, p in C.interpreters((11, 12, 10, 13)) if p]
    if len(found) < 2:
        raise C.Skip("needs two pyenv versions of Python 3.10+ under %s" % C.PYENV)
    m = C.module(t, "m.py", SRC)
    pols = [["--policy", C.policy(t, python={"interpreter": p})] for p in found[:2]]
    _, n1, _ = audited_call(t, m + ":add", opts=pols[0])
    eq(n1, 2, "first interpreter: inspected")
    _, n2, _ = audited_call(t, m + ":add", opts=pols[1])
    eq(n2, 2, "second interpreter: inspected again (%s)" % found[1])
    eq(len(entries(t)), 2, "an entry per interpreter")
    _, n3, _ = audited_call(t, m + ":add", opts=pols[1])
    eq(n3, 1, "second interpreter again: its own entry")
    _, n4, _ = audited_call(t, m + ":add", opts=pols[0])
    eq(n4, 1, "first interpreter again: its own entry")


if __name__ == "__main__":
    raise SystemExit(S.main())
