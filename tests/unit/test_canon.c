/* SPDX-License-Identifier: MIT */
/*
 * unit-canon: canonical bytes and digests.  Golden files under tests/unit/golden/:
 * <name>.canon holds the exact canonical bytes, <name>.digest the "sha256:..." line.
 * `unit-canon --write-golden DIR` regenerates them (then inspect them by eye).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "internal.h"

#ifndef GOLDEN_DIR
#error GOLDEN_DIR must be defined by the build
#endif

#define V "\"version\":\"govex.policy/v1\""

/* Every field set to a value other than its default; unsorted, with duplicates and
 * whitespace, so that normalization shows in the canonical form. */
static const char maximal_doc[] =
    "{\n"
    "  \"backend\": \"restricted\",\n"
    "  \"version\": \"govex.policy/v1\",\n"
    "  \"languages\": [\"python\", \"python\"],\n"
    "  \"python\": {\"site\": true, \"interpreter\": \"/usr/bin/python3\"},\n"
    "  \"workdir\": \"/srv/work/job\",\n"
    "  \"limits\": {\n"
    "    \"wall_ms\": 3600000, \"cpu_ms\": 86400000, \"memory_bytes\": 4398046511104,\n"
    "    \"processes\": 1048576, \"open_files\": 8, \"file_size_bytes\": 1125899906842624,\n"
    "    \"code_bytes\": 67108864, \"stdin_bytes\": 0, \"stdout_bytes\": 1073741824,\n"
    "    \"stderr_bytes\": 0, \"call_input_bytes\": 16777216, \"call_output_bytes\": 128\n"
    "  },\n"
    "  \"filesystem\": {\"read\": [\"/usr\", \"/etc\", \"/srv\", \"/usr\"],\n"
    "                 \"write\": [\"/tmp\", \"/srv/work\"], \"platform_defaults\": false},\n"
    "  \"network\": \"allow\", \"subprocess\": \"allow\", \"shell\": \"allow\",\n"
    "  \"environment\": {\"inherit\": true, \"allow\": [\"HOME\", \"A_B\", \"_X\", \"HOME\"],\n"
    "                  \"set\": {\"Z\": \"z value\", \"LANG\": \"C.UTF-8\", \"EMPTY\": \"\",\n"
    "                          \"U\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"Q\": "
    "\"a\\\"b\\\\c\\td/e\"}},\n"
    "  \"approval\": [\"subprocess\", \"network\", \"shell\", \"filesystem_write\"],\n"
    "  \"effects\": {\"require_known\": [\"network\", \"dynamic_code\", \"filesystem_read\",\n"
    "                                  \"filesystem_write\", \"subprocess\", \"environment\"]}\n"
    "}\n";

static const char minimal_doc[] = "{" V "}";

/* Makes the named policy: a preset, "maximal" or "minimal". */
static int make_policy(const char *name, govex_policy **ret)
{
	struct govex_error err;
	if (strcmp(name, "maximal") == 0)
		return govex_policy_parse(maximal_doc, strlen(maximal_doc), ret, &err);
	if (strcmp(name, "minimal") == 0)
		return govex_policy_parse(minimal_doc, strlen(minimal_doc), ret, &err);
	if (strcmp(name, "workspace") == 0 && chdir("/usr") < 0)
		return -errno;
	return govex_policy_preset(name, ret, &err);
}

static const char *const golden_names[] = {"strict", "workspace", "trusted", "maximal", "minimal"};

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			buf = realloc(buf, cap + 1);
			ck_assert_ptr_nonnull(buf);
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

static void sha256_hex(const void *data, size_t len, char out[72])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL), 1);
	ck_assert_int_eq(EVP_DigestUpdate(ctx, data, len), 1);
	ck_assert_int_eq(EVP_DigestFinal_ex(ctx, md, &mdlen), 1);
	EVP_MD_CTX_free(ctx);
	ck_assert_uint_eq(mdlen, 32);
	int o = snprintf(out, 72, "sha256:");
	for (unsigned i = 0; i < mdlen; i++)
		o += snprintf(out + o, 72 - (size_t)o, "%02x", md[i]);
}

/* ---- golden files ----------------------------------------------------------------------- */

