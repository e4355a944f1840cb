#!/usr/bin/env python3
"""Red team RT-O: one-shot speedups (issue 12) attacked as a hostile run and as a hostile
host-side neighbour.

What changed: as root, `network: deny` runs join ONE host-wide empty network namespace
(/run/govex/netns-empty) instead of a fresh one each; seccomp programs are compiled in;
the dead-workdir sweep runs in a thread; the guard filter is a binary tree.

Expected results come from DESIGN.md (Trust boundaries: "Runs cannot see or touch each
other") and the contract (a non-AF_UNIX socket() is EAFNOSUPPORT and named
denied_by_policy network_deny with its count; a second process or program is refused and
named subprocess_deny), and from ns.c's own promise: what a run can reach in the shared
namespace is what it could reach in a fresh one.  Never from what the code does.

Anything planted in /run/govex is planted on a tmpfs mounted over /run/govex in a private
mount namespace (unshare -m), so the host's namespace file is never touched.  Every payload runs behind the probe's canary
(run_proven).  Prints TAP.
"""
import json
import os
import secrets
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

NETNS = "/run/govex/netns-empty"
HOST_NETNS = os.readlink("/proc/self/ns/net")

# Operations defined for this file, run by the probe behind its canary.
PRELUDE = r'''
import fcntl, struct

def _unix_names():
    try:
        with open("/proc/self/net/unix") as f:
            return f.read()
    except OSError as ex:
        return "unreadable:%s" % _ename(ex.errno)

def op_rto_listen(name, secs):
    """Under network: deny a run has no socket(), only AF_UNIX socketpair(): name one end
    (abstract, and a pathname in the cwd), try to listen, then wait SECS for anyone to
    reach it."""
    out = {"ns": os.readlink("/proc/self/ns/net"), "accepted": 0, "got": []}
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for label, sk, addr in (("bind_abstract", a, "\0" + name),
                            ("bind_seqpacket", c, "\0" + name + "-sp"),
                            ("bind_path", b, os.path.join(os.getcwd(), name + ".sock"))):
        try:
            sk.bind(addr)
            out[label] = "bound"
        except OSError as ex:
            out[label] = _ename(ex.errno)
    try:
        a.listen(4)
        out["listen"] = "listening"
    except OSError as ex:
        out["listen"] = _ename(ex.errno)
    # and a number of unnamed socketpairs another run could count (a covert channel)
    held = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            for _ in range(int(name[-2:], 16) % 32 + 20)]
    out["held_inodes"] = sorted(os.fstat(x.fileno()).st_ino for pr in held for x in pr)
    out["held"] = len(held)
    table = _unix_names()
    out["seen_self"] = ("@" + name) in table
    out["my_lines"] = len(table.splitlines()) - 1
    for x in (a, b, c, d):
        x.setblocking(False)
    end = time.time() + secs
    while time.time() < end:
        try:
            k, _ = a.accept()
            out["accepted"] += 1
            k.close()
        except OSError:
            pass
        for x in (a, c):
            try:
                out["got"].append(x.recv(64).decode("latin-1"))
            except OSError:
                pass
        time.sleep(0.02)
    out["still_held"] = len(held)
    return out

def op_rto_peek(name, secs):
    """For up to SECS: reach NAME's abstract sockets (connect/sendto from a socketpair
    end: the only AF_UNIX sockets a run has), and look for NAME in /proc/net/unix."""
    out = {"ns": os.readlink("/proc/self/ns/net"), "connect": None, "sendto": None,
           "seen": False, "table_sample": [], "unix_lines": 0}
    end = time.time() + secs
    while time.time() < end:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            a.connect("\0" + name)
            out["connect"] = "connected"
        except OSError as ex:
            out["connect"] = _ename(ex.errno)
        try:
            a.sendto(b"from-other-run", "\0" + name + "-sp")
            out["sendto"] = "sent"
        except OSError as ex:
            out["sendto"] = _ename(ex.errno)
        a.close()
        b.close()
        table = _unix_names()
        own = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                own.add(os.readlink("/proc/self/fd/" + fd))
            except OSError:
                pass
        lines = table.splitlines()[1:]
        foreign = [l.split()[6] for l in lines
                   if len(l.split()) > 6 and "socket:[%s]" % l.split()[6] not in own]
        out["unix_lines"] = max(out["unix_lines"], len(lines))
        out["foreign_inodes"] = sorted(int(i) for i in foreign)
        # the namespace's socket counters (no names: a count another run modulates)
        try:
            with open("/proc/self/net/sockstat") as f:
                used = int(f.readline().split()[2])
            with open("/proc/self/net/protocols") as f:
                unix = [int(l.split()[2]) for l in f if l.startswith("UNIX ")][0]
            out["sockstat_used"] = max(out.get("sockstat_used", 0), used - len(own))
            out["protocols_unix"] = max(out.get("protocols_unix", 0), unix - len(own))
        except (OSError, ValueError, IndexError) as ex:
            out["counters"] = repr(ex)
        if name in table:
            out["seen"] = True
            out["table_sample"] = [l for l in table.splitlines() if name in l][:4]
        if out["connect"] == "connected" or out["seen"]:
            break
        time.sleep(0.05)
    return out

def op_rto_inflight(n):
    """N socketpairs each sent into its own queue (SCM_RIGHTS) and closed: cycles only
    the kernel's unix garbage collector frees, left in the namespace by a run."""
    import array
    for _ in range(n):
        x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        x.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                            array.array("i", [x.fileno(), y.fileno()]))])
        x.close()
        y.close()
    return len(_unix_names().splitlines()) - 1

def op_rto_unix_count():
    with open("/proc/self/net/sockstat") as f:
        used = int(f.readline().split()[2])
    return {"ns": os.readlink("/proc/self/ns/net"), "unix": len(_unix_names().splitlines()) - 1,
            "used": used}

SIOCGIFFLAGS, SIOCSIFFLAGS, SIOCSIFNAME, SIOCGIFMTU, SIOCSIFMTU = (
    0x8913, 0x8914, 0x8923, 0x8921, 0x8922)
NET_SYSCTLS = ["/proc/sys/net/unix/max_dgram_qlen", "/proc/sys/net/core/somaxconn",
               "/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/ping_group_range",
               "/proc/sys/net/ipv4/ip_unprivileged_port_start"]

def _ifreq(name, data=b""):
    return struct.pack("16s16s", name.encode(), data.ljust(16, b"\0"))

def op_rto_netstate():
    """What a later run would inherit: lo's flags and mtu, the interfaces, net sysctls."""
    s, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, _ifreq("lo"))[:18])[1]
    mtu = struct.unpack("16si", fcntl.ioctl(s, SIOCGIFMTU, _ifreq("lo"))[:20])[1]
    s.close()
    s2.close()
    with open("/proc/self/net/dev") as f:
        ifs = sorted(l.split(":")[0].strip() for l in f.read().splitlines()[2:])
    sysctls = {}
    for p in NET_SYSCTLS:
        try:
            with open(p) as f:
                sysctls[p] = f.read().strip()
        except OSError as ex:
            sysctls[p] = "unreadable:" + _ename(ex.errno)
    return {"ns": os.readlink("/proc/self/ns/net"), "lo_up": bool(flags & 1), "mtu": mtu,
            "ifs": ifs, "sysctls": sysctls}

def op_rto_netadmin():
    """Every way to change the shared namespace without socket() of a network family:
    ioctls on an AF_UNIX socket (lo up, rename, mtu) and the namespace's sysctls."""
    out = {}
    s, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for label, req, arg in (("lo_up", SIOCSIFFLAGS, _ifreq("lo", struct.pack("H", 0x1 | 0x8))),
                            ("rename", SIOCSIFNAME, _ifreq("lo", b"govexrto")),
                            ("mtu", SIOCSIFMTU, _ifreq("lo", struct.pack("i", 1280)))):
        try:
            fcntl.ioctl(s, req, arg)
            out[label] = "changed"
        except OSError as ex:
            out[label] = _ename(ex.errno)
    s.close()
    s2.close()
    for p, v in zip(NET_SYSCTLS, ["7", "7", "1", "0 2147483647", "0"]):
        try:
            with open(p, "w") as f:
                f.write(v)
            out[p] = "written"
        except OSError as ex:
            out[p] = _ename(ex.errno)
    return out

def op_rto_socket(family, kind=1):
    """Raw socket(FAMILY, KIND, 0) (a 64-bit family: high bits reach the filter)."""
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(41), ctypes.c_long(family), ctypes.c_long(kind),
                    ctypes.c_long(0))
    if r < 0:
        raise OSError(ctypes.get_errno(), "socket")
    os.close(r)
    return "made"

def op_rto_raw(nr, *args):
    """A raw system call NR; a child, should one be made, exits at once."""
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r == 0 and nr in (56, 57, 58, 435):
        os._exit(0)
    if r < 0:
        raise OSError(ctypes.get_errno(), "syscall %d" % nr)
    return "made %d" % r

def op_rto_x32(nr, *args):
    """An x32 system call: nr | __X32_SYSCALL_BIT.  A child, should one be made, exits."""
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(0x40000000 | nr), *[ctypes.c_long(a) for a in args])
    if r == 0 and nr in (56, 57, 58):
        os._exit(0)
    if r < 0:
        raise OSError(ctypes.get_errno(), "x32")
    if nr == 41:
        os.close(r)
    return "made %d" % r
'''


