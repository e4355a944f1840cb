#!/usr/bin/env python3
"""Invalid policies are rejected, and every rejection names the field."""
import json
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def _trusted_text(**changes):
    pol = g.preset("trusted")
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(pol.get(k), dict):
            pol[k] = dict(pol[k], **v)
        else:
            pol[k] = v
    return json.dumps(pol, indent=1)


def _reject(t, text, names, utf8_ok=False):
    """TEXT (str or bytes) must be refused by run, run --json and policy check."""
    path = t.write("bad.json", text)
    marker = t.path("ran.marker")
    code = "open(%r, 'w').write('ran')" % marker

    def named(msg):
        if any(n in msg for n in names):
            return True
        return utf8_ok and ("utf-8" in msg.lower() or "utf8" in msg.lower())

    r = t.run(["run", "--policy", path, "-c", code])
    r.expect_rc(g.EXIT_REFUSED)
    g.check(named(r.err), "stderr does not name %r: %r" % (names, r.err))

    r = t.run(["run", "--policy", path, "--json", "-c", code])
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "invalid_input", "status")
    msgs = [d.get("message", "") for d in doc["diagnostics"] if isinstance(d, dict)]
    g.check(any(named(m) for m in msgs),
            "no diagnostic message names %r: %r" % (names, doc["diagnostics"]))
    g.check(not os.path.exists(marker), "the snippet ran under an invalid policy")

    r = t.run(["policy", "check", path])
    r.expect_rc(2)
    g.check(named(r.err), "policy check stderr does not name %r: %r" % (names, r.err))


def test_valid_policy_checks(t):
    path = t.write("ok.json", _trusted_text())
    r = t.run(["policy", "check", path])
    r.expect_rc(0)
    path = t.write("min.json", '{"version": "govex.policy/v1"}')
    r = t.run(["policy", "check", path])
    r.expect_rc(0)


def test_unknown_field(t):
    _reject(t, _trusted_text(frobnicate_level=3), ["frobnicate_level"])


def test_unknown_nested_field(t):
    _reject(t, _trusted_text(limits={"wall_seconds": 3}), ["limits.wall_seconds"])


def test_did_you_mean(t):
    """A misspelt field is named with the field of the same object it is nearest to."""
    cases = [
        ('{"version": "govex.policy/v1", "netwrok": "deny"}',
         'netwrok: unknown field "netwrok" (did you mean "network"?)'),
        ('{"version": "govex.policy/v1", "filesystem": {"raed": []}}',
         'filesystem.raed: unknown field "raed" (did you mean "read"?)'),
        ('{"version": "govex.policy/v1", "limits": {"wall_msx": 10}}',
         'limits.wall_msx: unknown field "wall_msx" (did you mean "wall_ms"?)'),
    ]
    for text, want in cases:
        _reject(t, text, [want])
    # nothing close: no hint
    path = t.write("far.json", _trusted_text(frobnicate_level=3))
    r = t.run(["policy", "check", path])
    r.expect_rc(2)
    g.check('unknown field "frobnicate_level"' in r.err and "did you mean" not in r.err,
            "policy check stderr: %r" % r.err)


def test_wall_zero(t):
    _reject(t, _trusted_text(limits={"wall_ms": 0}), ["limits.wall_ms"])


def test_wall_too_big(t):
    _reject(t, _trusted_text(limits={"wall_ms": 3600001}), ["limits.wall_ms"])


def test_wall_wrong_type(t):
    _reject(t, _trusted_text(limits={"wall_ms": "5000"}), ["limits.wall_ms"])


def test_wall_float(t):
    _reject(t, _trusted_text(limits={"wall_ms": 5000.5}), ["limits.wall_ms"])


def test_relative_read_root(t):
    _reject(t, _trusted_text(filesystem={"read": ["relative/path"]}), ["filesystem.read[0]"])


def test_relative_write_root_second(t):
    _reject(t, _trusted_text(filesystem={"write": ["/tmp", "rel"]}), ["filesystem.write[1]"])


def test_bad_enum(t):
    _reject(t, _trusted_text(network="sometimes"), ["network"])


def test_duplicate_key(t):
    text = '{"version": "govex.policy/v1", "subprocess": "deny", "subprocess": "allow"}'
    _reject(t, text, ["subprocess"])


def test_invalid_utf8(t):
    text = b'{"version": "govex.policy/v1", "workdir": "/tmp/a\xffb"}'
    _reject(t, text, ["workdir"], utf8_ok=True)


def test_wrong_version(t):
    _reject(t, _trusted_text(version="govex.policy/v2"), ["version"])


def test_missing_version(t):
    _reject(t, '{"network": "deny"}', ["version"])


def test_not_an_object(t):
    path = t.write("bad.json", "[1, 2, 3]")
    r = t.run(["run", "--policy", path, "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    r = t.run(["policy", "check", path])
    r.expect_rc(2)


TESTS = [
    ("valid policies pass policy check (exit 0)", test_valid_policy_checks),
    ("unknown top-level field named", test_unknown_field),
    ("unknown nested field named limits.wall_seconds", test_unknown_nested_field),
    ("a misspelt field: did you mean the nearest field of its object", test_did_you_mean),
    ("limits.wall_ms 0 rejected, field named", test_wall_zero),
    ("limits.wall_ms 3600001 rejected, field named", test_wall_too_big),
    ("limits.wall_ms as a string rejected, field named", test_wall_wrong_type),
    ("limits.wall_ms as a float rejected, field named", test_wall_float),
    ("filesystem.read relative path rejected as filesystem.read[0]", test_relative_read_root),
    ("filesystem.write relative path rejected as filesystem.write[1]",
     test_relative_write_root_second),
    ("network 'sometimes' rejected, field named", test_bad_enum),
    ("duplicate key rejected, key named", test_duplicate_key),
    ("invalid UTF-8 in a string rejected (field or UTF-8 named)", test_invalid_utf8),
    ("version govex.policy/v2 rejected, field named", test_wrong_version),
    ("missing version rejected, field named", test_missing_version),
    ("a JSON array is not a policy", test_not_an_object),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
