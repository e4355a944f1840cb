#!/usr/bin/env python3
"""Output bounds: a flood is counted, truncated, and never buffered by govex."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

FLOOD = 256 << 20                   # bytes the snippet writes
BOUND = 64 << 10                    # the default stdout/stderr bound
RSS_CEILING_KIB = 64 << 10          # govex's own peak RSS must stay under 64 MiB
FLOOD_CODE = ("import sys\n"
              "b = b'x' * (1 << 20)\n"
              "for _ in range(256):\n"
              "    sys.%s.buffer.write(b)\n"
              "sys.%s.buffer.flush()\n")


def _flood(t, stream):
    g.need_python()
    pol = g.preset("trusted")
    g.eq(pol["limits"]["%s_bytes" % stream], BOUND, "trusted limits.%s_bytes" % stream)
    pol["limits"]["wall_ms"] = 20000
    path = t.write_json("flood.json", pol)
    r = t.run(["run", "--policy", path, "--json", "-c", FLOOD_CODE % (stream, stream)])
    g.check(not r.hard_timeout, "govex hung\n" + r.describe())
    g.check(r.wall < 10.0, "256 MiB flood took %.1f s (limit 10 s)" % r.wall)
    # past the bound output is read and counted for 16 MiB more, then the run is ended
    # (reading it costs the host CPU that no limit of the run accounts)
    r.expect_rc(128 + 9)
    doc = r.result()
    other = "stderr" if stream == "stdout" else "stdout"
    g.eq(doc["status"], "output_limit", "status")
    g.eq(doc["termination"], "output_limit", "termination")
    g.eq(doc["exit_code"], None, "exit_code")
    g.check(BOUND + (16 << 20) < doc["%s_bytes" % stream] < FLOOD,
            "%s_bytes %d: counted past the bound, not all of the flood"
            % (stream, doc["%s_bytes" % stream]))
    g.check(any(d["code"] == "output_limit" for d in doc["diagnostics"]),
            "no output_limit diagnostic: %r" % doc["diagnostics"])
    g.eq(doc["%s_truncated" % stream], True, "%s_truncated" % stream)
    g.eq(len(doc[stream]), BOUND, "len(%s)" % stream)
    g.eq(doc[stream], "x" * BOUND, stream + " content")
    g.eq(doc["%s_bytes" % other], 0, "%s_bytes" % other)
    g.eq(doc["%s_truncated" % other], False, "%s_truncated" % other)
    rss_kib = r.rusage.ru_maxrss
    g.check(rss_kib < RSS_CEILING_KIB,
            "govex peak RSS %d KiB >= %d KiB: output is being buffered" % (rss_kib, RSS_CEILING_KIB))


def test_flood_stdout(t):
    _flood(t, "stdout")


def test_flood_stderr(t):
    _flood(t, "stderr")


def test_small_bound(t):
    g.need_python()
    path = t.policy(limits={"stdout_bytes": 10})
    r = t.run(["run", "--policy", path, "--json", "-c", "print('0123456789abcdef')"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "output_limit", "status")
    g.eq(doc["stdout"], "0123456789", "stdout")
    g.eq(doc["stdout_bytes"], 17, "stdout_bytes")
    g.eq(doc["stdout_truncated"], True, "stdout_truncated")


def test_exact_bound_not_truncated(t):
    g.need_python()
    path = t.policy(limits={"stdout_bytes": 10})
    r = t.run(["run", "--policy", path, "--json", "-c",
               "import sys; sys.stdout.write('0123456789')"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "0123456789", "stdout")
    g.eq(doc["stdout_bytes"], 10, "stdout_bytes")
    g.eq(doc["stdout_truncated"], False, "stdout_truncated")


def test_invalid_utf8_not_dropped(t):
    g.need_python()
    code = "import sys; sys.stdout.buffer.write(b'a\\xffb')"
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["stdout_bytes"], 3, "stdout_bytes")
    s = doc["stdout"]
    g.check(s.startswith("a") and s.endswith("b") and len(s) >= 3,
            "invalid byte dropped or text mangled: %r" % s)
    r = t.run(["run", "--preset", "trusted", "-c", code])
    r.expect_rc(0)
    g.eq(r.stdout, b"a\xffb", "raw stdout without --json")


TESTS = [
    ("256 MiB to stdout: truncated to 64 KiB, counted 16 MiB past it, then ended "
     "(output_limit), flat govex RSS",
     test_flood_stdout),
    ("256 MiB to stderr: truncated to 64 KiB, counted 16 MiB past it, then ended "
     "(output_limit), flat govex RSS",
     test_flood_stderr),
    ("limits.stdout_bytes 10 truncates to exactly 10 bytes", test_small_bound),
    ("output of exactly the bound is not truncated", test_exact_bound_not_truncated),
    ("invalid UTF-8 in output is not dropped silently", test_invalid_utf8_not_dropped),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
