"""Syntax of Python 3.10 and later: match statements bind names at module level."""
import os
import subprocess


def handler(cmd: "str | None" = None, /, *args: int, flag: bool = False, **kw: str) -> int:
    """Needs Python 3.10."""
    match cmd:
        case None:
            return 0
        case "env":
            return len(os.environ)
        case str() as other:
            return subprocess.call([other])
    return -1


match os.name:
    case "posix":
        def platform_only():
            return os.getcwd()
    case _:
        platform_only = None


def walrus(items: list[int]):
    if (n := len(items)) > 3:
        return n
    return [y for x in items if (y := x * 2)]


def fine(a: dict[str, list[int]], b: tuple[int, ...] = ()) -> dict[str, int]:
    return {k: sum(v) for k, v in a.items()}
