// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: harvesting dirty pages into the write queue
 *
 * A small page written since the last harvest sits on its owner device's
 * dirty list with a twin.  Harvesting it (the driver's counterpart of
 * stores reaching the GPS unit) takes four steps:
 *
 *  1. lock the dirty small pages of the replica and clear the dirty
 *     bits of those not kept writable (pages being written stay so, see
 *     gps_write_protect()): a write fault from now on waits for the page
 *     lock and then marks the page dirty again;
 *  2. write-protect those in every view that may map them, and the kept
 *     ones in every view but the owner's (the next write faults into
 *     gps_page_mkwrite()), and unlock: PTEs stay, made read-only, so
 *     loads go on without faults (gps_protect_range());
 *  3. under the GPS page lock, diff each page against its twin one word
 *     at a time, recording the changed bytes in a byte mask and copying
 *     them into the twin, so that the twin equals what was published;
 *  4. add the page's changed blocks with its mask to the device's queue,
 *     where a block already queued merges (coalescing), through
 *     gps_push_diff(), which pushes the oldest blocks past the high
 *     watermark; a densely written page is pushed whole instead.
 *
 * A twin of a page that was not written again meanwhile is freed: twins
 * live only while a page is writable, so their memory follows the write
 * working set, not the allocation.  A kept page that a diff finds
 * unchanged keep_writable_ms after its last store goes through steps 1
 * to 3 once more, write-protected this time (gps_retire()), which frees
 * its twin.
 *
 * Steps 1 and 2 are gps_protect.c's, the diff of step 3 the pure core's
 * (core/gps_diff.c), the list the replicas come from gps_dirty.c's.
 *
 * The loops that take replicas off the dirty list are here too: the push
 * thread's and a serial fence's (gps_harvest()), and a helped fence's,
 * batch by batch with the node's other CPUs (gps_harvest_helped(); the
 * threads are gps_help.c's).
 *
 * Called with the device's harvest_lock held (see gps_internal.h), by the
 * thread and the fences, and by a fence's helpers; calls the push.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/bitmap.h>
#include "gps_internal.h"
#include "gps_help.h"
#include "gps_still.h"
#include "gps_history.h"
#include "gps_trace.h"

/*
 * Step 3 for one small page: the mask of changed bytes goes to @df (the
 * bytes stay in the twin, or in the page that holds still, for the push).
 * Returns the number of changed blocks.
 */
static unsigned int gps_diff_replica(struct gps_replica *r, unsigned int sub,
				     unsigned int bs, struct gps_diff *df,
				     struct page **free_twin)
{
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);
	unsigned int nb = 0;
	bool keep;
	u64 *twin;
	u8 *cur;

	*free_twin = NULL;
	spin_lock(&gp->lock);
	if (!r->twins[sub]) {
		/* Harvested twice in a row and freed: nothing new. */
		gps_hist(GPS_H_DIFF, r->dev, 0, r->alloc, r->gidx, sub,
			 GPS_HF_NOTWIN);
		spin_unlock(&gp->lock);
		return 0;
	}
	/*
	 * Not dirty again: no view maps the page writable (a new write
	 * fault needs this lock to set the bit), so the page holds still,
	 * and the twin, about to be freed, needs no update.
	 */
	keep = test_bit(sub, r->dirty);
	/* Every page is diffed: see reliability.rst, "Capture windows". */
	cur = kmap_local_page(r->pages[sub]);
	twin = kmap_local_page(r->twins[sub]);
	nb = gps_diff_page(df, cur, twin, bs, keep);
	kunmap_local(twin);
	kunmap_local(cur);

	if (!keep) {
		*free_twin = r->twins[sub];
		r->twins[sub] = NULL;
	}
	gps_hist(GPS_H_DIFF, r->dev, 0, r->alloc, r->gidx, sub,
		 nb | (keep ? GPS_HF_KEEP : 0));
	spin_unlock(&gp->lock);
	return nb;
}

/*
 * Steps 3 and 4 for small page @i of @r: diff it and push or queue what
 * changed; its twin goes if the page is no longer dirty.  Returns the
 * number of changed blocks.
 */
static unsigned int gps_harvest_page(struct gps_harvester *h,
				     struct gps_replica *r, unsigned int i)
{
	struct gps_dev *dev = h->dev;
	struct page *twin;
	unsigned int nb = gps_diff_replica(r, i, dev->queue.block_size, h->df,
					   &twin);

	if (nb)
		gps_push_diff(h, r, i, nb);
	if (twin) {
		atomic64_dec(&gps_twin_pages);
		atomic64_dec(&dev->stats.twin_pages);
		twin = gps_still_adopt(r, i, twin);
		if (twin)
			put_page(twin);
	}
	return nb;
}

