/* SPDX-License-Identifier: MIT */
/*
 * The tool provider (govex_toolset_*, govex.h): the model tools as data and a call.
 *
 *   tools.c          the catalogue: run_python_snippet and one tool per eligible function
 *                    of a module, descriptions derived from the effective policy
 *   tools_invoke.c   govex_toolset_invoke: arguments checked, the run or call made
 *   tools_result.c   the CallToolResult: the text for the model, images and resources,
 *                    structuredContent and isError
 * A snippet is a REPL run (repl.c); schemas are the inspection's; arguments are checked
 * by the library's one validator (schema.c).
 */
#ifndef GOVEX_TOOLS_H
#define GOVEX_TOOLS_H

#include "internal.h"

#define GOVEX__SNIPPET_TOOL "run_python_snippet"

/* What the tools say and check, read once from the plan of an empty snippet (the
 * effective policy: interpreter, limits, network, subprocess, files). */
struct govex__tool_facts {
	uint64_t code_bytes, stdin_bytes, wall_ms, cpu_ms, memory_bytes;
	uint64_t stdout_bytes, stderr_bytes, call_input_bytes, call_output_bytes;
	bool network, subprocess, site;
	json_t *read, *write; /* arrays of paths (new references) */
	json_t *net_allow;    /* filtered networking: the destinations (array), or NULL */
	json_t *dists;	      /* the plan's packages.distributions ("name==version"), or NULL */
	json_t *preload;      /* python.preload (array), or NULL */
	bool venv;
	bool sanitized;	 /* results.disclosure: a call's output withheld */
	char python[96]; /* "Python 3.11.7 (python3.11)", or "Python 3" when unknown */
	char backend[32];
};

struct govex__tool {
	char *name;
	bool snippet;
	json_t *def;	      /* the MCP Tool object */
	json_t *input_schema; /* borrowed from def */
	size_t module;	      /* function tools: index in modules */
	bool own_files;	      /* the function has a parameter named "files" */
};

struct govex__tool_module {
	char *path; /* absolute */
	char *data; /* the bytes read when the toolset was made: calls are planned on them */
	size_t len;
	bool notebook;
};

struct govex_toolset {
	govex_runtime *rt;
	struct govex__tool_facts facts;
	struct govex__tool *tools; /* sorted by name */
	size_t n_tools;
	struct govex__tool_module *modules;
	size_t n_modules;
};

const struct govex__tool *govex__toolset_find(const govex_toolset *ts, const char *name);

/* tools_result.c: the CallToolResult (JSON text) for a govex.result/v1 document: doc
 * (taken) is read for the text, doc_text (its exact bytes) becomes structuredContent, the
 * files of res (may be NULL) image and resource content.  NULL on ENOMEM. */
char *govex__tool_result(json_t *doc, const char *doc_text, size_t doc_len,
			 const govex_result *res);
/* The CallToolResult of a refusal before anything ran (invalid arguments...). */
char *govex__tool_refusal(enum govex_status status, const char *code, const char *msg);
/* The JSON Schema of a govex.result/v1 document.  New reference. */
json_t *govex__tool_result_schema(void);

#endif
