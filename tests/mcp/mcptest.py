"""Shared helpers for the `govex mcp` tests.

Stdlib only.  A test script lists (name, function) pairs and calls main(); main() prints
TAP on stdout, gives every test its own temporary directory and a hard timeout (SIGALRM),
kills every server a test started (its whole process group) and always exits 0.

Server speaks to one `govex mcp` process over its stdio: newline-delimited JSON-RPC.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOVEX = os.environ.get("GOVEX") or os.path.join(REPO, "build", "govex")
TEST_TIMEOUT = int(os.environ.get("GOVEX_MCP_TEST_TIMEOUT", "120"))

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
ALL_VERSIONS = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

RESULT_KEYS = (
    "version", "status", "termination", "exit_code", "signal", "stdout", "stderr",
    "stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated", "value",
    "diagnostics", "usage", "backend", "policy_digest", "plan_digest",
)


class Skip(Exception):
    """Raised by a test that cannot run here; the message says why."""


class Failure(AssertionError):
    """Raised by a failed check."""


class Timeout(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Failure("%s: expected %r, got %r" % (what, expected, _short(actual)))


def _short(v, limit=800):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


_live = []          # servers started by the current test


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Process:
    """What both servers share: the process (self.p, its own process group), its stderr
    in a file (self.errpath, written through self._err)."""

    def kill(self):
        _killpg(self.p.pid)
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        try:
            self._err.close()
        except OSError:
            pass

    def stderr(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def cleanup(self):
        self.kill()
        try:
            os.unlink(self.errpath)
        except OSError:
            pass


class Server(_Process):
    """One `govex mcp ARGS` process."""

    def __init__(self, args, cwd=None, env=None):
        self.args = list(args)
        self.errpath = tempfile.mktemp(prefix="govex-mcp-stderr-")
        self._err = open(self.errpath, "wb")
        self.p = subprocess.Popen([GOVEX, "mcp"] + self.args, cwd=cwd, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self._err, start_new_session=True, close_fds=True)
        self.q = queue.Queue()
        self.raw = []           # every line read, as bytes
        self._next_id = 1000
        self.stash = []         # messages read while waiting for another
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()
        _live.append(self)

    def _reader(self):
        for line in self.p.stdout:
            self.raw.append(line)
            try:
                self.q.put(json.loads(line.decode("utf-8")))
            except (ValueError, UnicodeDecodeError) as e:
                self.q.put({"__invalid__": line, "__error__": str(e)})
        self.q.put(None)

    # -- sending
    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n")

    def new_id(self):
        self._next_id += 1
        return self._next_id

    def notify(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def start(self, method, params=None, id=None):
        """Sends a request and returns its id (no waiting)."""
        if id is None:
            id = self.new_id()
        m = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return id

    # -- receiving
    def recv(self, timeout=30.0):
        if self.stash:
            return self.stash.pop(0)
        try:
            m = self.q.get(timeout=timeout)
        except queue.Empty:
            raise Failure("no message from the server within %.1f s\nstderr: %s"
                          % (timeout, self.stderr()[-2000:]))
        if m is None:
            raise Failure("the server closed stdout (exit %r)\nstderr: %s"
                          % (self.p.poll(), self.stderr()[-2000:]))
        check("__invalid__" not in m, "stdout carried a line that is not JSON: %r" % (m,))
        return m

    def wait_for(self, id, timeout=30.0, notes=None):
        """The response with ID; notifications seen meanwhile go to NOTES (a list)."""
        deadline = time.monotonic() + timeout
        kept = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failure("no response to id %r within %.1f s" % (id, timeout))
                m = self.recv(left)
                if "method" in m and "id" not in m:
                    if notes is not None:
                        notes.append(m)
                    continue
                if m.get("id") == id:
                    return m
                kept.append(m)
        finally:
            self.stash = kept + self.stash

    def request(self, method, params=None, timeout=30.0, notes=None, id=None):
        return self.wait_for(self.start(method, params, id), timeout, notes)

    def result(self, method, params=None, **kw):
        r = self.request(method, params, **kw)
        check("result" in r, "%s: expected a result, got %s" % (method, _short(r)))
        return r["result"]

    def initialize(self, version="2025-11-25", name="mcptest"):
        r = self.result("initialize", {"protocolVersion": version, "capabilities": {},
                                       "clientInfo": {"name": name, "version": "1"}})
        self.notify("notifications/initialized")
        return r

    def call(self, name, arguments=None, meta=None, timeout=30.0, notes=None):
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta is not None:
            params["_meta"] = meta
        return self.request("tools/call", params, timeout=timeout, notes=notes)

    # -- ending
    def close(self, timeout=10.0):
        """Closes stdin and waits; returns the exit status."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the server did not exit within %.1f s of stdin's end" % timeout)


