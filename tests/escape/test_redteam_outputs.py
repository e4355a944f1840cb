#!/usr/bin/env python3
"""Round-2 red team RT-A: files out (contract section 4), written against the contract
before the implementation (files in, plans: test_redteam_files.py).

Whatever the run leaves in $GOVEX_OUTPUT_DIR -- symlinks to host secrets (/etc/shadow,
the caller's file, govex's own /proc/self/environ), FIFOs, sockets, directories, devices,
a 1 TiB sparse file, a file a detached grandchild keeps writing, too many files or
entries, names with newlines or non-UTF-8 bytes, set-id modes, the directory itself
replaced by a symlink, a file or a FIFO -- comes back only as bounded regular files,
consistent with what is listed, without blocking, under the shim's collection
(restricted) and govex's on the host (restricted with a host workdir, controlled).  The
CLI's --output-dir never overwrites nor follows a link planted in DIR, and says so in
the --json document too.

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


# ---------------------------------------------------------------- files out


def test_output_symlinks_to_host_secrets(t):
    """The run leaves symlinks in $GOVEX_OUTPUT_DIR to /etc/shadow, to the caller's
    0600 file, to /proc/self/environ (read by govex on the host: govex's own
    environment, which holds a secret), to /proc/1/environ, a relative ../../ chain and
    a /proc/self/cwd magic link: none is followed, listed or copied; ok.txt is.  Under
    restricted (collected by the shim) and controlled (collected by govex on the host)."""
    e.need_restricted("syscall_filter")
    caller, shadow = _secrets(t)
    links = {"shadow": "/etc/shadow", "caller": caller, "environ": "/proc/self/environ",
             "environ1": "/proc/1/environ", "rel": "../" * 12 + "etc/shadow",
             "cwd": "/proc/self/cwd/caller-secret.txt", "passwd": "/etc/passwd"}
    src = "for n, tg in %r.items():\n    os.symlink(tg, os.path.join(OUT, n))\n" \
          "open(os.path.join(OUT, 'ok.txt'), 'w').write('fine')\nR = sorted(os.listdir(OUT))" \
          % (links,)
    secrets = [(SECRET + "-caller").encode(), (SECRET + "-env").encode()]
    if shadow:
        secrets.append(shadow[:32])
    try:
        with open("/proc/1/environ", "rb") as f:
            p1 = f.read()
    except OSError:
        p1 = b""
    if p1:
        secrets.append(p1[:48])
    # restricted: the shim collects inside the sandbox; restricted with a host workdir
    # (a policy reading /) and controlled: govex collects on the host, where the links
    # would reach the host's files
    for backend in ("restricted", "restricted-hostwd", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        if backend == "restricted-hostwd":
            polf = h.pol(t, name=backend + ".json", filesystem={"read": ["/"]},
                         python={"interpreter": os.path.realpath("/usr/bin/python3"),
                                 "site": False})
        else:
            base = "strict" if backend == "restricted" else "trusted"
            polf = h.pol(t, name=backend + ".json", base=base, backend=backend)
        r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                                extra_env={"RTA_ENV_SECRET": SECRET + "-env"},
                                sandbox=backend == "restricted")
        if backend == "restricted-hostwd":
            g.eq(doc["backend"]["name"], "restricted", "backend")
        h.ok(res, "plant")
        names = [f.get("name") for f in h.listed(doc)]
        g.eq(names, ["ok.txt"], backend + ": files listed")
        g.eq(doc["files"][0]["sha256"].split(":")[-1], sha(b"fine"), "ok.txt's sha256")
        g.check("output_skipped" in h.diag_codes(doc), "%s: no output_skipped diagnostic: %r"
                % (backend, doc.get("diagnostics")))
        _leak_check(r, out, secrets, backend + ": symlinks in the output dir")
        g.eq(sorted(h.dir_entries(out)), ["ok.txt"], backend + ": what --output-dir received")


def test_output_symlinks_library(t):
    """The same symlinks through the library: govex_result_file never returns the
    content behind a link."""
    e.need_restricted("syscall_filter")
    caller, shadow = _secrets(t)
    links = {"shadow": "/etc/shadow", "caller": caller, "environ": "/proc/self/environ",
             "cwd": "/proc/self/cwd/caller-secret.txt"}
    code = h.rta_code([h.op("plant", "for n, tg in %r.items():\n"
                                     "    os.symlink(tg, os.path.join(OUT, n))\nR = 1"
                                     % (links,))])
    os.environ["RTA_ENV_SECRET"] = SECRET + "-env"      # the driver inherits it
    try:
        ans = h.lib_run(t, code, h.policy_doc(), outputs=True)
    finally:
        del os.environ["RTA_ENV_SECRET"]
    g.check("doc" in ans, "no result: %r" % ans)
    h.rta_proven(h.probe_of(ans["doc"]["stdout"]))
    g.check("files_error" not in ans, ans.get("files_error"))
    g.eq(ans.get("files"), [], "files returned through govex_result_file")
    g.eq(h.listed(ans["doc"]), [], "files listed")
    g.check(ans.get("past_end_rc", 0) < 0, "govex_result_file past the end did not fail")


def _try(src):
    """SRC wrapped so that a refusal inside is recorded, not fatal (the restricted
    sandbox refuses mkfifo/mknod/AF_UNIX sockets; the controlled backend does not)."""
    return "try:\n" + "".join("    " + l + "\n" for l in src.splitlines()) + \
        "    R = True\nexcept OSError as ex:\n    R = _errno.errorcode.get(ex.errno)\n"


FIFO_SRC = [
    ("fifo", "os.mkfifo(os.path.join(OUT, 'fifo'))"),
    ("held", "os.mkfifo(os.path.join(OUT, 'held'))\n"
             "if os.fork() == 0:\n    try:\n        os.setsid()\n"
             "        if os.fork() == 0:\n"
             "            fd = os.open(os.path.join(OUT, 'held'), os.O_RDWR)\n"
             "            time.sleep(60)\n    finally:\n        os._exit(0)"),
    ("ok", "open(os.path.join(OUT, 'ok.txt'), 'w').write('ok')"),
]


def test_output_fifo_never_blocks(t):
    """A FIFO (no writer) and a FIFO a detached grandchild holds open without writing,
    in the output dir, under restricted (where the sandbox may refuse mkfifo) and under
    controlled (where it cannot): the result comes within the wall limit plus a small
    margin, the FIFOs are skipped with a diagnostic, the regular file listed."""
    e.need_restricted("syscall_filter")
    made_any = False
    for backend in ("restricted", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend,
                     limits={"wall_ms": 3000})
        r, doc, res = h.run_rta(t, [h.op(n, _try(src)) for n, src in FIFO_SRC], polf,
                                args=["--output-dir", out], timeout=30,
                                sandbox=backend == "restricted")
        print("# %s: %r" % (backend, {n: res.get(n) for n, _ in FIFO_SRC}))
        g.check(not r.hard_timeout and r.wall < 3 + 5,
                "%s: the result took %.1f s (wall limit 3 s)" % (backend, r.wall))
        g.eq([f["name"] for f in h.listed(doc)], ["ok.txt"], backend + ": files listed")
        made = [n for n in ("fifo", "held") if h.ok(res, n) is True]
        made_any = made_any or bool(made)
        if made:
            skipped = [d for d in doc.get("diagnostics") or []
                       if d.get("code") == "output_skipped"]
            g.check(len(skipped) >= len(made), "%s: %d FIFOs made, output_skipped: %r"
                    % (backend, len(made), doc.get("diagnostics")))
        g.eq(sorted(os.listdir(out)), ["ok.txt"], backend + ": copied out")
    g.check(made_any, "no backend let the run make a FIFO: the test proved nothing")


SPECIAL_SRC = [
    ("sock", "s = socket.socket(socket.AF_UNIX)\ns.bind(os.path.join(OUT, 'sock'))"),
    ("sub", "os.mkdir(os.path.join(OUT, 'sub'))\n"
            "open(os.path.join(OUT, 'sub', 'nested.txt'), 'w').write('nested')"),
    ("dangling", "os.symlink('/nonexistent-rta', os.path.join(OUT, 'dangling'))"),
    ("dev", "os.mknod(os.path.join(OUT, 'dev'), stat.S_IFCHR | 0o666, os.makedev(1, 5))"),
    ("ok", "open(os.path.join(OUT, 'ok.txt'), 'w').write('ok')"),
]


def test_output_special_entries(t):
    """A unix socket, a directory (with a file inside), a dangling symlink and a device
    node (when the backend lets the run make them; controlled as root does): skipped
    with a diagnostic each; only top-level regular files are listed; nothing nested is
    copied out."""
    e.need_restricted("syscall_filter")
    for backend in ("restricted", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend)
        r, doc, res = h.run_rta(t, [h.op(n, _try(src)) for n, src in SPECIAL_SRC], polf,
                                args=["--output-dir", out], sandbox=backend == "restricted")
        made = [n for n, _ in SPECIAL_SRC if n != "ok" and h.ok(res, n) is True]
        print("# %s: made %r" % (backend, made))
        g.eq([f["name"] for f in h.listed(doc)], ["ok.txt"], backend + ": files listed")
        skipped = [d for d in doc.get("diagnostics") or [] if d.get("code") == "output_skipped"]
        g.check(len(skipped) >= len(made), "%s: %d output_skipped diagnostics for %r: %r"
                % (backend, len(skipped), made, doc.get("diagnostics")))
        g.eq(sorted(h.dir_entries(out)), ["ok.txt"], backend + ": what --output-dir received")


def test_output_sparse_1tib(t):
    """A 1 TiB sparse file between two small ones, files_out_bytes 1 MiB: the result
    comes in seconds (nobody reads 1 TiB), at most 1 MiB is delivered, every listed
    entry's sha256 and bytes match what was delivered (or a diagnostic names the
    file as truncated), the small files come back whole."""
    e.need_restricted("syscall_filter")
    out = t.path("D")
    os.mkdir(out)
    polf = h.pol(t, limits={"files_out_bytes": MiB, "file_size_bytes": (1 << 40) + MiB,
                            "wall_ms": 10000})
    src = ("open(os.path.join(OUT, 'a_small'), 'wb').write(b'A' * 100)\n"
           "f = open(os.path.join(OUT, 'b_huge'), 'wb'); f.truncate(1 << 40); f.close()\n"
           "open(os.path.join(OUT, 'c_small'), 'wb').write(b'C' * 100)\n"
           "R = os.stat(os.path.join(OUT, 'b_huge')).st_size")
    r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                            timeout=60)
    g.eq(h.ok(res, "plant"), 1 << 40, "the sparse file's size inside")
    g.check(r.wall < 20, "the result took %.1f s" % r.wall)
    _consistent(doc, out, MiB)
    got = h.dir_entries(out)
    g.eq(got.get("a_small"), ("file", b"A" * 100), "a_small copied out")


def _consistent(doc, out, bound):
    """Listed entries agree with the delivered bytes; the total is within BOUND."""
    files = h.listed(doc)
    got = h.dir_entries(out)
    total = 0
    for f in files:
        n = f["name"]
        g.check(n in got and got[n][0] == "file", "listed %r not copied out" % n)
        data = got[n][1]
        total += len(data)
        g.eq(f["sha256"].split(":")[-1], sha(data), "sha256 of %r vs its delivered bytes" % n)
        if f["bytes"] != len(data):
            g.check(any(n in json.dumps(d) for d in doc.get("diagnostics") or []),
                    "%r listed with %d bytes, %d delivered, and no diagnostic names it"
                    % (n, f["bytes"], len(data)))
    g.check(total <= bound, "%d bytes delivered past files_out_bytes %d" % (total, bound))
    extra = sorted(set(got) - {f["name"] for f in files})
    g.check(not extra, "copied out but not listed: %r" % extra)
    return files


def test_output_growing_file_detached_writer(t):
    """subprocess allowed: a detached grandchild (double fork, setsid) keeps appending to
    OUT/grow after the main process exits.  The result comes within the wall limit and
    a margin, the delivered bytes are within files_out_bytes (256 KiB here), every
    listed file's sha256 and bytes match what was delivered, and the writer is gone."""
    e.need_restricted("syscall_filter")
    out = t.path("D")
    os.mkdir(out)
    polf = h.pol(t, subprocess="allow", limits={"files_out_bytes": 256 * 1024,
                                                "wall_ms": 4000})
    src = ("import ctypes\n"
           "open(os.path.join(OUT, 'first'), 'wb').write(b'1' * 1000)\n"
           "if os.fork() == 0:\n  try:\n    os.setsid()\n    if os.fork() == 0:\n"
           "        ctypes.CDLL(None).prctl(15, b'rta-grower', 0, 0, 0)\n"
           "        fd = os.open(os.path.join(OUT, 'grow'), os.O_WRONLY | os.O_CREAT | "
           "os.O_APPEND, 0o644)\n"
           "        end = time.monotonic() + 30\n"
           "        while time.monotonic() < end:\n            os.write(fd, b'g' * 65536)\n"
           "            time.sleep(0.01)\n"
           "  finally:\n    os._exit(0)\n"
           "time.sleep(0.3)\nR = os.stat(os.path.join(OUT, 'grow')).st_size")
    r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                            timeout=40)
    print("# grow had %r bytes when main exited" % (res.get("plant"),))
    g.check(r.wall < 4 + 5, "the result took %.1f s (wall limit 4 s)" % r.wall)
    _consistent(doc, out, 256 * 1024)
    left = e.wait_until(lambda: not e.procs_with_comm("rta-grower"), 3.0)
    g.check(left, "the detached writer outlived its run: pids %r"
            % e.procs_with_comm("rta-grower"))


