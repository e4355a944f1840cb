/* SPDX-License-Identifier: MIT */
/*
 * FALLBACKS, REPLACED AT THE ROUND'S MERGE (each behind one function; see contract2.md):
 *
 *   govex__tool_param_schema   the parameter's "schema" from the inspection (H2, worker)
 *                              when present; until then the annotation text is read here
 *                              (moved from src/mcp/tools.c).  After H2: return a copy of
 *                              param["schema"] and delete the interpreter below.
 *   govex__tool_schema_check   until H3's govex__schema_check (src/lib/schema.c) lands:
 *                              the checker moved from src/mcp/arguments.c.  After H3:
 *                              return govex__schema_check(...) and delete check().
 *   govex__tool_run_snippet    until H2's REPL runs (request.repl, worker op "snippet"):
 *                              the Python wrapper with a nonce (moved from
 *                              src/mcp/snippet.c).  After H2: set req->repl = 1 and
 *                              req->inputs_json, run, and delete the wrapper.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "tools.h"

/* ---------------------------------------------------------------- annotations -> schema */

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

static bool is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* s[0..n) starts with NAME "[" and ends with "]": sets the inner text. */
static bool generic(const char *s, size_t n, const char *name, const char **in, size_t *inn)
{
	size_t k;
	const char *names[3] = {name, NULL, NULL};
	char t1[64], t2[64];
	snprintf(t1, sizeof(t1), "typing.%s", name);
	snprintf(t2, sizeof(t2), "builtins.%s", name);
	names[1] = t1;
	names[2] = t2;
	for (int i = 0; i < 3; i++) {
		k = strlen(names[i]);
		if (n > k + 1 && memcmp(s, names[i], k) == 0 && s[k] == '[' && s[n - 1] == ']') {
			*in = s + k + 1;
			*inn = n - k - 2;
			return true;
		}
	}
	return false;
}

static bool bare(const char *s, size_t n, const char *name)
{
	char t[64];
	if (is(s, n, name))
		return true;
	snprintf(t, sizeof(t), "typing.%s", name);
	if (is(s, n, t))
		return true;
	snprintf(t, sizeof(t), "builtins.%s", name);
	return is(s, n, t);
}

/* Splits at top-level SEP (outside brackets); returns the number of parts (<= max). */
static size_t split_top(const char *s, size_t n, char sep, const char **parts, size_t *lens,
			size_t max)
{
	size_t np = 0, depth = 0, start = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? s[i] : sep;
		if (c == '[' || c == '(')
			depth++;
		else if ((c == ']' || c == ')') && depth)
			depth--;
		else if (c == sep && depth == 0) {
			if (np == max)
				return max + 1;
			parts[np] = s + start;
			lens[np] = i - start;
			np++;
			start = i + 1;
		}
	}
	return np;
}

static json_t *schema_of(const char *s, size_t n, int depth);

/* A union of parts: {"type": [...]} when every part is a plain type, else anyOf. */
static json_t *union_of(const char **parts, size_t *lens, size_t np, int depth)
{
	json_t *any = json_array(), *types = json_array();
	bool plain = true, unknown = false;
	for (size_t i = 0; i < np; i++) {
		json_t *p = schema_of(parts[i], lens[i], depth + 1);
		if (!p)
			continue;
		if (json_object_size(p) == 0)
			unknown = true;
		json_t *t = json_object_get(p, "type");
		if (json_object_size(p) == 1 && json_is_string(t))
			json_array_append(types, t);
		else
			plain = false;
		json_array_append_new(any, p);
	}
	json_t *r;
	if (unknown)
		r = json_object();
	else if (plain)
		r = json_pack("{s:O}", "type", types);
	else
		r = json_pack("{s:O}", "anyOf", any);
	json_decref(any);
	json_decref(types);
	return r;
}

/*
 * The JSON Schema for an annotation's text: int -> integer, float -> number, str, bool,
 * list[X] -> array (of X), dict[str, X] -> object (of X), Optional[X] / X | None /
 * Union[...] -> a union with null, Any or anything else -> {} (any JSON value).
 */
