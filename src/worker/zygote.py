# govex warm template ("zygote"): DESIGN.md "Warm runs", src/lib/backend/restricted/template.c.
#
# Started by the template shim with `python -I [-S] -c THIS` inside the sandbox's outer
# layers (user namespace when not root, mount namespace with the read-only root, network
# namespace under network: deny, a PID namespace of its own).  It imports and warms the
# standard library, says READY on fd 3, gets govex's worker texts once, and then only
# makes run processes ahead of the runs: it never receives or reads a run's data (a run's
# spec is in a memfd only that run's processes read), so the template's memory never
# holds anything of a run, and no later run can find an earlier one's code, environment
# or input in what it inherits.
#
# Made ahead (_zyg_prefork; two at a time per template, each replaced once taken):
#   A  fork of the template: unshare(mount, PID, IPC, UTS[, net]); forks B and exits.
#   B  PID 1 of the run's PID namespace (the cold shim's role); forks C; waits on fd 3
#      for one run's descriptors (SCM_RIGHTS; the kernel gives each message to one B).
#   C  PID 2, the program child: waits for B.
# Per run (every step before any user code, failures reported as {step, errno} on the
# run's error pipe like a cold launch):
#   B  hands the descriptors to C, mounts the run's own /tmp, workdir, identity files and
#      proc, has the relay place the files in (outputs only: makes the output directory
#      itself and sends the relay the workdir one-way), tells C to go on; then keeps the
#      CPU budget and the host's kill request, answers C's seccomp notifications
#      (denials counted), reaps, kills the namespace and writes the shim report.
#   C  (its own session made before the run: setsid, _zyg_prefork) joins the run's
#      cgroups (before anything else), cgroup namespace, seccomp guard (its listener to
#      B), stdio, chdir, no_new_privs, Landlock, ids and capabilities dropped
#      (bounding, ambient, inheritable, permitted, effective),
#      rlimits, the seccomp allowlist -- the cold program child's order -- then the run's
#      environment, argv ['-c'] and a fresh __main__, and the code compiled as "<string>"
#      from a str (no coding cookie, as -c): exceptions, SystemExit, KeyboardInterrupt
#      and the exit status as `python -c` has them; at the end what finalization does
#      that a program can see (threads joined, atexit, stdio flushed), then _exit
#      (_zyg_exit).
#
# What every run of one template shares by construction (fork): the address-space layout
# of everything the template mapped (interpreter, libraries, preloaded modules) and the
# str/bytes hash seed.  The template is recycled after a bounded number of runs
# (template.c), which re-randomizes both.  The `random` module reseeds itself in every
# forked child (os.register_at_fork), so no two runs see the same random stream.
import sys, os, ctypes, json, struct, signal, socket, select, resource, types, builtins, time

_G0 = None  # the shape of a fresh -c __main__ (set by the first statement below)


def _zyg_main_shape(g):
    out = []
    for k, v in g.items():
        if k.startswith("_zyg") or k in ("_G0",) or k in ("sys", "os", "ctypes", "json",
                                                          "struct", "signal", "socket",
                                                          "select", "resource", "types",
                                                          "builtins", "time"):
            continue
        out.append((k, v))
    return out


_G0 = _zyg_main_shape(dict(globals()))

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]
with open("/proc/self/comm", "rb") as _f:
    _COMM = _f.read().rstrip(b"\n")


def _setname(name):
    buf = ctypes.create_string_buffer(name)
    _libc.prctl(PR_SET_NAME, ctypes.addressof(buf), 0, 0, 0)

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x20000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NAME = 15
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 22, 2, 47, 4
SYS_LL_CREATE, SYS_LL_ADD, SYS_LL_RESTRICT = 444, 445, 446
SYS_PIDFD_OPEN = 434  # the same number on every architecture
WALL = 0x40000000


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _Fail(Exception):
    def __init__(self, step, err):
        Exception.__init__(self, step, err)
        self.step, self.err = step, err


def _chk(r, step):
    if r < 0:
        raise _Fail(step, ctypes.get_errno() or 1)
    return r


