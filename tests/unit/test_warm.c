/* SPDX-License-Identifier: MIT */
/*
 * unit-warm: warm runs (govex_runtime_warm, DESIGN.md "Warm runs") against cold runs of
 * the same policy: the same process state when the code starts (capabilities, no new
 * privileges, seccomp, descriptors, workdir, /tmp, environment, argv, __main__), the
 * same result (status, termination, exit code, signal, output, claimed controls), and
 * nothing of one warm run visible to the next (globals, modules, environment, files,
 * threads).  Skipped (as TAP skips, named) where the restricted backend is unavailable.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "govex.h"

static govex_runtime *rt_cold, *rt_warm;

static govex_runtime *runtime(int warm)
{
	govex_policy *p = NULL;
	struct govex_error err = {0};
	ck_assert_int_eq(govex_policy_preset("strict", &p, &err), 0);
	govex_runtime *rt = NULL;
	ck_assert_msg(govex_runtime_new(p, NULL, &rt, &err) == 0, "runtime: %s", err.message);
	govex_policy_free(p);
	/* (where there is no sandbox the tests skip: restricted_here) */
	if (warm && govex_runtime_warm(rt, &err) < 0)
		fprintf(stderr, "# warm: %s\n", err.message);
	return rt;
}

static json_t *run_req(govex_runtime *rt, const struct govex_request *req)
{
	govex_result *res = NULL;
	struct govex_error err = {0};
	ck_assert_msg(govex_runtime_run(rt, req, &res, &err) == 0, "run: %s", err.message);
	size_t len = 0;
	const char *js = govex_result_json(res, &len);
	json_t *doc = json_loadb(js, len, 0, NULL);
	govex_result_free(res);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

static json_t *run(govex_runtime *rt, const char *code, const char *in)
{
	struct govex_request req = {.code = code, .code_len = strlen(code)};
	if (in) {
		req.stdin_data = in;
		req.stdin_len = strlen(in);
	}
	return run_req(rt, &req);
}

/* the runtime's stats document */
static json_t *stats(govex_runtime *rt)
{
	char *js = NULL;
	ck_assert_int_eq(govex_runtime_stats_json(rt, &js), 0);
	json_t *d = json_loads(js, 0, NULL);
	free(js);
	ck_assert_ptr_nonnull(d);
	return d;
}

static json_int_t warm_count(govex_runtime *rt, const char *key)
{
	json_t *d = stats(rt);
	json_int_t n = json_integer_value(json_object_get(json_object_get(d, "warm"), key));
	json_decref(d);
	return n;
}

static bool restricted_here(void)
{
	json_t *d = run(rt_cold, "pass", NULL);
	const char *b = json_string_value(json_object_get(json_object_get(d, "backend"), "name"));
	bool ok = b && strcmp(b, "restricted") == 0 &&
		  strcmp(json_string_value(json_object_get(d, "status")), "success") == 0;
	json_decref(d);
	return ok;
}

static void setup(void)
{
	rt_cold = runtime(0);
	rt_warm = runtime(1);
}

static void teardown(void)
{
	govex_runtime_free(rt_cold);
	govex_runtime_free(rt_warm);
}

/* the members of a result a warm run must share with a cold one */
static void same_result(json_t *c, json_t *w, const char *what)
{
	static const char *const keys[] = {"status", "termination", "exit_code", "signal",
					   "stdout", "stderr",	    "backend"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *a = json_dumps(json_object_get(c, keys[i]), JSON_ENCODE_ANY | JSON_SORT_KEYS);
		char *b = json_dumps(json_object_get(w, keys[i]), JSON_ENCODE_ANY | JSON_SORT_KEYS);
		ck_assert_msg(a && b && strcmp(a, b) == 0,
			      "%s: %s differs: cold %.1500s, warm %.1500s", what, keys[i],
			      a ? a : "?", b ? b : "?");
		free(a);
		free(b);
	}
}

/* What the code sees when it starts (ids left out: each run has its slot's). */
static const char state_code[] =
    "import sys, os\n"
    "keep = ('CapInh','CapPrm','CapEff','CapBnd','CapAmb','NoNewPrivs','Seccomp',\n"
    "        'Seccomp_filters','Groups')\n"
    "for l in open('/proc/self/status'):\n"
    "    if l.split(':')[0] in keep: print(l.rstrip())\n"
    "print('fds', sorted(os.listdir('/proc/self/fd')))\n"
    "print('pid', os.getpid(), os.getppid(), os.getpgrp() == os.getpid(), os.getsid(0) == "
    "os.getpid())\n"
    "print('cwd', os.getcwd(), os.listdir('.'), os.listdir('/tmp'))\n"
    "print('cgroup', open('/proc/self/cgroup').read().split())\n"
    "print('env', sorted(os.environ.items()))\n"
    "print('argv', sys.argv, sys.flags.isolated, sys.flags.no_site)\n"
    "print('main', sorted(k for k in globals() if k not in ('sys', 'os', 'keep', 'l')))\n"
    "print('main', __name__, __spec__, __loader__, __package__, __doc__)\n"
    "import resource\n"
    "print('rlimits', [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CORE,\n"
    "      resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CPU)])\n"
    "print('io', sys.stdout.isatty(), sys.stdout.line_buffering, sys.stdout.encoding,\n"
    "      sys.stderr.errors, sys.stdin.read())\n"
    "import signal\n"
    "print('sig', [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGCHLD,\n"
    "      signal.SIGTERM, signal.SIGXFSZ)], signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
    "import ctypes\n"
    "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n";

START_TEST(test_same_state_as_cold)
{
	if (!restricted_here())
		return;
	json_t *c = run(rt_cold, state_code, "in\n");
	json_t *w = run(rt_warm, state_code, "in\n");
	same_result(c, w, "state");
	ck_assert_str_eq(json_string_value(json_object_get(w, "status")), "success");
	json_decref(c);
	json_decref(w);
}
END_TEST

START_TEST(test_same_endings_as_cold)
{
	if (!restricted_here())
		return;
	static const char *const codes[] = {
	    "print('out'); raise SystemExit(3)",
	    "import sys; sys.exit('bye')",
	    "def f():\n    1/0\nf()",
	    "import os; os.kill(os.getpid(), 9)",
	    "raise KeyboardInterrupt",
	    "import sys, atexit; atexit.register(lambda: print('atexit')); print('x', end='')",
	    "import threading, time\n"
	    "def t():\n    time.sleep(0.2); print('thread done', flush=True)\n"
	    "threading.Thread(target=t).start()",
	    "# -*- coding: latin-1 -*-\nprint('\xc3\xa9')",
	    "import sys; sys.stdout.close()",
	    "print(__import__('sys').stdin.readline().strip()[::-1])",
	    "class A:\n    def __del__(self): print('del')\na = A()\nprint('end')",
	    "import sys\nclass A:\n    def __del__(self): sys.stdout.write('cycle')\n"
	    "a = A(); a.me = a; del a",
	};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		json_t *c = run(rt_cold, codes[i], "abc\n");
		json_t *w = run(rt_warm, codes[i], "abc\n");
		same_result(c, w, codes[i]);
		json_decref(c);
		json_decref(w);
	}
}
END_TEST

