#!/usr/bin/env python3
"""Red team of the host contract on pure cgroup v2 under systemd (DESIGN.md "Hosts"; issue
21): memory_aggregate, pids_aggregate and cpu_time_aggregate hold below the cgroup govex
obtained, and govex never writes into a cgroup that is not delegated to it.

Two kinds of attacker.  The sandboxed code: it must not reach cgroupfs, leave its run's
cgroup, or take more than its limits with what only a cgroup bounds (files in its tmpfs
mounts beside its heap, forks; memfds and SysV shared memory are refused by the syscall
filter, tests/escape/test_limits.py); every payload runs behind a canary that
proved the sandbox first (escapetest.run_proven / run_bomb: its own PID namespace,
no_new_privs, seccomp, no host /etc).  And the host around govex: another process of the
same user in the delegated cgroup racing the leaf move, planted govex.slot-N cgroups, a
server's controllers taken away, govex killed mid-move, handed cgroups named with path
tricks or owned (or with an ancestor owned) by someone else, a cgroup namespace whose
root nobody delegated, a unit of a user manager (root's own included) without Delegate.
Each test fails if its attack succeeds.  On a host without pure cgroup v2 under systemd
(this project's CI machine) they skip, saying so; tests/vm runs them in a Debian 12 VM
as root and as a user with a login session."""
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "escape"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mcp"))
import hoststest as h  # noqa: E402
import govextest as g  # noqa: E402
import escapetest as e  # noqa: E402

GOVEX = g.GOVEX
MIB = 1 << 20
NOBODY = 65534
SLOW = 120          # seconds a govex run may take in a TCG guest


def _pol(t, name="p.json", **limits):
    lim = {"wall_ms": 30000}
    lim.update(limits)
    return e.policy(t, name=name, limits=lim)


def _pol_doc(**limits):
    pol = g.preset("strict")
    pol["limits"] = dict(pol["limits"], wall_ms=30000, **limits)
    return pol


# Files in the run's tmpfs are in no address space: only the run's memory cgroup bounds
# them (memory_per_process cannot).  Written after SLEEP seconds, so a test can act first.
def _tmpfs_code(mib, sleep=0.0):
    return ("import time\ntime.sleep(%r)\nchunk = b'x' * (1 << 20)\n"
            "for i in range(%d):\n"
            "    with open('/tmp/f%%d' %% i, 'wb') as f:\n        f.write(chunk)\n"
            "print('wrote %d MiB')\n" % (sleep, mib, mib))


def _limited(doc, what):
    """The run went past its memory limit: it must have ended memory_limit."""
    g.check(doc["status"] != "success",
            "%s: the run wrote past memory_bytes and succeeded (stdout %r, usage %r)"
            % (what, doc.get("stdout"), doc.get("usage")))
    g.eq(doc["termination"], "memory_limit", "%s: termination (%r)" % (what, doc))


def _host_of(pid):
    """The host cgroup (absolute path) of a govex process that took one: the parent of
    its leaf "supervisor"."""
    rel = h.own_cgroup(pid)
    g.check(rel.endswith("/supervisor"), "govex %d is not in a leaf 'supervisor': %r"
            % (pid, rel))
    return h.CG + rel[:-len("/supervisor")]


def _slots(host):
    try:
        return sorted(os.path.join(host, n) for n in os.listdir(host)
                      if n.startswith("govex.slot-") and os.path.isdir(os.path.join(host, n)))
    except OSError:
        return []


def _procs(cg):
    try:
        return [int(p) for p in h.read(cg + "/cgroup.procs").split()]
    except OSError:
        return []


def _live_run(t, pol, code, env=None):
    """Starts `govex run` (POL, CODE) and waits until its run has processes in a
    govex.slot-N below govex's host cgroup; returns (Popen, host, slot)."""
    p = subprocess.Popen([GOVEX, "run", "--policy", pol, "-c", code], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    t.defer(g._kill_pid, p.pid)
    deadline = time.monotonic() + SLOW
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise g.Failure("the run ended early: rc %r, %r" % (p.returncode,
                                                                 p.communicate()))
        rel = h.own_cgroup(p.pid)
        if rel.endswith("/supervisor"):
            host = h.CG + rel[:-len("/supervisor")]
            slots = [s for s in _slots(host) if _procs(s)]
            if slots:
                time.sleep(0.5)     # the program itself, past its first process
                return p, host, slots[0]
        time.sleep(0.05)
    raise g.Failure("no run cgroup with processes within %d s" % SLOW)


def _snapshot(d):
    """What govex must leave as it was in a cgroup that is not its own."""
    return {"subtree_control": h.read(d + "/cgroup.subtree_control").strip(),
            "children": sorted(n for n in os.listdir(d) if os.path.isdir(os.path.join(d, n)))}


def _user_manager():
    return os.path.exists(h.user_runtime() + "/systemd/private")


def _user_unit(argv, env, timeout=SLOW, props=()):
    """Runs ARGV as a service of our own user manager (root's user@0.service too), with
    no Delegate unless PROPS says so; returns (status, stdout, stderr)."""
    cmd = ["systemd-run", "--user", "--quiet", "--wait", "--pipe", "--collect"]
    for k, v in env.items():
        cmd += ["-E", "%s=%s" % (k, v)]
    for p in props:
        cmd += ["-p", p]
    p = subprocess.run(cmd + ["--"] + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout,
                       env=h.env_with(XDG_RUNTIME_DIR=h.user_runtime()))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8",
                                                                          "replace")


def _words(out):
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _unit_env(t, **extra):
    env = h.unit_env()
    env.update(GOVEX=GOVEX, XDG_CACHE_HOME=t.path("cache"))
    env.update(extra)
    os.makedirs(t.path("cache"), exist_ok=True)
    return env


# What a unit's shell reports: its cgroup and what the unit's cgroup looks like before
# and after govex ran there, and govex's word for where its cgroups came from.
UNIT_REPORT = r"""
set -u
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
echo "BEFORE sub=[$(cat $cg/cgroup.subtree_control)] kids=[$(cd $cg && ls -d */ 2>/dev/null | tr '\n' ' ')]"
"$GOVEX" run -c 'print(6*7)' > /dev/null 2>&1; echo "RC $?"
echo "SRC $("$GOVEX" backends --json | python3 -c 'import json,sys; print([r for r in json.load(sys.stdin) if r["name"]=="restricted"][0].get("cgroups"))')"
echo "CG $(cut -d: -f3 /proc/self/cgroup)"
echo "AFTER sub=[$(cat $cg/cgroup.subtree_control)] kids=[$(cd $cg && ls -d */ 2>/dev/null | tr '\n' ' ')]"
"""


