/* SPDX-License-Identifier: MIT */
/*
 * govex mcp: the JSON-RPC dispatch of both protocol eras, shared by the transports (stdio.c,
 * http.c) through the seam of mcp.h (a sink per request, a session per client):
 *
 *   legacy (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25): initialize with version
 *     negotiation, notifications/initialized, ping, logging/setLevel, tools/list,
 *     tools/call;
 *   modern (2026-07-28): every request carries its protocol version and client
 *     capabilities in params._meta; server/discover, tools/list, tools/call; results
 *     carry resultType and the server's identity in _meta.
 *
 * A request with the modern _meta envelope is served statelessly; anything else follows
 * the legacy session (the spec's "dual-era" server).  The transport's thread answers
 * everything but tools/call, which goes to the pool (calls.c) with the request's sink.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"

#define MODERN_VERSION	"2026-07-28"
#define LATEST_LEGACY	"2025-11-25"
#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_INFO	"io.modelcontextprotocol/clientInfo"
#define META_LOGLEVEL	"io.modelcontextprotocol/logLevel"
#define META_SERVERINFO "io.modelcontextprotocol/serverInfo"
#define LIST_TTL_MS	300000
#define BRIEF_MIN	((size_t)64 << 10) /* a message this long is parsed briefly */
#define BRIEF_KEEP	((size_t)4 << 10)  /* its strings longer than this are not kept */

/* newest first: the order of server/discover and of -32022's "supported" */
static const char *const versions[] = {MODERN_VERSION, "2025-11-25", "2025-06-18",
				       "2025-03-26",   "2024-11-05", NULL};

static const char *const log_levels[] = {"debug",    "info",  "notice",	   "warning", "error",
					 "critical", "alert", "emergency", NULL};

static char *encode(json_t *msg)
{
	if (!msg) {
		mcp_log("cannot encode a message (out of memory?)");
		return NULL;
	}
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		mcp_log("cannot encode a message");
	return s;
}

void mcp_send(struct mcp_sink *sink, json_t *msg)
{
	char *s = encode(msg);
	if (s)
		sink->send(sink, s, false);
}

void mcp_send_text(struct mcp_sink *sink, char *s)
{
	sink->send(sink, s, false);
}

void mcp_notify(struct mcp_sink *sink, json_t *msg)
{
	char *s = encode(msg);
	if (s)
		sink->send(sink, s, true);
}

int mcp_log_level(const char *name)
{
	for (int i = 0; name && log_levels[i]; i++)
		if (strcmp(name, log_levels[i]) == 0)
			return i;
	return -1;
}

void mcp_notify_log(struct mcp_sink *sink, int request_level, const char *level, const char *logger,
		    json_t *data)
{
	if (request_level < 0 || mcp_log_level(level) < request_level) {
		json_decref(data);
		return;
	}
	mcp_notify(sink, json_pack("{s:s, s:s, s:{s:s, s:s, s:o}}", "jsonrpc", "2.0", "method",
				   "notifications/message", "params", "level", level, "logger",
				   logger, "data", data ? data : json_null()));
}

static json_t *server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", MCP_SERVER_NAME, "title",
			 "govex: Python under an enforced policy", "version", govex_version());
}

void mcp_stamp_modern(json_t *result)
{
	json_object_set_new(result, "resultType", json_string("complete"));
	json_t *meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVERINFO, server_info());
}

