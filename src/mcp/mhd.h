/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd, loaded when `govex mcp --http` starts (mhd.c), not linked: linked, it
 * and GnuTLS behind it were loaded by every govex command (about 1.3 ms more to start
 * `govex version`, measured).  The types and constants are the header's; the functions
 * are called through mhd.NAME, each typed as the header declares MHD_NAME.
 */
#ifndef GOVEX_MCP_MHD_H
#define GOVEX_MCP_MHD_H

#include <microhttpd.h>
#include <stddef.h>

#define MHD_FUNCTIONS(X)                                                                           \
	X(add_response_header)                                                                     \
	X(create_response_from_buffer)                                                             \
	X(create_response_from_callback)                                                           \
	X(destroy_response)                                                                        \
	X(get_connection_info)                                                                     \
	X(get_connection_values)                                                                   \
	X(lookup_connection_value)                                                                 \
	X(queue_response)                                                                          \
	X(resume_connection)                                                                       \
	X(start_daemon)                                                                            \
	X(stop_daemon)                                                                             \
	X(suspend_connection)                                                                      \
	X(get_version)

struct mhd_api {
#define MHD_POINTER(name) __typeof__(MHD_##name) *name;
	MHD_FUNCTIONS(MHD_POINTER)
#undef MHD_POINTER
};

extern struct mhd_api mhd;

/* Loads the library (once); 0, or -1 with err filled. */
int mhd_load(char *err, size_t errlen);

#endif
