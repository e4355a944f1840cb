/* SPDX-License-Identifier: MIT */
/*
 * The egress proxy's event loop (egress.h).  One thread per proxy polls the listening
 * socket and every connection; nothing on it blocks: sockets are nonblocking, connects
 * are bounded by the connect timeout, and names are resolved on short-lived threads of
 * their own (getaddrinfo cannot be interrupted), which report through a pipe.  A
 * resolution still running when the proxy stops is abandoned: its thread frees what it
 * holds when getaddrinfo returns, so stop() never waits for DNS.
 *
 * A connection goes: REQ (reading the head, bounded by the idle timeout from accept) ->
 * RESOLVE -> CONNECT -> RELAY, or to RESPOND (an HTTP error, then LINGER: the rest of the
 * client's bytes read and dropped so that closing does not reset the response away).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "egress.h"
#include "internal.h"

#define BUF_SIZE     32768
#define ADDRS_MAX    16
#define REFUSE_SLACK 16 /* connections over a limit, held only to send the 503 */
#define LEDGER_MAX   512
#define LINGER_MS    1000
#define ACCEPT_BATCH 16
#define RESP_MAX     512

enum cstate { C_REQ, C_RESOLVE, C_CONNECT, C_RELAY, C_RESPOND, C_LINGER, C_CLOSED };

/* ---- resolution off the loop -------------------------------------------------------- */

struct chan {
	pthread_mutex_t lock;
	int refs;
	int wfd; /* the loop's wake pipe, -1 once the proxy stopped */
};

struct job {
	atomic_int refs;
	atomic_bool done;
	struct chan *chan;
	govex__egress_resolve_fn fn;
	void *data;
	char name[256];
	struct sockaddr_storage addrs[ADDRS_MAX];
	int n; /* addresses, or -errno */
};

static void chan_unref(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	bool last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (last) {
		if (c->wfd >= 0)
			close(c->wfd);
		pthread_mutex_destroy(&c->lock);
		free(c);
	}
}

static void chan_wake(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->wfd >= 0) {
		/* nonblocking: a full pipe already wakes the loop */
		ssize_t w = write(c->wfd, "x", 1);
		(void)w;
	}
	pthread_mutex_unlock(&c->lock);
}

static void job_unref(struct job *j)
{
	if (atomic_fetch_sub(&j->refs, 1) == 1) {
		chan_unref(j->chan);
		free(j);
	}
}

static int resolve_default(void *data, const char *name, struct sockaddr_storage *addrs, size_t max)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int r = getaddrinfo(name, NULL, &hints, &res);
	if (r != 0) {
		if (r == EAI_NONAME || r == EAI_NODATA)
			return -ENOENT;
		if (r == EAI_AGAIN)
			return -EAGAIN;
		if (r == EAI_MEMORY)
			return -ENOMEM;
		return -EIO;
	}
	size_t n = 0;
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof(addrs[0]))
			continue;
		memset(&addrs[n], 0, sizeof(addrs[n]));
		memcpy(&addrs[n], a->ai_addr, a->ai_addrlen);
		n++;
	}
	freeaddrinfo(res);
	return (int)n;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	int n = j->fn(j->data, j->name, j->addrs, ADDRS_MAX);
	j->n = n > ADDRS_MAX ? ADDRS_MAX : n;
	atomic_store(&j->done, true);
	chan_wake(j->chan);
	job_unref(j);
	return NULL;
}

/* Threads of the proxy take no signals: the host's handlers run on its own threads. */
static int thread_start(void *(*fn)(void *), void *arg, bool detached, pthread_t *ret)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int r = pthread_create(&t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r == 0 && ret)
		*ret = t;
	return -r;
}

/* ---- the ledger ------------------------------------------------------------------------ */

struct lentry {
	char *host; /* NULL: none named */
	unsigned port;
	char addr[INET6_ADDRSTRLEN];
	bool allowed;
	char reason[32];
	uint64_t conns, up, down, idle, limit;
};

/* ---- connections ------------------------------------------------------------------------ */