static void reply(struct mcp_msg *m, json_t *id, json_t *result)
{
	m->answered = true;
	mcp_send(m->sink,
		 json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* id NULL: JSON null (the request's id could not be read).  Takes data. */
void mcp_reply_error(struct mcp_sink *sink, json_t *id, int code, const char *message, json_t *data)
{
	json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (!err) /* a message that is not UTF-8 */
		err = json_pack("{s:i, s:s}", "code", code, "message", "invalid message");
	if (data)
		json_object_set_new(err, "data", data);
	mcp_send(sink, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
				 "error", err));
}

static void reply_error(struct mcp_msg *m, json_t *id, int code, const char *message, json_t *data)
{
	m->answered = true;
	mcp_reply_error(m->sink, id, code, message, data);
}

static void reply_errorf(struct mcp_msg *m, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_errorf(struct mcp_msg *m, json_t *id, int code, const char *fmt, ...)
{
	char msg[800];
	va_list ap;
	va_start(ap, fmt);
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_error(m, id, code, msg, NULL);
}

/* ---------------------------------------------------------------- requests */

struct request {
	struct mcp_server *srv;
	struct mcp_msg *m;
	json_t *id;
	const char *method;
	json_t *params; /* object or NULL */
	bool modern;
	json_t *meta; /* params._meta, object or NULL */
	/* the message as sent, and as parsed: a long one's long strings were read as ""
	 * (mcp_json_brief), then the arguments go to the call as the text sent */
	const char *text;
	size_t len;
	bool brief;
};

static json_t *capabilities(void)
{
	return json_pack("{s:{s:b}, s:{}}", "tools", "listChanged", 0, "logging");
}

static json_t *supported_versions(void)
{
	json_t *a = json_array();
	for (size_t i = 0; versions[i]; i++)
		json_array_append_new(a, json_string(versions[i]));
	return a;
}

static bool legacy_version(const char *v)
{
	for (size_t i = 1; versions[i]; i++)
		if (strcmp(v, versions[i]) == 0)
			return true;
	return false;
}

static void do_initialize(struct request *rq)
{
	struct mcp_server *srv = rq->srv;
	struct mcp_msg *m = rq->m;
	struct mcp_session *ss = m->sess;
	json_t *pv = json_object_get(rq->params, "protocolVersion");
	if (!json_is_string(pv)) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "initialize: params.protocolVersion must be a string", NULL);
		return;
	}
	if (ss->initialized) {
		reply_error(m, rq->id, RPC_INVALID_REQUEST,
			    "initialize: the session is already initialized", NULL);
		return;
	}
	/* the client's version when we speak it, else our latest handshake version */
	const char *want = json_string_value(pv);
	snprintf(ss->version, sizeof(ss->version), "%s",
		 legacy_version(want) ? want : LATEST_LEGACY);
	const char *name =
	    json_string_value(json_object_get(json_object_get(rq->params, "clientInfo"), "name"));
	free(ss->client_name);
	ss->client_name = name ? strndup(name, 100) : NULL;
	ss->initialized = true;
	json_t *info = server_info();
	if (strcmp(ss->version, "2025-06-18") < 0)
		json_object_del(info, "title");
	reply(m, rq->id,
	      json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", ss->version, "capabilities",
			capabilities(), "serverInfo", info, "instructions", srv->instructions));
}

static void do_discover(struct request *rq)
{
	struct mcp_server *srv = rq->srv;
	struct mcp_msg *m = rq->m;
	json_t *r = json_pack("{s:o, s:o, s:s, s:i, s:s}", "supportedVersions",
			      supported_versions(), "capabilities", capabilities(), "instructions",
			      srv->instructions, "ttlMs", LIST_TTL_MS, "cacheScope", "private");
	mcp_stamp_modern(r);
	reply(m, rq->id, r);
}

static void do_tools_list(struct request *rq)
{
	struct mcp_server *srv = rq->srv;
	struct mcp_msg *m = rq->m;
	if (json_object_get(rq->params, "cursor")) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "tools/list: invalid cursor (the list has one page)", NULL);
		return;
	}
	json_t *r = json_pack("{s:O}", "tools", srv->tools);
	if (rq->modern) {
		/* the list is fixed for the life of the process (modules are bound at start) */
		json_object_set_new(r, "ttlMs", json_integer(LIST_TTL_MS));
		json_object_set_new(r, "cacheScope", json_string("private"));
		mcp_stamp_modern(r);
	}
	reply(m, rq->id, r);
}

