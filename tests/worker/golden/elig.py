def gen():
    yield 1

async def agen():
    yield 1

async def coro():
    return [x async for x in agen()]

def outer():
    def inner():
        yield 1
    return inner

def star(*args):
    return args

def kw(**kwargs):
    return kwargs

def twice():
    return 1

def twice():
    return 2

def rebound():
    return 1
rebound = None

def ok(a, b=1, *, c):
    return a
