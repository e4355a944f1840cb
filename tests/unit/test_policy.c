/* SPDX-License-Identifier: MIT */
/* unit-policy: govex.policy/v1 validation.  Every rejection must name its field. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "policy.h"

#define V "\"version\":\"govex.policy/v1\""

/* Parses doc (len bytes) and asserts a -GOVEX_EPOLICY refusal whose message starts with
 * prefix. */
static void reject_n(const char *doc, size_t len, const char *prefix)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = govex_policy_parse(doc, len, &p, &err);
	ck_assert_msg(r == -GOVEX_EPOLICY, "%s: expected -GOVEX_EPOLICY, got %d (%s)", doc, r,
		      err.message);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.code, GOVEX_EPOLICY);
	ck_assert_int_eq(err.sys_errno, 0);
	ck_assert_msg(memchr(err.message, '\0', sizeof(err.message)) != NULL,
		      "message not NUL-terminated");
	ck_assert_msg(strncmp(err.message, prefix, strlen(prefix)) == 0,
		      "%s: message '%s' does not start with '%s'", doc, err.message, prefix);
}

static void reject(const char *doc, const char *prefix)
{
	reject_n(doc, strlen(doc), prefix);
}

/* Parses doc and asserts success; returns the policy. */
static govex_policy *accept(const char *doc)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = govex_policy_parse(doc, strlen(doc), &p, &err);
	ck_assert_msg(r == 0, "%s: expected success, got %d (%s)", doc, r, err.message);
	ck_assert_ptr_nonnull(p);
	return p;
}

/* Canonical bytes of p contain needle. */
static bool canon_has(const govex_policy *p, const char *needle)
{
	size_t len = 0;
	const char *c = govex_policy_canonical(p, &len);
	return c && memmem(c, len, needle, strlen(needle)) != NULL;
}

/* ---- document level ------------------------------------------------------------------ */

START_TEST(test_unknown_top_level)
{
	reject("{" V ",\"frob\":1}", "frob: ");
	reject("{\"frob\":1," V "}", "frob: ");
	reject("{" V ",\"Network\":\"deny\"}", "Network: ");
	reject("{" V ",\"\":1}", ": unknown field");
}
END_TEST

static const char *const unknown_nested[][2] = {
    {"{" V ",\"limits\":{\"foo\":1}}", "limits.foo: "},
    {"{" V ",\"limits\":{\"wall_ms\":10,\"WALL_MS\":10}}", "limits.WALL_MS: "},
    {"{" V ",\"python\":{\"version\":\"3\"}}", "python.version: "},
    {"{" V ",\"filesystem\":{\"exec\":[]}}", "filesystem.exec: "},
    {"{" V ",\"environment\":{\"deny\":[]}}", "environment.deny: "},
    {"{" V ",\"effects\":{\"require_absent\":[]}}", "effects.require_absent: "},
};

START_TEST(test_unknown_nested)
{
	reject(unknown_nested[_i][0], unknown_nested[_i][1]);
}
END_TEST

/* An unknown field's message names it, and the known field of the same object it is
 * nearest to when one is close; none when nothing is. */
static const char *const did_you_mean[][2] = {
    {"{" V ",\"netwrok\":\"deny\"}",
     "netwrok: unknown field \"netwrok\" (did you mean \"network\"?)"},
    {"{" V ",\"Network\":\"deny\"}",
     "Network: unknown field \"Network\" (did you mean \"network\"?)"},
    {"{" V ",\"filesystem\":{\"raed\":[]}}",
     "filesystem.raed: unknown field \"raed\" (did you mean \"read\"?)"},
    {"{" V ",\"limits\":{\"wall_msx\":10}}",
     "limits.wall_msx: unknown field \"wall_msx\" (did you mean \"wall_ms\"?)"},
    {"{" V ",\"limits\":{\"WALL_MS\":10}}",
     "limits.WALL_MS: unknown field \"WALL_MS\" (did you mean \"wall_ms\"?)"},
    {"{" V ",\"environment\":{\"alow\":[]}}",
     "environment.alow: unknown field \"alow\" (did you mean \"allow\"?)"},
    /* the hint is the same object's field: "read" is no field of limits */
    {"{" V ",\"limits\":{\"read\":1}}", "limits.read: unknown field \"read\""},
    {"{" V ",\"frob\":1}", "frob: unknown field \"frob\""},
    {"{" V ",\"\":1}", ": unknown field \"\""},
};

START_TEST(test_unknown_did_you_mean)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	const char *doc = did_you_mean[_i][0];
	ck_assert_int_eq(govex_policy_parse(doc, strlen(doc), &p, &err), -GOVEX_EPOLICY);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(err.message, did_you_mean[_i][1]);
}
END_TEST

START_TEST(test_duplicate_key)
{
	govex_policy *p = NULL;
	struct govex_error err;
	static const char *const docs[] = {
	    "{" V ",\"network\":\"deny\",\"network\":\"allow\"}",
	    "{" V "," V "}",
	    "{" V ",\"limits\":{\"wall_ms\":10,\"wall_ms\":10}}",
	    "{" V ",\"environment\":{\"set\":{\"A\":\"1\",\"A\":\"2\"}}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(docs); i++) {
		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(govex_policy_parse(docs[i], strlen(docs[i]), &p, &err),
				 -GOVEX_EPOLICY);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(err.code, GOVEX_EPOLICY);
		ck_assert_msg(strncmp(err.message, "document: line 1 column ", 24) == 0,
			      "message '%s'", err.message);
		ck_assert_msg(strstr(err.message, "duplicate") != NULL, "message '%s'",
			      err.message);
	}
}
END_TEST