static bool find_tool(struct mcp_server *srv, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(srv->tools, i, t)
	{
		const char *n = json_string_value(json_object_get(t, "name"));
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static void do_tools_call(struct request *rq)
{
	struct mcp_server *srv = rq->srv;
	struct mcp_msg *m = rq->m;
	const char *name = json_string_value(json_object_get(rq->params, "name"));
	if (!name) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "tools/call: params.name must be a string", NULL);
		return;
	}
	if (!find_tool(srv, name)) {
		reply_errorf(m, rq->id, RPC_INVALID_PARAMS, "unknown tool '%.200s'", name);
		return;
	}
	json_t *args = json_object_get(rq->params, "arguments");
	if (args && json_is_null(args))
		args = NULL;
	if (args && !json_is_object(args)) {
		reply_errorf(m, rq->id, RPC_INVALID_PARAMS,
			     "tool '%s': arguments must be an object", name);
		return;
	}
	struct mcp_call_ctx ctx = {.modern = rq->modern, .log_level = -1};
	json_t *pt = json_object_get(rq->meta, "progressToken");
	if (json_is_string(pt) || json_is_integer(pt))
		ctx.progress_token = json_incref(pt);
	if (rq->modern) {
		ctx.log_level =
		    mcp_log_level(json_string_value(json_object_get(rq->meta, META_LOGLEVEL)));
		ctx.client_name = json_string_value(
		    json_object_get(json_object_get(rq->meta, META_INFO), "name"));
	} else {
		const struct mcp_session *ss = m->sess;
		ctx.log_level = ss->log_level;
		ctx.client_name = ss->client_name;
		ctx.legacy_text_json = ss->initialized && strcmp(ss->version, "2025-06-18") < 0;
		/* 2025-11-25 made invalid arguments a tool error the model can read; the
		 * versions before keep -32602 */
		ctx.args_rpc_error = ss->initialized && strcmp(ss->version, "2025-11-25") < 0;
	}
	/* the arguments as sent: a long message's were parsed without their long strings
	 * (they are checked, and the library parses the text again) */
	char *args_text = NULL;
	json_t *full = NULL;
	size_t off, n;
	if (args && rq->brief) {
		if (mcp_json_member_span(rq->text, rq->len, "params", "arguments", &off, &n) &&
		    rq->text[off] == '{')
			args_text = strndup(rq->text + off, n);
		if (!args_text) { /* escaped keys, or ENOMEM: the whole message again */
			json_error_t e;
			full = json_loadb(rq->text, rq->len, JSON_REJECT_DUPLICATES, &e);
			args = json_object_get(json_object_get(full, "params"), "arguments");
			if (!json_is_object(args)) {
				json_decref(full);
				reply_error(m, rq->id, RPC_INTERNAL_ERROR,
					    "internal error: out of memory", NULL);
				return;
			}
		}
	}
	json_t *id = json_incref(rq->id);
	const char *why = NULL;
	int r = mcp_pool_submit(srv->pool, m->sink, m->owner, m->client, id, name,
				args ? json_incref(args) : json_object(), args_text, &ctx, &why);
	json_decref(full);
	m->answered = true; /* now, or by the pool */
	if (r == -EEXIST) {
		reply_error(m, rq->id, RPC_INVALID_REQUEST,
			    "tools/call: a request with this id is still in flight", NULL);
	} else if (r == -EBUSY) {
		struct mcp_pool_stats st;
		mcp_pool_stats(srv->pool, &st);
		m->sink->status = 429;
		m->sink->retry_after = mcp_pool_retry_after(srv->pool);
		if (why && strcmp(why, "client") == 0)
			reply_errorf(m, rq->id, -32000,
				     "server busy: this client has %zu calls waiting, the most one "
				     "client may queue (--max-queued); retry after %u s",
				     st.lim.client_max, m->sink->retry_after);
		else if (why && strcmp(why, "bytes") == 0)
			reply_errorf(
			    m, rq->id, -32000,
			    "server busy: the calls waiting hold %zu MiB of arguments, the "
			    "most the queue takes; retry after %u s",
			    st.lim.bytes_max >> 20, m->sink->retry_after);
		else
			reply_errorf(m, rq->id, -32000,
				     "server busy: %zu calls waiting in all, the most the queue "
				     "takes; retry after %u s",
				     st.lim.total_max, m->sink->retry_after);
	} else if (r == -ENOMEM) {
		reply_error(m, rq->id, RPC_INTERNAL_ERROR, "internal error: out of memory", NULL);
	} else if (r < 0) {
		/* EMFILE, ENFILE: the server is out of descriptors, not of memory */
		reply_errorf(m, rq->id, RPC_INTERNAL_ERROR,
			     "internal error: the call could not be queued: %s (%s)", strerror(-r),
			     r == -EMFILE   ? "the server is out of file descriptors"
			     : r == -ENFILE ? "the system is out of file descriptors"
					    : "a resource of the server");
	}
	if (r < 0)
		json_decref(id);
}

