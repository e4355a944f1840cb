#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An MCP client of the installed `govex mcp` over stdio, for test_install.sh.

    python3 mcp_stdio.py GOVEX VERSION PRESET MODULE.py

Starts GOVEX mcp --preset PRESET --module MODULE.py, writes JSON-RPC lines into its stdin
and reads its replies; stdin stays open until the last reply, as the end of input cancels
what is in flight (docs/mcp.md).  Prints one line per step, "STEP<TAB>ok<TAB>detail" or
"STEP<TAB>fail<TAB>why", for the steps initialize, tools/list, tools/call, exit; always
exits 0 (a step that did not run has no line, which the shell counts as a failure).
"""
import json
import queue
import subprocess
import sys
import threading

TIMEOUT = 60.0


def report(step, ok, detail):
    print("%s\t%s\t%s" % (step, "ok" if ok else "fail", detail.replace("\n", " ")[:2000]))
    sys.stdout.flush()


class Server:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.err = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self):
        self.err = self.p.stderr.read()

    def request(self, rid, method, params=None):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:     # notifications (log messages of a call) come before its reply
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                raise RuntimeError("no reply to %s in %.0f s" % (method, TIMEOUT)) from None
            if line is None:
                raise RuntimeError("the server closed stdout before replying to %s (exit "
                                   "%s): %s" % (method, self.p.poll(), self.stderr()))
            doc = json.loads(line)
            if doc.get("id") == rid:
                if "result" not in doc:
                    raise RuntimeError("%s: %r" % (method, doc))
                return doc["result"]

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def stderr(self):
        return self.err.decode("utf-8", "replace").strip()[-500:]


def main():
    govex, version, preset, module = sys.argv[1:5]
    srv = Server([govex, "mcp", "--preset", preset, "--module", module])
    try:
        steps(srv, version, preset)
    except (RuntimeError, ValueError, KeyError, TypeError, OSError) as e:
        report("error", False, str(e))
    finally:
        if srv.p.poll() is None:
            srv.p.kill()
            srv.p.wait()
    return 0


def steps(srv, version, preset):
    want = "2025-06-18"
    r = srv.request(1, "initialize", {"protocolVersion": want, "capabilities": {},
                                      "clientInfo": {"name": "test_install", "version": "1"}})
    info = r.get("serverInfo", {})
    ok = (r.get("protocolVersion") == want and info.get("name") == "govex"
          and info.get("version") == version and "tools" in r.get("capabilities", {}))
    report("initialize", ok, "protocol %s, server %s %s" % (r.get("protocolVersion"),
                                                             info.get("name"),
                                                             info.get("version")))
    srv.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    r = srv.request(2, "tools/list")
    names = sorted(t["name"] for t in r["tools"])
    schemas = all(t.get("inputSchema", {}).get("type") == "object" for t in r["tools"])
    report("tools/list", names == ["add", "greet", "mean", "run_python_snippet"] and schemas,
           "tools %s, every one with an object inputSchema: %s" % (names, schemas))

    r = srv.request(3, "tools/call", {"name": "run_python_snippet",
                                      "arguments": {"code": "print(6*7)"}})
    doc = r.get("structuredContent", {})
    backend = doc.get("backend", {}).get("name")
    ok = (r.get("isError") is False and doc.get("status") == "success"
          and doc.get("stdout") == "42\n"
          and backend == ("controlled" if preset == "trusted" else "restricted"))
    report("tools/call", ok, "isError %s, status %s, stdout %r, backend %s"
           % (r.get("isError"), doc.get("status"), doc.get("stdout"), backend))

    srv.p.stdin.close()
    try:
        rc = srv.p.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        report("exit", False, "still running %.0f s after the end of its input" % TIMEOUT)
        return
    report("exit", rc == 0, "exit %d at the end of input" % rc)


if __name__ == "__main__":
    sys.exit(main())
