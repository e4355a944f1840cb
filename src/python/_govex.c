/* SPDX-License-Identifier: MIT */
/*
 * govex._govex: the C half of the Python binding (src/python/govex/__init__.py is the
 * API).  Written against the limited API of CPython 3.6, so that one file,
 * _govex.abi3.so, loads into every CPython from 3.6 on.
 *
 * It is thin on purpose: handles are capsules (a runtime, a plan, a cancellation
 * token), requests come as a dict of bytes, ints and lists that the Python side built
 * and checked, and results go back as a tuple of the result's JSON document, its raw
 * output bytes and its files.  The Python side makes the types.
 *
 * Every library call that may run code releases the GIL; the live-output callback takes
 * it again (PyGILState_Ensure), on whichever thread the library calls it.
 */
#define Py_LIMITED_API 0x03060000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include <govex.h>

#define RUNTIME_CAPSULE "govex._govex.runtime"
#define PLAN_CAPSULE	"govex._govex.plan"
#define CANCEL_CAPSULE	"govex._govex.cancel"

/* govex.Error's factory, set by the Python side: factory(code, name, message, errno)
 * returns the exception to raise.  A module global: the module is single-phase. */
static PyObject *error_factory;

static PyObject *raise_error(int rc, const struct govex_error *e)
{
	int code = rc < 0 ? -rc : rc;
	const char *msg = e && e->message[0] ? e->message : govex_strerror(code);
	int sys_errno = e ? e->sys_errno : 0;
	if (code == ENOMEM)
		return PyErr_NoMemory();
	if (!error_factory) {
		PyErr_Format(PyExc_RuntimeError, "%s: %s", govex_error_name(code), msg);
		return NULL;
	}
	PyObject *exc = PyObject_CallFunction(error_factory, "issi", code, govex_error_name(code),
					      msg, sys_errno);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* ---- capsules ---------------------------------------------------------------------- */

static void runtime_destroy(PyObject *cap)
{
	govex_runtime_free(PyCapsule_GetPointer(cap, RUNTIME_CAPSULE));
}

static void plan_destroy(PyObject *cap)
{
	govex_plan_free(PyCapsule_GetPointer(cap, PLAN_CAPSULE));
}

static void cancel_destroy(PyObject *cap)
{
	govex_cancel_free(PyCapsule_GetPointer(cap, CANCEL_CAPSULE));
}

static void *capsule_arg(PyObject *cap, const char *name)
{
	void *p = PyCapsule_GetPointer(cap, name); /* sets an error when it is not one */
	if (!p && !PyErr_Occurred())
		PyErr_Format(PyExc_ValueError, "%s is closed", name);
	return p;
}

/* ---- requests: what the Python side put in the dict -------------------------------- */

/* What a request borrows and this file allocated: freed after the call (the GIL held).
 * snap is the request dict as the call reads it: its own copy, with its own copies of
 * the lists, so that the bytes the library reads while the GIL is released are held by
 * objects no other thread can reach (a list of the caller's, emptied by another thread
 * during the run, would free them). */
struct held {
	const char **strv[3];
	struct govex_file *files;
	PyObject *snap;
};

static void held_free(struct held *h)
{
	for (size_t i = 0; i < sizeof(h->strv) / sizeof(h->strv[0]); i++)
		free((void *)h->strv[i]);
	free(h->files);
	Py_XDECREF(h->snap);
	h->snap = NULL;
}

/* d copied into h->snap, each list value copied too (bytes and tuples are immutable);
 * returns the copy, borrowed from h, or NULL with an error set. */
static PyObject *snapshot(PyObject *d, struct held *h)
{
	if (!PyDict_Check(d)) {
		PyErr_SetString(PyExc_TypeError, "expected a request dict");
		return NULL;
	}
	h->snap = PyDict_Copy(d);
	if (!h->snap)
		return NULL;
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	while (PyDict_Next(d, &pos, &k, &v)) {
		if (!PyList_Check(v))
			continue;
		PyObject *c = PyList_GetSlice(v, 0, PyList_Size(v));
		if (!c || PyDict_SetItem(h->snap, k, c) < 0) {
			Py_XDECREF(c);
			return NULL;
		}
		Py_DECREF(c);
	}
	return h->snap;
}

/* d[key] as bytes (NULL when missing or None).  nul_ok: the bytes may hold NUL (data, not
 * a C string). */
static int get_bytes(PyObject *d, const char *key, int nul_ok, const char **ret, size_t *ret_len)
{
	PyObject *o = PyDict_GetItemString(d, key);
	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (!o || o == Py_None)
		return 0;
	char *p;
	Py_ssize_t n;
	if (PyBytes_AsStringAndSize(o, &p, nul_ok ? &n : NULL) < 0)
		return -1;
	*ret = p;
	if (ret_len)
		*ret_len = nul_ok ? (size_t)n : strlen(p);
	return 0;
}

static int get_int(PyObject *d, const char *key, long *ret)
{
	PyObject *o = PyDict_GetItemString(d, key);
	*ret = 0;
	if (!o || o == Py_None)
		return 0;
	long v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred())
		return -1;
	*ret = v;
	return 0;
}

