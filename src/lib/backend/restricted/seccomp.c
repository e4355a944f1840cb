/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter: built with libseccomp once per runtime (it allocates), exported as
 * BPF into memory, and loaded by the program child with a bare prctl() just before
 * execve (nothing allocated after clone).
 *
 * An ALLOWLIST: what is not listed here fails with ENOSYS, as a syscall this kernel does
 * not have (libc and CPython fall back or report it), so a syscall the kernel adds
 * tomorrow is closed today.  Only the native ABI: a syscall of another ABI (i386
 * int 0x80, x32) kills the process, so numbers cannot be smuggled past the rules.
 *
 * How the list was measured (tools/seccomp-measure.sh regenerates the measurement):
 * `strace -f -qq -e trace=all` over
 *   - `python -I -S -c pass`, `python -I -c 'import site'` and tools/seccomp-workload.py
 *     (files, xattrs, links, fifos, locks, mmap, threads, signals and timers,
 *     socketpair, select/poll/epoll, asyncio, subprocess and /bin/sh, fork,
 *     posix_spawn, pidfd, multiprocessing fork/spawn/forkserver, sqlite3 with WAL,
 *     ctypes callbacks, compression, hashing, zoneinfo, ...) under Debian's
 *     /usr/bin/python3.11 and pyenv's CPython 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1,
 *     3.13.0;
 *   - the stdlib's own tests under pyenv 3.12.1 (`-m test` test_json test_re
 *     test_threading test_tempfile test_os test_io test_subprocess test_sqlite3
 *     test_zlib test_hashlib test_datetime test_pathlib test_shutil test_signal
 *     test_select test_selectors test_mmap test_time test_random test_struct test_fcntl
 *     test_posix test_asyncio.{test_events,test_subprocess,test_unix_events}, and
 *     test_socket up to its AF_VSOCK test, which hangs here);
 * then reviewed: what the contract's item 7 names is never allowed whatever the
 * measurement says (io_uring, userfaultfd, bpf, perf_event_open, ptrace,
 * process_vm_*, kcmp, pidfd_getfd, keyrings, the mount family, unshare/setns, inotify,
 * fanotify, mq_*, listmount, statmount, lsm_*, futex_waitv, cachestat), nor what
 * needs a capability the sandbox has dropped (setuid family, chroot, module and clock
 * calls, sethostname, ...), nor what only a test of that very call used (execveat,
 * sched_setscheduler, sched_setparam, sched_rr_get_interval, sync), nor memfd_create:
 * nothing in the stdlib calls it but os.memfd_create itself (libffi's closures use an
 * anonymous mapping here), and a memfd is an executable file that no Landlock rule
 * covers (execve("/proc/self/fd/N") would run code the sandbox never granted).
 * Added beyond the measurement (178 names, November 2026, Debian 12, glibc 2.36): the
 * older forms of measured calls that other libcs and the programs a subprocess: allow
 * run may issue (stat, lstat, fstat, pipe, select, time, utime(s), nanosleep,
 * epoll_create, eventfd, ...), and what the program child itself issues between
 * loading the filter and execve (execve; on failure write and exit_group).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "restricted.h"

/* the first real-time signal glibc leaves to programs (SIGRTMIN) */
#define GOVEX_SIGRT_USER 34
/* prctl(PR_SET_MEMORY_MERGE), Linux 6.4 */
#define GOVEX_PR_SET_MEMORY_MERGE 67

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Allowed for every run, whatever the policy, without conditions.  Names this
 * architecture does not have (e.g. "open" on aarch64) are skipped. */
