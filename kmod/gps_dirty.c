// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the dirty list
 *
 * Each device keeps a list of its replicas with small pages written since
 * their last harvest, oldest first: a write fault or a capture puts one
 * there (gps_mark_dirty()), a harvest that left pages writable puts it
 * back as hot (gps_mark_hot()), and harvesters take from the head, the
 * push thread only what has rested long enough (gps_dirty_pop()), a
 * fence's helpers a batch at once (gps_dirty_take()).  The list and its
 * counts are under the device's dirty_lock, a leaf.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include "gps_internal.h"

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
void gps_mark_hot(struct gps_replica *r, bool stored)
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

struct gps_replica *gps_dirty_pop(struct gps_dev *dev, u64 min_age)
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

/**
 * gps_dirty_purge() - take a dying allocation's replicas off the dirty lists
 * @a: allocation marked dead; every harvest_lock and sub_sem (write) held
 *
 * Walks @a's own page table, not the lists, which hold the dirty replicas
 * of every user: the work is @a's size (as the zap that follows), and
 * each owner's dirty_lock is held for one replica at a time, whatever the
 * others have dirty.  Every listed replica of @a is in its page table:
 * one taken out (unsubscribe, collapse) leaves its list first, and a
 * managed page's single copy is never listed.  None goes back on a list
 * after: the fault paths see dead under sub_sem, and a harvester lists
 * only a replica it took off a list, under a harvest_lock held here.
 */
void gps_dirty_purge(struct gps_alloc *a)
{
	unsigned long g;
	int d;

	lockdep_assert_held_write(&a->sub_sem);
	gps_assert_all_harvesting();
	for (g = 0; g < a->nr_gpages; g++) {
		struct gps_gpage *gp = gps_gpage(a, g);

		for (d = 0; d < gps_nr_devs; d++) {
			struct gps_replica *r = gp->rep[d];
			struct gps_dev *owner;

			/*
			 * Off every list: nothing lists it meanwhile (see
			 * above), so it needs no lock to be passed over.
			 */
			if (!r || !READ_ONCE(r->on_dirty_list))
				continue;
			owner = &gps_devs[r->dev];
			spin_lock(&owner->dirty_lock);
			gps_dirty_del(owner, r);
			spin_unlock(&owner->dirty_lock);
		}
		cond_resched();
	}
}
