#!/usr/bin/env python3
"""Round-2 red team RT-A: files in (contract section 4), plans and policy digests,
written against the contract before the implementation (files out:
test_redteam_outputs.py).

Names that are not plain file names are refused as invalid_input naming the file,
before anything runs (CLI, library); an input the run attacks (write, truncate, chmod,
replace, unlink, hardlink, umount its bind) never changes the caller's host file, is
never a link to it and stays read-only inside (restricted as root, as nobody, with a
host workdir; controlled); totals over files_in_bytes are refused, --file never blocks
on a FIFO nor reads /dev/zero or a 1 TiB sparse file; inputs are data, never importable
code.  Plans: files change the plan digest (bytes, not paths), a swapped file refuses a
planned run; requests and policies that use none of the features keep main's bytes
(recorded from main's build before any branch landed).

Every operation inside a sandbox runs behind rtahelp's canary.  A failing test is a
finding; its message says what was seen."""
import hashlib
import json
import os
import stat
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rtahelp as h  # noqa: E402
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402
from rtahelp import (SECRET, MiB, sha, _host_file, _snap, _marker_policy,  # noqa: E402,F401
                     _refused_invalid, _exec_pol, _leak_check, _secrets)


# ---------------------------------------------------------------- files in: names

# (name, printable form the diagnostic must mention or None)
BAD_NAMES = [
    ("../x", "../x"), ("/etc/x", "/etc/x"), ("a/b", "a/b"), (".hidden", ".hidden"),
    ("", None), ("a" * 129, "a" * 64), (".", None), ("..", None), ("a b", "a b"),
    ("a:b", "a:b"), ("caf\u00e9.txt", None), ("a\nb", None), ("a\x1b[31mb", None),
    ("a\tb", None), ("a\x7fb", None), ("x\\y", None), ("*", None),
]




def test_input_names_refused_cli(t):
    """Every name outside [A-Za-z0-9._-]{1,128} (no leading '.', not '.'/'..') given with
    --file NAME=PATH is refused: invalid_input, exit 125, a diagnostic naming it, and the
    code never runs.  Names with control characters must not reach the terminal raw."""
    polf, marker = _marker_policy(t)
    src = _host_file(t, "in.txt", b"hello\n")
    code = "open(%r, 'w').write('x')\n" % marker
    problems = []
    for name, mention in BAD_NAMES:
        r = t.run(["run", "--policy", polf, "--json", "--file", "%s=%s" % (name, src),
                   "-c", code])
        try:
            _refused_invalid(r, marker, "--file %r" % name, mention)
            g.check(b"\x1b" not in r.stderr and b"\x1b" not in r.stdout,
                    "--file %r: a raw ESC reached govex's output: %r" % (name, r.stderr[-300:]))
        except g.Failure as ex:
            problems.append("%s [stderr %r]" % (str(ex).splitlines()[0], r.stderr[-200:]))
    g.check(not problems, "%d of %d names not refused as the contract says:\n%s"
            % (len(problems), len(BAD_NAMES), "\n".join(problems)))
    # duplicates (same name twice, even with the same bytes)
    r = t.run(["run", "--policy", polf, "--json", "--file", "dup.txt=" + src,
               "--file", "dup.txt=" + src, "-c", code])
    _refused_invalid(r, marker, "duplicate --file dup.txt", "dup.txt")
    # the positive controls: 128 characters and every allowed character class
    for name in ("a" * 128, "A-b_c.1.csv"):
        r = t.run(["run", "--policy", polf, "--json", "--file", "%s=%s" % (name, src),
                   "-c", "print(open(%r).read(), end='')" % name])
        r.expect_rc(0)
        g.eq(r.result()["stdout"], "hello\n", "the input %r read back" % name)


def test_input_names_refused_library(t):
    """The same rule in the library (struct govex_file), plus what only the API can
    express: non-UTF-8 bytes, C1 controls, a NULL name, a name that hides '/' after a
    NUL (C sees "ok"; refused or not, nothing named "/etc" may appear), duplicates."""
    polf, marker = _marker_policy(t)
    doc = json.load(open(polf))
    code = "open(%r, 'w').write('x')\n" % marker
    names = [n.encode() for n, _ in BAD_NAMES] + [b"\xff\xfe", b"a\xc2\x9bb", None]
    for name in names:
        ans = h.lib_run(t, code, doc, files=[(name, b"data")])
        g.check(ans.get("rc") == 0 and "doc" in ans,
                "name %r: the API failed instead of returning a refusal: %r" % (name, ans))
        g.eq(ans["doc"]["status"], "invalid_input", "name %r: status (%r)"
             % (name, ans["doc"].get("diagnostics")))
        g.check(not os.path.exists(marker), "name %r: the code ran" % (name,))
    ans = h.lib_run(t, code, doc, files=[(b"same.txt", b"1"), (b"same.txt", b"2")])
    g.eq(ans["doc"]["status"], "invalid_input", "duplicate names: status")
    g.check(not os.path.exists(marker), "duplicate names: the code ran")


