/* SPDX-License-Identifier: MIT */
/*
 * govex mcp on stdio: newline-delimited JSON-RPC 2.0, stdout carries protocol only, logs
 * go to stderr.  One sink (stdout, through a writer thread) and one legacy session; the
 * dispatch is server.c's.  With --http, http.c serves instead (mcp_serve picks).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"
#include "mcp_serve.h"

#define READ_CHUNK 65536

/* A message waiting for the writer. */
struct outmsg {
	struct outmsg *next;
	char *text; /* ends with its newline, not NUL-terminated */
	size_t len;
};

/* Notifications (log lines, progress) are dropped while more than this waits to be
 * written: a client that stops reading never holds up a run (its live output is queued
 * by the run's supervisor) nor the server's memory.  Replies are never dropped. */
#define OUT_NOTIFY_MAX ((size_t)4 << 20)
/* At the end, how long the writer may take to hand over what is queued. */
#define OUT_DRAIN_MS 5000

struct stdio_out {
	struct mcp_sink sink; /* first: the sink is the writer's */
	/* stdout belongs to one writer thread; everyone else queues */
	pthread_mutex_t out_lock;
	pthread_cond_t out_more; /* a message queued, or closing */
	pthread_cond_t out_idle; /* the queue is empty */
	struct outmsg *out_head, **out_tail;
	size_t out_bytes;
	uint64_t out_dropped;
	bool out_broken, out_closing, out_writer;
	bool out_busy; /* the writer is in write(2) with a message taken off the queue */
	pthread_t out_thread;
};

/* ---------------------------------------------------------------- output */

void mcp_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fprintf(stderr, "govex mcp: %s\n", line);
}

/* Writes all of it to stdout unless stdout broke before; called by the writer only (or
 * by the caller when no writer thread could be started). */
static void write_out(struct stdio_out *srv, const char *p, size_t left)
{
	while (left && !srv->out_broken) {
		ssize_t w = write(1, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			mcp_log("stdout: %s; replies are dropped from now on", strerror(errno));
			srv->out_broken = true;
			break;
		}
		p += w;
		left -= (size_t)w;
	}
}

static void *writer(void *arg)
{
	struct stdio_out *srv = arg;
	pthread_mutex_lock(&srv->out_lock);
	for (;;) {
		while (!srv->out_head && !srv->out_closing)
			pthread_cond_wait(&srv->out_more, &srv->out_lock);
		struct outmsg *m = srv->out_head;
		if (!m)
			break; /* closing, and nothing left */
		srv->out_head = m->next;
		if (!srv->out_head)
			srv->out_tail = &srv->out_head;
		srv->out_busy = true;
		pthread_mutex_unlock(&srv->out_lock);
		write_out(srv, m->text, m->len); /* only this thread writes: no lock held */
		pthread_mutex_lock(&srv->out_lock);
		srv->out_busy = false;
		srv->out_bytes -= m->len;
		free(m->text);
		free(m);
		if (!srv->out_head)
			pthread_cond_broadcast(&srv->out_idle);
	}
	pthread_cond_broadcast(&srv->out_idle);
	pthread_mutex_unlock(&srv->out_lock);
	return NULL;
}

/* Queues one line (s: malloc'ed, NUL-terminated, taken).  A droppable one is dropped
 * while the queue is over OUT_NOTIFY_MAX.  Without a writer (its thread could not be
 * started), writes it now. */
static void enqueue(struct stdio_out *srv, char *s, bool droppable)
{
	size_t n = strlen(s);
	s[n] = '\n'; /* the NUL goes; the length is kept */
	struct outmsg *m = malloc(sizeof(*m));
	pthread_mutex_lock(&srv->out_lock);
	if (!srv->out_writer) {
		write_out(srv, s, n + 1);
	} else if (!m || srv->out_broken || (droppable && srv->out_bytes > OUT_NOTIFY_MAX)) {
		srv->out_dropped += droppable;
		if (!m && !droppable)
			mcp_log("out of memory: a reply is lost");
	} else {
		*m = (struct outmsg){.text = s, .len = n + 1};
		*srv->out_tail = m;
		srv->out_tail = &m->next;
		s = NULL;
		m = NULL;
		srv->out_bytes += n + 1;
		pthread_cond_signal(&srv->out_more);
	}
	pthread_mutex_unlock(&srv->out_lock);
	free(m);
	free(s);
}

