/* SPDX-License-Identifier: MIT */
/*
 * A proxy request's head, read with nodejs/http-parser (Debian's libhttp-parser, 2.9).
 * Why this parser and not one of our own: it is the parser Node.js shipped for a decade,
 * fuzzed there (OSS-Fuzz) for years; Debian maintains it for its security fixes; it reads
 * CONNECT's authority form and absolute-form URLs (http_parser_parse_url) and refuses
 * the smuggling shapes (Transfer-Encoding not ending in chunked, both Content-Length and
 * chunked, bad chunk sizes).  Upstream is archived in favour of llhttp, which Debian 12
 * does not package; the 2.9 API is small and stable, so moving later is a local change.
 *
 * What this file decides is only what the request asks for; egress.c checks the target
 * against the allowlist.  Everything here is pure (no I/O), so the fuzz target runs it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "egress.h"
#include "internal.h"

#define HEADERS_MAX 100

struct span {
	size_t off, len;
};

struct hdr {
	struct span field, value;
};

struct req_priv {
	http_parser parser;
	const char *base; /* the buffer of the current feed */
	struct span url;
	struct hdr headers[HEADERS_MAX];
	size_t nheaders;
	int last; /* 0 none, 1 field, 2 value: which callback came last */
	bool too_many;
	bool folded; /* a header value continued on a line of its own (obs-fold) */
	bool headers_done;
	bool body_phase;
	bool message_done;
};

static struct req_priv *priv_of(http_parser *p)
{
	return p->data;
}

