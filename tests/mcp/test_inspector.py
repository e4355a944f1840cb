#!/usr/bin/env python3
"""The MCP Inspector (@modelcontextprotocol/inspector, pinned in inspector/package.json),
in its CLI mode, against `govex mcp` over stdio: it lists the tools and calls one of each
kind as a user of the Inspector would."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

INSPECTOR_DIR = os.path.join(m.HERE, "inspector")
MOD = os.path.join(m.REPO, "examples", "mod.py")


def inspector(t, *args):
    d = m.need_node_modules(INSPECTOR_DIR)
    cli = os.path.join(d, "node_modules", ".bin", "mcp-inspector")
    argv = [cli, "--cli", m.GOVEX, "mcp", "--preset", "strict", "--module", MOD] + list(args)
    r = subprocess.run(argv, cwd=t, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    m.check(r.returncode == 0, "inspector %s: exit %d\n%s\n%s" % (
        " ".join(args), r.returncode, out[-1500:], r.stderr.decode("utf-8", "replace")[-1500:]))
    return json.loads(out)


def test_tools_list(t):
    doc = inspector(t, "--method", "tools/list")
    names = sorted(x["name"] for x in doc["tools"])
    m.eq(names, ["add", "greet", "mean", "run_python_snippet"], "tools")
    snip = [x for x in doc["tools"] if x["name"] == "run_python_snippet"][0]
    m.check("Python 3." in snip["description"] and "DENIED" in snip["description"],
            "the description states the policy: %s" % snip["description"][:300])


def test_tools_call(t):
    doc = inspector(t, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=40",
                    "--tool-arg", "b=2")
    m.eq((doc.get("isError"), doc["structuredContent"]["value"]), (False, 42), "add(40, 2)")
    doc = inspector(t, "--method", "tools/call", "--tool-name", "run_python_snippet",
                    "--tool-arg", "code=sum(range(10))")
    m.eq((doc.get("isError"), doc["structuredContent"]["value"],
          doc["structuredContent"]["backend"]["name"]), (False, 45, "restricted"),
         "a snippet in the sandbox")
    doc = inspector(t, "--method", "tools/call", "--tool-name", "mean", "--tool-arg",
                    "values=[]")
    m.check(doc.get("isError") is True and "ValueError" in doc["content"][0]["text"],
            "an exception the model can read: %r" % doc["content"][0]["text"][:300])


TESTS = [
    ("MCP Inspector CLI: tools/list", test_tools_list),
    ("MCP Inspector CLI: tools/call of a module function, a snippet, an exception",
     test_tools_call),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