class HttpServer(_Process):
    """One `govex mcp --http ADDR ARGS` process (port 0 unless ADDR names one); its URL
    comes from the line it writes to stderr.  Speaks HTTP with http.client (stdlib)."""

    def __init__(self, args, addr="127.0.0.1:0", cwd=None, env=None, wait=True):
        self.args = ["--http", addr] + list(args)
        self.errpath = tempfile.mktemp(prefix="govex-mcp-stderr-")
        self._err = open(self.errpath, "wb")
        self.p = subprocess.Popen([GOVEX, "mcp"] + self.args, cwd=cwd, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=self._err, start_new_session=True, close_fds=True)
        _live.append(self)
        self.host = self.port = self.url = None
        if wait:
            self.wait_listening()

    def wait_listening(self, timeout=30.0):
        import re
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mo = re.search(r"listening on http://(\S+):(\d+)/mcp", self.stderr())
            if mo:
                self.host, self.port = mo.group(1), int(mo.group(2))
                self.url = "http://%s:%d/mcp" % (self.host, self.port)
                return self.url
            if self.p.poll() is not None:
                raise Failure("the server exited (%s) before listening:\n%s"
                              % (self.p.returncode, self.stderr()[-2000:]))
            time.sleep(0.03)
        raise Failure("the server did not say where it listens:\n" + self.stderr()[-2000:])

    def conn(self, timeout=30.0):
        import http.client
        host = self.host.strip("[]")
        if host == "localhost":
            host = "127.0.0.1"
        return http.client.HTTPConnection(host, self.port, timeout=timeout)

    def http(self, method, path="/mcp", body=None, headers=None, timeout=30.0, conn=None):
        """One request; returns (status, headers (lower-case names), body bytes)."""
        c = conn or self.conn(timeout)
        h = {"Host": "%s:%d" % (self.host, self.port)}
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, hdrs, data

    def post(self, msg, headers=None, sse=False, **kw):
        h = {"Accept": "application/json, text/event-stream" if sse else "application/json",
             "Content-Type": "application/json"}
        h.update(headers or {})
        return self.http("POST", "/mcp", msg, h, **kw)

    def rpc(self, method, params=None, id=1, headers=None, sse=False, **kw):
        """A request; returns (status, headers, [messages]) (SSE events or one JSON)."""
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        st, h, data = self.post(msg, headers, sse=sse, **kw)
        return st, h, parse_body(h, data)

    def signal(self, sig):
        os.kill(self.p.pid, sig)

    def wait(self, timeout=30.0):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the server did not exit within %.1f s" % timeout)


def parse_body(headers, data):
    """The JSON-RPC messages of a response body: an SSE stream's events, or one JSON."""
    ct = headers.get("content-type", "")
    text = data.decode("utf-8", "replace")
    if ct.startswith("text/event-stream"):
        out = []
        for event in text.split("\n\n"):
            lines = [l[5:].lstrip() for l in event.split("\n") if l.startswith("data:")]
            if lines:
                out.append(json.loads("\n".join(lines)))
        return out
    if not text:
        return []
    try:
        return [json.loads(text)]
    except ValueError:
        return [{"__invalid__": text}]


def meta(version=MODERN, caps=None, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
         "io.modelcontextprotocol/clientInfo": {"name": "mcptest", "version": "1"}}
    m.update(extra)
    return m


def result_doc(call_result):
    """The structured content of a tools/call result, its shape checked."""
    check("result" in call_result, "tools/call failed: %s" % _short(call_result))
    r = call_result["result"]
    check(isinstance(r.get("content"), list) and r["content"], "no content: %s" % _short(r))
    check(r["content"][0].get("type") == "text", "first content block is not text")
    doc = r.get("structuredContent")
    check(isinstance(doc, dict), "no structuredContent: %s" % _short(r))
    missing = [k for k in RESULT_KEYS if k not in doc]
    check(not missing, "result document lacks %s" % missing)
    eq(doc["version"], "govex.result/v1", "structuredContent.version")
    eq(r.get("isError"), doc["status"] != "success", "isError vs status %s" % doc["status"])
    return doc


def argument_error(call_result, what):
    """A tools/call refused for its arguments, as protocol 2025-11-25 and later want it: a
    tool result with isError, status invalid_input and a diagnostic invalid_argument whose
    message names the argument, also in the text for the model.  Returns the message."""
    doc = result_doc(call_result)
    eq(call_result["result"].get("isError"), True, "%s: isError" % what)
    eq(doc["status"], "invalid_input", "%s: status" % what)
    d = doc["diagnostics"][0]
    eq(d["code"], "invalid_argument", "%s: diagnostic" % what)
    check(d["message"] in text_of(call_result), "%s: message in the text" % what)
    return d["message"]


def text_of(call_result):
    return call_result["result"]["content"][0]["text"]


def write(t, name, data):
    p = os.path.join(t, name)
    with open(p, "w") as f:
        f.write(data)
    return p


