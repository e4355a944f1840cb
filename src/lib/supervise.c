/* SPDX-License-Identifier: MIT */
/*
 * The host side of a run, shared by every backend: feed stdin, drain and bound
 * stdout/stderr, keep the deadline, honour cancellation, collect the shim's report.
 *
 * One ppoll() loop with the deadline computed from CLOCK_MONOTONIC at each turn: no
 * periodic tick.  Supervisor memory is constant: output beyond the bound is read into a
 * scratch buffer and only counted.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "internal.h"

#define SCRATCH (64 * 1024)
/* Output past a stream's bound is read and counted, never kept; but reading costs the
 * host CPU that no limit of the run accounts, so a run that writes this much more than
 * its bound on one stream is ended (output_limit). */
#define DRAIN_PAST_BOUND (16ULL << 20)
/* After the kill request, the shim reports within milliseconds; if it does not, something
 * is deeply wrong (a process stuck in the kernel): stop waiting after this long. */
#define KILL_GRACE_NS (10ULL * 1000000000ULL)

void govex__outcome_release(struct govex__outcome *o)
{
	free(o->out.data);
	free(o->err.data);
	free(o->frame.data);
	o->out.data = o->err.data = o->frame.data = NULL;
	o->outfiles = govex__outfiles_free(o->outfiles);
	json_decref(o->egress);
	o->egress = NULL;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Live output: the caller's callback and the stream it is told (1 stdout, 2 stderr). */
struct live {
	govex_output_fn fn;
	void *userdata;
	int stream;
};

/* Reads what is available from fd into b (up to max kept) and counts the rest; what is
 * kept is also passed to the live callback, in the order read.  Returns 1 on EOF or error
 * (fd closed), 0 otherwise. */
static int drain(int *fd, struct govex__buf *b, uint64_t max, uint64_t *total, bool *truncated,
		 char *scratch, const struct live *live)
{
	/* Bounded work per call so one flooding stream cannot starve the loop. */
	for (int rounds = 0; rounds < 64; rounds++) {
		/* keep up to max bytes in b (grown by doubling); the rest is read into the
		 * scratch buffer and only counted, as is what a failed growth could not keep */
		if (b->len < max && b->len == b->cap) {
			size_t nc = b->cap ? b->cap * 2 : 4096;
			if (nc > max)
				nc = (size_t)max;
			char *nd = realloc(b->data, nc + 1);
			if (nd) {
				b->data = nd;
				b->cap = nc;
			}
		}
		char *dst = scratch;
		size_t room = SCRATCH;
		if (b->len < max && b->cap > b->len) {
			dst = b->data + b->len;
			room = b->cap - b->len;
		}
		ssize_t n = read(*fd, dst, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			close_fd(fd);
			return 1;
		}
		if (n == 0) {
			close_fd(fd);
			return 1;
		}
		*total += (uint64_t)n;
		if (dst == scratch) {
			*truncated = true;
		} else {
			b->len += (size_t)n;
			if (live->fn)
				live->fn(live->userdata, live->stream, dst, (size_t)n);
		}
	}
	return 0;
}

/*
 * Reads the response frame: the 8-byte big-endian length is checked against the bound
 * before any payload is read, so an oversized or hostile frame costs nothing.  A call's
 * worker first sends one empty frame, the moment the module's code starts: recorded in
 * o->frame_module_started, it is not the response.  Returns 1 when the fd is done with
 * (closed).
 */
static int frame_read(int *fd, struct govex__outcome *o, uint64_t max, char *scratch)
{
	struct govex__buf *b = &o->frame;
	for (;;) {
		size_t want;
		if (b->len < 8) {
			want = 8 - b->len;
		} else {
			uint64_t n = 0;
			for (int i = 0; i < 8; i++)
				n = (n << 8) | (unsigned char)b->data[i];
			if (n > max) {
				o->frame_state = GOVEX_FRAME_OVERSIZED;
				close_fd(fd);
				return 1;
			}
			if (n == 0 && !o->frame_module_started) {
				/* the first empty frame: the worker's "module starts" mark
				 * (worker.py); a second one is an empty response, which no
				 * JSON parser accepts */
				o->frame_module_started = true;
				b->len = 0;
				continue;
			}
			want = (size_t)(8 + n - b->len);
			if (want == 0) {
				/* complete: anything more is a protocol violation */
				ssize_t k = read(*fd, scratch, 1);
				if (k < 0 && (errno == EAGAIN || errno == EINTR))
					return 0;
				o->frame_state = k == 0 ? GOVEX_FRAME_OK : GOVEX_FRAME_TRAILING;
				close_fd(fd);
				return 1;
			}
		}
		if (b->cap < b->len + want) {
			size_t nc = b->len + want;
			if (nc < 4096)
				nc = 4096;
			char *nd = realloc(b->data, nc + 1);
			if (!nd) {
				o->frame_state = GOVEX_FRAME_OVERSIZED;
				close_fd(fd);
				return 1;
			}
			b->data = nd;
			b->cap = nc;
		}
		ssize_t k = read(*fd, b->data + b->len, want > SCRATCH ? SCRATCH : want);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return 0;
		if (k <= 0) {
			o->frame_state = b->len == 0 ? GOVEX_FRAME_NONE : GOVEX_FRAME_TRUNCATED;
			close_fd(fd);
			return 1;
		}
		b->len += (size_t)k;
	}
}

/* ---- shims left to exit ------------------------------------------------------------ */

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
/* Enough for the runs of a busy server between two reaps; past it, the host waits. */
#define REAP_MAX 64

static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static int reap_fds[REAP_MAX];
static size_t reap_n;

/* Whether the shim behind pidfd is reaped now (or was by someone else: ECHILD). */
static bool reap_one(int pidfd, bool block)
{
	siginfo_t si;
	int r;
	do {
		memset(&si, 0, sizeof(si));
		r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si,
			   WEXITED | __WALL | (block ? 0 : WNOHANG));
	} while (r < 0 && errno == EINTR);
	return r < 0 || si.si_pid != 0;
}

