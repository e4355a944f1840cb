#!/usr/bin/env python3
"""docs/schema: the JSON Schemas (draft 2020-12) of the policy, the plan, the result and
the backend reports.  Every document the binary prints validates: the presets and the
example policies, plans of each kind, results of each way a run ends, `govex backends
--json`.  The policy schema accepts exactly what the parser accepts over a corpus of
near misses; each schema refuses a misspelt field, a wrong type and a missing member;
and each closed list of a schema (statuses, terminations, controls, diagnostic codes,
permissions, effects, backends, cgroup sources, limits) is the code's, read from the
sources, so a word the code gains and the schema lacks fails here.

jsonschema is Debian's python3-jsonschema: when this interpreter (a pyenv one, say)
cannot import it, the suite runs itself again under /usr/bin/python3, once."""
import copy
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

SCHEMA_DIR = os.path.join(g.REPO, "docs", "schema")
SCHEMAS = ("policy", "plan", "result", "backend")
DRAFT = "https://json-schema.org/draft/2020-12/schema"
SYSTEM_PYTHON = "/usr/bin/python3"     # Debian's python3-jsonschema is importable by it
REEXEC_FLAG = "GOVEX_SCHEMA_JSONSCHEMA_REEXEC"


# ---------------------------------------------------------------- jsonschema

def _validator_class():
    try:
        from jsonschema import Draft202012Validator
        return Draft202012Validator
    except ImportError:
        return None


def _jsonschema_or_reexec():
    """Run this file again under SYSTEM_PYTHON when it has jsonschema and this one has
    not (calltest.hypothesis_or_reexec's way); else return, and the tests skip."""
    if _validator_class() is not None or os.environ.get(REEXEC_FLAG):
        return
    if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
            and os.access(SYSTEM_PYTHON, os.X_OK)
            and subprocess.call([SYSTEM_PYTHON, "-c",
                                 "from jsonschema import Draft202012Validator"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0):
        sys.stdout.flush()
        env = dict(os.environ)
        env[REEXEC_FLAG] = "1"
        os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:],
                  env)


_validators = {}


def validator(name):
    cls = _validator_class()
    if cls is None:
        raise g.Skip("jsonschema (draft 2020-12) is not importable by %s nor by %s "
                     "(apt-get install python3-jsonschema)" % (sys.executable, SYSTEM_PYTHON))
    if name not in _validators:
        with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
            _validators[name] = cls(json.load(f))
    return _validators[name]


def schema(name):
    return validator(name).schema


def errors(name, doc):
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message[:300])
            for e in validator(name).iter_errors(doc)]


def valid(name, doc, what):
    errs = errors(name, doc)
    g.check(not errs, "%s does not validate against %s.schema.json:\n  %s\ndocument: %s"
            % (what, name, "\n  ".join(errs[:8]), json.dumps(doc)[:1500]))


def invalid(name, doc, what):
    g.check(errors(name, doc), "%s.schema.json accepts %s: %s"
            % (name, what, json.dumps(doc)[:600]))


# ---------------------------------------------------------------- the code's lists

def src(path):
    with open(os.path.join(g.REPO, path)) as f:
        return re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)


def c_array(path, name):
    """The string literals of the C array NAME's initializer in PATH (NULLs skipped)."""
    m = re.search(r"\b%s\s*\[[^\]]*\]\s*=\s*\{(.*?)\};" % re.escape(name), src(path), re.S)
    g.check(m, "%s: no array %s (did it move? this test reads it)" % (path, name))
    return re.findall(r'"([^"]*)"', m.group(1))


def x_macro(path, name, pattern):
    """The PATTERN group of each X(...) line of the X-macro NAME in PATH."""
    m = re.search(r"#define %s\(X\)(?:[^\n]*\\\n)*[^\n]*" % re.escape(name), src(path))
    g.check(m, "%s: no X-macro %s" % (path, name))
    return re.findall(pattern, m.group(0))


def code_statuses():
    return c_array("src/lib/result.c", "status_names")


def code_terminations():
    return c_array("src/lib/result.c", "term_names")


def code_controls():
    return x_macro("src/lib/internal.h", "GOVEX__CONTROLS", r'X\(\w+, "(\w+)"\)')


def code_effects():
    return x_macro("src/lib/internal.h", "GOVEX__EFFECTS", r'X\(\w+, "(\w+)"\)')


def code_limits():
    return x_macro("src/lib/internal.h", "GOVEX__LIMITS", r"X\((\w+),")


def code_perms():
    return c_array("src/lib/policy.c", "govex__perm_names")


def code_backends():
    return c_array("src/lib/policyparse.c", "backend_names")


