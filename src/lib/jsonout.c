/* SPDX-License-Identifier: MIT */
/*
 * JSON text of result documents and values: compact, keys sorted, reals in their
 * shortest round-trip form written as Python's repr writes them ("0.1", "1e-05",
 * "1e+16", "100.0").  jansson prints a real with 17 significant digits (0.1 becomes
 * 0.10000000000000001), so the worker (Python) and the library would count different
 * bytes for the same value; with this encoder both count the same bytes.  Everything
 * else is byte for byte what json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS |
 * JSON_ENCODE_ANY) writes (tests/unit/test_jsonout.c compares both on random
 * documents).
 *
 * Also: a node-budget check for values decoded from frames.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values.h"

struct buf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->len + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put_string(struct buf *b, const char *s, size_t n, bool ascii)
{
	static const char hex[] = "0123456789ABCDEF";
	put(b, "\"", 1);
	size_t run = 0; /* bytes copied as they are, pending */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char seq[13];
		size_t elen = 2, adv = 1;
		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			if (c < 0x20) {
				seq[0] = '\\';
				seq[1] = 'u';
				seq[2] = seq[3] = '0';
				seq[4] = hex[c >> 4];
				seq[5] = hex[c & 15];
				esc = seq;
				elen = 6;
			} else if (ascii && c >= 0x80) {
				/* a code point of a valid UTF-8 sequence (jansson checked it) */
				uint32_t cp;
				if (c >= 0xf0 && i + 3 < n) {
					cp = ((uint32_t)(c & 7) << 18) |
					     ((uint32_t)(s[i + 1] & 0x3f) << 12) |
					     ((uint32_t)(s[i + 2] & 0x3f) << 6) | (s[i + 3] & 0x3f);
					adv = 4;
				} else if (c >= 0xe0 && i + 2 < n) {
					cp = ((uint32_t)(c & 15) << 12) |
					     ((uint32_t)(s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
					adv = 3;
				} else if (i + 1 < n) {
					cp = ((uint32_t)(c & 31) << 6) | (s[i + 1] & 0x3f);
					adv = 2;
				} else {
					cp = c;
				}
				if (cp >= 0x10000) {
					cp -= 0x10000;
					snprintf(seq, sizeof(seq), "\\u%04X\\u%04X",
						 0xd800 | ((cp >> 10) & 0x3ff),
						 0xdc00 | (cp & 0x3ff));
					elen = 12;
				} else {
					snprintf(seq, sizeof(seq), "\\u%04X", cp);
					elen = 6;
				}
				esc = seq;
			}
		}
		if (!esc) {
			run++;
			continue;
		}
		put(b, s + i - run, run);
		run = 0;
		put(b, esc, elen);
		i += adv - 1;
	}
	put(b, s + n - run, run);
	put(b, "\"", 1);
}

int govex__json_real_repr(double d, char *out, size_t outlen)
{
	if (!isfinite(d) || outlen < 32)
		return -GOVEX_EINVAL;
	if (d == 0) {
		snprintf(out, outlen, "%s", signbit(d) ? "-0.0" : "0.0");
		return 0;
	}
	/* the fewest significant digits that read back as the same double */
	char e[40];
	for (int p = 0; p < 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p, d);
		if (strtod(e, NULL) == d)
			break;
	}
	/* e: [-]D[.DDD]e[+-]XX */
	const char *s = e;
	bool neg = *s == '-';
	if (neg)
		s++;
	char digits[24] = "0";
	size_t nd = 0;
	for (; *s && *s != 'e' && nd < 18; s++)
		if (*s != '.')
			digits[nd++] = *s;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	int exp10 = (int)strtol(s + 1, NULL, 10);
	char *o = out;
	if (neg)
		*o++ = '-';
	if (exp10 < -4 || exp10 >= 16) {
		/* as Python: d[.ddd]e[+-]XX, at least two exponent digits */
		*o++ = digits[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, nd - 1);
			o += nd - 1;
		}
		snprintf(o, outlen - (size_t)(o - out), "e%c%02d", exp10 < 0 ? '-' : '+',
			 exp10 < 0 ? -exp10 : exp10);
		return 0;
	}
	if (exp10 < 0) {
		*o++ = '0';
		*o++ = '.';
		for (int k = -1; k > exp10; k--)
			*o++ = '0';
		memcpy(o, digits, nd);
		o += nd;
	} else {
		size_t ip = (size_t)exp10 + 1; /* digits before the point */
		for (size_t k = 0; k < ip; k++)
			*o++ = k < nd ? digits[k] : '0';
		*o++ = '.';
		if (nd > ip) {
			memcpy(o, digits + ip, nd - ip);
			o += nd - ip;
		} else {
			*o++ = '0';
		}
	}
	*o = '\0';
	return 0;
}

