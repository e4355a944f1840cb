/* SPDX-License-Identifier: MIT */
/*
 * Call mode's inspection: a module inspected statically by the inspection worker (an
 * inspection job: planned and launched like any job, not asked of the approver), and
 * the runtime's cache of inspections by source digest and module name.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "call.h"
#include "runtime.h"

void govex__inspection_release(struct inspection *in)
{
	json_decref(in->doc);
	free(in->canon);
	memset(in, 0, sizeof(*in));
}

static char *inspection_key(const struct source *s)
{
	char *k = NULL;
	if (asprintf(&k, "%s %s", s->digest, s->module) < 0)
		return NULL;
	return k;
}

/* A cached inspection of this source, into in; false when there is none. */
static bool inspection_cached(govex_runtime *rt, const struct source *s, struct inspection *in)
{
	_cleanup_free_ char *key = inspection_key(s);
	bool found = false;
	if (!key)
		return false;
	pthread_mutex_lock(&rt->lock);
	for (size_t i = 0; i < ARRAY_SIZE(rt->inspections) && !found; i++) {
		if (!rt->inspections[i].key || strcmp(rt->inspections[i].key, key) != 0)
			continue;
		in->canon = strndup(rt->inspections[i].canon, rt->inspections[i].len);
		in->len = rt->inspections[i].len;
		found = in->canon != NULL;
	}
	pthread_mutex_unlock(&rt->lock);
	if (found) {
		in->doc = json_loadb(in->canon, in->len, 0, NULL);
		govex__sha256_digest(in->canon, in->len, in->digest);
		if (!in->doc) {
			free(in->canon);
			in->canon = NULL;
			return false;
		}
	}
	return found;
}

static void inspection_store(govex_runtime *rt, const struct source *s, const struct inspection *in)
{
	char *key = inspection_key(s), *canon = strndup(in->canon, in->len);
	if (!key || !canon) {
		free(key);
		free(canon);
		return;
	}
	pthread_mutex_lock(&rt->lock);
	size_t i = rt->inspections_next++ % ARRAY_SIZE(rt->inspections);
	free(rt->inspections[i].key);
	free(rt->inspections[i].canon);
	rt->inspections[i].key = key;
	rt->inspections[i].canon = canon;
	rt->inspections[i].len = in->len;
	pthread_mutex_unlock(&rt->lock);
}

/* ---- the cache directory's inspections ------------------------------------------------- */

/*
 * Successful inspections are also kept across processes, in the runtime's cache directory
 * (cache.c: a checked directory and checked files; nothing a run could write is read).
 * An entry's key is everything the inspection depends on: the source's digest, its module
 * and filename (the worker's request), the inspection worker's text (a new govex never
 * reads an old entry) and the interpreter that runs it (its resolved path and version).
 *
 * The interpreter is known only once planning has probed it (planning.c, probe_interp:
 * under the runtime's lock, in the mode the chosen backend allows), and resolve runs
 * before planning.  So the cache directory is consulted at check, after planning, rather
 * than probing early in resolve (which would repeat planning's choice of probe mode): a
 * hit then skips only the launch, planning and its events stay as they were, and the
 * in-memory cache still answers in resolve, before planning.
 *
 * An entry is untrusted input all the same: strict JSON whose canonical form is the
 * entry's very bytes (so its digest is the fresh inspection's), of this version, naming
 * this source digest and module.  Anything else is ignored and rewritten.
 */
#define INSPECT_CACHE_KEEP 64

static char worker_digests[2][72];
static pthread_once_t worker_digests_once = PTHREAD_ONCE_INIT;

static void make_worker_digests(void)
{
	govex__sha256_digest(govex__worker_inspection_py, govex__worker_inspection_py_len,
			     worker_digests[0]);
	govex__sha256_digest(govex__worker_py, govex__worker_py_len, worker_digests[1]);
}

/* The entry's key (one line: a compact JSON array, newlines escaped) and file name; NULL
 * when the interpreter is not known. */
