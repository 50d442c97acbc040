// SPDX-License-Identifier: MIT
/*
 * The knobs and counters of both engines, made from core/'s lists (the
 * same rows gps.ko makes /sys/kernel/gps and debugfs from), and the
 * rules of the driver's checks (kmod/gps_sysfs.c) for the native engine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpsu_internal.h"
#include "knob_table.h"

/* What the rows of core/gps_knob_list.h name, in the kernel's words. */
#define GPS_PAGE_4K		GPSU_PAGE_4K
#define GPS_PAGE_64K		GPSU_PAGE_64K
#define GPS_PAGE_2M		GPSU_PAGE_2M
#define PAGE_SIZE		4096U	/* the core's page (gps_compat_user.h) */
#define USEC_PER_SEC		1000000U
#define NSEC_PER_SEC		1000000000ULL
#define U64_MAX			UINT64_MAX
#define GPS_TRACK_POLICY_TOUCHED	0	/* kmod/gps_knobs.h */

/* track_policy's words, by number, as kmod/gps_sysfs.c has them */
static const char *const gps_track_policy_words[] = {
	"touched", "read", NULL
};

struct gpsu_knob gpsu_knobs[GPSU_NKNOBS];
struct gpsu_stat gpsu_stats[GPSU_NSTATS];

/* The rows of the lists, in their order, as statements (their ';'). */
__attribute__((constructor)) static void gpsu_knob_table_init(void)
{
	struct gpsu_knob *k = gpsu_knobs;
	struct gpsu_stat *c = gpsu_stats;

#define GPS_KNOB(_name, _type, _def, _min, _max, _unit, _flags, _check,	\
		 _words, _rule)						\
	(*k++ = (struct gpsu_knob){ .name = #_name,			\
		.type = GPSU_KNOB_##_type, .def = _def, .min = _min,	\
		.max = _max, .unit = _unit, .rule = _rule,		\
		.words = _words, .flags = _flags })
#include "gps_knob_list.h"
#undef GPS_KNOB
#define GPS_STAT(_name, _kind)						\
	(*c++ = (struct gpsu_stat){ #_name, GPSU_STAT_##_kind })
#define GPS_STATE(_name, _value, _kind)	GPS_STAT(_name, _kind)
#include "gps_stats.h"
#undef GPS_STATE
#undef GPS_STAT
}

int gpsu_knob_find(const char *name)
{
	int i;

	for (i = 0; name && i < GPSU_NKNOBS; i++)
		if (!strcmp(gpsu_knobs[i].name, name))
			return i;
	return -1;
}

int gpsu_stat_find(const char *name)
{
	int i;

	for (i = 0; name && i < GPSU_NSTATS; i++)
		if (!strcmp(gpsu_stats[i].name, name))
			return i;
	return -1;
}

static bool gpsu_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int gpsu_words(const struct gpsu_knob *k)
{
	int n = 0;

	while (k->words[n])
		n++;
	return n;
}

/* The rules of gps_sysfs.c's checks, on a copy holding the new value. */
static int gpsu_knob_rules(uint64_t *v)
{
#define V(name)	v[GPSU_K(name)]
	uint64_t ps = V(page_size), cap = V(capture_bytes);

	if (ps != GPSU_PAGE_4K && ps != GPSU_PAGE_64K && ps != GPSU_PAGE_2M)
		return EINVAL;
	if (!gpsu_pow2(V(block_size)))
		return EINVAL;
	if (V(queue_watermark) > V(queue_capacity))
		return EINVAL;
	if (V(link_bandwidth) && V(link_bandwidth) < 1000)
		return EINVAL;
	if (cap && (!gpsu_pow2(cap) || cap < PAGE_SIZE))
		return EINVAL;
#undef V
	return 0;
}

int gpsu_knob_apply(uint64_t *vals, int i, uint64_t v)
{
	const struct gpsu_knob *k;
	uint64_t copy[GPSU_NKNOBS];

	if (i < 0 || i >= GPSU_NKNOBS)
		return EINVAL;
	k = &gpsu_knobs[i];
	if (k->type == GPSU_KNOB_WORDS ? v >= (uint64_t)gpsu_words(k) :
					 v < k->min || v > k->max)
		return EINVAL;
	memcpy(copy, vals, sizeof(copy));
	copy[i] = v;
	/* a new capacity brings the watermark along, one below it */
	if (i == GPSU_K(queue_capacity))
		copy[GPSU_K(queue_watermark)] = v > 1 ? v - 1 : 1;
	if (gpsu_knob_rules(copy))
		return EINVAL;
	memcpy(vals, copy, sizeof(copy));
	return 0;
}

/* "<name> <type> <min> <max> <default> <unit>[ <rule>]", as the driver's */
int gpsu_knob_line(int i, char *buf, size_t len)
{
	static const char *const types[] = {
		[GPSU_KNOB_UINT] = "u32",
		[GPSU_KNOB_U64] = "u64",
		[GPSU_KNOB_WORDS] = "word",
	};
	const struct gpsu_knob *k = &gpsu_knobs[i];
	const char *unit = k->unit ? k->unit : "-";
	int n;

	if (k->type == GPSU_KNOB_WORDS)
		n = snprintf(buf, len, "%s %s - - %s %s", k->name,
			     types[k->type], k->words[k->def], unit);
	else
		n = snprintf(buf, len, "%s %s %llu %llu %llu %s", k->name,
			     types[k->type], (unsigned long long)k->min,
			     (unsigned long long)k->max,
			     (unsigned long long)k->def, unit);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n + snprintf(buf + n, len - (size_t)n, "%s%s\n",
			    k->rule ? " " : "", k->rule ? k->rule : "");
}
