# SPDX-License-Identifier: MIT
# govex call-mode worker, inspection part: the static reading of a module (ast) and the
# effects analysis.  Only an inspection needs it, so the C side prepends it to
# src/worker/worker.py for `inspect` requests and a call's worker does not compile it
# (about 10 ms of a worker's start).  It defines functions only; what it uses of
# worker.py (Failure, _trace, INSPECTION_VERSION) is looked up when they run.

# ---------------------------------------------------------------------------------------
# inspection


def inspect_source(source, digest, module, filename):
    import ast
    try:
        tree = ast.parse(source, filename, "exec")
    except SyntaxError as e:
        line = e.lineno if type(e.lineno) is int else None
        raise Failure("invalid_input", "syntax_error", e,
                      message="the source is not valid python (line %d)" % line
                      if line else None)
    except ValueError as e:  # NUL bytes before 3.12
        raise Failure("invalid_input", "syntax_error", e)
    except (RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "source_too_complex", e)
    # compiled too, as the call's worker will (nothing runs): errors only the compiler
    # finds ('return' outside a function, a misplaced nonlocal) are found here, by govex,
    # not by the call's worker, whose invalid_input the parent does not take from a frame
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        line = e.lineno if type(e.lineno) is int else None
        raise Failure("invalid_input", "syntax_error", e,
                      message="the source is not valid python (line %d)" % line
                      if line else None)
    except (ValueError, TypeError) as e:
        raise Failure("invalid_input", "syntax_error", e)
    except (RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "source_too_complex", e)
    seg = _Segments(source)
    try:
        effects = Effects(ast, tree).function_effects()
    except Exception as e:  # too deep, or a gap in the analysis: every effect unknown
        _trace(e)
        effects = None
    module_sites = _module_binding_counts(ast, tree)
    functions = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(_describe(ast, node, seg, effects, module_sites))
    return {"version": INSPECTION_VERSION, "module": module, "source_digest": digest,
            "functions": functions}


class _Segments:
    """ast.get_source_segment without re-splitting the source for every node."""

    def __init__(self, source):
        import re
        parts = re.split(r"(\r\n|\r|\n)", source)
        self.lines = [(parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")).encode("utf-8")
                      for i in range(0, len(parts), 2)]

    def get(self, node):
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1
            c0, c1 = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if None in (l0, l1, c0, c1) or l0 < 0 or l1 >= len(self.lines) or l1 < l0:
            return None
        if l0 == l1:
            b = self.lines[l0][c0:c1]
        else:
            b = self.lines[l0][c0:] + b"".join(self.lines[l0 + 1:l1]) + self.lines[l1][:c1]
        return b.decode("utf-8", "replace")


def _module_binding_counts(ast, tree):
    """How many binding sites each module-level name has (anything rebinding a def makes
    it ineligible: the inspected def may not be the object a call would find)."""
    counts = {}
    star = [False]

    def bind(name):
        counts[name] = counts.get(name, 0) + 1

    def targets(t):
        if isinstance(t, ast.Name):
            bind(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def walk(stmts):
        for s in stmts:
            _bind_stmt(ast, s, bind, targets, star, walk)

    walk(tree.body)
    # `global x` in any function that assigns x
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for sub in _own_nodes(ast, node):
                if isinstance(sub, ast.Global):
                    for n in sub.names:
                        bind(n)
    # walrus at module level (outside functions) binds module names
    for sub in _own_nodes(ast, tree):
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            bind(sub.target.id)
    return counts, star[0]


def _bind_stmt(ast, s, bind, targets, star, walk):
    """Calls bind/targets for the names statement s binds in its own scope, and walk on
    the nested statement lists of the same scope."""
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        bind(s.name)
    elif isinstance(s, ast.Assign):
        for t in s.targets:
            targets(t)
    elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        if not isinstance(s, ast.AnnAssign) or s.value is not None:
            targets(s.target)
    elif isinstance(s, (ast.For, ast.AsyncFor)):
        targets(s.target)
        walk(s.body)
        walk(s.orelse)
    elif isinstance(s, (ast.With, ast.AsyncWith)):
        for it in s.items:
            if it.optional_vars is not None:
                targets(it.optional_vars)
        walk(s.body)
    elif isinstance(s, (ast.Import, ast.ImportFrom)):
        for a in s.names:
            if a.name == "*":
                star[0] = True
            elif a.asname:
                bind(a.asname)
            else:
                bind(a.name.split(".")[0])
    elif isinstance(s, ast.Delete):
        for t in s.targets:
            targets(t)
    elif isinstance(s, (ast.If, ast.While)):
        walk(s.body)
        walk(s.orelse)
    elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
        walk(s.body)
        for h in s.handlers:
            if h.name:
                bind(h.name)
            walk(h.body)
        walk(s.orelse)
        walk(s.finalbody)
    elif type(s).__name__ == "Match":
        for c in s.cases:
            for sub in ast.walk(c.pattern):
                n = getattr(sub, "name", None) or getattr(sub, "rest", None)
                if isinstance(n, str):
                    bind(n)
            walk(c.body)
    elif type(s).__name__ == "TypeAlias":
        targets(s.name)


def _own_nodes(ast, scope):
    """Every node of a scope's own code: not inside nested functions, lambdas or classes
    (their decorators, defaults and bases are the enclosing scope's)."""
    out = []
    if isinstance(scope, ast.Lambda):
        stack = [scope.body]
    elif isinstance(scope, ast.Module):
        stack = list(scope.body)
    else:
        stack = list(scope.body)
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(n.decorator_list)
            stack.extend(d for d in n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.ClassDef):
            stack.extend(n.decorator_list)
            stack.extend(n.bases)
            stack.extend(k.value for k in n.keywords)
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


def _describe(ast, node, seg, effects, module_sites):
    a = node.args
    params = []
    positional = list(a.posonlyargs) + list(a.args)
    first_default = len(positional) - len(a.defaults)

    def ann(x):
        return seg.get(x) if x is not None else None

    for i, p in enumerate(positional):
        params.append({"name": p.arg,
                       "kind": "positional_only" if i < len(a.posonlyargs)
                       else "positional_or_keyword",
                       "has_default": i >= first_default, "annotation": ann(p.annotation)})
    if a.vararg is not None:
        params.append({"name": a.vararg.arg, "kind": "var_positional", "has_default": False,
                       "annotation": ann(a.vararg.annotation)})
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": p.arg, "kind": "keyword_only", "has_default": d is not None,
                       "annotation": ann(p.annotation)})
    if a.kwarg is not None:
        params.append({"name": a.kwarg.arg, "kind": "var_keyword", "has_default": False,
                       "annotation": ann(a.kwarg.annotation)})
    is_async = isinstance(node, ast.AsyncFunctionDef)
    reason = None
    if _yields(ast, node):
        reason = "async_generator" if is_async else "generator"
    elif a.vararg is not None:
        reason = "var_positional"
    elif a.kwarg is not None:
        reason = "var_keyword"
    else:
        counts, star = module_sites
        if counts.get(node.name, 0) != 1 or star:
            reason = "redefined"
    doc = None
    try:
        doc = ast.get_docstring(node, clean=True)
    except Exception:
        doc = None
    if doc is not None and type(doc) is not str:
        doc = None
    if effects is None or node not in effects:
        eff = {k: "unknown" for k in EFFECT_NAMES}
    else:
        eff = effects[node]
    return {"name": node.name, "async": is_async, "lineno": node.lineno,
            "parameters": params, "returns": ann(node.returns), "docstring": doc,
            "eligible": reason is None, "reason": reason, "effects": eff}


