/* SPDX-License-Identifier: MIT */
/*
 * The restricted backend's report: which controls this host lets it enforce (namespaces,
 * no_new_privs and seccomp tried in a throwaway child, Landlock's ABI, the cgroup
 * controllers govex may use), and why each missing one is missing.  `govex backends`
 * shows it; planning refuses a policy that asks for one it lacks.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "restricted.h"

static void unavail(struct govex__report *r, enum govex__control c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void unavail(struct govex__report *r, enum govex__control c, const char *fmt, ...)
{
	struct govex__unavailable *u = &r->unavailable[r->n_unavailable++];
	va_list ap;
	u->control = c;
	va_start(ap, fmt);
	vsnprintf(u->reason, sizeof(u->reason), fmt, ap);
	va_end(ap);
}

void rreport_probe(const struct govex_runtime_options *opts, struct govex__report *r)
{
	memset(r, 0, sizeof(*r));
	bool root = govex__privileged();
	enum govex__step step = GOVEX__STEP_NONE;
	int e = rns_probe(!root, &step);
	if (e < 0 && step != GOVEX_STEP_SECCOMP && step != GOVEX_STEP_NO_NEW_PRIVS) {
		/* Without namespaces (or the mount API) there is no sandbox at all. */
		r->available = false;
		snprintf(r->unavailable_reason, sizeof(r->unavailable_reason),
			 "%s unusable: %s: %s", root ? "namespaces" : "user namespaces",
			 govex__step_name(step), strerror(-e));
		static const enum govex__control sandbox[] = {
		    GOVEX_CTL_NETWORK_DENY,	  GOVEX_CTL_FS_READ_ALLOWLIST,
		    GOVEX_CTL_FS_WRITE_ALLOWLIST, GOVEX_CTL_SUBPROCESS_DENY,
		    GOVEX_CTL_SYSCALL_FILTER,	  GOVEX_CTL_PROCESS_TREE_KILL,
		    GOVEX_CTL_NETWORK_ALLOWLIST,  GOVEX_CTL_FS_DENY,
		};
		for (size_t i = 0; i < ARRAY_SIZE(sandbox); i++)
			unavail(r, sandbox[i], "%s", r->unavailable_reason);
		return;
	}
	r->available = true;
	r->enforced = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) |
		      CTL(FRESH_WORKDIR) | CTL(FD_HYGIENE) | CTL(PROCESS_TREE_KILL) |
		      CTL(NETWORK_DENY) | CTL(FS_READ_ALLOWLIST) | CTL(FS_WRITE_ALLOWLIST) |
		      CTL(FS_DENY) | CTL(MEMORY_PER_PROCESS) | CTL(CPU_TIME_PER_PROCESS) |
		      CTL(OPEN_FILES_PER_PROCESS) | CTL(FILE_SIZE_PER_PROCESS);
	if (e == 0) {
		/* network_allowlist: the run's own network namespace with the proxy's listener
		 * on its loopback (launch.c), and the filter keeping its sockets to AF_INET
		 * and AF_INET6 (seccomp.c) */
		r->enforced |= CTL(SYSCALL_FILTER) | CTL(SUBPROCESS_DENY) | CTL(NO_NEW_PRIVILEGES) |
			       CTL(NETWORK_ALLOWLIST);
	} else {
		const char *why = strerror(-e);
		if (step == GOVEX_STEP_NO_NEW_PRIVS)
			unavail(r, GOVEX_CTL_NO_NEW_PRIVILEGES, "no_new_privs: %s", why);
		else
			r->enforced |= CTL(NO_NEW_PRIVILEGES);
		unavail(r, GOVEX_CTL_SYSCALL_FILTER, "seccomp filters: %s", why);
		unavail(r, GOVEX_CTL_SUBPROCESS_DENY, "needs a seccomp filter: %s", why);
		unavail(r, GOVEX_CTL_NETWORK_ALLOWLIST, "needs a seccomp filter: %s", why);
	}

	/* Landlock is a second wall over the mount namespace's rules: reported as its own
	 * control, enforced only when the kernel's ABI covers every right the ruleset
	 * handles (a partial ruleset does not count). */
	int abi = rlandlock_abi();
	if (abi > 0 && rlandlock_complete(abi))
		r->enforced |= CTL(LANDLOCK);
	else if (abi > 0)
		unavail(r, GOVEX_CTL_LANDLOCK,
			"Landlock ABI %d is partial here (ABI 6 needed for every right): not "
			"counted",
			abi);
	else
		unavail(r, GOVEX_CTL_LANDLOCK, "the kernel has no Landlock: %s", strerror(-abi));

	struct rcg_setup cg;
	rcg_discover(&cg, true, opts ? opts->cgroup : NULL);
	if (cg.source_detail[0]) {
		snprintf(r->cgroup_source, sizeof(r->cgroup_source), "%s",
			 rcg_source_name(cg.source));
		snprintf(r->cgroup_detail, sizeof(r->cgroup_detail), "%s", cg.source_detail);
	} else if (cg.p[RCG_MEM].version == 1 || cg.p[RCG_PIDS].version == 1) {
		snprintf(r->cgroup_source, sizeof(r->cgroup_source), "v1");
		snprintf(r->cgroup_detail, sizeof(r->cgroup_detail),
			 "the host's cgroup v1 hierarchies, below govex's own cgroups");
	}
	static const struct {
		int res;
		enum govex__control c;
	} agg[] = {
	    {RCG_MEM, GOVEX_CTL_MEMORY_AGGREGATE},
	    {RCG_PIDS, GOVEX_CTL_PIDS_AGGREGATE},
	    {RCG_CPU, GOVEX_CTL_CPU_TIME_AGGREGATE},
	};
	for (size_t i = 0; i < ARRAY_SIZE(agg); i++) {
		if (cg.p[agg[i].res].version)
			r->enforced |= (govex__ctlset)1 << agg[i].c;
		else
			unavail(r, agg[i].c, "%s", cg.p[agg[i].res].reason);
	}
	rcg_setup_free(&cg);
}

/* Every control rreport_probe() can report: a cached report is intersected with this
 * (registry.c), so a cache can never claim more than this code enforces.  Keep in step
 * with rreport_probe(); a report with a control outside it is not cached. */
govex__ctlset govex__restricted_max_controls(void)
{
	return CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) | CTL(FRESH_WORKDIR) |
	       CTL(FD_HYGIENE) | CTL(PROCESS_TREE_KILL) | CTL(NETWORK_DENY) |
	       CTL(FS_READ_ALLOWLIST) | CTL(FS_WRITE_ALLOWLIST) | CTL(FS_DENY) |
	       CTL(MEMORY_PER_PROCESS) | CTL(CPU_TIME_PER_PROCESS) | CTL(OPEN_FILES_PER_PROCESS) |
	       CTL(FILE_SIZE_PER_PROCESS) | CTL(SYSCALL_FILTER) | CTL(SUBPROCESS_DENY) |
	       CTL(NO_NEW_PRIVILEGES) | CTL(LANDLOCK) | CTL(MEMORY_AGGREGATE) |
	       CTL(PIDS_AGGREGATE) | CTL(CPU_TIME_AGGREGATE) | CTL(NETWORK_ALLOWLIST);
}
