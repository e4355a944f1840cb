#!/usr/bin/env python3
"""deploy/: the Kubernetes manifests against the Kubernetes schemas, offline, and the
promises docs/deploy.md makes about them.

The validator is tests/deploy/node/validate.cjs over the npm package kubernetes-models
(the Kubernetes 1.27 OpenAPI schemas as data, with ajv), installed by `npm ci` from the
committed package-lock.json (no network after that).  It checks types, formats, enums,
required fields and, strictly, that no field is unknown.  Every check here is also run on
broken copies (mutations) and must fail on each: a validator or a check that passes
everything proves nothing.  Without node and npm, or without a reachable registry for the
first install, the suite skips (feature:npm); CI requires it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NODE_DIR = os.path.join(HERE, "node")
VALIDATE = os.path.join(NODE_DIR, "validate.cjs")
KDIR = os.path.join(REPO, "deploy", "kubernetes")
CONTAINERFILE = os.path.join(REPO, "deploy", "Containerfile")
NPM_TIMEOUT = 300


class Skip(Exception):
    pass


class Failure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


_npm = {}


def need_validator():
    """npm ci in NODE_DIR (once, and only when node_modules does not hold the locked
    versions): Skip("feature:npm ...") when npm cannot be used."""
    if "skip" in _npm:
        raise Skip(_npm["skip"])
    if "fail" in _npm:
        raise Failure(_npm["fail"])
    if _npm.get("ok"):
        return
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            _npm["skip"] = "feature:npm %s is not installed" % tool
            raise Skip(_npm["skip"])
    lock = json.load(open(os.path.join(NODE_DIR, "package-lock.json")))

    def installed():
        for key, meta in lock.get("packages", {}).items():
            if not key.startswith("node_modules/"):
                continue
            try:
                pj = json.load(open(os.path.join(NODE_DIR, key, "package.json")))
            except (OSError, ValueError):
                return False
            if pj.get("version") != meta.get("version"):
                return False
        return True

    if not installed():
        try:
            r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=NPM_TIMEOUT)
            out = r.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            r, out = None, "npm ci timed out after %d s" % NPM_TIMEOUT
        if r is None or r.returncode != 0 or not installed():
            reach = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET",
                     "network", "timed out", "getaddrinfo")
            if any(k in out for k in reach):
                _npm["skip"] = "feature:npm the npm registry cannot be reached: %s" % (
                    out.strip().splitlines()[-1:] or [""])[0]
                raise Skip(_npm["skip"])
            _npm["fail"] = "npm ci failed:\n" + out[-3000:]
            raise Failure(_npm["fail"])
    _npm["ok"] = True


def manifests():
    return sorted(os.path.join(KDIR, f) for f in os.listdir(KDIR) if f.endswith(".yaml"))


def validate(paths):
    """(exit code, output lines) of the validator over PATHS."""
    need_validator()
    r = subprocess.run(["node", VALIDATE] + list(paths), cwd=REPO, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return r.returncode, r.stdout.decode("utf-8", "replace").splitlines()


def load(paths):
    """Every document of PATHS as parsed by the validator (YAML 1.1, as Kubernetes)."""
    need_validator()
    r = subprocess.run(["node", VALIDATE, "--dump"] + list(paths), cwd=REPO,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(r.returncode == 0, "validate.cjs --dump failed: %s" % r.stderr.decode()[-2000:])
    docs = []
    for line in r.stdout.decode().splitlines():
        docs.extend(json.loads(line))
    return docs


# ------------------------------------------------------------------ schema validation

def test_all_valid(tmp):
    paths = manifests()
    kinds = {os.path.basename(p) for p in paths}
    for want in ("deployment.yaml", "service.yaml", "hpa.yaml", "pdb.yaml"):
        check(want in kinds, "deploy/kubernetes/%s is missing" % want)
    rc, out = validate(paths)
    check(rc == 0, "the manifests do not validate:\n" + "\n".join(out))
    oks = [l for l in out if l.startswith("ok ")]
    check(len(oks) >= len(paths), "fewer documents validated than files:\n" + "\n".join(out))


# (file, text to replace, replacement, what the validator must say)
SCHEMA_MUTATIONS = [
    ("deployment.yaml", "readinessProbe:", "readinesProbe:", 'unknown field "readinesProbe"'),
    ("deployment.yaml", "replicas: 2", "replicas: two", "/spec/replicas: must be integer"),
    ("deployment.yaml", "type: Localhost", "type: Localhst", "must be equal to one of"),
    ("deployment.yaml", "  selector:\n    matchLabels:", "  selectr:\n    matchLabels:",
     "must have required property 'selector'"),
    ("deployment.yaml", "containerPort: 8080", "containerPort: 99999999999",
     "must match format \"int32\""),
    ("deployment.yaml", "memory: 4Gi", "memory: four-gigs", "must match format \"quantity\""),
    ("deployment.yaml", "kind: Deployment", "kind: Deploymnt", "unknown apiVersion/kind"),
    ("deployment.yaml", "hostUsers: false", "hostUsers: [false]", "must be boolean"),
    ("service.yaml", "targetPort: http", "targetPort: {name: http}", "/targetPort"),
    ("service.yaml", "protocol: TCP", "protocol: TPC", "must be equal to one of"),
    ("hpa.yaml", 'averageValue: "3"', 'averageValue: "three"', 'must match format "quantity"'),
    ("hpa.yaml", "apiVersion: autoscaling/v2\n", "apiVersion: autoscaling/v3\n",
     "unknown apiVersion/kind"),
    ("hpa.yaml", "maxReplicas: 10", "maxReplica: 10", "required property 'maxReplicas'"),
    ("pdb.yaml", "maxUnavailable: 1", "maxUnavailabel: 1", 'unknown field "maxUnavailabel"'),
    ("networkpolicy.yaml", "policyTypes:", "policyType:", 'unknown field "policyType"'),
    ("deployment.yaml", "        - name: govex\n", "        - name: govex\n          name: x\n",
     "Map keys must be unique"),
]


def test_schema_mutations(tmp):
    """Each broken copy fails validation, with the expected message, and only there."""
    bad = []
    for i, (name, old, new, want) in enumerate(SCHEMA_MUTATIONS):
        text = open(os.path.join(KDIR, name)).read()
        check(text.count(old) >= 1, "mutation %d: %r not in %s" % (i, old, name))
        path = os.path.join(tmp, "m%d-%s" % (i, name))
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))
        rc, out = validate([path])
        if rc == 0 or not any(want in l for l in out if l.startswith("error")):
            bad.append("%s: %r -> %r: exit %d, wanted %r in:\n  %s"
                       % (name, old, new, rc, want, "\n  ".join(out)))
    check(not bad, "mutations the validator let through:\n" + "\n".join(bad))


# ------------------------------------------------------------------ what docs promise

def _flag(args, name):
    if name in args:
        i = args.index(name)
        return args[i + 1] if i + 1 < len(args) else None
    return None


def _matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def promises(docs):
    """What docs/deploy.md says of the manifests, as a list of what does not hold."""
    bad = []

    def need(cond, msg):
        if not cond:
            bad.append(msg)

    by_kind = {}
    for d in docs:
        by_kind.setdefault(d.get("kind"), []).append(d)
    for k in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        if len(by_kind.get(k, [])) != 1:
            bad.append("exactly one %s wanted, found %d" % (k, len(by_kind.get(k, []))))
    if bad:
        return bad
    dep, svc = by_kind["Deployment"][0], by_kind["Service"][0]
    hpa, pdb = by_kind["HorizontalPodAutoscaler"][0], by_kind["PodDisruptionBudget"][0]
    name = dep["metadata"]["name"]
    tmpl = dep["spec"]["template"]
    labels = tmpl["metadata"].get("labels", {})
    pod = tmpl["spec"]
    need(_matches(dep["spec"]["selector"].get("matchLabels"), labels),
         "the Deployment's selector does not match its pods")
    need(_matches(svc["spec"].get("selector"), labels), "the Service selects no govex pod")
    need(svc["spec"].get("sessionAffinity", "None") == "None",
         "the Service pins clients (the stateless protocol needs none)")
    need(_matches(pdb["spec"]["selector"].get("matchLabels"), labels),
         "the PodDisruptionBudget selects no govex pod")
    need(pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable") is not None,
         "the PodDisruptionBudget allows no bound")
    ref = hpa["spec"]["scaleTargetRef"]
    need(ref.get("kind") == "Deployment" and ref.get("name") == name,
         "the HPA scales %r, not the Deployment %r" % (ref, name))
    names = [m.get("pods", {}).get("metric", {}).get("name") for m in hpa["spec"]["metrics"]
             if m.get("type") == "Pods"]
    need(names == ["govex_runs_in_flight", "govex_calls_queued"],
         "the HPA does not scale on govex_runs_in_flight and govex_calls_queued")
    need(hpa["spec"].get("minReplicas", 1) >= 2, "the HPA may scale to one replica")
    adapter = [d for d in by_kind.get("ConfigMap", []) if "config.yaml" in d.get("data", {})]
    for m in ("govex_runs_in_flight", "govex_calls_queued"):
        need(adapter and '"^%s$"' % m in adapter[0]["data"]["config.yaml"],
             "no Prometheus adapter rule serves %s" % m)

    conts = [c for c in pod["containers"] if c["name"] == "govex"]
    if len(conts) != 1:
        return bad + ["no container named govex"]
    c = conts[0]
    args = c.get("args", [])
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    http = _flag(args, "--http") or ""
    need(re.fullmatch(r"0\.0\.0\.0:\d+", http) is not None, "--http %r is not 0.0.0.0:PORT" % http)
    need(http.rsplit(":", 1)[-1] == str(ports.get("http")),
         "--http %r and containerPort %r differ" % (http, ports.get("http")))
    tp = svc["spec"]["ports"][0]["targetPort"]
    need(tp == "http" or tp == ports.get("http"), "the Service targets port %r" % tp)
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        g = c.get(probe, {}).get("httpGet", {})
        need(g.get("path") == path and g.get("port") in ("http", ports.get("http")),
             "%s is not GET %s on the server's port" % (probe, path))
    drain = _flag(args, "--drain-timeout")
    need(drain is not None, "no --drain-timeout")
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pre_s = int(pre[-1]) if pre[:1] == ["/bin/sleep"] and pre[-1].isdigit() else 0
    grace = pod.get("terminationGracePeriodSeconds", 30)
    need(drain is not None and grace > int(drain) + pre_s,
         "terminationGracePeriodSeconds %s is not above preStop %s s + drain %s s"
         % (grace, pre_s, drain))
    # the token: a Secret, mode 0400, a file (subPath: a Secret volume's key is a symlink,
    # which govex refuses), the path --token-file names
    tok = _flag(args, "--token-file")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    m = mounts.get(tok)
    need(m is not None, "--token-file %r is not a mount" % tok)
    if m:
        v = vols.get(m["name"], {})
        need("secret" in v, "the token does not come from a Secret")
        need(v.get("secret", {}).get("defaultMode") == 0o400,
             "the token's mode is %r, not 0400" % v.get("secret", {}).get("defaultMode"))
        need(m.get("subPath") and m.get("readOnly"), "the token is not a read-only subPath file")
    sc, psc = c.get("securityContext", {}), pod.get("securityContext", {})
    need(pod.get("hostUsers") is False, "the pod has no user namespace (hostUsers)")
    need(psc.get("runAsNonRoot") is True and (psc.get("runAsUser") or 0) > 0,
         "the pod may run as root")
    need(sc.get("allowPrivilegeEscalation") is False, "privilege escalation allowed")
    need(sc.get("privileged") is not True, "the container is privileged")
    need(sc.get("readOnlyRootFilesystem") is True, "the root file system is writable")
    need(sc.get("capabilities", {}).get("drop") == ["ALL"] and
         not sc.get("capabilities", {}).get("add"), "capabilities are not all dropped")
    sp = psc.get("seccompProfile", {})
    need(sp.get("type") == "Localhost" and os.path.isfile(os.path.join(
        REPO, "deploy", "seccomp", os.path.basename(sp.get("localhostProfile") or "-"))),
        "the seccomp profile %r is not one of deploy/seccomp/" % sp)
    need(pod.get("automountServiceAccountToken") is False,
         "the pod gets a service account token it has no use for")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    need(env.get("XDG_CACHE_HOME") in mounts, "XDG_CACHE_HOME is not a writable volume")
    need("/tmp" in mounts, "/tmp is not a writable volume")
    return bad


def test_promises(tmp):
    bad = promises(load(manifests()))
    check(not bad, "the manifests break docs/deploy.md's promises:\n  " + "\n  ".join(bad))


def _set(doc, path, value):
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    if value is _DEL:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value


_DEL = object()
_C = ("spec", "template", "spec", "containers", 0)
_P = ("spec", "template", "spec")
PROMISE_MUTATIONS = [
    ("Deployment", _P + ("terminationGracePeriodSeconds",), 30, "terminationGracePeriodSeconds"),
    ("Deployment", _C + ("readinessProbe", "httpGet", "path"), "/healthz", "readinessProbe"),
    ("Deployment", _C + ("livenessProbe", "httpGet", "port"), 9090, "livenessProbe"),
    ("Deployment", _P + ("volumes", 0, "secret", "defaultMode"), 0o644, "0400"),
    ("Deployment", _C + ("volumeMounts", 0, "subPath"), _DEL, "subPath"),
    ("Deployment", _C + ("args", 3), "/etc/token", "--token-file"),
    ("Deployment", _P + ("hostUsers",), True, "hostUsers"),
    ("Deployment", _C + ("securityContext", "allowPrivilegeEscalation"), True, "escalation"),
    ("Deployment", _C + ("securityContext", "privileged"), True, "privileged"),
    ("Deployment", _P + ("securityContext", "runAsUser"), 0, "root"),
    ("Deployment", ("spec", "template", "metadata", "labels", "app.kubernetes.io/name"), "x",
     "selector"),
    ("Deployment", _P + ("securityContext", "seccompProfile", "type"), "Unconfined",
     "seccomp profile"),
    ("Deployment", _P + ("securityContext", "seccompProfile", "localhostProfile"),
     "profiles/other.json", "seccomp profile"),
    ("Service", ("spec", "sessionAffinity"), "ClientIP", "pins clients"),
    ("HorizontalPodAutoscaler", ("spec", "scaleTargetRef", "name"), "other", "the HPA scales"),
    ("HorizontalPodAutoscaler", ("spec", "metrics", 0, "pods", "metric", "name"), "cpu",
     "govex_runs_in_flight"),
    ("HorizontalPodAutoscaler", ("spec", "metrics", 1, "pods", "metric", "name"), "cpu",
     "govex_calls_queued"),
    ("PodDisruptionBudget", ("spec", "selector", "matchLabels", "app.kubernetes.io/name"), "x",
     "PodDisruptionBudget"),
]


def test_promise_mutations(tmp):
    """Each broken copy breaks a promise, and the check names it."""
    base = load(manifests())
    missed = []
    for kind, path, value, want in PROMISE_MUTATIONS:
        docs = json.loads(json.dumps(base))
        target = [d for d in docs if d.get("kind") == kind][0]
        _set(target, path, value)
        bad = promises(docs)
        if not any(want in b for b in bad):
            missed.append("%s %s = %r: wanted %r, got %r" % (kind, "/".join(map(str, path)),
                                                             value, want, bad))
    check(not missed, "broken manifests the checks let through:\n  " + "\n  ".join(missed))


def test_containerfile(tmp):
    text = open(CONTAINERFILE).read()
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    froms = [l.split()[1] for l in lines if l.startswith("FROM ")]
    check(froms and all(f.startswith("debian:12") for f in froms),
          "the image is not built on Debian 12: %r" % froms)
    users = [l.split()[1] for l in lines if l.startswith("USER ")]
    check(users and users[-1].split(":")[0] not in ("0", "root"),
          "the image runs as root: USER %r" % users)
    check("libmicrohttpd-dev" in text and "libmicrohttpd12" in text,
          "the image lacks libmicrohttpd (build or runtime)")
    check("libhttp-parser-dev" in text and "libhttp-parser2.9" in text,
          "the image lacks libhttp-parser (build or runtime: the egress proxy's parser)")
    ep = [l for l in lines if l.startswith("ENTRYPOINT ")]
    check(ep and json.loads(ep[-1][len("ENTRYPOINT "):]) == ["/usr/bin/govex", "mcp"],
          "ENTRYPOINT is not govex mcp")
    cmd = [l for l in lines if l.startswith("CMD ")]
    cmd_args = json.loads(cmd[-1][len("CMD "):]) if cmd else []
    dep = [d for d in load(manifests()) if d.get("kind") == "Deployment"][0]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    check(_flag(cmd_args, "--token-file") == _flag(c["args"], "--token-file"),
          "the image's and the Deployment's token paths differ")
    check(re.search(r"^STOPSIGNAL SIGTERM$", text, re.M), "no STOPSIGNAL SIGTERM")


TESTS = [
    ("every manifest validates against the Kubernetes schemas (strict fields)", test_all_valid),
    ("broken manifests fail schema validation (mutations)", test_schema_mutations),
    ("the manifests keep docs/deploy.md's promises", test_promises),
    ("broken manifests break a promise the checks name (mutations)", test_promise_mutations),
    ("the Containerfile: Debian 12, non-root, govex mcp, the same token path",
     test_containerfile),
]


def main():
    print("TAP version 13")
    print("1..%d" % len(TESTS))
    sys.stdout.flush()
    for i, (name, fn) in enumerate(TESTS, 1):
        tmp = tempfile.mkdtemp(prefix="govex-deploy-")
        try:
            fn(tmp)
            print("ok %d - %s" % (i, name))
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e))
        except Failure as e:
            print("not ok %d - %s" % (i, name))
            for line in str(e).splitlines():
                print("# " + line)
        except Exception as e:
            print("not ok %d - %s" % (i, name))
            for line in ("crashed: %r\n%s" % (e, traceback.format_exc())).splitlines():
                print("# " + line)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
