/* SPDX-License-Identifier: MIT */
/* The backend registry, in preference order: the lightest backend whose enforced controls
 * cover what a policy requires is chosen, so trusted code is not put in a sandbox it does
 * not ask for, and a policy with denials goes to the backend that can enforce them.  Also
 * the backends' reports: probed once per runtime, the restricted one cached across
 * processes; and each backend's per-runtime state, prepared on first use. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "registry.h"
#include "runtime.h"

const struct govex__backend_ops *const govex__backends[] = {
    &govex__controlled_backend,
    &govex__restricted_backend,
};
const size_t govex__n_backends = ARRAY_SIZE(govex__backends);

/*
 * Backend reports are probed on this host, which costs a few milliseconds (the
 * restricted backend test-creates namespaces and cgroups).  With a cache directory the
 * restricted backend's report is cached across processes (cache.c checks the directory
 * and the file), keyed by everything it depends on: this build of govex, the effective
 * uid, the boot (kernel and sysctls as booted), the caller's cgroup and the runtime's cgroup
 * option.  A stale entry
 * can only be optimistic about a host setting changed since (a sysctl at run time), and
 * then the run fails closed at the step that needs it.
 *
 * A cache may only make govex more careful: the cached report is intersected with
 * everything the restricted code could ever enforce (govex__restricted_max_controls) and
 * with what a cheap look at the host confirms (the Landlock ABI); it can remove
 * controls, never add one.  The controlled backend's report is compiled in (its probe
 * is a couple of syscalls) and never read from disk.
 *
 * One file per (build, euid): its name digests only those, and it is rewritten in place
 * when the rest of the key differs, so the directory does not grow per cgroup path.
 * Files of other builds are pruned beyond the few newest, older formats likewise.
 */
#define BACKENDS_PREFIX "backends-v2-"
#define BACKENDS_KEEP	4

/* this very build of govex: the file holding this code (the library, or a binary it is
 * linked into), by identity, so that a rebuilt probe never reads an old entry */
static char *build_identity(void)
{
	Dl_info dl;
	struct stat st;
	char *id = NULL;
	if (!dladdr((void *)build_identity, &dl) || !dl.dli_fname || stat(dl.dli_fname, &st) < 0)
		return NULL;
	if (asprintf(&id, "govex %s build %llu:%llu:%lld.%09ld uid %u", GOVEX_VERSION_STRING,
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (unsigned)geteuid()) < 0)
		id = NULL;
	return id;
}

static char *report_cache_key(const char *build, const char *cgroup_mode)
{
	char boot[64] = "", *cg = NULL, *key = NULL;
	size_t n;
	struct utsname u;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
	}
	if (!boot[0] || govex__read_file("/proc/self/cgroup", 65536, &cg, &n, NULL) < 0 ||
	    uname(&u) < 0) {
		free(cg);
		return NULL;
	}
	/* one line: newlines of the cgroup file and the boot id become spaces */
	if (asprintf(&key, "%s kernel %s boot %s cgroup %s mode %s", build, u.release, boot, cg,
		     cgroup_mode ? cgroup_mode : "auto") < 0)
		key = NULL;
	for (char *c = key; c && *c; c++)
		if (*c == '\n')
			*c = ' ';
	free(cg);
	return key;
}

/* The backends whose report may come from the cache: restricted only. */
static bool report_cacheable(size_t i)
{
	return strcmp(govex__backends[i]->name, "restricted") == 0;
}

static json_t *reports_doc(const govex_runtime *rt)
{
	json_t *a = json_array();
	for (size_t i = 0; i < govex__n_backends; i++) {
		if (!report_cacheable(i))
			continue;
		const struct govex__report *r = &rt->reports[i];
		json_t *un = json_array();
		for (size_t k = 0; k < r->n_unavailable; k++)
			json_array_append_new(
			    un, json_pack("[s, s]", govex__control_name(r->unavailable[k].control),
					  r->unavailable[k].reason));
		json_array_append_new(
		    a, json_pack("{s:s, s:b, s:s, s:o, s:o, s:s, s:s}", "name",
				 govex__backends[i]->name, "available", r->available, "reason",
				 r->unavailable_reason, "enforced", govex__ctlset_json(r->enforced),
				 "unavailable", un, "cgroup_source", r->cgroup_source,
				 "cgroup_detail", r->cgroup_detail));
	}
	return a;
}

static void report_unavail(struct govex__report *r, enum govex__control c, const char *why)
{
	for (size_t k = 0; k < r->n_unavailable; k++)
		if (r->unavailable[k].control == c)
			return;
	if (r->n_unavailable >= GOVEX__CTL_COUNT)
		return;
	r->unavailable[r->n_unavailable].control = c;
	snprintf(r->unavailable[r->n_unavailable].reason, sizeof(r->unavailable[0].reason), "%s",
		 why);
	r->n_unavailable++;
}

