# SPDX-License-Identifier: MIT
# The environment probe (src/lib/pyenv.c): run as `python -I -S -c <this>` inside the
# probe sandbox (a read-only view of the host, no network, no writes), when a run's
# interpreter is a venv or the policy asks for its site directories.  It prints one JSON
# object naming what the environment's packages need at run time:
#
#   site   the directories site.main() puts on sys.path (the venv's site-packages, the
#          system's dist-packages, what .pth files add), as the run will have them;
#   libs   the shared libraries the packages' ELF objects need (DT_NEEDED, resolved by
#          the loader's rules: DT_RPATH, DT_RUNPATH with $ORIGIN, /etc/ld.so.cache,
#          the default directories), recursively, as the loader opens them: each
#          symlink on the way (/etc/alternatives) is kept by the sandbox's plan;
#   links  [link, target]: symlinks inside the site directories whose targets lie
#          outside them (Debian's packages link data into /usr/share);
#   data   data files and directories the common stack reads from outside its package
#          (a short table, below);
#   dists  [name, version] of each installed distribution (*.dist-info, *.egg-info);
#   unresolved  [object, name]: a DT_NEEDED the rules above did not find.
#
# The answer is untrusted (this code runs the environment's .pth files) and is
# validated by the library before anything uses it.
import json
import os
import struct
import sys

LIMIT_FILES = 400000
LIMIT_LIBS = 4000

before = list(sys.path)
import site  # noqa: E402

site.main()
site_dirs = []
for p in sys.path:
    if p not in before and p not in site_dirs and os.path.isdir(p):
        site_dirs.append(os.path.normpath(p))


