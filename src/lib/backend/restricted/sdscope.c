/* SPDX-License-Identifier: MIT */
/*
 * Step 2 of cghost.c: asks systemd for a transient scope with Delegate=yes holding this
 * process, what `systemd-run --scope -p Delegate=yes` does, over D-Bus with libsystemd's
 * sd-bus.  The system manager as root, the user's manager otherwise, each on its private
 * socket (/run/systemd/private, $XDG_RUNTIME_DIR/systemd/private), so no bus daemon is
 * needed.  libsystemd is loaded only here, when a run needs it (dlopen): the one-shot
 * govex that never asks pays nothing for it at start-up, and a host without it is told
 * so.  The scope goes into the slice our cgroup is in (a session's user-UID.slice, a
 * service's system.slice), so a run stays within the limits of that slice.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "restricted.h"

#ifdef GOVEX_HAVE_SD_BUS
#include <systemd/sd-bus.h>

/* the sd-bus functions used, resolved from libsystemd.so.0 */
#define SD_FUNCS(X)                                                                                \
	X(sd_bus_new)                                                                              \
	X(sd_bus_set_address)                                                                      \
	X(sd_bus_start)                                                                            \
	X(sd_bus_flush_close_unref)                                                                \
	X(sd_bus_match_signal)                                                                     \
	X(sd_bus_slot_unref)                                                                       \
	X(sd_bus_message_new_method_call)                                                          \
	X(sd_bus_message_append)                                                                   \
	X(sd_bus_message_open_container)                                                           \
	X(sd_bus_message_close_container)                                                          \
	X(sd_bus_message_read)                                                                     \
	X(sd_bus_message_unref)                                                                    \
	X(sd_bus_call)                                                                             \
	X(sd_bus_call_method)                                                                      \
	X(sd_bus_get_property_trivial)                                                             \
	X(sd_bus_process)                                                                          \
	X(sd_bus_wait)                                                                             \
	X(sd_bus_error_free)

static struct {
#define SD_FIELD(f) __typeof__(f) *f;
	SD_FUNCS(SD_FIELD)
#undef SD_FIELD
} sd;

static const char *sd_load(void)
{
	static void *h;
	if (h)
		return NULL;
	void *l = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!l)
		return "libsystemd.so.0 cannot be loaded";
#define SD_SYM(f)                                                                                  \
	if (!(*(void **)&sd.f = dlsym(l, #f))) {                                                   \
		dlclose(l);                                                                        \
		return "libsystemd.so.0 lacks " #f;                                                \
	}
	SD_FUNCS(SD_SYM)
#undef SD_SYM
	h = l;
	return NULL;
}

struct job_wait {
	const char *unit;
	bool done;
	char result[32];
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	(void)error;
	struct job_wait *w = userdata;
	uint32_t id;
	const char *path, *unit, *result;
	if (sd.sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	if (strcmp(unit, w->unit) == 0) {
		w->done = true;
		snprintf(w->result, sizeof(w->result), "%s", result);
	}
	return 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The slice our cgroup rel is in ("" when it is not in one). */
static void parent_slice(const char *rel, char *ret, size_t cap)
{
	ret[0] = '\0';
	const char *last = strrchr(rel, '/');
	if (!last || last == rel)
		return;
	const char *prev = last - 1;
	while (prev > rel && *prev != '/')
		prev--;
	size_t n = (size_t)(last - prev - 1);
	if (n > 6 && n < cap && strncmp(last - 6, ".slice", 6) == 0)
		snprintf(ret, cap, "%.*s", (int)n, prev + 1);
}

/* A direct connection to the system manager (user false) or the user's, on its private
 * socket.  0, or -errno with why set. */
static int sd_connect(bool user, sd_bus **ret, char *why, size_t whycap)
{
	char addr[PATH_MAX + 16], sock[PATH_MAX];
	if (access("/run/systemd/system", F_OK) < 0) {
		snprintf(why, whycap, "this host is not run by systemd");
		return -ENOENT;
	}
	if (user) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		char dflt[64];
		if (!xdg || xdg[0] != '/') {
			snprintf(dflt, sizeof(dflt), "/run/user/%u", (unsigned)geteuid());
			xdg = dflt;
		}
		snprintf(sock, sizeof(sock), "%s/systemd/private", xdg);
	} else {
		snprintf(sock, sizeof(sock), "/run/systemd/private");
	}
	struct stat st;
	if (stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, whycap, "%s has no manager to ask (%s)",
			 user ? "this user" : "systemd",
			 user ? "no user@UID.service running" : sock);
		return -ENOENT;
	}
	const char *lerr = sd_load();
	if (lerr) {
		snprintf(why, whycap, "%s", lerr);
		return -ENOENT;
	}
	snprintf(addr, sizeof(addr), "unix:path=%s", sock);
	sd_bus *bus = NULL;
	int r = sd.sd_bus_new(&bus);
	if (r >= 0)
		r = sd.sd_bus_set_address(bus, addr);
	if (r >= 0)
		r = sd.sd_bus_start(bus);
	if (r < 0) {
		snprintf(why, whycap, "systemd: cannot connect to %s: %s", sock, strerror(-r));
		if (bus)
			sd.sd_bus_flush_close_unref(bus);
		return r;
	}
	*ret = bus;
	return 0;
}

int rsd_unit_delegated(bool user, const char *unit, char *why, size_t whycap)
{
	const char *dot = strrchr(unit, '.');
	const char *iface = !dot			   ? NULL
			    : strcmp(dot, ".service") == 0 ? "org.freedesktop.systemd1.Service"
			    : strcmp(dot, ".scope") == 0   ? "org.freedesktop.systemd1.Scope"
							   : NULL;
	if (!iface) {
		snprintf(why, whycap, "%s is not a service or scope", unit);
		return 0;
	}
	sd_bus *bus = NULL;
	int r = sd_connect(user, &bus, why, whycap);
	if (r < 0)
		return r;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *path = NULL;
	int val = 0;
	r = sd.sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
				  "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply,
				  "s", unit);
	if (r >= 0)
		r = sd.sd_bus_message_read(reply, "o", &path);
	if (r >= 0)
		r = sd.sd_bus_get_property_trivial(bus, "org.freedesktop.systemd1", path, iface,
						   "Delegate", &error, 'b', &val);
	if (r < 0)
		snprintf(why, whycap, "systemd: %s: %s", unit,
			 error.message ? error.message : strerror(-r));
	sd.sd_bus_error_free(&error);
	if (reply)
		sd.sd_bus_message_unref(reply);
	sd.sd_bus_flush_close_unref(bus);
	return r < 0 ? r : val != 0;
}