def _yields(ast, node):
    for n in _own_nodes(ast, node):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
    return False


# ---------------------------------------------------------------------------------------
# effects
#
# Each effect is absent (0) < unknown (1) < present (2); vectors join element-wise with
# max.  The analysis is flow-insensitive and conservative: a call it cannot resolve to a
# builtin known to be pure, a module function in the table below, a module-local function
# or a method of a value whose type it knows makes every effect unknown.  Module-local
# functions are followed transitively (a fixpoint over the call graph, cycles included);
# the module's own top-level code (what loading it runs) is part of every function's
# effects.  Implicit dunder dispatch (operators, str() of objects, properties) is not
# modelled.

EFFECT_NAMES = ("network", "filesystem_read", "filesystem_write", "subprocess",
                "environment", "dynamic_code")
_LETTERS = "NRWSVD"
_WORDS = ("absent", "unknown", "present")
PURE = (0, 0, 0, 0, 0, 0)
ALL_UNKNOWN = (1, 1, 1, 1, 1, 1)


def _ev(spec):
    if spec == "*":
        return ALL_UNKNOWN
    return tuple(2 if L in spec else 1 if L.lower() in spec else 0 for L in _LETTERS)


def _join(a, b):
    return tuple(x if x > y else y for x, y in zip(a, b))


# Effects of module attributes (called or referenced), by longest dotted prefix.
# Spec letters: N network, R filesystem_read, W filesystem_write, S subprocess,
# V environment, D dynamic_code; upper case present, lower case unknown; "-" nothing;
# "*" everything unknown.  A name under no entry is unknown when called.
_TABLE_TEXT = """
- math cmath json.loads json.dumps json.JSONDecodeError json.JSONEncoder json.JSONDecoder
- re string textwrap unicodedata itertools functools operator collections collections.abc
- heapq bisect array copy decimal fractions numbers statistics random secrets hashlib hmac
- base64 binascii struct zlib difflib enum dataclasses typing typing_extensions types abc
- contextlib datetime time calendar zoneinfo.ZoneInfo ipaddress html html.escape html.unescape
- pprint reprlib keyword warnings fnmatch shlex urllib.parse urllib.error email.utils
- uuid.UUID uuid.uuid3 uuid.uuid4 uuid.uuid5 uuid.NAMESPACE_DNS uuid.NAMESPACE_URL
- gzip.compress gzip.decompress bz2.compress bz2.decompress lzma.compress lzma.decompress
- io.StringIO io.BytesIO logging.getLogger threading.Lock threading.RLock threading.Event
- select selectors signal gc weakref queue graphlib colorsys textwrap codecs.encode
- codecs.decode sys os.fspath os.fsencode os.fsdecode os.cpu_count os.getpid os.getppid
- os.getuid os.geteuid os.getgid os.getegid os.urandom os.strerror os.times os.sep
- os.linesep os.name os.pathsep os.curdir os.pardir os.extsep os.altsep os.devnull os.pipe
- os.close os.error os.PathLike os.path os.getloadavg pickle.dumps pickle.PicklingError
- asyncio.sleep asyncio.gather asyncio.wait asyncio.wait_for asyncio.create_task
- asyncio.ensure_future asyncio.shield asyncio.as_completed asyncio.Queue asyncio.Lock
- asyncio.Event asyncio.Semaphore asyncio.BoundedSemaphore asyncio.Condition
- asyncio.TimeoutError asyncio.CancelledError asyncio.iscoroutine asyncio.iscoroutinefunction
- asyncio.get_event_loop asyncio.get_running_loop asyncio.new_event_loop asyncio.timeout
- asyncio.TaskGroup asyncio.current_task asyncio.all_tasks asyncio.run asyncio.Future
- asyncio.to_thread asyncio.Task asyncio.wait_for asyncio.PriorityQueue asyncio.LifoQueue
- concurrent.futures.ThreadPoolExecutor concurrent.futures.as_completed
- concurrent.futures.wait concurrent.futures.Future
- pathlib.Path pathlib.PurePath pathlib.PosixPath pathlib.PurePosixPath
- pathlib.PureWindowsPath pathlib.WindowsPath
- time.tzset:VR
D sys.modules sys._getframe sys.settrace sys.setprofile sys.addaudithook
D importlib runpy code codeop pickle.loads pickle.load pickle.Unpickler marshal.load
D builtins.eval builtins.exec builtins.compile builtins.__import__
d builtins.getattr
* json.load json.dump pickle.dump pickle.Pickler
R os.listdir os.scandir os.stat os.lstat os.walk os.fwalk os.access os.readlink os.getcwd
R os.getcwdb os.statvfs os.chdir os.fchdir os.path.exists os.path.lexists os.path.isfile
R os.path.isdir os.path.islink os.path.ismount os.path.isjunction os.path.getsize
R os.path.getmtime os.path.getatime os.path.getctime os.path.samefile os.path.sameopenfile
R os.path.realpath os.path.abspath os.path.relpath glob linecache inspect traceback pwd grp
R pathlib.Path.cwd mimetypes.guess_type:R
RW shutil os.replace:W os.rename:W os.renames:RW
W os.remove os.unlink os.mkdir os.makedirs os.rmdir os.removedirs os.chmod os.lchmod
W os.chown os.lchown os.link os.symlink os.truncate os.utime os.mkfifo os.mknod os.chroot
W os.chflags os.lchflags os.setxattr os.removexattr os.sync os.umask
Rw os.open
rn os.read os.pread os.readv
wn os.write os.pwrite os.writev os.sendfile
RV os.path.expanduser pathlib.Path.home shutil.which
V os.environ os.environb os.getenv os.getenvb os.putenv os.unsetenv os.get_exec_path
V os.path.expandvars locale getpass.getuser
RV getpass
RWV tempfile
rw zipfile tarfile gzip bz2 lzma shelve dbm sqlite3 mailbox
S subprocess pty os.system os.popen os.execl os.execle os.execlp os.execlpe os.execv
S os.execve os.execvp os.execvpe os.spawnl os.spawnle os.spawnlp os.spawnlpe os.spawnv
S os.spawnve os.spawnvp os.spawnvpe os.fork os.forkpty os.posix_spawn os.posix_spawnp
S os.kill os.killpg os.wait os.waitpid os.wait3 os.wait4 os.waitid os.startfile
S asyncio.create_subprocess_exec asyncio.create_subprocess_shell asyncio.subprocess
Snrwvd multiprocessing concurrent.futures.ProcessPoolExecutor
SVr webbrowser
rsv platform
N socket socketserver selectors.DefaultSelector:- select.select:-
N asyncio.open_connection asyncio.start_server asyncio.open_unix_connection
N asyncio.start_unix_server xmlrpc.server http.server:NR
NR ssl
Nr http.client smtplib ftplib poplib imaplib nntplib telnetlib xmlrpc.client
Nr urllib.robotparser
NrV urllib.request urllib
Nrwsvd requests httpx aiohttp urllib3 websockets websocket paramiko boto3 botocore grpc
Nrwsvd redis pymongo psycopg2 psycopg pymysql MySQLdb httplib2 pycurl ftputil
nrwsvD ctypes cffi
"""


