#!/usr/bin/env python3
"""The shell completions (completions/govex.bash, completions/_govex) complete govex's
commands, each command's own options (the ones its --help lists), the values of
--preset, --backend and the file and directory options, policy's verbs and presets, a
call's FILE and FILE.py:FUNCTION (from a static inspection: the file is never run).

bash: its completion function is called as bash calls it (COMP_WORDS, COMP_CWORD,
COMP_LINE, COMP_POINT set, COMPREPLY read back).  zsh: an interactive zsh on a
pseudo-terminal, compinit with completions/ on $fpath, a key bound to complete-word;
compadd is wrapped to record the matches each call adds, and the line after completion
is recorded too."""
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

COMPLETIONS = os.path.join(g.REPO, "completions")
BASH = os.path.join(COMPLETIONS, "govex.bash")
ZSH_DIR = COMPLETIONS
PRESETS = ["strict", "workspace", "trusted"]
BACKENDS = ["controlled", "restricted"]
VERBS = ["check", "canon", "digest", "show"]
# the module whose functions a call completes: importing it would write IMPORTED
MODULE = """\
import os
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "IMPORTED"), "w").close()

def alpha(x: int) -> int:
    return x

async def beta() -> None:
    pass

def _private() -> None:
    pass

class K:
    def method(self) -> None:
        pass

if True:
    def nested() -> None:
        pass
"""
NOTEBOOK = """{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {},
 "outputs": [], "source": ["def from_notebook(a: int) -> int:\\n", "    return a\\n"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
"""


def _tree(t):
    """A working directory to complete in, and a PATH whose govex is the one tested."""
    os.makedirs(t.path("bin"))
    os.symlink(os.path.abspath(g.GOVEX), t.path("bin", "govex"))
    os.makedirs(t.path("work", "sub"))
    t.write("work/mod.py", MODULE)
    t.write("work/sub/nb.ipynb", NOTEBOOK)
    t.write("work/pol.json", "{}")
    t.write("work/notes.txt", "")
    env = dict(os.environ, PATH=t.path("bin") + os.pathsep + os.environ.get("PATH", ""),
               HOME=t.path("work"), XDG_CACHE_HOME=t.path("cache"))
    return t.path("work"), env


def _bash_words(line, colon=True):
    """COMP_WORDS as bash splits LINE: at blanks, and runs of '=' (and ':' when colon,
    COMP_WORDBREAKS's default) are words of their own."""
    brk = "=:" if colon else "="
    words = []
    for tok in line.split():
        words += re.findall("[%s]+|[^%s]+" % (brk, brk), tok)
    if not line or line[-1].isspace():
        words.append("")
    return words


BASH_DRIVER = r"""
source "$1" || exit 1
[ "$2" = colon ] || COMP_WORDBREAKS=${COMP_WORDBREAKS//:/}
COMP_LINE=$3
COMP_POINT=${#COMP_LINE}
shift 3
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
[ "$(complete -p govex)" = "complete -F _govex govex" ] || { echo "not registered"; exit 1; }
_govex || { echo "_govex: status $?"; exit 1; }
printf '%s\n' "${COMPREPLY[@]}"
"""


def bash_complete(t, line, colon=True, tree=None):
    cwd, env = tree or _tree(t)
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", BASH_DRIVER, "bash", BASH,
                        "colon" if colon else "nocolon", line] + _bash_words(line, colon),
                       cwd=cwd, env=env, capture_output=True, timeout=60)
    g.check(p.returncode == 0, "bash completion of %r: status %d: %r %r"
            % (line, p.returncode, p.stdout, p.stderr))
    return [w for w in p.stdout.decode().split("\n") if w]


def _commands():
    r = g.run(["--help"])
    r.expect_rc(0)
    text = r.out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+) ", text, re.M)]


def _help_options(cmd):
    """The options `govex CMD --help` lists (plus --help and -h, which all take)."""
    r = g.run([cmd, "--help"])
    r.expect_rc(0)
    found = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", r.out))
    found |= set(re.findall(r"(?:^\s*|[\[(|,]\s*)(-[A-Za-z])(?![\w-])", r.out, re.M))
    return found | {"--help", "-h"}


def _same(got, want, what):
    g.eq(sorted(set(got)), sorted(set(want)), what)


# ---- bash ----------------------------------------------------------------------------

