import functools

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return {"wrapped": fn(*args, **kwargs)}
    return wrapper

@logged
def hello(name: str, /, *, punct: str = "!") -> str:
    return "hello " + name + punct

@functools.lru_cache(maxsize=None)
def cached(x: int) -> int:
    return x
