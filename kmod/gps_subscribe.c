// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: changing subscriptions
 *
 * Subscribe, unsubscribe and collapse advice, and the building blocks
 * tracking uses.  Every change takes every harvest_lock and sub_sem for
 * writing, so no harvest or push runs and no fault looks a page up while
 * the shadow page table changes (see gps_internal.h), and starts with
 * gps_quiesce(): the range's views zapped, every device's pending stores
 * published.  Replicas are copied, added and dropped only then, so no
 * change of subscription loses or reorders a store.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/log2.h>
#include "gps_internal.h"
#include "gps_history.h"

/**
 * gps_subscribe_page() - give @dev a replica of GPS page @g, filled
 * @a: allocation; every harvest_lock and sub_sem (write) held, the
 *	page's views zapped and every queue drained since
 * @g: GPS page
 * @dev: device
 *
 * The copy is taken from a replica with nothing pending: a store still
 * waiting in its source would otherwise be pushed into the new replica
 * later, over a newer store made there (see gps_quiesce()).
 *
 * Return: 1 if subscribed, 0 if it was already, -ENOMEM if @dev's node
 * cannot hold the replica (counted, the page stays as it was).
 */
int gps_subscribe_page(struct gps_alloc *a, unsigned long g, int dev)
{
	struct gps_gpage *gp = gps_gpage(a, g);
	struct gps_replica *r, *src;
	unsigned int i;

	lockdep_assert_held_write(&a->sub_sem);
	gps_assert_all_harvesting();
	if (gp->rep[dev])
		return 0;
	r = gps_replica_alloc(a, g, dev, false);
	if (!r) {
		atomic64_inc(&gps_devs[dev].stats.subscribe_failed);
		return -ENOMEM;
	}
	src = gps_view_replica(a, gp, dev);
	/*
	 * Copied before gp->lock, which only publishes @r: nothing else
	 * touches these pages meanwhile.  Pushes and harvests need a
	 * harvest_lock, the driver's copies and the fault paths sub_sem, and
	 * the zap left no view mapping @src; @r is nobody's yet.  Up to
	 * 2 MiB, so not with preemption off.
	 */
	for (i = 0; i < a->nr_sub; i++)
		copy_highpage(r->pages[i], src->pages[i]);
	spin_lock(&gp->lock);
	gp->rep[dev] = r;
	gp->subs |= BIT_ULL(dev);
	gp->collapsed = false;
	gps_hist(GPS_H_SUB, dev, src->dev, a, g, 0, 0);
	spin_unlock(&gp->lock);
	return 1;
}

/**
 * gps_quiesce() - stop every write to a range and publish every store
 * @a: allocation; every harvest_lock and sub_sem (write) held
 * @first: first GPS page
 * @nr: GPS pages
 *
 * What a change of subscription starts with.  After the zap a fault in
 * the range waits on sub_sem; after the drain no replica of any device
 * has a store pending (dirty page or queued block), so replicas can be
 * copied, dropped or added without one store landing after a newer one.
 */
void gps_quiesce(struct gps_alloc *a, unsigned long first, unsigned long nr)
{
	lockdep_assert_held_write(&a->sub_sem);
	gps_assert_all_harvesting();
	gps_zap_views(a, first, nr, NULL);
	gps_drain_all_locked(NULL);
}

/**
 * gps_unsubscribe_page() - drop @dev's replica of GPS page @g
 * @a: allocation; every harvest_lock and sub_sem (write) held, the
 *	page's views zapped and every queue drained since
 * @g: GPS page
 * @dev: a subscriber that is not the last one
 * @zap: zap the views again (with the in-flight fault barrier) before
 *	freeing; false when the caller zapped the range under sub_sem
 */
void gps_unsubscribe_page(struct gps_alloc *a, unsigned long g, int dev,
			  bool zap)
{
	struct gps_gpage *gp = gps_gpage(a, g);
	struct gps_replica *r = gp->rep[dev];
	struct gps_dev *owner = &gps_devs[dev];

	lockdep_assert_held_write(&a->sub_sem);
	gps_assert_all_harvesting();
	spin_lock(&gp->lock);
	gp->rep[dev] = NULL;
	gp->subs &= ~BIT_ULL(dev);
	spin_unlock(&gp->lock);
	spin_lock(&owner->dirty_lock);
	gps_hist(GPS_H_UNSUB, dev, -1, a, g, 0, r->on_dirty_list);
	gps_dirty_del(owner, r);
	spin_unlock(&owner->dirty_lock);
	if (zap)
		gps_zap_views(a, g, 1, r);
	gps_replica_free(r);
}

