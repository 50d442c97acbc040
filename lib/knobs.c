// SPDX-License-Identifier: MIT
/*
 * gpsGetKnob, gpsSetKnob, gpsDeviceGetCounter: the knobs and counters of
 * either engine, by the driver's names (knob_table.c). The engine reads
 * and changes them (engine.h); here the name is checked and every
 * refusal said on stderr, so that a program (or a test that skips) can
 * tell why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* The error of a refusal by the engine, said once on stderr. */
static gpsError_t gpsu_knob_err(int ret, const char *name, const char *verb,
				unsigned long long value, bool set)
{
	const char *engine = gpsu_engine->name;
	int i = gpsu_knob_find(name);
	char v[32] = "";

	if (set)
		snprintf(v, sizeof(v), " to %llu", value);
	switch (ret) {
	case 0:
		return gpsSuccess;
	case ENOTSUP:
		fprintf(stderr,
			"libgpsu: knob %s: the %s engine cannot %s it%s (Documentation/engines.rst)\n",
			name, engine, verb, v);
		return gpsErrorNotSupported;
	case EINVAL:
		if (i >= 0 && gpsu_knobs[i].type != GPSU_KNOB_WORDS)
			fprintf(stderr,
				"libgpsu: knob %s: %llu is not in %llu-%llu%s%s\n",
				name, value,
				(unsigned long long)gpsu_knobs[i].min,
				(unsigned long long)gpsu_knobs[i].max,
				gpsu_knobs[i].rule ? ", " : "",
				gpsu_knobs[i].rule ? gpsu_knobs[i].rule : "");
		else
			fprintf(stderr, "libgpsu: knob %s: %llu is not a word's number\n",
				name, value);
		return gpsErrorInvalidValue;
	case EACCES:
	case EPERM:
		fprintf(stderr,
			"libgpsu: knob %s: permission denied to %s it (the driver's knobs need root)\n",
			name, verb);
		return gpsErrorNotPermitted;
	default:
		fprintf(stderr, "libgpsu: knob %s: cannot %s it: %s\n", name,
			verb, strerror(ret));
		return gpsu_errno(ret);
	}
}

/* The knob's index, or -1 with the reason said. */
static int gpsu_knob_named(const char *name)
{
	int i = gpsu_knob_find(name);

	if (i < 0 && name)
		fprintf(stderr, "libgpsu: no knob named \"%s\"\n", name);
	return i;
}

/* The index of knob @name in *@i, the library up: what both calls need. */
static gpsError_t gpsu_knob_begin(const char *name, int *i)
{
	if (!name)
		return gpsErrorInvalidValue;
	*i = gpsu_knob_named(name);
	if (*i < 0)
		return gpsErrorInvalidValue;
	return gpsu_init();
}

GPSU_API gpsError_t gpsGetKnob(unsigned long long *value, const char *name)
{
	uint64_t v = 0;
	gpsError_t err;
	int i;

	if (!value)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_knob_begin(name, &i);
	if (err)
		return gpsu_ret(err);
	err = gpsu_knob_err(gpsu_engine_knob_get(i, &v), name, "read", 0,
			    false);
	if (!err)
		*value = v;
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsSetKnob(const char *name, unsigned long long value)
{
	gpsError_t err;
	int i;

	err = gpsu_knob_begin(name, &i);
	if (err)
		return gpsu_ret(err);
	return gpsu_ret(gpsu_knob_err(gpsu_engine_knob_set(i, value), name,
				      "set", value, true));
}

GPSU_API gpsError_t gpsDeviceGetCounter(unsigned long long *value,
					const char *name, int device)
{
	static unsigned char said[GPSU_NSTATS];
	uint64_t v = 0;
	gpsError_t err;
	int i, ndev, ret;

	if (!value || !name)
		return gpsu_ret(gpsErrorInvalidValue);
	i = gpsu_stat_find(name);
	if (i < 0) {
		fprintf(stderr, "libgpsu: no counter named \"%s\"\n", name);
		return gpsu_ret(gpsErrorInvalidValue);
	}
	err = gpsGetDeviceCount(&ndev);
	if (err)
		return err;
	if (device < 0 || device >= ndev)
		return gpsu_ret(gpsErrorInvalidDevice);
	ret = gpsu_engine_counter(device, i, &v);
	switch (ret) {
	case 0:
		*value = v;
		return gpsSuccess;
	case ENOTSUP:
		/* once per counter: a program may ask in a loop */
		if (!__atomic_exchange_n(&said[i], 1, __ATOMIC_RELAXED))
			fprintf(stderr,
				"libgpsu: counter %s: the %s engine does not keep it%s\n",
				name, gpsu_engine->name,
				gpsu_engine->kind == gpsEngineDriver ?
				" (or debugfs is not mounted)" : "");
		return gpsu_ret(gpsErrorNotSupported);
	case EACCES:
	case EPERM:
		fprintf(stderr,
			"libgpsu: counter %s: permission denied (the driver's debugfs needs root)\n",
			name);
		return gpsu_ret(gpsErrorNotPermitted);
	default:
		return gpsu_ret(gpsu_errno(ret));
	}
}
