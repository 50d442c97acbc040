// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the per-device coalescing write queue
 *
 * The paper's remote write queue: fully associative, one entry per cache
 * block (block_size bytes, 128 by default) with a byte mask of the bytes
 * that changed.  A block already queued absorbs new changes (a coalescing
 * hit, counted as blocks_merged).  When the occupancy passes the high
 * watermark the least recently added entry is pushed; a fence pushes
 * everything; the device's thread pushes entries that have waited longer
 * than the harvest interval, so that traffic flows while compute runs.
 *
 * Pushing an entry writes its masked bytes into every other subscriber's
 * replica, and into their twins, so that a receiver never publishes what
 * it received.  Bytes the source replica no longer holds are dropped: a
 * newer value, written locally (to be published later) or received from
 * another device, superseded them.  This is what makes all replicas agree
 * after racing writes and a release, whichever order queues drain in.
 *
 * A queue is used only with its device's harvest_lock held.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/hash.h>
#include <linux/bitmap.h>
#include <linux/log2.h>
#include <linux/jiffies.h>
#include "gps_internal.h"
#include "gps_bytes.h"
#include "gps_trace.h"

/**
 * gps_queue_init() - allocate an empty queue
 * @q: queue to set up
 * @nid: node whose memory holds it
 * @capacity: entries
 * @watermark: occupancy above which the oldest entry is pushed
 * @block_size: bytes per entry, a power of two from 64 to PAGE_SIZE
 */
int gps_queue_init(struct gps_queue *q, int nid, unsigned int capacity,
		   unsigned int watermark, unsigned int block_size)
{
	size_t mask_bytes = BITS_TO_LONGS(block_size) * sizeof(long);
	unsigned int i;
	u8 *p;

	memset(q, 0, sizeof(*q));
	q->capacity = capacity;
	q->watermark = watermark;
	q->block_size = block_size;
	q->hash_bits = ilog2(roundup_pow_of_two(capacity)) + 1;
	INIT_LIST_HEAD(&q->lru);
	INIT_LIST_HEAD(&q->free);
	q->entries = kvzalloc_node(array_size(capacity, sizeof(*q->entries)), GFP_KERNEL,
				   nid);
	q->hash = kvzalloc_node(array_size(1U << q->hash_bits, sizeof(*q->hash)),
				GFP_KERNEL, nid);
	q->storage = kvmalloc_node((size_t)capacity * (mask_bytes + block_size),
				   GFP_KERNEL, nid);
	if (!q->entries || !q->hash || !q->storage) {
		gps_queue_destroy(q);
		return -ENOMEM;
	}
	p = q->storage;
	for (i = 0; i < capacity; i++) {
		struct gps_qentry *e = &q->entries[i];

		e->mask = (unsigned long *)p;
		e->data = p + mask_bytes;
		p += mask_bytes + block_size;
		list_add_tail(&e->lru, &q->free);
	}
	return 0;
}

void gps_queue_destroy(struct gps_queue *q)
{
	kvfree(q->entries);
	kvfree(q->hash);
	kvfree(q->storage);
	q->entries = NULL;
	q->hash = NULL;
	q->storage = NULL;
}

static struct hlist_head *gps_qhash(struct gps_queue *q, struct gps_alloc *a,
				    u64 block)
{
	return &q->hash[hash_64(block ^ (a->handle << 40), q->hash_bits)];
}

static void gps_apply(u8 *dst, const u8 *src, const unsigned long *mask,
		      unsigned int bs)
{
	unsigned int s, e;

	for_each_set_bitrange(s, e, mask, bs)
		memcpy(dst + s, src + s, e - s);
}

/* Write one entry into every other subscriber's replica. */
static void gps_push(struct gps_dev *dev, struct gps_qentry *e, bool early,
		     struct gps_fence_stats *st)
{
	struct gps_alloc *a = e->alloc;
	unsigned int bs = dev->queue.block_size;
	u64 off = e->block * bs;
	unsigned long gidx = off >> a->gshift;
	unsigned int sub = (off >> PAGE_SHIFT) & (a->nr_sub - 1);
	unsigned int poff = offset_in_page(off), nbytes, w;
	struct gps_gpage *gp = gps_gpage(a, gidx);
	struct gps_replica *src, *r;
	u64 blocks = 0, bytes = 0;
	unsigned long subs;
	u8 *p;
	int d;