def _need_root():
    if os.geteuid() != 0:
        e.skip("root", "the host-wide network namespace is root's")
    e.need_restricted("network_deny")


def _denials(doc, control):
    return [d for d in doc.get("diagnostics") or []
            if isinstance(d, dict) and d.get("code") == "denied_by_policy"
            and control in (d.get("controls") or [])]


def _named(doc, control, what, count=None):
    ds = _denials(doc, control)
    g.check(ds, "%s: no denied_by_policy naming %s; status %r diagnostics %r"
            % (what, control, doc.get("status"), doc.get("diagnostics")))
    if count is not None:
        g.check(("(%d attempt" % count) in ds[0].get("message", ""),
                "%s: expected %d attempts counted: %r" % (what, count, ds[0]))


def _proven(t, ops, pol=None, **kw):
    return e.run_proven(t, ops, pol=pol, prelude=PRELUDE, **kw)


def _note(msg):
    print("# " + msg, flush=True)


def _value(res, label):
    return e.allowed(res, label)


# ---------------------------------------------------------------- two runs, one namespace

def _concurrent(t, first_ops, second_ops, delay=1.5):
    """Runs FIRST_OPS and, DELAY seconds later while it still runs, SECOND_OPS."""
    out = {}

    def go(key, ops, pol):
        try:
            out[key] = _proven(t, ops, pol=pol)
        except BaseException as ex:  # noqa: BLE001 - re-raised below
            out[key] = ex

    pa = e.policy(t, name="a.json", limits={"wall_ms": 30000})
    pb = e.policy(t, name="b.json", limits={"wall_ms": 30000})
    ta = threading.Thread(target=go, args=("a", first_ops, pa))
    ta.start()
    time.sleep(delay)
    go("b", second_ops, pb)
    ta.join()
    for k in ("a", "b"):
        if isinstance(out[k], BaseException):
            raise out[k]
    return out["a"][2], out["b"][2]