/* Invalid UTF-8 is refused naming the field that holds it (a member name included). */
START_TEST(test_invalid_utf8)
{
	static const struct {
		const char *doc, *msg;
	} cases[] = {
	    {"{" V ",\"environment\":{\"set\":{\"A\":\"\xff\"}}}",
	     "environment.set.A: invalid UTF-8"},
	    {"{" V ",\"environment\":{\"set\":{\"A\":\"\xc0\xaf\"}}}", /* overlong */
	     "environment.set.A: invalid UTF-8"},
	    {"{" V ",\"environment\":{\"set\":{\"A\":\"\xed\xa0\x80\"}}}", /* surrogate */
	     "environment.set.A: invalid UTF-8"},
	    {"{" V ",\"filesystem\":{\"read\":[\"/ok\",\"/\xe2\x82\"]}}", /* truncated */
	     "filesystem.read[1]: invalid UTF-8"},
	    {"{" V ",\"\xf4\x90\x80\x80\":1}", /* > U+10FFFF, in a member name */
	     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd: invalid UTF-8"},
	    {"{" V "}\xff", "document: invalid UTF-8"}, /* outside any string */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		reject(cases[i].doc, cases[i].msg);
}
END_TEST

/* \u0000 in a path or name: refused, and the message names the field. */
START_TEST(test_nul_escape_in_path)
{
	reject("{" V ",\"filesystem\":{\"read\":[\"/a\\u0000b\"]}}", "filesystem.read[0]: ");
}
END_TEST

START_TEST(test_nul_escape_in_names)
{
	reject("{" V ",\"workdir\":\"/a\\u0000\",\"filesystem\":{\"write\":[\"/a\"]}}",
	       "workdir: ");
	reject("{" V ",\"environment\":{\"allow\":[\"A\\u0000B\"]}}", "environment.allow[0]: ");
	reject("{" V ",\"python\":{\"interpreter\":\"/usr/bin/python3\\u0000\"}}",
	       "python.interpreter: ");
	reject("{" V ",\"environment\":{\"set\":{\"A\":\"x\\u0000y\"}}}", "environment.set.A: ");
	reject("{\"version\":\"govex.policy/v1\\u0000\"}", "version: ");
	reject("{" V ",\"backend\":\"controlled\\u0000\"}", "backend: ");
	reject("{" V ",\"network\":\"allow\\u0000\"}", "network: ");
	reject("{" V ",\"approval\":[\"network\\u0000\"]}", "approval[0]: ");
	reject("{" V ",\"languages\":[\"python\\u0000\"]}", "languages[0]: ");
	/* NUL in a member name: refused by the parser (position only) */
	reject("{" V ",\"network\\u0000x\":\"allow\"}", "document: ");
}
END_TEST

START_TEST(test_raw_nul_byte)
{
	static const char doc[] = "{" V ",\"network\":\"deny\"}\0";
	govex_policy *p = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_policy_parse(doc, sizeof(doc) - 1, &p, &err), -GOVEX_EPOLICY);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.code, GOVEX_EPOLICY);
	ck_assert_msg(strncmp(err.message, "document: ", 10) == 0, "message '%s'", err.message);
}
END_TEST

START_TEST(test_not_an_object)
{
	reject("[]", "document: must be an object");
	/* scalars are refused by the parser already */
	reject("\"govex.policy/v1\"", "document: ");
	reject("null", "document: ");
	reject("", "document: ");
	reject("{" V "} {}", "document: ");
}
END_TEST

START_TEST(test_version)
{
	reject("{}", "version: missing");
	reject("{\"network\":\"deny\"}", "version: missing");
	reject("{\"version\":\"govex.policy/v2\"}", "version: unsupported");
	reject("{\"version\":\"govex.policy/v1 \"}", "version: unsupported");
	reject("{\"version\":\"\"}", "version: unsupported");
	reject("{\"version\":1}", "version: must be a string");
	reject("{\"version\":null}", "version: must be a string");
	reject("{\"version\":[\"govex.policy/v1\"]}", "version: must be a string");
	govex_policy_free(accept("{" V "}"));
}
END_TEST

/* ---- types ------------------------------------------------------------------------- */

static const char *const wrong_types[][2] = {
    {"{" V ",\"languages\":\"python\"}", "languages: must be an array"},
    {"{" V ",\"languages\":[1]}", "languages[0]: must be a string"},
    {"{" V ",\"languages\":[\"python\",null]}", "languages[1]: must be a string"},
    {"{" V ",\"python\":[]}", "python: must be an object"},
    {"{" V ",\"python\":{\"interpreter\":1}}", "python.interpreter: must be a string"},
    {"{" V ",\"python\":{\"interpreter\":null}}", "python.interpreter: must be a string"},
    {"{" V ",\"python\":{\"site\":\"yes\"}}", "python.site: must be a boolean"},
    {"{" V ",\"python\":{\"site\":1}}", "python.site: must be a boolean"},
    {"{" V ",\"workdir\":1}", "workdir: must be a string"},
    {"{" V ",\"workdir\":null}", "workdir: must be a string"},
    {"{" V ",\"limits\":[]}", "limits: must be an object"},
    {"{" V ",\"limits\":null}", "limits: must be an object"},
    {"{" V ",\"filesystem\":\"/\"}", "filesystem: must be an object"},
    {"{" V ",\"filesystem\":{\"read\":\"/\"}}", "filesystem.read: must be an array"},
    {"{" V ",\"filesystem\":{\"read\":[1]}}", "filesystem.read[0]: must be a string"},
    {"{" V ",\"filesystem\":{\"write\":{}}}", "filesystem.write: must be an array"},
    {"{" V ",\"filesystem\":{\"write\":[\"/tmp\",true]}}", "filesystem.write[1]: must be a string"},
    {"{" V ",\"filesystem\":{\"platform_defaults\":0}}",
     "filesystem.platform_defaults: must be a boolean"},
    {"{" V ",\"network\":true}", "network: must be \"allow\", \"deny\" or {\"allow\""},
    {"{" V ",\"network\":[\"a.example:1\"]}", "network: must be \"allow\", \"deny\" or"},
    {"{" V ",\"network\":\"maybe\"}", "network: must be \"allow\" or \"deny\""},
    {"{" V ",\"network\":\"Allow\"}", "network: must be \"allow\" or \"deny\""},
    {"{" V ",\"subprocess\":1}", "subprocess: must be a string"},
    {"{" V ",\"subprocess\":\"\"}", "subprocess: must be \"allow\" or \"deny\""},
    {"{" V ",\"shell\":null}", "shell: must be a string"},
    {"{" V ",\"shell\":\"yes\"}", "shell: must be \"allow\" or \"deny\""},
    {"{" V ",\"environment\":[]}", "environment: must be an object"},
    {"{" V ",\"environment\":{\"inherit\":\"true\"}}", "environment.inherit: must be a boolean"},
    {"{" V ",\"environment\":{\"allow\":\"HOME\"}}", "environment.allow: must be an array"},
    {"{" V ",\"environment\":{\"allow\":[1]}}", "environment.allow[0]: must be a string"},
    {"{" V ",\"environment\":{\"set\":[]}}", "environment.set: must be an object"},
    {"{" V ",\"environment\":{\"set\":{\"A\":1}}}", "environment.set.A: must be a string"},
    {"{" V ",\"environment\":{\"set\":{\"A\":null}}}", "environment.set.A: must be a string"},
    {"{" V ",\"approval\":\"network\"}", "approval: must be an array"},
    {"{" V ",\"approval\":[1]}", "approval[0]: must be a string"},
    {"{" V ",\"effects\":[]}", "effects: must be an object"},
    {"{" V ",\"effects\":{\"require_known\":{}}}", "effects.require_known: must be an array"},
    {"{" V ",\"effects\":{\"require_known\":[1]}}", "effects.require_known[0]: must be a string"},
    {"{" V ",\"backend\":1}", "backend: must be a string"},
    {"{" V ",\"backend\":[\"controlled\"]}", "backend: must be a string"},
};

