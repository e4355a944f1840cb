# govex warm template ("zygote"): DESIGN.md "Warm runs", src/lib/backend/restricted/template.c.
#
# Started by the template shim with `python -I [-S] -c THIS` inside the sandbox's outer
# layers (user namespace when not root, mount namespace with the read-only root, network
# namespace under network: deny, a PID namespace of its own).  It imports and warms the
# standard library, says READY on fd 3, gets govex's worker texts and the template's C
# side (zyg.c, a shared object in a memfd) once, and then hands itself to that C side's
# loop (govex_zyg_serve), which makes the run processes ahead of the runs and never
# returns here but in a run's program: its layers entered (namespaces, its own places,
# cgroups, seccomp, Landlock, ids, rlimits), for this file to give it the run's
# environment, argv and a fresh __main__ and run the code as `python -c` does.  The
# template never receives or reads a run's data (a run's spec is in a memfd only that
# run's processes read), so the template's memory never holds anything of a run, and no
# later run can find an earlier one's code, environment or input in what it inherits.
#
# What every run of one template shares by construction (fork): the address-space layout
# of everything the template mapped (interpreter, libraries, preloaded modules) and the
# str/bytes hash seed.  The template is recycled after a bounded number of runs
# (template.c), which re-randomizes both.  The `random` module reseeds itself in every
# forked child (os.register_at_fork, run by PyOS_AfterFork_Child as for os.fork), so no
# two runs see the same random stream.  What a warm run can tell from a cold one: the
# modules preloaded here are in sys.modules, and the two frames of this file's own
# (<module>, _zyg_run) are below the code's (traceback.print_stack, inspect.stack show
# them; the recursion depth the code can reach is that much smaller); a traceback of the
# code's own exception shows its frames only, as a cold run's.
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

# 3.13+ keeps `python -c`'s source for tracebacks (linecache.cache["<string>"]): this
# file's, in the template; a run's is the run's code (_zyg_lines), as a cold run's is
_LC = sys.modules.get("linecache")
_LC = _LC if _LC is not None and "<string>" in getattr(_LC, "cache", {}) else None

with open("/proc/self/comm", "rb") as _f:
    _COMM = _f.read().rstrip(b"\n")


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _Params(ctypes.Structure):  # zyg.c, struct zyg_params
    _fields_ = [("ctl", ctypes.c_int), ("spares", ctypes.c_int), ("netns", ctypes.c_int),
                ("n_guards", ctypes.c_int), ("guards", ctypes.POINTER(ctypes.POINTER(_Prog))),
                ("filter", ctypes.POINTER(_Prog)), ("before_fork", ctypes.c_void_p),
                ("after_fork_parent", ctypes.c_void_p), ("after_fork_child", ctypes.c_void_p),
                ("comm", ctypes.c_char_p)]


class _Out(ctypes.Structure):  # zyg.c, struct zyg_out
    _fields_ = [("spec", ctypes.c_void_p), ("size", ctypes.c_uint32), ("first", ctypes.c_uint32),
                ("fce", ctypes.c_int), ("text", ctypes.c_int), ("prewarm", ctypes.c_int)]


# zyg_spec.h's record types the program reads here
_ZR_ENV, _ZR_ARGV, _ZR_ARGV_CODE, _ZR_CODE = 8, 9, 10, 11
# Run inits made ahead: each waits for a run's descriptors in its own namespaces, so a
# run starts without the template's forks and the namespaces' creation on its path.
_SPARES = 2


