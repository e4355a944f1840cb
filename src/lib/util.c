/* SPDX-License-Identifier: MIT */
/* Small shared pieces: errors, string vectors, UTF-8, canonical JSON, digests, paths. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The low-level SHA256_Init/Update/Final need no provider or configuration loading, which
 * cost about a millisecond per process with EVP (and the one-shot SHA256()) in OpenSSL 3;
 * they are deprecated there, not removed. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "internal.h"

/* ---- errors ------------------------------------------------------------------------ */

int govex__err(struct govex_error *err, int code, int sys_errno, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (err) {
		va_list ap;
		err->code = code;
		err->sys_errno = sys_errno;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return -code;
}

struct errdesc {
	int code;
	const char *name;
	const char *msg;
};

static const struct errdesc error_table[] = {
#define GOVEX__ERRDESC(name, num, msg) {1000 + (num), "GOVEX_E" #name, msg},
    GOVEX_ERRORS(GOVEX__ERRDESC)
#undef GOVEX__ERRDESC
};

GOVEX_API const char *govex_error_name(int code)
{
	if (code < 0)
		code = -code;
	for (size_t i = 0; i < ARRAY_SIZE(error_table); i++)
		if (error_table[i].code == code)
			return error_table[i].name;
	const char *n = strerrorname_np(code);
	return n ? n : "EUNKNOWN";
}

GOVEX_API const char *govex_strerror(int code)
{
	if (code < 0)
		code = -code;
	for (size_t i = 0; i < ARRAY_SIZE(error_table); i++)
		if (error_table[i].code == code)
			return error_table[i].msg;
	const char *d = strerrordesc_np(code);
	return d ? d : "unknown error";
}

GOVEX_API const char *govex_version(void)
{
	return GOVEX_VERSION_STRING;
}

/* ---- string vectors -------------------------------------------------------------- */

char **govex__strv_free(char **v)
{
	if (v) {
		for (char **p = v; *p; p++)
			free(*p);
		free(v);
	}
	return NULL;
}

size_t govex__strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

int govex__strv_push_take(char ***v, char *s)
{
	if (!s)
		return -ENOMEM;
	size_t n = govex__strv_len(*v);
	char **nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[n] = s;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

int govex__strv_push(char ***v, const char *s)
{
	return govex__strv_push_take(v, strdup(s));
}

char **govex__strv_copy(char *const *v)
{
	char **r = calloc(1, sizeof(char *));
	if (!r)
		return NULL;
	for (size_t i = 0; v && v[i]; i++)
		if (govex__strv_push(&r, v[i]) < 0)
			return govex__strv_free(r);
	return r;
}

bool govex__strv_contains(char *const *v, const char *s)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void govex__strv_sort_uniq(char **v)
{
	size_t n = govex__strv_len(v), w = 0;
	if (n < 2)
		return;
	qsort(v, n, sizeof(char *), strp_cmp);
	for (size_t r = 0; r < n; r++) {
		if (w > 0 && strcmp(v[w - 1], v[r]) == 0) {
			free(v[r]);
			continue;
		}
		v[w++] = v[r];
	}
	v[w] = NULL;
}

json_t *govex__strv_json(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* ---- UTF-8 ------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid or cut short. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned min;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (len < n)
		return 0;
	unsigned cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* true when s[0..len) is a proper prefix of a valid UTF-8 sequence */
static bool utf8_prefix(const unsigned char *s, size_t len)
{
	unsigned c = s[0];
	size_t need = (c >= 0xc2 && c <= 0xdf)	 ? 2
		      : (c >= 0xe0 && c <= 0xef) ? 3
		      : (c >= 0xf0 && c <= 0xf4) ? 4
						 : 0;
	if (!need || len >= need)
		return false;
	if (len >= 2) {
		unsigned lo = 0x80, hi = 0xbf;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (s[1] < lo || s[1] > hi)
			return false;
	}
	for (size_t k = 2; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return false;
	return true;
}

size_t govex__ascii_run(const unsigned char *s, size_t len)
{
	size_t i = 0;
	for (uint64_t w; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080ull)
			break;
	}
	while (i < len && s[i] < 0x80)
		i++;
	return i;
}

bool govex__utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		i += govex__ascii_run(u + i, len - i); /* 8 bytes at a time: files, output */
		if (i == len)
			break;
		size_t n = utf8_seq(u + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

size_t govex__utf8_sanitize(const char *s, size_t len, bool cut, char **ret, size_t *ret_len,
			    uint64_t *ret_replaced)
{
	/* Each invalid byte becomes U+FFFD (3 bytes), so 3*len bounds the output. */
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(3 * len + 1);
	size_t o = 0;
	uint64_t replaced = 0;
	if (!out)
		return (size_t)-1;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(u + i, len - i);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		/* A character cut by truncation at the very end is dropped, not replaced: only
		 * a true prefix of some valid sequence counts as cut. */
		if (cut && utf8_prefix(u + i, len - i))
			break;
		memcpy(out + o, "\xef\xbf\xbd", 3);
		o += 3;
		i++;
		replaced++;
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	*ret_replaced = replaced;
	return o;
}

/* ---- canonical JSON ------------------------------------------------------------------ */

static bool has_real(const json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;
	switch (json_typeof(j)) {
	case JSON_REAL:
		return true;
	case JSON_OBJECT:
		json_object_foreach((json_t *)j, k, v) if (has_real(v)) return true;
		return false;
	case JSON_ARRAY:
		json_array_foreach(j, i, v) if (has_real(v)) return true;
		return false;
	default:
		return false;
	}
}

int govex__canon(const json_t *j, char **ret_bytes, size_t *ret_len)
{
	if (has_real(j))
		return -GOVEX_EINVAL;
	/* jansson's JSON_SORT_KEYS compares with strcmp: byte order of UTF-8, which is code
	 * point order. */
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	char *r = realloc(s, n + 2);
	if (!r) {
		free(s);
		return -ENOMEM;
	}
	r[n] = '\n';
	r[n + 1] = '\0';
	*ret_bytes = r;
	*ret_len = n + 1;
	return 0;
}

void govex__sha256_digest(const void *data, size_t len, char out[72])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	static const char hex[] = "0123456789abcdef";
	SHA256_CTX ctx;
	SHA256_Init(&ctx);
	SHA256_Update(&ctx, data, len);
	SHA256_Final(md, &ctx);
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[71] = '\0';
}

int govex__json_parse(const char *data, size_t len, size_t flags, json_t **ret,
		      struct govex_error *err)
{
	json_error_t je;
	/* jansson checks UTF-8 itself; check first so the message is precise. */
	if (!govex__utf8_valid(data, len))
		return govex__err(err, GOVEX_EUTF8, 0, "document: invalid UTF-8");
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES | flags, &je);
	if (!j)
		return govex__err(err, GOVEX_EJSON, 0, "document: line %d column %d: %s", je.line,
				  je.column, je.text);
	*ret = j;
	return 0;
}

int govex__fd_not_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	return n < 0 ? -e : n;
}

int govex__pipe(int p[2], int flags)
{
	int q[2];
	if (pipe2(q, flags | O_CLOEXEC) < 0)
		return -errno;
	/* F_DUPFD_CLOEXEC keeps the file status flags (O_NONBLOCK): they are the file's */
	int a = govex__fd_not_stdio(q[0]);
	int b = govex__fd_not_stdio(q[1]);
	if (a < 0 || b < 0) {
		int e = a < 0 ? -a : -b;
		if (a >= 0)
			close(a);
		if (b >= 0)
			close(b);
		return -e;
	}
	p[0] = a;
	p[1] = b;
	return 0;
}

int govex__read_file(const char *path, size_t max, char **ret_data, size_t *ret_len,
		     struct govex_error *err)
{
	/* O_NONBLOCK: opening a FIFO nobody writes would block for ever; fstat then
	 * refuses it (reads of a regular file ignore the flag) */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return govex__err(err, errno, errno, "'%s': cannot open: %s", path,
				  strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0)
		return govex__err(err, errno, errno, "'%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return govex__err(err, EISDIR, EISDIR, "'%s': is a directory", path);
	if (!S_ISREG(st.st_mode))
		return govex__err(err, EINVAL, EINVAL,
				  "'%s': not a regular file (a FIFO, socket or device is not read)",
				  path);
	int r = govex__read_fd(fd, max, ret_data, ret_len);
	if (r == -EFBIG)
		return govex__err(err, GOVEX_ETOOBIG, 0, "'%s': larger than %zu bytes", path, max);
	if (r < 0)
		return govex__err(err, -r, -r, "'%s': read: %s", path, strerror(-r));
	return 0;
}

int govex__read_fd(int fd, size_t max, char **ret_data, size_t *ret_len)
{
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap > max)
				break;
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*ret_data = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* ---- paths -------------------------------------------------------------------------- */

bool govex__path_normalized(const char *path)
{
	if (!path || path[0] != '/')
		return false;
	if (strcmp(path, "/") == 0)
		return true;
	size_t n = strlen(path);
	if (path[n - 1] == '/')
		return false;
	for (const char *c = path; *c;) {
		/* c points at a '/' */
		const char *e = strchr(c + 1, '/');
		size_t seg = e ? (size_t)(e - c - 1) : strlen(c + 1);
		if (seg == 0 || (seg == 1 && c[1] == '.') ||
		    (seg == 2 && c[1] == '.' && c[2] == '.'))
			return false;
		if (!e)
			break;
		c = e;
	}
	return true;
}

bool govex__path_under(const char *path, const char *root)
{
	if (strcmp(root, "/") == 0)
		return path[0] == '/';
	size_t n = strlen(root);
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

uint64_t govex__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int govex__find_in_path(const char *name, char **ret)
{
	const char *path = secure_getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		/* relative PATH entries are ignored: the result must not depend on the cwd */
		if (n > 0 && p[0] == '/') {
			char *cand = NULL;
			if (asprintf(&cand, "%.*s/%s", (int)n, p, name) < 0)
				return -ENOMEM;
			struct stat st;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(cand, X_OK) == 0) {
				*ret = cand;
				return 0;
			}
			free(cand);
		}
		if (!e)
			break;
		p = e + 1;
	}
	return -ENOENT;
}

static bool ident_char(char c, bool first)
{
	/* ASCII only, whatever the host's locale says isalpha() means */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

bool govex__identifier(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ident_char(s[i], i == 0))
			return false;
	return true;
}

/* ---- a "did you mean" hint --------------------------------------------------------- */

/* Field names are short; a longer name is no typo of one, and the bound keeps the table
 * on the stack. */
#define NEAREST_MAX 64

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
	unsigned m = a < b ? a : b;
	return m < c ? m : c;
}

