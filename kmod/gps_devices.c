// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the device table
 *
 * One struct gps_dev per online NUMA node at load (at most
 * GPS_MAX_DEVICES), in node order, indexed by device number: each with
 * its locks, its dirty list, its write queue of the shape the knobs give
 * at load, its diff scratch, its fence helpers and its push thread, all
 * on its node.  Beside it, the counters of the whole driver that
 * /sys/kernel/gps shows.  gps_main.c makes the table first at load and
 * frees it last.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/nodemask.h>
#include "gps_internal.h"

struct gps_dev *gps_devs;
unsigned int gps_nr_devs;
atomic64_t gps_nr_allocs;
atomic64_t gps_replica_pages;
atomic64_t gps_twin_pages;

/*
 * harvest_locks, and remote_locks, nest in device order: one lockdep
 * class per device.
 */
static struct lock_class_key gps_harvest_keys[GPS_MAX_DEVICES];
static struct lock_class_key gps_remote_keys[GPS_MAX_DEVICES];

/* Stop every device's threads and free the table. */
void gps_devs_free(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++) {
		gps_thread_stop(&gps_devs[d]);
		gps_helpers_stop(&gps_devs[d]);
		gps_push_queue_free(&gps_devs[d].queue);
		kfree(gps_devs[d].scratch);
	}
	kfree(gps_devs);
}

/* One device per online node, each running; 0 or -errno, nothing left. */
int gps_devs_init(void)
{
	int nid, d = 0, ret;

	/* Device masks are unsigned longs (set_bit): one bit per device. */
	BUILD_BUG_ON(BITS_PER_LONG < GPS_MAX_DEVICES);
	gps_nr_devs = min_t(unsigned int, num_online_nodes(), GPS_MAX_DEVICES);
	gps_devs = kcalloc(gps_nr_devs, sizeof(*gps_devs), GFP_KERNEL);
	if (!gps_devs)
		return -ENOMEM;
	for_each_online_node(nid) {
		struct gps_dev *dev = &gps_devs[d];

		if (d == gps_nr_devs)
			break;
		dev->id = d;
		dev->nid = nid;
		init_waitqueue_head(&dev->wait);
		mutex_init(&dev->harvest_lock);
		lockdep_set_class(&dev->harvest_lock, &gps_harvest_keys[d]);
		mutex_init(&dev->remote_lock);
		lockdep_set_class(&dev->remote_lock, &gps_remote_keys[d]);
		spin_lock_init(&dev->dirty_lock);
		spin_lock_init(&dev->link_lock);
		INIT_LIST_HEAD(&dev->dirty);
		d++;
		ret = gps_push_queue_alloc(&dev->queue, nid,
					   gps_knobs.queue_capacity,
					   gps_knobs.queue_watermark,
					   gps_knobs.block_size);
		if (ret)
			goto err_free;
		dev->scratch = kmalloc_node(sizeof(*dev->scratch),
					    GFP_KERNEL, nid);
		if (!dev->scratch) {
			ret = -ENOMEM;
			goto err_free;
		}
		ret = gps_helpers_start(dev);
		if (ret)
			goto err_free;
		ret = gps_thread_start(dev);
		if (ret)
			goto err_free;
	}
	return 0;

err_free:
	gps_nr_devs = d;
	gps_devs_free();
	return ret;
}
