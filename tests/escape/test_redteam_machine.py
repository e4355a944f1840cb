#!/usr/bin/env python3
"""Round-2 red team RT-A: the sandbox as a small normal machine (contract section 5),
written against the contract before the implementation.

/etc/passwd and /etc/group inside hold root, the run's own identity (govex, its uid and
gid, home = the workdir) and nobody/nogroup, and nothing of the host's; the run cannot
change them (nor the host's); HOME is the workdir, writable, and private to the run (a
concurrent run does not see it); pwd/grp/getpass/Path.home() work for the run's uid as
root (a slot uid) and as an unprivileged caller (nobody); the defaults (HOME, LANG) are
not listed in the plan, so plan digests stay main's.

Everything inside runs behind rtahelp's canary (which, unlike probe.py's, accepts an
/etc/passwd that is not the host's).  A failing test is a finding."""
import hashlib
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rtahelp as h  # noqa: E402
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

IDENTITY = r'''
import pwd, grp, getpass, pathlib
uid, gid = os.getuid(), os.getgid()
R = {"uid": uid, "gid": gid, "cwd": os.getcwd(), "HOME": os.environ.get("HOME"),
     "LANG": os.environ.get("LANG"), "LC_ALL": os.environ.get("LC_ALL")}
for k, f in (("pwuid", lambda: list(pwd.getpwuid(uid))),
             ("grgid", lambda: list(grp.getgrgid(gid))[:3]),
             ("getuser", getpass.getuser),
             ("home", lambda: str(pathlib.Path.home())),
             ("expanduser", lambda: os.path.expanduser("~")),
             ("nobody", lambda: list(pwd.getpwnam("nobody"))),
             ("root", lambda: list(pwd.getpwuid(0))),
             ("passwd", lambda: open("/etc/passwd").read()),
             ("group", lambda: open("/etc/group").read())):
    try:
        R[k] = f()
    except Exception as ex:
        R[k] = "ERROR %s: %s" % (type(ex).__name__, ex)
'''


def _host_names(path):
    try:
        with open(path) as f:
            return {l.split(":", 1)[0] for l in f if l.strip() and not l.startswith("#")}
    except OSError:
        return set()


def _check_db(v, uid, gid, who):
    """The /etc/passwd and /etc/group a run saw (V) for a run of UID/GID."""
    for k in ("passwd", "group"):
        g.check(not str(v[k]).startswith("ERROR"), "%s: /etc/%s inside: %s" % (who, k, v[k]))
    pw = [l.split(":") for l in v["passwd"].splitlines() if l.strip()]
    gr = [l.split(":") for l in v["group"].splitlines() if l.strip()]
    g.check(all(len(f) == 7 for f in pw), "%s: malformed /etc/passwd: %r" % (who, v["passwd"]))
    g.check(all(len(f) == 4 for f in gr), "%s: malformed /etc/group: %r" % (who, v["group"]))
    names = [f[0] for f in pw]
    gnames = [f[0] for f in gr]
    g.check(set(names) <= {"root", "govex", "nobody"},
            "%s: /etc/passwd lists %r (only root, govex, nobody)" % (who, names))
    g.check(set(gnames) <= {"root", "govex", "nogroup"},
            "%s: /etc/group lists %r (only root, govex, nogroup)" % (who, gnames))
    for n in ("root", "govex"):
        g.check(n in names, "%s: no %s in /etc/passwd: %r" % (who, n, names))
    g.check(len(set(names)) == len(names), "%s: duplicate names %r" % (who, names))
    host = (_host_names("/etc/passwd") | _host_names("/etc/group")) - \
        {"root", "nobody", "nogroup"}
    seen = sorted(host & (set(names) | set(gnames)))
    g.check(not seen, "%s: host users/groups visible inside: %r" % (who, seen))
    for f in pw:
        g.check(f[1] in ("x", "*", "!", "!!", ""), "%s: a password field %r" % (who, f[1]))
    me = [f for f in pw if f[0] == "govex"][0]
    g.eq((int(me[2]), int(me[3])), (uid, gid), "%s: govex's uid:gid in /etc/passwd" % who)
    g.eq(me[5], v["cwd"], "%s: govex's home (the workdir)" % who)
    g.check(me[6] in ("/bin/sh", "/usr/sbin/nologin"), "%s: shell %r" % (who, me[6]))


def _check_identity(v, who):
    uid, gid = v["uid"], v["gid"]
    _check_db(v, uid, gid, who)
    g.check(isinstance(v["pwuid"], list), "%s: pwd.getpwuid(%d): %s" % (who, uid, v["pwuid"]))
    g.eq(v["pwuid"][0], "govex", "%s: pwd.getpwuid(os.getuid()).pw_name" % who)
    g.eq(v["pwuid"][5], v["cwd"], "%s: pwd.getpwuid(os.getuid()).pw_dir" % who)
    g.check(isinstance(v["grgid"], list), "%s: grp.getgrgid(%d): %s" % (who, gid, v["grgid"]))
    g.eq(v["grgid"][0], "govex", "%s: grp.getgrgid(os.getgid()).gr_name" % who)
    g.eq(v["getuser"], "govex", "%s: getpass.getuser()" % who)
    g.eq(v["HOME"], v["cwd"], "%s: HOME (the workdir)" % who)
    g.eq(v["home"], v["cwd"], "%s: Path.home()" % who)
    g.eq(v["expanduser"], v["cwd"], "%s: expanduser('~')" % who)