def _parse_table():
    table = {}
    for line in _TABLE_TEXT.strip().splitlines():
        spec, names = line.split(None, 1)
        for name in names.split():
            if ":" in name:
                name, own = name.split(":", 1)
                table[name] = _ev("" if own == "-" else own)
            else:
                table[name] = _ev("" if spec == "-" else spec)
    return table


# builtins whose call has no effect of interest (beyond calling what they are given)
_PURE_BUILTINS = set("""
abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict dir divmod
enumerate filter float format frozenset globals hasattr hash hex id input int isinstance
issubclass iter len list locals map max memoryview min next object oct ord pow print
property range repr reversed round set setattr delattr slice sorted staticmethod str sum
super tuple type vars zip aiter anext NotImplemented Ellipsis None True False __name__
__doc__ __debug__ __build_class__ __spec__ __loader__ __package__
""".split())
_DYNAMIC_BUILTINS = {"eval": "D", "exec": "D", "compile": "D", "__import__": "D",
                     "breakpoint": "*", "help": "*", "open": "rw", "getattr": "d"}
# types whose instances are plain data: every method is free of effects
_DATA_BUILTIN_TYPES = {"str", "bytes", "bytearray", "int", "float", "complex", "bool", "list",
                       "dict", "set", "frozenset", "tuple", "range", "slice", "memoryview",
                       "object", "type", "property", "staticmethod", "classmethod", "super"}

# open-like callables: (index of the mode argument, default mode)
_OPENERS = {"builtins.open": (1, "r"), "io.open": (1, "r"), "codecs.open": (1, "r"),
            "os.fdopen": (1, "r"), "gzip.open": (1, "rb"), "bz2.open": (1, "rb"),
            "lzma.open": (1, "rb"), "tarfile.open": (1, "r"), "zipfile.ZipFile": (1, "r")}

# value types the analysis tracks (a type set is a frozenset of these, None = unknown):
#   deep     plain data all the way down (str, numbers, containers of those)
#   shallow  a builtin container whose elements are not known
#   file     an open file object        socket  a socket
#   path     a pathlib path             pattern a re pattern or match (or None)
#   cls:X    an instance of the module's own class X
DEEP = frozenset(["deep"])
SHALLOW = frozenset(["shallow"])

_RESULT_TYPES = {
    "pathlib.Path": "path", "pathlib.PurePath": "path", "pathlib.PosixPath": "path",
    "pathlib.PurePosixPath": "path", "pathlib.Path.cwd": "path", "pathlib.Path.home": "path",
    "socket.socket": "socket", "socket.create_connection": "socket",
    "re.compile": "pattern", "re.match": "pattern", "re.search": "pattern",
    "re.fullmatch": "pattern", "builtins.open": "file", "io.open": "file",
    "io.StringIO": "shallow", "io.BytesIO": "shallow",
}
_DEEP_RESULTS_PREFIX = ("json.loads", "json.dumps", "os.path.", "os.getenv", "os.listdir",
                        "os.getcwd", "math.", "re.sub", "re.findall", "re.split", "re.escape",
                        "string.", "textwrap.", "base64.", "binascii.", "hashlib.",
                        "urllib.parse.", "shlex.", "html.", "unicodedata.", "os.environ.get")
_BUILTIN_DEEP_RESULTS = {"str", "repr", "ascii", "format", "chr", "hex", "oct", "bin",
                         "input", "int", "float", "len", "abs", "round", "ord", "hash", "id",
                         "bool", "isinstance", "issubclass", "callable", "hasattr", "complex",
                         "bytes", "divmod", "pow", "range"}
_BUILTIN_CONTAINERS = {"list", "sorted", "dict", "set", "frozenset", "tuple", "reversed",
                       "bytearray"}

_FILE_METHODS = {
    "read": "R", "readline": "R", "readlines": "R", "readinto": "R", "__iter__": "R",
    "__next__": "R", "write": "W", "writelines": "W", "truncate": "W", "flush": "W",
}
_FILE_PURE = {"close", "seek", "tell", "fileno", "isatty", "readable", "writable", "seekable",
              "__enter__", "__exit__", "detach"}