static const char *const base[] = {
    /* the program child after the filter: execve (and write, exit_group on failure) */
    "execve",
    "exit",
    "exit_group",
    "restart_syscall",
    /* file descriptors and I/O */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "lseek",
    "open",
    "creat",
    "openat",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "flock",
    "fsync",
    "fdatasync",
    "ftruncate",
    "truncate",
    "fallocate",
    "fadvise64",
    "sendfile",
    "copy_file_range",
    "splice",
    "pipe",
    "pipe2",
    /* paths and metadata */
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents64",
    "getcwd",
    "chdir",
    "fchdir",
    "mkdir",
    "mkdirat",
    "rmdir",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "utimensat",
    "mknod", /* FIFOs (os.mkfifo); device nodes need a capability the sandbox lacks */
    "mknodat",
    "umask",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    /* memory */
    "brk",
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "msync",
    /* the process, its threads and its identity (read-only) */
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "rseq",
    "prctl",
    "futex",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "getgroups",
    "getpgrp",
    "getpgid",
    "getsid",
    "setsid",
    "setpgid",
    "capget",
    "getpriority",
    "setpriority", /* nice(): lowering one's own priority */
    "sched_yield",
    "sched_getaffinity",
    "sched_setaffinity",
    "sched_getparam",
    "sched_getscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "getrlimit",
    "setrlimit",
    "prlimit64",
    "getrusage",
    "times",
    "sysinfo",
    "uname",
    "getrandom",
    "getcpu",
    /* waiting for children (subprocess: allow), a no-op otherwise */
    "wait4",
    "waitid",
    "pidfd_open",
    "pidfd_send_signal",
    /* signals and time */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigsuspend",
    "sigaltstack",
    "kill", /* reaches only this run's PID namespace */
    "tgkill",
    "tkill",
    "pause",
    "alarm",
    "setitimer",
    "getitimer",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    /* waiting for descriptors */
    "select",
    "pselect6",
    "poll",
    "ppoll",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    /* on sockets the run has (socketpair; socket() where the network is allowed) */
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
};

/* Allowed only when the policy allows the network. */
static const char *const network[] = {
    "socket", "connect", "bind", "listen", "accept", "accept4",
};

/* Allowed only when the policy allows subprocesses (clone is handled apart). */
static const char *const subprocess[] = {"fork", "vfork"};

/* Always allowed, with conditions on their arguments (below): clone (no namespace
 * flags; a thread only under subprocess: deny), ioctl (not TIOCSTI, TIOCLINUX),
 * socketpair (AF_UNIX stream or seqpacket under network: deny). */
static const char *const conditional[] = {"clone", "ioctl", "socketpair"};

static int add_name(scmp_filter_ctx ctx, uint32_t action, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0; /* not a syscall of this architecture */
	return seccomp_rule_add(ctx, action, nr, 0);
}

static int add_names(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = add_name(ctx, action, names[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

#define CLONE_NSFLAGS                                                                              \
	(CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
	 CLONE_NEWCGROUP | CLONE_NEWTIME)

/* socketpair() for AF_UNIX streams and seqpackets only (network: deny and filtered) */
static int unix_pairs_only(scmp_filter_ctx ctx)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1,
				 SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	if (r < 0)
		return r;
	static const int types[] = {SOCK_STREAM, SOCK_SEQPACKET};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 2,
				     SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, types[i]));
		if (r < 0)
			return r;
	}
	/* AF_UNIX of another type (datagram): refused, as EACCES */
	static const int other[] = {SOCK_DGRAM, SOCK_RAW, SOCK_RDM};
	for (size_t i = 0; i < ARRAY_SIZE(other); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 2,
				     SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, other[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Filtered networking (network: {"allow": [...]}): the run's namespace has only its
 * loopback, where govex's proxy listens (egress.h).  socket() is allowed for AF_INET and
 * AF_INET6 TCP streams and UDP datagrams (protocol 0 or IPPROTO_TCP/IPPROTO_UDP: a
 * client's, and a resolver's probe of a loopback that leads nowhere; no other protocol,
 * so that no SCTP, DCCP or other module is loaded on the run's behalf); AF_UNIX (a
 * pathname socket in a read root), netlink and packet sockets are refused with
 * EAFNOSUPPORT, raw and other types of AF_INET/AF_INET6 with EPERM, and anything else (a
 * family or protocol this list does not name, a domain with high bits set) gets the
 * allowlist's ENOSYS.  The rules compare whole 64-bit arguments: a value the kernel would
 * read as one of these but is not equal to it is refused.
 */
static int filtered_net(scmp_filter_ctx ctx)
{
	int r = 0;
	static const int fams[] = {AF_INET, AF_INET6};
	static const struct {
		int type, proto;
	} ok[] = {{SOCK_STREAM, 0},
		  {SOCK_STREAM, IPPROTO_TCP},
		  {SOCK_DGRAM, 0},
		  {SOCK_DGRAM, IPPROTO_UDP}};
	static const int bad_types[] = {SOCK_RAW, SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP, SOCK_PACKET};
	for (size_t f = 0; r == 0 && f < ARRAY_SIZE(fams); f++) {
		for (size_t t = 0; r == 0 && t < ARRAY_SIZE(ok); t++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 3,
					     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fams[f]),
					     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, ok[t].type),
					     SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)ok[t].proto));
		for (size_t t = 0; r == 0 && t < ARRAY_SIZE(bad_types); t++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2,
					     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fams[f]),
					     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, bad_types[t]));
	}
	static const int refused[] = {AF_UNIX, AF_NETLINK, AF_PACKET};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(refused); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)refused[i]));
	static const char *const calls[] = {"connect", "bind", "listen", "accept", "accept4"};
	if (r == 0)
		r = add_names(ctx, SCMP_ACT_ALLOW, calls, ARRAY_SIZE(calls));
	return r == 0 ? unix_pairs_only(ctx) : r;
}

