from subprocess import run as sh
import builtins, os, shutil, tempfile

def via_alias():
    return sh(["true"])

def via_builtins(code):
    return builtins.exec(code)

def via_dunder_import(n):
    return __import__(n)

def via_compile(src):
    return compile(src, "x", "exec")

def copies(a, b):
    shutil.copy(a, b)

def temp():
    return tempfile.mkdtemp()

def lists(d):
    return os.listdir(d)

def putenv():
    os.environ["X"] = "1"

def local_fn_escape():
    def inner():
        os.system("x")
    return inner
