#!/usr/bin/env python3
"""Files in and out: --file NAME=PATH placed read-only in the workdir (a copy, never the
caller's file), GOVEX_OUTPUT_DIR collected after the run (regular files only, bounded,
never following a link or blocking on a FIFO), --output-dir never overwriting; policy
digests unchanged by the new limits."""
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

# A policy without the new limits, and its digest as govex printed it before files in
# and out existed (main at 3fec4db): the new limits are omitted at their defaults.
FIXTURE_POLICY = {
    "version": "govex.policy/v1",
    "limits": {"wall_ms": 7000, "stdout_bytes": 1000, "memory_bytes": 268435456},
    "network": "deny",
    "environment": {"inherit": False, "allow": ["FOO"], "set": {"BAR": "1"}},
}
FIXTURE_DIGEST = "sha256:5a6031c296a27029d0584be3342ec81ae56355108a8d00c2509577fb96b2df30"

BACKENDS = ("restricted", "controlled")


def _backends():
    have = [b for b in BACKENDS if g.backend_available(b)]
    if not have:
        raise g.Skip("no backend available")
    return have


def _policy(t, backend, **limits):
    pol = g.preset("trusted" if backend == "controlled" else "strict")
    pol["limits"].update(limits)
    return t.write_json("%s.json" % backend, pol)


def test_policy_digests_unchanged(t):
    path = t.write_json("fixture.json", FIXTURE_POLICY)
    r = t.run(["policy", "digest", path])
    r.expect_rc(0)
    g.eq(r.out.strip(), FIXTURE_DIGEST, "fixture policy digest (recorded before files)")
    r = t.run(["policy", "canon", path])
    r.expect_rc(0)
    lim = json.loads(r.out)["limits"]
    for k in ("files_in_bytes", "files_out_bytes", "files_out_count"):
        g.check(k not in lim, "%s at its default appears in canonical bytes" % k)
    pol = dict(FIXTURE_POLICY, limits=dict(FIXTURE_POLICY["limits"], files_out_count=3))
    path = t.write_json("fixture3.json", pol)
    r = t.run(["policy", "canon", path])
    r.expect_rc(0)
    g.eq(json.loads(r.out)["limits"].get("files_out_count"), 3, "a non-default bound")
    pol["limits"]["files_out_count"] = 5000
    path = t.write_json("bad.json", pol)
    r = t.run(["policy", "check", path])
    g.check(r.returncode != 0 and "files_out_count" in r.err,
            "files_out_count 5000 accepted\n" + r.describe())


def test_plan_members(t):
    g.need_python()
    t.write("b.csv", "x\n")
    t.write("a.txt", "hello")
    r = t.run(["plan", "--preset", "trusted", "-c", "pass"])
    r.expect_rc(0)
    plain = json.loads(r.out)
    g.check("files" not in plain and "outputs" not in plain, "files/outputs without flags")
    g.check("GOVEX_OUTPUT_DIR" not in plain["environment"]["names"], "env name without outputs")
    r = t.run(["plan", "--preset", "trusted", "--file", "b.csv=b.csv", "--file", "a.txt=a.txt",
               "--output-dir", t.tmp, "-c", "pass"])
    r.expect_rc(0)
    p = json.loads(r.out)
    g.eq(p["files"], [
        {"name": "a.txt", "bytes": 5, "digest": g.sha256_digest(b"hello")},
        {"name": "b.csv", "bytes": 2, "digest": g.sha256_digest(b"x\n")},
    ], "plan.files (sorted by name)")
    g.eq(p["outputs"], {"max_files": 64, "max_bytes": 64 << 20}, "plan.outputs")
    g.check("GOVEX_OUTPUT_DIR" in p["environment"]["names"], "GOVEX_OUTPUT_DIR not listed")
    # the plan file is accepted back with its new members
    t.write("plan.json", r.stdout)
    r2 = t.run(["run", "--preset", "trusted", "--plan", "plan.json", "--file", "b.csv=b.csv",
                "--file", "a.txt=a.txt", "--output-dir", t.tmp, "-c", "pass"])
    r2.expect_rc(0)
    r3 = t.run(["run", "--preset", "trusted", "--plan", "plan.json", "--file", "b.csv=a.txt",
                "--file", "a.txt=a.txt", "--output-dir", t.tmp, "--json", "-c", "pass"])
    r3.expect_rc(125)
    g.diag(r3.result(), "plan_mismatch")