static void reap_locked(bool block)
{
	size_t w = 0;
	for (size_t i = 0; i < reap_n; i++) {
		if (reap_one(reap_fds[i], block))
			close(reap_fds[i]);
		else
			reap_fds[w++] = reap_fds[i];
	}
	reap_n = w;
}

void govex__reap_pending(bool block)
{
	pthread_mutex_lock(&reap_lock);
	if (!block) {
		reap_locked(false);
		pthread_mutex_unlock(&reap_lock);
		return;
	}
	/* waited for outside the lock: other runs go on meanwhile */
	int fds[REAP_MAX];
	size_t n = reap_n;
	memcpy(fds, reap_fds, n * sizeof(int));
	reap_n = 0;
	pthread_mutex_unlock(&reap_lock);
	for (size_t i = 0; i < n; i++) {
		reap_one(fds[i], true);
		close(fds[i]);
	}
}

void govex__reap_leave_to_exit(void)
{
	pthread_mutex_lock(&reap_lock);
	for (size_t i = 0; i < reap_n; i++)
		close(reap_fds[i]);
	reap_n = 0;
	pthread_mutex_unlock(&reap_lock);
}

/* Hands the shim, our child not yet reaped (so pid is still it), to the pending list:
 * false when it cannot be (no pidfd on this kernel, the list full): wait for it then. */
static bool reap_later(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0); /* (close-on-exec, always) */
	if (fd < 0)
		return false;
	pthread_mutex_lock(&reap_lock);
	if (reap_n == REAP_MAX)
		reap_locked(false);
	bool ok = reap_n < REAP_MAX;
	if (ok)
		reap_fds[reap_n++] = fd;
	pthread_mutex_unlock(&reap_lock);
	if (!ok)
		close(fd);
	return ok;
}

static int64_t remaining_ns(uint64_t deadline)
{
	uint64_t now = govex__now_ns();
	return now >= deadline ? 0 : (int64_t)(deadline - now);
}

/*
 * The host side of one run: feeds stdin, drains and bounds stdout/stderr, enforces the
 * deadline and cancellation by closing kill_fd, and waits for the shim's report on
 * report_fd (and child setup errors on err_fd).  Owns every fd but cancel_fd, and
 * scratch (allocated before the shim was made: nothing here allocates but the output
 * buffers, whose failed growth only loses output).
 */
