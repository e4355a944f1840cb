/* SPDX-License-Identifier: MIT */
/*
 * The egress allowlist: entries, CONNECT targets, address classes.  The syntax is strict
 * on purpose: a destination has exactly one spelling, so that nothing a run writes (a
 * numeric form inet_aton reads, a mapped IPv6 address, a trailing dot, upper case) can
 * alias an allowed destination or escape a refused one.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "internal.h"

#define ENTRIES_MAX 1024

static bool label_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Whether the last label reads as a number to inet_aton or to a URL parser
 * (decimal, 0x hex, octal): such a "name" is an address in disguise. */
static bool numeric_label(const char *s, size_t n)
{
	if (n >= 2 && s[0] == '0' && s[1] == 'x') {
		for (size_t i = 2; i < n; i++)
			if (!strchr("0123456789abcdef", s[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/*
 * Normalises a name into out (lowercase, no trailing dot) and checks it.  Returns 0,
 * -EINVAL with *why set, or -EDOM for a numeric form.
 */
static int name_norm(const char *s, size_t n, char out[256], const char **why)
{
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0) {
		*why = "empty host";
		return -EINVAL;
	}
	if (n > 253) {
		*why = "name longer than 253 bytes";
		return -EINVAL;
	}
	size_t label = 0, last = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x80) {
			*why = "non-ASCII name (IDNA is not supported: give the xn-- form)";
			return -EINVAL;
		}
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		out[i] = (char)c;
		if (c == '.') {
			if (label == 0) {
				*why = "empty label";
				return -EINVAL;
			}
			label = 0;
			last = i + 1;
			continue;
		}
		if (c == '*') {
			*why = "'*' is allowed only as the whole first label";
			return -EINVAL;
		}
		if (!label_char(c)) {
			*why = "invalid character in name";
			return -EINVAL;
		}
		if (++label > 63) {
			*why = "label longer than 63 bytes";
			return -EINVAL;
		}
	}
	out[n] = '\0';
	if (label == 0) {
		*why = "empty label";
		return -EINVAL;
	}
	if (out[0] == '-' || out[n - 1] == '-' || strstr(out, ".-") || strstr(out, "-.")) {
		*why = "a label starts or ends with '-'";
		return -EINVAL;
	}
	/* "127.1", "2130706433", "0x7f.1", "017.0.0.1": inet_aton (so getaddrinfo) reads
	 * them as addresses; a URL parser does so whenever the last label is numeric.  A
	 * dotted quad was taken as an address before this; anything else numeric is
	 * refused rather than resolved. */
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	if (numeric_label(out + last, n - last) || getaddrinfo(out, NULL, &hints, &ai) == 0) {
		if (ai)
			freeaddrinfo(ai);
		*why = "a numeric address in a form other than a dotted quad or [IPv6]";
		return -EDOM;
	}
	return 0;
}

void govex__egress_addr_unmap(struct sockaddr_storage *ss)
{
	if (ss->ss_family != AF_INET6)
		return;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	if (!IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = s6->sin6_port};
	memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &s4, sizeof(s4));
}

/* A strict address: a dotted quad (inet_pton, which takes no other IPv4 form) or an
 * IPv6 address (an IPv4-mapped one becomes IPv4). */
static bool parse_addr(const char *host, bool v6, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!v6) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		return inet_pton(AF_INET, host, &s4->sin_addr) == 1;
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	s6->sin6_family = AF_INET6;
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
		return false;
	govex__egress_addr_unmap(ss);
	return true;
}

static void addr_text(const struct sockaddr_storage *ss, char out[256])
{
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out, 256);
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, out, 256);
}

static bool dotted_quad_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != '.' && (s[i] < '0' || s[i] > '9'))
			return false;
	return n > 0;
}