def test_invalid_names(t):
    g.need_python()
    t.write("f", "data")
    for name in ("../x", ".hidden", "a/b", "x" * 129, "sp ace", "..", "."):
        r = t.run(["run", "--preset", "trusted", "--json", "--file", "%s=f" % name, "-c",
                   "open('marker', 'w')"])
        r.expect_rc(125)
        doc = r.result()
        g.eq(doc["status"], "invalid_input", "status for %r" % name)
        d = g.diag(doc, "invalid_file_name")
        g.check(name[:20] in d["message"], "the message names the file: %r" % d)
    r = t.run(["run", "--preset", "trusted", "--json", "--file", "a=f", "--file", "a=f", "-c",
               "pass"])
    r.expect_rc(125)
    g.diag(r.result(), "duplicate_file_name")
    # "output" names the output directory when outputs are requested
    r = t.run(["run", "--preset", "trusted", "--json", "--file", "output=f", "--output-dir",
               t.tmp, "-c", "pass"])
    r.expect_rc(125)
    g.check("output directory" in g.diag(r.result(), "invalid_file_name")["message"],
            r.describe())
    r = t.run(["run", "--preset", "trusted", "--json", "--file", "output=f", "-c",
               "print(open('output').read())"])
    r.expect_rc(0)
    g.eq(r.result()["stdout"], "data\n", "a file named output without outputs")


def test_files_too_large(t):
    g.need_python()
    t.write("f", b"x" * 11)
    path = _policy(t, "controlled", files_in_bytes=10)
    r = t.run(["run", "--policy", path, "--json", "--file", "f=f", "-c", "pass"])
    r.expect_rc(125)
    doc = r.result()
    g.eq(doc["status"], "invalid_input", "status")
    g.diag(doc, "files_too_large")
    t.write("g", b"x" * 10)
    r = t.run(["run", "--policy", path, "--json", "--file", "g=g", "-c", "pass"])
    r.expect_rc(0)


def test_cli_file_not_regular(t):
    g.need_python()
    os.mkfifo(t.path("fifo"))
    r = t.run(["run", "--preset", "trusted", "--file", "a=fifo", "-c", "pass"], timeout=10)
    r.expect_rc(125)
    g.check(r.wall < 5, "blocked on a FIFO")
    g.check("not a regular file" in r.err, r.describe())
    r = t.run(["run", "--preset", "trusted", "--file", "a=" + t.tmp, "-c", "pass"])
    r.expect_rc(125)


TAMPER = r"""
import os, sys, json
out = {}
out["content"] = open("in.txt").read()
st = os.stat("in.txt")
out["mode"] = oct(st.st_mode & 0o777)
for op in ("write", "append", "chmod", "unlink", "rename_over", "rename_away", "truncate"):
    try:
        if op == "write":
            open("in.txt", "w").write("pwned")
        elif op == "append":
            open("in.txt", "a").write("pwned")
        elif op == "chmod":
            os.chmod("in.txt", 0o666)
            open("in.txt", "w").write("pwned")
        elif op == "unlink":
            os.unlink("in.txt")
        elif op == "rename_over":
            open("new", "w").write("pwned")
            os.rename("new", "in.txt")
        elif op == "rename_away":
            os.rename("in.txt", "moved")
        elif op == "truncate":
            os.truncate("in.txt", 0)
        out[op] = "done"
    except OSError as e:
        out[op] = e.errno
out["after"] = open("in.txt").read() if os.path.exists("in.txt") else None
print(json.dumps(out))
"""