def test_concurrent_runs_unix_sockets(t):
    """Under network: deny a run has no socket() but keeps AF_UNIX socketpair().  Run A
    names its socketpair ends (an abstract name, a pathname in its workdir) and waits;
    run B, concurrently, tries to reach those names and reads /proc/net/unix.  Expected
    (DESIGN: Runs cannot see or touch each other): B reaches nothing and sees none of
    A's sockets: no name, path or inode of A's in B's /proc/net/unix (with a namespace of
    its own, as before the shared one, it sees only its own)."""
    _need_root()
    name = "govex-rto-" + secrets.token_hex(6)
    a, b = _concurrent(t, [["rto_listen", name, 6.0, {"as": "listen"}]],
                       [["rto_peek", name, 3.0, {"as": "peek"}]])
    la, pb = _value(a, "listen"), _value(b, "peek")
    _note("A %r" % {k: v for k, v in la.items() if k != "held_inodes"})
    _note("B %r" % {k: v for k, v in pb.items() if k != "foreign_inodes"})
    _note("A's netns %s, B's netns %s, shared %s" % (la["ns"], pb["ns"], la["ns"] == pb["ns"]))
    g.check(pb["connect"] != "connected", "B connected to A's abstract socket: %r" % pb)
    g.eq(la["accepted"], 0, "connections A accepted from another run")
    g.eq(la["got"], [], "messages A received from another run")
    g.check(not pb["seen"], "B sees A's unix sockets (name, inode) in its "
            "/proc/net/unix: %r" % (pb["table_sample"],))
    problems = []
    seen_of_a = sorted(set(la["held_inodes"]) & set(pb.get("foreign_inodes", [])))
    if seen_of_a:
        problems.append("B sees %d of A's %d socketpair sockets (their inodes) in its "
                        "/proc/net/unix, %d foreign sockets in all"
                        % (len(seen_of_a), len(la["held_inodes"]),
                           len(pb.get("foreign_inodes", []))))
    n_a = len(la["held_inodes"])
    for k in ("sockstat_used", "protocols_unix"):
        if pb.get(k, 0) >= n_a:
            problems.append("B's /proc/net/%s counts %r sockets besides its own descriptors "
                            "(A holds %d)" % (k.split("_")[0], pb.get(k), n_a))
    g.check(not problems, "A's sockets reach B (a channel between concurrent runs): "
            + "; ".join(problems))


