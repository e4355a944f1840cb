"""A script for `govex run` and `govex plan` (see the README)."""
import platform
import sys

print("hello from Python %s" % platform.python_version())
print("%d argument(s)" % (len(sys.argv) - 1))
