#!/usr/bin/env python3
"""filesystem.deny: paths no run may read or write, even beneath a read or write root.

Real sandboxed runs (restricted backend), cold and warm, as root and as nobody where this
host allows it.  Each attack is tried from inside the run (the probe's operations and the
few defined here) and the host's files are checked after the run: a denied file's or
directory's content never reaches the run, no write of the run reaches them, and the run
cannot move the denied names away and recreate them.  Planning refuses what is
meaningless or unenforceable (a hard-linked file, a path under no root, a path that is a
root or holds the interpreter) and masks a path a second root reaches under another name.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

SECRET = "govex-deny-secret-7f3a"

# operations the probe does not have (appended to its source)
PRELUDE = r'''
def op_unlink(path):
    os.unlink(path)
    return "unlinked"


def op_rmdir(path):
    os.rmdir(path)
    return "removed"


def op_rename(src, dst):
    os.rename(src, dst)
    return "renamed"


def op_mkdir(path):
    os.mkdir(path)
    return "made"


def op_create(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"govex-escape")
    os.close(fd)
    return "created"


def op_append(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"govex-escape")
    os.close(fd)
    return "appended"


def op_size(path):
    return os.stat(path).st_size


def op_scan(top, needle):
    """NEEDLE found under TOP by any name: walked, symlinks followed, errors skipped."""
    hits = []
    for d, dirs, files in os.walk(top, followlinks=True, onerror=lambda x: None):
        for n in dirs + files:
            if needle in n:
                hits.append(os.path.join(d, n))
        for n in files:
            try:
                with open(os.path.join(d, n), "rb") as f:
                    if needle.encode() in f.read(1 << 16):
                        hits.append(os.path.join(d, n))
            except OSError:
                pass
    return hits


def op_move_and_recreate(parent, away, name, kind):
    """Renames PARENT (an ancestor of a denied path) to AWAY, makes PARENT again and
    puts NAME there (a file or a directory): the denied path recreated."""
    os.rename(parent, away)
    os.mkdir(parent)
    p = os.path.join(parent, name)
    if kind == "dir":
        os.mkdir(p)
    else:
        with open(p, "w") as f:
            f.write("govex-escape")
    return "recreated"


def op_rmtree_recreate(parent, name):
    """Removes PARENT's entries and PARENT itself, then recreates PARENT/NAME."""
    import shutil
    shutil.rmtree(parent)
    os.mkdir(parent)
    with open(os.path.join(parent, name), "w") as f:
        f.write("govex-escape")
    return "recreated"


def op_openat_parent(parent, name):
    """openat() of NAME relative to an O_PATH descriptor of PARENT."""
    d = os.open(parent, os.O_PATH | os.O_DIRECTORY)
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=d)
        try:
            return os.read(fd, 64).decode("latin-1")
        finally:
            os.close(fd)
    finally:
        os.close(d)


def op_link_to(src, dst):
    os.link(src, dst)
    with open(dst, "rb") as f:
        return f.read(64).decode("latin-1")
