/* SPDX-License-Identifier: MIT */
/*
 * The snippet wrapper: a small Python prefix that gives run_python_snippet two things the
 * plain `python -c` form cannot, without touching the library:
 *
 *   - INPUTS: the tool's optional "inputs" object, json-loaded from a literal, as
 *     read-only data (objects are read-only dicts, arrays read-only lists);
 *   - the value of a final expression statement, REPL-style, returned as the result's
 *     "value" when it is finite JSON.
 *
 * The user's code travels as a string literal and is compiled by the wrapper with ast
 * under the file name "<snippet>" (mode 'exec'; a trailing Expr is split off and
 * compiled in 'eval' mode), so line numbers in tracebacks and syntax errors are those of
 * the user's code, and the wrapper's own frames are cut from tracebacks.  The value
 * leaves the process as one line at the very end of stdout, marked with a nonce the
 * server drew for this run: RS "GOVEX-VALUE-" nonce "-" length ":" json "\n".  The server
 * takes that line out of the result's stdout (and its byte count) again, so the
 * structured result shows exactly what the user's code printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mcp.h"

static const char wrapper_head[] =
    "def _govex_snippet(src, inputs, nonce, value_max):\n"
    "    import ast, os, sys\n"
    "    g = globals()\n"
    "    g.pop('_govex_snippet', None)\n"
    "    fn = '<snippet>'\n"
    "    try:\n"
    "        import linecache\n"
    "        linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)\n"
    "    except Exception:\n"
    "        pass\n"
    "    if inputs is not None:\n"
    "        import json\n"
    "        def ro(self, *a, **k):\n"
    "            raise TypeError('INPUTS is read-only (copy it: dict(INPUTS), list(...))')\n"
    "        class ReadOnlyDict(dict):\n"
    "            __slots__ = ()\n"
    "            __setitem__ = __delitem__ = __ior__ = ro\n"
    "            clear = pop = popitem = setdefault = update = ro\n"
    "        class ReadOnlyList(list):\n"
    "            __slots__ = ()\n"
    "            __setitem__ = __delitem__ = __iadd__ = __imul__ = ro\n"
    "            append = extend = insert = pop = remove = clear = sort = reverse = ro\n"
    "        def freeze(v):\n"
    "            if isinstance(v, dict):\n"
    "                return ReadOnlyDict((k, freeze(x)) for k, x in v.items())\n"
    "            if isinstance(v, list):\n"
    "                return ReadOnlyList(freeze(x) for x in v)\n"
    "            return v\n"
    "        g['INPUTS'] = freeze(json.loads(inputs))\n"
    "    try:\n"
    "        tree = ast.parse(src, fn, 'exec')\n"
    "        last = None\n"
    "        if tree.body and isinstance(tree.body[-1], ast.Expr):\n"
    "            last = tree.body.pop()\n"
    "        code = compile(tree, fn, 'exec', dont_inherit=True)\n"
    "        expr = None\n"
    "        if last is not None:\n"
    "            expr = compile(ast.Expression(last.value), fn, 'eval', dont_inherit=True)\n"
    "    except (SyntaxError, ValueError) as e:\n"
    "        import traceback\n"
    "        traceback.print_exception(type(e), e, None)\n"
    "        sys.exit(1)\n"
    "    try:\n"
    "        exec(code, g)\n"
    "        value = None if expr is None else eval(expr, g)\n"
    "    except SystemExit:\n"
    "        raise\n"
    "    except BaseException as e:\n"
    "        import traceback\n"
    "        te = traceback.TracebackException(type(e), e, e.__traceback__)\n"
    "        te.stack[:] = [f for f in te.stack if f.filename != '<string>']\n"
    "        sys.stderr.write(''.join(te.format()))\n"
    "        sys.exit(1)\n"
    "    if value is None:\n"
    "        return\n"
    "    def finite(v, depth):\n"
    "        if depth > 200:\n"
    "            return False\n"
    "        if v is None or v is True or v is False or type(v) is str:\n"
    "            return True\n"
    "        if type(v) is int:\n"
    "            return -(1 << 63) <= v < (1 << 63)\n"
    "        if type(v) is float:\n"
    "            return v == v and v not in (float('inf'), float('-inf'))\n"
    "        if isinstance(v, list):\n"
    "            return all(finite(x, depth + 1) for x in v)\n"
    "        if isinstance(v, dict):\n"
    "            return all(type(k) is str and finite(x, depth + 1) for k, x in v.items())\n"
    "        return False\n"
    "    import json\n"
    "    tname = type(value).__name__\n"
    "    try:\n"
    "        if not finite(value, 0):\n"
    "            raise ValueError\n"
    "        out = json.dumps(value, allow_nan=False, separators=(',', ':'))\n"
    "        out = '{\"value\":' + out + '}'\n"
    "        if len(out) > value_max:\n"
    "            out = json.dumps({'omitted': 'too_large', 'type': tname, 'bytes': len(out)})\n"
    "    except (ValueError, TypeError, RecursionError):\n"
    "        out = json.dumps({'omitted': 'not_json', 'type': tname})\n"
    "    for s in (sys.stdout, sys.__stdout__):\n"
    "        try:\n"
    "            s.flush()\n"
    "        except Exception:\n"
    "            pass\n"
    "    data = ('\\x1eGOVEX-VALUE-%s-%d:%s\\n' % (nonce, len(out), out)).encode('ascii')\n"
    "    while data:\n"
    "        try:\n"
    "            data = data[os.write(1, data):]\n"
    "        except OSError:\n"
    "            return\n"
    "_govex_snippet(";

/* Appends s to a growing buffer; the buffer is sized up front, so no reallocation. */
struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n <= b->cap) {
		memcpy(b->p + b->len, s, n);
	}
	b->len += n;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Decodes one UTF-8 sequence (the input came from a JSON string jansson validated, but
 * decode defensively); returns its length and the code point, or 1 and -1. */
