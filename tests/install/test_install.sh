#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Installed-package smoke test (TAP).
#
# Builds a fresh, non-sanitized copy of the tree with --prefix=/usr, installs it into a
# temporary DESTDIR and checks what a distribution package would ship: the shared
# library (soname, exported symbols), the header, the pkg-config file, the man pages,
# the JSON Schemas, the licence, the shell completions, programs compiled against the
# installed header and library (tests/install/smoke*.c: a run, the process toolkit, the
# tool provider), and the installed command line (run, exec, call, inspect, and mcp over
# stdio through tests/install/mcp_stdio.py).  The build directory is moved away once
# installed, so nothing can be found there.  $GOVEX (the harness's sanitized binary) is
# ignored.
#
#   bash tests/install/test_install.sh        (from anywhere; prints TAP, exits 0)
#
# GOVEX_INSTALL_KEEP=1 keeps the temporary directory and prints its path.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/govex-install.XXXXXX") || {
	echo "1..0 # SKIP cannot make a temporary directory"
	exit 0
}
if [ "${GOVEX_INSTALL_KEEP:-}" = 1 ]; then
	echo "# keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
build=$tmp/build
dest=$tmp/dest
prefix=/usr

PLAN=60
echo "1..$PLAN"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	shift
	local line
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/#   /'
	done
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# tail_of FILE: the last lines of a log (not_ok prints them as TAP comments)
tail_of() { tail -n 30 "$1" 2>/dev/null; }

# ---- build and install -------------------------------------------------------------

built=false
if meson setup "$build" "$ROOT" --prefix="$prefix" -Dtests=false -Db_sanitize=none \
	--buildtype=debugoptimized >"$tmp/setup.log" 2>&1; then
	ok "meson setup of a fresh build (prefix $prefix, tests off, no sanitizer)"
	if ninja -C "$build" >"$tmp/build.log" 2>&1; then
		ok "ninja builds it"
		built=true
	else
		not_ok "ninja builds it" "$(tail_of "$tmp/build.log")"
	fi
else
	not_ok "meson setup of a fresh build (prefix $prefix, tests off, no sanitizer)" \
		"$(tail_of "$tmp/setup.log")"
	not_ok "ninja builds it" "no build directory"
fi
if $built && meson install -C "$build" --destdir "$dest" >"$tmp/install.log" 2>&1; then
	ok "meson install --destdir"
else
	not_ok "meson install --destdir" "$(tail_of "$tmp/install.log")"
fi

# From here on only the installed files may be used: the build directory is moved away,
# so a binary that looked for its worker, its warm-run helper or a library there would
# fail (and govex's cache is a fresh one, not the caller's).
if [ -d "$build" ]; then
	mv "$build" "$build.moved-away"
fi
export XDG_CACHE_HOME=$tmp/cache

# Locate the installed files: libdir is $prefix/lib, lib64 or lib/<multiarch>; the .pc
# file is in $libdir/pkgconfig or $prefix/share/pkgconfig.
find_one() {
	find "$dest$prefix" -path "$dest$prefix/$1" \( -type f -o -type l \) 2>/dev/null |
		sort | head -n 1
}
soname_file=$(find_one 'lib*/libgovex.so.1')
devlink=$(find_one 'lib*/libgovex.so')
pcfile=$(find_one 'lib*/pkgconfig/govex.pc')
[ -n "$pcfile" ] || pcfile=$(find_one share/pkgconfig/govex.pc)
header=$dest$prefix/include/govex.h
cli=$dest$prefix/bin/govex
libdir=${soname_file%/*}

# ---- the shared library ------------------------------------------------------------

if [ -n "$soname_file" ] && [ -e "$soname_file" ]; then
	ok "libgovex.so.1 installed (${soname_file#"$dest"})"
else
	not_ok "libgovex.so.1 installed" "$(cd "$dest" 2>/dev/null && find . | sort)"
fi
if [ -n "$devlink" ] && [ -e "$devlink" ]; then
	ok "libgovex.so development link installed"
else
	not_ok "libgovex.so development link installed"
fi

soname=$( [ -n "$soname_file" ] && readelf -d "$soname_file" 2>/dev/null |
	sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" = libgovex.so.1 ]; then
	ok "SONAME is libgovex.so.1"
else
	not_ok "SONAME is libgovex.so.1" "SONAME: '${soname}'"
fi

# Defined dynamic symbols: "ADDR TYPE NAME[@@VERSION]".  The version nodes themselves
# (GOVEX_1, GOVEX_1.1: absolute symbols) are allowed; everything else must be govex_*, and not govex__*
# (the library's internal prefix).
exported=$tmp/exported.txt
if [ -n "$soname_file" ] && nm -D --defined-only "$soname_file" >"$tmp/nm.txt" 2>&1; then
	awk '{ name = $NF; sub(/@.*/, "", name); print $(NF-1), name }' "$tmp/nm.txt" |
		sort -u -k2 >"$tmp/symbols.txt"
	awk '{ print $2 }' "$tmp/symbols.txt" | grep '^govex_' | sort -u >"$exported"
	bad=$(awk '!($1 == "A" && $2 ~ /^GOVEX_[0-9]+(\.[0-9]+)?$/) && !($2 ~ /^govex_[a-z0-9]/)' \
		"$tmp/symbols.txt")
	if [ -z "$bad" ] && [ -s "$exported" ]; then
		ok "exports only govex_* symbols ($(wc -l <"$exported") of them)"
	else
		not_ok "exports only govex_* symbols" "unexpected: $bad"
	fi
	unversioned=$(grep ' govex_' "$tmp/nm.txt" | grep -v -E '@@GOVEX_1(\.1)?$' || true)
	v11=$(grep -c -E ' govex_runtime_(warm|stats_json)@@GOVEX_1\.1$' "$tmp/nm.txt" || true)
	if [ -z "$unversioned" ] && [ "$v11" = 2 ]; then
		ok "every exported symbol has the version GOVEX_1 (0.3's additions GOVEX_1.1)"
	else
		not_ok "every exported symbol has the version GOVEX_1 (0.3's additions GOVEX_1.1)" \
			"unversioned: $unversioned; GOVEX_1.1: $v11 of 2"
	fi
