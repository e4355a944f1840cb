import asyncio
from typing import Optional, List, Dict

_SENTINEL = object()
state = []

def add(a: int, b: int) -> int:
    return a + b

async def aadd(a: int, b: int = 10) -> int:
    await asyncio.sleep(0)
    return a + b

async def gathered(n: int):
    async def one(i):
        await asyncio.sleep(0)
        return i * i
    return list(await asyncio.gather(*[one(i) for i in range(n)]))

def shape(a, b=2, /, c=3, *, d, e=5):
    return [a, b, c, d, e]

def gap(a=1, b=2, /):
    return [a, b]

def omitted(x=_SENTINEL, *, y=_SENTINEL):
    return [x is _SENTINEL, y is _SENTINEL]

def echo(v):
    return v

def maybe(x: Optional[int] = 5, y: "int | None" = 5, z=5, w: Optional[List[int]] = None):
    return [x, y, z, w]

def strict_int(x: int):
    return x

def strict_list(x: List[int]):
    return x

def strict_dict(x: dict):
    return x

def mutate():
    state.append(1)
    return len(state)

def noisy():
    import os, sys
    print("to stdout " * 100)
    sys.stdout.write("more stdout\n")
    sys.stderr.write("to stderr\n")
    os.write(1, b"raw fd 1\n")
    return "quiet"

def cwd_empty():
    import os
    return os.listdir(".")

def unicode():
    return {"s": "\u00fc\u2028\U0001F600", "k\u00e9": [1.5, -0.0, 2**63 - 1, True, None]}

def too_big():
    return [-(2**63), 2**64]
