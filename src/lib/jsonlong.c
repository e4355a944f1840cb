/* SPDX-License-Identifier: MIT */
/*
 * Long strings at copying speed.  jansson builds a string a byte at a time (its lexer
 * reads, checks and appends each one): about 20 ms for each MiB here, so a 12 MiB file in
 * through MCP (16 MiB of base64 in the arguments) cost a third of a second to parse, where
 * a one-shot run copies the same file in 3 ms a MiB (issue 23).
 *
 * govex__json_parse_long gives exactly what govex__json_parse gives (the same document or
 * the same error), by letting jansson parse a copy in which each long string value that
 * needs no decoding -- no backslash, and what jansson accepts: no control character,
 * valid UTF-8 -- is a short marker instead ("\u0000" and its number; not padded to the
 * string's length, as jansson reads whitespace a byte at a time too), and then putting
 * each string in its place from the original bytes.  An error is the whole parse's, so
 * its line and column are the text's.  jansson still checks the whole
 * structure, the keys, their duplicates and every number; the hand-written part only
 * finds where strings end (string_end) and says whether one needs no decoding
 * (govex__json_string_ok, the rules of jansson's lexer).  A text that already holds a
 * "\u0000" is parsed whole, so a marker is never a string of the document.
 * tests/unit/test_util.c compares both parsers on crafted inputs; tests/fuzz/fuzz_json.c
 * on any (with the bounds of govex__json_parse_long_at made small).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LONG_MIN_TEXT  (64u << 10) /* below this the whole parse is cheap */
#define LONG_MIN_VALUE 4096u	   /* strings this long or longer are put in place */
#define MARK_MAX       28	   /* "\u0000" and a size_t's digits (< LONG_MIN_VALUE) */

struct span {
	size_t off, len; /* the inside of the string in the original text */
};

struct spans {
	struct span *v;
	size_t n, cap;
};

const char *govex__json_string_end(const char *q, const char *end)
{
	const char *c = q + 1;
	for (;;) {
		c = memchr(c, '"', (size_t)(end - c));
		if (!c)
			return NULL;
		size_t bs = 0;
		while (c - bs > q + 1 && c[-1 - (ptrdiff_t)bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return c;
		c++;
	}
}

bool govex__json_next_long_value(const char **p, const char *end, size_t min, const char **ret_q,
				 const char **ret_c)
{
	while (*p < end) {
		const char *q = memchr(*p, '"', (size_t)(end - *p));
		const char *c = q ? govex__json_string_end(q, end) : NULL;
		if (!c)
			return false; /* no more strings, or one unterminated: jansson says so */
		*p = c + 1;
		if ((size_t)(c - q - 1) < min)
			continue;
		const char *after = c + 1;
		while (after < end &&
		       (*after == ' ' || *after == '\t' || *after == '\r' || *after == '\n'))
			after++;
		if (after < end && *after == ':')
			continue; /* a key: jansson reads it (and finds duplicates) */
		*ret_q = q;
		*ret_c = c;
		return true;
	}
	return false;
}

static int hex4(const unsigned char *s)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int c = s[i], d = c >= '0' && c <= '9'	 ? c - '0'
				  : c >= 'a' && c <= 'f' ? c - 'a' + 10
				  : c >= 'A' && c <= 'F' ? c - 'A' + 10
							 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* How many of the first len bytes of s are plain in a JSON string: 0x20 to 0x7f, no
 * backslash.  8 bytes at a time where all are (a false alarm only ends the fast part). */
static size_t plain_run(const unsigned char *s, size_t len)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	size_t i = 0;
	for (uint64_t w; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		uint64_t bs = w ^ (ones * '\\');
		if ((w & highs) | ((w - ones * 0x20) & ~w & highs) | ((bs - ones) & ~bs & highs))
			break;
	}
	while (i < len && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '\\')
		i++;
	return i;
}

bool govex__json_string_ok(const unsigned char *s, const unsigned char *e)
{
	while (s < e) {
		s += plain_run(s, (size_t)(e - s));
		if (s == e)
			break;
		unsigned c = *s;
		if (c >= 0x20 && c < 0x80 && c != '\\') {
			s++;
		} else if (c < 0x20) {
			return false;
		} else if (c == '\\') {
			if (e - s < 2)
				return false;
			unsigned k = s[1];
			if (k != 'u') {
				if (!strchr("\"\\/bfnrt", (int)k) || !k)
					return false;
				s += 2;
				continue;
			}
			int v = e - s >= 6 ? hex4(s + 2) : -1;
			if (v <= 0 || (v >= 0xdc00 && v <= 0xdfff))
				return false;
			s += 6;
			if (v >= 0xd800 && v <= 0xdbff) {
				int w =
				    e - s >= 6 && s[0] == '\\' && s[1] == 'u' ? hex4(s + 2) : -1;
				if (w < 0xdc00 || w > 0xdfff)
					return false;
				s += 6;
			}
		} else {
			size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
			if (c < 0xc2 || c > 0xf4 || (size_t)(e - s) < n)
				return false;
			unsigned cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
			for (size_t i = 1; i < n; i++) {
				if ((s[i] & 0xc0) != 0x80)
					return false;
				cp = cp << 6 | (s[i] & 0x3f);
			}
			if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
			    (cp >= 0xd800 && cp <= 0xdfff))
				return false;
			s += n;
		}
	}
	return true;
}