def _zyg_finish(out):
    """In the run's program, its layers entered (zyg.c): the run's process state as
    `python -c` starts it; returns the code."""
    spec = ctypes.string_at(out.spec, out.size)
    env, argv, code = [], [], None
    off = out.first
    while off + 8 <= len(spec):
        typ, n = struct.unpack_from("=II", spec, off)
        data = spec[off + 8:off + 8 + n]
        off = (off + 8 + n + 7) & ~7
        if typ == _ZR_ENV:
            env.append(data)
        elif typ == _ZR_ARGV:
            argv.append(data)
        elif typ == _ZR_ARGV_CODE:
            argv.append(None)
        elif typ == _ZR_CODE:
            code = data
    pairs = []
    for kv in env:
        k, _, v = kv.partition(b"=")
        if k:
            pairs.append((k, v))
    _zyg_environ(pairs)
    for k, v in _COERCED:
        if k not in os.environ:
            os.environ[k] = v
    time.tzset()
    sys.argv[:] = ["-c"]
    # the code: one of govex's worker texts (the template has them), or sent
    if out.text >= 0:
        code = _TEXTS[out.text]
    if code is None:
        os._exit(126)
    if hasattr(sys, "orig_argv"):
        # (a worker text's decoded once, in the template: ~0.1 ms and a dozen pages of
        # every run otherwise)
        text = _TEXTS_FS[out.text] if out.text >= 0 else None
        sys.orig_argv[:] = [os.fsdecode(a) if a is not None else
                            text if text is not None else os.fsdecode(code) for a in argv]
    os.close(out.fce)
    if out.text >= 0 and out.text in _PREMAIN:
        # govex's worker: its __main__ with its definitions made in the template
        sys.modules["__main__"] = _PREMAIN[out.text]
        return code
    sys.modules["__main__"] = _fresh_main()
    return code


def _zyg_lines(src):
    """linecache's entry of `python -c SRC` (3.13+, linecache._register_code)."""
    return (len(src), None, [line + "\n" for line in src.splitlines()], "<string>")


def _zyg_environ(pairs):
    """os.environ (and os.environb) and the C environment made PAIRS' (name, value:
    bytes), in order.  CPython's os._Environ keeps the encoded pairs in one dict both
    share: set there directly (measured: ~0.07 ms of every run through the mapping's
    generic clear and set)."""
    data = getattr(os.environ, "_data", None)
    if type(data) is not dict or getattr(os.environb, "_data", None) is not data:
        os.environ.clear()
        for k, v in pairs:
            os.environb[k] = v
        return
    for k in data:
        os.unsetenv(k)
    data.clear()
    for k, v in pairs:
        os.putenv(k, v)
        data[k] = v


def _fresh_main():
    """A fresh `python -c` __main__."""
    main = types.ModuleType("__main__")
    main.__dict__.clear()
    for k, v in _G0:
        main.__dict__[k] = {} if k == "__annotations__" else v
    return main


def _zyg_warm():
    # the standard library a snippet most often imports, and the compiler
    # The standard library a snippet most often imports.  Kept small on purpose: every
    # page the template holds is copied into each of a run's two processes' page
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
        # (govex_worker/frames.py, sha256_text): a shared object, loaded in each run otherwise
        # (measured: ~0.5 ms of a warm MCP snippet)
        for m in ("ast", "inspect", "types", "builtins", "typing", "_sha256",
                  "_sha2"):
            try:
                __import__(m)
            except Exception:
                pass
    _zyg_preload()
    # what every run's end imports (_zyg_exit): atexit is built in but not imported at
    # start (measured: ~0.2 ms and 37 copy-on-write faults of every run otherwise)
    import atexit
    atexit._ncallbacks()
    compile("def f(x):\n    return [i * x for i in range(3)]\nprint(f(2))\n", "<string>", "exec")
    _zyg_settle()


def _zyg_preload():
    """The policy's python.preload: modules of the environment (planning checked that
    each is found in the interpreter's standard library or site directories; -I keeps
    the cwd and PYTHONPATH off sys.path), imported once here, so that a run's import
    of them finds them in sys.modules.  Each run starts from this state (fork): what
    one run changes in a module never reaches the next.  A module whose import fails
    here is left out (the run imports it itself, and sees the error as a cold run
    would).  matplotlib is given the Agg backend first (a template has no display)."""
    names = _PARAMS.get("preload") or []
    if not names:
        return
    if any(n == "matplotlib" or n.startswith("matplotlib.") for n in names):
        os.environ.setdefault("MPLBACKEND", "Agg")
    for m in names:
        try:
            __import__(m)
        except BaseException:
            for k in [k for k in sys.modules if k == m or k.startswith(m + ".")]:
                sys.modules.pop(k, None)


