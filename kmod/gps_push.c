// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: pushing changed bytes into the other replicas
 *
 * Pushing a queue entry writes its masked bytes into every other
 * subscriber's replica, and into their twins, so that a receiver never
 * publishes what it received.  What is sent is what the source's twin
 * holds at the push (the words its diffs read, or bytes received from
 * another device since), or its page when it has no twin and so holds
 * still: every byte sent is the same in the receivers and in the twin,
 * so a later store of any other value diffs as changed.  This is what
 * makes all replicas agree after racing writes and a release, whichever
 * order queues drain in.  The masked bytes go byte by byte into a page
 * that a view may map writable (its wmapped bit), so that the receiver's
 * own racing stores to the other bytes stay; a word at a time, old bytes
 * and new blended, into twins and pages that hold still, a third of the
 * time or less under the emulator for floats changed in three bytes of
 * four.
 *
 * Entries leave the queue here, oldest first: when it passes its high
 * watermark (gps_push_block()), at a fence (gps_push_drain()), and from
 * the device's thread once they have waited longer than the harvest
 * interval (gps_push_aged()).  Densely written pages skip the queue
 * (gps_push_page()).  Every byte pushed is charged to the link model.
 *
 * Calls the queue and the link model; called by the harvest, the thread
 * and the fences, with the device's harvest_lock held, and by the helpers
 * of a fence holding it (gps_push_page() only: the queue is the holder's).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include "gps_internal.h"
#include "gps_bytes.h"
#include "gps_still.h"
#include "gps_trace.h"

/*
 * Each receiver in @subs, lowest first: a word's bits inline, where
 * for_each_set_bit() makes a call per bit, per entry pushed.
 */
#define gps_for_each_sub(d, subs)					\
	for (u64 __s = (subs); __s && ((d) = __ffs64(__s), 1);		\
	     __s &= __s - 1)

/*
 * The masked bytes of @len at @dst: a word at a time (gps_bytes_blend())
 * where nothing but the driver stores, @still; byte by byte where the
 * receiver's own stores may race (a view may map the page writable), so
 * that they stay.  gp->lock held: every writer of the driver takes it,
 * and a page's wmapped bit is set under it before any view maps the page
 * writable (gps_internal.h).
 */
static void gps_apply(u8 *dst, const u8 *src, const unsigned long *mask,
		      unsigned int len, bool still)
{
	if (still)
		gps_bytes_blend(dst, src, mask, len);
	else
		gps_bytes_apply(dst, src, mask, len);
}

/* The masked bytes of a small page; all @nbytes of it: one copy. */
static void gps_apply_page(u8 *dst, const u8 *src, const unsigned long *mask,
			   unsigned int nbytes, bool still)
{
	if (nbytes == PAGE_SIZE)
		memcpy(dst, src, PAGE_SIZE);
	else
		gps_apply(dst, src, mask, PAGE_SIZE, still);
}

/*
 * What a push sends from: the source's twin when it has one, else its page
 * (then no view maps it writable: it holds still).  The twin has the words
 * the diffs read, each whole, and the bytes received since, so receivers
 * and twin agree.  Never the page while it is writable: the writer may
 * have gone on since the diff, and the masked bytes of a newer word would
 * make a value never stored (tests/kmod/tearing.c).  gp->lock held.
 */
static struct page *gps_push_source(struct gps_replica *src,
				    unsigned int sub)
{
	return src->twins[sub] ?: src->pages[sub];
}

/*
 * Write one entry into every other subscriber's replica, the masked bytes
 * read from the source once, under the GPS page lock.  A source gone (a
 * managed page moved away, its only copy with it) leaves nothing to send.
 */
static void gps_push_entry(struct gps_dev *dev, struct gps_qentry *e,
			   bool early, struct gps_fence_stats *st)
{
	struct gps_alloc *a = e->alloc;
	unsigned int bs = dev->queue.block_size;
	u64 off = e->block * bs;
	unsigned long gidx = off >> a->gshift;
	unsigned int sub = (off >> PAGE_SHIFT) & (a->nr_sub - 1);
	unsigned int poff = offset_in_page(off), nbytes;
	struct gps_gpage *gp = gps_gpage(a, gidx);
	struct gps_replica *src, *r;
	u64 blocks = 0, bytes = 0;
	unsigned long subs;
	u8 *from, *p;
	int d;

	lockdep_assert_held(&dev->harvest_lock);
	spin_lock(&gp->lock);
	src = gp->rep[dev->id];
	subs = gp->subs & ~BIT_ULL(dev->id);
	nbytes = bitmap_weight(e->mask, bs);
	if (!src || !subs || !nbytes) {
		spin_unlock(&gp->lock);
		return;
	}
	from = kmap_local_page(gps_push_source(src, sub));
	gps_for_each_sub(d, subs) {
		r = gp->rep[d];
		gps_still_check(r, sub, poff, bs, "push");
		p = kmap_local_page(r->pages[sub]);
		gps_apply(p + poff, from + poff, e->mask, bs,
			  !test_bit(sub, r->wmapped));
		kunmap_local(p);
		gps_still_sync(r, sub, poff, bs);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			gps_bytes_blend(p + poff, from + poff, e->mask, bs);
			kunmap_local(p);
		}
		gps_count_traffic(dev, d, 1, nbytes);
		blocks++;
		bytes += nbytes;
	}
	kunmap_local(from);
	spin_unlock(&gp->lock);

	gps_link_charge(dev, bytes);
	atomic64_inc(&dev->stats.blocks_pushed);
	atomic64_add(bytes, &dev->stats.bytes_pushed);
	atomic64_inc(&a->pushes);
	if (early)
		atomic64_inc(&dev->stats.blocks_pushed_early);
	if (st) {
		st->blocks_pushed++;
		st->bytes_pushed += bytes;
	}
	trace_gps_push(dev->id, a->handle, e->block, blocks, bytes);
}