int govex__egress_target_parse(const char *host, size_t hostlen, unsigned port,
			       struct govex__egress_target *ret)
{
	struct govex__egress_target t = {.port = (uint16_t)port};
	if (port == 0 || port > 65535 || hostlen == 0 || hostlen > 253 + 1)
		return -EINVAL;
	char buf[256];
	memcpy(buf, host, hostlen);
	buf[hostlen] = '\0';
	if (memchr(buf, '\0', hostlen))
		return -EINVAL;
	if (memchr(buf, ':', hostlen)) {
		if (!parse_addr(buf, true, &t.addr))
			return -EINVAL;
		t.is_address = true;
	} else if (dotted_quad_chars(buf, hostlen) && parse_addr(buf, false, &t.addr)) {
		t.is_address = true;
	}
	if (t.is_address) {
		addr_text(&t.addr, t.host);
	} else {
		const char *why = NULL;
		int r = name_norm(buf, hostlen, t.host, &why);
		if (r < 0)
			return r;
	}
	*ret = t;
	return 0;
}

int govex__egress_rule_parse(const char *s, size_t len, struct govex__egress_rule *ret,
			     struct govex_error *err)
{
	if (!s || len == 0)
		return govex__err(err, GOVEX_EPOLICY, 0, "'': empty entry");
	char shown[80];
	size_t sn = len < 60 ? len : 60;
	size_t k = 0;
	for (size_t i = 0; i < sn; i++)
		shown[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	shown[k] = '\0';
	const char *more = len > sn ? "..." : "";
#define BAD(...) govex__err(err, GOVEX_EPOLICY, 0, "'%s%s': " __VA_ARGS__)
	if (len > GOVEX__EGRESS_ENTRY_MAX)
		return BAD("entry longer than %d bytes", shown, more, GOVEX__EGRESS_ENTRY_MAX);
	if (memchr(s, '\0', len))
		return BAD("NUL in entry", shown, more);
	/* the port: after the last ':' (after ']' for IPv6) */
	const char *colon = NULL;
	const char *hs = s, *he;
	bool v6 = false;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return BAD("'[' without ']'", shown, more);
		if (close + 1 == s + len || close[1] != ':')
			return BAD("a port is required (host:port, [ipv6]:port)", shown, more);
		hs = s + 1;
		he = close;
		colon = close + 1;
		v6 = true;
	} else {
		colon = memrchr(s, ':', len);
		if (!colon)
			return BAD("a port is required (host:port)", shown, more);
		if (memchr(s, ':', (size_t)(colon - s)))
			return BAD("an IPv6 address must be in brackets ([ipv6]:port)", shown,
				   more);
		he = colon;
	}
	const char *ps = colon + 1, *pe = s + len;
	if (ps == pe)
		return BAD("empty port", shown, more);
	unsigned long port = 0;
	for (const char *p = ps; p < pe; p++) {
		if (*p < '0' || *p > '9')
			return BAD("port is not a decimal number", shown, more);
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535)
			return BAD("port out of range (1-65535)", shown, more);
	}
	if (port == 0)
		return BAD("port out of range (1-65535)", shown, more);
	if (pe - ps > 1 && *ps == '0')
		return BAD("port with a leading zero", shown, more);

	struct govex__egress_rule r = {.port = (uint16_t)port};
	size_t hn = (size_t)(he - hs);
	if (hn == 0)
		return BAD("empty host", shown, more);
	if (hn > 255)
		return BAD("host longer than 253 bytes", shown, more);
	char host[256];
	memcpy(host, hs, hn);
	host[hn] = '\0';
	struct sockaddr_storage ss;
	if (v6) {
		if (!parse_addr(host, true, &ss))
			return BAD("not an IPv6 address inside '[]'", shown, more);
	}
	if (v6 || (dotted_quad_chars(host, hn) && parse_addr(host, false, &ss))) {
		r.kind = ss.ss_family == AF_INET ? GOVEX_EGRESS_IPV4 : GOVEX_EGRESS_IPV6;
		if (r.kind == GOVEX_EGRESS_IPV4)
			r.addr4 = ((struct sockaddr_in *)&ss)->sin_addr;
		else
			r.addr = ((struct sockaddr_in6 *)&ss)->sin6_addr;
		addr_text(&ss, r.host);
		*ret = r;
		return 0;
	}
	const char *name = host;
	r.kind = GOVEX_EGRESS_NAME;
	if (hn >= 2 && host[0] == '*' && host[1] == '.') {
		r.kind = GOVEX_EGRESS_WILDCARD;
		name = host + 2;
		hn -= 2;
	}
	const char *why = NULL;
	if (name_norm(name, hn, r.host, &why) < 0)
		return BAD("%s", shown, more, why);
	if (r.kind == GOVEX_EGRESS_WILDCARD && !strchr(r.host, '.'))
		return BAD(
		    "a wildcard must be below a domain of two labels or more (*.example.com)",
		    shown, more);
