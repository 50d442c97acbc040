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
 * helper's wake-up.
 *
 * The fence holds the device's harvest_lock throughout and waits for every
 * helper before its next batch, so they work under its lock: nothing else
 * harvests, pushes, reshapes the queue or changes a subscription
 * meanwhile (gps_assert_harvesting()).  The queue is the holder's alone:
 * every harvester of a helped fence pushes each changed page at once
 * (gps_push_page()), as the fence's drain would right after.  A batch
 * never holds a replica twice (gps_dirty_take()), so a replica's pages,
 * twins and PTEs see one harvester, and the receivers' pages, which
 * replicas of one GPS page share, are written under that page's lock.
 *
 * fence_threads caps the CPUs of the node a fence uses: 0 all of them, 1
 * the caller alone (the serial fence, with the queue).  With bulk_blocks
 * = 0, the paper's queue for every block, fences are not helped.
 *
 * Calls the harvest; called by the fences.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/cpumask.h>
#include <linux/topology.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include "gps_internal.h"

#define GPS_HELPERS_MAX	15
#define GPS_HELP_BATCH	64

struct gps_helper {
	struct kthread_worker *worker;	/* gps/<node>.<k> */
	struct kthread_work work;
	struct gps_helpers *hs;
	struct gps_fence_stats st;	/* this batch's, summed by the fence */
	struct gps_harvester h;
	struct gps_diff df;
};

/* One device's helpers and the batch they share; under its harvest_lock. */
struct gps_helpers {
	unsigned int nr;
	unsigned int nr_batch;
	atomic_t next;			/* the batch's next replica to take */
	struct gps_replica *batch[GPS_HELP_BATCH];
	struct gps_helper helper[];
};

/* Harvest replicas of the batch until none is left: pages harvested. */
static unsigned long gps_help_run(struct gps_helpers *hs,
				  struct gps_harvester *h)
{
	unsigned long pages = 0;
	unsigned int i;

	while ((i = atomic_inc_return(&hs->next) - 1) < hs->nr_batch) {
		pages += gps_harvest_replica(h, hs->batch[i]);
		cond_resched();
	}
	return pages;
}

static void gps_help_work(struct kthread_work *work)
{
	struct gps_helper *hp = container_of(work, struct gps_helper, work);

	gps_help_run(hp->hs, &hp->h);
}

static void gps_stats_add(struct gps_fence_stats *to,
			  const struct gps_fence_stats *st)
{
	to->pages_harvested += st->pages_harvested;
	to->blocks_pushed += st->blocks_pushed;
	to->bytes_pushed += st->bytes_pushed;
}

/*
 * One batch of @n replicas in hs->batch, on the caller and @k helpers.
 * Returns the pages harvested.
 */
static unsigned long gps_help_batch(struct gps_dev *dev, unsigned int n,
				    unsigned int k, struct gps_harvester *h)
{
	struct gps_helpers *hs = dev->helpers;
	unsigned long pages, helped = 0;
	unsigned int i;

	hs->nr_batch = n;
	atomic_set(&hs->next, 0);
	WRITE_ONCE(dev->helped, true);
	for (i = 0; i < k; i++) {
		memset(&hs->helper[i].st, 0, sizeof(hs->helper[i].st));
		kthread_queue_work(hs->helper[i].worker, &hs->helper[i].work);
	}
	pages = gps_help_run(hs, h);
	/*
	 * A helper not woken yet finds nothing left: it is cancelled, not
	 * waited for.  One at work is waited for.
	 */
	for (i = 0; i < k; i++) {
		struct gps_fence_stats *st = &hs->helper[i].st;

		kthread_cancel_work_sync(&hs->helper[i].work);
		helped += st->pages_harvested;
		if (h->st)
			gps_stats_add(h->st, st);
	}
	WRITE_ONCE(dev->helped, false);
	atomic64_add(helped, &dev->stats.pages_helped);
	return pages + helped;
}

/**
 * gps_harvest_helped() - a fence's harvest, on the CPUs of the node
 * @dev: device, harvest_lock held
 * @budget: replicas to take off the dirty list at most
 * @st: fence statistics to add to
 *
 * As gps_harvest() with no minimum age, with the device's helpers when
 * it has some and fence_threads and bulk_blocks let them.
 *
 * Return: the number of replicas harvested.
 */
unsigned long gps_harvest_helped(struct gps_dev *dev, unsigned long budget,
				 struct gps_fence_stats *st)
{
	struct gps_harvester h = {
		.dev = dev, .df = dev->scratch, .st = st, .direct = true,
	};
	struct gps_helpers *hs = dev->helpers;
	unsigned int cap = READ_ONCE(gps_knobs.fence_threads);
	unsigned int nh = hs ? hs->nr : 0, n;
	unsigned long done = 0, pages = 0;
	u64 t0;

	lockdep_assert_held(&dev->harvest_lock);
	if (cap)
		nh = min(nh, cap - 1);
	/* bulk_blocks = 0: the paper's queue takes every block */
	if (!nh || budget < 2 || !READ_ONCE(gps_knobs.bulk_blocks))
		return gps_harvest(dev, budget, 0, st);
	t0 = gps_clock();
	while (done < budget) {
		n = gps_dirty_take(dev, hs->batch,
				   min_t(unsigned long, budget - done,
					 GPS_HELP_BATCH));
		if (!n)
			break;
		pages += gps_help_batch(dev, n, min(nh, n - 1), &h);
		done += n;
	}
	gps_harvest_account(dev, t0, pages, done);
	return done;
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
