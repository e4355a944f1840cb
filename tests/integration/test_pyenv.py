#!/usr/bin/env python3
"""A pyenv shim on PATH: its choice is cached across processes under a key of everything
pyenv's version selection reads, and a change to any of those inputs is seen.

A fake pyenv root (the real shim's format, a libexec/pyenv that selects like pyenv and
refuses to run while a `broken` marker exists) shows when the shim runs: with the marker
present, a run succeeds only if govex used its cached answer."""
import glob
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SHIM = """#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${0##*/}"

export PYENV_ROOT="@ROOT@"
exec "@ROOT@/libexec/pyenv" exec "$program" "$@"
"""

PYENV = """#!/bin/bash
if [ -e "@ROOT@/broken" ]; then echo "pyenv: broken" >&2; exit 3; fi
v="$PYENV_VERSION"
if [ -z "$v" ]; then
  d="${PYENV_DIR:-$PWD}"
  while :; do
    if [ -f "$d/.python-version" ]; then v=$(cat "$d/.python-version"); break; fi
    [ "$d" = / ] && break
    d=$(dirname "$d")
  done
fi
[ -z "$v" ] && v=$(cat "@ROOT@/version")
shift; program="$1"; shift
exec "@ROOT@/versions/$v/bin/$program" "$@"
"""

CODE = "import sys; print('%d.%d' % sys.version_info[:2])"


def _pythons():
    """Two interpreters of different minor versions: Debian's and a pyenv one."""
    a = "/usr/bin/python3.11"
    for b in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[23]*/bin/python3.1?"))):
        if os.access(a, os.X_OK) and os.access(b, os.X_OK):
            return a, b
    return None


def _setup(t):
    pys = _pythons()
    if not pys:
        g.skip("needs /usr/bin/python3.11 and a pyenv Python 3.12 or 3.13")
    root = t.path("pyenv")
    os.makedirs(t.path("cache"), mode=0o700)
    for d in ("shims", "libexec", "versions/A/bin", "versions/B/bin", "plugins", "proj/sub"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for path, text in (("shims/python3", SHIM), ("libexec/pyenv", PYENV)):
        p = os.path.join(root, path)
        with open(p, "w") as f:
            f.write(text.replace("@ROOT@", root))
        os.chmod(p, 0o755)
    os.symlink(pys[0], os.path.join(root, "versions/A/bin/python3"))
    os.symlink(pys[1], os.path.join(root, "versions/B/bin/python3"))
    with open(os.path.join(root, "version"), "w") as f:
        f.write("A\n")
    env = {"PATH": os.path.join(root, "shims") + ":/usr/bin:/bin",
           "XDG_CACHE_HOME": t.path("cache")}
    vers = tuple(".".join(os.path.basename(p).replace("python", "").split(".")[:2])
                 for p in pys)
    return root, env, vers


def _run(t, root, env, cwd, extra=None):
    e = dict(env, **(extra or {}))
    return g.run(["run", "--preset", "strict", "-c", CODE], cwd=cwd, env=e)


def _version(t, root, env, cwd, extra=None):
    r = _run(t, root, env, cwd, extra)
    r.expect_rc(0)
    return r.out.strip()


def _mark_broken(root, on):
    p = os.path.join(root, "broken")
    if on:
        open(p, "w").close()
    elif os.path.exists(p):
        os.unlink(p)


def _write(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def test_cached_and_invalidated(t):
    root, env, (va, vb) = _setup(t)
    proj, sub = os.path.join(root, "proj"), os.path.join(root, "proj/sub")
    _write(os.path.join(proj, ".python-version"), "A\n")
    g.eq(_version(t, root, env, proj), va, "the version .python-version selects")
    _mark_broken(root, True)
    # the shim would fail now: only the cached answer can make this run
    g.eq(_version(t, root, env, proj), va, "the cached choice (the shim did not run)")
    # a changed .python-version is a new key: the (broken) shim runs and the run is refused
    _write(os.path.join(proj, ".python-version"), "B\n")
    r = _run(t, root, env, proj)
    g.check(r.returncode == g.EXIT_REFUSED, "a changed .python-version re-runs the shim: %s"
            % r.describe())
    _mark_broken(root, False)
    g.eq(_version(t, root, env, proj), vb, "the newly selected version")
    # PYENV_VERSION is part of the key
    g.eq(_version(t, root, env, proj, {"PYENV_VERSION": "A"}), va, "PYENV_VERSION")
    # a .python-version closer to the cwd is part of the key
    _write(os.path.join(sub, ".python-version"), "A\n")
    g.eq(_version(t, root, env, sub), va, "the nearer .python-version")
    # each choice stays cached
    _mark_broken(root, True)
    g.eq(_version(t, root, env, proj), vb, "cached: proj")
    g.eq(_version(t, root, env, sub), va, "cached: proj/sub")
    g.eq(_version(t, root, env, proj, {"PYENV_VERSION": "A"}), va, "cached: PYENV_VERSION")


def test_global_version_and_install(t):
    root, env, (va, vb) = _setup(t)
    proj = os.path.join(root, "proj")
    g.eq(_version(t, root, env, proj), va, "the global version file")
    _write(os.path.join(root, "version"), "B\n")
    g.eq(_version(t, root, env, proj), vb, "a changed global version file")
    # installing a version (versions/ changes) re-runs the shim
    _mark_broken(root, True)
    os.makedirs(os.path.join(root, "versions", "C"))
    r = _run(t, root, env, proj)
    g.check(r.returncode == g.EXIT_REFUSED, "a new version under versions/ re-runs the shim: %s"
            % r.describe())


def test_cache_entry_is_checked(t):
    """A cache entry naming another interpreter is not believed blindly: it is read only
    under its key, and what it names is probed on its own (a poisoned entry that names a
    non-ELF is ignored and the shim runs again)."""
    root, env, (va, vb) = _setup(t)
    proj = os.path.join(root, "proj")
    g.eq(_version(t, root, env, proj), va, "first run")
    cache = os.path.join(t.path("cache"), "govex")
    entries = [f for f in os.listdir(cache) if f.startswith("shim-v1-")]
    g.eq(len(entries), 1, "one shim entry")
    p = os.path.join(cache, entries[0])
    with open(p) as f:
        text = f.read()
    _write(p, text.replace(os.path.join(root, "versions/A/bin/python3"), "/bin/sh"))
    os.chmod(p, 0o600)
    g.eq(_version(t, root, env, proj), va, "a poisoned entry is ignored")


TESTS = [
    ("a pyenv shim's choice is cached and every selection input invalidates it",
     test_cached_and_invalidated),
    ("the global version file and installed versions invalidate it",
     test_global_version_and_install),
    ("a poisoned shim cache entry is ignored", test_cache_entry_is_checked),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
