/* SPDX-License-Identifier: MIT */
/*
 * Numbers jansson cannot hold.  JSON has no bound on a number, jansson has: an integer
 * outside json_int_t (64 bits, signed) or a real past a double's range fails the whole
 * parse ("too big integer"), so a valid message would get -32700 with a null id (issue 23).
 * Here such a parse is done again over a copy in which each of those numbers is written
 * over by `null` and spaces (same length: jansson's columns stay right), and the caller
 * learns where they were: the message's "id" (kept as sent, to answer with it) and the
 * first other one's path (params.arguments.a), to refuse it by name.  The numbers never
 * reach a tool: the library's arguments and results are 64-bit too (int_out_of_range).
 *
 * And the brief reading of a tool result (mcp_json_load_brief): its long strings (the
 * run's stdout, files) are not what the server reads of it, so they are written over
 * before jansson builds the document (issue 23: parsing 64 MiB of output again was most
 * of what MCP added to a run's cost).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

#define FRAMES	 32 /* the path is kept this deep; deeper numbers are still written over */
#define KEY_KEEP 40

struct frame {
	bool object;
	bool want_key; /* object: the next string is a key */
	char key[KEY_KEEP + 1];
	size_t index;
};

/* [s, s+n) is a JSON number token: whether jansson refuses it (strtoll / strtod ERANGE) */
static bool out_of_range(const char *s, size_t n)
{
	bool integer = !memchr(s, '.', n) && !memchr(s, 'e', n) && !memchr(s, 'E', n);
	if (integer) {
		size_t digits = n - (s[0] == '-');
		if (digits != 19) /* no leading zeros in JSON: 20 digits are past 2^63 */
			return digits > 19;
	}
	char *t = strndup(s, n);
	if (!t)
		return false;
	errno = 0;
	bool out;
	if (integer) {
		(void)strtoll(t, NULL, 10);
		out = errno == ERANGE;
	} else {
		double d = strtod(t, NULL);
		out = errno == ERANGE && isinf(d);
	}
	free(t);
	return out;
}

static void path_of(const struct frame *f, size_t depth, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < depth && i < FRAMES && n < cap; i++) {
		int w = f[i].object ? snprintf(out + n, cap - n, "%s%s", n ? "." : "", f[i].key)
				    : snprintf(out + n, cap - n, "[%zu]", f[i].index);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (depth > FRAMES && n + 4 < cap)
		snprintf(out + n, cap - n, "...");
}

/*
 * Writes `null` over each number of buf that is out of range and fills *big.  buf need
 * not be valid JSON (the parse again says what else is wrong with it); the scan only
 * follows strings, brackets, commas and colons.  Returns how many were written over.
 */
static unsigned neutralize(char *buf, size_t len, struct mcp_bignum *big)
{
	struct frame f[FRAMES];
	size_t depth = 0;
	unsigned count = 0;
	for (size_t i = 0; i < len;) {
		char c = buf[i];
		struct frame *top = depth && depth <= FRAMES ? &f[depth - 1] : NULL;
		if (c == '"') {
			size_t start = ++i;
			while (i < len && buf[i] != '"')
				i += buf[i] == '\\' ? 2 : 1;
			if (top && top->object && top->want_key) {
				size_t kl = (i < len ? i : len) - start;
				if (kl > KEY_KEEP)
					kl = KEY_KEEP;
				memcpy(top->key, buf + start, kl);
				top->key[kl] = '\0';
				top->want_key = false;
			}
			i++;
		} else if (c == '{' || c == '[') {
			if (depth < FRAMES)
				f[depth] = (struct frame){.object = c == '{', .want_key = c == '{'};
			depth++;
			i++;
		} else if (c == '}' || c == ']') {
			if (depth)
				depth--;
			i++;
		} else if (c == ',') {
			if (top && top->object)
				top->want_key = true;
			else if (top)
				top->index++;
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t start = i;
			while (i < len && buf[i] && strchr("+-.0123456789eE", buf[i]))
				i++;
			size_t n = i - start;
			if (n < 4 || !out_of_range(buf + start, n))
				continue;
			bool is_id =
			    depth == 1 && top && top->object && strcmp(top->key, "id") == 0;
			if (is_id && !big->id) {
				big->id = true;
				if (n < sizeof(big->id_text)) {
					memcpy(big->id_text, buf + start, n);
					big->id_text[n] = '\0';
				}
			} else if (!is_id && !big->path[0]) {
				path_of(f, depth, big->path, sizeof(big->path));
				if (!big->path[0])
					snprintf(big->path, sizeof(big->path), "(the message)");
				snprintf(big->text, sizeof(big->text), "%.*s%s",
					 (int)(n < 40 ? n : 40), buf + start, n > 40 ? "..." : "");
			}
			static const char null_[4] = {'n', 'u', 'l', 'l'}; /* not a C string */
			memcpy(buf + start, null_, sizeof(null_));
			memset(buf + start + 4, ' ', n - 4);
			count++;
		} else {
			i++;
		}
	}
	return count;
}

