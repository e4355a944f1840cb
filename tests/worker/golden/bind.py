def sync(a, b=1):
    return a

async def coro(a):
    return a

def gen():
    yield 1

class C:
    pass

def replaced():
    return 1

globals()["replaced"] = len
