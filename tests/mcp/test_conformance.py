#!/usr/bin/env python3
"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
conformance/package.json with the Node >= 22 it needs) against `govex mcp`: its tool
scenarios, served by the module conformance_tools.py.  The suite speaks streamable HTTP:
it runs directly against `govex mcp --http 127.0.0.1:0` (one server per file).

The scenarios that need live output (tools-call-with-logging) or files out (image,
embedded resource, mixed content) skip with feature:live-output / feature:files when this
build has neither (they come from another branch of the round); with them they must pass.
Without a reachable npm registry everything skips (feature:npm)."""
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

TOOLS = os.path.join(m.HERE, "conformance_tools.py")
ARGS = ["--preset", "trusted", "--module", TOOLS]
_server = {}


def node_dir():
    d = m.need_node_modules(m.CONFORMANCE_DIR)
    return os.path.join(d, "node_modules")


def server(t):
    """The HTTP server (one per file), started on first use; returns its URL."""
    if "srv" not in _server:
        _server["srv"] = m.HttpServer(ARGS)
        m._live.remove(_server["srv"])  # outlives the test that started it
    s = _server["srv"]
    m.check(s.p.poll() is None, "the server exited (%s):\n%s" % (s.p.returncode,
                                                                 s.stderr()[-2000:]))
    return s.url


def scenario(t, name):
    url = server(t)
    nm = node_dir()
    cli = os.path.join(nm, "@modelcontextprotocol", "conformance", "dist", "index.js")
    r = subprocess.run([os.path.join(nm, ".bin", "node"), cli, "server", "--url", url,
                        "--scenario", name], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=90)
    out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout.decode("utf-8", "replace"))
    verdict = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", out)
    m.check(verdict and r.returncode == 0 and verdict.group(3) == "0",
            "conformance %s failed (exit %d):\n%s" % (name, r.returncode, out[-2500:]))


def has_live_output(t):
    s = m.Server(ARGS, cwd=t)
    s.initialize()
    s.result("logging/setLevel", {"level": "debug"})
    notes = []
    s.call("run_python_snippet", {"code": "print('live')"}, notes=notes)
    s.close()
    return any(n["params"].get("logger") == "stdout" for n in notes
               if n.get("method") == "notifications/message")


def has_files(t):
    s = m.Server(ARGS, cwd=t)
    s.initialize()
    r = s.call("run_python_snippet", {"code": "import os\n'GOVEX_OUTPUT_DIR' in os.environ"})
    s.close()
    return m.result_doc(r)["value"] is True


def plain(name):
    return lambda t: scenario(t, name)


def needs(feature, probe, name):
    def test(t):
        node_dir()  # skips first when npm cannot be used
        if not probe(t):
            raise m.Skip("feature:%s this build has no %s (contract sections 3 and 4)"
                         % (feature, feature))
        scenario(t, name)
    return test


TESTS = [
    ("conformance: server-initialize", plain("server-initialize")),
    ("conformance: ping", plain("ping")),
    ("conformance: logging-set-level", plain("logging-set-level")),
    ("conformance: tools-list", plain("tools-list")),
    ("conformance: tools-call-simple-text", plain("tools-call-simple-text")),
    ("conformance: tools-call-error", plain("tools-call-error")),
    ("conformance: tools-call-with-progress", plain("tools-call-with-progress")),
    ("conformance: dns-rebinding-protection (Host and Origin over HTTP)",
     plain("dns-rebinding-protection")),
    ("conformance: server-sse-multiple-streams (concurrent POSTs in a session)",
     plain("server-sse-multiple-streams")),
    ("conformance: tools-call-with-logging (output lines as log notifications)",
     needs("live-output", has_live_output, "tools-call-with-logging")),
    ("conformance: tools-call-image (a PNG the run wrote)",
     needs("files", has_files, "tools-call-image")),
    ("conformance: tools-call-embedded-resource (a text file the run wrote)",
     needs("files", has_files, "tools-call-embedded-resource")),
    ("conformance: tools-call-mixed-content",
     needs("files", has_files, "tools-call-mixed-content")),
]

if __name__ == "__main__":
    try:
        rc = m.main(TESTS)
    finally:
        if "srv" in _server:
            _server["srv"].cleanup()
    sys.exit(rc)