# ---------------------------------------------------------------- the sandboxed code

CGFS_PRELUDE = r'''
CGROUP2_MAGIC, CGROUP1_MAGIC, SYSFS_MAGIC = 0x63677270, 0x27e0eb, 0x62656572


def op_rt_fd_fs():
    """The filesystem of every descriptor this process holds: none may be cgroupfs or
    sysfs (a descriptor there could be written, or used as a base for openat)."""
    lib = _lib()
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        buf = ctypes.create_string_buffer(256)
        if lib.fstatfs(int(fd), buf) == 0:
            out[fd] = ctypes.c_long.from_buffer(buf).value
    return out


def op_rt_mount_cgroup2(where):
    """mount("none", WHERE, "cgroup2"): a cgroupfs of the run's own."""
    os.makedirs(where, exist_ok=True)
    lib = _lib()
    ctypes.set_errno(0)
    if lib.mount(b"none", where.encode(), b"cgroup2", 0, None) < 0:
        raise OSError(ctypes.get_errno(), "mount")
    return os.listdir(where)


def op_rt_fsopen(fstype):
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(430), ctypes.c_char_p(fstype.encode()), ctypes.c_long(0))
    if r < 0:
        raise OSError(ctypes.get_errno(), "fsopen")
    return r


def op_rt_unshare(flags):
    return _syscall(272, flags)


def op_rt_setns_cgroup():
    fd = os.open("/proc/self/ns/cgroup", os.O_RDONLY)
    return _syscall(308, fd, 0x02000000)


def op_rt_leave_cgroup():
    """With /sys readable: find this process's own cgroup under /sys/fs/cgroup (the
    directory whose cgroup.procs lists our pid as this PID namespace sees it), then try
    to lift its limits, move ourselves into the host cgroup, its leaf, the root, or a
    cgroup of our own, and to take the controllers away.  Returns what each attempt
    gave and /proc/self/cgroup afterwards."""
    me = str(os.getpid())
    own = None
    for d, subs, files in os.walk("/sys/fs/cgroup"):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    if me in f.read().split():
                        own = d
            except OSError:
                pass
    if not own:
        return {"own": None, "after": open("/proc/self/cgroup").read()}
    host = os.path.dirname(own)
    tries = {}
    for name, path, data in (
            ("memory.max", own + "/memory.max", "max"),
            ("pids.max", own + "/pids.max", "max"),
            ("memory.swap.max", own + "/memory.swap.max", "max"),
            ("into host", host + "/cgroup.procs", "0"),
            ("into leaf", host + "/supervisor/cgroup.procs", "0"),
            ("into root", "/sys/fs/cgroup/cgroup.procs", "0"),
            ("controllers", host + "/cgroup.subtree_control", "-memory -pids"),
            ("kill host", host + "/cgroup.kill", "1")):
        try:
            with open(path, "w") as f:
                f.write(data)
            tries[name] = "written"
        except OSError as ex:
            tries[name] = _ename(ex.errno)
    try:
        os.mkdir(host + "/rt-escape")
        tries["mkdir"] = "made"
    except OSError as ex:
        tries["mkdir"] = _ename(ex.errno)
    with open("/proc/self/cgroup") as f:
        after = f.read()
    return {"own": own, "tries": tries, "after": after}
'''


def test_run_cannot_reach_cgroupfs(t):
    """The sandboxed code sees its cgroup namespace's root only, holds no descriptor on
    cgroupfs or sysfs, and can make no cgroupfs of its own (mount, fsopen) nor a new
    cgroup or user namespace, nor enter one."""
    h.need_systemd_v2()
    e.need_restricted("memory_aggregate", "pids_aggregate")
    pol = _pol(t, memory_bytes=64 * MIB, processes=16)
    _, doc, res = e.run_proven(t, [
        ["rd_cgroup_paths", {"as": "paths"}],
        ["rt_fd_fs", {"as": "fds"}],
        ["rt_mount_cgroup2", "/tmp/cg", {"as": "mount"}],
        ["rt_fsopen", "cgroup2", {"as": "fsopen"}],
        ["rt_unshare", 0x02000000, {"as": "unshare_cgroup"}],
        ["rt_unshare", 0x10000000 | 0x00020000 | 0x02000000, {"as": "unshare_user"}],
        ["rt_setns_cgroup", {"as": "setns"}],
    ], pol=pol, prelude=CGFS_PRELUDE, timeout=SLOW)
    paths = e.allowed(res, "paths")
    g.eq(paths["own"], ["0::/"], "/proc/self/cgroup inside the run")
    g.eq(paths["sysfs"], False, "/sys/fs/cgroup exists inside the run")
    for fd, magic in e.allowed(res, "fds").items():
        g.check(magic not in (0x63677270, 0x27e0eb, 0x62656572),
                "the run holds fd %s on cgroupfs or sysfs (magic %#x)" % (fd, magic))
    for label in ("mount", "fsopen", "unshare_cgroup", "unshare_user", "setns"):
        g.check(not res[label].get("ok"), "%s succeeded in the run: %r" % (label, res[label]))


def test_run_cannot_leave_its_cgroup(t):
    """Even with /sys as a read root (so the run can find its own cgroup by its pid), the
    run can neither lift its limits nor move out of its cgroup nor take the controllers
    away: the bind is read-only, and the cgroup namespace is rooted at the run's
    cgroup (nsdelegate)."""
    h.need_systemd_v2()
    e.need_restricted("memory_aggregate", "pids_aggregate")
    pol = e.policy(t, name="sys.json", limits={"wall_ms": 30000, "memory_bytes": 64 * MIB,
                                               "processes": 16},
                   filesystem={"read": ["/sys"]})
    r = t.run(["run", "--policy", pol, "--json", "-c",
               e.proven_code([["rt_leave_cgroup", {"as": "leave"}]], CGFS_PRELUDE)],
              timeout=SLOW)
    doc = r.result()
    if doc["status"] in ("policy_refused", "invalid_input"):
        print("# a read root of /sys is refused at planning: %r" % doc.get("diagnostics"))
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    e.proven(res)
    v = e.allowed(res, "leave")
    print("# the run found its cgroup at %r: %r" % (v.get("own"), v.get("tries")))
    for what, got in (v.get("tries") or {}).items():
        g.check(got not in ("written", "made"), "from inside the run, %s: %s (%r)"
                % (what, got, v))
    g.eq(v["after"], "0::/\n", "the run's cgroup after its attempts")