/* The modern envelope: version (checked by the caller), capabilities, identity, log
 * level.  Returns 0 or -1 after answering. */
static int check_envelope(struct request *rq)
{
	struct mcp_msg *m = rq->m;
	json_t *caps = json_object_get(rq->meta, META_CAPS);
	if (!json_is_object(caps)) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_CAPS "' is required (an object)", NULL);
		return -1;
	}
	json_t *info = json_object_get(rq->meta, META_INFO);
	if (info && !(json_is_object(info) && json_is_string(json_object_get(info, "name")) &&
		      json_is_string(json_object_get(info, "version")))) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_INFO "' must be an object with name and version",
			    NULL);
		return -1;
	}
	json_t *ll = json_object_get(rq->meta, META_LOGLEVEL);
	if (ll && mcp_log_level(json_string_value(ll)) < 0) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_LOGLEVEL "' is not a logging level", NULL);
		return -1;
	}
	return 0;
}

static void handle_request(struct request *rq)
{
	struct mcp_msg *m = rq->m;
	json_t *pv = json_object_get(rq->meta, META_VERSION);
	if (pv && !json_is_string(pv)) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_VERSION "' must be a string", NULL);
		return;
	}
	const char *v = json_string_value(pv);
	if (v && strcmp(v, MODERN_VERSION) == 0) {
		rq->modern = true;
	} else if (v && !legacy_version(v)) {
		reply_error(
		    m, rq->id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
		    json_pack("{s:o, s:s}", "supported", supported_versions(), "requested", v));
		return;
	}
	/* a legacy version in the envelope: served as a legacy request */
	const char *mt = rq->method;
	if (rq->modern) {
		if (check_envelope(rq) < 0)
			return;
		if (strcmp(mt, "server/discover") == 0)
			do_discover(rq);
		else if (strcmp(mt, "tools/list") == 0)
			do_tools_list(rq);
		else if (strcmp(mt, "tools/call") == 0)
			do_tools_call(rq);
		else
			reply_errorf(
			    m, rq->id, RPC_METHOD_NOT_FOUND,
			    "method '%.200s' not found in protocol version " MODERN_VERSION, mt);
		return;
	}
	if (!m->sess) {
		/* HTTP without a session: only initialize starts one (http.c made it) */
		m->sink->status = 400;
		reply_error(m, rq->id, RPC_INVALID_REQUEST,
			    "Bad Request: no session (Mcp-Session-Id); initialize first, or "
			    "send a " MODERN_VERSION " request (params._meta)",
			    NULL);
	} else if (strcmp(mt, "initialize") == 0) {
		do_initialize(rq);
	} else if (strcmp(mt, "ping") == 0) {
		reply(m, rq->id, json_object());
	} else if (strcmp(mt, "tools/list") == 0) {
		do_tools_list(rq);
	} else if (strcmp(mt, "tools/call") == 0) {
		do_tools_call(rq);
	} else if (strcmp(mt, "logging/setLevel") == 0) {
		int lv = mcp_log_level(json_string_value(json_object_get(rq->params, "level")));
		if (lv < 0) {
			reply_error(m, rq->id, RPC_INVALID_PARAMS,
				    "logging/setLevel: params.level is not a logging level", NULL);
			return;
		}
		m->sess->log_level = lv;
		reply(m, rq->id, json_object());
	} else if (strcmp(mt, "server/discover") == 0) {
		reply_error(m, rq->id, RPC_INVALID_PARAMS,
			    "server/discover: params._meta must name the protocol version "
			    "('" META_VERSION "')",
			    json_pack("{s:o}", "supported", supported_versions()));
	} else {
		reply_errorf(m, rq->id, RPC_METHOD_NOT_FOUND, "method '%.200s' not found", mt);
	}
}

