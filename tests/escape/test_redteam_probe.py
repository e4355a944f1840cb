#!/usr/bin/env python3
"""Second red team (rt-c): the interpreter probe and what its answer decides.

The probe runs the interpreter a policy names inside a sandbox (probe.c); its answer is
untrusted and validated (interp.c, govex__interp_validate) before the run's mounts are
planned from it.  An interpreter that is a script (a wrapper, a pyenv shim) is code the
policy names: these tests make it the attacker.  It may print any answer that passes
validation; it tries to write out of the probe (a FIFO, a world-writable directory,
/dev/shm) and to leave a process behind.  And write roots that alias the interpreter's
files through a bind mount (protected_path).

Nothing here is a bomb; the runs that read files go through run_proven (canary).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

SYS_PY = "/usr/bin/python3"

GENUINE = r'''
import sys, json, sysconfig
p = sysconfig.get_paths()
libs = set()
for line in open('/proc/self/maps'):
    parts = line.split(None, 5)
    if len(parts) == 6 and '.so' in parts[5]:
        libs.add(parts[5].strip())
print(json.dumps({'executable': sys.executable,
    'version': '%d.%d.%d' % tuple(sys.version_info[:3]),
    'major': sys.version_info[0], 'minor': sys.version_info[1],
    'prefix': sys.prefix, 'base_prefix': sys.base_prefix,
    'stdlib': p.get('stdlib'), 'platstdlib': p.get('platstdlib'),
    'dynload': [d for d in sys.path if d.endswith('lib-dynload')], 'libs': sorted(libs)}))
'''


def _sys_python():
    if not os.path.exists(SYS_PY):
        e.skip("python3", "no %s" % SYS_PY)
    real = os.path.realpath(SYS_PY)
    with open(real, "rb") as f:
        if f.read(4) != b"\x7fELF":
            e.skip("python3", "%s is not an ELF executable" % real)
    return real


def _genuine():
    """The system interpreter's own answer, asked on the host (the test's own act)."""
    out = subprocess.run([_sys_python(), "-I", "-S", "-c", GENUINE], capture_output=True,
                         timeout=20, check=True).stdout
    return json.loads(out)


def _base(t):
    """A world-readable directory outside /tmp (the probe and the run see the host's
    /var/tmp only through binds)."""
    d = tempfile.mkdtemp(prefix="govex-rc-", dir="/var/tmp")
    os.chmod(d, 0o755)
    t.defer(shutil.rmtree, d, True)
    return d


def _secret(base):
    """A host directory no policy here names, with a world-readable file in it."""
    s = os.path.join(base, "secret")
    os.mkdir(s, 0o755)
    os.chmod(s, 0o755)
    token = "RC-SECRET-%s" % uuid.uuid4().hex
    with open(os.path.join(s, "key.txt"), "w") as f:
        f.write(token)
    os.chmod(os.path.join(s, "key.txt"), 0o644)
    return s, token


def _wrapper(base, answer, pre=""):
    """A "python3" that is a shell script: runs PRE, then prints ANSWER (JSON) as the
    probe's answer, whatever it is asked."""
    d = os.path.join(base, "fakepy", "bin")
    os.makedirs(d)
    for p in (os.path.join(base, "fakepy"), d):
        os.chmod(p, 0o755)
    ans = os.path.join(base, "fakepy", "answer.json")
    with open(ans, "w") as f:
        json.dump(answer, f)
    os.chmod(ans, 0o644)
    w = os.path.join(d, "python3")
    with open(w, "w") as f:
        f.write("#!/bin/sh\n%s\nexec cat %s\n" % (pre, ans))
    os.chmod(w, 0o755)
    return w


def _read_secret_run(t, w, secret):
    pol = e.policy(t, python={"interpreter": w, "site": False})
    env, _ = e.cache_env(t)
    _, doc, res = e.run_proven(t, [["read", os.path.join(secret, "key.txt"), {"as": "key"}],
                                   ["listdir", secret, {"as": "dir"}]], pol=pol, env=env)
    return doc, res


