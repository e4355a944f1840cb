/* SPDX-License-Identifier: MIT */
/*
 * bench/floor.c: what the kernel work of one warm run costs by itself, with no Python, no
 * JSON and no host protocol: the floor under bench/mcp.py's figures (issue 12).
 *
 * One run here takes the steps a warm govex run takes (DESIGN.md "Warm runs"; zyg.c,
 * zyg_init.c, zyg_prog.c), in the same process shape, as plain system calls:
 *   the host:  three v1 cgroups made (memory, pids, cpuacct) with their limits; pipes;
 *   B:         clone3 of a process shaped like a worker template (--anon MB of written
 *              anonymous memory in --vmas mappings; --files mappings of a shared object,
 *              every fifth written, as data segments are) into new mount, PID, IPC and
 *              UTS namespaces (--init-vm: B shares that memory, CLONE_VM); its mounts
 *              made private; tmpfs on /tmp and on the workdir; proc (subset=pid); forks
 *   P:         joins the three cgroups, its own cgroup namespace and session, a seccomp
 *              guard, chdir, no_new_privs, a Landlock ruleset (the root's directories
 *              read-only, /tmp and the workdir writable), rlimits, the seccomp
 *              allowlist; waits for the go; copies --touch pages of the template's
 *              memory (a Python run writes refcounts all over it); writes its result and
 *              exits;
 *   B:         reaps it, kills and reaps the namespace, writes the report and exits;
 *   the host:  reads the report, reaps B, reads the cgroups' figures, removes them.
 * A warm run makes everything up to the go ahead of the request (a spare), so the
 * latency printed is from the go to the host's last rmdir; CPU is every CPU's busy time
 * (/proc/stat: kernel threads that tear down namespaces and cgroups count) over the runs.
 *
 *   govex-floor [--jobs N] [--runs N] [--anon MB] [--vmas N] [--files N] [--touch PAGES]
 *               [--mounts N] [--no-cgroups] [--init-vm]
 * The defaults are a Python 3.11 worker template's shape as measured (11 MB anonymous,
 * ~130 mappings, 13 mounts); a warm snippet's program made ~535 page faults under load
 * (its /proc/self/stat), so --touch 535 --jobs 2 is the floor under a burst.  CPU comes
 * from /proc/stat's clock ticks: use a few hundred runs.
 * Root only: it builds its own small root (tmpfs with the host's /usr, /lib, /lib64,
 * /bin, /etc bound read-only, --mounts mounts in all, as a template's mount namespace
 * has) in a mount namespace of its own, and its cgroups under the v1 hierarchies' roots.
 * Not a test: it checks nothing and never fails on a figure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NCG 3
static const char *const cg_ctl[NCG] = {"memory", "pids", "cpuacct"};

static struct {
	int jobs, runs, vmas, files, mounts;
	long anon_mb, touch;
	int cgroups, init_vm;
} opt = {.jobs = 1,
	 .runs = 300,
	 .vmas = 10,
	 .files = 120,
	 .mounts = 13,
	 .anon_mb = 11,
	 .touch = 0,
	 .cgroups = 1};

static int cg_root[NCG] = {-1, -1, -1}; /* this bench's parent cgroup in each hierarchy */
static int cg_top[NCG] = {-1, -1, -1};	/* each hierarchy's root */
static char **mem;			/* the template's anonymous memory, in --vmas pieces */
static size_t piece;
static struct sock_fprog guard, allow;

static void die(const char *what)
{
	fprintf(stderr, "govex-floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Every CPU's busy time so far, in seconds (/proc/stat's first line, opened before the
 * small root hides the host's proc). */
static int stat_fd = -1;
static double busy(void)
{
	char buf[512];
	unsigned long long v[8] = {0};
	ssize_t n = pread(stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		die("/proc/stat");
	buf[n] = '\0';
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		die("/proc/stat");
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static void put(int dir, const char *name, const char *val)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, strlen(val)) < 0)
		die(name);
	close(fd);
}

static void get(int dir, const char *name)
{
	char buf[256];
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf)) < 0)
		die(name);
	close(fd);
}