START_TEST(test_wrong_types)
{
	reject(wrong_types[_i][0], wrong_types[_i][1]);
}
END_TEST

/* ---- limits ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	bool nullable;
	unsigned long long min, max, def;
} limits[] = {
    {"wall_ms", false, 1, 3600000ULL, 5000},
    {"cpu_ms", true, 1, 24ULL * 3600000ULL, 0},
    {"memory_bytes", true, 1ULL << 20, 1ULL << 42, 0},
    {"processes", true, 1, 1ULL << 20, 0},
    {"open_files", true, 8, 1ULL << 20, 0},
    {"file_size_bytes", true, 1, 1ULL << 50, 0},
    {"code_bytes", false, 1, 64ULL << 20, 64ULL << 10},
    {"stdin_bytes", false, 0, 1ULL << 30, 1ULL << 20},
    {"stdout_bytes", false, 0, 1ULL << 30, 64ULL << 10},
    {"stderr_bytes", false, 0, 1ULL << 30, 64ULL << 10},
    {"call_input_bytes", false, 1, 16ULL << 20, 1ULL << 20},
    {"call_output_bytes", false, 128, 16ULL << 20, 1ULL << 20},
};

static char *limit_doc(const char *name, const char *value)
{
	char *s = NULL;
	ck_assert_int_ge(asprintf(&s, "{" V ",\"limits\":{\"%s\":%s}}", name, value), 0);
	return s;
}

static char *limit_prefix(const char *name, const char *rest)
{
	char *s = NULL;
	ck_assert_int_ge(asprintf(&s, "limits.%s: %s", name, rest), 0);
	return s;
}

START_TEST(test_limit_too_low)
{
	char val[32], *doc, *pre;
	if (limits[_i].min == 0)
		snprintf(val, sizeof(val), "-1");
	else
		snprintf(val, sizeof(val), "%llu", limits[_i].min - 1);
	doc = limit_doc(limits[_i].name, val);
	pre = limit_prefix(limits[_i].name, "must be between");
	reject(doc, pre);
	free(doc);
	free(pre);
	/* always negative */
	doc = limit_doc(limits[_i].name, "-5");
	pre = limit_prefix(limits[_i].name, "must be between");
	reject(doc, pre);
	free(doc);
	free(pre);
}
END_TEST

START_TEST(test_limit_too_high)
{
	char val[32], *doc, *pre;
	snprintf(val, sizeof(val), "%llu", limits[_i].max + 1);
	doc = limit_doc(limits[_i].name, val);
	pre = limit_prefix(limits[_i].name, "must be between");
	reject(doc, pre);
	free(doc);
	free(pre);
	doc = limit_doc(limits[_i].name, "9223372036854775807");
	pre = limit_prefix(limits[_i].name, "must be between");
	reject(doc, pre);
	free(doc);
	free(pre);
}
END_TEST

/* The exact bounds are accepted and appear as such in the canonical form. */
START_TEST(test_limit_bounds_accepted)
{
	unsigned long long vals[2] = {limits[_i].min, limits[_i].max};
	for (int k = 0; k < 2; k++) {
		char val[32], needle[96];
		snprintf(val, sizeof(val), "%llu", vals[k]);
		char *doc = limit_doc(limits[_i].name, val);
		govex_policy *p = accept(doc);
		snprintf(needle, sizeof(needle), "\"%s\":%llu", limits[_i].name, vals[k]);
		ck_assert_msg(canon_has(p, needle), "%s: canonical lacks %s", doc, needle);
		govex_policy_free(p);
		free(doc);
	}
}
END_TEST

START_TEST(test_limit_wrong_type)
{
	static const char *const bad[] = {"\"1\"", "1.5", "1e3", "true", "[]", "{}"};
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
		char *doc = limit_doc(limits[_i].name, bad[k]);
		char *pre = limit_prefix(limits[_i].name, "must be ");
		reject(doc, pre);
		free(doc);
		free(pre);
	}
	char *doc = limit_doc(limits[_i].name, "null");
	if (limits[_i].nullable) {
		govex_policy *p = accept(doc);
		char needle[64];
		snprintf(needle, sizeof(needle), "\"%s\":null", limits[_i].name);
		ck_assert_msg(canon_has(p, needle), "canonical lacks %s", needle);
		govex_policy_free(p);
	} else {
		char *pre = limit_prefix(limits[_i].name, "must be an integer, not null");
		reject(doc, pre);
		free(pre);
	}
	free(doc);
}
END_TEST

/* Defaults are filled in. */
START_TEST(test_limit_default)
{
	govex_policy *p = accept("{" V "}");
	char needle[96];
	if (limits[_i].nullable)
		snprintf(needle, sizeof(needle), "\"%s\":null", limits[_i].name);
	else
		snprintf(needle, sizeof(needle), "\"%s\":%llu", limits[_i].name, limits[_i].def);
	ck_assert_msg(canon_has(p, needle), "canonical lacks %s", needle);
	govex_policy_free(p);
}
END_TEST