class _Run:
    """One run's child side: parsed spec and received descriptors."""

    def __init__(self, spec, fds):
        self.s = spec
        self.fds = fds
        self.st = spec["steps"]
        i = 1
        (self.fin, self.fout, self.ferr, self.fce, self.frep, self.fkill) = fds[i:i + 6]
        i += 6
        self.procs = fds[i:i + spec["nprocs"]]
        i += spec["nprocs"]
        self.cpu = fds[i] if spec["cpu"] else -1
        i += 1 if spec["cpu"] else 0
        self.extra = fds[i] if spec["extra"] else -1  # call mode: the response fd (3)
        i += 1 if spec["extra"] else 0
        # the relay's watch socket (template.c, relay_watch): B sends its pidfd there
        self.watch = fds[i] if i < len(fds) else -1
        # denials: the program's guard listener comes to B on lsock (B's end)
        self.lsock = self.csock = self.listener = -1
        self.net_denied = self.exec_denied = 0

    def fail(self, step, err):
        try:
            os.write(self.fce, struct.pack("=ii", step, err))
        except OSError:
            pass
        os._exit(127)

    # ---- A: the run's namespaces and its own writable places ----
    def enter(self):
        """B, its namespaces made before the run (_zyg_prefork): the run's own writable
        places and identity files."""
        s, st = self.s, self.st
        if s["identity"]:
            self.identity_files()
        for path, opts in s["tmpfs"]:
            _chk(_libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                             opts.encode()), st["tmpfs"])

    def identity_files(self):
        """The run's own /etc/passwd and /etc/group (its ids; mounts.c's RM_FILE text),
        read-only, bound over the template's placeholders.  Written in a small tmpfs on
        the workdir's mount point, which the run's workdir then covers."""
        s, st = self.s, self.st
        fl = MS_NOSUID | MS_NODEV | MS_NOEXEC
        wd = s["workdir"].encode()
        _chk(_libc.mount(b"tmpfs", wd, b"tmpfs", fl, b"size=64k,nr_inodes=8,mode=0755"),
             st["tmpfs"])
        for i, (path, text) in enumerate(s["identity"]):
            src = wd + b"/%d" % i
            try:
                fd = os.open(src, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                try:
                    os.write(fd, bytes.fromhex(text))
                finally:
                    os.close(fd)
                os.chmod(src, 0o644)
            except OSError as e:
                raise _Fail(st["tmpfs"], e.errno)
            _chk(_libc.mount(src, path.encode(), None, MS_BIND, None), st["tmpfs"])
            _chk(_libc.mount(None, path.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | fl,
                             None), st["tmpfs"])

    def files_in(self):
        """Files in: the workdir's descriptor to the relay (template_relay.c), which
        writes the files (and the output directory) there as the cold shim does; then
        each file bound read-only onto itself here, in the run's mount namespace."""
        st = self.st
        wd = self.s["workdir"]
        sock = socket.socket(fileno=os.dup(self.watch))
        try:
            fd = os.open(wd, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                sock.sendmsg([b"W"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                       struct.pack("=i", fd))])
            finally:
                os.close(fd)
            go = sock.recv(1)
        except OSError as e:
            raise _Fail(st["workdir"], e.errno or 5)
        finally:
            sock.close()
        if go != b"G":
            os._exit(0)  # the relay reported the failure on the error pipe
        fl = MS_NOSUID | MS_NODEV | MS_NOEXEC
        for name in self.s["files"]:
            path = (wd + "/" + name).encode()
            _chk(_libc.mount(path, path, None, MS_BIND, None), st["workdir"])
            _chk(_libc.mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | fl, None),
                 st["workdir"])

    def output_dir(self):
        """Outputs and no file in: the output directory made here, as the cold shim makes
        it (files.c, govex__files_place: mode 0700, the run's ids), in the run's fresh
        workdir tmpfs before anything of the run started; the workdir's descriptor goes
        to the relay one-way (it collects the outputs from it), without the relay's
        round trip that files in need."""
        s, st = self.s, self.st
        try:
            fd = os.open(s["workdir"], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                         os.O_CLOEXEC)
        except OSError as e:
            raise _Fail(st["workdir"], e.errno or 5)
        try:
            os.mkdir("output", 0o700, dir_fd=fd)
            if s["uid"] not in (-1, 0xFFFFFFFF):
                os.chown("output", s["uid"], s["gid"], dir_fd=fd, follow_symlinks=False)
            sock = socket.socket(fileno=os.dup(self.watch))
            try:
                sock.sendmsg([b"O"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                       struct.pack("=i", fd))])
            finally:
                sock.close()
        except OSError as e:
            raise _Fail(st["workdir"], e.errno or 5)
        finally:
            os.close(fd)

    # ---- B: PID 1 of the run ----
    def proc(self):
        st = self.st
        fl = MS_NOSUID | MS_NODEV | MS_NOEXEC
        if _libc.mount(b"proc", b"/proc", b"proc", fl, b"subset=pid") == 0:
            return
        _chk(_libc.mount(b"proc", b"/proc", b"proc", fl, None), st["proc"])
        for p in self.s["proc_masked"]:
            try:
                m = os.lstat(p).st_mode
            except OSError:
                continue
            if (m & 0o170000) == 0o120000:
                continue
            if (m & 0o170000) == 0o040000:
                _chk(_libc.mount(b"tmpfs", p.encode(), b"tmpfs", MS_RDONLY | fl,
                                 b"size=4k,nr_inodes=1,mode=0555"), st["proc_mask"])
            else:
                _chk(_libc.mount(b"/dev/null", p.encode(), None, MS_BIND, None), st["proc_mask"])
                _chk(_libc.mount(None, p.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | fl,
                                 None), st["proc_mask"])

    def send_pidfd(self):
        """B: its own pidfd to the relay, which kills B (and so the run's PID namespace)
        should B not end after the host asked for the end (the last resort).  B keeps the
        socket until its report is written: its end then tells the relay the run is over
        (every process of it killed and reaped), without waiting for B's own exit (the
        teardown of the run's namespaces)."""
        sock = socket.socket(fileno=self.watch)
        try:
            pfd = _libc.syscall(SYS_PIDFD_OPEN, os.getpid(), 0)
            if pfd >= 0:
                try:
                    sock.sendmsg([b"p"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                           struct.pack("=i", pfd))])
                finally:
                    os.close(pfd)
        except OSError:
            pass
        finally:
            sock.detach()

    # ---- denials (execonce.c's rexec_answer, for a run whose interpreter runs) ----
    def notify_event(self, p, fd, rev):
        if fd == self.lsock:
            # the program's listener (or its end closed: it failed before)
            p.unregister(fd)
            try:
                _m, anc, _f, _a = socket.socket(fileno=os.dup(fd)).recvmsg(
                    1, socket.CMSG_SPACE(4), socket.MSG_CMSG_CLOEXEC)
            except OSError:
                anc = []
            os.close(fd)
            self.lsock = -1
            for lvl, typ, data in anc:
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS and len(data) >= 4:
                    self.listener = struct.unpack("=i", data[:4])[0]
                    p.register(self.listener, select.POLLIN)
            return
        if not (rev & select.POLLIN):
            self.close_listener(p)  # no task left under the filter
            return
        import fcntl
        n = self.s["notify"]
        buf = bytearray(80)  # struct seccomp_notif
        try:
            fcntl.ioctl(fd, 0xC0502100, buf, True)  # SECCOMP_IOCTL_NOTIF_RECV
        except OSError:
            return  # the caller went away (ENOENT) or EINTR
        nid, _pid, _fl, nr = struct.unpack_from("=QIIi", buf)
        if nr == n["socket"]:
            err = n["eafnosupport"]
            self.net_denied += 1
        elif nr in (n["clone"], n["fork"], n["vfork"]):
            err = n["eperm"]
            self.exec_denied += 1
        else:
            # execve, execveat: the interpreter runs already, every one is a later one
            err = n["enosys"]
            if nr in (n["execve"], n["execveat"]):
                self.exec_denied += 1
        resp = bytearray(struct.pack("=QqiI", nid, 0, -err, 0))
        try:
            fcntl.ioctl(fd, 0xC0182101, resp, True)  # SECCOMP_IOCTL_NOTIF_SEND
        except OSError:
            pass
        if self.net_denied + self.exec_denied >= n["max"]:
            self.close_listener(p)  # the kernel refuses the rest (ENOSYS)

    def close_listener(self, p):
        if self.listener >= 0:
            p.unregister(self.listener)
            os.close(self.listener)
            self.listener = -1

    def cpu_ns(self):
        if self.cpu < 0:
            return -1
        try:
            data = os.pread(self.cpu, 4096, 0)
        except OSError:
            return -1
        if self.s["cpu_version"] == 1:
            try:
                return int(data.split()[0])
            except (ValueError, IndexError):
                return -1
        for line in data.split(b"\n"):
            if line.startswith(b"usage_usec "):
                return int(line.split()[1]) * 1000
        return -1

    def shim(self, child, wake):
        s = self.s
        killed = 0
        status = None
        budget = s["cpu_budget_ns"]
        used = 0
        ncpus = max(1, s["ncpus"])
        p = select.poll()
        p.register(self.fkill, select.POLLIN)
        p.register(wake, select.POLLIN)
        if self.lsock >= 0:
            p.register(self.lsock, select.POLLIN)
        while status is None:
            tmo = None
            if budget >= 0:
                w = (budget - used) // ncpus
                w = min(max(w, 200000), 20000000)
                tmo = w / 1e6
            try:
                ev = p.poll(tmo)
            except InterruptedError:
                ev = []
            if any(fd == self.fkill for fd, _ in ev):
                killed = 1
                break
            for fd, rev in ev:
                if fd == self.lsock or fd == self.listener:
                    self.notify_event(p, fd, rev)
            if any(fd == wake for fd, _ in ev):
                try:
                    while os.read(wake, 256):
                        pass
                except OSError:
                    pass
            while True:
                try:
                    pid, wst = os.waitpid(-1, os.WNOHANG | WALL)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid == child:
                    status = wst
            if status is None and budget >= 0:
                used = self.cpu_ns()
                if used >= budget:
                    break
        while True:  # kill and reap everything in the namespace (all but us)
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            try:
                pid, wst = os.waitpid(-1, WALL)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if pid == child and status is None:
                status = wst
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_us = int(ru.ru_utime * 1e6) + int(ru.ru_stime * 1e6)
        rep = struct.pack("=iiqqiII", status or 0, killed, cpu_us, ru.ru_maxrss, 0,
                          self.net_denied, self.exec_denied)
        rep += b"\0" * (s["report_size"] - len(rep))
        try:
            os.write(self.frep, rep)
        except OSError:
            pass
        if self.watch >= 0:
            os.close(self.watch)  # the run is over (template_relay.c)
        os._exit(0)

    # ---- C: the program child, up to the user's code ----
    def program(self):
        s, st = self.s, self.st
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in self.procs:
            try:
                if os.write(fd, b"0") != 1:
                    raise _Fail(st["cgroup"], 5)
            except OSError as e:
                raise _Fail(st["cgroup"], e.errno)
        if _libc.unshare(CLONE_NEWCGROUP) < 0 and ctypes.get_errno() != 22:
            raise _Fail(st["cgroupns"], ctypes.get_errno())
        for prog in _PARAMS["guards"]:
            if self.csock >= 0:
                self.guard_listener(prog, st["seccomp_guard"])
            else:
                self.seccomp(prog, st["seccomp_guard"])
        # stdio: everything above 10 first, then 0..2; nothing else survives but the
        # error pipe (closed right before the code runs)
        try:
            ce = fcntl_dupfd(self.fce)
            src = [fcntl_dupfd(f) for f in (self.fin, self.fout, self.ferr, self.extra)
                   if f >= 0]
            for i, f in enumerate(src):
                os.dup2(f, i, inheritable=True)
            os.closerange(len(src), ce)
            os.closerange(ce + 1, 1 << 20)
            os.set_inheritable(ce, False)
            self.fce = ce
        except OSError as e:
            raise _Fail(st["stdio"], e.errno)
        try:
            os.chdir(s["workdir"])
        except OSError as e:
            raise _Fail(st["chdir"], e.errno)
        _chk(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), st["no_new_privs"])
        self.landlock()
        self.identity()
        for res, soft, hard, step in s["rlimits"]:
            try:
                resource.setrlimit(res, (soft, hard))
            except (OSError, ValueError) as e:
                raise _Fail(step, getattr(e, "errno", None) or 22)
        self.seccomp(_PARAMS["filter"], st["seccomp"])

    def guard_listener(self, prog, step):
        """The guard with a new listener, sent to the run's init (B), which answers and
        counts what the policy denies (execonce.c's rexec_install)."""
        lfd = _chk(_libc.syscall(ctypes.c_long(self.s["nr_seccomp"]), ctypes.c_long(1),
                                ctypes.c_long(8), ctypes.byref(prog[0])), step)
        try:
            sock = socket.socket(fileno=self.csock)
            try:
                sock.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                       struct.pack("=i", lfd))])
            finally:
                sock.close()
        except OSError as e:
            raise _Fail(step, e.errno or 5)
        finally:
            os.close(lfd)
        self.csock = -1

    def seccomp(self, prog, step):
        _chk(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog[0]), 0, 0),
             step)

    def landlock(self):
        ll = self.s["landlock"]
        if not ll:
            return
        step = self.st["landlock"]
        attr = struct.pack("=QQQ", ll["fs"], ll["net"], ll["scoped"])[:ll["size"]]
        abuf = ctypes.create_string_buffer(attr, len(attr))
        rs = _chk(_libc.syscall(SYS_LL_CREATE, abuf, ctypes.c_size_t(len(attr)), 0), step)
        try:
            for path, acc in ll["rules"]:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    if (os.fstat(fd).st_mode & 0o170000) != 0o040000:
                        acc &= ll["file_rights"]
                    pb = ctypes.create_string_buffer(struct.pack("=Qi", acc, fd), 12)
                    _chk(_libc.syscall(SYS_LL_ADD, rs, 1, pb, 0), step)
                finally:
                    os.close(fd)
            _chk(_libc.syscall(SYS_LL_RESTRICT, rs, 0), step)
        finally:
            os.close(rs)

    def identity(self):
        s, st = self.s, self.st
        for c in range(64):
            if _libc.prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0:
                if ctypes.get_errno() == 22:
                    break  # past the kernel's last capability
                raise _Fail(st["caps"], ctypes.get_errno())
        if s["setid"]:
            try:
                os.setgroups([])
            except OSError as e:
                raise _Fail(st["setgroups"], e.errno)
            try:
                os.setresgid(s["gid"], s["gid"], s["gid"])
            except OSError as e:
                raise _Fail(st["setgid"], e.errno)
            try:
                os.setresuid(s["uid"], s["uid"], s["uid"])
            except OSError as e:
                raise _Fail(st["setuid"], e.errno)
        if _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 and \
                ctypes.get_errno() != 22:
            raise _Fail(st["caps"], ctypes.get_errno())
        hdr = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)
        data = ctypes.create_string_buffer(24)
        _chk(_libc.syscall(s["nr_capset"], hdr, data), st["caps"])
        # a cold run's execve leaves the program dumpable (setresuid cleared it here):
        # its own /proc files are its own, as after execve
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)

    def finish(self):
        """After the allowlist: the run's process state as `python -c` starts it."""
        s = self.s
        env = [bytes.fromhex(e) for e in s["env"]]
        os.environ.clear()
        for kv in env:
            k, _, v = kv.partition(b"=")
            if k:
                os.environb[k] = v
        for k, v in _COERCED:
            if k not in os.environ:
                os.environ[k] = v
        time.tzset()
        sys.argv[:] = ["-c"]
        # the code: one of govex's worker texts (the template has them), or sent
        code = _TEXTS[s["text"]] if s["text"] >= 0 else bytes.fromhex(s["code"])
        if hasattr(sys, "orig_argv"):
            sys.orig_argv[:] = [os.fsdecode(code if a is None else bytes.fromhex(a))
                                for a in s["argv"]]
        main = types.ModuleType("__main__")
        main.__dict__.clear()
        for k, v in _G0:
            main.__dict__[k] = {} if k == "__annotations__" else v
        sys.modules["__main__"] = main
        os.close(self.fce)
        return code


