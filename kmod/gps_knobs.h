/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The knobs of /sys/kernel/gps: struct gps_knobs, made from the list of
 * gps_knob_list.h (one field per row), which gps_sysfs.c also makes its
 * table from: the files, their defaults, ranges, units and checks, and
 * the read-only table /sys/kernel/gps/knobs that gpsctl and the tests
 * read.
 */
#ifndef _GPS_KNOBS_H
#define _GPS_KNOBS_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/gps.h>

#define GPS_TRACK_POLICY_TOUCHED	0	/* the paper: read or written */
#define GPS_TRACK_POLICY_READ		1	/* read: writers need no updates */

/* The field of each type of knob. */
#define GPS_KNOB_FIELD_UINT(_name)	unsigned int _name
#define GPS_KNOB_FIELD_U64(_name)	u64 _name
#define GPS_KNOB_FIELD_WORDS(_name)	unsigned int _name

/* Read with READ_ONCE(); changed field by field under gps_knob_lock. */
struct gps_knobs {
#define GPS_KNOB(_name, _type, ...)	GPS_KNOB_FIELD_##_type(_name)
#include "gps_knob_list.h"
#undef GPS_KNOB
};

/* gps_sysfs.c */
extern struct gps_knobs gps_knobs;
extern struct mutex gps_knob_lock;
void gps_knobs_init(void);

/* One of the three GPS page sizes. */
static inline bool gps_page_size_ok(unsigned int ps)
{
	return ps == GPS_PAGE_4K || ps == GPS_PAGE_64K || ps == GPS_PAGE_2M;
}

#endif /* _GPS_KNOBS_H */