def test_output_count_bound(t):
    """200 files with files_out_count 5: at most 5 listed (the first by name), a
    diagnostic says the rest were left; with the default (64), at most 64."""
    e.need_restricted("syscall_filter")
    src = ("for i in range(200):\n"
           "    open(os.path.join(OUT, 'f%03d.txt' % i), 'w').write(str(i))\nR = 1")
    for limit, bound in (({"files_out_count": 5}, 5), (None, 64)):
        out = t.path("D%d" % bound)
        os.mkdir(out)
        r, doc, res = h.run_rta(t, [h.op("plant", src)], h.pol(t, name="p%d.json" % bound,
                                                               limits=limit),
                                args=["--output-dir", out])
        names = [f["name"] for f in h.listed(doc)]
        g.eq(names, ["f%03d.txt" % i for i in range(bound)], "files listed (bound %d)"
             % bound)
        g.check(len(os.listdir(out)) == bound, "%d files copied out, bound %d"
                % (len(os.listdir(out)), bound))
        g.check(doc.get("diagnostics"), "no diagnostic about the files left behind")


REPLACE_OUT = [
    ("symlink to /", "os.rmdir(OUT); os.symlink('/', OUT)"),
    ("symlink to /etc", "os.rmdir(OUT); os.symlink('/etc', OUT)"),
    ("symlink to the host cwd", "os.rmdir(OUT); os.symlink(HOSTCWD, OUT)"),
    ("symlink to /proc/self/cwd", "os.rmdir(OUT); os.symlink('/proc/self/cwd', OUT)"),
    ("moved, then a symlink", "os.rename(OUT, OUT + '.old'); "
                              "open(OUT + '.old/inner.txt', 'w').write('x'); "
                              "os.symlink('/etc', OUT)"),
    ("a regular file", "os.rmdir(OUT); open(OUT, 'w').write('not a directory')"),
    ("a FIFO", "os.rmdir(OUT); os.mkfifo(OUT)"),
]


