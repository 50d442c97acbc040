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
 *     gps_push_queue(), which pushes the oldest blocks past the high
 *     watermark; a densely written page is pushed whole instead.
 *
 * A twin of a page that was not written again meanwhile is freed: twins
 * live only while a page is writable, so their memory follows the write
 * working set, not the allocation.  A kept page that a diff finds
 * unchanged keep_writable_ms after its last store goes through steps 1
 * to 3 once more, write-protected this time (gps_retire()), which frees
 * its twin.
 *
 * Called with the device's harvest_lock held (see gps_internal.h), by the
 * thread and the fences; calls the push.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/bitmap.h>
#include <linux/ktime.h>
#include "gps_internal.h"
#include "gps_bytes.h"
#include "gps_still.h"
#include "gps_delay.h"
#include "gps_history.h"
#include "gps_trace.h"

/* Backoff of an idle kept replica: 200 us << 20 exceeds any keep. */
#define GPS_IDLE_MAX	20

/**
 * gps_mark_dirty() - put a replica on its owner's dirty list
 * @r: replica with a dirty bit just set; caller holds its GPS page lock
 */
void gps_mark_dirty(struct gps_replica *r)
{
	struct gps_dev *dev = &gps_devs[r->dev];
	bool wake = false;

	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	spin_lock(&dev->dirty_lock);
	r->dirtied_ns = gps_clock();
	if (!r->on_dirty_list) {
		list_add_tail(&r->dirty_link, &dev->dirty);
		r->on_dirty_list = true;
		dev->nr_dirty++;
		wake = dev->nr_dirty - dev->nr_hot ==
		       READ_ONCE(gps_knobs.dirty_wake);
	} else if (r->hot) {
		/* A fault: dirty now, in its place on the list. */
		r->hot = false;
		dev->nr_hot--;
	}
	spin_unlock(&dev->dirty_lock);
	if (wake)
		wake_up(&dev->wait);
}

/*
 * Back on the dirty list for its small pages kept writable: the next
 * harvest (a fence, or the thread) diffs them again.  @stored: this
 * harvest saw a store, so more may follow; the thread backs off while
 * it sees none (gps_dirty_pop()).  Not counted towards dirty_wake: no
 * fault said they were written.
 */
static void gps_mark_hot(struct gps_replica *r, bool stored)
{
	struct gps_dev *dev = &gps_devs[r->dev];

	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	spin_lock(&dev->dirty_lock);
	if (!r->on_dirty_list) {
		r->dirtied_ns = gps_clock();
		list_add_tail(&r->dirty_link, &dev->dirty);
		r->on_dirty_list = true;
		r->hot = true;
		r->idle = stored ? 0 : min_t(unsigned int, r->idle + 1,
					     GPS_IDLE_MAX);
		dev->nr_dirty++;
		dev->nr_hot++;
	}
	spin_unlock(&dev->dirty_lock);
}

/**
 * gps_dirty_del() - take a replica off its owner's dirty list
 * @dev: the owner, dirty_lock held
 * @r: replica, on the list or not
 */
void gps_dirty_del(struct gps_dev *dev, struct gps_replica *r)
{
	lockdep_assert_held(&dev->dirty_lock);
	if (!r->on_dirty_list)
		return;
	list_del_init(&r->dirty_link);
	r->on_dirty_list = false;
	dev->nr_dirty--;
	if (r->hot) {
		r->hot = false;
		dev->nr_hot--;
	}
}

/*
 * The oldest dirty replica not written to within @min_age ns, looking at
 * the first GPS_POP_SCAN of the list at most.  With @min_age (the push
 * thread), a replica on the list only for pages left writable waits
 * @min_age after a harvest that saw a store: it is being written, and
 * its stores go out while compute goes on, with no fault.  Its stores
 * raise no fault either when they start again, so the thread looks at
 * an idle one with a wait that doubles (each look diffs its kept pages)
 * up to keep_writable_ms, when its pages go back to faulting.  Such
 * replicas count a sixteenth towards the scan.
 */
#define GPS_POP_SCAN	64
static u64 gps_hot_age(const struct gps_replica *r, u64 min_age, u64 keep)
{
	return min(min_age << r->idle, keep);
}

