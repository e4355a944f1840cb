"""Red team B (round 2) helpers: drive libgovex directly from a small C program built by
the test (REPL runs, plans, calls, the tool provider), check result texts for what the
contract forbids (control characters, govex's own frames), and time runs.

Stdlib only.  The C driver is compiled once per suite process against this build's
header and library (GOVEX_BUILD, else the directory of GOVEX), with the sanitizers when
the library has them.  The tool provider's functions are looked up with dlsym, so the
driver builds (and the other modes work) on a tree that does not have them yet; a mode
whose symbols are missing prints {"missing_symbol": NAME} and exits 3.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import govextest as gt  # noqa: E402
from govextest import Failure, check  # noqa: E402

BUILD = os.environ.get("GOVEX_BUILD") or os.path.dirname(os.path.abspath(gt.GOVEX))

DRIVER_C = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "govex.h"

static char *slurp(const char *path, size_t *len)
{
	*len = 0;
	if (!path || !strcmp(path, "-"))
		return NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	size_t k;
	while ((k = fread(b + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap + 1);
		}
	}
	fclose(f);
	b[n] = 0;
	*len = n;
	return b;
}

static govex_runtime *runtime(const char *pol, govex_policy **ret_pol)
{
	struct govex_error err = {0};
	govex_policy *p = NULL;
	int r = strncmp(pol, "preset:", 7) == 0 ? govex_policy_preset(pol + 7, &p, &err)
						  : govex_policy_load(pol, &p, &err);
	if (r < 0) {
		printf("{\"api_error\":%d,\"where\":\"policy\",\"message\":\"%s\"}\n", r, err.message);
		exit(0);
	}
	govex_runtime *rt = NULL;
	if ((r = govex_runtime_new(p, NULL, &rt, &err)) < 0) {
		printf("{\"api_error\":%d,\"where\":\"runtime\",\"message\":\"%s\"}\n", r, err.message);
		exit(0);
	}
	*ret_pol = p;
	return rt;
}

static void print_result(govex_result *res)
{
	size_t len = 0;
	const char *j = govex_result_json(res, &len);
	fwrite(j, 1, len, stdout);
	if (!len || j[len - 1] != '\n')
		putchar('\n');
}

/* repl|plain POLICY CODE STDIN INPUTS [plan] */
static int do_run(int argc, char **argv, int repl)
{
	if (argc < 6)
		return 2;
	govex_policy *pol;
	govex_runtime *rt = runtime(argv[2], &pol);
	size_t code_len, stdin_len, inputs_len;
	char *code = slurp(argv[3], &code_len), *in = slurp(argv[4], &stdin_len),
	     *inputs = slurp(argv[5], &inputs_len);
	struct govex_request req;
	memset(&req, 0, sizeof req);
	req.code = code ? code : "";
	req.code_len = code_len;
	req.stdin_data = in;
	req.stdin_len = stdin_len;
	req.repl = repl;
	req.inputs_json = inputs;
	req.inputs_len = inputs_len;
	struct govex_error err = {0};
	govex_result *res = NULL;
	int r;
	if (argc > 6 && !strcmp(argv[6], "plan")) {
		govex_plan *plan = NULL;
		r = govex_runtime_plan(rt, &req, &plan, &res, &err);
		if (r < 0) {
			printf("{\"api_error\":%d,\"message\":\"%s\"}\n", r, err.message);
		} else if (plan) {
			size_t len = 0;
			const char *c = govex_plan_canonical(plan, &len);
			printf("PLAN %s\n", govex_plan_digest(plan));
			fwrite(c, 1, len, stdout);
			govex_plan_free(plan);
		} else {
			print_result(res);
		}
	} else {
		r = govex_runtime_run(rt, &req, &res, &err);
		if (r < 0)
			printf("{\"api_error\":%d,\"message\":\"%s\"}\n", r, err.message);
		else
			print_result(res);
	}
	govex_result_free(res);
	free(code);
	free(in);
	free(inputs);
	govex_runtime_free(rt);
	govex_policy_free(pol);
	return 0;
}

/* call POLICY MODULE FUNCTION ARGS */
static int do_call(int argc, char **argv)
{
	if (argc < 6)
		return 2;
	govex_policy *pol;
	govex_runtime *rt = runtime(argv[2], &pol);
	size_t src_len, args_len;
	char *src = slurp(argv[3], &src_len), *args = slurp(argv[5], &args_len);
	struct govex_call c;
	memset(&c, 0, sizeof c);
	c.source.data = src;
	c.source.len = src_len;
	c.source.path = argv[3];
	c.function = argv[4];
	c.args = args;
	c.args_len = args_len;
	struct govex_error err = {0};
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	int r = govex_runtime_plan_call(rt, &c, &plan, &res, &err);
	if (r >= 0 && plan)
		r = govex_runtime_call(rt, plan, &c, &res, &err);
	if (r < 0)
		printf("{\"api_error\":%d,\"message\":\"%s\"}\n", r, err.message);
	else if (res)
		print_result(res);
	govex_result_free(res);
	govex_plan_free(plan);
	free(src);
	free(args);
	govex_runtime_free(rt);
	govex_policy_free(pol);
	return 0;
}

typedef int (*ts_new_fn)(govex_runtime *, const struct govex_toolset_options *,
			 govex_toolset **, struct govex_error *);
typedef char *(*ts_list_fn)(const govex_toolset *);
typedef int (*ts_invoke_fn)(govex_toolset *, const char *, const char *, size_t,
			    const struct govex_invoke *, char **, struct govex_error *);
typedef govex_toolset *(*ts_free_fn)(govex_toolset *);

static void *sym(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	if (!p) {
		printf("{\"missing_symbol\":\"%s\"}\n", name);
		exit(3);
	}
	return p;
}

/* tools POLICY [MODULE...] | invoke POLICY NAME ARGS [MODULE...] */
static int do_tools(int argc, char **argv, int invoke)
{
	ts_new_fn ts_new = (ts_new_fn)sym("govex_toolset_new");
	ts_list_fn ts_list = (ts_list_fn)sym("govex_toolset_list");
	ts_invoke_fn ts_invoke = (ts_invoke_fn)sym("govex_toolset_invoke");
	ts_free_fn ts_free = (ts_free_fn)sym("govex_toolset_free");
	if (argc < (invoke ? 5 : 3))
		return 2;
	govex_policy *pol;
	govex_runtime *rt = runtime(argv[2], &pol);
	int first = invoke ? 5 : 3;
	const char *mods[16] = {0};
	for (int i = first, n = 0; i < argc && n < 15; i++)
		mods[n++] = argv[i];
	struct govex_toolset_options o;
	memset(&o, 0, sizeof o);
	o.modules = mods;
	struct govex_error err = {0};
	govex_toolset *ts = NULL;
	int r = ts_new(rt, &o, &ts, &err);
	if (r < 0) {
		printf("RC %d %s\n", r, err.message);
	} else if (!invoke) {
		char *l = ts_list(ts);
		printf("RC 0\n%s\n", l ? l : "null");
		free(l);
	} else {
		size_t args_len;
		char *args = slurp(argv[4], &args_len);
		struct govex_invoke inv;
		memset(&inv, 0, sizeof inv);
		char *out = NULL;
		r = ts_invoke(ts, argv[3], args ? args : "{}", args ? args_len : 2, &inv, &out,
			      &err);
		printf("RC %d %s\n%s\n", r, r < 0 ? err.message : "", out ? out : "null");
		free(out);
		free(args);
	}
	if (ts)
		ts_free(ts);
	govex_runtime_free(rt);
	govex_policy_free(pol);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "repl"))
		return do_run(argc, argv, 1);
	if (!strcmp(argv[1], "plain"))
		return do_run(argc, argv, 0);
	if (!strcmp(argv[1], "call"))
		return do_call(argc, argv);
	if (!strcmp(argv[1], "tools"))
		return do_tools(argc, argv, 0);
	if (!strcmp(argv[1], "invoke"))
		return do_tools(argc, argv, 1);
	return 2;
}
'''

_driver = {}
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")


def _sanitized(lib):
    try:
        out = subprocess.run(["ldd", lib], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=20).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "libasan" in out or "libubsan" in out


def driver():
    """Path of the compiled driver (built once per process); a Failure when it does
    not compile against this build."""
    if "path" in _driver:
        return _driver["path"]
    if "error" in _driver:
        raise Failure(_driver["error"])
    lib = os.path.join(BUILD, "libgovex.so")
    d = tempfile.mkdtemp(prefix="govex-rtb-drv-")
    import atexit
    import shutil
    atexit.register(shutil.rmtree, d, True)
    src = os.path.join(d, "drv.c")
    with open(src, "w") as f:
        f.write(DRIVER_C)
    exe = os.path.join(d, "drv")
    argv = [os.environ.get("CC", "cc"), "-std=gnu11", "-g", "-o", exe, src,
            "-I", os.path.join(REPO, "include"), "-L", BUILD, "-lgovex",
            "-Wl,-rpath," + BUILD, "-ldl"]
    if _sanitized(lib):
        argv[1:1] = ["-fsanitize=address,undefined"]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0:
        _driver["error"] = "the libgovex driver does not build:\n" + r.stdout.decode()[-3000:]
        raise Failure(_driver["error"])
    _driver["path"] = exe
    return exe


class DrvOut:
    def __init__(self, rc, out, err, wall):
        self.rc, self.out, self.err, self.wall = rc, out, err, wall

    def text(self):
        return self.out.decode("utf-8", "replace")

    def doc(self):
        t = self.text()
        try:
            d = json.loads(t)
        except ValueError as e:
            raise Failure("driver printed no JSON document (%s): rc=%r out=%r err=%r"
                          % (e, self.rc, t[:600], self.err[-1500:]))
        check(not (isinstance(d, dict) and "missing_symbol" in d),
              "libgovex lacks %r" % (d.get("missing_symbol") if isinstance(d, dict) else d))
        check(not (isinstance(d, dict) and "api_error" in d), "API error: %r" % (d,))
        return d


def drive(t, args, files=None, timeout=60):
    """Runs the driver with ARGS (FILES: {name: bytes|str} written to t.tmp first, each
    `@name` in ARGS replaced by its path).  Returns a DrvOut."""
    exe = driver()
    paths = {}
    for name, data in (files or {}).items():
        paths["@" + name] = t.write(name, data) if data is not None else "-"
    argv = [exe] + [paths.get(a, a) for a in args]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=t.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        gt._killpg(p.pid)
        out, err = p.communicate()
        raise Failure("the driver did not finish within %d s: %r" % (timeout, argv[:3]))
    finally:
        gt._killpg(p.pid)
    r = DrvOut(p.returncode, out, err.decode("utf-8", "replace"), time.monotonic() - t0)
    for w in SANITIZER_WORDS:
        check(w not in r.err, "sanitizer report from libgovex:\n%s" % r.err[-3000:])
    return r


def lib_repl(t, code, policy="preset:trusted", stdin=None, inputs=None, plan=False):
    """A REPL run through govex_runtime_run (repl = 1); its result document."""
    files = {"code.py": code, "stdin.bin": stdin, "inputs.json": inputs}
    args = ["repl", policy, "@code.py", "@stdin.bin", "@inputs.json"] + (["plan"] if plan else [])
    r = drive(t, args, files)
    return r


def lib_plan(t, code, policy="preset:trusted", inputs=None, repl=True):
    """(digest, canonical plan dict) of a planned run (repl or plain)."""
    files = {"code.py": code, "stdin.bin": None, "inputs.json": inputs}
    r = drive(t, ["repl" if repl else "plain", policy, "@code.py", "@stdin.bin",
                  "@inputs.json", "plan"], files)
    text = r.text()
    check(text.startswith("PLAN "), "no plan: %r %r" % (text[:800], r.err[-800:]))
    first, _, rest = text.partition("\n")
    return first.split()[1], json.loads(rest)


def lib_call(t, module_path, function, args, policy="preset:trusted"):
    files = {"args.json": args if isinstance(args, str) else json.dumps(args)}
    return drive(t, ["call", policy, module_path, function, "@args.json"], files)


def lib_tools(t, policy, modules=()):
    r = drive(t, ["tools", policy] + list(modules))
    return _rc_json(r)


def lib_invoke(t, policy, name, args, modules=()):
    files = {"args.json": args if isinstance(args, (str, bytes)) else json.dumps(args)}
    r = drive(t, ["invoke", policy, name, "@args.json"] + list(modules), files)
    return _rc_json(r)


def _rc_json(r):
    text = r.text()
    if text.startswith("{") and "missing_symbol" in text:
        raise Failure("libgovex lacks the tool provider: %s" % text.strip())
    check(text.startswith("RC "), "driver output: rc=%r %r %r" % (r.rc, text[:600], r.err[-800:]))
    first, _, rest = text.partition("\n")
    rc = int(first.split()[1])
    try:
        doc = json.loads(rest) if rest.strip() else None
    except ValueError as e:
        raise Failure("tool provider JSON does not parse (%s): %r" % (e, rest[:600]))
    return rc, doc, first


# ---------------------------------------------------------------- text checks

# C0 but \t \n, DEL, C1, bidi controls and the rest of Unicode's format characters a
# terminal acts on.
BAD_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
WORKER_WORDS = ("worker.py", "govex_worker", "_govex", "<govex", "GOVEX-VALUE")


def clean_text(what, s, allow_newlines=True):
    check(isinstance(s, str), "%s is not a string: %r" % (what, s))
    bad = sorted({"%04x" % ord(c) for c in BAD_CHARS.findall(s)})
    if not allow_newlines and ("\n" in s or "\t" in s):
        bad.append("newline/tab")
    check(not bad, "%s carries control characters %s: %r" % (what, bad, s[:300]))


def no_worker_frames(what, s):
    for w in WORKER_WORDS:
        check(w not in s, "%s shows govex's own frames (%r): %r" % (what, w, s[-1500:]))


def strict_json(text):
    """json.loads that refuses NaN/Infinity (what a strict JSON peer would)."""
    def bad(c):
        raise ValueError("non-standard JSON constant %r" % c)
    return json.loads(text, parse_constant=bad)


def exception_diag(doc):
    """The result's `exception` diagnostic (code "exception" with an exception object)."""
    for d in doc.get("diagnostics") or []:
        if isinstance(d, dict) and d.get("code") == "exception" and isinstance(
                d.get("exception"), dict):
            return d
    raise Failure("no diagnostic {code: exception, exception: {...}}: %r"
                  % (doc.get("diagnostics"),))


