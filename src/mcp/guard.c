/* SPDX-License-Identifier: MIT */
/*
 * HTTP's controls that need no connection (http.c applies them): the listening address,
 * its loopback rule and its socket, the token file's rules, the bearer check (constant
 * time), the Origin and Host checks (DNS rebinding), and a per-address token bucket.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"

int guard_parse_addr(const char *spec, struct guard_addr *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1]) {
		snprintf(err, errlen, "--http: '%s' is not ADDR:PORT", spec);
		return -1;
	}
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535 || colon[1] == '-' || colon[1] == '+') {
		snprintf(err, errlen, "--http: '%s' is not a port (0 to 65535)", colon + 1);
		return -1;
	}
	size_t hl = (size_t)(colon - spec);
	char host[64];
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "--http: '%.*s' is not an address", (int)hl, spec);
		return -1;
	}
	memcpy(host, spec, hl);
	host[hl] = '\0';
	a->port = (uint16_t)port;
	if (host[0] == '[') {
		if (hl < 3 || host[hl - 1] != ']') {
			snprintf(err, errlen, "--http: '%s' is not an [IPv6] address", host);
			return -1;
		}
		host[hl - 1] = '\0';
		a->v6 = true;
		if (inet_pton(AF_INET6, host + 1, &a->in6) != 1) {
			snprintf(err, errlen, "--http: '%s' is not an IPv6 address", host + 1);
			return -1;
		}
		a->loopback = IN6_IS_ADDR_LOOPBACK(&a->in6) ||
			      (IN6_IS_ADDR_V4MAPPED(&a->in6) && a->in6.s6_addr[12] == 127);
		snprintf(a->text, sizeof(a->text), "[%s]", host + 1);
		return 0;
	}
	if (strcmp(host, "localhost") == 0) {
		a->in4.s_addr = htonl(INADDR_LOOPBACK);
		a->loopback = true;
		snprintf(a->text, sizeof(a->text), "localhost");
		return 0;
	}
	if (inet_pton(AF_INET, host, &a->in4) != 1) {
		snprintf(err, errlen,
			 "--http: '%s' is not an IPv4 address, [IPv6] or localhost (names are "
			 "not resolved)",
			 host);
		return -1;
	}
	a->loopback = (ntohl(a->in4.s_addr) >> 24) == 127;
	snprintf(a->text, sizeof(a->text), "%s", host);
	return 0;
}

int guard_listen(const struct guard_addr *a)
{
	int fd = socket(a->v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int r;
	if (a->v6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		struct sockaddr_in6 sa = {
		    .sin6_family = AF_INET6, .sin6_port = htons(a->port), .sin6_addr = a->in6};
		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	} else {
		struct sockaddr_in sa = {
		    .sin_family = AF_INET, .sin_port = htons(a->port), .sin_addr = a->in4};
		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (r < 0 || listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

uint16_t guard_bound_port(int fd)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	} u;
	memset(&u, 0, sizeof(u));
	socklen_t sl = sizeof(u);
	if (getsockname(fd, &u.sa, &sl) < 0)
		return 0;
	return ntohs(u.sa.sa_family == AF_INET6 ? u.in6.sin6_port : u.in4.sin_port);
}

/* The bytes of a file that keeps a secret: a regular file, not a symbolic link, not
 * writable by group or others, at most cap - 1 bytes (NUL added).  n bytes, or -1 with
 * err.  flag: the option, for messages. */
static ssize_t read_secret_file(const char *flag, const char *path, char *buf, size_t cap,
				char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s: %s", flag, path,
			 errno == ELOOP ? "is a symbolic link (refused)" : strerror(errno));
		return -1;
	}
	struct stat st;
	ssize_t n = -1;
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s %s: %s", flag, path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s %s: not a regular file", flag, path);
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s %s: writable by group or others (mode %04o): refused",
			 flag, path, (unsigned)(st.st_mode & 07777));
	} else if ((n = read(fd, buf, cap - 1)) < 0) {
		snprintf(err, errlen, "%s %s: %s", flag, path, strerror(errno));
	}
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* A token's rules: printable ASCII without spaces, GUARD_TOKEN_MIN bytes at least. */
static const char *token_fault(const char *t, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return "must be printable ASCII without spaces";
	if (len < GUARD_TOKEN_MIN)
		return len ? "is too short (16 bytes at least)" : "is empty (16 bytes at least)";
	return NULL;
}