static int writer_start(struct stdio_out *srv)
{
	srv->out_tail = &srv->out_head;
	int r = pthread_create(&srv->out_thread, NULL, writer, srv);
	if (r == 0)
		srv->out_writer = true;
	return -r;
}

/* Hands over what is queued (at most OUT_DRAIN_MS: a client that does not read gets no
 * more) and ends the writer. */
static void writer_stop(struct stdio_out *srv)
{
	if (!srv->out_writer)
		return;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OUT_DRAIN_MS / 1000;
	pthread_mutex_lock(&srv->out_lock);
	srv->out_closing = true;
	pthread_cond_signal(&srv->out_more);
	int r = 0;
	while ((srv->out_head || srv->out_busy) && r == 0)
		r = pthread_cond_timedwait(&srv->out_idle, &srv->out_lock, &until);
	bool drained = !srv->out_head && !srv->out_busy;
	uint64_t dropped = srv->out_dropped;
	pthread_mutex_unlock(&srv->out_lock);
	if (dropped)
		mcp_log("%llu notification%s dropped: the client was not reading",
			(unsigned long long)dropped, dropped == 1 ? "" : "s");
	if (drained) {
		pthread_join(srv->out_thread, NULL);
	} else {
		/* blocked in write(2) to a client that stopped reading: left to the exit */
		mcp_log("stdout: the client is not reading; the rest is left unsent");
		pthread_detach(srv->out_thread);
	}
	srv->out_writer = false;
}

static void stdio_send(struct mcp_sink *sink, char *text, bool notify)
{
	enqueue((struct stdio_out *)sink, text, notify);
}

/* ---------------------------------------------------------------- the stdio loop */

static void handle_line(struct mcp_server *srv, struct stdio_out *out, struct mcp_session *sess,
			const char *line, size_t len)
{
	struct mcp_msg m = {.sink = &out->sink, .sess = sess, .owner = sess, .client = "stdio"};
	mcp_dispatch(srv, &m, line, len);
}

static int sig_fd = -1; /* mcp_signals_catch()'s read end */

static void too_long(struct stdio_out *out)
{
	char msg[120];
	snprintf(msg, sizeof(msg), "Invalid Request: message longer than %zu bytes",
		 (size_t)MCP_LINE_MAX);
	mcp_reply_error(&out->sink, NULL, RPC_INVALID_REQUEST, msg,
			json_pack("{s:I}", "limit", (json_int_t)MCP_LINE_MAX));
	mcp_log("discarding a message longer than %zu bytes", (size_t)MCP_LINE_MAX);
}

/*
 * Reads newline-delimited messages from fd 0 with a bounded buffer: a line longer than
 * MCP_LINE_MAX is answered with -32600 once and the rest of it is discarded unread into
 * memory.  Returns the signal that stopped it, or 0 at end of input.
 */
