#!/usr/bin/env python3
"""The README's commands work as written: every `build/govex ...` line of its shell blocks
runs (from a copy of examples/ and the README's own files, with this build's govex) and
exits as the line says (0, or what its comment names), and what a comment says it prints
is what it prints."""
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

README = os.path.join(g.REPO, "README.md")


def _blocks(text, lang):
    return re.findall(r"```%s\n(.*?)```" % lang, text, re.S)


def _commands():
    with open(README) as f:
        text = f.read()
    cmds = []
    for block in _blocks(text, "sh"):
        for line in block.splitlines():
            # govex's own lines, and the shell lines around them (mkdir, cat)
            if line.startswith(("build/govex ", "mkdir -p out && build/govex ",
                                "cat out/")):
                cmds.append(line)
    return text, cmds


def _expectation(line):
    """(command, expected stdout or None) from a line's trailing comment."""
    cmd, _, comment = line.partition("  #")
    m = re.match(r"\s*prints (.+)$", comment.strip())
    want = m.group(1).strip() if m else None
    return cmd.strip(), want


def test_commands(t):
    g.need_python()
    text, cmds = _commands()
    g.check(len(cmds) >= 15, "the README lists its commands (%d found)" % len(cmds))
    work = t.path("tree")
    shutil.copytree(os.path.join(g.REPO, "examples"), os.path.join(work, "examples"))
    os.makedirs(os.path.join(work, "build"))
    os.symlink(os.path.abspath(g.GOVEX), os.path.join(work, "build", "govex"))
    for line in cmds:
        cmd, want = _expectation(line)
        p = subprocess.run(["bash", "-c", cmd], cwd=work, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        out = p.stdout.decode("utf-8", "replace")
        g.check(p.returncode == 0, "README: %s\n-> exit %d\n%s%s" % (
            cmd, p.returncode, out[-800:], p.stderr.decode("utf-8", "replace")[-800:]))
        if want is not None:
            g.check(out.strip() == want, "README: %s\n-> printed %r, the README says %r" % (
                cmd, out.strip(), want))
        if cmd.endswith("echo $?"):
            comment = line.partition("  #")[2].strip()
            g.check(out.strip().splitlines()[-1] == comment,
                    "README: %s\n-> exit %r, the README says %r" % (cmd, out.strip(), comment))


def test_module_shown_is_the_example(t):
    """The module the README shows is examples/mod.py (less its docstring)."""
    text, _ = _commands()
    shown = [b for b in _blocks(text, "python") if "def add(" in b]
    g.check(len(shown) == 1, "the README shows mod.py once")
    with open(os.path.join(g.REPO, "examples", "mod.py")) as f:
        real = f.read()
    g.check(shown[0].strip() in real, "the README's mod.py is examples/mod.py")


TESTS = [
    ("every govex command line of the README works as written", test_commands),
    ("the module the README shows is examples/mod.py", test_module_shown_is_the_example),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
