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
 * watermark (gps_push_queue()), at a fence (gps_push_drain()), and from
 * the device's thread once they have waited longer than the harvest
 * interval (gps_push_aged()).  The oldest entries of one small page
 * leave together, under one lock (gps_push_entries()).  Densely written
 * pages skip the queue (gps_push_page()).  Every byte pushed is charged
 * to the link model.
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

/* How a push writes the masked bytes of a block or page (gps_apply()). */
enum gps_how {
	GPS_MASKED,	/* the masked bytes alone */
	GPS_WHOLE,	/* every byte masked: one memcpy() */
	GPS_COPY,	/* all bytes, a word at a time: gps_unwritten() */
};

/*
 * The masked bytes of @len at @dst, @how; GPS_MASKED: a word at a time
 * (gps_bytes_blend()) where nothing but the driver stores, @still; byte
 * by byte where the receiver's own stores may race (a view may map the
 * page writable), so that they stay.  gp->lock held: every writer of the
 * driver takes it, and a page's wmapped bit is set under it before any
 * view maps the page writable (gps_internal.h).
 */
static void gps_apply(u8 *dst, const u8 *src, const unsigned long *mask,
		      unsigned int len, enum gps_how how, bool still)
{
	if (how == GPS_WHOLE)
		memcpy(dst, src, len);
	else if (how == GPS_COPY)
		gps_bytes_copy(dst, src, len);
	else if (still)
		gps_bytes_blend(dst, src, mask, len);
	else
		gps_bytes_apply(dst, src, mask, len);
}

/*
 * Whether small page @sub of receiver @r may take all the bytes of a
 * push, masked or not: no view has ever mapped it writable (its written
 * bit), so it holds only what the driver wrote under gp->lock, which is
 * what the source's twin (or page, without one) holds too but for the
 * source's own stores, about to be sent or queued to be: copying those
 * publishes them early, and every other byte is written with the value
 * it has.  A page of a device that only reads it (the halo of a stencil,
 * the other devices' ranks in pagerank) then takes one copy instead of a
 * blend per word, a quarter of the time under the emulator.  Its twin,
 * if any, is blended.  gp->lock held.
 */
static bool gps_unwritten(const struct gps_replica *r, unsigned int sub)
{
	return !test_bit(sub, r->written);
}

/*
 * How to write @nb masked bytes of @len into a page, @unwritten or not: a
 * copy of all @len into an unwritten page pays from an eighth of them on,
 * below which the blend, which skips unmasked words, costs less.
 */
