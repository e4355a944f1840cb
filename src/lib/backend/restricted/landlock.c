/* SPDX-License-Identifier: MIT */
/*
 * Landlock: a second wall over the same rules as the mount plan.  If a bind were ever
 * wrong (a path that should not be there), Landlock still denies what the plan does not
 * grant.  The ABI is negotiated at run time and rights are masked to what it knows; the
 * kernel headers of the build host may be older than the kernel, so the constants and
 * the attribute struct are our own (restricted.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "restricted.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

int rlandlock_abi(void)
{
	long r = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return r < 0 ? -errno : (int)r;
}

static uint64_t fs_mask(int abi)
{
	if (abi >= 5)
		return (1ULL << 16) - 1;
	if (abi >= 3)
		return (1ULL << 15) - 1;
	if (abi == 2)
		return (1ULL << 14) - 1;
	return (1ULL << 13) - 1;
}

bool rlandlock_complete(int abi)
{
	/* every file right we grant or deny (through IOCTL_DEV), TCP, and both scopes */
	return abi >= 6;
}

size_t rlandlock_attr(int abi, bool deny_net, uint64_t ret[3])
{
	size_t size = sizeof(uint64_t);
	ret[0] = fs_mask(abi);
	ret[1] = ret[2] = 0;
	if (abi >= 4) {
		size = 2 * sizeof(uint64_t);
		if (deny_net)
			ret[1] = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	}
	if (abi >= 6) {
		size = 3 * sizeof(uint64_t);
		/* no abstract unix sockets or signals beyond the sandbox's own processes */
		ret[2] = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
	}
	return size;
}

/* The plan's rules, for rlayers (layers.c masks them to the handled rights). */
static int plan_next(const void *ctx, size_t *it, struct rlayers_rule *ret)
{
	const struct rplan *plan = ctx;
	if (*it >= plan->n)
		return 0;
	const struct rmount *m = &plan->m[(*it)++];
	*ret = (struct rlayers_rule){.access = m->ll_access, .path = m->path};
	return 1;
}

void rlandlock_fill(struct rlayers *l, int abi, const struct rplan *plan, bool deny_net)
{
	l->ll_size = abi > 0 ? rlandlock_attr(abi, deny_net, l->ll_attr) : 0;
	l->ll_file_rights = LL_FILE_RIGHTS;
	l->ll_next = plan_next;
	l->ll_ctx = plan;
}

int rlandlock_apply(int abi, const struct rplan *plan, bool deny_net, enum govex__step *ret_step)
{
	struct rlayers l = {.notify_sock = -1};
	rlandlock_fill(&l, abi, plan, deny_net);
	return rlayers_landlock(&l, ret_step);
}
