"""A stdlib workload for tools/seccomp-measure.sh: what ordinary sandboxed code does.

Runs under every Python 3.8+ with no network, no third-party packages, stdlib only.
Each part is best effort (a missing module or a refused call is printed, not fatal):
the point is to make the interpreter issue the syscalls such code needs.
"""
import os
import sys
import tempfile
import traceback

PARTS = []


def part(f):
    PARTS.append(f)
    return f


@part
def files():
    import glob
    import io
    import pathlib
    import shutil
    d = tempfile.mkdtemp()
    p = pathlib.Path(d, "a.txt")
    p.write_text("hello\n" * 1000)
    with open(p, "rb", buffering=0) as f:
        f.read(10)
        f.seek(0, io.SEEK_END)
        os.fstat(f.fileno())
        os.pread(f.fileno(), 10, 0)
    with open(p, "r+b") as f:
        os.pwrite(f.fileno(), b"x", 0)
        f.truncate(100)
        os.fsync(f.fileno())
        os.fdatasync(f.fileno())
        try:
            os.posix_fallocate(f.fileno(), 0, 4096)
        except OSError:
            pass
        try:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except OSError:
            pass
    os.truncate(p, 10)
    q = pathlib.Path(d, "sub", "deep")
    q.mkdir(parents=True)
    shutil.copy2(p, q / "b.txt")
    shutil.copytree(pathlib.Path(d, "sub"), pathlib.Path(d, "sub2"))
    os.rename(q / "b.txt", q / "c.txt")
    os.replace(q / "c.txt", q / "d.txt")
    os.link(q / "d.txt", q / "e.txt")
    os.symlink("d.txt", q / "f.txt")
    os.readlink(q / "f.txt")
    os.lstat(q / "f.txt")
    os.chmod(q / "d.txt", 0o600)
    os.utime(q / "d.txt", None)
    os.utime(q / "d.txt", (1, 2))
    try:
        os.chown(q / "d.txt", os.getuid(), os.getgid())
        os.lchown(q / "f.txt", os.getuid(), os.getgid())
    except OSError:
        pass
    os.access(q / "d.txt", os.R_OK)
    os.path.realpath(q / "f.txt")
    list(os.walk(d))
    list(os.scandir(d))
    glob.glob(os.path.join(d, "**"), recursive=True)
    os.statvfs(d)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.stat("sub", dir_fd=fd)
    os.mkdir("x", dir_fd=fd)
    os.rmdir("x", dir_fd=fd)
    os.fchmod(os.open(p, os.O_RDONLY), 0o644)
    os.fchdir(fd)
    os.chdir("/")
    os.close(fd)
    try:
        os.mkfifo(os.path.join(d, "fifo"))
    except OSError:
        pass
    try:
        os.setxattr(p, "user.x", b"1")
        os.getxattr(p, "user.x")
        os.listxattr(p)
        os.removexattr(p, "user.x")
    except OSError:
        pass
    fd = os.open(p, os.O_RDWR)
    os.sendfile(os.open(os.devnull, os.O_WRONLY), fd, 0, 5)
    try:
        os.copy_file_range(fd, os.open(pathlib.Path(d, "cfr"), os.O_CREAT | os.O_WRONLY), 5)
    except (AttributeError, OSError):
        pass
    os.lockf(fd, os.F_LOCK, 0)
    import fcntl
    fcntl.flock(fd, fcntl.LOCK_EX)
    fcntl.fcntl(fd, fcntl.F_GETFL)
    os.set_blocking(fd, False)
    os.readv(fd, [bytearray(4)])
    os.writev(fd, [b"ab"])
    os.close(fd)
    with tempfile.NamedTemporaryFile() as t:
        t.write(b"x")
    with tempfile.TemporaryDirectory():
        pass
    tempfile.SpooledTemporaryFile().close()
    shutil.rmtree(d)
    os.umask(0o22)
    os.getcwd()
    shutil.disk_usage("/tmp")
    try:
        os.memfd_create("x")
    except (AttributeError, OSError):
        pass
    r, w = os.pipe()
    os.write(w, b"x")
    os.read(r, 1)
    try:
        os.pipe2(os.O_CLOEXEC)
    except AttributeError:
        pass
    os.dup2(r, 100)
    os.dup(r)
    os.isatty(0)
    try:
        os.get_terminal_size()
    except OSError:
        pass


