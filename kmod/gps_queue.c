// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the per-device coalescing write queue
 *
 * The paper's remote write queue: fully associative, block_size bytes a
 * block (128 by default), each queued block with a byte mask of the bytes
 * that changed; a block already queued absorbs new changes (a coalescing
 * hit, counted as blocks_merged).  Its capacity and high watermark count
 * blocks.  An entry holds the queued blocks of one small page, in one
 * page-sized mask: a harvest queues a page's changed blocks together and
 * a push sends them together, so a densely written page costs one lookup,
 * one entry and one push, not one per block.  A block queued on a page
 * whose entry is live joins that entry, and leaves with it.  Entries
 * leave oldest first, whole or by their lowest blocks (gps_queue_take()).
 * An entry's mask has no bit set outside its queued blocks, spare ones
 * none at all, so a push may read across the gaps between blocks, and
 * the work per page is that of its changed blocks, not of the whole mask.
 * An entry holds no copy of the bytes: the push reads them from the
 * source replica, which holds them anyway (the twin the diff updated, or
 * the page while no view may write it).  The queue is only the data
 * structure: it never pushes.  gps_push.c decides when blocks leave it
 * (the high watermark, a fence, the thread's age limit) and writes them
 * into the other replicas.
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

#define GPS_QMASK_BYTES		(BITS_TO_LONGS(PAGE_SIZE) * sizeof(long))

static unsigned int gps_qhash_bits(unsigned int capacity)
{
	return ilog2(roundup_pow_of_two(capacity)) + 1;
}

/**
 * gps_queue_bytes() - memory one queue of a capacity takes
 * @capacity: blocks, and so entries at most
 *
 * Return: bytes of the entries, their masks, the ring, and the hash.
 */
size_t gps_queue_bytes(unsigned int capacity)
{
	return (size_t)capacity * (sizeof(struct gps_qentry) +
				   2 * sizeof(struct gps_qentry *) +
				   GPS_QMASK_BYTES) +
	       (sizeof(struct hlist_head) << gps_qhash_bits(capacity));
}

/**
 * gps_queue_init() - allocate an empty queue
 * @q: queue to set up
 * @nid: node whose memory holds it
 * @capacity: blocks, and so entries at most (one block each)
 * @watermark: blocks above which the oldest are pushed
 * @block_size: bytes of a block, a power of two from 64 to PAGE_SIZE
 *
 * Return: 0, or -ENOMEM (nothing left allocated).
 */
int gps_queue_init(struct gps_queue *q, int nid, unsigned int capacity,
		   unsigned int watermark, unsigned int block_size)
{
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
	q->storage = kvzalloc_node(array_size(capacity, GPS_QMASK_BYTES), gfp,
				   nid);
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
		p += GPS_QMASK_BYTES;
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
				    u64 page)
{
	return &q->hash[hash_64(page ^ (a->handle << 40), q->hash_bits)];
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

/* Index of the first mask word of block @k; block_size bits a block. */
static unsigned int gps_qword(const struct gps_queue *q, unsigned int k)
{
	return k * (q->block_size / BITS_PER_LONG);
}

/*
 * Clear the mask of @e's queued blocks below block @end, and their bits:
 * a word at a time, inline, where a call per block costs more than the
 * words; the whole mask at once for a dense entry leaving whole.
 */
static unsigned int gps_qclear(struct gps_queue *q, struct gps_qentry *e,
			       unsigned int end)
{
	unsigned int k, w, n = 0, words = q->block_size / BITS_PER_LONG;

	if (end == PAGE_SIZE / q->block_size &&
	    e->blocks * q->block_size >= PAGE_SIZE / 4) {
		bitmap_zero(e->mask, PAGE_SIZE);
		bitmap_zero(e->queued, GPS_QBLOCKS_MAX);
		return e->blocks;
	}
	for_each_set_bit(k, e->queued, end) {
		unsigned long *m = e->mask + gps_qword(q, k);

		for (w = 0; w < words; w++)
			m[w] = 0;
		__clear_bit(k, e->queued);
		n++;
	}
	return n;
}

/* Out of the lookup, back to the spares; the caller fixes the ring. */
static void gps_queue_free(struct gps_queue *q, struct gps_qentry *e)
{
	gps_qclear(q, e, PAGE_SIZE / q->block_size);
	hlist_del(&e->hash);
	e->alloc = NULL;
	q->count -= e->blocks;
	e->blocks = 0;
	q->nr--;
	q->spare[q->capacity - q->nr - 1] = e;
}

/* @n more blocks queued: the high-water mark of a queue never over full. */
static void gps_queue_grew(struct gps_dev *dev, unsigned int n)
{
	struct gps_queue *q = &dev->queue;
	unsigned int held = min(q->count, q->capacity);

	atomic64_add(n, &dev->stats.blocks_queued);
	if (held > atomic64_read(&dev->stats.queue_hwm))
		atomic64_set(&dev->stats.queue_hwm, held);
}

/* Set bits of @a and not @b (@b NULL: of @a), GPS_QBLOCKS_MAX of them. */
static unsigned int gps_qweight(const unsigned long *a, const unsigned long *b)
{
	unsigned int i, n = 0;

	for (i = 0; i < BITS_TO_LONGS(GPS_QBLOCKS_MAX); i++)
		n += hweight_long(a[i] & (b ? ~b[i] : ~0UL));
	return n;
}

/**
 * gps_queue_find() - the entry of a small page
 * @dev: device, harvest_lock held
 * @a: allocation
 * @page: small page index within the allocation
 *
 * Return: the entry, or NULL if the page has none.
 */
struct gps_qentry *gps_queue_find(struct gps_dev *dev, struct gps_alloc *a,
				  u64 page)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e;

	gps_queue_assert(dev);
	hlist_for_each_entry(e, gps_qhash(q, a, page), hash)
		if (e->alloc == a && e->page == page)
			return e;
	return NULL;
}

/**
 * gps_queue_merge() - fold a page's changed bytes into its entry
 * @dev: device whose replica changed, harvest_lock held
 * @e: the page's entry (gps_queue_find())
 * @mask: changed bytes, PAGE_SIZE bits
 * @blocks: blocks of the page with a changed byte
 *
 * Blocks already queued are coalescing hits; the others join the entry,
 * its age unchanged.  The queue may pass its capacity: the caller pushes
 * it back under its watermark.
 */
void gps_queue_merge(struct gps_dev *dev, struct gps_qentry *e,
		     const unsigned long *mask, const unsigned long *blocks)
{
	struct gps_queue *q = &dev->queue;
	unsigned int fresh = gps_qweight(blocks, e->queued), k, w;

	gps_queue_assert(dev);
	for_each_set_bit(k, blocks, PAGE_SIZE / q->block_size) {
		unsigned long *to = e->mask + gps_qword(q, k);
		const unsigned long *from = mask + gps_qword(q, k);

		for (w = 0; w < q->block_size / BITS_PER_LONG; w++)
			to[w] |= from[w];
	}
	bitmap_or(e->queued, e->queued, blocks, GPS_QBLOCKS_MAX);
	atomic64_add(gps_qweight(blocks, NULL) - fresh,
		     &dev->stats.blocks_merged);
	e->blocks += fresh;
	q->count += fresh;
	gps_queue_grew(dev, fresh);
}

/**
 * gps_queue_insert() - a new entry for a page that has none
 * @dev: device whose replica changed, harvest_lock held, fewer than
 *	capacity entries live (the caller pushes the oldest first)
 * @a: allocation
 * @page: small page index within the allocation
 * @mask: changed bytes, PAGE_SIZE bits, none outside @blocks
 * @blocks: blocks of the page with a changed byte, at least one
 *
 * The queue may pass its capacity, as in gps_queue_merge().
 */
void gps_queue_insert(struct gps_dev *dev, struct gps_alloc *a, u64 page,
		      const unsigned long *mask, const unsigned long *blocks)
{
	struct gps_queue *q = &dev->queue;
	unsigned int k, w, words = q->block_size / BITS_PER_LONG;
	struct gps_qentry *e;

	gps_queue_assert(dev);
	if (WARN_ON_ONCE(q->nr >= q->capacity))
		return;
	e = q->spare[q->capacity - q->nr - 1];
	e->alloc = a;
	e->page = page;
	e->added = jiffies;
	e->blocks = gps_qweight(blocks, NULL);
	bitmap_copy(e->queued, blocks, GPS_QBLOCKS_MAX);
	/* A spare's mask is clear: a sparse page's blocks alone. */
	if (e->blocks * q->block_size >= PAGE_SIZE / 4)
		bitmap_copy(e->mask, mask, PAGE_SIZE);
	else
		for_each_set_bit(k, blocks, PAGE_SIZE / q->block_size)
			for (w = 0; w < words; w++)
				e->mask[gps_qword(q, k) + w] =
					mask[gps_qword(q, k) + w];
	q->ring[gps_qring(q, q->head, q->nr)] = e;
	hlist_add_head(&e->hash, gps_qhash(q, a, page));
	q->nr++;
	q->count += e->blocks;
	gps_queue_grew(dev, e->blocks);
}

/**
 * gps_queue_take() - take the blocks of the oldest entry below a page
 *	offset, just pushed, out of the queue
 * @dev: device, harvest_lock held, its queue not empty
 * @end: page offset, a multiple of block_size; PAGE_SIZE takes the entry
 */
void gps_queue_take(struct gps_dev *dev, unsigned int end)
{
	struct gps_queue *q = &dev->queue;
	struct gps_qentry *e = gps_queue_oldest(q);
	unsigned int n;

	gps_queue_assert(dev);
	if (WARN_ON_ONCE(!e))
		return;
	/* Bytes merged later are new: their blocks are queued again. */
	n = gps_qclear(q, e, end / q->block_size);
	e->blocks -= n;
	q->count -= n;
	if (e->blocks)
		return;
	gps_queue_free(q, e);
	q->head = gps_qring(q, q->head, 1);
}

/**
 * gps_queue_purge() - drop the entries of an allocation being freed
 * @dev: device, harvest_lock held
 * @a: allocation
 */
void gps_queue_purge(struct gps_dev *dev, struct gps_alloc *a)
{
	struct gps_queue *q = &dev->queue;
	unsigned int i, live = q->nr, kept = 0;

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
	WARN_ON_ONCE(old.nr);
	dev->queue = *fresh;
	*fresh = old;
	atomic64_set(&dev->stats.queue_hwm, 0);
}