# ---------------------------------------------------------------- files in: tampering

TAMPER = [
    ("write", "with open('data.txt', 'r+b') as f:\n    f.write(b'PWNED')\nR = 1"),
    ("append", "with open('data.txt', 'ab') as f:\n    f.write(b'PWNED')\nR = 1"),
    ("trunc_open", "open('data.txt', 'wb').close()\nR = 1"),
    ("truncate", "os.truncate('data.txt', 0)\nR = 1"),
    ("chmod", "os.chmod('data.txt', 0o666)\nR = oct(os.stat('data.txt').st_mode)"),
    ("chmod_write", "with open('data.txt', 'r+b') as f:\n    f.write(b'PWNED')\nR = 1"),
    ("utime", "os.utime('data.txt', (0, 0))\nR = 1"),
    ("rename_over", "open('new.txt', 'wb').write(b'PWNED')\n"
                    "os.rename('new.txt', 'data.txt')\nR = 1"),
    ("unlink", "os.unlink('data.txt')\nR = 1"),
    ("rename_away", "os.rename('data.txt', 'moved.txt')\nR = 1"),
    ("link_write", "os.link('data.txt', 'hl.txt')\n"
                   "with open('hl.txt', 'r+b') as f:\n    f.write(b'PWNED')\nR = 1"),
    ("xattr", "os.setxattr('data.txt', 'user.rta', b'1')\nR = 1"),
    ("umount_write", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                     "if libc.umount2(b'data.txt', 2) != 0:\n"
                     "    raise OSError(ctypes.get_errno(), 'umount2')\n"
                     "os.unlink('data.txt')\nopen('data.txt', 'wb').write(b'PWNED')\nR = 1"),
    ("beside", "open('mine.txt', 'wb').write(b'mine')\nR = open('mine.txt','rb').read().decode()"),
    ("after", "st = os.stat('data.txt')\n"
              "R = {'data': open('data.txt', 'rb').read().decode('latin-1'),\n"
              "     'mode': st.st_mode, 'nlink': st.st_nlink, 'dev': st.st_dev,\n"
              "     'ino': st.st_ino,\n"
              "     'mounts': [l for l in open('/proc/self/mountinfo') if 'data' in l]}"),
]


def _tamper(t, backend):
    original = b"caller's data " + SECRET.encode() + b"\n"
    host = _host_file(t, "caller-data.txt", original, 0o644)
    before = _snap(host)
    ops = [h.op(label, src) for label, src in TAMPER]
    if backend == "restricted":
        polf = h.pol(t)
        r, doc, res = h.run_rta(t, ops, polf, args=["--file", "data.txt=" + host])
    elif backend == "restricted-hostwd":
        # a policy reading / gets a host workdir (the sandbox shows the host's /etc, so
        # the canary cannot hold: the operations here touch only ./data.txt)
        # (/usr/bin/python3: the slot uid cannot reach an interpreter under /root)
        polf = h.pol(t, name="hostwd.json", filesystem={"read": ["/"]},
                     python={"interpreter": os.path.realpath("/usr/bin/python3"),
                             "site": False})
        r, doc, res = h.run_rta(t, ops, polf, args=["--file", "data.txt=" + host],
                                sandbox=False)
        g.eq(doc["backend"]["name"], "restricted", "backend")
        g.check(res is not None, "no probe output\n" + r.describe())
    else:
        polf = h.pol(t, base="trusted", backend="controlled")
        r, doc, res = h.run_rta(t, ops, polf, args=["--file", "data.txt=" + host],
                                sandbox=False)
        g.check(res is not None, "no probe output\n" + r.describe())
    after = _snap(host)
    for k in ("data", "mode", "mtime_ns", "ino", "nlink", "uid"):
        g.eq(after[k], before[k], "%s: the caller's host file's %s after the run "
             "attacked its input (run results: %r)" % (backend, k, res))
    return original, host, before, res


