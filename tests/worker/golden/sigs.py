import typing
from typing import Dict, List, Optional

def plain(a: int, b: int) -> int:
    """Adds two numbers.

    Second line, indented.
    """
    return a + b

async def fetch(url: str, *, retries: "int" = 3, timeout: Optional[float] = None) -> Dict[str, List[int]]:
    return {}

def posonly(a, b=2, /, c=3, *, d, e=5):
    return [a, b, c, d, e]

def unannotated(x, y=None):
    def nested():
        pass
    return x

class K:
    def method(self):
        return 1

def wide(m: Dict[str,   "é"] = None, n: 'ü' = 1):
    return 0
