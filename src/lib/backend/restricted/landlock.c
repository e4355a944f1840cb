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
#define LL_RULE_PATH_BENEATH 1

/* The newest layout (ABI 6); older kernels are given a shorter size. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

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

int rlandlock_apply(int abi, const struct rplan *plan, bool deny_net, enum govex__step *ret_step)
{
	*ret_step = GOVEX_STEP_LANDLOCK;
	if (abi <= 0)
		return 0;
	struct ll_ruleset_attr ra = {0};
	uint64_t a[3];
	size_t size = rlandlock_attr(abi, deny_net, a);
	ra.handled_access_fs = a[0];
	ra.handled_access_net = a[1];
	ra.scoped = a[2];
	_cleanup_close_ int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, size, 0);
	if (rs < 0)
		return -errno;
	for (size_t i = 0; i < plan->n; i++) {
		const struct rmount *m = &plan->m[i];
		uint64_t acc = m->ll_access & ra.handled_access_fs;
		if (!acc)
			continue;
		_cleanup_close_ int fd = open(m->path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue; /* not there (left out of the plan): nothing to allow */
		struct stat st;
		if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
			/* only file rights apply to a file */
			acc &= LL_FILE_RIGHTS;
		struct ll_path_beneath_attr pb = {.allowed_access = acc, .parent_fd = fd};
		int r = govex__neg_errno(
		    syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0));
		if (r < 0)
			return r;
	}
	return govex__neg_errno(syscall(SYS_landlock_restrict_self, rs, 0));
}
