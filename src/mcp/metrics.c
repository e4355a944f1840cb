/* SPDX-License-Identifier: MIT */
/*
 * Counters for GET /metrics (Prometheus text format 0.0.4): runs by status and their
 * durations (from the pool, calls.c), refusals by control (the result's missing_controls
 * and denied_by_policy diagnostics), HTTP answers by code and rejections by reason
 * (http.c); runs in flight and warm templates come from govex_runtime_stats_json; the
 * queue (its depth, waits, clients, refusals) from the pool (mcp_pool_stats).
 * Labels come from small fixed sets or the library's own names; a table is bounded
 * (LABELS_MAX) and anything past it counts under "other".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

#define LABELS_MAX 32

struct counter_set {
	char *name[LABELS_MAX];
	uint64_t n[LABELS_MAX];
	size_t count;
	uint64_t other;
};

static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct mcp_metrics {
	pthread_mutex_t lock;
	struct counter_set runs, refusals, http, rejected;
	uint64_t bucket[N_BUCKETS];
	uint64_t dur_count;
	double dur_sum;
	struct mcp_pool *pool; /* attached; detached (under lock) before it is freed */
};

static bool label_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void count(struct counter_set *c, const char *label)
{
	if (!label_ok(label)) {
		c->other++;
		return;
	}
	for (size_t i = 0; i < c->count; i++)
		if (strcmp(c->name[i], label) == 0) {
			c->n[i]++;
			return;
		}
	if (c->count == LABELS_MAX || !(c->name[c->count] = strdup(label))) {
		c->other++;
		return;
	}
	c->n[c->count++] = 1;
}

int mcp_metrics_new(struct mcp_metrics **ret)
{
	struct mcp_metrics *mt = calloc(1, sizeof(*mt));
	if (!mt)
		return -1;
	pthread_mutex_init(&mt->lock, NULL);
	*ret = mt;
	return 0;
}

static void set_free(struct counter_set *c)
{
	for (size_t i = 0; i < c->count; i++)
		free(c->name[i]);
}

void mcp_metrics_free(struct mcp_metrics *mt)
{
	if (!mt)
		return;
	set_free(&mt->runs);
	set_free(&mt->refusals);
	set_free(&mt->http);
	set_free(&mt->rejected);
	pthread_mutex_destroy(&mt->lock);
	free(mt);
}

void mcp_metrics_run(struct mcp_metrics *mt, json_t *doc, uint64_t duration_us)
{
	const char *st = json_string_value(json_object_get(doc, "status"));
	double s = (double)duration_us / 1e6;
	pthread_mutex_lock(&mt->lock);
	count(&mt->runs, st ? st : "no_result");
	for (size_t i = 0; i < N_BUCKETS; i++)
		if (s <= buckets[i])
			mt->bucket[i]++;
	mt->dur_count++;
	mt->dur_sum += s;
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(doc, "diagnostics"), i, d)
	{
		const char *code = json_string_value(json_object_get(d, "code"));
		if (!code || (strcmp(code, "missing_controls") != 0 &&
			      strcmp(code, "denied_by_policy") != 0))
			continue;
		json_t *ctl = json_object_get(d, "controls");
		if (!json_array_size(ctl))
			count(&mt->refusals, "unspecified");
		size_t k;
		json_t *c;
		json_array_foreach(ctl, k, c) count(&mt->refusals, json_string_value(c));
	}
	pthread_mutex_unlock(&mt->lock);
}

void mcp_metrics_http(struct mcp_metrics *mt, unsigned code, const char *rejected)
{
	char c[16];
	snprintf(c, sizeof(c), "%u", code);
	pthread_mutex_lock(&mt->lock);
	count(&mt->http, c);
	if (rejected)
		count(&mt->rejected, rejected);
	pthread_mutex_unlock(&mt->lock);
}

