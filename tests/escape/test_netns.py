#!/usr/bin/env python3
"""The slots' empty network namespaces (issue 12, one-shot runs; root only): a run whose
policy denies the network joins /run/govex/netns-N, N its slot (made once, root's 0700
directory) instead of making a namespace per run, and only when it is what it must be:
a network namespace owned by the host's user namespace, not the host's own, holding one
interface, a loopback that is down.  Anything else there (the host's namespace planted,
a loopback brought up, a plain file) gives the run a fresh namespace of its own.
Concurrent runs hold different slots, so never share a namespace (in a shared one each
would see the other's unix sockets in /proc/self/net/unix).

The tampering tests plant on a tmpfs over /run/govex in a private mount namespace
(unshare -m; the real slot locks bound back in), so the host's /run/govex/netns-N are
never touched.
"""
import json
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

NETNS = "/run/govex/netns-%d"
SLOT_BASE = 0x7f000000  # the default sandbox_uid: a root run's uid is SLOT_BASE + slot
PLANTED = 64  # slots 0..63 are planted over (a run under the parallel suite is in them)
HOST_NETNS = os.readlink("/proc/self/ns/net")

CODE = r'''
import json, os
with open("/proc/self/net/dev") as f:
    ifs = sorted(l.split(":")[0].strip() for l in f.read().splitlines()[2:])
with open("/proc/self/net/unix") as f:
    unix = [int(l.split()[6]) for l in f.read().splitlines()[1:]]
print("NETNS " + json.dumps({"ns": os.readlink("/proc/self/ns/net"), "ifs": ifs,
                             "slot": os.getuid() - %d, "unix": unix}))
''' % SLOT_BASE
# the same, then five socket pairs held for 3 s
HOLD = CODE + '''
import socket, time
pairs = [socket.socketpair() for _ in range(5)]
print("MINE " + json.dumps([os.fstat(s.fileno()).st_ino for p in pairs for s in p]))
time.sleep(3)
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


def _run(t, env=None):
    r = t.run(["run", "--policy", e.policy(t, name="net.json"), "--json", "-c", CODE],
              env=env)
    doc = r.result()
    g.eq(doc["status"], "success", "status\n" + r.describe())
    return _answer(doc["stdout"])


def _ns_of(path):
    return "net:[%d]" % os.stat(path).st_ino


def test_runs_join_their_slots_namespace(t):
    """A run joins its slot's empty namespace: not the host's, only a loopback."""
    _need_root()
    a = _run(t)
    st = os.stat("/run/govex")
    g.eq((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o700), "owner and mode of /run/govex")
    path = NETNS % a["slot"]
    with open("/proc/self/mountinfo") as f:
        g.check(any(l.split()[4] == path and " nsfs " in l for l in f),
                "%s is not an nsfs mount" % path)
    g.eq(a["ns"], _ns_of(path), "the run's network namespace")
    g.check(a["ns"] != HOST_NETNS, "the run is in the host's network namespace")
    g.eq(a["ifs"], ["lo"], "interfaces inside")


def test_concurrent_runs_do_not_share(t):
    """Two runs at once: different namespaces, and neither sees the other's sockets."""
    _need_root()
    pol = e.policy(t, name="net.json")
    hold = subprocess.Popen([g.GOVEX, "run", "--policy", pol, "--json", "-c", HOLD],
                            stdout=subprocess.PIPE, text=True)
    try:
        import time
        time.sleep(1.0)
        b = _run(t)
    finally:
        out, _ = hold.communicate(timeout=60)
    a = _answer(json.loads(out)["stdout"])
    g.check(a["slot"] != b["slot"], "two concurrent runs in one slot: %r %r" % (a, b))
    g.check(a["ns"] != b["ns"], "two concurrent runs share a network namespace: %r" % a["ns"])
    mine = json.loads([l for l in json.loads(out)["stdout"].splitlines()
                       if l.startswith("MINE ")][0][5:])
    g.eq(len(mine), 10, "sockets the holding run made")
    g.eq(sorted(set(b["unix"]) & set(mine)), [],
         "the concurrent run's sockets listed in /proc/self/net/unix")


SCRIPT = r'''
set -e
mount --make-rprivate /
plant="$1"; govex="$2"; pol="$3"; code="$4"; tmp="$5"
# plant on a tmpfs over /run/govex in this private mount namespace: removing or
# replacing the host's netns-N files would unmount them for the host too (/run is not a
# mount of its own here); the real slot locks are bound back in
mkdir -p -m 0700 /run/govex/slots
keep="$tmp/slots-keep"; mkdir -p "$keep"
mount --bind /run/govex/slots "$keep"
mount -t tmpfs -o mode=0700 govex-netns-test /run/govex
mkdir -m 0700 /run/govex/slots
mount --bind "$keep" /run/govex/slots
n=0
while [ $n -lt %(planted)d ]; do
    f=$(printf "%(netns)s" $n)
    case "$plant" in
    host)
        touch "$f"; mount --bind /proc/self/ns/net "$f" ;;
    lo_up)
        if [ $n = 0 ]; then touch "$f"; unshare --net="$f" ip link set lo up; first=$f
        else touch "$f"; mount --bind "$first" "$f"; fi ;;
    file)
        touch "$f" ;;
    esac
    n=$((n+1))
done
echo "planted $(readlink /proc/self/ns/net) $(stat -c %%i $(printf "%(netns)s" 0))"
"$govex" run --policy "$pol" --json -c "$code" > "$tmp/out.json"
echo ran
''' % {"netns": NETNS, "planted": PLANTED}


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
    ans = _answer(doc["stdout"])
    g.check(0 <= ans["slot"] < PLANTED, "the run's slot %d is beyond those planted over"
            % ans["slot"])
    return ans, "net:[%s]" % planted_ino


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
        ("network: deny runs join their slot's empty namespace",
         test_runs_join_their_slots_namespace),
        ("concurrent runs do not share a namespace", test_concurrent_runs_do_not_share),
        ("the host's namespace planted there is not joined",
         test_host_namespace_planted_not_joined),
        ("a namespace with its loopback up is not joined", test_loopback_up_not_joined),
        ("a plain file there: the run has its own namespace", test_plain_file_not_joined),
    ]))