def test_run_cannot_change_the_namespace(t):
    """A run tries to change the shared namespace (lo up, rename, mtu through ioctls on an
    AF_UNIX socket; the namespace's sysctls under /proc/sys/net); a later run must find
    it exactly as before.  Expected: every change refused, nothing changed."""
    _need_root()
    _, _, r1 = _proven(t, [["rto_netstate", {"as": "before"}],
                           ["rto_netadmin", {"as": "admin"}],
                           ["rto_netstate", {"as": "after"}]])
    before, admin = _value(r1, "before"), _value(r1, "admin")
    for k, v in admin.items():
        g.check(v not in ("changed", "written"), "the run changed %s in the shared network "
                "namespace: %r" % (k, admin))
    g.eq(before["ifs"], ["lo"], "interfaces")
    g.check(not before["lo_up"], "lo is up in the run's namespace: %r" % before)
    _, _, r2 = _proven(t, [["rto_netstate", {"as": "later"}]])
    later = _value(r2, "later")
    _note("attempts: %r" % admin)
    g.eq(_value(r1, "after"), before, "the namespace after the attempts")
    later.pop("ns")
    before.pop("ns")
    g.eq(later, before, "the namespace a later run is in")


def test_inflight_sockets_not_left_for_later_runs(t):
    """A run leaves 50 unix socket cycles in flight (SCM_RIGHTS into their own queues)
    and ends; the next run in the shared namespace must find no socket it did not make
    (expected: the namespace a later run joins is as empty as a fresh one)."""
    _need_root()
    _, _, r1 = _proven(t, [["rto_inflight", 50, {"as": "left"}]])
    g.check(_value(r1, "left") >= 100, "the cycles were not made: %r" % r1["left"])
    _, _, r2 = _proven(t, [["rto_unix_count", {"as": "later"}]])
    later = _value(r2, "later")
    g.eq((later["unix"], later["used"]), (0, 0),
         "unix sockets / sockets used a later run finds in its namespace (%s)" % later["ns"])


# ---------------------------------------------------------------- tampered namespace file

PLANT = r'''
set -e
mount --make-rprivate /
plant="$1"; govex="$2"; pol="$3"; code="$4"; tmp="$5"; name="$6"
bg=""
mkdir -p /run/govex/slots "$tmp/slots"
# a tmpfs of this private mount namespace over /run/govex: nothing planted below is the
# host's; the host's run slots (slot.c) are bound back, so runs still share them
mount --bind /run/govex/slots "$tmp/slots"
mount -t tmpfs -o mode=0700 govex-rto /run/govex
mkdir /run/govex/slots
mount --move "$tmp/slots" /run/govex/slots
case "$plant" in
veth)
    touch "%(netns)s"; unshare --net="%(netns)s" ip link add rto0 type veth peer name rto1 ;;
userns)
    touch "%(netns)s"; unshare -U -r -n sleep 60 & holder=$!; bg=$holder
    mine=$(readlink /proc/self/ns/net)
    for i in $(seq 50); do [ "$(readlink /proc/$holder/ns/net)" != "$mine" ] && break; sleep 0.1; done
    mount --bind /proc/$holder/ns/net "%(netns)s" ;;
symlink_host)
    ln -s /proc/1/ns/net "%(netns)s" ;;
symlink_empty)
    touch "$tmp/other"; unshare --net="$tmp/other" true; ln -s "$tmp/other" "%(netns)s" ;;
listener)
    touch "%(netns)s"; unshare --net="%(netns)s" true
    nsenter --net="%(netns)s" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("\0" + sys.argv[1]); s.listen(4)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("\0" + sys.argv[1] + "-dg")
print("listening", flush=True)
s.setblocking(False); d.setblocking(False)
end = time.time() + 20
while time.time() < end:
    for f in (s.accept, lambda: d.recv(64)):
        try:
            f(); open(sys.argv[2], "w").write("reached")
        except OSError:
            pass
    time.sleep(0.02)
' "$name" "$tmp/accepted" > "$tmp/listener.out" 2>&1 &
    bg=$!
    for i in $(seq 50); do grep -q listening "$tmp/listener.out" 2>/dev/null && break; sleep 0.1; done
    ;;
esac
ino=$(stat -L -c %%i "%(netns)s" 2>/dev/null || echo none)
echo "planted $ino"
"$govex" run --policy "$pol" --json -c "$code" > "$tmp/out.json" || true
echo ran
[ -n "$bg" ] && kill "$bg" 2>/dev/null; wait 2>/dev/null; true
''' % {"netns": NETNS}