static int build(scmp_filter_ctx ctx, bool deny_net, bool filtered, bool deny_subprocess,
		 bool notified)
{
	int r;
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	if ((r = add_names(ctx, SCMP_ACT_ALLOW, base, ARRAY_SIZE(base))) < 0)
		return r;
	/* ioctl: every command here; typing into a terminal's input queue and the
	 * console's (TIOCSTI, TIOCLINUX) are refused by the guard filter (rguard_build),
	 * since libseccomp lets an unconditional rule override conditional ones. */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 0)) < 0)
		return r;
	/* clone: never a new namespace (unshare and setns are not on the list either); under
	 * subprocess: deny only threads (CLONE_THREAD).  The rules are disjoint, so the
	 * order libseccomp evaluates them in does not matter. */
	static const unsigned long nsflags[] = {CLONE_NEWNS,	 CLONE_NEWUSER, CLONE_NEWPID,
						CLONE_NEWNET,	 CLONE_NEWIPC,	CLONE_NEWUTS,
						CLONE_NEWCGROUP, CLONE_NEWTIME};
	for (size_t i = 0; i < ARRAY_SIZE(nsflags); i++) {
		r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, nsflags[i], nsflags[i]));
		if (r < 0)
			return r;
	}
	if (deny_subprocess) {
		/* No new process: fork, vfork, and clone without CLONE_THREAD (EPERM, so that
		 * Python says PermissionError).  Threads keep working.  With the guard
		 * notifying them (notified: the run's guard, rguard_build), this filter lets
		 * them through to the guard, whose user notification the shim answers with
		 * EPERM and counts (a denial the result names); without a listener the kernel
		 * answers a notification with ENOSYS, so nothing ever starts. */
		uint32_t act = notified ? SCMP_ACT_ALLOW : eperm;
		if ((r = add_names(ctx, act, subprocess, ARRAY_SIZE(subprocess))) < 0)
			return r;
		r = seccomp_rule_add(ctx, act, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NSFLAGS | CLONE_THREAD, 0));
		if (r < 0)
			return r;
		r = seccomp_rule_add(
		    ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NSFLAGS | CLONE_THREAD, CLONE_THREAD));
	} else {
		if ((r = add_names(ctx, SCMP_ACT_ALLOW, subprocess, ARRAY_SIZE(subprocess))) < 0)
			return r;
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NSFLAGS, 0));
	}
	if (r < 0)
		return r;
	/* clone3 passes its flags in memory, where a filter cannot look: ENOSYS (as every
	 * syscall off the list), so that libc falls back to clone(), whose flags we check. */
	if (deny_net) {
		/* No socket() of any family: not the network (the namespace has only
		 * loopback anyway), nor netlink, packet or raw sockets, nor AF_UNIX, whose
		 * pathname sockets in a read root (an ssh or gpg agent's) would otherwise be
		 * reachable.  socketpair() stays for AF_UNIX streams and seqpackets
		 * (asyncio, multiprocessing): a datagram pair could send to a pathname
		 * socket by address (sendto, sendmsg), a stream or seqpacket cannot. */
		if (notified) {
			/* a family other than AF_UNIX goes on to the guard, which notifies the
			 * shim: refused there (EAFNOSUPPORT) and counted (execonce.c) */
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
			if (r == 0)
				r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
						     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		} else {
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket),
					     0);
		}
		if (r < 0)
			return r;
		if ((r = unix_pairs_only(ctx)) < 0)
			return r;
	} else if (filtered) {
		if ((r = filtered_net(ctx)) < 0)
			return r;
	} else {
		if ((r = add_names(ctx, SCMP_ACT_ALLOW, network, ARRAY_SIZE(network))) < 0)
			return r;
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 0)) < 0)
			return r;
	}
	return 0;
}