def test_output_dir_replaced(t):
    """The run replaces $GOVEX_OUTPUT_DIR by a symlink (to /, /etc, the caller's cwd,
    /proc/self/cwd), by a file or a FIFO: nothing outside is read, nothing listed,
    nothing copied out, no blocking.  Also with a host workdir (a policy reading /),
    where govex collects on the host and a followed link would reach the host's files."""
    e.need_restricted("syscall_filter")
    caller, shadow = _secrets(t)
    hostwd = {"filesystem": {"read": ["/"]},
              "python": {"interpreter": os.path.realpath("/usr/bin/python3"), "site": False}}
    cases = [(w, s_, False) for w, s_ in REPLACE_OUT] + \
        [(w + " (host workdir)", s_, True) for w, s_ in REPLACE_OUT]
    for i, (what, src, host_wd) in enumerate(cases):
        out = t.path("D%d" % i)
        os.mkdir(out)
        polf = h.pol(t, name="p%d.json" % i, limits={"wall_ms": 3000},
                     **(hostwd if host_wd else {}))
        r, doc, res = h.run_rta(t, [h.op("swap", "HOSTCWD = %r\n%s\nR = 1" % (t.tmp, src))],
                                polf, args=["--output-dir", out], timeout=30,
                                sandbox=not host_wd)
        g.eq(doc["backend"]["name"], "restricted", what + ": backend")
        h.ok(res, "swap")
        g.check(r.wall < 8, "%s: the result took %.1f s" % (what, r.wall))
        names = [f["name"] for f in h.listed(doc)]
        g.check(names in ([], ["inner.txt"]), "%s: listed %r" % (what, names))
        sec = [(SECRET + "-caller").encode()] + ([shadow[:32]] if shadow else [])
        _leak_check(r, out, sec, what)
        g.check(set(os.listdir(out)) <= {"inner.txt"}, "%s: copied out %r"
                % (what, os.listdir(out)))


