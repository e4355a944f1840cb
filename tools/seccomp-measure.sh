#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Measures which syscalls CPython and its standard library issue, to keep the restricted
# backend's seccomp allowlist (src/lib/backend/restricted/seccomp.c) honest.
#
#   tools/seccomp-measure.sh [OUTDIR]
#
# Runs, under `strace -f -qq -e trace=all`, for every interpreter in $PYTHONS (default:
# /usr/bin/python3.11 and every pyenv 3.8+ under /root/.pyenv/versions):
#   python -I -S -c pass             bare start-up (glibc, the loader, the interpreter)
#   python -I -c 'import site'       start-up with site
#   python -I tools/seccomp-workload.py   files, processes, threads, signals, sockets,
#                                    asyncio, subprocess/multiprocessing, sqlite, mmap...
# and, for $TEST_PYTHON (default a pyenv 3.12, else /usr/bin/python3.11) unless MEASURE_TESTS=0, the
# stdlib's own test modules in $TESTS (offline; a few minutes under strace).
# Prints the union of syscall names, one per line, sorted; per-workload lists are left
# in OUTDIR (default: a new temporary directory) as *.names.
#
# The output is a measurement, not the list: seccomp.c's allowlist is this union minus
# what must never be allowed (see contract item 7 and the comment in seccomp.c), plus
# what the program child itself issues between loading the filter and execve.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d /tmp/govex-seccomp-measure.XXXXXX)}
mkdir -p "$out"

if [ -z "${PYTHONS:-}" ]; then
	PYTHONS=/usr/bin/python3.11
	for v in /root/.pyenv/versions/3.*; do
		case ${v##*/} in 3.[0-7].* | 3.[0-7]) continue ;; esac
		[ -x "$v/bin/python3" ] && PYTHONS="$PYTHONS $v/bin/python3"
	done
fi
if [ -z "${TEST_PYTHON:-}" ]; then # Debian's python3.11 ships without its test package
	TEST_PYTHON=/usr/bin/python3.11
	for v in /root/.pyenv/versions/3.12.*; do
		[ -d "$v/lib/python3.12/test/test_json" ] && TEST_PYTHON=$v/bin/python3
	done
fi
TESTS=${TESTS:-"test_json test_re test_threading test_tempfile test_os test_io test_subprocess test_sqlite3 test_zlib test_hashlib test_datetime test_pathlib test_shutil test_signal test_select test_selectors test_mmap test_time test_random test_struct test_fcntl test_posix test_asyncio.test_events test_asyncio.test_subprocess test_asyncio.test_unix_events"}

names() { # strace log -> syscall names
	sed -n -E 's/^[0-9]+ +(<\.\.\. )?([a-z0-9_]+)[( ].*/\2/p' "$1" | sort -u
}

trace() { # name, argv...
	t=$1
	shift
	(cd /tmp && strace -f -qq -e trace=all -o "$out/$t.log" "$@") \
		>"$out/$t.out" 2>&1 || echo "note: $t exited $?" >&2
	names "$out/$t.log" >"$out/$t.names"
	rm -f "$out/$t.log"
}

for py in $PYTHONS; do
	v=$("$py" -I -S -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	tag=py$v-$(echo "$py" | tr -c 'a-zA-Z0-9.\n' _)
	trace "$tag-bare" "$py" -I -S -c pass
	trace "$tag-site" "$py" -I -c 'import site'
	trace "$tag-workload" "$py" -I "$here/seccomp-workload.py"
done
if [ "${MEASURE_TESTS:-1}" != 0 ]; then
	# shellcheck disable=SC2086
	trace tests "$TEST_PYTHON" -m test -q --timeout 600 $TESTS
fi
echo "measured in $out" >&2
cat "$out"/*.names | sort -u >"$out/all.txt"
# what the measurement saw that seccomp.c does not list (to review, not to add blindly)
src=$here/../src/lib/backend/restricted/seccomp.c
if [ -f "$src" ]; then
	grep -o '"[a-z0-9_]*"' "$src" | tr -d '"' | sort -u >"$out/listed.txt"
	echo "measured, not in seccomp.c: $(comm -23 "$out/all.txt" "$out/listed.txt" | tr '\n' ' ')" >&2
fi
cat "$out/all.txt"