int guard_read_token(const char *path, char **ret, char *err, size_t errlen)
{
	char buf[4097];
	ssize_t n = read_secret_file("--token-file", path, buf, sizeof(buf), err, errlen);
	if (n < 0)
		return -1;
	size_t len = strcspn(buf, "\n");
	if (len && buf[len - 1] == '\r')
		len--;
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] <= 0x20 || (unsigned char)buf[i] >= 0x7f) {
			snprintf(err, errlen,
				 "--token-file %s: the token must be printable ASCII without "
				 "spaces",
				 path);
			explicit_bzero(buf, sizeof(buf));
			return -1;
		}
	if (len < GUARD_TOKEN_MIN) {
		snprintf(err, errlen,
			 "--token-file %s: the token (first line) is %s (%d bytes at least)", path,
			 len ? "too short" : "empty", GUARD_TOKEN_MIN);
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	*ret = strndup(buf, len);
	explicit_bzero(buf, sizeof(buf));
	if (!*ret) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void guard_client_tokens_free(struct guard_client_token *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		if (t[i].token) {
			explicit_bzero(t[i].token, strlen(t[i].token));
			free(t[i].token);
		}
	free(t);
}

#define CLIENT_TOKENS_FILE_MAX ((size_t)256 << 10)

/* One line "NAME TOKEN" into *t; NULL, or what is wrong with it. */
static const char *client_line(char *line, struct guard_client_token *t)
{
	char *sp = strchr(line, ' ');
	if (!sp)
		return "is not NAME TOKEN";
	size_t nl = (size_t)(sp - line);
	if (!nl || nl > GUARD_CLIENT_NAME_MAX)
		return "has a name of 0 or more than 64 characters";
	for (size_t i = 0; i < nl; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
			    line[i]) ||
		    !line[i])
			return "has a name other than [A-Za-z0-9._-]";
	const char *tok = sp + 1;
	const char *fault = token_fault(tok, strlen(tok));
	if (fault)
		return fault;
	memcpy(t->name, line, nl);
	t->name[nl] = '\0';
	t->token = strdup(tok);
	return t->token ? NULL : "out of memory";
}

int guard_read_client_tokens(const char *path, struct guard_client_token **ret, size_t *ret_n,
			     char *err, size_t errlen)
{
	char *buf = malloc(CLIENT_TOKENS_FILE_MAX + 1);
	struct guard_client_token *t = calloc(GUARD_CLIENT_TOKENS_MAX, sizeof(*t));
	size_t n = 0;
	if (!buf || !t) {
		free(buf);
		free(t);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ssize_t len =
	    read_secret_file("--client-tokens", path, buf, CLIENT_TOKENS_FILE_MAX + 1, err, errlen);
	int rc = len < 0 ? -1 : 0;
	if (len == (ssize_t)CLIENT_TOKENS_FILE_MAX) {
		snprintf(err, errlen, "--client-tokens %s: larger than 256 KiB", path);
		rc = -1;
	}
	unsigned lineno = 0;
	for (char *line = buf, *next; rc == 0 && line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		if (!ll || line[0] == '#')
			continue;
		const char *fault = n == GUARD_CLIENT_TOKENS_MAX ? "is past the 1024th token"
								 : client_line(line, &t[n]);
		for (size_t i = 0; !fault && i < n; i++)
			if (strcmp(t[i].name, t[n].name) == 0)
				fault = "names a client named before";
			else if (strcmp(t[i].token, t[n].token) == 0)
				fault = "repeats a token given before";
		if (fault) {
			snprintf(err, errlen, "--client-tokens %s: line %u %s", path, lineno,
				 fault);
			rc = -1;
		}
		if (n < GUARD_CLIENT_TOKENS_MAX)
			n++; /* freed with the others, good or not */
	}
	if (rc == 0 && n == 0) {
		snprintf(err, errlen, "--client-tokens %s: no NAME TOKEN line", path);
		rc = -1;
	}
	explicit_bzero(buf, CLIENT_TOKENS_FILE_MAX + 1);
	free(buf);
	if (rc < 0) {
		guard_client_tokens_free(t, n);
		return -1;
	}
	*ret = t;
	*ret_n = n;
	return 0;
}

int guard_bearer_client(const char *header, const struct guard_client_token *t, size_t n)
{
	int found = -1;
	for (size_t i = 0; i < n; i++)
		if (guard_bearer_ok(header, t[i].token) && found < 0)
			found = (int)i;
	return found;
}

bool guard_ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	/* time depends on blen (the secret's length, fixed) only */
	unsigned char d = (unsigned char)(alen != blen);
	for (size_t i = 0; i < blen; i++)
		d |= (unsigned char)((i < alen ? (unsigned char)a[i] : 0) ^ (unsigned char)b[i]);
	return d == 0;
}

bool guard_bearer_ok(const char *header, const char *token)
{
	if (!header)
		return false;
	if (strncasecmp(header, "Bearer ", 7) != 0)
		return false;
	const char *t = header + 7;
	while (*t == ' ')
		t++;
	size_t tl = strlen(t);
	while (tl && t[tl - 1] == ' ')
		tl--;
	return guard_ct_equal(t, tl, token, strlen(token));
}