struct conn {
	enum cstate state;
	int cfd, sfd;
	short cev, sev;	   /* events asked for this round */
	int cpoll, spoll;  /* index in the pollfd array, -1 when not polled */
	bool counted;	   /* holds one of max_concurrent */
	uint64_t deadline; /* REQ, RESOLVE/CONNECT, LINGER */
	uint64_t last_io;  /* RELAY: for the idle timeout */
	struct govex__egress_req req;
	bool req_ok;
	char head[GOVEX__EGRESS_HEAD_MAX];
	size_t head_len;
	char *c2s, *s2c;
	size_t c2s_off, c2s_len, s2c_off, s2c_len;
	size_t own; /* leading bytes of s2c that are the proxy's, not the destination's */
	char why_addr[INET6_ADDRSTRLEN]; /* a refusal's address, for the ledger */
	bool c_eof, s_eof, c_shut, s_shut, client_done;
	char resp[RESP_MAX];
	size_t resp_off, resp_len;
	struct job *job;
	struct sockaddr_storage addrs[ADDRS_MAX];
	size_t naddrs, next_addr;
	int last_err;
	ssize_t ledger; /* the allowed entry this tunnel counts in, -1 before */
};

struct govex__egress {
	struct govex__egress_list *allow;
	unsigned max_concurrent, max_total, connect_ms, idle_ms;
	uint64_t max_up, max_down, up, down; /* up/down: bytes taken in for relaying */
	govex__egress_resolve_fn resolve;
	void *resolve_data;
	int lfd, wake_r;
	struct chan *chan;
	pthread_t thread;
	atomic_bool stop;
	struct conn **conns;
	size_t nconns, cap;
	unsigned active;
	uint64_t accepted;
	struct lentry *ledger;
	size_t nledger;
	struct pollfd *pfd;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static ssize_t ledger_find(struct govex__egress *e, const char *host, unsigned port,
			   const char *addr, bool allowed, const char *reason)
{
	for (size_t i = 0; i < e->nledger; i++) {
		struct lentry *l = &e->ledger[i];
		if (((!l->host && !host) || (l->host && host && strcmp(l->host, host) == 0)) &&
		    l->port == port && strcmp(l->addr, addr) == 0 && l->allowed == allowed &&
		    strcmp(l->reason, reason) == 0)
			return (ssize_t)i;
	}
	bool overflow = !host && strcmp(reason, "ledger_full") == 0;
	if (e->nledger >= LEDGER_MAX && !overflow)
		/* a run naming more destinations than the ledger holds: the rest counted
		 * together, in one entry for the allowed and one for the refused (the two
		 * slots past LEDGER_MAX, kept for them), so that no byte goes uncounted */
		return ledger_find(e, NULL, 0, "", allowed, "ledger_full");
	if (e->nledger >= LEDGER_MAX + 2)
		return -1; /* not reached: only the two overflow entries come past LEDGER_MAX */
	if (!e->ledger) {
		e->ledger = calloc(LEDGER_MAX + 2, sizeof(*e->ledger));
		if (!e->ledger)
			return -1;
	}
	struct lentry *l = &e->ledger[e->nledger];
	memset(l, 0, sizeof(*l));
	if (host && !(l->host = strdup(host)))
		return -1;
	l->port = port;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	l->allowed = allowed;
	snprintf(l->reason, sizeof(l->reason), "%s", reason);
	return (ssize_t)e->nledger++;
}

static void ledger_refusal(struct govex__egress *e, struct conn *c, const char *reason)
{
	const char *host = NULL;
	unsigned port = 0;
	if (c && c->req_ok && (c->req.state == GOVEX_EGRESS_REQ_READY || c->req.named)) {
		host = c->req.target.host;
		port = c->req.target.port;
	}
	ssize_t i = ledger_find(e, host, port, c ? c->why_addr : "", false, reason);
	if (i >= 0)
		e->ledger[i].conns++;
}

static void sockaddr_text(const struct sockaddr_storage *ss, char out[INET6_ADDRSTRLEN])
{
	out[0] = '\0';
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out,
			  INET6_ADDRSTRLEN);
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, out,
			  INET6_ADDRSTRLEN);
}

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

/* Queues an HTTP error with a one-line text body; the connection ends after it. */
static void respond(struct govex__egress *e, struct conn *c, int status, const char *reason,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void respond(struct govex__egress *e, struct conn *c, int status, const char *reason,
		    const char *fmt, ...)
{
	char body[RESP_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof(body) - 1, fmt, ap);
	va_end(ap);
	size_t bl = strlen(body);
	body[bl++] = '\n';
	body[bl] = '\0';
	int n = snprintf(c->resp, sizeof(c->resp),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 status, status_text(status), bl, body);
	c->resp_len = n < 0 ? 0 : (size_t)n >= sizeof(c->resp) ? sizeof(c->resp) - 1 : (size_t)n;
	c->resp_off = 0;
	c->state = C_RESPOND;
	c->deadline = now_ms() + LINGER_MS;
	if (c->sfd >= 0) {
		close(c->sfd);
		c->sfd = -1;
	}
	ledger_refusal(e, c, reason);
}

static void conn_free(struct govex__egress *e, struct conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->sfd >= 0)
		close(c->sfd);
	if (c->job)
		job_unref(c->job);
	if (c->req_ok)
		govex__egress_req_done(&c->req);
	if (c->counted)
		e->active--;
	free(c->c2s);
	free(c->s2c);
	free(c);
}

