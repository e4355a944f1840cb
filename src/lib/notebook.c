/* SPDX-License-Identifier: MIT */
/*
 * Notebooks: the code cells of an .ipynb document, in order, joined into one Python
 * source.  Each cell contributes its text followed by a newline when it lacks one.
 * IPython magics (%, %%) and shell escapes (!) are not Python: a cell that has one (where
 * IPython would see one: at the start of a logical line) makes the notebook invalid,
 * naming the cell (0-based, counting every cell).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = (*cap ? *cap * 2 : 4096);
		while (nc < *len + n + 1)
			nc *= 2;
		char *nb = realloc(*buf, nc);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/*
 * true when the cell has a line IPython would take for a magic or a shell escape: one
 * whose first character (after blanks) is % or ! at the start of a LOGICAL line.  A
 * small tokenizer follows what continues a line: strings (quotes, triple quotes, any
 * prefix; a backslash in a string escapes the next character, raw or not, as for the
 * string's end), comments, open brackets, and a backslash at the end of a line.  So
 * "%" inside a triple-quoted string, or a line "% 2)" inside an open parenthesis, is
 * Python, not a magic.
 */
static bool has_magic(const char *s, size_t n)
{
	enum { CODE, COMMENT, STRING } st = CODE;
	char quote = 0;	     /* the string's quote character */
	bool triple = false; /* the string is triple-quoted */
	int depth = 0;	     /* open brackets */
	bool bol = true;     /* at the start of a logical line, before its first token */
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		switch (st) {
		case COMMENT:
			if (c == '\n') {
				st = CODE;
				bol = depth == 0;
			}
			continue;
		case STRING:
			if (c == '\\') {
				i++; /* the escaped character, a newline included */
			} else if (c == '\n' && !triple) {
				/* an unterminated string: Python's error; the line ends here */
				st = CODE;
				bol = depth == 0;
			} else if (c == quote && (!triple || (i + 2 < n && s[i + 1] == quote &&
							      s[i + 2] == quote))) {
				i += triple ? 2 : 0;
				st = CODE;
			}
			continue;
		case CODE:
			break;
		}
		if (c == '\n') {
			bol = depth == 0;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\f' || c == '\r')
			continue;
		if (bol && (c == '%' || c == '!'))
			return true;
		bol = false;
		if (c == '#') {
			st = COMMENT;
		} else if (c == '"' || c == '\'') {
			quote = c;
			triple = i + 2 < n && s[i + 1] == c && s[i + 2] == c;
			i += triple ? 2 : 0;
			st = STRING;
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
		} else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
			depth--;
		} else if (c == '\\' && i + 1 < n && s[i + 1] == '\n') {
			i++; /* a continuation: the next line goes on with this one */
		}
	}
	return false;
}

int govex__notebook_to_python(const char *data, size_t len, char **ret, size_t *ret_len,
			      struct govex_error *err)
{
	_cleanup_json_ json_t *nb = NULL;
	int r = govex__json_parse(data, len, 0, &nb, err);
	if (r < 0)
		return govex__err(err, GOVEX_EINVAL, 0, "notebook: not a JSON document");
	json_t *cells = json_object_get(nb, "cells");
	if (!json_is_array(cells))
		return govex__err(err, GOVEX_EINVAL, 0, "notebook: no \"cells\" array");
	char *buf = NULL;
	size_t blen = 0, cap = 0;
	size_t i;
	json_t *cell;
	if (append(&buf, &blen, &cap, "", 0) < 0)
		return -ENOMEM;
	json_array_foreach(cells, i, cell)
	{
		const char *type = json_string_value(json_object_get(cell, "cell_type"));
		if (!type) {
			free(buf);
			return govex__err(err, GOVEX_EINVAL, 0, "notebook: cell %zu: no cell_type",
					  i);
		}
		if (strcmp(type, "code") != 0)
			continue;
		json_t *src = json_object_get(cell, "source");
		size_t start = blen;
		if (json_is_string(src)) {
			r = append(&buf, &blen, &cap, json_string_value(src),
				   json_string_length(src));
		} else if (json_is_array(src)) {
			size_t k;
			json_t *line;
			r = 0;
			json_array_foreach(src, k, line)
			{
				if (!json_is_string(line)) {
					free(buf);
					return govex__err(
					    err, GOVEX_EINVAL, 0,
					    "notebook: cell %zu: source[%zu] is not a "
					    "string",
					    i, k);
				}
				if ((r = append(&buf, &blen, &cap, json_string_value(line),
						json_string_length(line))) < 0)
					break;
			}
		} else {
			free(buf);
			return govex__err(err, GOVEX_EINVAL, 0,
					  "notebook: cell %zu: source is not text", i);
		}
		if (r < 0) {
			free(buf);
			return -ENOMEM;
		}
		if (memchr(buf + start, '\0', blen - start)) {
			free(buf);
			return govex__err(err, GOVEX_EINVAL, 0, "notebook: cell %zu: NUL in source",
					  i);
		}
		if (has_magic(buf + start, blen - start)) {
			free(buf);
			return govex__err(
			    err, GOVEX_EINVAL, 0,
			    "notebook: cell %zu: IPython magic or shell escape is not "
			    "Python",
			    i);
		}
		if (blen > start && buf[blen - 1] != '\n' &&
		    append(&buf, &blen, &cap, "\n", 1) < 0) {
			free(buf);
			return -ENOMEM;
		}
	}
	*ret = buf;
	*ret_len = blen;
	return 0;
}