static struct gps_replica *gps_dirty_pop(struct gps_dev *dev, u64 min_age)
{
	u64 hot_age = max_t(u64, min_age, (u64)NSEC_PER_MSEC *
			    READ_ONCE(gps_knobs.keep_writable_ms));
	struct gps_replica *r = NULL, *it;
	u64 now = min_age ? gps_clock() : 0;
	int scanned = 0;

	spin_lock(&dev->dirty_lock);
	list_for_each_entry(it, &dev->dirty, dirty_link) {
		if (!min_age || (s64)(now - it->dirtied_ns) >=
		    (s64)(it->hot ? gps_hot_age(it, min_age, hot_age) :
				    min_age)) {
			r = it;
			break;
		}
		scanned += it->hot ? 1 : 16;
		if (scanned >= 16 * GPS_POP_SCAN)
			break;
	}
	if (r)
		gps_dirty_del(dev, r);
	spin_unlock(&dev->dirty_lock);
	return r;
}

/**
 * gps_dirty_take() - take up to @n replicas off the head of the dirty list
 * @dev: device, harvest_lock held
 * @batch: where they go, oldest first
 * @n: room in @batch
 *
 * At once, under one hold of dirty_lock: a replica re-dirtied by a fault
 * meanwhile goes back to the list, and must not come twice into one
 * batch, whose replicas are harvested at the same time.
 *
 * Return: the number taken.
 */
unsigned int gps_dirty_take(struct gps_dev *dev, struct gps_replica **batch,
			    unsigned int n)
{
	struct gps_replica *r;
	unsigned int k = 0;

	lockdep_assert_held(&dev->harvest_lock);
	spin_lock(&dev->dirty_lock);
	while (k < n && !list_empty(&dev->dirty)) {
		r = list_first_entry(&dev->dirty, struct gps_replica,
				     dirty_link);
		gps_dirty_del(dev, r);
		batch[k++] = r;
	}
	spin_unlock(&dev->dirty_lock);
	return k;
}

#ifdef CONFIG_MAPPING_DIRTY_HELPERS
static void gps_wp_range(struct address_space *mapping, pgoff_t pgoff,
			 pgoff_t nr)
{
	wp_shared_mapping_range(mapping, pgoff, nr);
}

#else
/* Not called: IS_ENABLED(CONFIG_MAPPING_DIRTY_HELPERS) is false. */
static void gps_wp_range(struct address_space *mapping, pgoff_t pgoff,
			 pgoff_t nr)
{
}
#endif

/*
 * Write-protect @nr pages of the file from @pgoff in every mapping:
 * read-only PTEs in place and one TLB flush per VMA, where the kernel has
 * the mapping dirty helpers (Debian's do, for vmwgfx); else, or with
 * @zap, by zapping the PTEs, which also makes the next load fault (what
 * tracking needs to see reads).
 */
static void gps_protect_range(struct address_space *mapping, pgoff_t pgoff,
			      pgoff_t nr, bool zap)
{
	if (IS_ENABLED(CONFIG_MAPPING_DIRTY_HELPERS) && !zap)
		gps_wp_range(mapping, pgoff, nr);
	else
		unmap_mapping_range(mapping, (loff_t)pgoff << PAGE_SHIFT,
				    (loff_t)nr << PAGE_SHIFT, 0);
}

/*
 * The views that may map @r: only those whose target it is now, as one
 * that maps another replica since a subscription change must keep that
 * replica's pages writable.  The targets cannot change before the caller
 * is done: that takes every harvest_lock, the caller's too.  GPS page
 * lock held.
 */
static void gps_views_of(struct gps_replica *r, unsigned long *views)
{
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);
	int v;

	bitmap_copy(views, r->mapped_views, gps_nr_views());
	for_each_set_bit(v, views, gps_nr_views())
		if (gps_view_replica(r->alloc, gp, v) != r)
			__clear_bit(v, views);
}

/*
 * Write-protect small pages of @r: @own in the owner's view (none if
 * NULL), @others in the other @views.  Their pages locked.
 */
