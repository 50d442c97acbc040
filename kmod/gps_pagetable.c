// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the shadow GPS page table
 *
 * The paper's GPS page table has one wide leaf per GPS page holding the
 * physical page of every subscriber.  Here that leaf is struct gps_gpage:
 * a subscriber mask and, per device, a struct gps_replica whose small
 * pages (PAGE_SIZE each, nr_sub of them) live on that device's node.
 *
 * A device's view maps its own replica where it subscribes and the
 * replica of the nearest subscriber (by node distance) where it does
 * not, so that a non-subscriber still reads and writes correct data.
 * Changing which page a view maps is done by zapping the view's PTEs: the
 * next access faults and maps the new target.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/slab.h>
#include <linux/pagemap.h>
#include <linux/topology.h>
#include <linux/mmzone.h>
#include <linux/vmstat.h>
#include <linux/lockdep.h>
#include "gps_internal.h"
#include "gps_history.h"
#include "gps_still.h"
#include "gps_inject.h"

static size_t gps_replica_bytes(unsigned int nr_sub)
{
	return sizeof(struct gps_replica) +
	       nr_sub * (sizeof(struct page *) * 2) +
	       nr_sub * sizeof(unsigned long) +
	       BITS_TO_LONGS(nr_sub) * sizeof(unsigned long) * 4 +
	       nr_sub * sizeof(struct page *) * GPS_STILL_SLOTS;
}

/* The free pages of @pgdat's zones and the sums of their watermarks. */
static void gps_node_zones(pg_data_t *pgdat, unsigned long *free,
			   unsigned long *high, unsigned long *low)
{
	int z;

	*free = *high = *low = 0;
	for (z = 0; z < MAX_NR_ZONES; z++) {
		struct zone *zone = &pgdat->node_zones[z];

		if (!managed_zone(zone))
			continue;
		*free += zone_page_state(zone, NR_FREE_PAGES);
		*high += high_wmark_pages(zone);
		*low += low_wmark_pages(zone);
	}
}

/*
 * Would @nr more pages take @nid's free memory below its zones' high
 * watermarks plus node_reserve_bytes?  Past that point the kernel starts
 * reclaiming for everyone and, with replicas unreclaimable, the next
 * allocation of the program (or of anyone) ends in the OOM killer; a
 * replica is a hint, so it gives way first.  Racy by design: concurrent
 * callers may overshoot by what they allocate at once.
 */
static bool gps_node_low(int nid, unsigned int nr)
{
	u64 reserve = READ_ONCE(gps_knobs.node_reserve_bytes) >> PAGE_SHIFT;
	unsigned long free, high, low;

	gps_node_zones(NODE_DATA(nid), &free, &high, &low);
	return free < (u64)high + reserve + nr;
}

/* A node counter of @pgdat, in pages (node_page_state() is not exported). */
static unsigned long gps_node_stat(pg_data_t *pgdat, enum node_stat_item item)
{
	long x = atomic_long_read(&pgdat->vm_stat[item]);

	return x < 0 ? 0 : x;
}

/**
 * gps_node_short() - would @nr more pages take @nid below its reserve?
 * @nid: the node
 * @nr: pages about to be allocated there
 *
 * For twins, which a store needs: the node's available memory, counted
 * as /proc/meminfo's MemAvailable counts it but for one node (free pages
 * above the zones' high watermarks, and the file pages and reclaimable
 * slab that reclaim can give back, less what it keeps of each), against
 * node_reserve_bytes.  Replicas, which are hints, give way earlier, at the
 * free page count (gps_node_low()): a node full of clean page cache would
 * otherwise refuse every twin, and every store would fail.  Racy like
 * gps_node_low().
 *
 * Return: true if the pages would leave less than the reserve available.
 */
bool gps_node_short(int nid, unsigned int nr)
{
	u64 reserve = READ_ONCE(gps_knobs.node_reserve_bytes) >> PAGE_SHIFT;
	pg_data_t *pgdat = NODE_DATA(nid);
	unsigned long free, high, low, file, slab;
	long avail;

	gps_node_zones(pgdat, &free, &high, &low);
	avail = (long)free - (long)high;
	file = gps_node_stat(pgdat, NR_ACTIVE_FILE) +
	       gps_node_stat(pgdat, NR_INACTIVE_FILE);
	avail += file - min(file / 2, low);
	slab = gps_node_stat(pgdat, NR_SLAB_RECLAIMABLE_B) +
	       gps_node_stat(pgdat, NR_KERNEL_MISC_RECLAIMABLE);
	avail += slab - min(slab / 2, low);
	return avail < 0 || (u64)avail < reserve + nr;
}

