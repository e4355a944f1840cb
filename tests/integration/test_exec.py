#!/usr/bin/env python3
"""govex exec: executables argv first, the shell only on request and by policy."""
import hashlib
import json
import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def need_restricted():
    if not g.backend_available("restricted"):
        raise g.Skip("feature:userns the restricted backend is not available here")


def test_argv_first_trusted(t):
    # an argument with spaces and shell metacharacters arrives as one argv entry
    r = t.run(["exec", "--preset", "trusted", "--json", "--", "printf", "%s|", "a b", "$(id)",
               "*"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "a b|$(id)|*|", "stdout (no word splitting, no expansion)")
    g.eq(doc["backend"]["name"], "controlled", "backend")


def test_exit_code_and_signal(t):
    r = t.run(["exec", "--preset", "trusted", "--", "sh", "-c", "exit 7"])
    g.eq(r.returncode, 7, "exit status passes through")
    r = t.run(["exec", "--preset", "trusted", "--json", "--", "sh", "-c", "kill -9 $$"])
    g.eq(r.returncode, 128 + 9, "killed by SIGKILL")
    g.eq(r.result()["termination"], "signaled", "termination")


def test_timeout(t):
    r = t.run(["exec", "--preset", "trusted", "--json", "--timeout-ms", "300", "--", "sleep",
               "30"])
    g.eq(r.returncode, g.EXIT_TIMEOUT, "exit status")
    g.eq(r.result()["status"], "timeout", "status")
    g.check(r.wall < 3.0, "timeout took %.2f s" % r.wall)


def test_plan_binds_path_and_digest(t):
    r = t.run(["exec", "--preset", "trusted", "--plan-only", "--", "cat", "/dev/null"])
    r.expect_rc(0)
    plan = json.loads(r.stdout)
    g.eq(plan["kind"], "exec", "kind")
    exe = shutil.which("cat")
    real = os.path.realpath(exe)
    g.eq(plan["executable"]["path"], real, "executable.path resolved on PATH")
    with open(real, "rb") as f:
        data = f.read()
    g.eq(plan["executable"]["digest"], "sha256:" + hashlib.sha256(data).hexdigest(),
         "executable.digest")
    g.eq(plan["executable"]["bytes"], len(data), "executable.bytes")
    g.eq(plan["argv"], [real, "/dev/null"], "argv")
    g.check(real in plan["binds"], "the executable is among the binds: %r" % plan["binds"])
    g.check("interpreter" not in plan, "an exec plan names no Python interpreter")
    g.check(r.stdout.endswith(b"\n") and r.stdout.count(b"\n") == 1, "canonical: one line")


def test_not_found(t):
    r = t.run(["exec", "--preset", "trusted", "--json", "--", "no-such-program-xyz"])
    g.eq(r.returncode, g.EXIT_REFUSED, "exit status")
    doc = r.result()
    g.eq(doc["status"], "invalid_input", "status")
    g.check(g.diag(doc, "executable_not_found"), "diagnostic executable_not_found: %r"
            % doc["diagnostics"])


def test_shell_needs_policy(t):
    # strict denies shell: refused, naming it, nothing runs
    marker = t.path("ran")
    r = t.run(["exec", "--json", "--backend", "controlled", "--shell", "touch " + marker])
    g.eq(r.returncode, g.EXIT_REFUSED, "exit status")
    doc = r.result()
    g.eq(doc["status"], "policy_refused", "status")
    g.check("shell" in json.dumps(doc["diagnostics"]), "the refusal names shell: %r"
            % doc["diagnostics"])
    g.check(not os.path.exists(marker), "the shell command ran")
    # trusted allows shell: the string goes to /bin/sh -c
    r = t.run(["exec", "--preset", "trusted", "--shell", "echo $((6*7)) | tr 4 x"])
    r.expect_rc(0)
    g.eq(r.stdout, b"x2\n", "shell output")


def test_shell_approval(t):
    pol = t.policy(approval=["shell"])
    r = t.run(["exec", "--policy", pol, "--json", "--shell", "echo hi"])
    g.eq(r.result()["status"], "policy_refused", "no approver")
    g.check(g.diag(r.result(), "approval_required"), "approval_required")
    r = t.run(["exec", "--policy", pol, "--approver", "true", "--shell", "echo hi"])
    r.expect_rc(0)
    g.eq(r.stdout, b"hi\n", "approved shell output")
    r = t.run(["exec", "--policy", pol, "--approver", "false", "--json", "--shell", "echo hi"])
    g.check(g.diag(r.result(), "approval_denied"), "approval_denied")


def test_stdin_and_env(t):
    stdin = t.write("in.txt", "hello\n")
    r = t.run(["exec", "--preset", "trusted", "--stdin", stdin, "--", "tr", "a-z", "A-Z"])
    r.expect_rc(0)
    g.eq(r.stdout, b"HELLO\n", "stdin fed")
    r = t.run(["exec", "--preset", "trusted", "--", "env"],
              extra_env={"GOVEX_TEST_SECRET": "s3cr3t-exec"})
    r.expect_rc(0)
    g.check(b"s3cr3t-exec" not in r.stdout, "the caller's secret reached the program")


def test_sandboxed_exec(t):
    need_restricted()
    # the executable and its libraries are bound read-only; the host is not visible
    r = t.run(["exec", "--json", "--", "cat", "/etc/hostname"])
    doc = r.result()
    g.eq(doc["backend"]["name"], "restricted", "backend")
    g.eq(doc["status"], "execution_failed", "status")
    g.check("No such file" in doc["stderr"], "stderr: %r" % doc["stderr"])
    r = t.run(["exec", "--json", "--", "ls", "/"])
    doc = r.result()
    g.eq(doc["status"], "success", "ls / runs in the sandbox")
    top = set(doc["stdout"].split())
    g.check("home" not in top and "srv" not in top and "var" not in top,
            "host directories visible: %r" % top)
    # /etc is the sandbox's own: its passwd and group, nothing of the host's
    r = t.run(["exec", "--json", "--", "ls", "/etc"])
    g.eq(sorted(r.result()["stdout"].split()), ["group", "passwd"], "the sandbox's /etc")
    # no subprocesses under strict: sh cannot fork a child
    r = t.run(["exec", "--json", "--preset", "strict", "--", "sh", "-c", "/bin/true; echo $?"])
    doc = r.result()
    g.eq(doc["status"], "execution_failed", "status")
    g.check("Cannot fork" in doc["stderr"], "sh could fork under strict: %r" % doc["stderr"])
    g.eq(doc["stdout"], "", "nothing ran after the failed fork")


TESTS = [
    ("argv first, no shell interpretation (trusted)", test_argv_first_trusted),
    ("exit code and signal pass through", test_exit_code_and_signal),
    ("timeout kills the executable", test_timeout),
    ("the plan binds the resolved path and the digest of its bytes", test_plan_binds_path_and_digest),
    ("an executable not on PATH is invalid input", test_not_found),
    ("--shell only when the policy allows shell", test_shell_needs_policy),
    ("--shell asks the approver when the policy says so", test_shell_approval),
    ("stdin is fed; the caller's environment is not passed", test_stdin_and_env),
    ("under restricted the executable runs in the sandbox", test_sandboxed_exec),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
