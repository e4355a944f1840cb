#!/usr/bin/env python3
"""Embeds text into C as a NUL-terminated byte array, so that no script path is opened at
run time:

  embed.py OUTPUT SYMBOL INPUT...          the INPUTs concatenated (each must end with a
                                           newline, so that no two of them share a line)
  embed.py --binary OUTPUT SYMBOL INPUT... any bytes, e.g. a shared object, unchecked
  embed.py --package ROOT [--entry FILE] OUTPUT SYMBOL MODULE...
                                           a Python package's modules (files under ROOT,
                                           named by their path from it) as one text

--package makes the worker's texts (src/worker: the package govex_worker, its entry
worker.py; its inspection part, govex_worker/inspection, a text of its own that the C
side puts before the worker's for an inspection only).  The text is Python that `python
-c` runs; it holds each module's source (comments dropped, lines kept: a traceback's line
numbers are the file's) in a raw string, in an order where a module comes after the
modules it imports (its package first; a circle is refused).  A text without --entry only
adds its modules to _GOVEX_MODULES; one with --entry adds its own before those, then
loads them all (package_loader below) and runs the entry's text as __main__.  Each MODULE
directory's *.py must all be given (meson.build lists them), and a module imports the
package's modules at its top level only (the loader is gone when a function runs)."""
import ast
import io
import os
import sys
import tokenize

# The loader the --entry text carries (3.6's syntax: a snippet's worker runs on 3.6).  It
# makes each module a types.ModuleType, registered in sys.modules while the modules and
# the entry's top level run (so that their imports are sys.modules hits, as for any
# imported module; a package's __path__ is empty, so an import of a module this text does
# not have fails without looking at any file), then sys.modules is as it was: the user's
# code finds no module of govex's, and a text's modules are its own (a warm template runs
# both texts in one process, zygote.py).  Plain exec of compile: nothing to import but
# types, the same on 3.6 to 3.13, and every module compiled once (a warm template: once for
# all its runs).  Not zipimport: it reads an archive from a path, never from memory; not a
# meta path finder (importlib.abc, specs): it would cost its imports in every cold run and
# stay in sys.meta_path for the user's own imports to go through.
PACKAGE_LOADER = '''
def _govex_boot(g, modules, entry):
    import sys
    import types
    saved = {}
    loaded = {}
    try:
        for name, is_package, src in modules:
            if name not in saved:
                saved[name] = sys.modules.get(name)
            m = types.ModuleType(name)
            parent, _, child = name.rpartition(".")
            m.__package__ = name if is_package else parent
            if is_package:
                m.__path__ = []
            sys.modules[name] = m
            exec(compile(src, "<string>", "exec", dont_inherit=True), m.__dict__)
            if parent:
                setattr(loaded[parent], child, m)
            loaded[name] = m
        name = g.get("__name__")
        g["__name__"] = "__govex_entry__"
        try:
            exec(compile(entry, "<string>", "exec", dont_inherit=True), g)
        finally:
            g["__name__"] = name
    finally:
        for name, m in saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
    return loaded
'''


def fail(msg):
    sys.exit("embed.py: " + msg)


def checked_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        fail("%s contains a NUL byte" % path)
    if not data.endswith(b"\n"):
        fail("%s does not end with a newline" % path)
    return data