static void gps_protect_views(struct gps_replica *r, const unsigned long *views,
			      const unsigned long *own,
			      const unsigned long *others, bool zap)
{
	struct gps_alloc *a = r->alloc;
	unsigned int s, e, nr = a->nr_sub;
	int v;

	for_each_set_bit(v, views, gps_nr_views()) {
		pgoff_t base = a->pgoff + v * a->stride + r->gidx * nr;
		const unsigned long *pages = v == r->dev ? own : others;

		if (!pages)
			continue;
		for_each_set_bitrange(s, e, pages, nr)
			gps_protect_range(a->ctx->mapping, base + s, e - s,
					  zap);
	}
}

/*
 * Steps 1 and 2: the small pages that were dirty go to @dirty, and of
 * them those whose last store seen is older than keep_writable_ms to
 * @expiring.  Returns whether they are all kept writable.
 *
 * A page kept writable by the last harvest stays so: it keeps its dirty
 * bit, its twin and its PTEs in the owner's view, so that the owner's
 * stores of the next epochs go through without a fault and are found by
 * the diff of every harvest.  Whether it was stored to is known only
 * after that diff: an expiring page that it finds unchanged is then
 * write-protected (gps_retire()).  Its PTEs' dirty bits are not read:
 * cleaning them costs a TLB flush (an IPI to every CPU of the process)
 * per replica and harvest, more than the diff it could spare.  A page
 * written since the last harvest through a fault (dirty, not kept) was
 * stored to now: it is kept too.  Nothing is kept writable while
 * tracking (it needs the faults) or without the kernel's mapping dirty
 * helpers (protection would zap, and a load would fault): then every
 * page is write-protected.
 */
static bool gps_write_protect(struct gps_replica *r, unsigned long *dirty,
			      unsigned long *expiring)
{
	struct gps_alloc *a = r->alloc;
	struct gps_gpage *gp = gps_gpage(a, r->gidx);
	unsigned int i, nr = a->nr_sub;
	unsigned int keep = READ_ONCE(gps_knobs.keep_writable_ms);
	bool zap = READ_ONCE(a->tracking);
	bool kept = IS_ENABLED(CONFIG_MAPPING_DIRTY_HELPERS) && keep && !zap;
	DECLARE_BITMAP(views, GPS_MAX_VIEWS);
	unsigned long now = jiffies;

	spin_lock(&gp->lock);
	bitmap_copy(dirty, r->dirty, nr);
	spin_unlock(&gp->lock);
	bitmap_zero(expiring, nr);
	gps_delay(GPS_DELAY_HARVEST_LOCK);

	/*
	 * The views are read with the pages locked: a view that maps one
	 * writable does so in page_mkwrite, page locked, so either it is
	 * among them or its fault comes after, and dirties the page again.
	 * Dirty bits are cleared only by harvests, which hold our lock.
	 */
	for_each_set_bit(i, dirty, nr)
		lock_page(r->pages[i]);
	spin_lock(&gp->lock);
	gps_views_of(r, views);
	spin_unlock(&gp->lock);
	/* seen: jiffies | 1, 0 for never (jiffies start near wrap) */
	if (kept) {
		for_each_set_bit(i, dirty, nr) {
			if (!test_bit(i, r->kept))
				r->seen[i] = now | 1;
			else if (!r->seen[i] ||
				 time_after(now, r->seen[i] +
					    msecs_to_jiffies(keep)))
				__set_bit(i, expiring);
		}
	}
	spin_lock(&gp->lock);
	if (kept) {
		bitmap_copy(r->kept, dirty, nr);
	} else {
		bitmap_andnot(r->dirty, r->dirty, dirty, nr);
		bitmap_zero(r->kept, nr);
	}
	gps_hist_bits(GPS_H_PROTECT, r->dev, kept, a, r->gidx, dirty, nr);
	spin_unlock(&gp->lock);

	/*
	 * Pages stay writable in the owner's view only: another view's
	 * next store must fault, which tells that device's fences to fence
	 * the owner too (remote_mask).
	 */
	gps_protect_views(r, views, kept ? NULL : dirty, dirty, zap);
	if (!kept) {
		spin_lock(&gp->lock);
		bitmap_andnot(r->wmapped, r->wmapped, dirty, nr);
		spin_unlock(&gp->lock);
	}
	for_each_set_bit(i, dirty, nr)
		unlock_page(r->pages[i]);
	return kept;
}

