/* SPDX-License-Identifier: MIT */
/* The runtime's private pieces: struct govex_runtime, and the headers of the concepts
 * runtime.c, request.c, plan.c, registry.c, approval.c, audit.c and run.c own, which
 * the jobs (job.h: run.c, exec.c, call.c, inspect.c) use together. */
#ifndef GOVEX_RUNTIME_H
#define GOVEX_RUNTIME_H

#include "approval.h"
#include "audit.h"
#include "internal.h"
#include "packages.h"
#include "plan.h"
#include "registry.h"
#include "request.h"
#include "run.h"

#define METADATA_MAX	  64
#define METADATA_ITEM_MAX 1024

struct govex_runtime {
	govex_policy *policy;
	struct govex_runtime_options opts;
	char *probe_cache_dir, *backend, *cgroup;
	pthread_mutex_t lock;
	pthread_mutex_t audit_lock;
	struct govex__audit audit;
	bool probed;
	bool swept; /* host workdirs of dead runs swept once (govex__launch) */
	int probe_r;
	struct govex_error probe_err;
	struct govex__interp interp;
	/* the environment's packages, resolved once (planning.c), when the interpreter is a
	 * venv or the policy names its site directories */
	bool pkgs_resolved;
	int pkgs_r;
	struct govex_error pkgs_err;
	struct govex__packages pkgs;
	/* filesystem.deny refused on this host (deny.c, resolved with the probe): code NULL
	 * when not refused; what is masked is rt->interp.deny */
	struct govex__deny_fault deny_fault;
	/* python.preload's first module not found (planning.c, plan_preload: once) */
	bool preload_checked;
	const char *preload_missing;
	struct govex__report reports[8];
	void *states[8];
	bool prepared[8];
	/* call mode: inspections by source digest and module name (an inspection depends
	 * on nothing else but the interpreter, which is the runtime's), so that a server
	 * calling the same module again starts one worker per call, not two */
	struct {
		char *key;
		char *canon;
		size_t len;
	} inspections[16];
	size_t inspections_next;
	/* counters for govex_runtime_stats_json (atomics: runs of several threads) */
	unsigned long runs_in_flight, runs_started;
};

/* The policy's interpreter, probed in the sandbox once per runtime (planning.c); 0 or
 * -errno with err. */
int govex__probe_interp(govex_runtime *rt, struct govex_error *err);
/* govex_runtime_warm without starting anything: each template starts at the first run
 * it serves (the CLI's GOVEX_WARM=1, one-shot runs). */
int govex__runtime_warm_lazy(govex_runtime *rt, struct govex_error *err);

/* The controls this run had: enforced by the backend and applied to this run
 * (controls.c).  Every result of a run, exec or call lists these. */
govex__ctlset govex__run_controls(const struct govex__report *rep, const struct govex_policy *p,
				  const struct decision *d);
void govex__run_id_new(char out[33]);
/* A refusal result carrying the policy digest (result.c). */
govex_result *govex__refusal(govex_runtime *rt, enum govex_status status);

#endif
