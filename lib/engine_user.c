// SPDX-License-Identifier: MIT
/* The native engine (stub until it lands). */
#define _GNU_SOURCE
#include <stdio.h>

#include "engine.h"

static gpsError_t gpsu_user_open(struct gpsu_engine_info *info)
{
	(void)info;
	return gpsErrorNotSupported;
}

const struct gpsu_engine_ops gpsu_engine_user = {
	.name = "user",
	.kind = gpsEngineNative,
	.open = gpsu_user_open,
};