int govex__restricted_syscalls_allowed(void)
{
	/* syscall numbers the base list reaches on this architecture, distinct (a name may
	 * be an alias of another) */
	int nrs[ARRAY_SIZE(base) + ARRAY_SIZE(conditional)];
	int n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(base) + ARRAY_SIZE(conditional); i++) {
		const char *name =
		    i < ARRAY_SIZE(base) ? base[i] : conditional[i - ARRAY_SIZE(base)];
		int nr = seccomp_syscall_resolve_name(name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		bool dup = false;
		for (int k = 0; k < n && !dup; k++)
			dup = nrs[k] == nr;
		if (!dup)
			nrs[n++] = nr;
	}
	return n;
}

/* Exports ctx as BPF into ret (through a memfd: libseccomp writes to a descriptor). */
int rfilter_export(scmp_filter_ctx ctx, struct rfilter *ret, struct govex_error *err)
{
	int mfd = memfd_create("govex-seccomp", MFD_CLOEXEC);
	if (mfd < 0)
		return govex__err(err, errno, errno, "seccomp: memfd: %s", strerror(errno));
	int r = seccomp_export_bpf(ctx, mfd);
	if (r < 0) {
		close(mfd);
		return govex__err(err, -r, -r, "seccomp: cannot export the filter: %s",
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

static int filter_build(bool deny_net, bool filtered, bool deny_subprocess, bool notified,
			struct rfilter *ret, struct govex_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	if (!ctx)
		return govex__err(err, ENOMEM, ENOMEM, "seccomp: cannot make a filter");
	int r;
	/* Native architecture only (seccomp_init adds it); any other ABI is killed.
	 * libseccomp also rejects x32 syscall numbers on an x86_64 filter with this
	 * action. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* we set it ourselves */
	if (r == 0) /* a binary tree of syscall numbers rather than a linear chain */
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r == 0)
		r = build(ctx, deny_net, filtered, deny_subprocess, notified);
	if (r == 0)
		r = rfilter_export(ctx, ret, err);
	else
		r = govex__err(err, -r, -r, "seccomp: cannot build the filter: %s", strerror(-r));
	seccomp_release(ctx);
	return r;
}

int rfilter_build(bool deny_net, bool deny_subprocess, bool notified, struct rfilter *ret,
		  struct govex_error *err)
{
	return filter_build(deny_net, false, deny_subprocess, notified, ret, err);
}

/*
 * The guard: a second, default-allow filter stacked on the allowlist (the kernel runs
 * both; the stricter answer wins).  It refuses ioctl TIOCSTI and TIOCLINUX and fcntl
 * F_SETPIPE_SZ (comparing the command's low 32 bits as the kernel reads them), modes
 * with set-user-ID or set-group-ID bits, and opting into same-page merging; with
 * exec_once it turns execve and execveat into user notifications answered by the shim
 * (execonce.c).  With filtered (filtered networking) it also refuses sending with
 * MSG_FASTOPEN: sendto, sendmsg and sendmmsg with that flag connect a TCP socket without
 * connect(), past Landlock's connect rule (which hooks connect() only), so the only way
 * a run's socket reaches a port stays connect(), which Landlock checks.
 */
static int guard_build(bool exec_once, bool notify_net, bool filtered, struct rfilter *ret,
		       struct govex_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return govex__err(err, ENOMEM, ENOMEM, "seccomp: cannot make a filter");
	/* another ABI is killed by the allowlist; this one only sees the native calls */
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* a binary tree of syscall numbers: loading a filter, the kernel runs it for every
	 * syscall number to find those it always allows (its action cache), which a chain
	 * of a score of numbers makes several times slower */
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	static const unsigned long ttycmds[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(ttycmds); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ttycmds[i]));
	/* Growing a pipe's buffer: pipe buffers are counted per user (pipe-user-pages-soft),
	 * and an unprivileged caller's runs share its uid, so a run holding big pipes would
	 * shrink every new pipe of the caller on the host.  At the default size the run's
	 * descriptor limit keeps it far below that.  (The cgroup accounts the memory.) */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, F_SETPIPE_SZ));
	/* No set-user-ID or set-group-ID file: a file made in a write root is a host file,
	 * and nosuid holds only inside (as root another user would run it as this slot's
	 * uid; not root, as the caller).  Every way to set those bits: chmod family, mkdir
	 * (S_ISGID), mknod, and creating opens (O_CREAT, O_TMPFILE).  openat2 passes its
	 * mode in memory: it is not on the allowlist. */
	static const struct {
		const char *name;
		unsigned mode_arg; /* the mode's argument */
		int flags_arg;	   /* the open flags' argument, or -1 */
	} modes[] = {
	    {"chmod", 1, -1}, {"fchmod", 1, -1},  {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
	    {"mkdir", 1, -1}, {"mkdirat", 2, -1}, {"mknod", 1, -1},    {"mknodat", 2, -1},
	    {"creat", 1, -1}, {"open", 2, 1},	  {"openat", 3, 2},
	};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	static const unsigned long creating[] = {O_CREAT, __O_TMPFILE};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(modes); i++) {
		int nr = seccomp_syscall_resolve_name(modes[i].name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue; /* not a syscall of this architecture */
		for (size_t b = 0; r == 0 && b < ARRAY_SIZE(bits); b++) {
			struct scmp_arg_cmp mode = {modes[i].mode_arg, SCMP_CMP_MASKED_EQ, bits[b],
						    bits[b]};
			if (modes[i].flags_arg < 0) {
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, mode);
				continue;
			}
			for (size_t c = 0; r == 0 && c < ARRAY_SIZE(creating); c++) {
				struct scmp_arg_cmp flags = {(unsigned)modes[i].flags_arg,
							     SCMP_CMP_MASKED_EQ, creating[c],
							     creating[c]};
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, flags,
						     mode);
			}
		}
	}
	/* Real-time signals sent to oneself and left pending: kill() of one is queued
	 * whatever RLIMIT_SIGPENDING says, and the queue is counted per user, so a run of
	 * an unprivileged caller could leave the caller's own processes none.  glibc
	 * itself only sends 32 and 33 (thread cancellation, setxid). */
	static const struct {
		const char *name;
		unsigned sig_arg;
	} kills[] = {{"kill", 1},
		     {"tkill", 1},
		     {"tgkill", 2},
		     {"rt_sigqueueinfo", 1},
		     {"rt_tgsigqueueinfo", 2},
		     {"pidfd_send_signal", 1}};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(kills); i++) {
		int nr = seccomp_syscall_resolve_name(kills[i].name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		struct scmp_arg_cmp sig = {kills[i].sig_arg, SCMP_CMP_GE, GOVEX_SIGRT_USER, 0};
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, sig);
	}
	/* Kernel same-page merging opted into (prctl PR_SET_MEMORY_MERGE, madvise
	 * MADV_MERGEABLE): where ksmd runs, merged pages are a side channel between
	 * processes, other runs included. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, GOVEX_PR_SET_MEMORY_MERGE));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(madvise), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffULL, MADV_MERGEABLE));
	if (r == 0 && exec_once)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execve), 0);
	if (r == 0 && exec_once)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execveat), 0);
	/* a new process under subprocess: deny (the allowlist lets these through to here
	 * only then): refused by the shim, and counted */
	for (size_t i = 0; r == 0 && exec_once && i < ARRAY_SIZE(subprocess); i++) {
		int nr = seccomp_syscall_resolve_name(subprocess[i]);
		if (nr != __NR_SCMP_ERROR && nr >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
	}
	if (r == 0 && exec_once)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	if (r == 0 && notify_net)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	/* the flags' argument of each (the kernel reads an int: bit 29 is in it) */
	static const struct {
		const char *name;
		unsigned flags_arg;
	} sends[] = {{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}};
	for (size_t i = 0; r == 0 && filtered && i < ARRAY_SIZE(sends); i++) {
		int nr = seccomp_syscall_resolve_name(sends[i].name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		struct scmp_arg_cmp fo = {sends[i].flags_arg, SCMP_CMP_MASKED_EQ, MSG_FASTOPEN,
					  MSG_FASTOPEN};
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, fo);
	}
	if (r == 0)
		r = rfilter_export(ctx, ret, err);
	else
		r = govex__err(err, -r, -r, "seccomp: cannot build the guard filter: %s",
			       strerror(-r));
	seccomp_release(ctx);
	return r;
}

