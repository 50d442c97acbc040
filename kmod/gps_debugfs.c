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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include "gps_internal.h"

static struct dentry *gps_debugfs_root;

static int gps_stats_show(struct seq_file *m, void *v)
{
	struct gps_dev *dev = m->private;
	struct gps_dev_stats *s = &dev->stats;

#define GPS_SHOW(name) \
	seq_printf(m, "%s %lld\n", #name, atomic64_read(&s->name))
	GPS_SHOW(read_faults);
	GPS_SHOW(write_faults);
	GPS_SHOW(pages_harvested);
	GPS_SHOW(blocks_queued);
	GPS_SHOW(blocks_merged);
	GPS_SHOW(blocks_pushed);
	GPS_SHOW(bytes_pushed);
	GPS_SHOW(blocks_pushed_early);
	GPS_SHOW(blocks_bulk);
	GPS_SHOW(fences);
	GPS_SHOW(harvest_ns);
	GPS_SHOW(queue_hwm);
	GPS_SHOW(replica_pages);
	GPS_SHOW(twin_pages);
	GPS_SHOW(subscribe_failed);
	GPS_SHOW(tracking_faults);
	GPS_SHOW(demotions);
	GPS_SHOW(collapses);
	GPS_SHOW(link_wait_ns);
#undef GPS_SHOW
	seq_printf(m, "queue_entries %u\n", READ_ONCE(dev->queue.count));
	seq_printf(m, "queue_capacity %u\n", READ_ONCE(dev->queue.capacity));
	seq_printf(m, "dirty_replicas %lu\n", READ_ONCE(dev->nr_dirty));
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
