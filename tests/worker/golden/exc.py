import sys

def boom(path: str):
    raise ValueError("cannot open " + path + " token=hunter2")

def leave():
    sys.exit("/home/alice/.ssh/id_rsa")

def interrupt():
    raise KeyboardInterrupt("/secret/ki")

class Weird(Exception):
    pass

def custom():
    raise Weird("/secret/custom")

def ok():
    return 1