	spin_lock(&gp->lock);
	src = gp->rep[dev->id];
	if (src) {
		const u64 *now, *sent = (const u64 *)e->data;

		p = kmap_local_page(src->pages[sub]);
		now = (const u64 *)(p + poff);
		for (w = 0; w < bs / sizeof(u64); w++) {
			unsigned long m = bitmap_get_value8(e->mask, w * 8);

			if (m && now[w] != sent[w])
				bitmap_set_value8(e->mask, m &
					~gps_bytes_differ(now[w], sent[w]) & 0xff,
					w * 8);
		}
		kunmap_local(p);
	}
	nbytes = bitmap_weight(e->mask, bs);
	subs = gp->subs & ~BIT_ULL(dev->id);
	for_each_set_bit(d, &subs, gps_nr_devs) {
		if (!nbytes)
			break;
		r = gp->rep[d];
		p = kmap_local_page(r->pages[sub]);
		gps_apply(p + poff, e->data, e->mask, bs);
		kunmap_local(p);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			gps_apply(p + poff, e->data, e->mask, bs);
			kunmap_local(p);
		}
		atomic64_inc(&dev->stats.to_blocks[d]);
		atomic64_add(nbytes, &dev->stats.to_bytes[d]);
		blocks++;
		bytes += nbytes;
	}
	spin_unlock(&gp->lock);

	/* An entry whose every byte was superseded sent nothing. */
	if (!blocks)
		return;
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
 * @dev: device owning @src, harvest_lock held
 * @src: the replica just diffed
 * @sub: small page index
 * @mask: changed bytes, PAGE_SIZE bits
 * @blocks: blocks of the page with a changed byte
 * @st: fence statistics, or NULL
 *
 * For densely written pages (at least bulk_blocks changed blocks) this
 * saves the queue's per-block work.  It sends what the source holds now,
 * so older queued entries of the same blocks lose their superseded bytes
 * when they are pushed, as in gps_push().  If the page was made writable
 * again since the diff, a receiver may hold a value half old, half new
 * until the next harvest sends the rest: allowed between releases.
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

	spin_lock(&gp->lock);
	from = kmap_local_page(src->pages[sub]);
	subs = gp->subs & ~BIT_ULL(dev->id);
	for_each_set_bit(d, &subs, gps_nr_devs) {
		struct gps_replica *r = gp->rep[d];

		p = kmap_local_page(r->pages[sub]);
		gps_apply(p, from, mask, PAGE_SIZE);
		kunmap_local(p);
		if (r->twins[sub]) {
			p = kmap_local_page(r->twins[sub]);
			gps_apply(p, from, mask, PAGE_SIZE);
			kunmap_local(p);
		}
		atomic64_add(blocks, &dev->stats.to_blocks[d]);
		atomic64_add(nbytes, &dev->stats.to_bytes[d]);
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

static void gps_qentry_release(struct gps_queue *q, struct gps_qentry *e)
{
	hlist_del(&e->hash);
	list_move_tail(&e->lru, &q->free);
	e->alloc = NULL;
	q->count--;
}

/**
 * gps_queue_push_oldest() - push and free the least recently added entry
 * @dev: device, harvest_lock held
 * @early: pushed before a fence asked for it (watermark or thread)
 * @st: fence statistics, or NULL
 */
void gps_queue_push_oldest(struct gps_dev *dev, bool early,
			   struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e;

	if (list_empty(&q->lru))
		return;
	e = list_first_entry(&q->lru, struct gps_qentry, lru);
	gps_push(dev, e, early, st);
	gps_qentry_release(q, e);
}

/**
 * gps_queue_add() - queue the changed bytes of one block
 * @dev: device whose replica changed, harvest_lock held
 * @a: allocation
 * @block: block index within the allocation
 * @mask: changed bytes, block_size bits
 * @data: the block's bytes
 * @st: fence statistics, or NULL
 */
void gps_queue_add(struct gps_dev *dev, struct gps_alloc *a, u64 block,
		   const unsigned long *mask, const u8 *data,
		   struct gps_fence_stats *st)
{
	struct gps_queue *q = &dev->queue;
	struct hlist_head *head = gps_qhash(q, a, block);
	struct gps_qentry *e;
	unsigned int s, end;
	u64 hwm;

	hlist_for_each_entry(e, head, hash) {
		if (e->alloc == a && e->block == block) {
			for_each_set_bitrange(s, end, mask, q->block_size)
				memcpy(e->data + s, data + s, end - s);
			bitmap_or(e->mask, e->mask, mask, q->block_size);
			atomic64_inc(&dev->stats.blocks_merged);
			return;
		}
	}
	if (q->count >= q->capacity)
		gps_queue_push_oldest(dev, true, st);
	e = list_first_entry(&q->free, struct gps_qentry, lru);
	e->alloc = a;
	e->block = block;
	e->added = jiffies;
	bitmap_copy(e->mask, mask, q->block_size);
	memcpy(e->data, data, q->block_size);
	list_move_tail(&e->lru, &q->lru);
	hlist_add_head(&e->hash, head);
	q->count++;
	atomic64_inc(&dev->stats.blocks_queued);
	hwm = atomic64_read(&dev->stats.queue_hwm);
	if (q->count > hwm)
		atomic64_set(&dev->stats.queue_hwm, q->count);
	while (q->count > q->watermark)
		gps_queue_push_oldest(dev, true, st);
}

/**
 * gps_queue_drain() - push every entry (a fence)
 * @dev: device, harvest_lock held
 * @st: fence statistics, or NULL
 */
void gps_queue_drain(struct gps_dev *dev, struct gps_fence_stats *st)
{
	while (dev->queue.count) {
		gps_queue_push_oldest(dev, false, st);
		cond_resched();
	}
}

/**
 * gps_queue_push_aged() - push entries added more than @age jiffies ago
 * @dev: device, harvest_lock held
 * @age: jiffies
 */
void gps_queue_push_aged(struct gps_dev *dev, unsigned long age)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e;

	while (!list_empty(&q->lru)) {
		e = list_first_entry(&q->lru, struct gps_qentry, lru);
		if (time_before(jiffies, e->added + age))
			break;
		gps_queue_push_oldest(dev, true, NULL);
		cond_resched();
	}
}

