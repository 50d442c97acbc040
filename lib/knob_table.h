/* SPDX-License-Identifier: MIT */
/*
 * The knobs and counters of both engines, from the one list of each in
 * core/ (gps_knob_list.h, gps_stats.h), which gps.ko builds its sysfs
 * and debugfs files from: names, types, defaults, ranges and units.
 * knob_table.c adds the rules a range cannot say (the driver's checks
 * in gps_sysfs.c, for the native engine, which has no driver to ask).
 */
#ifndef GPSU_KNOB_TABLE_H
#define GPSU_KNOB_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gps_knob_flags.h"

enum gpsu_knob_type {
	GPSU_KNOB_UINT,		/* unsigned int */
	GPSU_KNOB_U64,
	GPSU_KNOB_WORDS,	/* the number of one of ->words */
};

struct gpsu_knob {
	const char *name;
	enum gpsu_knob_type type;
	uint64_t def, min, max;		/* min, max: 0 for WORDS */
	const char *unit;		/* or NULL */
	const char *rule;		/* what the range cannot say, or NULL */
	const char *const *words;	/* WORDS: NULL-terminated */
	unsigned int flags;		/* GPS_KNOB_*: what a change does */
};

/* How a counter adds up (gps_stats.h's kinds). */
enum gpsu_stat_kind {
	GPSU_STAT_COUNT,	/* cumulative */
	GPSU_STAT_LEVEL,	/* a current amount */
	GPSU_STAT_MAX,		/* a maximum or a capacity */
};

struct gpsu_stat {
	const char *name;
	enum gpsu_stat_kind kind;
};

/*
 * The index of each knob and counter by name, GPSU_K(page_size) and
 * GPSU_S(fences): the offset of its char in a struct of one char per
 * row (the rows end with ';', as the kernel's includers want).
 */
struct gpsu_knob_index {
#define GPS_KNOB(_name, ...)	char _name
#include "gps_knob_list.h"
#undef GPS_KNOB
};

struct gpsu_stat_index {
#define GPS_STAT(_name, _kind)	char _name
#define GPS_STATE(_name, _value, _kind)	GPS_STAT(_name, _kind)
#include "gps_stats.h"
#undef GPS_STATE
#undef GPS_STAT
};

#define GPSU_K(name)	((int)offsetof(struct gpsu_knob_index, name))
#define GPSU_S(name)	((int)offsetof(struct gpsu_stat_index, name))
#define GPSU_NKNOBS	((int)sizeof(struct gpsu_knob_index))
#define GPSU_NSTATS	((int)sizeof(struct gpsu_stat_index))

/* Filled from the lists when the library is loaded (a constructor). */
extern struct gpsu_knob gpsu_knobs[GPSU_NKNOBS];
extern struct gpsu_stat gpsu_stats[GPSU_NSTATS];

/* The index of knob @name (counter @name), or -1. */
int gpsu_knob_find(const char *name);
int gpsu_stat_find(const char *name);

/*
 * Knob @i takes @v in @vals (every knob's value, by index): the range,
 * then the rules (which may change a later knob: queue_capacity sets
 * queue_watermark). 0, or EINVAL with @vals untouched.
 */
int gpsu_knob_apply(uint64_t *vals, int i, uint64_t v);

/* The table line of /sys/kernel/gps/knobs for knob @i, with newline. */
int gpsu_knob_line(int i, char *buf, size_t len);

#endif /* GPSU_KNOB_TABLE_H */
