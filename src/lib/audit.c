/* SPDX-License-Identifier: MIT */
/* govex.audit/v1 events: one JSON object a line, to a callback and/or an fd.  Events carry
 * names, digests, statuses and usage; never code, stdin, output or environment values. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

void govex__audit(const struct govex__audit *a, const char *run_id, const char *event,
		  json_t *fields)
{
	if (!a || (!a->fn && a->fd < 0)) {
		json_decref(fields);
		return;
	}
	json_t *o = fields ? fields : json_object();
	struct timespec ts;
	struct tm tm;
	char when[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%03ldZ", ts.tv_nsec / 1000000);
	json_object_set_new(o, "version", json_string(GOVEX_AUDIT_VERSION));
	json_object_set_new(o, "event", json_string(event));
	json_object_set_new(o, "run_id", json_string(run_id));
	json_object_set_new(o, "time", json_string(when));
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!line)
		return;
	size_t len = strlen(line);
	if (a->fn)
		a->fn(a->userdata, line, len);
	if (a->fd >= 0) {
		/* one write per line: appends from concurrent runs do not interleave */
		line[len] = '\n';
		if (a->lock)
			pthread_mutex_lock(a->lock);
		size_t off = 0;
		while (off < len + 1) {
			ssize_t w = write(a->fd, line + off, len + 1 - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		if (a->lock)
			pthread_mutex_unlock(a->lock);
	}
	free(line);
}