def test_planted_prefix_binds_host_dir(t):
    """FINDING: a wrapper's answer naming prefix = a host directory (an existing
    directory, not a system tree; the executable lies under base_prefix, so
    govex__interp_validate accepts it) makes every run of that policy bind the
    directory read-only: the run reads a host file outside its allowlist.  Expected:
    ENOENT (the directory is not in the sandbox)."""
    e.need_restricted("fs_read_allowlist")
    base = _base(t)
    secret, token = _secret(base)
    ans = _genuine()
    ans["prefix"] = secret
    w = _wrapper(base, ans)
    doc, res = _read_secret_run(t, w, secret)
    e.denied(res, "key", "ENOENT")
    e.denied(res, "dir", "ENOENT")


def test_planted_stdlib_binds_host_dir(t):
    """FINDING: the same with stdlib = prefix = the host directory and platstdlib the
    real standard library (under base_prefix): the directory is one of the
    interpreter's 'paths' and is bound.  Expected: ENOENT."""
    e.need_restricted("fs_read_allowlist")
    base = _base(t)
    secret, token = _secret(base)
    ans = _genuine()
    ans["prefix"] = secret
    ans["platstdlib"] = ans["stdlib"]
    ans["stdlib"] = secret
    w = _wrapper(base, ans)
    doc, res = _read_secret_run(t, w, secret)
    e.denied(res, "key", "ENOENT")
    e.denied(res, "dir", "ENOENT")


def test_planted_lib_binds_its_directory(t):
    """FINDING: a 'library' in the answer may be any ELF shared object anywhere; its
    directory becomes one of the interpreter's paths and is bound whole.  A host
    directory that merely holds a .so (a plugin dir, a build tree) is then readable.
    Expected: ENOENT for the other files of that directory."""
    e.need_restricted("fs_read_allowlist")
    base = _base(t)
    secret, token = _secret(base)
    ans = _genuine()
    real_so = [l for l in ans["libs"] if os.path.basename(l).startswith("libc.so")] or ans["libs"]
    shutil.copy(os.path.realpath(real_so[0]), os.path.join(secret, "libplugin.so"))
    os.chmod(os.path.join(secret, "libplugin.so"), 0o644)
    ans["libs"] = ans["libs"] + [os.path.join(secret, "libplugin.so")]
    w = _wrapper(base, ans)
    doc, res = _read_secret_run(t, w, secret)
    e.denied(res, "key", "ENOENT")


def test_probe_cannot_write_or_linger(t):
    """The wrapper, run by the probe (uid 0 without capabilities as root), tries to
    write to a FIFO the host reads (mode 0666), into a world-writable host directory,
    into /dev/shm and /var/tmp, and to leave a process behind.  None of it happens and
    the run still works (its answer is the genuine one)."""
    e.need_restricted("fs_read_allowlist", "no_new_privileges")
    base = _base(t)
    fifo = os.path.join(base, "fifo")
    os.mkfifo(fifo, 0o666)
    os.chmod(fifo, 0o666)
    open_dir = os.path.join(base, "open")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o1777)
    marker = "%d.%d" % (100000 + os.getpid() % 1000, int(time.time()) % 100000)
    shm = "/dev/shm/govex-rc-%s" % uuid.uuid4().hex
    vt = "/var/tmp/govex-rc-planted-%s" % uuid.uuid4().hex
    t.defer(lambda: [os.path.exists(p) and os.unlink(p) for p in (shm, vt)])
    pre = ("(echo PWNED-FIFO > %(fifo)s) 2>/dev/null\n"
           "(echo PWNED > %(dir)s/planted) 2>/dev/null\n"
           "(echo PWNED > %(shm)s) 2>/dev/null\n"
           "(echo PWNED > %(vt)s) 2>/dev/null\n"
           "(mkfifo %(dir)s/newfifo) 2>/dev/null\n"
           "(setsid sleep %(marker)s </dev/null >/dev/null 2>&1 &)\n"
           "(nohup sleep %(marker)s </dev/null >/dev/null 2>&1 &)\n"
           % {"fifo": fifo, "dir": open_dir, "shm": shm, "vt": vt, "marker": marker})
    w = _wrapper(base, _genuine(), pre)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    t.defer(os.close, rfd)
    pol = e.policy(t, python={"interpreter": w, "site": False})
    env, _ = e.cache_env(t)
    r = t.run(["run", "--policy", pol, "--json", "-c", "print('hi')"], env=env)
    doc = r.result()
    g.eq(doc["status"], "success", "the run after the wrapper's probe\n" + r.describe())
    try:
        got = os.read(rfd, 4096)
    except BlockingIOError:
        got = b""
    g.eq(got, b"", "bytes the probe wrote into a host FIFO")
    for p in (os.path.join(open_dir, "planted"), os.path.join(open_dir, "newfifo"), shm, vt):
        g.check(not os.path.lexists(p), "the probe wrote %s on the host" % p)
    time.sleep(0.3)
    left = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/cmdline" % n, "rb") as f:
                    if marker.encode() in f.read():
                        left.append(int(n))
            except OSError:
                pass
    for pid in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    g.eq(left, [], "processes the probe left running")


