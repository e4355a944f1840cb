#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Circles in the call graph between a build's objects (issue 24: the rooms of the house).

Each linked unit of the library is read from its objects in BUILD (meson's TARGET.p
directories): libgovex_core.a (the library, as libgovex.so links it) and libgovex-zyg.so
(the warm side's module, loaded into the template).  Within one unit, A -> B when A's
object references a symbol (nm: U) that B's object alone defines (a global T, D, B, R,
...); a symbol two objects define, or one from outside the unit (libc, jansson), makes
no edge.  A circle is a strongly connected component of more than one object: files
that cannot be read, tested or replaced one without the other.

Objects are named by their source path without src/lib/ and .c, the restricted
backend's as r/NAME and the other backends' as b/NAME.

Usage:
    tools/callgraph.py BUILD                 the circles, one line each
    tools/callgraph.py BUILD -v              and, per circle, who calls whom with what
    tools/callgraph.py BUILD --edges         every edge A -> B with its symbols
    tools/callgraph.py BUILD --allow FILE    exit 1 on a circle FILE does not list, or on
                                             a line of FILE that is no circle any more

An allow list (.ci/callgraph.allow) has one circle a line, "UNIT: OBJ OBJ ... # reason",
the objects in any order; blank lines and lines starting with # are ignored.  A circle
is allowed only as listed: one that grew or shrank is a new one.  Exit 2: BUILD holds
no objects of the library (not built).
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import subprocess
import sys

# the linked units: meson's object directory, the name shown
UNITS = (("libgovex_core.a.p", "lib"), ("libgovex-zyg.so.p", "zyg"))
DEFINED = set("TDBRCGSVW")  # nm's global (upper-case) kinds that define a symbol


def obj_name(path: str) -> str:
    n = os.path.basename(path)
    n = n.removesuffix(".o").removesuffix(".c")
    for pfx, short in (("src_lib_backend_restricted_", "r/"), ("src_lib_backend_", "b/"),
                       ("src_lib_", ""), ("meson-generated_.._", "gen/")):
        if n.startswith(pfx):
            return short + n[len(pfx):]
    return n


def read_unit(objdir: str) -> dict[str, tuple[set[str], set[str]]]:
    """{object: (defined, undefined)} of the objects in objdir."""
    out = {}
    for o in sorted(glob.glob(os.path.join(objdir, "*.o"))):
        text = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        d, u = set(), set()
        for line in text.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in DEFINED:
                d.add(f[2])
            elif len(f) == 2 and f[0] == "U":
                u.add(f[1])
        out[obj_name(o)] = (d, u)
    return out


def edges(objs: dict[str, tuple[set[str], set[str]]]) -> dict[str, dict[str, list[str]]]:
    """{A: {B: [symbols A takes from B]}}."""
    owners = collections.defaultdict(list)
    for n, (d, _) in objs.items():
        for s in d:
            owners[s].append(n)
    g: dict[str, dict[str, list[str]]] = {n: {} for n in objs}
    for n, (_, u) in objs.items():
        for s in sorted(u):
            o = owners.get(s, [])
            if len(o) == 1 and o[0] != n:
                g[n].setdefault(o[0], []).append(s)
    return g


def circles(g: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found, key=lambda c: (-len(c), c))


def read_allow(path: str) -> dict[tuple[str, frozenset[str]], str]:
    allow = {}
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            body, _, reason = line.partition("#")
            if not body.strip():
                continue
            unit, sep, members = body.partition(":")
            if not sep or not members.split() or not reason.strip():
                sys.exit(f"{path}:{no}: not 'UNIT: OBJ OBJ ... # reason'")
            allow[(unit.strip(), frozenset(members.split()))] = reason.strip()
    return allow


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("-v", action="store_true", help="the edges inside each circle")
    ap.add_argument("--edges", action="store_true", help="every edge and its symbols")
    ap.add_argument("--allow", help="the allow list; exit 1 on anything not in it")
    a = ap.parse_args()

    allow = read_allow(a.allow) if a.allow else {}
    seen = set()
    bad = 0
    n_units = 0
    for objdir, unit in UNITS:
        objs = read_unit(os.path.join(a.build, objdir))
        if not objs:
            if unit == "lib":
                print(f"callgraph: no objects in {a.build}/{objdir} (not built?)")
                return 2
            continue
        n_units += 1
        g = edges(objs)
        cs = circles(g)
        print(f"{unit}: {len(objs)} objects, {sum(map(len, g.values()))} edges, "
              f"{len(cs)} circles")
        if a.edges:
            for x in sorted(g):
                for y in sorted(g[x]):
                    print(f"    {x} -> {y}: {' '.join(g[x][y])}")
        for c in cs:
            key = (unit, frozenset(c))
            why = allow.get(key)
            seen.add(key)
            if a.allow and why is None:
                bad += 1
            mark = "allowed: " + why if why else ("NOT ALLOWED" if a.allow else "")
            print(f"  {len(c)} {' '.join(c)}" + (f"  ({mark})" if mark else ""))
            if a.v:
                for x in c:
                    for y in sorted(set(g[x]) & set(c)):
                        print(f"      {x} -> {y}: {' '.join(g[x][y])}")
    for unit, members in sorted(set(allow) - seen, key=lambda k: (k[0], sorted(k[1]))):
        print(f"callgraph: {a.allow}: '{unit}: {' '.join(sorted(members))}' is no circle "
              "(any more): remove the line")
        bad += 1
    if bad:
        print(f"callgraph: {bad} circle(s) or allow line(s) to deal with (above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
