# SPDX-License-Identifier: MIT
# govex worker, inspection part: the effect vocabulary and what the analysis knows of the
# standard library, builtins and the methods of the value types it tracks (the analysis
# itself: effects.py).
#
# Each effect is absent (0) < unknown (1) < present (2); vectors join element-wise with
# max.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict
    from govex_worker.inspection.vocabulary import Vec

EFFECT_NAMES = ("network", "filesystem_read", "filesystem_write", "subprocess",
                "environment", "dynamic_code")
_LETTERS = "NRWSVD"
_WORDS = ("absent", "unknown", "present")
PURE = (0, 0, 0, 0, 0, 0)  # type: Vec
ALL_UNKNOWN = (1, 1, 1, 1, 1, 1)  # type: Vec


def _ev(spec: str) -> "Vec":
    if spec == "*":
        return ALL_UNKNOWN
    return tuple(2 if L in spec else 1 if L.lower() in spec else 0 for L in _LETTERS)


def _join(a: "Vec", b: "Vec") -> "Vec":
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


def _parse_table() -> "Dict[str, Vec]":
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

# methods of the value types the analysis tracks (valuetypes.py): their effects, and
# those that have none
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

# bases of the module's classes whose own methods do nothing of interest
_PURE_BASES = {"builtins.object", "builtins.Exception", "typing.NamedTuple", "typing.Generic",
               "typing.Protocol", "typing.TypedDict", "enum.Enum", "enum.IntEnum",
               "enum.Flag", "enum.IntFlag", "enum.StrEnum", "abc.ABC"}