def test_write_root_bind_alias_below_stdlib(t):
    """FINDING (root): a write root that is a bind-mount alias of a directory BENEATH
    the interpreter's standard library (the same directory under another name, as a
    container volume or an admin's bind gives) is not refused: protected_overlap's
    (dev, ino) walk goes up the alias's own path, which never meets the stdlib.
    Expected: policy_refused / protected_path.  (The alias is made in a private mount
    namespace of the test's own: the host's mounts are untouched.)"""
    e.need_restricted("fs_write_allowlist")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        e.skip("root", "a bind mount needs root and unshare(1)")
    ans = _genuine()
    target = os.path.join(ans["stdlib"], "json")
    if not os.path.isdir(target):
        e.skip("python3", "no %s" % target)
    base = _base(t)
    alias = os.path.join(base, "alias")
    os.mkdir(alias)
    # control: the stdlib itself, and an alias of the stdlib (the walk up from the
    # stdlib meets it), are refused; then the alias of a directory beneath it
    outs = {}
    for name, src in (("parent", os.path.dirname(ans["stdlib"])), ("stdlib", ans["stdlib"]),
                      ("below", target)):
        pol = e.policy(t, name="%s.json" % name, filesystem={"write": [alias]},
                       python={"interpreter": SYS_PY, "site": False})
        env, _ = e.cache_env(t)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount --bind "$1" "$2" && exec "$3" plan --policy "$4" --json '
                            '-c "print(1)"', "sh", src, alias, g.GOVEX, pol],
                           capture_output=True, timeout=60, env=env, cwd=t.tmp)
        try:
            outs[name] = json.loads(p.stdout)
        except ValueError:
            raise g.Failure("plan in the private namespace: rc=%d out=%r err=%r"
                            % (p.returncode, p.stdout[-300:], p.stderr[-300:]))
    for name in ("parent", "stdlib", "below"):
        doc = outs[name]
        g.check(doc.get("status") == "policy_refused" and
                any(d.get("code") == "protected_path" for d in doc.get("diagnostics", [])),
                "write root %s, a bind alias of %s, was accepted: status=%r diagnostics=%r"
                % (alias, {"parent": os.path.dirname(ans["stdlib"]), "stdlib": ans["stdlib"],
                           "below": target}[name], doc.get("status"),
                   doc.get("diagnostics")))