def test_output_bad_names(t):
    """Names the name rule refuses (a newline, non-UTF-8 bytes, an ESC, a leading dot,
    129 characters, a space) are skipped with a diagnostic; the JSON stays valid UTF-8,
    no raw control character reaches govex's stderr; ok.txt comes back."""
    e.need_restricted("syscall_filter")
    out = t.path("D")
    os.mkdir(out)
    src = ("d = os.fsencode(OUT)\n"
           "for n in (b'a\\nb', b'\\xff\\xfe.txt', b'x\\x1b[2Jy', b'.hidden', b'n' * 129,\n"
           "          b'a b', b'ok.txt'):\n"
           "    open(os.path.join(d, n), 'wb').write(b'data')\nR = len(os.listdir(d))")
    r, doc, res = h.run_rta(t, [h.op("plant", src)], h.pol(t), args=["--output-dir", out])
    g.eq(h.ok(res, "plant"), 7, "files made")
    g.eq([f["name"] for f in h.listed(doc)], ["ok.txt"], "files listed")
    skipped = [d for d in doc.get("diagnostics") or [] if d.get("code") == "output_skipped"]
    g.check(len(skipped) >= 6, "expected 6 output_skipped diagnostics: %r"
            % doc.get("diagnostics"))
    g.eq(sorted(os.listdir(out)), ["ok.txt"], "copied out")
    g.check(b"\x1b" not in r.stderr, "a raw ESC on govex's stderr: %r" % r.stderr[-300:])
    # without --json, on stderr: govex's own lines carry no control characters either
    os.mkdir(t.path("E"))
    r2 = t.run(["run", "--policy", h.pol(t, name="q.json"), "--output-dir", t.path("E"),
                "-c", h.rta_code([h.op("plant", src)])])
    g.check(b"\x1b" not in r2.stderr, "a raw ESC on govex's stderr (no --json): %r"
            % r2.stderr[-300:])