int rguard_build(bool exec_once, bool notify_net, struct rfilter *ret, struct govex_error *err)
{
	return guard_build(exec_once, notify_net, false, ret, err);
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

/* ---- the compiled filters, built in -----------------------------------------------------
 *
 * libseccomp 2.5 snapshots its rule database on every rule added and builds the binary
 * tree afterwards: about 0.7 ms per runtime, a tenth of a one-shot run's own overhead.
 * The two programs depend only on deny_net and deny_subprocess, this code, the
 * libseccomp it links, the architecture and the kernel's seccomp API level.  So the build
 * compiles all four pairs with this very code (filters_gen.c, a build step) into the
 * library, tagged with the API level and libseccomp version it had; a runtime whose
 * libseccomp and API level are the same uses them, any other builds them as before.
 * Nothing is read back from a file: a program that decides what a run may call comes
 * from govex's own binary (DESIGN "Trust boundaries"), never from a cache someone
 * could write.
 */

static int filter_copy(const struct rfilter *src, struct rfilter *ret)
{
	size_t n = (size_t)src->len * sizeof(struct sock_filter);
	ret->insns = malloc(n);
	if (!ret->insns)
		return -ENOMEM;
	memcpy(ret->insns, src->insns, n);
	ret->len = src->len;
	return 0;
}

/* The built-in pair for these inputs, when this runtime is what the build was. */
static const struct rbuiltin_pair *builtin_pair(bool deny_net, bool deny_subprocess)
{
	const struct rbuiltin_filters *b = &govex__rbuiltin_filters;
	if (!b->present)
		return NULL;
	const struct scmp_version *v = seccomp_version();
	if (!v || v->major != b->major || v->minor != b->minor || v->micro != b->micro ||
	    seccomp_arch_native() != b->arch || seccomp_api_get() != b->api)
		return NULL;
	return &b->pairs[(deny_net ? 2 : 0) + (deny_subprocess ? 1 : 0)];
}

int rfilters_get(bool deny_net, bool deny_subprocess, struct rfilter *filter, struct rfilter *guard,
		 struct govex_error *err)
{
	const struct rbuiltin_pair *b = builtin_pair(deny_net, deny_subprocess);
	if (b) {
		if (filter_copy(&b->filter, filter) < 0)
			return govex__err(err, ENOMEM, ENOMEM, "seccomp: out of memory");
		if (filter_copy(&b->guard, guard) < 0) {
			rfilter_free(filter);
			return govex__err(err, ENOMEM, ENOMEM, "seccomp: out of memory");
		}
		return 0;
	}
	int r = rfilter_build(deny_net, deny_subprocess, deny_net || deny_subprocess, filter, err);
	if (r >= 0 && (r = rguard_build(deny_subprocess, deny_net, guard, err)) < 0)
		rfilter_free(filter);
	return r;
}

int rfilters_get_filtered(bool deny_subprocess, struct rfilter *filter, struct rfilter *guard,
			  struct govex_error *err)
{
	int r = filter_build(false, true, deny_subprocess, deny_subprocess, filter, err);
	if (r >= 0 && (r = guard_build(deny_subprocess, false, true, guard, err)) < 0)
		rfilter_free(filter);
	return r;
}

bool rfilters_builtin(void)
{
	return builtin_pair(false, false) != NULL;
}