/* A filter of n comparisons (an allowlist's shape): arch, then nr against n numbers. */
static struct sock_fprog filter(int n, uint32_t miss)
{
	struct sock_filter *f = calloc((size_t)n + 5, sizeof(*f));
	if (!f)
		die("calloc");
	int k = 0;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) /* the numbers a Python run needs, and more */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)i,
						      (uint8_t)(n - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, miss);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return (struct sock_fprog){.len = (unsigned short)k, .filter = f};
}

static void landlock(void)
{
	struct landlock_ruleset_attr ra = {.handled_access_fs =
					       (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	if (rs < 0)
		die("landlock_create_ruleset");
	const char *ro[] = {"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc"};
	const char *rw[] = {"/tmp", "/work"};
	for (size_t i = 0; i < sizeof(ro) / sizeof(*ro) + sizeof(rw) / sizeof(*rw); i++) {
		bool w = i >= sizeof(ro) / sizeof(*ro);
		const char *p = w ? rw[i - sizeof(ro) / sizeof(*ro)] : ro[i];
		int fd = open(p, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct landlock_path_beneath_attr pb = {.allowed_access =
							    w ? ra.handled_access_fs
							      : LANDLOCK_ACCESS_FS_EXECUTE |
								    LANDLOCK_ACCESS_FS_READ_FILE |
								    LANDLOCK_ACCESS_FS_READ_DIR,
							.parent_fd = fd};
		if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			die("landlock_add_rule");
		close(fd);
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		die("landlock_restrict_self");
	close(rs);
}

/* P: the program's steps, the go, the page copies, the result. */
static __attribute__((noreturn)) void program(int *procs, int go, int res)
{
	for (int i = 0; opt.cgroups && i < NCG; i++)
		if (write(procs[i], "0", 1) != 1)
			_exit(10);
	if (unshare(CLONE_NEWCGROUP) < 0 || setsid() < 0)
		_exit(11);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &guard) < 0)
		_exit(12);
	if (chdir("/work") < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(13);
	landlock();
	const int lim[] = {RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_STACK};
	for (size_t i = 0; i < sizeof(lim) / sizeof(*lim); i++) {
		struct rlimit rl;
		getrlimit(lim[i], &rl);
		if (setrlimit(lim[i], &rl) < 0)
			_exit(14);
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &allow) < 0)
		_exit(15);
	char c;
	if (read(go, &c, 1) != 1)
		_exit(16);
	for (long i = 0; i < opt.touch; i++) {
		long pg = i * (long)(opt.anon_mb << 8) / (opt.touch ? opt.touch : 1);
		size_t off = (size_t)pg * 4096;
		mem[off / piece][off % piece]++;
	}
	if (write(res, "r", 1) != 1)
		_exit(17);
	_exit(0);
}

/* B: PID 1 of the run. */
static __attribute__((noreturn)) void init(int *procs, int go, int res, int rep)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777") < 0 ||
	    mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755") < 0 ||
	    (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") < 0 &&
	     mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
		_exit(20);
	pid_t c = fork();
	if (c == 0)
		program(procs, go, res);
	int st = 0, wst;
	pid_t p;
	while ((p = waitpid(-1, &wst, __WALL)) > 0 || (p < 0 && errno == EINTR))
		if (p == c)
			st = wst;
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, __WALL) > 0)
		;
	if (write(rep, &st, sizeof(st)) != (ssize_t)sizeof(st))
		_exit(21);
	_exit(0);
}

struct init_args {
	int *procs, go, res, rep;
};
#define STACK (256 * 1024)
static char *stack;