def _planted(t, plant, ops):
    if os.geteuid() != 0:
        e.skip("root", "planting in /run/govex needs root")
    e.need_restricted("network_deny")
    pol = e.policy(t, name="net-%s.json" % plant)
    name = "govex-rto-host-" + secrets.token_hex(4)
    ops = [[o if o != "NAME" else name for o in op] for op in ops]
    code = e.proven_code(ops, PRELUDE)
    p = subprocess.run(["unshare", "-m", "sh", "-c", PLANT, "sh", plant, g.GOVEX, pol, code,
                        t.tmp, name], capture_output=True, text=True, timeout=90)
    if "planted" not in p.stdout:
        e.skip("unshare", "cannot plant in a private mount namespace: %r" % p.stderr[-300:])
    g.check("ran" in p.stdout, "govex did not run: %r %r" % (p.stdout, p.stderr[-500:]))
    ino = p.stdout.split("planted ", 1)[1].split()[0]
    with open(os.path.join(t.tmp, "out.json")) as f:
        doc = json.load(f)
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output over a planted %s: %r" % (plant, doc))
    e.proven(res)
    accepted = os.path.exists(os.path.join(t.tmp, "accepted"))
    return res, "net:[%s]" % ino, accepted


def _not_joined(t, plant):
    res, planted, _ = _planted(t, plant, [["rto_netstate", {"as": "st"}]])
    st = _value(res, "st")
    g.check(st["ns"] != planted, "the run joined a planted %s namespace: %r" % (plant, st))
    g.check(st["ns"] != HOST_NETNS, "the run is in the host's network namespace")
    g.eq(st["ifs"], ["lo"], "interfaces inside")
    g.check(not st["lo_up"], "lo is up: %r" % st)


def test_planted_veth_not_joined(t):
    """A namespace with lo down and an extra veth pair: never joined."""
    _not_joined(t, "veth")


def test_planted_foreign_userns_not_joined(t):
    """A namespace owned by a user namespace of the planter's (its root has
    CAP_NET_ADMIN over it): never joined."""
    _not_joined(t, "userns")


def test_planted_symlink_to_host_not_joined(t):
    """A symlink to the host's (pid 1's) network namespace: never followed."""
    _not_joined(t, "symlink_host")


def test_planted_symlink_to_empty_not_joined(t):
    """A symlink to an empty namespace mounted elsewhere (which the planter keeps): the
    name is not a mount of govex's, so never joined."""
    _not_joined(t, "symlink_empty")


def test_planted_listener_unreachable(t):
    """A host-side neighbour keeps an abstract listener inside the namespace file (lo down,
    nothing else: it passes every check).  Expected (a run reaches there only what it
    could in a fresh namespace): the run neither connects to it nor sees it in
    /proc/net/unix."""
    res, planted, accepted = _planted(t, "listener", [["rto_peek", "NAME", 2.0,
                                                       {"as": "peek"}]])
    pk = _value(res, "peek")
    _note("joined the planted namespace: %s" % (pk["ns"] == planted))
    g.check(pk["connect"] != "connected" and not accepted,
            "the run connected to a host listener in the shared namespace: %r" % pk)
    g.check(not pk["seen"], "the run sees the host process's sockets in /proc/net/unix: "
            "%r (joined=%s)" % (pk["table_sample"], pk["ns"] == planted))