def test_run_limits_seen_from_the_host(t):
    """While a run lives, the host sees each of its processes in its own govex.slot-N
    below govex's host cgroup, with the policy's memory.max, memory.swap.max 0 and
    pids.max; the files are govex's, writable by no one else."""
    h.need_systemd_v2()
    pol = t.write_json("p.json", _pol_doc(memory_bytes=40 * MIB, processes=12))
    code = "import time\ntime.sleep(60)\n"
    p, host, s = _live_run(t, pol, code)
    try:
        g.eq(h.read(s + "/memory.max").strip(), str(40 * MIB), "memory.max")
        g.eq(h.read(s + "/memory.swap.max").strip(), "0", "memory.swap.max")
        g.eq(h.read(s + "/pids.max").strip(), "12", "pids.max")
        st = os.stat(s)
        g.check(st.st_uid == os.geteuid() and not st.st_mode & 0o022,
                "the slot's directory: uid %d mode %o" % (st.st_uid, st.st_mode))
        for f in ("cgroup.procs", "memory.max", "pids.max", "cgroup.subtree_control",
                  "memory.swap.max", "cgroup.kill"):
            fs = os.stat(os.path.join(s, f))
            g.check(fs.st_uid == os.geteuid() and not fs.st_mode & 0o022,
                    "%s: uid %d mode %o" % (f, fs.st_uid, fs.st_mode))
        # the run's processes: in the slot, and nowhere else in the host cgroup
        rel = s[len(h.CG):]
        members = _procs(s)
        for pid in members:
            g.eq(h.own_cgroup(pid), rel, "the cgroup of the run's process %d" % pid)
        leaf = _procs(host + "/supervisor")
        g.check(not set(members) & set(leaf), "a run's process is in the leaf")
    finally:
        p.kill()
        p.wait()


FORK_PRELUDE = r'''
def _in_our_cgroup():
    """Processes of this PID namespace in the run's cgroup (the cgroup namespace's
    root: "0::/"; the sandbox's init is not in it)."""
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cgroup" % d) as f:
                    n += f.read().strip() == "0::/"
            except OSError:
                pass
    return n


def op_rt_fork_bomb(seconds):
    """Every process forks until fork fails, for SECONDS; returns the most processes
    of the run's cgroup this PID namespace ever showed and the errors seen."""
    _need_guard()
    end = time.monotonic() + seconds
    errs = set()
    peak = 0
    kids = []
    while time.monotonic() < end:
        try:
            pid = os.fork()
        except OSError as ex:
            errs.add(_ename(ex.errno))
            peak = max(peak, _in_our_cgroup())
            time.sleep(0.2)
            continue
        if pid == 0:
            kids = []
            continue       # the child forks too
        kids.append(pid)
    if os.getpid() != _ROOT[0]:
        os._exit(0)
    return [peak, sorted(errs)]


_ROOT = [os.getpid()]
'''


def test_fork_bomb_in_the_run(t):
    """A fork bomb (every child forks too) under processes: 16 and subprocess: allow
    (fork is refused under deny) on pure v2: the run's PID namespace never shows more
    than 16 processes, and fork fails with EAGAIN."""
    h.need_systemd_v2()
    e.need_restricted("pids_aggregate")
    pol = e.policy(t, limits={"processes": 16, "memory_bytes": 256 * MIB, "wall_ms": 40000,
                              "cpu_ms": 120000},
                   subprocess="allow")
    e.prove(t, pol)
    code = e.bomb_code([["rt_fork_bomb", 3.0, {"as": "bomb"}]]).replace(
        "\nguard(", FORK_PRELUDE + "\nguard(", 1)
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=SLOW)
    doc = r.result()
    res = e.probe_of(doc)
    g.check(res is not None, "no probe output: %r" % {k: doc.get(k) for k in
                                                     ("status", "termination", "stderr")})
    peak, errs = e.allowed(res, "bomb")
    print("# fork bomb: at most %d processes seen in the run's cgroup, errors %r"
          % (peak, errs))
    g.check(peak <= 16, "%d processes under processes: 16" % peak)
    g.check("EAGAIN" in errs, "fork never failed with EAGAIN: %r" % errs)


MIXED_PRELUDE = r'''
def op_rt_mixed(each_mib):
    """EACH_MIB of files in /tmp, of files in the workdir (two tmpfs) and of heap, one
    after the other, all held: the sum is the run's (memfds and SysV shared memory are
    refused by the syscall filter)."""
    _need_guard()
    done = []
    done.append(["tmp", op_files_fill("/tmp/gvx", each_mib << 20)])
    done.append(["workdir", op_files_fill(os.getcwd() + "/gvx", each_mib << 20)])
    heap = bytearray(each_mib << 20)
    for i in range(0, len(heap), 4096):
        heap[i] = 1
    _KEEP.append(heap)
    progress("heap", len(heap))
    done.append(["heap", len(heap)])
    return done
'''


def test_memory_spread_over_kinds(t):
    """memory_aggregate is one bound for all the run's memory: 20 MiB each of files in
    /tmp, files in the workdir and heap (60 MiB, no more than 20 of it in any address
    space or file system: each per-process or per-mount bound would let it pass) under
    memory_bytes 48 MiB ends memory_limit."""
    h.need_systemd_v2()
    e.need_restricted("memory_aggregate")
    pol = _pol(t, memory_bytes=48 * MIB, wall_ms=40000)
    e.prove(t, pol)
    code = e.bomb_code([["rt_mixed", 20, {"as": "mixed"}]]).replace(
        "\nguard(", MIXED_PRELUDE + "\nguard(", 1)
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=SLOW)
    doc = r.result()
    print("# %s %s, peak %s MiB, progress %r" % (doc["status"], doc["termination"],
                                                 (doc["usage"]["max_rss_bytes"] or 0) // MIB,
                                                 e.progress_of(doc)))
    _limited(doc, "60 MiB of /tmp, workdir and heap under 48 MiB")


# ---------------------------------------------------------------- the host around govex

def test_user_manager_unit_without_delegate(t):
    """A service of our own user manager without Delegate (root's user@0.service as much
    as a user's user@UID.service): its cgroup is the manager's.  govex must not move the
    unit's processes into a leaf nor enable controllers there; it asks for a scope."""
    h.need_systemd_v2()
    if not _user_manager():
        raise g.Skip("no user manager for uid %d (%s/systemd/private)"
                     % (os.geteuid(), h.user_runtime()))
    st, out, err = _user_unit(["sh", "-c", UNIT_REPORT], _unit_env(t))
    g.eq(st, 0, "unit status (%r)" % err[-1500:])
    w = _words(out)
    print("# %r" % w)
    g.check(not w.get("CG", "").endswith("/supervisor"),
            "govex moved the shell of a unit without Delegate into a leaf: %r" % w)
    g.eq(w.get("AFTER"), w.get("BEFORE"), "the unit's cgroup after govex ran in it (%r)" % w)
    g.check("'delegated'" not in w.get("SRC", ""),
            "govex took a unit without Delegate for delegated: %r" % w.get("SRC"))
    g.eq(w.get("RC", "").strip(), "0", "the run in the unit (%r)" % w)