static enum gps_how gps_how(unsigned int nb, unsigned int len,
			    bool unwritten)
{
	if (nb == len)
		return GPS_WHOLE;
	return unwritten && nb >= len / 8 ? GPS_COPY : GPS_MASKED;
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

/* The small page of the allocation that holds block @block. */
static u64 gps_qentry_page(const struct gps_dev *dev,
			   const struct gps_qentry *e)
{
	return (e->block * dev->queue.block_size) >> PAGE_SHIFT;
}

/*
 * Whether @e, added after @first, leaves with it: same small page, and
 * waited @age jiffies.  An entry of a block holds no other page's bytes.
 */
static bool gps_push_joins(struct gps_dev *dev, const struct gps_qentry *first,
			   const struct gps_qentry *e, unsigned long age)
{
	return e->alloc == first->alloc &&
	       gps_qentry_page(dev, e) == gps_qentry_page(dev, first) &&
	       !time_before(jiffies, e->added + age);
}

/*
 * Write the @n oldest entries, all of one small page, into every other
 * subscriber's replica under one hold of the GPS page lock, each
 * receiver's page and twin mapped once: a page's blocks were queued
 * together and leave together, so a drain of a densely written page
 * costs one lock and one mapping, not one per block.  The masked bytes
 * are read from the source once.  A source gone (a managed page moved
 * away, its only copy with it) leaves nothing to send.
 */
static void gps_push_entries(struct gps_dev *dev, unsigned int n, bool early,
			     struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e = gps_queue_nth(q, 0);
	struct gps_alloc *a = e->alloc;
	unsigned int bs = q->block_size;
	u64 off = e->block * bs;
	unsigned long gidx = off >> a->gshift;
	unsigned int sub = (off >> PAGE_SHIFT) & (a->nr_sub - 1);
	struct gps_gpage *gp = gps_gpage(a, gidx);
	unsigned int blocks = 0, nbytes = 0, k, poff;
	u16 nb[PAGE_SIZE / 64];		/* each entry's masked bytes */
	struct gps_replica *src, *r;
	u64 bytes = 0;
	unsigned long subs;
	u8 *from, *p;
	int d;

	lockdep_assert_held(&dev->harvest_lock);
	for (k = 0; k < n; k++) {
		nb[k] = bitmap_weight(gps_queue_nth(q, k)->mask, bs);
		blocks += !!nb[k];
		nbytes += nb[k];
	}
	spin_lock(&gp->lock);
	src = gp->rep[dev->id];
	subs = gp->subs & ~BIT_ULL(dev->id);
	if (!src || !subs || !nbytes) {
		spin_unlock(&gp->lock);
		return;
	}
	from = kmap_local_page(gps_push_source(src, sub));
	gps_for_each_sub(d, subs) {
		bool still, unwritten;

		r = gp->rep[d];
		still = !test_bit(sub, r->wmapped);
		unwritten = gps_unwritten(r, sub);
		p = kmap_local_page(r->pages[sub]);
		for (k = 0; k < n; k++) {
			e = gps_queue_nth(q, k);
			poff = offset_in_page(e->block * bs);
			gps_still_check(r, sub, poff, bs, "push");
			gps_apply(p + poff, from + poff, e->mask, bs,
				  gps_how(nb[k], bs, unwritten), still);
			gps_still_sync(r, sub, poff, bs);
		}
		kunmap_local(p);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			for (k = 0; k < n; k++) {
				e = gps_queue_nth(q, k);
				poff = offset_in_page(e->block * bs);
				gps_apply(p + poff, from + poff, e->mask, bs,
					  gps_how(nb[k], bs, false), true);
			}
			kunmap_local(p);
		}
		gps_count_traffic(dev, d, blocks, nbytes);
		bytes += nbytes;
	}
	kunmap_local(from);
	spin_unlock(&gp->lock);

	gps_link_charge(dev, bytes);
	atomic64_add(blocks, &dev->stats.blocks_pushed);
	atomic64_add(bytes, &dev->stats.bytes_pushed);
	atomic64_add(blocks, &a->pushes);
	if (early)
		atomic64_add(blocks, &dev->stats.blocks_pushed_early);
	if (st) {
		st->blocks_pushed += blocks;
		st->bytes_pushed += bytes;
	}
	if (!trace_gps_push_enabled())
		return;
	for (k = 0; k < n; k++)
		if (nb[k])
			trace_gps_push(dev->id, a->handle,
				       gps_queue_nth(q, k)->block,
				       hweight64(subs), (u64)nb[k] * hweight64(subs));
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
		gps_apply(p, from, mask, PAGE_SIZE,
			  gps_how(nbytes, PAGE_SIZE, gps_unwritten(r, sub)),
			  !test_bit(sub, r->wmapped));
		kunmap_local(p);
		gps_still_sync(r, sub, 0, PAGE_SIZE);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			gps_apply(p, from, mask, PAGE_SIZE,
				  gps_how(nbytes, PAGE_SIZE, false), true);
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

/*
 * Push and free the oldest entry and those after it of the same small
 * page (gps_push_joins()), @max at most.  Return: entries pushed, 0 if
 * the queue is empty or its oldest entry has not waited @age jiffies.
 */
static unsigned int gps_push_oldest(struct gps_dev *dev, unsigned int max,
				    unsigned long age, bool early,
				    struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *first = gps_queue_nth(q, 0), *e;
	unsigned int n = 1;

	if (!first || !max || time_before(jiffies, first->added + age))
		return 0;
	while (n < max && (e = gps_queue_nth(q, n)) &&
	       gps_push_joins(dev, first, e, age))
		n++;
	gps_push_entries(dev, n, early, st);
	gps_queue_pop(dev, n);
	return n;
}

/**
 * gps_push_queue() - queue the changed blocks of a small page
 * @dev: device whose replica changed, harvest_lock held
 * @a: allocation
 * @first: index within the allocation of the page's first block
 * @mask: changed bytes of the page, PAGE_SIZE bits
 * @blocks: blocks of the page with a changed byte
 * @st: fence statistics, or NULL
 *
 * A block already queued merges; a new one takes an entry.  Room for the
 * page's blocks is made first and the queue is then pushed down to its
 * high watermark (the paper's drain of the least recently added): the
 * entries that leave are those a push per block added would have sent,
 * and they leave by pages (gps_push_oldest()).
 */
void gps_push_queue(struct gps_dev *dev, struct gps_alloc *a, u64 first,
		    const unsigned long *mask, unsigned int blocks,
		    struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;
	unsigned int bs = q->block_size, need = min(blocks, q->capacity), k;

	while (q->capacity - q->count < need)
		gps_push_oldest(dev, need - (q->capacity - q->count), 0, true,
				st);
	for (k = 0; k < PAGE_SIZE / bs; k++) {
		const unsigned long *m = mask + k * bs / BITS_PER_LONG;

		if (!gps_bytes_any(m, bs) ||
		    gps_queue_merge(dev, a, first + k, m))
			continue;
		if (q->count >= q->capacity)
			gps_push_oldest(dev, 1, 0, true, st);
		gps_queue_insert(dev, a, first + k, m);
	}
	while (q->count > q->watermark)
		gps_push_oldest(dev, q->count - q->watermark, 0, true, st);
}

/**
 * gps_push_drain() - push every entry (a fence)
 * @dev: device, harvest_lock held
 * @st: fence statistics, or NULL
 */
void gps_push_drain(struct gps_dev *dev, struct gps_fence_stats *st)
{
	while (gps_push_oldest(dev, UINT_MAX, 0, false, st))
		cond_resched();
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
	while (!gps_fence_waits(dev) &&
	       gps_push_oldest(dev, UINT_MAX, age, true, NULL))
		cond_resched();
}
