// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: fence helpers: a fence's harvest on every CPU of the node
 *
 * A fence harvests, in the caller's context, the replicas that were dirty
 * when it started: on one CPU, while the node's others wait for the
 * release it gives (the device's kernel has ended).  So each device has
 * helper threads, gps/<node>.<k>, one per other CPU of its node (at most
 * GPS_HELPERS_MAX), allowed only on the node's CPUs.  The fence takes a
 * batch of replicas off the dirty list, and it and its helpers harvest
 * them at the same time, each taking the next replica of the batch with
 * a diff mask of its own, batch after batch until the fence's budget is
 * spent.  When the fence has taken the batch's last replica it cancels
 * the helpers that have not started: a small batch costs no wait for a
 * helper's wake-up.  That loop is the harvest's (gps_harvest_helped(),
 * gps_harvest.c), beside the push thread's: this file keeps the threads.
 *
 * The fence holds the device's harvest_lock throughout and waits for every
 * helper before its next batch, so they work under its lock: nothing else
 * harvests, pushes, reshapes the queue or changes a subscription
 * meanwhile (gps_assert_harvesting()).  The queue is the holder's alone:
 * every harvester of a helped fence pushes each changed page at once
 * (gps_push_diff()), as the fence's drain would right after.  A batch
 * never holds a replica twice (gps_dirty_take()), so a replica's pages,
 * twins and PTEs see one harvester, and the receivers' pages, which
 * replicas of one GPS page share, are written under that page's lock.
 *
 * fence_threads caps the CPUs of the node a fence uses: 0 all of them, 1
 * the caller alone (the serial fence, with the queue).  With bulk_blocks
 * = 0, the paper's queue for every block, fences are not helped.
 *
 * Calls the harvest's shared loop; started and stopped with the devices.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/cpumask.h>
#include <linux/topology.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include "gps_internal.h"
#include "gps_help.h"

#define GPS_HELPERS_MAX	15

static void gps_help_work(struct kthread_work *work)
{
	struct gps_helper *hp = container_of(work, struct gps_helper, work);

	gps_harvest_shared(hp->hs, &hp->h);
}

/**
 * gps_helpers_start() - start a device's fence helpers on its node
 * @dev: device
 *
 * One per CPU of the node but the fence's own, at most GPS_HELPERS_MAX;
 * none on a node of one CPU.
 *
 * Return: 0 or -ENOMEM.
 */
int gps_helpers_start(struct gps_dev *dev)
{
	unsigned int cpus = cpumask_weight(cpumask_of_node(dev->nid));
	unsigned int nr = min_t(unsigned int, cpus ? cpus - 1 : 0,
				GPS_HELPERS_MAX);
	struct gps_helpers *hs;
	unsigned int k;

	if (!nr)
		return 0;
	hs = kzalloc_node(struct_size(hs, helper, nr), GFP_KERNEL, dev->nid);
	if (!hs)
		return -ENOMEM;
	for (k = 0; k < nr; k++) {
		struct gps_helper *hp = &hs->helper[k];
		struct kthread_worker *w;

		w = kthread_create_worker(0, "gps/%d.%u", dev->nid, k + 1);
		if (IS_ERR(w))
			break;
		set_cpus_allowed_ptr(w->task, cpumask_of_node(dev->nid));
		kthread_init_work(&hp->work, gps_help_work);
		hp->worker = w;
		hp->hs = hs;
		hp->h = (struct gps_harvester){
			.dev = dev, .df = &hp->df, .st = &hp->st,
			.direct = true,
		};
		hs->nr++;
	}
	if (!hs->nr) {
		kfree(hs);
		return -ENOMEM;
	}
	dev->helpers = hs;
	return 0;
}

void gps_helpers_stop(struct gps_dev *dev)
{
	struct gps_helpers *hs = dev->helpers;
	unsigned int k;

	if (!hs)
		return;
	for (k = 0; k < hs->nr; k++)
		kthread_destroy_worker(hs->helper[k].worker);
	kfree(hs);
	dev->helpers = NULL;
}