# A cgroup namespace (with a mount namespace, and a user namespace when not root) whose
# only cgroup2 mount is a fresh one: its root is the unit's cgroup, which its manager
# did not delegate (what a rootless container without a delegated cgroup has).
NS_SCRIPT = r"""
set -u
PATH=$PATH:/usr/sbin:/sbin
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
echo "BEFORE sub=[$(cat $cg/cgroup.subtree_control)] kids=[$(cd $cg && ls -d */ 2>/dev/null | tr '\n' ' ')]"
if [ "$(id -u)" = 0 ]; then ns="-mC"; else ns="-UrmC"; fi
unshare $ns --propagation private sh -c '
R=$(mktemp -d /tmp/rt-root.XXXXXX)
mount -t tmpfs none $R || exit 1
for d in usr etc tmp var dev proc; do mkdir -p $R/$d; mount --rbind /$d $R/$d || exit 1; done
for d in bin lib lib64 sbin; do ln -s usr/$d $R/$d; done
mkdir -p $R/$(dirname "$GOVEX") $R/sys/fs/cgroup $R/old
mount --bind $(dirname "$GOVEX") $R/$(dirname "$GOVEX") || exit 1
mount -t cgroup2 rtcg $R/sys/fs/cgroup || exit 1
cd $R && pivot_root . old && umount -l /old || exit 1
echo "INSIDE $(cat /proc/self/cgroup) $(grep -c " - cgroup2 " /proc/self/mountinfo)"
echo "SRC $("$GOVEX" backends --json | python3 -c "import json,sys; print([r for r in json.load(sys.stdin) if r[\"name\"]==\"restricted\"][0].get(\"cgroups\"))")"
'
echo "CG $(cut -d: -f3 /proc/self/cgroup)"
echo "AFTER sub=[$(cat $cg/cgroup.subtree_control)] kids=[$(cd $cg && ls -d */ 2>/dev/null | tr '\n' ' ')]"
"""


def test_cgroup_namespace_nobody_delegated(t):
    """Forged delegation: a cgroup namespace made with unshare over a service without
    Delegate (the system manager's as root, the user manager's otherwise), a fresh
    cgroup2 mount its only one.  The namespace's root is the unit's cgroup, which no
    manager delegated: govex must not move the unit's processes nor enable controllers
    in it."""
    h.need_systemd_v2()
    if not h.ROOT and not _user_manager():
        raise g.Skip("no user manager")
    env = _unit_env(t)
    if h.ROOT:
        st, out, err = h.systemd_run(["sh", "-c", NS_SCRIPT], env=env, timeout=SLOW)
    else:
        st, out, err = _user_unit(["sh", "-c", NS_SCRIPT], env)
    w = _words(out)
    print("# %r" % w)
    if not w.get("INSIDE", "").startswith("0::/ 1"):
        raise g.Skip("could not make the namespace here: %r %r" % (out[-600:], err[-600:]))
    g.check("'delegated'" not in w.get("SRC", ""),
            "govex took the root of a cgroup namespace nobody delegated: %r" % w)
    g.eq(w.get("AFTER"), w.get("BEFORE"), "the unit's cgroup after govex ran (%r)" % w)
    g.check(not w.get("CG", "").endswith("/supervisor"), "the unit's shell moved: %r" % w)


def _scope(t, script, timeout=SLOW, **env):
    """Runs the Python SCRIPT (in a file) in a transient scope with Delegate=yes of the
    system manager (root) or the user's; returns its 'RT {...}' line as a dict."""
    path = t.write("scope.py", script)
    envs = _unit_env(t, **env)
    envs["PYTHONPATH"] = os.pathsep.join([HERE, os.path.join(os.path.dirname(HERE),
                                                             "integration")])
    st, out, err = h.systemd_run([sys.executable, path], props=["Delegate=yes"], scope=True,
                                 env=envs, timeout=timeout)
    for line in out.splitlines():
        if line.startswith("RT "):
            return json.loads(line[3:])
    raise g.Failure("the scope printed no result: status %d, stdout %r, stderr %r"
                    % (st, out[-1500:], err[-1500:]))


SCOPE_COMMON = r"""
import json, os, subprocess, sys, time
G = os.environ["GOVEX"]
CG = "/sys/fs/cgroup"
def own(pid="self"):
    return [l[3:].strip() for l in open("/proc/%s/cgroup" % pid) if l.startswith("0::")][0]
def run(args, timeout=110, **kw):
    p = subprocess.run([G] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
def source():
    rc, out, err = run(["backends", "--json"])
    return [r for r in json.loads(out) if r["name"] == "restricted"][0].get("cgroups")
def over_limit(pol):
    rc, out, err = run(["run", "--json", "--policy", pol, "-c", CODE])
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {"status": None, "stderr": err[-800:]}
    return {"rc": rc, "status": doc.get("status"), "termination": doc.get("termination"),
            "stdout": doc.get("stdout"), "err": err[-800:],
            "why": [d.get("message") for d in doc.get("diagnostics") or []]}
"""


def _scope_pol(t):
    return t.write_json("over.json", _pol_doc(memory_bytes=32 * MIB, processes=16))


def _check_over(res, what):
    """A run past its limit from a scope script: refused, or ended memory_limit."""
    if res["rc"] == g.EXIT_REFUSED:
        g.check("memory_aggregate" in res["err"] or "cgroup" in res["err"],
                "%s: refused for another reason: %r" % (what, res))
        return "refused"
    g.check(res["status"] != "success",
            "%s: a run wrote 48 MiB past memory_bytes 32 MiB and succeeded: %r" % (what, res))
    g.eq(res["termination"], "memory_limit", "%s: termination (%r)" % (what, res))
    return "limited"