def fcntl_dupfd(fd):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


def _zyg_spec(fds):
    """The run's spec (a memfd, fds[0]) and its _Run; the memfd is closed."""
    spec_fd = fds[0]
    try:
        size = os.fstat(spec_fd).st_size
        spec = json.loads(os.pread(spec_fd, size, 0))
    except Exception:
        os._exit(126)
    os.close(spec_fd)
    return spec, _Run(spec, fds)


def _zyg_child(fds, failed, c, pair, wake):
    """In B, the init of a run's namespaces made before the run (_zyg_prefork), once a
    run's descriptors came: hands them to the program child C (made before the run too,
    waiting on pair), makes the run's own places, lets C go on and supervises the run
    (never returns).  failed: (step, errno) of a failure while the namespaces were made,
    reported as this run's launch failure."""
    err = None
    try:
        socket.socket(fileno=os.dup(pair)).sendmsg(
            [b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                      struct.pack("=%di" % len(fds), *fds))])
    except OSError as e:
        err = e.errno or 5
    spec, run = _zyg_spec(fds)
    if failed:
        run.fail(spec["steps"][failed[0]], failed[1])
    if err is not None:
        run.fail(spec["steps"]["fork"], err)
    try:
        run.enter()
        if spec["files"]:
            run.files_in()
        elif spec["outputs"]:
            run.output_dir()
        run.proc()
    except _Fail as f:
        run.fail(f.step, f.err)
    try:
        os.write(pair, b"G")  # C goes on: its places are there
    except OSError as e:
        run.fail(spec["steps"]["fork"], e.errno or 5)
    if run.watch >= 0:
        run.send_pidfd()
    if spec["notify"]:
        run.lsock = pair  # C's guard listener comes back on it
    else:
        os.close(pair)
    for fd in [run.fin, run.fout, run.ferr, run.fce, run.extra] + list(run.procs):
        if fd >= 0:
            os.close(fd)
    run.shim(c, wake)


