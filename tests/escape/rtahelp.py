"""Helpers of the round-2 red team RT-A (files in and out, live output, the sandbox as a
normal machine).  Not a suite: test_redteam_files.py, test_redteam_outputs.py,
test_redteam_machine.py and integration/test_redteam_live.py import it.

Two things here that escapetest.py also has, written again on purpose:

- A canary of its own.  escapetest's proven() (probe.py's op_canary_proof) treats any
  /etc/passwd inside the sandbox as the host's /etc; contract section 5 puts an
  /etc/passwd in every sandbox, so that canary would refuse every run once section 5
  lands.  This one proves the same things without that assumption: its own PID
  namespace, no_new_privs, seccomp filter mode, an /etc that is not the host's (device
  and inode), no /etc/shadow, and an /etc/passwd (if any) that is not the host's file.
  Nothing of a test's operations runs unless the canary held, inside the same process.
- A ctypes driver of libgovex for the new request fields (files, outputs, on_output),
  run in a child process: a crash of the library under an attack is then a finding the
  test reports, not the end of the suite.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def _host_passwd_sha():
    try:
        with open("/etc/passwd", "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


HOST_PIDNS, HOST_ETC = e.host_facts()
HOST_PASSWD_SHA = _host_passwd_sha()

# The snippet: a canary, then the test's operations.  An operation is
# ["py", SOURCE, {"as": LABEL}]: SOURCE is exec'd with OUT (= $GOVEX_OUTPUT_DIR or None),
# os, sys, stat, socket, time, hashlib, json in scope; its result is the variable R.
RTA_SRC = r'''
import errno as _errno, hashlib, json, os, socket, stat, sys, time


def _ename(n):
    return _errno.errorcode.get(n, str(n))


def rta_canary(host_pidns, host_etc, host_passwd):
    st = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            st[k] = v.strip()
    etc = None
    try:
        s = os.stat("/etc")
        etc = [s.st_dev, s.st_ino]
    except OSError:
        pass
    pw = None
    try:
        with open("/etc/passwd", "rb") as f:
            pw = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        pass
    c = {"pidns": os.readlink("/proc/self/ns/pid"), "pid": os.getpid(),
         "nnp": st.get("NoNewPrivs"), "seccomp": st.get("Seccomp"), "etc": etc,
         "shadow": os.path.exists("/etc/shadow"),
         "host_passwd": pw is not None and pw == host_passwd}
    c["proven"] = (c["pidns"] != host_pidns and c["pid"] < 100 and c["nnp"] == "1" and
                   c["seccomp"] == "2" and etc != host_etc and not c["shadow"] and
                   not c["host_passwd"])
    return c


def rta_run(host_pidns, host_etc, host_passwd, ops, require=True):
    res = {}
    try:
        c = rta_canary(host_pidns, host_etc, host_passwd)
        res["canary"] = {"ok": True, "value": c}
    except Exception as ex:  # noqa: BLE001
        res["canary"] = {"ok": False, "error": repr(ex)}
        c = {"proven": False}
    if c.get("proven") or not require:
        out = os.environ.get("GOVEX_OUTPUT_DIR")
        for op in ops:
            label, src = op[-1]["as"], op[1]
            ns = {"OUT": out, "os": os, "sys": sys, "stat": stat, "socket": socket, "_errno": _errno,
                  "time": time, "hashlib": hashlib, "json": json, "R": None}
            try:
                exec(src, ns)
                res[label] = {"ok": True, "value": ns["R"]}
            except OSError as ex:
                res[label] = {"ok": False, "errno": _ename(ex.errno) if ex.errno else None,
                              "error": "%s: %s" % (type(ex).__name__, ex)}
            except Exception as ex:  # noqa: BLE001 - reported to the test
                res[label] = {"ok": False, "errno": None,
                              "error": "%s: %s" % (type(ex).__name__, ex)}
    sys.stdout.write("GOVEX-PROBE " + json.dumps(res, sort_keys=True) + "\n")
    sys.stdout.flush()
'''


def op(label, src):
    return ["py", src, {"as": label}]


def rta_code(ops, sandbox=True):
    """The snippet running OPS; with sandbox False (the controlled backend: harmless
    operations only) the operations run without a proven sandbox."""
    return RTA_SRC + "\nrta_run(%r, %r, %r, %r, %r)\n" % (HOST_PIDNS, HOST_ETC,
                                                           HOST_PASSWD_SHA, ops, sandbox)


def rta_proven(res, what=""):
    """Fails unless the canary proved a sandbox (then the operations ran in it)."""
    g.check(res is not None, "the snippet printed no probe line %s" % what)
    c = res.get("canary") or {}
    g.check(c.get("ok") and c["value"].get("proven") is True,
            "canary: NOT proven a sandbox, nothing ran: %r %s" % (c, what))
    return c["value"]


def probe_of(stdout):
    for line in (stdout or "").splitlines():
        if line.startswith("GOVEX-PROBE "):
            return json.loads(line[len("GOVEX-PROBE "):])
    return None


def pol(t, name="p.json", base="strict", limits=None, backend="restricted", **changes):
    """Preset BASE with CHANGES (dicts merged) pinned to BACKEND, written to a file."""
    doc = g.preset(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(doc.get(k), dict):
            doc[k] = dict(doc[k], **v)
        else:
            doc[k] = v
    if limits:
        doc["limits"] = dict(doc["limits"], **limits)
    doc["backend"] = backend
    return t.write_json(name, doc)


def run_rta(t, ops, policy, args=(), sandbox=True, **kw):
    """govex run --json ARGS under POLICY with the canary and OPS.  Returns
    (Proc, result document, probe results); with sandbox, the canary must hold."""
    r = t.run(["run", "--policy", policy, "--json"] + list(args) +
              ["-c", rta_code(ops, sandbox)], **kw)
    g.check(not r.hard_timeout, "govex did not finish within the harness timeout\n"
            + r.describe())
    doc = r.result()
    res = probe_of(doc.get("stdout"))
    if sandbox:
        rta_proven(res, "\n" + r.describe())
        g.eq(doc["backend"]["name"], "restricted", "backend")
    return r, doc, res


def ok(res, label):
    got = res.get(label)
    g.check(got is not None and got.get("ok"), "%s: expected success, got %r" % (label, got))
    return got.get("value")


def failed(res, label):
    got = res.get(label)
    g.check(got is not None, "no result %r" % label)
    return not got.get("ok")


def listed(doc):
    """The result's files list; a Failure when the document has none (feature missing)."""
    g.check("files" in doc, "the result has no \"files\" member (outputs were requested): "
            "keys %r" % sorted(doc))
    files = doc["files"]
    g.check(isinstance(files, list), "result.files is not a list: %r" % (files,))
    return files


