/* SPDX-License-Identifier: MIT */
/*
 * unit-values: the canonical JSON encoder (src/lib/jsonout.c) and the JSON Schema
 * validator of call arguments (src/lib/schema.c).
 */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values.h"

/* bit patterns of doubles and Python 3's repr() of them */
static const struct {
	unsigned long long bits;
	const char *repr;
} reprs[] = {
    {4591870180066957722ULL, "0.1"},
    {4596373779694328218ULL, "0.2"},
    {4599075939470750515ULL, "0.3"},
    {4599676419421066581ULL, "0.3333333333333333"},
    {4604180019048437077ULL, "0.6666666666666666"},
    {4607182418800017408ULL, "1.0"},
    {4636737291354636288ULL, "100.0"},
    {4846369599423283200ULL, "1e+16"},
    {4831355200913801216ULL, "1000000000000000.0"},
    {4817745636528479846ULL, "123456789012345.6"},
    {4547007122018943789ULL, "0.0001"},
    {4532020583610935537ULL, "1e-05"},
    {4534972062662729065ULL, "1.5e-05"},
    {1ULL, "5e-324"},
    {4503599627370496ULL, "2.2250738585072014e-308"},
    {9218868437227405311ULL, "1.7976931348623157e+308"},
    {9223372036854775808ULL, "-0.0"},
    {13832806255468478464ULL, "-1.5"},
    {4936209963552724370ULL, "1e+22"},
    {4921056587992461136ULL, "1e+21"},
    {4845873199050653696ULL, "9007199254740992.0"},
    {4599075939470750516ULL, "0.30000000000000004"},
    {3ULL, "1.5e-323"},
    {4638387860618067575ULL, "123.456"},
    {6103021453049119613ULL, "1e+100"},
    {4892433759222981601ULL, "1.2345678901234567e+19"},
    {4616583683022153318ULL, "4.35"},
    {4548669923058963014ULL, "0.000123"},
    {4503599627370496ULL, "2.2250738585072014e-308"},
    {4877398396442247168ULL, "1.152921504606847e+18"},
    {4602678819172646912ULL, "0.5"},
    {4502148214488346440ULL, "1e-07"},
    {17485029721327973432ULL, "-1.989032661366619e+244"},
    {7283207964119141687ULL, "7.761117632285041e+178"},
    {890727360438182992ULL, "3.980498358697587e-249"},
    {15149836622520594227ULL, "-1.5432835417340557e+88"},
    {1736392818365009963ULL, "1.3647584518757569e-192"},
    {10750541312280087032ULL, "-1.3701135617873088e-206"},
    {16781078052021535861ULL, "-1.7160537630466207e+197"},
    {3960482443532127989ULL, "6.294675241195386e-44"},
    {1585446675937841368ULL, "1.0613447212142254e-202"},
    {7713914763314685786ULL, "4.708325160387546e+207"},
    {4439448776366754703ULL, "6.387016158513563e-12"},
    {10165027665383847897ULL, "-9.973130378568733e-246"},
    {1090396360377453094ULL, "8.779753225680271e-236"},
    {10430779633273967791ULL, "-5.795503248498993e-228"},
    {17477362246067780643ULL, "-5.988180159386011e+243"},
    {11632994891556335705ULL, "-1.306052388527796e-147"},
    {10754394637803157173ULL, "-2.436117699484841e-206"},
    {1141153371300629929ULL, "2.233386999150174e-232"},
    {10801332806156616911ULL, "-3.51527970626667e-203"},
    {914761360679426580ULL, "1.5987381841032883e-247"},
    {4078239883182463692ULL, "4.6678633181812096e-36"},
    {10268654918125279152ULL, "-8.441872792105456e-239"},
    {2456641775679608523ULL, "1.9015657400796622e-144"},
    {7731750658069747094ULL, "7.370437700706684e+208"},
    {9973894190648387236ULL, "-1.7163996725272777e-258"},
    {10531498782278263232ULL, "-3.2367190832119987e-221"},
    {10334922596725336632ULL, "-2.2818334634712625e-234"},
    {12580729232405932079ULL, "-3.0536383926309363e-84"},
    {1901042282212365707ULL, "1.3449551894627777e-181"},
    {10536861175493410705ULL, "-7.317495976062606e-221"},
    {3465608723044488519ULL, "5.249822308814304e-77"},
    {1797276903956378115ULL, "1.5450754142984396e-188"},
    {13136125050165459753ULL, "-3.953625698224792e-47"},
    {10410757471710933047ULL, "-2.72491267476498e-229"},
    {11418711589407294900ULL, "-6.505141861548772e-162"},
    {9157231070389319135ULL, "1.441484839555994e+304"},
    {9808507260218814804ULL, "-1.4583679262758548e-269"},
    {14337340360533389438ULL, "-7.939416668807721e+33"},
    {8588838448975835887ULL, "1.4255183989699612e+266"},
    {17034486841352872401ULL, "-1.525315701232403e+214"},
};

