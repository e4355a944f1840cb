/* SPDX-License-Identifier: MIT */
/* HTTP's controls that need no connection (guard.c). */
#ifndef GOVEX_MCP_GUARD_H
#define GOVEX_MCP_GUARD_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GUARD_TOKEN_MIN	 16
#define GUARD_RATE_SLOTS 1024
#define GUARD_RATE_WAYS	 4

struct guard_addr {
	bool v6, loopback;
	struct in_addr in4;
	struct in6_addr in6;
	uint16_t port;
	char text[80]; /* as written: 127.0.0.1, [::1], localhost */
};

/* ADDR:PORT (IPv4, [IPv6] or localhost); -1 with err */
int guard_parse_addr(const char *spec, struct guard_addr *a, char *err, size_t errlen);
/* A listening socket (close-on-exec, non-blocking) at a; -errno */
int guard_listen(const struct guard_addr *a);
/* The port a socket is bound to (PORT 0 asked for any). */
uint16_t guard_bound_port(int fd);
/* The token: the file's first line; -1 with err when the file breaks a rule */
int guard_read_token(const char *path, char **ret, char *err, size_t errlen);

/* --client-tokens: a bearer token per client, which names it (the scheduler's client). */
#define GUARD_CLIENT_NAME_MAX	64
#define GUARD_CLIENT_TOKENS_MAX 1024
struct guard_client_token {
	char name[GUARD_CLIENT_NAME_MAX + 1];
	char *token;
};
/* The file's lines "NAME TOKEN" (blank lines and lines starting with # skipped): the same
 * file rules as the token file's, a name of [A-Za-z0-9._-] (1 to 64), a token as the
 * token file's, names and tokens unique, at most GUARD_CLIENT_TOKENS_MAX; -1 with err
 * (naming the line).  guard_client_tokens_free wipes and frees them. */
int guard_read_client_tokens(const char *path, struct guard_client_token **ret, size_t *ret_n,
			     char *err, size_t errlen);
void guard_client_tokens_free(struct guard_client_token *t, size_t n);
/* The client token an Authorization header carries: its index, or -1.  Every token is
 * compared (constant time in the header, whatever matches). */
int guard_bearer_client(const char *header, const struct guard_client_token *t, size_t n);
bool guard_ct_equal(const char *a, size_t alen, const char *b, size_t blen);
/* An Authorization header value carries this bearer token. */
bool guard_bearer_ok(const char *header, const char *token);
/* A Host header names loopback (any port). */
bool guard_host_ok(const char *host);
/* An Origin header is allowed: listed, or (bound to loopback) a loopback origin. */
bool guard_origin_ok(const char *origin, bool loopback, const char *const *allowed,
		     size_t n_allowed);

/* The client group of a peer address, as text (the rate's bucket, the scheduler's client
 * when neither a token nor a session names one): all of loopback is one client ("loopback":
 * 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104), an IPv4 address its own, IPv4-mapped IPv6 as
 * that IPv4 address, other IPv6 by /64 ("2001:db8::/64").  NULL or another family: "?". */
void guard_client_group(const struct sockaddr *sa, char *out, size_t cap);

struct guard_bucket {
	char addr[48];
	uint64_t tokens_milli;
	uint64_t seen_us;
};

struct guard_rate {
	pthread_mutex_t lock;
	unsigned per_s, burst;
	struct guard_bucket table[GUARD_RATE_SLOTS][GUARD_RATE_WAYS];
};

void guard_rate_init(struct guard_rate *r, unsigned per_s);
void guard_rate_fini(struct guard_rate *r);
bool guard_rate_take(struct guard_rate *r, const char *addr);

#endif