/* A number jansson cannot hold is out of range too (the parser refuses it before the
 * field is known, so only the document position is named). */
START_TEST(test_limit_huge_number)
{
	reject("{" V ",\"limits\":{\"wall_ms\":18446744073709551616}}", "document: line 1 ");
	reject("{" V ",\"limits\":{\"cpu_ms\":-9223372036854775809}}", "document: line 1 ");
}
END_TEST

/* ---- paths ------------------------------------------------------------------------- */

START_TEST(test_relative_path)
{
	reject("{" V ",\"filesystem\":{\"read\":[\"tmp\"]}}",
	       "filesystem.read[0]: 'tmp' is not an absolute path");
	reject("{" V ",\"filesystem\":{\"read\":[\"/usr\",\"./x\"]}}",
	       "filesystem.read[1]: './x' is not an absolute path");
	reject("{" V ",\"filesystem\":{\"read\":[\"\"]}}", "filesystem.read[0]: ");
	reject("{" V ",\"filesystem\":{\"write\":[\"~/x\"]}}", "filesystem.write[0]: ");
	reject("{" V ",\"python\":{\"interpreter\":\"python3\"}}", "python.interpreter: ");
	reject("{" V ",\"workdir\":\"work\",\"filesystem\":{\"write\":[\"/\"]}}", "workdir: ");
}
END_TEST

static const char *const unnormalized[] = {"/a/../b", "/a/./b", "/a//b", "/a/",
					   "//",      "/..",	"/a/.",	 "/a/b/.."};

START_TEST(test_unnormalized_path)
{
	char doc[256], pre[128];
	const char *pth = unnormalized[_i];
	snprintf(doc, sizeof(doc), "{" V ",\"filesystem\":{\"read\":[\"%s\"]}}", pth);
	snprintf(pre, sizeof(pre), "filesystem.read[0]: '%s' is not normalized", pth);
	reject(doc, pre);
	snprintf(doc, sizeof(doc), "{" V ",\"filesystem\":{\"write\":[\"/tmp\",\"%s\"]}}", pth);
	snprintf(pre, sizeof(pre), "filesystem.write[1]: '%s' is not normalized", pth);
	reject(doc, pre);
	snprintf(doc, sizeof(doc), "{" V ",\"python\":{\"interpreter\":\"%s\"}}", pth);
	reject(doc, "python.interpreter: ");
	snprintf(doc, sizeof(doc), "{" V ",\"workdir\":\"%s\",\"filesystem\":{\"write\":[\"/\"]}}",
		 pth);
	reject(doc, "workdir: ");
}
END_TEST

START_TEST(test_paths_sorted_unique)
{
	govex_policy *p =
	    accept("{" V ",\"filesystem\":{\"read\":[\"/usr\",\"/etc\",\"/usr\",\"/Z\"]}}");
	ck_assert(canon_has(p, "\"read\":[\"/Z\",\"/etc\",\"/usr\"]"));
	govex_policy_free(p);
}
END_TEST

/* filesystem.deny: validated like the roots, sorted and unique, digest-bound, and left
 * out of the canonical bytes when empty (the digest of a policy without it is kept). */
START_TEST(test_deny_paths)
{
	char doc[256], pre[128];
	for (size_t i = 0; i < ARRAY_SIZE(unnormalized); i++) {
		snprintf(doc, sizeof(doc), "{" V ",\"filesystem\":{\"deny\":[\"/srv\",\"%s\"]}}",
			 unnormalized[i]);
		snprintf(pre, sizeof(pre), "filesystem.deny[1]: '%s' is not normalized",
			 unnormalized[i]);
		reject(doc, pre);
	}
	reject("{" V ",\"filesystem\":{\"deny\":[\"srv\"]}}",
	       "filesystem.deny[0]: 'srv' is not an absolute path");
	reject("{" V ",\"filesystem\":{\"deny\":[\"/\"]}}", "filesystem.deny: '/' would deny");
	reject("{" V ",\"filesystem\":{\"deny\":\"/srv\"}}", "filesystem.deny: ");
	reject("{" V ",\"filesystem\":{\"deny\":[3]}}", "filesystem.deny[0]: ");
	govex_policy *p =
	    accept("{" V ",\"filesystem\":{\"deny\":[\"/srv/b\",\"/srv/a\",\"/srv/b\"]}}");
	ck_assert(canon_has(p, "\"deny\":[\"/srv/a\",\"/srv/b\"]"));
	ck_assert(govex__policy_required(p) & CTL(FS_DENY));
	govex_policy *none = accept("{" V "}");
	govex_policy *empty = accept("{" V ",\"filesystem\":{\"deny\":[]}}");
	ck_assert(!canon_has(none, "\"deny\":[") && !canon_has(empty, "\"deny\":["));
	ck_assert_str_eq(govex_policy_digest(none), govex_policy_digest(empty));
	ck_assert_str_ne(govex_policy_digest(none), govex_policy_digest(p));
	ck_assert(!(govex__policy_required(empty) & CTL(FS_DENY)));
	govex_policy_free(p);
	govex_policy_free(none);
	govex_policy_free(empty);
}
END_TEST

/* filesystem.deny resolved against a directory tree (deny.c): what is masked, what is
 * pinned, and each refusal's code. */
static int deny_of(const char *dir, const char *read, const char *write, const char *deny,
		   struct govex__deny *d, struct govex__deny_fault *f)
{
	char doc[2048];
	snprintf(doc, sizeof(doc),
		 "{" V ",\"filesystem\":{\"read\":[\"%s%s\"],\"write\":[\"%s%s\"],"
		 "\"deny\":[\"%s%s\"]}}",
		 dir, read, dir, write, dir, deny);
	govex_policy *p = accept(doc);
	int r = govex__deny_resolve(p, NULL, d, f);
	govex_policy_free(p);
	return r;
}

static void touch(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s%s", dir, name);
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fclose(fp);
}