def strip_comments(src, path):
    """SRC without its comments (and the blanks before them), every line kept."""
    lines = src.split("\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError) as e:
        fail("%s: %s" % (path, e))
    for t in reversed(tokens):
        if t.type == tokenize.COMMENT:
            row, col = t.start
            lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(lines)


def module_name(root, path):
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel.startswith("..") or not rel.endswith(".py"):
        fail("%s is not a .py file under %s" % (path, root))
    parts = rel[:-3].split(os.sep)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        fail("%s: not a module name" % path)
    return ".".join(parts), is_package


def package_imports(tree, name, is_package, path, top_names):
    """The modules of the package that module NAME imports (absolute, as the loader's
    sys.modules names them); an import of one that is not at its top level is refused."""
    pkg = name if is_package else name.rpartition(".")[0]
    out = []

    def targets(node):
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            up = pkg.split(".")
            if node.level > 1:
                up = up[:-(node.level - 1)]
            base = ".".join(up + ([base] if base else []))
        return [base] + [base + "." + a.name for a in node.names]

    top = set(id(n) for n in tree.body)
    checker = set()  # under `if TYPE_CHECKING:` (False when it runs): never imported
    for stmt in tree.body:  # (a try's imports are at the top level too)
        if isinstance(stmt, ast.Try):
            top.update(id(n) for n in stmt.body)
        elif (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name)
              and stmt.test.id == "TYPE_CHECKING"):
            checker.update(id(n) for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in checker:
            continue
        for t in targets(node):
            if t.split(".")[0] not in top_names:
                continue
            if id(node) not in top:
                fail("%s:%d: imports %s inside a function (the embedded package is gone "
                     "from sys.modules when it runs)" % (path, node.lineno, t))
            out.append(t)
    return out


def package_text(root, entry, paths):
    mods = {}
    for p in paths:
        name, is_package = module_name(root, p)
        if name in mods:
            fail("%s given twice" % p)
        src = checked_text(p).decode("utf-8")
        mods[name] = (is_package, src, p)
    for d in sorted(set(os.path.dirname(os.path.abspath(p)) for p in paths)):
        for f in sorted(os.listdir(d)):
            if f.endswith(".py") and os.path.join(d, f) not in map(os.path.abspath, paths):
                fail("%s is not given (list it in meson.build)" % os.path.join(d, f))
    top_names = set(n.split(".")[0] for n in mods)
    deps = {}
    for name, (is_package, src, p) in mods.items():
        tree = ast.parse(src, p)
        d = set()
        parent = name.rpartition(".")[0]
        if parent:
            d.add(parent)
        for t in package_imports(tree, name, is_package, p, top_names):
            # the longest name that is a module of this text (from a import b: b may be
            # a module or a name); one of another text is loaded before this text's
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name:
                d.add(t)
        deps[name] = d
    order = []
    state = {}

    def visit(n, chain):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            fail("the modules import each other in a circle: %s"
                 % " -> ".join(chain[chain.index(n):] + [n]))
        state[n] = 1
        for d in sorted(deps[n]):
            if d in mods:
                visit(d, chain + [n])
        state[n] = 2
        order.append(n)

    for n in sorted(mods):
        visit(n, [])
    out = ["# generated by tools/embed.py from %s; do not edit" % os.path.relpath(
        os.path.dirname(os.path.abspath(paths[0])), os.path.dirname(os.path.abspath(root))),
        "_GOVEX_MODULES = ("]
    for n in order:
        is_package, src, p = mods[n]
        text = strip_comments(src, p)
        if "'''" in text or "\r" in text:
            fail("%s holds ''' or a carriage return (its raw string could not)" % p)
        out.append("(%r, %r, r'''%s'''), " % (n, is_package, text))
    out.append(') + globals().get("_GOVEX_MODULES", ())')
    if entry is not None:
        text = strip_comments(checked_text(entry).decode("utf-8"), entry)
        if "'''" in text or "\r" in text:
            fail("%s holds ''' or a carriage return (its raw string could not)" % entry)
        out.append(PACKAGE_LOADER.strip("\n"))
        out.append("_GOVEX_LOADED = _govex_boot(globals(), _GOVEX_MODULES, r'''%s''')" % text)
        out.append("del _GOVEX_MODULES")
        out.append('if __name__ == "__main__":')
        out.append("    main()")
    return ("\n".join(out) + "\n").encode("utf-8")


def c_array(out, sym, data):
    lines = []
    for i in range(0, len(data), 16):
        lines.append(''.join('0x%02x,' % b for b in data[i:i + 16]))
    with open(out, 'w') as f:
        f.write('/* generated by tools/embed.py; do not edit */\n')
        f.write('#include <stddef.h>\n')
        f.write('extern const unsigned char %s[];\n' % sym)
        f.write('extern const size_t %s_len;\n' % sym)
        f.write('const unsigned char %s[] = {\n%s\n0x00};\n' % (sym, '\n'.join(lines)))
        f.write('const size_t %s_len = %d;\n' % (sym, len(data)))


def main():
    args = sys.argv[1:]
    if args and args[0] == '--package':
        if len(args) < 2:
            fail("usage: embed.py --package ROOT [--entry FILE] OUTPUT SYMBOL MODULE...")
        root, args = args[1], args[2:]
        entry = None
        if args and args[0] == '--entry':
            if len(args) < 2:
                fail("--entry needs a file")
            entry, args = args[1], args[2:]
        if len(args) < 3:
            fail("usage: embed.py --package ROOT [--entry FILE] OUTPUT SYMBOL MODULE...")
        c_array(args[0], args[1], package_text(root, entry, args[2:]))
        return
    binary = bool(args) and args[0] == '--binary'
    if binary:
        args = args[1:]
    if len(args) < 3:
        sys.exit('usage: embed.py [--binary] OUTPUT SYMBOL INPUT...')
    out, sym = args[0:2]
    data = b''
    for src in args[2:]:
        if binary:
            with open(src, 'rb') as f:
                data += f.read()
        else:
            data += checked_text(src)
    c_array(out, sym, data)


if __name__ == '__main__':
    main()
