/* SPDX-License-Identifier: MIT */
/* govex backends [--json] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* How each backend enforces a control it reports (what `govex backends` prints beside
 * the name; govex-policy(5) CONTROLS says the same). */
static const struct {
	const char *backend, *control, *how;
} how[] = {
    {"controlled", "wall_time", "deadline, then SIGKILL of the process group"},
    {"controlled", "output_bounds",
     "pipes read and bounded by govex (16 MiB past a bound "
     "ends the run)"},
    {"controlled", "env_allowlist", "a built environment, nothing else inherited"},
    {"controlled", "fresh_workdir", "a new 0700 host directory, removed after"},
    {"controlled", "process_tree_kill", "a subreaper shim kills what is left"},
    {"controlled", "fd_hygiene", "every descriptor but 0-2 closed"},
    {"controlled", "memory_per_process", "RLIMIT_AS"},
    {"controlled", "cpu_time_per_process", "RLIMIT_CPU"},
    {"controlled", "open_files_per_process", "RLIMIT_NOFILE"},
    {"controlled", "file_size_per_process", "RLIMIT_FSIZE"},
    {"restricted", "wall_time", "deadline, then the PID namespace is killed"},
    {"restricted", "output_bounds",
     "pipes read and bounded by govex (16 MiB past a bound "
     "ends the run)"},
    {"restricted", "env_allowlist", "a built environment, nothing else inherited"},
    {"restricted", "fresh_workdir", "a tmpfs of the run's own at /govex/work"},
    {"restricted", "process_tree_kill", "PID namespace: its init (the shim) kills all"},
    {"restricted", "fd_hygiene", "every descriptor but 0-2 (and call mode's 3) closed"},
    {"restricted", "network_deny", "network namespace; socket() refused by seccomp"},
    {"restricted", "fs_read_allowlist", "mount namespace (read-only binds), Landlock"},
    {"restricted", "fs_write_allowlist", "mount namespace, Landlock; noexec"},
    {"restricted", "fs_deny", "mount namespace: an empty mount over each path"},
    {"restricted", "subprocess_deny", "seccomp (no fork); one execve, then none"},
    {"restricted", "memory_aggregate", "a cgroup per run (kernel memory included)"},
    {"restricted", "memory_per_process", "RLIMIT_AS"},
    {"restricted", "cpu_time_aggregate", "a cgroup per run, read by the shim"},
    {"restricted", "cpu_time_per_process", "RLIMIT_CPU"},
    {"restricted", "pids_aggregate", "a cgroup per run (threads included)"},
    {"restricted", "open_files_per_process", "RLIMIT_NOFILE"},
    {"restricted", "file_size_per_process", "RLIMIT_FSIZE"},
    {"restricted", "syscall_filter", "seccomp allowlist (ENOSYS for the rest)"},
    {"restricted", "no_new_privileges", "PR_SET_NO_NEW_PRIVS, no capabilities"},
    {"restricted", "landlock", "a Landlock ruleset over the same paths"},
    {"restricted", "network_allowlist",
     "own network namespace; govex's proxy the only way out; seccomp"},
};

static const char *how_of(const char *backend, const char *control)
{
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++)
		if (strcmp(how[i].backend, backend) == 0 && strcmp(how[i].control, control) == 0)
			return how[i].how;
	return NULL;
}

int cmd_backends(int argc, char **argv)
{
	struct cli_opts o;
	struct cli_opt_error oe;
	if (cli_options_parse(CLI_CMD_BACKENDS, true, argc, argv, &o, &oe) < 0 ||
	    (!o.help && o.n_operands > 0)) {
		cli_error("backends: unknown argument '%s' (see govex backends --help)",
			  oe.kind != CLI_OPTERR_NONE ? oe.arg : o.operands[0]);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(cli_usage_backends, stdout);
		return 0;
	}
	bool json = o.json;
	govex_policy *p = NULL;
	govex_runtime *rt = NULL;
	struct govex_error e = {0};
	char *js = NULL;
	struct govex_runtime_options ro = {.cgroup = getenv("GOVEX_CGROUP")};
	if (govex_policy_preset("trusted", &p, &e) < 0 || govex_runtime_new(p, &ro, &rt, &e) < 0 ||
	    govex_runtime_backends_json(rt, &js) < 0) {
		cli_error("backends: %s", e.message);
		govex_runtime_free(rt);
		govex_policy_free(p);
		return 1;
	}
	if (json) {
		fputs(js, stdout);
	} else {
		json_t *a = json_loads(js, 0, NULL);
		size_t i, k;
		json_t *b, *c;
		json_array_foreach(a, i, b)
		{
			printf("%s (%s): %s\n", json_string_value(json_object_get(b, "name")),
			       json_string_value(json_object_get(b, "backend_version")),
			       json_is_true(json_object_get(b, "available")) ? "available"
									     : "unavailable");
			const char *name = json_string_value(json_object_get(b, "name"));
			printf("  enforces:\n");
			json_array_foreach(json_object_get(b, "enforced"), k, c)
			{
				const char *h = how_of(name, json_string_value(c));
				printf("    %-24s %s\n", json_string_value(c), h ? h : "");
			}
			json_t *sa = json_object_get(b, "syscalls_allowed");
			if (json_is_integer(sa))
				printf("  syscalls allowed: %lld of this architecture's\n",
				       (long long)json_integer_value(sa));
			json_t *cg = json_object_get(b, "cgroups");
			if (cg)
				printf("  cgroups: %s: %s\n",
				       json_string_value(json_object_get(cg, "source")),
				       json_string_value(json_object_get(cg, "detail")));
			json_array_foreach(json_object_get(b, "unavailable"), k, c)
			    printf("  not enforced: %s (%s)\n",
				   json_string_value(json_object_get(c, "control")),
				   json_string_value(json_object_get(c, "reason")));
		}
		json_decref(a);
	}
	free(js);
	govex_runtime_free(rt);
	govex_policy_free(p);
	return 0;
}