def test_output_dir_cli_no_overwrite_no_follow(t):
    """--output-dir DIR where DIR already has x -> victim (a symlink), y (a regular file)
    and z -> a path that does not exist: govex exits 125 with a message; the victim, y
    and DIR's links are unchanged; nothing is created at z's target."""
    e.need_restricted("syscall_filter")
    out = t.path("D")
    os.mkdir(out)
    victim = _host_file(t, "victim", b"original\n")
    os.symlink(victim, os.path.join(out, "x"))
    with open(os.path.join(out, "y"), "wb") as f:
        f.write(b"keep\n")
    ghost = t.path("created-by-govex")
    os.symlink(ghost, os.path.join(out, "z"))
    src = ("for n in ('x', 'y', 'z', 'w'):\n"
           "    open(os.path.join(OUT, n), 'w').write('PWNED ' + n)\nR = 1")
    r, doc, res = h.run_rta(t, [h.op("plant", src)], h.pol(t), args=["--output-dir", out])
    g.eq(open(victim, "rb").read(), b"original\n", "the symlink's victim")
    g.eq(open(os.path.join(out, "y"), "rb").read(), b"keep\n", "the existing file y")
    g.check(not os.path.lexists(ghost), "a file was created through the dangling symlink z")
    g.eq(os.readlink(os.path.join(out, "x")), victim, "DIR/x")
    g.eq(os.readlink(os.path.join(out, "z")), ghost, "DIR/z")
    r.expect_rc(g.EXIT_REFUSED)
    g.check(r.stderr.strip(), "no message on stderr for the refused copy")
    # DIR must exist and be a directory
    for bad in (t.path("missing"), victim):
        r = t.run(["run", "--policy", h.pol(t), "--output-dir", bad, "-c", "print(1)"])
        r.expect_rc(g.EXIT_REFUSED)
    g.eq(open(victim, "rb").read(), b"original\n", "the victim as --output-dir")



