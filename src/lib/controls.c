/* SPDX-License-Identifier: MIT */
/* Control names (one table in internal.h). */
#include <string.h>

#include "runtime.h"

static const char *const control_names[] = {
#define GOVEX__CTLNAME(id, name) name,
    GOVEX__CONTROLS(GOVEX__CTLNAME)
#undef GOVEX__CTLNAME
};

const char *govex__control_name(enum govex__control c)
{
	return (unsigned)c < GOVEX__CTL_COUNT ? control_names[c] : "unknown";
}

json_t *govex__ctlset_json(govex__ctlset set)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < GOVEX__CTL_COUNT; i++)
		if (set & ((govex__ctlset)1 << i))
			json_array_append_new(a, json_string(control_names[i]));
	return a;
}

int govex__control_from_name(const char *name)
{
	for (unsigned i = 0; name && i < GOVEX__CTL_COUNT; i++)
		if (strcmp(control_names[i], name) == 0)
			return (int)i;
	return -1;
}

/*
 * The controls one run had (DESIGN.md "Trust boundaries": a result claims what this run
 * had, never the backend's whole list).  A control is listed only when the backend
 * enforces it on this host (rep->enforced) AND it applied to this run:
 *  - the plan's required set (the policy and the run's own limits);
 *  - always-on controls of every run: wall_time, output_bounds, env_allowlist,
 *    process_tree_kill, fd_hygiene;
 *  - network_deny / subprocess_deny only when the policy denies them;
 *  - fs_read_allowlist / fs_write_allowlist only when the policy restricts them
 *    (a root of "/" is no allowlist);
 *  - fresh_workdir only for a fresh workdir (not a named one);
 *  - memory/cpu/pids aggregate and every per-process limit only when that limit was set
 *    for this run;
 *  - syscall_filter, no_new_privileges, landlock whenever the backend reports them: a
 *    backend that enforces them applies them to every run it starts.
 * Used for the results of run, exec and call (govex__run_result).
 */
govex__ctlset govex__run_controls(const struct govex__report *rep, const struct govex_policy *p,
				  const struct decision *d)
{
	govex__ctlset applied = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) |
				CTL(PROCESS_TREE_KILL) | CTL(FD_HYGIENE) | CTL(SYSCALL_FILTER) |
				CTL(NO_NEW_PRIVILEGES) | CTL(LANDLOCK);
	const struct govex__limits *l = &d->limits;
	if (!d->workdir)
		applied |= CTL(FRESH_WORKDIR);
	if (p->net_allow)
		applied |= CTL(NETWORK_ALLOWLIST);
	else if (!p->network)
		applied |= CTL(NETWORK_DENY);
	if (!p->subprocess)
		applied |= CTL(SUBPROCESS_DENY);
	if (!govex__strv_contains(p->read_roots, "/"))
		applied |= CTL(FS_READ_ALLOWLIST);
	if (!govex__strv_contains(p->write_roots, "/"))
		applied |= CTL(FS_WRITE_ALLOWLIST);
	if (l->memory_bytes)
		applied |= CTL(MEMORY_AGGREGATE) | CTL(MEMORY_PER_PROCESS);
	if (l->cpu_ms)
		applied |= CTL(CPU_TIME_AGGREGATE) | CTL(CPU_TIME_PER_PROCESS);
	if (l->processes)
		applied |= CTL(PIDS_AGGREGATE);
	if (l->open_files)
		applied |= CTL(OPEN_FILES_PER_PROCESS);
	if (l->file_size_bytes)
		applied |= CTL(FILE_SIZE_PER_PROCESS);
	/* the plan's required set, as far as the backend enforces it (a required control it
	 * does not enforce is never claimed here) */
	applied |= d->required;
	return rep->available ? rep->enforced & applied : 0;
}