# ---------------------------------------------------------------- npm clients

NODE_DIR = os.path.join(HERE, "node")
CONFORMANCE_DIR = os.path.join(HERE, "conformance")
NPM_TIMEOUT = 300
_npm_states = {}


def need_node_modules(NODE_DIR=NODE_DIR):
    """Installs the committed package.json's packages of NODE_DIR once (npm install
    --prefix NODE_DIR); raises Skip("feature:npm ...") only when npm cannot be used."""
    _npm_state = _npm_states.setdefault(NODE_DIR, {})
    if "error" in _npm_state:
        raise Skip(_npm_state["error"])
    if "failed" in _npm_state:
        raise Failure(_npm_state["failed"])
    if _npm_state.get("ok"):
        return NODE_DIR
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            _npm_state["error"] = "feature:npm %s is not installed" % tool
            raise Skip(_npm_state["error"])
    want = json.load(open(os.path.join(NODE_DIR, "package.json")))["dependencies"]
    def installed():
        for name, version in want.items():
            pj = os.path.join(NODE_DIR, "node_modules", *name.split("/"), "package.json")
            try:
                if json.load(open(pj)).get("version") != version:
                    return False
            except (OSError, ValueError):
                return False
        return True
    if not installed():
        try:
            r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", NODE_DIR],
                               cwd=NODE_DIR, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=NPM_TIMEOUT)
            out = r.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            r, out = None, "npm install timed out after %d s" % NPM_TIMEOUT
        if r is None or r.returncode != 0 or not installed():
            last = [l for l in out.strip().splitlines() if l.strip()][-3:]
            reach = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET",
                     "network", "timed out", "getaddrinfo")
            if any(k in out for k in reach):
                _npm_state["error"] = ("feature:npm the npm registry cannot be reached: %s"
                                       % " / ".join(last))
                raise Skip(_npm_state["error"])
            _npm_state["failed"] = "npm install failed:\n" + out[-3000:]
            raise Failure(_npm_state["failed"])
    _npm_state["ok"] = True
    return NODE_DIR


def node_client(script, scenario, workdir, module=None, timeout=100, url=None):
    """Runs node SCRIPT SCENARIO GOVEX WORKDIR [MODULE]; returns its JSON verdict.  url:
    the client speaks streamable HTTP to that server (GOVEX_MCP_URL) instead of stdio."""
    d = need_node_modules()
    env = dict(os.environ)
    if url:
        env["GOVEX_MCP_URL"] = url
    argv = ["node", os.path.join(d, script), scenario, GOVEX, workdir]
    if module:
        argv.append(module)
    p = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _killpg(p.pid)
        out, err = p.communicate()
        raise Failure("node %s %s timed out\nstderr: %s" % (script, scenario, err[-2000:]))
    finally:
        _killpg(p.pid)      # the server it spawned, should it have survived
    lines = [l for l in out.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    check(lines, "node %s %s printed no verdict (exit %d)\nstderr: %s"
          % (script, scenario, p.returncode, err.decode("utf-8", "replace")[-2000:]))
    v = json.loads(lines[-1])
    if not v.get("ok"):
        raise Failure("%s %s: %s\ninfo: %s\nstderr: %s" % (
            script, scenario, v.get("error"), v.get("info"),
            err.decode("utf-8", "replace")[-2000:]))
    return v.get("info", {})


# ---------------------------------------------------------------- TAP driver

def _on_alarm(signum, frame):
    raise Timeout("test exceeded %d s" % TEST_TIMEOUT)


def main(tests):
    print("TAP version 13")
    print("1..%d" % len(tests))
    sys.stdout.flush()
    have = os.path.isfile(GOVEX) and os.access(GOVEX, os.X_OK)
    signal.signal(signal.SIGALRM, _on_alarm)
    for i, (name, fn) in enumerate(tests, 1):
        tmp = tempfile.mkdtemp(prefix="govex-mcp-")
        del _live[:]
        try:
            if not have:
                raise Failure("govex binary not found: %s (set GOVEX or build it)" % GOVEX)
            signal.alarm(TEST_TIMEOUT)
            try:
                fn(tmp)
            finally:
                signal.alarm(0)
            print("ok %d - %s" % (i, name))
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e))
        except (Failure, Timeout) as e:
            print("not ok %d - %s" % (i, name))
            _diag(e)
            for s in _live:
                _diag("server stderr: " + s.stderr()[-1500:])
        except BaseException as e:
            print("not ok %d - %s" % (i, name))
            _diag("test crashed: %r\n%s" % (e, traceback.format_exc()))
            if isinstance(e, KeyboardInterrupt):
                raise
        finally:
            for s in _live:
                s.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)
            sys.stdout.flush()
    return 0


def _diag(text):
    for line in str(text).rstrip("\n").split("\n"):
        print("# " + line)