def _zyg_program(pair, failed):
    """In C, the program child made before the run (PID 2 of the run's namespaces):
    waits for the run's descriptors from B, then for B's go, takes the cold program
    child's steps and returns the code to run."""
    def recv():
        while True:
            try:
                return socket.socket(fileno=os.dup(pair)).recvmsg(
                    16, socket.CMSG_SPACE(64 * 4), socket.MSG_CMSG_CLOEXEC)
            except InterruptedError:
                continue
            except OSError:
                os._exit(0)
    msg, anc, _fl, _a = recv()
    fds = []
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            n = len(data) // 4
            fds.extend(struct.unpack("=%di" % n, data[:4 * n]))
    if msg != b"F" or len(fds) < 7:
        os._exit(0)  # B ended (the template is retired) or failed
    spec, run = _zyg_spec(fds)
    if failed:
        run.fail(spec["steps"][failed[0]], failed[1])
    for fd in (run.fkill, run.frep, run.watch):
        if fd >= 0:
            os.close(fd)
    run.watch = -1
    try:
        go = os.read(pair, 1)
    except OSError:
        go = b""
    if go != b"G":
        os._exit(0)  # B reported the failure on the error pipe
    if spec["notify"]:
        run.csock = pair  # the guard's listener goes to B on it
    else:
        os.close(pair)
    try:
        run.program()
    except _Fail as f:
        run.fail(f.step, f.err)
    except Exception:
        run.fail(spec["steps"]["shim"], 5)
    return run.finish()