_PATH_METHODS = {
    "exists": "R", "is_file": "R", "is_dir": "R", "is_symlink": "R", "is_mount": "R",
    "is_socket": "R", "is_fifo": "R", "is_block_device": "R", "is_char_device": "R",
    "stat": "R", "lstat": "R", "iterdir": "R", "glob": "R", "rglob": "R", "read_text": "R",
    "read_bytes": "R", "resolve": "R", "samefile": "R", "owner": "R", "group": "R",
    "readlink": "R", "absolute": "R", "walk": "R", "expanduser": "RV",
    "write_text": "W", "write_bytes": "W", "mkdir": "W", "rmdir": "W", "unlink": "W",
    "rename": "W", "replace": "W", "touch": "W", "chmod": "W", "lchmod": "W",
    "symlink_to": "W", "hardlink_to": "W", "link_to": "W",
}
_PATH_PURE = {"joinpath", "with_name", "with_suffix", "with_stem", "relative_to",
              "is_relative_to", "as_posix", "as_uri", "match", "full_match", "is_absolute",
              "is_reserved", "with_segments", "__truediv__", "__fspath__"}
_PATH_PURE_ATTRS = {"parent": "path", "parents": None, "name": "deep", "suffix": "deep",
                    "suffixes": "deep", "stem": "deep", "anchor": "deep", "drive": "deep",
                    "root": "deep", "parts": "deep"}

_PURE_BASES = {"builtins.object", "builtins.Exception", "typing.NamedTuple", "typing.Generic",
               "typing.Protocol", "typing.TypedDict", "enum.Enum", "enum.IntEnum",
               "enum.Flag", "enum.IntFlag", "enum.StrEnum", "abc.ABC"}


class _Scope:
    def __init__(self, kind, node, parent, cls=None):
        self.kind = kind          # module, function, class
        self.node = node
        self.parent = parent      # enclosing scope for names (class scopes skipped)
        self.cls = cls            # for methods: the class info of `self`
        self.sites = {}           # name -> list of binding sites
        self.globals = set()
        self.nonlocals = set()
        self.busy = set()
        self.cache = {}