START_TEST(test_golden)
{
	const char *name = golden_names[_i];
	govex_policy *p = NULL;
	ck_assert_int_eq(make_policy(name, &p), 0);
	char path[512];
	size_t glen, dlen, len;
	snprintf(path, sizeof(path), "%s/%s.canon", GOLDEN_DIR, name);
	char *golden = slurp(path, &glen);
	snprintf(path, sizeof(path), "%s/%s.digest", GOLDEN_DIR, name);
	char *digest = slurp(path, &dlen);

	const char *c = govex_policy_canonical(p, &len);
	ck_assert_msg(len == glen && memcmp(c, golden, len) == 0,
		      "%s: canonical bytes differ from golden\n got: %s want: %s", name, c, golden);
	ck_assert_uint_eq(dlen, 72); /* sha256: + 64 hex + \n */
	ck_assert_int_eq(digest[71], '\n');
	digest[71] = '\0';
	ck_assert_str_eq(govex_policy_digest(p), digest);
	free(golden);
	free(digest);
	govex_policy_free(p);
}
END_TEST

/* Structural properties of the canonical bytes, checked without the golden files. */
START_TEST(test_canonical_shape)
{
	const char *name = golden_names[_i];
	govex_policy *p = NULL;
	ck_assert_int_eq(make_policy(name, &p), 0);
	size_t len;
	const char *c = govex_policy_canonical(p, &len);
	ck_assert_uint_gt(len, 2);
	ck_assert_int_eq(c[0], '{');
	ck_assert_int_eq(c[len - 2], '}');
	ck_assert_int_eq(c[len - 1], '\n');
	ck_assert_int_eq(c[len], '\0');
	ck_assert_uint_eq(strlen(c), len);
	/* no whitespace outside strings, no reals */
	bool in_str = false;
	for (size_t i = 0; i + 1 < len; i++) {
		char ch = c[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"')
			in_str = true;
		ck_assert_msg(ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r',
			      "%s: whitespace at %zu", name, i);
		ck_assert_msg(ch != '.' && !((ch == 'e' || ch == 'E') && i > 0 && c[i - 1] >= '0' &&
					     c[i - 1] <= '9'),
			      "%s: number with fraction/exponent at %zu", name, i);
	}
	/* every member present, keys in order */
	json_t *j = json_loadb(c, len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(j);
	static const char *const keys[] = {
	    "approval", "backend", "effects", "environment", "filesystem", "languages", "limits",
	    "network",	"python",  "shell",   "subprocess",  "version",	   "workdir"};
	ck_assert_uint_eq(json_object_size(j), ARRAY_SIZE(keys));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		ck_assert_msg(json_object_get(j, keys[i]) != NULL, "%s: no %s", name, keys[i]);
	ck_assert_uint_eq(json_object_size(json_object_get(j, "limits")), 12);
	const char *prev = "";
	/* top-level keys appear in code point order in the text */
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char needle[40];
		snprintf(needle, sizeof(needle), "\"%s\":", keys[i]);
		const char *at = strstr(c, needle);
		ck_assert_ptr_nonnull(at);
		ck_assert_msg(at > prev, "%s: key %s out of order", name, keys[i]);
		prev = at;
	}
	json_decref(j);
	govex_policy_free(p);
}
END_TEST

/* ---- digests ------------------------------------------------------------------------------ */

START_TEST(test_digest_is_sha256_of_canon)
{
	const char *name = golden_names[_i];
	govex_policy *p = NULL;
	ck_assert_int_eq(make_policy(name, &p), 0);
	size_t len;
	const char *c = govex_policy_canonical(p, &len);
	char want[72];
	sha256_hex(c, len, want);
	ck_assert_str_eq(govex_policy_digest(p), want);
	const char *d = govex_policy_digest(p);
	ck_assert_uint_eq(strlen(d), 71);
	for (size_t i = 7; i < 71; i++)
		ck_assert_msg((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f'),
			      "digest char %zu", i);
	govex_policy_free(p);
}
END_TEST

START_TEST(test_sha256_digest_vectors)
{
	char out[72];
	govex__sha256_digest("", 0, out);
	ck_assert_str_eq(out,
			 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	govex__sha256_digest("abc", 3, out);
	ck_assert_str_eq(out,
			 "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* embedded NUL is hashed, not a terminator */
	char want[72];
	sha256_hex("a\0b", 3, want);
	govex__sha256_digest("a\0b", 3, out);
	ck_assert_str_eq(out, want);
}
END_TEST

/* Member order and whitespace of the input do not change the canonical form. */
START_TEST(test_order_and_whitespace_irrelevant)
{
	static const char a[] = "{" V ",\"network\":\"allow\",\"limits\":{\"wall_ms\":10,"
				"\"cpu_ms\":20},\"environment\":{\"allow\":[\"B\",\"A\"]}}";
	static const char b[] = "\n\t{ \"environment\" : { \"allow\" : [ \"A\" , \"B\" ] } ,\r\n"
				"  \"limits\": {\"cpu_ms\": 20, \"wall_ms\": 10},\n"
				"  \"network\": \"allow\", \"version\": \"govex.policy/v1\" }  \n";
	/* same policy with the defaults spelled out */
	static const char c[] =
	    "{" V ",\"network\":\"allow\",\"subprocess\":\"deny\",\"shell\":\"deny\","
	    "\"workdir\":\"fresh\",\"python\":{\"interpreter\":\"auto\",\"site\":false},"
	    "\"limits\":{\"wall_ms\":10,\"cpu_ms\":20,\"memory_bytes\":null,"
	    "\"stdout_bytes\":65536},\"environment\":{\"allow\":[\"A\",\"B\",\"A\"],"
	    "\"inherit\":false,\"set\":{}},\"approval\":[],\"backend\":null,"
	    "\"filesystem\":{\"read\":[],\"write\":[],\"platform_defaults\":true},"
	    "\"effects\":{\"require_known\":[]},\"languages\":[\"python\"]}";
	govex_policy *pa = NULL, *pb = NULL, *pc = NULL;
	ck_assert_int_eq(govex_policy_parse(a, strlen(a), &pa, NULL), 0);
	ck_assert_int_eq(govex_policy_parse(b, strlen(b), &pb, NULL), 0);
	ck_assert_int_eq(govex_policy_parse(c, strlen(c), &pc, NULL), 0);
	size_t la, lb, lc;
	const char *ca = govex_policy_canonical(pa, &la);
	const char *cb = govex_policy_canonical(pb, &lb);
	const char *cc = govex_policy_canonical(pc, &lc);
	ck_assert_uint_eq(la, lb);
	ck_assert_uint_eq(la, lc);
	ck_assert_mem_eq(ca, cb, la);
	ck_assert_mem_eq(ca, cc, la);
	ck_assert_str_eq(govex_policy_digest(pa), govex_policy_digest(pb));
	ck_assert_str_eq(govex_policy_digest(pa), govex_policy_digest(pc));
	/* and a different value does change it */
	govex_policy *pd = NULL;
	static const char d[] = "{" V ",\"network\":\"allow\",\"limits\":{\"wall_ms\":11,"
				"\"cpu_ms\":20},\"environment\":{\"allow\":[\"B\",\"A\"]}}";
	ck_assert_int_eq(govex_policy_parse(d, strlen(d), &pd, NULL), 0);
	ck_assert_str_ne(govex_policy_digest(pa), govex_policy_digest(pd));
	govex_policy_free(pa);
	govex_policy_free(pb);
	govex_policy_free(pc);
	govex_policy_free(pd);
}
END_TEST

/* parse(canon(x)) gives the same bytes. */
START_TEST(test_idempotent)
{
	const char *name = golden_names[_i];
	govex_policy *p = NULL, *q = NULL;
	ck_assert_int_eq(make_policy(name, &p), 0);
	size_t lp, lq;
	const char *cp = govex_policy_canonical(p, &lp);
	struct govex_error err;
	ck_assert_msg(govex_policy_parse(cp, lp, &q, &err) == 0, "%s: %s", name, err.message);
	const char *cq = govex_policy_canonical(q, &lq);
	ck_assert_uint_eq(lp, lq);
	ck_assert_mem_eq(cp, cq, lp);
	ck_assert_str_eq(govex_policy_digest(p), govex_policy_digest(q));
	govex_policy_free(p);
	govex_policy_free(q);
}
END_TEST

/* A policy accepted near the 1 MiB input bound must have a canonical form that is itself
 * accepted (the defaults filled in make the canonical bytes longer than the input), and
 * a runtime (which re-parses the canonical bytes) must accept it.  Refusing the input
 * (canonical form too large) is the other consistent answer. */
START_TEST(test_idempotent_near_size_limit)
{
	const size_t max = 1u << 20;
	char *doc = malloc(max + 1);
	ck_assert_ptr_nonnull(doc);
	size_t o = (size_t)snprintf(doc, max, "{" V ",\"environment\":{\"set\":{");
	/* 33 values of 31000 bytes, then one that fills up to the bound */
	for (int i = 0; i < 34; i++) {
		o += (size_t)snprintf(doc + o, max - o, "%s\"V%02d\":\"", i ? "," : "", i);
		size_t n = i < 33 ? 31000 : max - o - 4; /* room for "}}} */
		memset(doc + o, 'x', n);
		o += n;
		doc[o++] = '"';
	}
	memcpy(doc + o, "}}}", 3);
	o += 3;
	ck_assert_uint_eq(o, max);
	govex_policy *p = NULL, *q = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = govex_policy_parse(doc, o, &p, &err);
	if (r < 0) {
		/* refusing such a policy outright is a valid fix too */
		ck_assert_msg(r == -GOVEX_ETOOBIG || r == -GOVEX_EPOLICY, "input: %d %s", r,
			      err.message);
		ck_assert_ptr_null(p);
		free(doc);
		return;
	}
	size_t len;
	const char *c = govex_policy_canonical(p, &len);
	ck_assert_uint_gt(len, max); /* this is the interesting case */
	memset(&err, 0, sizeof(err));
	ck_assert_msg(govex_policy_parse(c, len, &q, &err) == 0,
		      "canonical form (%zu bytes) refused: %s", len, err.message);
	govex_policy_free(q);
	govex_runtime *rt = NULL;
	ck_assert_msg(govex_runtime_new(p, NULL, &rt, &err) == 0, "runtime: %s", err.message);
	govex_runtime_free(rt);
	govex_policy_free(p);
	free(doc);
}
END_TEST

/* ---- govex__canon ------------------------------------------------------------------------ */

static void canon_is(json_t *j, const char *want)
{
	char *bytes = NULL;
	size_t len = 0;
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(govex__canon(j, &bytes, &len), 0);
	ck_assert_str_eq(bytes, want);
	ck_assert_uint_eq(len, strlen(want));
	free(bytes);
	json_decref(j);
}

START_TEST(test_canon_basic)
{
	canon_is(
	    json_pack("{s:i, s:[b, n, s], s:{s:i, s:i}}", "b", 1, "a", 1, "x", "c", "y", 2, "x", 3),
	    "{\"a\":[true,null,\"x\"],\"b\":1,\"c\":{\"x\":3,\"y\":2}}\n");
	canon_is(json_object(), "{}\n");
	canon_is(json_array(), "[]\n");
	canon_is(json_integer(-9223372036854775807LL - 1), "-9223372036854775808\n");
	canon_is(json_string("a/b\"\\\t\x01\xc3\xa9"), "\"a/b\\\"\\\\\\t\\u0001\xc3\xa9\"\n");
	/* keys by code point: 'Z' < '_' < 'a' < U+00E9 < U+FFFF < U+10000 */
	canon_is(json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "\xf0\x90\x80\x80", 6, "\xef\xbf\xbf",
			   5, "\xc3\xa9", 4, "a", 3, "_", 2, "Z", 1),
		 "{\"Z\":1,\"_\":2,\"a\":3,\"\xc3\xa9\":4,\"\xef\xbf\xbf\":5,"
		 "\"\xf0\x90\x80\x80\":6}\n");
	/* a key that is a prefix of another sorts first; DEL is not escaped */
	canon_is(json_pack("{s:i, s:i, s:i}", "a\x7f", 3, "ab", 2, "a", 1),
		 "{\"a\":1,\"ab\":2,\"a\x7f\":3}\n");
}
END_TEST

START_TEST(test_canon_refuses_reals)
{
	char *bytes = (char *)0x1;
	size_t len = 7;
	json_t *docs[] = {
	    json_real(1.0),
	    json_real(0.5),
	    json_pack("{s:i, s:f}", "a", 1, "b", 2.0),
	    json_pack("{s:[i, {s:[f]}]}", "a", 1, "b", -0.0),
	};
	for (size_t i = 0; i < ARRAY_SIZE(docs); i++) {
		ck_assert_ptr_nonnull(docs[i]);
		ck_assert_int_eq(govex__canon(docs[i], &bytes, &len), -GOVEX_EINVAL);
		/* outputs untouched */
		ck_assert_ptr_eq(bytes, (char *)0x1);
		ck_assert_uint_eq(len, 7);
		json_decref(docs[i]);
	}
}
END_TEST

/* ---- govex__json_parse --------------------------------------------------------------------- */

START_TEST(test_json_parse_strict)
{
	json_t *j = NULL;
	struct govex_error err;
	static const struct {
		const char *doc;
		size_t len;
		int code;
	} bad[] = {
	    {"{\"a\":1,\"a\":2}", 13, GOVEX_EJSON},
	    {"{\"a\":{\"b\":1,\"b\":1}}", 19, GOVEX_EJSON},
	    {"{} x", 4, GOVEX_EJSON},
	    {"{}{}", 4, GOVEX_EJSON},
	    {"{}\0", 3, GOVEX_EJSON},
	    {"{\"a\":\"\0\"}", 8, GOVEX_EJSON},
	    {"{\"a\":\"\\u0000\"}", 13, GOVEX_EJSON},
	    {"{\"a\":\"\xff\"}", 8, GOVEX_EUTF8},
	    {"{\"a\":\"\\ud800\"}", 13, GOVEX_EJSON},
	    {"{\"a\":1,}", 8, GOVEX_EJSON},
	    {"{\"a\":NaN}", 9, GOVEX_EJSON},
	    {"", 0, GOVEX_EJSON},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&err, 0, sizeof(err));
		j = NULL;
		int r = govex__json_parse(bad[i].doc, bad[i].len, 0, &j, &err);
		ck_assert_msg(r == -bad[i].code, "case %zu: got %d (%s)", i, r, err.message);
		ck_assert_ptr_null(j);
		ck_assert_int_eq(err.code, bad[i].code);
		ck_assert_msg(strncmp(err.message, "document: ", 10) == 0, "case %zu: '%s'", i,
			      err.message);
		if (bad[i].code == GOVEX_EJSON)
			ck_assert_msg(strncmp(err.message, "document: line ", 15) == 0,
				      "case %zu: no position in '%s'", i, err.message);
	}
	/* does not read past len */
	ck_assert_int_eq(govex__json_parse("{\"a\":1}garbage", 7, 0, &j, &err), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "a")), 1);
	json_decref(j);
	ck_assert_int_eq(govex__json_parse(" [1] \n", 6, 0, &j, &err), 0);
	ck_assert(json_is_array(j));
	json_decref(j);
	/* extra flags: JSON_ALLOW_NUL lets the caller see (and name) a NUL itself */
	ck_assert_int_eq(govex__json_parse("{\"a\":\"\\u0000\"}", 14, JSON_ALLOW_NUL, &j, &err), 0);
	ck_assert_uint_eq(json_string_length(json_object_get(j, "a")), 1);
	json_decref(j);
	/* ...but still refuses duplicates and NUL in keys */
	ck_assert_int_eq(govex__json_parse("{\"a\":1,\"a\":1}", 13, JSON_ALLOW_NUL, &j, &err),
			 -GOVEX_EJSON);
	ck_assert_int_eq(govex__json_parse("{\"a\\u0000\":1}", 13, JSON_ALLOW_NUL, &j, &err),
			 -GOVEX_EJSON);
}
END_TEST