def code_cgroup_sources():
    names = c_array("src/lib/backend/restricted/cghost.c", "source_names")
    names += re.findall(r'cgroup_source,\s*sizeof\(r->cgroup_source\),\s*"(\w+)"',
                        src("src/lib/backend/restricted/report.c"))
    return names


# The functions and macros whose argument (by index; None: the first one holding a string
# literal) is a diagnostic's code, per file pattern ("*": every file).
DIAG_CALLEES = {
    "*": {"govex__result_diag": 1, "govex_result_add_diagnostic": 1,
          "govex_result_new_refusal": 1, "govex__job_refuse": 2, "govex__call_invalid": 1,
          "cli_emit_refusal": 2, "refusal_doc": 1, "govex__tool_refusal": 1,
          "govex__exception_diag": 1, "REFUSE": None, "refuse": None},
    "src/lib/files.c": {"diag": 1, "diag_msg": 1},
    # filesystem.deny's refusals, made once per runtime and given by planning.c
    "src/lib/deny.c": {"fault": 1},
    # the CLI session's refusal codes; out_of_memory is said on stderr, never in a result
    "src/cli/session.c": {"fail": 1},
}
DIAG_NEVER_PRINTED = {"out_of_memory"}


def _call_args(text, i):
    depth, cur, out, instr = 0, "", [], False
    while i < len(text):
        c = text[i]
        if instr:
            cur += c
            if c == "\\":
                cur += text[i + 1]
                i += 1
            elif c == '"':
                instr = False
        elif c == '"':
            instr = True
            cur += c
        elif c in "([{":
            depth += 1
            cur += c
        elif c in ")]}":
            if depth == 0:
                out.append(cur.strip())
                return out
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    return out


def code_diagnostic_codes():
    """Every diagnostic code the sources can put in a result: the literals given as the
    code to the functions that add one, the codes the parent takes from a worker's frame
    (callframe.c frame_code_ok) and the one it puts instead, and the streams' not-UTF-8
    codes ("%s_not_utf8")."""
    codes = set()
    root = os.path.join(g.REPO, "src")
    for path in sorted(glob.glob(os.path.join(root, "**", "*.[ch]"), recursive=True)):
        rel = os.path.relpath(path, g.REPO)
        callees = dict(DIAG_CALLEES["*"], **DIAG_CALLEES.get(rel, {}))
        text = src(rel)
        for m in re.finditer(r"\b(\w+)\s*\(", text):
            if m.group(1) not in callees or text[:m.start()].rstrip().endswith("define"):
                continue
            args = _call_args(text, m.end())
            idx = callees[m.group(1)]
            cands = ([args[idx]] if idx is not None and idx < len(args)
                     else [a for a in args if '"' in a][:1])
            for a in cands:
                lits = re.findall(r'"((?:[^"\\]|\\.)*)"', a)
                if lits and all(re.fullmatch(r"[a-z][a-z0-9_]*", lit) for lit in lits):
                    codes.update(lits)
    codes.update(c_array("src/lib/callframe.c", "known"))
    cf = src("src/lib/callframe.c")
    codes.update(re.findall(r'code = "(\w+)";', cf))
    g.check('"%s_not_utf8"' in src("src/lib/result.c"),
            "result.c no longer makes the %s_not_utf8 codes: update this test")
    codes.update(("stdout_not_utf8", "stderr_not_utf8"))
    return codes - DIAG_NEVER_PRINTED


def same_set(schema_list, code_list, what):
    s, c = set(schema_list), set(code_list)
    g.check(c, "%s: nothing read from the sources" % what)
    g.check(s == c, "%s: the schema and the code differ; in the code only: %s; in the "
            "schema only: %s" % (what, sorted(c - s), sorted(s - c)))


# ---------------------------------------------------------------- running govex

def ok_doc(r, rcs=(0,)):
    g.check(r.returncode in rcs, "exit status %r, expected one of %r\n%s"
            % (r.returncode, rcs, r.describe()))
    return r.json()


def restricted():
    return g.backend_available("restricted")


def need_restricted():
    if not restricted():
        raise g.Skip("the restricted backend is unavailable here")


def presets():
    """The presets to run under: trusted always, strict where the sandbox is."""
    return ["trusted"] + (["strict"] if restricted() else [])


def result_of(t, args, rcs, what, **kw):
    r = t.run(args, **kw)
    doc = ok_doc(r, rcs)
    valid("result", doc, what)
    return doc


MODULE = '''
import time

def add(a: int, b: int) -> int:
    return a + b

def boom(n: int) -> int:
    raise ValueError("boom %d" % n)

def noisy() -> int:
    print("out")
    return 1

def not_json() -> object:
    return {1, 2}

def slow() -> int:
    time.sleep(30)
    return 0
'''