struct supervise {
	int stdin_fd, stdout_fd, stderr_fd;
	int report_fd, err_fd, kill_fd;
	int frame_fd;	    /* call mode: read end of the response descriptor, or -1 */
	uint64_t frame_max; /* largest payload accepted from frame_fd */
	int cancel_fd;	    /* borrowed */
	pid_t shim_pid;	    /* 0: none (the backend's launch hook) */
	/* the backend's last resort in place of SIGKILL to the shim (NULL: that) */
	void (*last_resort)(void *ctx);
	bool report_final; /* govex__shim_ops */
	void (*outputs_done)(void *ctx);
	void *ctx;
	uint64_t wall_ms;
	uint64_t stdout_max, stderr_max;
	const char *stdin_data;
	size_t stdin_len, in_off;
	uint64_t start_ns; /* CLOCK_MONOTONIC at launch */
	char *scratch;	   /* SCRATCH bytes */
	struct live live_out, live_err;
	/* what came back */
	struct govex__shim_report rep;
	struct govex__child_error ce;
	size_t rep_len, ce_len;
	/* the kill request: sent (kill_fd closed), why, and how long the shim has */
	bool killed;
	enum govex_termination kill_reason;
	uint64_t deadline, kill_deadline;
};

/* Closing the kill pipe is the request: the shim kills and reaps the whole tree, then
 * reports. */
static void request_kill(struct supervise *s, enum govex_termination why)
{
	s->kill_reason = why;
	close_fd(&s->kill_fd);
	close_fd(&s->stdin_fd);
	s->killed = true;
	s->kill_deadline = govex__now_ns() + KILL_GRACE_NS;
}

static void feed_stdin(struct supervise *s, short revents)
{
	if (revents & (POLLERR | POLLHUP)) {
		close_fd(&s->stdin_fd);
		return;
	}
	size_t chunk = s->stdin_len - s->in_off;
	if (chunk > SCRATCH)
		chunk = SCRATCH;
	ssize_t w = write(s->stdin_fd, s->stdin_data + s->in_off, chunk);
	if (w > 0)
		s->in_off += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		close_fd(&s->stdin_fd); /* EPIPE: the program stopped reading; that is its
					 * right */
	if (s->in_off == s->stdin_len)
		close_fd(&s->stdin_fd);
}

static void read_child_error(struct supervise *s)
{
	ssize_t r = read(s->err_fd, (char *)&s->ce + s->ce_len, sizeof(s->ce) - s->ce_len);
	if (r > 0)
		s->ce_len += (size_t)r;
	else if (r == 0 || (errno != EAGAIN && errno != EINTR))
		close_fd(&s->err_fd);
	if (s->ce_len == sizeof(s->ce))
		close_fd(&s->err_fd);
}

static void read_report(struct supervise *s)
{
	ssize_t r;
	if (s->rep_len < sizeof(s->rep))
		r = read(s->report_fd, (char *)&s->rep + s->rep_len, sizeof(s->rep) - s->rep_len);
	else
		r = read(s->report_fd, s->scratch, 64);
	if (r > 0)
		s->rep_len += (size_t)r;
	else if (r == 0 || (errno != EAGAIN && errno != EINTR))
		close_fd(&s->report_fd);
}

enum { P_FRAME, P_IN, P_OUT, P_ERR, P_REP, P_CE, P_CANCEL, P_N };

/* One turn of the loop: polls what is open until the next deadline and handles what is
 * ready.  Returns false when the loop is over. */