START_TEST(test_nothing_left_for_the_next_run)
{
	if (!restricted_here())
		return;
	const char *leave = "import os, sys, json, threading, time\n"
			    "os.environ['LEFT'] = '1'\n"
			    "json.dumps = lambda *a, **k: 'patched'\n"
			    "sys.modules['left_module'] = type(sys)('left_module')\n"
			    "sys.path.append('/left')\n"
			    "import builtins; builtins.LEFT = 1\n"
			    "open('/tmp/left', 'w').write('x'); open('left', 'w').write('x')\n"
			    "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
			    "SECRET = 'run-one-secret'\n"
			    "print('left')\n";
	const char *look =
	    "import os, sys, json, threading, gc\n"
	    "found = []\n"
	    "if 'LEFT' in os.environ: found.append('env')\n"
	    "if json.dumps([1]) != '[1]': found.append('module state')\n"
	    "if 'left_module' in sys.modules: found.append('sys.modules')\n"
	    "if '/left' in sys.path: found.append('sys.path')\n"
	    "import builtins\n"
	    "if hasattr(builtins, 'LEFT'): found.append('builtins')\n"
	    "if os.listdir('/tmp') or os.listdir('.'): found.append('files')\n"
	    "if threading.active_count() != 1: found.append('threads')\n"
	    "if 'SECRET' in globals(): found.append('globals')\n"
	    "if any(isinstance(o, str) and o == 'run-one-' + 'secret' for o in gc.get_objects()):\n"
	    "    found.append('objects')\n"
	    "mem = open('/proc/self/maps').read()\n"
	    "print(found)\n";
	json_t *a = run(rt_warm, leave, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(a, "stdout")), "left\n");
	json_decref(a);
	for (int i = 0; i < 2; i++) {
		json_t *b = run(rt_warm, look, NULL);
		ck_assert_msg(strcmp(json_string_value(json_object_get(b, "stdout")), "[]\n") == 0,
			      "the next run found: %.1500s %.1500s",
			      json_string_value(json_object_get(b, "stdout")),
			      json_string_value(json_object_get(b, "stderr")));
		json_decref(b);
	}
}
END_TEST