START_TEST(test_deny_resolve)
{
	char dir[] = "/tmp/govex-unit-deny-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char p[512];
	const char *mk[] = {"/r", "/r/a", "/w", "/w/a", "/w/a/b", "/other"};
	for (size_t i = 0; i < ARRAY_SIZE(mk); i++) {
		snprintf(p, sizeof(p), "%s%s", dir, mk[i]);
		ck_assert_int_eq(mkdir(p, 0755), 0);
	}
	touch(dir, "/r/a/f");
	touch(dir, "/w/a/b/f");
	touch(dir, "/r/linked");
	char l1[512], l2[512];
	snprintf(l1, sizeof(l1), "%s/r/linked", dir);
	snprintf(l2, sizeof(l2), "%s/r/second", dir);
	ck_assert_int_eq(link(l1, l2), 0);
	snprintf(p, sizeof(p), "%s/r/sym", dir);
	ck_assert_int_eq(symlink("a", p), 0);

	struct govex__deny d;
	struct govex__deny_fault f;
	/* under a write root: the file masked, the directories above it pinned */
	ck_assert_int_eq(deny_of(dir, "/r", "/w", "/w/a/b/f", &d, &f), 0);
	snprintf(p, sizeof(p), "%s/w/a/b/f", dir);
	ck_assert_str_eq(d.paths[0], p);
	ck_assert_ptr_null(d.paths[1]);
	ck_assert(!d.isdir[0]);
	snprintf(p, sizeof(p), "%s/w/a", dir);
	ck_assert_str_eq(d.pins[0], p);
	snprintf(p, sizeof(p), "%s/w/a/b", dir);
	ck_assert_str_eq(d.pins[1], p);
	ck_assert_ptr_null(d.pins[2]);
	govex__deny_free(&d);
	/* through a symlink: the real path; under a read root: nothing pinned */
	ck_assert_int_eq(deny_of(dir, "/r", "/w", "/r/sym/f", &d, &f), 0);
	snprintf(p, sizeof(p), "%s/r/a/f", dir);
	ck_assert_str_eq(d.paths[0], p);
	ck_assert_ptr_null(d.pins[0]);
	govex__deny_free(&d);
	static const struct {
		const char *deny, *code;
	} refused[] = {
	    {"/r/linked", "deny_hardlinked"},
	    {"/other", "deny_outside_roots"},
	    {"/r", "deny_covers_root"},
	    {"/r/nothing", "deny_path_unresolvable"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		ck_assert_int_eq(deny_of(dir, "/r", "/w", refused[i].deny, &d, &f), 1);
		ck_assert_str_eq(f.code, refused[i].code);
		ck_assert_ptr_null(d.paths);
	}
	/* nested: the file inside a denied directory is covered by the directory's mask,
	 * and nothing inside a mask is pinned */
	char nd[1024];
	snprintf(nd, sizeof(nd),
		 "{" V ",\"filesystem\":{\"write\":[\"%s/w\"],\"deny\":[\"%s/w/a/b/f\","
		 "\"%s/w/a/b\",\"%s/w/a\"]}}",
		 dir, dir, dir, dir);
	govex_policy *np = accept(nd);
	ck_assert_int_eq(govex__deny_resolve(np, NULL, &d, &f), 0);
	snprintf(p, sizeof(p), "%s/w/a", dir);
	ck_assert_str_eq(d.paths[0], p);
	ck_assert_ptr_null(d.paths[1]);
	ck_assert(d.isdir[0]);
	ck_assert_ptr_null(d.pins[0]);
	govex__deny_free(&d);
	govex_policy_free(np);
	/* a deny path above a root */
	char doc[1024];
	snprintf(doc, sizeof(doc),
		 "{" V ",\"filesystem\":{\"read\":[\"%s/r/a\"],\"deny\":[\"%s/r\"]}}", dir, dir);
	govex_policy *pol = accept(doc);
	ck_assert_int_eq(govex__deny_resolve(pol, NULL, &d, &f), 1);
	ck_assert_str_eq(f.code, "deny_covers_root");
	govex_policy_free(pol);
	const char *rm[] = {"/r/sym", "/r/second", "/r/linked", "/r/a/f", "/w/a/b/f", "/w/a/b",
			    "/w/a",   "/w",	   "/r/a",	"/r",	  "/other",   ""};
	for (size_t i = 0; i < ARRAY_SIZE(rm); i++) {
		snprintf(p, sizeof(p), "%s%s", dir, rm[i]);
		ck_assert_msg(remove(p) == 0, "remove %s", p);
	}
}
END_TEST

/* /govex is where the sandbox mounts its fresh workdir.  (A read root beneath the
 * sandbox's private /tmp is refused at planning, for a sandboxed run only.) */
START_TEST(test_reserved_roots)
{
	reject("{" V ",\"filesystem\":{\"read\":[\"/govex\"]}}",
	       "filesystem.read: '/govex': /govex is reserved");
	reject("{" V ",\"filesystem\":{\"write\":[\"/govex/work\"]}}",
	       "filesystem.write: '/govex/work': /govex is reserved");
	reject("{" V ",\"workdir\":\"/govex/w\",\"filesystem\":{\"write\":[\"/\"]}}",
	       "workdir: '/govex/w': /govex is reserved");
	/* /tmp itself (it replaces the private /tmp), write roots under /tmp, and names that
	 * only start alike are fine */
	govex_policy *p = accept("{" V ",\"filesystem\":{\"read\":[\"/tmp\",\"/tmpx\","
				 "\"/govexx\"],\"write\":[\"/tmp/w\"]}}");
	govex_policy_free(p);
}
END_TEST

START_TEST(test_workdir_under_write_root)
{
	reject("{" V ",\"workdir\":\"/srv/x\"}", "workdir: '/srv/x' does not lie under");
	reject("{" V ",\"workdir\":\"/srv/x\",\"filesystem\":{\"write\":[\"/tmp\"]}}",
	       "workdir: '/srv/x' does not lie under");
	reject("{" V ",\"workdir\":\"/tmpfoo\",\"filesystem\":{\"write\":[\"/tmp\"]}}",
	       "workdir: '/tmpfoo' does not lie under");
	/* a read root is not enough */
	reject("{" V ",\"workdir\":\"/srv/x\",\"filesystem\":{\"read\":[\"/srv\"]}}", "workdir: ");

	govex_policy *p =
	    accept("{" V ",\"workdir\":\"/tmp/w\",\"filesystem\":{\"write\":[\"/srv\",\"/tmp\"]}}");
	ck_assert(canon_has(p, "\"workdir\":\"/tmp/w\""));
	govex_policy_free(p);
	p = accept("{" V ",\"workdir\":\"/tmp\",\"filesystem\":{\"write\":[\"/tmp\"]}}");
	ck_assert(canon_has(p, "\"workdir\":\"/tmp\""));
	govex_policy_free(p);
	p = accept("{" V ",\"workdir\":\"fresh\"}");
	ck_assert(canon_has(p, "\"workdir\":\"fresh\""));
	govex_policy_free(p);
	/* member order must not matter: workdir before filesystem */
	p = accept("{\"workdir\":\"/srv/a/b\"," V ",\"filesystem\":{\"write\":[\"/srv/a\"]}}");
	govex_policy_free(p);
}
END_TEST

/* ---- names --------------------------------------------------------------------------- */

START_TEST(test_unknown_backend)
{
	reject("{" V ",\"backend\":\"docker\"}", "backend: unknown backend 'docker'");
	reject("{" V ",\"backend\":\"\"}", "backend: unknown backend");
	reject("{" V ",\"backend\":\"Controlled\"}", "backend: unknown backend");
	govex_policy *p = accept("{" V ",\"backend\":\"controlled\"}");
	ck_assert(canon_has(p, "\"backend\":\"controlled\""));
	govex_policy_free(p);
	p = accept("{" V ",\"backend\":null}");
	ck_assert(canon_has(p, "\"backend\":null"));
	govex_policy_free(p);
}
END_TEST

START_TEST(test_unknown_approval)
{
	reject("{" V ",\"approval\":[\"internet\"]}", "approval[0]: 'internet' is not allowed");
	reject("{" V ",\"approval\":[\"network\",\"filesystem_read\"]}", "approval[1]: ");
	reject("{" V ",\"approval\":[\"\"]}", "approval[0]: ");
	govex_policy *p =
	    accept("{" V ",\"approval\":[\"subprocess\",\"network\",\"shell\",\"network\","
		   "\"filesystem_write\"]}");
	ck_assert(canon_has(
	    p, "\"approval\":[\"filesystem_write\",\"network\",\"shell\",\"subprocess\"]"));
	govex_policy_free(p);
}
END_TEST

/* network: {"allow": [...]} (filtered networking): canonical (sorted, one spelling, no
 * duplicates), bad entries and members named; "allow" and "deny" keep their bytes. */
START_TEST(test_network_allowlist)
{
	govex_policy *p = accept("{" V ",\"network\":{\"allow\":[\"B.Example.com.:443\","
				 "\"[::FFFF:10.0.0.5]:8080\",\"*.pythonhosted.org:443\","
				 "\"b.example.com:443\",\"[0:0::1]:443\"]}}");
	ck_assert(canon_has(p, "\"network\":{\"allow\":[\"*.pythonhosted.org:443\","
			       "\"10.0.0.5:8080\",\"[::1]:443\",\"b.example.com:443\"]}"));
	govex_policy *q = accept("{" V ",\"network\":{\"allow\":[\"[::1]:443\","
				 "\"*.pythonhosted.org:443\",\"10.0.0.5:8080\","
				 "\"b.example.com:443\"]}}");
	ck_assert_str_eq(govex_policy_digest(p), govex_policy_digest(q));
	govex_policy_free(q);
	govex_policy_free(p);
	p = accept("{" V ",\"network\":{\"allow\":[]}}");
	ck_assert(canon_has(p, "\"network\":{\"allow\":[]}"));
	govex_policy_free(p);
	p = accept("{" V ",\"network\":\"deny\"}");
	ck_assert(canon_has(p, "\"network\":\"deny\""));
	govex_policy_free(p);
	reject("{" V ",\"network\":{\"alow\":[]}}",
	       "network.alow: unknown field \"alow\" (did you mean \"allow\"?)");
	reject("{" V ",\"network\":{}}", "network: an object needs \"allow\"");
	reject("{" V ",\"network\":{\"allow\":\"a.example:1\"}}",
	       "network.allow: must be an array");
	reject("{" V ",\"network\":{\"allow\":[\"a.example:1\",7]}}", "network.allow[1]: ");
	static const char *const bad[] = {"a.example",	   "a.example:0",   "a.example:65536",
					  "a.example:+1",  "127.1:80",	    "2130706433:80",
					  "0x7f.0.0.1:80", "*.*.example:1", "a*.example:1",
					  "[::1:80",	   ":80",	    "caf\u00e9.example:1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char doc[256];
		snprintf(doc, sizeof(doc), "{" V ",\"network\":{\"allow\":[\"%s\"]}}", bad[i]);
		reject(doc, "network.allow[0]: ");
	}
}
END_TEST

START_TEST(test_unknown_effect)
{
	reject("{" V ",\"effects\":{\"require_known\":[\"gpu\"]}}",
	       "effects.require_known[0]: 'gpu' is not allowed");
	reject("{" V ",\"effects\":{\"require_known\":[\"network\",\"shell\"]}}",
	       "effects.require_known[1]: ");
	govex_policy *p = accept("{" V ",\"effects\":{\"require_known\":[\"subprocess\","
				 "\"network\",\"dynamic_code\",\"environment\","
				 "\"filesystem_read\",\"filesystem_write\"]}}");
	ck_assert(canon_has(p, "\"require_known\":[\"dynamic_code\",\"environment\","
			       "\"filesystem_read\",\"filesystem_write\",\"network\","
			       "\"subprocess\"]"));
	govex_policy_free(p);
}
END_TEST

START_TEST(test_languages)
{
	reject("{" V ",\"languages\":[]}", "languages: must name at least one language");
	reject("{" V ",\"languages\":[\"ruby\"]}", "languages[0]: 'ruby' is not allowed");
	reject("{" V ",\"languages\":[\"python\",\"Python\"]}", "languages[1]: ");
	govex_policy_free(accept("{" V ",\"languages\":[\"python\",\"python\"]}"));
}
END_TEST

static const char *const bad_env_names[] = {
    "1X", "A-B", "", "A=B", "A B", "\xc3\xa9", "A.B", "$A",
};

START_TEST(test_bad_env_names)
{
	char doc[512];
	snprintf(doc, sizeof(doc), "{" V ",\"environment\":{\"allow\":[\"%s\"]}}",
		 bad_env_names[_i]);
	reject(doc, "environment.allow[0]: ");
	snprintf(doc, sizeof(doc), "{" V ",\"environment\":{\"allow\":[\"OK\",\"%s\"]}}",
		 bad_env_names[_i]);
	reject(doc, "environment.allow[1]: ");
	snprintf(doc, sizeof(doc), "{" V ",\"environment\":{\"set\":{\"%s\":\"v\"}}}",
		 bad_env_names[_i]);
	char pre[128];
	snprintf(pre, sizeof(pre), "environment.set.%s: not a valid environment variable name",
		 bad_env_names[_i]);
	reject(doc, pre);
}
END_TEST

START_TEST(test_env_name_length)
{
	char name[300], doc[512];
	memset(name, 'A', 256);
	name[256] = '\0';
	snprintf(doc, sizeof(doc), "{" V ",\"environment\":{\"allow\":[\"%s\"]}}", name);
	reject(doc, "environment.allow[0]: ");
	name[255] = '\0';
	snprintf(doc, sizeof(doc), "{" V ",\"environment\":{\"allow\":[\"%s\"]}}", name);
	govex_policy_free(accept(doc));
	govex_policy_free(accept("{" V ",\"environment\":{\"allow\":[\"_\",\"a1\",\"HOME\"],"
				 "\"set\":{\"_X\":\"\"}}}"));
}
END_TEST

/* ---- presets and files -------------------------------------------------------------- */

/* "2^20", "86400000", "null": a number of the man page's limits table */
static unsigned long long man_number(const char *s)
{
	if (strncmp(s, "2^", 2) == 0)
		return 1ULL << strtoul(s + 2, NULL, 10);
	return strtoull(s, NULL, 10);
}

/* govex-policy(5)'s limits table lists exactly GOVEX__LIMITS, with its defaults and
 * ranges: the docs cannot drift from the one list */
START_TEST(test_limits_documented)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/../../../docs/govex-policy.5", GOLDEN_DIR);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	char line[512];
	size_t seen = 0;
	bool in_table = false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "field|default|range|requires", 28) == 0) {
			in_table = true;
			continue;
		}
		if (!in_table || line[0] == '_')
			continue;
		if (strncmp(line, ".TE", 3) == 0)
			break;
		char name[64], def[32], lo[32], hi[32];
		ck_assert_msg(
		    sscanf(line, "%63[^|]|%31[^|]|%31[^\\]\\(en%31[^|]|", name, def, lo, hi) == 4,
		    "unreadable row: %s", line);
		ck_assert_uint_lt(seen, govex__limit_count);
		const struct govex__limit_desc *d = &govex__limit_table[seen++];
		ck_assert_str_eq(name, d->name);
		if (strcmp(def, "null") == 0)
			ck_assert_msg(d->nullable && d->def == 0, "%s: default null", name);
		else
			ck_assert_uint_eq(man_number(def), d->def);
		ck_assert_uint_eq(man_number(lo), d->min);
		ck_assert_uint_eq(man_number(hi), d->max);
	}
	fclose(f);
	ck_assert_uint_eq(seen, govex__limit_count);
	static const char *const names[] = GOVEX__LIMIT_NAMES;
	ck_assert_uint_eq(ARRAY_SIZE(names) - 1, govex__limit_count);
}
END_TEST