# ---------------------------------------------------------------- tree-shaped guard

FAMILIES = [2, 10, 16, 17, 3, 4, 5, 9, 15, 38, 40, 44, 45, 46, 47, 255, 0x7fffffff,
            0xffffffff, (1 << 32) | 2, (1 << 32) | 16, 0]


def test_socket_families_named(t):
    """Under network: deny, socket() of every non-AF_UNIX family, raw numbers included
    (unknown ones, a 64-bit family whose low half is AF_INET/AF_NETLINK): refused with
    EAFNOSUPPORT and every attempt counted in denied_by_policy network_deny."""
    e.need_restricted("network_deny")
    ops = [["rto_socket", f, 2 if f != 17 else 3, {"as": "f%x" % f}] for f in FAMILIES]
    ops.append(["rto_socket", 1, 1, {"as": "unix"}])
    _, doc, res = _proven(t, ops)
    for f in FAMILIES:
        e.denied(res, "f%x" % f, "EAFNOSUPPORT")
    # AF_UNIX too (seccomp.c: no socket() at all under network: deny), not counted
    e.denied(res, "unix", "EAFNOSUPPORT")
    _named(doc, "network_deny", "raw socket families", count=len(FAMILIES))


def test_other_guard_pairs_named(t):
    """The other two tree-shaped guards compiled in: network: deny with subprocess: allow
    (raw socket families refused and counted), and subprocess: deny with network: allow
    (fork/vfork/clone refused and counted).  Expected as under strict."""
    e.need_restricted("network_deny", "subprocess_deny")
    e.need_x86_64()
    fams = [2, 10, 16, 17, (1 << 32) | 2]
    pol = e.policy(t, name="net-only.json", subprocess="allow")
    _, doc, res = _proven(t, [["rto_socket", f, 2, {"as": "f%x" % f}] for f in fams],
                          pol=pol)
    for f in fams:
        e.denied(res, "f%x" % f, "EAFNOSUPPORT")
    _named(doc, "network_deny", "raw families, subprocess allowed", count=len(fams))
    pol = e.policy(t, name="sub-only.json", network="allow")
    ops = [["rto_raw", 57, {"as": "fork"}], ["rto_raw", 58, {"as": "vfork"}],
           ["rc_clone_flags", 17, {"as": "clone"}]]
    r = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code(ops, PRELUDE)])
    doc = r.result()
    if doc.get("status") == "policy_refused":
        _note("network: allow refused here: %r" % doc.get("diagnostics"))
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    e.proven(res)
    for label in ("fork", "vfork", "clone"):
        got = res.get(label)
        g.check(got is not None and not got.get("ok"), "%s got through: %r" % (label, got))
    _named(doc, "subprocess_deny", "fork/vfork/clone, network allowed", count=len(ops))


X32 = {"socket": [41, 2, 1, 0], "fork": [57], "vfork": [58], "clone": [56, 17, 0, 0, 0, 0],
       "execve": [520, 0, 0, 0]}


def test_x32_numbers_refused(t):
    """The tree-shaped guard compares syscall numbers: the same calls with the x32 bit
    (socket(AF_INET), fork, vfork, clone, x32 execve 520), each in a run of its own, must
    not get through: an error or the run killed (SIGSYS), never a socket or a child.
    (Whether such a kill is named is reported, not asserted: the contract names the
    x86_64 calls.)"""
    e.need_restricted("network_deny", "subprocess_deny")
    e.need_x86_64()
    for label, args in X32.items():
        pol = e.policy(t, name="x32-%s.json" % label)
        r = t.run(["run", "--policy", pol, "--json", "-c",
                   e.proven_code([["rto_x32"] + args + [{"as": label}]], PRELUDE)])
        doc = r.result()
        out = doc.get("stdout") or ""
        g.check("GOVEX-CANARY" in out, "x32 %s: no proven canary: %r" % (label, out[-300:]))
        g.check("GOVEX-EXECED" not in out, "x32 %s: a program ran" % label)
        res = e.probe_lines(out)
        if res is None:
            _note("x32 %s: run ended %s, %r, diagnostics %r" % (
                label, doc.get("status"), {k: v for k, v in doc.items()
                                           if k in ("exit_code", "signal", "term_signal")},
                doc.get("diagnostics")))
            continue
        e.proven(res)
        got = res.get(label)
        g.check(got is not None and not got.get("ok"), "x32 %s got through: %r"
                % (label, got))
        _note("x32 %s: %r" % (label, got))