void mcp_metrics_attach(struct mcp_metrics *mt, struct mcp_pool *pool)
{
	if (!mt)
		return;
	pthread_mutex_lock(&mt->lock);
	mt->pool = pool;
	pthread_mutex_unlock(&mt->lock);
}

static void put_gauge(FILE *f, const char *name, const char *help, unsigned long long v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, v);
}

static void put_token_client(void *ud, const char *name, unsigned queued, unsigned running)
{
	FILE *f = ud;
	fprintf(f,
		"govex_client_calls{client=\"%s\",state=\"waiting\"} %u\n"
		"govex_client_calls{client=\"%s\",state=\"running\"} %u\n",
		name, queued, name, running);
}

/* The scheduler's queue: depth, waits, clients, bounds, refusals. */
static void put_queue(FILE *f, struct mcp_pool *pool)
{
	struct mcp_pool_stats q;
	mcp_pool_stats(pool, &q);
	put_gauge(f, "govex_calls_queued", "Tool calls waiting for a running slot.", q.queued);
	put_gauge(f, "govex_calls_running", "Tool calls holding a running slot.", q.running);
	put_gauge(f, "govex_call_slots", "Running slots (--max-concurrent).", q.slots);
	put_gauge(f, "govex_calls_queued_bytes", "Argument bytes of the calls waiting.",
		  q.queued_bytes);
	fputs("# HELP govex_queue_clients Clients with calls waiting or running.\n"
	      "# TYPE govex_queue_clients gauge\n",
	      f);
	fprintf(f, "govex_queue_clients{state=\"waiting\"} %u\n", q.clients_waiting);
	fprintf(f, "govex_queue_clients{state=\"running\"} %u\n", q.clients_running);
	fputs("# HELP govex_queue_client_calls_max The most calls one client has, waiting or "
	      "running.\n# TYPE govex_queue_client_calls_max gauge\n",
	      f);
	fprintf(f, "govex_queue_client_calls_max{state=\"waiting\"} %u\n", q.client_queued_max);
	fprintf(f, "govex_queue_client_calls_max{state=\"running\"} %u\n", q.client_running_max);
	fputs("# HELP govex_queue_limit The queue's bounds: calls per client (--max-queued), "
	      "calls in all, argument bytes, wait seconds (--queue-timeout).\n"
	      "# TYPE govex_queue_limit gauge\n",
	      f);
	fprintf(f,
		"govex_queue_limit{bound=\"client_calls\"} %zu\n"
		"govex_queue_limit{bound=\"calls\"} %zu\n"
		"govex_queue_limit{bound=\"bytes\"} %zu\n"
		"govex_queue_limit{bound=\"wait_seconds\"} %llu\n",
		q.lim.client_max, q.lim.total_max, q.lim.bytes_max,
		q.lim.timeout_ms == UINT64_MAX ? 0ULL
					       : (unsigned long long)(q.lim.timeout_ms / 1000));
	fputs("# HELP govex_queue_rejected_total Calls refused at a bound of the queue (429) or "
	      "answered after waiting past its time limit.\n"
	      "# TYPE govex_queue_rejected_total counter\n",
	      f);
	fprintf(f,
		"govex_queue_rejected_total{reason=\"client_calls\"} %llu\n"
		"govex_queue_rejected_total{reason=\"calls\"} %llu\n"
		"govex_queue_rejected_total{reason=\"bytes\"} %llu\n"
		"govex_queue_rejected_total{reason=\"wait_timeout\"} %llu\n",
		(unsigned long long)q.rejected_client, (unsigned long long)q.rejected_total,
		(unsigned long long)q.rejected_bytes, (unsigned long long)q.expired);
	/* by name only the clients of --client-tokens: their names are the operator's
	 * ([A-Za-z0-9._-], at most 1024); a session or an address never is a label */
	fputs("# HELP govex_client_calls Calls of each --client-tokens client with calls, "
	      "waiting or running.\n# TYPE govex_client_calls gauge\n",
	      f);
	mcp_pool_clients(pool, "token ", 1024, put_token_client, f);
	fputs("# HELP govex_queue_wait_seconds How long calls waited for a running slot.\n"
	      "# TYPE govex_queue_wait_seconds histogram\n",
	      f);
	for (size_t i = 0; i < MCP_WAIT_BUCKETS; i++)
		fprintf(f, "govex_queue_wait_seconds_bucket{le=\"%g\"} %llu\n", q.wait_bounds[i],
			(unsigned long long)q.wait_bucket[i]);
	fprintf(f,
		"govex_queue_wait_seconds_bucket{le=\"+Inf\"} %llu\n"
		"govex_queue_wait_seconds_sum %.3f\n"
		"govex_queue_wait_seconds_count %llu\n",
		(unsigned long long)q.wait_count, (double)q.wait_sum_ms / 1000,
		(unsigned long long)q.wait_count);
}

