/* SPDX-License-Identifier: MIT */
/* unit-cache: the cache directory and its files (cache.c), interpreter probe answers
 * validated fresh and from the cache (interp.c). */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"

static char base[64];

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/govex-unit-cache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
	govex__rm_rf(base);
}

static char *at(const char *name)
{
	static char buf[4][PATH_MAX];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, PATH_MAX, "%s/%s", base, name);
	return b;
}

static void put_file(const char *path, const char *data, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* ---- directory ------------------------------------------------------------------- */

START_TEST(test_dir_created_0700)
{
	mode_t old = umask(0);
	int fd = govex__cache_dir_open(at("c"), true);
	umask(old);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(stat(at("c"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(st.st_uid, geteuid());
	close(fd);
	/* not created without create */
	ck_assert_int_eq(govex__cache_dir_open(at("missing"), false), -ENOENT);
	ck_assert_int_eq(govex__cache_dir_open("relative/dir", true), -EINVAL);
}
END_TEST

START_TEST(test_dir_symlink_refused)
{
	ck_assert_int_eq(mkdir(at("real"), 0700), 0);
	ck_assert_int_eq(symlink(at("real"), at("link")), 0);
	ck_assert_int_lt(govex__cache_dir_open(at("link"), true), 0);
	/* a dangling symlink is not followed to create its target either */
	ck_assert_int_eq(symlink(at("nowhere"), at("dangling")), 0);
	ck_assert_int_lt(govex__cache_dir_open(at("dangling"), true), 0);
	ck_assert_int_eq(access(at("nowhere"), F_OK), -1);
}
END_TEST

START_TEST(test_dir_mode_refused)
{
	ck_assert_int_eq(mkdir(at("g"), 0700), 0);
	ck_assert_int_eq(chmod(at("g"), 0750), 0);
	ck_assert_int_eq(govex__cache_dir_open(at("g"), true), -EPERM);
	ck_assert_int_eq(chmod(at("g"), 0701), 0);
	ck_assert_int_eq(govex__cache_dir_open(at("g"), true), -EPERM);
	ck_assert_int_eq(chmod(at("g"), 0700), 0);
	int fd = govex__cache_dir_open(at("g"), true);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* a file is not a directory */
	put_file(at("f"), "x", 0600);
	ck_assert_int_lt(govex__cache_dir_open(at("f"), true), 0);
}
END_TEST

START_TEST(test_dir_owner_refused)
{
	if (geteuid() != 0)
		return; /* needs chown */
	ck_assert_int_eq(mkdir(at("o"), 0700), 0);
	ck_assert_int_eq(chown(at("o"), 65534, 65534), 0);
	ck_assert_int_eq(govex__cache_dir_open(at("o"), true), -EPERM);
}
END_TEST

/* ---- files --------------------------------------------------------------------------- */

static int open_dir(void)
{
	int fd = govex__cache_dir_open(at("c"), true);
	ck_assert_int_ge(fd, 0);
	return fd;
}

START_TEST(test_file_roundtrip_0600)
{
	int d = open_dir();
	mode_t old = umask(0);
	ck_assert_int_eq(govex__cache_file_write(d, "a.json", "hello", 5), 0);
	umask(old);
	struct stat st;
	ck_assert_int_eq(fstatat(d, "a.json", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	char *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(govex__cache_file_read(d, "a.json", 100, &data, &len), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_str_eq(data, "hello");
	free(data);
	/* rewritten in place, atomically: the old content is gone, no temporary left */
	ck_assert_int_eq(govex__cache_file_write(d, "a.json", "bye", 3), 0);
	ck_assert_int_eq(govex__cache_file_read(d, "a.json", 100, &data, &len), 0);
	ck_assert_str_eq(data, "bye");
	free(data);
	ck_assert_int_eq(govex__cache_file_read(d, "a.json", 2, &data, &len), -EFBIG);
	ck_assert_int_eq(govex__cache_file_read(d, "../a.json", 100, &data, &len), -EINVAL);
	ck_assert_int_eq(govex__cache_file_write(d, "x/y", "z", 1), -EINVAL);
	close(d);
}
END_TEST

START_TEST(test_file_untrusted_refused)
{
	int d = open_dir();
	char *data = NULL;
	size_t len;
	/* symlink in the name */
	put_file(at("target"), "planted", 0600);
	ck_assert_int_eq(symlink(at("target"), at("c/link.json")), 0);
	ck_assert_int_eq(govex__cache_file_read(d, "link.json", 100, &data, &len), -ELOOP);
	/* group or other writable */
	put_file(at("c/gw.json"), "x", 0620);
	ck_assert_int_eq(govex__cache_file_read(d, "gw.json", 100, &data, &len), -EPERM);
	put_file(at("c/ow.json"), "x", 0602);
	ck_assert_int_eq(govex__cache_file_read(d, "ow.json", 100, &data, &len), -EPERM);
	/* readable by others is no threat to us */
	put_file(at("c/or.json"), "x", 0644);
	ck_assert_int_eq(govex__cache_file_read(d, "or.json", 100, &data, &len), 0);
	free(data);
	/* a FIFO: not regular, and the open does not block */
	ck_assert_int_eq(mkfifo(at("c/fifo.json"), 0600), 0);
	ck_assert_int_eq(govex__cache_file_read(d, "fifo.json", 100, &data, &len), -EPERM);
	/* a directory */
	ck_assert_int_eq(mkdir(at("c/dir.json"), 0700), 0);
	ck_assert_int_eq(govex__cache_file_read(d, "dir.json", 100, &data, &len), -EPERM);
	if (geteuid() == 0) {
		put_file(at("c/other.json"), "x", 0600);
		ck_assert_int_eq(chown(at("c/other.json"), 65534, 65534), 0);
		ck_assert_int_eq(govex__cache_file_read(d, "other.json", 100, &data, &len), -EPERM);
	}
	close(d);
}
END_TEST

START_TEST(test_file_write_replaces_symlink)
{
	int d = open_dir();
	put_file(at("victim"), "original", 0600);
	ck_assert_int_eq(symlink(at("victim"), at("c/name.json")), 0);
	ck_assert_int_eq(govex__cache_file_write(d, "name.json", "new", 3), 0);
	/* the link was replaced, its target never written */
	char *data = NULL;
	size_t len;
	ck_assert_int_eq(govex__read_file(at("victim"), 100, &data, &len, NULL), 0);
	ck_assert_str_eq(data, "original");
	free(data);
	struct stat st;
	ck_assert_int_eq(lstat(at("c/name.json"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	close(d);
}
END_TEST

START_TEST(test_get_put_key)
{
	int d = open_dir();
	ck_assert_int_eq(govex__cache_put(d, "k.json", "key one", "{\"a\":1}"), 0);
	char *p = govex__cache_get(d, "k.json", "key one", 100);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "{\"a\":1}");
	free(p);
	ck_assert_ptr_null(govex__cache_get(d, "k.json", "key two", 100));
	ck_assert_ptr_null(govex__cache_get(d, "k.json", "key on", 100));
	ck_assert_ptr_null(govex__cache_get(d, "k.json", "key one", 3)); /* too big */
	ck_assert_int_eq(govex__cache_put(d, "k.json", "two\nlines", "x"), -EINVAL);
	close(d);
}
END_TEST

static void set_mtime(const char *path, time_t t)
{
	struct timeval tv[2] = {{t, 0}, {t, 0}};
	ck_assert_int_eq(utimes(path, tv), 0);
}

START_TEST(test_prune)
{
	int d = open_dir();
	time_t now = time(NULL);
	char name[64];
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "c/probe-v1-%d.json", i);
		put_file(at(name), "x", 0600);
		set_mtime(at(name), now - 100 + i); /* 5 is the newest */
	}
	put_file(at("c/backends-v2-a.json"), "x", 0600);
	/* temporaries: a dead writer's (old) and a live one's (fresh) */
	put_file(at("c/.probe-v1-9.json.AbCdEf12"), "x", 0600);
	set_mtime(at("c/.probe-v1-9.json.AbCdEf12"), now - 3600);
	put_file(at("c/.probe-v1-8.json.AbCdEf34"), "x", 0600);
	/* not a regular file of ours: left alone */
	ck_assert_int_eq(symlink(at("target"), at("c/probe-v1-link.json")), 0);
	govex__cache_prune(d, "probe-v1-", 3);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "c/probe-v1-%d.json", i);
		ck_assert_int_eq(access(at(name), F_OK) == 0, i >= 3);
	}
	ck_assert_int_eq(access(at("c/backends-v2-a.json"), F_OK), 0);
	ck_assert_int_eq(access(at("c/.probe-v1-9.json.AbCdEf12"), F_OK), -1);
	ck_assert_int_eq(access(at("c/.probe-v1-8.json.AbCdEf34"), F_OK), 0);
	struct stat st;
	ck_assert_int_eq(lstat(at("c/probe-v1-link.json"), &st), 0);
	close(d);
}
END_TEST

/* ---- probe answers ------------------------------------------------------------------ */

/* A real ELF executable (this test) and a real shared library (libc), so that the
 * answer's files pass; prefixes are this test's directory. */
static char exe[PATH_MAX], prefix[PATH_MAX], libc[PATH_MAX];

static void answer_setup(void)
{
	setup();
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(prefix, sizeof(prefix), "%s", exe);
	char *dn = dirname(prefix);
	if (dn != prefix)
		memmove(prefix, dn, strlen(dn) + 1);
	Dl_info dl;
	ck_assert(dladdr((void *)printf, &dl) && dl.dli_fname);
	char *r = realpath(dl.dli_fname, NULL);
	ck_assert_ptr_nonnull(r);
	snprintf(libc, sizeof(libc), "%s", r);
	free(r);
}

struct answer {
	const char *executable, *version, *prefix, *base_prefix, *stdlib, *platstdlib, *dynload,
	    *lib;
	int major, minor;
};

static char *answer_json(const struct answer *a)
{
	json_t *j =
	    json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:[s], s:[s]}", "executable",
		      a->executable, "version", a->version, "major", a->major, "minor", a->minor,
		      "prefix", a->prefix, "base_prefix", a->base_prefix, "stdlib", a->stdlib,
		      "platstdlib", a->platstdlib, "dynload", a->dynload, "libs", a->lib);
	ck_assert_ptr_nonnull(j);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* Copies this test's own binary (an ELF file) to path. */
static void copy_exe(const char *path)
{
	int in = open(exe, O_RDONLY | O_CLOEXEC);
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	ck_assert(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static char pexe[PATH_MAX]; /* an ELF "interpreter" in the prefix */

static struct answer good(char *stdlib, char *dyn)
{
	/* prefix: a directory of our own with a standard library and an executable in it */
	snprintf(prefix, sizeof(prefix), "%s/prefix", base);
	ck_assert_int_eq(mkdir(prefix, 0755), 0);
	ck_assert_int_eq(mkdir(at("prefix/bin"), 0755), 0);
	ck_assert_int_lt(snprintf(pexe, sizeof(pexe), "%.3000s/bin/python3.11", prefix), PATH_MAX);
	copy_exe(pexe);
	ck_assert_int_eq(mkdir(at("prefix/lib"), 0755), 0);
	ck_assert_int_eq(mkdir(at("prefix/lib/python3.11"), 0755), 0);
	ck_assert_int_lt(snprintf(stdlib, PATH_MAX, "%.3000s/lib/python3.11", prefix), PATH_MAX);
	ck_assert_int_lt(snprintf(dyn, PATH_MAX, "%.3000s/lib/python3.11/lib-dynload", prefix),
			 PATH_MAX);
	return (struct answer){pexe, "3.11.7", prefix, prefix, stdlib, stdlib, dyn, libc, 3, 11};
}

START_TEST(test_answer_valid)
{
	char stdlib[PATH_MAX], dyn[PATH_MAX];
	struct answer a = good(stdlib, dyn);
	char *s = answer_json(&a);
	struct govex__interp in;
	struct govex_error e = {0};
	ck_assert_msg(govex__interp_answer(s, &in, &e) == 0, "%s", e.message);
	ck_assert_str_eq(in.path, pexe);
	ck_assert_str_eq(in.version, "3.11.7");
	ck_assert(govex__strv_contains(in.libs, libc));
	ck_assert(govex__strv_contains(in.paths, stdlib));
	ck_assert_int_eq(govex__interp_validate(&in, &e), 0);
	govex__interp_free(&in);
	free(s);
}
END_TEST

/* Each case breaks one rule of contract item 1. */
static const struct {
	const char *what;
	int field;	   /* 0 exe, 1 version, 2 prefix, 3 stdlib, 4 platstdlib, 5 dynload, 6 lib,
			    * 7 base_prefix, 8 major */
	const char *value; /* "@" + suffix: prefix + suffix */
} bad_cases[] = {
    {"relative executable", 0, "python3"},
    {"non-normalized executable", 0, "/usr/bin/../bin/python3"},
    {"executable under /proc", 0, "/proc/self/exe"},
    {"executable not ELF", 0, "@/script.sh"},
    {"executable outside the prefixes", 0, "@/python-elsewhere"},
    {"version with text", 1, "3.11.7; rm -rf /"},
    {"version not matching major.minor", 1, "3.12.1"},
    {"version too long", 1, "3.11.7.1"},
    {"prefix /", 2, "/"},
    {"prefix non-normalized", 2, "@/./x"},
    {"base_prefix under /sys", 7, "/sys/kernel"},
    {"stdlib outside the prefixes", 3, "/etc"},
    {"stdlib under /proc", 3, "/proc/1/root"},
    {"stdlib /", 3, "/"},
    {"stdlib not a directory", 3, "@/lib/nothing"},
    {"prefix not a directory", 2, "@/nothing"},
    {"platstdlib outside the prefixes", 4, "/root/.ssh"},
    {"dynload outside the prefixes", 5, "/home"},
    {"dynload under /dev", 5, "/dev/shm"},
    {"lib not ELF", 6, "@/script.sh"},
    {"lib that does not exist", 6, "@/nothing.so"},
    {"lib under /dev", 6, "/dev/zero"},
    {"lib non-normalized", 6, "/lib/../etc/passwd"},
    {"lib a directory", 6, "@"},
    {"major 2", 8, "2"},
};

START_TEST(test_answer_invalid)
{
	char stdlib[PATH_MAX], dyn[PATH_MAX], val[PATH_MAX];
	struct answer a = good(stdlib, dyn);
	const char *v = bad_cases[_i].value;
	put_file(at("script.sh"), "#!/bin/sh\necho hi\n", 0755);
	copy_exe(at("python-elsewhere"));
	if (v[0] == '@') {
		/* "@" alone: the temporary directory; "@/x": a file in it (or the prefix's
		 * subdirectory for paths) */
		if (bad_cases[_i].field == 6 || bad_cases[_i].field == 0)
			snprintf(val, sizeof(val), "%.3000s%.100s", base, v + 1);
		else
			snprintf(val, sizeof(val), "%.3000s%.100s", prefix, v + 1);
		v = val;
	}
	switch (bad_cases[_i].field) {
	case 0:
		a.executable = v;
		break;
	case 1:
		a.version = v;
		break;
	case 2:
		a.prefix = v;
		break;
	case 3:
		a.stdlib = v;
		break;
	case 4:
		a.platstdlib = v;
		break;
	case 5:
		a.dynload = v;
		break;
	case 6:
		a.lib = v;
		break;
	case 7:
		a.base_prefix = v;
		a.prefix = v;
		break;
	case 8:
		a.major = 2;
		break;
	}
	char *s = answer_json(&a);
	struct govex__interp in;
	struct govex_error e = {0};
	int r = govex__interp_answer(s, &in, &e);
	ck_assert_msg(r == -GOVEX_EINTERP, "%s: accepted (r=%d)", bad_cases[_i].what, r);
	if (getenv("SHOWMSG"))
		fprintf(stderr, "%s => %s\n", bad_cases[_i].what, e.message);
	ck_assert_msg(strstr(e.message, "interpreter") != NULL, "%s: message '%s'",
		      bad_cases[_i].what, e.message);
	free(s);
}
END_TEST

START_TEST(test_answer_not_json)
{
	struct govex__interp in;
	struct govex_error e = {0};
	ck_assert_int_eq(govex__interp_answer("not json", &in, &e), -GOVEX_EINTERP);
	ck_assert_int_eq(govex__interp_answer("{\"executable\": 1}", &in, &e), -GOVEX_EINTERP);
	ck_assert_int_eq(govex__interp_answer("[]", &in, &e), -GOVEX_EINTERP);
}
END_TEST

/* A cached answer that fails validation is ignored and rewritten by a fresh probe (which
 * runs the real interpreter in the probe sandbox). */
START_TEST(test_cached_invalid_answer_rewritten)
{
	/* an ELF interpreter found directly (a script shim's answer is never cached) */
	static const char *const cands[] = {"/usr/bin/python3", "/usr/local/bin/python3"};
	char *real = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(cands) && !real; i++) {
		real = realpath(cands[i], NULL);
		char m[4] = "";
		int fd = real ? open(real, O_RDONLY | O_CLOEXEC) : -1;
		if (fd < 0 || read(fd, m, 4) != 4 || memcmp(m, "\177ELF", 4) != 0) {
			free(real);
			real = NULL;
		}
		if (fd >= 0)
			close(fd);
	}
	if (!real)
		return; /* no such interpreter here */
	/* the cache's key: interp.c identity() */
	struct stat st;
	ck_assert_int_eq(stat(real, &st), 0);
	char *id = NULL;
	ck_assert_int_ge(asprintf(&id, "%s|%llu|%llu|%lld|%lld.%ld|%lld.%ld", real,
				  (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
				  (long long)st.st_size, (long long)st.st_mtim.tv_sec,
				  st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
				  st.st_ctim.tv_nsec),
			 0);
	char dg[72], name[64];
	govex__sha256_digest(id, strlen(id), dg);
	snprintf(name, sizeof(name), "probe-v1-%.16s.json", dg + 7);
	int d = open_dir();
	/* a poisoned answer: stdlib "/etc" */
	char poisoned[1024];
	snprintf(poisoned, sizeof(poisoned),
		 "{\"executable\":\"%s\",\"version\":\"3.11.2\",\"major\":3,\"minor\":11,"
		 "\"prefix\":\"/\",\"base_prefix\":\"/\",\"stdlib\":\"/etc\",\"platstdlib\":"
		 "\"/etc\",\"dynload\":[],\"libs\":[]}",
		 real);
	ck_assert_int_eq(govex__cache_put(d, name, id, poisoned), 0);
	struct govex__interp in;
	struct govex_error e = {0};
	int r = govex__interp_probe(real, at("c"), GOVEX_PROBE_SANDBOXED, &in, &e);
	ck_assert_msg(r == 0, "probe: %s", e.message);
	ck_assert(!govex__strv_contains(in.paths, "/etc"));
	ck_assert_str_ne(in.prefix, "/");
	govex__interp_free(&in);
	char *again = govex__cache_get(d, name, id, 1 << 20);
	ck_assert_ptr_nonnull(again);
	ck_assert_ptr_null(strstr(again, "\"stdlib\":\"/etc\""));
	ck_assert_int_eq(govex__interp_answer(again, &in, &e), 0);
	govex__interp_free(&in);
	free(again);
	free(id);
	free(real);
	close(d);
}
END_TEST

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("dir");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_dir_created_0700);
	tcase_add_test(tc, test_dir_symlink_refused);
	tcase_add_test(tc, test_dir_mode_refused);
	tcase_add_test(tc, test_dir_owner_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_file_roundtrip_0600);
	tcase_add_test(tc, test_file_untrusted_refused);
	tcase_add_test(tc, test_file_write_replaces_symlink);
	tcase_add_test(tc, test_get_put_key);
	tcase_add_test(tc, test_prune);
	suite_add_tcase(s, tc);
	tc = tcase_create("answers");
	tcase_add_checked_fixture(tc, answer_setup, teardown);
	tcase_add_test(tc, test_answer_valid);
	tcase_add_loop_test(tc, test_answer_invalid, 0, ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, test_answer_not_json);
	tcase_add_test(tc, test_cached_invalid_answer_rewritten);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cache_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
