#!/usr/bin/env python3
"""The sandbox looks like a small normal machine (contract section 5): a user and group
for the run's identity in /etc/passwd and /etc/group (root, "govex", nobody/nogroup,
nothing of the host's), HOME = the workdir and a UTF-8 locale when the policy sets
none, without changing any plan digest."""
import json
import os
import pwd
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

PROBE = r"""
import getpass, grp, json, locale, os, pathlib, pwd, tempfile
out = {}
me = pwd.getpwuid(os.getuid())
out["name"] = me.pw_name
out["dir"] = me.pw_dir
out["uid_match"] = me.pw_uid == os.getuid() and me.pw_gid == os.getgid()
out["group"] = grp.getgrgid(os.getgid()).gr_name
out["getuser"] = getpass.getuser()
out["home"] = str(pathlib.Path.home())
out["expanduser"] = os.path.expanduser("~")
out["cwd"] = os.getcwd()
out["users"] = sorted(p.pw_name for p in pwd.getpwall())
out["groups"] = sorted(x.gr_name for x in grp.getgrall())
with tempfile.NamedTemporaryFile() as f:
    f.write(b"x")
    out["tempfile"] = True
out["setlocale"] = locale.setlocale(locale.LC_ALL, "")
out["encoding"] = locale.getpreferredencoding(False)
out["env"] = {k: os.environ.get(k) for k in ("HOME", "LANG", "LC_ALL")}
out["passwd"] = open("/etc/passwd").read() if os.path.exists("/etc/passwd") else None
out["group_text"] = open("/etc/group").read() if os.path.exists("/etc/group") else None
print(json.dumps(out))
"""


def _probe(t, args, policy=None):
    argv = ["run"] + (["--policy", policy] if policy else list(args)) + ["--json", "-c", PROBE]
    r = t.run(argv)
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status (stderr %r)" % doc.get("stderr"))
    return json.loads(doc["stdout"]), doc


def _host_names():
    """User and group names of the host that are not also the sandbox's own."""
    import grp
    own = {"root", "govex", "nobody", "nogroup"}
    return ({p.pw_name for p in pwd.getpwall()} | {x.gr_name for x in grp.getgrall()}) - own


def test_strict_identity(t):
    """strict: pwd/grp/getpass/Path.home/tempfile/locale work; only root, govex, nobody."""
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend here")
    out, doc = _probe(t, ["--preset", "strict"])
    g.eq(out["name"], "govex", "pwd.getpwuid(os.getuid()).pw_name")
    g.eq(out["getuser"], "govex", "getpass.getuser()")
    g.eq(out["group"], "govex", "grp.getgrgid(os.getgid())")
    g.check(out["uid_match"], "the govex entry has the run's uid and gid: %r" % out)
    g.eq(out["home"], out["cwd"], "Path.home() is the workdir")
    g.eq(out["dir"], out["cwd"], "pw_dir is the workdir")
    g.eq(out["expanduser"], out["cwd"], "~")
    g.eq(out["env"]["HOME"], out["cwd"], "HOME")
    g.eq(out["users"], ["govex", "nobody", "root"], "users")
    g.eq(out["groups"], ["govex", "nogroup", "root"], "groups")
    g.check(out["tempfile"], "tempfile")
    g.eq(out["encoding"], "UTF-8", "preferred encoding")
    g.check(out["setlocale"] in ("C.UTF-8", "C.utf8"), "setlocale: %r" % out["setlocale"])
    # nothing of the host's: no other user or group name anywhere in what the run saw
    text = out["passwd"] + out["group_text"] + doc["stdout"]
    for name in sorted(_host_names()):
        g.check(":%s:" % name not in text and "\n%s:" % name not in text
                and not text.startswith(name + ":"),
                "host user or group %r visible in the sandbox" % name)


def test_policy_environment_kept(t):
    """A HOME and a locale the policy sets are the run's; the defaults add nothing then."""
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend here")
    pol = t.policy(base="strict", environment={"set": {"HOME": "/tmp",
                                                       "LANG": "C", "PATH": "/usr/bin"}})
    out, _ = _probe(t, [], policy=pol)
    g.eq(out["env"], {"HOME": "/tmp", "LANG": "C", "LC_ALL": None}, "environment")
    g.eq(out["home"], "/tmp", "Path.home()")


def test_defaults_not_in_plan(t):
    """HOME/LC_ALL are platform defaults: the plan's environment.names list only the
    policy's (strict: LANG, PATH), so plan digests are unchanged; the run still gets
    LC_ALL when the policy sets no locale."""
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend here")
    r = t.run(["plan", "--preset", "strict", "-c", "pass"])
    r.expect_rc(0)
    plan = json.loads(r.stdout)
    g.eq(plan["environment"]["names"], ["LANG", "PATH"], "environment.names")
    pol = t.policy(base="strict", environment={"set": {"PATH": "/usr/bin"}})
    out, _ = _probe(t, [], policy=pol)
    g.eq(out["env"]["LANG"], "C.UTF-8", "LANG default")
    g.eq(out["env"]["LC_ALL"], "C.UTF-8", "LC_ALL default")
    r = t.run(["plan", "--policy", pol, "-c", "pass"])
    g.eq(json.loads(r.stdout)["environment"]["names"], ["PATH"], "environment.names")


def test_controlled_home(t):
    """The controlled backend (trusted): HOME is the run's workdir unless set."""
    out, _ = _probe(t, ["--preset", "trusted"])
    g.eq(out["env"]["HOME"], out["cwd"], "HOME")
    g.eq(out["home"], out["cwd"], "Path.home()")


if __name__ == "__main__":
    sys.exit(g.main([
        ("strict: the run's own user, group, home and locale; no host user",
         test_strict_identity),
        ("a HOME and locale the policy sets are kept", test_policy_environment_kept),
        ("HOME, LANG and LC_ALL defaults are not in the plan", test_defaults_not_in_plan),
        ("controlled backend: HOME is the workdir", test_controlled_home),
    ]))