static int init_vm(void *arg)
{
	struct init_args *a = arg;
	init(a->procs, a->go, a->res, a->rep);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One job: runs one after the other; each run's go-to-end latency in lat. */
static void job(int id, double *lat)
{
	for (int r = 0; r < opt.runs; r++) {
		char name[64];
		int dir[NCG], procs[NCG];
		snprintf(name, sizeof(name), "run-%d-%d", id, r);
		for (int i = 0; opt.cgroups && i < NCG; i++) {
			if (mkdirat(cg_root[i], name, 0755) < 0)
				die("mkdir cgroup");
			dir[i] = openat(cg_root[i], name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dir[i] < 0)
				die("open cgroup");
			if (i == 0)
				put(dir[i], "memory.limit_in_bytes", "268435456");
			if (i == 1)
				put(dir[i], "pids.max", "64");
			procs[i] = openat(dir[i], "cgroup.procs", O_WRONLY | O_CLOEXEC);
			if (procs[i] < 0)
				die("cgroup.procs");
		}
		int go[2], res[2], rep[2];
		if (pipe2(go, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0 ||
		    pipe2(rep, O_CLOEXEC) < 0)
			die("pipe2");
		const int ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
		long b;
		/* (read by a B sharing this memory whenever it runs: alive until B is reaped) */
		struct init_args ia = {procs, go[0], res[1], rep[1]};
		if (opt.init_vm) {
			/* B sharing the template's memory: nothing of it copied or unmapped */
			b = clone(init_vm, stack + STACK, ns | CLONE_VM | SIGCHLD, &ia);
		} else {
			struct clone_args ca = {.flags = (uint64_t)ns, .exit_signal = SIGCHLD};
			b = syscall(SYS_clone3, &ca, sizeof(ca));
			if (b == 0)
				init(procs, go[0], res[1], rep[1]);
		}
		if (b < 0)
			die("clone");
		for (int i = 0; opt.cgroups && i < NCG; i++)
			close(procs[i]);
		close(go[0]);
		close(res[1]);
		close(rep[1]);
		usleep(2000); /* the spare is ready: every step before the go is taken */
		double t0 = now();
		char c = 0;
		int st = -1;
		ssize_t got = write(go[1], "g", 1) == 1 ? read(res[0], &c, 1) : -1;
		if (read(rep[0], &st, sizeof(st)) != (ssize_t)sizeof(st) || st != 0 || got != 1) {
			/* the program's exit codes: 10 cgroups, 11 cgroup namespace or session,
			 * 12 the guard, 13 chdir or no_new_privs, 14 rlimits, 15 the allowlist,
			 * 16 no go, 17 no result; 1 Landlock (die) */
			if (st > 0 && WIFEXITED(st))
				fprintf(stderr, "govex-floor: run %d: the program exited %d\n", r,
					WEXITSTATUS(st));
			else if (st > 0)
				fprintf(
				    stderr,
				    "govex-floor: run %d: the program was killed by signal %d\n", r,
				    WTERMSIG(st));
			else
				fprintf(stderr, "govex-floor: run %d: no report from the init\n",
					r);
			exit(1);
		}
		if (waitpid((pid_t)b, NULL, 0) < 0)
			die("waitpid");
		for (int i = 0; opt.cgroups && i < NCG; i++) {
			get(dir[i], i == 0   ? "memory.max_usage_in_bytes"
				    : i == 1 ? "pids.current"
					     : "cpuacct.usage");
			close(dir[i]);
			if (unlinkat(cg_root[i], name, AT_REMOVEDIR) < 0)
				die("rmdir cgroup");
		}
		lat[r] = now() - t0;
		close(go[1]);
		close(res[0]);
		close(rep[0]);
	}
}

/* A mount namespace with a small root, as a template's: tmpfs, the host's system
 * directories bound read-only, places for /tmp, the workdir and proc. */
static void small_root(void)
{
	const char *root = "/tmp"; /* covered in this namespace only: nothing left behind */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("unshare mount namespace");
	if (mount("tmpfs", root, "tmpfs", 0, "mode=0755") < 0)
		die(root);
	int n = 1;
	const char *sys[] = {"usr", "lib", "lib64", "bin", "etc"};
	char p[128], q[128];
	for (size_t i = 0; i < sizeof(sys) / sizeof(*sys); i++) {
		snprintf(p, sizeof(p), "/%s", sys[i]);
		snprintf(q, sizeof(q), "%s/%s", root, sys[i]);
		struct stat sb;
		if (lstat(p, &sb) < 0 || !S_ISDIR(sb.st_mode) || mkdir(q, 0755) < 0)
			continue;
		if (mount(p, q, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, q, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			die(q);
		n++;
	}
	const char *dirs[] = {"tmp", "work", "proc", "old"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++) {
		snprintf(q, sizeof(q), "%s/%s", root, dirs[i]);
		if (mkdir(q, 0755) < 0)
			die(q);
	}
	for (; n < opt.mounts; n++) { /* the template's other mounts */
		snprintf(q, sizeof(q), "%s/m%d", root, n);
		if (mkdir(q, 0755) < 0 || mount("tmpfs", q, "tmpfs", MS_RDONLY, "size=4k") < 0)
			die(q);
	}
	snprintf(q, sizeof(q), "%s/old", root);
	if (syscall(SYS_pivot_root, root, q) < 0 || chdir("/") < 0 ||
	    umount2("/old", MNT_DETACH) < 0)
		die("pivot_root");
}

static void cgroups(void)
{
	char p[128];
	for (int i = 0; i < NCG; i++) {
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s", cg_ctl[i]);
		int top = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (top < 0) {
			fprintf(stderr,
				"govex-floor: no v1 %s hierarchy (%s): run with --no-cgroups\n",
				cg_ctl[i], p);
			exit(2);
		}
		snprintf(p, sizeof(p), "govex-floor.%d", (int)getpid());
		if (mkdirat(top, p, 0755) < 0 ||
		    (cg_root[i] = openat(top, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			die("cgroup");
		cg_top[i] = top;
	}
}

static void cgroups_gone(void)
{
	char p[128];
	snprintf(p, sizeof(p), "govex-floor.%d", (int)getpid());
	for (int i = 0; i < NCG; i++) {
		/* a failed run's cgroup first (its processes end once its pipes closed) */
		DIR *d = cg_root[i] >= 0 ? fdopendir(dup(cg_root[i])) : NULL;
		for (struct dirent *de; d && (de = readdir(d));)
			if (strncmp(de->d_name, "run-", 4) == 0)
				for (int k = 0;
				     k < 100 &&
				     unlinkat(cg_root[i], de->d_name, AT_REMOVEDIR) < 0 &&
				     errno == EBUSY;
				     k++)
					usleep(10000);
		if (d)
			closedir(d);
	}
	for (int i = 0; i < NCG; i++)
		if (cg_root[i] >= 0 && unlinkat(cg_top[i], p, AT_REMOVEDIR) < 0)
			fprintf(stderr, "govex-floor: rmdir %s/%s: %s\n", cg_ctl[i], p,
				strerror(errno));
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--no-cgroups") == 0 || strcmp(a, "--init-vm") == 0) {
			*(a[2] == 'n' ? &opt.cgroups : &opt.init_vm) = a[2] != 'n';
			continue;
		}
		if (!v) {
			fprintf(stderr, "usage: govex-floor [--jobs N] [--runs N] [--anon MB] "
					"[--vmas N] [--files N] [--touch PAGES] [--mounts N] "
					"[--no-cgroups] [--init-vm]\n");
			return 2;
		}
		char *end;
		long x = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0') {
			fprintf(stderr, "govex-floor: %s: not a number: %s\n", a, v);
			return 2;
		}
		i++;
		if (strcmp(a, "--jobs") == 0)
			opt.jobs = (int)x;
		else if (strcmp(a, "--runs") == 0)
			opt.runs = (int)x;
		else if (strcmp(a, "--anon") == 0)
			opt.anon_mb = x;
		else if (strcmp(a, "--vmas") == 0)
			opt.vmas = (int)x;
		else if (strcmp(a, "--files") == 0)
			opt.files = (int)x;
		else if (strcmp(a, "--touch") == 0)
			opt.touch = x;
		else if (strcmp(a, "--mounts") == 0)
			opt.mounts = (int)x;
		else {
			fprintf(stderr, "govex-floor: unknown option %s\n", a);
			return 2;
		}
	}
	if (opt.jobs < 1 || opt.runs < 1 || opt.vmas < 1 || opt.files < 0 || opt.anon_mb < 0 ||
	    opt.touch < 0 || opt.touch > opt.anon_mb * 256) {
		fprintf(stderr, "govex-floor: bad option value\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "govex-floor: root only (mount namespaces, v1 cgroups)\n");
		return 2;
	}
	/* the template's anonymous memory (--vmas mappings, written: resident, private) and
	 * its shared objects (--files mappings of libc, read; every fifth one private and
	 * written, as a data segment is) */
	piece = (((size_t)opt.anon_mb << 20) / (size_t)opt.vmas + 4095) & ~(size_t)4095;
	mem = calloc((size_t)opt.vmas, sizeof(*mem));
	for (int i = 0; mem && i < opt.vmas; i++) {
		/* a guard page between mappings keeps them apart (no merge) */
		char *m = mmap(NULL, piece + 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || munmap(m + piece, 4096) < 0)
			die("mmap");
		memset(m, 1, piece);
		mem[i] = m;
	}
	/* a shared object's file (this program's own where no libc is found) */
	const char *libs[] = {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
			      "/lib64/libc.so.6", "/usr/lib/libc.so.6", "/proc/self/exe"};
	int lib = -1;
	struct stat lsb = {0};
	for (size_t i = 0; lib < 0 && i < sizeof(libs) / sizeof(*libs); i++)
		if ((lib = open(libs[i], O_RDONLY | O_CLOEXEC)) >= 0 &&
		    (fstat(lib, &lsb) < 0 || lsb.st_size < 16 * 4096)) {
			close(lib);
			lib = -1;
		}
	if (opt.files && lib < 0)
		die("no shared object to map");
	for (int i = 0; i < opt.files; i++) {
		bool w = i % 5 == 4;
		off_t at = ((off_t)(i % 8) * 8 * 4096) % (lsb.st_size / 4096 * 4096 - 8 * 4096);
		char *m = mmap(NULL, 8 * 4096 + 4096, w ? PROT_READ | PROT_WRITE : PROT_READ,
			       MAP_PRIVATE, lib, at);
		if (m == MAP_FAILED || munmap(m + 8 * 4096, 4096) < 0)
			die("mmap a shared object");
		for (int k = 0; k < 8; k++)
			if (w)
				m[k * 4096]++;
			else
				(void)*(volatile char *)(m + k * 4096);
	}
	if (lib >= 0)
		close(lib);
	stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		     -1, 0);
	if (stack == MAP_FAILED)
		die("mmap");
	guard = filter(8, SECCOMP_RET_ALLOW);
	allow = filter(180, SECCOMP_RET_ERRNO | EPERM);
	if ((stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC)) < 0)
		die("/proc/stat");
	if (opt.cgroups)
		cgroups();
	small_root();
	double *lat = mmap(NULL, sizeof(double) * (size_t)opt.runs * (size_t)opt.jobs,
			   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (lat == MAP_FAILED)
		die("mmap");
	double b0 = busy();
	for (int j = 0; j < opt.jobs; j++) {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p == 0) {
			job(j, lat + (size_t)j * (size_t)opt.runs);
			_exit(0);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	double b = busy() - b0;
	if (opt.cgroups)
		cgroups_gone();
	if (bad)
		return 1; /* (the failure is named above) */
	size_t n = (size_t)opt.runs * (size_t)opt.jobs;
	qsort(lat, n, sizeof(*lat), cmp);
	/* wall time includes each job's 2 ms wait for its spare: runs/s is not printed */
	printf("floor: %zu runs, %d jobs, template %ld MB in %d mappings and %d file mappings, %ld "
	       "page copies, %d mounts, cgroups %s, init %s\n",
	       n, opt.jobs, opt.anon_mb, opt.vmas, opt.files, opt.touch, opt.mounts,
	       opt.cgroups ? "v1 x3" : "none", opt.init_vm ? "sharing its memory" : "a copy");
	printf("  CPU per run (all CPUs): %.3f ms (so at most %.0f runs/s on %ld CPUs)\n",
	       b * 1000 / (double)n, (double)n / b * (double)sysconf(_SC_NPROCESSORS_ONLN),
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("  go to end (host's last rmdir): p50 %.3f ms, p90 %.3f ms\n", lat[n / 2] * 1000,
	       lat[n * 9 / 10] * 1000);
	return 0;
}
