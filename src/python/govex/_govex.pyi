# The C half (src/python/_govex.c): untyped on purpose; govex/__init__.py is the typed API.
from typing import Any

RESULT_VERSION: str
HEADER_VERSION: str

def __getattr__(name: str) -> Any: ...