/* What the host shows cheaply now, against a cached report: Landlock's ABI. */
static govex__ctlset live_restricted_mask(void)
{
	govex__ctlset m = ~(govex__ctlset)0;
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* VERSION */);
	if (abi < 6) /* restricted counts Landlock only with ABI 6 (rlandlock_complete) */
		m &= ~CTL(LANDLOCK);
	return m;
}

/* A cached report, made only more careful (see above). */
static void report_sanitize(struct govex__report *r)
{
	govex__ctlset allowed = govex__restricted_max_controls() & live_restricted_mask();
	if (!r->available) {
		r->enforced = 0;
		return;
	}
	govex__ctlset dropped = r->enforced & ~allowed;
	r->enforced &= allowed;
	for (int c = 0; c < GOVEX__CTL_COUNT; c++)
		if (dropped & ((govex__ctlset)1 << c))
			report_unavail(r, (enum govex__control)c,
				       "claimed by a cached report, not confirmed on this host");
}

static bool reports_load(govex_runtime *rt, json_t *a)
{
	size_t want = 0;
	for (size_t i = 0; i < govex__n_backends; i++)
		want += report_cacheable(i);
	if (!json_is_array(a) || json_array_size(a) != want)
		return false;
	struct govex__report got[8];
	size_t idx = 0;
	for (size_t i = 0; i < govex__n_backends && i < ARRAY_SIZE(got); i++) {
		if (!report_cacheable(i))
			continue;
		json_t *o = json_array_get(a, idx++), *e;
		struct govex__report *r = &got[i];
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *why = json_string_value(json_object_get(o, "reason"));
		json_t *av = json_object_get(o, "available");
		size_t k;
		memset(r, 0, sizeof(*r));
		if (!name || strcmp(name, govex__backends[i]->name) != 0 || !why ||
		    !json_is_boolean(av))
			return false;
		r->available = json_is_true(av);
		snprintf(r->unavailable_reason, sizeof(r->unavailable_reason), "%s", why);
		const char *cs = json_string_value(json_object_get(o, "cgroup_source"));
		const char *cd = json_string_value(json_object_get(o, "cgroup_detail"));
		if (!cs || !cd)
			return false; /* an older format */
		snprintf(r->cgroup_source, sizeof(r->cgroup_source), "%s", cs);
		snprintf(r->cgroup_detail, sizeof(r->cgroup_detail), "%s", cd);
		json_array_foreach(json_object_get(o, "enforced"), k, e)
		{
			int c = govex__control_from_name(json_string_value(e));
			if (c < 0)
				return false;
			r->enforced |= (govex__ctlset)1 << c;
		}
		json_array_foreach(json_object_get(o, "unavailable"), k, e)
		{
			int c = govex__control_from_name(json_string_value(json_array_get(e, 0)));
			const char *reason = json_string_value(json_array_get(e, 1));
			if (c < 0 || !reason || r->n_unavailable >= GOVEX__CTL_COUNT)
				return false;
			r->unavailable[r->n_unavailable].control = (enum govex__control)c;
			snprintf(r->unavailable[r->n_unavailable].reason,
				 sizeof(r->unavailable[0].reason), "%s", reason);
			r->n_unavailable++;
		}
		report_sanitize(r);
	}
	for (size_t i = 0; i < govex__n_backends && i < ARRAY_SIZE(got); i++)
		if (report_cacheable(i))
			rt->reports[i] = got[i];
	return true;
}

/* seconds a cached report that lacks controls is believed (see govex__probe_backends) */
#define PESSIMISTIC_REPORT_TTL_S 60