/* The optimal-string-alignment distance between a and b (each at most NEAREST_MAX bytes),
 * ASCII case ignored. */
static unsigned osa_distance(const char *a, size_t la, const char *b, size_t lb)
{
	unsigned char d[NEAREST_MAX + 1][NEAREST_MAX + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned char)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned char)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int ai = tolower((unsigned char)a[i - 1]);
			int bj = tolower((unsigned char)b[j - 1]);
			unsigned v = min3(d[i - 1][j] + 1u, d[i][j - 1] + 1u,
					  d[i - 1][j - 1] + (ai != bj ? 1u : 0u));
			/* two neighbours swapped */
			if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj && d[i - 2][j - 2] + 1u < v)
				v = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)v;
		}
	return d[la][lb];
}

const char *govex__nearest_name(const char *name, const char *const *names)
{
	size_t ln = strlen(name);
	if (ln > NEAREST_MAX)
		return NULL;
	const unsigned limit = ln <= 4 ? 1 : 2;
	const char *best = NULL;
	unsigned best_d = 0;
	for (size_t i = 0; names[i]; i++) {
		size_t lc = strlen(names[i]);
		/* the distance is at least the difference in length */
		if (lc > NEAREST_MAX || (lc > ln ? lc - ln : ln - lc) > limit)
			continue;
		unsigned dist = osa_distance(name, ln, names[i], lc);
		if (dist <= limit && (!best || dist < best_d)) {
			best = names[i];
			best_d = dist;
		}
	}
	return best;
}

