/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes -> the egress proxy's request parsing (govex__egress_req_feed, then
 * govex__egress_req_body), in pieces whose sizes the first byte chooses, as a client's
 * writes would arrive.  A refusal must carry an error status and a one-line message that
 * starts "govex: " (it goes into an HTTP response: no CR or LF); a request must name a
 * target that parses again to itself, a plain request's rewritten head must be one
 * origin-form head with govex's Host and "Connection", and no more of the stream may
 * belong to the request than was fed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t step = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	static char buf[GOVEX__EGRESS_HEAD_MAX];
	struct govex__egress_req r;
	if (govex__egress_req_init(&r) < 0)
		abort();
	size_t fed = 0;
	enum govex__egress_req_state st = GOVEX_EGRESS_REQ_MORE;
	while (st == GOVEX_EGRESS_REQ_MORE && fed < size && fed < sizeof(buf)) {
		size_t n = size - fed < step ? size - fed : step;
		if (n > sizeof(buf) - fed)
			n = sizeof(buf) - fed;
		memcpy(buf + fed, data + fed, n);
		fed += n;
		st = govex__egress_req_feed(&r, buf, fed, n);
	}
	if (st == GOVEX_EGRESS_REQ_MORE && fed >= sizeof(buf))
		abort(); /* a full head buffer must be refused, not waited on */
	if (st == GOVEX_EGRESS_REQ_REFUSE) {
		if (r.status != 400 && r.status != 403 && r.status != 405 && r.status != 503)
			abort();
		check_text(r.message, sizeof(r.message));
		check_text(r.reason, sizeof(r.reason));
		if (strncmp(r.message, "govex: ", 7) != 0 || !r.reason[0])
			abort();
	}
	if (st == GOVEX_EGRESS_REQ_READY) {
		if (r.consumed > fed || r.consumed == 0)
			abort();
		const struct govex__egress_target *t = &r.target;
		check_text(t->host, sizeof(t->host));
		if (!t->host[0] || t->port == 0)
			abort();
		struct govex__egress_target t2;
		if (govex__egress_target_parse(t->host, strlen(t->host), t->port, &t2) != 0 ||
		    strcmp(t2.host, t->host) != 0 || t2.is_address != t->is_address)
			abort(); /* one spelling per destination */
		if (!r.connect) {
			if (!r.head || r.head_len != strlen(r.head) || r.head_len < 20)
				abort();
			const char *end = strstr(r.head, "\r\n\r\n");
			if (!end || (size_t)(end - r.head) + 4 != r.head_len)
				abort(); /* one head, no request smuggled into it */
			if (!strstr(r.head, "\r\nHost: ") ||
			    (!strstr(r.head, "\r\nConnection: close\r\n") &&
			     !strstr(r.head, "\r\nConnection: upgrade\r\n")))
				abort();
			/* the rest of the input as the client's next bytes */
			const char *rest = (const char *)data + r.consumed;
			size_t left = size - r.consumed;
			bool done = false;
			while (left) {
				size_t n = left < step ? left : step;
				ssize_t k = govex__egress_req_body(&r, rest, n, &done);
				if (k < -1 || k > (ssize_t)n)
					abort();
				if (k < 0 || done)
					break;
				if ((size_t)k != n && !done)
					abort();
				rest += n;
				left -= n;
			}
		}
	}
	govex__egress_req_done(&r);
	return 0;
}