void govex__probe_backends(govex_runtime *rt)
{
	_cleanup_free_ char *build = NULL, *key = NULL, *data = NULL;
	_cleanup_close_ int dfd = -1;
	char name[64] = "";
	bool loaded = false;
	if (rt->probe_cache_dir && (build = build_identity()) &&
	    (key = report_cache_key(build, rt->opts.cgroup)))
		dfd = govex__cache_dir_open(rt->probe_cache_dir, true);
	/* Where runs' cgroups come from is settled now, before anything of the runtime is
	 * forked (a warm template left in the caller's old cgroup could not move its runs
	 * into the new one), whether the report comes from the cache or not; the key above
	 * names the cgroup the process had before. */
	govex__restricted_host_prepare(&rt->opts);
	if (dfd >= 0) {
		char dg[72];
		govex__sha256_digest(build, strlen(build), dg);
		snprintf(name, sizeof(name), BACKENDS_PREFIX "%.16s.json", dg + 7);
		if ((data = govex__cache_get(dfd, name, key, 1 << 20))) {
			json_t *a = json_loads(data, 0, NULL);
			loaded = reports_load(rt, a);
			json_decref(a);
		}
	}
	/* A cached report that lacks a control this build can enforce is believed for a
	 * minute only: it makes govex more careful (runs are refused), but a probe that
	 * failed for a passing reason (or under valgrind, which knows no open_tree) must
	 * not refuse every run of this build until the next boot. */
	for (size_t i = 0; loaded && i < govex__n_backends; i++) {
		const struct govex__report *rep = &rt->reports[i];
		if (!report_cacheable(i) ||
		    (rep->available && (govex__restricted_max_controls() & ~rep->enforced) == 0))
			continue;
		struct stat st;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    time(NULL) - st.st_mtime > PESSIMISTIC_REPORT_TTL_S || st.st_mtime > time(NULL))
			loaded = false;
	}
	bool complete = true;
	for (size_t i = 0; i < govex__n_backends; i++) {
		if (loaded && report_cacheable(i))
			continue;
		govex__backends[i]->probe(&rt->opts, &rt->reports[i]);
		/* a control this build's maximum does not know would be lost by the
		 * cache: do not cache such a report */
		if (report_cacheable(i) &&
		    (rt->reports[i].enforced & ~govex__restricted_max_controls()))
			complete = false;
	}
	if (loaded || dfd < 0 || !complete)
		return;
	json_t *a = reports_doc(rt);
	char *js = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	if (js) {
		govex__cache_put(dfd, name, key, js);
		free(js);
	}
	govex__cache_prune(dfd, BACKENDS_PREFIX, BACKENDS_KEEP);
	/* the old format (one file per cgroup path): never read by this build */
	govex__cache_prune(dfd, "backends-v1-", 2);
}

static json_t *report_json(const struct govex__backend_ops *b, const struct govex__report *r)
{
	/* an unavailable backend lists every control it would have enforced, each with the
	 * reason (every entry names a real control) */
	json_t *un = json_array();
	for (size_t i = 0; i < r->n_unavailable; i++)
		json_array_append_new(un, json_pack("{s:s, s:s}", "control",
						    govex__control_name(r->unavailable[i].control),
						    "reason", r->unavailable[i].reason));
	json_t *o =
	    json_pack("{s:s, s:s, s:s, s:b, s:o, s:o}", "version", GOVEX_BACKEND_VERSION, "name",
		      b->name, "backend_version", b->version, "available", r->available, "enforced",
		      govex__ctlset_json(r->available ? r->enforced : 0), "unavailable", un);
	/* where runs' cgroup v2 cgroups come from (DESIGN.md "Hosts"), where one serves */
	if (o && r->cgroup_source[0])
		json_object_set_new(o, "cgroups",
				    json_pack("{s:s, s:s}", "source", r->cgroup_source, "detail",
					      r->cgroup_detail));
	/* the size of the seccomp allowlist, from this build (not from the cached report) */
	if (o && b == &govex__restricted_backend && r->available &&
	    (r->enforced & ((govex__ctlset)1 << GOVEX_CTL_SYSCALL_FILTER)))
		json_object_set_new(o, "syscalls_allowed",
				    json_integer(govex__restricted_syscalls_allowed()));
	return o;
}

GOVEX_API int govex_runtime_backends_json(govex_runtime *rt, char **ret_json)
{
	if (!rt || !ret_json)
		return -GOVEX_EINVAL;
	_cleanup_json_ json_t *a = json_array();
	for (size_t i = 0; i < govex__n_backends; i++)
		json_array_append_new(a, report_json(govex__backends[i], &rt->reports[i]));
	size_t len;
	return govex__canon(a, ret_json, &len);
}

/* The restricted backend's report says its sandbox works on this host. */
bool govex__sandbox_available(const govex_runtime *rt)
{
	for (size_t i = 0; i < govex__n_backends; i++)
		if (strcmp(govex__backends[i]->name, "restricted") == 0)
			return rt->reports[i].available;
	return false;
}

int govex__backend_state(govex_runtime *rt, size_t i, void **ret, struct govex_error *err)
{
	const struct govex__backend_ops *b = govex__backends[i];
	int r = 0;
	pthread_mutex_lock(&rt->lock);
	if (!rt->prepared[i]) {
		if (b->prepare)
			r = b->prepare(&rt->opts, rt->policy, &rt->interp, &rt->states[i], err);
		if (r == 0)
			rt->prepared[i] = true;
	}
	*ret = rt->states[i];
	pthread_mutex_unlock(&rt->lock);
	return r;
}