static json_t *schema_of(const char *s, size_t n, int depth)
{
	const char *in;
	size_t inn;
	trim(&s, &n);
	if (depth > 16 || n == 0)
		return json_object();
	if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0])
		return schema_of(s + 1, n - 2, depth + 1);
	const char *parts[16];
	size_t lens[16];
	size_t np = split_top(s, n, '|', parts, lens, 15);
	if (np > 15)
		return json_object();
	if (np > 1)
		return union_of(parts, lens, np, depth);
	if (generic(s, n, "Optional", &in, &inn)) {
		parts[0] = in;
		lens[0] = inn;
		parts[1] = "None";
		lens[1] = 4;
		return union_of(parts, lens, 2, depth);
	}
	if (generic(s, n, "Union", &in, &inn)) {
		np = split_top(in, inn, ',', parts, lens, 15);
		if (np > 15)
			return json_object();
		return union_of(parts, lens, np, depth);
	}
	if (bare(s, n, "int"))
		return json_pack("{s:s}", "type", "integer");
	if (bare(s, n, "float"))
		return json_pack("{s:s}", "type", "number");
	if (bare(s, n, "str"))
		return json_pack("{s:s}", "type", "string");
	if (bare(s, n, "bool"))
		return json_pack("{s:s}", "type", "boolean");
	if (is(s, n, "None") || is(s, n, "NoneType"))
		return json_pack("{s:s}", "type", "null");
	if (bare(s, n, "list") || bare(s, n, "List"))
		return json_pack("{s:s}", "type", "array");
	if (bare(s, n, "dict") || bare(s, n, "Dict"))
		return json_pack("{s:s}", "type", "object");
	if (generic(s, n, "list", &in, &inn) || generic(s, n, "List", &in, &inn)) {
		json_t *items = schema_of(in, inn, depth + 1);
		if (json_object_size(items) == 0) {
			json_decref(items);
			return json_pack("{s:s}", "type", "array");
		}
		return json_pack("{s:s, s:o}", "type", "array", "items", items);
	}
	if (generic(s, n, "dict", &in, &inn) || generic(s, n, "Dict", &in, &inn)) {
		np = split_top(in, inn, ',', parts, lens, 2);
		json_t *vals = np == 2 ? schema_of(parts[1], lens[1], depth + 1) : json_object();
		if (json_object_size(vals) == 0) {
			json_decref(vals);
			return json_pack("{s:s}", "type", "object");
		}
		return json_pack("{s:s, s:o}", "type", "object", "additionalProperties", vals);
	}
	return json_object();
}

json_t *govex__tool_param_schema(json_t *param)
{
	json_t *given = json_object_get(param, "schema");
	if (json_is_object(given))
		return json_deep_copy(given);
	const char *ann = json_string_value(json_object_get(param, "annotation"));
	if (!ann)
		return json_object();
	json_t *s = schema_of(ann, strlen(ann), 0);
	char d[300];
	snprintf(d, sizeof(d), "Python annotation: %.250s", ann);
	json_object_set_new(s, "description", json_string(d));
	return s;
}

/* ---------------------------------------------------------------- the argument checker */

