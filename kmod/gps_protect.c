// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: write-protecting harvested pages
 *
 * Steps 1 and 2 of a harvest (gps_harvest.c): the dirty small pages of a
 * replica are locked, their dirty bits cleared unless they stay writable,
 * and their PTEs made read-only in every view that may map them, so that
 * the next store faults (gps_write_protect()); a kept page that stopped
 * being written is protected for good (gps_retire()).  Called by
 * harvesters, their device's harvest_lock held or helped.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include "gps_internal.h"
#include "gps_delay.h"
#include "gps_history.h"

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

	lockdep_assert_held(&gp->lock);
	gps_assert_harvesting(&gps_devs[r->dev]);
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
bool gps_write_protect(struct gps_replica *r, unsigned long *dirty,
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

/*
 * Expiring kept pages, @idle, that their diff found unchanged: no longer
 * kept or dirty, and write-protected in every view (another device's
 * write fault may have mapped one writable since step 2), so that the
 * diff that follows frees their twins.
 */
void gps_retire(struct gps_replica *r, const unsigned long *idle)
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