def check_exception(doc, etype, message=None, frames=(), bound=8192 + 256):
    """The contract's exception diagnostic: type, message, a bounded, user-only,
    control-free traceback naming FRAMES (substrings).  Returns the diagnostic."""
    check(doc.get("status") == "execution_failed",
          "status %r, expected execution_failed (diagnostics %r)"
          % (doc.get("status"), doc.get("diagnostics")))
    d = exception_diag(doc)
    ex = d["exception"]
    check(ex.get("type") == etype, "exception.type %r, expected %r" % (ex.get("type"), etype))
    if message is not None:
        check(ex.get("message") == message, "exception.message %r, expected %r"
              % (ex.get("message"), message))
        check(d.get("message") == "%s: %s" % (etype, message),
              "diagnostic message %r" % (d.get("message"),))
    tb = ex.get("traceback")
    check(isinstance(tb, str), "exception.traceback %r" % (tb,))
    check(len(tb.encode("utf-8")) <= bound, "traceback of %d bytes (bound 8 KiB)" % len(tb))
    for f in frames:
        check(f in tb, "traceback lacks %r: %r" % (f, tb[-1500:]))
    no_worker_frames("exception.traceback", tb)
    clean_text("exception.type", ex.get("type") or "", allow_newlines=False)
    clean_text("exception.message", ex.get("message") or "")
    clean_text("exception.traceback", tb)
    clean_text("diagnostic message", d.get("message") or "")
    return d


