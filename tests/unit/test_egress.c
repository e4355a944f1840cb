/* SPDX-License-Identifier: MIT */
/*
 * unit-egress: the filtered-networking proxy core (src/lib/egress*.c).  The allowlist's
 * syntax and matching as tables; then a real proxy on loopback, with echo and HTTP
 * servers on threads of the test and names mapped by the resolver hook (nothing leaves
 * the machine).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "internal.h"

/* ---- allowlist entries ------------------------------------------------------------------- */

static const struct {
	const char *entry;
	const char *canon; /* NULL: refused, then err names this */
	const char *why;
} entries[] = {
    {"api.example.com:443", "api.example.com:443", NULL},
    {"API.Example.COM.:443", "api.example.com:443", NULL},
    {"*.pythonhosted.org:443", "*.pythonhosted.org:443", NULL},
    {"*.PythonHosted.org.:443", "*.pythonhosted.org:443", NULL},
    {"10.0.0.5:8080", "10.0.0.5:8080", NULL},
    {"[::1]:8080", "[::1]:8080", NULL},
    {"[2001:DB8:0:0::1]:443", "[2001:db8::1]:443", NULL},
    {"[::ffff:10.0.0.5]:80", "10.0.0.5:80", NULL},
    {"a_b.example:1", "a_b.example:1", NULL},
    {"x.example:65535", "x.example:65535", NULL},
    {"xn--bcher-kva.example:443", "xn--bcher-kva.example:443", NULL},
    {"", NULL, "empty entry"},
    {"api.example.com", NULL, "a port is required"},
    {"api.example.com:", NULL, "empty port"},
    {"api.example.com:0", NULL, "out of range"},
    {"api.example.com:65536", NULL, "out of range"},
    {"api.example.com:99999999999999999999", NULL, "out of range"},
    {"api.example.com:443x", NULL, "not a decimal"},
    {"api.example.com:+443", NULL, "not a decimal"},
    {"api.example.com: 443", NULL, "not a decimal"},
    {"api.example.com:0443", NULL, "leading zero"},
    {":443", NULL, "empty host"},
    {"api..example.com:443", NULL, "empty label"},
    {".example.com:443", NULL, "empty label"},
    {"api.example.com..:443", NULL, "empty label"},
    {"*.*.example.com:443", NULL, "'*'"},
    {"api.*.com:443", NULL, "'*'"},
    {"*example.com:443", NULL, "'*'"},
    {"*:443", NULL, "'*'"},
    {"*.com:443", NULL, "two labels"},
    {"b\xc3\xbc"
     "cher.example:443",
     NULL, "non-ASCII"},
    {"api example.com:443", NULL, "invalid character"},
    {"api/example.com:443", NULL, "invalid character"},
    {"-api.example.com:443", NULL, "'-'"},
    {"api-.example.com:443", NULL, "'-'"},
    {"::1:8080", NULL, "brackets"},
    {"[::1]", NULL, "port is required"},
    {"[::1:8080", NULL, "without ']'"},
    {"[10.0.0.5]:80", NULL, "not an IPv6"},
    {"[fe80::1%eth0]:80", NULL, "not an IPv6"},
    {"2130706433:80", NULL, "numeric address"},
    {"0x7f.1:80", NULL, "numeric address"},
    {"127.1:80", NULL, "numeric address"},
    {"017.0.0.1:80", NULL, "numeric address"},
    {"1.2.3.4.:80", NULL, "numeric address"},
    {"1.2.3.256:80", NULL, "numeric address"},
    {"foo.0x10:80", NULL, "numeric address"},
    {"a\0b.example:80", NULL, "NUL"},
};

START_TEST(test_entry)
{
	struct govex__egress_rule r;
	struct govex_error err = {0};
	size_t len = strlen(entries[_i].entry);
	if (entries[_i].why && strcmp(entries[_i].why, "NUL") == 0)
		len = 14; /* "a\0b.example:80" */
	int ret = govex__egress_rule_parse(entries[_i].entry, len, &r, &err);
	if (entries[_i].canon) {
		ck_assert_msg(ret == 0, "%s: %s", entries[_i].entry, err.message);
		char t[GOVEX__EGRESS_ENTRY_MAX];
		govex__egress_rule_text(&r, t);
		ck_assert_str_eq(t, entries[_i].canon);
	} else {
		ck_assert_msg(ret == -GOVEX_EPOLICY, "%s accepted", entries[_i].entry);
		ck_assert_msg(strstr(err.message, entries[_i].why), "%s: %s", entries[_i].entry,
			      err.message);
		/* the message names the entry (printable part) */
		if (entries[_i].entry[0] && (unsigned char)entries[_i].entry[0] < 0x80)
			ck_assert_msg(err.message[0] == '\'' &&
					  err.message[1] == entries[_i].entry[0],
				      "%s", err.message);
	}
}
END_TEST

START_TEST(test_list_canonical)
{
	json_t *a = json_pack("[s,s,s,s,s]", "b.example:443", "A.example:443", "[::1]:80",
			      "a.example.:443", "*.c.example:1");
	struct govex__egress_list *l = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex__egress_list_parse(a, &l, &err), 0);
	json_t *c = govex__egress_list_json(l);
	char *s = json_dumps(c, JSON_COMPACT);
	ck_assert_str_eq(s, "[\"*.c.example:1\",\"[::1]:80\",\"a.example:443\",\"b.example:443\"]");
	free(s);
	json_decref(c);
	govex__egress_list_free(l);
	json_decref(a);

	a = json_pack("[s,i]", "a.example:443", 3);
	ck_assert_int_eq(govex__egress_list_parse(a, &l, &err), -GOVEX_EPOLICY);
	ck_assert_str_eq(err.message, "network.allow[1]: must be a \"host:port\" string");
	json_decref(a);
	a = json_pack("[s,s]", "a.example:443", "b.example");
	ck_assert_int_eq(govex__egress_list_parse(a, &l, &err), -GOVEX_EPOLICY);
	ck_assert_msg(strstr(err.message, "network.allow[1]: 'b.example': a port is required"),
		      "%s", err.message);
	json_decref(a);
}
END_TEST

static struct govex__egress_list *list_of(const char *const *e, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(e[i]));
	struct govex__egress_list *l = NULL;
	struct govex_error err;
	ck_assert_msg(govex__egress_list_parse(a, &l, &err) == 0, "%s", err.message);
	json_decref(a);
	return l;
}

static const char *const match_list[] = {"api.example.com:443", "*.pythonhosted.org:443",
					 "10.0.0.5:8080", "[::1]:8080"};