def diag_codes(doc):
    return [d.get("code") for d in doc.get("diagnostics") or [] if isinstance(d, dict)]


def dir_entries(d):
    """{name: ("file", bytes) | ("symlink", target) | (kind, None)} of D, never following."""
    out = {}
    for n in os.listdir(d):
        p = os.path.join(d, n)
        st = os.lstat(p)
        import stat as _st
        if _st.S_ISLNK(st.st_mode):
            out[n] = ("symlink", os.readlink(p))
        elif _st.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                out[n] = ("file", f.read())
        else:
            out[n] = ("other %o" % st.st_mode, None)
    return out


# ---------------------------------------------------------------- library driver

def libgovex_path():
    plain = os.environ.get("GOVEX_PLAIN") or ""
    cands = [os.path.join(os.path.dirname(plain), "libgovex.so")] if plain else []
    cands.append(os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "libgovex.so"))
    for c in cands:
        if os.path.exists(c):
            return os.path.abspath(c)
    e.skip("libgovex", "no unsanitized libgovex.so (set GOVEX_PLAIN)")


DRIVER = r'''
import base64, ctypes as ct, json, sys, time
spec = json.loads(sys.stdin.read())
lib = ct.CDLL(spec["lib"])
OUTFN = ct.CFUNCTYPE(None, ct.c_void_p, ct.c_int, ct.POINTER(ct.c_char), ct.c_size_t)
class File(ct.Structure):
    _fields_ = [("name", ct.c_char_p), ("data", ct.c_char_p), ("len", ct.c_size_t)]
class Req(ct.Structure):
    _fields_ = [("language", ct.c_char_p), ("code", ct.c_char_p), ("code_len", ct.c_size_t),
                ("source_path", ct.c_char_p), ("stdin_data", ct.c_char_p),
                ("stdin_len", ct.c_size_t), ("workdir", ct.c_char_p),
                ("limits", ct.c_uint64 * 8), ("env", ct.c_void_p), ("needs", ct.c_uint),
                ("shell", ct.c_int), ("metadata", ct.c_void_p), ("cancel", ct.c_void_p),
                ("repl", ct.c_int), ("inputs_json", ct.c_char_p), ("inputs_len", ct.c_size_t),
                ("files", ct.POINTER(File)), ("n_files", ct.c_size_t), ("outputs", ct.c_int),
                ("on_output", OUTFN), ("output_userdata", ct.c_void_p)]
class View(ct.Structure):
    _fields_ = [("status", ct.c_int), ("termination", ct.c_int), ("exit_code", ct.c_int),
                ("signal", ct.c_int), ("stdout_data", ct.POINTER(ct.c_char)),
                ("stdout_len", ct.c_size_t), ("stderr_data", ct.POINTER(ct.c_char)),
                ("stderr_len", ct.c_size_t)]
lib.govex_result_json.restype = ct.c_char_p
lib.govex_result_json.argtypes = [ct.c_void_p, ct.c_void_p]
lib.govex_result_view.restype = ct.POINTER(View)
lib.govex_result_view.argtypes = [ct.c_void_p]
err = ct.create_string_buffer(256)
pol = ct.c_void_p()
pdata = spec["policy"].encode()
if lib.govex_policy_parse(pdata, ct.c_size_t(len(pdata)), ct.byref(pol), err) < 0:
    print(json.dumps({"error": "policy: " + err.raw[8:248].split(b"\0")[0].decode()}))
    sys.exit(0)
rt = ct.c_void_p()
if lib.govex_runtime_new(pol, None, ct.byref(rt), err) < 0:
    print(json.dumps({"error": "runtime: " + err.raw[8:248].split(b"\0")[0].decode()}))
    sys.exit(0)
chunks = []
t0 = time.monotonic()
def on_output(ud, stream, data, n):
    chunks.append([stream, base64.b64encode(ct.string_at(data, n)).decode(),
                   time.monotonic() - t0])
cb = OUTFN(on_output)
keep = []
req = Req()
code = spec["code"].encode()
req.code = code
req.code_len = len(code)
for i, v in enumerate(spec.get("limits") or []):
    req.limits[i] = v
if spec.get("stdin") is not None:
    sd = base64.b64decode(spec["stdin"])
    keep.append(sd)
    req.stdin_data = sd
    req.stdin_len = len(sd)
files = spec.get("files")
if files is not None:
    arr = (File * max(len(files), 1))()
    for i, f in enumerate(files):
        name = None if f["name"] is None else base64.b64decode(f["name"])
        data = base64.b64decode(f["data"])
        keep += [name, data]
        arr[i].name = name
        arr[i].data = data
        arr[i].len = f.get("len", len(data))
    req.files = arr
    req.n_files = len(files)
req.outputs = 1 if spec.get("outputs") else 0
if spec.get("callback"):
    req.on_output = cb
res = ct.c_void_p()
r = lib.govex_runtime_run(rt, ct.byref(req), ct.byref(res), err)
out = {"rc": r, "chunks": chunks, "wall": time.monotonic() - t0}
if r < 0 or not res:
    out["error"] = err.raw[8:248].split(b"\0")[0].decode("utf-8", "replace")
else:
    out["doc"] = json.loads(lib.govex_result_json(res, None).decode())
    v = lib.govex_result_view(res).contents
    out["stdout_raw"] = base64.b64encode(ct.string_at(v.stdout_data, v.stdout_len)).decode()
    out["stderr_raw"] = base64.b64encode(ct.string_at(v.stderr_data, v.stderr_len)).decode()
    if spec.get("outputs") and not hasattr(lib, "govex_result_file_count"):
        out["files_error"] = "libgovex has no govex_result_file_count"
    elif spec.get("outputs"):
        lib.govex_result_file_count.restype = ct.c_size_t
        lib.govex_result_file_count.argtypes = [ct.c_void_p]
        lib.govex_result_file.argtypes = [ct.c_void_p, ct.c_size_t, ct.POINTER(ct.c_char_p),
                                          ct.POINTER(ct.c_char_p), ct.POINTER(ct.c_void_p),
                                          ct.POINTER(ct.c_size_t)]
        n = lib.govex_result_file_count(res)
        got = []
        for i in range(n + 1):
            name, mime, data, ln = ct.c_char_p(), ct.c_char_p(), ct.c_void_p(), ct.c_size_t()
            rr = lib.govex_result_file(res, i, ct.byref(name), ct.byref(mime), ct.byref(data),
                                       ct.byref(ln))
            if i == n:
                out["past_end_rc"] = rr
                break
            got.append({"rc": rr, "name": base64.b64encode(name.value or b"").decode(),
                        "mime": (mime.value or b"").decode("utf-8", "replace"),
                        "data": base64.b64encode(ct.string_at(data, ln.value)
                                                 if ln.value else b"").decode()})
        out["files"] = got
    lib.govex_result_free(res)
lib.govex_runtime_free(rt)
lib.govex_policy_free(pol)
print(json.dumps(out))
'''