def test_files_in_read_only(t):
    g.need_python()
    data = b"the caller's bytes\n"
    host = t.write("in.txt", data)
    os.chmod(host, 0o666)
    before = os.stat(host)
    for backend in _backends():
        r = t.run(["run", "--policy", _policy(t, backend), "--backend", backend, "--json",
                   "--file", "in.txt=in.txt", "-c", TAMPER])
        r.expect_rc(0)
        doc = r.result()
        out = json.loads(doc["stdout"])
        g.eq(out["content"], data.decode(), "%s: content" % backend)
        g.eq(out["mode"], "0o444", "%s: mode" % backend)
        if backend == "restricted":
            # the sandbox's copy cannot be modified, chmodded, removed or replaced
            for op in ("write", "append", "chmod", "unlink", "rename_over", "rename_away",
                       "truncate"):
                g.check(out[op] != "done", "restricted: %s of a file in succeeded: %r"
                        % (op, out))
            g.eq(out["after"], data.decode(), "restricted: content after the attempts")
        # whatever the run did to its copy, the caller's file is untouched (a copy, never
        # a link or bind of it)
        with open(host, "rb") as f:
            g.eq(f.read(), data, "%s: the caller's file" % backend)
        now = os.stat(host)
        g.eq((now.st_mode, now.st_nlink, now.st_mtime_ns, now.st_ino),
             (before.st_mode, before.st_nlink, before.st_mtime_ns, before.st_ino),
             "%s: the caller's file's metadata" % backend)


def test_files_in_host_workdir_sandbox(t):
    """A restricted run whose policy binds the host's "/" has a fresh HOST workdir (no
    tmpfs can be mounted in that tree): the files are still read-only copies there,
    bound onto themselves inside the sandbox."""
    g.need_python()
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend")
    interp = os.path.realpath("/usr/bin/python3")
    if not os.path.exists(interp):
        raise g.Skip("no /usr/bin/python3 (an interpreter readable by the run's uid)")
    data = b"bound copy\n"
    host = t.write("in.txt", data)
    before = os.stat(host)
    pol = g.preset("strict")
    pol["filesystem"]["read"] = ["/"]
    pol["python"]["interpreter"] = interp
    path = t.write_json("root.json", pol)
    out = t.path("out")
    os.mkdir(out)
    r = t.run(["run", "--policy", path, "--backend", "restricted", "--json", "--file",
               "in.txt=in.txt", "--output-dir", out, "-c",
               TAMPER + "import os\nopen(os.environ['GOVEX_OUTPUT_DIR'] + '/o', 'w')\n"])
    doc = r.result()
    g.eq(doc["status"], "success", "status\n" + r.describe())
    res = json.loads(doc["stdout"])
    for op in ("write", "append", "chmod", "unlink", "rename_over", "rename_away", "truncate"):
        g.check(res[op] != "done", "host workdir: %s of a file in succeeded: %r" % (op, res))
    g.eq([f["name"] for f in doc["files"]], ["o"], "outputs from a host workdir")
    with open(host, "rb") as f:
        g.eq(f.read(), data, "the caller's file")
    g.eq(os.stat(host).st_mtime_ns, before.st_mtime_ns, "the caller's file's mtime")


OUTPUTS = r"""
import os
d = os.environ["GOVEX_OUTPUT_DIR"]
assert os.listdir(d) == [], os.listdir(d)
open(os.path.join(d, "b.txt"), "w").write("bee")
open(os.path.join(d, "a.csv"), "w").write("x,y\n1,2\n")
open(os.path.join(d, "plot.png"), "wb").write(b"\x89PNG\r\n\x1a\n" + b"\0" * 8)
open(os.path.join(d, "data.bin"), "wb").write(b"\x00\x01")
open(os.path.join(d, "empty.json"), "w").close()
os.symlink("/etc/passwd", os.path.join(d, "link.txt"))
os.symlink("b.txt", os.path.join(d, "rel.txt"))
os.mkfifo(os.path.join(d, "fifo.txt"))
os.mkdir(os.path.join(d, "sub"))
open(os.path.join(d, "sub", "inner.txt"), "w").write("no")
open(os.path.join(d, ".hidden"), "w").write("no")
open(os.path.join(d, "bad name"), "w").write("no")
open(os.path.join(d, "orig.txt"), "w").write("orig")
os.link(os.path.join(d, "orig.txt"), os.path.join(d, "hard.txt"))
import socket
try:
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(d, "sock"))
except OSError:  # strict denies sockets
    os.mkdir(os.path.join(d, "sock"))
"""


