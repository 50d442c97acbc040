// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: /sys/kernel/debug/gps
 *
 * subscribers: "<n> <pages>" lines, GPS pages with n subscribers, over
 * every live allocation.  One directory per device, node<N>, with two
 * files:
 *
 *  - stats: one "name value" line per counter of the device;
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

/* The counters of node<N>/stats, in the order they are printed. */
static const struct {
	const char *name;
	size_t offset;
} gps_counters[] = {
	{ "read_faults", offsetof(struct gps_dev_stats, read_faults) },
	{ "write_faults", offsetof(struct gps_dev_stats, write_faults) },
	{ "pages_captured", offsetof(struct gps_dev_stats, pages_captured) },
	{ "pages_harvested", offsetof(struct gps_dev_stats, pages_harvested) },
	{ "pages_helped", offsetof(struct gps_dev_stats, pages_helped) },
	{ "blocks_queued", offsetof(struct gps_dev_stats, blocks_queued) },
	{ "blocks_merged", offsetof(struct gps_dev_stats, blocks_merged) },
	{ "blocks_pushed", offsetof(struct gps_dev_stats, blocks_pushed) },
	{ "bytes_pushed", offsetof(struct gps_dev_stats, bytes_pushed) },
	{ "blocks_pushed_early", offsetof(struct gps_dev_stats, blocks_pushed_early) },
	{ "blocks_bulk", offsetof(struct gps_dev_stats, blocks_bulk) },
	{ "fences", offsetof(struct gps_dev_stats, fences) },
	{ "host_write_faults", offsetof(struct gps_dev_stats, host_write_faults) },
	{ "host_fences", offsetof(struct gps_dev_stats, host_fences) },
	{ "harvest_ns", offsetof(struct gps_dev_stats, harvest_ns) },
	{ "protect_ns", offsetof(struct gps_dev_stats, protect_ns) },
	{ "fence_ns", offsetof(struct gps_dev_stats, fence_ns) },
	{ "fence_wait_ns", offsetof(struct gps_dev_stats, fence_wait_ns) },
	{ "queue_hwm", offsetof(struct gps_dev_stats, queue_hwm) },
	{ "replica_pages", offsetof(struct gps_dev_stats, replica_pages) },
	{ "twin_pages", offsetof(struct gps_dev_stats, twin_pages) },
	{ "subscribe_failed", offsetof(struct gps_dev_stats, subscribe_failed) },
	{ "tracking_faults", offsetof(struct gps_dev_stats, tracking_faults) },
	{ "demotions", offsetof(struct gps_dev_stats, demotions) },
	{ "collapses", offsetof(struct gps_dev_stats, collapses) },
	{ "link_wait_ns", offsetof(struct gps_dev_stats, link_wait_ns) },
	{ "migrations", offsetof(struct gps_dev_stats, migrations) },
	{ "bytes_migrated", offsetof(struct gps_dev_stats, bytes_migrated) },
	{ "thrash_pins", offsetof(struct gps_dev_stats, thrash_pins) },
	{ "thread_rounds", offsetof(struct gps_dev_stats, thread_rounds) },
};

static int gps_stats_show(struct seq_file *m, void *v)
{
	struct gps_dev *dev = m->private;
	int i;

	for (i = 0; i < ARRAY_SIZE(gps_counters); i++)
		seq_printf(m, "%s %lld\n", gps_counters[i].name,
			   atomic64_read((atomic64_t *)((char *)&dev->stats +
					 gps_counters[i].offset)));
	seq_printf(m, "queue_blocks %u\n", READ_ONCE(dev->queue.count));
	seq_printf(m, "queue_capacity %u\n", READ_ONCE(dev->queue.capacity));
	seq_printf(m, "dirty_replicas %lu\n", READ_ONCE(dev->nr_dirty));
	seq_printf(m, "writable_replicas %lu\n", READ_ONCE(dev->nr_hot));
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