/* d[key], a list of bytes without NUL, as a NULL-terminated array (malloc'ed, in h). */
static int get_strv(PyObject *d, const char *key, struct held *h, size_t slot,
		    const char *const **ret)
{
	PyObject *o = PyDict_GetItemString(d, key);
	*ret = NULL;
	if (!o || o == Py_None)
		return 0;
	if (!PyList_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s: expected a list", key);
		return -1;
	}
	Py_ssize_t n = PyList_Size(o);
	const char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v) {
		PyErr_NoMemory();
		return -1;
	}
	h->strv[slot] = v;
	for (Py_ssize_t i = 0; i < n; i++) {
		char *p;
		if (PyBytes_AsStringAndSize(PyList_GetItem(o, i), &p, NULL) < 0)
			return -1;
		v[i] = p;
	}
	*ret = v;
	return 0;
}

/* d["files"]: a list of (name bytes, data bytes). */
static int get_files(PyObject *d, struct held *h, const struct govex_file **ret, size_t *ret_n)
{
	PyObject *o = PyDict_GetItemString(d, "files");
	*ret = NULL;
	*ret_n = 0;
	if (!o || o == Py_None)
		return 0;
	if (!PyList_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "files: expected a list");
		return -1;
	}
	Py_ssize_t n = PyList_Size(o);
	if (n == 0)
		return 0;
	struct govex_file *f = calloc((size_t)n, sizeof(*f));
	if (!f) {
		PyErr_NoMemory();
		return -1;
	}
	h->files = f;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyList_GetItem(o, i);
		char *name, *data;
		Py_ssize_t len;
		if (!PyTuple_Check(t) || PyTuple_Size(t) != 2) {
			PyErr_SetString(PyExc_TypeError, "files: expected (name, data) pairs");
			return -1;
		}
		if (PyBytes_AsStringAndSize(PyTuple_GetItem(t, 0), &name, NULL) < 0 ||
		    PyBytes_AsStringAndSize(PyTuple_GetItem(t, 1), &data, &len) < 0)
			return -1;
		f[i].name = name;
		f[i].data = data;
		f[i].len = (size_t)len;
	}
	*ret = f;
	*ret_n = (size_t)n;
	return 0;
}

/* d["limits"]: a tuple of the eight limits in struct govex_limits order (0 = policy's). */
static int get_limits(PyObject *d, struct govex_limits *l)
{
	PyObject *o = PyDict_GetItemString(d, "limits");
	memset(l, 0, sizeof(*l));
	if (!o || o == Py_None)
		return 0;
	uint64_t *field[] = {&l->wall_ms,      &l->cpu_ms,	&l->memory_bytes,
			     &l->processes,    &l->open_files,	&l->file_size_bytes,
			     &l->stdout_bytes, &l->stderr_bytes};
	size_t nf = sizeof(field) / sizeof(field[0]);
	if (!PyTuple_Check(o) || PyTuple_Size(o) != (Py_ssize_t)nf) {
		PyErr_SetString(PyExc_TypeError, "limits: expected a tuple of 8 integers");
		return -1;
	}
	for (size_t i = 0; i < nf; i++) {
		unsigned long long v = PyLong_AsUnsignedLongLong(PyTuple_GetItem(o, (Py_ssize_t)i));
		if (v == (unsigned long long)-1 && PyErr_Occurred())
			return -1;
		*field[i] = v;
	}
	return 0;
}