def test_output_unreadable_mode(t):
    """An output file with mode 000 (and one 0200): listed with its bytes or skipped
    with a diagnostic; the others still come back; nothing crashes."""
    e.need_restricted("syscall_filter")
    for backend in ("restricted", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend)
        src = ("for n, m in (('a000', 0o000), ('b200', 0o200), ('c644', 0o644)):\n"
               "    p = os.path.join(OUT, n)\n    open(p, 'w').write(n)\n    os.chmod(p, m)\n"
               "R = 1")
        r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                                sandbox=backend == "restricted")
        h.ok(res, "plant")
        files = _consistent(doc, out, 64 * MiB)
        names = [f["name"] for f in files]
        g.check("c644" in names, "%s: the readable file is missing: %r" % (backend, names))
        for n in ("a000", "b200"):
            if n not in names:
                g.check(n in json.dumps(doc.get("diagnostics")),
                        "%s: %s neither listed nor named in a diagnostic" % (backend, n))
            else:
                g.eq(h.dir_entries(out)[n], ("file", n.encode()), "%s: %s" % (backend, n))


def test_output_modes_not_copied(t):
    """An output the run made executable (0777, and set-id bits where it can): the copy
    in --output-dir is a plain 0644-or-stricter file owned by the caller, never
    executable, never set-id."""
    e.need_restricted("syscall_filter")
    for backend in ("restricted", "controlled"):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend)
        src = ("p = os.path.join(OUT, 'tool.sh')\nopen(p, 'w').write('#!/bin/sh\\necho hi\\n')\n"
               "os.chmod(p, 0o777)\ntry:\n    os.chmod(p, 0o6777)\nexcept OSError:\n    pass\n"
               "R = oct(os.stat(p).st_mode)")
        r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                                sandbox=backend == "restricted")
        print("# %s: mode inside %r" % (backend, res.get("plant")))
        g.eq([f["name"] for f in h.listed(doc)], ["tool.sh"], backend + ": listed")
        st = os.lstat(os.path.join(out, "tool.sh"))
        g.check(stat.S_ISREG(st.st_mode) and not st.st_mode & 0o7111 and
                st.st_uid == os.geteuid(),
                "%s: the copy's mode %o owner %d" % (backend, st.st_mode, st.st_uid))


def test_output_rewritten_while_collected_controlled(t):
    """Controlled backend (govex collects from a host workdir): a detached grandchild
    keeps truncating and rewriting an output file after the main process exits.
    Whatever is listed matches the bytes delivered (sha256, bytes), within the bound;
    the grandchild is gone after the run."""
    out = t.path("D")
    os.mkdir(out)
    polf = h.pol(t, base="trusted", backend="controlled", limits={"wall_ms": 4000})
    src = ("import ctypes\n"
           "if os.fork() == 0:\n  try:\n    os.setsid()\n    if os.fork() == 0:\n"
           "        ctypes.CDLL(None).prctl(15, b'rta-rewriter', 0, 0, 0)\n"
           "        p = os.path.join(OUT, 'flux')\n        end = time.monotonic() + 20\n"
           "        i = 0\n"
           "        while time.monotonic() < end:\n"
           "            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
           "            os.write(fd, os.urandom(1 + (i * 7919) % 200000))\n"
           "            os.close(fd)\n            i += 1\n"
           "  finally:\n    os._exit(0)\n"
           "time.sleep(0.3)\nR = 1")
    r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                            sandbox=False, timeout=40)
    try:
        h.ok(res, "plant")
        g.check(r.wall < 4 + 5, "the result took %.1f s" % r.wall)
        _consistent(doc, out, 64 * MiB)
        g.check(e.wait_until(lambda: not e.procs_with_comm("rta-rewriter"), 3.0),
                "the detached rewriter outlived its run (controlled)")
    finally:
        for pid in e.procs_with_comm("rta-rewriter"):
            t.kill_later(pid)


