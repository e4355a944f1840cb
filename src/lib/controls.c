/* SPDX-License-Identifier: MIT */
/* Control names (one table in internal.h). */
#include <string.h>

#include "internal.h"

static const char *const control_names[] = {
#define GOVEX__CTLNAME(id, name) name,
	GOVEX__CONTROLS(GOVEX__CTLNAME)
#undef GOVEX__CTLNAME
};

const char *govex__control_name(enum govex__control c)
{
	return (unsigned)c < GOVEX__CTL_COUNT ? control_names[c] : "unknown";
}

json_t *govex__ctlset_json(govex__ctlset set)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < GOVEX__CTL_COUNT; i++)
		if (set & ((govex__ctlset)1 << i))
			json_array_append_new(a, json_string(control_names[i]));
	return a;
}

int govex__control_from_name(const char *name)
{
	for (unsigned i = 0; name && i < GOVEX__CTL_COUNT; i++)
		if (strcmp(control_names[i], name) == 0)
			return (int)i;
	return -1;
}
