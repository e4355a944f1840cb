/* SPDX-License-Identifier: MIT */
/* unit-filters: the seccomp programs compiled into the library at build time are byte for
 * byte what libseccomp builds now, and are the ones a runtime on this host uses. */
#define _GNU_SOURCE
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backend/restricted/restricted.h"

static void same(const struct rfilter *a, const struct rfilter *b, const char *what, int i)
{
	ck_assert_msg(a->len == b->len, "%s %d: %u instructions built in, %u built now", what, i,
		      (unsigned)a->len, (unsigned)b->len);
	ck_assert_msg(memcmp(a->insns, b->insns, (size_t)a->len * sizeof(*a->insns)) == 0,
		      "%s %d: the built-in program differs from the one built now", what, i);
}

START_TEST(builtin_equals_fresh)
{
	ck_assert_msg(govex__rbuiltin_filters.present,
		      "no built-in programs: this is a native build, the generator should run");
	for (int i = 0; i < 4; i++) {
		bool net = i & 2, sub = i & 1;
		struct rfilter f = {0}, g = {0}, bf = {0}, bg = {0};
		struct govex_error err = {0};
		ck_assert_int_eq(rfilter_build(net, sub, net || sub, &f, &err), 0);
		ck_assert_int_eq(rguard_build(sub, net, &g, &err), 0);
		same(&govex__rbuiltin_filters.pairs[i].filter, &f, "filter", i);
		same(&govex__rbuiltin_filters.pairs[i].guard, &g, "guard", i);
		/* and rfilters_get hands out copies of them on this host */
		ck_assert_int_eq(rfilters_get(net, sub, &bf, &bg, &err), 0);
		same(&bf, &f, "rfilters_get filter", i);
		same(&bg, &g, "rfilters_get guard", i);
		ck_assert_ptr_ne(bf.insns, govex__rbuiltin_filters.pairs[i].filter.insns);
		rfilter_free(&f);
		rfilter_free(&g);
		rfilter_free(&bf);
		rfilter_free(&bg);
	}
	ck_assert_msg(rfilters_builtin(), "this host (the build's) does not use the built-in "
					  "programs");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("filters");
	TCase *tc = tcase_create("builtin");
	tcase_add_test(tc, builtin_equals_fresh);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