def test_leaf_move_racer(t):
    """Another process of the same user in the delegated scope keeps moving itself and
    fresh children back into the scope's own cgroup while govex does the leaf move: govex
    either wins (and the run is limited) or refuses; it never runs without the limits it
    claims."""
    h.need_systemd_v2()
    script = SCOPE_COMMON + r"""
CODE = %r
top = CG + own()
stop = time.monotonic() + 60
racer = os.fork()
if racer == 0:
    # back into the scope's cgroup, again and again, with children born there
    kids = []
    while time.monotonic() < stop:
        try:
            with open(top + "/cgroup.procs", "w") as f:
                f.write("0")
        except OSError:
            pass
        if len(kids) < 8:
            k = os.fork()
            if k == 0:
                time.sleep(5)
                os._exit(0)
            kids.append(k)
        kids = [k for k in kids if os.waitpid(k, os.WNOHANG) == (0, 0)]
    os._exit(0)
time.sleep(0.5)
res = over_limit(sys.argv[1] if len(sys.argv) > 1 else os.environ["POL"])
ok = run(["run", "-c", "print(6*7)"])
os.kill(racer, 9)
os.waitpid(racer, 0)
print("RT " + json.dumps({"over": res, "ok": ok, "src": source(), "sub":
      open(top + "/cgroup.subtree_control").read().strip()}))
""" % _tmpfs_code(48)
    res = _scope(t, script, POL=_scope_pol(t))
    print("# over: %r; plain run rc %r; source %r; subtree_control %r"
          % (res["over"], res["ok"][0], res["src"], res["sub"]))
    _check_over(res["over"], "racer in the scope")
    if res["ok"][0] == 0:
        g.eq(res["ok"][1], "42\n", "the plain run's output")
    else:
        g.eq(res["ok"][0], g.EXIT_REFUSED, "the plain run: refused or run (%r)" % (res["ok"],))


def test_planted_slot_cgroups(t):
    """The scope's other process plants govex.slot-N cgroups below the host cgroup before
    the runs: no limits, a process of its own in each, one with a child cgroup.  Runs
    reclaim (or refuse) them; none runs in a planted cgroup's limits."""
    h.need_systemd_v2()
    script = SCOPE_COMMON + r"""
CODE = %r
first = run(["run", "-c", "print(1)"])        # the leaf move
top = CG + own()[:-len("/supervisor")] if own().endswith("/supervisor") else None
planted = []
if top:
    if os.geteuid() == 0:
        names = ["govex.slot-%%d" %% n for n in range(8)]
    else:
        d = os.path.join(os.environ.get("XDG_RUNTIME_DIR", ""), "govex", "slots")
        st = os.stat(d)
        names = ["govex.slot-%%d.%%x.%%x" %% (n, st.st_dev, st.st_ino) for n in range(8)]
    for i, n in enumerate(names):
        p = os.path.join(top, n)
        os.mkdir(p)
        for f, v in (("memory.max", "max"), ("pids.max", "max"), ("memory.swap.max", "max")):
            with open(os.path.join(p, f), "w") as fh:
                fh.write(v)
        if i == 0:
            os.mkdir(os.path.join(p, "child"))
        k = os.fork()
        if k == 0:
            with open(os.path.join(p, "cgroup.procs"), "w") as fh:
                fh.write("0")
            time.sleep(50)
            os._exit(0)
        planted.append(n)
res = over_limit(os.environ["POL"])
ok = run(["run", "-c", "print(6*7)"])
left = sorted(n for n in os.listdir(top) if n.startswith("govex.slot-")) if top else None
print("RT " + json.dumps({"first": first, "top": top, "planted": planted, "over": res,
                          "ok": ok, "left": left}))
""" % _tmpfs_code(48)
    res = _scope(t, script, POL=_scope_pol(t))
    print("# planted %d in %r; over %r; plain rc %r; left %r"
          % (len(res["planted"]), res["top"], res["over"], res["ok"][0], res["left"]))
    g.check(res["top"], "the first run did not take the leaf: %r" % (res["first"],))
    _check_over(res["over"], "planted slot cgroups")
    if res["ok"][0] != g.EXIT_REFUSED:
        g.eq(res["ok"][:2], [0, "42\n"], "a plain run after the planted slots")


def test_killed_mid_move(t):
    """govex SIGKILLed at moments during its leaf move (with other processes in the
    scope), again and again; then a run: the scope's cgroups are usable (or refused),
    and the run is limited."""
    h.need_systemd_v2()
    script = SCOPE_COMMON + r"""
CODE = %r
sleepers = [subprocess.Popen(["sleep", "80"]) for _ in range(3)]
kills = []
for delay in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8):
    p = subprocess.Popen([G, "backends", "--json"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(9)
    p.wait()
    kills.append([delay, own(sleepers[0].pid)])
res = over_limit(os.environ["POL"])
ok = run(["run", "-c", "print(6*7)"])
for s in sleepers:
    s.kill()
print("RT " + json.dumps({"kills": kills, "over": res, "ok": ok, "src": source()}))
""" % _tmpfs_code(48)
    res = _scope(t, script, POL=_scope_pol(t))
    print("# kills %r; over %r; plain rc %r; source %r"
          % (res["kills"], res["over"], res["ok"][0], res["src"]))
    # the scope is delegated: whatever moment a govex was killed at, the next one
    # finishes the move (a refusal here leaves the unit without its limits for good)
    g.eq(_check_over(res["over"], "after govex was killed mid-move"), "limited",
         "the run after the kills (%r)" % res["over"])
    g.eq(res["ok"][:2], [0, "42\n"], "a plain run after the kills")


def test_move_interrupted_halfway(t):
    """The state a govex killed halfway through its leaf move leaves, made on purpose: the
    leaf exists, the scope's first process is in it, the others are still in the scope's
    cgroup, no controller is enabled.  The next govex finishes the move: its runs are
    limited; it neither refuses for good nor nests a leaf in the leaf."""
    h.need_systemd_v2()
    script = SCOPE_COMMON + r"""
CODE = %r
top = CG + own()
sleepers = [subprocess.Popen(["sleep", "80"]) for _ in range(3)]
os.mkdir(top + "/supervisor")
with open(top + "/supervisor/cgroup.procs", "w") as f:
    f.write("0")
state = {"self": own(), "sleeper": own(sleepers[0].pid),
         "sub": open(top + "/cgroup.subtree_control").read().strip()}
res = over_limit(os.environ["POL"])
ok = run(["run", "-c", "print(6*7)"])
after = {"self": own(), "sleeper": own(sleepers[0].pid),
         "sub": open(top + "/cgroup.subtree_control").read().strip(),
         "nested": os.path.isdir(top + "/supervisor/supervisor")}
for s in sleepers:
    s.kill()
print("RT " + json.dumps({"state": state, "over": res, "ok": ok, "after": after}))
""" % _tmpfs_code(48)
    res = _scope(t, script, POL=_scope_pol(t))
    print("# interrupted: %r; over %r; plain rc %r; after %r"
          % (res["state"], res["over"], res["ok"][0], res["after"]))
    g.eq(_check_over(res["over"], "after a move interrupted halfway"), "limited",
         "the run after an interrupted move (%r)" % res["over"])
    g.eq(res["ok"][:2], [0, "42\n"], "a plain run after an interrupted move")
    g.check(res["after"]["sleeper"].endswith("/supervisor") and not res["after"]["nested"],
            "the move was not finished in the leaf: %r" % res["after"])


