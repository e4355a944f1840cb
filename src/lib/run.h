/* SPDX-License-Identifier: MIT */
/* The run job (run.c); the launch and outcome every kind uses are outcome.h's. */
#ifndef GOVEX_RUN_H
#define GOVEX_RUN_H

#include "outcome.h"

#endif
