// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: delay points
 *
 * One struct gps_delay per point of enum gps_delay_point, set through
 * /sys/kernel/debug/gps/delay_<point>/{us,probability} and counted in
 * hits.  All start off (probability 0).  A pass through a point that is
 * on sleeps for us microseconds (10 s at most), so that a test can hold
 * a task there while another runs into the window behind it.  Built only
 * with CONFIG_GPS_DEBUG; what each point widens is in Documentation/
 * reliability.rst ("Races made reproducible").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/kernel.h>
#include "gps_delay.h"

/* Longest sleep a point takes: a test's window, not a hang. */
#define GPS_DELAY_MAX_US	(10 * USEC_PER_SEC)

struct gps_delay {
	const char *name;
	u32 us;
	u32 probability;	/* percent */
	atomic_t hits;
};

static struct gps_delay gps_delays[GPS_NR_DELAY_POINTS] = {
	[GPS_DELAY_ALLOC_PUBLISH] = { .name = "delay_alloc_publish" },
	[GPS_DELAY_FENCE_OWNERS] = { .name = "delay_fence_owners" },
	[GPS_DELAY_FENCE_NAMED] = { .name = "delay_fence_named" },
	[GPS_DELAY_HARVEST_LOCK] = { .name = "delay_harvest_lock" },
	[GPS_DELAY_MKWRITE_CAPTURED] = { .name = "delay_mkwrite_captured" },
	[GPS_DELAY_READ_PAGE] = { .name = "delay_read_page" },
	[GPS_DELAY_FREE_ZAP] = { .name = "delay_free_zap" },
	[GPS_DELAY_LINK_CHARGE] = { .name = "delay_link_charge" },
};

/**
 * gps_delay() - sleep at a delay point if a test has turned it on
 * @point: the point passed
 */
void gps_delay(enum gps_delay_point point)
{
	struct gps_delay *d = &gps_delays[point];
	u32 p = READ_ONCE(d->probability);
	u32 us = min_t(u32, READ_ONCE(d->us), GPS_DELAY_MAX_US);

	might_sleep();
	if (!p || !us || get_random_u32() % 100 >= p)
		return;
	atomic_inc(&d->hits);
	fsleep(us);
}

/**
 * gps_delay_debugfs_init() - make the delay_<point> directories
 * @root: /sys/kernel/debug/gps, removed recursively at exit
 */
void gps_delay_debugfs_init(struct dentry *root)
{
	struct dentry *dir;
	int i;

	for (i = 0; i < GPS_NR_DELAY_POINTS; i++) {
		dir = debugfs_create_dir(gps_delays[i].name, root);
		debugfs_create_u32("us", 0600, dir, &gps_delays[i].us);
		debugfs_create_u32("probability", 0600, dir,
				   &gps_delays[i].probability);
		debugfs_create_atomic_t("hits", 0400, dir,
					&gps_delays[i].hits);
	}
}
