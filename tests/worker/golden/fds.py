import os

def inheritable():
    out = []
    for fd in range(64):
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:
            pass
    return out

def fd3_closed():
    try:
        os.fstat(3)
    except OSError:
        return True
    return False

def stdin_empty():
    return os.read(0, 10) == b""