static void span_add(struct span *s, const char *base, const char *at, size_t len)
{
	if (s->len == 0)
		s->off = (size_t)(at - base);
	s->len += len;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct req_priv *q = priv_of(p);
	if (q->body_phase)
		return 0;
	span_add(&q->url, q->base, at, len);
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct req_priv *q = priv_of(p);
	if (q->body_phase)
		return 0; /* a chunked body's trailer: the head was built already */
	if (q->last != 1) {
		if (q->nheaders == HEADERS_MAX) {
			q->too_many = true;
			return 1;
		}
		q->nheaders++;
	}
	q->last = 1;
	span_add(&q->headers[q->nheaders - 1].field, q->base, at, len);
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct req_priv *q = priv_of(p);
	if (q->body_phase)
		return 0;
	if (!q->nheaders)
		return 0;
	struct span *v = &q->headers[q->nheaders - 1].value;
	/* A value's pieces are contiguous in the buffer (which holds the whole head) unless
	 * the parser skipped a line break between them: obs-fold (RFC 9112 5.2), which a
	 * span cannot hold without the CRLF that would end the forwarded head early.  A
	 * proxy may refuse it with 400; this one does. */
	if (q->last == 2 && v->len != 0 && (size_t)(at - q->base) != v->off + v->len) {
		q->folded = true;
		return 1;
	}
	q->last = 2;
	span_add(v, q->base, at, len);
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct req_priv *q = priv_of(p);
	q->headers_done = true;
	/* A plain request stops here, so that the head's end is known (the parser returns
	 * at the head's last LF, which it reads again when resumed); CONNECT ends the
	 * message right after the head on its own. */
	if (p->method != HTTP_CONNECT)
		http_parser_pause(p, 1);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct req_priv *q = priv_of(p);
	if (q->body_phase) {
		q->message_done = true;
		http_parser_pause(p, 1);
	}
	return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

int govex__egress_req_init(struct govex__egress_req *r)
{
	memset(r, 0, sizeof(*r));
	struct req_priv *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	http_parser_init(&q->parser, HTTP_REQUEST);
	q->parser.data = q;
	r->priv = q;
	return 0;
}

void govex__egress_req_done(struct govex__egress_req *r)
{
	free(r->priv);
	free(r->head);
	r->priv = NULL;
	r->head = NULL;
}

static enum govex__egress_req_state req_refuse(struct govex__egress_req *r, int status,
					       const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum govex__egress_req_state req_refuse(struct govex__egress_req *r, int status,
					       const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->status = status;
	r->state = GOVEX_EGRESS_REQ_REFUSE;
	return r->state;
}

static bool span_is(const char *base, struct span s, const char *lit)
{
	return s.len == strlen(lit) && strncasecmp(base + s.off, lit, s.len) == 0;
}

/* Headers a proxy does not pass on (RFC 9110 7.6.1), and Host, which the URL decides. */
static bool hop_by_hop(const char *base, struct span f)
{
	static const char *const names[] = {"connection",
					    "proxy-connection",
					    "keep-alive",
					    "proxy-authorization",
					    "proxy-authenticate",
					    "te",
					    "trailer",
					    "host"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (span_is(base, f, names[i]))
			return true;
	return false;
}

struct out {
	char *p;
	size_t len, cap;
	bool oom;
};

static void out_add(struct out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *np = realloc(o->p, cap);
		if (!np) {
			o->oom = true;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
	out_add(o, s, strlen(s));
}

/* The authority a request names, in the form the Host header takes. */
static void host_header(const struct govex__egress_target *t, char out[300])
{
	bool v6 = t->is_address && t->addr.ss_family == AF_INET6;
	if (t->port == 80)
		snprintf(out, 300, v6 ? "[%s]" : "%s", t->host);
	else
		snprintf(out, 300, v6 ? "[%s]:%u" : "%s:%u", t->host, t->port);
}

static enum govex__egress_req_state target_from(struct govex__egress_req *r, const char *base,
						const struct http_parser_url *u, unsigned port)
{
	const char *h = base + u->field_data[UF_HOST].off;
	size_t hl = u->field_data[UF_HOST].len;
	int t = govex__egress_target_parse(h, hl, port, &r->target);
	r->named = true;
	if (t < 0) {
		/* the text as given, for the refusal (the parser's host has no controls) */
		memset(&r->target, 0, sizeof(r->target));
		if (hl >= sizeof(r->target.host))
			hl = sizeof(r->target.host) - 1;
		for (size_t i = 0; i < hl; i++)
			r->target.host[i] = h[i] > ' ' && h[i] < 0x7f ? h[i] : '?';
		r->target.port = (uint16_t)port;
	}
	if (t == -EDOM)
		return req_refuse(r, 403, "numeric_form",
				  "govex: the host is a numeric address in a form govex does not "
				  "accept: use a dotted quad or [IPv6]");
	if (t < 0)
		return req_refuse(r, 400, "bad_target",
				  "govex: the request's host is not a valid "
				  "host name or address");
	return GOVEX_EGRESS_REQ_READY;
}

static enum govex__egress_req_state decide(struct govex__egress_req *r, const char *base)
{
	struct req_priv *q = r->priv;
	http_parser *p = &q->parser;
	struct http_parser_url u;
	http_parser_url_init(&u);
	const char *url = base + q->url.off;
	if (p->method == HTTP_CONNECT) {
		r->connect = true;
		if (http_parser_parse_url(url, q->url.len, 1, &u) != 0 ||
		    !(u.field_set & (1 << UF_HOST)) || !(u.field_set & (1 << UF_PORT)))
			return req_refuse(r, 400, "bad_request",
					  "govex: CONNECT needs a host:port target");
		if (target_from(r, url, &u, u.port) != GOVEX_EGRESS_REQ_READY)
			return r->state;
		return r->state = GOVEX_EGRESS_REQ_READY;
	}
	if (http_parser_parse_url(url, q->url.len, 0, &u) != 0)
		return req_refuse(r, 400, "bad_request", "govex: the request's URL is malformed");
	if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)))
		return req_refuse(r, 400, "not_proxy_request",
				  "govex: this is govex's egress proxy: ask for an absolute URL "
				  "(http://host/path) or CONNECT host:port");
	struct span schema = {u.field_data[UF_SCHEMA].off, u.field_data[UF_SCHEMA].len};
	if (span_is(url, schema, "https"))
		return req_refuse(
		    r, 400, "bad_request",
		    "govex: for https, CONNECT host:443 and speak TLS through the tunnel");
	if (!span_is(url, schema, "http"))
		return req_refuse(r, 400, "bad_request",
				  "govex: only http:// URLs (and CONNECT) are proxied");
	if (u.field_set & (1 << UF_USERINFO))
		return req_refuse(r, 400, "bad_request",
				  "govex: a URL with credentials (user@host) is not proxied");
	unsigned port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
	if (port == 0)
		return req_refuse(r, 400, "bad_target", "govex: port 0 is not a destination");
	if (target_from(r, url, &u, port) != GOVEX_EGRESS_REQ_READY)
		return r->state;
	r->upgrade = p->upgrade;

	/* origin-form request line, then the headers but the hop-by-hop ones */
	struct out o = {0};
	char line[64];
	out_str(&o, http_method_str((enum http_method)p->method));
	out_str(&o, " ");
	if (u.field_set & (1 << UF_PATH))
		out_add(&o, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
	else
		out_str(&o, "/");
	if (u.field_set & (1 << UF_QUERY)) {
		out_str(&o, "?");
		out_add(&o, url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
	}
	snprintf(line, sizeof(line), " HTTP/%u.%u\r\n", p->http_major, p->http_minor);
	out_str(&o, line);
	char host[300];
	host_header(&r->target, host);
	out_str(&o, "Host: ");
	out_str(&o, host);
	out_str(&o, "\r\n");
	for (size_t i = 0; i < q->nheaders; i++) {
		const struct hdr *h = &q->headers[i];
		if (hop_by_hop(base, h->field))
			continue;
		/* what is copied is one header line each, whatever the parser let through */
		if (memchr(base + h->field.off, '\n', h->field.len) ||
		    memchr(base + h->field.off, '\r', h->field.len) ||
		    memchr(base + h->value.off, '\n', h->value.len) ||
		    memchr(base + h->value.off, '\r', h->value.len)) {
			free(o.p);
			return req_refuse(r, 400, "bad_request",
					  "govex: a header holds a line break");
		}
		/* an upgrade keeps its Upgrade header and says so in Connection below */
		out_add(&o, base + h->field.off, h->field.len);
		out_str(&o, ": ");
		out_add(&o, base + h->value.off, h->value.len);
		out_str(&o, "\r\n");
	}
	/* One request per connection to a destination: a client that reuses its proxy
	 * connection for another host must not have that request sent to this one. */
	out_str(&o, r->upgrade ? "Connection: upgrade\r\n\r\n" : "Connection: close\r\n\r\n");
	if (o.oom) {
		free(o.p);
		return req_refuse(r, 503, "internal", "govex: out of memory");
	}
	r->head = o.p;
	r->head_len = o.len;
	return r->state = GOVEX_EGRESS_REQ_READY;
}

enum govex__egress_req_state govex__egress_req_feed(struct govex__egress_req *r, const char *buf,
						    size_t total, size_t len)
{
	struct req_priv *q = r->priv;
	if (r->state != GOVEX_EGRESS_REQ_MORE)
		return r->state;
	if (!q)
		return req_refuse(r, 503, "internal", "govex: out of memory");
	q->base = buf;
	const char *chunk = buf + total - len;
	size_t n = http_parser_execute(&q->parser, &settings, chunk, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&q->parser);
	if (q->too_many)
		return req_refuse(r, 400, "bad_request", "govex: more than %d header fields",
				  HEADERS_MAX);
	if (q->folded)
		return req_refuse(r, 400, "bad_request",
				  "govex: a header line folded onto the next (obs-fold) is not "
				  "accepted");
	if (e != HPE_OK && e != HPE_PAUSED) {
		if (e == HPE_INVALID_METHOD)
			return req_refuse(r, 405, "bad_method",
					  "govex: method not supported by govex's egress proxy");
		return req_refuse(r, 400, "bad_request", "govex: malformed request: %s",
				  http_errno_description(e));
	}
	if (!q->headers_done) {
		if (total >= GOVEX__EGRESS_HEAD_MAX)
			return req_refuse(r, 400, "header_too_long",
					  "govex: request head longer than %d bytes",
					  GOVEX__EGRESS_HEAD_MAX);
		return GOVEX_EGRESS_REQ_MORE;
	}
	if (q->url.len == 0)
		return req_refuse(r, 400, "bad_request", "govex: the request has no target");
	if (q->parser.method == HTTP_CONNECT) {
		r->consumed = total - len + n;
	} else {
		/* paused at the head's last LF: the head ends after it, and the parser reads
		 * it again for the checks it makes there (Transfer-Encoding not ending in
		 * chunked is refused then) */
		r->consumed = total - len + n + 1;
		http_parser_pause(&q->parser, 0);
		q->body_phase = true;
		http_parser_execute(&q->parser, &settings, "\n", 1);
		e = HTTP_PARSER_ERRNO(&q->parser);
		if (e != HPE_OK && e != HPE_PAUSED)
			return req_refuse(r, 400, "bad_request", "govex: malformed request: %s",
					  http_errno_description(e));
	}
	if (r->consumed > total)
		return req_refuse(r, 400, "bad_request", "govex: malformed request");
	return decide(r, buf);
}

ssize_t govex__egress_req_body(struct govex__egress_req *r, const char *data, size_t len,
			       bool *ret_done)
{
	struct req_priv *q = r->priv;
	*ret_done = false;
	if (!q || r->state != GOVEX_EGRESS_REQ_READY || r->connect)
		return (ssize_t)len;
	if (q->message_done) {
		if (r->upgrade)
			return (ssize_t)len; /* the other protocol: relayed as it is */
		*ret_done = true;
		return 0;
	}
	q->base = data;
	if (len == 0)
		return 0;
	size_t n = http_parser_execute(&q->parser, &settings, data, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&q->parser);
	if (e != HPE_OK && e != HPE_PAUSED)
		return -1;
	if (q->message_done) {
		if (r->upgrade)
			return (ssize_t)len;
		*ret_done = true;
		return (ssize_t)n;
	}
	return (ssize_t)n;
}