/**
 * gps_harvest_replica() - harvest every dirty small page of a replica
 * @h: the harvester, its device the owner of @r
 * @r: replica taken off the dirty list by the caller
 *
 * Return: the number of small pages diffed.
 */
unsigned int gps_harvest_replica(struct gps_harvester *h,
				 struct gps_replica *r)
{
	struct gps_dev *dev = h->dev;
	unsigned long dirty[BITS_TO_LONGS(GPS_PAGE_2M / PAGE_SIZE)];
	/* expiring pages, then those of them the diff found unchanged */
	unsigned long idle[BITS_TO_LONGS(GPS_PAGE_2M / PAGE_SIZE)];
	struct gps_alloc *a = r->alloc;
	struct gps_gpage *gp = gps_gpage(a, r->gidx);
	unsigned int i, nb, pages = 0, changed = 0;
	u64 t0 = gps_clock();
	bool stored = false, kept, hot;

	gps_assert_harvesting(dev);
	kept = gps_write_protect(r, dirty, idle);
	atomic64_add(gps_clock_since(t0), &dev->stats.protect_ns);
	for_each_set_bit(i, dirty, a->nr_sub) {
		nb = gps_harvest_page(h, r, i);
		pages++;
		if (!nb)
			continue;
		changed++;
		/* A kept page stored to: kept for keep_writable_ms more. */
		if (kept) {
			r->seen[i] = jiffies | 1;
			stored = true;
			__clear_bit(i, idle);
		}
	}
	if (!bitmap_empty(idle, a->nr_sub)) {
		t0 = gps_clock();
		gps_retire(r, idle);
		atomic64_add(gps_clock_since(t0), &dev->stats.protect_ns);
		/* Stores since the first diff go now; the twins go too. */
		for_each_set_bit(i, idle, a->nr_sub)
			changed += gps_harvest_page(h, r, i) > 0;
	}
	/* One small page changed: capture only the faulting one next. */
	spin_lock(&gp->lock);
	if (pages)
		r->narrow = changed < 2;
	/* idle is a part of dirty: pages are left kept unless it is all */
	hot = kept && !bitmap_equal(dirty, idle, a->nr_sub);
	if (hot)
		gps_mark_hot(r, stored);
	gps_hist(GPS_H_HARVEST, r->dev, (kept ? GPS_HH_KEPT : 0) |
		 (stored ? GPS_HH_STORED : 0) | (hot ? GPS_HH_HOT : 0),
		 a, r->gidx, 0, pages | changed << 16);
	spin_unlock(&gp->lock);
	atomic64_add(pages, &dev->stats.pages_harvested);
	if (h->st)
		h->st->pages_harvested += pages;
	return pages;
}

/* Count a harvest of @done replicas (none: nothing) begun at @t0. */
static void gps_harvest_account(struct gps_dev *dev, u64 t0, u64 pages,
				unsigned long done)
{
	if (!done)
		return;
	atomic64_add(gps_clock_since(t0), &dev->stats.harvest_ns);
	trace_gps_harvest(dev->id, pages, dev->queue.count, done);
}

/**
 * gps_harvest() - harvest up to @budget dirty replicas of @dev
 * @dev: device, harvest_lock held
 * @budget: replicas to take off the dirty list at most
 * @min_age: leave replicas dirtied less than this many ns ago (the push
 *	thread: a page write-protected right after its write fault would
 *	make the store fault again, and again); 0 for a fence
 * @st: fence statistics to add to, or NULL
 *
 * Replicas dirtied again while this runs go to the tail of the list, so a
 * budget of the list's length at entry covers every store made before.
 * The push thread's harvest ends early when a fence waits for the lock.
 *
 * Return: the number of replicas harvested.
 */
unsigned long gps_harvest(struct gps_dev *dev, unsigned long budget,
			  u64 min_age, struct gps_fence_stats *st)
{
	struct gps_harvester h = { .dev = dev, .df = dev->scratch, .st = st };
	u64 t0 = gps_clock(), pages = 0;
	unsigned long done = 0;
	struct gps_replica *r;

	lockdep_assert_held(&dev->harvest_lock);
	/* The push thread (@min_age) gives way to a waiting fence. */
	while (done < budget && !(min_age && gps_fence_waits(dev)) &&
	       (r = gps_dirty_pop(dev, min_age))) {
		pages += gps_harvest_replica(&h, r);
		done++;
		cond_resched();
	}
	gps_harvest_account(dev, t0, pages, done);
	return done;
}

/* Harvest replicas of the batch until none is left: pages harvested. */
unsigned long gps_harvest_shared(struct gps_helpers *hs,
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
static unsigned long gps_harvest_batch(struct gps_dev *dev, unsigned int n,
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
	pages = gps_harvest_shared(hs, h);
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
		pages += gps_harvest_batch(dev, n, min(nh, n - 1), &h);
		done += n;
	}
	gps_harvest_account(dev, t0, pages, done);
	return done;
}