/* Keep one copy of GPS page @g, the one @dev sees; same locks as above. */
static int gps_collapse_page(struct gps_alloc *a, unsigned long g, int dev)
{
	struct gps_gpage *gp = gps_gpage(a, g);
	int keep = gps_view_replica(a, gp, dev)->dev, d, dropped = 0;

	lockdep_assert_held_write(&a->sub_sem);
	gps_assert_all_harvesting();
	for (d = 0; d < gps_nr_devs; d++) {
		if (d == keep || !gp->rep[d])
			continue;
		gps_unsubscribe_page(a, g, d, false);
		dropped++;
	}
	gps_hist(GPS_H_COLLAPSE, keep, -1, a, g, 0, dropped);
	if (!gp->collapsed)
		atomic64_inc(&gps_devs[keep].stats.collapses);
	gp->collapsed = true;
	return dropped ? 1 : 0;
}

/**
 * gps_advise() - GPS_IOC_ADVISE: change subscriptions of a range
 * @ctx: the open file
 * @args: the request; pages_changed and pages_failed are filled in
 *
 * Unsubscribing the last subscriber of any page fails with -EBUSY and
 * changes nothing.  A replica that cannot be allocated leaves the device
 * unsubscribed from that page and is counted, not an error.
 *
 * Return: 0; -EINVAL for bad advice or device, an unknown or freed
 * allocation, advice other than collapse on conventional memory, any
 * advice on managed memory, or a range that is not whole GPS pages inside
 * the allocation; -EBUSY; -EINTR if a fatal signal arrived while taking
 * the harvest_locks.
 */
int gps_advise(struct gps_ctx *ctx, struct gps_advise_args *args)
{
	unsigned long g, first, last;
	struct gps_alloc *a;
	int ret = 0;

	if (args->advice != GPS_ADVISE_SUBSCRIBE &&
	    args->advice != GPS_ADVISE_UNSUBSCRIBE &&
	    args->advice != GPS_ADVISE_COLLAPSE)
		return -EINVAL;
	if (args->device >= gps_nr_devs)
		return -EINVAL;
	a = gps_alloc_get(ctx, args->handle);
	if (!a)
		return -EINVAL;
	/* Managed pages have one copy already, and faults move it. */
	if ((a->kind != GPS_MEM_GPS && args->advice != GPS_ADVISE_COLLAPSE) ||
	    a->kind == GPS_MEM_MANAGED ||
	    !gps_range_ok(a, args->offset, args->length) ||
	    !IS_ALIGNED(args->offset | args->length, 1ULL << a->gshift)) {
		ret = -EINVAL;
		goto out_put;
	}
	first = args->offset >> a->gshift;
	last = (args->offset + args->length) >> a->gshift;

	ret = gps_lock_all(true);
	if (ret)
		goto out_put;
	down_write(&a->sub_sem);
	if (a->dead) {
		ret = -EINVAL;
		goto out_unlock;
	}
	for (g = first; g < last; g++) {
		if (args->advice == GPS_ADVISE_UNSUBSCRIBE &&
		    gps_gpage(a, g)->subs == BIT_ULL(args->device)) {
			ret = -EBUSY;
			goto out_unlock;
		}
	}
	gps_quiesce(a, first, last - first);
	for (g = first; g < last; g++) {
		if (args->advice == GPS_ADVISE_SUBSCRIBE) {
			int r = gps_subscribe_page(a, g, args->device);

			if (r < 0)
				args->pages_failed++;
			else
				args->pages_changed += r;
		} else if (args->advice == GPS_ADVISE_COLLAPSE) {
			args->pages_changed += gps_collapse_page(a, g,
								 args->device);
		} else if (gps_gpage(a, g)->rep[args->device]) {
			gps_unsubscribe_page(a, g, args->device, false);
			args->pages_changed++;
		}
		cond_resched();
	}
out_unlock:
	up_write(&a->sub_sem);
	gps_unlock_all();
out_put:
	gps_alloc_put(a);
	return ret;
}
