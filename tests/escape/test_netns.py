#!/usr/bin/env python3
"""The host-wide empty network namespace (issue 12, one-shot runs; root only): a run
whose policy denies the network joins /run/govex/netns-empty (made once, root's 0700
directory) instead of making a namespace per run, and only when it is what it must be:
a network namespace owned by the host's user namespace, not the host's own, holding one
interface, a loopback that is down.  Anything else there (the host's namespace planted,
a loopback brought up, a plain file) gives the run a fresh namespace of its own.

The tampering tests plant in a private mount namespace (unshare -m), so the host's
/run/govex/netns-empty is never touched.
"""
import json
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

NETNS = "/run/govex/netns-empty"
HOST_NETNS = os.readlink("/proc/self/ns/net")

CODE = r'''
import json, os
with open("/proc/self/net/dev") as f:
    ifs = sorted(l.split(":")[0].strip() for l in f.read().splitlines()[2:])
print("NETNS " + json.dumps({"ns": os.readlink("/proc/self/ns/net"), "ifs": ifs}))
'''


def _need_root():
    if os.geteuid() != 0:
        e.skip("root", "the host-wide network namespace is root's")
    e.need_restricted("network_deny")


def _answer(stdout):
    for line in (stdout or "").splitlines():
        if line.startswith("NETNS "):
            return json.loads(line[len("NETNS "):])
    raise g.Failure("the run printed no answer: %r" % (stdout,))


def _run(t):
    r = t.run(["run", "--policy", e.policy(t, name="net.json"), "--json", "-c", CODE])
    doc = r.result()
    g.eq(doc["status"], "success", "status\n" + r.describe())
    return _answer(doc["stdout"])


def _ns_of(path):
    return "net:[%d]" % os.stat(path).st_ino


def test_runs_join_the_empty_namespace(t):
    """Two runs share the one empty namespace: not the host's, only a loopback."""
    _need_root()
    a = _run(t)
    b = _run(t)
    st = os.stat("/run/govex")
    g.eq((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o700), "owner and mode of /run/govex")
    with open("/proc/self/mountinfo") as f:
        g.check(any(l.split()[4] == NETNS and " nsfs " in l for l in f),
                "%s is not an nsfs mount" % NETNS)
    g.eq(a["ns"], _ns_of(NETNS), "the run's network namespace")
    g.eq(b["ns"], a["ns"], "the second run's network namespace")
    g.check(a["ns"] != HOST_NETNS, "the run is in the host's network namespace")
    g.eq(a["ifs"], ["lo"], "interfaces inside")


SCRIPT = r'''
set -e
mount --make-rprivate /
plant="$1"; govex="$2"; pol="$3"; code="$4"; tmp="$5"
umount "%(netns)s" 2>/dev/null || true
rm -f "%(netns)s"
case "$plant" in
host)
    touch "%(netns)s"; mount --bind /proc/self/ns/net "%(netns)s" ;;
lo_up)
    touch "%(netns)s"; unshare --net="%(netns)s" ip link set lo up ;;
file)
    touch "%(netns)s" ;;
esac
echo "planted $(readlink /proc/self/ns/net) $(stat -c %%i %(netns)s)"
"$govex" run --policy "$pol" --json -c "$code" > "$tmp/out.json"
echo ran
''' % {"netns": NETNS}


def _planted_run(t, plant):
    pol = e.policy(t, name="net-%s.json" % plant)
    p = subprocess.run(["unshare", "-m", "sh", "-c", SCRIPT, "sh", plant, g.GOVEX, pol, CODE,
                        t.tmp], capture_output=True, text=True, timeout=60)
    if "planted" not in p.stdout:
        e.skip("unshare", "cannot plant in a private mount namespace here: %r"
               % (p.stderr[-300:],))
    g.check("ran" in p.stdout, "govex did not run: %r %r" % (p.stdout, p.stderr[-500:]))
    planted_ino = p.stdout.split("planted ", 1)[1].split()[1]
    with open(os.path.join(t.tmp, "out.json")) as f:
        doc = json.load(f)
    g.eq(doc["status"], "success", "status of the run over a planted %s" % plant)
    return _answer(doc["stdout"]), "net:[%s]" % planted_ino


def test_host_namespace_planted_not_joined(t):
    """The host's own network namespace mounted there: never joined."""
    _need_root()
    ans, planted = _planted_run(t, "host")
    g.check(ans["ns"] != HOST_NETNS, "the run joined the host's network namespace")
    g.eq(ans["ifs"], ["lo"], "interfaces inside")


def test_loopback_up_not_joined(t):
    """A namespace whose loopback is up: the run gets a fresh one instead."""
    _need_root()
    ans, planted = _planted_run(t, "lo_up")
    g.check(ans["ns"] != planted, "the run joined a namespace whose loopback is up")
    g.check(ans["ns"] != HOST_NETNS, "the run is in the host's network namespace")
    g.eq(ans["ifs"], ["lo"], "interfaces inside")


def test_plain_file_not_joined(t):
    """A plain file under the name (a creator between its file and its mount): the run
    still has a namespace of its own, not the host's."""
    _need_root()
    ans, _ = _planted_run(t, "file")
    g.check(ans["ns"] != HOST_NETNS, "the run is in the host's network namespace")
    g.eq(ans["ifs"], ["lo"], "interfaces inside")


if __name__ == "__main__":
    sys.exit(g.main([
        ("network: deny runs join the one empty namespace", test_runs_join_the_empty_namespace),
        ("the host's namespace planted there is not joined",
         test_host_namespace_planted_not_joined),
        ("a namespace with its loopback up is not joined", test_loopback_up_not_joined),
        ("a plain file there: the run has its own namespace", test_plain_file_not_joined),
    ]))