static void conn_close(struct conn *c)
{
	c->state = C_CLOSED;
}

static bool want_again(ssize_t n)
{
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* ---- connecting ------------------------------------------------------------------------- */

static void connect_next(struct govex__egress *e, struct conn *c);

static void connected(struct govex__egress *e, struct conn *c)
{
	char addr[INET6_ADDRSTRLEN];
	sockaddr_text(&c->addrs[c->next_addr - 1], addr);
	c->ledger = ledger_find(e, c->req.target.host, c->req.target.port, addr, true, "");
	if (c->ledger >= 0)
		e->ledger[c->ledger].conns++;
	c->state = C_RELAY;
	c->last_io = now_ms();
	if (c->req.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		memcpy(c->s2c, ok, sizeof(ok) - 1);
		c->s2c_len = c->own = sizeof(ok) - 1;
	}
}

static void connect_next(struct govex__egress *e, struct conn *c)
{
	while (c->next_addr < c->naddrs) {
		struct sockaddr_storage *ss = &c->addrs[c->next_addr++];
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			c->last_err = errno;
			continue;
		}
		fd = govex__fd_not_stdio(fd);
		if (fd < 0) {
			c->last_err = -fd;
			continue;
		}
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		if (ss->ss_family == AF_INET)
			((struct sockaddr_in *)ss)->sin_port = htons(c->req.target.port);
		else
			((struct sockaddr_in6 *)ss)->sin6_port = htons(c->req.target.port);
		if (connect(fd, (struct sockaddr *)ss, len) == 0) {
			c->sfd = fd;
			connected(e, c);
			return;
		}
		if (errno == EINPROGRESS) {
			c->sfd = fd;
			c->state = C_CONNECT;
			return;
		}
		c->last_err = errno;
		close(fd);
	}
	char addr[INET6_ADDRSTRLEN] = "";
	if (c->naddrs)
		sockaddr_text(&c->addrs[c->naddrs - 1], addr);
	snprintf(c->why_addr, sizeof(c->why_addr), "%s", addr);
	respond(e, c, 502, "connect_failed", "govex: cannot connect to %s:%u%s%s%s: %s",
		c->req.target.host, c->req.target.port, c->req.target.is_address ? "" : " (",
		c->req.target.is_address ? "" : addr, c->req.target.is_address ? "" : ")",
		strerror(c->last_err ? c->last_err : ECONNREFUSED));
}

static void resolved(struct govex__egress *e, struct conn *c)
{
	struct job *j = c->job;
	c->job = NULL;
	const char *name = c->req.target.host;
	if (j->n <= 0) {
		int err = j->n;
		job_unref(j);
		respond(e, c, 502, "resolve_failed", "govex: cannot resolve %s: %s", name,
			err == 0 || err == -ENOENT ? "no such name"
			: err == -EAGAIN	   ? "temporary failure in name resolution"
						   : strerror(-err));
		return;
	}
	/* DNS rebinding: a name leads only to public addresses, or to one the list names
	 * literally with this port */
	char refused[INET6_ADDRSTRLEN] = "";
	const char *cls = "";
	c->naddrs = 0;
	for (int i = 0; i < j->n; i++) {
		struct sockaddr_storage ss = j->addrs[i];
		if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
			continue;
		govex__egress_addr_unmap(&ss);
		if (!govex__egress_list_admits_resolved(e->allow, (struct sockaddr *)&ss,
							c->req.target.port)) {
			if (!refused[0]) {
				sockaddr_text(&ss, refused);
				cls = govex__egress_addr_class_name(
				    govex__egress_addr_class((struct sockaddr *)&ss));
			}
			continue;
		}
		c->addrs[c->naddrs++] = ss;
	}
	job_unref(j);
	if (c->naddrs == 0) {
		snprintf(c->why_addr, sizeof(c->why_addr), "%s", refused);
		respond(e, c, 403, "refused_address",
			"govex: %s resolves only to addresses this run may not reach (%s: %s)",
			name, refused[0] ? refused : "none", refused[0] ? cls : "no address");
		return;
	}
	c->next_addr = 0;
	connect_next(e, c);
}