# ---------------------------------------------------------------- the schemas themselves

def test_schemas_are_draft_2020_12(t):
    cls = _validator_class()
    if cls is None:
        validator("policy")    # skips, saying why
    ids = set()
    for name in SCHEMAS:
        path = os.path.join(SCHEMA_DIR, name + ".schema.json")
        with open(path) as f:
            doc = json.load(f)
        g.eq(doc.get("$schema"), DRAFT, "%s: $schema" % name)
        cls.check_schema(doc)
        for k in ("$id", "title", "description"):
            g.check(isinstance(doc.get(k), str) and doc[k], "%s: no %s" % (name, k))
        ids.add(doc["$id"])
    g.eq(len(ids), len(SCHEMAS), "distinct $id")
    g.eq(sorted(os.path.basename(p) for p in glob.glob(os.path.join(SCHEMA_DIR, "*.json"))),
         sorted(n + ".schema.json" for n in SCHEMAS), "files in docs/schema")


def test_enums_follow_the_code(t):
    pol, plan, res, back = (schema(n) for n in SCHEMAS)
    rp = res["properties"]
    same_set(rp["status"]["enum"], code_statuses(), "result status")
    same_set(res["$defs"]["diagnostic"]["properties"]["claimed_status"]["enum"],
             code_statuses(), "result diagnostic claimed_status")
    same_set(rp["termination"]["enum"], [n for n in code_terminations() if n],
             "result termination")
    for s, what in ((plan, "plan"), (res, "result"), (back, "backend")):
        same_set(s["$defs"]["control"]["enum"], code_controls(), "%s controls" % what)
    same_set(res["$defs"]["diagnostic"]["properties"]["code"]["enum"],
             code_diagnostic_codes(), "result diagnostic codes")
    same_set(pol["properties"]["approval"]["items"]["enum"], code_perms(), "policy approval")
    for k in ("needs", "approval"):
        same_set(plan["properties"][k]["items"]["enum"], code_perms(), "plan %s" % k)
    same_set(pol["properties"]["effects"]["properties"]["require_known"]["items"]["enum"],
             code_effects(), "policy effects")
    same_set(plan["$defs"]["effects"]["propertyNames"]["enum"], code_effects(),
             "plan effects")
    same_set([b for b in pol["properties"]["backend"]["enum"] if b is not None],
             code_backends(), "policy backend")
    same_set(plan["properties"]["backend"]["properties"]["name"]["enum"], code_backends(),
             "plan backend")
    same_set(rp["backend"]["oneOf"][1]["properties"]["name"]["enum"], code_backends(),
             "result backend")
    same_set(back["$defs"]["report"]["properties"]["name"]["enum"], code_backends(),
             "backend report name")
    same_set(back["$defs"]["report"]["properties"]["cgroups"]["properties"]["source"]["enum"],
             code_cgroup_sources(), "backend cgroups source")
    same_set(pol["properties"]["limits"]["properties"], code_limits(), "policy limits")
    same_set(plan["properties"]["limits"]["properties"], code_limits(), "plan limits")


# ---------------------------------------------------------------- policies

def test_presets_validate(t):
    for name in ("strict", "workspace", "trusted"):
        r = t.run(["policy", "show", name])
        valid("policy", ok_doc(r), "preset %s" % name)