/* The blocks of @df's mask with a changed byte, into df->blocks. */
static unsigned int gps_changed_blocks(struct gps_diff *df, unsigned int bs)
{
	unsigned int k, n = 0;

	bitmap_zero(df->blocks, GPS_QBLOCKS_MAX);
	for (k = 0; k < PAGE_SIZE / bs; k++) {
		if (gps_bytes_any(df->mask + k * bs / BITS_PER_LONG, bs)) {
			__set_bit(k, df->blocks);
			n++;
		}
	}
	return n;
}

/*
 * Step 3 for one small page: the mask of changed bytes goes to @df (the
 * bytes stay in the twin, or in the page that holds still, for the push).
 * Returns the number of changed blocks.
 */
static unsigned int gps_diff_page(struct gps_replica *r, unsigned int sub,
				  unsigned int bs, struct gps_diff *df,
				  struct page **free_twin)
{
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);
	unsigned int nb = 0;
	bool keep;
	u64 *twin;
	u8 *cur;

	*free_twin = NULL;
	bitmap_zero(df->mask, PAGE_SIZE);
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
	gps_diff_words((u64 *)cur, twin, df->mask, PAGE_SIZE / sizeof(u64),
		       keep);
	nb = gps_changed_blocks(df, bs);
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
 * Expiring kept pages, @idle, that their diff found unchanged: no longer
 * kept or dirty, and write-protected in every view (another device's
 * write fault may have mapped one writable since step 2), so that the
 * diff that follows frees their twins.
 */
static void gps_retire(struct gps_replica *r, const unsigned long *idle)
{
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);
	unsigned int i, nr = r->alloc->nr_sub;
	DECLARE_BITMAP(views, GPS_MAX_VIEWS);

	for_each_set_bit(i, idle, nr)
		lock_page(r->pages[i]);
	spin_lock(&gp->lock);
	bitmap_andnot(r->dirty, r->dirty, idle, nr);
	bitmap_andnot(r->kept, r->kept, idle, nr);
	gps_views_of(r, views);
	gps_hist_bits(GPS_H_RETIRE, r->dev, 0, r->alloc, r->gidx, idle, nr);
	spin_unlock(&gp->lock);
	gps_protect_views(r, views, idle, idle, false);
	spin_lock(&gp->lock);
	bitmap_andnot(r->wmapped, r->wmapped, idle, nr);
	spin_unlock(&gp->lock);
	for_each_set_bit(i, idle, nr)
		unlock_page(r->pages[i]);
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
	struct gps_alloc *a = r->alloc;
	struct gps_diff *df = h->df;
	unsigned int bs = dev->queue.block_size;
	unsigned int bulk = READ_ONCE(gps_knobs.bulk_blocks);
	u64 page = ((u64)r->gidx << (a->gshift - PAGE_SHIFT)) + i;
	struct page *twin;
	unsigned int nb = gps_diff_page(r, i, bs, df, &twin);

	if (nb && (h->direct || (bulk && nb >= bulk)))
		gps_push_page(dev, r, i, df->mask, nb, h->st);
	else if (nb)
		gps_push_queue(dev, a, page, df->mask, df->blocks, h->st);
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

/**
 * gps_harvest_account() - count a harvest of @done replicas begun at @t0
 * @dev: device
 * @t0: gps_clock() at its start
 * @pages: small pages it diffed
 * @done: replicas it harvested; nothing is counted for none
 */
void gps_harvest_account(struct gps_dev *dev, u64 t0, u64 pages,
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

/**
 * gps_harvest_purge() - forget the dirty replicas of an allocation
 * @dev: device, harvest_lock held
 * @a: allocation being freed
 */
void gps_harvest_purge(struct gps_dev *dev, struct gps_alloc *a)
{
	struct gps_replica *r, *tmp;

	lockdep_assert_held(&dev->harvest_lock);
	spin_lock(&dev->dirty_lock);
	list_for_each_entry_safe(r, tmp, &dev->dirty, dirty_link)
		if (r->alloc == a)
			gps_dirty_del(dev, r);
	spin_unlock(&dev->dirty_lock);
}
