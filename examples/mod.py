"""Functions for `govex call` and `govex mcp --module` (see the README)."""
from typing import List


def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def mean(values: List[float]) -> float:
    """The arithmetic mean of a non-empty list of numbers."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


async def greet(name: str, excited: bool = False) -> str:
    """A greeting (an async function: govex runs it on a fresh event loop)."""
    return "Hello, %s%s" % (name, "!" if excited else ".")