/* ---- text from an untrusted process --------------------------------------------------- */

#define TRUNCATED_NOTE " [truncated]"

/* The code point of the valid UTF-8 sequence at u (len bytes). */
static uint32_t utf8_cp(const unsigned char *u, size_t len)
{
	switch (len) {
	case 1:
		return u[0];
	case 2:
		return ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
	case 3:
		return ((uint32_t)(u[0] & 0x0f) << 12) | ((uint32_t)(u[1] & 0x3f) << 6) |
		       (u[2] & 0x3f);
	default:
		return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3f) << 12) |
		       ((uint32_t)(u[2] & 0x3f) << 6) | (u[3] & 0x3f);
	}
}

char *govex__text_clean(const char *s, size_t n, size_t max, bool *ret_truncated)
{
	char *u = NULL;
	size_t ulen = 0;
	uint64_t rep = 0;
	const size_t note = sizeof(TRUNCATED_NOTE) - 1;
	*ret_truncated = false;
	if (max <= note)
		return NULL;
	if (govex__utf8_sanitize(s ? s : "", s ? n : 0, false, &u, &ulen, &rep) == (size_t)-1) {
		free(u);
		return NULL;
	}
	char *out = malloc(max + 1);
	if (!out) {
		free(u);
		return NULL;
	}
	const unsigned char *b = (const unsigned char *)u;
	size_t o = 0, fits = 0; /* fits: output length at the last boundary <= max - note */
	enum { TEXT, ESC, CSI, STR, STR_ESC } st = TEXT;
	for (size_t i = 0; i < ulen;) {
		size_t cl = b[i] < 0x80 ? 1 : b[i] < 0xe0 ? 2 : b[i] < 0xf0 ? 3 : 4;
		if (cl > ulen - i)
			break; /* cannot happen: u is valid UTF-8 */
		uint32_t cp = utf8_cp(b + i, cl);
		const unsigned char *c = b + i;
		i += cl;
		switch (st) {
		case ESC: /* ESC, then intermediates 0x20-0x2f, then one final character */
			if (cp == '[')
				st = CSI;
			else if (cp == ']' || cp == 'P' || cp == 'X' || cp == '^' || cp == '_')
				st = STR;
			else if (cp < 0x20 || cp > 0x2f)
				st = TEXT;
			continue;
		case CSI: /* parameters and intermediates 0x20-0x3f up to a final 0x40-0x7e */
			if (cp >= 0x20 && cp <= 0x3f)
				continue;
			st = TEXT;
			if (cp >= 0x40 && cp <= 0x7e)
				continue;
			break; /* anything else ends the sequence and is text */
		case STR:      /* OSC, DCS, SOS, PM, APC: up to BEL, ST or ESC \ */
			if (cp == 0x07 || cp == 0x9c)
				st = TEXT;
			else if (cp == 0x1b)
				st = STR_ESC;
			continue;
		case STR_ESC:
			st = cp == '[' ? CSI : TEXT;
			continue;
		case TEXT:
			break;
		}
		if (cp == 0x1b) {
			st = ESC;
			continue;
		}
		if (cp == 0x9b) {
			st = CSI;
			continue;
		}
		if (cp == 0x90 || cp == 0x98 || cp == 0x9d || cp == 0x9e || cp == 0x9f) {
			st = STR;
			continue;
		}
		if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f))
			continue;
		/* Unicode's bidirectional controls reorder what a terminal shows (the text
		 * read is not the text displayed): ALM, LRM, RLM, the embeddings and
		 * overrides, the isolates */
		if (cp == 0x061c || cp == 0x200e || cp == 0x200f ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			continue;
		if (o + cl > max) {
			*ret_truncated = true;
			break;
		}
		memcpy(out + o, c, cl);
		o += cl;
		if (o <= max - note)
			fits = o;
	}
	if (*ret_truncated) {
		memcpy(out + fits, TRUNCATED_NOTE, note);
		o = fits + note;
	}
	out[o] = '\0';
	free(u);
	return out;
}

char *govex__json_escape_controls(char *js)
{
	size_t extra = 0, n = 0;
	if (!js)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)js; *p; p++, n++)
		if (*p == 0x7f)
			extra += 5;
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			extra += 4;
	if (!extra)
		return js;
	char *t = malloc(n + extra + 1);
	if (!t) {
		free(js);
		return NULL;
	}
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)js; *p; p++) {
		if (*p == 0x7f) {
			memcpy(t + o, "\\u007f", 6);
			o += 6;
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			snprintf(t + o, 7, "\\u%04x", (unsigned)p[1]);
			o += 6;
			p++;
		} else {
			t[o++] = (char)*p;
		}
	}
	t[o] = '\0';
	free(js);
	return t;
}

bool govex__privileged(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v >= 0)
		return v;
	v = 0;
	if (geteuid() == 0) {
		/* CapEff from /proc/self/status: a hex mask */
		FILE *f = fopen("/proc/self/status", "re");
		char line[256];
		unsigned long long eff = 0;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &eff) == 1)
				break;
		if (f)
			fclose(f);
		const unsigned long long need = (1ULL << 21) | (1ULL << 7) | (1ULL << 6);
		v = (eff & need) == need;
	}
	__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	return v;
}