def _server_unit(t, pol):
    """govex mcp --http --policy POL as a service with Delegate=yes (the system
    manager's as root, the user's otherwise); returns (unit, port, main pid)."""
    import test_hosts as th
    port = th._free_port()
    unit = h.unique("govex-rt-mcp") + ".service"
    cmd = ["systemd-run", "--quiet", "--unit", unit, "--collect", "-p", "Delegate=yes"]
    if not h.ROOT:
        cmd.insert(1, "--user")
    for k, v in h.unit_env().items():
        cmd += ["-E", "%s=%s" % (k, v)]
    subprocess.run(cmd + ["--", GOVEX, "mcp", "--policy", pol, "--http",
                          "127.0.0.1:%d" % port], check=True, timeout=60)
    t.defer(h.stop_unit, unit)

    def up():
        try:
            return th._http(port, "GET", "/healthz", timeout=5)[0] == 200
        except OSError:
            return False
    h.wait_until(up, SLOW, "the server in %s" % unit)
    ctl = ["systemctl"] + ([] if h.ROOT else ["--user"])
    pid = int(subprocess.run(ctl + ["show", "-p", "MainPID", "--value", unit],
                             stdout=subprocess.PIPE, timeout=30).stdout)
    return unit, port, pid, ctl


def _server_call(port, code):
    import test_hosts as th
    st, doc = th._call(port, code)
    res = doc.get("result") or {}
    return res.get("structuredContent") or {}, doc


def test_server_controllers_taken_away(t):
    """A long-lived govex (mcp --http, Delegate=yes, memory_bytes 32 MiB) served calls.
    Then its manager realizes the unit again (daemon-reload, set-property), and the
    unit's other process takes the controllers away from the host cgroup
    ("-memory -pids").  A call past its memory limit after each must be refused or
    limited, never succeed."""
    h.need_systemd_v2()
    pol = t.write_json("p.json", _pol_doc(memory_bytes=32 * MIB, processes=16))
    unit, port, pid, ctl = _server_unit(t, pol)
    sc, doc = _server_call(port, "print(6*7)")
    g.eq(sc.get("stdout"), "42\n", "the first call (%r)" % doc)
    host = _host_of(pid)
    code = _tmpfs_code(48)

    def over(what):
        sc, doc = _server_call(port, code)
        print("# %s: subtree_control %r; call: status %r termination %r"
              % (what, h.read(host + "/cgroup.subtree_control").strip(), sc.get("status"),
                 sc.get("termination")))
        claimed = "memory_aggregate" in ((sc.get("backend") or {}).get("controls") or [])
        g.check(not (sc.get("status") == "success" and claimed),
                "%s: a call past memory_bytes succeeded, its result claiming memory_aggregate: "
                "%r" % (what, doc))
        if sc.get("status") is not None and sc.get("termination") != "launch_failed":
            g.eq(sc.get("termination"), "memory_limit", "%s: termination (%r)" % (what, doc))

    over("as started")
    subprocess.run(ctl + ["daemon-reload"], check=True, timeout=SLOW)
    subprocess.run(ctl + ["set-property", "--runtime", unit, "MemoryMax=1G", "TasksMax=4096"],
                   check=True, timeout=SLOW)
    over("after daemon-reload and set-property")
    taken = None
    for _ in range(50):
        try:
            with open(host + "/cgroup.subtree_control", "w") as f:
                f.write("-memory -pids")
            taken = "taken"
            break
        except OSError as ex:
            taken = os.strerror(ex.errno)
            time.sleep(0.1)
    print("# taking the controllers away from %s: %s" % (host, taken))
    over("after the controllers were taken away")


def test_controllers_taken_mid_run(t):
    """A one-shot run in a Delegate=yes scope, past its memory limit once it has slept;
    meanwhile the scope's other process takes the controllers away from govex's host
    cgroup ("-memory -pids": allowed to the cgroup's owner while no child has them in
    its own subtree_control), which removes the run's memory.max.  The result must not
    then claim memory_aggregate for a run that succeeded past memory_bytes."""
    h.need_systemd_v2()
    script = SCOPE_COMMON + r"""
CODE = %r
warm = run(["run", "-c", "pass"])     # the interpreter probe, cached: the next slot is the run's
p = subprocess.Popen([G, "run", "--json", "--policy", os.environ["POL"], "-c", CODE],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
deadline = time.monotonic() + 100
host = None
while time.monotonic() < deadline and p.poll() is None:
    if own(p.pid).endswith("/supervisor"):
        host = CG + own(p.pid)[:-len("/supervisor")]
        if [d for d in os.listdir(host) if d.startswith("govex.slot-")
                and open(os.path.join(host, d, "cgroup.procs")).read().strip()]:
            break
    time.sleep(0.05)
time.sleep(1.5)
taken = None
try:
    with open(host + "/cgroup.subtree_control", "w") as f:
        f.write("-memory -pids")
    taken = open(host + "/cgroup.subtree_control").read().strip()
except (OSError, TypeError) as ex:
    taken = repr(ex)
out, err = p.communicate(timeout=110)
try:
    doc = json.loads(out)
except ValueError:
    doc = {"stderr": err.decode()[-600:]}
print("RT " + json.dumps({"taken": taken, "doc": doc}))
""" % _tmpfs_code(48, sleep=8)
    res = _scope(t, script, POL=_scope_pol(t))
    doc = res["doc"]
    claimed = "memory_aggregate" in ((doc.get("backend") or {}).get("controls") or [])
    print("# controllers taken (subtree_control now %r): %s %s, stdout %r, usage %r"
          % (res["taken"], doc.get("status"), doc.get("termination"), doc.get("stdout"),
             doc.get("usage")))
    g.check(not (doc.get("status") == "success" and claimed),
            "the run succeeded past memory_bytes with its controllers taken away, and its "
            "result claims memory_aggregate: %r" % doc)


# ---------------------------------------------------------------- handed cgroups