/* Denials are refused and named as in a cold run (network: deny, subprocess: deny, with
 * their counts): the warm program's guard listener is answered by its own init. */
START_TEST(test_denials_as_cold)
{
	if (!restricted_here())
		return;
	static const char code[] =
	    "import socket, os, subprocess\n"
	    "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
	    "    try:\n"
	    "        socket.socket(fam, socket.SOCK_DGRAM); print('socket ok')\n"
	    "    except OSError as e: print('socket', e.errno)\n"
	    "a, b = socket.socketpair(); print('unix ok')\n"
	    "try:\n"
	    "    os.fork(); print('fork ok')\n"
	    "except OSError as e: print('fork', e.errno)\n"
	    "try:\n"
	    "    os.execv('/bin/true', ['true'])\n"
	    "except OSError as e: print('exec', e.errno)\n"
	    "try:\n"
	    "    subprocess.run(['/bin/true']); print('sub ok')\n"
	    "except OSError as e: print('sub', e.errno)\n"
	    "import ctypes\n"
	    "libc = ctypes.CDLL(None, use_errno=True)\n"
	    "r = libc.syscall(56, 0x11, 0, 0, 0, 0)  # clone(SIGCHLD): a new process\n"
	    "print('clone', r, ctypes.get_errno())\n";
	json_int_t before = warm_count(rt_warm, "warm_runs");
	json_t *c = run(rt_cold, code, NULL);
	json_t *w = run(rt_warm, code, NULL);
	ck_assert_int_eq(warm_count(rt_warm, "warm_runs"), before + 1);
	same_result(c, w, "denials");
	char *a = json_dumps(json_object_get(c, "diagnostics"), JSON_SORT_KEYS);
	char *b = json_dumps(json_object_get(w, "diagnostics"), JSON_SORT_KEYS);
	ck_assert_msg(strcmp(a, b) == 0, "diagnostics: cold %.1500s, warm %.1500s", a, b);
	ck_assert_msg(strstr(b, "network_deny") && strstr(b, "subprocess_deny"), "%.3000s", b);
	free(a);
	free(b);
	json_decref(c);
	json_decref(w);
}
END_TEST

/* The run's own /etc/passwd and /etc/group (its slot's ids), read-only, as cold. */
START_TEST(test_identity_as_cold)
{
	if (!restricted_here())
		return;
	static const char code[] =
	    "import os\n"
	    "u, g = str(os.getuid()), str(os.getgid())\n"
	    "for p in ('/etc/passwd', '/etc/group'):\n"
	    "    t = open(p).read()\n"
	    "    print(p, (u in t, g in t), t.replace(u, 'U').replace(g, 'G'))\n"
	    "    st = os.stat(p); print(oct(st.st_mode), st.st_uid)\n"
	    "    try:\n"
	    "        open(p, 'a'); print('writable')\n"
	    "    except OSError as e: print('write', e.errno)\n"
	    "import pwd; print(pwd.getpwuid(os.getuid()).pw_name)\n";
	json_t *c = run(rt_cold, code, NULL);
	json_t *w = run(rt_warm, code, NULL);
	same_result(c, w, "identity");
	ck_assert_str_eq(json_string_value(json_object_get(w, "status")), "success");
	json_decref(c);
	json_decref(w);
}
END_TEST

/* REPL runs (govex's worker, op "snippet", fd 3) and runs with files in and outputs are
 * forked too (files placed read-only and outputs collected as cold); the results are
 * cold's; the stats count them. */