int rsd_scope(bool user, const char *rel, char *unit, size_t cap, char *why, size_t whycap)
{
	sd_bus *bus = NULL;
	int r = sd_connect(user, &bus, why, whycap);
	if (r < 0)
		return r;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)now_us();
	snprintf(unit, cap, "govex-%u-%08x.scope", (unsigned)getpid(), rnd);

	sd_bus_slot *slot = NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	struct job_wait w = {.unit = unit};
	const char *step = "subscribe";
	char slice[256];
	parent_slice(rel, slice, sizeof(slice));
	/* a direct connection has no sender to match: every signal is systemd's */
	if (r >= 0)
		r = sd.sd_bus_match_signal(bus, &slot, NULL, "/org/freedesktop/systemd1",
					   "org.freedesktop.systemd1.Manager", "JobRemoved",
					   on_job_removed, &w);
	if (r >= 0 && (step = "StartTransientUnit"))
		r = sd.sd_bus_message_new_method_call(
		    bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		    "org.freedesktop.systemd1.Manager", "StartTransientUnit");
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "ss", unit, "fail");
	if (r >= 0)
		r = sd.sd_bus_message_open_container(m, 'a', "(sv)");
	/* PID 0: the caller, which systemd takes from the connection's credentials (the
	 * kernel's, in systemd's own PID namespace).  getpid() would be our number in our
	 * PID namespace: in one of our own (a sandbox, unshare -p) systemd would move the
	 * host's process of that number into the scope. */
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t)0);
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "(sv)", "Delegate", "b", 1);
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "(sv)", "Description", "s",
					     "govex: the cgroups of its sandboxed runs");
	if (r >= 0 && !user && slice[0])
		r = sd.sd_bus_message_append(m, "(sv)", "Slice", "s", slice);
	if (r >= 0)
		r = sd.sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "a(sa(sv))", 0);
	const uint64_t budget = 10 * 1000 * 1000; /* a loaded host's manager is slow */
	uint64_t start = now_us();
	if (r >= 0)
		r = sd.sd_bus_call(bus, m, budget, &error, &reply);
	if (r >= 0 && (step = "waiting for the job"))
		while (!w.done) {
			uint64_t t = now_us();
			if (t - start >= budget) {
				r = -ETIMEDOUT;
				break;
			}
			r = sd.sd_bus_process(bus, NULL);
			if (r < 0)
				break;
			if (r > 0)
				continue;
			r = sd.sd_bus_wait(bus, budget - (t - start));
			if (r < 0)
				break;
		}
	if (r >= 0 && strcmp(w.result, "done") != 0) {
		snprintf(why, whycap, "systemd's job for %s ended '%s'", unit, w.result);
		r = -EIO;
	} else if (r < 0) {
		snprintf(why, whycap, "systemd: %s: %s", step,
			 error.message ? error.message : strerror(-r));
	}
	sd.sd_bus_error_free(&error);
	if (reply)
		sd.sd_bus_message_unref(reply);
	if (m)
		sd.sd_bus_message_unref(m);
	if (slot)
		sd.sd_bus_slot_unref(slot);
	sd.sd_bus_flush_close_unref(bus);
	return r < 0 ? r : 0;
}

#else

int rsd_unit_delegated(bool user, const char *unit, char *why, size_t whycap)
{
	(void)user;
	(void)unit;
	snprintf(why, whycap, "this govex was built without libsystemd's sd-bus");
	return -ENOSYS;
}

int rsd_scope(bool user, const char *rel, char *unit, size_t cap, char *why, size_t whycap)
{
	(void)user;
	(void)rel;
	(void)unit;
	(void)cap;
	snprintf(why, whycap, "this govex was built without libsystemd's sd-bus");
	return -ENOSYS;
}

#endif