def test_handed_path_tricks(t):
    """GOVEX_CGROUP must name the cgroup itself: a normalized absolute path below the
    cgroup2 mount.  '..', '.', '//' and a trailing '/' (which name another cgroup, or
    the same one under another name), a symlink, a path outside the mount and a file are
    refused, and nothing is written anywhere."""
    h.need_systemd_v2()
    base = h.CG + h.own_cgroup()
    if h.ROOT:
        base = h.CG + "/" + h.unique("govex-rt-trick")
        os.mkdir(base)
        t.defer(os.rmdir, base)
    link = t.path("link")
    os.symlink(base, link)
    parent = os.path.dirname(base)
    snaps = {d: _snapshot(d) for d in (base, parent)}
    for path in (base + "/..", base + "/.", base + "/", base.replace("/sys/fs/cgroup/",
                 "/sys/fs/cgroup//", 1), base + "/./", link, "/tmp", "/sys/fs",
                 base + "/cgroup.procs", "sys/fs/cgroup" + base[len(h.CG):],
                 h.CG + "/../fs/cgroup" + base[len(h.CG):]):
        r = t.run(["backends", "--json"], env=h.env_with(GOVEX_CGROUP=path))
        rr = [x for x in json.loads(r.stdout) if x["name"] == "restricted"][0]
        g.eq(rr["cgroups"]["source"], "none", "GOVEX_CGROUP=%r (%r)" % (path, rr["cgroups"]))
    for d, snap in snaps.items():
        g.eq(_snapshot(d), snap, "%s after the handed paths" % d)


def _as_nobody(fn):
    """Runs fn() in a child as uid/gid 65534; returns what it returned (or the error)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            out = {"ok": fn()}
        except BaseException as ex:  # noqa: BLE001 - reported to the parent
            out = {"error": repr(ex)}
        os.write(wr, json.dumps(out).encode())
        os._exit(0)
    os.close(wr)
    data = b""
    while True:
        b = os.read(rd, 65536)
        if not b:
            break
        data += b
    os.close(rd)
    os.waitpid(pid, 0)
    return json.loads(data.decode())


def test_handed_not_ours_alone(t):
    """As root: a handed cgroup owned by another user, or writable by a group, is
    refused, and nothing is written there."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("root makes cgroups of other owners")
    for how in ("owner", "dir g+w", "procs g+w", "subtree o+w"):
        d = h.CG + "/" + h.unique("govex-rt-own")
        os.mkdir(d)
        t.defer(os.rmdir, d)
        if how == "owner":
            for f in ("", "cgroup.procs", "cgroup.subtree_control"):
                os.chown(os.path.join(d, f) if f else d, NOBODY, NOBODY)
        elif how == "dir g+w":
            os.chmod(d, 0o775)
        elif how == "procs g+w":
            os.chmod(d + "/cgroup.procs", 0o664)
        else:
            os.chmod(d + "/cgroup.subtree_control", 0o646)
        snap = _snapshot(d)
        r = t.run(["backends", "--json"], env=h.env_with(GOVEX_CGROUP=d))
        rr = [x for x in json.loads(r.stdout) if x["name"] == "restricted"][0]
        g.eq(rr["cgroups"]["source"], "none", "%s: %r" % (how, rr["cgroups"]))
        g.eq(_snapshot(d), snap, "%s: the cgroup after govex looked at it" % how)


def test_handed_ancestor_of_another_user(t):
    """As root: the handed cgroup is root's alone, but its parent (cgroup.procs included)
    belongs to another user.  cgroup v2 lets whoever can write the common ancestor's
    cgroup.procs move a process between its descendants, whatever the process's owner:
    that user can move the run out of the cgroup that bounds it.  govex must refuse such
    a cgroup, or the move must fail and the run stay limited."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("root makes cgroups of other owners")
    a = h.CG + "/" + h.unique("govex-rt-anc")
    os.mkdir(a)
    t.defer(os.rmdir, a)
    for f in ("", "cgroup.procs", "cgroup.subtree_control"):
        os.chown(os.path.join(a, f) if f else a, NOBODY, NOBODY)
    with open(a + "/cgroup.subtree_control", "w") as f:
        f.write("+memory +pids")
    handed = a + "/handed"
    os.mkdir(handed)
    t.defer(os.rmdir, handed)
    out = a + "/out"
    t.defer(os.rmdir, out)
    pol = t.write_json("p.json", _pol_doc(memory_bytes=32 * MIB))
    p = subprocess.Popen([GOVEX, "run", "--json", "--policy", pol, "-c",
                          _tmpfs_code(48, sleep=8)],
                         env=h.env_with(GOVEX_CGROUP=handed), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    t.defer(g._kill_pid, p.pid)
    deadline = time.monotonic() + 60
    members = []
    while time.monotonic() < deadline and p.poll() is None:
        members = [pid for s in _slots(handed) for pid in _procs(s)]
        if members:
            break
        time.sleep(0.05)
    moved = None
    if members:
        time.sleep(1.0)   # the program itself, not only its first process

        def attack():
            os.makedirs(out, exist_ok=True)
            done = []
            for _ in range(20):
                for s in _slots(handed):
                    for pid in _procs(s):
                        try:
                            with open(out + "/cgroup.procs", "w") as f:
                                f.write(str(pid))
                            done.append(pid)
                        except OSError:
                            pass
                time.sleep(0.05)
            return done
        moved = _as_nobody(attack)
    so, se = p.communicate(timeout=SLOW)
    print("# run processes %r; uid %d moved %r; govex rc %d" % (members, NOBODY, moved,
                                                                p.returncode))
    if p.returncode == g.EXIT_REFUSED:
        rep = json.loads(t.run(["backends", "--json"],
                               env=h.env_with(GOVEX_CGROUP=handed)).stdout)
        rr = [x for x in rep if x["name"] == "restricted"][0]
        g.eq(rr["cgroups"]["source"], "none", "source: %r" % rr["cgroups"])
        return
    doc = json.loads(so)
    g.check(not (moved or {}).get("ok"),
            "uid %d moved the run's processes %r out of their cgroup (run: %s, %r, "
            "max_rss_bytes %r)" % (NOBODY, moved, doc["status"], doc["stdout"],
                                   doc["usage"]["max_rss_bytes"]))
    _limited(doc, "a handed cgroup below another user's")


def test_other_user_cannot_touch_runs(t):
    """Two users on one host: as root, a run is alive; another uid can neither lift its
    limits nor move its processes into a cgroup of its own, nor kill it by cgroup."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("root switches to another uid")
    mine = h.CG + "/" + h.unique("govex-rt-other")
    os.mkdir(mine)
    t.defer(os.rmdir, mine)
    for f in ("", "cgroup.procs"):
        os.chown(os.path.join(mine, f) if f else mine, NOBODY, NOBODY)
    pol = t.write_json("p.json", _pol_doc(memory_bytes=40 * MIB))
    p, host, slot = _live_run(t, pol, "import time\ntime.sleep(60)\n")
    try:
        members = _procs(slot)

        def attack():
            got = {}
            for name, path, data in (("memory.max", slot + "/memory.max", "max"),
                                     ("pids.max", slot + "/pids.max", "max"),
                                     ("kill", slot + "/cgroup.kill", "1"),
                                     ("subtree", host + "/cgroup.subtree_control", "-memory")):
                try:
                    with open(path, "w") as f:
                        f.write(data)
                    got[name] = "written"
                except OSError as ex:
                    got[name] = os.strerror(ex.errno)
            for pid in members:
                try:
                    with open(mine + "/cgroup.procs", "w") as f:
                        f.write(str(pid))
                    got["move %d" % pid] = "moved"
                except OSError as ex:
                    got["move %d" % pid] = os.strerror(ex.errno)
            return got
        got = _as_nobody(attack)
        print("# uid %d against a live run: %r" % (NOBODY, got))
        g.check("ok" in got, "the attacker crashed: %r" % got)
        for k, v in got["ok"].items():
            g.check(v not in ("written", "moved"), "uid %d: %s: %s" % (NOBODY, k, v))
        g.eq(_procs(slot), members, "the run's processes after the attempts")
    finally:
        p.kill()
        p.wait()


