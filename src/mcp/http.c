/* SPDX-License-Identifier: MIT */
#include "mcp.h"
#include "mcp_serve.h"
int mcp_serve_http(const struct mcp_serve_options *o)
{
	(void)o;
	return 1;
}