START_TEST(test_presets)
{
	static const char *const names[] = {"strict", "workspace", "trusted"};
	const char *digests[3];
	govex_policy *ps[3];
	for (size_t i = 0; i < 3; i++) {
		struct govex_error err;
		ps[i] = NULL;
		ck_assert_int_eq(govex_policy_preset(names[i], &ps[i], &err), 0);
		ck_assert_ptr_nonnull(ps[i]);
		size_t len = 0;
		const char *c = govex_policy_canonical(ps[i], &len);
		ck_assert_ptr_nonnull(c);
		ck_assert_uint_gt(len, 0);
		ck_assert_int_eq(c[len - 1], '\n');
		ck_assert_int_eq(c[len], '\0');
		digests[i] = govex_policy_digest(ps[i]);
		ck_assert_uint_eq(strlen(digests[i]), 71);
	}
	/* three different policies */
	ck_assert_str_ne(digests[0], digests[1]);
	ck_assert_str_ne(digests[0], digests[2]);
	ck_assert_str_ne(digests[1], digests[2]);
	ck_assert(canon_has(ps[0], "\"network\":\"deny\""));
	ck_assert(canon_has(ps[0], "\"subprocess\":\"deny\""));
	ck_assert(canon_has(ps[0], "\"read\":[]"));
	ck_assert(canon_has(ps[0], "\"workdir\":\"fresh\""));
	ck_assert(canon_has(ps[0], "\"memory_bytes\":536870912"));
	ck_assert(canon_has(ps[0], "\"processes\":64"));
	ck_assert(canon_has(ps[2], "\"network\":\"allow\""));
	ck_assert(canon_has(ps[2], "\"subprocess\":\"allow\""));
	ck_assert(canon_has(ps[2], "\"read\":[\"/\"]"));
	for (size_t i = 0; i < 3; i++)
		ck_assert_ptr_null(govex_policy_free(ps[i]));
}
END_TEST