def elf_info(path):
    """(class, machine, needed, rpath, runpath) of an ELF shared object, or None."""
    try:
        with open(path, 'rb') as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b'\x7fELF':
                return None
            cls, data = head[4], head[5]
            if cls != 2 or data != 1:  # 64-bit little-endian only (x86-64, aarch64)
                return None
            (etype, machine, _v, _entry, phoff, _shoff, _flags, _ehsize, phentsize,
             phnum) = struct.unpack_from('<HHIQQQIHHH', head, 16)
            if etype != 3 or phentsize != 56 or phnum > 256:
                return None
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            loads, dyn = [], None
            for i in range(phnum):
                (ptype, _pf, off, vaddr, _pa, filesz, _memsz,
                 _al) = struct.unpack_from('<IIQQQQQQ', ph, i * 56)
                if ptype == 1:
                    loads.append((vaddr, off, filesz))
                elif ptype == 2:
                    dyn = (off, filesz)
            if dyn is None:
                return (cls, machine, [], [], [])
            f.seek(dyn[0])
            raw = f.read(min(dyn[1], 1 << 20))
            ents = []
            strtab = strsz = None
            for i in range(len(raw) // 16):
                tag, val = struct.unpack_from('<qQ', raw, i * 16)
                if tag == 0:
                    break
                if tag == 5:
                    strtab = val
                elif tag == 10:
                    strsz = val
                elif tag in (1, 15, 29):
                    ents.append((tag, val))
            if strtab is None or strsz is None:
                return (cls, machine, [], [], [])
            stroff = None
            for vaddr, off, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    stroff = off + (strtab - vaddr)
            if stroff is None:
                return None
            f.seek(stroff)
            strs = f.read(min(strsz, 1 << 22))
    except OSError:
        return None

    def s(o):
        end = strs.find(b'\0', o)
        return strs[o:end if end >= 0 else len(strs)].decode('utf-8', 'replace')

    needed = [s(v) for t, v in ents if t == 1]
    rpath = [p for t, v in ents if t == 15 for p in s(v).split(':') if p]
    runpath = [p for t, v in ents if t == 29 for p in s(v).split(':') if p]
    return (cls, machine, needed, rpath, runpath)


def ld_cache():
    """name -> [paths] from /etc/ld.so.cache (the glibc-ld.so.cache1.1 format)."""
    out = {}
    try:
        with open('/etc/ld.so.cache', 'rb') as f:
            b = f.read(1 << 24)
    except OSError:
        return out
    magic = b'glibc-ld.so.cache1.1'
    at = b.find(magic)
    if at < 0:
        return out
    nlibs, _strl = struct.unpack_from('<II', b, at + 20)
    base = at + 48
    for i in range(min(nlibs, 100000)):
        o = base + i * 24
        if o + 24 > len(b):
            break
        _fl, key, val = struct.unpack_from('<iII', b, o)

        def cs(x):
            end = b.find(b'\0', x)
            return b[x:end].decode('utf-8', 'replace') if end > 0 else ''

        out.setdefault(cs(key), []).append(cs(val))
    return out


CACHE = ld_cache()
DEFAULT_DIRS = ['/lib64', '/usr/lib64', '/lib', '/usr/lib']


def expand(p, origin):
    return p.replace('$ORIGIN', origin).replace('${ORIGIN}', origin)


def resolve(name, obj, info, loader_rpath):
    """The path the loader opens for DT_NEEDED name of obj, or None."""
    cls, machine = info[0], info[1]
    if '/' in name:
        return name if os.path.isfile(name) else None
    origin = os.path.dirname(obj)
    dirs = []
    if not info[4]:
        dirs += [expand(p, origin) for p in info[3]] + loader_rpath
    dirs += [expand(p, origin) for p in info[4]]
    cands = [os.path.join(d, name) for d in dirs]
    cands += CACHE.get(name, [])
    cands += [os.path.join(d, name) for d in DEFAULT_DIRS]
    for c in cands:
        i = elf_info(c) if os.path.isfile(c) else None
        if i and i[0] == cls and i[1] == machine:
            return os.path.normpath(c)
    return None


libs, unresolved, links, seen = [], [], [], set()
work = []
count = 0
inside = tuple(d.rstrip('/') + '/' for d in site_dirs)
for d in site_dirs:
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            count += 1
            p = os.path.join(root, n)
            if os.path.islink(p):
                t = os.path.realpath(p)
                if os.path.exists(t) and not (t + '/').startswith(inside) and \
                        not t.startswith(('/proc/', '/sys/', '/dev/')):
                    links.append([p, t])
                continue
            if n in files and ('.so' in n) and (n.endswith('.so') or '.so.' in n):
                work.append((p, []))
        if count > LIMIT_FILES:
            break

while work and len(seen) < LIMIT_LIBS:
    obj, loader_rpath = work.pop()
    real = os.path.realpath(obj)
    if real in seen:
        continue
    seen.add(real)
    info = elf_info(obj)
    if not info:
        continue
    rp = loader_rpath + ([expand(p, os.path.dirname(obj)) for p in info[3]] if not info[4] else [])
    for name in info[2]:
        r = resolve(name, obj, info, rp)
        if r is None:
            unresolved.append([obj, name])
            continue
        if not (r + '/').startswith(inside) and r not in libs:
            libs.append(r)
        work.append((r, rp))

# What the common stack reads from outside its packages (found where it is installed).
KNOWN = {
    'matplotlib': ['/etc/matplotlibrc', '/usr/share/matplotlib'],
    'scipy': [],
    'pandas': ['/usr/share/zoneinfo'],
    'pytz': ['/usr/share/zoneinfo'],
    'tzdata': [],
}
dists = []
for d in site_dirs:
    try:
        names = sorted(os.listdir(d))
    except OSError:
        continue
    for n in names:
        for suf in ('.dist-info', '.egg-info'):
            if n.endswith(suf):
                stem = n[:-len(suf)]
                name, _, ver = stem.partition('-')
                ver = ver.split('-py')[0]
                dists.append([name, ver])
data = []
have = {n.lower().replace('_', '-') for n, _ in dists}
for dist, paths in sorted(KNOWN.items()):
    if dist in have:
        for p in paths:
            if os.path.exists(p) and p not in data:
                data.append(p)

sys.stdout.write(json.dumps({'site': site_dirs, 'libs': sorted(libs), 'links': links,
                             'data': data, 'dists': dists, 'unresolved': unresolved}))
