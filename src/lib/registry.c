/* SPDX-License-Identifier: MIT */
/* The backend registry, in preference order: the lightest backend whose enforced controls
 * cover what a policy requires is chosen, so trusted code is not put in a sandbox it does
 * not ask for, and a policy with denials goes to the backend that can enforce them. */
#include "internal.h"

const struct govex__backend_ops *const govex__backends[] = {
	&govex__controlled_backend,
	&govex__restricted_backend,
};
const size_t govex__n_backends = ARRAY_SIZE(govex__backends);