def _files(doc):
    return {f["name"]: f for f in doc["files"]}


def test_outputs_collected(t):
    g.need_python()
    for backend in _backends():
        r = t.run(["run", "--policy", _policy(t, backend), "--backend", backend, "--json",
                   "--output-dir", t.tmp, "-c", OUTPUTS], timeout=30)
        g.check(r.wall < 20, "%s: collection blocked\n%s" % (backend, r.describe()))
        doc = r.result()
        g.eq(doc["status"], "success", "%s: status\n%s" % (backend, r.describe()))
        fs = _files(doc)
        g.eq(sorted(fs), ["a.csv", "b.txt", "data.bin", "empty.json", "plot.png"],
             "%s: files collected" % backend)
        g.eq([f["name"] for f in doc["files"]], sorted(fs), "%s: name-sorted" % backend)
        g.eq(fs["b.txt"], {"name": "b.txt", "bytes": 3, "mime": "text/plain",
                           "sha256": hashlib.sha256(b"bee").hexdigest()}, "b.txt")
        g.eq(fs["a.csv"]["mime"], "text/csv", "csv mime")
        g.eq(fs["plot.png"]["mime"], "image/png", "png mime (sniffed)")
        g.eq(fs["data.bin"]["mime"], "application/octet-stream", "bin mime")
        g.eq(fs["empty.json"]["bytes"], 0, "empty file")
        skipped = " ".join(d["message"] for d in doc["diagnostics"]
                           if d["code"] == "output_skipped")
        for name in ("link.txt", "rel.txt", "fifo.txt", "sub", ".hidden", "bad name",
                     "hard.txt", "orig.txt", "sock"):
            g.check("'%s'" % name in skipped, "%s: %s not reported as skipped: %s"
                    % (backend, name, skipped))
        with open(t.path("b.txt"), "rb") as f:
            g.eq(f.read(), b"bee", "--output-dir copy")
        for name in ("link.txt", "fifo.txt", "sub", "orig.txt"):
            g.check(not os.path.lexists(t.path(name)), "%s copied out" % name)
        for n in fs:
            os.unlink(t.path(n))


def test_outputs_bounded(t):
    g.need_python()
    code = ("import os\nd = os.environ['GOVEX_OUTPUT_DIR']\n"
            "for i in range(10):\n"
            "    open(os.path.join(d, 'f%d.txt' % i), 'w').write('x' * 100)\n"
            "f = open(os.path.join(d, 'sparse.bin'), 'wb'); f.truncate(1 << 40); f.close()\n")
    for backend in _backends():
        path = _policy(t, backend, files_out_count=4, files_out_bytes=250,
                       file_size_bytes=None)
        out = t.path("out-" + backend)
        os.mkdir(out)
        r = t.run(["run", "--policy", path, "--backend", backend, "--json", "--output-dir", out,
                   "-c", code], timeout=30)
        doc = r.result()
        g.eq(doc["status"], "success", "%s: status\n%s" % (backend, r.describe()))
        g.check(sum(f["bytes"] for f in doc["files"]) <= 250, "%s: bytes bound" % backend)
        g.eq([f["name"] for f in doc["files"]], ["f0.txt", "f1.txt"],
             "%s: name-sorted within the bounds" % backend)
        codes = [d["code"] for d in doc["diagnostics"]]
        g.check("output_truncated" in codes, "%s: no output_truncated: %r" % (backend, codes))
        g.check(r.wall < 20, "%s: a sparse 1 TiB file was read" % backend)


