"""Helpers of the RT-H red-team tests (test_redteam_http.py): a `govex mcp --http`
process and a raw-socket HTTP/1.1 client that controls every byte.  Stdlib only."""
import json
import os
import random
import re
import signal
import socket
import subprocess
import tempfile
import time

import mcptest as m

LEGACY = "2025-11-25"
MODERN = m.MODERN
LISTEN = re.compile(r"govex mcp: listening on http://(\[[^\]]+\]|[^\s:/]+):(\d+)/mcp")
MIB = 1 << 20


# ---------------------------------------------------------------- server

class HttpServer:
    """One `govex mcp --http ADDR` process; its port read from the line it prints."""

    def __init__(self, t, *extra, token=None, addr="127.0.0.1:0", preset="trusted",
                 token_file=None, env=None, wait=True, prefix=(), rate="100000",
                 binary=None):
        self.t = t
        self.errpath = tempfile.mktemp(prefix="govex-rth-stderr-")
        self._err = open(self.errpath, "wb")
        args = list(prefix) + [binary or m.GOVEX, "mcp", "--preset", preset, "--http", addr]
        if token is not None:
            token_file = write_token(t, token)
        if token_file is not None:
            args += ["--token-file", token_file]
        if rate is not None:                    # the rate limit only where it is tested
            args += ["--rate", rate]
        args += list(extra)
        self.args = args
        # stdin stays an open pipe: the HTTP server must not depend on it either way
        self.p = subprocess.Popen(args, cwd=t, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self._err,
                                  start_new_session=True, close_fds=True)
        self.host = self.port = None
        m._live.append(self)
        if wait:
            self.wait_listening()

    def wait_listening(self, timeout=60.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            mt = LISTEN.search(self.stderr())
            if mt:
                self.host, self.port = mt.group(1), int(mt.group(2))
                return self
            if self.p.poll() is not None:
                raise m.Failure("govex mcp --http exited %r before listening: %s\nargv %r"
                                % (self.p.returncode, self.stderr()[-1500:], self.args))
            time.sleep(0.02)
        raise m.Failure("no 'listening on' line within %.0f s: %s" % (timeout,
                                                                     self.stderr()[-1500:]))

    def stderr(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def rss_kb(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout=40):
        """SIGTERM and the exit status (a sanitizer build checks for leaks at exit)."""
        os.kill(self.p.pid, signal.SIGTERM)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise m.Failure("still running %d s after SIGTERM" % timeout)
        no_sanitizer_report(self)
        return rc

    def alive(self):
        return self.p.poll() is None

    def cleanup(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self._err, self.p.stdin, self.p.stdout):
            try:
                f.close()
            except (OSError, AttributeError):
                pass
        try:
            os.unlink(self.errpath)
        except OSError:
            pass


def sanitized(path):
    """True when PATH links a sanitizer runtime (its RSS then means nothing)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"libasan.so" in data or b"__asan_init" in data


def memory_binary():
    """A govex whose RSS means something: GOVEX unless it is sanitized, else GOVEX_PLAIN
    (tests/run-all passes build/govex); None when there is none."""
    if not sanitized(m.GOVEX):
        return m.GOVEX
    plain = os.environ.get("GOVEX_PLAIN")
    if plain and os.access(plain, os.X_OK) and not sanitized(plain):
        return plain
    return None


def rss_note(what):
    print("# %s: RSS not checked: GOVEX is sanitized and GOVEX_PLAIN is not set" % what)


def write_token(t, token, name="token", mode=0o600):
    p = os.path.join(t, name)
    with open(p, "w") as f:
        f.write(token + "\n")
    os.chmod(p, mode)
    return p


# ---------------------------------------------------------------- raw HTTP client

class Resp:
    def __init__(self, status, reason, headers, body, raw):
        self.status, self.reason, self.headers, self.body, self.raw = \
            status, reason, headers, body, raw

    def h(self, name):
        v = self.headers.get(name.lower())
        return v[0] if v else None

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def messages(self):
        """The JSON-RPC messages of a 200: one JSON body or the data of SSE events."""
        ct = (self.h("content-type") or "").split(";")[0].strip().lower()
        if ct == "application/json":
            v = self.json()
            return v if isinstance(v, list) else [v]
        if ct == "text/event-stream":
            out = []
            # SSE lines end with CRLF, LF or CR alone (as a browser's EventSource reads them)
            text = self.body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
            for ev in text.split("\n\n"):
                data = [l[5:].lstrip(" ") if l.startswith("data:") else None
                        for l in ev.splitlines()]
                data = [d for d in data if d is not None]
                if data:
                    out.append(json.loads("\n".join(data)))
            return out
        raise m.Failure("a 200 with content type %r: %r" % (ct, self.body[:300]))

    def response_to(self, id):
        got = [x for x in self.messages() if x.get("id") == id and "method" not in x]
        m.check(len(got) == 1, "expected one response to id %r, got %r (status %r)"
                % (id, self.body[:600], self.status))
        return got[0]

    def __repr__(self):
        return "<HTTP %r %r %r>" % (self.status, self.headers, self.body[:300])


def connect(port, src=None, timeout=30.0, host="127.0.0.1"):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect((host, port))
    return s


def build(method, path, port, headers=None, body=b"", version="HTTP/1.1"):
    hs = {"Host": "127.0.0.1:%d" % port, "Connection": "close"}
    if body or method in ("POST", "PUT"):
        hs["Content-Length"] = str(len(body))
    for k, v in (headers or {}).items():
        for d in [x for x in hs if x.lower() == k.lower()]:
            del hs[d]
        if v is not None:
            hs[k] = v
    head = "%s %s %s\r\n" % (method, path, version)
    head += "".join("%s: %s\r\n" % kv for kv in hs.items())
    return head.encode("latin-1") + b"\r\n" + body


def read_all(s, limit=64 * MIB):
    buf = bytearray()
    while True:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            break
        except socket.timeout:
            raise m.Failure("no end of the response within the socket timeout; got %r"
                            % bytes(buf[:500]))
        if not b:
            break
        buf += b
        if len(buf) > limit:
            break
    return bytes(buf)


def read_response(s, timeout):
    """Reads until one whole response (by Content-Length or chunked end), EOF or TIMEOUT;
    returns what came (the server may keep the connection open after an early reply)."""
    s.settimeout(0.2)
    buf, end = b"", time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            b = None
        except OSError:
            break
        if b == b"":
            break
        if b:
            buf += b
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                mt = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                if mt and len(rest) >= int(mt.group(1)):
                    break
                if re.search(rb"(?im)^transfer-encoding:.*chunked", head) and \
                        rest.endswith(b"0\r\n\r\n"):
                    break
    return buf


def parse(raw):
    if not raw:
        return Resp(None, None, {}, b"", raw)
    head, sep, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    mt = re.match(r"HTTP/1\.[01] (\d{3}) ?(.*)", lines[0])
    if not mt:
        return Resp(None, None, {}, b"", raw)
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        headers.setdefault(k.strip().lower(), []).append(v.strip())
    body = rest
    if "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
        out, pos = bytearray(), 0
        while True:
            e = rest.find(b"\r\n", pos)
            if e < 0:
                break
            n = int(rest[pos:e].split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out += rest[e + 2:e + 2 + n]
            pos = e + 2 + n + 2
        body = bytes(out)
    elif "content-length" in headers:
        body = rest[:int(headers["content-length"][0])]
    return Resp(int(mt.group(1)), mt.group(2), headers, body, raw)


def http(port, method, path, headers=None, body=b"", src=None, timeout=30.0, raw=None,
         host="127.0.0.1"):
    """One request on its own connection (Connection: close); the parsed response, or a
    Resp with status None when the server closed without answering."""
    try:
        s = connect(port, src, timeout, host)
    except ConnectionRefusedError:
        return Resp(None, "refused", {}, b"", b"")
    try:
        try:
            s.sendall(raw if raw is not None else build(method, path, port, headers, body))
        except (BrokenPipeError, ConnectionResetError):
            pass
        return parse(read_all(s))
    finally:
        s.close()


JSON_HEADERS = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}


def mcp_headers(token=None, session=None, version=None, extra=None):
    h = dict(JSON_HEADERS)
    if token is not None:
        h["Authorization"] = "Bearer " + token
    if session is not None:
        h["Mcp-Session-Id"] = session
    if version is not None:
        h["MCP-Protocol-Version"] = version
    h.update(extra or {})
    return h


def post(port, msg, token=None, session=None, version=None, extra=None, src=None,
         timeout=60.0):
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return http(port, "POST", "/mcp", mcp_headers(token, session, version, extra), body,
                src=src, timeout=timeout)


def req(id, method, params=None):
    r = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        r["params"] = params
    return r


def modern(id, method, params=None, **meta_extra):
    """A self-contained request of the stateless 2026-07-28 era."""
    p = dict(params or {})
    p["_meta"] = m.meta(MODERN, **meta_extra)
    return req(id, method, p)


def snippet_params(code, **args):
    a = {"code": code}
    a.update(args)
    return {"name": "run_python_snippet", "arguments": a}


class Session:
    """A session-based (2025-11-25) client."""

    def __init__(self, port, token=None, src=None, version=LEGACY, name="rth"):
        self.port, self.token, self.src, self.version = port, token, src, version
        self.id = None
        self.next = 0
        r = post(port, req(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                             "clientInfo": {"name": name, "version": "1"}}),
                 token=token, src=src)
        m.eq(r.status, 200, "initialize status (%r)" % r.body[:300])
        self.init = r.response_to(0)
        m.check("result" in self.init, "initialize: %r" % self.init)
        self.id = r.h("mcp-session-id")
        m.check(self.id, "no Mcp-Session-Id on the initialize response: %r" % r.headers)
        r = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        m.eq(r.status, 202, "notifications/initialized status")

    def post(self, msg, **kw):
        kw.setdefault("token", self.token)
        kw.setdefault("src", self.src)
        return post(self.port, msg, session=self.id, version=self.version, **kw)

    def rpc(self, method, params=None, id=None, **kw):
        if id is None:
            self.next += 1
            id = self.next
        r = self.post(req(id, method, params), **kw)
        m.eq(r.status, 200, "%s status (%r)" % (method, r.body[:300]))
        return r, r.response_to(id)


def value_of(msg):
    return m.result_doc(msg)["value"]


def wait_for(pred, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rindex(")") + 2] not in "ZX"


def procs_with_comm(name):
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/comm" % n) as f:
                    if f.read().strip() == name:
                        out.append(int(n))
            except OSError:
                pass
    return out


def kill_comm(name):
    for pid in procs_with_comm(name):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def marker():
    return "rth%08x" % random.getrandbits(32)


def marked(name, code_after):
    return ("import ctypes\nctypes.CDLL(None).prctl(15, %r.encode(), 0, 0, 0)\n%s"
            % (name, code_after))


def is_json_error_body(r):
    try:
        v = r.json()
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(v, dict) and ("error" in v)


def retry_after_ok(v):
    if v is None:
        return False
    if re.fullmatch(r"\d+", v.strip()):
        return True
    try:
        import email.utils
        return email.utils.parsedate_to_datetime(v) is not None
    except (TypeError, ValueError):
        return False


def no_sanitizer_report(s):
    err = s.stderr()
    for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        if mark in err:
            i = err.index(mark)
            raise m.Failure("the server's sanitizer reported:\n" + err[max(0, i - 200):i + 3000])


def healthy(s):
    """/healthz answers 200, and a sanitizer build has reported nothing (a report fails)."""
    no_sanitizer_report(s)
    r = http(s.port, "GET", "/healthz", timeout=10)
    return r.status == 200