static int serve(struct mcp_server *srv, struct stdio_out *out, struct mcp_session *sess)
{
	size_t cap = READ_CHUNK, len = 0, scanned = 0;
	char *buf = malloc(cap);
	bool discarding = false;
	int stop = 0;
	if (!buf)
		return 0;
	struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
	for (;;) {
		int pr = poll(pfd, 2, -1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			mcp_log("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents & POLLIN) {
			unsigned char c = 0;
			if (read(sig_fd, &c, 1) == 1) {
				stop = c;
				break;
			}
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (cap - len < READ_CHUNK && !discarding) {
			size_t ncap = cap * 2;
			if (ncap > MCP_LINE_MAX + READ_CHUNK)
				ncap = MCP_LINE_MAX + READ_CHUNK;
			if (ncap > cap) {
				char *nb = realloc(buf, ncap);
				if (!nb) {
					mcp_log("out of memory reading a message");
					break;
				}
				buf = nb;
				cap = ncap;
			}
		}
		ssize_t n = read(0, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			mcp_log("stdin: %s", strerror(errno));
			break;
		}
		if (n == 0) {
			if (len && !discarding) /* a last message without its newline */
				handle_line(srv, out, sess, buf, len);
			break;
		}
		len += (size_t)n;
		for (;;) {
			char *nl = memchr(buf + scanned, '\n', len - scanned);
			if (!nl) {
				scanned = len;
				break;
			}
			size_t ll = (size_t)(nl - buf);
			if (discarding) {
				discarding = false;
			} else if (ll > MCP_LINE_MAX) {
				too_long(out);
			} else {
				size_t tl = ll;
				if (tl && buf[tl - 1] == '\r')
					tl--;
				size_t k = 0;
				while (k < tl && (buf[k] == ' ' || buf[k] == '\t'))
					k++;
				if (k < tl)
					handle_line(srv, out, sess, buf, tl);
			}
			memmove(buf, nl + 1, len - ll - 1);
			len -= ll + 1;
			scanned = 0;
		}
		if (len > MCP_LINE_MAX || (discarding && len)) {
			if (!discarding) {
				too_long(out);
				discarding = true;
			}
			len = scanned = 0;
			/* give the memory back while the rest of the line streams by */
			if (cap > READ_CHUNK * 4) {
				char *nb = realloc(buf, READ_CHUNK * 4);
				if (nb) {
					buf = nb;
					cap = READ_CHUNK * 4;
				}
			}
		}
	}
	free(buf);
	return stop;
}

/* A client that goes away must not kill us with SIGPIPE mid-reply; SIGTERM, SIGINT and
 * SIGHUP stop the loop like the end of stdin does. */
int mcp_serve(const struct mcp_serve_options *o)
{
	if (o->http)
		return mcp_serve_http(o);
	struct mcp_server srv;
	struct stdio_out out;
	struct mcp_session sess = {.log_level = -1};
	memset(&srv, 0, sizeof(srv));
	memset(&out, 0, sizeof(out));
	out.sink.send = stdio_send;
	pthread_mutex_init(&out.out_lock, NULL);
	pthread_cond_init(&out.out_more, NULL);
	pthread_cond_init(&out.out_idle, NULL);
	int rc = 1, r;
	if ((r = writer_start(&out)) < 0)
		mcp_log("threads: %s (stdout written directly)", strerror(-r));
	if ((sig_fd = mcp_signals_catch()) < 0)
		mcp_log("pipe: %s", strerror(errno));
	/* one client, on its own pipe: as before, 256 calls may wait (64 per slot if more)
	 * and none is timed out unless --queue-timeout says so */
	size_t depth = (size_t)MCP_QUEUE_PER_SLOT * o->max_concurrent;
	struct mcp_queue_limits lim = {
	    .client_max = o->max_queued ? o->max_queued
			  : depth > 256 ? depth
					: 256,
	    .timeout_ms = o->queue_timeout_s ? (uint64_t)o->queue_timeout_s * 1000 : UINT64_MAX};
	if (sig_fd < 0 || mcp_server_init(&srv, o->policy, o->rt, o->modules, o->n_modules,
					  o->max_concurrent, &lim) < 0)
		goto out;
	size_t nt = json_array_size(srv.tools);
	mcp_log("serving %zu tool%s on stdio (policy %s, up to %u calls at once)", nt,
		nt == 1 ? "" : "s", govex_policy_digest(srv.policy), o->max_concurrent);
	int sig = serve(&srv, &out, &sess);
	/* the end of input, or a signal: cancel what runs, join, leave */
	mcp_pool_free(srv.pool);
	srv.pool = NULL;
	rc = sig ? 128 + sig : 0;
out:
	mcp_server_fini(&srv);
	mcp_signals_release();
	sig_fd = -1;
	free(sess.client_name);
	writer_stop(&out);
	if (!out.out_writer && !out.out_head) {
		pthread_cond_destroy(&out.out_more);
		pthread_cond_destroy(&out.out_idle);
		pthread_mutex_destroy(&out.out_lock);
	}
	return rc;
}