#undef BAD
	*ret = r;
	return 0;
}

void govex__egress_rule_text(const struct govex__egress_rule *r, char out[GOVEX__EGRESS_ENTRY_MAX])
{
	switch (r->kind) {
	case GOVEX_EGRESS_WILDCARD:
		snprintf(out, GOVEX__EGRESS_ENTRY_MAX, "*.%s:%u", r->host, r->port);
		break;
	case GOVEX_EGRESS_IPV6:
		snprintf(out, GOVEX__EGRESS_ENTRY_MAX, "[%s]:%u", r->host, r->port);
		break;
	default:
		snprintf(out, GOVEX__EGRESS_ENTRY_MAX, "%s:%u", r->host, r->port);
		break;
	}
}

static int rule_cmp(const void *a, const void *b)
{
	char ta[GOVEX__EGRESS_ENTRY_MAX], tb[GOVEX__EGRESS_ENTRY_MAX];
	govex__egress_rule_text(a, ta);
	govex__egress_rule_text(b, tb);
	return strcmp(ta, tb);
}

struct govex__egress_list *govex__egress_list_free(struct govex__egress_list *l)
{
	if (l) {
		free(l->rules);
		free(l);
	}
	return NULL;
}

int govex__egress_list_parse(const json_t *array, struct govex__egress_list **ret,
			     struct govex_error *err)
{
	if (!json_is_array(array))
		return govex__err(err, GOVEX_EPOLICY, 0,
				  "network.allow: must be an array of \"host:port\" strings");
	size_t n = json_array_size(array);
	if (n > ENTRIES_MAX)
		return govex__err(err, GOVEX_EPOLICY, 0, "network.allow: more than %d entries",
				  ENTRIES_MAX);
	struct govex__egress_list *l = calloc(1, sizeof(*l));
	if (!l)
		return govex__err(err, ENOMEM, ENOMEM, "network.allow: out of memory");
	l->rules = calloc(n ? n : 1, sizeof(*l->rules));
	if (!l->rules) {
		free(l);
		return govex__err(err, ENOMEM, ENOMEM, "network.allow: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(array, i);
		if (!json_is_string(v)) {
			govex__egress_list_free(l);
			return govex__err(err, GOVEX_EPOLICY, 0,
					  "network.allow[%zu]: must be a \"host:port\" string", i);
		}
		struct govex_error e1;
		if (govex__egress_rule_parse(json_string_value(v), json_string_length(v),
					     &l->rules[i], &e1) < 0) {
			govex__egress_list_free(l);
			return govex__err(err, GOVEX_EPOLICY, 0, "network.allow[%zu]: %s", i,
					  e1.message);
		}
	}
	qsort(l->rules, n, sizeof(*l->rules), rule_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || rule_cmp(&l->rules[k - 1], &l->rules[i]) != 0)
			l->rules[k++] = l->rules[i];
	l->n = k;
	*ret = l;
	return 0;
}

struct govex__egress_list *govex__egress_list_copy(const struct govex__egress_list *l)
{
	struct govex__egress_list *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->rules = calloc(l->n ? l->n : 1, sizeof(*c->rules));
	if (!c->rules) {
		free(c);
		return NULL;
	}
	if (l->n)
		memcpy(c->rules, l->rules, l->n * sizeof(*c->rules));
	c->n = l->n;
	return c;
}

json_t *govex__egress_list_json(const struct govex__egress_list *l)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < l->n; i++) {
		char t[GOVEX__EGRESS_ENTRY_MAX];
		govex__egress_rule_text(&l->rules[i], t);
		if (json_array_append_new(a, json_string(t)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static bool addr_equal_rule(const struct govex__egress_rule *r, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET && r->kind == GOVEX_EGRESS_IPV4)
		return memcmp(&((const struct sockaddr_in *)sa)->sin_addr, &r->addr4, 4) == 0;
	if (sa->sa_family == AF_INET6 && r->kind == GOVEX_EGRESS_IPV6)
		return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &r->addr, 16) == 0;
	return false;
}

bool govex__egress_list_admits(const struct govex__egress_list *l,
			       const struct govex__egress_target *t)
{
	size_t hn = strlen(t->host);
	for (size_t i = 0; i < l->n; i++) {
		const struct govex__egress_rule *r = &l->rules[i];
		if (r->port != t->port)
			continue;
		if (t->is_address) {
			if (addr_equal_rule(r, (const struct sockaddr *)&t->addr))
				return true;
			continue;
		}
		if (r->kind == GOVEX_EGRESS_NAME && strcmp(r->host, t->host) == 0)
			return true;
		if (r->kind == GOVEX_EGRESS_WILDCARD) {
			size_t dn = strlen(r->host);
			/* below the domain only: "x.pythonhosted.org", not "pythonhosted.org"
			 * nor "evilpythonhosted.org" */
			if (hn > dn + 1 && t->host[hn - dn - 1] == '.' &&
			    strcmp(t->host + hn - dn, r->host) == 0)
				return true;
		}
	}
	return false;
}

static enum govex__egress_addr_class class4(uint32_t a)
{
	if ((a >> 24) == 0)
		return GOVEX_EGRESS_ADDR_UNSPECIFIED;
	if ((a >> 24) == 127)
		return GOVEX_EGRESS_ADDR_LOOPBACK;
	if ((a >> 16) == 0xa9fe)
		return GOVEX_EGRESS_ADDR_LINK_LOCAL;
	if ((a >> 28) == 0xe)
		return GOVEX_EGRESS_ADDR_MULTICAST;
	if ((a >> 28) == 0xf)
		return GOVEX_EGRESS_ADDR_RESERVED;
	if ((a >> 24) == 10 || (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8 ||
	    (a & 0xffc00000u) == 0x64400000u)
		return GOVEX_EGRESS_ADDR_PRIVATE;
	return GOVEX_EGRESS_ADDR_PUBLIC;
}

enum govex__egress_addr_class govex__egress_addr_class(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return class4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return GOVEX_EGRESS_ADDR_RESERVED;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	const uint8_t *b = a->s6_addr;
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	if (IN6_IS_ADDR_V4MAPPED(a) || memcmp(b, nat64, 12) == 0) {
		uint32_t v4 =
		    (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
		return class4(v4);
	}
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return GOVEX_EGRESS_ADDR_UNSPECIFIED;
	if (IN6_IS_ADDR_LOOPBACK(a))
		return GOVEX_EGRESS_ADDR_LOOPBACK;
	if (IN6_IS_ADDR_V4COMPAT(a))
		return GOVEX_EGRESS_ADDR_RESERVED;
	if (IN6_IS_ADDR_LINKLOCAL(a))
		return GOVEX_EGRESS_ADDR_LINK_LOCAL;
	if (IN6_IS_ADDR_MULTICAST(a))
		return GOVEX_EGRESS_ADDR_MULTICAST;
	if ((b[0] & 0xfe) == 0xfc || IN6_IS_ADDR_SITELOCAL(a))
		return GOVEX_EGRESS_ADDR_PRIVATE;
	return GOVEX_EGRESS_ADDR_PUBLIC;
}

const char *govex__egress_addr_class_name(enum govex__egress_addr_class c)
{
	static const char *const names[] = {
	    [GOVEX_EGRESS_ADDR_PUBLIC] = "public",
	    [GOVEX_EGRESS_ADDR_PRIVATE] = "private",
	    [GOVEX_EGRESS_ADDR_LOOPBACK] = "loopback",
	    [GOVEX_EGRESS_ADDR_LINK_LOCAL] = "link-local",
	    [GOVEX_EGRESS_ADDR_UNSPECIFIED] = "unspecified",
	    [GOVEX_EGRESS_ADDR_MULTICAST] = "multicast",
	    [GOVEX_EGRESS_ADDR_RESERVED] = "reserved",
	};
	return (unsigned)c < ARRAY_SIZE(names) ? names[c] : "reserved";
}

bool govex__egress_list_admits_resolved(const struct govex__egress_list *l,
					const struct sockaddr *sa, uint16_t port)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->rules[i].port == port && addr_equal_rule(&l->rules[i], sa))
			return true;
	return govex__egress_addr_class(sa) == GOVEX_EGRESS_ADDR_PUBLIC;
}