def test_input_file_tampering_restricted(t):
    """The run writes, appends, truncates, chmods, utimes, renames over, unlinks,
    hardlinks and writes, and sets an xattr on its input: the caller's file never
    changes; inside, every one of these is refused (read-only, cannot be replaced);
    its own new file beside it is fine; the input is not a link to the host file
    (other inode, one link, no mount of the host path)."""
    e.need_restricted("syscall_filter")
    original, host, before, res = _tamper(t, "restricted")
    bad = [label for label, _ in TAMPER if label not in ("beside", "after")
           and res.get(label, {}).get("ok")]
    g.check(not bad, "the run modified or replaced its read-only input with: %s (%r)"
            % (bad, {b: res[b] for b in bad}))
    g.eq(h.ok(res, "beside"), "mine", "a new file beside the input")
    a = h.ok(res, "after")
    g.eq(a["data"].encode("latin-1"), original, "the input read back inside after the "
         "attacks")
    g.check(not a["mode"] & 0o222, "the input is writable by mode: %o" % a["mode"])
    st = os.stat(host)
    g.check((a["dev"], a["ino"]) != (st.st_dev, st.st_ino),
            "the input IS the caller's host file (same device and inode)")
    g.eq(a["nlink"], 1, "links of the input inside")
    g.check(not any(host in m or os.path.dirname(host) in m for m in a["mounts"]),
            "a host path is mounted for the input: %r" % a["mounts"])


def test_input_file_tampering_as_nobody(t):
    """The same attacks by the run of an unprivileged caller (nobody): the input belongs
    to the same uid as the run there, so only the read-only bind holds it (no umount, no
    chmod, no replace)."""
    e.need_restricted("syscall_filter")
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    original = b"nobody's data " + SECRET.encode() + b"\n"
    host = os.path.join(home, "nobody-data.txt")
    with open(host, "wb") as f:
        f.write(original)
    os.chown(host, e.NOBODY, e.NOBODY)
    os.chmod(host, 0o644)
    before = _snap(host)
    polf = e.without_aggregate(h.pol(t, name="nobody.json"))
    os.chmod(polf, 0o644)
    ops = [h.op(label, src) for label, src in TAMPER]
    rc, out, err, _ = e.spawn(["run", "--policy", polf, "--json", "--file",
                               "data.txt=" + host, "-c", h.rta_code(ops)], cwd=home, env=env,
                              preexec=e.nobody_preexec(), binary=binary)
    doc = e.result_of(out)
    res = h.probe_of(doc.get("stdout"))
    h.rta_proven(res, "as nobody: %r %r" % (doc.get("diagnostics"), err[-300:]))
    g.eq(_snap(host), before, "nobody's host file after the attacks")
    bad = [label for label, _ in TAMPER if label not in ("beside", "after")
           and res.get(label, {}).get("ok")]
    g.check(not bad, "as nobody, the run modified or replaced its read-only input with: %s"
            % bad)
    g.eq(h.ok(res, "after")["data"].encode("latin-1"), original, "the input inside")


def test_input_file_tampering_restricted_host_workdir(t):
    """The same attacks under restricted with a host workdir (a policy reading /: the
    files are placed on the host, then bound read-only in the sandbox): refused, the
    caller's file unchanged."""
    e.need_restricted("syscall_filter")
    original, host, before, res = _tamper(t, "restricted-hostwd")
    bad = [label for label, _ in TAMPER if label not in ("beside", "after")
           and res.get(label, {}).get("ok")]
    g.check(not bad, "host workdir: the run modified or replaced its read-only input with: "
            "%s (%r)" % (bad, {b: res[b] for b in bad}))
    g.eq(h.ok(res, "after")["data"].encode("latin-1"), original, "the input inside")
    st = os.stat(host)
    a = h.ok(res, "after")
    g.check((a["dev"], a["ino"]) != (st.st_dev, st.st_ino),
            "the input IS the caller's host file (same device and inode)")


def test_input_file_tampering_controlled(t):
    """The same attacks under the controlled backend (no sandbox; the run has the
    caller's uid): the input is a copy, so the caller's file never changes."""
    _tamper(t, "controlled")