static size_t utf8_chars(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static bool type_matches(const char *t, json_t *v)
{
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	return false;
}

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* The subset of JSON Schema that our own schemas use. */
static int check(json_t *schema, json_t *v, const char *path, int depth, char *err, size_t errlen)
{
	if (depth > 64) {
		snprintf(err, errlen, "%s: nested too deeply", path);
		return -1;
	}
	json_t *t = json_object_get(schema, "type");
	if (json_is_string(t) && !type_matches(json_string_value(t), v)) {
		snprintf(err, errlen, "%s: must be %s %s, not %s", path,
			 strchr("aeiou", json_string_value(t)[0]) ? "an" : "a",
			 json_string_value(t), type_name(v));
		return -1;
	}
	if (json_is_array(t)) {
		size_t i;
		json_t *x;
		bool ok = false;
		json_array_foreach(t, i, x) ok = ok || type_matches(json_string_value(x), v);
		if (!ok) {
			char *types = json_dumps(t, JSON_COMPACT);
			snprintf(err, errlen, "%s: must be one of the types %s, not %s", path,
				 types ? types : "?", type_name(v));
			free(types);
			return -1;
		}
	}
	json_t *any = json_object_get(schema, "anyOf");
	if (json_is_array(any)) {
		size_t i;
		json_t *x;
		bool ok = false;
		char sub[256] = "an empty anyOf";
		json_array_foreach(any, i, x)
		{
			if (check(x, v, path, depth + 1, sub, sizeof(sub)) == 0) {
				ok = true;
				break;
			}
		}
		if (!ok) {
			snprintf(err, errlen, "%s: matches none of the allowed forms (%s)", path,
				 sub);
			return -1;
		}
	}
	json_t *ml = json_object_get(schema, "maxLength");
	if (json_is_string(v) && json_is_integer(ml) &&
	    utf8_chars(json_string_value(v), json_string_length(v)) >
		(size_t)json_integer_value(ml)) {
		snprintf(err, errlen, "%s: longer than %lld characters", path,
			 (long long)json_integer_value(ml));
		return -1;
	}
	json_t *mn = json_object_get(schema, "minimum"), *mx = json_object_get(schema, "maximum");
	if (json_is_number(v) && json_is_number(mn) &&
	    json_number_value(v) < json_number_value(mn)) {
		snprintf(err, errlen, "%s: must be at least %g", path, json_number_value(mn));
		return -1;
	}
	if (json_is_number(v) && json_is_number(mx)) {
		bool over = json_is_integer(v) && json_is_integer(mx)
				? json_integer_value(v) > json_integer_value(mx)
				: json_number_value(v) > json_number_value(mx);
		if (over) {
			snprintf(err, errlen, "%s: must be at most %lld", path,
				 json_is_integer(mx) ? (long long)json_integer_value(mx)
						     : (long long)json_number_value(mx));
			return -1;
		}
	}
	char sub[512];
	if (json_is_array(v)) {
		json_t *items = json_object_get(schema, "items");
		size_t i;
		json_t *x;
		if (json_is_object(items))
			json_array_foreach(v, i, x)
			{
				snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
				if (check(items, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			}
	}
	if (json_is_object(v)) {
		json_t *props = json_object_get(schema, "properties");
		json_t *addl = json_object_get(schema, "additionalProperties");
		json_t *req = json_object_get(schema, "required");
		size_t i;
		json_t *x;
		json_array_foreach(req, i, x)
		{
			const char *k = json_string_value(x);
			if (k && !json_object_get(v, k)) {
				snprintf(err, errlen, "%s%s'%s' is required", path,
					 *path ? ": " : "", k);
				return -1;
			}
		}
		const char *k;
		json_object_foreach(v, k, x)
		{
			json_t *ps = json_object_get(props, k);
			snprintf(sub, sizeof(sub), "%s%s%.200s", path, *path ? "." : "", k);
			if (ps) {
				if (check(ps, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			} else if (json_is_false(addl)) {
				snprintf(err, errlen, "%s%sunknown argument '%.200s'", path,
					 *path ? ": " : "", k);
				return -1;
			} else if (json_is_object(addl)) {
				if (check(addl, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			}
		}
	}
	return 0;
}

int govex__tool_schema_check(json_t *schema, json_t *value, const char *path, char *err,
			     size_t errlen)
{
	return check(schema, value, path, 0, err, errlen) < 0 ? 1 : 0;
}

/* ---------------------------------------------------------------- the snippet wrapper */

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
    "        fl = getattr(ast, 'PyCF_ALLOW_TOP_LEVEL_AWAIT', 0)\n"
    "        code = compile(tree, fn, 'exec', flags=fl, dont_inherit=True)\n"
    "        expr = None\n"
    "        if last is not None:\n"
    "            expr = compile(ast.Expression(last.value), fn, 'eval', flags=fl,\n"
    "                           dont_inherit=True)\n"
    "    except (SyntaxError, ValueError) as e:\n"
    "        import traceback\n"
    "        traceback.print_exception(type(e), e, None)\n"
    "        sys.exit(1)\n"
    "    CO_COROUTINE = 0x80\n"
    "    async def both():\n"
    "        r = eval(code, g)\n"
    "        if code.co_flags & CO_COROUTINE:\n"
    "            await r\n"
    "        if expr is None:\n"
    "            return None\n"
    "        v = eval(expr, g)\n"
    "        return (await v) if expr.co_flags & CO_COROUTINE else v\n"
    "    try:\n"
    "        if (code.co_flags | (expr.co_flags if expr else 0)) & CO_COROUTINE:\n"
    "            import asyncio\n"
    "            value = asyncio.run(both())\n"
    "        else:\n"
    "            exec(code, g)\n"
    "            value = None if expr is None else eval(expr, g)\n"
    "    except SystemExit:\n"
    "        raise\n"
    "    except BaseException as e:\n"
    "        import traceback\n"
    "        te = traceback.TracebackException(type(e), e, e.__traceback__)\n"
    "        st = te.stack\n"
    "        first = [i for i, f in enumerate(st) if f.filename == fn]\n"
    "        st[:] = st[first[0]:] if first else [f for f in st if f.filename != '<string>']\n"
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

struct program {
	char *code;
	size_t len;
	bool wrapped;
	char nonce[33]; /* marks the value line on stdout */
};

/* 0, 1 when the wrapped program does not fit and INPUTS were given, or -errno. */
static int program_build(const char *code, size_t len, const char *inputs_json,
			 const struct govex__tool_facts *bounds, struct program *ret)
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

static void program_free(struct program *p)
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

static void program_extract_value(const struct program *p, json_t *doc)
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

json_t *govex__tool_run_snippet(govex_toolset *ts, struct govex_request *req, const char *code,
				size_t code_len, const char *inputs, govex_result **ret_res)
{
	struct program prog;
	*ret_res = NULL;
	int r = program_build(code, code_len, inputs, &ts->facts, &prog);
	if (r < 0)
		return NULL;
	if (r == 1) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "code: the snippet with its INPUTS exceeds limits.code_bytes (%llu)",
			 (unsigned long long)ts->facts.code_bytes);
		govex_result *res = NULL;
		if (govex_result_new_refusal(GOVEX_STATUS_INVALID_INPUT, "code_too_large", msg,
					     &res) < 0)
			return NULL;
		size_t n;
		const char *js = govex_result_json(res, &n);
		json_error_t e;
		json_t *doc = json_loadb(js, n, 0, &e);
		govex_result_free(res);
		return doc;
	}
	req->code = prog.code;
	req->code_len = prog.len;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	if (govex_runtime_run(ts->rt, req, &res, &ge) < 0 &&
	    govex_result_new_refusal(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message,
				     &res) < 0) {
		program_free(&prog);
		return NULL;
	}
	size_t n;
	const char *js = govex_result_json(res, &n);
	json_error_t e;
	json_t *doc = json_loadb(js, n, 0, &e);
	if (doc)
		program_extract_value(&prog, doc);
	program_free(&prog);
	*ret_res = res;
	return doc;
}