@part
def process_info():
    import getpass
    import grp
    import platform
    import pwd
    import resource
    os.getpid(), os.getppid(), os.getuid(), os.geteuid(), os.getgid(), os.getegid()
    os.getgroups(), os.getresuid(), os.getresgid(), os.getpgrp(), os.getsid(0)
    os.getpgid(0), os.getpriority(os.PRIO_PROCESS, 0), os.nice(0)
    os.uname(), os.cpu_count(), os.getloadavg(), os.times()
    os.sched_getaffinity(0)
    os.sched_yield()
    try:
        os.sched_getscheduler(0)
        os.sched_getparam(0)
    except OSError:
        pass
    resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    resource.getrusage(resource.RUSAGE_SELF)
    resource.getpagesize()
    try:
        pwd.getpwuid(os.getuid())
        grp.getgrgid(os.getgid())
        getpass.getuser()
    except (KeyError, OSError):
        pass
    platform.platform()
    platform.uname()
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    os.urandom(16)
    try:
        os.getrandom(16)
    except AttributeError:
        pass
    import locale
    locale.setlocale(locale.LC_ALL, "")
    import sysconfig
    sysconfig.get_config_vars()
    sys.getfilesystemencoding()


@part
def time_and_signals():
    import signal
    import time
    time.time(), time.monotonic(), time.perf_counter(), time.process_time()
    time.thread_time()
    time.clock_gettime(time.CLOCK_REALTIME)
    time.clock_getres(time.CLOCK_MONOTONIC)
    time.sleep(0.001)
    time.localtime(), time.strftime("%c"), time.tzset()
    hits = []
    signal.signal(signal.SIGUSR1, lambda *a: hits.append(1))
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.raise_signal(signal.SIGUSR1) if hasattr(signal, "raise_signal") else None
    signal.pthread_kill(__import__("threading").get_ident(), signal.SIGUSR1)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR2])
    signal.sigpending()
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    signal.getitimer(signal.ITIMER_REAL)
    signal.alarm(0)
    signal.signal(signal.SIGALRM, lambda *a: hits.append(2))
    signal.setitimer(signal.ITIMER_REAL, 0.001)
    time.sleep(0.05)
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    signal.set_wakeup_fd(-1)
    signal.siginterrupt(signal.SIGUSR1, True)
    try:
        signal.sigtimedwait([signal.SIGUSR2], 0)
    except Exception:
        pass
    import faulthandler
    faulthandler.enable()
    faulthandler.dump_traceback_later(10)
    faulthandler.cancel_dump_traceback_later()
    faulthandler.disable()


