/* SPDX-License-Identifier: MIT */
/*
 * Built only while src/lib/repl.c does not exist (meson.build): a repl run is refused
 * with a clear message instead of a link error.  repl.c replaces this file.
 */
#define _GNU_SOURCE
#include "repl.h"
#include "runtime.h"

int govex__repl_program(govex_runtime *rt, const struct govex_request *req,
			const struct govex__limits *limits, char ***ret_argv, char **ret_stdin,
			size_t *ret_len)
{
	(void)rt;
	(void)req;
	(void)limits;
	*ret_argv = NULL;
	*ret_stdin = NULL;
	*ret_len = 0;
	return -EOPNOTSUPP;
}

int govex__repl_finish(govex_runtime *rt, const struct govex__outcome *o, govex_result *res)
{
	(void)rt;
	(void)o;
	(void)res;
	return 0;
}