static bool supervise_turn(struct supervise *s, struct govex__outcome *o)
{
	struct pollfd p[P_N];
	int idx[P_N];
	int np = 0;
	const struct {
		int fd;
		short ev;
	} want[P_N] = {
	    [P_FRAME] = {s->frame_fd, POLLIN},
	    [P_IN] = {s->stdin_fd, POLLOUT},
	    [P_OUT] = {s->stdout_fd, POLLIN},
	    [P_ERR] = {s->stderr_fd, POLLIN},
	    [P_REP] = {s->report_fd, POLLIN},
	    [P_CE] = {s->report_final ? -1 : s->err_fd, POLLIN},
	    [P_CANCEL] = {s->killed ? -1 : s->cancel_fd, POLLIN},
	};
	for (int i = 0; i < P_N; i++) {
		idx[i] = -1;
		if (want[i].fd >= 0) {
			idx[i] = np;
			p[np++] = (struct pollfd){.fd = want[i].fd, .events = want[i].ev};
		}
	}
#define REVENTS(i) (idx[i] >= 0 ? p[idx[i]].revents : 0)
	int64_t left = remaining_ns(s->killed ? s->kill_deadline : s->deadline);
	struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
	int n = ppoll(p, (nfds_t)np, &ts, NULL);
	if (n < 0 && errno != EINTR)
		return false;

	if (!s->killed && remaining_ns(s->deadline) == 0) {
		request_kill(s, GOVEX_TERM_TIMEOUT);
		return true;
	}
	if (!s->killed && n > 0 && (REVENTS(P_CANCEL) & POLLIN)) {
		request_kill(s, GOVEX_TERM_CANCELLED);
		return true;
	}
	if (s->killed && remaining_ns(s->kill_deadline) == 0) {
		/* The shim did not report in time.  Last resort: kill the shim (its tree goes
		 * with it for the restricted backend's PID namespace), or what the backend
		 * has in place of one. */
		if (s->last_resort)
			s->last_resort(s->ctx);
		else if (s->shim_pid > 0)
			kill(s->shim_pid, SIGKILL);
		return false;
	}
	if (n <= 0)
		return true;
	if (REVENTS(P_IN))
		feed_stdin(s, REVENTS(P_IN));
	if (REVENTS(P_FRAME))
		frame_read(&s->frame_fd, o, s->frame_max, s->scratch);
	if (REVENTS(P_OUT))
		drain(&s->stdout_fd, &o->out, s->stdout_max, &o->out_bytes, &o->out_truncated,
		      s->scratch, &s->live_out);
	if (REVENTS(P_ERR))
		drain(&s->stderr_fd, &o->err, s->stderr_max, &o->err_bytes, &o->err_truncated,
		      s->scratch, &s->live_err);
	if (!s->killed && (o->out_bytes > s->stdout_max + DRAIN_PAST_BOUND ||
			   o->err_bytes > s->stderr_max + DRAIN_PAST_BOUND))
		request_kill(s, GOVEX_TERM_OUTPUT_LIMIT);
	if (REVENTS(P_CE))
		read_child_error(s);
	if (REVENTS(P_REP))
		read_report(s);
#undef REVENTS
	if (s->outputs_done && s->stdout_fd < 0 && s->stderr_fd < 0 && s->frame_fd < 0 &&
	    s->rep_len < sizeof(s->rep)) {
		s->outputs_done(s->ctx);
		s->outputs_done = NULL;
	}
	return true;
}

static void supervise(struct supervise *s, struct govex__outcome *o,
		      struct govex__shim_report *ret_report, bool *ret_got_report)
{
	sigset_t pipemask, oldmask;
	bool sigpipe_was_pending;
	s->deadline = s->start_ns + s->wall_ms * 1000000ULL;

	/* Writing to a pipe the program closed raises SIGPIPE in this thread.  The library
	 * installs no handlers: block it here and consume it if our write raised it. */
	sigemptyset(&pipemask);
	sigaddset(&pipemask, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipemask, &oldmask);
	{
		sigset_t pend;
		sigpending(&pend);
		sigpipe_was_pending = sigismember(&pend, SIGPIPE);
	}