@part
def threads():
    import concurrent.futures
    import queue
    import threading
    q = queue.Queue()
    ev = threading.Event()
    lock = threading.Lock()
    cond = threading.Condition()

    def w(i):
        with lock:
            q.put(i)
        ev.wait(0.01)
        with cond:
            cond.notify_all()
        return i * i

    ts = [threading.Thread(target=w, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(w, range(20)))
    threading.Timer(0.001, lambda: None).start()
    b = threading.Barrier(2)
    t = threading.Thread(target=b.wait)
    t.start()
    b.wait()
    t.join()
    threading.stack_size(1 << 20)
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    threading.stack_size(0)


@part
def io_multiplexing():
    import select
    import selectors
    import socket
    a, b = socket.socketpair()
    a.sendall(b"x")
    b.recv(1)
    a.send(b"y")
    b.recv_into(bytearray(1))
    a.sendmsg([b"z"])
    b.recvmsg(1)
    import array
    try:
        r, w = os.pipe()
        socket.send_fds(a, [b"f"], [r]) if hasattr(socket, "send_fds") else \
            a.sendmsg([b"f"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
        b.recvmsg(1, socket.CMSG_SPACE(4))
    except OSError:
        pass
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    a.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
    a.getsockname(), a.getpeername()
    a.settimeout(0.01)
    try:
        a.recv(1)
    except OSError:
        pass
    select.select([b], [a], [], 0)
    p = select.poll()
    p.register(b, select.POLLIN)
    p.poll(0)
    e = select.epoll()
    e.register(b, select.EPOLLIN)
    e.poll(0)
    e.close()
    s = selectors.DefaultSelector()
    s.register(b, selectors.EVENT_READ)
    s.select(0)
    s.close()
    a.shutdown(socket.SHUT_RDWR)
    a.close()
    b.close()
    socket.gethostname()
    try:
        socket.getaddrinfo("localhost", 80)
    except OSError:
        pass
    try:
        socket.if_nameindex()
    except OSError:
        pass
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
    except OSError:
        pass
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        c = socket.create_connection(s.getsockname())
        conn, _ = s.accept()
        conn.sendall(b"x")
        c.recv(1)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"x", s.getsockname())
        u.connect(("127.0.0.1", 9))
        s.close(), c.close(), conn.close(), u.close()
    except OSError:
        pass
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
    except OSError:
        pass


@part
def asyncio_part():
    import asyncio

    async def main():
        r, w = await asyncio.open_connection(sock=None) if False else (None, None)
        await asyncio.sleep(0.001)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sum, [1, 2])
        q = asyncio.Queue()
        await q.put(1)
        await q.get()
        await asyncio.gather(*(asyncio.sleep(0) for _ in range(10)))
        try:
            await asyncio.wait_for(asyncio.sleep(1), 0.001)
        except asyncio.TimeoutError:
            pass
        import socket
        a, b = socket.socketpair()
        loop.add_reader(b.fileno(), lambda: None)
        await loop.sock_sendall(a, b"x")
        await loop.sock_recv(b, 1)
        loop.remove_reader(b.fileno())
        a.close(), b.close()
    asyncio.run(main())


@part
def subprocesses():
    import multiprocessing
    import subprocess
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
    subprocess.run(["/bin/sh", "-c", "echo hi | cat >/dev/null; ls / >/dev/null; true"],
                   check=False)
    p = subprocess.Popen([sys.executable, "-I", "-S", "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.communicate(b"x" * 100000)
    subprocess.run([sys.executable, "-c", "pass"], close_fds=False, cwd="/tmp",
                   env={"A": "1"}, start_new_session=True)
    try:
        subprocess.run(["sleep", "10"], timeout=0.05)
    except subprocess.TimeoutExpired:
        pass
    os.system("true")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", "pass"],
                             os.environ)
        os.waitpid(pid, 0)
    except AttributeError:
        pass
    if hasattr(os, "pidfd_open"):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        try:
            os.pidfd_open(pid)
        except OSError:
            pass
        os.waitid(os.P_PID, pid, os.WEXITED) if hasattr(os, "waitid") else os.waitpid(pid, 0)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        pool.map(abs, range(10))
    q = ctx.Queue()
    pr = ctx.Process(target=q.put, args=(1,))
    pr.start()
    q.get()
    pr.join()
    a, b = ctx.Pipe()
    a.send(1)
    b.recv()
    v = ctx.Value("i", 0)
    v.value += 1
    try:
        ctx = multiprocessing.get_context("spawn")
        pr = ctx.Process(target=abs, args=(1,))
        pr.start()
        pr.join()
    except Exception:
        pass
    try:
        ctx = multiprocessing.get_context("forkserver")
        pr = ctx.Process(target=abs, args=(1,))
        pr.start()
        pr.join()
    except Exception:
        pass
    try:
        from multiprocessing import shared_memory
        sm = shared_memory.SharedMemory(create=True, size=4096)
        sm.close()
        sm.unlink()
    except Exception:
        pass


@part
def data():
    import bz2
    import collections
    import csv
    import datetime
    import decimal
    import fractions
    import gzip
    import hashlib
    import hmac
    import io
    import json
    import lzma
    import math
    import pickle
    import random
    import re
    import secrets
    import statistics
    import struct
    import textwrap
    import unicodedata
    import uuid
    import zipfile
    import zlib
    json.loads(json.dumps({"a": [1, 2.5, None, "x"]}))
    re.sub(r"(\w+)", r"<\1>", "hello world" * 100)
    zlib.decompress(zlib.compress(b"x" * 100000))
    gzip.decompress(gzip.compress(b"x" * 1000))
    bz2.decompress(bz2.compress(b"x" * 1000))
    lzma.decompress(lzma.compress(b"x" * 1000))
    for n in ("md5", "sha1", "sha256", "sha512", "blake2b", "sha3_256"):
        hashlib.new(n, b"x").hexdigest()
    hmac.new(b"k", b"m", "sha256").hexdigest()
    try:
        hashlib.pbkdf2_hmac("sha256", b"p", b"s", 1000)
        hashlib.scrypt(b"p", salt=b"s", n=16, r=8, p=1)
    except (AttributeError, ValueError):
        pass
    random.random(), random.SystemRandom().random(), secrets.token_hex(8), uuid.uuid4()
    uuid.uuid1()
    decimal.Decimal(1) / decimal.Decimal(7)
    fractions.Fraction(1, 3) + 1
    statistics.mean([1, 2, 3])
    math.factorial(500)
    datetime.datetime.now().isoformat()
    datetime.datetime.now(datetime.timezone.utc).astimezone()
    try:
        import zoneinfo
        zoneinfo.ZoneInfo("Europe/Paris")
    except Exception:
        pass
    pickle.loads(pickle.dumps(collections.OrderedDict(a=1)))
    struct.pack("<iqd", 1, 2, 3.0)
    buf = io.StringIO()
    csv.writer(buf).writerow([1, "a"])
    textwrap.fill("word " * 100)
    unicodedata.name("é")
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("a", "b")
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(), mode="w:gz") as t:
        pass
    import sqlite3
    c = sqlite3.connect(":memory:")
    c.execute("create table t(x)")
    c.executemany("insert into t values (?)", [(i,) for i in range(100)])
    c.execute("select sum(x) from t").fetchone()
    d = tempfile.mkdtemp()
    c = sqlite3.connect(os.path.join(d, "db.sqlite"))
    c.execute("pragma journal_mode=wal")
    c.execute("create table t(x)")
    c.execute("insert into t values (1)")
    c.commit()
    c.close()
    import ctypes
    import ctypes.util
    ctypes.CDLL(None).getpid()
    ctypes.util.find_library("c")
    ctypes.create_string_buffer(100)
    CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    CB(lambda x: x)(1)
    import mmap
    m = mmap.mmap(-1, 1 << 20)
    m[0:1] = b"x"
    try:
        m.madvise(mmap.MADV_DONTNEED)
    except AttributeError:
        pass
    m.resize(2 << 20)
    m.flush()
    m.close()
    with open(os.path.join(d, "m"), "wb") as f:
        f.write(b"x" * 8192)
    with open(os.path.join(d, "m"), "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        m.flush()
        m.close()
    import gc
    big = [bytearray(1 << 20) for _ in range(50)]
    del big
    gc.collect()
    bytearray(200 << 20)
    import array
    array.array("d", range(100000)).tobytes()
    import logging
    logging.getLogger("x").warning("w")
    import tracemalloc
    tracemalloc.start()
    tracemalloc.stop()
    import cProfile
    cProfile.run("sum(range(1000))", os.path.join(d, "prof"))
    import pdb  # noqa: F401
    import doctest  # noqa: F401
    import unittest  # noqa: F401
    import email.message
    email.message.EmailMessage()
    import xml.etree.ElementTree as ET
    ET.fromstring("<a><b/></a>")
    import html.parser  # noqa: F401
    import urllib.parse
    urllib.parse.urlparse("http://x/y")
    import http.client  # noqa: F401
    import ssl
    try:
        ssl.create_default_context()
    except Exception:
        pass
    import compileall
    compileall.compile_dir(d, quiet=1)
    import importlib
    importlib.invalidate_caches()
    import py_compile
    with open(os.path.join(d, "mod.py"), "w") as f:
        f.write("x = 1\n")
    py_compile.compile(os.path.join(d, "mod.py"))
    sys.path.insert(0, d)
    importlib.import_module("mod")
    import readline  # noqa: F401
    import curses  # noqa: F401
    import termios
    try:
        termios.tcgetattr(0)
    except termios.error:
        pass
    import pty  # noqa: F401
    import tty  # noqa: F401
    import shutil
    shutil.rmtree(d)


@part
def exits():
    import atexit
    atexit.register(lambda: None)
    sys.stdout.flush()


if __name__ == "__main__":
    for f in PARTS:
        try:
            f()
            print("ok", f.__name__)
        except Exception:
            print("FAILED", f.__name__)
            traceback.print_exc()
