#!/usr/bin/env python3
"""--help works for govex and every subcommand, each printing its own usage that lists the
options govex(1)'s synopsis gives that command; unknown input is refused."""
import os
import re
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SUBCOMMANDS = ["run", "plan", "policy", "backends"]


def _help_test(sub):
    def fn(t):
        r = t.run([sub, "--help"])
        r.expect_rc(0)
        g.check(sub.encode() in r.stdout, "`govex %s --help` stdout does not mention %r: %r"
                % (sub, sub, r.stdout[:300]))
    return fn


def test_top_help(t):
    r = t.run(["--help"])
    r.expect_rc(0)
    for sub in SUBCOMMANDS:
        g.check(sub.encode() in r.stdout, "`govex --help` does not mention %r" % sub)


def test_unknown_subcommand(t):
    r = t.run(["frobnicate"])
    g.check(r.returncode not in (0, None) and not r.hard_timeout,
            "unknown subcommand exit status %r" % r.returncode)
    g.check(r.stderr, "unknown subcommand: nothing on stderr")


def test_unknown_option(t):
    r = t.run(["run", "--frobnicate", "-c", "pass"])
    r.expect_rc(g.EXIT_REFUSED)
    g.check(b"frobnicate" in r.stderr, "stderr does not name the option: %r" % r.stderr)


MAN = os.path.join(g.REPO, "docs", "govex.1")
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# a short option: at a line's start, or after a bracket, a bar or a comma ("sh -c" is not)
SHORT = re.compile(r"(?:^\s*|[\[(|,]\s*)(-[A-Za-z])(?![\w-])", re.M)
# documented for every command (govex(1) OPTIONS), in no synopsis
EVERYWHERE = {"--help", "-h"}


def _options(text):
    return (set(LONG.findall(text)) | set(SHORT.findall(text))) - EVERYWHERE


def _commands():
    """The commands `govex --help` lists."""
    r = g.run(["--help"])
    r.expect_rc(0)
    text = r.out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+) ", text, re.M)]


def _man_synopsis():
    """{command: set of options} from govex(1)'s SYNOPSIS, one .SY block per form."""
    with open(MAN, encoding="utf-8") as f:
        man = f.read()
    syn = man.split("\n.SH SYNOPSIS\n", 1)[1].split("\n.SH ", 1)[0]
    forms = {}
    for block in syn.split(".SY govex\n")[1:]:
        lines = block.split(".YS")[0].strip().split("\n")
        m = re.match(r"\.B (\S+)", lines[0])
        g.check(m, "govex(1) synopsis: a form without a command: %r" % lines[0])
        text = "\n".join(re.sub(r"^\.[A-Z]+ ?", "", ln) for ln in lines[1:])
        text = text.replace("\\-", "-").replace("\\~", " ").replace('"', "")
        forms.setdefault(m.group(1), set()).update(_options(text))
    return forms


def _help_of(cmd, bad=None):
    """`govex CMD --help`; a text not starting with its own usage line fails (or, given
    bad, is noted there)."""
    r = g.run([cmd, "--help"])
    r.expect_rc(0)
    if not r.out.startswith("usage: govex %s" % cmd):
        why = "`govex %s --help` is not its own usage: %r" % (cmd, r.out[:80])
        g.check(bad is not None, why)
        bad.append(why)
    return r.out


def test_help_matches_man(t):
    commands = _commands()
    man = _man_synopsis()
    g.eq(sorted(man), sorted(commands), "commands of govex(1)'s synopsis vs govex --help")
    texts = {}
    bad = []
    for cmd in commands:
        text = _help_of(cmd, bad)
        if text in texts.values():
            bad.append("`govex %s --help` prints another's usage" % cmd)
        texts[cmd] = text
        listed = _options(text)
        for o in sorted(listed - man[cmd]):
            bad.append("govex %s --help lists %s, govex(1) does not" % (cmd, o))
        for o in sorted(man[cmd] - listed):
            bad.append("govex(1) gives govex %s %s, its --help does not" % (cmd, o))
    g.check(not bad, "\n".join(bad))


def test_help_lists_accepted(t):
    """Each option a command's --help lists is one the command accepts (for plan: one of
    its two forms does): never refused as unknown."""
    tails = {"plan": [[], ["nosuch.py:f"]]}
    bad = []
    for cmd in _commands():
        text = _help_of(cmd)
        for opt in sorted(_options(text)):
            # an option shown with a metavariable (--stdin FILE) gets an argument
            arg = ["x"] if re.search(re.escape(opt) + r"[ =][A-Z]", text) else []
            errs = [t.run([cmd, opt] + arg + tail).err for tail in tails.get(cmd, [[]])]
            if all("unknown" in e and opt in e for e in errs):
                bad.append("govex %s refuses %s, which its --help lists: %s"
                           % (cmd, opt, errs[0].strip()))
    g.check(not bad, "\n".join(bad))


def test_plan_help_own(t):
    """govex plan's usage is a plan's: no approval, no result but a refusal's."""
    text = _help_of("plan")
    for word in ("--approver", "--ask", "--args", "--plan "):
        g.check(word not in text, "govex plan --help offers %s" % word.strip())
    g.check("govex.plan/v1" in text, "govex plan --help does not say it prints a plan")
    r = t.run(["plan", "x.py:f", "--help"])
    r.expect_rc(0)
    g.eq(r.out, text, "govex plan FILE:FUNCTION --help vs govex plan --help")


TESTS = [("govex --help lists the subcommands", test_top_help)] + [
    ("govex %s --help exits 0 and mentions %s" % (s, s), _help_test(s)) for s in SUBCOMMANDS
] + [
    ("unknown subcommand fails with a message", test_unknown_subcommand),
    ("run with an unknown option exits 125 naming it", test_unknown_option),
    ("each command's --help lists exactly the options govex(1)'s synopsis gives it",
     test_help_matches_man),
    ("each option a command's --help lists, the command accepts", test_help_lists_accepted),
    ("govex plan --help is plan's own usage, for both its forms", test_plan_help_own),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