/*
 * The sysfs caps, all replicas (max_bytes) and one node's
 * (node_max_bytes), and the node's reserve (node_reserve_bytes).
 */
static bool gps_charge(int dev, unsigned int nr)
{
	u64 cap = READ_ONCE(gps_knobs.max_bytes);
	u64 node_cap = READ_ONCE(gps_knobs.node_max_bytes);
	u64 now;

	if (gps_node_low(gps_devs[dev].nid, nr))
		return false;
	now = atomic64_add_return(nr, &gps_replica_pages);
	if ((cap && now * PAGE_SIZE > cap) ||
	    (node_cap && (atomic64_read(&gps_devs[dev].stats.replica_pages) +
			  nr) * PAGE_SIZE > node_cap)) {
		atomic64_sub(nr, &gps_replica_pages);
		return false;
	}
	return true;
}

/**
 * gps_replica_alloc() - allocate one device's copy of one GPS page
 * @a: the allocation
 * @gidx: GPS page index
 * @dev: device whose node holds the copy
 * @zero: zero the pages (a first copy); else the caller fills them
 *
 * Pages come from @dev's node only and are charged to the caller's memory
 * cgroup.
 *
 * Return: the replica, or NULL when the node cannot hold the copy or the
 * sysfs cap on replica memory is reached: callers treat that as "not
 * subscribed", never as a failure of the program.
 */
struct gps_replica *gps_replica_alloc(struct gps_alloc *a, unsigned long gidx,
				      int dev, bool zero)
{
	/* Fail rather than OOM-kill anyone: a replica is a hint. */
	gfp_t gfp = GFP_HIGHUSER | __GFP_THISNODE | __GFP_NOWARN |
		    __GFP_ACCOUNT | __GFP_RETRY_MAYFAIL |
		    (zero ? __GFP_ZERO : 0);
	int nid = gps_devs[dev].nid;
	struct gps_replica *r;
	unsigned int i;

	if (!gps_charge(dev, a->nr_sub))
		return NULL;
	r = kvzalloc_node(gps_replica_bytes(a->nr_sub),
			  GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
			  __GFP_RETRY_MAYFAIL, nid);
	if (!r)
		goto err_uncharge;
	r->twins = (struct page **)&r->pages[a->nr_sub];
	r->seen = (unsigned long *)&r->twins[a->nr_sub];
	r->kept = &r->seen[a->nr_sub];
	r->dirty = &r->kept[BITS_TO_LONGS(a->nr_sub)];
	r->wmapped = &r->dirty[BITS_TO_LONGS(a->nr_sub)];
	r->written = &r->wmapped[BITS_TO_LONGS(a->nr_sub)];
#if IS_ENABLED(CONFIG_GPS_DEBUG)
	r->shadows = (struct page **)&r->written[BITS_TO_LONGS(a->nr_sub)];
#endif
	r->alloc = a;
	r->gidx = gidx;
	r->dev = dev;
	/* A sparse first writer keeps one twin; a dense one widens. */
	r->narrow = true;
	INIT_LIST_HEAD(&r->dirty_link);
	for (i = 0; i < a->nr_sub; i++) {
		if (gps_should_fail(GPS_FAIL_REPLICA_ALLOC))
			goto err_free_pages;
		r->pages[i] = alloc_pages_node(nid, gfp, 0);
		if (!r->pages[i])
			goto err_free_pages;
	}
	atomic64_add(a->nr_sub, &gps_devs[dev].stats.replica_pages);
	return r;

err_free_pages:
	while (i--)
		put_page(r->pages[i]);
	kvfree(r);
err_uncharge:
	atomic64_sub(a->nr_sub, &gps_replica_pages);
	return NULL;
}

/**
 * gps_replica_free() - drop a replica's pages and twins
 * @r: a replica no longer reachable from the page table, its views zapped
 *
 * Pages still mapped somewhere (a racing GUP) live on until their last
 * reference goes; the driver forgets them now.
 */
