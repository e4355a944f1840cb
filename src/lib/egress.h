/* SPDX-License-Identifier: MIT */
/*
 * Filtered networking's proxy core (DESIGN.md "Filtered networking"): a run's only way out
 * is a listening socket of its own network namespace whose descriptor govex's supervisor
 * holds; this module accepts on it and is an HTTP proxy that connects only to the
 * destinations of the run's allowlist, resolves names itself, and keeps an egress ledger.
 *
 * What it guarantees: every byte a client sends after its request reaches only an
 * (address, port) the allowlist admits for the destination the request named; a name
 * never leads to a loopback, link-local, unspecified, multicast or reserved address, nor
 * to a private one unless that address and port are listed literally; numeric host forms
 * other than a dotted quad or a bracketed IPv6 address are refused, so that they cannot
 * alias an address.  What it does not: it does not look inside a tunnel (an allowed
 * destination can be used for anything that destination serves).
 *
 * Names are govex__egress_*; egress_list.c holds the allowlist, egress_http.c the request
 * parsing (pure, fuzzed), egress.c the proxy's event loop.
 */
#ifndef GOVEX_EGRESS_H
#define GOVEX_EGRESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

#include "govex.h"

/* ---- the allowlist ------------------------------------------------------------------- */

enum govex__egress_kind {
	GOVEX_EGRESS_NAME,     /* api.example.com:443: that name exactly */
	GOVEX_EGRESS_WILDCARD, /* *.pythonhosted.org:443: names below it, not itself */
	GOVEX_EGRESS_IPV4,     /* 10.0.0.5:8080: that address exactly */
	GOVEX_EGRESS_IPV6,     /* [::1]:8080 */
};

struct govex__egress_rule {
	enum govex__egress_kind kind;
	uint16_t port;
	/* NAME: the name, lowercase, no trailing dot; WILDCARD: the domain below which names
	 * match (without "*."); IPV4/IPV6: inet_ntop's form of the address */
	char host[256];
	struct in6_addr addr; /* IPV6 */
	struct in_addr addr4; /* IPV4 */
};

struct govex__egress_list {
	struct govex__egress_rule *rules; /* sorted by their canonical text, no duplicates */
	size_t n;
};

/* The longest entry (or CONNECT target) accepted: a 253-byte name, "*.", ":65535". */
#define GOVEX__EGRESS_ENTRY_MAX 270

/*
 * Parses one allowlist entry (len bytes, no NUL needed): "host:port", "*.domain:port",
 * "a.b.c.d:port" or "[ipv6]:port".  Port 1-65535, decimal, no sign or junk.  Names:
 * ASCII letters, digits, '-' and '_' in labels of 1-63 bytes, at most 253 bytes,
 * lowercased, one trailing dot dropped; non-ASCII is refused (IDNA is not supported: give
 * the xn-- form); a name whose last label is numeric (127.1, 2130706433, 0x7f.1: forms
 * inet_aton would read as an address) is refused, as is "*" anywhere but as the whole
 * first label.  An IPv4-mapped IPv6 address is the IPv4 address.  -GOVEX_EPOLICY with
 * err naming the entry.
 */
int govex__egress_rule_parse(const char *s, size_t len, struct govex__egress_rule *ret,
			     struct govex_error *err);
/* The canonical text of a rule ("*.pythonhosted.org:443", "[::1]:8080") into out. */
void govex__egress_rule_text(const struct govex__egress_rule *r, char out[GOVEX__EGRESS_ENTRY_MAX]);

/*
 * Parses a JSON array of entry strings (borrowed) into *ret (the caller frees it with
 * govex__egress_list_free): sorted, duplicates dropped.  At most 1024 entries.
 * -GOVEX_EPOLICY naming the entry ("network.allow[3]": ...), -ENOMEM.
 */
int govex__egress_list_parse(const json_t *array, struct govex__egress_list **ret,
			     struct govex_error *err);