def test_subprocess_denials_named(t):
    """fork, vfork and clone without CLONE_THREAD through raw numbers, then a second
    program: each refused, and denied_by_policy subprocess_deny names them, every
    attempt counted."""
    e.need_restricted("subprocess_deny")
    e.need_x86_64()
    ops = [["rc_clone_flags", 17, {"as": "clone_fork"}],
           ["rc_clone_flags", 0x4000 | 0x100 | 17, {"as": "clone_vfork"}],
           ["rto_raw", 57, {"as": "fork"}],
           ["rto_raw", 58, {"as": "vfork"}],
           ["rc_exec", {"as": "exec"}]]
    r, doc, res = _proven(t, ops)
    for label in ("clone_fork", "clone_vfork", "fork", "vfork", "exec"):
        got = res.get(label)
        g.check(got is not None and not got.get("ok"), "%s got through: %r" % (label, got))
    _note("diagnostics: %r" % doc.get("diagnostics"))
    _note("results: %r" % {k: v for k, v in res.items() if k != "canary"})
    _named(doc, "subprocess_deny", "fork/vfork/clone/exec", count=len(ops))


def test_ioctl_and_setuid_still_refused(t):
    """TIOCSTI/TIOCLINUX (high bits too), F_SETPIPE_SZ, a setuid-bit chmod: refused under
    the tree-shaped guard as before."""
    e.need_restricted("syscall_filter")
    w = "/tmp"
    ops = [["tiocsti", False, {"as": "sti"}], ["tiocsti", True, {"as": "sti_hi"}],
           ["tty_ioctl", 0, 0x541C, False, {"as": "linux"}],
           ["tty_ioctl", 0, 0x541C, True, {"as": "linux_hi"}],
           ["pipe_hog", 1, 1 << 20, {"as": "setpipe"}],
           ["rc_setuid_file", "", os.path.join(w, "su"), "chmod", {"as": "suid"}]]
    r, doc, res = _proven(t, ops)
    for label in ("sti", "sti_hi", "linux", "linux_hi", "suid"):
        got = res.get(label)
        g.check(got is not None and not got.get("ok"), "%s got through: %r" % (label, got))
    g.eq(_value(res, "setpipe"), [1, 0], "pipes taken, F_SETPIPE_SZ granted")


# ---------------------------------------------------------------- the sweep thread

def test_sweep_thread_leaks_nothing(t):
    """16 dead workdirs of ours (govex-w-XXXXXX, 0700, lock free, many files) in TMPDIR:
    the run's sweep thread removes them while the sandbox starts.  Expected: the run
    holds no descriptor of TMPDIR or of them (the thread's fds never reach the sandbox),
    and all are gone when `govex run` returns."""
    e.need_restricted("syscall_filter")
    tmpd = os.path.join(t.tmp, "tmpd")
    os.mkdir(tmpd, 0o700)
    dead = []
    for i in range(16):
        d = os.path.join(tmpd, "govex-w-%06d" % i)
        os.mkdir(d, 0o700)
        for j in range(300):
            with open(os.path.join(d, "f%d" % j), "w") as f:
                f.write("x")
        dead.append(d)
    env = dict(os.environ, TMPDIR=tmpd)
    pol = e.policy(t, name="sweep.json")
    r, doc, res = _proven(t, [["fd_links", {"as": "fds"}]], pol=pol, env=env)
    fds = _value(res, "fds")
    bad = {k: v for k, v in fds.items() if "govex-w-" in v or tmpd in v or
           v.startswith("net:") or "netns" in v}
    g.eq(bad, {}, "descriptors of the swept directories or the namespace inside the run")
    left = [d for d in dead if os.path.exists(d)]
    g.eq(left, [], "dead workdirs left when govex run returned")


