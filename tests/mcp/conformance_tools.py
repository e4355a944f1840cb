"""The tools the official MCP conformance suite's tool scenarios call, written as the
module functions `govex mcp --module` serves (tests/mcp/test_conformance.py)."""
import base64
import os
import time

# a 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def _out(name, data):
    with open(os.path.join(os.environ["GOVEX_OUTPUT_DIR"], name), "wb") as f:
        f.write(data)


def test_simple_text() -> str:
    """Returns a simple text."""
    return "This is a simple text response for testing."


def test_tool_with_logging() -> str:
    """Prints three lines, 50 ms apart."""
    print("Tool execution started", flush=True)
    time.sleep(0.05)
    print("Tool processing data", flush=True)
    time.sleep(0.05)
    print("Tool execution completed", flush=True)
    return "logged"


def test_error_handling() -> None:
    """Raises."""
    raise RuntimeError("This tool intentionally returns an error for testing")


def test_tool_with_progress() -> str:
    """Runs long enough for three progress notifications."""
    time.sleep(2.6)
    return "done"


def test_image_content() -> str:
    """Leaves a PNG in the output directory."""
    _out("red.png", PNG)
    return "an image"


def test_embedded_resource() -> str:
    """Leaves a text file in the output directory."""
    _out("resource.txt", b"This is an embedded resource content.")
    return "a resource"


def test_multiple_content_types() -> str:
    """Leaves a PNG and a text file in the output directory."""
    _out("red.png", PNG)
    _out("resource.txt", b"This is an embedded resource content.")
    return "mixed"
