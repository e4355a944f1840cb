/* SPDX-License-Identifier: MIT */
/*
 * The kernel called directly: zs() and the z_* wrappers return the kernel's result, a
 * negative errno on failure, and write nothing else (no errno, no lock taken).  What
 * code that runs in a CLONE_VM child of the template (zyg.c: a run's init shares the
 * template's memory, its thread's errno and libc's state) and the inner layers
 * (layers.c, which that code may call) use instead of libc's wrappers.
 */
#ifndef GOVEX_ZSYS_H
#define GOVEX_ZSYS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- a run's init calls the kernel directly -----------------------------------------------
 * A run's init (B) shares the template's memory (zyg.c: clone with CLONE_VM): the template
 * thread's errno, and libc's state, are B's too, and the template (and the other inits)
 * run meanwhile.  So B calls no libc function that writes errno or takes a lock: these
 * wrappers return the kernel's result, a negative errno on failure, and write nothing
 * else.  Elsewhere than on x86-64 (the one architecture these were tested on) B is a
 * copy of the template (as fork makes one) and they are libc's syscall(), as safe
 * there. */
#if defined(__x86_64__)
#define ZYG_SHARED_INIT 1
static inline long zs(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#define ZYG_SHARED_INIT 0
static inline long zs(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f);
	return r < 0 ? -errno : r;
}
#endif
#define ZS0(n)		      zs((n), 0, 0, 0, 0, 0, 0)
#define ZS1(n, a)	      zs((n), (long)(a), 0, 0, 0, 0, 0)
#define ZS2(n, a, b)	      zs((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define ZS3(n, a, b, c)	      zs((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define ZS4(n, a, b, c, d)    zs((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define ZS5(n, a, b, c, d, e) zs((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define ZS6(n, a, b, c, d, e, f)                                                                   \
	zs((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static inline ssize_t z_read(int fd, void *b, size_t n)
{
	return ZS3(SYS_read, fd, b, n);
}
static inline ssize_t z_write(int fd, const void *b, size_t n)
{
	return ZS3(SYS_write, fd, b, n);
}
static inline ssize_t z_pread(int fd, void *b, size_t n, off_t at)
{
	return ZS4(SYS_pread64, fd, b, n, at);
}
static inline int z_close(int fd)
{
	return (int)ZS1(SYS_close, fd);
}
static inline int z_open(const char *path, int flags, mode_t mode)
{
	return (int)ZS4(SYS_openat, AT_FDCWD, path, flags, mode);
}
/* poll(2) as ppoll (ms < 0: no timeout) */
static inline int z_poll(struct pollfd *p, nfds_t n, int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	return (int)ZS5(SYS_ppoll, p, n, ms < 0 ? NULL : &ts, NULL, 8);
}
static inline int z_fcntl(int fd, int cmd, long arg)
{
	return (int)ZS3(SYS_fcntl, fd, cmd, arg);
}
static inline int z_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return (int)ZS4(SYS_rt_sigprocmask, how, set, old, 8);
}
static inline pid_t z_wait(pid_t pid, int *st, int options)
{
	return (pid_t)ZS4(SYS_wait4, pid, st, options, NULL);
}
static inline int z_kill(pid_t pid, int sig)
{
	return (int)ZS2(SYS_kill, pid, sig);
}
static inline pid_t z_getpid(void)
{
	return (pid_t)ZS0(SYS_getpid);
}
static inline int z_mkdirat(int dir, const char *path, mode_t mode)
{
	return (int)ZS3(SYS_mkdirat, dir, path, mode);
}
static inline __attribute__((noreturn)) void z_exit(int code)
{
	for (;;)
		ZS1(SYS_exit_group, code);
}

#endif