def test_exec_files_and_outputs(t):
    """govex exec (the process toolkit) with --file and --output-dir: the input is
    there read-only, a symlink to the caller's secret in the output dir is not
    followed, the regular file comes back."""
    e.need_restricted("syscall_filter")
    caller, _ = _secrets(t)
    host_in = _host_file(t, "exec-in.txt", b"exec input\n")
    before = _snap(host_in)
    out = t.path("D")
    os.mkdir(out)
    code = h.rta_code([
        h.op("read", "R = open('in.txt').read()"),
        h.op("write", "open('in.txt', 'a').write('PWNED')\nR = 1"),
        h.op("plant", "os.symlink(%r, os.path.join(OUT, 'caller'))\n"
                      "open(os.path.join(OUT, 'ok.txt'), 'w').write('fine')\nR = 1" % caller)])
    r = t.run(["exec", "--policy", _exec_pol(t), "--json", "--file", "in.txt=" + host_in,
               "--output-dir", out, "--", os.path.realpath("/usr/bin/python3"), "-I", "-S",
               "-c", code])
    doc = r.result()
    res = h.probe_of(doc.get("stdout"))
    h.rta_proven(res, r.describe())
    g.eq(h.ok(res, "read"), "exec input\n", "the input inside exec")
    g.check(not res["write"].get("ok"), "exec's run appended to its input")
    g.eq(_snap(host_in), before, "the caller's input file")
    g.eq([f["name"] for f in h.listed(doc)], ["ok.txt"], "files listed")
    _leak_check(r, out, [(SECRET + "-caller").encode()], "exec outputs")



def test_call_files_and_outputs(t):
    """govex call with --file and --output-dir: the function reads its input, cannot
    change it (nor the caller's file), and a symlink to the caller's secret it leaves in
    GOVEX_OUTPUT_DIR is not followed; its regular file comes back."""
    e.need_restricted("syscall_filter")
    caller, _ = _secrets(t)
    host_in = _host_file(t, "call-in.txt", b"call input\n")
    before = _snap(host_in)
    out = t.path("D")
    os.mkdir(out)
    mod = t.write("mod.py", (
        "import os\n\n"
        "def f() -> dict:\n"
        "    got = open('in.txt').read()\n"
        "    try:\n        open('in.txt', 'a').write('PWNED')\n        wrote = True\n"
        "    except OSError:\n        wrote = False\n"
        "    o = os.environ['GOVEX_OUTPUT_DIR']\n"
        "    os.symlink(%r, os.path.join(o, 'caller.txt'))\n"
        "    open(os.path.join(o, 'ok.txt'), 'w').write('fine')\n"
        "    return {'got': got, 'wrote': wrote}\n") % caller)
    r = t.run(["call", "--policy", h.pol(t), "--json", "--file", "in.txt=" + host_in,
               "--output-dir", out, mod + ":f"])
    doc = r.result()
    g.eq(doc["status"], "success", "call status\n" + r.describe())
    g.eq(doc["value"], {"got": "call input\n", "wrote": False}, "the function's value")
    g.eq(_snap(host_in), before, "the caller's input file")
    g.eq([f["name"] for f in h.listed(doc)], ["ok.txt"], "files listed")
    _leak_check(r, out, [(SECRET + "-caller").encode()], "call outputs")
    g.eq(sorted(os.listdir(out)), ["ok.txt"], "copied out")