def test_input_hardlink_into_outputs(t):
    """The run hardlinks its input into $GOVEX_OUTPUT_DIR and writes through the link:
    refused or harmless; the caller's file is unchanged."""
    e.need_restricted("syscall_filter")
    original = b"input bytes\n"
    host = _host_file(t, "caller-in.txt", original)
    before = _snap(host)
    out = t.path("D")
    os.mkdir(out)
    _, doc, res = h.run_rta(t, [
        h.op("link", "os.link('in.txt', os.path.join(OUT, 'h.txt'))\nR = 1"),
        h.op("write", "with open(os.path.join(OUT, 'h.txt'), 'r+b') as f:\n"
                      "    f.write(b'PWNED')\nR = 1"),
        h.op("read", "R = open('in.txt', 'rb').read().decode()")],
        h.pol(t), args=["--file", "in.txt=" + host, "--output-dir", out])
    g.check(not res["write"].get("ok"), "writing the input through a hardlink worked")
    g.eq(h.ok(res, "read"), original.decode(), "the input inside")
    g.eq(_snap(host), before, "the caller's file")
    for f in h.listed(doc):
        if f["name"] == "h.txt":
            g.eq(f["sha256"].split(":")[-1], sha(original), "h.txt listed with other bytes")


# ---------------------------------------------------------------- files in: bounds, paths

def test_files_in_bytes(t):
    """limits.files_in_bytes bounds the total of the inputs: 600+600 over 1000 is
    invalid_input / files_too_large and nothing runs; 400+600 (exactly 1000) runs."""
    w = t.path("w")
    os.mkdir(w)
    os.chmod(w, 0o777)
    os.chmod(t.tmp, 0o711)
    marker = os.path.join(w, "ran")
    polf = h.pol(t, limits={"files_in_bytes": 1000}, filesystem={"write": [w]})
    a = _host_file(t, "a.bin", b"a" * 600)
    b = _host_file(t, "b.bin", b"b" * 600)
    c = _host_file(t, "c.bin", b"c" * 400)
    code = "open(%r, 'w').write('x')\n" % marker
    r = t.run(["run", "--policy", polf, "--json", "--file", "a=" + a, "--file", "b=" + b,
               "-c", code])
    doc = _refused_invalid(r, marker, "1200 bytes over files_in_bytes 1000")
    g.diag(doc, "files_too_large")
    r = t.run(["run", "--policy", polf, "--json", "--file", "a=" + a, "--file", "c=" + c,
               "-c", code])
    r.expect_rc(0)
    g.check(os.path.exists(marker), "exactly files_in_bytes did not run")