static size_t utf8_next(const unsigned char *s, size_t n, long *cp)
{
	unsigned c = s[0];
	size_t len;
	long v;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2;
		v = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		v = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		v = c & 0x07;
	} else {
		*cp = -1;
		return 1;
	}
	if (len > n) {
		*cp = -1;
		return 1;
	}
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*cp = -1;
			return 1;
		}
		v = (v << 6) | (s[i] & 0x3f);
	}
	*cp = v;
	return len;
}

/* A Python str literal, pure ASCII: the wrapper must not depend on how the interpreter
 * decodes its argv (locale), and the user's text must arrive exactly. */
static void put_pystr(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[24];
	put(b, "'", 1);
	for (size_t i = 0; i < n;) {
		long cp;
		size_t k = utf8_next(u + i, n - i, &cp);
		i += k;
		if (cp < 0)
			cp = 0xfffd;
		if (cp == '\\')
			puts_(b, "\\\\");
		else if (cp == '\'')
			puts_(b, "\\'");
		else if (cp == '\n')
			puts_(b, "\\n");
		else if (cp >= 0x20 && cp < 0x7f) {
			char c = (char)cp;
			put(b, &c, 1);
		} else if (cp < 0x100) {
			snprintf(esc, sizeof(esc), "\\x%02lx", cp);
			puts_(b, esc);
		} else if (cp < 0x10000) {
			snprintf(esc, sizeof(esc), "\\u%04lx", cp);
			puts_(b, esc);
		} else {
			snprintf(esc, sizeof(esc), "\\U%08lx", cp);
			puts_(b, esc);
		}
	}
	put(b, "'", 1);
}

static int emit(struct buf *b, const char *code, size_t len, const char *inputs, const char *nonce,
		unsigned long long value_max)
{
	char tail[64];
	puts_(b, wrapper_head);
	put_pystr(b, code, len);
	puts_(b, ", ");
	if (inputs)
		put_pystr(b, inputs, strlen(inputs));
	else
		puts_(b, "None");
	puts_(b, ", '");
	puts_(b, nonce);
	snprintf(tail, sizeof(tail), "', %llu)\n", value_max);
	puts_(b, tail);
	return 0;
}

int mcp_program_build(const char *code, size_t len, const char *inputs_json,
		      const struct mcp_bounds *bounds, struct mcp_program *ret)
{
	memset(ret, 0, sizeof(*ret));
	unsigned char rnd[16];
	size_t got = 0;
	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(ret->nonce + 2 * i, 3, "%02x", rnd[i]);

	/* first pass measures, second writes */
	struct buf b = {0};
	unsigned long long vmax = bounds->call_output_bytes;
	emit(&b, code, len, inputs_json, ret->nonce, vmax);
	size_t need = b.len;
	if (need <= bounds->code_bytes) {
		b.p = malloc(need + 1);
		if (!b.p)
			return -ENOMEM;
		b.cap = need;
		b.len = 0;
		emit(&b, code, len, inputs_json, ret->nonce, vmax);
		b.p[b.len] = '\0';
		ret->code = b.p;
		ret->len = b.len;
		ret->wrapped = true;
		return 0;
	}
	if (inputs_json)
		return 1;
	/* Too large to wrap: the plain code still gets the whole of limits.code_bytes. */
	ret->code = malloc(len + 1);
	if (!ret->code)
		return -ENOMEM;
	memcpy(ret->code, code, len);
	ret->code[len] = '\0';
	ret->len = len;
	return 0;
}