START_TEST(test_repl_and_files)
{
	if (!restricted_here())
		return;
	static const char code[] = "import json\nx = INPUTS['a'] * 2\nprint('p')\nx + 1\n";
	struct govex_request req = {.code = code, .code_len = strlen(code), .repl = 1};
	req.inputs_json = "{\"a\": 20}";
	req.inputs_len = strlen(req.inputs_json);
	json_int_t before = warm_count(rt_warm, "warm_runs");
	json_t *c = run_req(rt_cold, &req);
	json_t *w = run_req(rt_warm, &req);
	ck_assert_int_eq(warm_count(rt_warm, "warm_runs"), before + 1);
	same_result(c, w, "repl");
	ck_assert_str_eq(json_string_value(json_object_get(w, "status")), "success");
	char *a = json_dumps(json_object_get(c, "value"), JSON_ENCODE_ANY);
	char *b = json_dumps(json_object_get(w, "value"), JSON_ENCODE_ANY);
	ck_assert_str_eq(a, b);
	ck_assert_str_eq(b, "41");
	free(a);
	free(b);
	json_decref(c);
	json_decref(w);

	static const char fcode[] =
	    "import os\n"
	    "print(open('in.txt').read(), oct(os.stat('in.txt').st_mode))\n"
	    "for f in (lambda: open('in.txt', 'w'), lambda: os.unlink('in.txt'),\n"
	    "          lambda: os.chmod('in.txt', 0o666)):\n"
	    "    try:\n"
	    "        f(); print('changed')\n"
	    "    except OSError as e: print(e.errno)\n"
	    "od = os.environ['GOVEX_OUTPUT_DIR']\n"
	    "print(od, os.stat(od).st_uid == os.getuid(), os.listdir(od))\n"
	    "open(od + '/out.txt', 'w').write('result')\n"
	    "os.symlink('/etc/passwd', od + '/link')\n";
	const struct govex_file f = {.name = "in.txt", .data = "hello", .len = 5};
	struct govex_request fr = {
	    .code = fcode, .code_len = strlen(fcode), .files = &f, .n_files = 1, .outputs = 1};
	before = warm_count(rt_warm, "warm_runs");
	c = run_req(rt_cold, &fr);
	w = run_req(rt_warm, &fr);
	ck_assert_int_eq(warm_count(rt_warm, "warm_runs"), before + 1);
	same_result(c, w, "files");
	ck_assert_msg(
	    strncmp(json_string_value(json_object_get(w, "stdout")), "hello 0o100444\n", 15) == 0,
	    "%s", json_string_value(json_object_get(w, "stdout")));
	a = json_dumps(json_object_get(c, "files"), JSON_SORT_KEYS | JSON_ENCODE_ANY);
	b = json_dumps(json_object_get(w, "files"), JSON_SORT_KEYS | JSON_ENCODE_ANY);
	ck_assert_msg(strcmp(a, b) == 0 && strstr(b, "out.txt"),
		      "files: cold %.1500s, warm %.1500s", a, b);
	free(a);
	free(b);
	a = json_dumps(json_object_get(c, "diagnostics"), JSON_SORT_KEYS);
	b = json_dumps(json_object_get(w, "diagnostics"), JSON_SORT_KEYS);
	ck_assert_msg(strcmp(a, b) == 0, "diagnostics: cold %.1500s, warm %.1500s", a, b);
	free(a);
	free(b);
	json_decref(c);
	json_decref(w);
	/* outputs and no file in (MCP's tools): the run's init makes the output directory */
	static const char ocode[] =
	    "import os\n"
	    "od = os.environ['GOVEX_OUTPUT_DIR']\n"
	    "st = os.stat(od)\n"
	    "print(od, st.st_uid == os.getuid(), st.st_gid == os.getgid(), oct(st.st_mode),\n"
	    "      os.listdir(od), sorted(os.listdir('.')))\n"
	    "open(od + '/out.txt', 'w').write('result')\n"
	    "os.symlink('/etc/passwd', od + '/link')\n";
	struct govex_request orq = {.code = ocode, .code_len = strlen(ocode), .outputs = 1};
	before = warm_count(rt_warm, "warm_runs");
	c = run_req(rt_cold, &orq);
	w = run_req(rt_warm, &orq);
	ck_assert_int_eq(warm_count(rt_warm, "warm_runs"), before + 1);
	same_result(c, w, "outputs");
	ck_assert_msg(strstr(json_string_value(json_object_get(w, "stdout")),
			     " True True 0o40700 [] ['output']\n"),
		      "%s", json_string_value(json_object_get(w, "stdout")));
	a = json_dumps(json_object_get(c, "files"), JSON_SORT_KEYS | JSON_ENCODE_ANY);
	b = json_dumps(json_object_get(w, "files"), JSON_SORT_KEYS | JSON_ENCODE_ANY);
	ck_assert_msg(strcmp(a, b) == 0 && strstr(b, "out.txt"),
		      "files: cold %.1500s, warm %.1500s", a, b);
	free(a);
	free(b);
	json_decref(c);
	json_decref(w);
	json_t *d = stats(rt_warm);
	json_t *wm = json_object_get(d, "warm");
	ck_assert(json_is_true(json_object_get(wm, "enabled")));
	ck_assert(json_is_true(json_object_get(wm, "ready")));
	ck_assert_int_eq(json_integer_value(json_object_get(wm, "templates")), 2);
	ck_assert_int_ge(json_integer_value(json_object_get(wm, "warm_runs")), 2);
	ck_assert(json_is_integer(json_object_get(wm, "cold_runs")));
	ck_assert(json_is_object(json_object_get(wm, "cold_reasons")));
	json_decref(d);
	/* a runtime never warmed says so */
	d = stats(rt_cold);
	ck_assert(json_is_false(json_object_get(json_object_get(d, "warm"), "enabled")));
	json_decref(d);
}
END_TEST