'''


def _mkdirs(*paths):
    for p in paths:
        os.makedirs(p, exist_ok=True)
        os.chmod(p, 0o777)


def tree(t, base=None):
    """A read root R and a write root W, each with a denied file and a denied
    directory two levels down; every directory writable by the run's ids."""
    base = base or t.tmp
    r, w = os.path.join(base, "r"), os.path.join(base, "w")
    for root in (r, w):
        _mkdirs(root, root + "/a", root + "/a/b", root + "/a/b/sdir", root + "/pub")
    for root in (r, w):
        for f in ("a/b/secret", "a/b/sdir/inner"):
            with open(os.path.join(root, f), "w") as fh:
                fh.write(SECRET)
            os.chmod(os.path.join(root, f), 0o666)
        with open(os.path.join(root, "pub/ok"), "w") as fh:
            fh.write("public")
        os.chmod(os.path.join(root, "pub/ok"), 0o666)
    deny = [r + "/a/b/secret", r + "/a/b/sdir", w + "/a/b/secret", w + "/a/b/sdir"]
    return r, w, deny


def deny_policy(t, r, w, deny, name="p.json", **kw):
    fs = {"read": [r] if r else [], "write": [w] if w else [], "deny": deny}
    fs.update(kw.pop("fs", {}))
    return e.policy(t, name, filesystem=fs, **kw)


def host_intact(r, w):
    """The host's denied files and directories are as they were made."""
    for root in (r, w):
        for f in ("a/b/secret", "a/b/sdir/inner"):
            p = os.path.join(root, f)
            g.check(os.path.isfile(p), "the host's %s is gone" % p)
            with open(p) as fh:
                g.eq(fh.read(), SECRET, "the host's %s after the run" % p)
        g.eq(sorted(os.listdir(os.path.join(root, "a/b/sdir"))), ["inner"],
             "the host's %s/a/b/sdir after the run" % root)
        g.eq(sorted(os.listdir(os.path.join(root, "a"))), ["b"],
             "the host's %s/a after the run (nothing renamed or recreated)" % root)


def never_read(res, *labels):
    """None of LABELS succeeded with the secret (a denial, or an empty mask)."""
    for lb in labels:
        got = res.get(lb)
        if got is None:
            raise g.Failure("probe has no result %r: %r" % (lb, res))
        if got.get("ok") and SECRET in json.dumps(got.get("value")):
            raise g.Failure("%s: the denied content reached the run: %r" % (lb, got))


def failed(res, *labels):
    for lb in labels:
        got = res.get(lb)
        if got is None:
            raise g.Failure("probe has no result %r: %r" % (lb, res))
        if got.get("ok"):
            raise g.Failure("%s: expected a denial, got %r" % (lb, got))


def attack_ops(root, writable):
    f, d = root + "/a/b/secret", root + "/a/b/sdir"
    ops = [["read", f, {"as": "read_file"}],
           ["size", f, {"as": "size_file"}],
           ["listdir", d, {"as": "list_dir"}],
           ["read", d + "/inner", {"as": "read_inner"}],
           ["read", root + "/a/b/sdir/../secret", {"as": "dotdot"}],
           ["read", root + "/a/./b//secret", {"as": "dot_slashes"}],
           ["read", root + "/a/b/SECRET", {"as": "case"}],
           ["read", root + "/a/b/sdir/../../b/./secret", {"as": "dotdot_deep"}],
           ["openat_parent", root + "/a/b", "secret", {"as": "openat"}],
           ["symlink_read", f, "/tmp/l-file", {"as": "run_symlink_file"}],
           ["symlink_read", d + "/inner", "/tmp/l-inner", {"as": "run_symlink_inner"}],
           ["scan", root, SECRET, {"as": "scan"}],
           ["read", root + "/pub/ok", {"as": "public"}],
           ["write", f, {"as": "write_file"}],
           ["append", f, {"as": "append_file"}],
           ["create", d + "/new", {"as": "create_in_dir"}],
           ["write", d + "/inner", {"as": "write_inner"}],
           ["unlink", f, {"as": "unlink_file"}],
           ["unlink", d + "/inner", {"as": "unlink_inner"}],
           ["rmdir", d, {"as": "rmdir_dir"}],
           ["mkdir", f, {"as": "mkdir_at_file"}],
           ["mkdir", d + "/sub", {"as": "mkdir_in_dir"}],
           ["rename", f, root + "/a/b/moved", {"as": "rename_file_away"}],
           ["rename", d, root + "/a/b/moved-dir", {"as": "rename_dir_away"}]]
    if writable:
        ops += [["create", root + "/a/b/over", {"as": "make_over"}],
                ["rename", root + "/a/b/over", f, {"as": "rename_over_file"}],
                ["mkdir", root + "/a/b/overdir", {"as": "make_overdir"}],
                ["rename", root + "/a/b/overdir", d, {"as": "rename_over_dir"}],
                ["link_to", f, root + "/a/b/hard", {"as": "hardlink_by_run"}],
                ["symlink_read", f, root + "/pub/l", {"as": "root_symlink_file"}],
                ["move_and_recreate", root + "/a/b", root + "/a/gone-b", "secret", "file",
                 {"as": "move_b_recreate"}],
                ["move_and_recreate", root + "/a", root + "/gone-a", "b", "dir",
                 {"as": "move_a_recreate"}],
                ["rmtree_recreate", root + "/a", "b", {"as": "rmtree_a"}],
                ["write", root + "/pub/new", {"as": "public_write"}]]
    return ops


def check_attacks(res, writable):
    failed(res, "case", "dotdot", "dotdot_deep", "dot_slashes")
    never_read(res, "read_file", "read_inner", "dotdot", "dot_slashes", "openat", "case",
               "dotdot_deep",
               "run_symlink_file", "run_symlink_inner", "list_dir")
    g.eq(e.allowed(res, "scan"), [], "the secret found under the root by a walk")
    g.eq(e.allowed(res, "public"), "public", "a file beside the denied ones")
    g.check(not (res["size_file"].get("ok") and res["size_file"]["value"] == len(SECRET)),
            "stat of the denied file shows its size: %r" % res["size_file"])
    failed(res, "read_file", "list_dir", "write_file", "append_file", "create_in_dir",
           "write_inner", "unlink_file", "unlink_inner", "rmdir_dir", "mkdir_at_file",
           "mkdir_in_dir", "rename_file_away", "rename_dir_away")
    if writable:
        failed(res, "rename_over_file", "rename_over_dir", "hardlink_by_run",
               "move_b_recreate", "move_a_recreate", "rmtree_a")
        never_read(res, "root_symlink_file")
        e.allowed(res, "public_write")


def _run_both(t, r, w, deny, pol, warm):
    ops = attack_ops(r, False) + [[o[0]] + o[1:-1] + [{"as": "w:" + o[-1]["as"]}]
                                  for o in attack_ops(w, True)]
    env = {"GOVEX_WARM": "1" if warm else "0"}
    log = t.path("warm.log")
    if warm:
        env["GOVEX_WARM_LOG"] = log
    _, doc, res = e.run_proven(t, ops, pol=pol, prelude=PRELUDE, extra_env=env)
    if warm:
        lines = [x for x in open(log).read().split("\n") if x] if os.path.exists(log) else []
        g.check(lines and lines[-1].startswith("warm"),
                "GOVEX_WARM=1 but the run was not warm: %r" % lines)
    check_attacks(res, False)
    check_attacks({k[2:]: v for k, v in res.items() if k.startswith("w:")}, True)
    host_intact(r, w)
    g.check("fs_deny" in doc["backend"].get("controls", []),
            "the result does not claim fs_deny: %r" % doc["backend"].get("controls"))
    return doc


def test_masked_cold(t):
    e.need_restricted("fs_deny")
    r, w, deny = tree(t)
    _run_both(t, r, w, deny, deny_policy(t, r, w, deny), warm=False)


def test_masked_warm(t):
    e.need_restricted("fs_deny")
    r, w, deny = tree(t)
    pol = deny_policy(t, r, w, deny)
    _run_both(t, r, w, deny, pol, warm=True)


def test_plan_lists_real_paths(t):
    """A deny path given through a symlink the host planted: the plan names the real
    path, and the symlink inside the root reaches only the mask."""
    e.need_restricted("fs_deny")
    r, w, _ = tree(t)
    os.symlink("a/b", r + "/link")          # pre-planted by the host, inside the root
    os.symlink("b/secret", r + "/a/lsecret")
    pol = deny_policy(t, r, None, [r + "/link/secret", r + "/link/sdir"])
    p = t.run(["plan", "--policy", pol, "-c", "pass"])
    p.expect_rc(0)
    plan = p.json()
    g.eq(plan["filesystem"]["deny"], [r + "/a/b/sdir", r + "/a/b/secret"],
         "the plan's filesystem.deny (real paths)")
    g.check("fs_deny" in plan["controls"]["required"], "the plan requires fs_deny")
    ops = [["read", r + "/link/secret", {"as": "via_dir_link"}],
           ["read", r + "/a/lsecret", {"as": "via_file_link"}],
           ["listdir", r + "/link/sdir", {"as": "via_link_list"}],
           ["read", r + "/a/b/secret", {"as": "real"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol, prelude=PRELUDE)
    never_read(res, "via_dir_link", "via_file_link", "via_link_list", "real")
    failed(res, "via_dir_link", "via_file_link", "via_link_list", "real")


def test_digest_and_canon(t):
    """filesystem.deny is digest-bound; an empty list is the policy without it."""
    base = g.preset("strict")
    plain = t.write_json("plain.json", base)
    empty = t.write_json("empty.json", dict(base, filesystem=dict(base["filesystem"],
                                                                   deny=[])))
    one = t.write_json("one.json", dict(base, filesystem=dict(base["filesystem"],
                                                               deny=["/srv/x"])))
    two = t.write_json("two.json", dict(base, filesystem=dict(base["filesystem"],
                                                               deny=["/srv/y"])))
    dg = {}
    for n, p in (("plain", plain), ("empty", empty), ("one", one), ("two", two)):
        r = t.run(["policy", "digest", p])
        r.expect_rc(0)
        dg[n] = r.stdout.decode().strip()
    g.eq(dg["empty"], dg["plain"], "digest of deny: [] and of no deny")
    g.check(dg["one"] != dg["plain"] and dg["one"] != dg["two"],
            "the deny list is not digest-bound: %r" % dg)
    c = t.run(["policy", "canon", one])
    c.expect_rc(0)
    g.eq(json.loads(c.stdout)["filesystem"]["deny"], ["/srv/x"], "canonical deny")
    c = t.run(["policy", "canon", plain])
    g.check("deny" not in json.loads(c.stdout)["filesystem"], "deny in a policy without it")


def test_parse_errors(t):
    base = g.preset("strict")
    bad = [("relative", ["srv/x"], "not an absolute path"),
           ("dotdot", ["/srv/../etc"], "not normalized"),
           ("dot", ["/srv/./x"], "not normalized"),
           ("slashes", ["/srv//x"], "not normalized"),
           ("trailing", ["/srv/x/"], "not normalized"),
           ("root", ["/"], "deny everything"),
           ("string", "/srv/x", "an array"),
           ("number", [1], "filesystem.deny[0]")]
    for name, v, msg in bad:
        p = t.write_json(name + ".json", dict(base, filesystem=dict(base["filesystem"],
                                                                     deny=v)))
        r = t.run(["policy", "check", p])
        r.expect_rc(2)
        err = r.stderr.decode()
        g.check("filesystem.deny" in err and msg in err,
                "%s: the error does not say %r about filesystem.deny: %r" % (name, msg, err))


def test_refused_at_planning(t):
    e.need_restricted("fs_deny")
    r, w, _ = tree(t)
    os.link(r + "/a/b/secret", r + "/pub/second-name")
    os.link(w + "/a/b/sdir/inner", w + "/pub/inner-name")
    os.mkfifo(r + "/pub/fifo")
    _mkdirs(w + "/wd")
    with open(w + "/wd/x", "w") as f:
        f.write("x")
    other = t.path("elsewhere")
    _mkdirs(other)
    os.symlink("a/b", w + "/wlink")            # the run could point it elsewhere
    os.symlink(w + "/wlink", r + "/chain")     # a read root's link through it
    deep = r + "/deep" + "/d" * 70             # past the planning walk's 64 levels
    os.makedirs(deep)
    cases = [("write_link", [w + "/wlink/secret"], {}, "deny_symlink_writable", "wlink"),
             ("write_link_last", [w + "/wlink"], {}, "deny_symlink_writable", "wlink"),
             ("chain", [r + "/chain/secret"], {}, "deny_symlink_writable", "wlink"),
             ("deep", [r + "/deep"], {}, "deny_unverifiable", "64 levels"),
             ("hardlink", [r + "/a/b/secret"], {}, "deny_hardlinked", "hard link"),
             ("hardlink_inside", [w + "/a/b/sdir"], {}, "deny_hardlinked", "inner"),
             ("outside", [other], {}, "deny_outside_roots", other),
             ("missing", [r + "/a/nothing"], {}, "deny_path_unresolvable", "nothing"),
             ("root", [r], {}, "deny_covers_root", r),
             ("above_root", [t.tmp], {}, "deny_covers_root", r),
             ("fifo", [r + "/pub/fifo"], {}, "deny_path_type", "fifo"),
             ("workdir", [w + "/wd/x"], {"workdir": w + "/wd"}, "deny_in_workdir", "wd")]
    cases.append(("reserved", ["/proc/cpuinfo"], {"fs": {"read": ["/"]}},
                  "deny_path_reserved", "/proc"))
    for name, deny, extra, code, mention in cases:
        pol = deny_policy(t, r, w, deny, name=name + ".json", **extra)
        p = t.run(["run", "--policy", pol, "--json", "-c", "print('ran')"])
        doc = e.refused(p, code, mention)
        g.check("ran" not in (doc.get("stdout") or ""), "%s: the code ran" % name)


def _interp_dirs(t):
    r = t.run(["plan", "--policy", e.policy(t, "q.json"), "-c", "pass"])
    r.expect_rc(0)
    exe = r.json()["interpreter"]["path"]
    out = subprocess.run([exe, "-I", "-S", "-c",
                          "import os, importlib.util as u; print(os.path.dirname(os.__file__));"
                          "print(u.find_spec('this').origin)"],
                         capture_output=True, text=True, check=True).stdout.split()
    return exe, out[0], out[1]


def test_interpreter_files(t):
    """Denying what the interpreter needs to start is refused; a file of its standard
    library (platform files, under no root) is masked."""
    e.need_restricted("fs_deny")
    exe, stdlib, this = _interp_dirs(t)
    enc = os.path.realpath(os.path.join(stdlib, "encodings"))
    for n, deny in (("stdlib", stdlib), ("exe", os.path.realpath(exe)),
                    ("encodings", enc), ("utf_8", enc + "/utf_8.py")):
        pol = deny_policy(t, None, None, [deny], name=n + ".json")
        p = t.run(["run", "--policy", pol, "--json", "-c", "pass"])
        e.refused(p, "deny_covers_interpreter")
    if os.stat(this).st_nlink != 1:
        e.skip("nlink", "%s has several links" % this)
    pol = deny_policy(t, None, None, [os.path.realpath(this)], name="this.json")
    # its compiled copies beside it are masked too, and listed in the plan
    real = os.path.realpath(this)
    cache = os.path.join(os.path.dirname(real), "__pycache__")
    pycs = sorted(os.path.realpath(os.path.join(cache, n)) for n in
                  (os.listdir(cache) if os.path.isdir(cache) else [])
                  if n.startswith("this.") and n.endswith(".pyc"))
    p = t.run(["plan", "--policy", pol, "--json", "-c", "pass"])
    p.expect_rc(0)
    g.eq(sorted(p.json()["filesystem"]["deny"]), sorted([real] + pycs),
         "the plan masks this.py and its compiled copies")
    _, doc, res = e.run_proven(t, [["read", os.path.realpath(this), {"as": "this"}]],
                               pol=pol, prelude="\ntry:\n    import this\nexcept BaseException as x:\n"
                                       "    print('IMPORT-FAILED', type(x).__name__)\n")
    failed(res, "this")
    g.check("IMPORT-FAILED" in (doc.get("stdout") or ""),
            "import of a denied stdlib module worked: %r" % (doc.get("stdout") or "")[-300:])


def _bind(t, src, dst):
    os.makedirs(dst, exist_ok=True)
    subprocess.run(["mount", "--bind", src, dst], check=True)
    t.defer(subprocess.run, ["umount", "-l", dst])


def test_bind_alias(t):
    """A second root that is another name of the first root's directory (a bind
    mount of an ancestor of the denied path): the path is masked under both names."""
    e.need_restricted("fs_deny")
    if os.geteuid() != 0:
        e.skip("root", "a bind mount on the host needs root")
    r, w, _ = tree(t)
    alias = t.path("alias")
    _bind(t, r + "/a", alias)
    walias = t.path("walias")
    _bind(t, w + "/a", walias)
    pol = deny_policy(t, r, w, [r + "/a/b/secret", r + "/a/b/sdir", w + "/a/b/sdir"],
                      fs={"read": [r, alias], "write": [w, walias]})
    p = t.run(["plan", "--policy", pol, "-c", "pass"])
    p.expect_rc(0)
    g.eq(sorted(p.json()["filesystem"]["deny"]),
         sorted([r + "/a/b/secret", alias + "/b/secret", r + "/a/b/sdir", alias + "/b/sdir",
                 w + "/a/b/sdir", walias + "/b/sdir"]), "the plan masks both names")
    ops = [["read", alias + "/b/secret", {"as": "alias_file"}],
           ["read", r + "/a/b/secret", {"as": "file"}],
           ["listdir", walias + "/b/sdir", {"as": "walias_dir"}],
           ["read", walias + "/b/sdir/inner", {"as": "walias_inner"}],
           ["write", walias + "/b/sdir/inner", {"as": "walias_write"}],
           ["move_and_recreate", walias + "/b", walias + "/gone", "sdir", "dir",
            {"as": "walias_move"}],
           ["scan", alias, SECRET, {"as": "scan_alias"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol, prelude=PRELUDE)
    never_read(res, "alias_file", "file", "walias_dir", "walias_inner")
    failed(res, "alias_file", "file", "walias_dir", "walias_inner", "walias_write",
           "walias_move")
    g.eq(e.allowed(res, "scan_alias"), [], "the secret found under the alias")
    # an alias that is the denied directory itself is refused like a root
    pol = deny_policy(t, r, w, [r + "/a"], fs={"read": [r, alias]}, name="same.json")
    e.refused(t.run(["run", "--policy", pol, "--json", "-c", "pass"]), "deny_covers_root")
    # a root that is a bind of a directory inside the denied one: refused
    inner = t.path("inner-alias")
    _bind(t, r + "/a/b", inner)
    pol = deny_policy(t, r, w, [r + "/a"], fs={"read": [r, inner]}, name="inner.json")
    e.refused(t.run(["run", "--policy", pol, "--json", "-c", "pass"]), "deny_covers_root",
              inner)


def test_mounts_beneath_roots(t):
    """Mount points inside a root that are other names of a denied directory, of
    something inside it, or of one of its ancestors: each is masked too."""
    e.need_restricted("fs_deny")
    if os.geteuid() != 0:
        e.skip("root", "a bind mount on the host needs root")
    r, w, _ = tree(t)
    _bind(t, r + "/a/b/sdir", r + "/pub/m-dir")       # the denied directory itself
    _bind(t, r + "/a/b", w + "/pub/m-inside")          # its parent, under the write root
    os.makedirs(r + "/pub/m-file-dir", exist_ok=True)
    _bind(t, r + "/a", r + "/pub/m-file-dir")          # an ancestor of the denied file
    pol = deny_policy(t, r, w, [r + "/a/b/sdir", r + "/a/b/secret"])
    p = t.run(["plan", "--policy", pol, "-c", "pass"])
    p.expect_rc(0)
    masked = p.json()["filesystem"]["deny"]
    for want in (r + "/pub/m-dir", w + "/pub/m-inside/sdir", w + "/pub/m-inside/secret",
                 r + "/pub/m-file-dir/b/secret", r + "/pub/m-file-dir/b/sdir"):
        g.check(want in masked, "%s not masked: %r" % (want, masked))
    ops = [["listdir", r + "/pub/m-dir", {"as": "m_dir"}],
           ["read", r + "/pub/m-dir/inner", {"as": "m_dir_inner"}],
           ["read", w + "/pub/m-inside/secret", {"as": "m_inside"}],
           ["read", w + "/pub/m-inside/sdir/inner", {"as": "m_inside_inner"}],
           ["read", r + "/pub/m-file-dir/b/secret", {"as": "m_anc"}],
           ["scan", r, SECRET, {"as": "scan_r"}],
           ["scan", w + "/pub", SECRET, {"as": "scan_w"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol, prelude=PRELUDE)
    never_read(res, "m_dir", "m_dir_inner", "m_inside", "m_inside_inner", "m_anc")
    failed(res, "m_dir", "m_dir_inner", "m_inside", "m_inside_inner", "m_anc")
    g.eq(e.allowed(res, "scan_r"), [], "the secret found under the read root")
    g.eq(e.allowed(res, "scan_w"), [], "the secret found under the write root")


def test_controlled_refused(t):
    pol = e.policy(t, filesystem={"read": ["/srv"], "deny": ["/srv/x"]})
    with open(pol) as f:
        doc = json.load(f)
    doc["backend"] = "controlled"
    with open(pol, "w") as f:
        json.dump(doc, f)
    p = t.run(["run", "--policy", pol, "--json", "-c", "print('ran')"])
    d = e.refused(p, "missing_controls", "fs_deny")
    g.check("ran" not in (d.get("stdout") or ""), "the code ran on controlled")


def test_host_replaces_denied_file_warm(t):
    """One long-lived warm runtime (as `govex mcp` has): its template masked the denied
    file; the host then replaces it (renamed away, a new file at that path) or removes
    and recreates it: the next warm run still sees no content (the template, whose mask
    stayed on the old file, is retired)."""
    e.need_restricted("fs_deny")
    import test_redteam_warm as rtw
    r, w, _ = tree(t)
    f = r + "/a/b/secret"
    doc = rtw.strict_doc(filesystem={"read": [r], "write": [], "deny": [f]})
    rt = rtw.with_runtime(t, doc)
    code = e.proven_code([["read", f, {"as": "f"}]], PRELUDE)

    def once(what):
        before = rtw.warm_runs(rt)
        d = rt.run(code)
        res = e.probe_lines(d.get("stdout"))
        if res is None:
            raise g.Failure("%s: no probe output: %r" % (what, d))
        e.proven(res)
        rtw.expect_warm(rt, before, 1, what)
        never_read({what: res["f"]}, what)
        failed({what: res["f"]}, what)

    once("first")
    once("second")
    os.rename(f, r + "/a/b/old")
    with open(f, "w") as fh:
        fh.write(SECRET + "-renamed")
    once("after the host renamed it away and made a new one")
    os.unlink(f)
    with open(f, "w") as fh:
        fh.write(SECRET + "-recreated")
    once("after the host removed and recreated it")


def test_host_links_denied_file_later(t):
    """One long-lived runtime, cold and warm: after its first run the host gives the
    denied file a second name inside the root.  No later run reads it by either name
    (the launch refuses a denied file with another link)."""
    e.need_restricted("fs_deny")
    import test_redteam_warm as rtw
    for warm in (False, True):
        base = t.path("warm" if warm else "cold")
        os.mkdir(base)
        r, w, _ = tree(t, base=base)
        f = r + "/a/b/secret"
        doc = rtw.strict_doc(filesystem={"read": [r], "write": [], "deny": [f]})
        rt = rtw.with_runtime(t, doc, warm=warm)
        code = e.proven_code([["read", f, {"as": "f"}],
                              ["read", r + "/pub/second", {"as": "second"}]], PRELUDE)
        d = rt.run(code)
        res = e.probe_lines(d.get("stdout"))
        g.check(res is not None, "first run: no probe output: %r" % d)
        failed(res, "f")
        os.link(f, r + "/pub/second")
        d = rt.run(code)
        res = e.probe_lines(d.get("stdout")) or {}
        g.check(SECRET not in (d.get("stdout") or ""),
                "warm=%s: the denied file read through its new name: %r" % (warm, res))
        g.check(d.get("status") != "success",
                "warm=%s: a run with a linked denied file succeeded: %r" % (warm, d.get("status")))


def test_masked_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    r, w, deny = tree(t, base=home)
    pol = deny_policy(t, r, w, deny)
    ops = [[o[0]] + o[1:-1] + [{"as": "w:" + o[-1]["as"]}] for o in attack_ops(w, True)]
    ops += attack_ops(r, False)
    home, env, binary = sb
    e.without_aggregate(pol)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c",
                               e.proven_code(ops, PRELUDE)], cwd=home, env=env,
                              preexec=e.nobody_preexec(), binary=binary)
    doc = e.result_of(out)
    res = e.probe_lines(doc.get("stdout"))
    if res is None:
        raise g.Failure("no probe output as nobody: rc=%r doc=%r err=%r"
                        % (rc, {k: doc.get(k) for k in ("status", "stdout", "diagnostics")},
                           err[-400:]))
    e.proven(res)
    check_attacks({k: v for k, v in res.items() if not k.startswith("w:")}, False)
    check_attacks({k[2:]: v for k, v in res.items() if k.startswith("w:")}, True)
    host_intact(r, w)


if __name__ == "__main__":
    sys.exit(g.main([
        ("filesystem.deny: parse errors name the field", test_parse_errors),
        ("filesystem.deny: digest-bound, absent when empty", test_digest_and_canon),
        ("denied file and directory under read and write roots (cold)", test_masked_cold),
        ("denied file and directory under read and write roots (warm)", test_masked_warm),
        ("the plan names real paths; host symlinks reach the mask", test_plan_lists_real_paths),
        ("refused at planning: hardlink, outside, root, type, workdir",
         test_refused_at_planning),
        ("the interpreter's files: refused, or a stdlib file masked", test_interpreter_files),
        ("a bind alias of the denied path's ancestor is masked too", test_bind_alias),
        ("mount points inside roots that alias a denied path are masked",
         test_mounts_beneath_roots),
        ("the controlled backend cannot enforce deny", test_controlled_refused),
        ("a warm template never shows a replaced denied file", test_host_replaces_denied_file_warm),
        ("a denied file the host links later is never read", test_host_links_denied_file_later),
        ("denied paths as nobody (user namespace)", test_masked_as_nobody),
    ]))
