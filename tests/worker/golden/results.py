import math

def r_set():
    return {1, 2}

def r_tuple():
    return (1, 2)

def r_nested_tuple():
    return {"a": [1, (2,)]}

def r_bytes():
    return b"x"

def r_nan():
    return float("nan")

def r_inf():
    return [math.inf]

def r_int_keys():
    return {1: "a"}

def r_object():
    return object()

def r_cycle():
    a = []
    a.append(a)
    return a

def r_bool_subclass():
    import enum
    class E(enum.IntEnum):
        A = 1
    return E.A

def r_surrogate():
    return "\ud800"

def r_deep(n: int):
    v = None
    for _ in range(n):
        v = [v]
    return v

def r_big(n: int):
    return "x" * n

def r_coroutine():
    async def c():
        return 1
    return c()