struct govex__egress_list *govex__egress_list_free(struct govex__egress_list *l);
/* A copy of l, or NULL on ENOMEM. */
struct govex__egress_list *govex__egress_list_copy(const struct govex__egress_list *l);
/* The canonical form, for digests and plans: a new JSON array of the entries' canonical
 * texts, sorted, no duplicates.  NULL on ENOMEM. */
json_t *govex__egress_list_json(const struct govex__egress_list *l);

/* A destination a client asked for (a CONNECT target or an absolute URL's authority). */
struct govex__egress_target {
	bool is_address; /* host is a literal address (then addr holds it) */
	uint16_t port;
	char host[256]; /* name (lowercase, no trailing dot) or inet_ntop form */
	struct sockaddr_storage addr;
};

/*
 * Reads a host (hostlen bytes, without brackets for IPv6) and port into *ret, with the
 * rules of govex__egress_rule_parse (no wildcard).  Returns 0, or a negative reason:
 * -EINVAL (not a host), -EDOM (a numeric form other than a dotted quad or IPv6).
 */
int govex__egress_target_parse(const char *host, size_t hostlen, unsigned port,
			       struct govex__egress_target *ret);
/* Whether the list admits the target by name or literal address (before resolving). */
bool govex__egress_list_admits(const struct govex__egress_list *l,
			       const struct govex__egress_target *t);

/* Address classes a name must not lead to (DNS rebinding). */
enum govex__egress_addr_class {
	GOVEX_EGRESS_ADDR_PUBLIC,
	GOVEX_EGRESS_ADDR_PRIVATE, /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10 */
	GOVEX_EGRESS_ADDR_LOOPBACK,    /* 127/8, ::1 */
	GOVEX_EGRESS_ADDR_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
	GOVEX_EGRESS_ADDR_UNSPECIFIED, /* 0/8, :: */
	GOVEX_EGRESS_ADDR_MULTICAST,   /* 224/4, ff00::/8 */
	GOVEX_EGRESS_ADDR_RESERVED,    /* 240/4 (broadcast too), ::/96 (IPv4-compatible) */
};
/* The class of an address; an IPv4-mapped or NAT64 (64:ff9b::/96) IPv6 address is
 * classed by the IPv4 address inside. */
enum govex__egress_addr_class govex__egress_addr_class(const struct sockaddr *sa);
const char *govex__egress_addr_class_name(enum govex__egress_addr_class c);
/* An IPv4-mapped IPv6 address rewritten in place as the IPv4 address it is. */
void govex__egress_addr_unmap(struct sockaddr_storage *ss);
/*
 * Whether a name's resolved address may be connected to on port: a public address, or
 * one the list names literally with that port (a literal entry allows exactly that
 * address, whatever its class).
 */
bool govex__egress_list_admits_resolved(const struct govex__egress_list *l,
					const struct sockaddr *sa, uint16_t port);

/* ---- one request's head, parsed with nodejs/http-parser (egress_http.c) ---------------- */

/* The longest request head (request line and headers) accepted. */
#define GOVEX__EGRESS_HEAD_MAX 16384

enum govex__egress_req_state {
	GOVEX_EGRESS_REQ_MORE,	 /* the head is not complete: feed more */
	GOVEX_EGRESS_REQ_READY,	 /* a request for a target: see kind */
	GOVEX_EGRESS_REQ_REFUSE, /* refuse with status and message */
};

struct govex__egress_req {
	enum govex__egress_req_state state;
	bool connect;	   /* CONNECT host:port (else an absolute-form http:// request) */
	bool upgrade;	   /* a plain request that upgrades (then the rest is relayed raw) */
	int status;	   /* REFUSE: the HTTP status */
	char reason[32];   /* REFUSE: a ledger reason ("bad_request", "numeric_form", ...) */
	char message[320]; /* REFUSE: the response body's text, one line */
	struct govex__egress_target target; /* READY */
	/* READY, or REFUSE of a target that is not a host govex accepts: the request named
	 * a destination, whose text (printable ASCII, as given, cut at 255 bytes) and port
	 * are in target.host and target.port, so that a refusal can name it */
	bool named;
	/* READY, plain request: the head rewritten to origin-form (Host from the URL,
	 * hop-by-hop headers dropped, "Connection: close"), owned */
	char *head;
	size_t head_len;
	size_t consumed; /* READY: bytes of the input that were the head */
	void *priv;	 /* the parser's state */
};