def test_bash_commands(t):
    tree = _tree(t)
    _same(bash_complete(t, "govex ", tree=tree), _commands(), "'govex <Tab>'")
    _same(bash_complete(t, "govex ru", tree=tree), ["run"], "'govex ru<Tab>'")
    _same(bash_complete(t, "govex --v", tree=tree), ["--version"], "'govex --v<Tab>'")
    _same(bash_complete(t, "govex frobnicate --", tree=tree), [],
          "an unknown command's options")


def test_bash_options(t):
    tree = _tree(t)
    bad = []
    for cmd in _commands():
        if cmd == "policy":
            continue        # its first word is a verb
        got, want = set(bash_complete(t, "govex %s -" % cmd, tree=tree)), _help_options(cmd)
        if got != want:
            bad.append("govex %s -<Tab>: %s; its --help: %s" % (cmd, sorted(got), sorted(want)))
    g.check(not bad, "\n".join(bad))
    _same(bash_complete(t, "govex run --pre", tree=tree), ["--preset"], "'govex run --pre'")


def test_bash_values(t):
    tree = _tree(t)
    for line, want in [
            ("govex run --preset ", PRESETS), ("govex exec --preset=w", ["workspace"]),
            ("govex call --backend ", BACKENDS), ("govex run --backend r", ["restricted"]),
            ("govex run --policy p", ["pol.json"]), ("govex run --policy=p", ["pol.json"]),
            ("govex run --output-dir ", ["sub"]), ("govex run --timeout-ms ", []),
            ("govex policy ", VERBS), ("govex policy show ", PRESETS),
            ("govex policy show w", ["workspace"]), ("govex policy check p", ["pol.json"]),
            ("govex inspect m", ["mod.py"]), ("govex run --json no", ["notes.txt"])]:
        _same(bash_complete(t, line, tree=tree), want, repr(line))
    got = bash_complete(t, "govex exec --json -- ", tree=tree)
    g.check("sh" in got and "govex" in got, "'govex exec -- <Tab>': not the commands: %r"
            % got[:20])
    _same(bash_complete(t, "govex exec -- sh no", tree=tree), ["notes.txt"],
          "'govex exec -- sh no<Tab>'")


def test_bash_call(t):
    tree = _tree(t)
    _same(bash_complete(t, "govex call ", tree=tree), ["mod.py", "sub"],
          "'govex call <Tab>': .py, .ipynb and directories")
    _same(bash_complete(t, "govex call sub/", tree=tree), ["sub/nb.ipynb"], "'govex call sub/'")
    for colon in (True, False):
        pre = "" if colon else "mod.py:"
        _same(bash_complete(t, "govex call mod.py:", colon, tree), [pre + "alpha", pre + "beta",
              pre + "_private"], "'govex call mod.py:<Tab>' (':' a word break: %s)" % colon)
        _same(bash_complete(t, "govex call --json mod.py:a", colon, tree), [pre + "alpha"],
              "'govex call mod.py:a<Tab>' (':' a word break: %s)" % colon)
    _same(bash_complete(t, "govex plan mod.py:b", tree=tree), ["beta"], "'govex plan mod.py:b'")
    _same(bash_complete(t, "govex call sub/nb.ipynb:", tree=tree), ["from_notebook"],
          "a notebook's functions")
    _same(bash_complete(t, "govex call nosuch.py:", tree=tree), [], "a missing file's")
    g.check(not os.path.exists(t.path("work", "IMPORTED")),
            "completing mod.py's functions imported mod.py")


# ---- zsh -----------------------------------------------------------------------------

ZSH_SETUP = r"""
fpath=(%(dir)s $fpath)
autoload -Uz compinit && compinit -u -D
unsetopt auto_list auto_menu list_beep beep
# every match compadd adds, one a line (calls that only collect, -O -A -D, pass through)
compadd() {
	if (( ${@[(I)-[OAD]*]} )); then builtin compadd "$@"; return; fi
	local -a __m
	builtin compadd -O __m "$@"
	(( ${#__m} )) && print -rl -- $__m >>%(out)s
	builtin compadd "$@"
}
_t_complete() {
	zle complete-word
	print -r -- "--line--$BUFFER" >>%(out)s
	print -r -- --end-- >>%(out)s
	zle kill-whole-line
}
zle -N _t_complete
bindkey '^T' _t_complete
print -r -- --ready-- >>%(out)s
"""


