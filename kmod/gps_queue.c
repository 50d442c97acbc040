// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the per-device coalescing write queue
 *
 * The paper's remote write queue: fully associative, one entry per cache
 * block (block_size bytes, 128 by default) with a byte mask of the bytes
 * that changed.  A block already queued absorbs new changes (a coalescing
 * hit, counted as blocks_merged).  An entry holds no copy of the bytes:
 * the push reads them from the source replica, which holds them anyway
 * (the twin the diff updated, or the page while no view may write it).
 * The queue is only the data structure: it never pushes.  gps_push.c
 * decides when an entry leaves it (the high watermark, a fence, the
 * thread's age limit) and writes it into the other replicas.
 *
 * A leaf: it calls no other part of the driver.  A queue is used only
 * with its device's harvest_lock held.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/hash.h>
#include <linux/bitmap.h>
#include <linux/log2.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include "gps_internal.h"

static size_t gps_qmask_bytes(unsigned int block_size)
{
	return BITS_TO_LONGS(block_size) * sizeof(long);
}

static unsigned int gps_qhash_bits(unsigned int capacity)
{
	return ilog2(roundup_pow_of_two(capacity)) + 1;
}

/**
 * gps_queue_bytes() - memory one queue of a shape takes
 * @capacity: entries
 * @block_size: bytes of the block an entry stands for
 *
 * Return: bytes of the entries, their masks, the ring, and the hash.
 */
size_t gps_queue_bytes(unsigned int capacity, unsigned int block_size)
{
	return (size_t)capacity * (sizeof(struct gps_qentry) +
				   2 * sizeof(struct gps_qentry *) +
				   gps_qmask_bytes(block_size)) +
	       (sizeof(struct hlist_head) << gps_qhash_bits(capacity));
}

/**
 * gps_queue_init() - allocate an empty queue
 * @q: queue to set up
 * @nid: node whose memory holds it
 * @capacity: entries
 * @watermark: occupancy above which the oldest entry is pushed
 * @block_size: bytes of an entry's block, a power of two from 64 to PAGE_SIZE
 *
 * Return: 0, or -ENOMEM (nothing left allocated).
 */
int gps_queue_init(struct gps_queue *q, int nid, unsigned int capacity,
		   unsigned int watermark, unsigned int block_size)
{
	size_t mask_bytes = gps_qmask_bytes(block_size);
	/* A shape too big for the node fails the knob write, kills nobody. */
	gfp_t gfp = GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN;
	unsigned int i;
	u8 *p;

	memset(q, 0, sizeof(*q));
	q->capacity = capacity;
	q->watermark = watermark;
	q->block_size = block_size;
	q->hash_bits = gps_qhash_bits(capacity);
	q->entries = kvzalloc_node(array_size(capacity, sizeof(*q->entries)),
				   gfp, nid);
	q->hash = kvzalloc_node(array_size(1U << q->hash_bits, sizeof(*q->hash)),
				gfp, nid);
	q->storage = kvmalloc_node(array_size(capacity, mask_bytes), gfp, nid);
	q->ring = kvmalloc_node(array3_size(2, capacity, sizeof(*q->ring)),
				gfp, nid);
	if (!q->entries || !q->hash || !q->storage || !q->ring) {
		gps_queue_destroy(q);
		return -ENOMEM;
	}
	q->spare = q->ring + capacity;
	p = q->storage;
	for (i = 0; i < capacity; i++) {
		struct gps_qentry *e = &q->entries[i];

		e->mask = (unsigned long *)p;
		p += mask_bytes;
		q->spare[i] = e;
	}
	return 0;
}

void gps_queue_destroy(struct gps_queue *q)
{
	kvfree(q->entries);
	kvfree(q->hash);
	kvfree(q->storage);
	kvfree(q->ring);
	q->entries = NULL;
	q->hash = NULL;
	q->storage = NULL;
	q->ring = NULL;
	q->spare = NULL;
}

static struct hlist_head *gps_qhash(struct gps_queue *q, struct gps_alloc *a,
				    u64 block)
{
	return &q->hash[hash_64(block ^ (a->handle << 40), q->hash_bits)];
}

static void gps_queue_assert(struct gps_dev *dev)
{
	lockdep_assert_held(&dev->harvest_lock);
}

/* Ring index @n places after @i. */
static unsigned int gps_qring(const struct gps_queue *q, unsigned int i,
			      unsigned int n)
{
	i += n;
	return i >= q->capacity ? i - q->capacity : i;
}

/* Out of the lookup, back to the spares; the caller fixes the ring. */
static void gps_queue_free(struct gps_queue *q, struct gps_qentry *e)
{
	hlist_del(&e->hash);
	e->alloc = NULL;
	q->count--;
	q->spare[q->capacity - q->count - 1] = e;
}

/**
 * gps_queue_pop() - take the @n oldest entries, just pushed, out of the
 *	queue
 * @dev: device, harvest_lock held, its queue holding @n entries or more
 * @n: entries
 */
void gps_queue_pop(struct gps_dev *dev, unsigned int n)
{
	struct gps_queue *q = &dev->queue;

	gps_queue_assert(dev);
	if (WARN_ON_ONCE(n > q->count))
		n = q->count;
	while (n--) {
		gps_queue_free(q, q->ring[q->head]);
		q->head = gps_qring(q, q->head, 1);
	}
}

/**
 * gps_queue_merge() - fold changed bytes into the entry of their block
 * @dev: device whose replica changed, harvest_lock held
 * @a: allocation
 * @block: block index within the allocation
 * @mask: changed bytes, block_size bits
 *
 * Return: true on a coalescing hit; false if the block has no entry, and
 * then nothing changed.
 */
bool gps_queue_merge(struct gps_dev *dev, struct gps_alloc *a, u64 block,
		     const unsigned long *mask)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e;

	gps_queue_assert(dev);
	hlist_for_each_entry(e, gps_qhash(q, a, block), hash) {
		if (e->alloc == a && e->block == block) {
			bitmap_or(e->mask, e->mask, mask, q->block_size);
			atomic64_inc(&dev->stats.blocks_merged);
			return true;
		}
	}
	return false;
}