else
	: >"$exported"
	not_ok "exports only govex_* symbols" "$(cat "$tmp/nm.txt" 2>/dev/null)"
	not_ok "every exported symbol has the version GOVEX_1 (0.3's additions GOVEX_1.1)"
fi

# ---- the header --------------------------------------------------------------------

if [ -f "$header" ]; then
	ok "govex.h installed in $prefix/include"
else
	not_ok "govex.h installed in $prefix/include"
fi
if [ -f "$header" ] && cmp -s "$header" "$ROOT/include/govex.h"; then
	ok "installed govex.h is include/govex.h"
else
	not_ok "installed govex.h is include/govex.h"
fi

# Every function the header declares (GOVEX_API ... name(...)) must be exported.
if [ -f "$header" ]; then
	grep -v '^[[:space:]]*#' "$header" | tr '\n' ' ' | grep -o 'GOVEX_API[^;(]*(' |
		sed 's/($//; s/.*[ *]//' | sort -u >"$tmp/declared.txt"
	missing=$(comm -23 "$tmp/declared.txt" "$exported")
	if [ -s "$tmp/declared.txt" ] && [ -z "$missing" ]; then
		ok "every function govex.h declares is exported ($(wc -l <"$tmp/declared.txt"))"
	else
		not_ok "every function govex.h declares is exported" \
			"declared in govex.h but not exported: $(tr '\n' ' ' <<<"$missing")"
	fi
else
	not_ok "every function govex.h declares is exported" "no header"
fi

# ---- pkg-config --------------------------------------------------------------------

if [ -n "$pcfile" ] && [ -f "$pcfile" ]; then
	ok "govex.pc installed (${pcfile#"$dest"})"
else
	not_ok "govex.pc installed"
fi

# The .pc file says prefix=/usr; PKG_CONFIG_SYSROOT_DIR puts the DESTDIR in front of its
# -I and -L.  With prefix /usr those are system directories, which pkg-config drops
# unless told to keep them (then they are sysroot-prefixed, which is what we want).
pc() {
	PKG_CONFIG_PATH="${pcfile%/*}${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
	PKG_CONFIG_SYSROOT_DIR="$dest" \
	PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
		pkg-config "$@"
}
cflags='' libs=
if [ -n "$pcfile" ] && version=$(pc --modversion govex 2>"$tmp/pc.err") &&
	cflags=$(pc --cflags govex 2>>"$tmp/pc.err") && libs=$(pc --libs govex 2>>"$tmp/pc.err")