def _plant_dead(tmpd, n=16, files=300):
    dead = []
    for i in range(n):
        d = os.path.join(tmpd, "govex-w-%s" % secrets.token_hex(3))
        os.mkdir(d, 0o700)
        for j in range(files):
            with open(os.path.join(d, "f%d" % j), "w") as f:
                f.write("x")
        dead.append(d)
    return dead


def test_sweep_thread_races_the_clone(t):
    """Runs whose start overlaps a long sweep (16 dead workdirs of 300 files each, planted
    afresh before every run): the shim is cloned while the sweep thread is busy in
    malloc, openat, unlinkat.  Expected: every run completes (no deadlock, no wall-time
    kill) and the dead workdirs are gone when each returns."""
    e.need_restricted("syscall_filter")
    tmpd = os.path.join(t.tmp, "tmpr")
    os.mkdir(tmpd, 0o700)
    env = dict(os.environ, TMPDIR=tmpd)
    pol = e.policy(t, name="race.json")
    for i in range(6):
        dead = _plant_dead(tmpd)
        r = t.run(["run", "--policy", pol, "--json", "-c", "print('alive')"], env=env)
        doc = r.result()
        g.eq((doc["status"], doc["stdout"]), ("success", "alive\n"), "run %d\n%s"
             % (i, r.describe()))
        g.eq([d for d in dead if os.path.exists(d)], [], "dead workdirs left by run %d" % i)


def _threads():
    return len(os.listdir("/proc/self/task"))


def test_sweep_thread_joined_in_library(t):
    """Through the library (govex_runtime_run in this process): the sweep thread is gone
    when the run returns (no thread left behind), and so are the dead workdirs."""
    e.need_restricted("syscall_filter")
    tmpd = os.path.join(t.tmp, "tmpl")
    os.mkdir(tmpd, 0o700)
    dead = _plant_dead(tmpd)
    pol = g.preset("strict")
    pol["backend"] = "restricted"
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = tmpd
    try:
        rt = e.RcRuntime(pol)
        try:
            before = _threads()
            doc = rt.run("print('alive')")
            left = [d for d in dead if os.path.exists(d)]
            after = _threads()
            # A joined thread can still be listed for a moment: pthread_join returns
            # when the kernel clears its tid (exit_mm), a little before it leaves the
            # thread group, a window that grows under load.  So the count may take a
            # moment to settle (before the runtime is closed), but a thread left
            # behind never leaves.
            deadline = time.monotonic() + 5
            while after != before and time.monotonic() < deadline:
                time.sleep(0.01)
                after = _threads()
        finally:
            rt.close()
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
    g.eq(doc.get("status"), "success", "status: %r" % doc)
    # Gone when the run returned: the sweep had finished (joined), not merely begun.
    g.eq(left, [], "dead workdirs left at return")
    g.eq(after, before, "threads of this process after the run (the sweep's joined)")


if __name__ == "__main__":
    sys.exit(g.main([
        ("two concurrent runs: no unix socket reached or seen", test_concurrent_runs_unix_sockets),
        ("a run cannot change the shared namespace", test_run_cannot_change_the_namespace),
        ("sockets left in flight are not left for later runs",
         test_inflight_sockets_not_left_for_later_runs),
        ("planted: lo down + veth not joined", test_planted_veth_not_joined),
        ("planted: foreign user namespace's netns not joined",
         test_planted_foreign_userns_not_joined),
        ("planted: symlink to the host's netns not followed",
         test_planted_symlink_to_host_not_joined),
        ("planted: symlink to an empty netns not followed",
         test_planted_symlink_to_empty_not_joined),
        ("planted: a host listener inside is neither reached nor seen",
         test_planted_listener_unreachable),
        ("raw socket families: EAFNOSUPPORT, each counted", test_socket_families_named),
        ("the other guard pairs: denials refused and counted", test_other_guard_pairs_named),
        ("x32 syscall numbers refused", test_x32_numbers_refused),
        ("fork/vfork/clone/exec refused and named", test_subprocess_denials_named),
        ("TIOCSTI/TIOCLINUX/F_SETPIPE_SZ/setuid chmod refused", test_ioctl_and_setuid_still_refused),
        ("the sweep thread leaks nothing into the run", test_sweep_thread_leaks_nothing),
        ("the sweep thread racing the clone: every run completes",
         test_sweep_thread_races_the_clone),
        ("library: the sweep thread is joined before the run returns",
         test_sweep_thread_joined_in_library),
    ]))