json_t *mcp_json_loadb(const char *text, size_t len, size_t flags, json_error_t *e,
		       struct mcp_bignum *big)
{
	memset(big, 0, sizeof(*big));
	json_t *msg = json_loadb(text, len, flags, e);
	if (msg || json_error_code(e) != json_error_numeric_overflow)
		return msg;
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return NULL; /* e stands: the overflow */
	memcpy(copy, text, len);
	json_error_t e2;
	if (neutralize(copy, len, big)) {
		msg = json_loadb(copy, len, flags, &e2);
		if (!msg)
			*e = e2; /* what else is wrong with it */
	}
	free(copy);
	if (!msg)
		memset(big, 0, sizeof(*big));
	return msg;
}

/* ---------------------------------------------------------------- brief reading */

char *mcp_json_brief(const char *text, size_t len, size_t keep, bool check, size_t *ret_len)
{
	char *copy = malloc(len ? len : 1), *o = copy;
	if (!copy)
		return NULL;
	unsigned blanked = 0;
	const char *p = text, *last = text, *end = text + len, *q, *c;
	while (govex__json_next_long_value(&p, end, keep + 1, &q, &c)) {
		if (check && !govex__json_string_ok((unsigned char *)q + 1, (unsigned char *)c))
			continue; /* jansson reports it, as it would have */
		/* "" where the string was (not spaces: jansson reads each one) */
		memcpy(o, last, (size_t)(q + 1 - last));
		o += q + 1 - last;
		last = c;
		blanked++;
	}
	if (!blanked) {
		free(copy);
		return NULL;
	}
	memcpy(o, last, (size_t)(end - last));
	o += end - last;
	*ret_len = (size_t)(o - copy);
	return copy;
}

json_t *mcp_json_load_brief(const char *text, size_t len, size_t flags, size_t keep,
			    json_error_t *e)
{
	size_t n = len;
	char *copy = len > keep ? mcp_json_brief(text, len, keep, false, &n) : NULL;
	json_t *doc = json_loadb(copy ? copy : text, n, flags, e);
	free(copy);
	return doc;
}

/* The end of the value starting at v (its first byte), or NULL. */
static const char *value_end(const char *v, const char *end)
{
	if (*v == '"') {
		const char *c = govex__json_string_end(v, end);
		return c ? c + 1 : NULL;
	}
	if (*v != '{' && *v != '[') {
		while (v < end && !strchr(",}] \t\r\n", *v))
			v++;
		return v;
	}
	size_t depth = 0;
	for (const char *p = v; p < end; p++) {
		if (*p == '"') {
			p = govex__json_string_end(p, end);
			if (!p)
				return NULL;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* In the object at o, the value of the member named key as written (no escapes). */
static const char *member(const char *o, const char *end, const char *key)
{
	size_t kl = strlen(key);
	const char *p = skip_ws(o, end);
	if (p >= end || *p != '{')
		return NULL;
	p++;
	for (;;) {
		p = skip_ws(p, end);
		if (p >= end || *p != '"')
			return NULL;
		const char *k = p + 1, *ke = govex__json_string_end(p, end);
		if (!ke)
			return NULL;
		p = skip_ws(ke + 1, end);
		if (p >= end || *p != ':')
			return NULL;
		const char *v = skip_ws(p + 1, end);
		if (v >= end)
			return NULL;
		if ((size_t)(ke - k) == kl && memcmp(k, key, kl) == 0)
			return v;
		p = value_end(v, end);
		if (!p)
			return NULL;
		p = skip_ws(p, end);
		if (p >= end || *p != ',')
			return NULL;
		p++;
	}
}

bool mcp_json_member_span(const char *text, size_t len, const char *k1, const char *k2,
			  size_t *ret_off, size_t *ret_len)
{
	const char *end = text + len;
	const char *v = member(text, end, k1);
	v = v ? member(v, end, k2) : NULL;
	const char *ve = v ? value_end(v, end) : NULL;
	if (!ve)
		return false;
	*ret_off = (size_t)(v - text);
	*ret_len = (size_t)(ve - v);
	return true;
}