/* The head is complete: check the target, queue what goes up, start resolving. */
static void request_ready(struct govex__egress *e, struct conn *c)
{
	const struct govex__egress_target *t = &c->req.target;
	if (!govex__egress_list_admits(e->allow, t)) {
		bool v6 = t->is_address && t->addr.ss_family == AF_INET6;
		respond(e, c, 403, "not_in_allowlist",
			"govex: %s%s%s:%u is not in this run's network allowlist", v6 ? "[" : "",
			t->host, v6 ? "]" : "", t->port);
		return;
	}
	/* a budget spent refuses every new request, a CONNECT without early data too */
	if (e->up >= e->max_up || e->down >= e->max_down) {
		respond(e, c, 503, "byte_limit",
			"govex: this run's egress byte limit (%llu bytes up, %llu down) is "
			"reached",
			(unsigned long long)e->max_up, (unsigned long long)e->max_down);
		return;
	}
	c->c2s = malloc(BUF_SIZE);
	c->s2c = malloc(BUF_SIZE);
	if (!c->c2s || !c->s2c) {
		respond(e, c, 503, "internal", "govex: out of memory");
		return;
	}
	size_t rest = c->head_len - c->req.consumed;
	const char *body = c->head + c->req.consumed;
	if (!c->req.connect) {
		memcpy(c->c2s, c->req.head, c->req.head_len); /* < HEAD_MAX + URL < BUF_SIZE */
		c->c2s_len = c->req.head_len;
		bool done = false;
		ssize_t keep = govex__egress_req_body(&c->req, body, rest, &done);
		if (keep < 0) {
			respond(e, c, 400, "bad_request", "govex: malformed request body");
			return;
		}
		rest = (size_t)keep;
		c->client_done = done;
	}
	memcpy(c->c2s + c->c2s_len, body, rest);
	c->c2s_len += rest;
	if (c->c2s_len > e->max_up - e->up) {
		respond(e, c, 503, "byte_limit",
			"govex: this run's egress byte limit (%llu bytes up) is reached",
			(unsigned long long)e->max_up);
		return;
	}
	e->up += c->c2s_len;
	c->deadline = now_ms() + e->connect_ms;
	if (t->is_address) {
		c->addrs[0] = t->addr;
		c->naddrs = 1;
		c->next_addr = 0;
		connect_next(e, c);
		return;
	}
	/* Resolver threads, abandoned ones included (getaddrinfo cannot be interrupted, so
	 * a timed-out lookup's thread lives on until it returns), are bounded per proxy:
	 * names that never answer cannot pile up threads on the host. */
	pthread_mutex_lock(&e->chan->lock);
	int resolving = e->chan->refs - 1; /* one reference is the proxy's own */
	pthread_mutex_unlock(&e->chan->lock);
	if (resolving >= (int)e->max_concurrent) {
		respond(e, c, 503, "concurrent_limit",
			"govex: %d name resolutions of this run are still in progress", resolving);
		return;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		respond(e, c, 503, "internal", "govex: out of memory");
		return;
	}
	atomic_init(&j->refs, 2);
	atomic_init(&j->done, false);
	j->fn = e->resolve;
	j->data = e->resolve_data;
	snprintf(j->name, sizeof(j->name), "%s", t->host);
	pthread_mutex_lock(&e->chan->lock);
	e->chan->refs++;
	pthread_mutex_unlock(&e->chan->lock);
	j->chan = e->chan;
	if (thread_start(job_main, j, true, NULL) < 0) {
		chan_unref(j->chan);
		free(j);
		respond(e, c, 503, "internal", "govex: cannot start a resolver thread");
		return;
	}
	c->job = j;
	c->state = C_RESOLVE;
}

/* ---- one round of a connection ------------------------------------------------------------ */

static void on_req(struct govex__egress *e, struct conn *c, short rev)
{
	if (!(rev & (POLLIN | POLLHUP | POLLERR)))
		return;
	size_t room = sizeof(c->head) - c->head_len;
	ssize_t n = recv(c->cfd, c->head + c->head_len, room, 0);
	if (want_again(n))
		return;
	if (n <= 0) {
		if (c->head_len)
			ledger_refusal(e, c, "incomplete_request");
		conn_close(c);
		return;
	}
	c->head_len += (size_t)n;
	enum govex__egress_req_state st =
	    govex__egress_req_feed(&c->req, c->head, c->head_len, (size_t)n);
	if (st == GOVEX_EGRESS_REQ_MORE)
		return;
	if (st == GOVEX_EGRESS_REQ_REFUSE) {
		respond(e, c, c->req.status, c->req.reason, "%s", c->req.message);
		return;
	}
	request_ready(e, c);
}