then
	want_version=$(sed -n "s/^#define GOVEX_VERSION_STRING \"\(.*\)\"/\1/p" "$ROOT/include/govex.h")
	problems=()
	[ "$version" = "$want_version" ] || problems+=("version '$version', header says '$want_version'")
	case " $cflags " in *" -I$dest$prefix/include "*) ;; *) problems+=("cflags lack -I$dest$prefix/include: $cflags") ;; esac
	case " $libs " in *" -L$libdir "*) ;; *) problems+=("libs lack -L$libdir: $libs") ;; esac
	case " $libs " in *" -lgovex "*) ;; *) problems+=("libs lack -lgovex: $libs") ;; esac
	if [ ${#problems[@]} -eq 0 ]; then
		ok "pkg-config govex: version $version, cflags and libs point into DESTDIR"
	else
		not_ok "pkg-config govex: version, cflags and libs point into DESTDIR" "${problems[@]}"
	fi
else
	not_ok "pkg-config govex: version, cflags and libs point into DESTDIR" \
		"$(cat "$tmp/pc.err" 2>/dev/null)"
fi

# ---- man pages ---------------------------------------------------------------------

for page in man1/govex.1 man5/govex-policy.5 man3/libgovex.3; do
	f=$dest$prefix/share/man/$page
	if [ -f "$f" ] || [ -f "$f.gz" ]; then
		ok "man page ${page#*/} installed"
	else
		not_ok "man page ${page#*/} installed" "no $prefix/share/man/$page (is subdir('docs') in meson.build?)"
	fi
done

# ---- the JSON Schemas --------------------------------------------------------------

schemadir=$dest$prefix/share/govex/schema
problems=()
for s in policy plan result backend; do
	f=$schemadir/$s.schema.json
	if [ ! -f "$f" ]; then
		problems+=("no $prefix/share/govex/schema/$s.schema.json")
	elif ! cmp -s "$f" "$ROOT/docs/schema/$s.schema.json"; then
		problems+=("$s.schema.json differs from docs/schema/$s.schema.json")
	fi
done
extra=$(cd "$schemadir" 2>/dev/null && ls | grep -v -x -E '(policy|plan|result|backend)\.schema\.json')
[ -z "$extra" ] || problems+=("unexpected files: $extra")
if [ ${#problems[@]} -eq 0 ]; then
	ok "the four JSON Schemas installed in $prefix/share/govex/schema, as in docs/schema"
else
	not_ok "the four JSON Schemas installed in $prefix/share/govex/schema" "${problems[@]}"
fi

# ---- the licence -------------------------------------------------------------------

license=$dest$prefix/share/licenses/govex/LICENSE
if [ -f "$license" ] && cmp -s "$license" "$ROOT/LICENSE"; then
	ok "LICENSE installed as $prefix/share/licenses/govex/LICENSE"
else
	not_ok "LICENSE installed as $prefix/share/licenses/govex/LICENSE" \
		"$( [ -f "$license" ] && echo "differs from the tree's LICENSE" || echo "not installed")"
fi

# ---- the shell completions (completions/) -------------------------------------------

# bash: bash-completion's completionsdir (its pkg-config file's, its prefix ours), else
# $prefix/share/bash-completion/completions, as a file named after the command
bashdir=$(pkg-config --define-variable=prefix="$prefix" --variable=completionsdir \
	bash-completion 2>/dev/null)
[ -n "$bashdir" ] || bashdir=$prefix/share/bash-completion/completions
for c in "$bashdir/govex:govex.bash" "$prefix/share/zsh/site-functions/_govex:_govex"; do
	f=$dest${c%%:*} src=$ROOT/completions/${c##*:}
	if [ -f "$f" ] && cmp -s "$f" "$src"; then
		ok "completions/${c##*:} installed as ${c%%:*}"
	else
		not_ok "completions/${c##*:} installed as ${c%%:*}" \
			"$( [ -f "$f" ] && echo "differs from the tree's" || echo "not installed")" \
			"$(cd "$dest" 2>/dev/null && find . -path '*complet*' -o -path '*zsh*' | sort)"
	fi
done
# the installed completion, with the installed govex (its __complete), for real
got=$(bash --norc --noprofile -c 'source "$1" && COMP_WORDS=("$2" run --pre) COMP_CWORD=2 &&
	COMP_LINE="${COMP_WORDS[*]}" && COMP_POINT=${#COMP_LINE} && _govex &&
	printf "%s\n" "${COMPREPLY[@]}"' bash "$dest$bashdir/govex" "$cli" 2>&1)
if [ "$got" = --preset ]; then
	ok "the installed bash completion completes 'govex run --pre' to --preset"
else
	not_ok "the installed bash completion completes 'govex run --pre' to --preset" "got: $got"
fi
# where they go, without building: a bash-completion.pc's completionsdir (its prefix
# replaced by ours) and -Dzshcompletionsdir=no
mkdir -p "$tmp/pc"
printf '%s\n' 'prefix=/usr' 'completionsdir=${prefix}/share/bash-completion/from-pc' '' \
	'Name: bash-completion' 'Description: a stand-in' 'Version: 2.11' >"$tmp/pc/bash-completion.pc"
if PKG_CONFIG_PATH=$tmp/pc meson setup "$tmp/pcbuild" "$ROOT" --prefix=/opt/gx -Dtests=false \
	-Dzshcompletionsdir=no >"$tmp/pcsetup.log" 2>&1; then
	places=$(meson introspect --installed "$tmp/pcbuild" | python3 -c '
import json, sys
for src, dst in sorted(json.load(sys.stdin).items()):
    if "/completions/" in src:
        print(dst)')
else
	places="meson setup failed: $(tail_of "$tmp/pcsetup.log")"
fi
rm -rf "$tmp/pcbuild"
if [ "$places" = /opt/gx/share/bash-completion/from-pc/govex ]; then
	ok "bash completion in bash-completion.pc's completionsdir; -Dzshcompletionsdir=no: no zsh's"
else
	not_ok "bash completion in bash-completion.pc's completionsdir; -Dzshcompletionsdir=no: no zsh's" \
		"installed: $places"
fi

# libgovex(3)'s EXAMPLE is smoke.c, tabs expanded to 4 and roff-escaped.
src_page=$ROOT/docs/libgovex.3
if [ -f "$src_page" ]; then
	sed -n '/^\.\\" BEGIN tests\/install\/smoke\.c/,/^\.\\" END tests\/install\/smoke\.c/p' "$src_page" |
		sed '1,/^\.EX$/d; /^\.EE$/,$d' |
		sed 's/^\\&//; s/\\(aq/'"'"'/g; s/\\(ga/`/g; s/\\-/-/g; s/\\e/\\/g' >"$tmp/example.c"
	expand -t 4 "$ROOT/tests/install/smoke.c" | sed 's/[[:space:]]*$//' >"$tmp/smoke.expanded"
	if [ -s "$tmp/example.c" ] && diff -u "$tmp/smoke.expanded" "$tmp/example.c" >"$tmp/example.diff"; then
		ok "libgovex(3) EXAMPLE is tests/install/smoke.c"
	else
		not_ok "libgovex(3) EXAMPLE is tests/install/smoke.c" "$(head -n 40 "$tmp/example.diff")"
	fi
else
	not_ok "libgovex(3) EXAMPLE is tests/install/smoke.c" "no docs/libgovex.3"
fi

# ---- a program built against the installed package ---------------------------------

smoke=$tmp/smoke
export_ld="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# shellcheck disable=SC2086  # pkg-config output is a list of words
if [ -n "$cflags$libs" ] &&
	${CC:-cc} -std=c99 -Wall -Wextra -Werror -pedantic -o "$smoke" \
		"$ROOT/tests/install/smoke.c" $cflags $libs >"$tmp/cc.log" 2>&1; then
	ok "smoke.c compiles against the installed header and library (pkg-config)"
else
	not_ok "smoke.c compiles against the installed header and library (pkg-config)" \
		"$(tail_of "$tmp/cc.log")"
fi

resolved=$( [ -x "$smoke" ] && LD_LIBRARY_PATH=$export_ld ldd "$smoke" 2>/dev/null |
	awk '$1 == "libgovex.so.1" { print $3 }')
if [ -n "$resolved" ] && [ "$(readlink -f "$resolved")" = "$(readlink -f "$soname_file")" ]; then
	ok "smoke loads libgovex.so.1 from DESTDIR"
else
	not_ok "smoke loads libgovex.so.1 from DESTDIR" "resolved to '$resolved'"
fi

# run_smoke PRESET: ok when it exits 0 having printed the library version line and a
# result with status success and stdout "42\n" (smoke.c checks both).
run_smoke() {
	local preset=$1 out rc
	out=$(LD_LIBRARY_PATH=$export_ld "$smoke" "$preset" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && grep -q "^libgovex $want_version, header $want_version\$" <<<"$out" &&
		grep -q '^contract govex.result/v1$' <<<"$out" &&
		grep -q '"status":"success"' <<<"$out" && grep -q '"stdout":"42\\n"' <<<"$out"; then
		ok "smoke ($preset preset): govex_version() $want_version, status success, stdout 42"
	else
		not_ok "smoke ($preset preset): govex_version(), status success, stdout 42" \
			"exit $rc" "$out"
	fi
}
want_version=${want_version:-$(sed -n "s/^#define GOVEX_VERSION_STRING \"\(.*\)\"/\1/p" "$ROOT/include/govex.h")}
if [ -x "$smoke" ]; then
	run_smoke trusted
else
	not_ok "smoke (trusted preset): govex_version(), status success, stdout 42" "not built"
fi

# The README's C example, as shown, against the installed package.
readme_c=$tmp/readme-example.c
sed -n '/^<!-- BEGIN readme-example.c -->$/,/^<!-- END readme-example.c -->$/p' "$ROOT/README.md" |
	sed '1,/^```c$/d; /^```$/,$d' >"$readme_c"
# shellcheck disable=SC2086  # pkg-config output is a list of words
if [ -s "$readme_c" ] && ${CC:-cc} -std=c99 -Wall -Wextra -Werror -o "$tmp/readme-example" \
	"$readme_c" $cflags $libs >"$tmp/cc-readme.log" 2>&1; then
	ok "the README's C example compiles against the installed package"
else
	not_ok "the README's C example compiles against the installed package" \
		"$(cat "$readme_c" | head -5)" "$(tail_of "$tmp/cc-readme.log")"
fi
out=$( [ -x "$tmp/readme-example" ] && LD_LIBRARY_PATH=$export_ld "$tmp/readme-example" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q '"stdout":"45\\n"' <<<"$out"; then
	ok "the README's C example runs a snippet in the sandbox (stdout 45, exit 0)"
else
	not_ok "the README's C example runs a snippet in the sandbox (stdout 45, exit 0)" \
		"exit $rc" "$out"
fi

# ---- the installed command line ----------------------------------------------------

rungovex() { LD_LIBRARY_PATH=$export_ld "$cli" "$@"; }

if [ -x "$cli" ]; then
	ok "govex installed in $prefix/bin"
else
	not_ok "govex installed in $prefix/bin"
fi

runpath=$( [ -x "$cli" ] && readelf -d "$cli" "${soname_file:-/dev/null}" 2>/dev/null |
	grep -E 'RPATH|RUNPATH' | grep -F "$tmp" )
if [ -x "$cli" ] && [ -z "$runpath" ]; then
	ok "installed binaries carry no RPATH into the build directory"
else
	not_ok "installed binaries carry no RPATH into the build directory" "$runpath"
fi

out=$(rungovex version 2>&1)
if [ "$out" = "govex $want_version" ]; then
	ok "govex version prints 'govex $want_version'"
else
	not_ok "govex version prints 'govex $want_version'" "$out"
fi

out=$(rungovex run --preset trusted -c 'print(6*7)' 2>"$tmp/run.err")
rc=$?
if [ $rc -eq 0 ] && [ "$out" = 42 ]; then
	ok "govex run --preset trusted -c 'print(6*7)' prints 42, exit 0"
else
	not_ok "govex run --preset trusted -c 'print(6*7)' prints 42, exit 0" \
		"exit $rc, stdout '$out'" "$(cat "$tmp/run.err")"
fi

# Is the restricted backend available on this host?
restricted=no
backends=$(rungovex backends --json 2>"$tmp/backends.err")
rc=$?
if [ $rc -eq 0 ] && restricted=$(python3 -c '
import json, sys
reports = json.loads(sys.stdin.read())
assert isinstance(reports, list) and reports
assert all(r["version"] == "govex.backend/v1" for r in reports)
print("yes" if any(r["name"] == "restricted" and r["available"] for r in reports) else "no")
' <<<"$backends" 2>"$tmp/backends.py.err"); then
	ok "govex backends --json prints govex.backend/v1 reports (restricted available: $restricted)"
else
	restricted=no
	not_ok "govex backends --json prints govex.backend/v1 reports" "exit $rc" \
		"$(cat "$tmp/backends.err" "$tmp/backends.py.err" 2>/dev/null)"
fi

# the installed govex's reports against the installed schema (Debian's python3-jsonschema)
if [ -z "$backends" ]; then
	not_ok "govex backends --json validates against the installed backend.schema.json" \
		"no reports"
elif ! /usr/bin/python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	skip "govex backends --json validates against the installed backend.schema.json" \
		"/usr/bin/python3 has no jsonschema (apt-get install python3-jsonschema)"
elif out=$(/usr/bin/python3 -c '
import json, sys
from jsonschema import Draft202012Validator
with open(sys.argv[1]) as f:
    v = Draft202012Validator(json.load(f))
errs = [e.message for e in v.iter_errors(json.loads(sys.stdin.read()))]
print("\n".join(errs[:5]))
sys.exit(1 if errs else 0)
' "$schemadir/backend.schema.json" <<<"$backends" 2>&1); then
	ok "govex backends --json validates against the installed backend.schema.json"
else
	not_ok "govex backends --json validates against the installed backend.schema.json" "$out"
fi

if [ "$restricted" = yes ] && [ -x "$smoke" ]; then
	run_smoke strict
elif [ "$restricted" = yes ]; then
	not_ok "smoke (strict preset, the default policy)" "smoke not built"
else
	skip "smoke (strict preset, the default policy)" "feature:userns the restricted backend is unavailable here"
fi

if [ "$restricted" = yes ]; then
	out=$(rungovex run -c 'print(6*7)' 2>"$tmp/strict.err")
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = 42 ]; then
		ok "govex run -c 'print(6*7)' under the default policy prints 42, exit 0"
	else
		not_ok "govex run -c 'print(6*7)' under the default policy prints 42, exit 0" \
			"exit $rc, stdout '$out'" "$(cat "$tmp/strict.err")"
	fi
else
	skip "govex run under the default policy" "feature:userns the restricted backend is unavailable here"
fi

# the process toolkit through the installed library (smoke_exec.c) and CLI, on both
# backends where the host has them
smoke_exec=$tmp/smoke_exec
if [ -n "$cflags$libs" ] &&
	${CC:-cc} -std=c99 -Wall -Wextra -Werror -pedantic -o "$smoke_exec" \
		"$ROOT/tests/install/smoke_exec.c" $cflags $libs >"$tmp/cc_exec.log" 2>&1; then
	ok "smoke_exec.c compiles against the installed header and library (pkg-config)"
else
	not_ok "smoke_exec.c compiles against the installed header and library (pkg-config)" \
		"$(tail_of "$tmp/cc_exec.log")"
fi
run_smoke_exec() {
	local preset=$1 out rc
	out=$(LD_LIBRARY_PATH=$export_ld "$smoke_exec" "$preset" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && grep -q '"status":"success"' <<<"$out"; then
		ok "smoke_exec ($preset preset): govex_runtime_exec runs echo"
	else
		not_ok "smoke_exec ($preset preset): govex_runtime_exec runs echo" "exit $rc" "$out"
	fi
}
if [ -x "$smoke_exec" ]; then
	run_smoke_exec trusted
	if [ "$restricted" = yes ]; then
		run_smoke_exec strict
	else
		skip "smoke_exec (strict preset)" "feature:userns the restricted backend is unavailable here"
	fi
else
	not_ok "smoke_exec (trusted preset)" "not built"
	not_ok "smoke_exec (strict preset)" "not built"
fi

# exec_cli PRESET-ARGS...: govex exec --json -- /bin/echo hi prints hi
exec_cli() {
	local what=$1 out rc
	shift
	out=$(rungovex exec "$@" --json -- /bin/echo hi 2>"$tmp/exec.err")
	rc=$?
	if [ $rc -eq 0 ] && python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
assert r["version"] == "govex.result/v1", r
assert r["status"] == "success" and r["exit_code"] == 0, r
assert r["stdout"] == "hi\n", r
' <<<"$out" 2>"$tmp/exec.py.err"; then
		ok "installed govex exec $what -- /bin/echo hi"
	else
		not_ok "installed govex exec $what -- /bin/echo hi" "exit $rc" "$out" \
			"$(cat "$tmp/exec.err" "$tmp/exec.py.err" 2>/dev/null)"
	fi
}
exec_cli "--preset trusted" --preset trusted
if [ "$restricted" = yes ]; then
	exec_cli "(default policy, restricted)"
else
	skip "installed govex exec under the default policy" "feature:userns the restricted backend is unavailable here"
fi

# ---- call mode, inspection, the tool provider and MCP, from the installed files ------

# The call-mode worker (src/worker) and the warm runs' helper (libgovex-zyg.so) are
# compiled into the library and loaded from memory (a memfd): nothing is looked up at run
# time, so a package has no such file to install, and with the build directory gone
# (above) the cases below use what is installed alone.
stray=$(cd "$dest" 2>/dev/null && find . \( -name '*zyg*' -o -name 'govex_worker*' \
	-o -name 'worker.py' -o -name 'zygote.py' \) | sort)
if [ -d "$dest" ] && [ -z "$stray" ] && [ ! -e "$build" ]; then
	ok "the worker and libgovex-zyg.so are embedded, not installed files; build tree gone"
else
	not_ok "the worker and libgovex-zyg.so are embedded, not installed files; build tree gone" \
		"installed: $stray" "build directory: $(ls -d "$build" 2>&1)"
fi

# the modules are inputs: copies outside the source tree
mods=$tmp/modules
mkdir -p "$mods" && cp "$ROOT/examples/mod.py" "$ROOT/examples/plugins.py" \
	"$ROOT/examples/known-effects.json" "$mods/"
if [ "$restricted" = yes ]; then
	preset=strict
	policy_args=()
	under="the default policy"
else
	preset=trusted
	policy_args=(--preset trusted)
	under="--preset trusted (no restricted backend here)"
fi

out=$(cd "$tmp" && rungovex call "${policy_args[@]}" "$mods/mod.py:add" --args '{"a": 40, "b": 2}' \
	2>"$tmp/call.err")
rc=$?
if [ $rc -eq 0 ] && [ "$out" = 42 ]; then
	ok "installed govex call mod.py:add --args '{\"a\": 40, \"b\": 2}' prints 42 ($under)"
else
	not_ok "installed govex call mod.py:add prints 42 ($under)" "exit $rc, stdout '$out'" \
		"$(cat "$tmp/call.err")"
fi

# refused before anything runs: plugin_name's network and file-writing effects are
# unknown to the inspection, and known-effects.json requires them known (README)
if [ "$restricted" = yes ]; then
	out=$(cd "$tmp" && rungovex call --json --policy "$mods/known-effects.json" \
		"$mods/plugins.py:plugin_name" --args '{"module": "json"}' 2>"$tmp/refused.err")
	rc=$?
	if [ $rc -eq 125 ] && python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
assert r["version"] == "govex.result/v1", r
assert r["status"] == "policy_refused" and r["termination"] == "refused", r
d = r["diagnostics"]
assert [x["code"] for x in d] == ["unknown_required_effect"], d
assert d[0]["effects"] == ["filesystem_write", "network"], d
assert r["exit_code"] is None and r["stdout"] == "", r
' <<<"$out" 2>"$tmp/refused.py.err"; then
		ok "installed govex call of an effect-unknown function is refused (125, unknown_required_effect)"
	else
		not_ok "installed govex call of an effect-unknown function is refused (125, unknown_required_effect)" \
			"exit $rc" "$out" "$(cat "$tmp/refused.err" "$tmp/refused.py.err" 2>/dev/null)"
	fi
else
	skip "installed govex call refused by effects.require_known" \
		"feature:userns the restricted backend is unavailable here (known-effects.json is strict's)"
fi

out=$(cd "$tmp" && rungovex inspect "${policy_args[@]}" --json "$mods/mod.py" 2>"$tmp/inspect.err")
rc=$?
if [ $rc -eq 0 ] && python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["version"] == "govex.inspection/v1", d
assert d["source_digest"].startswith("sha256:"), d
fs = {f["name"]: f for f in d["functions"]}
assert sorted(fs) == ["add", "greet", "mean"], sorted(fs)
assert all(f["eligible"] for f in fs.values()), fs
assert fs["greet"]["async"] is True and fs["add"]["async"] is False, fs
props = fs["add"]["input_schema"]["properties"]
assert props == {"a": {"type": "integer"}, "b": {"type": "integer"}}, props
assert set(fs["add"]["effects"].values()) == {"absent"}, fs["add"]["effects"]
' <<<"$out" 2>"$tmp/inspect.py.err"; then
	ok "installed govex inspect --json mod.py: add, mean, async greet, schemas and effects ($under)"
else
	not_ok "installed govex inspect --json mod.py: add, mean, async greet, schemas and effects ($under)" \
		"exit $rc" "$(head -c 2000 <<<"$out")" \
		"$(cat "$tmp/inspect.err" "$tmp/inspect.py.err" 2>/dev/null)"
fi

# the tool provider through the installed library (smoke_tools.c)
smoke_tools=$tmp/smoke_tools
# shellcheck disable=SC2086  # pkg-config output is a list of words
if [ -n "$cflags$libs" ] &&
	${CC:-cc} -std=c99 -Wall -Wextra -Werror -pedantic -o "$smoke_tools" \
		"$ROOT/tests/install/smoke_tools.c" $cflags $libs >"$tmp/cc_tools.log" 2>&1; then
	ok "smoke_tools.c compiles against the installed header and library (pkg-config)"
else
	not_ok "smoke_tools.c compiles against the installed header and library (pkg-config)" \
		"$(tail_of "$tmp/cc_tools.log")"
fi
if [ -x "$smoke_tools" ]; then
	(cd "$tmp" && LD_LIBRARY_PATH=$export_ld "$smoke_tools" "$preset" "$mods/mod.py") \
		>"$tmp/tools.out" 2>"$tmp/tools.err"
	rc=$?
else
	rc=127
	: >"$tmp/tools.out"
fi
# tools_check LINE PYTHON: line LINE of smoke_tools' output, as JSON, passes PYTHON's asserts
tools_check() {
	sed -n "$1p" "$tmp/tools.out" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
'"$2" 2>"$tmp/tools.py.err"
}
if [ -s "$tmp/tools.out" ] && tools_check 1 '
names = sorted(t["name"] for t in d)
assert names == ["add", "greet", "mean", "run_python_snippet"], names
for t in d:
    assert t["description"] and t["inputSchema"]["type"] == "object", t
snippet = [t for t in d if t["name"] == "run_python_snippet"][0]
assert "code" in snippet["inputSchema"]["properties"], snippet
'; then
	ok "smoke_tools: govex_toolset_list names run_python_snippet and mod.py's add, mean, greet"
else
	not_ok "smoke_tools: govex_toolset_list names run_python_snippet and mod.py's add, mean, greet" \
		"exit $rc" "$(head -c 1500 "$tmp/tools.out")" "$(cat "$tmp/tools.err" "$tmp/tools.py.err" 2>/dev/null)"
fi
want_backend=$([ "$preset" = strict ] && echo restricted || echo controlled)
if [ $rc -eq 0 ] && tools_check 2 '
r = d["structuredContent"]
assert d["isError"] is False and r["status"] == "success", d
assert r["stdout"] == "42\n" and r["backend"]["name"] == "'"$want_backend"'", r
' && tools_check 3 '
assert d["isError"] is False and d["structuredContent"]["value"] == 42, d
'; then
	ok "smoke_tools: govex_toolset_invoke runs run_python_snippet (42, $want_backend) and add (42); an unknown tool is GOVEX_EINVAL"
else
	not_ok "smoke_tools: govex_toolset_invoke runs run_python_snippet, add; an unknown tool is GOVEX_EINVAL" \
		"exit $rc" "$(sed -n '2,3p' "$tmp/tools.out" | head -c 3000)" \
		"$(cat "$tmp/tools.err" "$tmp/tools.py.err" 2>/dev/null)"
fi

# govex mcp over stdio: JSON-RPC lines through a pipe (tests/install/mcp_stdio.py)
(cd "$tmp" && LD_LIBRARY_PATH=$export_ld python3 "$ROOT/tests/install/mcp_stdio.py" "$cli" \
	"$want_version" "$preset" "$mods/mod.py") >"$tmp/mcp.out" 2>"$tmp/mcp.err"
for step in initialize tools/list tools/call exit; do
	line=$(awk -F '\t' -v s="$step" '$1 == s' "$tmp/mcp.out")
	what="installed govex mcp over stdio ($preset): $step"
	case "$line" in
	"$step	ok	"*) ok "$what: ${line#*ok	}" ;;
	"") not_ok "$what" "no reply to this step" "$(cat "$tmp/mcp.out" "$tmp/mcp.err")" ;;
	*) not_ok "$what" "${line#*	}" ;;
	esac
done

# ---- the system service (deploy/systemd/govex-mcp.service.in) ----------------------

# in systemd's unit directory under the prefix (meson.build: pkg-config's systemd, its
# root prefix ours, or $prefix/lib/systemd/system without it)
unit=$(find_one lib/systemd/system/govex-mcp.service)
if [ -n "$unit" ] && [ -f "$unit" ]; then
	ok "govex-mcp.service installed (${unit#"$dest"})"
else
	not_ok "govex-mcp.service installed in $prefix/lib/systemd/system" \
		"$(cd "$dest" 2>/dev/null && find . -name '*.service')"
fi
problems=()
if [ -f "${unit:-}" ]; then
	grep -qxF "ExecStart=$prefix/bin/govex mcp --http \${GOVEX_MCP_HTTP} \$GOVEX_MCP_ARGS" "$unit" ||
		problems+=("ExecStart: $(grep '^ExecStart=' "$unit")")
	grep -qxF "EnvironmentFile=-/etc/default/govex-mcp" "$unit" ||
		problems+=("EnvironmentFile: $(grep '^EnvironmentFile=' "$unit")")
	grep -qxF "Environment=GOVEX_MCP_HTTP=127.0.0.1:8080" "$unit" ||
		problems+=("no loopback default address")
	grep -qxF "Delegate=yes" "$unit" || problems+=("no Delegate=yes")
	grep -qxF "KillMode=mixed" "$unit" || problems+=("no KillMode=mixed (the drain)")
	! grep -n '@[a-z_]*@' "$unit" >/dev/null || problems+=("left unsubstituted: $(grep -n '@[a-z_]*@' "$unit")")
else
	problems+=("no unit")
fi
if [ ${#problems[@]} -eq 0 ]; then
	ok "govex-mcp.service runs $prefix/bin/govex, its address from /etc/default/govex-mcp, Delegate=yes"
else
	not_ok "govex-mcp.service runs $prefix/bin/govex, its address from /etc/default/govex-mcp, Delegate=yes" \
		"${problems[@]}"
fi

# systemd's own check of the unit as installed, with ExecStart pointed at the DESTDIR's
# binary (verify checks that the command exists): unknown or misspelt directives (one a
# later systemd has, for instance) are warnings it prints, so any output fails
if command -v systemd-analyze >/dev/null 2>&1 && [ -f "${unit:-}" ]; then
	mkdir -p "$tmp/unit"
	sed "s|^ExecStart=$prefix/bin/govex |ExecStart=$cli |" "$unit" >"$tmp/unit/govex-mcp.service"
	systemd-analyze verify --man=no "$tmp/unit/govex-mcp.service" >"$tmp/verify.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$tmp/verify.log" ]; then
		ok "systemd-analyze verify govex-mcp.service: clean ($(systemd-analyze --version | head -n 1))"
	else
		not_ok "systemd-analyze verify govex-mcp.service: clean" "exit $rc" "$(cat "$tmp/verify.log")"
	fi
	# the hardening, as systemd scores it (0 best, 10 worst): 7.3 as shipped, the
	# hardening tried on a systemd host (tests/vm/); never worse
	exposure=$(systemd-analyze security --offline=yes "$tmp/unit/govex-mcp.service" 2>"$tmp/security.err" |
		sed -n 's/.*Overall exposure level for govex-mcp.service: \([0-9.]*\).*/\1/p')
	if [ -z "$exposure" ] && grep -q -i 'offline' "$tmp/security.err"; then
		skip "systemd-analyze security: exposure at most 7.3" "this systemd-analyze has no --offline (systemd < 250)"
	elif [ -n "$exposure" ] && awk -v e="$exposure" 'BEGIN { exit !(e <= 7.3) }'; then
		ok "systemd-analyze security: exposure $exposure, at most 7.3"
	else
		not_ok "systemd-analyze security: exposure at most 7.3" "exposure '$exposure'" \
			"$(cat "$tmp/security.err")"
	fi
elif command -v systemd-analyze >/dev/null 2>&1; then
	not_ok "systemd-analyze verify govex-mcp.service: clean" "no unit installed"
	not_ok "systemd-analyze security: exposure at most 7.3" "no unit installed"
else
	skip "systemd-analyze verify govex-mcp.service" "no systemd-analyze on this host"
	skip "systemd-analyze security: exposure at most 7.3" "no systemd-analyze on this host"
fi

# ---- the Python binding (src/python) -----------------------------------------------

# Built when the headers of meson's Python are there (-Dpython=auto): Debian's python3-dev.
# Installed where Debian's python3 imports from with prefix /usr.
pysite=$dest$prefix/lib/python3/dist-packages
pyext=$pysite/govex/_govex.abi3.so
if ! pkg-config --exists python3 2>/dev/null; then
	for what in "the Python binding installed" "the binding's extension links the installed libgovex" \
		"import govex from DESTDIR runs snippets" "the README's Python example"; do
		skip "$what" "python3-dev is not installed (pkg-config python3)"
	done
else
	if [ -f "$pyext" ] && [ -f "$pysite/govex/__init__.py" ] && [ -f "$pysite/govex/py.typed" ]; then
		ok "the Python binding installed in ${pysite#"$dest"}/govex (one _govex.abi3.so)"
	else
		not_ok "the Python binding installed in ${pysite#"$dest"}/govex" \
			"$(cd "$dest" 2>/dev/null && find . -path '*govex*' -name '*.py*' -o -name '_govex*' | sort)"
	fi
	pyresolved=$( [ -f "$pyext" ] && LD_LIBRARY_PATH=$export_ld ldd "$pyext" 2>/dev/null |
		awk '$1 == "libgovex.so.1" { print $3 }')
	pyrunpath=$( [ -f "$pyext" ] && readelf -d "$pyext" 2>/dev/null | grep -E 'RPATH|RUNPATH')
	if [ -n "$pyresolved" ] && [ "$(readlink -f "$pyresolved")" = "$(readlink -f "$soname_file")" ] &&
		[ -z "$pyrunpath" ]; then
		ok "the binding's extension links libgovex.so.1 (from DESTDIR here), no RPATH"
	else
		not_ok "the binding's extension links the installed libgovex, no RPATH" \
			"libgovex.so.1 resolved to '$pyresolved'" "$pyrunpath"
	fi
	# Debian's python3 with the package from DESTDIR on PYTHONPATH (the installed one
	# would come later on sys.path; the first line checks which was imported)
	out=$(cd "$tmp" && PYTHONPATH=$pysite LD_LIBRARY_PATH=$export_ld RESTRICTED=$restricted \
		/usr/bin/python3 -c '
import os, sys
import govex
assert govex.__file__.startswith(sys.argv[1]), govex.__file__
assert govex._govex.__file__.endswith("/_govex.abi3.so"), govex._govex.__file__
presets = ["trusted"] + (["strict"] if os.environ["RESTRICTED"] == "yes" else [])
for preset in presets:
    with govex.Runtime(preset) as rt:
        r = rt.run("print(6 * 7)")
        assert r.status == govex.Status.SUCCESS and r.stdout == b"42\n", (preset, r.json)
        print(preset, r.status, r.backend)
' "$dest" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^trusted success controlled$' <<<"$out" &&
		{ [ "$restricted" != yes ] || grep -q '^strict success restricted$' <<<"$out"; }; then
		ok "import govex from DESTDIR (/usr/bin/python3) runs print(6 * 7): $(tr '\n' ' ' <<<"$out")"
	else
		not_ok "import govex from DESTDIR (/usr/bin/python3) runs print(6 * 7)" "exit $rc" "$out"
	fi
	# The README's Python example as shown, with 20 submissions that pass instead of 990.
	readme_py=$tmp/readme-example.py
	sed -n '/^<!-- BEGIN readme-example.py -->$/,/^<!-- END readme-example.py -->$/p' "$ROOT/README.md" |
		sed '1,/^```python$/d; /^```$/,$d' | sed 's/\] \* 990 /] * 20 /' >"$readme_py"
	if [ "$restricted" = yes ]; then
		out=$(cd "$tmp" && PYTHONPATH=$pysite LD_LIBRARY_PATH=$export_ld \
			timeout 300 /usr/bin/python3 "$readme_py" 2>&1)
		rc=$?
		if [ $rc -eq 0 ] && [ "$out" = "{'success': 20, 'timeout': 5, 'execution_failed': 5}" ]; then
			ok "the README's Python example grades 30 snippets: $out"
		else
			not_ok "the README's Python example grades 30 snippets" "exit $rc" "$out" \
				"$(head -5 "$readme_py")"
		fi
	else
		skip "the README's Python example" "feature:userns the restricted backend is unavailable here"
	fi
fi

if [ "$n" -ne "$PLAN" ]; then
	echo "# planned $PLAN tests, ran $n"
fi
exit 0
