// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: managed memory: migration on fault
 *
 * The paper's unified-memory baseline without hints.  A GPS_MEM_MANAGED
 * allocation keeps exactly one copy of each GPS page (one replica, the
 * page's only subscriber), first on the home device.  A view maps the
 * page only where it is; a device whose view touches it elsewhere faults,
 * and the fault moves it: the copy leaves the page table, every view is
 * zapped (with the barrier that waits out faults still mapping it), the
 * data is copied into a new replica on the faulting device's node, and
 * the old one is freed.  Since nothing maps the old copy while it is
 * copied, no store is lost to a move, and a single copy needs no fence:
 * every device sees every store at once.  The move is traffic from the
 * device the page left (its traffic row and link clock, waited for by the
 * fault, like a GPU's fault servicing waits for the copy).
 *
 * Thrashing guard, after NVIDIA's UVM driver: a page that moved
 * um_thrash_threshold times within um_thrash_epoch_ms is pinned where it
 * is for um_pin_ms; meanwhile other views map it remotely (the nearest
 * replica, gps_view_replica()) and keep that mapping until the page next
 * moves.  um_thrash_threshold = 0 turns the guard off.
 *
 * Locking: a move takes the allocation's sub_sem for writing only, not the
 * harvest_locks: a managed page never has more than one subscriber, so it
 * is never captured, dirty, queued or pushed, and no harvester reaches
 * its replicas.  Faults look pages up under sub_sem (read), the driver's
 * copies under sub_sem (read) and the page's lock.  The link is charged
 * (under its own link_lock) after sub_sem is dropped.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include "gps_internal.h"
#include "gps_thrash.h"

/**
 * gps_um_init() - the per-page thrashing state of a managed allocation
 * @a: a new allocation
 *
 * Return: 0, or -ENOMEM.
 */
int gps_um_init(struct gps_alloc *a)
{
	a->um = kvcalloc(a->nr_gpages, sizeof(*a->um),
			 GFP_KERNEL_ACCOUNT | __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
	return a->um ? 0 : -ENOMEM;
}

/* Is managed GPS page @g of @a pinned where it is?  sub_sem held. */
static bool gps_um_pinned(struct gps_alloc *a, unsigned long g)
{
	return gps_thrash_pinned(&a->um[g], get_jiffies_64());
}

/**
 * gps_um_wants() - must a fault of device @to move managed GPS page @g?
 * @a: allocation, sub_sem held
 * @g: GPS page
 * @to: the faulting view's device
 *
 * Return: true for a managed page held by another device and not pinned.
 */
bool gps_um_wants(struct gps_alloc *a, unsigned long g, int to)
{
	lockdep_assert_held(&a->sub_sem);
	return a->kind == GPS_MEM_MANAGED && !gps_gpage(a, g)->rep[to] &&
	       !gps_um_pinned(a, g);
}

/* Would this move thrash?  Then pinned (core/gps_thrash.h); else counted. */
static bool gps_um_thrashing(struct gps_thrash *um)
{
	return gps_thrash_move(um, get_jiffies_64(),
			       READ_ONCE(gps_knobs.um_thrash_threshold),
			       msecs_to_jiffies(READ_ONCE(gps_knobs.um_thrash_epoch_ms)),
			       msecs_to_jiffies(READ_ONCE(gps_knobs.um_pin_ms)));
}

/* The move's bytes over @from's link, waited for like a fence's. */
static void gps_um_charge(int from, int to, u64 bytes, unsigned int blocks)
{
	struct gps_dev *dev = &gps_devs[from];

	gps_link_send(dev, BIT_ULL(to), blocks, bytes);
	gps_link_wait(dev, true);
}

/**
 * gps_um_migrate() - move managed GPS page @g to device @to
 * @a: the allocation; called from a fault with no gps lock held
 * @g: GPS page
 * @to: the faulting view's device
 *
 * Does nothing if the page got there meanwhile, is pinned, or starts
 * thrashing now (then pinned where it is), or if @to's node cannot
 * hold it (counted in subscribe_failed): the caller then maps the copy
 * where it is.
 */
void gps_um_migrate(struct gps_alloc *a, unsigned long g, int to)
{
	struct gps_gpage *gp = gps_gpage(a, g);
	u64 bytes = (u64)a->nr_sub << PAGE_SHIFT;
	struct gps_replica *old, *r;
	unsigned int i;
	int from;

	down_write(&a->sub_sem);
	if (a->dead || !gps_um_wants(a, g, to))
		goto out_unlock;
	old = gp->rep[__ffs64(gp->subs)];
	from = old->dev;
	if (gps_um_thrashing(&a->um[g])) {
		atomic64_inc(&gps_devs[from].stats.thrash_pins);
		goto out_unlock;
	}
	r = gps_replica_alloc(a, g, to, false);
	if (!r) {
		gps_thrash_undo(&a->um[g]);
		atomic64_inc(&gps_devs[to].stats.subscribe_failed);
		goto out_unlock;
	}
	/* Out of the table, then out of every view: nothing stores to it. */
	spin_lock(&gp->lock);
	gp->rep[from] = NULL;
	gp->subs = 0;
	spin_unlock(&gp->lock);
	gps_zap_views(a, g, 1, old);
	for (i = 0; i < a->nr_sub; i++)
		copy_highpage(r->pages[i], old->pages[i]);
	spin_lock(&gp->lock);
	gp->rep[to] = r;
	gp->subs = BIT_ULL(to);
	spin_unlock(&gp->lock);
	up_write(&a->sub_sem);

	gps_replica_free(old);
	atomic64_inc(&gps_devs[to].stats.migrations);
	atomic64_add(bytes, &gps_devs[to].stats.bytes_migrated);
	gps_um_charge(from, to, bytes,
		      DIV_ROUND_UP(bytes, READ_ONCE(gps_knobs.block_size)));
	return;

out_unlock:
	up_write(&a->sub_sem);
}