	if (s->stdin_fd >= 0 && s->stdin_len == 0)
		close_fd(&s->stdin_fd);
	int *fds[] = {&s->stdin_fd,  &s->stdout_fd, &s->stderr_fd,
		      &s->report_fd, &s->err_fd,    &s->frame_fd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			set_nonblock(*fds[i]);

	/* Done when the shim has reported (report pipe at EOF, or, report_final, the whole
	 * report read) and both output pipes are at EOF: every writer is dead by then, since
	 * the shim reaps the whole tree before it reports. */
	while ((s->report_fd >= 0 && !(s->report_final && s->rep_len >= sizeof(s->rep))) ||
	       s->stdout_fd >= 0 || s->stderr_fd >= 0 || (s->err_fd >= 0 && !s->report_final) ||
	       s->frame_fd >= 0)
		if (!supervise_turn(s, o))
			break;
	/* report_final: what the setup-error pipe holds is all there is by now (written
	 * before the writer's end, which came before the report) */
	while (s->report_final && s->err_fd >= 0) {
		size_t had = s->ce_len;
		read_child_error(s);
		if (s->err_fd >= 0 && s->ce_len == had && errno != EINTR)
			break;
	}

	/* Discard a SIGPIPE that our own stdin write raised, then restore the mask. */
	if (!sigpipe_was_pending) {
		sigset_t pend;
		sigpending(&pend);
		if (sigismember(&pend, SIGPIPE)) {
			struct timespec zero = {0, 0};
			sigtimedwait(&pipemask, NULL, &zero);
		}
	}
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		close_fd(fds[i]);
	close_fd(&s->kill_fd);
	/* A shim that reported is left to exit; any other is waited for: its end (and, for
	 * a namespaced one, its PID namespace's) is the run's end. */
	if (s->shim_pid > 0 &&
	    !(s->report_final && s->rep_len >= sizeof(s->rep) && reap_later(s->shim_pid))) {
		int st;
		while (waitpid(s->shim_pid, &st, __WALL) < 0 && errno == EINTR)
			;
	}

	o->wall_ms = (govex__now_ns() - s->start_ns) / 1000000ULL;
	if (o->out.data)
		o->out.data[o->out.len] = '\0';
	if (o->err.data)
		o->err.data[o->err.len] = '\0';

	*ret_got_report = s->rep_len >= sizeof(s->rep);
	*ret_report = s->rep;
	o->term = GOVEX_TERM_NONE;
	if (s->ce_len == sizeof(s->ce)) {
		o->term = GOVEX_TERM_LAUNCH_FAILED;
		snprintf(o->failed_step, sizeof(o->failed_step), "%s",
			 govex__step_name((enum govex__step)s->ce.step));
		o->failed_errno = s->ce.err;
	} else if (s->killed && (!*ret_got_report || s->rep.killed)) {
		o->term = s->kill_reason;
	}
}

/* Shared interpretation of a shim report for backends; term already set by supervise
 * for launch failures and kills. */
void govex__outcome_from_report(struct govex__outcome *o, const struct govex__limits *l,
				const struct govex__shim_report *rep, bool got_report)
{
	if (got_report) {
		o->cpu_ms = (uint64_t)(rep->cpu_us / 1000);
		o->max_rss_bytes = (uint64_t)rep->max_rss_kb * 1024ULL;
		o->net_denied = rep->net_denied;
		o->exec_denied = rep->exec_denied;
	}
	if (o->term != GOVEX_TERM_NONE)
		return;
	if (!got_report) {
		o->term = GOVEX_TERM_LAUNCH_FAILED;
		snprintf(o->failed_step, sizeof(o->failed_step), "%s",
			 govex__step_name(GOVEX_STEP_SUPERVISOR));
		o->failed_errno = EPIPE;
		return;
	}
	int st = rep->wait_status;
	if (rep->cgroup_oom) {
		o->term = GOVEX_TERM_MEMORY_LIMIT;
		o->signal = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
	} else if (WIFEXITED(st)) {
		o->term = GOVEX_TERM_EXITED;
		o->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		o->signal = sig;
		o->term = GOVEX_TERM_SIGNALED;
		/* RLIMIT_CPU sends SIGXCPU at the soft limit and SIGKILL at the hard one. */
		if (l->cpu_ms &&
		    (sig == SIGXCPU || (sig == SIGKILL && o->cpu_ms + 50 >= l->cpu_ms)))
			o->term = GOVEX_TERM_CPU_LIMIT;
	} else {
		o->term = GOVEX_TERM_LAUNCH_FAILED;
		snprintf(o->failed_step, sizeof(o->failed_step), "%s",
			 govex__step_name(GOVEX_STEP_WAIT));
	}
}

/* ---- shared by the backends -------------------------------------------------------- */

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

void govex__pipes_close(struct govex__pipes *p)
{
	int *all[] = {p->in, p->out, p->err, p->ce, p->rep, p->kill};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		close_pair(all[i]);
}

int govex__pipes_open(struct govex__pipes *p)
{
	int *all[] = {p->in, p->out, p->err, p->ce, p->rep, p->kill};
	int r;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		all[i][0] = all[i][1] = -1;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if ((r = govex__pipe(all[i], 0)) < 0) {
			govex__pipes_close(p);
			return r;
		}
	/* larger output pipes: fewer wake-ups when the program floods its output */
	fcntl(p->out[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(p->err[0], F_SETPIPE_SZ, 1 << 20);
	return 0;
}

int govex__launch_failed(const struct govex__launch *l, struct govex__outcome *o,
			 struct govex_error *err, enum govex__step step, int e, const char *msg)
{
	if (l->extra_fd >= 0)
		close(l->extra_fd);
	if (l->frame_fd >= 0)
		close(l->frame_fd);
	o->term = GOVEX_TERM_LAUNCH_FAILED;
	snprintf(o->failed_step, sizeof(o->failed_step), "%s", govex__step_name(step));
	o->failed_errno = e;
	snprintf(o->failed_message, sizeof(o->failed_message), "%s", msg ? msg : "");
	if (msg)
		return govex__err(err, e, e, "%s", msg);
	return govex__err(err, e, e, "launch: %s: %s", govex__step_name(step), strerror(e));
}

/* The host side of a run once the shim exists: closes the child's ends of p and the
 * launch's extra_fd, supervises the run to its end, lets the backend amend the shim's
 * report and interprets it.  scratch is a buffer of SCRATCH bytes it may use. */
static void supervise_run(const struct govex__launch *l, struct govex__pipes *p, pid_t shim,
			  uint64_t start_ns, char *scratch, struct govex__outcome *o,
			  const struct govex__shim_ops *ops, void *ctx)
{
	int *child_ends[] = {&p->in[0], &p->out[1], &p->err[1], &p->ce[1], &p->rep[1], &p->kill[0]};
	for (size_t i = 0; i < ARRAY_SIZE(child_ends); i++)
		close_fd(child_ends[i]);
	if (l->extra_fd >= 0)
		close(l->extra_fd); /* the child has it now: EOF comes when it is done */
	struct supervise s = {
	    .stdin_fd = p->in[1],
	    .stdout_fd = p->out[0],
	    .stderr_fd = p->err[0],
	    .report_fd = p->rep[0],
	    .err_fd = p->ce[0],
	    .kill_fd = p->kill[1],
	    .frame_fd = l->frame_fd,
	    .frame_max = l->frame_max,
	    .cancel_fd = l->cancel_fd,
	    .shim_pid = shim,
	    .last_resort = ops->last_resort,
	    .report_final = ops->report_final,
	    .outputs_done = ops->outputs_done,
	    .ctx = ctx,
	    .wall_ms = l->limits->wall_ms,
	    .stdout_max = l->limits->stdout_bytes,
	    .stderr_max = l->limits->stderr_bytes,
	    .stdin_data = l->stdin_data,
	    .stdin_len = l->stdin_len,
	    .start_ns = start_ns,
	    .scratch = scratch,
	    .live_out = {l->on_output, l->output_userdata, 1},
	    .live_err = {l->on_output, l->output_userdata, 2},
	};
	/* s owns the host ends now */
	p->in[1] = p->out[0] = p->err[0] = p->rep[0] = p->ce[0] = p->kill[1] = -1;
	struct govex__shim_report rep;
	bool got = false;
	supervise(&s, o, &rep, &got);
	if (got && ops->amend)
		ops->amend(ctx, &rep);
	govex__outcome_from_report(o, l->limits, &rep, got);
}

int govex__run_shim(const struct govex__launch *l, struct govex__pipes *pipes,
		    const struct govex__shim_ops *ops, void *ctx, struct govex__outcome *o,
		    struct govex_error *err)
{
	govex__reap_pending(false); /* earlier runs' shims that are gone by now */
	/* Everything the supervisor needs exists before the shim does: once it runs, no
	 * failure may leave it without a deadline. */
	char *scratch = malloc(SCRATCH);
	if (!scratch)
		return govex__launch_failed(l, o, err, GOVEX_STEP_SUPERVISOR, ENOMEM, NULL);
	int r = ops->pipes_open ? 0 : govex__pipes_open(pipes);
	if (r < 0) {
		free(scratch);
		return govex__launch_failed(l, o, err, GOVEX_STEP_PIPE, -r, NULL);
	}
	uint64_t start = govex__now_ns();
	pid_t pid = 0;
	enum govex__step step = ops->fork_step;
	if (ops->launch) {
		/* no shim process: the backend hands the run over from this thread */
		r = ops->launch(ctx, start + l->limits->wall_ms * 1000000ULL, l->cancel_fd, &step);
	} else {
		pid = govex__clone(ops->clone_flags);
		if (pid == 0)
			ops->shim(ctx);
		r = govex__neg_errno(pid);
	}
	if (r < 0) {
		govex__pipes_close(pipes);
		free(scratch);
		return govex__launch_failed(l, o, err, step, -r, NULL);
	}
	if (ops->after_fork)
		ops->after_fork(ctx);
	if (ops->after_clone && (r = ops->after_clone(ctx, o, err)) < 0) {
		if (pid > 0) { /* (a launch hook has no shim process here) */
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
				;
		}
		govex__pipes_close(pipes);
		free(scratch);
		return r;
	}
	if (l->sweep)
		govex__sweep_start(l->sweep);
	/* supervise_run takes (closes) every host end */
	supervise_run(l, pipes, pid, start, scratch, o, ops, ctx);
	free(scratch);
	return 0;
}