VALUE_CODES = re.compile(r"value|json|large|deep|range|finite|budget|result_invalid")


def omitted_diag(doc):
    """A diagnostic saying why the value was not returned."""
    for d in doc.get("diagnostics") or []:
        if isinstance(d, dict) and VALUE_CODES.search(d.get("code") or ""):
            check(isinstance(d.get("message"), str) and d["message"],
                  "diagnostic without a message: %r" % (d,))
            clean_text("diagnostic message", d["message"])
            return d
    raise Failure("no diagnostic says why the value was omitted: %r"
                  % (doc.get("diagnostics"),))


def value_token(text):
    """The raw JSON text of the top-level "value" member of a result document."""
    doc = json.loads(text)
    check(isinstance(doc, dict) and "value" in doc, "no value member")
    dec = json.JSONDecoder()
    i = 0
    # the value member at nesting depth 1
    depth = 0
    in_str = False
    esc = False
    while i < len(text):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            if depth == 1 and text.startswith('"value"', i):
                j = i + len('"value"')
                while text[j] in " \t\r\n:":
                    j += 1
                _, end = dec.raw_decode(text, j)
                return text[j:end]
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    raise Failure("value member not found in %r" % text[:300])


# ---------------------------------------------------------------- MCP

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mcp"))
import mcptest  # noqa: E402