/**
 * gps_push_page() - push the changed bytes of a small page, bypassing
 *	the queue
 * @dev: device owning @src, harvest_lock held (or helped: see
 *	gps_assert_harvesting())
 * @src: the replica just diffed
 * @sub: small page index
 * @mask: changed bytes, PAGE_SIZE bits
 * @blocks: blocks of the page with a changed byte
 * @st: fence statistics, or NULL
 *
 * For densely written pages (at least bulk_blocks changed blocks) this
 * saves the queue's per-block work.  It sends the twin's bytes when the
 * page has a twin (written again since the diff: the twin holds what the
 * diff read), else the page's, which holds still: receivers and twin
 * agree on every byte sent.  Newer bytes go with the next harvest.
 */
void gps_push_page(struct gps_dev *dev, struct gps_replica *src,
		   unsigned int sub, const unsigned long *mask,
		   unsigned int blocks, struct gps_fence_stats *st)
{
	struct gps_alloc *a = src->alloc;
	struct gps_gpage *gp = gps_gpage(a, src->gidx);
	unsigned int nbytes = bitmap_weight(mask, PAGE_SIZE);
	u64 bytes = 0, sent = 0;
	unsigned long subs;
	u8 *from, *p;
	int d;

	gps_assert_harvesting(dev);
	spin_lock(&gp->lock);
	from = kmap_local_page(gps_push_source(src, sub));
	subs = gp->subs & ~BIT_ULL(dev->id);
	gps_for_each_sub(d, subs) {
		struct gps_replica *r = gp->rep[d];

		gps_still_check(r, sub, 0, PAGE_SIZE, "bulk push");
		p = kmap_local_page(r->pages[sub]);
		gps_apply_page(p, from, mask, nbytes,
			       !test_bit(sub, r->wmapped));
		kunmap_local(p);
		gps_still_sync(r, sub, 0, PAGE_SIZE);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			gps_apply_page(p, from, mask, nbytes, true);
			kunmap_local(p);
		}
		gps_count_traffic(dev, d, blocks, nbytes);
		bytes += nbytes;
		sent++;
	}
	kunmap_local(from);
	spin_unlock(&gp->lock);

	if (!sent)
		return;
	gps_link_charge(dev, bytes);
	atomic64_add(blocks, &dev->stats.blocks_pushed);
	atomic64_add(blocks, &dev->stats.blocks_bulk);
	atomic64_add(bytes, &dev->stats.bytes_pushed);
	atomic64_add(blocks, &a->pushes);
	if (st) {
		st->blocks_pushed += blocks;
		st->bytes_pushed += bytes;
	}
	if (sent)
		trace_gps_push(dev->id, a->handle,
			       (((u64)src->gidx << a->gshift) +
				((u64)sub << PAGE_SHIFT)) /
			       dev->queue.block_size, sent, bytes);
}

/**
 * gps_push_oldest() - push and free the least recently added entry
 * @dev: device, harvest_lock held
 * @early: pushed before a fence asked for it (watermark or thread)
 * @st: fence statistics, or NULL
 */
void gps_push_oldest(struct gps_dev *dev, bool early,
		     struct gps_fence_stats *st)
{
	struct gps_qentry *e = gps_queue_oldest(dev);

	if (!e)
		return;
	gps_push_entry(dev, e, early, st);
	gps_queue_pop(dev);
}

/**
 * gps_push_block() - queue the changed bytes of one block
 * @dev: device whose replica changed, harvest_lock held
 * @a: allocation
 * @block: block index within the allocation
 * @mask: changed bytes, block_size bits
 * @st: fence statistics, or NULL
 *
 * A block already queued merges; a new one takes an entry, the oldest
 * entry being pushed first if the queue is full, and entries are pushed
 * while the queue is above its high watermark (the paper's drain of the
 * least recently added).
 */
void gps_push_block(struct gps_dev *dev, struct gps_alloc *a, u64 block,
		    const unsigned long *mask, struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;

	if (gps_queue_merge(dev, a, block, mask))
		return;
	if (q->count >= q->capacity)
		gps_push_oldest(dev, true, st);
	gps_queue_insert(dev, a, block, mask);
	while (q->count > q->watermark)
		gps_push_oldest(dev, true, st);
}

/**
 * gps_push_drain() - push every entry (a fence)
 * @dev: device, harvest_lock held
 * @st: fence statistics, or NULL
 */
void gps_push_drain(struct gps_dev *dev, struct gps_fence_stats *st)
{
	while (dev->queue.count) {
		gps_push_oldest(dev, false, st);
		cond_resched();
	}
}

/**
 * gps_push_aged() - push entries added more than @age jiffies ago
 * @dev: device, harvest_lock held
 * @age: jiffies
 *
 * The push thread's: it stops when a fence waits for the lock, which
 * pushes them all.
 */
void gps_push_aged(struct gps_dev *dev, unsigned long age)
{
	struct gps_qentry *e;

	while (!gps_fence_waits(dev) && (e = gps_queue_oldest(dev)) &&
	       !time_before(jiffies, e->added + age)) {
		gps_push_oldest(dev, true, NULL);
		cond_resched();
	}
}
