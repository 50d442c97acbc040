// SPDX-License-Identifier: MIT
/*
 * The engine seam: which engine serves this process, chosen once at
 * set-up, and gpsGetEngine. The operations themselves are dispatched by
 * engine.h's inline wrappers through the chosen table.
 *
 * Choice: $GPSU_ENGINE=kmod takes the driver alone, =user the native
 * engine alone; unset (or empty), the driver when its device file
 * ($GPSU_DEVICE or /dev/gps) opens, else, when $GPSU_DEVICE is not set,
 * the native engine. A $GPSU_DEVICE names a driver's device: without it
 * the answer is gpsErrorNoDevice, as before there was a second engine.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

const struct gpsu_engine_ops *gpsu_engine;

static bool gpsu_env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

gpsError_t gpsu_engine_open(struct gpsu_engine_info *info)
{
	const char *want = getenv("GPSU_ENGINE");
	const struct gpsu_engine_ops *e;
	gpsError_t err;

	memset(info, 0, sizeof(*info));
	if (want && *want) {
		if (!strcmp(want, "kmod")) {
			e = &gpsu_engine_kmod;
		} else if (!strcmp(want, "user")) {
			e = &gpsu_engine_user;
		} else {
			fprintf(stderr,
				"libgpsu: GPSU_ENGINE=%s: not an engine (kmod or user)\n",
				want);
			return gpsErrorInitializationError;
		}
		err = e->open(info);
		if (!err)
			gpsu_engine = e;
		return err;
	}
	err = gpsu_engine_kmod.open(info);
	if (!err) {
		gpsu_engine = &gpsu_engine_kmod;
		return gpsSuccess;
	}
	if (err != gpsErrorNoDevice || gpsu_env_set("GPSU_DEVICE"))
		return err;
	memset(info, 0, sizeof(*info));
	err = gpsu_engine_user.open(info);
	if (!err) {
		gpsu_engine = &gpsu_engine_user;
		return gpsSuccess;
	}
	/* neither: no device (the native engine said why with GPSU_DEBUG) */
	return gpsErrorNoDevice;
}

void gpsu_engine_close(void)
{
	if (gpsu_engine)
		gpsu_engine->close();
	gpsu_engine = NULL;
}

GPSU_API gpsError_t gpsGetEngine(gpsEngine *engine, const char **name)
{
	gpsError_t err;

	if (!engine)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	*engine = err ? gpsEngineNone : gpsu_engine->kind;
	if (name)
		*name = err ? "none" : gpsu_engine->name;
	return gpsu_ret(err);
}
