#!/usr/bin/env python3
"""Round-2 red team RT-A: files in and out over MCP (contract section 4, the `files`
argument of run_python_snippet), written against the contract.

JSON is the one place a file name can hold a NUL ("a\\u0000b"): a name the C side would
see cut at the NUL must be refused, never truncated into another (valid) name.  Names
outside the rule are tool errors (isError, protocol 2025-11-25) naming the argument,
and the snippet never runs.  Outputs: a symlink to a host secret (the caller's file,
the server's own /proc/self/environ) is never followed: the secret appears nowhere in
the response; a regular file comes back as an embedded resource, a PNG as an image.
"""
import base64
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import mcptest as m  # noqa: E402

SECRET = "rta-mcp-secret-91c2"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00"
       b"\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05"
       b"\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


def _policy(t):
    import subprocess
    doc = json.loads(subprocess.run([m.GOVEX, "policy", "show", "strict"], check=True,
                                    capture_output=True).stdout)
    doc["backend"] = "restricted"
    return m.write(t, "p.json", json.dumps(doc))


def _server(t, env=None):
    s = m.Server(["--policy", _policy(t)], cwd=t, env=env)
    s.initialize("2025-11-25")
    return s


def _call(s, args, timeout=30.0):
    """tools/call run_python_snippet; a parse error (id null: jansson refuses \\u0000 in
    strings) counts as the answer too.  Returns the message."""
    id = s.start("tools/call", {"name": "run_python_snippet", "arguments": args})
    import time
    deadline = time.monotonic() + timeout
    while True:
        msg = s.recv(max(0.1, deadline - time.monotonic()))
        if msg.get("id") == id:
            return msg
        if msg.get("id") is None and (msg.get("error") or {}).get("code") == -32700:
            return msg


def _refused(msg):
    """A refusal: a tool error, or a JSON-RPC error (parse error for a NUL)."""
    if "error" in msg:
        return True
    return (msg.get("result") or {}).get("isError") is True


BAD = ["a\u0000b", "ok\u0000/../../etc/x", "ok.txt\u0000", "../x", "/etc/x", "a/b", "",
       ".hidden", "a" * 129, "a\nb", "a\u001b[2Jb"]


def test_bad_names_refused(t):
    """Each bad name (NUL inside, traversal, empty, dot, 129 chars, control characters)
    in `files`: a tool error naming files, and the snippet did not run."""
    s = _server(t)
    problems = []
    for name in BAD:
        r = _call(s, {"code": "print('RAN-' + 'SNIPPET')",
                      "files": [{"name": name, "text": "x"}]})
        line = json.dumps(r)
        if "RAN-SNIPPET" in line:
            problems.append("%r: the snippet ran" % name)
            continue
        if "\u0000" in name and "error" in r:
            continue                     # refused while parsing: nothing was truncated
        res = r.get("result")
        if not res or res.get("isError") is not True:
            problems.append("%r: not a tool error: %s" % (name, line[:300]))
            continue
        text = " ".join(c.get("text", "") for c in res.get("content", []))
        if "files" not in text:
            problems.append("%r: the error does not name files: %r" % (name, text[:300]))
    m.check(not problems, "%d of %d bad names not refused as tool errors:\n%s"
            % (len(problems), len(BAD), "\n".join(problems)))


def test_nul_never_truncates_into_a_duplicate(t):
    """"same" and "same\\u0000x": refused (two names, or one the C side would cut)."""
    s = _server(t)
    r = _call(s, {"code": "import os; print(sorted(os.listdir('.')))",
                  "files": [{"name": "same", "text": "1"},
                            {"name": "same\u0000x", "text": "2"}]})
    m.check(_refused(r), "accepted: %s" % json.dumps(r)[:400])
    m.check("['same']" not in json.dumps(r), "the snippet ran with one file 'same'")