BOMB = r"""#!%(py)s
# A "python3" whose probe is a bounded clone bomb of spinning threads -- only after it
# has proven, from inside, that it runs in the probe's sandbox.
import ctypes, mmap, os, sys
host_pidns = %(pidns)r
st = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
ok = (os.readlink("/proc/self/ns/pid") != host_pidns and os.getpid() < 100 and
      st["NoNewPrivs"].strip() == "1" and st["Seccomp"].strip() == "2")
if not ok:
    sys.stdout.write("GOVEX-GUARD refused\n")
    sys.exit(97)
LIMIT = %(limit)d
lib = ctypes.CDLL(None, use_errno=True)
code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(b"\xeb\xfe")                      # jmp . : a thread that only spins
fn = ctypes.addressof(ctypes.c_char.from_buffer(code))
lib.clone.restype = ctypes.c_int
lib.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
flags = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000
stacks = mmap.mmap(-1, LIMIT * 256)          # the spinners never touch their stacks
base = ctypes.addressof(ctypes.c_char.from_buffer(stacks))
made = 0
while made < LIMIT:
    if lib.clone(ctypes.c_void_p(fn), ctypes.c_void_p(base + (made + 1) * 256 - 16), flags,
                 None) < 0:
        break
    made += 1
import time
time.sleep(30)
"""


def test_probe_task_bound_under_spinning_bomb(t):
    """The probe has no cgroup; the shim counts its tasks by walking
    /proc every 5 ms and kills beyond PROBE_TASKS_MAX (256).  A wrapper (behind its own
    canary) makes raw clone threads that spin, competing with the shim for the CPU,
    up to a bound of 1200 (so the host's pid space is never at risk here).  Measured
    from the host: the wrapper's task count at its peak (a sampled lower bound: the host
    lists /proc/PID/task more slowly than the kernel clones).  Expected: the probe is
    reported killed for its tasks, and no sample exceeds 2 x 256 (polling overshoots the
    stated 'at most 256 at once': 383 was sampled once)."""
    e.need_restricted("fs_read_allowlist", "no_new_privileges", "syscall_filter")
    e.need_x86_64()
    import threading
    py = _sys_python()
    base = _base(t)
    d = os.path.join(base, "bombpy")
    os.mkdir(d, 0o755)
    w = os.path.join(d, "python3")
    with open(w, "w") as f:
        f.write(BOMB % {"py": py, "pidns": e.HOST_PIDNS, "limit": 1200})
    os.chmod(w, 0o755)
    # first, the canary: the same path with a wrapper that only proves and answers
    canary = _wrapper(base, _genuine(), pre="")
    pol = e.policy(t, name="canary.json", python={"interpreter": canary, "site": False})
    env, _ = e.cache_env(t)
    e.run_proven(t, [["canary", {"as": "c"}]], pol=pol, env=env)
    peak = [0]
    stop = threading.Event()

    def watch():
        pid = None
        while not stop.is_set():
            if pid is None:
                for n in os.listdir("/proc"):
                    if n.isdigit():
                        try:
                            with open("/proc/%s/cmdline" % n, "rb") as f:
                                if w.encode() in f.read():
                                    pid = n
                                    break
                        except OSError:
                            pass
                continue
            try:
                peak[0] = max(peak[0], len(os.listdir("/proc/%s/task" % pid)))
            except OSError:
                pid = None

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    pol = e.policy(t, name="bomb.json", python={"interpreter": w, "site": False})
    try:
        r = t.run(["run", "--policy", pol, "--json", "-c", "print('hi')"], env=env,
                  timeout=60)
    finally:
        stop.set()
        th.join(5)
    doc = r.result()
    g.check("GOVEX-GUARD" not in json.dumps(doc), "the bomb's own canary refused")
    g.eq(doc.get("status"), "execution_failed", "status of a run whose probe was a bomb")
    g.check(any("more than 256 tasks" in (d.get("message") or "")
                for d in doc.get("diagnostics", [])),
            "the probe was not reported killed for its tasks: %r" % doc.get("diagnostics"))
    # Polled, so it overshoots PROBE_TASKS_MAX (samples of 138 and 383 seen here); the
    # guard is that the shim stops the bomb well before the bomb's own bound.
    g.check(0 < peak[0] <= 2 * 256,
            "the probe held %d tasks at its peak (PROBE_TASKS_MAX 256; the bomb stops at "
            "1200)" % peak[0])