/**
 * gps_queue_purge() - drop the entries of an allocation being freed
 * @dev: device, harvest_lock held
 * @a: allocation
 */
void gps_queue_purge(struct gps_dev *dev, struct gps_alloc *a)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e, *tmp;

	list_for_each_entry_safe(e, tmp, &q->lru, lru)
		if (e->alloc == a)
			gps_qentry_release(q, e);
}

/**
 * gps_queues_reconfigure() - give every device a queue of a new shape
 * @capacity: entries
 * @watermark: high watermark, 1..@capacity
 * @block_size: bytes per entry
 *
 * Every queue is drained first, so no published store is lost.  On
 * failure the old queues stay.  Caller holds gps_knob_lock.
 */
int gps_queues_reconfigure(unsigned int capacity, unsigned int watermark,
			   unsigned int block_size)
{
	struct gps_queue *fresh;
	int d, ret;

	fresh = kcalloc(gps_nr_devs, sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	for (d = 0; d < gps_nr_devs; d++) {
		ret = gps_queue_init(&fresh[d], gps_devs[d].nid, capacity,
				     watermark, block_size);
		if (ret)
			goto err_destroy;
	}
	ret = gps_lock_all(true);
	if (ret)
		goto err_destroy;
	gps_drain_all_locked(NULL);
	for (d = 0; d < gps_nr_devs; d++) {
		struct gps_queue *q = &gps_devs[d].queue;
		struct gps_queue old = *q;

		/*
		 * List heads live in the struct: re-anchor them.  The new
		 * queue is empty and its free list is not (capacity >= 1).
		 */
		*q = fresh[d];
		INIT_LIST_HEAD(&q->lru);
		list_replace(&fresh[d].free, &q->free);
		fresh[d] = old;
		atomic64_set(&gps_devs[d].stats.queue_hwm, 0);
	}
	gps_unlock_all();
	ret = 0;
	d = gps_nr_devs;
err_destroy:
	while (d--)
		gps_queue_destroy(&fresh[d]);
	kfree(fresh);
	return ret;
}
