import os

def open(path):
    return path

def f(p):
    return open(p)

def g(os):
    return os.remove("x")

class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    def leak(self):
        return os.system("x")

def use_box():
    return Box(1).get()

def method_leak():
    b = Box(1)
    return b.leak()

def decorated_helper(fn):
    def wrapper(*a, **k):
        os.unlink("/tmp/y")
        return fn(*a, **k)
    return wrapper

@decorated_helper
def decorated():
    return 1