def _zyg_warm():
    # the standard library a snippet most often imports, and the compiler
    # The standard library a snippet most often imports.  Kept small on purpose: every
    # page the template holds is copied into each of a run's three processes' page
    # tables (fork), so a bigger template costs every run (measured: 12 MB of resident
    # template forks ~3x cheaper than 24 MB); what a run imports beyond this it imports
    # itself, from the same read-only files a cold run would.
    for m in ("re", "json", "collections", "functools", "itertools", "math", "random",
              "string", "struct", "operator", "io", "fcntl", "weakref", "warnings", "abc",
              "contextlib", "copy", "heapq", "bisect", "traceback", "linecache"):
        try:
            __import__(m)
        except Exception:
            pass
    if _PARAMS["worker"]:
        # the template of govex's worker runs (call mode, inspection, REPL runs): what
        # it imports for every run, and typing (modules' annotations).  Not asyncio
        # (only async code needs it: it would add a sixth to what every run's forks copy).
        # _sha256 (3.12: _sha2) is the worker's digest of every request's source
        # (worker.py, sha256_text): a shared object, loaded in each run otherwise
        # (measured: ~0.5 ms of a warm MCP snippet)
        for m in ("ast", "inspect", "hashlib", "types", "builtins", "typing", "_sha256",
                  "_sha2"):
            try:
                __import__(m)
            except Exception:
                pass
    compile("def f(x):\n    return [i * x for i in range(3)]\nprint(f(2))\n", "<string>", "exec")
    # Everything the template made stays out of the collector's way: a collection in a
    # run would otherwise write to every object's header and copy the template's whole
    # heap page by page (copy-on-write).  The collector stays enabled for the run's own
    # objects, as in a cold interpreter.
    import gc
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()