static int get_cancel(PyObject *d, govex_cancel_token **ret)
{
	PyObject *o = PyDict_GetItemString(d, "cancel");
	*ret = NULL;
	if (!o || o == Py_None)
		return 0;
	*ret = capsule_arg(o, CANCEL_CAPSULE);
	return *ret ? 0 : -1;
}

/* The live-output callback: the Python callable is on_output(stream, data).  The Python
 * side wraps the user's function so that it never raises; should it (a MemoryError), the
 * exception is reported as unraisable and the run goes on. */
static void on_output(void *userdata, int stream, const char *data, size_t len)
{
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *r =
	    PyObject_CallFunction((PyObject *)userdata, "iy#", stream, data, (Py_ssize_t)len);
	if (r)
		Py_DECREF(r);
	else
		PyErr_WriteUnraisable((PyObject *)userdata);
	PyGILState_Release(g);
}

static int get_output(PyObject *d, govex_output_fn *ret_fn, void **ret_userdata)
{
	PyObject *o = PyDict_GetItemString(d, "on_output");
	*ret_fn = NULL;
	*ret_userdata = NULL;
	if (!o || o == Py_None)
		return 0;
	if (!PyCallable_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "on_output: expected a callable");
		return -1;
	}
	*ret_fn = on_output;
	*ret_userdata = o; /* borrowed: the dict holds it for the call */
	return 0;
}

static int get_dict(PyObject *d)
{
	if (!PyDict_Check(d)) {
		PyErr_SetString(PyExc_TypeError, "expected a request dict");
		return -1;
	}
	return 0;
}

static int request_from(PyObject *d, struct govex_request *r, struct held *h)
{
	long repl, shell, outputs, needs;
	memset(r, 0, sizeof(*r));
	if (get_dict(d) < 0 || get_bytes(d, "code", 1, &r->code, &r->code_len) < 0 ||
	    get_bytes(d, "source_path", 0, &r->source_path, NULL) < 0 ||
	    get_bytes(d, "stdin", 1, &r->stdin_data, &r->stdin_len) < 0 ||
	    get_bytes(d, "workdir", 0, &r->workdir, NULL) < 0 ||
	    get_bytes(d, "inputs", 1, &r->inputs_json, &r->inputs_len) < 0 ||
	    get_limits(d, &r->limits) < 0 || get_strv(d, "env", h, 0, &r->env) < 0 ||
	    get_strv(d, "metadata", h, 1, &r->metadata) < 0 || get_int(d, "needs", &needs) < 0 ||
	    get_int(d, "repl", &repl) < 0 || get_int(d, "shell", &shell) < 0 ||
	    get_int(d, "outputs", &outputs) < 0 || get_cancel(d, &r->cancel) < 0 ||
	    get_files(d, h, &r->files, &r->n_files) < 0 ||
	    get_output(d, &r->on_output, &r->output_userdata) < 0)
		return -1;
	if (!r->code) {
		PyErr_SetString(PyExc_TypeError, "code: expected bytes");
		return -1;
	}
	r->needs = (unsigned)needs;
	r->repl = repl != 0;
	r->shell = shell != 0;
	r->outputs = outputs != 0;
	return 0;
}

static int call_from(PyObject *d, struct govex_call *c, struct held *h)
{
	long notebook, outputs;
	memset(c, 0, sizeof(*c));
	if (get_dict(d) < 0 || get_bytes(d, "source", 1, &c->source.data, &c->source.len) < 0 ||
	    get_bytes(d, "path", 0, &c->source.path, NULL) < 0 ||
	    get_bytes(d, "module", 0, &c->source.module, NULL) < 0 ||
	    get_int(d, "notebook", &notebook) < 0 ||
	    get_bytes(d, "function", 0, &c->function, NULL) < 0 ||
	    get_bytes(d, "args", 1, &c->args, &c->args_len) < 0 || get_limits(d, &c->limits) < 0 ||
	    get_strv(d, "metadata", h, 1, &c->metadata) < 0 ||
	    get_int(d, "outputs", &outputs) < 0 || get_cancel(d, &c->cancel) < 0 ||
	    get_files(d, h, &c->files, &c->n_files) < 0 ||
	    get_output(d, &c->on_output, &c->output_userdata) < 0)
		return -1;
	if (!c->source.data) {
		PyErr_SetString(PyExc_TypeError, "source: expected bytes");
		return -1;
	}
	c->source.notebook = notebook != 0;
	c->outputs = outputs != 0;
	return 0;
}