class Zsh:
    """An interactive zsh on a pseudo-terminal, completing lines with ^T."""

    def __init__(self, t):
        self.zsh = shutil.which("zsh")
        if not self.zsh:
            raise g.Skip("no zsh")
        cwd, env = _tree(t)
        self.out = t.path("zsh.out")
        open(self.out, "w").close()
        setup = t.write("setup.zsh", ZSH_SETUP % {"dir": ZSH_DIR, "out": self.out})
        env.update(ZDOTDIR=t.path(), TERM="vt100")
        self.master, slave = pty.openpty()
        self.p = subprocess.Popen([self.zsh, "-f", "-i"], stdin=slave, stdout=slave,
                                  stderr=slave, cwd=cwd, env=env, start_new_session=True)
        os.close(slave)
        t.defer(self.close)
        self.ends = 0
        self._send("source %s\n" % setup)
        self._wait(lambda s: "--ready--" in s, "zsh's setup")

    def _send(self, s):
        os.write(self.master, s.encode())

    def _read(self):
        with open(self.out, encoding="utf-8", errors="replace") as f:
            return f.read()

    def _wait(self, done, what):
        deadline = time.monotonic() + 30
        while not done(self._read()):
            g.check(time.monotonic() < deadline and self.p.poll() is None,
                    "zsh: no %s (zsh status %r); recorded: %r"
                    % (what, self.p.poll(), self._read()))
            # keep the terminal drained, so that zsh never blocks writing to it
            while select.select([self.master], [], [], 0.05)[0]:
                try:
                    os.read(self.master, 65536)
                except OSError:
                    break

    def complete(self, line):
        """(the matches added, the line after complete-word) for LINE."""
        before = len(self._read())
        self.ends += 1
        self._send(line + "\x14")
        self._wait(lambda s: s.count("--end--") >= self.ends, "completion of %r" % line)
        got = self._read()[before:].split("\n")
        after = [x for x in got if x.startswith("--line--")][0][len("--line--"):]
        return [x for x in got if x and x != "--end--" and not x.startswith("--line--")], after

    def close(self):
        if self.p.poll() is None:
            os.write(self.master, b"\x15exit\n")
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, 9)
                self.p.wait()
        os.close(self.master)


def test_zsh(t):
    z = Zsh(t)
    checks = [("govex ", _commands()), ("govex ru", ["run"]), ("govex --v", ["--version"]),
              ("govex run --pre", ["--preset"]), ("govex run --preset ", PRESETS),
              ("govex exec --preset=w", ["workspace"]), ("govex call --backend ", BACKENDS),
              ("govex run --policy p", ["pol.json"]), ("govex run --output-dir ", ["sub"]),
              ("govex policy ", VERBS), ("govex policy show w", ["workspace"]),
              ("govex policy check p", ["pol.json"]), ("govex call ", ["mod.py", "sub"]),
              ("govex call mod.py:", ["alpha", "beta", "_private"]),
              ("govex plan --json mod.py:a", ["alpha"]),
              ("govex call sub/nb.ipynb:", ["from_notebook"]),
              ("govex exec -- sh no", ["notes.txt"])]
    bad = []
    for line, want in checks:
        got, _ = z.complete(line)
        if sorted(set(got)) != sorted(want):
            bad.append("%r: %s, not %s" % (line, sorted(set(got)), sorted(want)))
    for cmd in _commands():
        if cmd != "policy":
            got, _ = z.complete("govex %s -" % cmd)
            if set(got) != _help_options(cmd):
                bad.append("govex %s -<Tab>: %s; its --help: %s"
                           % (cmd, sorted(set(got)), sorted(_help_options(cmd))))
    # what the line becomes: a command and a space; a call's FILE and no space (":" next)
    for line, want in [("govex ru", "govex run "), ("govex call mo", "govex call mod.py"),
                       ("govex call su", "govex call sub/"),
                       ("govex call mod.py:al", "govex call mod.py:alpha ")]:
        _, after = z.complete(line)
        if after != want:
            bad.append("%r completes to %r, not %r" % (line, after, want))
    g.check(not bad, "\n".join(bad))
    g.check(not os.path.exists(t.path("work", "IMPORTED")),
            "completing mod.py's functions imported mod.py")


TESTS = [
    ("bash: the commands, govex's own options", test_bash_commands),
    ("bash: each command's options are the ones its --help lists", test_bash_options),
    ("bash: option values (presets, backends, files, directories), policy verbs, exec --",
     test_bash_values),
    ("bash: a call's FILE (.py, .ipynb, directories) and FILE:FUNCTION, never imported",
     test_bash_call),
    ("zsh: the same, through compinit and complete-word on a terminal", test_zsh),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
