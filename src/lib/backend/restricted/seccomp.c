/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter: built with libseccomp once per runtime (it allocates), exported as
 * BPF into memory, and loaded by the program child with a bare prctl() just before
 * execve (nothing allocated after clone).
 *
 * Default allow, with denials of the kernel's big attack surfaces and of what would undo
 * the other walls (mounts, namespaces).  Only the native ABI: a syscall of another ABI
 * (i386 int 0x80, x32) kills the process, so numbers cannot be smuggled past the rules.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

#include "restricted.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Denied for every run, with EPERM. */
static const char *const denied[] = {
    /* other processes' memory */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    /* kernel keyrings */
    "keyctl",
    "add_key",
    "request_key",
    /* large attack surfaces an interpreter does not need */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "fanotify_init",
    "lookup_dcookie",
    "vm86",
    "vm86old",
    /* the mount table and namespaces (they would undo the sandbox) */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    /* the machine itself */
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "nfsservctl",
    "uselib",
    "_sysctl",
    "sysfs",
    "ustat",
    "vhangup",
    "personality",
};

static int add_name(scmp_filter_ctx ctx, uint32_t action, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0; /* not a syscall of this architecture */
	return seccomp_rule_add(ctx, action, nr, 0);
}

static int build(scmp_filter_ctx ctx, bool deny_net, bool deny_subprocess)
{
	int r;
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++) {
		r = add_name(ctx, eperm, denied[i]);
		if (r < 0)
			return r;
	}
	/* Typing into a terminal's input queue and the console's ioctls.  The command is
	 * compared on its low 32 bits: the kernel takes it as an unsigned int, so high bits
	 * set by the caller must not make it look different. */
	static const unsigned long ttycmds[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < ARRAY_SIZE(ttycmds); i++) {
		r = seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ttycmds[i]));
		if (r < 0)
			return r;
	}
	/* New namespaces through clone() flags (unshare and setns are denied above). */
	static const unsigned long nsflags[] = {CLONE_NEWNS,	 CLONE_NEWUSER, CLONE_NEWPID,
						CLONE_NEWNET,	 CLONE_NEWIPC,	CLONE_NEWUTS,
						CLONE_NEWCGROUP, CLONE_NEWTIME};
	for (size_t i = 0; i < ARRAY_SIZE(nsflags); i++) {
		r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, nsflags[i], nsflags[i]));
		if (r < 0)
			return r;
	}
	/* clone3 passes its flags in memory, where a filter cannot look: answer ENOSYS so
	 * that libc falls back to clone(), whose flags we can check. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0)
		return r;
	if (deny_net) {
		/* Only local (AF_UNIX) sockets; the network namespace has no interface but
		 * loopback, and this keeps raw, netlink and packet sockets out too. */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1,
				     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		if (r < 0)
			return r;
	}
	if (deny_subprocess) {
		/* No new process: fork, vfork, and clone without CLONE_THREAD.  Threads (clone
		 * with CLONE_THREAD) keep working. */
		r = add_name(ctx, eperm, "fork");
		if (r < 0)
			return r;
		r = add_name(ctx, eperm, "vfork");
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
		if (r < 0)
			return r;
	}
	return 0;
}

int rfilter_build(bool deny_net, bool deny_subprocess, struct rfilter *ret, struct govex_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return govex__err(err, ENOMEM, ENOMEM, "seccomp: cannot make a filter");
	int r;
	/* Native architecture only (seccomp_init adds it); any other ABI is killed.
	 * libseccomp also rejects x32 syscall numbers on an x86_64 filter with this
	 * action. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* we set it ourselves */
	if (r == 0)
		r = build(ctx, deny_net, deny_subprocess);
	int mfd = -1;
	if (r == 0) {
		mfd = memfd_create("govex-seccomp", MFD_CLOEXEC);
		if (mfd < 0)
			r = -errno;
	}
	if (r == 0)
		r = seccomp_export_bpf(ctx, mfd);
	seccomp_release(ctx);
	if (r < 0) {
		if (mfd >= 0)
			close(mfd);
		return govex__err(err, -r, -r, "seccomp: cannot build the filter: %s",
				  strerror(-r));
	}
	off_t size = lseek(mfd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		close(mfd);
		return govex__err(err, GOVEX_EINTERNAL, 0, "seccomp: exported filter of %lld bytes",
				  (long long)size);
	}
	struct sock_filter *insns = malloc((size_t)size);
	if (!insns || pread(mfd, insns, (size_t)size, 0) != (ssize_t)size) {
		free(insns);
		close(mfd);
		return govex__err(err, EIO, EIO, "seccomp: cannot read the exported filter");
	}
	close(mfd);
	ret->insns = insns;
	ret->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	return 0;
}

void rfilter_free(struct rfilter *f)
{
	free(f->insns);
	f->insns = NULL;
	f->len = 0;
}

int rfilter_load(const struct rfilter *f)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
}