static double from_bits(unsigned long long b)
{
	double d;
	memcpy(&d, &b, sizeof(d));
	return d;
}

START_TEST(test_real_repr_as_python)
{
	char out[64];
	double d = from_bits(reprs[_i].bits);
	ck_assert_int_eq(govex__json_real_repr(d, out, sizeof(out)), 0);
	ck_assert_str_eq(out, reprs[_i].repr);
}
END_TEST

/* any finite double: reads back as itself, in at most 17 significant digits, and no
 * digit can be dropped (the text is the shortest) */
START_TEST(test_real_repr_round_trip)
{
	unsigned long long x = 0x9e3779b97f4a7c15ULL;
	for (int n = 0; n < 200000; n++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d = from_bits(x);
		if (!isfinite(d))
			continue;
		char out[64];
		ck_assert_int_eq(govex__json_real_repr(d, out, sizeof(out)), 0);
		ck_assert_msg(strtod(out, NULL) == d, "%s does not read back", out);
		/* Python's longest: -1.2345678901234567e-308 */
		ck_assert_msg(strlen(out) <= 24, "%s is too long", out);
	}
	char out[64];
	ck_assert_int_eq(govex__json_real_repr(NAN, out, sizeof(out)), -GOVEX_EINVAL);
	ck_assert_int_eq(govex__json_real_repr(INFINITY, out, sizeof(out)), -GOVEX_EINVAL);
}
END_TEST

START_TEST(test_dumps_reals)
{
	json_t *v = json_pack("{s:[f,f,f], s:f, s:i}", "a", 0.1, 0.2, 1e-5, "b", 100.0, "c", 3);
	char *s = govex__json_dumps(v, JSON_SORT_KEYS);
	ck_assert_str_eq(s, "{\"a\":[0.1,0.2,1e-05],\"b\":100.0,\"c\":3}");
	free(s);
	json_decref(v);
	/* [0.1]*200: the bytes Python's json.dumps counts */
	v = json_array();
	for (int i = 0; i < 200; i++)
		json_array_append_new(v, json_real(0.1));
	s = govex__json_dumps(v, JSON_SORT_KEYS);
	ck_assert_uint_eq(strlen(s), 2 + 200 * 3 + 199);
	free(s);
	json_decref(v);
}
END_TEST

static unsigned long long rng;
static unsigned next(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

/* a random string: ASCII, control characters, NUL, quotes, 2-, 3- and 4-byte UTF-8 */
static size_t random_text(char *buf, size_t max)
{
	static const char *const pieces[] = {"a",
					     "b",
					     "Z",
					     "0",
					     " ",
					     "\"",
					     "\\",
					     "/",
					     "\n",
					     "\t",
					     "\r",
					     "\b",
					     "\f",
					     "\x01",
					     "\x1f",
					     "\x7f",
					     "\xc3\xa9",
					     "\xe2\x82\xac",
					     "\xf0\x9f\x98\x80",
					     "\xed\x9f\xbf",
					     "\xef\xbf\xbf",
					     "\0"};
	size_t n = 0, count = next(12);
	for (size_t i = 0; i < count; i++) {
		unsigned p = next(ARRAY_SIZE(pieces));
		size_t l = p == ARRAY_SIZE(pieces) - 1 ? 1 : strlen(pieces[p]);
		if (n + l > max)
			break;
		memcpy(buf + n, pieces[p], l);
		n += l;
	}
	return n;
}

static json_t *random_doc(int depth)
{
	char text[64];
	unsigned kind = next(depth > 0 ? 9 : 6);
	switch (kind) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(next(2));
	case 2: {
		static const json_int_t edges[] = {0,	      1,	 -1,	 9007199254740993LL,
						   INT64_MAX, INT64_MIN, 1000000};
		return json_integer(next(2) ? edges[next(ARRAY_SIZE(edges))]
					    : (json_int_t)next(100000) - 50000);
	}
	case 3:
	case 4:
	case 5: {
		size_t n = random_text(text, sizeof(text));
		return json_stringn(text, n);
	}
	case 6:
	case 7: {
		json_t *o = json_object();
		for (unsigned i = next(6); i > 0; i--) {
			size_t n = random_text(text, sizeof(text));
			json_object_setn_new(o, text, n, random_doc(depth - 1));
		}
		return o;
	}
	default: {
		json_t *a = json_array();
		for (unsigned i = next(6); i > 0; i--)
			json_array_append_new(a, random_doc(depth - 1));
		return a;
	}
	}
}