static void handle_notification(struct mcp_server *srv, struct mcp_msg *m, const char *method,
				json_t *params)
{
	if (strcmp(method, "notifications/cancelled") == 0) {
		json_t *id = json_object_get(params, "requestId");
		if (id && mcp_pool_cancel(srv->pool, m->owner, id)) {
			char *s = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
			mcp_log("request %s cancelled by the client", s ? s : "?");
			free(s);
		}
	}
	/* notifications/initialized: the session is usable once initialize was answered;
	 * anything else (progress, roots/list_changed, unknown): nothing to do */
}

/* A request whose id is a number past 64 bits (numbers.c): -32600, answered with the id
 * as it was sent (jansson cannot hold it; the line is written around it), or null when it
 * is longer than struct mcp_bignum keeps. */
static void refuse_big_id(struct mcp_msg *m, const struct mcp_bignum *big)
{
	m->answered = true;
	const char *what = big->id_text[0] ? big->id_text : "(a number of 64 digits or more)";
	char msg[300];
	snprintf(msg, sizeof(msg),
		 "Invalid Request: \"id\" %s is a number outside the 64-bit range; send it "
		 "as a string or an integer from -2^63 to 2^63-1",
		 what);
	if (!big->id_text[0]) {
		mcp_reply_error(m->sink, NULL, RPC_INVALID_REQUEST, msg, NULL);
		return;
	}
	json_t *err = json_pack("{s:i, s:s}", "code", RPC_INVALID_REQUEST, "message", msg);
	char *et = err ? json_dumps(err, JSON_COMPACT) : NULL;
	json_decref(err);
	char *line = NULL;
	/* id_text is a JSON number token as jansson's scan delimited it: digits, sign,
	 * point, exponent, nothing that could end the line or the object */
	if (!et ||
	    asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":%s}", big->id_text, et) < 0)
		line = NULL;
	free(et);
	if (line)
		mcp_send_text(m->sink, line);
	else
		mcp_log("cannot encode a reply (out of memory)");
}

/* A request with a number past 64 bits elsewhere: refused by its path, -32602 inside
 * params (a tool's argument by name), -32600 outside. */
static void refuse_big_number(struct mcp_msg *m, json_t *id, const char *method, json_t *params,
			      const struct mcp_bignum *big)
{
	static const char args[] = "params.arguments.";
	const char *tool = json_string_value(json_object_get(params, "name"));
	if (strcmp(method, "tools/call") == 0 && tool &&
	    strncmp(big->path, args, sizeof(args) - 1) == 0)
		reply_errorf(m, id, RPC_INVALID_PARAMS,
			     "tool '%.200s': argument '%s': %s is outside the 64-bit range "
			     "(integers from -2^63 to 2^63-1, reals within a double's); this "
			     "server does not take it",
			     tool, big->path + sizeof(args) - 1, big->text);
	else if (strncmp(big->path, "params", 6) == 0 && (!big->path[6] || big->path[6] == '.'))
		reply_errorf(m, id, RPC_INVALID_PARAMS,
			     "Invalid params: %s: %s is a number outside the 64-bit range",
			     big->path, big->text);
	else
		reply_errorf(m, id, RPC_INVALID_REQUEST,
			     "Invalid Request: %s: %s is a number outside the 64-bit range",
			     big->path, big->text);
}

