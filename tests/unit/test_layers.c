/* SPDX-License-Identifier: MIT */
/* unit-layers: the pure parts of a run's inner layers (layers.c), which the cold shim and
 * a warm run's init share: the answer to a guard notification and the rlimits of a run. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "backend/restricted/restricted.h"

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

static bool answer(int nr, bool exec_once, uint64_t max, struct rdenials *d,
		   struct seccomp_notif_resp *resp)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	req.id = 0x1234 + (uint64_t)nr;
	req.data.nr = nr;
	memset(resp, 0xff, sizeof(*resp)); /* every field is the answer's */
	bool full = rlayers_answer(&req, exec_once, max, d, resp);
	ck_assert_uint_eq(resp->id, req.id);
	ck_assert_int_eq(resp->val, 0);
	return full;
}

/* A cold run's shim (exec_once): the interpreter's own execve continues, any later one
 * fails as with no listener (ENOSYS); a socket EAFNOSUPPORT, a fork EPERM, each counted. */
START_TEST(answer_cold)
{
	struct rdenials d = {0};
	struct seccomp_notif_resp r;
	ck_assert(!answer(SYS_execve, true, 100, &d, &r));
	ck_assert_uint_eq(r.flags, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
	ck_assert_int_eq(r.error, 0);
	ck_assert_uint_eq(d.exec_denied, 0);
	ck_assert(!answer(SYS_execveat, true, 100, &d, &r));
	ck_assert_int_eq(r.error, -ENOSYS);
	ck_assert_uint_eq(r.flags, 0);
	ck_assert_uint_eq(d.exec_denied, 1);
	ck_assert(!answer(SYS_socket, true, 100, &d, &r));
	ck_assert_int_eq(r.error, -EAFNOSUPPORT);
	ck_assert_uint_eq(d.net_denied, 1);
	ck_assert(!answer(SYS_clone, true, 100, &d, &r));
	ck_assert_int_eq(r.error, -EPERM);
	ck_assert(!answer(SYS_fork, true, 100, &d, &r));
	ck_assert(!answer(SYS_vfork, true, 100, &d, &r));
	ck_assert_uint_eq(d.exec_denied, 4);
	/* anything else the guard might send: refused, not counted */
	ck_assert(!answer(SYS_getpid, true, 100, &d, &r));
	ck_assert_int_eq(r.error, -ENOSYS);
	ck_assert_uint_eq(d.exec_denied + d.net_denied, 5);
}
END_TEST

/* A warm run's init: the interpreter runs already, so the first execve is a later one. */
START_TEST(answer_warm)
{
	struct rdenials d = {0};
	struct seccomp_notif_resp r;
	ck_assert(!answer(SYS_execve, false, 100, &d, &r));
	ck_assert_int_eq(r.error, -ENOSYS);
	ck_assert_uint_eq(r.flags, 0);
	ck_assert_uint_eq(d.exec_denied, 1);
	ck_assert(!answer(SYS_socket, false, 100, &d, &r));
	ck_assert_int_eq(r.error, -EAFNOSUPPORT);
}
END_TEST

/* The listener closes once max refusals are answered; the counts saturate. */
START_TEST(answer_bounded)
{
	struct rdenials d = {0};
	struct seccomp_notif_resp r;
	for (int i = 0; i < 2; i++)
		ck_assert(!answer(SYS_socket, false, 3, &d, &r));
	ck_assert(answer(SYS_clone, false, 3, &d, &r));
	ck_assert(answer(SYS_execve, false, 0, &(struct rdenials){0}, &r));
	d = (struct rdenials){.net_denied = UINT32_MAX, .exec_denied = UINT32_MAX};
	ck_assert(answer(SYS_socket, false, RDENIALS_ANSWERED_MAX, &d, &r));
	ck_assert(answer(SYS_vfork, false, RDENIALS_ANSWERED_MAX, &d, &r));
	ck_assert_uint_eq(d.net_denied, UINT32_MAX);
	ck_assert_uint_eq(d.exec_denied, UINT32_MAX);
}
END_TEST

/* The rlimits both sides set (the warm spec carries this list): core and queued signals
 * always, the others where the policy sets them. */
START_TEST(rlimits_of_a_run)
{
	struct rlayers_rlimit rl[RLAYERS_RLIMIT_MAX];
	struct govex__limits none = {0};
	ck_assert_uint_eq(rlayers_rlimits(&none, rl), 2);
	ck_assert_int_eq(rl[0].resource, RLIMIT_CORE);
	ck_assert_uint_eq(rl[0].soft, 1);
	ck_assert_uint_eq(rl[0].hard, 1);
	ck_assert_int_eq(rl[0].step, GOVEX_STEP_RLIMIT_CORE);
	ck_assert_int_eq(rl[1].resource, RLIMIT_SIGPENDING);
	ck_assert_uint_eq(rl[1].hard, 256);
	struct govex__limits all = {
	    .cpu_ms = 1500, .memory_bytes = 1 << 28, .file_size_bytes = 4096, .open_files = 64};
	ck_assert_uint_eq(rlayers_rlimits(&all, rl), RLAYERS_RLIMIT_MAX);
	ck_assert_int_eq(rl[2].resource, RLIMIT_CPU);
	ck_assert_uint_eq(rl[2].soft, 2); /* whole seconds, rounded up; SIGKILL 1 s later */
	ck_assert_uint_eq(rl[2].hard, 3);
	ck_assert_int_eq(rl[3].resource, RLIMIT_AS);
	ck_assert_uint_eq(rl[3].soft, 1 << 28);
	ck_assert_int_eq(rl[4].resource, RLIMIT_FSIZE);
	ck_assert_int_eq(rl[4].step, GOVEX_STEP_RLIMIT_FSIZE);
	ck_assert_int_eq(rl[5].resource, RLIMIT_NOFILE);
	ck_assert_uint_eq(rl[5].hard, 64);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("layers");
	tcase_add_test(tc, answer_cold);
	tcase_add_test(tc, answer_warm);
	tcase_add_test(tc, answer_bounded);
	tcase_add_test(tc, rlimits_of_a_run);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