def test_scope_asked_from_a_pid_namespace(t):
    """As root, govex in a PID namespace of its own (unshare -p: a sandbox, a container
    that reaches the host's /run/systemd) is not delegated and asks the system manager
    for a scope holding itself.  systemd reads the pid it is given in its own PID
    namespace: another service's process whose host pid is the number govex has in its
    namespace must stay in its service."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("a PID namespace of one's own needs root here (a user's needs a user "
                     "namespace, where the system manager is not asked)")
    unit = h.unique("govex-rt-victim") + ".service"
    subprocess.run(["systemd-run", "--quiet", "--unit", unit, "--", "sleep", "300"],
                   check=True, timeout=60)
    t.defer(h.stop_unit, unit)
    victim = int(subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit],
                                stdout=subprocess.PIPE, timeout=30).stdout)
    g.check(victim > 1, "no main pid for %s" % unit)
    t.defer(g._kill_pid, victim)
    before = h.own_cgroup(victim)
    # govex's pid in its namespace: the victim's on the host
    script = ('echo %d > /proc/sys/kernel/ns_last_pid && "$GOVEX" backends --json; true'
              % (victim - 1))
    os.mkdir(t.path("cache"))
    p = subprocess.run(["unshare", "-pf", "--mount-proc", "sh", "-c", script],
                       env=h.env_with(GOVEX=GOVEX, XDG_CACHE_HOME=t.path("cache")),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=SLOW)
    try:
        rr = [x for x in json.loads(p.stdout) if x["name"] == "restricted"][0]
        src = rr.get("cgroups")
    except (ValueError, IndexError):
        src = p.stderr.decode()[-600:]
    after = h.own_cgroup(victim)
    print("# victim %s (pid %d): %s -> %s; govex said %r" % (unit, victim, before, after, src))
    g.eq(after, before, "the cgroup of %s's process (host pid %d, govex's pid in its "
         "namespace) after govex asked systemd for a scope" % (unit, victim))


def test_stale_report_is_not_a_cgroup(t):
    """A report cached where a cgroup could be had is not believed where none can (the
    same cgroup, the user's manager unreachable): the run must not start without its
    limits (refused or failed, nothing printed by the program)."""
    h.need_systemd_v2()
    if h.ROOT:
        raise g.Skip("the system manager cannot be made unreachable for root here")
    env = h.env_with(XDG_CACHE_HOME=t.path("cache"))
    os.mkdir(t.path("cache"))
    t.run(["run", "-c", "print(1)"], env=env, timeout=SLOW).expect_rc(0)
    env["XDG_RUNTIME_DIR"] = t.path("nowhere")
    r = t.run(["run", "--json", "-c", "print(6*7)"], env=env, timeout=SLOW)
    doc = r.result()
    print("# with the manager unreachable and the report cached: rc %d status %s, %r"
          % (r.returncode, doc["status"], [d.get("code") for d in doc["diagnostics"]]))
    g.check(doc["status"] != "success" and doc["stdout"] == "",
            "a run started without a cgroup: %r" % doc)


TESTS = [
    ("inside the run: no cgroupfs, no mount, no new cgroup namespace",
     test_run_cannot_reach_cgroupfs),
    ("inside the run with /sys readable: cannot lift its limits or leave its cgroup",
     test_run_cannot_leave_its_cgroup),
    ("from the host: the run's processes, limits and files", test_run_limits_seen_from_the_host),
    ("a fork bomb stops at processes: 16", test_fork_bomb_in_the_run),
    ("/tmp + workdir + heap share one memory limit", test_memory_spread_over_kinds),
    ("a user manager's unit without Delegate is not taken (root's too)",
     test_user_manager_unit_without_delegate),
    ("a cgroup namespace over a unit nobody delegated is not taken",
     test_cgroup_namespace_nobody_delegated),
    ("a racer in the scope during the leaf move: limited or refused", test_leaf_move_racer),
    ("planted govex.slot-N cgroups: reclaimed or refused", test_planted_slot_cgroups),
    ("govex killed mid-move, again and again: then limited", test_killed_mid_move),
    ("a leaf move interrupted halfway is finished by the next govex",
     test_move_interrupted_halfway),
    ("a server whose controllers are taken away: limited or refused",
     test_server_controllers_taken_away),
    ("controllers taken away mid-run: no claim of memory_aggregate",
     test_controllers_taken_mid_run),
    ("GOVEX_CGROUP path tricks are refused, nothing written", test_handed_path_tricks),
    ("a handed cgroup of another owner or group-writable is refused",
     test_handed_not_ours_alone),
    ("a handed cgroup below another user's: refused, or the run stays bound",
     test_handed_ancestor_of_another_user),
    ("another uid cannot lift, move or kill a live run", test_other_user_cannot_touch_runs),
    ("govex in a PID namespace asks systemd for itself, not a host pid",
     test_scope_asked_from_a_pid_namespace),
    ("a stale cached report never starts a run without its cgroup",
     test_stale_report_is_not_a_cgroup),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