void gps_replica_free(struct gps_replica *r)
{
	unsigned int i, nr = r->alloc->nr_sub, twins = 0;

	gps_still_free(r);
	for (i = 0; i < nr; i++) {
		put_page(r->pages[i]);
		if (r->twins[i]) {
			put_page(r->twins[i]);
			twins++;
		}
	}
	atomic64_sub(nr, &gps_replica_pages);
	atomic64_sub(nr, &gps_devs[r->dev].stats.replica_pages);
	atomic64_sub(twins, &gps_twin_pages);
	atomic64_sub(twins, &gps_devs[r->dev].stats.twin_pages);
	kvfree(r);
}

/**
 * gps_view_replica() - the replica that @view maps for a GPS page
 * @a: the allocation
 * @gp: the GPS page
 * @view: a device's view, or the host view (the home device's target)
 *
 * Caller holds sub_sem (either side), every harvest_lock, or @gp->lock
 * (rep[] changes under it too).
 *
 * Return: the view's device's own replica if it subscribes, else the
 * nearest one (by node distance), or NULL if the page has none.
 */
struct gps_replica *gps_view_replica(struct gps_alloc *a, struct gps_gpage *gp,
				     int view)
{
	int best = -1, best_dist = INT_MAX, dev = gps_view_dev(a, view), d;

	lockdep_assert(lockdep_is_held(&a->sub_sem) ||
		       lockdep_is_held(&gps_devs[0].harvest_lock) ||
		       lockdep_is_held(&gp->lock));
	if (gp->rep[dev])
		return gp->rep[dev];
	for (d = 0; d < gps_nr_devs; d++) {
		int dist;

		if (!gp->rep[d])
			continue;
		dist = node_distance(gps_devs[dev].nid, gps_devs[d].nid);
		if (dist < best_dist) {
			best = d;
			best_dist = dist;
		}
	}
	return best < 0 ? NULL : gp->rep[best];
}

static void gps_zap_range(struct gps_alloc *a, unsigned long first,
			  unsigned long nr)
{
	struct address_space *mapping = a->ctx->mapping;
	int v;

	for (v = 0; v < gps_nr_views(); v++) {
		pgoff_t start = a->pgoff + v * a->stride + first * a->nr_sub;

		unmap_mapping_range(mapping, (loff_t)start << PAGE_SHIFT,
				    (loff_t)nr * a->nr_sub << PAGE_SHIFT, 0);
	}
}

/*
 * A fault looks its page up under sub_sem and keeps the page locked until
 * its PTE is set.  Taking and dropping each page lock after the first zap
 * waits out faults that looked up an old target; the second zap removes
 * what they mapped.
 */
static void gps_page_barrier(struct gps_replica *r)
{
	unsigned int i;

	for (i = 0; i < r->alloc->nr_sub; i++) {
		lock_page(r->pages[i]);
		unlock_page(r->pages[i]);
	}
}

/**
 * gps_zap_views() - make every view refault a range of GPS pages
 * @a: the allocation, sub_sem held for write
 * @first: first GPS page
 * @nr: number of GPS pages
 * @removed: a replica just taken out of the table (or NULL), to be freed
 *	by the caller after this returns
 *
 * Call after changing the page table.
 */
void gps_zap_views(struct gps_alloc *a, unsigned long first, unsigned long nr,
		   struct gps_replica *removed)
{
	unsigned long g;
	int d;

	lockdep_assert_held_write(&a->sub_sem);
	gps_hist(GPS_H_ZAP, -1, removed ? removed->dev : -1, a, first, 0, nr);
	gps_zap_range(a, first, nr);
	if (removed)
		gps_page_barrier(removed);
	for (g = first; g < first + nr; g++) {
		struct gps_gpage *gp = gps_gpage(a, g);

		for (d = 0; d < gps_nr_devs; d++)
			if (gp->rep[d])
				gps_page_barrier(gp->rep[d]);
		cond_resched();
	}
	gps_zap_range(a, first, nr);
}

/**
 * gps_pagetable_free() - free every replica of an allocation
 * @a: a dead allocation whose views have been zapped
 *
 * The page table itself stays until the last reference goes: a fault
 * racing with the free still finds its GPS page, and sees @a->dead.
 */
void gps_pagetable_free(struct gps_alloc *a)
{
	unsigned long g;
	int d;

	if (!a->gpages)
		return;
	for (g = 0; g < a->nr_gpages; g++) {
		struct gps_gpage *gp = gps_gpage(a, g);

		for (d = 0; d < gps_nr_devs; d++) {
			if (gp->rep[d]) {
				gps_replica_free(gp->rep[d]);
				gp->rep[d] = NULL;
			}
		}
		gp->subs = 0;
		if (!(g & 1023))
			cond_resched();
	}
}