static int exec_from(PyObject *d, struct govex_exec *x, struct held *h)
{
	long outputs, needs;
	memset(x, 0, sizeof(*x));
	if (get_dict(d) < 0 || get_strv(d, "argv", h, 2, &x->argv) < 0 ||
	    get_bytes(d, "shell", 0, &x->shell, NULL) < 0 ||
	    get_bytes(d, "stdin", 1, &x->stdin_data, &x->stdin_len) < 0 ||
	    get_limits(d, &x->limits) < 0 || get_strv(d, "env", h, 0, &x->env) < 0 ||
	    get_strv(d, "metadata", h, 1, &x->metadata) < 0 || get_int(d, "needs", &needs) < 0 ||
	    get_int(d, "outputs", &outputs) < 0 || get_cancel(d, &x->cancel) < 0 ||
	    get_files(d, h, &x->files, &x->n_files) < 0 ||
	    get_output(d, &x->on_output, &x->output_userdata) < 0)
		return -1;
	x->needs = (unsigned)needs;
	x->outputs = outputs != 0;
	return 0;
}

/* ---- results ----------------------------------------------------------------------- */

/* (json, stdout, stderr, [(name, mime, data)], exit_status); frees res. */
static PyObject *result_tuple(govex_result *res)
{
	size_t jl = 0;
	const char *j = govex_result_json(res, &jl);
	const struct govex_result_view *v = govex_result_view(res);
	PyObject *files = PyList_New(0);
	PyObject *out = NULL;
	if (!files)
		goto done;
	size_t nf = govex_result_file_count(res);
	for (size_t i = 0; i < nf; i++) {
		const char *name, *mime;
		const void *data;
		size_t len;
		if (govex_result_file(res, i, &name, &mime, &data, &len) < 0)
			continue;
		PyObject *t =
		    Py_BuildValue("(ssy#)", name, mime ? mime : "application/octet-stream",
				  data ? (const char *)data : "", (Py_ssize_t)len);
		if (!t || PyList_Append(files, t) < 0) {
			Py_XDECREF(t);
			goto done;
		}
		Py_DECREF(t);
	}
	out = Py_BuildValue("(y#y#y#Oi)", j ? j : "", (Py_ssize_t)jl,
			    v->stdout_data ? v->stdout_data : "", (Py_ssize_t)v->stdout_len,
			    v->stderr_data ? v->stderr_data : "", (Py_ssize_t)v->stderr_len, files,
			    govex_result_exit_status(res));
done:
	Py_XDECREF(files);
	govex_result_free(res);
	return out;
}

/* (plan capsule, None) or (None, result tuple), from a planning call. */
static PyObject *plan_outcome(int rc, govex_plan *plan, govex_result *res,
			      const struct govex_error *err)
{
	if (rc < 0) {
		govex_plan_free(plan);
		govex_result_free(res);
		return raise_error(rc, err);
	}
	if (plan) {
		govex_result_free(res);
		PyObject *cap = PyCapsule_New(plan, PLAN_CAPSULE, plan_destroy);
		if (!cap) {
			govex_plan_free(plan);
			return NULL;
		}
		return Py_BuildValue("(NO)", cap, Py_None);
	}
	if (!res) {
		PyErr_SetString(PyExc_RuntimeError, "govex: neither a plan nor a result");
		return NULL;
	}
	return Py_BuildValue("(ON)", Py_None, result_tuple(res));
}

static PyObject *run_outcome(int rc, govex_result *res, const struct govex_error *err)
{
	if (rc < 0) {
		govex_result_free(res);
		return raise_error(rc, err);
	}
	if (!res) {
		PyErr_SetString(PyExc_RuntimeError, "govex: no result");
		return NULL;
	}
	return result_tuple(res);
}

/* ---- module functions -------------------------------------------------------------- */

static PyObject *m_version(PyObject *self, PyObject *noargs)
{
	return PyUnicode_FromString(govex_version());
}