def test_files_in_default_bound_sparse(t):
    """Under the default files_in_bytes (64 MiB): --file with a 1 TiB sparse file is
    refused (files_too_large) promptly, the CLI never reading it all (seconds, small
    memory); 64 MiB + 1 byte is refused too."""
    marker = t.path("never")
    polf = h.pol(t)
    big = t.path("sparse.bin")
    with open(big, "wb") as f:
        f.truncate(1 << 40)
    over = t.path("over.bin")
    with open(over, "wb") as f:
        f.truncate(64 * MiB + 1)
    for path, what in ((big, "1 TiB sparse"), (over, "64 MiB + 1")):
        r = t.run(["run", "--policy", polf, "--json", "--file", "big.bin=" + path,
                   "-c", "open(%r,'w')" % marker], timeout=60)
        doc = _refused_invalid(r, marker, what)
        g.diag(doc, "files_too_large")
        g.check(r.wall < 15, "%s: refused only after %.1f s" % (what, r.wall))
        rss = r.rusage.ru_maxrss * 1024
        g.check(rss < 512 * MiB, "%s: govex's RSS reached %d MiB" % (what, rss // MiB))


def test_file_path_special(t):
    """--file NAME=PATH with PATH /dev/zero, a FIFO with no writer, a FIFO with a writer
    that never stops, a directory, /dev/stdin: refused (not a regular file) at once,
    never blocking and never reading an endless stream; nothing runs."""
    polf, marker = _marker_policy(t)
    code = "open(%r, 'w').write('x')\n" % marker
    fifo = t.path("fifo")
    os.mkfifo(fifo)
    fifo2 = t.path("fifo2")
    os.mkfifo(fifo2)
    stop = threading.Event()

    def writer():                        # keeps fifo2 open for writing and full
        try:
            fd = os.open(fifo2, os.O_RDWR)
        except OSError:
            return
        os.set_blocking(fd, False)
        while not stop.is_set():
            try:
                os.write(fd, b"z" * 4096)
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
        os.close(fd)
    th = threading.Thread(target=writer, daemon=True)
    th.start()
    d = t.path("adir")
    os.mkdir(d)
    try:
        for path in ("/dev/zero", fifo, fifo2, d, "/dev/stdin", "/dev/null"):
            r = t.run(["run", "--policy", polf, "--json", "--file", "x.bin=" + path,
                       "-c", code], timeout=20)
            g.check(not r.hard_timeout, "--file x.bin=%s blocked govex\n%s"
                    % (path, r.describe()))
            g.check(r.wall < 10, "--file x.bin=%s took %.1f s" % (path, r.wall))
            _refused_invalid(r, marker, "--file x.bin=%s" % path)
    finally:
        stop.set()
        th.join(5)



def test_input_named_like_the_output_dir(t):
    """An input named "output" (a valid name) with outputs requested: the workdir's
    output directory has that name.  Expected: refused at planning as invalid_input
    naming it (nothing runs), or the run gets both; never a launch failure reported as
    execution_failed."""
    e.need_restricted("syscall_filter")
    src = _host_file(t, "in.txt", b"input\n")
    for backend in ("restricted", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend)
        r = t.run(["run", "--policy", polf, "--json", "--file", "output=" + src,
                   "--output-dir", out, "-c", "print('ran')"])
        doc = r.result()
        if doc["status"] == "invalid_input":
            g.check("output" in json.dumps(doc.get("diagnostics")),
                    "%s: the refusal does not name the file: %r" % (backend,
                                                                  doc.get("diagnostics")))
            g.eq(doc["stdout"], "", backend + ": stdout of a refused run")
            continue
        g.eq(doc["status"], "success", "%s: status of a run with an input named 'output' "
             "(diagnostics %r)" % (backend, doc.get("diagnostics")))



def test_named_workdir_never_written(t):
    """A policy whose workdir is a named host directory: --file and --output-dir are
    refused (invalid_input) and nothing is written into that directory (govex must not
    drop a caller's input, or an output directory, into a host directory)."""
    named = t.path("named")
    os.mkdir(named)
    os.chmod(named, 0o777)
    os.chmod(t.tmp, 0o711)
    polf = h.pol(t, workdir=named, filesystem={"write": [named]})
    src = _host_file(t, "in.txt", b"x")
    out = t.path("D")
    os.mkdir(out)
    for args in (["--file", "in.txt=" + src], ["--output-dir", out]):
        r = t.run(["run", "--policy", polf, "--json"] + args + ["-c", "print('RAN')"])
        doc = r.result()
        g.eq(doc["status"], "invalid_input", "%s with a named workdir\n%s"
             % (args[0], r.describe()))
        g.eq(doc["stdout"], "", "stdout")
        g.eq(os.listdir(named), [], "%s: the named workdir afterwards" % args[0])



def test_inputs_never_importable_by_a_called_function(t):
    """Files in are data, not code: a called function's `import statistics` gets the
    standard library's, and `import rtamylib` does not find an input rtamylib.py.
    (Over MCP the model chooses the files of a module tool's call: an importable input
    would be code injection into the operator's function.)"""
    e.need_restricted("syscall_filter")
    mod = t.write("tool.py", (
        "def f() -> list:\n    out = []\n    import statistics\n"
        "    out.append(getattr(statistics, 'PWNED', 'stdlib'))\n"
        "    try:\n        import rtamylib\n        out.append(rtamylib.X)\n"
        "    except ImportError:\n        out.append('ImportError')\n    return out\n"))
    evil1 = _host_file(t, "evil1.py", b"PWNED = 'an input shadowed statistics'\n")
    evil2 = _host_file(t, "evil2.py", b"X = 'an input was imported'\n")
    r = t.run(["call", "--policy", h.pol(t), "--json", "--file", "statistics.py=" + evil1,
               "--file", "rtamylib.py=" + evil2, mod + ":f"])
    doc = r.result()
    g.eq(doc["status"], "success", "status\n" + r.describe())
    g.eq(doc["value"], ["stdlib", "ImportError"], "what the function imported")



# ---------------------------------------------------------------- plans, policies

# Recorded from main's build (a291639) before any round-2 branch landed.
MAIN_PRESET_DIGESTS = {
    "strict": "sha256:2a0496ed562f7d0bb9737782469d299a6ffd124d40acfc373b5bc0c5f1c21290",
    "trusted": "sha256:9c330330677980403ff3a10464f1cd642cd3b40d8da34ce2bf8e94507e64751e",
}
# `policy show workspace` with filesystem.read = ["/srv/rta-fixed"] (workspace's read
# root is the cwd, resolved at show time)
MAIN_WORKSPACE_FIXED_DIGEST = \
    "sha256:6068fe11db4d2f19ff2428da8460c31732cb5d80013c39e6ec7835e3a96fcd4d"
MAIN_PLAN_PRINT1 = json.loads(r'''{"approval":[],"backend":{"name":"restricted","version":"govex.restricted-linux/v1"},"code":{"bytes":8,"digest":"sha256:d287bb7f9d15abdc5b6e98536263815744b6ef21c8f3c839fc434ca70d8efe99","language":"python","source_path":null},"controls":{"required":["wall_time","output_bounds","env_allowlist","fresh_workdir","process_tree_kill","fd_hygiene","network_deny","fs_read_allowlist","fs_write_allowlist","subprocess_deny","memory_aggregate","cpu_time_aggregate","pids_aggregate","open_files_per_process","file_size_per_process"]},"environment":{"names":["LANG","PATH"]},"filesystem":{"platform_defaults":true,"read":[],"write":[]},"interpreter":{"args":["-I","-S"],"path":"/root/.pyenv/versions/3.11.7/bin/python3.11","version":"3.11.7"},"kind":"run","limits":{"call_input_bytes":1048576,"call_output_bytes":1048576,"code_bytes":65536,"cpu_ms":10000,"file_size_bytes":67108864,"memory_bytes":536870912,"open_files":256,"processes":64,"stderr_bytes":65536,"stdin_bytes":1048576,"stdout_bytes":65536,"wall_ms":5000},"needs":[],"network":"deny","policy_digest":"sha256:2a0496ed562f7d0bb9737782469d299a6ffd124d40acfc373b5bc0c5f1c21290","request_digest":"sha256:ab3c755db0bc0ed19e9aa2fe20be82092df45d9181bbb2ecdc4f445b89fb5369","shell":false,"stdin":{"bytes":0,"digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},"subprocess":"deny","version":"govex.plan/v1","workdir":{"mode":"fresh","path":null}}''')
MAIN_PLAN_STDIN = json.loads(r'''{"approval":[],"backend":{"name":"restricted","version":"govex.restricted-linux/v1"},"code":{"bytes":35,"digest":"sha256:c448b69ee14992f08eec1adb2b6d875bca2b56d8260653118daed1c750469871","language":"python","source_path":null},"controls":{"required":["wall_time","output_bounds","env_allowlist","fresh_workdir","process_tree_kill","fd_hygiene","network_deny","fs_read_allowlist","fs_write_allowlist","subprocess_deny","memory_aggregate","cpu_time_aggregate","pids_aggregate","open_files_per_process","file_size_per_process"]},"environment":{"names":["LANG","PATH"]},"filesystem":{"platform_defaults":true,"read":[],"write":[]},"interpreter":{"args":["-I","-S"],"path":"/root/.pyenv/versions/3.11.7/bin/python3.11","version":"3.11.7"},"kind":"run","limits":{"call_input_bytes":1048576,"call_output_bytes":1048576,"code_bytes":65536,"cpu_ms":10000,"file_size_bytes":67108864,"memory_bytes":536870912,"open_files":256,"processes":64,"stderr_bytes":65536,"stdin_bytes":1048576,"stdout_bytes":65536,"wall_ms":1000},"needs":[],"network":"deny","policy_digest":"sha256:2a0496ed562f7d0bb9737782469d299a6ffd124d40acfc373b5bc0c5f1c21290","request_digest":"sha256:e48f3f7d1901765068509171f68e3a1c4833b6d3645dbf379eedcbcfbbe7db22","shell":false,"stdin":{"bytes":3,"digest":"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},"subprocess":"deny","version":"govex.plan/v1","workdir":{"mode":"fresh","path":null}}''')


def _host_dependent(now, recorded):
    """RECORDED with the members that depend on this host (the interpreter, and the
    backend and its controls when the backend differs) taken from NOW."""
    want = dict(recorded)
    want["interpreter"] = now.get("interpreter")
    if now.get("backend") != recorded["backend"]:
        want["backend"] = now.get("backend")
        want["controls"] = now.get("controls")
    return want


def test_plans_without_files_unchanged(t):
    """A plan that uses none of the new features is main's plan, byte for byte (up to
    the host's interpreter): no files, outputs, HOME, repl member, no new env name."""
    r = t.run(["plan", "--backend", "restricted", "-c", "print(1)"])
    r.expect_rc(0)
    now = json.loads(r.stdout)
    g.eq(r.stdout, g.canonical_bytes(now), "plan bytes are canonical")
    g.eq(now, _host_dependent(now, MAIN_PLAN_PRINT1), "plan of print(1) vs main's")
    _host_file(t, "stdin.txt", b"abc")
    r = t.run(["plan", "--preset", "strict", "--backend", "restricted", "--timeout-ms",
               "1000", "--stdin", "stdin.txt", "-c", "import sys; print(sys.stdin.read())"])
    r.expect_rc(0)
    now = json.loads(r.stdout)
    g.eq(now, _host_dependent(now, MAIN_PLAN_STDIN), "plan with stdin and timeout vs main's")


def test_plans_bind_files(t):
    """Files are in the plan (name, bytes, digest; sorted by name; no host path): other
    bytes give another digest, the order of --file does not matter, the host path does
    not either; --output-dir adds outputs {max_files, max_bytes} and GOVEX_OUTPUT_DIR
    to environment.names, not DIR's path."""
    a1 = _host_file(t, "a1", b"alpha")
    a2 = _host_file(t, "a2", b"ALPHA")
    a3 = _host_file(t, "a3", b"alpha")
    b = _host_file(t, "b", b"beta!")
    pol = h.pol(t)

    def plan(*args):
        r = t.run(["plan", "--policy", pol] + list(args) + ["-c", "print(1)"])
        r.expect_rc(0)
        return r.stdout
    p_ab = plan("--file", "a.txt=" + a1, "--file", "b.txt=" + b)
    p_ba = plan("--file", "b.txt=" + b, "--file", "a.txt=" + a1)
    p_moved = plan("--file", "a.txt=" + a3, "--file", "b.txt=" + b)
    p_other = plan("--file", "a.txt=" + a2, "--file", "b.txt=" + b)
    p_none = plan()
    g.eq(p_ba, p_ab, "plan with --file in the other order")
    g.eq(p_moved, p_ab, "plan with the same bytes from another host path")
    g.check(p_other != p_ab, "a file's bytes changed and the plan did not")
    doc = json.loads(p_ab)
    g.eq(doc.get("files"), [{"name": "a.txt", "bytes": 5, "digest": g.sha256_digest(b"alpha")},
                            {"name": "b.txt", "bytes": 5, "digest": g.sha256_digest(b"beta!")}],
         "plan.files")
    g.check(t.tmp.encode() not in p_ab, "a host path is in the plan: %r" % p_ab)
    g.check("files" not in json.loads(p_none) and "outputs" not in json.loads(p_none),
            "a plan without the features has their members")
    d = t.path("D")
    os.mkdir(d)
    po = json.loads(plan("--output-dir", d))
    g.eq(po.get("outputs"), {"max_files": 64, "max_bytes": 64 * MiB}, "plan.outputs")
    g.check("GOVEX_OUTPUT_DIR" in po["environment"]["names"],
            "GOVEX_OUTPUT_DIR not in environment.names: %r" % po["environment"])
    g.check(d.encode() not in json.dumps(po).encode(), "--output-dir's path is in the plan")


def test_plan_execute_file_swapped(t):
    """plan with a file, then the file's bytes change (or it is dropped, or outputs are
    added) before run --plan: refused, nothing runs."""
    polf, marker = _marker_policy(t)
    src = t.write("prog.py", "open(%r, 'w').write('x')\n" % marker)
    data = _host_file(t, "data.txt", b"reviewed bytes")
    r = t.run(["plan", "--policy", polf, "--file", "data.txt=" + data, src])
    r.expect_rc(0)
    plan = t.write("plan.json", r.stdout)
    with open(data, "wb") as f:
        f.write(b"swapped bytes!")
    for args, what in ((["--file", "data.txt=" + data], "changed bytes"),
                       ([], "file dropped")):
        r = t.run(["run", "--policy", polf, "--json", "--plan", plan] + args + [src])
        doc = r.result()
        g.check(doc["status"] in ("source_mismatch", "policy_refused", "invalid_input"),
                "%s: status %r\n%s" % (what, doc["status"], r.describe()))
        g.check(not os.path.exists(marker), "%s: the code ran against the plan" % what)
    with open(data, "wb") as f:
        f.write(b"reviewed bytes")
    d = t.path("D")
    os.mkdir(d)
    r = t.run(["run", "--policy", polf, "--json", "--plan", plan, "--file",
               "data.txt=" + data, "--output-dir", d, src])
    g.check(r.result()["status"] != "success" and not os.path.exists(marker),
            "outputs added to a plan without them: it ran\n" + r.describe())
    r = t.run(["run", "--policy", polf, "--json", "--plan", plan, "--file",
               "data.txt=" + data, src])
    r.expect_rc(0)
    g.check(os.path.exists(marker), "the planned run with the reviewed bytes did not run")
    # call mode: the same through govex call --plan
    os.unlink(marker)
    mod = t.write("mod.py", "def f() -> int:\n    open(%r, 'w').write('x')\n    return 1\n"
                  % marker)
    r = t.run(["plan", "--policy", polf, "--file", "data.txt=" + data, mod + ":f"])
    r.expect_rc(0)
    cplan = t.write("cplan.json", r.stdout)
    with open(data, "wb") as f:
        f.write(b"swapped bytes!")
    for args, what in ((["--file", "data.txt=" + data], "call: changed bytes"),
                       ([], "call: file dropped")):
        r = t.run(["call", "--policy", polf, "--json", "--plan", cplan] + args)
        g.check(r.result()["status"] != "success" and not os.path.exists(marker),
                "%s: it ran\n%s" % (what, r.describe()))


def test_policy_digests_unchanged(t):
    """Preset digests are main's; the new limits at their defaults are omitted from the
    canonical bytes (same digest); other values change it."""
    for name, want in MAIN_PRESET_DIGESTS.items():
        p = t.path(name + ".json")
        r = t.run(["policy", "show", name])
        r.expect_rc(0)
        with open(p, "wb") as f:
            f.write(r.stdout)
        d = t.run(["policy", "digest", p])
        d.expect_rc(0)
        g.eq(d.out.strip(), want, "digest of preset %s" % name)
        g.check(b"files_" not in r.stdout, "preset %s shows a files_ limit" % name)
    ws = g.preset("workspace")
    ws["filesystem"]["read"] = ["/srv/rta-fixed"]
    p = t.write_json("ws.json", ws)
    g.eq(t.run(["policy", "digest", p]).out.strip(), MAIN_WORKSPACE_FIXED_DIGEST,
         "digest of workspace (read root fixed)")
    base = g.preset("strict")
    for k, v in (("files_in_bytes", 64 * MiB), ("files_out_bytes", 64 * MiB),
                 ("files_out_count", 64)):
        doc = json.loads(json.dumps(base))
        doc["limits"][k] = v
        p = t.write_json("d-%s.json" % k, doc)
        r = t.run(["policy", "digest", p])
        r.expect_rc(0)
        g.eq(r.out.strip(), MAIN_PRESET_DIGESTS["strict"], "strict with %s=%d (the default)"
             % (k, v))
        doc["limits"][k] = v - 1
        p = t.write_json("n-%s.json" % k, doc)
        c = t.run(["policy", "canon", p])
        c.expect_rc(0)
        g.check(('"%s":%d' % (k, v - 1)).encode() in c.stdout,
                "canon of strict with %s=%d lacks it: %r" % (k, v - 1, c.stdout[:300]))


if __name__ == "__main__":
    sys.exit(g.main([
        ("input names outside the rule are refused (CLI), nothing runs",
         test_input_names_refused_cli),
        ("input names outside the rule are refused (library), nothing runs",
         test_input_names_refused_library),
        ("an attacked input never changes the caller's file (restricted), read-only inside",
         test_input_file_tampering_restricted),
        ("an attacked input stays read-only for an unprivileged caller's run",
         test_input_file_tampering_as_nobody),
        ("an attacked input stays read-only in a restricted host workdir",
         test_input_file_tampering_restricted_host_workdir),
        ("an attacked input never changes the caller's file (controlled)",
         test_input_file_tampering_controlled),
        ("an input hardlinked into the outputs stays read-only",
         test_input_hardlink_into_outputs),
        ("files_in_bytes bounds the inputs' total",
         test_files_in_bytes),
        ("a 1 TiB sparse --file is refused promptly",
         test_files_in_default_bound_sparse),
        ("--file with /dev/zero, FIFOs, a directory: refused without blocking",
         test_file_path_special),
        ("inputs are never importable by a called function",
         test_inputs_never_importable_by_a_called_function),
        ("an input named like the output dir: refused or both work, never a launch failure",
         test_input_named_like_the_output_dir),
        ("a named workdir never receives files or an output dir",
         test_named_workdir_never_written),
        ("plans without the new features are main's plans",
         test_plans_without_files_unchanged),
        ("plans bind the files (bytes, not paths) and the outputs",
         test_plans_bind_files),
        ("a plan's file swapped before execute: refused, nothing runs",
         test_plan_execute_file_swapped),
        ("preset and default-valued policy digests are main's",
         test_policy_digests_unchanged),
    ]))