/* Concurrent warm runs of one template: each gets its own input back, its own workdir and
 * its own slot identity (no cross-talk through the template's socket or its forks). */
struct conc {
	pthread_t th;
	int id;
	int n; /* runs */
	int bad;
	char why[256];
};

static void *conc_run(void *arg)
{
	struct conc *c = arg;
	for (int i = 0; i < c->n; i++) {
		char in[64], want[256];
		snprintf(in, sizeof(in), "run-%d-%d", c->id, i);
		snprintf(want, sizeof(want), "%s [] %s\n", in, in);
		json_t *d = run(rt_warm,
				"import os, sys\n"
				"s = sys.stdin.read()\n"
				"print(s, os.listdir('.'), s)\n"
				"open('mine', 'w').write(s)\n",
				in);
		const char *out = json_string_value(json_object_get(d, "stdout"));
		if (!out || strcmp(out, want) != 0) {
			c->bad++;
			snprintf(c->why, sizeof(c->why), "%s: got %s", in, out ? out : "(none)");
		}
		json_decref(d);
	}
	return NULL;
}

START_TEST(test_concurrent_runs)
{
	if (!restricted_here())
		return;
	struct conc c[8];
	for (int i = 0; i < 8; i++) {
		c[i] = (struct conc){.id = i, .n = 4};
		ck_assert_int_eq(pthread_create(&c[i].th, NULL, conc_run, &c[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(c[i].th, NULL);
		ck_assert_msg(c[i].bad == 0, "thread %d: %s", i, c[i].why);
	}
}
END_TEST

static size_t mount_count(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t n = 0;
	int ch;
	ck_assert_ptr_nonnull(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static size_t children(pid_t *ret, size_t cap);

/* A burst of concurrent warm runs over several recycled templates: every run gets its
 * own input and an empty workdir, and after the runtime is freed no process (template,
 * waiting run init or program), mount or zombie of it is left. */
START_TEST(test_burst_leaves_nothing)
{
	if (!restricted_here())
		return;
	size_t mounts = mount_count();
	setenv("GOVEX_WARM_RECYCLE", "40", 1);
	struct conc c[8];
	for (int i = 0; i < 8; i++) {
		c[i] = (struct conc){.id = i, .n = 25};
		ck_assert_int_eq(pthread_create(&c[i].th, NULL, conc_run, &c[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(c[i].th, NULL);
		ck_assert_msg(c[i].bad == 0, "thread %d: %s", i, c[i].why);
	}
	unsetenv("GOVEX_WARM_RECYCLE");
	json_t *d = stats(rt_warm);
	ck_assert_int_ge(
	    json_integer_value(json_object_get(json_object_get(d, "warm"), "warm_runs")), 200);
	json_decref(d);
	pid_t kids[8];
	ck_assert_int_gt(children(kids, 8), 0); /* (templates while the runtime lives) */
	rt_warm = govex_runtime_free(rt_warm);
	size_t n = children(kids, 8);
	ck_assert_msg(n == 0, "%zu children (first %d) after the runtime was freed", n,
		      n ? (int)kids[0] : 0);
	ck_assert_int_eq(mount_count(), mounts);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	ck_assert_msg(waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 && errno == ECHILD,
		      "a child (zombie) is left: pid %d", (int)si.si_pid);
}
END_TEST

/* this process's children (the templates: nothing else is made by it here) */
/* This process's children: every thread's (the runtime's spare thread starts the
 * successors of templates nearing their recycling). */
static size_t children(pid_t *ret, size_t cap)
{
	char path[320], buf[512];
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		while (n < cap && fscanf(f, "%511s", buf) == 1)
			ret[n++] = (pid_t)atoi(buf);
		fclose(f);
	}
	closedir(d);
	return n;
}

START_TEST(test_recycled_and_restarted)
{
	if (!restricted_here())
		return;
	/* a template serves 3 runs: the hash seed (shared by one template's runs) changes */
	setenv("GOVEX_WARM_RECYCLE", "3", 1);
	char seen[9][64];
	size_t distinct = 0;
	for (int i = 0; i < 9; i++) {
		json_t *d = run(rt_warm, "print(hash('govex'))", NULL);
		ck_assert_str_eq(json_string_value(json_object_get(d, "status")), "success");
		snprintf(seen[i], sizeof(seen[i]), "%s",
			 json_string_value(json_object_get(d, "stdout")));
		bool is_new = true;
		for (int k = 0; k < i; k++)
			is_new &= strcmp(seen[k], seen[i]) != 0;
		distinct += is_new;
		json_decref(d);
	}
	unsetenv("GOVEX_WARM_RECYCLE");
	ck_assert_msg(distinct >= 3, "9 runs over 3 templates saw %zu hash seeds", distinct);
	/* the interpreter of the template never has the host's user namespace (as root: a
	 * nested one under its shim's, whose mounts it cannot change) */
	{
		/* two templates: plain runs and govex's worker runs (both started by
		 * govex_runtime_warm) */
		pid_t shim[4], tpl[2];
		ck_assert_int_ge(children(shim, 4), 2);
		char path[96], host_ns[64] = "", shim_ns[64] = "", tpl_ns[64] = "";
		ck_assert_int_gt(readlink("/proc/self/ns/user", host_ns, sizeof(host_ns) - 1), 0);
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)shim[0]);
		ck_assert_int_gt(readlink(path, shim_ns, sizeof(shim_ns) - 1), 0);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)shim[0],
			 (int)shim[0]);
		FILE *f = fopen(path, "re");
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fscanf(f, "%d", &tpl[0]), 1);
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)tpl[0]);
		ck_assert_int_gt(readlink(path, tpl_ns, sizeof(tpl_ns) - 1), 0);
		ck_assert_str_ne(tpl_ns, host_ns);
		if (geteuid() == 0)
			ck_assert_str_ne(tpl_ns, shim_ns);
	}
	/* the template dies (killed here: it is this process's child): the next run starts
	 * another, and nothing of the dead one is left */
	pid_t kids[8];
	size_t n = children(kids, 8);
	/* (two templates, and maybe successors started ahead: two more at most) */
	ck_assert_msg(n >= 2 && n <= 4, "%zu children (templates) after recycling", n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(kill(kids[i], SIGKILL), 0);
		/* dead once waitable, or already reaped: a recycled template (retired after
		 * its 3 runs) is reaped by the runtime's own threads, which may come first */
		siginfo_t si;
		int w = waitid(P_PID, (id_t)kids[i], &si, WEXITED | WNOWAIT);
		ck_assert_msg(w == 0 || errno == ECHILD, "waitid: %s", strerror(errno));
	}
	json_t *d = run(rt_warm, "print('again')", NULL);
	ck_assert_str_eq(json_string_value(json_object_get(d, "stdout")), "again\n");
	json_decref(d);
	n = children(kids, 8);
	ck_assert_msg(n >= 1 && n <= 2, "%zu children after a restart", n);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("warm");
	TCase *tc = tcase_create("warm");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_same_state_as_cold);
	tcase_add_test(tc, test_same_endings_as_cold);
	tcase_add_test(tc, test_nothing_left_for_the_next_run);
	tcase_add_test(tc, test_recycled_and_restarted);
	tcase_add_test(tc, test_concurrent_runs);
	tcase_add_test(tc, test_denials_as_cold);
	tcase_add_test(tc, test_identity_as_cold);
	tcase_add_test(tc, test_repl_and_files);
	tcase_add_test(tc, test_burst_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