static PyObject *m_error_name(PyObject *self, PyObject *args)
{
	int code;
	if (!PyArg_ParseTuple(args, "i", &code))
		return NULL;
	return Py_BuildValue("(ss)", govex_error_name(code), govex_strerror(code));
}

static PyObject *m_set_error_factory(PyObject *self, PyObject *f)
{
	if (!PyCallable_Check(f)) {
		PyErr_SetString(PyExc_TypeError, "expected a callable");
		return NULL;
	}
	Py_INCREF(f);
	Py_XDECREF(error_factory);
	error_factory = f;
	Py_RETURN_NONE;
}

/* runtime_new(preset or None, policy JSON bytes or None, backend, probe_cache_dir, warm)
 * -> (capsule, warm error message or None) */
static PyObject *m_runtime_new(PyObject *self, PyObject *args)
{
	const char *preset, *backend, *cache_dir, *json;
	Py_ssize_t json_len = 0;
	int warm;
	if (!PyArg_ParseTuple(args, "zz#zzp", &preset, &json, &json_len, &backend, &cache_dir,
			      &warm))
		return NULL;
	govex_policy *policy = NULL;
	govex_runtime *rt = NULL;
	struct govex_error err = {0}, werr = {0};
	struct govex_runtime_options opts = {
	    .audit_fd = -1, .backend = backend, .probe_cache_dir = cache_dir};
	int rc, wrc = 0;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	if (json)
		rc = govex_policy_parse(json, (size_t)json_len, &policy, &err);
	else
		rc = govex_policy_preset(preset ? preset : "strict", &policy, &err);
	if (rc >= 0)
		rc = govex_runtime_new(policy, &opts, &rt, &err);
	if (rc >= 0 && warm)
		wrc = govex_runtime_warm(rt, &werr);
	govex_policy_free(policy);
	PyEval_RestoreThread(ts);
	if (rc < 0)
		return raise_error(rc, &err);
	PyObject *cap = PyCapsule_New(rt, RUNTIME_CAPSULE, runtime_destroy);
	if (!cap) {
		govex_runtime_free(rt);
		return NULL;
	}
	if (wrc < 0)
		return Py_BuildValue("(Ns)", cap,
				     werr.message[0] ? werr.message : govex_strerror(-wrc));
	return Py_BuildValue("(NO)", cap, Py_None);
}

/* runtime_close(capsule): frees the runtime now.  The Python side calls it only when no
 * call of its own is using the runtime. */
static PyObject *m_runtime_close(PyObject *self, PyObject *cap)
{
	govex_runtime *rt = capsule_arg(cap, RUNTIME_CAPSULE);
	if (!rt)
		return NULL;
	/* renamed: capsule_arg(cap, RUNTIME_CAPSULE) refuses it from now on */
	if (PyCapsule_SetDestructor(cap, NULL) < 0 ||
	    PyCapsule_SetName(cap, "govex._govex.closed-runtime") < 0)
		return NULL;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	govex_runtime_free(rt);
	PyEval_RestoreThread(ts);
	Py_RETURN_NONE;
}

/* runtime_policy(rt) -> (canonical bytes, digest) */
static PyObject *m_runtime_policy(PyObject *self, PyObject *cap)
{
	govex_runtime *rt = capsule_arg(cap, RUNTIME_CAPSULE);
	if (!rt)
		return NULL;
	const govex_policy *p = govex_runtime_policy(rt);
	size_t len = 0;
	const char *canon = govex_policy_canonical(p, &len);
	return Py_BuildValue("(y#s)", canon, (Py_ssize_t)len, govex_policy_digest(p));
}

static PyObject *json_out(int rc, char *json)
{
	if (rc < 0)
		return raise_error(rc, NULL);
	PyObject *o = PyBytes_FromString(json);
	free(json);
	return o;
}

static PyObject *m_runtime_backends(PyObject *self, PyObject *cap)
{
	govex_runtime *rt = capsule_arg(cap, RUNTIME_CAPSULE);
	char *json = NULL;
	int rc;
	if (!rt)
		return NULL;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	rc = govex_runtime_backends_json(rt, &json);
	PyEval_RestoreThread(ts);
	return json_out(rc, json);
}