/**
 * gps_queue_insert() - a new entry for a block that has none
 * @dev: device whose replica changed, harvest_lock held, its queue not
 *	full (the caller pushes the oldest entry first)
 * @a: allocation
 * @block: block index within the allocation
 * @mask: changed bytes, block_size bits
 */
void gps_queue_insert(struct gps_dev *dev, struct gps_alloc *a, u64 block,
		      const unsigned long *mask)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e;
	u64 hwm;

	gps_queue_assert(dev);
	if (WARN_ON_ONCE(q->count >= q->capacity))
		return;
	e = q->spare[q->capacity - q->count - 1];
	e->alloc = a;
	e->block = block;
	e->added = jiffies;
	bitmap_copy(e->mask, mask, q->block_size);
	q->ring[gps_qring(q, q->head, q->count)] = e;
	hlist_add_head(&e->hash, gps_qhash(q, a, block));
	q->count++;
	atomic64_inc(&dev->stats.blocks_queued);
	hwm = atomic64_read(&dev->stats.queue_hwm);
	if (q->count > hwm)
		atomic64_set(&dev->stats.queue_hwm, q->count);
}

/**
 * gps_queue_purge() - drop the entries of an allocation being freed
 * @dev: device, harvest_lock held
 * @a: allocation
 */
void gps_queue_purge(struct gps_dev *dev, struct gps_alloc *a)
{
	struct gps_queue *q = &dev->queue;
	unsigned int i, live = q->count, kept = 0;

	gps_queue_assert(dev);
	/* Close the ring up over the entries dropped, order kept. */
	for (i = 0; i < live; i++) {
		struct gps_qentry *e = q->ring[gps_qring(q, q->head, i)];

		if (e->alloc == a)
			gps_queue_free(q, e);
		else
			q->ring[gps_qring(q, q->head, kept++)] = e;
	}
}

/**
 * gps_queue_swap() - give @dev the empty queue @fresh, return the old
 *	one in @fresh, for gps_queue_destroy() only
 * @dev: device, harvest_lock held, its queue drained
 * @fresh: an initialised, empty queue
 */
void gps_queue_swap(struct gps_dev *dev, struct gps_queue *fresh)
{
	struct gps_queue old = dev->queue;

	gps_queue_assert(dev);
	WARN_ON_ONCE(old.count);
	dev->queue = *fresh;
	*fresh = old;
	atomic64_set(&dev->stats.queue_hwm, 0);
}