def _zyg_settle():
    """Everything the template made stays out of the collector's way: a collection in a
    run would otherwise write to every object's header and copy the template's whole
    heap page by page (copy-on-write).  The collector stays enabled for the run's own
    objects, as in a cold interpreter.  Then the C heap's free pages go back to the
    kernel: every page the template holds is copied into each of a run's two processes'
    page tables and unmapped at their exits (measured: compiling and running the worker
    texts leave 5 MB free in the heap, a third of the worker template)."""
    import gc
    gc.collect()
    try:
        ctypes.pythonapi.malloc_trim(0)  # (the process's symbols: libc's)
    except Exception:
        pass  # (not glibc: the pages stay)
    gc.collect()  # (what the call above made)
    if hasattr(gc, "freeze"):
        gc.freeze()


_PRECOMPILED = {}
_TEXTS = []
_TEXTS_FS = []  # the texts as os.fsdecode gives them (a run's sys.orig_argv)
_PREMAIN = {}  # text index: that worker text's __main__, its body run (a worker template)
_TEXTS_LC = {}  # text: its linecache entry (3.13+: _LC)


def _zyg_precompile(ctl):
    """govex's worker texts (call mode, inspection), sent once after READY: compiled here
    once; a run whose code is one of them byte for byte execs the code object.  With
    them, the template's C side (zyg.c), loaded from its memfd."""
    msg, anc, _fl, _a = ctl.recvmsg(16, socket.CMSG_SPACE(8), socket.MSG_CMSG_CLOEXEC)
    fds = []
    for lvl, typ, d in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.extend(struct.unpack("=%di" % (len(d) // 4), d[:len(d) // 4 * 4]))
    if msg != b"P" or len(fds) != 2:
        os._exit(1)
    try:
        texts = json.loads(os.pread(fds[0], os.fstat(fds[0]).st_size, 0))
        # PyDLL: the GIL stays held in its calls (the interpreter is still while the C
        # side forks it)
        zyg = ctypes.PyDLL("/proc/self/fd/%d" % fds[1])
    finally:
        os.close(fds[0])
        os.close(fds[1])
    for t in texts:
        _TEXTS.append(t.encode())
        _TEXTS_FS.append(os.fsdecode(_TEXTS[-1]))
        if _LC is not None:
            _TEXTS_LC[_TEXTS[-1]] = _zyg_lines(t)
        if _PARAMS["worker"]:  # (only the worker's template runs them)
            _PRECOMPILED[_TEXTS[-1]] = compile(t, "<string>", "exec", dont_inherit=True)
    if _PARAMS["worker"]:
        # govex's worker texts define their functions and constants and end calling
        # main() when they are __main__: that body (no user code, nothing of a run)
        # run here once, in each text's own __main__, so that a run only calls main()
        # (measured: ~0.3 ms of CPU and its copy-on-write faults per run otherwise)
        for i, t in enumerate(_TEXTS):
            m = _fresh_main()
            m.__dict__["__name__"] = "__govex_template__"
            try:
                exec(_PRECOMPILED[t], m.__dict__)
            except BaseException:
                continue  # (the run executes the text itself then)
            m.__dict__["__name__"] = "__main__"
            if callable(m.__dict__.get("main")):
                _PREMAIN[i] = m
        _zyg_settle()
    return zyg


def _zyg_prewarm(zyg, idle):
    """In a spare before its request, once it waited IDLE ms for it (the spare's spec,
    template_spare.c: PREWARM_IDLE_MS; -1: at once, in full; -2: never): the
    interpreter's own paths a run's start and govex's worker take, with constant inputs
    of govex's (nothing of any request, nothing a run can tell apart from a fresh start),
    so that the copy-on-write faults of their first writes are taken here, ahead of the
    request, not on its path (measured: ~1 ms of an isolated warm MCP call's latency).
    A step starts only while the request is not there."""
    wait = zyg.govex_zyg_wait
    wait.argtypes = [ctypes.c_int]
    wait.restype = ctypes.c_int
    if idle == -2 or (idle >= 0 and wait(idle)):
        return
    steps = [_zyg_prewarm_start]
    # govex's worker's own paths, on its constant inputs (worker.py, _GOVEX_PREWARM:
    # govex_worker/prewarm.py): the first text's, the one of call mode and snippets (the
    # inspection text's runs are rare: inspections are cached)
    for i in sorted(_PREMAIN):
        f = _PREMAIN[i].__dict__.get("_GOVEX_PREWARM")
        if f:
            steps.extend(f)
            break
    for f in steps:
        if idle >= 0 and wait(0):
            return
        try:
            f()
        except BaseException:
            pass


def _zyg_prewarm_start():
    _zyg_environ(list(os.environb.items()))
    struct.unpack_from("=II", bytes(16), 0)
    time.tzset()
    types.ModuleType("__main__")


def _zyg_serve():
    """The template: READY, the texts and the C side, then the C side's loop.  Returns
    only in a run's program, with the code."""
    ctl = socket.socket(fileno=3)
    ctl.sendall(b"READY")
    zyg = _zyg_precompile(ctl)
    api = ctypes.pythonapi
    # Python's fork protocol around each program's fork (zyg.c, init_clone), as os.fork
    # keeps it; 3.13's PyOS_AfterFork_Child releases the import lock PyOS_BeforeFork
    # took, and aborts the program without it (3.6 has PyOS_AfterFork only)
    after = getattr(api, "PyOS_AfterFork_Child", None) or api.PyOS_AfterFork
    before = getattr(api, "PyOS_BeforeFork", None)
    parent = getattr(api, "PyOS_AfterFork_Parent", None)

    def addr(f):
        return ctypes.cast(f, ctypes.c_void_p).value if f is not None else None

    guards = _PARAMS["guards"]
    garr = (ctypes.POINTER(_Prog) * max(1, len(guards)))(
        *[ctypes.pointer(g[0]) for g in guards])
    p = _Params(ctl=3, spares=_SPARES, netns=1 if _PARAMS["netns"] else 0,
                n_guards=len(guards), guards=garr,
                filter=ctypes.pointer(_PARAMS["filter"][0]),
                before_fork=addr(before), after_fork_parent=addr(parent),
                after_fork_child=addr(after), comm=_COMM)
    ctl.detach()  # (a run's fd 3 is its own: nothing here may close it later)
    out = _Out()
    zyg.govex_zyg_serve.argtypes = [ctypes.POINTER(_Params), ctypes.POINTER(_Out)]
    zyg.govex_zyg_serve.restype = ctypes.c_int
    r = zyg.govex_zyg_serve(ctypes.byref(p), ctypes.byref(out))
    if r != 0:
        os._exit(1)
    if not out.spec:
        # a spare (every step taken, the request not there yet): what a run's start
        # writes, written now, then the go
        _zyg_prewarm(zyg, out.prewarm)
        zyg.govex_zyg_go.argtypes = [ctypes.POINTER(_Out)]
        zyg.govex_zyg_go.restype = ctypes.c_int
        zyg.govex_zyg_go(ctypes.byref(out))
    return _zyg_finish(out)


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
        if _LC is not None:
            lc = _TEXTS_LC.get(code)
            _LC.cache["<string>"] = lc if lc is not None else _zyg_lines(
                code.decode("utf-8", "surrogateescape"))
        main = sys.modules["__main__"]
        if any(main is m for m in _PREMAIN.values()):
            main.main()  # (what the text's last statement does)
        else:
            co = _PRECOMPILED.get(code)
            if co is None:
                co = compile(code.decode("utf-8", "surrogateescape"), "<string>", "exec",
                             dont_inherit=True)
            exec(co, main.__dict__)
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
            "guards": [prog(g) for g in p["guards"]], "netns": p["netns"],
            "preload": p.get("preload") or []}


_PARAMS = _zyg_params(sys.argv[1])
_COERCED = [(k, v) for k, v in os.environ.items() if k.startswith("LC_") and k not in
            _PARAMS["keys"]]
_zyg_warm()
_zyg_run(_zyg_serve())