/* without reals: byte for byte jansson's compact output, sorted or not, ASCII or not */
START_TEST(test_dumps_as_jansson)
{
	static const size_t flags[] = {JSON_SORT_KEYS, 0, JSON_SORT_KEYS | JSON_ENSURE_ASCII,
				       JSON_ENSURE_ASCII};
	rng = 12345;
	for (int n = 0; n < 5000; n++) {
		json_t *v = random_doc(4);
		ck_assert_ptr_nonnull(v);
		for (size_t f = 0; f < ARRAY_SIZE(flags); f++) {
			char *ours = govex__json_dumps(v, flags[f]);
			char *theirs = json_dumps(v, flags[f] | JSON_COMPACT | JSON_ENCODE_ANY);
			ck_assert_ptr_nonnull(ours);
			ck_assert_ptr_nonnull(theirs);
			ck_assert_str_eq(ours, theirs);
			free(ours);
			free(theirs);
		}
		json_decref(v);
	}
}
END_TEST

START_TEST(test_within_budget)
{
	/* a = [1]; a = [a, a] sixty times: 2^61 nodes counted with sharing, refused at once */
	json_t *a = json_pack("[i]", 1);
	for (int i = 0; i < 60; i++) {
		json_t *b = json_pack("[OO]", a, a);
		json_decref(a);
		a = b;
	}
	ck_assert(!govex__json_within(a, GOVEX_VALUE_NODES_MAX, 1000));
	json_decref(a);
	a = json_pack("[[[i]],{s:[i]}]", 1, "k", 2);
	ck_assert(govex__json_within(a, 7, 4));
	ck_assert(!govex__json_within(a, 6, 4));
	ck_assert(!govex__json_within(a, 7, 2));
	json_decref(a);
}
END_TEST

/* schema cases: schema, value (JSON), expected message ("" when valid) */
static const struct {
	const char *schema, *value, *err;
} cases[] = {
    {"{\"type\":\"integer\"}", "3", ""},
    {"{\"type\":\"integer\"}", "1.5", "args.n: expected integer, got number 1.5"},
    {"{\"type\":\"integer\"}", "1.0", "args.n: expected integer, got number 1.0"},
    {"{\"type\":\"integer\"}", "true", "args.n: expected integer, got boolean true"},
    {"{\"type\":\"integer\"}", "\"str\"", "args.n: expected integer, got string \"str\""},
    {"{\"type\":\"number\"}", "3", ""},
    {"{\"type\":\"number\"}", "0.1", ""},
    {"{\"type\":\"number\"}", "false", "args.n: expected number, got boolean false"},
    {"{\"type\":\"boolean\"}", "0", "args.n: expected boolean, got integer 0"},
    {"{\"type\":\"null\"}", "null", ""},
    {"{\"type\":\"string\",\"maxLength\":3}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"", ""},
    {"{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", "args.n: longer than 2 characters"},
    {"{\"type\":[\"string\",\"null\"]}", "null", ""},
    {"{\"type\":[\"string\",\"null\"]}", "1",
     "args.n: expected one of the types [\"string\",\"null\"], got integer 1"},
    {"{\"enum\":[\"a\",1]}", "1", ""},
    {"{\"enum\":[\"a\",1]}", "true", "args.n: expected one of [\"a\",1], got boolean true"},
    {"{\"enum\":[1]}", "1.0", "args.n: expected one of [1], got number 1.0"},
    {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}", "null", ""},
    {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}", "\"x\"",
     "args.n: got string \"x\", which matches none of the allowed forms (args.n: expected "
     "integer, got string \"x\")"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "[1,2,3]", ""},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "[1,true]",
     "args.n[1]: expected integer, got boolean true"},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
     "\"items\":false,\"minItems\":2}",
     "[1,\"a\"]", ""},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
     "\"items\":false,\"minItems\":2}",
     "[1,\"a\",3]", "args.n: at most 2 items allowed, got 3"},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
     "\"items\":false,\"minItems\":2}",
     "[1]", "args.n: fewer than 2 items (1)"},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "[1,2]",
     "args.n[1]: expected string, got integer 2"},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}", "{\"a\":1,\"b\":2.5}",
     ""},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}", "{\"a\":\"x\"}",
     "args.n.a: expected number, got string \"x\""},
    {"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"],"
     "\"additionalProperties\":false}",
     "{}", "args.n.x: required and missing"},
    {"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"],"
     "\"additionalProperties\":false}",
     "{\"x\":1,\"y\":2}", "args.n.y: unknown argument (no parameter of that name)"},
    {"{\"minimum\":0,\"maximum\":10}", "11", "args.n: must be at most 10"},
    {"{\"minimum\":0,\"maximum\":10}", "-0.5", "args.n: must be at least 0"},
    {"{\"exclusiveMinimum\":0}", "0", "args.n: must be more than 0"},
    {"{\"const\":\"a\"}", "\"b\"", "args.n: expected \"a\", got string \"b\""},
    {"{}", "[1,{\"a\":null}]", ""},
    {"true", "1", ""},
    {"false", "1", "args.n: no value is allowed here"},
    {"{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1",
     "args.n: matches 2 of the forms of oneOf, not one"},
    {"{\"type\":\"integer\"}", "\"0123456789012345678901234567890123456789xyz\"",
     "args.n: expected integer, got string \"0123456789012345678901234567890123456789\"..."},
};