void mcp_program_free(struct mcp_program *p)
{
	free(p->code);
	memset(p, 0, sizeof(*p));
}

static void add_diag(json_t *doc, const char *code, const char *msg)
{
	json_t *d = json_object_get(doc, "diagnostics");
	if (json_is_array(d))
		json_array_append_new(d, json_pack("{s:s, s:s}", "code", code, "message", msg));
}

static const char *memrmem(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn > hn)
		return NULL;
	for (size_t i = hn - nn + 1; i-- > 0;)
		if (memcmp(h + i, n, nn) == 0)
			return h + i;
	return NULL;
}

void mcp_program_extract_value(const struct mcp_program *p, json_t *doc)
{
	if (!p->wrapped)
		return;
	json_t *jout = json_object_get(doc, "stdout");
	const char *out = json_string_value(jout);
	if (!out)
		return;
	size_t olen = json_string_length(jout);
	char marker[64];
	int mn = snprintf(marker, sizeof(marker), "\x1eGOVEX-VALUE-%s-", p->nonce);
	const char *m = memrmem(out, olen, marker, (size_t)mn);
	if (!m)
		return;
	size_t start = (size_t)(m - out);
	const char *q = m + mn, *end = out + olen;
	unsigned long long plen = 0;
	bool have_len = false;
	while (q < end && *q >= '0' && *q <= '9' && plen < (1ULL << 40)) {
		plen = plen * 10 + (unsigned long long)(*q - '0');
		q++;
		have_len = true;
	}
	size_t kept_tail = olen - start;
	size_t header = (size_t)(q - m) + 1; /* up to and including ':' */
	bool complete = have_len && q < end && *q == ':' && (size_t)(end - (q + 1)) >= plen + 1 &&
			q[1 + plen] == '\n';
	size_t remove = complete ? header + plen + 1 : kept_tail;
	/* the bytes the program produced: the whole line, even where the kept text lost it */
	unsigned long long produced =
	    have_len && q < end && *q == ':' ? header + plen + 1 : kept_tail;
	json_int_t sb = json_integer_value(json_object_get(doc, "stdout_bytes"));
	if ((unsigned long long)sb >= produced)
		json_object_set_new(doc, "stdout_bytes", json_integer(sb - (json_int_t)produced));

	if (complete) {
		json_error_t e;
		json_t *payload = json_loadb(q + 1, plen, JSON_REJECT_DUPLICATES, &e);
		json_t *v = payload ? json_object_get(payload, "value") : NULL;
		const char *omitted =
		    payload ? json_string_value(json_object_get(payload, "omitted")) : NULL;
		if (v) {
			json_object_set(doc, "value", v);
		} else if (omitted) {
			char msg[200];
			const char *t = json_string_value(json_object_get(payload, "type"));
			if (strcmp(omitted, "too_large") == 0)
				snprintf(msg, sizeof(msg),
					 "value: the final expression's value (%s) exceeds "
					 "limits.call_output_bytes",
					 t ? t : "?");
			else
				snprintf(
				    msg, sizeof(msg),
				    "value: the final expression's value (%s) is not finite JSON",
				    t ? t : "?");
			add_diag(doc,
				 strcmp(omitted, "too_large") == 0 ? "value_too_large"
								   : "value_not_json",
				 msg);
		} else {
			add_diag(doc, "value_invalid", "value: the value line could not be read");
		}
		json_decref(payload);
	} else {
		add_diag(doc, "value_truncated",
			 "value: the final expression's value did not fit in the kept stdout");
	}
	/* cut the line out of the text */
	size_t nlen = olen - remove;
	char *s = malloc(nlen + 1);
	if (!s)
		return;
	memcpy(s, out, start);
	memcpy(s + start, out + start + remove, olen - start - remove);
	s[nlen] = '\0';
	json_object_set_new(doc, "stdout", json_stringn(s, nlen));
	free(s);
}