class Effects:
    """Per-function effects of a parsed module."""

    def __init__(self, ast, tree):
        self.ast = ast
        self.tree = tree
        self.table = _parse_table()
        import builtins
        self.exceptions = set(n for n in dir(builtins)
                              if isinstance(getattr(builtins, n), type)
                              and issubclass(getattr(builtins, n), BaseException))
        self.builtin_names = _PURE_BUILTINS | set(_DYNAMIC_BUILTINS) | self.exceptions
        self.units = {}           # id -> [direct, calls, escapes, full] (see _new_unit)
        self.unit_of_node = {}    # def/lambda node -> unit id
        self.node_of_unit = {}
        self.method_class = {}    # method node of a top-level class -> class name
        self.classes = {}         # class name -> info dict (top-level classes)
        self.module = _Scope("module", tree, None)
        self.star = False
        self.global_assigned = set()

    # -- results --------------------------------------------------------------------

    def function_effects(self):
        ast = self.ast
        self._bind_scope(self.module, self.tree.body)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for sub in _own_nodes(ast, node):
                    if isinstance(sub, ast.Global):
                        self.global_assigned.update(sub.names)
        # a unit for every function and lambda (nested ones too: a name may be resolved
        # before the walker reaches its def), methods of top-level classes listed by class
        tops = []
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self._new_unit(node)
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                tops.append(node)
            elif isinstance(node, ast.ClassDef):
                info = {"node": node, "methods": {}, "bases": node.bases,
                        "keywords": node.keywords}
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        info["methods"][sub.name] = self.unit_of_node[sub]
                        self.method_class[sub] = node.name
                if node.name not in self.classes:
                    self.classes[node.name] = info
                else:
                    self.classes[node.name] = None  # redefined: unknown
        self.top_defs = set(tops)
        self.module_unit = self._new_unit(self.tree)
        # the module's code, every top-level function and method; the walkers analyse
        # nested functions and lambdas where they meet them (they know their scopes)
        todo = [self.tree] + tops
        for info in self.classes.values():
            if info is not None:
                for sub in info["node"].body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        todo.append(sub)
        for node in todo:
            uid = self.unit_of_node[node]
            try:
                self._analyse_unit(node, uid)
            except (RecursionError, MemoryError):
                self.units[uid][0] = ALL_UNKNOWN
        full, shallow = self._fixpoint()
        mod = shallow[self.module_unit]
        out = {}
        for node in tops:
            e = _join(shallow[self.unit_of_node[node]], mod)
            if e[5]:
                e = tuple(x if x else 1 for x in e)
            out[node] = {k: _WORDS[v] for k, v in zip(EFFECT_NAMES, e)}
        return out

    def _new_unit(self, node):
        uid = len(self.units)
        # direct effects; units it calls; units it lets escape (returns, stores: they may
        # run later, not now); units whose every effect it takes on (its decorators)
        self.units[uid] = [PURE, set(), set(), set()]
        self.unit_of_node[node] = uid
        self.node_of_unit[uid] = node
        return uid

    def _fixpoint(self):
        """full: what running a unit and anything it lets escape may do; shallow: what
        running it does (its calls' shallow effects, its decorators' full ones)."""
        def solve(step):
            totals = {u: v[0] for u, v in self.units.items()}
            changed = True
            while changed:
                changed = False
                for u, rec in self.units.items():
                    e = step(u, rec, totals)
                    if e != totals[u]:
                        totals[u] = e
                        changed = True
            return totals

        def full_step(u, rec, totals):
            e = totals[u]
            for group in rec[1:]:
                for r in group:
                    e = _join(e, totals[r])
            return e

        full = solve(full_step)

        def shallow_step(u, rec, totals):
            e = totals[u]
            for r in rec[1]:
                e = _join(e, totals[r])
            for r in rec[3]:
                e = _join(e, full[r])
            return e

        return full, solve(shallow_step)

    # -- binding sites --------------------------------------------------------------

    def _bind_scope(self, scope, body, params=None):
        ast = self.ast
        sites = scope.sites

        def add(name, site):
            sites.setdefault(name, []).append(site)

        if params is not None:
            for p, ann, kind in params:
                add(p, ("param", ann, kind))
        current = [None]

        def bind(name):
            add(name, current[0])

        def targets(t, site=None):
            if isinstance(t, ast.Name):
                add(t.id, site or ("var",))
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in t.elts:
                    targets(e)
            elif isinstance(t, ast.Starred):
                targets(t.value)

        star = [False]

        def walk(stmts):
            for s in stmts:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(s.name, ("def", s))
                elif isinstance(s, ast.ClassDef):
                    add(s.name, ("class", s))
                elif isinstance(s, ast.Assign):
                    for t in s.targets:
                        targets(t, ("assign", s.value) if isinstance(t, ast.Name) else None)
                elif isinstance(s, ast.AnnAssign):
                    if s.value is not None:
                        targets(s.target, ("assign", s.value)
                                if isinstance(s.target, ast.Name) else None)
                    elif isinstance(s.target, ast.Name):
                        sites.setdefault(s.target.id, [])
                elif isinstance(s, ast.AugAssign):
                    targets(s.target, ("aug", s.value))
                elif isinstance(s, (ast.For, ast.AsyncFor)):
                    targets(s.target, ("iter", s.iter))
                    walk(s.body)
                    walk(s.orelse)
                elif isinstance(s, (ast.With, ast.AsyncWith)):
                    for it in s.items:
                        if it.optional_vars is not None:
                            targets(it.optional_vars, ("with", it.context_expr))
                    walk(s.body)
                elif isinstance(s, ast.Import):
                    for a in s.names:
                        if a.asname:
                            add(a.asname, ("qual", a.name))
                        else:
                            top = a.name.split(".")[0]
                            add(top, ("qual", top))
                elif isinstance(s, ast.ImportFrom):
                    for a in s.names:
                        if a.name == "*":
                            star[0] = True
                        elif s.level or not s.module:
                            add(a.asname or a.name, ("opaque",))
                        else:
                            add(a.asname or a.name, ("qual", s.module + "." + a.name))
                elif isinstance(s, ast.Global):
                    scope.globals.update(s.names)
                elif isinstance(s, ast.Nonlocal):
                    scope.nonlocals.update(s.names)
                elif isinstance(s, ast.Delete):
                    for t in s.targets:
                        if isinstance(t, ast.Name):
                            sites.setdefault(t.id, [])
                else:
                    current[0] = ("var",)
                    _bind_stmt(ast, s, bind, lambda t: targets(t), star, walk)

        walk(body)
        own = _own_nodes(ast, scope.node) if scope.kind != "class" else None
        if own is None:
            own = []
            for s in body:
                own.extend(_own_nodes(ast, _Wrap(s)))
        for n in own:
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                add(n.target.id, ("assign", n.value))
            elif isinstance(n, ast.comprehension):
                targets(n.target, ("iter", n.iter))
            elif isinstance(n, ast.ExceptHandler) and n.name:
                add(n.name, ("var",))
        if star[0]:
            if scope.kind == "module":
                self.star = True
        for name in scope.globals:
            sites.pop(name, None)
        for name in scope.nonlocals:
            sites.pop(name, None)

    # -- name resolution ------------------------------------------------------------
    # A value is one of:
    #   ("qual", "a.b.c")  a module or module attribute      ("unit", id)  own function
    #   ("class", name)    the module's own class
    #   ("var", types)     a variable holding data             ("builtin", name)
    #   ("unknown",)       anything

    def resolve(self, name, scope):
        s = scope
        while s is not None:
            if name in s.globals:
                s = self.module
                break
            if name in s.sites and s.kind != "module":
                return self._site_values(name, s)
            if s.kind == "module":
                break
            s = s.parent
        if s is None:
            s = self.module
        return self._module_values(name)

    def _module_values(self, name):
        sites = self.module.sites.get(name)
        vals = []
        if sites:
            vals = list(self._site_values(name, self.module))
        if self.star or name in self.global_assigned:
            vals.append(("unknown",))
        if not sites:
            if name in self.builtin_names and not self.star:
                vals.append(("builtin", name))
            elif not vals:
                vals.append(("unknown",))
        return vals

    def _site_values(self, name, scope):
        if name in scope.cache:
            return scope.cache[name]
        if name in scope.busy:
            return [("unknown",)]
        scope.busy.add(name)
        try:
            vals = []
            for site in scope.sites.get(name, ()):
                vals.extend(self._site_value(site, scope))
            if not vals and scope.kind == "function":
                vals = [("var", None)]
        finally:
            scope.busy.discard(name)
        scope.cache[name] = vals
        return vals

    def _site_value(self, site, scope):
        ast = self.ast
        k = site[0]
        if k == "qual":
            return [("qual", site[1])]
        if k == "var":
            return [("var", None)]
        if k == "def":
            return [("unit", self.unit_of_node[site[1]])]
        if k == "class":
            if scope.kind == "module" and self.classes.get(site[1].name) is not None:
                return [("class", site[1].name)]
            return [("unknown",)]
        if k == "param":
            ann, kind = site[1], site[2]
            if kind == "self" and scope.cls is not None:
                return [("var", frozenset(["cls:" + scope.cls]))]
            return [("var", self._annotation_types(ann))]
        if k == "assign":
            v = site[1]
            if isinstance(v, ast.Lambda):
                return [("unit", self.unit_of_node[v])]
            if isinstance(v, (ast.Name, ast.Attribute)):
                vals = self.value_of(v, scope)
                if vals is not None:
                    return vals
            return [("var", self.type_of(v, scope))]
        if k == "aug":
            t = self.type_of(site[1], scope)
            return [("var", DEEP if t == DEEP else None)]
        if k == "iter":
            t = self.type_of(site[1], scope)
            if t is not None and t <= frozenset(["deep", "file"]):
                return [("var", DEEP)]
            return [("var", None)]
        if k == "with":
            t = self.type_of(site[1], scope)
            if t is not None and t <= frozenset(["file", "socket", "shallow"]):
                return [("var", t)]
            return [("var", None)]
        return [("unknown",)]

    def value_of(self, expr, scope):
        """Values of a name or attribute chain rooted at a name; None otherwise."""
        ast = self.ast
        attrs = []
        e = expr
        while isinstance(e, ast.Attribute):
            attrs.append(e.attr)
            e = e.value
        if not isinstance(e, ast.Name):
            return None
        attrs.reverse()
        vals = self.resolve(e.id, scope)
        if not attrs:
            return vals
        out = []
        for v in vals:
            if v[0] == "qual":
                out.append(("qual", ".".join([v[1]] + attrs)))
            elif v[0] == "builtin":
                out.append(("qual", ".".join(["builtins", v[1]] + attrs)))
            elif v[0] == "class" and len(attrs) == 1:
                out.append(("classattr", v[1], attrs[0]))
            elif v[0] in ("var", "class", "unit"):
                # an attribute of a value: reading it is data; calling it is a method of
                # the types known for the object it belongs to
                types = v[1] if v[0] == "var" else None
                for a in attrs[:-1]:
                    types = self._attr_type(types, a)
                out.append(("attr", types, attrs[-1]))
            else:
                out.append(("unknown",))
        return out

    def _annotation_types(self, ann):
        ast = self.ast
        if ann is None:
            return None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        return self._ann(ann)

    def _ann(self, a):
        ast = self.ast
        scalars = {"int", "float", "str", "bool", "bytes", "complex", "None"}
        deep_containers = {"list", "dict", "set", "frozenset", "tuple", "List", "Dict", "Set",
                           "FrozenSet", "Tuple", "Sequence", "Mapping", "Iterable"}
        if isinstance(a, ast.Constant) and a.value is None:
            return DEEP
        name = None
        if isinstance(a, ast.Name):
            name = a.id
        elif isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name):
            name = a.attr
        if name is not None:
            if name in scalars:
                return DEEP
            if name in deep_containers:
                return SHALLOW
            if name in ("Path", "PurePath", "PosixPath"):
                return frozenset(["path"])
            return None
        if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
            l, r = self._ann(a.left), self._ann(a.right)
            return None if l is None or r is None else l | r
        if isinstance(a, ast.Subscript):
            base = a.value
            bname = base.id if isinstance(base, ast.Name) else (
                base.attr if isinstance(base, ast.Attribute) else None)
            inner = a.slice
            if type(inner).__name__ == "Index":  # 3.8
                inner = inner.value
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            if bname in ("Optional", "Union"):
                out = frozenset()
                for i in items:
                    t = self._ann(i)
                    if t is None:
                        return None
                    out |= t
                return out
            if bname in deep_containers:
                for i in items:
                    if isinstance(i, ast.Constant) and i.value is Ellipsis:
                        continue
                    if self._ann(i) != DEEP:
                        return SHALLOW
                return DEEP
        return None

    # -- types ----------------------------------------------------------------------

    def type_of(self, e, scope):
        ast = self.ast
        if isinstance(e, (ast.Constant, ast.JoinedStr, ast.FormattedValue)):
            return DEEP
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            ts = [self.type_of(x, scope) for x in e.elts]
            return DEEP if all(t == DEEP for t in ts) else SHALLOW
        if isinstance(e, ast.Dict):
            ts = [self.type_of(x, scope) for x in e.keys if x is not None]
            ts += [self.type_of(x, scope) for x in e.values]
            return DEEP if all(t == DEEP for t in ts) and None not in e.keys else SHALLOW
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return SHALLOW
        if isinstance(e, (ast.Compare,)):
            return DEEP
        if isinstance(e, ast.UnaryOp):
            return DEEP if self.type_of(e.operand, scope) == DEEP else None
        if isinstance(e, ast.BinOp):
            l, r = self.type_of(e.left, scope), self.type_of(e.right, scope)
            if l == DEEP and r == DEEP:
                return DEEP
            if isinstance(e.op, ast.Div) and l is not None and "path" in l:
                return frozenset(["path"])
            return None
        if isinstance(e, ast.BoolOp):
            out = frozenset()
            for v in e.values:
                t = self.type_of(v, scope)
                if t is None:
                    return None
                out |= t
            return out
        if isinstance(e, ast.IfExp):
            a, b = self.type_of(e.body, scope), self.type_of(e.orelse, scope)
            return None if a is None or b is None else a | b
        if isinstance(e, ast.Subscript):
            t = self.type_of(e.value, scope)
            return DEEP if t == DEEP else None
        if isinstance(e, ast.Await):
            return None
        if isinstance(e, ast.NamedExpr):
            return self.type_of(e.value, scope)
        if isinstance(e, (ast.Name, ast.Attribute)):
            vals = self.value_of(e, scope)
            if vals is None:  # attribute of an expression
                base = self.type_of(e.value, scope)
                return self._attr_type(base, e.attr)
            out = frozenset()
            for v in vals:
                if v[0] == "var" and v[1] is not None:
                    out |= v[1]
                elif v[0] == "attr":
                    t = self._attr_type(v[1], v[2])
                    if t is None:
                        return None
                    out |= t
                elif v[0] == "qual" and self._is_constant_name(v[1]):
                    out |= DEEP
                else:
                    return None
            return out
        if isinstance(e, ast.Call):
            return self._call_type(e, scope)
        return None

    def _attr_type(self, base, attr):
        if base is None:
            return None
        out = frozenset()
        for t in base:
            if t == "deep":
                out |= DEEP
            elif t == "path" and attr in _PATH_PURE_ATTRS and _PATH_PURE_ATTRS[attr]:
                out |= frozenset([_PATH_PURE_ATTRS[attr]])
            else:
                return None
        return out

    def _call_type(self, e, scope):
        ast = self.ast
        f = e.func
        vals = self.value_of(f, scope) if isinstance(f, (ast.Name, ast.Attribute)) else None
        if vals is None:
            if isinstance(f, ast.Attribute):
                base = self.type_of(f.value, scope)
                return self._method_type(base, f.attr)
            return None
        out = frozenset()
        for v in vals:
            t = None
            if v[0] == "builtin" or (v[0] == "qual" and v[1].startswith("builtins.")
                                     and v[1].count(".") == 1):
                name = v[1] if v[0] == "builtin" else v[1][9:]
                if name in _BUILTIN_DEEP_RESULTS:
                    t = DEEP
                elif name in _BUILTIN_CONTAINERS:
                    args = [self.type_of(a, scope) for a in e.args]
                    t = DEEP if all(a == DEEP for a in args) else SHALLOW
                elif name == "open":
                    t = frozenset(["file"])
            elif v[0] == "qual":
                q = v[1]
                if q in _RESULT_TYPES:
                    t = frozenset([_RESULT_TYPES[q]])
                elif q.startswith(_DEEP_RESULTS_PREFIX):
                    t = DEEP
            elif v[0] == "class":
                t = frozenset(["cls:" + v[1]])
            elif v[0] == "attr":
                t = self._method_type(v[1], v[2])
            elif v[0] == "unit":
                node = self._unit_node(v[1])
                if node is not None and getattr(node, "returns", None) is not None:
                    t = self._annotation_types(node.returns)
            if t is None:
                return None
            out |= t
        return out

    def _method_type(self, base, attr):
        if base is None:
            return None
        out = frozenset()
        for t in base:
            if t == "deep":
                out |= DEEP
            elif t == "pattern":
                out |= frozenset(["pattern", "deep"])
            elif t == "path" and attr in _PATH_PURE:
                out |= frozenset(["path"])
            elif t == "path" and attr == "open":
                out |= frozenset(["file"])
            elif t == "file" and attr in ("read", "readline", "readlines"):
                out |= DEEP
            elif t in ("file", "socket") and attr == "__enter__":
                out |= frozenset([t])
            else:
                return None
        return out

    def _unit_node(self, uid):
        return self.node_of_unit.get(uid)

    @staticmethod
    def _is_constant_name(q):
        return q.rsplit(".", 1)[-1].isupper()

    # -- effects of values ----------------------------------------------------------

    def _qual_effect(self, q, called):
        parts = q.split(".")
        if parts[0] == "builtins" and len(parts) >= 2:
            if len(parts) == 2:
                return self._builtin_effect(parts[1], None)
            if parts[1] in _DATA_BUILTIN_TYPES:
                return PURE
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in self.table:
                return self.table[key]
        if not called and self._is_constant_name(q):
            return PURE
        return ALL_UNKNOWN

    def _builtin_effect(self, name, call):
        if name in _DYNAMIC_BUILTINS:
            if call is not None:
                if name == "open":
                    return self._open_effect(call, 1, "r")
                if name == "getattr":
                    ast = self.ast
                    if (len(call.args) >= 2 and isinstance(call.args[1], ast.Constant)
                            and isinstance(call.args[1].value, str)
                            and not any(isinstance(a, ast.Starred) for a in call.args)):
                        return PURE
                    return _ev("D")
            return _ev(_DYNAMIC_BUILTINS[name])
        if name in _PURE_BUILTINS or name in self.exceptions:
            return PURE
        return ALL_UNKNOWN

    def _open_effect(self, call, index, default):
        ast = self.ast
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return _ev("rw")
        node = call.args[index] if len(call.args) > index else None
        for k in call.keywords:
            if k.arg == "mode":
                node = k.value
        if node is None:
            mode = default
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            mode = node.value
        else:
            return _ev("rw")
        write = any(c in mode for c in "wax+")
        read = "r" in mode or "+" in mode or not write
        return _ev(("R" if read else "") + ("W" if write else ""))

    def _class_effect(self, name, refs, seen=None):
        """Calling (or referencing) the module's class: every method it has may run."""
        ast = self.ast
        info = self.classes.get(name)
        if info is None:
            return ALL_UNKNOWN
        seen = seen or set()
        if name in seen:
            return PURE
        seen.add(name)
        eff = PURE
        if info["keywords"]:
            return ALL_UNKNOWN
        for b in info["bases"]:
            if isinstance(b, ast.Subscript):
                b = b.value
            vals = self.value_of(b, self.module)
            if vals is None:
                return ALL_UNKNOWN
            for v in vals:
                if v[0] == "class":
                    eff = _join(eff, self._class_effect(v[1], refs, seen))
                elif v[0] == "builtin" and (v[1] in _DATA_BUILTIN_TYPES
                                            or v[1] in self.exceptions):
                    pass
                elif v[0] == "qual" and v[1] in _PURE_BASES:
                    pass
                else:
                    return ALL_UNKNOWN
        refs.update(info["methods"].values())
        return eff

    def _method_effect(self, types, attr, call, refs):
        """Calling attr on a value of the given types."""
        if types is None:
            return ALL_UNKNOWN
        eff = PURE
        for t in types:
            if t in ("deep", "shallow", "pattern"):
                continue
            if t == "file":
                if attr in _FILE_METHODS:
                    eff = _join(eff, _ev(_FILE_METHODS[attr]))
                elif attr not in _FILE_PURE:
                    return ALL_UNKNOWN
            elif t == "socket":
                eff = _join(eff, _ev("N"))
            elif t == "path":
                if attr == "open" and call is not None:
                    eff = _join(eff, self._open_effect(call, 0, "r"))
                elif attr in _PATH_METHODS:
                    eff = _join(eff, _ev(_PATH_METHODS[attr]))
                elif attr not in _PATH_PURE:
                    return ALL_UNKNOWN
            elif t.startswith("cls:"):
                uid = self._find_method(t[4:], attr, set())
                if uid is None:
                    return ALL_UNKNOWN
                refs.add(uid)
            else:
                return ALL_UNKNOWN
        return eff

    def _find_method(self, cname, attr, seen):
        ast = self.ast
        info = self.classes.get(cname)
        if info is None or cname in seen:
            return None
        seen.add(cname)
        if attr in info["methods"]:
            return info["methods"][attr]
        for b in info["bases"]:
            vals = self.value_of(b, self.module) if isinstance(b, ast.Name) else None
            for v in vals or ():
                if v[0] == "class":
                    uid = self._find_method(v[1], attr, seen)
                    if uid is not None:
                        return uid
        return None

    def value_effect(self, vals, call, refs):
        """Effects of calling (call is the Call node) or referencing (call None) values."""
        eff = PURE
        for v in vals:
            k = v[0]
            if k == "qual":
                q = v[1]
                if call is not None and q in _OPENERS:
                    e = self._open_effect(call, *_OPENERS[q])
                elif call is not None and q == "builtins.getattr":
                    e = self._builtin_effect("getattr", call)
                else:
                    e = self._qual_effect(q, call is not None)
            elif k == "builtin":
                e = self._builtin_effect(v[1], call)
            elif k == "unit":
                refs.add(v[1])
                e = PURE
            elif k == "class":
                e = self._class_effect(v[1], refs)
            elif k == "var":
                e = ALL_UNKNOWN if call is not None else PURE
            elif k == "attr":
                if call is not None:
                    e = self._method_effect(v[1], v[2], call, refs)
                else:
                    e = PURE
            elif k == "classattr":
                uid = self._find_method(v[1], v[2], set())
                if uid is not None:
                    refs.add(uid)
                    e = PURE
                else:
                    e = ALL_UNKNOWN if call is not None else PURE
            else:
                e = ALL_UNKNOWN
            eff = _join(eff, e)
        return eff

    # -- walking code ---------------------------------------------------------------

    def _analyse_unit(self, node, uid, parent=None):
        ast = self.ast
        if node is self.tree:
            w = _Walker(self, self.module, uid, module_level=True)
            for st in node.body:
                w.stmt(st)
            self.units[uid][0] = w.eff
            return
        parent = parent or self.module
        scope = self._function_scope(node, parent, self.method_class.get(node))
        w = _Walker(self, scope, uid)
        w.function_body(node)
        # a decorated function is called through what its decorators made of it
        if not isinstance(node, ast.Lambda):
            for d in node.decorator_list:
                w.decorator(d, parent, w.rec[3])
        self.units[uid][0] = w.eff

    def _function_scope(self, node, parent, cls=None):
        ast = self.ast
        scope = _Scope("function", node, parent)
        a = node.args
        params = []
        positional = list(a.posonlyargs) + list(a.args)
        is_method = cls is not None and not any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in getattr(node, "decorator_list", ()))
        for i, p in enumerate(positional):
            params.append((p.arg, p.annotation, "self" if is_method and i == 0 else "p"))
        for p in a.kwonlyargs:
            params.append((p.arg, p.annotation, "p"))
        if a.vararg is not None:
            params.append((a.vararg.arg, None, "star"))
        if a.kwarg is not None:
            params.append((a.kwarg.arg, None, "star"))
        scope.cls = cls if is_method else None
        # (a lambda's walrus and comprehension targets come from its own nodes)
        self._bind_scope(scope, [] if isinstance(node, ast.Lambda) else node.body, params)
        for p, ann, kind in params:
            if kind == "star":
                scope.sites[p] = [("param", None, "p")]
        return scope