struct keyref {
	const char *key;
	size_t len;
	json_t *value;
};

/* jansson's order: bytes (memcmp) of the common length, then the shorter first */
static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int r = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
	if (r)
		return r;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void dump(struct buf *b, const json_t *v, size_t flags)
{
	char num[64];
	bool ascii = flags & JSON_ENSURE_ASCII;
	if (!v) {
		b->failed = true;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_NULL:
		put(b, "null", 4);
		return;
	case JSON_TRUE:
		put(b, "true", 4);
		return;
	case JSON_FALSE:
		put(b, "false", 5);
		return;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		put(b, num, strlen(num));
		return;
	case JSON_REAL:
		if (govex__json_real_repr(json_real_value(v), num, sizeof(num)) < 0) {
			b->failed = true;
			return;
		}
		put(b, num, strlen(num));
		return;
	case JSON_STRING:
		put_string(b, json_string_value(v), json_string_length(v), ascii);
		return;
	case JSON_ARRAY: {
		put(b, "[", 1);
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			if (i)
				put(b, ",", 1);
			dump(b, e, flags);
		}
		put(b, "]", 1);
		return;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		struct keyref *keys = calloc(n ? n : 1, sizeof(*keys));
		if (!keys) {
			b->failed = true;
			return;
		}
		const char *k;
		size_t kl;
		json_t *e;
		json_object_keylen_foreach((json_t *)v, k, kl, e)
		{
			if (i == n)
				break;
			keys[i].key = k;
			keys[i].len = kl;
			keys[i++].value = e;
		}
		if (n > 1 && (flags & JSON_SORT_KEYS))
			qsort(keys, n, sizeof(*keys), keyref_cmp);
		put(b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				put(b, ",", 1);
			put_string(b, keys[i].key, keys[i].len, ascii);
			put(b, ":", 1);
			dump(b, keys[i].value, flags);
		}
		put(b, "}", 1);
		free(keys);
		return;
	}
	}
}

char *govex__json_dumps(const json_t *v, size_t flags)
{
	if (!v)
		return NULL;
	struct buf b = {0};
	put(&b, "", 0);
	dump(&b, v, flags);
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* true when v holds at most *budget nodes (shared ones counted each time they are met)
 * and nests at most depth containers deep */
static bool within(const json_t *v, size_t *budget, int depth)
{
	if (*budget == 0)
		return false;
	(*budget)--;
	if (json_is_array(v) || json_is_object(v)) {
		if (depth <= 0)
			return false;
		size_t i;
		json_t *e;
		const char *k;
		if (json_is_array(v)) {
			json_array_foreach(v, i, e) if (!within(e, budget, depth - 1)) return false;
		} else {
			json_object_foreach((json_t *)v, k,
					    e) if (!within(e, budget, depth - 1)) return false;
		}
	}
	return true;
}

bool govex__json_within(const json_t *v, size_t max_nodes, int max_depth)
{
	size_t budget = max_nodes;
	return v && within(v, &budget, max_depth);
}