_PRECOMPILED = {}
_TEXTS = []


def _zyg_precompile(ctl):
    """govex's worker texts (call mode, inspection), sent once after READY: compiled here
    once; a run whose code is one of them byte for byte execs the code object."""
    msg, anc, _fl, _a = ctl.recvmsg(16, socket.CMSG_SPACE(4), socket.MSG_CMSG_CLOEXEC)
    fds = [struct.unpack("=i", d[:4])[0] for lvl, typ, d in anc
           if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS]
    if msg != b"P" or len(fds) != 1:
        os._exit(1)
    try:
        texts = json.loads(os.pread(fds[0], os.fstat(fds[0]).st_size, 0))
    finally:
        os.close(fds[0])
    for t in texts:
        _TEXTS.append(t.encode())
        if _PARAMS["worker"]:  # (only the worker's template runs them)
            _PRECOMPILED[_TEXTS[-1]] = compile(t, "<string>", "exec", dont_inherit=True)


# Run inits made ahead: each waits for a run's descriptors in its own namespaces, so a
# run starts without the template's forks and the namespaces' creation on its path.
_SPARES = 2


def _zyg_recv_run(ctl, pair):
    """One run's message from the host (a relay's), or None at the end (the host closed
    the control socket: the template is retired).  Waiting, the init watches its program
    child (pair): if that is gone, so is the init (its spare is replaced)."""
    p = select.poll()
    p.register(ctl.fileno(), select.POLLIN)
    if pair >= 0:
        p.register(pair, select.POLLIN)
    while True:
        ev = dict(p.poll())
        if pair >= 0 and ev.get(pair):
            os._exit(0)  # the program child is gone (nothing of a run was here)
        if not ev.get(ctl.fileno()):
            continue
        try:
            msg, anc, _fl, _a = ctl.recvmsg(16, socket.CMSG_SPACE(64 * 4),
                                            socket.MSG_CMSG_CLOEXEC | socket.MSG_DONTWAIT)
            break
        except (BlockingIOError, InterruptedError):
            continue  # another init took it
    if not msg:
        return None
    fds = []
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            n = len(data) // 4
            fds.extend(struct.unpack("=%di" % n, data[:4 * n]))
    if msg != b"R" or len(fds) < 7:
        for fd in fds:
            os.close(fd)
        return []
    return fds