static char *disk_key(const govex_runtime *rt, const struct source *s, char name[64])
{
	if (!rt->interp.path || !rt->interp.version)
		return NULL;
	/* the executable's identity too: one replaced in place at the same version is
	 * another interpreter */
	struct stat st;
	if (stat(rt->interp.path, &st) < 0)
		return NULL;
	char id[160];
	snprintf(id, sizeof(id), "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		 (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	pthread_once(&worker_digests_once, make_worker_digests);
	json_t *k = json_pack("[s, s, s, s, s, s, s, s, s]", "govex.inspect-cache/v1", s->digest,
			      s->module, s->filename, worker_digests[0], worker_digests[1],
			      rt->interp.path, rt->interp.version, id);
	char *key = k ? json_dumps(k, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(k);
	if (!key)
		return NULL;
	char dg[72];
	govex__sha256_digest(key, strlen(key), dg);
	snprintf(name, 64, "inspect-v1-%.16s.json", dg + 7);
	return key;
}

/* A valid entry of the cache directory for this source, into in (and the runtime's
 * memory cache); false when there is none. */
static bool inspection_disk_get(govex_runtime *rt, const struct source *s, struct inspection *in)
{
	char name[64];
	char *key = NULL, *data = NULL;
	json_t *doc = NULL;
	char *canon = NULL;
	size_t len = 0;
	bool found = false;
	int dfd = rt->probe_cache_dir ? govex__cache_dir_open(rt->probe_cache_dir, false) : -1;
	if (dfd < 0)
		return false;
	if (!(key = disk_key(rt, s, name)) ||
	    !(data = govex__cache_get(dfd, name, key, INSPECTION_FRAME_MAX)))
		goto out;
	if (govex__json_parse(data, strlen(data), 0, &doc, NULL) < 0 || !json_is_object(doc))
		goto out;
	const char *v = json_string_value(json_object_get(doc, "version"));
	const char *sd = json_string_value(json_object_get(doc, "source_digest"));
	const char *mod = json_string_value(json_object_get(doc, "module"));
	if (!v || strcmp(v, GOVEX_INSPECTION_VERSION) != 0 || !sd || strcmp(sd, s->digest) != 0 ||
	    !mod || strcmp(mod, s->module) != 0 ||
	    !json_is_array(json_object_get(doc, "functions")))
		goto out;
	/* byte-identical to what a fresh inspection yields: its canonical form */
	if (govex__canon(doc, &canon, &len) < 0 || len != strlen(data) ||
	    memcmp(canon, data, len) != 0)
		goto out;
	in->doc = TAKE_PTR(doc);
	in->canon = TAKE_PTR(canon);
	in->len = len;
	govex__sha256_digest(in->canon, in->len, in->digest);
	inspection_store(rt, s, in);
	found = true;
out:
	json_decref(doc);
	free(canon);
	free(data);
	free(key);
	close(dfd);
	return found;
}

static void inspection_disk_put(govex_runtime *rt, const struct source *s,
				const struct inspection *in)
{
	char name[64];
	char *key = NULL;
	int dfd = rt->probe_cache_dir ? govex__cache_dir_open(rt->probe_cache_dir, true) : -1;
	if (dfd < 0)
		return;
	if ((key = disk_key(rt, s, name)) && !memchr(in->canon, '\0', in->len)) {
		govex__cache_put(dfd, name, key, in->canon);
		govex__cache_prune(dfd, "inspect-v1-", INSPECT_CACHE_KEEP);
	}
	free(key);
	close(dfd);
}

/* ---- the inspection job ----------------------------------------------------------------- */

struct inspect_job {
	const struct govex_call *call; /* limits, metadata, cancellation (and the source) */
	struct source own;	       /* the source, read here (govex_runtime_inspect) */
	const struct source *s;	       /* the source inspected */
	struct inspection *in;	       /* what the job yields */
	char *frame;		       /* the request frame */
};

/* govex_runtime_inspect: the source is read and checked here */
static int inspect_prepare(struct govex__job *j, govex_result **ret_refusal)
{
	struct inspect_job *ij = j->state;
	if (ij->s)
		return 0;
	int r = govex__source_prepare(j->rt, &ij->call->source, &ij->own, ret_refusal);
	if (r == 0 && !*ret_refusal) {
		ij->s = &ij->own;
		j->req.code_len = ij->own.len;
	}
	return r;
}

/* an inspection of this source in the runtime's cache: done, nothing run */
static int inspect_resolve(struct govex__job *j, govex_result **ret_refusal)
{
	struct inspect_job *ij = j->state;
	(void)ret_refusal;
	return inspection_cached(j->rt, ij->s, ij->in) ? 1 : 0;
}

static int inspect_fill(const struct govex__job *j, struct govex__plan_fields *f)
{
	const struct inspect_job *ij = j->state;
	f->source.digest = ij->s->digest;
	f->source.bytes = ij->s->len;
	f->source.path = ij->s->path;
	f->source.notebook_digest = ij->s->notebook ? ij->s->notebook_digest : NULL;
	f->source.module = ij->s->module;
	return 0;
}

/* the inspection worker needs Python 3.8; an inspection in the cache directory: done */
static int inspect_check(struct govex__job *j, govex_result **ret_refusal)
{
	struct inspect_job *ij = j->state;
	govex_runtime *rt = j->rt;
	/* the interpreter is known now: the cache directory's entry, if any */
	if (rt->interp.major > 3 || (rt->interp.major == 3 && rt->interp.minor >= 8))
		return inspection_disk_get(rt, ij->s, ij->in) ? 1 : 0;
	govex_result *res =
	    govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
	if (res) {
		govex__result_set_digests(res, rt->policy->digest, NULL);
		govex__result_diag(res, "interpreter_unsupported", NULL,
				   "call mode needs Python 3.8 or later, not %s",
				   rt->interp.version);
	}
	*ret_refusal = res;
	return res ? 0 : -ENOMEM;
}

static int inspect_program(struct govex__job *j, struct govex__program *prog,
			   govex_result **ret_refusal)
{
	struct inspect_job *ij = j->state;
	const struct source *s = ij->s;
	(void)ret_refusal;
	json_t *request =
	    json_pack("{s:s, s:s, s:s%, s:s, s:s, s:s}", "version", GOVEX_FRAME_VERSION, "op",
		      "inspect", "source", s->text, s->len, "source_digest", s->digest, "module",
		      s->module, "filename", s->filename);
	char *frame = NULL;
	size_t len = 0;
	int r = request ? govex__frame_encode(request, &frame, &len) : -ENOMEM;
	json_decref(request);
	if (r < 0)
		return r;
	if ((r = govex__worker_argv(j->rt, true, prog->argv)) < 0) {
		free(frame);
		return r;
	}
	free(ij->frame);
	ij->frame = frame;
	prog->stdin_data = frame;
	prog->stdin_len = len;
	prog->frame = true;
	prog->frame_max = INSPECTION_FRAME_MAX;
	return 0;
}

static int inspect_finish(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
			  struct govex_error *err)
{
	struct inspect_job *ij = j->state;
	struct inspection *in = ij->in;
	json_t *resp = NULL;
	govex_result *res = NULL;
	int r = govex__worker_result(j, true, o, &resp, &res, err);
	if (r < 0)
		return r;
	if (resp) {
		json_t *doc = json_object_get(resp, "inspection");
		const char *v = json_string_value(json_object_get(doc, "version"));
		const char *sd = json_string_value(json_object_get(doc, "source_digest"));
		if (!json_is_object(doc) || !v || strcmp(v, GOVEX_INSPECTION_VERSION) != 0 || !sd ||
		    strcmp(sd, ij->s->digest) != 0 ||
		    !json_is_array(json_object_get(doc, "functions")) ||
		    govex__canon(doc, &in->canon, &in->len) < 0) {
			govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
						 govex_result_view(res)->termination);
			govex__result_diag(res, "worker_failed", NULL,
					   "the inspection in the response is not valid");
		} else {
			in->doc = json_incref(doc);
			govex__sha256_digest(in->canon, in->len, in->digest);
			inspection_store(j->rt, ij->s, in);
			inspection_disk_put(j->rt, ij->s, in);
			govex_result_free(res);
			res = NULL;
		}
	}
	json_decref(resp);
	*ret_result = res;
	return 0;
}

static void inspect_release(struct govex__job *j)
{
	struct inspect_job *ij = j->state;
	govex__source_release(&ij->own);
	free(ij->frame);
	ij->frame = NULL;
	ij->s = NULL;
}

const struct govex__job_ops govex__job_inspect = {
    .kind = GOVEX_JOB_INSPECT,
    .received = {"inspect", "inspect", "inspect"},
    .approve = false,
    .prepare = inspect_prepare,
    .resolve = inspect_resolve,
    .fill = inspect_fill,
    .check = inspect_check,
    .program = inspect_program,
    .finish = inspect_finish,
    .release = inspect_release,
};

/* The request an inspection stands for: the call's limits, metadata and cancellation;
 * no files, no outputs (nothing of the module runs). */
static struct govex_request inspect_request(const struct govex_call *call)
{
	struct govex_request req = govex__worker_request(call);
	req.files = NULL;
	req.n_files = 0;
	req.outputs = 0;
	req.on_output = NULL;
	return req;
}

int govex__inspect_nested(struct govex__job *parent, const struct govex_call *call,
			  const struct source *s, struct inspection *in, govex_result **ret_result,
			  struct govex_error *err)
{
	struct inspect_job ij = {.call = call, .s = s, .in = in};
	struct govex__job j = {
	    .ops = &govex__job_inspect,
	    .rt = parent->rt,
	    .mode = GOVEX_JOB_NESTED,
	    .req = inspect_request(call),
	    .state = &ij,
	};
	memcpy(j.run_id, parent->run_id, sizeof(j.run_id));
	memset(in, 0, sizeof(*in));
	return govex__job_execute(&j, NULL, ret_result, err);
}

GOVEX_API int govex_runtime_inspect(govex_runtime *rt, const struct govex_source *src,
				    char **ret_inspection, govex_result **ret_result,
				    struct govex_error *ret_err)
{
	struct inspection in;
	if (!rt || !src || !ret_inspection || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "inspect: missing argument");
	*ret_inspection = NULL;
	*ret_result = NULL;
	memset(&in, 0, sizeof(in));
	struct govex_call call;
	memset(&call, 0, sizeof(call));
	call.source = *src;
	struct inspect_job ij = {.call = &call, .in = &in};
	struct govex__job j = {
	    .ops = &govex__job_inspect,
	    .rt = rt,
	    .mode = GOVEX_JOB_EXECUTE,
	    .req = inspect_request(&call),
	    .state = &ij,
	};
	j.req.code_len = 0; /* the source's, once read (inspect_prepare) */
	int r = govex__job_execute(&j, NULL, ret_result, ret_err);
	if (r == 0 && !*ret_result)
		*ret_inspection = TAKE_PTR(in.canon);
	govex__inspection_release(&in);
	return r;
}