/* Prepares r for a new request.  -ENOMEM. */
int govex__egress_req_init(struct govex__egress_req *r);
/*
 * Feeds the next len bytes of the client's stream (buf holds all of them so far: the
 * head is read from one buffer, at most GOVEX__EGRESS_HEAD_MAX bytes, so pointers into it
 * stay valid; buf[0..total) where total is the bytes fed so far plus len).  Returns the
 * new state.  Once READY, r->consumed is where the head ended in buf.
 */
enum govex__egress_req_state govex__egress_req_feed(struct govex__egress_req *r, const char *buf,
						    size_t total, size_t len);
/*
 * After READY for a plain (not upgrade) request: feeds len bytes of what the client sends
 * next (the body and anything after it) and returns how many of them still belong to the
 * request; fewer than len once the request has ended (*ret_done set), and anything after
 * must not be forwarded (another request, maybe for another host).  -1 on a malformed
 * body.
 */
ssize_t govex__egress_req_body(struct govex__egress_req *r, const char *data, size_t len,
			       bool *ret_done);
void govex__egress_req_done(struct govex__egress_req *r);

/* ---- the proxy --------------------------------------------------------------------------- */

/*
 * A resolver: fills at most max addresses of name (port 0) and returns how many, or a
 * negative errno (-ENOENT: no such name; -EAGAIN: try again).  Called on a thread of its
 * own, maybe after the proxy stopped: data must outlive every proxy that uses it.
 */
typedef int (*govex__egress_resolve_fn)(void *data, const char *name,
					struct sockaddr_storage *addrs, size_t max);

struct govex__egress_config {
	const struct govex__egress_list *allow; /* borrowed: the proxy copies it */
	unsigned max_concurrent;		/* connections at once (0: 64) */
	unsigned max_total;			/* connections in all (0: 4096) */
	uint64_t max_bytes_up;			/* client to destinations, in all (0: 1 GiB) */
	uint64_t max_bytes_down;		/* destinations to client, in all (0: 4 GiB) */
	unsigned connect_timeout_ms;		/* resolving and connecting (0: 10 s) */
	unsigned idle_timeout_ms; /* a tunnel without traffic; a request head's time (0: 60 s) */
	govex__egress_resolve_fn resolve; /* NULL: getaddrinfo (tests map names themselves) */
	void *resolve_data;
};

struct govex__egress;

/*
 * Starts a proxy on listen_fd (takes it, also on failure: a listening stream socket,
 * made nonblocking here) with its own thread, which never blocks on the network (names
 * are resolved on threads of their own, connects are nonblocking and bounded).  One
 * instance per run; instances share no state.  -EINVAL (not a listening socket, a bad
 * config), -ENOMEM, -errno of thread creation; err says which.
 */
int govex__egress_start(const struct govex__egress_config *cfg, int listen_fd,
			struct govex__egress **ret, struct govex_error *err);
/*
 * Stops the proxy: closes the listening socket and every connection and tunnel, joins
 * its thread (promptly: nothing it waits for is outside), frees it.  *ret_ledger (when
 * non-NULL) receives the egress ledger, a new JSON array of
 * {"host", "port", "address", "allowed", "reason", "connections", "bytes_up",
 * "bytes_down", "closed_idle", "closed_byte_limit"} (host/port/address null where the
 * request named none or resolution gave none), or NULL on ENOMEM.  Accepts NULL.
 */
void govex__egress_stop(struct govex__egress *e, json_t **ret_ledger);

#endif