static PyObject *m_runtime_stats(PyObject *self, PyObject *cap)
{
	govex_runtime *rt = capsule_arg(cap, RUNTIME_CAPSULE);
	char *json = NULL;
	int rc;
	if (!rt)
		return NULL;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	rc = govex_runtime_stats_json(rt, &json);
	PyEval_RestoreThread(ts);
	return json_out(rc, json);
}

/* The kinds of job: a run, a call and an exec, each planned (plan_*) or run (with an
 * optional plan: execute). */
enum kind { KIND_RUN, KIND_CALL, KIND_EXEC };

static PyObject *job(PyObject *args, enum kind kind, int planning)
{
	PyObject *rtcap, *d, *plancap = Py_None;
	if (!PyArg_ParseTuple(args, planning ? "OO" : "OO|O", &rtcap, &d, &plancap))
		return NULL;
	govex_runtime *rt = capsule_arg(rtcap, RUNTIME_CAPSULE);
	if (!rt)
		return NULL;
	const govex_plan *given = NULL;
	if (plancap != Py_None && !(given = capsule_arg(plancap, PLAN_CAPSULE)))
		return NULL;
	struct held h = {{NULL}, NULL, NULL};
	struct govex_request r;
	struct govex_call c;
	struct govex_exec x;
	d = snapshot(d, &h);
	int ok = !d		     ? -1
		 : kind == KIND_RUN  ? request_from(d, &r, &h)
		 : kind == KIND_CALL ? call_from(d, &c, &h)
				     : exec_from(d, &x, &h);
	if (ok < 0) {
		held_free(&h);
		return NULL;
	}
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err = {0};
	int rc;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	if (planning)
		rc = kind == KIND_RUN	 ? govex_runtime_plan(rt, &r, &plan, &res, &err)
		     : kind == KIND_CALL ? govex_runtime_plan_call(rt, &c, &plan, &res, &err)
					 : govex_runtime_plan_exec(rt, &x, &plan, &res, &err);
	else if (kind == KIND_RUN)
		rc = given ? govex_runtime_execute(rt, given, &r, &res, &err)
			   : govex_runtime_run(rt, &r, &res, &err);
	else
		rc = kind == KIND_CALL ? govex_runtime_call(rt, given, &c, &res, &err)
				       : govex_runtime_exec(rt, given, &x, &res, &err);
	PyEval_RestoreThread(ts);
	held_free(&h);
	return planning ? plan_outcome(rc, plan, res, &err) : run_outcome(rc, res, &err);
}

static PyObject *m_run(PyObject *self, PyObject *args)
{
	return job(args, KIND_RUN, 0);
}

static PyObject *m_plan(PyObject *self, PyObject *args)
{
	return job(args, KIND_RUN, 1);
}

static PyObject *m_call(PyObject *self, PyObject *args)
{
	return job(args, KIND_CALL, 0);
}

static PyObject *m_plan_call(PyObject *self, PyObject *args)
{
	return job(args, KIND_CALL, 1);
}

static PyObject *m_exec(PyObject *self, PyObject *args)
{
	return job(args, KIND_EXEC, 0);
}

static PyObject *m_plan_exec(PyObject *self, PyObject *args)
{
	return job(args, KIND_EXEC, 1);
}

/* inspect(rt, call dict: its source) -> (document bytes, None) or (None, result tuple) */
static PyObject *m_inspect(PyObject *self, PyObject *args)
{
	PyObject *rtcap, *d;
	if (!PyArg_ParseTuple(args, "OO", &rtcap, &d))
		return NULL;
	govex_runtime *rt = capsule_arg(rtcap, RUNTIME_CAPSULE);
	if (!rt)
		return NULL;
	struct held h = {{NULL}, NULL, NULL};
	struct govex_call c;
	d = snapshot(d, &h);
	if (!d || call_from(d, &c, &h) < 0) {
		held_free(&h);
		return NULL;
	}
	char *doc = NULL;
	govex_result *res = NULL;
	struct govex_error err = {0};
	int rc;
	PyThreadState *ts = PyEval_SaveThread(); /* the GIL released */
	rc = govex_runtime_inspect(rt, &c.source, &doc, &res, &err);
	PyEval_RestoreThread(ts);
	held_free(&h);
	if (rc < 0) {
		free(doc);
		govex_result_free(res);
		return raise_error(rc, &err);
	}
	if (doc) {
		govex_result_free(res);
		return Py_BuildValue("(NO)", json_out(0, doc), Py_None);
	}
	return Py_BuildValue("(ON)", Py_None, run_outcome(0, res, &err));
}