static const struct {
	const char *host;
	unsigned port;
	int parse; /* 0, -EINVAL, -EDOM */
	bool admits;
} matches[] = {
    {"api.example.com", 443, 0, true},
    {"API.EXAMPLE.COM.", 443, 0, true},
    {"api.example.com", 80, 0, false},
    {"www.api.example.com", 443, 0, false},
    {"example.com", 443, 0, false},
    {"files.pythonhosted.org", 443, 0, true},
    {"a.b.pythonhosted.org", 443, 0, true},
    {"pythonhosted.org", 443, 0, false}, /* the apex is not below itself */
    {"evilpythonhosted.org", 443, 0, false},
    {"pythonhosted.org.evil.com", 443, 0, false},
    {"10.0.0.5", 8080, 0, true},
    {"10.0.0.5", 80, 0, false},
    {"::ffff:10.0.0.5", 8080, 0, true}, /* the same address, normalised */
    {"::ffff:a00:5", 8080, 0, true},
    {"::1", 8080, 0, true},
    {"0:0:0:0:0:0:0:1", 8080, 0, true},
    {"::2", 8080, 0, false},
    {"167772165", 8080, -EDOM, false}, /* 10.0.0.5 as one number */
    {"0xa.0.0.5", 8080, -EDOM, false},
    {"10.5", 8080, -EDOM, false},
    {"012.0.0.5", 8080, -EDOM, false},
    {"10.0.0.5.", 8080, -EDOM, false},
    {"fe80::1%lo", 8080, -EINVAL, false},
    {"", 443, -EINVAL, false},
    {"a..b", 443, -EINVAL, false},
    {"*.pythonhosted.org", 443, -EINVAL, false},
    {"api.example.com", 0, -EINVAL, false},
};

START_TEST(test_match)
{
	struct govex__egress_list *l = list_of(match_list, ARRAY_SIZE(match_list));
	struct govex__egress_target t;
	int r = govex__egress_target_parse(matches[_i].host, strlen(matches[_i].host),
					   matches[_i].port, &t);
	ck_assert_msg(r == matches[_i].parse, "%s: %d", matches[_i].host, r);
	if (r == 0)
		ck_assert_msg(govex__egress_list_admits(l, &t) == matches[_i].admits, "%s:%u",
			      matches[_i].host, matches[_i].port);
	govex__egress_list_free(l);
}
END_TEST

static struct sockaddr_storage sa_of(const char *text)
{
	struct sockaddr_storage ss = {0};
	if (strchr(text, ':')) {
		ss.ss_family = AF_INET6;
		ck_assert(inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1);
	} else {
		ss.ss_family = AF_INET;
		ck_assert(inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1);
	}
	return ss;
}

static const struct {
	const char *addr;
	enum govex__egress_addr_class c;
} classes[] = {
    {"93.184.216.34", GOVEX_EGRESS_ADDR_PUBLIC},
    {"127.0.0.1", GOVEX_EGRESS_ADDR_LOOPBACK},
    {"127.255.0.9", GOVEX_EGRESS_ADDR_LOOPBACK},
    {"0.0.0.0", GOVEX_EGRESS_ADDR_UNSPECIFIED},
    {"169.254.169.254", GOVEX_EGRESS_ADDR_LINK_LOCAL},
    {"10.1.2.3", GOVEX_EGRESS_ADDR_PRIVATE},
    {"172.16.0.1", GOVEX_EGRESS_ADDR_PRIVATE},
    {"172.31.255.255", GOVEX_EGRESS_ADDR_PRIVATE},
    {"172.32.0.1", GOVEX_EGRESS_ADDR_PUBLIC},
    {"192.168.1.1", GOVEX_EGRESS_ADDR_PRIVATE},
    {"100.64.0.1", GOVEX_EGRESS_ADDR_PRIVATE},
    {"100.128.0.1", GOVEX_EGRESS_ADDR_PUBLIC},
    {"224.0.0.1", GOVEX_EGRESS_ADDR_MULTICAST},
    {"255.255.255.255", GOVEX_EGRESS_ADDR_RESERVED},
    {"2606:2800:220:1::1", GOVEX_EGRESS_ADDR_PUBLIC},
    {"::1", GOVEX_EGRESS_ADDR_LOOPBACK},
    {"::", GOVEX_EGRESS_ADDR_UNSPECIFIED},
    {"fe80::1", GOVEX_EGRESS_ADDR_LINK_LOCAL},
    {"febf::1", GOVEX_EGRESS_ADDR_LINK_LOCAL},
    {"fc00::1", GOVEX_EGRESS_ADDR_PRIVATE},
    {"fd12::1", GOVEX_EGRESS_ADDR_PRIVATE},
    {"ff02::1", GOVEX_EGRESS_ADDR_MULTICAST},
    {"::ffff:127.0.0.1", GOVEX_EGRESS_ADDR_LOOPBACK},
    {"::ffff:169.254.169.254", GOVEX_EGRESS_ADDR_LINK_LOCAL},
    {"::ffff:8.8.8.8", GOVEX_EGRESS_ADDR_PUBLIC},
    {"64:ff9b::7f00:1", GOVEX_EGRESS_ADDR_LOOPBACK},
    {"::7f00:1", GOVEX_EGRESS_ADDR_RESERVED},
};

START_TEST(test_addr_class)
{
	struct sockaddr_storage ss = sa_of(classes[_i].addr);
	ck_assert_msg(
	    govex__egress_addr_class((struct sockaddr *)&ss) == classes[_i].c, "%s: %s",
	    classes[_i].addr,
	    govex__egress_addr_class_name(govex__egress_addr_class((struct sockaddr *)&ss)));
}
END_TEST

START_TEST(test_admits_resolved)
{
	static const char *const e[] = {"10.0.0.5:8080", "127.0.0.1:9"};
	struct govex__egress_list *l = list_of(e, ARRAY_SIZE(e));
	struct sockaddr_storage ss = sa_of("10.0.0.5");
	ck_assert(govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 8080));
	ck_assert(!govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 8081));
	ss = sa_of("10.0.0.6");
	ck_assert(!govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 8080));
	ss = sa_of("127.0.0.1");
	ck_assert(govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 9));
	ck_assert(!govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 8080));
	ss = sa_of("8.8.8.8");
	ck_assert(govex__egress_list_admits_resolved(l, (struct sockaddr *)&ss, 1));
	govex__egress_list_free(l);
}
END_TEST

/* ---- request heads -------------------------------------------------------------------------- */