static void on_connect(struct govex__egress *e, struct conn *c, short rev)
{
	if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
		return;
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0) {
		connected(e, c);
		return;
	}
	c->last_err = err;
	close(c->sfd);
	c->sfd = -1;
	connect_next(e, c);
}

static void tunnel_limit(struct govex__egress *e, struct conn *c)
{
	if (c->ledger >= 0)
		e->ledger[c->ledger].limit++;
	conn_close(c);
}

static void on_relay(struct govex__egress *e, struct conn *c, short crev, short srev)
{
	struct lentry *l = c->ledger >= 0 ? &e->ledger[c->ledger] : NULL;
	uint64_t now = now_ms();
	/* client -> destination */
	if ((crev & (POLLIN | POLLHUP | POLLERR)) && !c->c_eof && !c->client_done) {
		if (c->c2s_off) {
			memmove(c->c2s, c->c2s + c->c2s_off, c->c2s_len - c->c2s_off);
			c->c2s_len -= c->c2s_off;
			c->c2s_off = 0;
		}
		size_t room = BUF_SIZE - c->c2s_len;
		uint64_t allow = e->max_up - e->up;
		if (room > allow)
			room = (size_t)allow;
		/* over the limit: what was taken in still goes, then more bytes end it */
		if (allow == 0 && c->c2s_len == 0) {
			tunnel_limit(e, c);
			return;
		}
		if (room) {
			ssize_t n = recv(c->cfd, c->c2s + c->c2s_len, room, 0);
			if (n == 0) {
				c->c_eof = true;
			} else if (n < 0 && !want_again(n)) {
				conn_close(c);
				return;
			} else if (n > 0) {
				ssize_t keep = (ssize_t)n;
				if (!c->req.connect) {
					bool done = false;
					keep = govex__egress_req_body(&c->req, c->c2s + c->c2s_len,
								      (size_t)n, &done);
					if (keep < 0) {
						conn_close(c);
						return;
					}
					c->client_done = done;
				}
				c->c2s_len += (size_t)keep;
				e->up += (uint64_t)keep;
				c->last_io = now;
			}
		}
	}
	if ((srev & (POLLOUT | POLLERR | POLLHUP)) && c->c2s_off < c->c2s_len) {
		ssize_t n =
		    send(c->sfd, c->c2s + c->c2s_off, c->c2s_len - c->c2s_off, MSG_NOSIGNAL);
		if (n < 0 && !want_again(n)) {
			conn_close(c);
			return;
		}
		if (n > 0) {
			c->c2s_off += (size_t)n;
			if (l)
				l->up += (uint64_t)n;
			c->last_io = now;
		}
	}
	if (c->c2s_off == c->c2s_len)
		c->c2s_off = c->c2s_len = 0;
	if (c->c_eof && c->c2s_len == 0 && !c->s_shut) {
		shutdown(c->sfd, SHUT_WR);
		c->s_shut = true;
	}
	/* destination -> client */
	if ((srev & (POLLIN | POLLHUP | POLLERR)) && !c->s_eof) {
		if (c->s2c_off) {
			memmove(c->s2c, c->s2c + c->s2c_off, c->s2c_len - c->s2c_off);
			c->s2c_len -= c->s2c_off;
			c->s2c_off = 0;
		}
		size_t room = BUF_SIZE - c->s2c_len;
		uint64_t allow = e->max_down - e->down;
		if (room > allow)
			room = (size_t)allow;
		if (allow == 0 && c->s2c_len == 0) {
			tunnel_limit(e, c);
			return;
		}
		if (room) {
			ssize_t n = recv(c->sfd, c->s2c + c->s2c_len, room, 0);
			if (n == 0) {
				c->s_eof = true;
			} else if (n < 0 && !want_again(n)) {
				conn_close(c);
				return;
			} else if (n > 0) {
				c->s2c_len += (size_t)n;
				e->down += (uint64_t)n;
				c->last_io = now;
			}
		}
	}
	if ((crev & (POLLOUT | POLLERR | POLLHUP)) && c->s2c_off < c->s2c_len) {
		ssize_t n =
		    send(c->cfd, c->s2c + c->s2c_off, c->s2c_len - c->s2c_off, MSG_NOSIGNAL);
		if (n < 0 && !want_again(n)) {
			conn_close(c);
			return;
		}
		if (n > 0) {
			/* the proxy's own "200 Connection established" is not the destination's */
			size_t own = (size_t)n < c->own ? (size_t)n : c->own;
			c->own -= own;
			c->s2c_off += (size_t)n;
			c->last_io = now;
			if (l)
				l->down += (uint64_t)n - own;
		}
	}
	if (c->s2c_off == c->s2c_len)
		c->s2c_off = c->s2c_len = 0;
	if (c->s_eof && c->s2c_len == 0) {
		if (!c->c_shut) {
			shutdown(c->cfd, SHUT_WR);
			c->c_shut = true;
		}
		if (c->c_eof || c->client_done) {
			conn_close(c);
			return;
		}
	}
}

