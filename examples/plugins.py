"""A function whose effects static inspection cannot decide (see the README)."""
import importlib


def plugin_name(module: str) -> str:
    """Imports a module named at run time: what it does is unknown until then."""
    return importlib.import_module(module).__name__