static int spans_add(struct spans *s, size_t off, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct span *v = reallocarray(s->v, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct span){off, len};
	return 0;
}

/* Copies text into out (as long), each string of min_value bytes or more (at least a
 * marker's size, so the copy is never longer) that needs no decoding replaced by its
 * marker; *ret_len the copy's length.  0 with s filled (maybe empty), -ENOMEM. */
static int mark(const char *text, size_t len, size_t min_value, char *out, size_t *ret_len,
		struct spans *s)
{
	const char *p = text, *last = text, *end = text + len, *q, *c;
	char *o = out;
	while (govex__json_next_long_value(&p, end, min_value, &q, &c)) {
		size_t n = (size_t)(c - q - 1);
		if (memchr(q + 1, '\\', n) ||
		    !govex__json_string_ok((const unsigned char *)q + 1, (const unsigned char *)c))
			continue; /* decoding needed, or an error jansson reports */
		if (spans_add(s, (size_t)(q + 1 - text), n) < 0)
			return -ENOMEM;
		memcpy(o, last, (size_t)(q + 1 - last));
		o += q + 1 - last;
		/* the marker, not padded: jansson would read each space */
		o += snprintf(o, MARK_MAX, "\\u0000%zu", s->n - 1);
		last = c;
	}
	memcpy(o, last, (size_t)(end - last));
	*ret_len = (size_t)(o + (end - last) - out);
	return 0;
}

/* The string a marker stands for, or NULL (v is not a marker). */
static json_t *restored(json_t *v, const char *text, const struct spans *s)
{
	const char *m = json_string_value(v);
	if (!m || json_string_length(v) < 2 || m[0] != '\0')
		return NULL;
	char *end;
	unsigned long long k = strtoull(m + 1, &end, 10);
	if (*end || k >= s->n)
		return NULL;
	return json_stringn_nocheck(text + s->v[k].off, s->v[k].len);
}

/* Puts every marked string of j back.  0 or -ENOMEM. */
static int restore(json_t *j, const char *text, const struct spans *s)
{
	if (json_is_object(j)) {
		for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
			json_t *v = json_object_iter_value(it);
			if (json_is_string(v)) {
				json_t *r = restored(v, text, s);
				if (r && json_object_iter_set_new(j, it, r) < 0)
					return -ENOMEM;
			} else if (restore(v, text, s) < 0) {
				return -ENOMEM;
			}
		}
	} else if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++) {
			json_t *v = json_array_get(j, i);
			if (json_is_string(v)) {
				json_t *r = restored(v, text, s);
				if (r && json_array_set_new(j, i, r) < 0)
					return -ENOMEM;
			} else if (restore(v, text, s) < 0) {
				return -ENOMEM;
			}
		}
	}
	return 0;
}

int govex__json_parse_long(const char *data, size_t len, size_t flags, json_t **ret,
			   struct govex_error *err)
{
	return govex__json_parse_long_at(data, len, flags, LONG_MIN_TEXT, LONG_MIN_VALUE, ret, err);
}

int govex__json_parse_long_at(const char *data, size_t len, size_t flags, size_t min_text,
			      size_t min_value, json_t **ret, struct govex_error *err)
{
	if (len < min_text || memmem(data, len, "\\u0000", 6))
		return govex__json_parse(data, len, flags, ret, err);
	if (!govex__utf8_valid(data, len))
		return govex__err(err, GOVEX_EUTF8, 0, "document: invalid UTF-8");
	struct spans s = {0};
	char *copy = malloc(len);
	if (!copy)
		return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	size_t n = 0;
	int r = mark(data, len, min_value < MARK_MAX ? MARK_MAX : min_value, copy, &n, &s);
	json_t *j = NULL;
	if (r == 0 && s.n) {
		json_error_t je;
		j = json_loadb(copy, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | flags, &je);
		if (j && restore(j, data, &s) < 0) {
			json_decref(j);
			j = NULL;
			r = -ENOMEM;
		}
	}
	free(copy);
	free(s.v);
	if (r < 0)
		return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	if (!j) /* nothing marked, or an error: jansson's own reading, for its message */
		return govex__json_parse(data, len, flags, ret, err);
	*ret = j;
	return 0;
}
