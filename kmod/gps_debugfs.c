// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: /sys/kernel/debug/gps
 *
 * subscribers: "<n> <pages>" lines, GPS pages with n subscribers, over
 * every live allocation.  One directory per device, node<N>, with two
 * files:
 *
 *  - stats: one "name value" line per counter of the device, in the
 *    order of gps_stats.h;
 *  - traffic: one line per destination device, "<node> <blocks> <bytes>",
 *    the row of the traffic matrix for pushes from this device.
 *
 * Counters are cumulative since the module was loaded; read them before
 * and after a run.  Documentation/ABI/testing/debugfs-gps lists them.
 *
 * In a module built with CONFIG_GPS_DEBUG, on a kernel with
 * CONFIG_FAULT_INJECTION_DEBUG_FS: the fault-injection directories
 * fail_<point> (gps_inject.c); in any module built with it, the delay
 * points delay_<point> (gps_delay.c) and the history ring, history
 * (gps_history.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include "gps_internal.h"
#include "gps_inject.h"
#include "gps_delay.h"
#include "gps_history.h"

static struct dentry *gps_debugfs_root;

/* Every counter of gps_stats.h, then the values of the device's state. */
static int gps_stats_show(struct seq_file *m, void *v)
{
	struct gps_dev *dev = m->private;

#define GPS_STAT(_name, ...)						\
	seq_printf(m, "%s %lld\n", #_name, atomic64_read(&dev->stats._name))
#define GPS_STATE(_name, _value, ...)					\
	seq_printf(m, "%s %llu\n", #_name, (u64)(_value))
#include "gps_stats.h"
#undef GPS_STATE
#undef GPS_STAT
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gps_stats);

static int gps_traffic_show(struct seq_file *m, void *v)
{
	struct gps_dev *dev = m->private;
	int d;

	for (d = 0; d < gps_nr_devs; d++)
		seq_printf(m, "%d %lld %lld\n", gps_devs[d].nid,
			   atomic64_read(&dev->stats.to_blocks[d]),
			   atomic64_read(&dev->stats.to_bytes[d]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gps_traffic);

/* How many GPS pages have 1, 2, ... N subscribers (the paper's Fig. 9). */
static int gps_subscribers_show(struct seq_file *m, void *v)
{
	u64 hist[GPS_MAX_DEVICES + 1] = {};
	struct gps_alloc *a;
	unsigned long g;
	int n;

	mutex_lock(&gps_all_allocs_lock);
	list_for_each_entry(a, &gps_all_allocs, all_link) {
		down_read(&a->sub_sem);
		if (!a->dead)
			for (g = 0; g < a->nr_gpages; g++)
				hist[hweight64(gps_gpage(a, g)->subs)]++;
		up_read(&a->sub_sem);
		cond_resched();
	}
	mutex_unlock(&gps_all_allocs_lock);
	for (n = 1; n <= gps_nr_devs; n++)
		seq_printf(m, "%d %llu\n", n, hist[n]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gps_subscribers);

void gps_debugfs_init(void)
{
	char name[16];
	int d;

	gps_debugfs_root = debugfs_create_dir("gps", NULL);
	debugfs_create_file("subscribers", 0444, gps_debugfs_root, NULL,
			    &gps_subscribers_fops);
	gps_inject_debugfs_init(gps_debugfs_root);
	gps_delay_debugfs_init(gps_debugfs_root);
	gps_history_debugfs_init(gps_debugfs_root);
	for (d = 0; d < gps_nr_devs; d++) {
		struct gps_dev *dev = &gps_devs[d];

		snprintf(name, sizeof(name), "node%d", dev->nid);
		dev->debugfs = debugfs_create_dir(name, gps_debugfs_root);
		debugfs_create_file("stats", 0444, dev->debugfs, dev,
				    &gps_stats_fops);
		debugfs_create_file("traffic", 0444, dev->debugfs, dev,
				    &gps_traffic_fops);
	}
}

void gps_debugfs_exit(void)
{
	debugfs_remove_recursive(gps_debugfs_root);
}