START_TEST(test_preset_workspace_reads_cwd)
{
	ck_assert_int_eq(chdir("/usr"), 0);
	govex_policy *p = NULL;
	ck_assert_int_eq(govex_policy_preset("workspace", &p, NULL), 0);
	ck_assert(canon_has(p, "\"read\":[\"/usr\"]"));
	govex_policy_free(p);
}
END_TEST

START_TEST(test_unknown_preset)
{
	static const char *const names[] = {"Strict", "", "paranoid", "strict "};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		govex_policy *p = NULL;
		struct govex_error err;
		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(govex_policy_preset(names[i], &p, &err), -GOVEX_EPRESET);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(err.code, GOVEX_EPRESET);
		ck_assert_msg(strncmp(err.message, "preset '", 8) == 0, "'%s'", err.message);
	}
	govex_policy *p = NULL;
	ck_assert_int_eq(govex_policy_preset(NULL, &p, NULL), -GOVEX_EINVAL);
	ck_assert_int_eq(govex_policy_preset("strict", NULL, NULL), -GOVEX_EINVAL);
	ck_assert_str_eq(govex_error_name(GOVEX_EPRESET), "GOVEX_EPRESET");
	ck_assert_str_eq(govex_error_name(-GOVEX_EPOLICY), "GOVEX_EPOLICY");
}
END_TEST

