/* SPDX-License-Identifier: MIT */
/* govex.audit/v1 events (audit.c): one JSON object a line, to a callback and/or an fd;
 * and the runtime's events of a request (received, refused, finished). */
#ifndef GOVEX_AUDIT_H
#define GOVEX_AUDIT_H

#include "internal.h"

struct govex__audit {
	govex_audit_fn fn;
	void *userdata;
	int fd;
	pthread_mutex_t *lock; /* serialises fd writes */
};
/* Emits one govex.audit/v1 event; takes fields (an object or NULL).  Never put code,
 * stdin, output or environment values in fields. */
void govex__audit(const struct govex__audit *a, const char *run_id, const char *event,
		  json_t *fields);

/* The runtime's audit events (audit.c): a request received, a refusal, a finish. */
void govex__audit_refused(govex_runtime *rt, const char *run_id, govex_result *res);
void govex__audit_received(govex_runtime *rt, const char *run_id, const char *kind,
			   const struct govex_request *req);
/* Audits the finish event of a result (plan NULL: refused). */
void govex__audit_finish(govex_runtime *rt, const char *run_id, govex_result *res,
			 const govex_plan *plan);

#endif