class _Wrap:
    """A statement list as a scope node for _own_nodes."""

    def __init__(self, stmt):
        self.body = [stmt]


class _Walker:
    """Collects the direct effects and the edges of one unit's own code; nested functions,
    lambdas and methods of nested classes are units of their own, analysed here."""

    def __init__(self, an, scope, uid, module_level=False):
        self.an = an
        self.ast = an.ast
        self.scope = scope
        self.uid = uid
        self.rec = an.units[uid]
        self.eff = PURE
        self.module_level = module_level
        self.call_args = 0

    def add(self, e):
        self.eff = _join(self.eff, e)

    def refs(self):
        """Where a referenced unit goes: an argument of a call may be called by it."""
        return self.rec[1] if self.call_args else self.rec[2]

    def function_body(self, node):
        ast = self.ast
        if isinstance(node, ast.Lambda):
            self.expr(node.body)
        else:
            for st in node.body:
                self.stmt(st)

    def nested(self, node, scope):
        """Analyses a nested function or lambda (its own unit) defined in scope."""
        uid = self.an.unit_of_node[node]
        try:
            self.an._analyse_unit(node, uid, scope)
        except (RecursionError, MemoryError):
            self.an.units[uid][0] = ALL_UNKNOWN
        return uid

    def decorator(self, d, scope, refs):
        """Applying decorator d (evaluated in scope); unit edges go into refs."""
        saved = self.scope
        self.scope = scope
        try:
            ast = self.ast
            f = d.func if isinstance(d, ast.Call) else d
            if isinstance(d, ast.Call):
                self.expr(d)  # the factory's call
            vals = self.an.value_of(f, scope) if isinstance(f, (ast.Name, ast.Attribute)) \
                else None
            if vals is None:
                self.expr(f)
                self.add(ALL_UNKNOWN)
            else:
                self.add(self.an.value_effect(vals, d if isinstance(d, ast.Call) else
                                              ast.Call(func=f, args=[], keywords=[]), refs))
        finally:
            self.scope = saved

    # statements

    def stmt(self, s):
        ast = self.ast
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._def(s)
            return
        if isinstance(s, ast.ClassDef):
            self._class(s)
            return
        if self.module_level and isinstance(s, ast.If) and _is_main_guard(ast, s.test):
            for x in s.orelse:
                self.stmt(x)
            return
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Pass,
                          ast.Break, ast.Continue)):
            return
        if isinstance(s, ast.AnnAssign):
            # annotations are not walked (names in them are not calls; in a function they
            # are never evaluated)
            if not isinstance(s.target, ast.Name):
                self.expr(s.target)
            if s.value is not None:
                self.expr(s.value)
            return
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _other(self, n):
        ast = self.ast
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _def(self, s, scope=None):
        """A def statement: defaults and decorators run now (decorators are called with the
        function); the body is a unit of its own, analysed in the enclosing function's
        scope unless it is a top-level function or method (analysed on their own)."""
        a = s.args
        for d in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
            self.expr(d)
        for d in s.decorator_list:
            self.decorator(d, self.scope, self.rec[1])
        if s in self.an.method_class or s in self.an.top_defs:
            return
        self.nested(s, scope or self.scope)

    def _class(self, s):
        ast = self.ast
        for b in s.bases:
            self.expr(b)
        for k in s.keywords:
            self.expr(k.value)
        for d in s.decorator_list:
            self.decorator(d, self.scope, self.rec[1])
        cscope = _Scope("class", s, self.scope)
        self.an._bind_scope(cscope, s.body)
        w = _Walker(self.an, cscope, self.uid, module_level=self.module_level)
        # the class body runs now; methods are defined, not run (their scope skips the
        # class's)
        fscope = self.scope
        for x in s.body:
            if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)):
                w._def(x, fscope)
            else:
                w.stmt(x)
        self.add(w.eff)

    # expressions

    def expr(self, e):
        ast = self.ast
        if isinstance(e, ast.Call):
            self._call(e)
            return
        if isinstance(e, (ast.Name, ast.Attribute)):
            if isinstance(e.ctx, ast.Load) or isinstance(e, ast.Attribute):
                self._reference(e)
            return
        if isinstance(e, ast.Lambda):
            for d in list(e.args.defaults) + [d for d in e.args.kw_defaults if d is not None]:
                self.expr(d)
            self.refs().add(self.nested(e, self.scope))
            return
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _reference(self, e):
        """A name or attribute chain that is read (not called)."""
        vals = self.an.value_of(e, self.scope)
        if vals is None:  # attribute of an expression: the expression is evaluated
            self.expr(e.value)
            return
        self.add(self.an.value_effect(vals, None, self.refs()))

    def _call(self, c):
        ast = self.ast
        f = c.func
        vals = self.an.value_of(f, self.scope) if isinstance(f, (ast.Name, ast.Attribute)) \
            else None
        if vals is not None:
            self.add(self.an.value_effect(vals, c, self.rec[1]))
        elif isinstance(f, ast.Attribute):
            # a method of an expression's value
            self.expr(f.value)
            t = self.an.type_of(f.value, self.scope)
            self.add(self.an._method_effect(t, f.attr, c, self.rec[1]))
        elif isinstance(f, ast.Lambda):
            self.call_args += 1  # called right here
            try:
                self.expr(f)
            finally:
                self.call_args -= 1
        else:
            self.expr(f)
            self.add(ALL_UNKNOWN)
        self.call_args += 1
        try:
            for a in c.args:
                self.expr(a)
            for k in c.keywords:
                self.expr(k.value)
        finally:
            self.call_args -= 1


def _is_main_guard(ast, test):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")
