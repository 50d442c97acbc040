/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Delay points: named windows of the driver's races that a test can
 * widen, so that a race happens every time instead of once in hours
 * (tests/kmod/races.c).  Each point has a directory
 * /sys/kernel/debug/gps/delay_<point>/ with us (the sleep, in
 * microseconds), probability (percent of passes that sleep) and hits
 * (passes that slept).  They exist only in a module built with
 * CONFIG_GPS_DEBUG; elsewhere gps_delay() compiles away.  A point is
 * always in a context that may sleep.
 */
#ifndef _GPS_DELAY_H
#define _GPS_DELAY_H

#include <linux/kconfig.h>

struct dentry;

/**
 * enum gps_delay_point - where a race's window can be widened
 * @GPS_DELAY_ALLOC_PUBLISH: gps_alloc_create(), after the new handle is
 *	visible to the file's other users, before the call returns
 * @GPS_DELAY_FENCE_OWNERS: gps_fence_devices(), after the owners a device
 *	wrote into are taken, before anything is fenced
 * @GPS_DELAY_FENCE_NAMED: gps_fence_devices(), after the devices named are
 *	fenced, before those owners are
 * @GPS_DELAY_HARVEST_LOCK: gps_write_protect(), between reading a
 *	replica's dirty pages and write-protecting them
 * @GPS_DELAY_MKWRITE_CAPTURED: gps_page_mkwrite(), after the pages around
 *	the faulting one are captured (mapped writable), before it returns
 * @GPS_DELAY_READ_PAGE: gps_read(), after each small page is copied out,
 *	with no lock held: a long GPS_IOC_READ made longer still
 * @GPS_DELAY_FREE_ZAP: gps_alloc_kill(), the allocation dead and purged
 *	from the queues and dirty lists, before its views are zapped
 * @GPS_DELAY_LINK_CHARGE: gps_link_charge(), a push's bytes sent, before
 *	they are charged to the link's clock: a new link_bandwidth meanwhile
 * @GPS_NR_DELAY_POINTS: number of points
 */
enum gps_delay_point {
	GPS_DELAY_ALLOC_PUBLISH,
	GPS_DELAY_FENCE_OWNERS,
	GPS_DELAY_FENCE_NAMED,
	GPS_DELAY_HARVEST_LOCK,
	GPS_DELAY_MKWRITE_CAPTURED,
	GPS_DELAY_READ_PAGE,
	GPS_DELAY_FREE_ZAP,
	GPS_DELAY_LINK_CHARGE,
	GPS_NR_DELAY_POINTS
};

#if IS_ENABLED(CONFIG_GPS_DEBUG)
void gps_delay(enum gps_delay_point point);
void gps_delay_debugfs_init(struct dentry *root);
#else
static inline void gps_delay(enum gps_delay_point point)
{
}

static inline void gps_delay_debugfs_init(struct dentry *root)
{
}
#endif

#endif /* _GPS_DELAY_H */