def mcp_server(t, args, version="2025-11-25", init=True):
    """A `govex mcp ARGS` process for test T (killed when the test ends)."""
    s = mcptest.Server(list(args), cwd=t.tmp)
    t.defer(s.cleanup)
    if init:
        try:
            s.initialize(version)
        except mcptest.Failure as e:
            raise Failure(str(e))
    return s


def mcp_call(s, name, arguments, timeout=40.0):
    """tools/call; returns the JSON-RPC response (Failure on no answer)."""
    try:
        return s.call(name, arguments, timeout=timeout)
    except mcptest.Failure as e:
        raise Failure(str(e))


def mcp_doc(resp):
    """(CallToolResult, structuredContent) of a tools/call response."""
    check("result" in resp, "tools/call answered with an error: %r" % (resp,))
    r = resp["result"]
    doc = r.get("structuredContent")
    check(isinstance(doc, dict), "no structuredContent: %r" % (r,))
    check(isinstance(r.get("content"), list) and r["content"], "no content: %r" % (r,))
    return r, doc


def mcp_text(r):
    return "\n".join(c.get("text", "") for c in r.get("content", []) if c.get("type") == "text")


class Snippets:
    """REPL-style snippet runs through one surface: "mcp" (run_python_snippet of one
    `govex mcp` server) or "lib" (govex_runtime_run with repl = 1)."""

    def __init__(self, t, surface, preset="trusted", policy=None):
        self.t, self.surface = t, surface
        self.preset, self.policy = preset, policy
        self.s = None
        if surface == "mcp":
            args = ["--policy", policy] if policy else ["--preset", preset]
            self.s = mcp_server(t, args)

    def run(self, code, stdin=None, inputs=None, timeout=40.0, inputs_text=None):
        """(result document, seconds); stdin: str (mcp) or bytes (lib); INPUTS_TEXT:
        the inputs as raw JSON text (for documents Python's json cannot write)."""
        t0 = time.monotonic()
        if self.surface == "mcp" and inputs_text is not None:
            i = self.s.new_id()
            self.s.send_raw(('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
                             '"run_python_snippet","arguments":{"code":%s,"inputs":%s}}}\n'
                             % (i, json.dumps(code), inputs_text)).encode())
            deadline = time.monotonic() + timeout
            while True:
                try:
                    resp = self.s.recv(max(0.1, deadline - time.monotonic()))
                except mcptest.Failure as e:
                    raise Failure(str(e))
                if resp.get("id") == i or (resp.get("id") is None and "error" in resp):
                    break
            _, doc = mcp_doc(resp)
            return doc, time.monotonic() - t0
        if self.surface == "mcp":
            a = {"code": code}
            if stdin is not None:
                a["stdin"] = stdin if isinstance(stdin, str) else stdin.decode("utf-8")
            if inputs is not None:
                a["inputs"] = inputs
            _, doc = mcp_doc(mcp_call(self.s, "run_python_snippet", a, timeout=timeout))
            return doc, time.monotonic() - t0
        pol = self.policy or "preset:" + self.preset
        if inputs_text is None and inputs is not None:
            inputs_text = json.dumps(inputs)
        r = lib_repl(self.t, code, policy=pol, stdin=stdin, inputs=inputs_text)
        return r.doc(), r.wall
