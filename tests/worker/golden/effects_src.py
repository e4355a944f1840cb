import os
import socket
import subprocess
import urllib.request
from pathlib import Path
from dataclasses import dataclass
import importlib
import requests

def add(a: int, b: int) -> int:
    return a + b

def connect(host):
    s = socket.socket()
    s.connect((host, 80))

def connect_inner():
    import socket as sk
    return sk.create_connection(("example.org", 80))

def unresolved(x):
    return frobnicate(x)

def _writer(path):
    with open(path, "w") as f:
        f.write("x")

def writes_via_helper(path: str) -> None:
    _writer(path)

def a1():
    return a2()

def a2():
    return a3()

def a3():
    return subprocess.run(["true"])

def ping(n):
    return pong(n - 1) if n else 0

def pong(n):
    os.remove("/tmp/x")
    return ping(n)

def reads(path):
    with open(path) as f:
        return f.read()

def mode_unknown(path, mode):
    return open(path, mode)

def env():
    return os.environ["HOME"], os.getenv("USER")

def dyn(code):
    return eval(code)

def dyn_getattr(obj, name):
    return getattr(obj, name)

def literal_getattr(x: int):
    return getattr(x, "real")

def dyn_import(name):
    return importlib.import_module(name)

def method_unknown(x):
    return x.frob()

def method_str(s: str) -> str:
    return s.strip().upper() + " ".join(["a", "b"])

def path_write(p):
    Path(p).write_text("x")

def url(u):
    return urllib.request.urlopen(u).read()

def req(u):
    return requests.get(u)

@dataclass
class Point:
    x: int
    y: int

def make_point(x: int, y: int):
    return Point(x, y).x

def sorter(items: list):
    return sorted(items, key=lambda v: len(v))

def mapper(paths: list):
    return list(map(os.remove, paths))

def local_data():
    d = {"a": [1, 2]}
    d["a"].append(3)
    parts = "a,b".split(",")
    for p in parts:
        p.strip()
    return d

def spawn():
    os.system("true")

if __name__ == "__main__":
    frobnicate()