static void on_respond(struct conn *c, short rev)
{
	if (c->state == C_RESPOND && (rev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n =
		    send(c->cfd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
		if (n < 0 && !want_again(n)) {
			conn_close(c);
			return;
		}
		if (n > 0)
			c->resp_off += (size_t)n;
		if (c->resp_off == c->resp_len) {
			shutdown(c->cfd, SHUT_WR);
			c->state = C_LINGER;
			c->deadline = now_ms() + LINGER_MS;
		}
		return;
	}
	if (c->state == C_LINGER && (rev & (POLLIN | POLLERR | POLLHUP))) {
		char sink[4096];
		ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && !want_again(n)))
			conn_close(c);
	}
}

static void on_deadline(struct govex__egress *e, struct conn *c, uint64_t now)
{
	switch (c->state) {
	case C_REQ:
		if (now >= c->deadline)
			respond(e, c, 408, "request_timeout",
				"govex: the request head was not complete within %u ms",
				e->idle_ms);
		break;
	case C_RESOLVE:
	case C_CONNECT:
		if (now >= c->deadline) {
			if (c->job) {
				job_unref(c->job); /* abandoned: its thread frees it */
				c->job = NULL;
			}
			respond(e, c, 504, "connect_timeout",
				"govex: connecting to %s:%u took longer than %u ms",
				c->req.target.host, c->req.target.port, e->connect_ms);
		}
		break;
	case C_RELAY:
		if (now >= c->last_io + e->idle_ms) {
			if (c->ledger >= 0)
				e->ledger[c->ledger].idle++;
			conn_close(c);
		}
		break;
	case C_RESPOND:
	case C_LINGER:
		if (now >= c->deadline)
			conn_close(c);
		break;
	case C_CLOSED:
		break;
	}
}

static uint64_t conn_deadline(const struct govex__egress *e, const struct conn *c)
{
	if (c->state == C_RELAY)
		return c->last_io + e->idle_ms;
	return c->deadline;
}

/* ---- accepting ------------------------------------------------------------------------------ */