START_TEST(test_parse_api_errors)
{
	govex_policy *p = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_policy_parse(NULL, 0, &p, &err), -GOVEX_EINVAL);
	ck_assert_int_eq(err.code, GOVEX_EINVAL);
	ck_assert_int_eq(govex_policy_parse("{}", 2, NULL, &err), -GOVEX_EINVAL);
	/* larger than 1 MiB: refused before parsing */
	size_t big = (1u << 20) + 1;
	char *doc = malloc(big);
	ck_assert_ptr_nonnull(doc);
	memset(doc, ' ', big);
	memcpy(doc, "{" V "}", strlen("{" V "}"));
	ck_assert_int_eq(govex_policy_parse(doc, big, &p, &err), -GOVEX_ETOOBIG);
	ck_assert_int_eq(err.code, GOVEX_ETOOBIG);
	ck_assert_ptr_null(p);
	/* exactly 1 MiB with trailing whitespace is fine */
	ck_assert_int_eq(govex_policy_parse(doc, big - 1, &p, &err), 0);
	govex_policy_free(p);
	free(doc);
	/* a NULL err is allowed */
	p = NULL;
	ck_assert_int_eq(govex_policy_parse("{}", 2, &p, NULL), -GOVEX_EPOLICY);
	ck_assert_ptr_null(p);
	ck_assert_ptr_null(govex_policy_free(NULL));
	ck_assert_ptr_null(govex_policy_canonical(NULL, NULL));
	ck_assert_ptr_null(govex_policy_digest(NULL));
}
END_TEST

START_TEST(test_policy_load)
{
	char dir[] = "/tmp/govex-unit-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/p.json", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\n  \"version\": \"govex.policy/v1\",\n  \"network\": \"allow\"\n}\n", f);
	fclose(f);
	govex_policy *p = NULL, *q = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_policy_load(path, &p, &err), 0);
	ck_assert_int_eq(govex_policy_parse("{" V ",\"network\":\"allow\"}",
					    strlen("{" V ",\"network\":\"allow\"}"), &q, &err),
			 0);
	ck_assert_str_eq(govex_policy_digest(p), govex_policy_digest(q));
	govex_policy_free(p);
	govex_policy_free(q);

	f = fopen(path, "w");
	fputs("{\"version\":\"govex.policy/v1\",\"limits\":{\"wall_ms\":0}}", f);
	fclose(f);
	p = NULL;
	ck_assert_int_eq(govex_policy_load(path, &p, &err), -GOVEX_EPOLICY);
	ck_assert_msg(strncmp(err.message, "limits.wall_ms: ", 16) == 0, "'%s'", err.message);
	ck_assert_ptr_null(p);
	unlink(path);

	ck_assert_int_eq(govex_policy_load(path, &p, &err), -ENOENT);
	ck_assert_int_eq(err.code, ENOENT);
	ck_assert_int_eq(err.sys_errno, ENOENT);
	ck_assert_int_eq(govex_policy_load(dir, &p, &err), -EISDIR);
	ck_assert_ptr_null(p);
	rmdir(dir);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("document");
	tcase_add_test(tc, test_unknown_top_level);
	tcase_add_loop_test(tc, test_unknown_nested, 0, ARRAY_SIZE(unknown_nested));
	tcase_add_loop_test(tc, test_unknown_did_you_mean, 0, ARRAY_SIZE(did_you_mean));
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_invalid_utf8);
	tcase_add_test(tc, test_nul_escape_in_path);
	tcase_add_test(tc, test_nul_escape_in_names);
	tcase_add_test(tc, test_raw_nul_byte);
	tcase_add_test(tc, test_not_an_object);
	tcase_add_test(tc, test_version);
	tcase_add_loop_test(tc, test_wrong_types, 0, ARRAY_SIZE(wrong_types));
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_loop_test(tc, test_limit_too_low, 0, ARRAY_SIZE(limits));
	tcase_add_loop_test(tc, test_limit_too_high, 0, ARRAY_SIZE(limits));
	tcase_add_loop_test(tc, test_limit_bounds_accepted, 0, ARRAY_SIZE(limits));
	tcase_add_loop_test(tc, test_limit_wrong_type, 0, ARRAY_SIZE(limits));
	tcase_add_loop_test(tc, test_limit_default, 0, ARRAY_SIZE(limits));
	tcase_add_test(tc, test_limit_huge_number);
	suite_add_tcase(s, tc);

	tc = tcase_create("paths");
	tcase_add_test(tc, test_relative_path);
	tcase_add_loop_test(tc, test_unnormalized_path, 0, ARRAY_SIZE(unnormalized));
	tcase_add_test(tc, test_paths_sorted_unique);
	tcase_add_test(tc, test_deny_paths);
	tcase_add_test(tc, test_deny_resolve);
	tcase_add_test(tc, test_workdir_under_write_root);
	tcase_add_test(tc, test_reserved_roots);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, test_unknown_backend);
	tcase_add_test(tc, test_unknown_approval);
	tcase_add_test(tc, test_network_allowlist);
	tcase_add_test(tc, test_unknown_effect);
	tcase_add_test(tc, test_languages);
	tcase_add_loop_test(tc, test_bad_env_names, 0, ARRAY_SIZE(bad_env_names));
	tcase_add_test(tc, test_env_name_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("presets");
	tcase_add_test(tc, test_limits_documented);
	tcase_add_test(tc, test_presets);
	tcase_add_test(tc, test_preset_workspace_reads_cwd);
	tcase_add_test(tc, test_unknown_preset);
	tcase_add_test(tc, test_parse_api_errors);
	tcase_add_test(tc, test_policy_load);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(policy_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