def test_output_diagnostics_bounded(t):
    """The result stays bounded whatever the run leaves: 8000 entries with invalid names
    (each 106 characters) and 4000 directories in the output dir must not turn into
    12000 diagnostics (megabytes of result document, which MCP hands to the model).
    Expected: at most files_out_count + a few output diagnostics (then one summary),
    and a result document under 256 KiB.  Under controlled (a host workdir, no inode
    bound) 30000 entries."""
    e.need_restricted("syscall_filter")
    for backend, n_bad in (("restricted", 8000), ("controlled", 30000)):
        out = t.path("D-" + backend)
        os.mkdir(out)
        base = "strict" if backend == "restricted" else "trusted"
        polf = h.pol(t, name=backend + ".json", base=base, backend=backend,
                     limits={"wall_ms": 20000})
        src = ("for i in range(%d):\n"
               "    open(os.path.join(OUT, '.h%%06d' %% i + 'x' * 100), 'w').close()\n"
               "for i in range(4000):\n    os.mkdir(os.path.join(OUT, 'd%%05d' %% i))\n"
               "R = len(os.listdir(OUT))" % n_bad)
        r, doc, res = h.run_rta(t, [h.op("plant", src)], polf, args=["--output-dir", out],
                                sandbox=backend == "restricted", timeout=60)
        made = h.ok(res, "plant")
        outd = [d for d in doc.get("diagnostics") or []
                if str(d.get("code", "")).startswith("output_")]
        g.check(len(outd) <= 64 + 8 and len(r.stdout) < 256 * 1024,
                "%s: %d entries left in the output dir gave %d output diagnostics and a "
                "%d-byte result document" % (backend, made, len(outd), len(r.stdout)))


def test_output_dir_refusal_in_json(t):
    """--json with an --output-dir copy refused (an entry exists): the exit status is 125
    and the one JSON document says so too (a diagnostic naming the file), so a program
    reading the document does not take the outputs for copied."""
    e.need_restricted("syscall_filter")
    out = t.path("D")
    os.mkdir(out)
    with open(os.path.join(out, "y"), "wb") as f:
        f.write(b"keep\n")
    r = t.run(["run", "--policy", h.pol(t), "--json", "--output-dir", out, "-c",
               "import os\nopen(os.path.join(os.environ['GOVEX_OUTPUT_DIR'], 'y'), 'w')"
               ".write('new')\n"])
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.check(any(d.get("name") == "y" or "'y'" in str(d.get("message"))
                for d in doc.get("diagnostics") or []),
            "exit 125 but the document (status %r) has no diagnostic about the refused "
            "copy: %r" % (doc["status"], doc.get("diagnostics")))


if __name__ == "__main__":
    sys.exit(g.main([
        ("output symlinks to host secrets are never followed (CLI)",
         test_output_symlinks_to_host_secrets),
        ("output symlinks to host secrets are never followed (library)",
         test_output_symlinks_library),
        ("output FIFOs never block",
         test_output_fifo_never_blocks),
        ("output sockets, directories, devices, dangling links are skipped",
         test_output_special_entries),
        ("a 1 TiB sparse output is bounded, never read through",
         test_output_sparse_1tib),
        ("an output a detached grandchild keeps writing is bounded and consistent",
         test_output_growing_file_detached_writer),
        ("files_out_count bounds the outputs",
         test_output_count_bound),
        ("the output dir replaced by a symlink, a file or a FIFO: nothing outside read",
         test_output_dir_replaced),
        ("output names with newlines, non-UTF-8, ESC are skipped",
         test_output_bad_names),
        ("--output-dir never overwrites and never follows a planted symlink",
         test_output_dir_cli_no_overwrite_no_follow),
        ("--json: a refused --output-dir copy is in the document too",
         test_output_dir_refusal_in_json),
        ("unreadable output files are listed whole or skipped with a diagnostic",
         test_output_unreadable_mode),
        ("output modes (exec, set-id) never reach the copy",
         test_output_modes_not_copied),
        ("controlled: an output rewritten while collected stays consistent",
         test_output_rewritten_while_collected_controlled),
        ("exec: files in read-only, output symlinks not followed",
         test_exec_files_and_outputs),
        ("the result stays bounded whatever the output dir holds",
         test_output_diagnostics_bounded),
        ("call: files in read-only, output symlinks not followed",
         test_call_files_and_outputs),
    ]))