def test_output_dir_replaced_by_symlink(t):
    g.need_python()
    secret = t.write("secret.txt", "host secret")
    os.chmod(t.tmp, 0o755)
    code = ("import os, shutil\nd = os.environ['GOVEX_OUTPUT_DIR']\n"
            "os.rmdir(d)\nos.symlink(%r, d)\n" % os.path.dirname(secret))
    for backend in _backends():
        out = t.path("out-" + backend)
        os.mkdir(out)
        r = t.run(["run", "--policy", _policy(t, backend), "--backend", backend, "--json",
                   "--output-dir", out, "-c", code])
        doc = r.result()
        g.eq(os.listdir(out), [], "%s: copied out" % backend)
        g.eq(doc["files"], [], "%s: files through a replaced output dir" % backend)
        g.diag(doc, "output_skipped")


def test_no_outputs_no_files_member(t):
    g.need_python()
    r = t.run(["run", "--preset", "trusted", "--json", "-c",
               "import os; print(os.environ.get('GOVEX_OUTPUT_DIR'))"])
    r.expect_rc(0)
    doc = r.result()
    g.check("files" not in doc, "files member without outputs")
    g.eq(doc["stdout"], "None\n", "GOVEX_OUTPUT_DIR without outputs")


def test_output_dir_refusals(t):
    g.need_python()
    code = ("import os\nopen('%s/ran', 'w').close()\n"
            "open(os.path.join(os.environ['GOVEX_OUTPUT_DIR'], 'x.txt'), 'w').write('new')\n")
    marker_dir = t.path("m")
    os.mkdir(marker_dir)
    pol = g.preset("trusted")
    path = t.write_json("p.json", pol)
    # DIR must exist: refused before anything runs
    r = t.run(["run", "--policy", path, "--backend", "controlled", "--output-dir",
               t.path("missing"), "-c", code % marker_dir])
    r.expect_rc(125)
    g.check("--output-dir" in r.err, r.describe())
    g.check(not os.path.exists(os.path.join(marker_dir, "ran")), "ran despite a missing DIR")
    # an existing entry is never overwritten, a symlink in DIR never followed
    out = t.path("out")
    os.mkdir(out)
    target = t.write("target.txt", "keep")
    os.symlink(target, os.path.join(out, "x.txt"))
    r = t.run(["run", "--policy", path, "--backend", "controlled", "--output-dir", out, "-c",
               code % marker_dir])
    r.expect_rc(125)
    g.check("x.txt" in r.err and "not overwritten" in r.err, r.describe())
    with open(target) as f:
        g.eq(f.read(), "keep", "the symlink's target")
    g.check(os.path.islink(os.path.join(out, "x.txt")), "the symlink was replaced")
    # with --json the document says so too
    r = t.run(["run", "--policy", path, "--backend", "controlled", "--json", "--output-dir",
               out, "-c", code % marker_dir])
    r.expect_rc(125)
    d = g.diag(r.result(), "output_not_copied")
    g.check("'x.txt'" in d.get("message", ""), "the refused copy is named: %r" % d)


def test_exec_and_call(t):
    g.need_python()
    t.write("in.txt", "exec input")
    r = t.run(["exec", "--preset", "trusted", "--json", "--file", "in.txt=in.txt",
               "--", "cat", "in.txt"])
    r.expect_rc(0)
    g.eq(r.result()["stdout"], "exec input", "exec with --file")
    t.write("mod.py", "import os\n\ndef f(n: int) -> int:\n"
            "    open(os.path.join(os.environ['GOVEX_OUTPUT_DIR'], 'o.txt'), 'w')"
            ".write(open('in.txt').read() * n)\n    return n\n")
    out = t.path("out")
    os.mkdir(out)
    r = t.run(["call", "--preset", "trusted", "--json", "--file", "in.txt=in.txt",
               "--output-dir", out, "mod.py:f", "--args", '{"n": 2}'])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["value"], 2, "call value")
    g.eq([f["name"] for f in doc["files"]], ["o.txt"], "call files")
    with open(os.path.join(out, "o.txt")) as f:
        g.eq(f.read(), "exec inputexec input", "call output file")