def test_output_links_and_content_types(t):
    """Symlinks in the output dir to the caller's 0600 secret and to /proc/self/environ
    (the server's, holding a secret) are not followed; ok.txt is an embedded resource
    with its text, pic.png an image with its bytes."""
    secret_file = m.write(t, "caller-secret.txt", SECRET + "-file\n")
    os.chmod(secret_file, 0o600)
    env = dict(os.environ, RTA_MCP_ENV_SECRET=SECRET + "-env")
    s = _server(t, env=env)
    code = ("import os, base64\nO = os.environ['GOVEX_OUTPUT_DIR']\n"
            "os.symlink(%r, os.path.join(O, 'caller.txt'))\n"
            "os.symlink('/proc/self/environ', os.path.join(O, 'environ.txt'))\n"
            "os.symlink('/proc/1/environ', os.path.join(O, 'environ1.txt'))\n"
            "open(os.path.join(O, 'ok.txt'), 'w').write('fine')\n"
            "open(os.path.join(O, 'pic.png'), 'wb').write(base64.b64decode(%r))\n"
            % (secret_file, base64.b64encode(PNG).decode()))
    r = _call(s, {"code": code})
    line = json.dumps(r)
    for sec in (SECRET + "-file", SECRET + "-env"):
        m.check(sec not in line and base64.b64encode(sec.encode()).decode()[:16] not in line,
                "a host secret came back over MCP: %s" % sec)
    res = r.get("result") or {}
    m.check(res.get("isError") is False, "the snippet failed: %s" % line[:600])
    content = res.get("content") or []
    images = [c for c in content if c.get("type") == "image"]
    resources = [c for c in content if c.get("type") == "resource"]
    m.check(len(images) == 1 and base64.b64decode(images[0].get("data", "")) == PNG and
            images[0].get("mimeType") == "image/png", "pic.png as an image: %s"
            % json.dumps(images)[:300])
    uris = sorted(c["resource"].get("uri") for c in resources)
    m.eq(uris, ["govex://output/ok.txt"], "embedded resources")
    m.eq(resources[0]["resource"].get("text"), "fine", "ok.txt's text")
    files = (res.get("structuredContent") or {}).get("files")
    m.check(isinstance(files, list) and sorted(f["name"] for f in files) ==
            ["ok.txt", "pic.png"], "structuredContent.files: %r" % (files,))


def test_module_tool_inputs_not_importable(t):
    """A module tool: the model's `files` never become importable
    code in the operator's function (no shadowed stdlib, no new module)."""
    mod = m.write(t, "tool.py", (
        "def f() -> list:\n    out = []\n    import statistics\n"
        "    out.append(getattr(statistics, 'PWNED', 'stdlib'))\n"
        "    try:\n        import rtamylib\n        out.append(rtamylib.X)\n"
        "    except ImportError:\n        out.append('ImportError')\n    return out\n"))
    s = m.Server(["--policy", _policy(t), "--module", mod], cwd=t)
    s.initialize("2025-11-25")
    tools = [x["name"] for x in s.result("tools/list")["tools"]
             if x["name"] != "run_python_snippet"]
    m.check(tools, "no tools: %r" % tools)
    r = s.call(tools[0], {"files": [
        {"name": "statistics.py", "text": "PWNED = 'model code shadowed statistics'\n"},
        {"name": "rtamylib.py", "text": "X = 'model code imported'\n"}]})
    doc = m.result_doc(r)
    m.eq(doc["status"], "success", "status")
    m.eq(doc["value"], ["stdlib", "ImportError"], "what the operator's function imported")


if __name__ == "__main__":
    sys.exit(m.main([
        ("bad file names over MCP are tool errors, nothing runs", test_bad_names_refused),
        ("a NUL in a name never truncates it into a duplicate",
         test_nul_never_truncates_into_a_duplicate),
        ("output symlinks are not followed over MCP; resources and images typed",
         test_output_links_and_content_types),
        ("a module tool's files are never importable code",
         test_module_tool_inputs_not_importable),
    ]))