def _zyg_prefork(ctl, taken):
    """In A, a fork of the template: the namespaces of a future run (mount, PID, IPC,
    UTS[, network]); forks B, their init, and exits.  B forks C, the program child, which
    waits for B; B waits for one run's descriptors (several B's wait on the control
    socket: the kernel gives each message to one), tells the template it was taken and
    goes on as the run's init (_zyg_child).  Nothing of a run is in A, or in B or C
    before the run's message.  Returns only in C, with the code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _setname(b"govex-warm")
    failed = None
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if _PARAMS["netns"]:
        flags |= CLONE_NEWNET
    if _libc.unshare(flags) < 0:
        failed = ("clone", ctypes.get_errno() or 1)
    elif _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) < 0:
        failed = ("mount_private", ctypes.get_errno() or 1)
    c, pair, r, w = -1, -1, -1, -1
    if not failed:
        try:
            if os.fork():
                os._exit(0)
        except OSError as e:
            failed = ("fork", e.errno)
        # B: PID 1 of the run's PID namespace (named like a cold run's shim: not python)
        _setname(b"govex-init")
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if not failed:
        try:
            pb, pc = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pair = pb.detach()
            r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            signal.set_wakeup_fd(w)
            signal.signal(signal.SIGCHLD, lambda *a: None)
            c = os.fork()
        except OSError as e:
            failed = ("fork", e.errno or 5)
            c = -1
        if c == 0:
            # C, the program child (PID 2): nothing of B's but its end of the pair
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _setname(_COMM)  # the program: the interpreter's name
            for fd in (pair, r, w, taken):
                os.close(fd)
            ctl.close()
            # its own session (setsid, the cold program child's step after the cgroups),
            # made here before the run: nothing of a run depends on it, and setsid takes
            # the kernel's global task list lock (measured: ~0.4 ms of a warm run's path
            # on this busy host)
            try:
                os.setsid()
                failed = None
            except OSError as e:
                failed = ("setsid", e.errno or 1)
            return _zyg_program(pc.detach(), failed)
        pc.close()
    # (a failure: this process takes the next run and reports it as that run's)
    while True:
        fds = _zyg_recv_run(ctl, pair)
        if fds != []:
            break
    try:
        os.write(taken, b"E" if fds is None else b"T")
    except OSError:
        pass
    os.close(taken)
    ctl.close()
    if fds is None:
        os._exit(0)
    if failed:
        _spec, run = _zyg_spec(fds)
        run.fail(_spec["steps"][failed[0]], failed[1])
    _zyg_child(fds, None, c, pair, r)


def _zyg_serve():
    ctl = socket.socket(fileno=3)
    ctl.sendall(b"READY")
    _zyg_precompile(ctl)
    signal.signal(signal.SIGCHLD, _zyg_reap)
    # one pipe per spare run init: "T" when it took a run, "E" when the host closed the
    # control socket (retired), end of file when it died waiting; either way replaced
    spares = {}
    p = select.poll()
    while True:
        while len(spares) < _SPARES:
            r, w = os.pipe2(os.O_CLOEXEC)
            try:
                pid = os.fork()
            except OSError:
                os.close(r)
                os.close(w)
                time.sleep(0.01)  # (out of processes for now: try again)
                continue
            if pid == 0:
                for fd in list(spares) + [r]:
                    os.close(fd)
                return _zyg_prefork(ctl, w)
            os.close(w)
            spares[r] = True
            p.register(r, select.POLLIN)
        for fd, _ev in p.poll():
            try:
                b = os.read(fd, 1)
            except OSError:
                b = b""
            if b == b"E":
                os._exit(0)  # retired: the host closed the control socket
            p.unregister(fd)
            os.close(fd)
            del spares[fd]


def _zyg_reap(*_a):
    while True:
        try:
            pid, _st = os.waitpid(-1, os.WNOHANG | WALL)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _zyg_exit(status, ki):
    """What Py_FinalizeEx does that a program can observe -- threads joined, atexit
    handlers, stdout and stderr flushed (120 when that fails) -- then _exit: tearing
    down the template's whole heap would copy it page by page (copy-on-write) for
    nothing.  An unhandled KeyboardInterrupt ends the process by SIGINT, like python."""
    th = sys.modules.get("threading")
    if th is not None:
        try:
            th._shutdown()
        except BaseException:
            pass
    import atexit
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    # as finalization: garbage cycles collected, then __main__ taken apart (its
    # globals' __del__ methods run and print as in a cold interpreter), collected again
    main = sys.modules.get("__main__")
    try:
        import gc
        gc.collect()
        if main is not None:
            main.__dict__.clear()
        del main
        gc.collect()
    except BaseException:
        pass
    for name in ("stdout", "stderr"):
        f = getattr(sys, name, None)
        try:
            if f is not None and not f.closed:
                f.flush()
        except Exception as e:
            status = 120
            if name == "stdout":
                try:
                    sys.stderr.write("Exception ignored in: %r\n%s: %s\n" %
                                     (f, type(e).__name__, e))
                    sys.stderr.flush()
                except Exception:
                    pass
    if ki:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status & 0xff)


def _zyg_run(code):
    """Runs the code as `python -c` does (filename "<string>", a str source: no coding
    cookie), with its exit status; the traceback shows the user's frames only."""
    status, ki = 0, False
    try:
        co = _PRECOMPILED.get(code)
        if co is None:
            co = compile(code.decode("utf-8", "surrogateescape"), "<string>", "exec",
                         dont_inherit=True)
        exec(co, sys.modules["__main__"].__dict__)
    except SystemExit as e:
        c = e.code
        if c is None:
            status = 0
        elif isinstance(c, int):
            status = c
        else:
            try:
                sys.stderr.write("%s\n" % (c,))
            except Exception:
                pass
            status = 1
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        e = e.with_traceback(tb)
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        if hasattr(sys, "last_exc"):
            sys.last_exc = e
        try:
            sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        status, ki = 1, isinstance(e, KeyboardInterrupt)
        del e, tb
    _zyg_exit(status, ki)


def _zyg_params(arg):
    """The template's parameters (argv[1], from template.c): the locale variables it was
    started with, and the runtime's seccomp programs (compiled once per runtime by
    libseccomp in the parent; not secret), made ready to load here once."""
    p = json.loads(arg)

    def prog(h):
        buf = ctypes.create_string_buffer(bytes.fromhex(h))
        return (_Prog(len(h) // 16, ctypes.cast(buf, ctypes.c_void_p)), buf)

    return {"keys": p["keys"], "worker": p["worker"], "filter": prog(p["filter"]),
            "guards": [prog(g) for g in p["guards"]], "netns": p["netns"]}


_PARAMS = _zyg_params(sys.argv[1])
_COERCED = [(k, v) for k, v in os.environ.items() if k.startswith("LC_") and k not in
            _PARAMS["keys"]]
_zyg_warm()
_zyg_run(_zyg_serve())