def test_unprivileged_restricted(t):
    """Without root the sandbox is a user namespace: the run has the shim's own uid, so
    only the read-only bind keeps it from chmodding or removing a file in."""
    g.need_python()
    if os.geteuid() != 0:
        raise g.Skip("needs root to become nobody")
    os.chmod(t.tmp, 0o755)
    t.write("in.txt", "abc")
    os.chmod(t.path("in.txt"), 0o644)
    out = t.path("out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    pol = g.preset("strict")
    pol["limits"].update(memory_bytes=None, cpu_ms=None, processes=None)
    path = t.write_json("p.json", pol)
    os.chmod(path, 0o644)
    code = ("import os\nres = [open('in.txt').read()]\n"
            "for op in (lambda: os.chmod('in.txt', 0o666), lambda: os.unlink('in.txt'),\n"
            "           lambda: open('in.txt', 'w')):\n"
            "    try:\n        op()\n        res.append('done')\n"
            "    except OSError as e:\n        res.append(e.errno)\n"
            "print(res)\n"
            "open(os.environ['GOVEX_OUTPUT_DIR'] + '/r.txt', 'w').write('x')\n")

    def nobody():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    # a copy nobody can execute, wherever the build tree is (as escapetest's
    # need_unprivileged_sandbox makes one)
    binary = t.path("bin", "govex")
    os.mkdir(t.path("bin"), 0o755)
    shutil.copy2(g.GOVEX, binary)
    os.chmod(binary, 0o755)
    p = subprocess.run([binary, "run", "--policy", path, "--backend", "restricted", "--json",
                        "--file", "in.txt=in.txt", "--output-dir", out, "-c", code],
                       cwd=t.tmp, env=dict(os.environ, HOME=t.tmp), preexec_fn=nobody,
                       capture_output=True, timeout=60)
    doc = json.loads(p.stdout)
    if any(d["code"] == "missing_controls" for d in doc["diagnostics"]):
        raise g.Skip("no unprivileged sandbox here: %r" % doc["diagnostics"])
    g.eq(doc["status"], "success", "status: %r" % doc)
    g.eq(doc["stdout"], "['abc', %d, %d, %d]\n" % (errno.EROFS, errno.EBUSY, errno.EROFS),
         "a file in as nobody: read, chmod, unlink, write")
    g.eq([f["name"] for f in doc["files"]], ["r.txt"], "outputs as nobody")
    with open(os.path.join(out, "r.txt")) as f:
        g.eq(f.read(), "x", "copied out")


TESTS = [
    ("policy digests unchanged: new limits omitted at their defaults",
     test_policy_digests_unchanged),
    ("plan members files/outputs only when given, GOVEX_OUTPUT_DIR listed", test_plan_members),
    ("invalid and duplicate file names: invalid_input naming the file", test_invalid_names),
    ("files over limits.files_in_bytes: files_too_large", test_files_too_large),
    ("--file PATH must be a regular file, a FIFO does not block", test_cli_file_not_regular),
    ("files in are read-only copies; the caller's file is never touched",
     test_files_in_read_only),
    ("files in a sandbox's fresh host workdir (policy binds /): read-only too",
     test_files_in_host_workdir_sandbox),
    ("outputs: regular files only, sorted, sha256 and mime; links, FIFOs, dirs, hard links, "
     "sockets and bad names skipped", test_outputs_collected),
    ("outputs bounded by count and bytes; a sparse huge file is not read",
     test_outputs_bounded),
    ("output dir replaced by a symlink: nothing read through it",
     test_output_dir_replaced_by_symlink),
    ("no outputs requested: no files member, no GOVEX_OUTPUT_DIR",
     test_no_outputs_no_files_member),
    ("--output-dir: must exist, never overwrites, never follows a symlink",
     test_output_dir_refusals),
    ("exec and call take --file and --output-dir", test_exec_and_call),
    ("unprivileged restricted (user namespace): files in read-only, outputs collected",
     test_unprivileged_restricted),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
