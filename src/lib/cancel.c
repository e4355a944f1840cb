/* SPDX-License-Identifier: MIT */
/* Cancellation tokens: an eventfd that becomes readable, for good, when cancelled. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/eventfd.h>

#include "internal.h"

struct govex_cancel_token {
	int fd;
};

GOVEX_API int govex_cancel_new(govex_cancel_token **ret_cancel)
{
	if (!ret_cancel)
		return -GOVEX_EINVAL;
	govex_cancel_token *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->fd = fd < 0 ? -errno : govex__fd_not_stdio(fd); /* never on 0..2 */
	if (c->fd < 0) {
		int e = -c->fd;
		free(c);
		return -e;
	}
	*ret_cancel = c;
	return 0;
}

GOVEX_API void govex_cancel(govex_cancel_token *c)
{
	if (!c)
		return;
	/* Only write(2): async-signal-safe.  The counter is never read, so the token stays
	 * readable (cancelled) for every run that uses it. */
	uint64_t one = 1;
	int saved = errno;
	ssize_t w = write(c->fd, &one, sizeof(one));
	(void)w;
	errno = saved;
}

GOVEX_API govex_cancel_token *govex_cancel_free(govex_cancel_token *c)
{
	if (c) {
		close(c->fd);
		free(c);
	}
	return NULL;
}

int govex__cancel_fd(const govex_cancel_token *c)
{
	return c ? c->fd : -1;
}