static void put_set(FILE *f, const char *metric, const char *label, const struct counter_set *c)
{
	for (size_t i = 0; i < c->count; i++)
		fprintf(f, "%s{%s=\"%s\"} %llu\n", metric, label, c->name[i],
			(unsigned long long)c->n[i]);
	if (c->other)
		fprintf(f, "%s{%s=\"other\"} %llu\n", metric, label, (unsigned long long)c->other);
}

static long long stat_int(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(b ? json_object_get(o, a) : o, b ? b : a);
	return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

char *mcp_metrics_render(struct mcp_metrics *mt, govex_runtime *rt, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	char *stats = NULL;
	json_t *st = NULL;
	if (govex_runtime_stats_json(rt, &stats) == 0) {
		json_error_t e;
		st = json_loads(stats, 0, &e);
	}
	free(stats);
	pthread_mutex_lock(&mt->lock);
	fputs("# HELP govex_runs_total Tool calls finished, by the result's status.\n"
	      "# TYPE govex_runs_total counter\n",
	      f);
	put_set(f, "govex_runs_total", "status", &mt->runs);
	fputs("# HELP govex_run_duration_seconds Tool call duration (queue excluded).\n"
	      "# TYPE govex_run_duration_seconds histogram\n",
	      f);
	for (size_t i = 0; i < N_BUCKETS; i++)
		fprintf(f, "govex_run_duration_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
			(unsigned long long)mt->bucket[i]);
	fprintf(f,
		"govex_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		"govex_run_duration_seconds_sum %.6f\n"
		"govex_run_duration_seconds_count %llu\n",
		(unsigned long long)mt->dur_count, mt->dur_sum, (unsigned long long)mt->dur_count);
	fputs("# HELP govex_refusals_total Controls named by refusals (missing_controls) and "
	      "denials (denied_by_policy).\n# TYPE govex_refusals_total counter\n",
	      f);
	put_set(f, "govex_refusals_total", "control", &mt->refusals);
	fputs("# HELP govex_http_requests_total HTTP requests answered, by status code.\n"
	      "# TYPE govex_http_requests_total counter\n",
	      f);
	put_set(f, "govex_http_requests_total", "code", &mt->http);
	fputs("# HELP govex_http_rejected_total HTTP requests refused by a control, by reason.\n"
	      "# TYPE govex_http_rejected_total counter\n",
	      f);
	put_set(f, "govex_http_rejected_total", "reason", &mt->rejected);
	if (mt->pool)
		put_queue(f, mt->pool); /* pool lock inside ours: never the other way round */
	pthread_mutex_unlock(&mt->lock);
	fprintf(f,
		"# HELP govex_runs_in_flight Runs in flight in the runtime.\n"
		"# TYPE govex_runs_in_flight gauge\n"
		"govex_runs_in_flight %lld\n"
		"# HELP govex_warm_templates Warm templates ready.\n"
		"# TYPE govex_warm_templates gauge\n"
		"govex_warm_templates %lld\n",
		stat_int(st, "runs_in_flight", NULL), stat_int(st, "warm", "templates"));
	json_decref(st);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
