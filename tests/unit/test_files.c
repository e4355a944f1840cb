/* SPDX-License-Identifier: MIT */
/* unit-files: files in and out (files.c): the name rule, MIME types, collecting an output
 * directory into records and parsing them; and through the public API a run with files
 * in, outputs and the live output callback (runtime.c, supervise.c, result.c). */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "files.h"
#include "internal.h"

static char base[64];

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/govex-unit-files-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
	govex__rm_rf(base);
}

static char *at(const char *name)
{
	static char buf[4][PATH_MAX];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, PATH_MAX, "%s/%s", base, name);
	return b;
}

static void put(const char *name, const char *data)
{
	int fd = open(at(name), O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

START_TEST(test_name_rule)
{
	const char *good[] = {"a", "A-b_c.1.csv", "x..y", "a-"};
	const char *bad[] = {"", ".", "..", ".hidden", "a/b", "a b", "caf\xc3\xa9", "a\nb", "*"};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		ck_assert_msg(govex__file_name_ok(good[i], strlen(good[i])), "%s", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(!govex__file_name_ok(bad[i], strlen(bad[i])), "%s", bad[i]);
	char n[130];
	memset(n, 'a', sizeof(n));
	ck_assert(govex__file_name_ok(n, 128));
	ck_assert(!govex__file_name_ok(n, 129));
	ck_assert(!govex__file_name_ok(NULL, 0));
}
END_TEST

START_TEST(test_mime)
{
	ck_assert_str_eq(govex__mime_of("x.bin", "\x89PNG\r\n\x1a\nzz", 10), "image/png");
	ck_assert_str_eq(govex__mime_of("x.txt", "\xff\xd8\xff\xe0", 4), "image/jpeg");
	ck_assert_str_eq(govex__mime_of("x", "GIF89a..", 8), "image/gif");
	ck_assert_str_eq(govex__mime_of("x", "RIFF\0\0\0\0WEBPVP8 ", 16), "image/webp");
	ck_assert_str_eq(govex__mime_of("x", "%PDF-1.7", 8), "application/pdf");
	ck_assert_str_eq(govex__mime_of("a.svg", "<svg", 4), "image/svg+xml");
	ck_assert_str_eq(govex__mime_of("a.csv", "a,b", 3), "text/csv");
	ck_assert_str_eq(govex__mime_of("a.json", "{}", 2), "application/json");
	ck_assert_str_eq(govex__mime_of("a.md", "#", 1), "text/plain");
	ck_assert_str_eq(govex__mime_of("a.html", "<p>", 3), "text/html");
	ck_assert_str_eq(govex__mime_of("a", "", 0), "application/octet-stream");
}
END_TEST

static bool has_diag(const struct govex__outfiles *o, const char *code, const char *name)
{
	size_t i;
	json_t *d;
	json_array_foreach(o->diags, i, d)
	{
		const char *c = json_string_value(json_object_get(d, "code"));
		const char *n = json_string_value(json_object_get(d, "name"));
		if (c && strcmp(c, code) == 0 && (!name || (n && strcmp(n, name) == 0)))
			return true;
	}
	return false;
}

static struct govex__outfiles *collect(uint64_t count, uint64_t bytes)
{
	int wd = open(base, O_RDONLY | O_DIRECTORY);
	int mfd = memfd_create("t", MFD_CLOEXEC);
	char *scratch = malloc(GOVEX__COLLECT_SCRATCH);
	ck_assert(wd >= 0 && mfd >= 0 && scratch);
	govex__files_collect(wd, mfd, count, bytes, scratch);
	struct govex__outfiles *o = govex__files_parse(mfd);
	ck_assert_ptr_nonnull(o);
	free(scratch);
	close(mfd);
	close(wd);
	return o;
}

START_TEST(test_collect_regular_only)
{
	ck_assert_int_eq(mkdir(at("output"), 0700), 0);
	put("output/b.txt", "bee");
	put("output/a.csv", "x,y\n");
	put("output/orig", "o");
	put("secret", "host secret");
	ck_assert_int_eq(link(at("output/orig"), at("output/hard")), 0);
	ck_assert_int_eq(symlink(at("secret"), at("output/link")), 0);
	ck_assert_int_eq(mkfifo(at("output/fifo"), 0600), 0);
	ck_assert_int_eq(mkdir(at("output/sub"), 0700), 0);
	put("output/.hidden", "h");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("output/sock"));
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct govex__outfiles *o = collect(64, 1 << 20);
	close(s);
	ck_assert_uint_eq(o->n, 2);
	ck_assert_str_eq(o->f[0].name, "a.csv");
	ck_assert_str_eq(o->f[0].mime, "text/csv");
	ck_assert_str_eq(o->f[1].name, "b.txt");
	ck_assert_uint_eq(o->f[1].len, 3);
	ck_assert_int_eq(memcmp(o->f[1].data, "bee", 3), 0);
	ck_assert_str_eq(o->f[1].sha256,
			 "sha256:62cb81b5904a262ffaeed02abef36bfc540b09f964b8b0b636662f77ffce6714");
	const char *skipped[] = {"orig", "hard", "link", "fifo", "sub", ".hidden", "sock"};
	for (size_t i = 0; i < ARRAY_SIZE(skipped); i++)
		ck_assert_msg(has_diag(o, "output_skipped", skipped[i]), "%s", skipped[i]);
	govex__outfiles_free(o);
}
END_TEST

START_TEST(test_collect_bounds)
{
	ck_assert_int_eq(mkdir(at("output"), 0700), 0);
	for (int i = 0; i < 6; i++) {
		char n[32];
		snprintf(n, sizeof(n), "output/f%d", i);
		put(n, "0123456789");
	}
	int fd = open(at("output/sparse"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(ftruncate(fd, 1LL << 40), 0);
	close(fd);
	struct govex__outfiles *o = collect(4, 25);
	ck_assert_uint_eq(o->n, 2); /* f0 f1 fit in 25 bytes; f2, f3 do not */
	ck_assert_str_eq(o->f[0].name, "f0");
	ck_assert(has_diag(o, "output_truncated", "f2"));
	ck_assert(has_diag(o, "output_truncated", NULL));
	govex__outfiles_free(o);
	o = collect(3, 1 << 20);
	ck_assert_uint_eq(o->n, 3);
	ck_assert(has_diag(o, "output_truncated", NULL)); /* the count bound */
	govex__outfiles_free(o);
}
END_TEST

START_TEST(test_collect_dir_replaced)
{
	ck_assert_int_eq(mkdir(at("elsewhere"), 0700), 0);
	put("elsewhere/secret.txt", "secret");
	ck_assert_int_eq(symlink(at("elsewhere"), at("output")), 0);
	struct govex__outfiles *o = collect(64, 1 << 20);
	ck_assert_uint_eq(o->n, 0);
	ck_assert(has_diag(o, "output_skipped", NULL));
	govex__outfiles_free(o);
}
END_TEST

/* ---- through the public API ---- */

struct seen {
	char buf[4096];
	size_t len;
	int calls;
};

static void on_output(void *ud, int stream, const char *data, size_t len)
{
	struct seen *s = ud;
	ck_assert(stream == 1 || stream == 2);
	if (stream == 1 && s->len + len <= sizeof(s->buf)) {
		memcpy(s->buf + s->len, data, len);
		s->len += len;
	}
	s->calls++;
}

START_TEST(test_api_run)
{
	govex_policy *p = NULL;
	govex_runtime *rt = NULL;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	ck_assert_int_eq(govex_policy_preset("trusted", &p, &ge), 0);
	struct govex_runtime_options ro = {.backend = "controlled"};
	ck_assert_int_eq(govex_runtime_new(p, &ro, &rt, &ge), 0);
	const char *code = "import os, sys\n"
			   "print(open('in.txt').read(), end='')\n"
			   "sys.stdout.flush()\n"
			   "open(os.path.join(os.environ['GOVEX_OUTPUT_DIR'], 'o.json'), 'w')"
			   ".write('[1]')\n"
			   "print('done')\n";
	struct govex_file files[] = {{"in.txt", "hello\n", 6}};
	struct seen seen = {0};
	struct govex_request req = {
	    .code = code,
	    .code_len = strlen(code),
	    .files = files,
	    .n_files = 1,
	    .outputs = 1,
	    .on_output = on_output,
	    .output_userdata = &seen,
	};
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, &ge), 0);
	const struct govex_result_view *v = govex_result_view(res);
	ck_assert_msg(v->status == GOVEX_STATUS_SUCCESS, "%s", govex_result_json(res, NULL));
	ck_assert_uint_eq(v->stdout_len, seen.len);
	ck_assert_int_eq(memcmp(v->stdout_data, seen.buf, seen.len), 0);
	ck_assert_str_eq(v->stdout_data, "hello\ndone\n");
	ck_assert_int_ge(seen.calls, 1);
	ck_assert_uint_eq(govex_result_file_count(res), 1);
	const char *name, *mime;
	const void *data;
	size_t len;
	ck_assert_int_eq(govex_result_file(res, 0, &name, &mime, &data, &len), 0);
	ck_assert_str_eq(name, "o.json");
	ck_assert_str_eq(mime, "application/json");
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(memcmp(data, "[1]", 3), 0);
	ck_assert_int_eq(govex_result_file(res, 1, &name, &mime, &data, &len), -GOVEX_EINVAL);
	ck_assert_ptr_nonnull(strstr(govex_result_json(res, NULL), "\"files\":[{"));
	govex_result_free(res);

	/* no outputs requested: no files, no member */
	req.outputs = 0;
	req.n_files = 0;
	req.files = NULL;
	req.code = "print(1)";
	req.code_len = 8;
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, &ge), 0);
	ck_assert_uint_eq(govex_result_file_count(res), 0);
	ck_assert_ptr_null(strstr(govex_result_json(res, NULL), "\"files\""));
	govex_result_free(res);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

static Suite *files_suite(void)
{
	Suite *s = suite_create("files");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_name_rule);
	tcase_add_test(tc, test_mime);
	suite_add_tcase(s, tc);
	tc = tcase_create("collect");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_collect_regular_only);
	tcase_add_test(tc, test_collect_bounds);
	tcase_add_test(tc, test_collect_dir_replaced);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_test(tc, test_api_run);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(files_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