START_TEST(test_schema_cases)
{
	json_error_t je;
	json_t *schema = json_loads(cases[_i].schema, JSON_DECODE_ANY, &je);
	json_t *value = json_loads(cases[_i].value, JSON_DECODE_ANY, &je);
	ck_assert_ptr_nonnull(schema);
	ck_assert_ptr_nonnull(value);
	char err[512];
	int r = govex__schema_check(schema, value, "args.n", err, sizeof(err));
	if (!cases[_i].err[0]) {
		ck_assert_msg(r == 0, "case %d: %s", _i, err);
	} else {
		ck_assert_int_eq(r, 1);
		ck_assert_str_eq(err, cases[_i].err);
	}
	json_decref(schema);
	json_decref(value);
}
END_TEST

/* the function entry of an inspection with its input_schema (a stub of what the
 * inspection emits for `def f(n: int, xs: list[float] = None)`), and one without */
START_TEST(test_schema_check_args)
{
	json_error_t je;
	json_t *fn = json_loads(
	    "{\"name\":\"f\",\"input_schema\":{\"type\":\"object\",\"properties\":{"
	    "\"n\":{\"type\":\"integer\"},\"xs\":{\"anyOf\":[{\"type\":\"array\","
	    "\"items\":{\"type\":\"number\"}},{\"type\":\"null\"}]}},\"required\":[\"n\"],"
	    "\"additionalProperties\":false}}",
	    0, &je);
	ck_assert_ptr_nonnull(fn);
	char err[300];
	json_t *a = json_pack("{s:i, s:[f,i]}", "n", 1, "xs", 0.5, 2);
	ck_assert_int_eq(govex__schema_check_args(fn, a, err, sizeof(err)), 0);
	json_decref(a);
	a = json_pack("{s:f}", "n", 1.5);
	ck_assert_int_eq(govex__schema_check_args(fn, a, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "args.n: expected integer, got number 1.5");
	json_decref(a);
	a = json_pack("{s:b}", "n", 1);
	ck_assert_int_eq(govex__schema_check_args(fn, a, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "args.n: expected integer, got boolean true");
	json_decref(a);
	a = json_pack("{s:i, s:[s]}", "n", 1, "xs", "no");
	ck_assert_int_eq(govex__schema_check_args(fn, a, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "args.xs: got array, which matches none of the allowed forms "
			      "(args.xs[0]: expected number, got string \"no\")");
	json_decref(a);
	/* no input_schema (an older inspection): nothing to check here */
	json_object_del(fn, "input_schema");
	a = json_pack("{s:s}", "n", "str");
	ck_assert_int_eq(govex__schema_check_args(fn, a, err, sizeof(err)), 0);
	json_decref(a);
	json_decref(fn);
}
END_TEST

static Suite *values_suite(void)
{
	Suite *s = suite_create("values");
	TCase *tc = tcase_create("jsonout");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_real_repr_as_python, 0, ARRAY_SIZE(reprs));
	tcase_add_test(tc, test_real_repr_round_trip);
	tcase_add_test(tc, test_dumps_reals);
	tcase_add_test(tc, test_dumps_as_jansson);
	tcase_add_test(tc, test_within_budget);
	suite_add_tcase(s, tc);
	tc = tcase_create("schema");
	tcase_add_loop_test(tc, test_schema_cases, 0, ARRAY_SIZE(cases));
	tcase_add_test(tc, test_schema_check_args);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(values_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