/* plan_info(plan) -> (canonical bytes, digest, function or None, source path or None) */
static PyObject *m_plan_info(PyObject *self, PyObject *cap)
{
	const govex_plan *p = capsule_arg(cap, PLAN_CAPSULE);
	if (!p)
		return NULL;
	size_t len = 0;
	const char *canon = govex_plan_canonical(p, &len);
	return Py_BuildValue("(y#szz)", canon, (Py_ssize_t)len, govex_plan_digest(p),
			     govex_plan_function(p), govex_plan_source_path(p));
}

static PyObject *m_plan_parse(PyObject *self, PyObject *args)
{
	const char *json;
	Py_ssize_t len;
	if (!PyArg_ParseTuple(args, "y#", &json, &len))
		return NULL;
	govex_plan *p = NULL;
	struct govex_error err = {0};
	int rc = govex_plan_parse(json, (size_t)len, &p, &err);
	if (rc < 0)
		return raise_error(rc, &err);
	PyObject *cap = PyCapsule_New(p, PLAN_CAPSULE, plan_destroy);
	if (!cap)
		govex_plan_free(p);
	return cap;
}

static PyObject *m_cancel_new(PyObject *self, PyObject *noargs)
{
	govex_cancel_token *c = NULL;
	int rc = govex_cancel_new(&c);
	if (rc < 0) {
		errno = -rc;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	PyObject *cap = PyCapsule_New(c, CANCEL_CAPSULE, cancel_destroy);
	if (!cap)
		govex_cancel_free(c);
	return cap;
}

/* cancel(token): one write(2), so it does not wait for anything (the runs notice it). */
static PyObject *m_cancel(PyObject *self, PyObject *cap)
{
	govex_cancel_token *c = capsule_arg(cap, CANCEL_CAPSULE);
	if (!c)
		return NULL;
	govex_cancel(c);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"version", m_version, METH_NOARGS, "libgovex's version string."},
    {"error_name", m_error_name, METH_VARARGS, "error_name(code) -> (name, description)"},
    {"set_error_factory", m_set_error_factory, METH_O, "Sets govex.Error's factory."},
    {"runtime_new", m_runtime_new, METH_VARARGS,
     "runtime_new(preset, policy_json, backend, probe_cache_dir, warm)"},
    {"runtime_close", m_runtime_close, METH_O, "Frees a runtime."},
    {"runtime_policy", m_runtime_policy, METH_O, "(canonical policy, digest)"},
    {"runtime_backends", m_runtime_backends, METH_O, "The backend reports (JSON)."},
    {"runtime_stats", m_runtime_stats, METH_O, "The runtime's counters (JSON)."},
    {"run", m_run, METH_VARARGS, "run(rt, request[, plan]) -> result tuple"},
    {"plan", m_plan, METH_VARARGS, "plan(rt, request) -> (plan, None) | (None, result)"},
    {"call", m_call, METH_VARARGS, "call(rt, request[, plan]) -> result tuple"},
    {"plan_call", m_plan_call, METH_VARARGS, "plan_call(rt, request)"},
    {"exec", m_exec, METH_VARARGS, "exec(rt, request[, plan]) -> result tuple"},
    {"plan_exec", m_plan_exec, METH_VARARGS, "plan_exec(rt, request)"},
    {"inspect", m_inspect, METH_VARARGS, "inspect(rt, request) -> (doc, None) | (None, result)"},
    {"plan_info", m_plan_info, METH_O, "(canonical, digest, function, source_path)"},
    {"plan_parse", m_plan_parse, METH_VARARGS, "plan_parse(json) -> plan"},
    {"cancel_new", m_cancel_new, METH_NOARGS, "A cancellation token."},
    {"cancel", m_cancel, METH_O, "Cancels every run using the token (async-signal-safe)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "govex._govex",
    "The C half of the govex binding.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__govex(void);

PyMODINIT_FUNC PyInit__govex(void)
{
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (PyModule_AddStringConstant(m, "RESULT_VERSION", GOVEX_RESULT_VERSION) < 0 ||
	    PyModule_AddStringConstant(m, "HEADER_VERSION", GOVEX_VERSION_STRING) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