def test_identity_as_root(t):
    """As root (the run's uid is a slot uid): /etc/passwd and /etc/group as the contract
    says, pwd/grp/getpass/Path.home() work, HOME is the workdir, no host user."""
    e.need_restricted("syscall_filter")
    if os.geteuid() != 0:
        e.skip("root", "slot uids exist only as root")
    _, doc, res = h.run_rta(t, [h.op("id", IDENTITY)], h.pol(t))
    v = h.ok(res, "id")
    g.check(e.is_run_id(v["uid"]), "the run's uid %r is not a slot uid" % v["uid"])
    _check_identity(v, "root's run")


def test_identity_as_nobody(t):
    """As the unprivileged caller nobody: the same (the run keeps the caller's uid in
    its user namespace; its record is govex's, with the workdir as home)."""
    e.need_restricted()
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    polf = e.without_aggregate(h.pol(t, name="nobody.json"))
    os.chmod(polf, 0o644)
    rc, out, err, _ = e.spawn(["run", "--policy", polf, "--json", "-c",
                               h.rta_code([h.op("id", IDENTITY)])], cwd=home, env=env,
                              preexec=e.nobody_preexec(), binary=binary)
    doc = e.result_of(out)
    res = h.probe_of(doc.get("stdout"))
    h.rta_proven(res, "as nobody: %r %r" % (doc.get("status"), err[-300:]))
    _check_identity(h.ok(res, "id"), "nobody's run")


def test_etc_passwd_read_only(t):
    """The run cannot append to, truncate, replace, remove or chmod /etc/passwd or
    /etc/group, nor add a user; the host's files are unchanged."""
    e.need_restricted("syscall_filter")
    before = {p: hashlib.sha256(open(p, "rb").read()).hexdigest()
              for p in ("/etc/passwd", "/etc/group")}
    ops = []
    for p in ("/etc/passwd", "/etc/group"):
        ops += [h.op("append " + p, "open(%r, 'a').write('evil:x:0:0::/:/bin/sh\\n')\nR = 1" % p),
                h.op("trunc " + p, "open(%r, 'w').close()\nR = 1" % p),
                h.op("chmod " + p, "os.chmod(%r, 0o666)\nR = 1" % p),
                h.op("unlink " + p, "os.unlink(%r)\nR = 1" % p),
                h.op("rename " + p, "open('x', 'w').write('evil:x:0:0::/:/bin/sh\\n')\n"
                                    "os.rename('x', %r)\nR = 1" % p)]
    ops += [h.op("mkfile /etc", "open('/etc/evil', 'w').write('x')\nR = 1"),
            h.op("after", "R = open('/etc/passwd').read()")]
    _, doc, res = h.run_rta(t, ops, h.pol(t))
    worked = sorted(k for k, v in res.items()
                    if k not in ("canary", "after") and v.get("ok"))
    g.check(not worked, "the run changed its /etc with: %s" % worked)
    after_inside = h.ok(res, "after")
    g.check(after_inside and "evil" not in after_inside,
            "/etc/passwd inside after the attempts: %r" % after_inside)
    for p, d in before.items():
        g.eq(hashlib.sha256(open(p, "rb").read()).hexdigest(), d, "the host's " + p)


def test_home_writable_and_defaults(t):
    """HOME is the workdir and writable (~/.config/app/x, ~/.cache); a policy without
    LANG in environment.set still gives the run LANG (or LC_ALL) C.UTF-8; a policy that
    sets HOME keeps it; neither default is listed in the plan."""
    e.need_restricted("syscall_filter")
    ops = [h.op("write", "p = os.path.join(os.environ['HOME'], '.config', 'app')\n"
                         "os.makedirs(p)\nopen(os.path.join(p, 'x'), 'w').write('ok')\n"
                         "R = open(os.path.expanduser('~/.config/app/x')).read()"),
           h.op("env", "R = {k: os.environ.get(k) for k in ('HOME', 'LANG', 'LC_ALL')}"),
           h.op("cwd", "R = os.getcwd()")]
    base = g.preset("strict")
    env_no_lang = dict(base["environment"])
    env_no_lang["set"] = {k: v for k, v in env_no_lang["set"].items() if k != "LANG"}
    polf = h.pol(t, environment=env_no_lang)
    _, doc, res = h.run_rta(t, ops, polf)
    g.eq(h.ok(res, "write"), "ok", "a file under ~/.config")
    env = h.ok(res, "env")
    g.eq(env["HOME"], h.ok(res, "cwd"), "HOME")
    g.check("C.UTF-8" in (env["LANG"], env["LC_ALL"]),
            "no C.UTF-8 locale by default: %r" % env)
    r = t.run(["plan", "--policy", polf, "-c", "print(1)"])
    r.expect_rc(0)
    names = json.loads(r.stdout)["environment"]["names"]
    g.check("HOME" not in names and "LANG" not in names and "LC_ALL" not in names,
            "the platform defaults are listed in the plan: %r" % names)
    # a policy's own HOME wins
    env_home = dict(base["environment"])
    env_home["set"] = dict(env_home["set"], HOME="/tmp")
    _, doc, res = h.run_rta(t, [ops[1]], h.pol(t, name="home.json", environment=env_home))
    g.eq(h.ok(res, "env")["HOME"], "/tmp", "HOME set by the policy")


