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
 * order queues drain in.  The masked bytes of each word go into a page
 * that a view may map writable (its wmapped bit) by one cmpxchg of the
 * word (one store where a single byte is masked), so that the receiver's
 * own racing stores to the other bytes stay; a word at a time, old bytes
 * and new blended, into twins and pages that hold still, which costs less
 * than a cmpxchg per word (Documentation/benchmarks.rst); spans whose
 * every byte is masked are copied a word at a time.  Every receiver's
 * page and twin take a span in one pass over its mask (core/gps_bytes.c).
 * No path writes part of an aligned 8-byte word and then the rest: a
 * reader racing with the push sees each word old or new, never torn
 * (gps_bytes.h, tests/kmod/tearing.c).
 *
 * The queue and its policy, which blocks leave when, are the pure core's
 * (core/gps_queue.c); this file gives each device its queue, on its node,
 * and pushes what the policy sends (gps_push_span()): past the high
 * watermark (as a diff is queued), at a fence (gps_push_drain()), and
 * from the device's thread once blocks have waited longer than the
 * harvest interval (gps_push_aged()).  The harvest hands each changed
 * page's diff here once (gps_push_diff()), which queues it or, for a
 * densely written page or a fence's helper, pushes it past the queue.
 * The blocks of an entry, one small page's, leave together, under one
 * lock and one mapping of each page (gps_push_bytes()), but where the
 * watermark takes only the lowest of them.  Every byte pushed is counted
 * and charged on the link (gps_link_send()).
 *
 * Calls the core and the link model; called by the harvest, the thread
 * and the fences, with the device's harvest_lock held, and by the helpers
 * of a fence holding it (past the queue only: the queue is the holder's).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include "gps_internal.h"
#include "gps_bytes.h"
#include "gps_queue.h"
#include "gps_still.h"
#include "gps_history.h"
#include "gps_trace.h"

/*
 * Each receiver in @subs, lowest first: a word's bits inline, where
 * for_each_set_bit() makes a call per bit, per entry pushed.
 */
#define gps_for_each_sub(d, subs)					\
	for (u64 __s = (subs); __s && ((d) = __ffs64(__s), 1);		\
	     __s &= __s - 1)

/*
 * Whether small page @sub of receiver @r may take all the bytes of a
 * push, masked or not: no view has ever mapped it writable (its written
 * bit), so it holds only what the driver wrote under gp->lock, which is
 * what the source's twin (or page, without one) holds too but for the
 * source's own stores, about to be sent or queued to be: copying those
 * publishes them early, and every other byte is written with the value
 * it has.  A page of a device that only reads it (the halo of a stencil,
 * the other devices' ranks in pagerank) then takes one copy instead of a
 * blend per word.  Its twin, if any, is blended.  gp->lock held.
 */
static bool gps_unwritten(const struct gps_replica *r, unsigned int sub)
{
	return !test_bit(sub, r->written);
}

/*
 * How receiver @r's small page @sub takes @nb masked bytes of @len: all
 * of them copied where all are masked, or where it is unwritten and a
 * copy pays (from an eighth of them on, below which the blend, which
 * skips unmasked words, costs less); else the masked bytes, a word at a
 * time where nothing but the driver stores (not wmapped: it holds still),
 * a cmpxchg per word where the receiver's own stores may race (a view may
 * map the page writable), so that they stay.  gp->lock held: every writer
 * of the driver takes it, and a page's wmapped bit is set under it before
 * any view maps the page writable (gps_internal.h).
 */
static enum gps_bytes_how gps_how(const struct gps_replica *r,
				  unsigned int sub, unsigned int nb,
				  unsigned int len)
{
	if (nb == len || (gps_unwritten(r, sub) && nb >= len / 8))
		return GPS_BYTES_COPY;
	return test_bit(sub, r->wmapped) ? GPS_BYTES_APPLY : GPS_BYTES_BLEND;
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
 * Who pushes: the device, with the fence's statistics (or NULL); for an
 * add to the queue, what it queued so far, counted before each push.
 */
struct gps_pusher {
	struct gps_dev *dev;
	struct gps_fence_stats *st;
	struct gps_qstat qs;
};

/*
 * Receivers written in one pass (gps_bytes_push()), each page and twin
 * mapped meanwhile: with the source's, 13 local mappings, within the 15 a
 * task may nest where they take a slot (CONFIG_DEBUG_KMAP_LOCAL_FORCE_MAP),
 * one or two left for an interrupt's.
 */
#define GPS_PUSH_BATCH	6

/*
 * A span on its way into the receivers of its GPS page (gps_push_bytes()):
 * the masked bytes of [lo, lo + len) of small page @sub, @nbytes of them,
 * from @from (the source's twin or page, mapped).
 */
struct gps_push_job {
	struct gps_gpage *gp;
	unsigned int sub, lo, len, nbytes;
	const unsigned long *m;
	const u8 *from;
};

/*
 * Write job @j into the pages and twins of its receivers @subs, in one
 * pass per batch, each mapped once; @took[d]: how receiver d took it, with
 * the GPS_HF_ flags of its history record.  gp->lock held.
 */
static void gps_push_into(const struct gps_push_job *j, u64 subs, u8 *took)
{
	struct gps_bytes_dst dst[2 * GPS_PUSH_BATCH];
	enum gps_bytes_how twin = j->nbytes == j->len ? GPS_BYTES_COPY :
							GPS_BYTES_BLEND;
	unsigned int n = 0, k, batch = 0, sub = j->sub, lo = j->lo;
	u64 left = subs;
	int d;

	gps_for_each_sub(d, subs) {
		struct gps_replica *r = j->gp->rep[d];
		enum gps_bytes_how how = gps_how(r, sub, j->nbytes, j->len);

		took[d] = how | (how == GPS_BYTES_BLEND ? GPS_HF_STILL : 0) |
			  (r->twins[sub] ? GPS_HF_RTWIN : 0);
		gps_still_check(r, sub, lo, j->len, "push");
		dst[n].how = how;
		dst[n++].to = (u8 *)kmap_local_page(r->pages[sub]) + lo;
		if (r->twins[sub]) {
			dst[n].how = twin;
			dst[n++].to = (u8 *)kmap_local_page(r->twins[sub]) + lo;
		}
		left &= ~BIT_ULL(d);
		if (++batch < GPS_PUSH_BATCH && left)
			continue;
		gps_bytes_push(dst, n, j->from + lo, j->m, j->len);
		/* Local mappings go in the reverse order of their making. */
		for (k = n; k--; )
			kunmap_local(dst[k].to - lo);
		n = 0;
		batch = 0;
	}
	gps_for_each_sub(d, subs)
		gps_still_sync(j->gp->rep[d], sub, lo, j->len);
}

/*
 * Write the masked bytes of @s (one small page's blocks in [lo, hi)) from
 * the pusher's replica into every other subscriber's, under one hold of
 * the GPS page lock (gps_push_into()); @bulk: past the queue (counted as
 * blocks_bulk; early spans as blocks_pushed_early).  The masked bytes are
 * counted once per receiver, on the link (gps_link_send()).  A source
 * gone (a managed page moved away, its only copy with it) leaves nothing
 * to send.
 */
static void gps_push_bytes(const struct gps_pusher *p, const struct gps_qspan *s,
			   bool bulk)
{
	struct gps_dev *dev = p->dev;
	struct gps_alloc *a = (struct gps_alloc *)s->owner;
	unsigned long gidx = s->page >> (a->gshift - PAGE_SHIFT);
	struct gps_push_job j = {
		.sub = s->page & (a->nr_sub - 1), .lo = s->lo,
		.len = s->hi - s->lo, .m = s->mask + s->lo / BITS_PER_LONG,
	};
	u8 took[GPS_MAX_DEVICES];
	struct gps_replica *src;
	u64 subs, bytes;
	int d;

	j.nbytes = bitmap_weight(j.m, j.len);
	if (!j.nbytes)
		return;
	j.gp = gps_gpage(a, gidx);
	spin_lock(&j.gp->lock);
	src = j.gp->rep[dev->id];
	subs = src ? j.gp->subs & ~BIT_ULL(dev->id) : 0;
	if (subs) {
		j.from = kmap_local_page(gps_push_source(src, j.sub));
		gps_push_into(&j, subs, took);
		kunmap_local(j.from);
		gps_for_each_sub(d, subs)
			gps_hist(GPS_H_PUSH, dev->id, d, a, gidx, j.sub,
				 took[d] |
				 (src->twins[j.sub] ? GPS_HF_FROMTWIN : 0) |
				 j.lo / 64 << 8 | s->hi / 64 << 16 |
				 min(s->blocks, 255U) << 24);
	} else {
		gps_hist(GPS_H_PUSH_NONE, dev->id, -1, a, gidx, j.sub, !!src);
	}
	spin_unlock(&j.gp->lock);
	if (!subs)
		return;

	gps_link_send(dev, subs, s->blocks, j.nbytes);
	bytes = (u64)j.nbytes * hweight64(subs);
	atomic64_add(s->blocks, &dev->stats.blocks_pushed);
	atomic64_add(bytes, &dev->stats.bytes_pushed);
	atomic64_add(s->blocks, &a->pushes);
	if (bulk)
		atomic64_add(s->blocks, &dev->stats.blocks_bulk);
	else if (s->early)
		atomic64_add(s->blocks, &dev->stats.blocks_pushed_early);
	if (p->st) {
		p->st->blocks_pushed += s->blocks;
		p->st->bytes_pushed += bytes;
	}
	trace_gps_push(dev->id, a->handle,
		       ((s->page << PAGE_SHIFT) + j.lo) / dev->queue.block_size,
		       hweight64(subs), bytes);
}

/*
 * Count what the queue took so far: before its blocks are pushed, so that
 * blocks_queued never lags blocks_pushed_early.
 */
static void gps_push_count(struct gps_pusher *p)
{
	struct gps_dev *dev = p->dev;

	if (!p->qs.queued && !p->qs.merged)
		return;
	atomic64_add(p->qs.queued, &dev->stats.blocks_queued);
	atomic64_add(p->qs.merged, &dev->stats.blocks_merged);
	if (p->qs.held > atomic64_read(&dev->stats.queue_hwm))
		atomic64_set(&dev->stats.queue_hwm, p->qs.held);
	p->qs.queued = 0;
	p->qs.merged = 0;
}

/* The queue's push (gps_qpush_t): a span it sends now. */
static void gps_push_span(void *ctx, const struct gps_qspan *s)
{
	gps_push_count(ctx);
	gps_push_bytes(ctx, s, false);
}

/**
 * gps_push_diff() - push or queue the changed bytes of a small page
 * @h: the harvester, its device the owner of @src, harvest_lock held (or
 *	helped: see gps_assert_harvesting())
 * @src: the replica just diffed
 * @sub: small page index
 * @nb: blocks of the page with a changed byte (h->df->blocks), at least one
 *
 * The diff's result comes here once, and this decides where it goes.  A
 * helper's (@h->direct), or a densely written page's (at least
 * bulk_blocks changed blocks), goes past the queue at once: the queue is
 * the lock holder's, and this saves its per-block work.  It sends the
 * twin's bytes when the page has a twin (written again since the diff:
 * the twin holds what the diff read), else the page's, which holds
 * still: receivers and twin agree on every byte sent.  Newer bytes go
 * with the next harvest.  Other pages are queued: the queue's policy
 * (core/gps_queue.c) merges, inserts, and pushes the oldest blocks past
 * the high watermark through gps_push_span().
 */
void gps_push_diff(const struct gps_harvester *h, struct gps_replica *src,
		   unsigned int sub, unsigned int nb)
{
	struct gps_pusher p = { .dev = h->dev, .st = h->st };
	struct gps_dev *dev = h->dev;
	struct gps_alloc *a = src->alloc;
	unsigned int bulk = READ_ONCE(gps_knobs.bulk_blocks);
	struct gps_qspan s = {
		.owner = a, .mask = h->df->mask, .lo = 0, .hi = PAGE_SIZE,
		.blocks = nb,
		.page = ((u64)src->gidx << (a->gshift - PAGE_SHIFT)) + sub,
	};

	gps_assert_harvesting(dev);
	if (h->direct || (bulk && nb >= bulk)) {
		gps_push_bytes(&p, &s, true);
		return;
	}
	lockdep_assert_held(&dev->harvest_lock);
	s.blocks = bitmap_weight(h->df->blocks, GPS_QBLOCKS_MAX);
	/* Refused only for a broken push: the page goes past the queue. */
	if (WARN_ON_ONCE(!gps_queue_add(&dev->queue, a, s.page, s.mask,
					h->df->blocks, jiffies, gps_push_span,
					&p, &p.qs)))
		gps_push_bytes(&p, &s, true);
	gps_push_count(&p);
	gps_hist(p.qs.inserted ? GPS_H_QINSERT : GPS_H_QMERGE, dev->id, -1, a,
		 src->gidx, sub, s.blocks);
}

/**
 * gps_push_drain() - push every entry (a fence)
 * @dev: device, harvest_lock held
 * @st: fence statistics, or NULL
 */
void gps_push_drain(struct gps_dev *dev, struct gps_fence_stats *st)
{
	struct gps_pusher p = { .dev = dev, .st = st };

	lockdep_assert_held(&dev->harvest_lock);
	while (gps_queue_push_oldest(&dev->queue, UINT_MAX, jiffies, 0, false,
				     gps_push_span, &p))
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
	struct gps_pusher p = { .dev = dev };

	lockdep_assert_held(&dev->harvest_lock);
	while (!gps_fence_waits(dev) &&
	       gps_queue_push_oldest(&dev->queue, UINT_MAX, jiffies, age, true,
				     gps_push_span, &p))
		cond_resched();
}

/**
 * gps_push_queue_alloc() - an empty queue for a device on node @nid
 * @q: queue to set up
 * @nid: node whose memory holds it
 * @capacity: blocks, and so entries at most
 * @watermark: blocks above which the oldest are pushed
 * @block_size: bytes of a block, a power of two from 64 to PAGE_SIZE
 *
 * Return: 0, or -ENOMEM (nothing left allocated).
 */
int gps_push_queue_alloc(struct gps_queue *q, int nid, unsigned int capacity,
			 unsigned int watermark, unsigned int block_size)
{
	/* A shape too big for the node fails the knob write, kills nobody. */
	void *mem = kvmalloc_node(gps_queue_bytes(capacity), GFP_KERNEL |
				  __GFP_RETRY_MAYFAIL | __GFP_NOWARN, nid);

	if (!mem)
		return -ENOMEM;
	gps_queue_init(q, mem, capacity, watermark, block_size);
	return 0;
}

/* The memory of a queue set up by gps_push_queue_alloc(), or none. */
void gps_push_queue_free(struct gps_queue *q)
{
	kvfree(q->entries);
	q->entries = NULL;
}

/**
 * gps_push_queue_swap() - give @dev the empty queue @fresh, return the
 *	old one in @fresh, for gps_push_queue_free() only
 * @dev: device, harvest_lock held, its queue drained
 * @fresh: an initialised, empty queue
 */
void gps_push_queue_swap(struct gps_dev *dev, struct gps_queue *fresh)
{
	struct gps_queue old = dev->queue;

	lockdep_assert_held(&dev->harvest_lock);
	WARN_ON_ONCE(old.nr);
	dev->queue = *fresh;
	*fresh = old;
	atomic64_set(&dev->stats.queue_hwm, 0);
}

/**
 * gps_push_queue_purge() - drop the entries of an allocation being freed
 * @dev: device, harvest_lock held
 * @a: allocation
 */
void gps_push_queue_purge(struct gps_dev *dev, struct gps_alloc *a)
{
	lockdep_assert_held(&dev->harvest_lock);
	gps_queue_purge(&dev->queue, a);
}