static Suite *canon_suite(void)
{
	Suite *s = suite_create("canon");
	TCase *tc = tcase_create("golden");
	tcase_add_loop_test(tc, test_golden, 0, ARRAY_SIZE(golden_names));
	tcase_add_loop_test(tc, test_canonical_shape, 0, ARRAY_SIZE(golden_names));
	tcase_add_loop_test(tc, test_digest_is_sha256_of_canon, 0, ARRAY_SIZE(golden_names));
	tcase_add_loop_test(tc, test_idempotent, 0, ARRAY_SIZE(golden_names));
	tcase_add_test(tc, test_sha256_digest_vectors);
	tcase_add_test(tc, test_order_and_whitespace_irrelevant);
	tcase_add_test(tc, test_idempotent_near_size_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("canon");
	tcase_add_test(tc, test_canon_basic);
	tcase_add_test(tc, test_canon_refuses_reals);
	tcase_add_test(tc, test_json_parse_strict);
	suite_add_tcase(s, tc);
	return s;
}

static int write_golden(const char *dir)
{
	for (size_t i = 0; i < ARRAY_SIZE(golden_names); i++) {
		govex_policy *p = NULL;
		if (make_policy(golden_names[i], &p) < 0) {
			fprintf(stderr, "%s: cannot make policy\n", golden_names[i]);
			return 1;
		}
		char path[4096];
		size_t len;
		const char *c = govex_policy_canonical(p, &len);
		snprintf(path, sizeof(path), "%s/%s.canon", dir, golden_names[i]);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(c, 1, len, f) != len || fclose(f) != 0)
			return 1;
		snprintf(path, sizeof(path), "%s/%s.digest", dir, golden_names[i]);
		f = fopen(path, "wb");
		if (!f || fprintf(f, "%s\n", govex_policy_digest(p)) < 0 || fclose(f) != 0)
			return 1;
		govex_policy_free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-golden") == 0)
		return write_golden(argv[2]);
	SRunner *sr = srunner_create(canon_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