def test_probe_reads_root_only_file_and_leaks_it_to_the_run(t):
    """FINDING (root; follows from the answer binding any directory): the probe runs as
    uid 0 (no capabilities, but owner bits give it root's 0600 files), the run as an
    unprivileged sandbox uid.  A wrapper reads a root-only file and encodes it in its
    answer by WHICH host directory it names as prefix; the run, which cannot read the
    file itself (EACCES), learns its content from which directory it sees.  Expected:
    neither directory is visible in the run."""
    e.need_restricted("fs_read_allowlist")
    if os.geteuid() != 0:
        e.skip("root", "the probe keeps uid 0 only when govex runs as root")
    base = _base(t)
    ans = _genuine()
    dirs = {}
    for bit in ("0", "1"):
        d = os.path.join(base, "bit" + bit)
        os.mkdir(d, 0o755)
        a = dict(ans, prefix=d)
        with open(os.path.join(base, "ans%s.json" % bit), "w") as f:
            json.dump(a, f)
        os.chmod(os.path.join(base, "ans%s.json" % bit), 0o644)
        dirs[bit] = d
    secret = os.path.join(base, "root-only.txt")
    with open(secret, "w") as f:
        f.write("1\n")
    os.chmod(secret, 0o600)
    d = os.path.join(base, "leakpy")
    os.mkdir(d, 0o755)
    w = os.path.join(d, "python3")
    with open(w, "w") as f:
        f.write("#!/bin/sh\nif grep -q 1 %s 2>/dev/null; then exec cat %s; else exec cat %s; fi\n"
                % (secret, os.path.join(base, "ans1.json"), os.path.join(base, "ans0.json")))
    os.chmod(w, 0o755)
    pol = e.policy(t, python={"interpreter": w, "site": False},
                   filesystem={"read": [secret]})
    env, _ = e.cache_env(t)
    _, doc, res = e.run_proven(t, [["read", secret, {"as": "direct"}],
                                   ["stat", dirs["0"], {"as": "bit0"}],
                                   ["stat", dirs["1"], {"as": "bit1"}]], pol=pol, env=env)
    e.denied(res, "direct", "EACCES")       # the run's uid cannot read it
    e.denied(res, "bit0", "ENOENT")
    e.denied(res, "bit1", "ENOENT")         # fails today: the probe's read leaked "1"


MEMBOMB = r"""#!%(py)s
# A "python3" whose probe holds memory in several processes -- only after proving,
# from inside, that it runs in the probe's sandbox.  Bounded: %(n)d x %(mib)d MiB.
import os, sys, time
host_pidns = %(pidns)r
st = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
ok = (os.readlink("/proc/self/ns/pid") != host_pidns and os.getpid() < 100 and
      st["NoNewPrivs"].strip() == "1" and st["Seccomp"].strip() == "2")
if not ok:
    sys.stdout.write("GOVEX-GUARD refused\n")
    sys.exit(97)
kids = []
for i in range(%(n)d - 1):
    pid = os.fork()
    if pid == 0:
        break
    kids.append(pid)
held = bytearray(%(mib)d << 20)
for off in range(0, len(held), 4096):
    held[off] = 1
time.sleep(4)
if kids:
    for k in kids:
        os.waitpid(k, 0)
os._exit(3)
"""