static const struct {
	const char *req;
	enum govex__egress_req_state state;
	int status;
	const char *what; /* READY: "C host:port" or the rewritten head; REFUSE: in message */
} reqs[] = {
    {"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
     GOVEX_EGRESS_REQ_READY, 0, "C api.example.com:443"},
    {"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_READY, 0, "C ::1:8080"},
    {"CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_READY, 0, "C 127.0.0.1:80"},
    {"CONNECT API.Example.com.:443 HTTP/1.0\r\n\r\n", GOVEX_EGRESS_REQ_READY, 0,
     "C api.example.com:443"},
    {"CONNECT api.example.com:443 HTTP/1.1\r\n", GOVEX_EGRESS_REQ_MORE, 0, NULL},
    {"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 403, "numeric"},
    {"CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 403, "numeric"},
    {"CONNECT 127.1:443 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 403, "numeric"},
    {"CONNECT api.example.com HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, "host:port"},
    {"CONNECT api.example.com:99999 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, ""},
    {"CONNECT api.example.com:0 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, "not a valid"},
    {"CONNECT a b:443 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, ""},
    {"CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, "not a valid"},
    {"GET http://api.example.com/a/b?c=d#frag HTTP/1.1\r\nHost: evil.example\r\n"
     "Proxy-Connection: keep-alive\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
     GOVEX_EGRESS_REQ_READY, 0,
     "GET /a/b?c=d HTTP/1.1\r\nHost: api.example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"},
    {"POST http://10.0.0.5:8080 HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", GOVEX_EGRESS_REQ_READY,
     0, "POST / HTTP/1.0\r\nHost: 10.0.0.5:8080\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"},
    {"GET http://[::1]:8080/x HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_READY, 0,
     "GET /x HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n"},
    {"GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400,
     "absolute URL"},
    {"GET https://api.example.com/ HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, "CONNECT"},
    {"GET ftp://api.example.com/ HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400, "only http"},
    {"GET http://u:p@api.example.com/ HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400,
     "credentials"},
    {"GET http://2130706433/ HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 403, "numeric"},
    {"BREW http://api.example.com/ HTTP/1.1\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 405, "method"},
    {"hello\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 405, "method"},
    {"GET http://a.example/ HTTP/1.1\r\nX: a\r\nTransfer-Encoding: gzip\r\n\r\n",
     GOVEX_EGRESS_REQ_REFUSE, 400, "malformed"},
    {"GET http://a.example/ HTTP/1.1\r\nNo-colon\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400,
     "malformed"},
    {"GET http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
     GOVEX_EGRESS_REQ_REFUSE, 400, "malformed"},
    /* obs-fold: a value continued on the next line would carry its CRLF into the
     * forwarded head and end it there (what follows smuggled as a second request) */
    {"GET http://a.example/ HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400,
     "obs-fold"},
    {"GET http://a.example/ HTTP/1.1\r\nX-A: one\r\n\tGET http://a.example/x HTTP/1.1\r\n\r\n",
     GOVEX_EGRESS_REQ_REFUSE, 400, "obs-fold"},
    {"CONNECT a.example:443 HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n", GOVEX_EGRESS_REQ_REFUSE, 400,
     "obs-fold"},
};

START_TEST(test_request)
{
	struct govex__egress_req r;
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	const char *s = reqs[_i].req;
	size_t n = strlen(s);
	/* fed a byte at a time: the head arrives in pieces */
	char buf[GOVEX__EGRESS_HEAD_MAX];
	enum govex__egress_req_state st = GOVEX_EGRESS_REQ_MORE;
	for (size_t i = 0; i < n && st == GOVEX_EGRESS_REQ_MORE; i++) {
		buf[i] = s[i];
		st = govex__egress_req_feed(&r, buf, i + 1, 1);
	}
	ck_assert_msg(st == reqs[_i].state, "%s: state %d (%s)", s, st, r.message);
	if (st == GOVEX_EGRESS_REQ_REFUSE) {
		ck_assert_int_eq(r.status, reqs[_i].status);
		ck_assert_msg(strstr(r.message, reqs[_i].what), "%s", r.message);
		ck_assert_msg(strncmp(r.message, "govex: ", 7) == 0, "%s", r.message);
	} else if (st == GOVEX_EGRESS_REQ_READY && r.connect) {
		char t[300];
		snprintf(t, sizeof(t), "C %s:%u", r.target.host, r.target.port);
		ck_assert_str_eq(t, reqs[_i].what);
		ck_assert_uint_eq(r.consumed, n);
	} else if (st == GOVEX_EGRESS_REQ_READY) {
		ck_assert_str_eq(r.head, reqs[_i].what);
	}
	govex__egress_req_done(&r);
}
END_TEST

START_TEST(test_request_body_end)
{
	/* a body, then a second request for another host: only the first is the request's */
	const char *s = "POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
	const char *rest = "hel"
			   "lo"
			   "GET http://evil.example/ HTTP/1.1\r\n\r\n";
	struct govex__egress_req r;
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	char buf[256];
	size_t n = strlen(s);
	memcpy(buf, s, n);
	ck_assert_int_eq(govex__egress_req_feed(&r, buf, n, n), GOVEX_EGRESS_REQ_READY);
	ck_assert_uint_eq(r.consumed, n);
	bool done = false;
	ck_assert_int_eq(govex__egress_req_body(&r, rest, 3, &done), 3);
	ck_assert(!done);
	ck_assert_int_eq(govex__egress_req_body(&r, rest + 3, strlen(rest) - 3, &done), 2);
	ck_assert(done);
	ck_assert_int_eq(govex__egress_req_body(&r, "x", 1, &done), 0);
	ck_assert(done);
	govex__egress_req_done(&r);

	/* no body: the request ends with its head */
	s = "GET http://a.example/ HTTP/1.1\r\n\r\nGET http://evil.example/ HTTP/1.1\r\n\r\n";
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	n = strlen(s);
	memcpy(buf, s, n);
	ck_assert_int_eq(govex__egress_req_feed(&r, buf, n, n), GOVEX_EGRESS_REQ_READY);
	ck_assert_uint_eq(r.consumed, strlen("GET http://a.example/ HTTP/1.1\r\n\r\n"));
	ck_assert_int_eq(govex__egress_req_body(&r, buf + r.consumed, n - r.consumed, &done), 0);
	ck_assert(done);
	govex__egress_req_done(&r);

	/* chunked */
	s = "POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	rest = "3\r\nabc\r\n0\r\n\r\nXYZ";
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	n = strlen(s);
	memcpy(buf, s, n);
	ck_assert_int_eq(govex__egress_req_feed(&r, buf, n, n), GOVEX_EGRESS_REQ_READY);
	ck_assert_int_eq(govex__egress_req_body(&r, rest, strlen(rest), &done),
			 (ssize_t)strlen(rest) - 3);
	ck_assert(done);
	govex__egress_req_done(&r);
}
END_TEST

START_TEST(test_request_whole)
{
	/* the head in one feed, as a client that writes it at once sends it */
	struct govex__egress_req r;
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	const char *s = reqs[_i].req;
	size_t n = strlen(s);
	char buf[GOVEX__EGRESS_HEAD_MAX];
	memcpy(buf, s, n);
	enum govex__egress_req_state st = govex__egress_req_feed(&r, buf, n, n);
	ck_assert_msg(st == reqs[_i].state, "%s: state %d (%s)", s, st, r.message);
	if (st == GOVEX_EGRESS_REQ_REFUSE)
		ck_assert_int_eq(r.status, reqs[_i].status);
	else if (st == GOVEX_EGRESS_REQ_READY && !r.connect)
		ck_assert_str_eq(r.head, reqs[_i].what);
	govex__egress_req_done(&r);
}
END_TEST

START_TEST(test_request_names_refused)
{
	/* a numeric form is refused with the destination as given, for the denial */
	static const struct {
		const char *req, *host;
		unsigned port;
	} cases[] = {
	    {"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", "2130706433", 443},
	    {"GET http://0x7f.1:8080/ HTTP/1.1\r\n\r\n", "0x7f.1", 8080},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct govex__egress_req r;
		ck_assert_int_eq(govex__egress_req_init(&r), 0);
		char buf[256];
		size_t n = strlen(cases[i].req);
		memcpy(buf, cases[i].req, n);
		ck_assert_int_eq(govex__egress_req_feed(&r, buf, n, n), GOVEX_EGRESS_REQ_REFUSE);
		ck_assert(r.named);
		ck_assert_str_eq(r.target.host, cases[i].host);
		ck_assert_uint_eq(r.target.port, cases[i].port);
		govex__egress_req_done(&r);
	}
}
END_TEST

START_TEST(test_request_too_long)
{
	struct govex__egress_req r;
	ck_assert_int_eq(govex__egress_req_init(&r), 0);
	static char buf[GOVEX__EGRESS_HEAD_MAX];
	const char *start = "GET http://a.example/ HTTP/1.1\r\nX-Long: ";
	size_t n = strlen(start);
	memcpy(buf, start, n);
	memset(buf + n, 'a', sizeof(buf) - n);
	ck_assert_int_eq(govex__egress_req_feed(&r, buf, n, n), GOVEX_EGRESS_REQ_MORE);
	enum govex__egress_req_state st =
	    govex__egress_req_feed(&r, buf, sizeof(buf), sizeof(buf) - n);
	ck_assert_int_eq(st, GOVEX_EGRESS_REQ_REFUSE);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(r.reason, "header_too_long");
	govex__egress_req_done(&r);
}
END_TEST

/* ---- a real proxy on loopback -------------------------------------------------------------- */

static int listen_lo(unsigned *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	socklen_t len = sizeof(a);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int connect_lo(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The echo server: each connection echoed back until EOF, on a thread of its own. */
static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char b[8192];
	ssize_t n;
	while ((n = read(fd, b, sizeof(b))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = send(fd, b + off, (size_t)(n - off), MSG_NOSIGNAL);
			if (w <= 0)
				goto out;
			off += w;
		}
out:
	close(fd);
	return NULL;
}

static atomic_uint echo_accepts; /* connections the echo servers accepted */

static unsigned echo_accepted(void)
{
	return atomic_load(&echo_accepts);
}

static void *echo_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		atomic_fetch_add(&echo_accepts, 1);
		pthread_t t;
		pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static unsigned echo_start(void)
{
	unsigned port;
	int fd = listen_lo(&port);
	pthread_t t;
	pthread_create(&t, NULL, echo_main, (void *)(intptr_t)fd);
	pthread_detach(t);
	return port;
}

/* The HTTP server: records the first connection's bytes until the request's blank line
 * (and what follows within 200 ms), then answers "hello" and closes. */
static char http_seen[8192];
static const char http_resp[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
static size_t http_seen_len;

static void *http_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (http_seen_len < sizeof(http_seen) - 1 && poll(&p, 1, 200) > 0) {
		ssize_t n =
		    read(fd, http_seen + http_seen_len, sizeof(http_seen) - 1 - http_seen_len);
		if (n <= 0)
			break;
		http_seen_len += (size_t)n;
	}
	http_seen[http_seen_len] = '\0';
	ssize_t w = send(fd, http_resp, sizeof(http_resp) - 1, MSG_NOSIGNAL);
	(void)w;
	close(fd);
	close(lfd);
	return NULL;
}

static unsigned http_start(pthread_t *t)
{
	unsigned port;
	int fd = listen_lo(&port);
	http_seen_len = 0;
	pthread_create(t, NULL, http_main, (void *)(intptr_t)fd);
	return port;
}

/* The resolver hook: names of the test, mapped to loopback forms. */
static const struct {
	const char *name;
	const char *addr;
} names[] = {
    {"good.test", "127.0.0.1"},
    {"evil.test", "127.0.0.1"},
    {"mapped.test", "::ffff:127.0.0.1"},
    {"meta.test", "169.254.169.254"},
    {"mixed.test", "::1"},
    {"mixed.test", "127.0.0.1"},
};
static int resolver_delay_ms;

static int test_resolve(void *data, const char *name, struct sockaddr_storage *addrs, size_t max)
{
	(void)data;
	if (resolver_delay_ms) {
		struct timespec ts = {resolver_delay_ms / 1000,
				      (resolver_delay_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names) && n < max; i++)
		if (strcmp(names[i].name, name) == 0)
			addrs[n++] = sa_of(names[i].addr);
	return n ? (int)n : -ENOENT;
}

struct proxy {
	struct govex__egress *e;
	struct govex__egress_list *list;
	unsigned port;
};

static void proxy_start(struct proxy *p, const char *const *allow, size_t n,
			struct govex__egress_config *cfg)
{
	p->list = list_of(allow, n);
	struct govex__egress_config def = {0};
	if (!cfg)
		cfg = &def;
	cfg->allow = p->list;
	cfg->resolve = test_resolve;
	int lfd = listen_lo(&p->port);
	struct govex_error err;
	ck_assert_msg(govex__egress_start(cfg, lfd, &p->e, &err) == 0, "%s", err.message);
}

static json_t *proxy_stop(struct proxy *p)
{
	json_t *ledger = NULL;
	govex__egress_stop(p->e, &ledger);
	govex__egress_list_free(p->list);
	ck_assert_ptr_nonnull(ledger);
	return ledger;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		ck_assert_int_gt(w, 0);
		s += w;
		n -= (size_t)w;
	}
}

/* Reads the response head; returns its status, the head in out. */
static int read_head(int fd, char *out, size_t cap)
{
	size_t len = 0;
	while (len < cap - 1) {
		ssize_t n = read(fd, out + len, 1);
		if (n <= 0)
			break;
		len++;
		out[len] = '\0';
		if (len >= 4 && memcmp(out + len - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	out[len] = '\0';
	int status = 0;
	if (sscanf(out, "HTTP/1.1 %d", &status) != 1)
		return -1;
	return status;
}

/* Reads to EOF (or the receive timeout) into out; returns the byte count. */
static size_t read_rest(int fd, char *out, size_t cap)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, out + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap - 1)
			break;
	}
	out[len] = '\0';
	return len;
}

static int do_connect(unsigned proxy_port, const char *target, char *head, size_t cap)
{
	int fd = connect_lo(proxy_port);
	char req[512];
	int n =
	    snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	send_all(fd, req, (size_t)n);
	int st = read_head(fd, head, cap);
	(void)st;
	return fd;
}

static json_t *ledger_entry(json_t *ledger, const char *host, bool allowed, const char *reason)
{
	size_t i;
	json_t *v;
	json_array_foreach(ledger, i, v)
	{
		const char *h = json_string_value(json_object_get(v, "host"));
		const char *r = json_string_value(json_object_get(v, "reason"));
		if (((!h && !host) || (h && host && strcmp(h, host) == 0)) &&
		    json_is_true(json_object_get(v, "allowed")) == allowed &&
		    ((!r && !reason) || (r && reason && strcmp(r, reason) == 0)))
			return v;
	}
	char *s = json_dumps(ledger, 0);
	ck_abort_msg("no ledger entry %s %d %s in %s", host, allowed, reason, s);
	free(s);
	return NULL;
}

static json_int_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

START_TEST(test_proxy_connect_relays)
{
	unsigned ep = echo_start();
	char allow[64], target[64], head[1024];
	snprintf(allow, sizeof(allow), "127.0.0.1:%u", ep);
	const char *const a[] = {allow};
	struct proxy p;
	proxy_start(&p, a, 1, NULL);
	snprintf(target, sizeof(target), "127.0.0.1:%u", ep);
	int fd = do_connect(p.port, target, head, sizeof(head));
	ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
	/* 300 000 bytes of a pattern, echoed back exactly (the writer on a thread of its own
	 * would be needed for more than the buffers hold: write and read in turns) */
	enum { N = 300000 };
	char *out = malloc(N), *in = malloc(N);
	for (size_t i = 0; i < N; i++)
		out[i] = (char)(i * 7 + i / 251);
	size_t sent = 0, got = 0;
	while (got < N) {
		if (sent < N) {
			size_t k = N - sent < 4096 ? N - sent : 4096;
			send_all(fd, out + sent, k);
			sent += k;
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		while (got < N && poll(&pf, 1, sent < N ? 0 : 5000) > 0) {
			ssize_t n = read(fd, in + got, N - got);
			ck_assert_int_gt(n, 0);
			got += (size_t)n;
		}
	}
	ck_assert(memcmp(in, out, N) == 0);
	shutdown(fd, SHUT_WR);
	char c;
	ck_assert_int_eq(read(fd, &c, 1), 0); /* the echo's EOF comes through */
	close(fd);
	free(in);
	free(out);
	json_t *ledger = proxy_stop(&p);
	json_t *en = ledger_entry(ledger, "127.0.0.1", true, NULL);
	ck_assert_int_eq(jint(en, "connections"), 1);
	ck_assert_int_eq(jint(en, "bytes_up"), N);
	ck_assert_int_eq(jint(en, "bytes_down"), N);
	ck_assert_int_eq(jint(en, "port"), ep);
	ck_assert_str_eq(json_string_value(json_object_get(en, "address")), "127.0.0.1");
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_refused)
{
	const char *const a[] = {"api.example.com:443"};
	struct proxy p;
	proxy_start(&p, a, 1, NULL);
	char head[1024], body[512];
	int fd = do_connect(p.port, "api.evil.com:443", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_str_eq(body, "govex: api.evil.com:443 is not in this run's network allowlist\n");
	close(fd);
	/* the allowed name on another port */
	fd = do_connect(p.port, "api.example.com:80", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	json_t *en = ledger_entry(ledger, "api.evil.com", false, "not_in_allowlist");
	ck_assert_int_eq(jint(en, "connections"), 1);
	ck_assert_int_eq(jint(en, "port"), 443);
	ck_assert_int_eq(jint(en, "bytes_up"), 0);
	ledger_entry(ledger, "api.example.com", false, "not_in_allowlist");
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_rebinding)
{
	unsigned ep = echo_start();
	char e1[64], e2[64], e3[64], e4[64], lit[64], t[64], head[1024], body[512];
	snprintf(e1, sizeof(e1), "evil.test:%u", ep);
	snprintf(e2, sizeof(e2), "mapped.test:%u", ep);
	snprintf(e3, sizeof(e3), "meta.test:%u", ep);
	snprintf(e4, sizeof(e4), "good.test:%u", ep);
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep + 1 == 65536 ? 1 : ep + 1);
	const char *const a[] = {e1, e2, e3, e4, lit};
	struct proxy p;
	proxy_start(&p, a, ARRAY_SIZE(a), NULL);
	/* an allowed name resolving to loopback: refused */
	int fd = do_connect(p.port, e1, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "evil.test resolves only to addresses this run may not reach "
				   "(127.0.0.1: loopback)"),
		      "%s", body);
	close(fd);
	/* the same through an IPv4-mapped IPv6 answer, and to the metadata address */
	fd = do_connect(p.port, e2, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	close(fd);
	fd = do_connect(p.port, e3, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "169.254.169.254: link-local"), "%s", body);
	close(fd);
	/* 127.0.0.1 is listed literally, but on another port: still refused */
	fd = do_connect(p.port, e4, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	json_t *en = ledger_entry(ledger, "evil.test", false, "refused_address");
	ck_assert_str_eq(json_string_value(json_object_get(en, "address")), "127.0.0.1");
	ledger_entry(ledger, "mapped.test", false, "refused_address");
	ledger_entry(ledger, "meta.test", false, "refused_address");
	json_decref(ledger);

	/* listed literally with the same port: the name may lead there */
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const b[] = {e4, lit};
	proxy_start(&p, b, ARRAY_SIZE(b), NULL);
	fd = do_connect(p.port, e4, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	send_all(fd, "ping", 4);
	char in[5] = "";
	ck_assert_int_eq(read(fd, in, 4), 4);
	ck_assert_str_eq(in, "ping");
	close(fd);
	snprintf(t, sizeof(t), "nosuch.test:%u", ep);
	ledger = proxy_stop(&p);
	en = ledger_entry(ledger, "good.test", true, NULL);
	ck_assert_int_eq(jint(en, "bytes_up"), 4);
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_numeric_forms)
{
	unsigned ep = echo_start();
	char lit[64], t[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	struct proxy p;
	proxy_start(&p, a, 1, NULL);
	static const char *const tricks[] = {"2130706433", "0x7f.1",	 "127.1",
					     "0177.0.0.1", "0x7f000001", "127.0.0.1."};
	for (size_t i = 0; i < ARRAY_SIZE(tricks); i++) {
		snprintf(t, sizeof(t), "%s:%u", tricks[i], ep);
		int fd = do_connect(p.port, t, head, sizeof(head));
		ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s: %s", t, head);
		close(fd);
	}
	/* the mapped form is the same address, normalised: allowed and counted as it */
	snprintf(t, sizeof(t), "[::ffff:127.0.0.1]:%u", ep);
	int fd = do_connect(p.port, t, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s: %s", t, head);
	close(fd);
	/* [::1] is another address: not listed */
	snprintf(t, sizeof(t), "[::1]:%u", ep);
	fd = do_connect(p.port, t, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s: %s", t, head);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	/* each refusal names the destination as the request gave it */
	for (size_t i = 0; i < ARRAY_SIZE(tricks); i++) {
		json_t *en = ledger_entry(ledger, tricks[i], false, "numeric_form");
		ck_assert_int_eq(jint(en, "connections"), 1);
		ck_assert_int_eq(jint(en, "port"), ep);
	}
	ledger_entry(ledger, "127.0.0.1", true, NULL);
	ledger_entry(ledger, "::1", false, "not_in_allowlist");
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_plain_http)
{
	pthread_t ht;
	unsigned hp = http_start(&ht);
	char lit[64], req[512], head[1024], body[64];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", hp);
	const char *const a[] = {lit};
	struct proxy p;
	proxy_start(&p, a, 1, NULL);
	int fd = connect_lo(p.port);
	/* a second request for another host right behind the first: not forwarded */
	int n = snprintf(req, sizeof(req),
			 "GET http://127.0.0.1:%u/path?q=1 HTTP/1.1\r\nHost: wrong.example\r\n"
			 "Proxy-Connection: keep-alive\r\nUser-Agent: t\r\n\r\n"
			 "GET http://evil.example/ HTTP/1.1\r\n\r\n",
			 hp);
	send_all(fd, req, (size_t)n);
	ck_assert_int_eq(read_head(fd, head, sizeof(head)), 200);
	read_rest(fd, body, sizeof(body));
	ck_assert_str_eq(body, "hello");
	close(fd);
	pthread_join(ht, NULL);
	char want[256];
	snprintf(want, sizeof(want),
		 "GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUser-Agent: t\r\n"
		 "Connection: close\r\n\r\n",
		 hp);
	ck_assert_str_eq(http_seen, want);
	json_t *ledger = proxy_stop(&p);
	json_t *en = ledger_entry(ledger, "127.0.0.1", true, NULL);
	ck_assert_int_eq(jint(en, "bytes_up"), (json_int_t)strlen(want));
	ck_assert_int_eq(jint(en, "bytes_down"), (json_int_t)sizeof(http_resp) - 1);
	json_decref(ledger);
}
END_TEST

static void expect_status(unsigned port, const char *req, size_t len, int status, const char *text)
{
	int fd = connect_lo(port);
	send_all(fd, req, len);
	char head[1024], body[512];
	ck_assert_int_eq(read_head(fd, head, sizeof(head)), status);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, text), "%s", body);
	close(fd);
}

START_TEST(test_proxy_bad_requests)
{
	const char *const a[] = {"api.example.com:443"};
	struct proxy p;
	proxy_start(&p, a, 1, NULL);
	const char *r1 = "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
	expect_status(p.port, r1, strlen(r1), 400, "absolute URL");
	const char *r2 = "GET http://a.example/ HTTP/1.1\r\nNo-colon\r\n\r\n";
	expect_status(p.port, r2, strlen(r2), 400, "malformed request");
	const char *r3 = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
	expect_status(p.port, r3, strlen(r3), 405, "method not supported");
	static char big[GOVEX__EGRESS_HEAD_MAX + 100];
	const char *start = "CONNECT api.example.com:443 HTTP/1.1\r\nX: ";
	memcpy(big, start, strlen(start));
	memset(big + strlen(start), 'a', sizeof(big) - strlen(start));
	expect_status(p.port, big, sizeof(big), 400, "longer than 16384 bytes");
	json_t *ledger = proxy_stop(&p);
	ck_assert_int_eq(jint(ledger_entry(ledger, NULL, false, "bad_request"), "connections"), 1);
	ledger_entry(ledger, NULL, false, "not_proxy_request");
	ledger_entry(ledger, NULL, false, "bad_method");
	ledger_entry(ledger, NULL, false, "header_too_long");
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_connection_limits)
{
	unsigned ep = echo_start();
	char lit[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	struct proxy p;
	struct govex__egress_config cfg = {.max_concurrent = 2, .max_total = 3};
	proxy_start(&p, a, 1, &cfg);
	int f1 = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	int f2 = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	int f3 = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	char body[256];
	read_rest(f3, body, sizeof(body));
	ck_assert_msg(strstr(body, "2 connections open"), "%s", body);
	close(f3);
	/* one closes: a third is let in, and that is the total */
	close(f1);
	struct timespec ts = {0, 100 * 1000000L};
	nanosleep(&ts, NULL);
	int f4 = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	close(f4);
	nanosleep(&ts, NULL);
	int f5 = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	read_rest(f5, body, sizeof(body));
	ck_assert_msg(strstr(body, "made 3 connections"), "%s", body);
	close(f5);
	close(f2);
	json_t *ledger = proxy_stop(&p);
	ck_assert_int_eq(jint(ledger_entry(ledger, NULL, false, "concurrent_limit"), "connections"),
			 1);
	ck_assert_int_eq(jint(ledger_entry(ledger, NULL, false, "total_limit"), "connections"), 1);
	ck_assert_int_eq(jint(ledger_entry(ledger, "127.0.0.1", true, NULL), "connections"), 3);
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_byte_limit)
{
	unsigned ep = echo_start();
	char lit[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	struct proxy p;
	struct govex__egress_config cfg = {.max_bytes_up = 1000};
	proxy_start(&p, a, 1, &cfg);
	int fd = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	char buf[5000];
	memset(buf, 'x', sizeof(buf));
	send_all(fd, buf, sizeof(buf));
	static char in[10000];
	size_t got = read_rest(fd, in, sizeof(in)); /* the tunnel closes: EOF, not the timeout */
	ck_assert_uint_le(got, 1000);
	close(fd);
	/* a new request once the budget is spent: refused before any connect, CONNECT
	 * without early data included */
	unsigned before = echo_accepted();
	fd = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	char body[256];
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "byte limit"), "%s", body);
	close(fd);
	ck_assert_uint_eq(echo_accepted(), before);
	json_t *ledger = proxy_stop(&p);
	json_t *en = ledger_entry(ledger, "127.0.0.1", true, NULL);
	ck_assert_int_eq(jint(en, "bytes_up"), 1000);
	ck_assert_int_eq(jint(en, "closed_byte_limit"), 1);
	ck_assert_int_eq(jint(en, "connections"), 1);
	en = ledger_entry(ledger, "127.0.0.1", false, "byte_limit");
	ck_assert_int_eq(jint(en, "connections"), 1);
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_ledger_overflow)
{
	/* more destinations than the ledger's 512 entries: the rest are counted together,
	 * in an entry of their own, so that every connection and byte is still in it */
	enum { N = 530 };
	unsigned ep = echo_start();
	char lit[64], t[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	struct proxy p;
	struct govex__egress_config cfg = {.max_total = 2000};
	proxy_start(&p, a, 1, &cfg);
	/* refused ones: each name a destination of its own */
	for (size_t i = 0; i < N; i++) {
		snprintf(t, sizeof(t), "r%zu.example:81", i);
		int fd = do_connect(p.port, t, head, sizeof(head));
		ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s: %s", t, head);
		close(fd);
	}
	json_t *ledger = proxy_stop(&p);
	ck_assert_uint_le(json_array_size(ledger), 514);
	json_int_t total = 0;
	size_t i;
	json_t *v;
	json_array_foreach(ledger, i, v) total += jint(v, "connections");
	ck_assert_int_eq(total, N);
	json_t *en = ledger_entry(ledger, NULL, false, "ledger_full");
	ck_assert_int_eq(jint(en, "connections"), N - 512);
	json_decref(ledger);
}
END_TEST

static double elapsed(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

START_TEST(test_proxy_slow_loris)
{
	const char *const a[] = {"api.example.com:443"};
	struct proxy p;
	struct govex__egress_config cfg = {.idle_timeout_ms = 400};
	proxy_start(&p, a, 1, &cfg);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int fd = connect_lo(p.port);
	send_all(fd, "CONNECT api.example.com:443 HTTP/1.1\r\n", 38);
	/* a header byte every 50 ms, never the blank line: the head's time is from accept */
	bool closed = false;
	char head[1024];
	while (elapsed(&t0) < 3) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 50) > 0) {
			ck_assert_int_eq(read_head(fd, head, sizeof(head)), 408);
			closed = true;
			break;
		}
		if (send(fd, "X", 1, MSG_NOSIGNAL) != 1)
			break;
	}
	double t = elapsed(&t0);
	ck_assert_msg(closed, "not closed");
	ck_assert_msg(t >= 0.35 && t < 1.5, "closed after %.2f s", t);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	ledger_entry(ledger, NULL, false, "request_timeout");
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_idle_tunnel)
{
	unsigned ep = echo_start();
	char lit[64], head[1024], in[16];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	struct proxy p;
	struct govex__egress_config cfg = {.idle_timeout_ms = 300};
	proxy_start(&p, a, 1, &cfg);
	int fd = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(read(fd, in, sizeof(in)), 0);
	double t = elapsed(&t0);
	ck_assert_msg(t >= 0.25 && t < 2, "closed after %.2f s", t);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	ck_assert_int_eq(jint(ledger_entry(ledger, "127.0.0.1", true, NULL), "closed_idle"), 1);
	json_decref(ledger);
}
END_TEST

START_TEST(test_proxy_connect_failures)
{
	/* a port nothing listens on, and a resolution slower than the connect timeout */
	unsigned dead;
	int d = listen_lo(&dead);
	close(d);
	char lit[64], slow[64], head[1024], body[512];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", dead);
	snprintf(slow, sizeof(slow), "good.test:%u", dead);
	const char *const a[] = {lit, slow, "nosuch.test:443"};
	struct proxy p;
	struct govex__egress_config cfg = {.connect_timeout_ms = 300};
	proxy_start(&p, a, ARRAY_SIZE(a), &cfg);
	int fd = do_connect(p.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 502 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "Connection refused"), "%s", body);
	close(fd);
	fd = do_connect(p.port, "nosuch.test:443", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 502 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "cannot resolve nosuch.test: no such name"), "%s", body);
	close(fd);
	resolver_delay_ms = 1500;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = do_connect(p.port, slow, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 504 ", 13) == 0, "%s", head);
	ck_assert_msg(elapsed(&t0) < 1.2, "504 after %.2f s", elapsed(&t0));
	close(fd);
	json_t *ledger = proxy_stop(&p);
	ledger_entry(ledger, "127.0.0.1", false, "connect_failed");
	ledger_entry(ledger, "nosuch.test", false, "resolve_failed");
	ledger_entry(ledger, "good.test", false, "connect_timeout");
	json_decref(ledger);
	/* the abandoned resolution ends on its own; let it, so the leak check sees it free */
	struct timespec ts = {1, 500000000L};
	nanosleep(&ts, NULL);
}
END_TEST

START_TEST(test_proxy_abandoned_resolutions)
{
	/* lookups that outlive the connect timeout keep their threads until getaddrinfo
	 * returns: at most max_concurrent of them per proxy, then 503 until they end */
	unsigned dead;
	int d = listen_lo(&dead);
	close(d);
	char slow[64], head[1024], body[512];
	snprintf(slow, sizeof(slow), "good.test:%u", dead);
	const char *const a[] = {slow};
	struct proxy p;
	struct govex__egress_config cfg = {.connect_timeout_ms = 200, .max_concurrent = 2};
	proxy_start(&p, a, ARRAY_SIZE(a), &cfg);
	resolver_delay_ms = 1500;
	for (int i = 0; i < 2; i++) {
		int fd = do_connect(p.port, slow, head, sizeof(head));
		ck_assert_msg(strncmp(head, "HTTP/1.1 504 ", 13) == 0, "%d: %s", i, head);
		close(fd);
	}
	int fd = do_connect(p.port, slow, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	read_rest(fd, body, sizeof(body));
	ck_assert_msg(strstr(body, "2 name resolutions of this run are still in progress"), "%s",
		      body);
	close(fd);
	/* once they have returned, lookups start again */
	struct timespec ts = {1, 600000000L};
	nanosleep(&ts, NULL);
	fd = do_connect(p.port, slow, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 504 ", 13) == 0, "%s", head);
	close(fd);
	json_t *ledger = proxy_stop(&p);
	ck_assert_int_eq(
	    jint(ledger_entry(ledger, "good.test", false, "connect_timeout"), "connections"), 3);
	ck_assert_int_eq(
	    jint(ledger_entry(ledger, "good.test", false, "concurrent_limit"), "connections"), 1);
	json_decref(ledger);
	nanosleep(&ts, NULL); /* the last abandoned lookup ends before the leak check */
	resolver_delay_ms = 0;
}
END_TEST

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

START_TEST(test_proxy_stop_live)
{
	unsigned ep = echo_start();
	char lit[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit, "good.test:1"};
	int before = count_fds();
	struct proxy p;
	proxy_start(&p, a, ARRAY_SIZE(a), NULL);
	int fds[4];
	for (int i = 0; i < 3; i++) {
		fds[i] = do_connect(p.port, lit, head, sizeof(head));
		ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
		send_all(fds[i], "abc", 3);
	}
	/* one more still resolving (slowly) and one with half a head */
	resolver_delay_ms = 3000;
	fds[3] = connect_lo(p.port);
	send_all(fds[3], "CONNECT good.test:1 HTTP/1.1\r\n\r\n", 32);
	int half = connect_lo(p.port);
	send_all(half, "CONNECT good", 12);
	struct timespec ts = {0, 100 * 1000000L};
	nanosleep(&ts, NULL);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	json_t *ledger = proxy_stop(&p);
	ck_assert_msg(elapsed(&t0) < 0.5, "stop took %.2f s", elapsed(&t0));
	json_decref(ledger);
	/* every tunnel's client sees its end */
	for (int i = 0; i < 3; i++) {
		char in[16];
		ck_assert_int_eq(read(fds[i], in, 3), 3);
		ck_assert_int_eq(read(fds[i], in, sizeof(in)), 0);
		close(fds[i]);
	}
	char in[16];
	ck_assert_int_le(read(fds[3], in, sizeof(in)), 0);
	ck_assert_int_le(read(half, in, sizeof(in)), 0);
	close(fds[3]);
	close(half);
	struct timespec wait = {3, 200000000L};
	nanosleep(&wait, NULL); /* the abandoned resolution ends and frees itself */
	/* the proxy's descriptors are all gone (the echo server's listener stays; its
	 * connections ended with the proxy's) */
	ck_assert_int_eq(count_fds(), before);
}
END_TEST

START_TEST(test_proxy_instances_separate)
{
	unsigned ep = echo_start();
	char lit[64], head[1024];
	snprintf(lit, sizeof(lit), "127.0.0.1:%u", ep);
	const char *const a[] = {lit};
	const char *const b[] = {"api.example.com:443"};
	struct proxy p1, p2;
	struct govex__egress_config c1 = {.max_total = 1}, c2 = {.max_total = 1};
	proxy_start(&p1, a, 1, &c1);
	proxy_start(&p2, b, 1, &c2);
	/* the second's list does not have the first's destination, and its count is its own */
	int fd = do_connect(p2.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 403 ", 13) == 0, "%s", head);
	close(fd);
	fd = do_connect(p1.port, lit, head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	close(fd);
	json_t *l1 = proxy_stop(&p1), *l2 = proxy_stop(&p2);
	ck_assert_uint_eq(json_array_size(l1), 1);
	ck_assert_uint_eq(json_array_size(l2), 1);
	json_decref(l1);
	json_decref(l2);
}
END_TEST

START_TEST(test_proxy_start_errors)
{
	const char *const a[] = {"api.example.com:443"};
	struct govex__egress_list *l = list_of(a, 1);
	struct govex__egress_config cfg = {.allow = l};
	struct govex__egress *e = NULL;
	struct govex_error err;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* not listening */
	int before = count_fds();
	ck_assert_int_eq(govex__egress_start(&cfg, s, &e, &err), -GOVEX_EINVAL);
	ck_assert_str_eq(err.message, "egress: not a listening socket");
	ck_assert_int_eq(count_fds(), before - 1); /* taken, also on failure */
	ck_assert_ptr_null(e);
	govex__egress_stop(NULL, NULL);
	govex__egress_list_free(l);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("list");
	tcase_add_loop_test(tc, test_entry, 0, ARRAY_SIZE(entries));
	tcase_add_test(tc, test_list_canonical);
	tcase_add_loop_test(tc, test_match, 0, ARRAY_SIZE(matches));
	tcase_add_loop_test(tc, test_addr_class, 0, ARRAY_SIZE(classes));
	tcase_add_test(tc, test_admits_resolved);
	suite_add_tcase(s, tc);
	tc = tcase_create("request");
	tcase_add_loop_test(tc, test_request, 0, ARRAY_SIZE(reqs));
	tcase_add_test(tc, test_request_body_end);
	tcase_add_loop_test(tc, test_request_whole, 0, ARRAY_SIZE(reqs));
	tcase_add_test(tc, test_request_names_refused);
	tcase_add_test(tc, test_request_too_long);
	suite_add_tcase(s, tc);
	tc = tcase_create("proxy");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_proxy_connect_relays);
	tcase_add_test(tc, test_proxy_refused);
	tcase_add_test(tc, test_proxy_rebinding);
	tcase_add_test(tc, test_proxy_numeric_forms);
	tcase_add_test(tc, test_proxy_plain_http);
	tcase_add_test(tc, test_proxy_bad_requests);
	tcase_add_test(tc, test_proxy_connection_limits);
	tcase_add_test(tc, test_proxy_byte_limit);
	tcase_add_test(tc, test_proxy_ledger_overflow);
	tcase_add_test(tc, test_proxy_slow_loris);
	tcase_add_test(tc, test_proxy_idle_tunnel);
	tcase_add_test(tc, test_proxy_connect_failures);
	tcase_add_test(tc, test_proxy_abandoned_resolutions);
	tcase_add_test(tc, test_proxy_stop_live);
	tcase_add_test(tc, test_proxy_instances_separate);
	tcase_add_test(tc, test_proxy_start_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(egress_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
