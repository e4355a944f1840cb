/* SPDX-License-Identifier: MIT */
/* unit-util: UTF-8, paths, string vectors, rm_rf. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"

#define FFFD "\xef\xbf\xbd"

/* ---- UTF-8 validation ---------------------------------------------------------------------- */

static const struct {
	const char *s;
	size_t len;
	bool valid;
	const char *what;
} utf8_cases[] = {
    {"", 0, true, "empty"},
    {"plain ascii\n", 12, true, "ascii"},
    {"a\0b", 3, true, "embedded NUL is a valid code point"},
    {"\x7f", 1, true, "U+007F"},
    {"\xc2\x80", 2, true, "U+0080"},
    {"\xdf\xbf", 2, true, "U+07FF"},
    {"\xe0\xa0\x80", 3, true, "U+0800"},
    {"\xed\x9f\xbf", 3, true, "U+D7FF"},
    {"\xee\x80\x80", 3, true, "U+E000"},
    {"\xef\xbf\xbf", 3, true, "U+FFFF"},
    {"\xf0\x90\x80\x80", 4, true, "U+10000"},
    {"\xf4\x8f\xbf\xbf", 4, true, "U+10FFFF"},
    {"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, true, "mixed"},
    /* overlongs */
    {"\xc0\x80", 2, false, "overlong NUL (2)"},
    {"\xc0\xaf", 2, false, "overlong '/' (2)"},
    {"\xc1\xbf", 2, false, "overlong U+007F"},
    {"\xe0\x80\x80", 3, false, "overlong NUL (3)"},
    {"\xe0\x9f\xbf", 3, false, "overlong U+07FF (3)"},
    {"\xf0\x80\x80\x80", 4, false, "overlong NUL (4)"},
    {"\xf0\x8f\xbf\xbf", 4, false, "overlong U+FFFF (4)"},
    /* surrogates */
    {"\xed\xa0\x80", 3, false, "U+D800"},
    {"\xed\xaf\xbf", 3, false, "U+DBFF"},
    {"\xed\xb0\x80", 3, false, "U+DC00"},
    {"\xed\xbf\xbf", 3, false, "U+DFFF"},
    {"\xed\xa0\xbd\xed\xb8\x80", 6, false, "CESU-8 surrogate pair"},
    /* beyond U+10FFFF and bytes that never occur */
    {"\xf4\x90\x80\x80", 4, false, "U+110000"},
    {"\xf5\x80\x80\x80", 4, false, "lead F5"},
    {"\xf7\xbf\xbf\xbf", 4, false, "lead F7"},
    {"\xf8\x88\x80\x80\x80", 5, false, "5-byte form"},
    {"\xfc\x84\x80\x80\x80\x80", 6, false, "6-byte form"},
    {"\xfe", 1, false, "FE"},
    {"\xff", 1, false, "FF"},
    /* truncated */
    {"\xc2", 1, false, "truncated 2"},
    {"\xe0\xa0", 2, false, "truncated 3"},
    {"\xf0\x90\x80", 3, false, "truncated 4"},
    {"\xe2\x82"
     "A",
     3, false, "truncated then ASCII"},
    {"a\xf0\x9f\x98", 4, false, "truncated emoji at end"},
    {"\xc2\x80", 1, false, "len cuts a valid character"},
    /* stray continuation bytes */
    {"\x80", 1, false, "lone continuation"},
    {"\xbf", 1, false, "lone continuation BF"},
    {"a\x80"
     "b",
     3, false, "continuation between ASCII"},
    {"\xc2\x80\x80", 3, false, "extra continuation"},
    {"\xe2\x28\xa1", 3, false, "bad second byte"},
    {"\xf0\x9f\x98"
     "\xc3\xa9",
     5, false, "4-byte lead with 2 continuations"},
};

START_TEST(test_utf8_valid)
{
	ck_assert_msg(
	    govex__utf8_valid(utf8_cases[_i].s, utf8_cases[_i].len) == utf8_cases[_i].valid,
	    "%s: want %s", utf8_cases[_i].what, utf8_cases[_i].valid ? "valid" : "invalid");
}
END_TEST

/* The same sequences after 0 to 17 ASCII bytes: the 8-byte fast part of the check must
 * stop at them wherever they fall in a word. */
START_TEST(test_utf8_valid_after_ascii)
{
	char buf[64];
	for (size_t k = 0; k < 18; k++) {
		memset(buf, 'a', k);
		memcpy(buf + k, utf8_cases[_i].s, utf8_cases[_i].len);
		ck_assert_msg(govex__utf8_valid(buf, k + utf8_cases[_i].len) ==
				  utf8_cases[_i].valid,
			      "%s after %zu ASCII bytes: want %s", utf8_cases[_i].what, k,
			      utf8_cases[_i].valid ? "valid" : "invalid");
	}
}
END_TEST

/* ---- JSON with long strings (jsonlong.c) --------------------------------------------------- */

/* Documents whose long strings take every path: put in place, lexed (escapes), refused
 * (controls, invalid UTF-8), keys, duplicates, \u0000 anywhere, numbers, broken ones.
 * "L" stands for 40 plain bytes. */
static const char *const long_cases[] = {
    "{\"a\":\"L\"}",
    "{\"a\":\"LL\",\"b\":[\"L\",\"x\",{\"c\":\"L\"}],\"d\":\"L\"}",
    "[\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\",\"L\"]",
    "{\"a\":\"L\\n\"}",
    "{\"a\":\"L\\\"L\"}",
    "{\"a\":\"L\\u00e9\"}",
    "{\"a\":\"L\\\\\"}",
    "{\"a\":\"L\\\\\",\"b\":\"L\"}",
    "{\"a\":\"L\x01\"}",
    "{\"a\":\"L\t\"}",
    "{\"a\":\"L\xc3\xa9\xf0\x9f\x98\x80\"}",
    "{\"a\":\"L\xc3\"}",
    "{\"a\":\"L\xed\xa0\x80\"}",
    "{\"L\":1}",
    "{\"L\":\"L\",\"L\":\"L\"}",
    "{\"a\":\"L\",\"a\":\"L\"}",
    "{\"a\":\"L\",\"b\":\"\\u0000\"}",
    "{\"a\":\"\\u00001\",\"b\":\"L\"}",
    "{\"a\":\"L\",\"n\":123456789012345678901234567890}",
    "{\"a\":\"L\",\"n\":1e999}",
    "{\"a\":\"L\",\"n\":-0.5e-3,\"t\":true,\"f\":false,\"z\":null}",
    "{\"a\":\"L\"",
    "{\"a\":\"L",
    "{\"a\":\"L\"}}",
    "{\"a\":\"L\"} x",
    "{\"a\" : \"L\" , \"b\"\n:\n\"L\"\n}",
    "{\"a\":\"L\" :1}",
    "[\"L\":1]",
    "\"L\"",
    "{\"a\":[[[[[[[[\"L\"]]]]]]]]}",
    "{\"a\":\"L\xef\xbf\xbf\x7f\"}",
    "{\"a\":\"L/\",\"b\":\"\\/L\"}",
    "{\"a\":\"L\",\"b\":\"\\uD83D\\uDE00L\"}",
    "{\"a\":\"L\\uD83D\"}",
};

static char *expand_long(const char *c, size_t *ret_len)
{
	size_t n = 0;
	for (const char *p = c; *p; p++)
		n += *p == 'L' ? 40 : 1;
	char *s = malloc(n + 1), *o = s;
	ck_assert_ptr_nonnull(s);
	for (const char *p = c; *p; p++) {
		if (*p != 'L') {
			*o++ = *p;
			continue;
		}
		for (int i = 0; i < 40; i++)
			*o++ = (char)('A' + i % 26);
	}
	*o = 0;
	*ret_len = n;
	return s;
}

/* Both parsers give the same document or the same error, whatever the bounds. */
START_TEST(test_json_parse_long_same)
{
	size_t len;
	char *s = expand_long(long_cases[_i], &len);
	for (size_t flags = 0; flags <= JSON_ALLOW_NUL; flags += JSON_ALLOW_NUL) {
		json_t *a = NULL, *b = NULL;
		struct govex_error ea = {0}, eb = {0};
		int ra = govex__json_parse(s, len, flags, &a, &ea);
		for (size_t mv = 0; mv <= 64; mv += 16) {
			b = NULL;
			int rb = govex__json_parse_long_at(s, len, flags, 0, mv, &b, &eb);
			ck_assert_msg(ra == rb, "case %d (min %zu): %d vs %d (%s / %s)", _i, mv, ra,
				      rb, ea.message, eb.message);
			if (ra < 0)
				ck_assert_str_eq(ea.message, eb.message);
			else
				ck_assert_msg(json_equal(a, b),
					      "case %d (min %zu): documents differ", _i, mv);
			json_decref(b);
		}
		json_decref(a);
	}
	free(s);
}
END_TEST

/* A long document's strings are put in place: the same values, at copying speed. */
START_TEST(test_json_parse_long_big)
{
	size_t n = 3u << 20;
	char *s = malloc(n + 64);
	ck_assert_ptr_nonnull(s);
	int k = snprintf(s, 64, "{\"files\":[{\"name\":\"f\",\"base64\":\"");
	memset(s + k, 'Q', n);
	snprintf(s + k + n, 64 - (size_t)k, "\"}],\"code\":\"1\"}");
	json_t *j = NULL;
	struct govex_error e = {0};
	ck_assert_int_eq(govex__json_parse_long(s, strlen(s), 0, &j, &e), 0);
	json_t *b64 = json_object_get(json_array_get(json_object_get(j, "files"), 0), "base64");
	ck_assert_uint_eq(json_string_length(b64), n);
	ck_assert(memcmp(json_string_value(b64), s + k, n) == 0);
	ck_assert_str_eq(json_string_value(json_object_get(j, "code")), "1");
	json_decref(j);
	free(s);
}
END_TEST

/* ---- UTF-8 sanitizing ---------------------------------------------------------------------- */

static void sanitize_is(const char *in, size_t len, bool cut, const char *want, size_t want_len,
			uint64_t want_replaced)
{
	char *out = NULL;
	size_t out_len = 0;
	uint64_t replaced = 99;
	size_t r = govex__utf8_sanitize(in, len, cut, &out, &out_len, &replaced);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(r, out_len);
	ck_assert_msg(out_len == want_len && memcmp(out, want, want_len) == 0,
		      "sanitize(cut=%d): got %zu bytes, want %zu", cut, out_len, want_len);
	ck_assert_int_eq(out[out_len], '\0');
	ck_assert_msg(replaced == want_replaced, "replaced %llu, want %llu",
		      (unsigned long long)replaced, (unsigned long long)want_replaced);
	ck_assert(govex__utf8_valid(out, out_len));
	free(out);
}
#define SAN(in, cut, want, n) sanitize_is(in, sizeof(in) - 1, cut, want, sizeof(want) - 1, n)

START_TEST(test_sanitize_valid_unchanged)
{
	SAN("", false, "", 0);
	SAN("", true, "", 0);
	SAN("abc", false, "abc", 0);
	SAN("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", true, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
	    0);
	SAN("a\0b", false, "a\0b", 0);
}
END_TEST

START_TEST(test_sanitize_replaces_each_byte)
{
	SAN("a\xff"
	    "b",
	    false, "a" FFFD "b", 1);
	SAN("a\xff"
	    "b",
	    true, "a" FFFD "b", 1);
	SAN("\xc0\x80", false, FFFD FFFD, 2);	       /* overlong: both bytes */
	SAN("\xed\xa0\x80", false, FFFD FFFD FFFD, 3); /* surrogate: three bytes */
	SAN("\xf4\x90\x80\x80", false, FFFD FFFD FFFD FFFD, 4);
	SAN("\x80\x80x", false, FFFD FFFD "x", 2);
	/* a valid character after an invalid lead byte survives */
	SAN("\xe2\xc3\xa9", false, FFFD "\xc3\xa9", 1);
	/* a truncated character in the middle is replaced even when cut */
	SAN("\xe2\x82"
	    "abcd",
	    true, FFFD FFFD "abcd", 2);
	SAN("\xe2\x82"
	    "ab",
	    true, FFFD FFFD "ab", 2);
}
END_TEST

START_TEST(test_sanitize_cut_end)
{
	/* not cut: an incomplete character at the end is invalid bytes */
	SAN("ab\xe2\x82", false, "ab" FFFD FFFD, 2);
	SAN("ab\xf0\x9f\x98", false, "ab" FFFD FFFD FFFD, 3);
	SAN("ab\xc3", false, "ab" FFFD, 1);
	/* cut: dropped, not replaced */
	SAN("ab\xe2\x82", true, "ab", 0);
	SAN("ab\xe2", true, "ab", 0);
	SAN("ab\xf0\x9f\x98", true, "ab", 0);
	SAN("ab\xf0\x9f", true, "ab", 0);
	SAN("ab\xf0", true, "ab", 0);
	SAN("ab\xc3", true, "ab", 0);
	SAN("\xc3", true, "", 0);
	/* an invalid byte before a cut character is still counted */
	SAN("\xff\xe2\x82", true, FFFD, 1);
	/* a "prefix" broken by a non-continuation byte is not a cut character */
	SAN("ab\xe2"
	    "A",
	    true, "ab" FFFD "A", 1);
}
END_TEST

/* A byte that cannot start any character is invalid even at the very end of a cut
 * stream: it must be replaced and counted, never dropped silently. */
START_TEST(test_sanitize_cut_invalid_lead_not_dropped)
{
	SAN("ab\xff", true, "ab" FFFD, 1);
	SAN("ab\xfe", true, "ab" FFFD, 1);
	SAN("ab\xf8", true, "ab" FFFD, 1);
	SAN("ab\xf5\x80", true, "ab" FFFD FFFD, 2);
	SAN("ab\xc0", true, "ab" FFFD, 1);
	SAN("ab\x80", true, "ab" FFFD, 1);
}
END_TEST

/* Likewise a start that no continuation can complete (overlong, surrogate, > U+10FFFF). */
START_TEST(test_sanitize_cut_impossible_prefix_not_dropped)
{
	SAN("ab\xe0\x80", true, "ab" FFFD FFFD, 2);	     /* overlong 3-byte */
	SAN("ab\xed\xa0", true, "ab" FFFD FFFD, 2);	     /* surrogate */
	SAN("ab\xf0\x80\x80", true, "ab" FFFD FFFD FFFD, 3); /* overlong 4-byte */
	SAN("ab\xf4\x90", true, "ab" FFFD FFFD, 2);	     /* > U+10FFFF */
	/* and the valid prefixes of those ranges are still dropped */
	SAN("ab\xe0\xa0", true, "ab", 0);
	SAN("ab\xed\x9f", true, "ab", 0);
	SAN("ab\xf4\x8f\xbf", true, "ab", 0);
}
END_TEST

START_TEST(test_sanitize_bound)
{
	/* worst case: every byte replaced, 3x the input */
	char in[256];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(0x80 | (i & 0x3f));
	char *out = NULL;
	size_t out_len;
	uint64_t replaced;
	ck_assert_uint_eq(govex__utf8_sanitize(in, sizeof(in), false, &out, &out_len, &replaced),
			  3 * sizeof(in));
	ck_assert_uint_eq(replaced, sizeof(in));
	free(out);
}
END_TEST

/* ---- paths --------------------------------------------------------------------------------- */

static const struct {
	const char *p;
	bool ok;
} norm_cases[] = {
    {"/", true},      {"/a", true},	   {"/a/b", true},     {"/.a", true},	 {"/a..b", true},
    {"/...", true},   {"/a/.b/..c", true}, {"/a b/c", true},   {"", false},	 {"a", false},
    {"a/b", false},   {"./a", false},	   {"/a/", false},     {"//", false},	 {"//a", false},
    {"/a//b", false}, {"/.", false},	   {"/./a", false},    {"/a/.", false},	 {"/a/./b", false},
    {"/..", false},   {"/a/..", false},	   {"/a/../b", false}, {"/a/b/", false}, {"///", false},
};

START_TEST(test_path_normalized)
{
	ck_assert_msg(govex__path_normalized(norm_cases[_i].p) == norm_cases[_i].ok,
		      "'%s': want %s", norm_cases[_i].p,
		      norm_cases[_i].ok ? "normalized" : "not normalized");
}
END_TEST

START_TEST(test_path_normalized_null)
{
	ck_assert(!govex__path_normalized(NULL));
}
END_TEST

START_TEST(test_path_under)
{
	ck_assert(govex__path_under("/a/b", "/a"));
	ck_assert(govex__path_under("/a/b/c", "/a"));
	ck_assert(govex__path_under("/a", "/a"));
	ck_assert(govex__path_under("/x", "/"));
	ck_assert(govex__path_under("/", "/"));
	ck_assert(!govex__path_under("/ab", "/a"));
	ck_assert(!govex__path_under("/a", "/a/b"));
	ck_assert(!govex__path_under("/b", "/a"));
	ck_assert(!govex__path_under("/", "/a"));
	ck_assert(!govex__path_under("/tmpfoo/x", "/tmp"));
	ck_assert(govex__path_under("/tmp/foo", "/tmp"));
}
END_TEST

/* ---- string vectors ------------------------------------------------------------------------- */

START_TEST(test_strv)
{
	char **v = NULL;
	ck_assert_uint_eq(govex__strv_len(v), 0);
	ck_assert(!govex__strv_contains(v, "a"));
	static const char *const in[] = {"b", "a", "c", "a", "B", "b", "", "a"};
	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		ck_assert_int_eq(govex__strv_push(&v, in[i]), 0);
	ck_assert_uint_eq(govex__strv_len(v), ARRAY_SIZE(in));
	ck_assert_ptr_null(v[ARRAY_SIZE(in)]);
	ck_assert(govex__strv_contains(v, "B"));
	ck_assert(govex__strv_contains(v, ""));
	ck_assert(!govex__strv_contains(v, "d"));
	char **c = govex__strv_copy(v);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(govex__strv_len(c), ARRAY_SIZE(in));
	ck_assert_ptr_ne(c[0], v[0]);
	ck_assert_str_eq(c[0], "b");

	govex__strv_sort_uniq(v);
	/* byte order: "" < "B" < "a" < "b" < "c" */
	static const char *const want[] = {"", "B", "a", "b", "c"};
	ck_assert_uint_eq(govex__strv_len(v), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		ck_assert_str_eq(v[i], want[i]);
	ck_assert_ptr_null(v[ARRAY_SIZE(want)]);

	json_t *j = govex__strv_json(v);
	char *s = json_dumps(j, JSON_COMPACT);
	ck_assert_str_eq(s, "[\"\",\"B\",\"a\",\"b\",\"c\"]");
	free(s);
	json_decref(j);
	j = govex__strv_json(NULL);
	ck_assert_uint_eq(json_array_size(j), 0);
	json_decref(j);

	ck_assert_ptr_null(govex__strv_free(v));
	ck_assert_ptr_null(govex__strv_free(c));
	ck_assert_ptr_null(govex__strv_free(NULL));
}
END_TEST

START_TEST(test_strv_sort_small)
{
	char **v = calloc(1, sizeof(char *));
	govex__strv_sort_uniq(v); /* empty */
	ck_assert_ptr_null(v[0]);
	ck_assert_int_eq(govex__strv_push(&v, "x"), 0);
	govex__strv_sort_uniq(v);
	ck_assert_str_eq(v[0], "x");
	ck_assert_ptr_null(v[1]);
	ck_assert_int_eq(govex__strv_push(&v, "x"), 0);
	govex__strv_sort_uniq(v);
	ck_assert_uint_eq(govex__strv_len(v), 1);
	ck_assert_int_eq(govex__strv_push_take(&v, strdup("a")), 0);
	govex__strv_sort_uniq(v);
	ck_assert_str_eq(v[0], "a");
	ck_assert_str_eq(v[1], "x");
	ck_assert_int_eq(govex__strv_push_take(&v, NULL), -ENOMEM);
	ck_assert_uint_eq(govex__strv_len(v), 2);
	govex__strv_sort_uniq(NULL);
	govex__strv_free(v);
	/* all equal */
	v = NULL;
	for (int i = 0; i < 10; i++)
		govex__strv_push(&v, "same");
	govex__strv_sort_uniq(v);
	ck_assert_uint_eq(govex__strv_len(v), 1);
	govex__strv_free(v);
	v = govex__strv_copy(NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_null(v[0]);
	govex__strv_free(v);
}
END_TEST

/* ---- rm_rf --------------------------------------------------------------------------------------
 */

static void write_file(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static char *path_join(const char *a, const char *b)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", a, b), 0);
	return p;
}

static bool file_has(const char *path, const char *content)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, content) == 0;
}

static void xmkdir(const char *dir, const char *name, mode_t mode)
{
	char *p = path_join(dir, name);
	ck_assert_msg(mkdir(p, mode) == 0, "mkdir %s: %s", p, strerror(errno));
	free(p);
}

static void xchmod(const char *dir, const char *name, mode_t mode)
{
	char *p = path_join(dir, name);
	ck_assert_msg(chmod(p, mode) == 0, "chmod %s: %s", p, strerror(errno));
	free(p);
}

static void xsymlink(const char *target, const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", p, strerror(errno));
	free(p);
}

static void xwrite(const char *dir, const char *name, const char *content)
{
	char *p = path_join(dir, name);
	write_file(p, content);
	free(p);
}

START_TEST(test_rm_rf_tree)
{
	char base[] = "/tmp/govex-unit-rmrf-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(base));
	char *outside = path_join(base, "outside");
	char *outfile = path_join(base, "outside/keep.txt");
	char *outsub = path_join(base, "outside/sub");
	char *outsubfile = path_join(base, "outside/sub/keep2.txt");
	char *tree = path_join(base, "tree");
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	ck_assert_int_eq(mkdir(outsub, 0755), 0);
	write_file(outfile, "precious");
	write_file(outsubfile, "precious too");
	/* the outside files are read-only, as a victim's files might be */
	ck_assert_int_eq(chmod(outfile, 0444), 0);

	ck_assert_int_eq(mkdir(tree, 0755), 0);
	xwrite(tree, "file", "x");
	xmkdir(tree, "sub", 0755);
	xwrite(tree, "sub/file2", "y");
	xmkdir(tree, "sub/deeper", 0755);
	xwrite(tree, "sub/deeper/f", "z");
	/* a 000 directory with content, inside another 000 directory */
	xmkdir(tree, "locked", 0755);
	xmkdir(tree, "locked/inner", 0755);
	xwrite(tree, "locked/inner/secret", "s");
	xwrite(tree, "locked/f", "s");
	xchmod(tree, "locked/inner", 0);
	xchmod(tree, "locked", 0);
	/* a read-only (0500) directory */
	xmkdir(tree, "ro", 0755);
	xwrite(tree, "ro/f", "r");
	xchmod(tree, "ro", 0500);
	/* symlinks pointing outside: to a file, to a directory, and a dangling one */
	xsymlink(outfile, tree, "link-file");
	xsymlink(outside, tree, "link-dir");
	xsymlink(outside, tree, "sub/deeper/link-dir2");
	xsymlink("/nonexistent/x", tree, "dangling");
	/* many entries, so that removal during readdir matters */
	for (int i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%03d", i);
		xwrite(tree, name, "n");
	}

	ck_assert_int_eq(govex__rm_rf(tree), 0);
	struct stat st;
	ck_assert_int_eq(lstat(tree, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* everything outside survives, unchanged */
	ck_assert(file_has(outfile, "precious"));
	ck_assert(file_has(outsubfile, "precious too"));
	ck_assert_int_eq(stat(outfile, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
	ck_assert_int_eq(stat(outside, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);

	/* removing what is gone is fine */
	ck_assert_int_eq(govex__rm_rf(tree), 0);

	/* a symlink given as the root is not followed */
	char *rootlink = path_join(base, "rootlink");
	ck_assert_int_eq(symlink(outside, rootlink), 0);
	ck_assert_int_lt(govex__rm_rf(rootlink), 0);
	ck_assert(file_has(outfile, "precious"));
	ck_assert(file_has(outsubfile, "precious too"));
	unlink(rootlink);

	chmod(outfile, 0644);
	ck_assert_int_eq(govex__rm_rf(base), 0);
	ck_assert_int_eq(lstat(base, &st), -1);
	free(rootlink);
	free(outside);
	free(outfile);
	free(outsub);
	free(outsubfile);
	free(tree);
}
END_TEST

/* The same as an unprivileged user, where permissions actually stop unlink/opendir. */
static SRunner *runner;

START_TEST(test_rm_rf_tree_unprivileged)
{
	/* only in a forked test process: never drop the runner's own privileges */
	if (geteuid() == 0 && srunner_fork_status(runner) != CK_NOFORK) {
		/* drop to nobody in this forked test process */
		if (setgid(65534) < 0 || setuid(65534) < 0)
			ck_abort_msg("cannot drop privileges: %s", strerror(errno));
	}
	char base[] = "/tmp/govex-unit-rmrf-u-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(base));
	char *tree = path_join(base, "tree");
	char *keep = path_join(base, "keep");
	write_file(keep, "k");
	ck_assert_int_eq(mkdir(tree, 0755), 0);
	xmkdir(tree, "locked", 0755);
	xmkdir(tree, "locked/inner", 0755);
	xwrite(tree, "locked/inner/f", "s");
	xwrite(tree, "locked/g", "s");
	xchmod(tree, "locked/inner", 0);
	xchmod(tree, "locked", 0);
	xmkdir(tree, "ro", 0755);
	xwrite(tree, "ro/f", "r");
	xchmod(tree, "ro", 0500);
	xsymlink(keep, tree, "link");
	ck_assert_int_eq(chmod(tree, 0500), 0);

	ck_assert_int_eq(govex__rm_rf(tree), 0);
	struct stat st;
	ck_assert_int_eq(lstat(tree, &st), -1);
	ck_assert(file_has(keep, "k"));
	ck_assert_int_eq(govex__rm_rf(base), 0);
	free(tree);
	free(keep);
}
END_TEST

/* Open descriptors of this process (to see that removal does not grow with depth). */
static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A 5,000-deep chain of directories (deeper than PATH_MAX allows to name), with a file
 * at every tenth level and a symlink to outside at the bottom. */
START_TEST(test_rm_rf_deep)
{
	char base[] = "/tmp/govex-unit-rmrf-deep-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(base));
	char *keep = path_join(base, "keep");
	write_file(keep, "k");
	char *tree = path_join(base, "tree");
	ck_assert_int_eq(mkdir(tree, 0755), 0);
	int fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 5000; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		if (i % 10 == 0) {
			int f = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			ck_assert_int_ge(f, 0);
			close(f);
		}
		int nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(nfd, 0);
		close(fd);
		fd = nfd;
	}
	ck_assert_int_eq(symlinkat(base, fd, "up"), 0);
	/* the bottom one is made unreadable, as a run could */
	ck_assert_int_eq(fchmod(fd, 0), 0);
	close(fd);
	int before = count_fds();
	uint64_t t0 = govex__now_ns();
	ck_assert_int_eq(govex__rm_rf(tree), 0);
	fprintf(stderr, "# deep: removed in %llu ms\n",
		(unsigned long long)((govex__now_ns() - t0) / 1000000));
	ck_assert_int_eq(count_fds(), before);
	struct stat st;
	ck_assert_int_eq(lstat(tree, &st), -1);
	ck_assert(file_has(keep, "k"));
	ck_assert_int_eq(govex__rm_rf(base), 0);
	free(keep);
	free(tree);
}
END_TEST

/* A wide tree: 3,000 subdirectories each with a file, and 3,000 files, in one
 * directory. */
START_TEST(test_rm_rf_wide)
{
	char base[] = "/tmp/govex-unit-rmrf-wide-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(base));
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 3000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "d%04d", i);
		ck_assert_int_eq(mkdirat(fd, name, 0755), 0);
		snprintf(name, sizeof(name), "d%04d/f", i);
		int f = openat(fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		ck_assert_int_ge(f, 0);
		close(f);
		snprintf(name, sizeof(name), "f%04d", i);
		f = openat(fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		ck_assert_int_ge(f, 0);
		close(f);
	}
	close(fd);
	int before = count_fds();
	uint64_t t0 = govex__now_ns();
	ck_assert_int_eq(govex__rm_rf(base), 0);
	fprintf(stderr, "# wide: removed in %llu ms\n",
		(unsigned long long)((govex__now_ns() - t0) / 1000000));
	ck_assert_int_eq(count_fds(), before);
	struct stat st;
	ck_assert_int_eq(lstat(base, &st), -1);
}
END_TEST

/* A mount inside the tree is never entered nor removed: the removal reports it. */
START_TEST(test_rm_rf_mount)
{
	if (geteuid() != 0 || srunner_fork_status(runner) == CK_NOFORK)
		return;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return; /* no mount namespace here */
	char base[] = "/tmp/govex-unit-rmrf-mnt-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(base));
	char *mnt = path_join(base, "mnt");
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ck_assert_int_eq(mount("tmpfs", mnt, "tmpfs", 0, "size=64k"), 0);
	char *inside = path_join(mnt, "precious");
	write_file(inside, "p");
	xwrite(base, "f", "x");
	ck_assert_int_lt(govex__rm_rf(base), 0);
	ck_assert(file_has(inside, "p"));
	ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
	ck_assert_int_eq(govex__rm_rf(base), 0);
	free(inside);
	free(mnt);
}
END_TEST

START_TEST(test_make_workdir)
{
	char *wd = NULL;
	int lock = -1;
	setenv("TMPDIR", "/tmp", 1);
	ck_assert_int_eq(govex__make_workdir(&wd, &lock, NULL), 0);
	ck_assert_int_ge(lock, 0);
	ck_assert_int_ne(fcntl(lock, F_GETFD) & FD_CLOEXEC, 0);
	/* held: another open file description cannot take it */
	int other = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(other, 0);
	ck_assert_int_lt(flock(other, LOCK_EX | LOCK_NB), 0);
	close(other);
	close(lock);
	ck_assert_ptr_nonnull(wd);
	ck_assert_msg(strncmp(wd, "/tmp/govex-w-", 13) == 0, "'%s'", wd);
	struct stat st;
	ck_assert_int_eq(stat(wd, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(govex__rm_rf(wd), 0);
	ck_assert_int_eq(stat(wd, &st), -1);
	free(wd);
	/* a relative TMPDIR is ignored */
	setenv("TMPDIR", "relative", 1);
	ck_assert_int_eq(govex__make_workdir(&wd, &lock, NULL), 0);
	ck_assert_msg(strncmp(wd, "/tmp/govex-w-", 13) == 0, "'%s'", wd);
	govex__rm_rf(wd);
	close(lock);
	free(wd);
}
END_TEST

/* Leftovers of a dead run are swept when a new workdir is made: a govex-w- one whose
 * lock is free at once, an old-style govex-XXXXXX (no lock) only when old; one whose
 * lock is held, a recent old-style one and one still being made are not. */
START_TEST(test_make_workdir_sweeps)
{
	char tmp[] = "/tmp/govex-unit-sweep-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	setenv("TMPDIR", tmp, 1);
	char *dead = path_join(tmp, "govex-AAAAAA");
	char *live = path_join(tmp, "govex-BBBBBB");
	char *young = path_join(tmp, "govex-CCCCCC");
	char *other = path_join(tmp, "notgovex-DDDDDD");
	char *dead_w = path_join(tmp, "govex-w-EEEEEE");
	char *live_w = path_join(tmp, "govex-w-FFFFFF");
	char *making = path_join(tmp, ".govex-new-GGGGGG");
	const char *dirs[] = {dead, live, young, other, dead_w, live_w, making};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		ck_assert_int_eq(mkdir(dirs[i], 0700), 0);
		xwrite(dirs[i], "f", "x");
	}
	int held = open(live, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(held, 0);
	ck_assert_int_eq(flock(held, LOCK_EX | LOCK_NB), 0);
	int held_w = open(live_w, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(held_w, 0);
	ck_assert_int_eq(flock(held_w, LOCK_EX | LOCK_NB), 0);
	/* dead, live and other were last modified two hours ago; young just now */
	struct timeval old[2];
	gettimeofday(&old[0], NULL);
	old[0].tv_sec -= 7200;
	old[1] = old[0];
	ck_assert_int_eq(utimes(dead, old), 0);
	ck_assert_int_eq(utimes(live, old), 0);
	ck_assert_int_eq(utimes(other, old), 0);
	char *wd = NULL;
	int lock = -1;
	ck_assert_int_eq(govex__make_workdir(&wd, &lock, NULL), 0);
	struct stat st;
	ck_assert_int_eq(lstat(dead, &st), -1);
	ck_assert_int_eq(lstat(live, &st), 0);
	ck_assert_int_eq(lstat(young, &st), 0);
	ck_assert_int_eq(lstat(other, &st), 0);
	ck_assert_int_eq(lstat(dead_w, &st), -1);
	ck_assert_int_eq(lstat(live_w, &st), 0);
	ck_assert_int_eq(lstat(making, &st), 0);
	ck_assert_int_eq(lstat(wd, &st), 0);
	govex__rm_rf(wd);
	close(lock);
	free(wd);
	close(held);
	close(held_w);
	unsetenv("TMPDIR");
	ck_assert_int_eq(govex__rm_rf(tmp), 0);
	free(dead);
	free(live);
	free(young);
	free(other);
	free(dead_w);
	free(live_w);
	free(making);
}
END_TEST

/* ---- errors
 * -------------------------------------------------------------------------------------- */

/* ---- the "did you mean" hint ------------------------------------------------------------ */

static const char *const near_names[] = {"network",	 "read",  "write", "wall_ms", "cpu_ms",
					 "memory_bytes", "shell", "ab",	   NULL};

static const struct {
	const char *name, *want;
} near_cases[] = {
    {"netwrok", "network"},   /* two neighbours swapped: one edit */
    {"ntwrk", "network"},     /* two deletions */
    {"networkxy", "network"}, /* two insertions */
    {"NETWORK", "network"},   /* case is ignored */
    {"raed", "read"},	      /* short: one swap */
    {"rd", NULL},	      /* short: two deletions are too many */
    {"wall_msx", "wall_ms"},
    {"cpu_ns", "cpu_ms"},
    {"wall_cpu", NULL},
    {"networkxyz", NULL}, /* three edits */
    {"shel", "shell"},
    {"ba", "ab"},
    {"", NULL},
    {"frobnicate", NULL},
    {"wrte", "write"},
};

START_TEST(test_nearest_name)
{
	const char *got = govex__nearest_name(near_cases[_i].name, near_names);
	if (!near_cases[_i].want)
		ck_assert_msg(got == NULL, "%s: got %s", near_cases[_i].name, got);
	else
		ck_assert_msg(got && strcmp(got, near_cases[_i].want) == 0, "%s: got %s, want %s",
			      near_cases[_i].name, got ? got : "(none)", near_cases[_i].want);
}
END_TEST

START_TEST(test_nearest_name_closest_and_bounded)
{
	/* distance 2 to the first, 1 to the second: the second */
	static const char *const names[] = {"alpha_x", "alphax", NULL};
	ck_assert_str_eq(govex__nearest_name("alphay", names), "alphax");
	/* a tie: the first */
	static const char *const tie[] = {"abcdx", "abcdy", NULL};
	ck_assert_str_eq(govex__nearest_name("abcdz", tie), "abcdx");
	/* no names at all */
	static const char *const none[] = {NULL};
	ck_assert_ptr_null(govex__nearest_name("network", none));
	/* a name longer than any field is never compared (and never overflows) */
	char big[4096];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	static const char *const as[] = {"aaaa", NULL};
	ck_assert_ptr_null(govex__nearest_name(big, as));
	const char *const bigs[] = {big, NULL};
	ck_assert_ptr_null(govex__nearest_name("aaaa", bigs));
	/* at the bound, 64 bytes, a name is still compared */
	char a64[65], b64[65];
	memset(a64, 'a', 64);
	a64[64] = '\0';
	memcpy(b64, a64, sizeof(b64));
	b64[63] = 'b';
	const char *const b64s[] = {"x", b64, NULL};
	ck_assert_ptr_eq(govex__nearest_name(a64, b64s), b64);
}
END_TEST

START_TEST(test_errors)
{
	struct govex_error e;
	ck_assert_int_eq(govex__err(&e, GOVEX_ERANGE, 0, "x: %d", 5), -GOVEX_ERANGE);
	ck_assert_int_eq(e.code, GOVEX_ERANGE);
	ck_assert_str_eq(e.message, "x: 5");
	/* a negative code is normalized */
	ck_assert_int_eq(govex__err(&e, -ENOENT, ENOENT, "y"), -ENOENT);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_int_eq(govex__err(NULL, GOVEX_EINVAL, 0, "z"), -GOVEX_EINVAL);
	/* long messages are cut, never overflow */
	char big[600];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	govex__err(&e, GOVEX_EINVAL, 0, "%s", big);
	ck_assert_uint_eq(strlen(e.message), sizeof(e.message) - 1);
	ck_assert_str_eq(govex_error_name(GOVEX_EPLAN), "GOVEX_EPLAN");
	ck_assert_str_eq(govex_strerror(GOVEX_EPOLICY), "invalid policy");
	ck_assert_str_eq(govex_strerror(-GOVEX_EUTF8), "invalid UTF-8");
	ck_assert_str_eq(govex_error_name(ENOENT), "ENOENT");
	ck_assert_str_eq(govex_error_name(-EACCES), "EACCES");
	ck_assert_str_eq(govex_version(), GOVEX_VERSION_STRING);
}
END_TEST

/* ---- text from an untrusted process ---- */

static void clean_is(const char *in, size_t n, size_t max, const char *want, bool want_cut)
{
	bool cut = !want_cut;
	char *out = govex__text_clean(in, n, max, &cut);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strcmp(out, want) == 0, "clean(%zu bytes) = '%s', want '%s'", n, out, want);
	ck_assert_int_eq(cut, want_cut);
	ck_assert_uint_le(strlen(out), max);
	free(out);
}

START_TEST(test_text_clean_controls)
{
	static const char in[] = "a\x1b[31mb\x1b]0;t\x07"
				 "c\xc2\x9b"
				 "2Jd\x7f"
				 "e\x01"
				 "f\ng\th"
				 "\xc2\x85i\x1b(Bj\x1b]2;x\x1b\\k\x1bPq\xc2\x9cl\x1b";
	clean_is(in, sizeof(in) - 1, 4096, "abcdef\ng\thijkl", false);
	/* an embedded NUL and invalid UTF-8 */
	static const char nul[] = "x\0y\xffz";
	clean_is(nul, sizeof(nul) - 1, 4096, "xy\xef\xbf\xbdz", false);
	/* a CSI cut by a non-ASCII character ends there; the character is text */
	clean_is("\x1b[1\xc3\xa9x", 6, 4096, "\xc3\xa9x", false);
	clean_is("", 0, 4096, "", false);
}
END_TEST

START_TEST(test_text_clean_bound)
{
	size_t n = 900 * 1024;
	char *big = malloc(n);
	ck_assert_ptr_nonnull(big);
	memset(big, 'A', n);
	memcpy(big, "\x1b[2J", 4);
	bool cut = false;
	char *out = govex__text_clean(big, n, 4096, &cut);
	ck_assert_ptr_nonnull(out);
	ck_assert(cut);
	ck_assert_uint_eq(strlen(out), 4096);
	ck_assert_msg(strncmp(out, "AAAA", 4) == 0, "'%.10s'", out);
	ck_assert_str_eq(out + 4096 - 12, " [truncated]");
	free(out);
	/* exactly max fits without a note; one more is cut at a character boundary */
	clean_is("abcdefghijklmnop", 16, 16, "abcdefghijklmnop", false);
	clean_is("abcdefghijklmnopq", 17, 16, "abcd [truncated]", true);
	clean_is("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 18, 16,
		 "\xc3\xa9\xc3\xa9 [truncated]", true);
	free(big);
}
END_TEST

START_TEST(test_json_escape_controls)
{
	char *s =
	    govex__json_escape_controls(strdup("{\"a\x7f\":\"x\xc2\x85y\xc2\xa0z\xc3\x9f\"}"));
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "{\"a\\u007f\":\"x\\u0085y\xc2\xa0z\xc3\x9f\"}");
	free(s);
	char *plain = strdup("[1,\"\xe2\x82\xac\"]");
	ck_assert_ptr_eq(govex__json_escape_controls(plain), plain);
	free(plain);
	ck_assert_ptr_null(govex__json_escape_controls(NULL));
}
END_TEST

/* With 0..2 closed (a host started so), what govex makes never lands there: the pipes
 * of a launch, a cancellation token; and a policy file that is a FIFO is refused at
 * once instead of blocking in open(). */
START_TEST(test_fds_never_stdio)
{
	int saved[3];
	for (int i = 0; i < 3; i++) {
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
		ck_assert_int_ge(saved[i], 10);
	}
	for (int i = 0; i < 3; i++)
		close(i);
	int p[2] = {-1, -1}, q[2] = {-1, -1};
	int r1 = govex__pipe(p, 0), r2 = govex__pipe(q, O_NONBLOCK);
	govex_cancel_token *c = NULL;
	int r3 = govex_cancel_new(&c);
	int cfd = c ? govex__cancel_fd(c) : -1;
	int qfl = q[0] >= 0 ? fcntl(q[0], F_GETFL) : 0, pfd = p[0] >= 0 ? fcntl(p[0], F_GETFD) : 0;
	for (int i = 0; i < 3; i++)
		dup2(saved[i], i);
	ck_assert_int_eq(r1, 0);
	ck_assert_int_eq(r2, 0);
	ck_assert_int_eq(r3, 0);
	ck_assert_int_ge(p[0], 3);
	ck_assert_int_ge(p[1], 3);
	ck_assert_int_ge(q[0], 3);
	ck_assert_int_ge(q[1], 3);
	ck_assert_int_ge(cfd, 3);
	ck_assert(qfl & O_NONBLOCK);
	ck_assert(pfd & FD_CLOEXEC);
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(q[i]);
	}
	govex_cancel_free(c);
	for (int i = 0; i < 3; i++)
		close(saved[i]);
}
END_TEST

START_TEST(test_read_file_fifo_refused)
{
	char dir[] = "/tmp/govex-unit-fifo-XXXXXX", path[64];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	char *data = NULL;
	size_t len = 0;
	struct govex_error e = {0};
	/* no writer: a blocking open() would never return */
	ck_assert_int_eq(govex__read_file(path, 1024, &data, &len, &e), -EINVAL);
	ck_assert_msg(strstr(e.message, "not a regular file") && strstr(e.message, path),
		      "message '%s'", e.message);
	govex_policy *pol = NULL;
	ck_assert_int_lt(govex_policy_load(path, &pol, &e), 0);
	ck_assert_ptr_null(pol);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Launch steps are data: a child reports {step, errno} in a fixed layout and the host
 * names the step; the names are part of the result's contract ("step" of launch_failed). */
START_TEST(test_launch_steps)
{
	static const struct {
		enum govex__step step;
		const char *name;
	} contract[] = {
	    {GOVEX_STEP_PREPARE, "prepare"},	 {GOVEX_STEP_SLOT, "slot"},
	    {GOVEX_STEP_PIPE, "pipe"},		 {GOVEX_STEP_CLONE, "clone"},
	    {GOVEX_STEP_FORK, "fork"},		 {GOVEX_STEP_SUPERVISOR, "supervisor"},
	    {GOVEX_STEP_SETSID, "setsid"},	 {GOVEX_STEP_SECCOMP_GUARD, "seccomp_guard"},
	    {GOVEX_STEP_CHDIR, "chdir"},	 {GOVEX_STEP_RLIMIT_NOFILE, "rlimit_nofile"},
	    {GOVEX_STEP_EXECVE, "execve"},	 {GOVEX_STEP_PROBE_CHILD, "probe child"},
	    {GOVEX_STEP_BIND_OPEN, "bind_open"}, {GOVEX_STEP_WAIT, "wait"},
	};
	for (size_t i = 0; i < sizeof(contract) / sizeof(contract[0]); i++)
		ck_assert_str_eq(govex__step_name(contract[i].step), contract[i].name);
	/* every step has a name of its own, short enough for the outcome's failed_step */
	for (int a = 1; a < GOVEX__STEP_COUNT; a++) {
		const char *na = govex__step_name((enum govex__step)a);
		ck_assert_str_ne(na, "unknown");
		ck_assert_uint_lt(strlen(na), sizeof(((struct govex__outcome *)0)->failed_step));
		for (int b = a + 1; b < GOVEX__STEP_COUNT; b++)
			ck_assert_str_ne(na, govex__step_name((enum govex__step)b));
	}
	ck_assert_str_eq(govex__step_name((enum govex__step)GOVEX__STEP_COUNT), "unknown");
	ck_assert_str_eq(govex__step_name((enum govex__step) - 1), "unknown");

	ck_assert_uint_eq(sizeof(struct govex__child_error), 8);
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	govex__child_fail(p[1], GOVEX_STEP_EXECVE, ENOENT);
	govex__child_fail(p[1], GOVEX_STEP_CHDIR, 0); /* no errno: still a failure */
	struct govex__child_error ce[2];
	ck_assert_int_eq(read(p[0], ce, sizeof(ce)), (ssize_t)sizeof(ce));
	ck_assert_int_eq(ce[0].step, GOVEX_STEP_EXECVE);
	ck_assert_int_eq(ce[0].err, ENOENT);
	ck_assert_int_eq(ce[1].step, GOVEX_STEP_CHDIR);
	ck_assert_int_eq(ce[1].err, EPERM);
	close(p[0]);
	close(p[1]);
	errno = EBADF;
	ck_assert_int_eq(govex__neg_errno(-1), -EBADF);
	ck_assert_int_eq(govex__neg_errno(7), 0);
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("utf8");
	tcase_add_loop_test(tc, test_utf8_valid, 0, ARRAY_SIZE(utf8_cases));
	tcase_add_test(tc, test_sanitize_valid_unchanged);
	tcase_add_test(tc, test_sanitize_replaces_each_byte);
	tcase_add_test(tc, test_sanitize_cut_end);
	tcase_add_test(tc, test_sanitize_cut_invalid_lead_not_dropped);
	tcase_add_test(tc, test_sanitize_cut_impossible_prefix_not_dropped);
	tcase_add_test(tc, test_sanitize_bound);
	tcase_add_test(tc, test_text_clean_controls);
	tcase_add_test(tc, test_text_clean_bound);
	tcase_add_test(tc, test_json_escape_controls);
	tcase_add_loop_test(tc, test_utf8_valid_after_ascii, 0, ARRAY_SIZE(utf8_cases));
	tcase_add_loop_test(tc, test_json_parse_long_same, 0, ARRAY_SIZE(long_cases));
	tcase_add_test(tc, test_json_parse_long_big);
	suite_add_tcase(s, tc);
	tc = tcase_create("paths");
	tcase_add_loop_test(tc, test_path_normalized, 0, ARRAY_SIZE(norm_cases));
	tcase_add_test(tc, test_path_normalized_null);
	tcase_add_test(tc, test_path_under);
	suite_add_tcase(s, tc);
	tc = tcase_create("launch");
	tcase_add_test(tc, test_launch_steps);
	tcase_add_loop_test(tc, test_nearest_name, 0, ARRAY_SIZE(near_cases));
	tcase_add_test(tc, test_nearest_name_closest_and_bounded);
	suite_add_tcase(s, tc);
	tc = tcase_create("strv");
	tcase_add_test(tc, test_strv);
	tcase_add_test(tc, test_strv_sort_small);
	suite_add_tcase(s, tc);
	tc = tcase_create("dirs");
	/* the deep and wide trees take seconds to make on a slow disk */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rm_rf_tree);
	tcase_add_test(tc, test_rm_rf_tree_unprivileged);
	tcase_add_test(tc, test_rm_rf_deep);
	tcase_add_test(tc, test_rm_rf_wide);
	tcase_add_test(tc, test_rm_rf_mount);
	tcase_add_test(tc, test_make_workdir);
	tcase_add_test(tc, test_make_workdir_sweeps);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_fds_never_stdio);
	tcase_add_test(tc, test_read_file_fifo_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = runner = srunner_create(util_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