def test_example_policies_validate(t):
    n = 0
    for path in sorted(glob.glob(os.path.join(g.REPO, "examples", "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        if not (isinstance(doc, dict) and doc.get("version") == "govex.policy/v1"):
            continue
        n += 1
        t.run(["policy", "check", path]).expect_rc(0)
        valid("policy", doc, os.path.relpath(path, g.REPO))
        valid("policy", ok_doc(t.run(["policy", "canon", path])),
              "govex policy canon %s" % os.path.basename(path))
    g.check(n >= 1, "no example policy in examples/")


V = "govex.policy/v1"


def policy_corpus():
    """(what, document): documents the parser accepts and refuses, near each boundary."""
    base = {"version": V}
    docs = [("minimal", base), ("no version", {}), ("other version", {"version": "govex.policy/v2"}),
            ("version not a string", {"version": 1}), ("an array", [base]),
            ("misspelt top-level field", dict(base, netwrok="deny")),
            ("languages python", dict(base, languages=["python"])),
            ("languages empty", dict(base, languages=[])),
            ("languages ruby", dict(base, languages=["ruby"])),
            ("languages a string", dict(base, languages="python")),
            ("interpreter auto", dict(base, python={"interpreter": "auto"})),
            ("interpreter path", dict(base, python={"interpreter": "/usr/bin/python3"})),
            ("interpreter relative", dict(base, python={"interpreter": "python3"})),
            ("interpreter dotdot", dict(base, python={"interpreter": "/usr/../bin/python3"})),
            ("interpreter trailing slash", dict(base, python={"interpreter": "/usr/bin/"})),
            ("interpreter double slash", dict(base, python={"interpreter": "/usr//bin"})),
            ("interpreter dot", dict(base, python={"interpreter": "/usr/./bin"})),
            ("interpreter dotfile", dict(base, python={"interpreter": "/usr/.hidden/py"})),
            ("interpreter triple dot", dict(base, python={"interpreter": "/usr/.../py"})),
            ("python misspelt", dict(base, python={"sight": True})),
            ("site not boolean", dict(base, python={"site": "yes"})),
            ("preload ok", dict(base, python={"preload": ["json", "email.mime"]})),
            ("preload bad name", dict(base, python={"preload": ["1json"]})),
            ("preload dot end", dict(base, python={"preload": ["json."]})),
            ("preload 33", dict(base, python={"preload": ["m%d" % i for i in range(33)]})),
            ("preload 32", dict(base, python={"preload": ["m%d" % i for i in range(32)]})),
            ("workdir fresh", dict(base, workdir="fresh")),
            ("workdir under write root", dict(base, workdir="/var/tmp/x",
                                              filesystem={"write": ["/var/tmp"]})),
            ("workdir relative", dict(base, workdir="x", filesystem={"write": ["/var/tmp"]})),
            ("workdir /govex", dict(base, workdir="/govex/w", filesystem={"write": ["/"]})),
            ("workdir not a string", dict(base, workdir=None)),
            ("limits misspelt", dict(base, limits={"wall_msx": 5})),
            ("limits not an object", dict(base, limits=[])),
            ("limit a string", dict(base, limits={"wall_ms": "5"})),
            ("limit a boolean", dict(base, limits={"wall_ms": True})),
            ("filesystem misspelt", dict(base, filesystem={"raed": []})),
            ("read root /", dict(base, filesystem={"read": ["/"]})),
            ("read root relative", dict(base, filesystem={"read": ["usr"]})),
            ("read root /govex", dict(base, filesystem={"read": ["/govex"]})),
            ("read root under /govex", dict(base, filesystem={"read": ["/govex/a"]})),
            ("read root /govexx", dict(base, filesystem={"read": ["/govexx"]})),
            ("read roots 256", dict(base, filesystem={"read": ["/r%d" % i for i in range(256)]})),
            ("read roots 257", dict(base, filesystem={"read": ["/r%d" % i for i in range(257)]})),
            ("write root not a string", dict(base, filesystem={"write": [1]})),
            ("platform_defaults not boolean", dict(base, filesystem={"platform_defaults": 1})),
            ("deny ok", dict(base, filesystem={"read": ["/srv"], "deny": ["/srv/x"]})),
            ("deny empty", dict(base, filesystem={"deny": []})),
            ("deny /", dict(base, filesystem={"deny": ["/"]})),
            ("deny relative", dict(base, filesystem={"deny": ["srv"]})),
            ("deny not normalized", dict(base, filesystem={"deny": ["/srv/../x"]})),
            ("deny /govex (planning refuses it)", dict(base, filesystem={"deny": ["/govex/x"]})),
            ("deny 257", dict(base, filesystem={"deny": ["/d%d" % i for i in range(257)]})),
            ("deny not a string", dict(base, filesystem={"deny": [1]})),
            ("network allow", dict(base, network="allow")),
            ("network maybe", dict(base, network="maybe")),
            ("network boolean", dict(base, network=False)),
            ("subprocess deny", dict(base, subprocess="deny")),
            ("shell Allow", dict(base, shell="Allow")),
            ("environment misspelt", dict(base, environment={"inherits": True})),
            ("environment ok", dict(base, environment={"inherit": True, "allow": ["A_1", "_b"],
                                                       "set": {"X": "1"}})),
            ("env allow bad name", dict(base, environment={"allow": ["1A"]})),
            ("env allow dash", dict(base, environment={"allow": ["A-B"]})),
            ("env set bad name", dict(base, environment={"set": {"A=B": "1"}})),
            ("env set not a string", dict(base, environment={"set": {"A": 1}})),
            ("env name 255", dict(base, environment={"allow": ["A" * 255]})),
            ("env name 256", dict(base, environment={"allow": ["A" * 256]})),
            ("env value 32768", dict(base, environment={"set": {"A": "v" * 32768}})),
            ("env value 32769", dict(base, environment={"set": {"A": "v" * 32769}})),
            ("approval ok", dict(base, approval=["network", "shell", "filesystem_write",
                                                 "subprocess"])),
            ("approval unknown", dict(base, approval=["filesystem_read"])),
            ("approval a string", dict(base, approval="network")),
            ("effects ok", dict(base, effects={"require_known": ["network", "dynamic_code"]})),
            ("effects unknown", dict(base, effects={"require_known": ["gpu"]})),
            ("effects misspelt", dict(base, effects={"require_knwn": []})),
            ("results sanitized", dict(base, results={"disclosure": "sanitized"})),
            ("results partial", dict(base, results={"disclosure": "partial"})),
            ("results misspelt", dict(base, results={"disclosur": "full"})),
            ("backend null", dict(base, backend=None)),
            ("backend restricted", dict(base, backend="restricted")),
            ("backend unknown", dict(base, backend="docker")),
            ("backend not a string", dict(base, backend=1))]
    for name in schema("policy")["properties"]["limits"]["properties"]:
        _, lo, hi = _limit_bounds(name)
        docs.append(("limits.%s min" % name, dict(base, limits={name: lo})))
        docs.append(("limits.%s max" % name, dict(base, limits={name: hi})))
        docs.append(("limits.%s min-1" % name, dict(base, limits={name: lo - 1})))
        docs.append(("limits.%s max+1" % name, dict(base, limits={name: hi + 1})))
        docs.append(("limits.%s null" % name, dict(base, limits={name: None})))
    return docs


def _limit_bounds(name):
    p = schema("policy")["properties"]["limits"]["properties"][name]
    return ("null" in p["type"], p["minimum"], p["maximum"])


def test_policy_schema_agrees_with_the_parser(t):
    """The schema's verdict is the parser's (govex policy check) on every document of the
    corpus: its bounds, names, types and unknown fields are the code's."""
    validator("policy")
    disagree = []
    for i, (what, doc) in enumerate(policy_corpus()):
        path = t.write_json("p%d.json" % i, doc)
        r = t.run(["policy", "check", path])
        g.check(r.returncode in (0, 2), "policy check %s: exit %r\n%s"
                % (what, r.returncode, r.describe()))
        parser_ok = r.returncode == 0
        errs = errors("policy", doc)
        if parser_ok != (not errs):
            disagree.append("%s: the parser %s it, the schema %s%s"
                            % (what, "accepts" if parser_ok else "refuses (%s)" % r.err.strip(),
                               "refuses it: " if errs else "accepts it",
                               "; ".join(errs[:2])))
    g.check(not disagree, "schema and parser disagree:\n  " + "\n  ".join(disagree))


# ---------------------------------------------------------------- plans

def test_plans_validate(t):
    mod = t.write("mod.py", MODULE)
    script = t.write("script.py", "print(input())\n")
    stdin = t.write("in.txt", "hi\n")
    data = t.write("data.csv", "a,b\n1,2\n")
    site = t.policy("site.json", python={"site": True})
    outdir = t.path("out")
    os.mkdir(outdir)
    n = 0
    for preset in presets():
        pol = ["--preset", preset]
        for what, args in (
                ("run -c", ["plan"] + pol + ["-c", "print(1)"]),
                ("run FILE --stdin --file --output-dir",
                 ["plan"] + pol + ["--stdin", stdin, "--file", "data.csv=" + data,
                                   "--output-dir", outdir, script]),
                ("call", ["plan"] + pol + [mod + ":add"]),
                ("call --file", ["plan"] + pol + ["--file", "data.csv=" + data,
                                                  mod + ":noisy"]),
                ("exec", ["exec", "--plan-only"] + pol + ["--", "/bin/echo", "hi"]),
                ("exec --output-dir", ["exec", "--plan-only"] + pol +
                 ["--output-dir", outdir, "--", "/bin/echo", "hi"])):
            doc = ok_doc(t.run(args))
            valid("plan", doc, "%s [%s]" % (what, preset))
            n += 1
    # a shell string (trusted allows shell), packages (python.site), a named workdir
    doc = ok_doc(t.run(["exec", "--plan-only", "--preset", "trusted", "--shell", "exit 3"]))
    g.eq(doc["shell_string"], True, "shell_string")
    valid("plan", doc, "exec --shell")
    doc = ok_doc(t.run(["plan", "--policy", site, "-c", "pass"]))
    g.check("packages" in doc, "no packages member with python.site: %r" % sorted(doc))
    valid("plan", doc, "run with python.site")
    wd = t.path("wd")
    os.mkdir(wd)
    named = t.policy("named.json", workdir=wd)
    doc = ok_doc(t.run(["plan", "--policy", named, "-c", "pass"]))
    g.eq(doc["workdir"], {"mode": "path", "path": wd}, "workdir")
    valid("plan", doc, "run with a named workdir")
    g.check(n >= 6, "too few plans")


def test_plan_schema_refuses_what_the_parser_refuses(t):
    """A field the plan's kind does not have, at the top or in a fixed-shape object: the
    schema refuses it, and so does `govex run --plan` (invalid_plan, its result valid)."""
    doc = ok_doc(t.run(["plan", "--preset", "trusted", "-c", "pass"]))
    for what, bad in (("a misspelt top-level field", dict(doc, polcy_digest=doc["policy_digest"])),
                      ("a call plan's field in a run plan", dict(doc, function={"name": "f"})),
                      ("a misspelt field of code", dict(doc, code=dict(doc["code"], digst="x"))),
                      ("a misspelt field of limits", dict(doc, limits=dict(doc["limits"], wall=1)))):
        invalid("plan", bad, what)
        path = t.write_json("bad.json", bad)
        res = result_of(t, ["run", "--json", "--preset", "trusted", "--plan", path], (125,),
                        "run --plan with %s" % what)
        g.eq(res["status"], "invalid_input", "status of run --plan with %s" % what)
        g.diag(res, "invalid_plan")


# ---------------------------------------------------------------- results

def test_run_results_validate(t):
    g.need_python()
    for preset in presets():
        pol = ["--preset", preset]
        d = result_of(t, ["run", "--json"] + pol + ["-c", "print(6*7)"], (0,), "success")
        g.eq(d["status"], "success", "status")
        d = result_of(t, ["run", "--json"] + pol + ["-c", "raise ValueError('x')"], (1,),
                      "an exception")
        g.eq(d["status"], "execution_failed", "status of a raise")
        d = result_of(t, ["run", "--json"] + pol + ["-c", "import sys; sys.exit(3)"], (3,),
                      "exit 3")
        g.eq(d["exit_code"], 3, "exit_code")
        d = result_of(t, ["run", "--json", "--timeout-ms", "300"] + pol +
                      ["-c", "import time; time.sleep(20)"], (124,), "a timeout")
        g.eq(d["status"], "timeout", "status")
        g.eq(d["termination"], "timeout", "termination")
        d = result_of(t, ["run", "--json"] + pol +
                      ["-c", "import os; os.kill(os.getpid(), 9)"], (137,), "a signal")
        g.eq((d["termination"], d["signal"]), ("signaled", 9), "termination, signal")
        d = result_of(t, ["run", "--json"] + pol +
                      ["-c", "import sys; sys.stdout.buffer.write(b'a\\xffb')"], (0,),
                      "stdout not UTF-8")
        g.diag(d, "stdout_not_utf8")
    small = t.policy("small.json", limits={"stdout_bytes": 10})
    d = result_of(t, ["run", "--json", "--policy", small, "-c", "print('x' * 100)"], (0, 1),
                  "output truncation")
    g.eq((d["status"], d["stdout_truncated"]), ("output_limit", True), "status, truncated")
    g.diag(d, "stdout_truncated")


def test_more_statuses_validate(t):
    """source_mismatch, cancelled and, in the sandbox, resource_limit."""
    g.need_python()
    script = t.write("s.py", "print(1)\n")
    plan = ok_doc(t.run(["plan", "--preset", "trusted", script]))
    path = t.write_json("plan.json", plan)
    t.write("s.py", "print(2)\n")
    d = result_of(t, ["run", "--json", "--preset", "trusted", "--plan", path, script], (125,),
                  "a plan whose source changed")
    g.eq(d["status"], "source_mismatch", "status")

    def cancel(p):
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
    for preset in presets():
        d = result_of(t, ["run", "--json", "--preset", preset, "-c",
                          "import time; time.sleep(20)"], (143,), "a cancelled run [%s]" % preset,
                      during=cancel)
        g.eq(d["status"], "cancelled", "status")
    if restricted():
        pol = t.policy("cpu.json", base="strict", limits={"cpu_ms": 300})
        d = result_of(t, ["run", "--json", "--policy", pol, "-c", "while True: pass"], (137, 152),
                      "a CPU-time limit")
        g.eq((d["status"], d["termination"]), ("resource_limit", "cpu_limit"),
             "status, termination")


def test_refusals_validate(t):
    # no backend enforces strict's denials on the controlled backend
    d = result_of(t, ["run", "--json", "--preset", "strict", "--backend", "controlled",
                      "-c", "pass"], (125,), "policy_refused")
    g.eq(d["status"], "policy_refused", "status")
    g.diag(d, "missing_controls")
    g.eq(d["backend"], None, "backend of a refusal")
    d = result_of(t, ["run", "--json", "--policy", t.path("missing.json"), "-c", "pass"],
                  (125,), "an unreadable policy")
    g.diag(d, "invalid_policy")
    g.eq(d["policy_digest"], None, "policy_digest")
    d = result_of(t, ["run", "--json", "--preset", "trusted", "--timeout-ms", "99999999",
                      "-c", "pass"], (125,), "a limit above the policy's")
    g.diag(d, "limit_exceeds_policy")
    d = result_of(t, ["exec", "--json", "--preset", "strict", "--shell", "true"], (125,),
                  "a shell the policy denies")
    g.diag(d, "shell_not_allowed")


def test_denied_by_policy_validates(t):
    need_restricted()
    g.need_python()
    d = result_of(t, ["run", "--json", "--preset", "strict", "-c",
                      "import subprocess\ntry:\n    subprocess.run(['/bin/true'])\n"
                      "except OSError as e:\n    print(e)\n"], (0,), "denied_by_policy")
    dd = g.diag(d, "denied_by_policy")
    g.eq(dd.get("controls"), ["subprocess_deny"], "controls")


def test_call_results_validate(t):
    g.need_python()
    mod = t.write("mod.py", MODULE)
    for preset in presets():
        pol = ["--preset", preset]
        d = result_of(t, ["call", "--json"] + pol + [mod + ":add", "--args", '{"a": 2, "b": 3}'],
                      (0,), "a call")
        g.eq(d["value"], 5, "value")
        d = result_of(t, ["call", "--json"] + pol + [mod + ":boom", "--args", '{"n": 1}'],
                      (1,), "a call that raises")
        g.eq(g.diag(d, "exception")["exception"]["type"], "ValueError", "exception type")
        d = result_of(t, ["call", "--json"] + pol + [mod + ":not_json"], (1,),
                      "a call returning a set")
        g.eq(d["status"], "result_invalid", "status")
        d = result_of(t, ["call", "--json"] + pol + [mod + ":add", "--args", '{"a": 1}'],
                      (125, 1), "a call missing an argument")
        g.check(d["status"] in ("invalid_input", "binding_failed"), "status %r" % d["status"])
        d = result_of(t, ["call", "--json"] + pol + [mod + ":nosuch"], (125, 1),
                      "a call of no such function")
        d = result_of(t, ["call", "--json", "--timeout-ms", "300"] + pol + [mod + ":slow"],
                      (124,), "a call that times out")
        g.eq(d["status"], "timeout", "status")
    sanitized = t.policy("san.json", results={"disclosure": "sanitized"})
    d = result_of(t, ["call", "--json", "--policy", sanitized, mod + ":noisy"], (0,),
                  "a sanitized call")
    g.diag(d, "output_withheld")


def test_exec_and_files_results_validate(t):
    outdir = t.path("out")
    os.mkdir(outdir)
    for preset in presets():
        pol = ["--preset", preset]
        d = result_of(t, ["exec", "--json"] + pol + ["--", "/bin/echo", "hi"], (0,), "exec")
        g.eq(d["stdout"], "hi\n", "stdout")
        d = result_of(t, ["exec", "--json"] + pol + ["--", "/bin/sh", "-c", "exit 4"], (4,),
                      "exec exit 4")
    d = result_of(t, ["exec", "--json", "--preset", "trusted", "--shell", "exit 3"], (3,),
                  "exec --shell")
    d = result_of(t, ["exec", "--json", "--preset", "trusted", "--", t.path("nosuch")], (125,),
                  "exec of no such file")
    g.need_python()
    for i, preset in enumerate(presets()):
        od = os.path.join(outdir, str(i))
        os.mkdir(od)
        d = result_of(t, ["run", "--json", "--preset", preset, "--output-dir", od, "-c",
                          "import os\nd = os.environ['GOVEX_OUTPUT_DIR']\n"
                          "open(os.path.join(d, 'a.csv'), 'w').write('x,y\\n')\n"
                          "open(os.path.join(d, 'b.png'), 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n')\n"],
                      (0,), "files out")
        g.eq([f["name"] for f in d.get("files", [])], ["a.csv", "b.png"], "files")


# ---------------------------------------------------------------- backends

def test_backends_validate(t):
    doc = ok_doc(t.run(["backends", "--json"]))
    valid("backend", doc, "govex backends --json")
    g.check(len(doc) >= 1, "no reports")


# ---------------------------------------------------------------- what the schemas refuse

def _mutants(doc, required, nested):
    """(what, document): a misspelt member, each required member missing, a wrong type."""
    out = []
    k = sorted(required)[0]
    bad = dict(doc)
    bad[k + "x"] = bad.pop(k)
    out.append(("%s misspelt %sx" % (k, k), bad))
    out.append(("an unknown member", dict(doc, extra=1)))
    for k in sorted(required):
        out.append(("no %s" % k, {kk: v for kk, v in doc.items() if kk != k}))
    for path, value in nested:
        bad = copy.deepcopy(doc)
        cur = bad
        for p in path[:-1]:
            cur = cur[p]
        if value is KeyError:
            cur[path[-1] + "x"] = cur.pop(path[-1])
        else:
            cur[path[-1]] = value
        out.append(("%s = %r" % ("/".join(map(str, path)), value), bad))
    return out


def test_schemas_refuse_near_misses(t):
    pol = g.preset("strict")
    valid("policy", pol, "strict")
    for what, bad in _mutants(pol, ["version"], [
            (["limits", "wall_ms"], "5000"), (["limits", "wall_ms"], KeyError),
            (["filesystem", "read"], "/"), (["environment", "inherit"], "false"),
            (["network"], True), (["approval"], ["networks"])]):
        invalid("policy", bad, "a policy with " + what)

    plan = ok_doc(t.run(["plan", "--preset", "trusted", "-c", "pass"]))
    valid("plan", plan, "a plan")
    for what, bad in _mutants(plan, schema("plan")["required"], [
            (["code", "bytes"], "8"), (["code", "digest"], "sha256:00"),
            (["controls", "required"], ["wall_clock"]), (["kind"], "inspect"),
            (["shell"], "deny"), (["workdir", "path"], "/tmp"), (["stdin"], KeyError)]):
        invalid("plan", bad, "a plan with " + what)

    res = ok_doc(t.run(["run", "--json", "--preset", "trusted", "-c", "print(1)"]))
    valid("result", res, "a result")
    for what, bad in _mutants(res, schema("result")["required"], [
            (["status"], "succeeded"), (["termination"], "killed"), (["exit_code"], "0"),
            (["exit_code"], None), (["stdout_bytes"], -1), (["usage", "wall_ms"], KeyError),
            (["usage", "cpu_ms"], 1.5), (["backend", "controls"], ["wall_time", "nope"]),
            (["backend", "name"], "docker"), (["plan_digest"], "sha256:XYZ"),
            (["diagnostics"], [{"code": "no_such_code", "message": "m"}]),
            (["diagnostics"], [{"code": "timeout"}])]):
        invalid("result", bad, "a result with " + what)
    # success is an exit 0
    invalid("result", dict(res, exit_code=1), "a success with exit_code 1")

    reps = ok_doc(t.run(["backends", "--json"]))
    rep = reps[0]
    for what, bad in _mutants(rep, schema("backend")["$defs"]["report"]["required"], [
            (["enforced"], ["wall_time", "teleport"]), (["available"], "yes"),
            (["unavailable"], [{"control": "network_deny"}]), (["version"], "govex.backend/v2")]):
        invalid("backend", [bad] + reps[1:], "a backend report with " + what)
    invalid("backend", dict(rep), "a report that is not in an array")
    invalid("backend", [dict(rep, available=False, enforced=["wall_time"])],
            "an unavailable backend enforcing a control")


TESTS = [
    ("the four schemas are draft 2020-12 schemas with $id, title and description",
     test_schemas_are_draft_2020_12),
    ("each closed list of a schema is the code's", test_enums_follow_the_code),
    ("govex policy show PRESET validates, every preset", test_presets_validate),
    ("the example policies validate, as written and canonical", test_example_policies_validate),
    ("the policy schema accepts exactly what the parser accepts (corpus)",
     test_policy_schema_agrees_with_the_parser),
    ("plans of run, call and exec validate", test_plans_validate),
    ("a plan with a field its kind lacks: refused by the schema and by --plan",
     test_plan_schema_refuses_what_the_parser_refuses),
    ("run results validate: success, exception, exit, timeout, signal, not UTF-8, truncation",
     test_run_results_validate),
    ("source_mismatch, cancelled, resource_limit results validate",
     test_more_statuses_validate),
    ("refusals validate: policy_refused, invalid policy, limit, shell", test_refusals_validate),
    ("a denied_by_policy result validates", test_denied_by_policy_validates),
    ("call results validate: value, exception, result_invalid, binding, timeout, sanitized",
     test_call_results_validate),
    ("exec results and files out validate", test_exec_and_files_results_validate),
    ("govex backends --json validates", test_backends_validate),
    ("each schema refuses a misspelt field, a wrong type, a missing member",
     test_schemas_refuse_near_misses),
]

if __name__ == "__main__":
    _jsonschema_or_reexec()
    sys.exit(g.main(TESTS))