/* host[:port] (or [v6][:port]) is a loopback name; hl: its length */
static bool loopback_host(const char *h, size_t hl)
{
	static const char *const names[] = {"localhost", "127.0.0.1", "[::1]", NULL};
	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		if (hl < n || strncasecmp(h, names[i], n) != 0)
			continue;
		if (hl == n)
			return true;
		if (h[n] != ':' || hl == n + 1)
			continue;
		size_t k = n + 1;
		while (k < hl && h[k] >= '0' && h[k] <= '9')
			k++;
		if (k == hl && hl - n - 1 <= 5)
			return true;
	}
	return false;
}

bool guard_host_ok(const char *host)
{
	return host && loopback_host(host, strlen(host));
}

bool guard_origin_ok(const char *origin, bool loopback, const char *const *allowed,
		     size_t n_allowed)
{
	for (size_t i = 0; i < n_allowed; i++)
		if (strcasecmp(origin, allowed[i]) == 0)
			return true;
	if (!loopback)
		return false;
	const char *h = NULL;
	if (strncasecmp(origin, "http://", 7) == 0)
		h = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		h = origin + 8;
	return h && loopback_host(h, strlen(h));
}

/* ---------------------------------------------------------------- client groups */

/*
 * Any local process can bind any 127/8 source address (and a loopback server needs no
 * token), so 127.0.1.1 ... 127.0.1.20 would be twenty clients with twenty buckets
 * (issue 23): loopback is one client.  An IPv6 host is given a /64 and picks its own
 * interface ids, so the /64 is the client.  An IPv4-mapped address is its IPv4 address
 * (a dual-stack socket would see every IPv4 peer so).
 */
void guard_client_group(const struct sockaddr *sa, char *out, size_t cap)
{
	snprintf(out, cap, "?");
	struct in_addr v4;
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		v4 = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		struct in6_addr a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(&a)) {
			snprintf(out, cap, "loopback");
			return;
		}
		if (!IN6_IS_ADDR_V4MAPPED(&a)) {
			char t[INET6_ADDRSTRLEN];
			memset(a.s6_addr + 8, 0, 8);
			if (inet_ntop(AF_INET6, &a, t, sizeof(t)))
				snprintf(out, cap, "%s/64", t);
			return;
		}
		memcpy(&v4.s_addr, a.s6_addr + 12, 4);
	} else {
		return;
	}
	if ((ntohl(v4.s_addr) >> 24) == 127) {
		snprintf(out, cap, "loopback");
		return;
	}
	char t[INET_ADDRSTRLEN];
	if (inet_ntop(AF_INET, &v4, t, sizeof(t)))
		snprintf(out, cap, "%s", t);
}

/* ---------------------------------------------------------------- rate */

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

void guard_rate_init(struct guard_rate *r, unsigned per_s)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->per_s = per_s;
	r->burst = per_s * 2;
}

void guard_rate_fini(struct guard_rate *r)
{
	pthread_mutex_destroy(&r->lock);
}

/* One token from addr's bucket; false when it is empty.  The table is a fixed set of
 * ways per slot: an unknown address takes the way seen least recently (an attacker
 * with many addresses can only push others back to a full bucket, never drain them). */
bool guard_rate_take(struct guard_rate *r, const char *addr)
{
	uint64_t now = mono_us();
	size_t slot = (size_t)(hash(addr) % GUARD_RATE_SLOTS);
	pthread_mutex_lock(&r->lock);
	struct guard_bucket *b = NULL, *old = NULL;
	for (size_t w = 0; w < GUARD_RATE_WAYS; w++) {
		struct guard_bucket *c = &r->table[slot][w];
		if (c->seen_us && strcmp(c->addr, addr) == 0) {
			b = c;
			break;
		}
		if (!old || c->seen_us < old->seen_us)
			old = c;
	}
	if (!b) {
		b = old;
		snprintf(b->addr, sizeof(b->addr), "%s", addr);
		b->tokens_milli = (uint64_t)r->burst * 1000;
		b->seen_us = now;
	}
	uint64_t add = (now - b->seen_us) * r->per_s / 1000; /* milli-tokens */
	b->tokens_milli += add;
	if (b->tokens_milli > (uint64_t)r->burst * 1000)
		b->tokens_milli = (uint64_t)r->burst * 1000;
	b->seen_us = now;
	bool ok = b->tokens_milli >= 1000;
	if (ok)
		b->tokens_milli -= 1000;
	pthread_mutex_unlock(&r->lock);
	return ok;
}