def lib_run(t, code, policy_doc, files=None, outputs=False, callback=False, limits=None,
            stdin=None, timeout=60):
    """Runs CODE through libgovex in a child process.  FILES: [(name bytes or None,
    data bytes)].  Returns the driver's answer: rc, doc, stdout_raw/stderr_raw (bytes),
    chunks [(stream, bytes, seconds)], files [{name, mime, data (bytes), rc}]."""
    spec = {"lib": libgovex_path(), "code": code, "policy": json.dumps(policy_doc),
            "outputs": outputs, "callback": callback, "limits": limits,
            "stdin": None if stdin is None else base64.b64encode(stdin).decode()}
    if files is not None:
        spec["files"] = [{"name": None if n is None else base64.b64encode(n).decode(),
                          "data": base64.b64encode(d).decode()} for n, d in files]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(spec).encode(),
                       capture_output=True, timeout=timeout, cwd=t.tmp, env=env,
                       start_new_session=True)
    if p.returncode != 0:
        raise g.Failure("the libgovex driver died (rc %r): a crash of the library?\n"
                        "stderr: %r" % (p.returncode, p.stderr[-1500:]))
    try:
        ans = json.loads(p.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise g.Failure("driver printed no answer: %r %r" % (p.stdout[-400:], p.stderr[-800:]))
    if "error" in ans and "doc" not in ans:
        ans.setdefault("rc", None)
    for k in ("stdout_raw", "stderr_raw"):
        if k in ans:
            ans[k] = base64.b64decode(ans[k])
    ans["chunks"] = [(s, base64.b64decode(d), ts) for s, d, ts in ans.get("chunks", [])]
    for f in ans.get("files") or []:
        f["name"] = base64.b64decode(f["name"])
        f["data"] = base64.b64decode(f["data"])
    return ans


def policy_doc(base="strict", limits=None, backend="restricted", **changes):
    doc = g.preset(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(doc.get(k), dict):
            doc[k] = dict(doc[k], **v)
        else:
            doc[k] = v
    if limits:
        doc["limits"] = dict(doc["limits"], **limits)
    doc["backend"] = backend
    return doc


# ---------------------------------------------------------------- files in and out
# (shared by test_redteam_files.py and test_redteam_outputs.py)

SECRET = "rta-secret-5f0c1d"          # in the caller's files and govex's environment
MiB = 1 << 20


def sha(b):
    return hashlib.sha256(b).hexdigest()


def _host_file(t, name, data, mode=0o644):
    p = t.path(name)
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)
    return p


def _snap(p):
    st = os.lstat(p)
    with open(p, "rb") as f:
        data = f.read()
    return {"data": data, "mode": st.st_mode, "mtime_ns": st.st_mtime_ns,
            "ino": st.st_ino, "nlink": st.st_nlink, "uid": st.st_uid}


def _marker_policy(t):
    """A restricted policy with one write root where a snippet that ran leaves a mark."""
    w = t.path("w")
    os.mkdir(w)
    os.chmod(w, 0o777)
    os.chmod(t.tmp, 0o711)
    return pol(t, filesystem={"write": [w]}), os.path.join(w, "ran")


def _refused_invalid(r, marker, what, mention=None):
    g.check(not r.hard_timeout, "%s: govex hung\n%s" % (what, r.describe()))
    doc = r.result()
    g.eq(doc["status"], "invalid_input", "%s: status\n%s" % (what, r.describe()))
    r.expect_rc(g.EXIT_REFUSED)
    g.check(not os.path.exists(marker), "%s: the code ran although the request was "
            "refused" % what)
    if mention is not None:
        text = " ".join(str(d.get("message", "")) + " " + json.dumps(d, ensure_ascii=False)
                        for d in doc.get("diagnostics") or [])
        g.check(mention in text, "%s: no diagnostic names the file %r: %r"
                % (what, mention, doc.get("diagnostics")))
    return doc


def _exec_pol(t):
    """strict (restricted) with the system python's standard library readable: govex
    exec binds the executable and its libraries, not its stdlib."""
    import glob
    libs = sorted(p for p in glob.glob("/usr/lib/python3.*") if os.path.isdir(p))
    real = os.path.realpath("/usr/bin/python3")
    want = [p for p in libs if p.endswith(os.path.basename(real))] or libs[-1:]
    return pol(t, name="exec.json", filesystem={"read": want})


def _leak_check(r, outdir, secrets, what):
    """None of SECRETS (bytes) in govex's stdout/stderr or in any file of OUTDIR."""
    for s in secrets:
        g.check(s not in r.stdout and s not in r.stderr,
                "%s: a host secret %r came back in govex's output" % (what, s[:40]))
        if outdir:
            for n, (kind, data) in dir_entries(outdir).items():
                g.check(kind != "symlink", "%s: --output-dir holds a symlink %s -> %s"
                        % (what, n, data))
                g.check(not (isinstance(data, bytes) and s in data),
                        "%s: the host secret %r was copied out as %s" % (what, s[:40], n))


def _secrets(t):
    caller = _host_file(t, "caller-secret.txt", (SECRET + "-caller\n").encode(), 0o600)
    shadow = b""
    try:
        with open("/etc/shadow", "rb") as f:
            shadow = f.read()
    except OSError:
        pass
    return caller, shadow