static void accept_some(struct govex__egress *e)
{
	for (int k = 0; k < ACCEPT_BATCH; k++) {
		int fd = accept4(e->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		fd = govex__fd_not_stdio(fd);
		if (fd < 0)
			return;
		if (e->nconns == e->cap) {
			/* even the refusal slots are taken: no answer at all */
			ledger_refusal(e, NULL, "concurrent_limit");
			close(fd);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->cfd = fd;
		c->sfd = -1;
		c->ledger = -1;
		c->state = C_REQ;
		c->deadline = now_ms() + e->idle_ms;
		e->conns[e->nconns++] = c;
		if (e->active >= e->max_concurrent) {
			respond(e, c, 503, "concurrent_limit",
				"govex: this run has %u connections open, its limit",
				e->max_concurrent);
			continue;
		}
		if (e->accepted >= e->max_total) {
			respond(e, c, 503, "total_limit",
				"govex: this run made %u connections, its limit", e->max_total);
			continue;
		}
		e->accepted++;
		c->counted = true;
		e->active++;
		if (govex__egress_req_init(&c->req) < 0) {
			respond(e, c, 503, "internal", "govex: out of memory");
			continue;
		}
		c->req_ok = true;
	}
}

/* ---- the loop ------------------------------------------------------------------------------- */

static void conn_events(const struct govex__egress *e, struct conn *c)
{
	c->cev = c->sev = 0;
	switch (c->state) {
	case C_REQ:
		c->cev = POLLIN;
		break;
	case C_CONNECT:
		c->sev = POLLOUT;
		break;
	case C_RELAY:
		/* over a byte limit: wait until what was taken in is gone, then the next
		 * bytes end the tunnel */
		if (!c->c_eof && !c->client_done && c->c2s_len < BUF_SIZE &&
		    !(e->up >= e->max_up && c->c2s_len > c->c2s_off))
			c->cev |= POLLIN;
		if (c->s2c_len > c->s2c_off)
			c->cev |= POLLOUT;
		if (!c->s_eof && c->s2c_len < BUF_SIZE &&
		    !(e->down >= e->max_down && c->s2c_len > c->s2c_off))
			c->sev |= POLLIN;
		if (c->c2s_len > c->c2s_off)
			c->sev |= POLLOUT;
		break;
	case C_RESPOND:
		c->cev = POLLOUT;
		break;
	case C_LINGER:
		c->cev = POLLIN;
		break;
	case C_RESOLVE:
	case C_CLOSED:
		break;
	}
}

static void *loop_main(void *arg)
{
	struct govex__egress *e = arg;
	while (!atomic_load(&e->stop)) {
		size_t np = 0;
		e->pfd[np++] = (struct pollfd){.fd = e->wake_r, .events = POLLIN};
		e->pfd[np++] = (struct pollfd){.fd = e->lfd, .events = POLLIN};
		uint64_t now = now_ms(), next = UINT64_MAX;
		for (size_t i = 0; i < e->nconns; i++) {
			struct conn *c = e->conns[i];
			conn_events(e, c);
			c->cpoll = c->spoll = -1;
			if (c->cev) {
				c->cpoll = (int)np;
				e->pfd[np++] = (struct pollfd){.fd = c->cfd, .events = c->cev};
			}
			if (c->sev && c->sfd >= 0) {
				c->spoll = (int)np;
				e->pfd[np++] = (struct pollfd){.fd = c->sfd, .events = c->sev};
			}
			uint64_t d = conn_deadline(e, c);
			if (d < next)
				next = d;
		}
		int timeout = -1;
		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
		int r = poll(e->pfd, np, timeout);
		if (r < 0 && errno != EINTR)
			break;
		if (r < 0)
			continue;
		if (e->pfd[0].revents) {
			char sink[64];
			while (read(e->wake_r, sink, sizeof(sink)) > 0)
				;
		}
		if (atomic_load(&e->stop))
			break;
		size_t before = e->nconns;
		for (size_t i = 0; i < before; i++) {
			struct conn *c = e->conns[i];
			short crev = c->cpoll >= 0 ? e->pfd[c->cpoll].revents : 0;
			short srev = c->spoll >= 0 ? e->pfd[c->spoll].revents : 0;
			switch (c->state) {
			case C_REQ:
				on_req(e, c, crev);
				break;
			case C_RESOLVE:
				if (atomic_load(&c->job->done))
					resolved(e, c);
				break;
			case C_CONNECT:
				on_connect(e, c, srev);
				break;
			case C_RELAY:
				on_relay(e, c, crev, srev);
				break;
			case C_RESPOND:
			case C_LINGER:
				on_respond(c, crev);
				break;
			case C_CLOSED:
				break;
			}
			if (c->state != C_CLOSED)
				on_deadline(e, c, now_ms());
		}
		if (e->pfd[1].revents)
			accept_some(e);
		size_t k = 0;
		for (size_t i = 0; i < e->nconns; i++) {
			if (e->conns[i]->state == C_CLOSED)
				conn_free(e, e->conns[i]);
			else
				e->conns[k++] = e->conns[i];
		}
		e->nconns = k;
	}
	return NULL;
}

/* ---- start and stop -------------------------------------------------------------------------- */

static void egress_free(struct govex__egress *e)
{
	for (size_t i = 0; i < e->nconns; i++)
		conn_free(e, e->conns[i]);
	free(e->conns);
	free(e->pfd);
	for (size_t i = 0; i < e->nledger; i++)
		free(e->ledger[i].host);
	free(e->ledger);
	if (e->lfd >= 0)
		close(e->lfd);
	if (e->wake_r >= 0)
		close(e->wake_r);
	if (e->chan) {
		pthread_mutex_lock(&e->chan->lock);
		if (e->chan->wfd >= 0)
			close(e->chan->wfd);
		e->chan->wfd = -1;
		pthread_mutex_unlock(&e->chan->lock);
		chan_unref(e->chan);
	}
	govex__egress_list_free(e->allow);
	free(e);
}

int govex__egress_start(const struct govex__egress_config *cfg, int listen_fd,
			struct govex__egress **ret, struct govex_error *err)
{
	_cleanup_close_ int lfd = listen_fd;
	if (!cfg || !cfg->allow || !ret)
		return govex__err(err, GOVEX_EINVAL, 0, "egress: no configuration");
	int acc = 0, type = 0;
	socklen_t len = sizeof(acc);
	if (getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) < 0 || !acc)
		return govex__err(err, GOVEX_EINVAL, errno, "egress: not a listening socket");
	len = sizeof(type);
	if (getsockopt(lfd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
		return govex__err(err, GOVEX_EINVAL, errno, "egress: not a stream socket");
	int fl = fcntl(lfd, F_GETFL);
	if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(lfd, F_SETFD, FD_CLOEXEC) < 0)
		return govex__err(err, errno, errno, "egress: listening socket: %s",
				  strerror(errno));
	struct govex__egress *e = calloc(1, sizeof(*e));
	if (!e)
		return govex__err(err, ENOMEM, ENOMEM, "egress: out of memory");
	e->lfd = -1;
	e->wake_r = -1;
	e->max_concurrent = cfg->max_concurrent ? cfg->max_concurrent : 64;
	if (e->max_concurrent > 4096)
		e->max_concurrent = 4096;
	e->max_total = cfg->max_total ? cfg->max_total : 4096;
	e->max_up = cfg->max_bytes_up ? cfg->max_bytes_up : (uint64_t)1 << 30;
	e->max_down = cfg->max_bytes_down ? cfg->max_bytes_down : (uint64_t)4 << 30;
	e->connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
	e->idle_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : 60000;
	e->resolve = cfg->resolve ? cfg->resolve : resolve_default;
	e->resolve_data = cfg->resolve_data;
	e->cap = e->max_concurrent + REFUSE_SLACK;
	e->allow = govex__egress_list_copy(cfg->allow);
	e->conns = calloc(e->cap, sizeof(struct conn *));
	e->pfd = calloc(2 + 2 * e->cap, sizeof(*e->pfd));
	e->chan = calloc(1, sizeof(*e->chan));
	if (!e->allow || !e->conns || !e->pfd || !e->chan) {
		egress_free(e);
		return govex__err(err, ENOMEM, ENOMEM, "egress: out of memory");
	}
	pthread_mutex_init(&e->chan->lock, NULL);
	e->chan->refs = 1;
	e->chan->wfd = -1;
	int p[2];
	if (govex__pipe(p, O_NONBLOCK) < 0) {
		int saved = errno;
		egress_free(e);
		return govex__err(err, saved, saved, "egress: pipe: %s", strerror(saved));
	}
	e->wake_r = p[0];
	e->chan->wfd = p[1];
	atomic_init(&e->stop, false);
	e->lfd = TAKE_FD(lfd);
	int r = thread_start(loop_main, e, false, &e->thread);
	if (r < 0) {
		egress_free(e);
		return govex__err(err, -r, -r, "egress: cannot start its thread: %s", strerror(-r));
	}
	*ret = e;
	return 0;
}

static json_t *ledger_json(const struct govex__egress *e)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < e->nledger; i++) {
		const struct lentry *l = &e->ledger[i];
		json_t *o = json_pack(
		    "{s:o, s:o, s:o, s:b, s:o, s:I, s:I, s:I, s:I, s:I}", "host",
		    l->host ? json_string(l->host) : json_null(), "port",
		    l->port ? json_integer(l->port) : json_null(), "address",
		    l->addr[0] ? json_string(l->addr) : json_null(), "allowed", l->allowed,
		    "reason", l->reason[0] ? json_string(l->reason) : json_null(), "connections",
		    (json_int_t)l->conns, "bytes_up", (json_int_t)l->up, "bytes_down",
		    (json_int_t)l->down, "closed_idle", (json_int_t)l->idle, "closed_byte_limit",
		    (json_int_t)l->limit);
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

void govex__egress_stop(struct govex__egress *e, json_t **ret_ledger)
{
	if (ret_ledger)
		*ret_ledger = NULL;
	if (!e)
		return;
	atomic_store(&e->stop, true);
	chan_wake(e->chan);
	pthread_join(e->thread, NULL);
	if (ret_ledger)
		*ret_ledger = ledger_json(e);
	egress_free(e);
}
