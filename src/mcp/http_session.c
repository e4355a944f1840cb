/* SPDX-License-Identifier: MIT */
/*
 * HTTP sessions (http.h) of the legacy protocol versions: made by initialize, named by
 * Mcp-Session-Id (256 random bits from getrandom), bounded in number (SESSIONS_MAX: past
 * it the one unused longest is ended) and idle time (SESSION_IDLE_MS), ended by DELETE;
 * ending one cancels its calls.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http.h"

#define SESSIONS_MAX	1024
#define SESSION_IDLE_MS ((uint64_t)30 * 60 * 1000)

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- sessions */

void session_unref(struct http_server *h, struct hsession *ss)
{
	if (!ss)
		return;
	pthread_mutex_lock(&h->sess_lock);
	bool last = --ss->refs == 0;
	pthread_mutex_unlock(&h->sess_lock);
	if (!last)
		return;
	pthread_mutex_destroy(&ss->lock);
	free(ss->s.client_name);
	free(ss);
}

/* unlinks ss (sess_lock held); the caller cancels its calls and drops the table's ref */
static void session_unlink(struct http_server *h, struct hsession *ss)
{
	for (struct hsession **pp = &h->sessions; *pp; pp = &(*pp)->next)
		if (*pp == ss) {
			*pp = ss->next;
			h->n_sessions--;
			ss->gone = true;
			return;
		}
}

/* The session with that id, referenced; NULL unknown, ended or expired.  Every id is
 * compared in full (constant time), so timing tells nothing of a live id. */
struct hsession *session_find(struct http_server *h, const char *id)
{
	struct hsession *found = NULL;
	size_t il = strlen(id);
	pthread_mutex_lock(&h->sess_lock);
	for (struct hsession *ss = h->sessions; ss; ss = ss->next)
		if (guard_ct_equal(id, il, ss->id, strlen(ss->id)))
			found = ss;
	if (found) {
		found->refs++;
		found->last_ms = now_ms();
		found->used = ++h->sess_clock;
	}
	pthread_mutex_unlock(&h->sess_lock);
	return found;
}

struct hsession *session_new(void)
{
	struct hsession *ss = calloc(1, sizeof(*ss));
	unsigned char rnd[32];
	if (!ss || getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		free(ss);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		sprintf(ss->id + 2 * i, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	ss->s.log_level = -1;
	ss->refs = 1;
	pthread_mutex_init(&ss->lock, NULL);
	return ss;
}

/* Files an initialized session in the table (which takes a reference); false when the
 * table is full even after expiring idle sessions. */
bool session_add(struct http_server *h, struct hsession *ss)
{
	struct hsession *evicted = NULL;
	pthread_mutex_lock(&h->sess_lock);
	if (h->n_sessions >= SESSIONS_MAX) {
		/* full: the session unused longest goes (its client gets 404 and initializes
		 * again), unless every one has a request in flight */
		for (struct hsession *c = h->sessions; c; c = c->next)
			if (c->refs == 1 && (!evicted || c->used < evicted->used))
				evicted = c;
		if (evicted)
			session_unlink(h, evicted);
	}
	bool ok = h->n_sessions < SESSIONS_MAX;
	if (ok) {
		ss->next = h->sessions;
		h->sessions = ss;
		h->n_sessions++;
		ss->refs++;
		ss->last_ms = now_ms();
		ss->used = ++h->sess_clock;
	}
	pthread_mutex_unlock(&h->sess_lock);
	if (evicted) {
		if (h->srv.pool)
			mcp_pool_cancel_owner(h->srv.pool, evicted);
		session_unref(h, evicted);
	}
	return ok;
}

/* Ends ss (DELETE, expiry): cancels its calls, drops the table's reference. */
void session_end(struct http_server *h, struct hsession *ss)
{
	pthread_mutex_lock(&h->sess_lock);
	bool was = !ss->gone;
	if (was)
		session_unlink(h, ss);
	pthread_mutex_unlock(&h->sess_lock);
	if (!was)
		return;
	if (h->srv.pool)
		mcp_pool_cancel_owner(h->srv.pool, ss);
	session_unref(h, ss);
}

void sessions_expire(struct http_server *h, bool all)
{
	uint64_t now = now_ms();
	for (;;) {
		struct hsession *victim = NULL;
		pthread_mutex_lock(&h->sess_lock);
		for (struct hsession *ss = h->sessions; ss && !victim; ss = ss->next)
			if (all || (ss->refs == 1 && now - ss->last_ms > SESSION_IDLE_MS))
				victim = ss;
		if (victim)
			session_unlink(h, victim); /* the table's reference is ours now */
		pthread_mutex_unlock(&h->sess_lock);
		if (!victim)
			return;
		if (h->srv.pool)
			mcp_pool_cancel_owner(h->srv.pool, victim);
		session_unref(h, victim);
	}
}