static bool valid_id(json_t *id)
{
	return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

void mcp_dispatch(struct mcp_server *srv, struct mcp_msg *m, const char *line, size_t len)
{
	json_error_t e;
	struct mcp_bignum big;
	/* a long message (files, code) is parsed without its long strings, each checked as
	 * jansson would: parsing 16 MiB of base64 into a tree that is dumped again for the
	 * library, which parses it again, was most of what MCP added to a run (issue 23) */
	size_t blen = len;
	char *brief = len > BRIEF_MIN ? mcp_json_brief(line, len, BRIEF_KEEP, true, &blen) : NULL;
	json_t *msg = mcp_json_loadb(brief ? brief : line, blen,
				     JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e, &big);
	bool briefed = brief != NULL;
	free(brief);
	if (!msg && briefed) { /* the error as it is in the message sent (its column) */
		msg = mcp_json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e, &big);
		briefed = false;
	}
	if (!msg) {
		/* jansson's text, unless it quotes invalid UTF-8 (then NULL) */
		json_t *text = strstr(e.text, "JSON_ALLOW_NUL")
				   ? json_string("\\u0000 is not allowed in strings")
				   : json_string(e.text);
		reply_error(m, NULL, RPC_PARSE_ERROR, "Parse error",
			    text ? json_pack("{s:o, s:i}", "detail", text, "column", e.column)
				 : NULL);
		return;
	}
	if (json_is_array(msg)) {
		reply_error(m, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: JSON-RPC batches are not supported", NULL);
		json_decref(msg);
		return;
	}
	if (!json_is_object(msg)) {
		reply_error(m, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: a message must be a JSON object", NULL);
		json_decref(msg);
		return;
	}
	json_t *id = json_object_get(msg, "id");
	json_t *method = json_object_get(msg, "method");
	json_t *params = json_object_get(msg, "params");
	const char *jv = json_string_value(json_object_get(msg, "jsonrpc"));
	bool has_id = id != NULL;
	json_t *rid = has_id && valid_id(id) ? id : NULL;
	if (!method && has_id &&
	    (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		/* a response: this server sends no requests, so there is nothing to match */
		json_decref(msg);
		return;
	}
	if (big.id) {
		refuse_big_id(m, &big);
	} else if (!jv || strcmp(jv, "2.0") != 0) {
		reply_error(m, rid, RPC_INVALID_REQUEST,
			    "Invalid Request: \"jsonrpc\" must be \"2.0\"", NULL);
	} else if (has_id && !rid) {
		reply_error(m, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: \"id\" must be a string or a number", NULL);
	} else if (!json_is_string(method)) {
		reply_error(m, rid, RPC_INVALID_REQUEST,
			    "Invalid Request: \"method\" must be a string", NULL);
	} else if (!has_id) {
		handle_notification(srv, m, json_string_value(method),
				    json_is_object(params) ? params : NULL);
	} else if (params && !json_is_object(params)) {
		reply_error(m, rid, RPC_INVALID_PARAMS, "Invalid params: must be an object", NULL);
	} else if (big.path[0]) {
		refuse_big_number(m, rid, json_string_value(method), params, &big);
	} else {
		json_t *meta = json_object_get(params, "_meta");
		struct request rq = {
		    .srv = srv,
		    .m = m,
		    .id = rid,
		    .method = json_string_value(method),
		    .params = params,
		    .meta = json_is_object(meta) ? meta : NULL,
		    .text = line,
		    .len = len,
		    .brief = briefed,
		};
		if (meta && !json_is_object(meta))
			reply_error(m, rid, RPC_INVALID_PARAMS,
				    "Invalid params: _meta must be an object", NULL);
		else
			handle_request(&rq);
	}
	json_decref(msg);
}

/* ---------------------------------------------------------------- start-up */

static char *make_instructions(struct mcp_server *srv)
{
	size_t nf = json_array_size(srv->tools) - 1; /* run_python_snippet and the functions */
	char *s = NULL;
	if (asprintf(&s,
		     "govex runs Python under an enforced policy (%s). run_python_snippet runs "
		     "a whole program in a fresh process%s; nothing survives between calls. "
		     "Every result carries the govex.result/v1 document as structured content: "
		     "status, exit code, stdout, stderr (with truncation flags), value, "
		     "diagnostics, usage and the backend's enforced controls.",
		     govex_policy_digest(srv->policy),
		     nf ? ", and the module functions run one call each in a fresh worker" : "") <
	    0)
		return NULL;
	return s;
}

/* The tools: the library's tool provider over the runtime; -1 logged. */
static int build_tools(struct mcp_server *srv, const char *const *modules, size_t n_modules)
{
	const char **mods = calloc(n_modules + 1, sizeof(*mods));
	if (!mods) {
		mcp_log("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n_modules; i++)
		mods[i] = modules[i];
	struct govex_toolset_options to = {.modules = mods};
	struct govex_error ge = {0};
	int r = govex_toolset_new(srv->rt, &to, &srv->ts, &ge);
	free(mods);
	if (r < 0) {
		mcp_log("%s", ge.message[0] ? ge.message : govex_strerror(r));
		return -1;
	}
	char *list = govex_toolset_list(srv->ts);
	json_error_t e;
	srv->tools = list ? json_loads(list, 0, &e) : NULL;
	free(list);
	srv->instructions = srv->tools ? make_instructions(srv) : NULL;
	if (!srv->instructions) {
		mcp_log("out of memory");
		return -1;
	}
	return 0;
}

/* The policy's wall-time limit: the total of a call's progress. */
uint64_t mcp_policy_wall_ms(const govex_policy *policy)
{
	size_t len;
	const char *canon = govex_policy_canonical(policy, &len);
	json_error_t e;
	json_t *doc = canon ? json_loadb(canon, len, 0, &e) : NULL;
	json_t *w = json_object_get(json_object_get(doc, "limits"), "wall_ms");
	uint64_t ms = json_is_integer(w) && json_integer_value(w) > 0
			  ? (uint64_t)json_integer_value(w)
			  : 5000;
	json_decref(doc);
	return ms;
}

bool mcp_version_known(const char *v)
{
	return v && (strcmp(v, MODERN_VERSION) == 0 || legacy_version(v));
}

int mcp_server_init(struct mcp_server *srv, const govex_policy *policy, govex_runtime *rt,
		    const char *const *modules, size_t n_modules, unsigned max_concurrent,
		    const struct mcp_queue_limits *lim)
{
	srv->policy = policy;
	srv->rt = rt;
	if (build_tools(srv, modules, n_modules) < 0)
		return -1;
	int r =
	    mcp_pool_new(srv, srv->ts, mcp_policy_wall_ms(policy), max_concurrent, lim, &srv->pool);
	if (r < 0) {
		mcp_log("threads: %s", strerror(-r));
		return -1;
	}
	return 0;
}

void mcp_server_fini(struct mcp_server *srv)
{
	mcp_pool_free(srv->pool);
	srv->pool = NULL;
	json_decref(srv->tools);
	srv->tools = NULL;
	govex_toolset_free(srv->ts);
	srv->ts = NULL;
	free(srv->instructions);
	srv->instructions = NULL;
}

/* ---------------------------------------------------------------- signals */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full pipe: a signal is already pending */
	}
	errno = saved;
}

int mcp_signals_catch(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return sig_pipe[0];
}

void mcp_signals_release(void)
{
	for (int i = 0; i < 2; i++)
		if (sig_pipe[i] >= 0) {
			close(sig_pipe[i]);
			sig_pipe[i] = -1;
		}
}