def test_home_private_between_concurrent_runs(t):
    """Run A writes a secret in its HOME and waits; run B, concurrent, lists its own
    HOME and looks for A's file at the same path: not there.  B cannot reach A's HOME
    by any path it can name (/proc/<pid>/cwd of A is not visible either).  B starts once
    A says its secret is written (a file in a directory A may write), and A waits for B
    to end (a gate file): no fixed delay either way, so a loaded machine cannot make the
    two runs miss each other."""
    e.need_restricted("syscall_filter")
    gate_dir = t.path("gate")
    ready_dir = t.path("ready")
    os.mkdir(gate_dir)
    os.mkdir(ready_dir)
    os.chmod(gate_dir, 0o755)
    os.chmod(ready_dir, 0o777)
    os.chmod(t.tmp, 0o711)
    gate = os.path.join(gate_dir, "go")
    ready = os.path.join(ready_dir, "a-ready")
    pola = h.pol(t, "a.json", filesystem={"read": [gate_dir], "write": [ready_dir]},
                 limits={"wall_ms": 110000})
    polf = h.pol(t, filesystem={"read": [gate_dir]}, limits={"wall_ms": 60000})
    holder = {}
    a_ops = [h.op("write", "p = os.path.join(os.environ['HOME'], 'secret-of-a')\n"
                           "open(p, 'w').write('A-SECRET')\nR = p"),
             h.op("ready", "open(%r, 'w').write('1')\nR = 1" % ready),
             h.op("wait", "end = time.monotonic() + 100\n"
                          "while not os.path.exists(%r) and time.monotonic() < end:\n"
                          "    time.sleep(0.05)\nR = os.path.exists(%r)" % (gate, gate))]

    def run_a():
        holder["a"] = t.run(["run", "--policy", pola, "--json", "-c", h.rta_code(a_ops)],
                            timeout=150)
    th = threading.Thread(target=run_a)
    th.start()
    try:
        import time
        end = time.monotonic() + 100
        while not os.path.exists(ready) and th.is_alive() and time.monotonic() < end:
            time.sleep(0.05)
        g.check(os.path.exists(ready), "run A never said its secret was written")
        _, docb, resb = h.run_rta(t, [
            h.op("ls", "R = sorted(os.listdir(os.environ['HOME']))"),
            h.op("read", "R = open(os.path.join(os.environ['HOME'], 'secret-of-a')).read()"),
            h.op("scan", "found = []\nfor d, subs, files in os.walk('/'):\n"
                         "    if d.startswith('/proc') or d.startswith('/sys'):\n"
                         "        subs[:] = []\n        continue\n"
                         "    if 'secret-of-a' in files:\n        found.append(d)\nR = found"),
            h.op("proc", "found = []\nfor n in os.listdir('/proc'):\n"
                         "    if n.isdigit():\n        try:\n"
                         "            found += [n] if 'secret-of-a' in os.listdir("
                         "'/proc/%s/cwd' % n) else []\n"
                         "        except OSError:\n            pass\nR = found")], polf,
            timeout=90)
    finally:
        with open(gate, "w") as f:
            f.write("go")
        th.join(150)
    resa = h.probe_of(holder["a"].result().get("stdout"))
    h.rta_proven(resa, "run A")
    g.check(h.ok(resa, "wait"), "run A ended before B looked (inconclusive)")
    g.check("secret-of-a" not in h.ok(resb, "ls"), "B sees A's HOME file: %r" % resb["ls"])
    g.check(not resb["read"].get("ok"), "B read A's HOME file: %r" % resb["read"])
    g.eq(h.ok(resb, "scan"), [], "directories of B holding A's file")
    g.eq(h.ok(resb, "proc"), [], "processes whose cwd shows A's file")


if __name__ == "__main__":
    sys.exit(g.main([
        ("as root: passwd/group entries for the run, pwd/grp/getpass/home work",
         test_identity_as_root),
        ("as nobody: passwd/group entries for the run, pwd/grp/getpass/home work",
         test_identity_as_nobody),
        ("the run cannot change /etc/passwd or /etc/group", test_etc_passwd_read_only),
        ("HOME is the workdir and writable; defaults are not in the plan",
         test_home_writable_and_defaults),
        ("HOME is private between concurrent runs", test_home_private_between_concurrent_runs),
    ]))