def test_probe_memory_aggregate(t):
    """Found by the red team: the probe had no memory cgroup (RLIMIT_AS of 1 GiB per
    process and up to 256 tasks, so a wrapper's probe could hold ~256 GiB); it now has
    one of its own where the host can make one.  Bounded here to 4 processes x 600 MiB (behind the wrapper's own
    canary), measured from the host (VmRSS summed over the probe's processes).
    Expected: the probe's processes together never hold more than its 1 GiB."""
    e.need_restricted("fs_read_allowlist", "no_new_privileges", "syscall_filter")
    import threading
    py = _sys_python()
    base = _base(t)
    d = os.path.join(base, "mempy")
    os.mkdir(d, 0o755)
    w = os.path.join(d, "python3")
    with open(w, "w") as f:
        f.write(MEMBOMB % {"py": py, "pidns": e.HOST_PIDNS, "n": 4, "mib": 600})
    os.chmod(w, 0o755)
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            total = 0
            for n in os.listdir("/proc"):
                if not n.isdigit():
                    continue
                try:
                    with open("/proc/%s/cmdline" % n, "rb") as f:
                        if w.encode() not in f.read():
                            continue
                    with open("/proc/%s/status" % n) as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            peak[0] = max(peak[0], total)
            time.sleep(0.05)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    pol = e.policy(t, python={"interpreter": w, "site": False})
    env, _ = e.cache_env(t)
    try:
        r = t.run(["run", "--policy", pol, "--json", "-c", "print('hi')"], env=env,
                  timeout=60)
    finally:
        stop.set()
        th.join(5)
    doc = r.result()
    g.check("GOVEX-GUARD" not in json.dumps(doc), "the wrapper's own canary refused")
    g.check(peak[0] > 0, "the probe's processes were never seen")
    # the cgroup charges each page once; VmRSS counts the pages the processes share
    # (the interpreter and its libraries, a few MiB each) in every one of them
    g.check(peak[0] <= (1 << 30) + (64 << 20),
            "the probe's processes held %d MiB together (its bound: 1024 MiB for the "
            "whole probe, plus the shared pages each VmRSS counts again)" % (peak[0] >> 20))


def test_planted_stdlib_etc(t):
    """FINDING: system_tree() keeps a prefix of /etc from being bound, but not a stdlib:
    an answer with prefix = stdlib = /etc (valid: an existing directory, stdlib under
    prefix) binds all of the host's /etc into every run of the policy (what issue 9
    item 1 did through the cache, now through a wrapper).  Expected: /etc holds only the
    sandbox's own passwd and group (contract section 5), not the host's.  (Plain reads:
    run_probe, since the canary itself refuses a sandbox that shows /etc.)"""
    e.need_restricted("fs_read_allowlist")
    base = _base(t)
    ans = _genuine()
    ans["platstdlib"] = ans["stdlib"]
    ans["prefix"] = "/etc"
    ans["stdlib"] = "/etc"
    w = _wrapper(base, ans)
    pol = e.policy(t, python={"interpreter": w, "site": False})
    env, _ = e.cache_env(t)
    _, doc, res = e.run_probe(t, [["read", "/etc/passwd", {"as": "passwd"}],
                                  ["listdir", "/etc", {"as": "etc"}]], pol=pol, env=env)
    e.own_passwd(res, "passwd")
    g.eq(sorted(e.allowed(res, "etc")), ["group", "passwd"], "/etc in the sandbox")


if __name__ == "__main__":
    sys.exit(g.main([
        ("answer: a wrapper's prefix naming a host directory is not bound",
         test_planted_prefix_binds_host_dir),
        ("answer: a wrapper's stdlib naming a host directory is not bound",
         test_planted_stdlib_binds_host_dir),
        ("answer: a wrapper's stdlib of /etc does not bind the host's /etc",
         test_planted_stdlib_etc),
        ("answer: a wrapper's extra 'library' does not bind its directory",
         test_planted_lib_binds_its_directory),
        ("probe: a wrapper cannot write to a FIFO, a host dir, /dev/shm, nor linger",
         test_probe_cannot_write_or_linger),
        ("protected_path: a write root aliasing (bind) a dir below the stdlib is refused",
         test_write_root_bind_alias_below_stdlib),
        ("probe: a spinning clone bomb is stopped near PROBE_TASKS_MAX",
         test_probe_task_bound_under_spinning_bomb),
        ("probe: a root-only file read by the probe does not leak into the run",
         test_probe_reads_root_only_file_and_leaks_it_to_the_run),
        ("probe: its processes together hold at most 1 GiB",
         test_probe_memory_aggregate),
    ]))
