// SPDX-License-Identifier: GPL-2.0
/**
 * DOC: the coalescing write queue
 *
 * The paper's remote write queue: fully associative, block_size bytes a
 * block, each queued block with a byte mask of the bytes that changed; a
 * block already queued absorbs new changes (a coalescing hit).  Its
 * capacity and high watermark count blocks.  An entry holds the queued
 * blocks of one small page, in one page-sized mask: a harvest queues a
 * page's changed blocks together and a push sends them together, so a
 * densely written page costs one lookup, one entry and one push, not one
 * per block.  An entry's mask has no bit set outside its queued blocks,
 * a spare's none at all, so a push may read across the gaps between
 * blocks, and the work per page is that of its changed blocks.  An entry
 * holds no copy of the bytes: the push reads them from the source
 * replica, which holds them anyway.
 *
 * The policy is here too, whole: blocks leave oldest first, whole entries
 * or their lowest blocks; when the entries are all taken, the oldest
 * makes room; past the high watermark, the oldest blocks go down to it
 * (the paper's drain of the least recently added: a queue over its
 * capacity for a moment sends the blocks that making room first would
 * have sent, and never counts more than its capacity as held); a fence
 * drains it; an age limit lets the push thread send what waited.  What a
 * push does is the caller's (gps_qpush_t).
 *
 * Pure core: the caller provides the memory (gps_queue_bytes()) and holds
 * the queue's lock across every call.
 */
#include "gps_compat.h"
#include "gps_queue.h"

#define GPS_QMASK_LONGS		BITS_TO_LONGS(PAGE_SIZE)

/* Bitmaps of blocks, here: a call per bit costs more than the bits. */
static void gps_bit_set(unsigned long *map, unsigned int i)
{
	map[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
}

/* The next set bit of @map at or after @i, @n if none. */
static unsigned int gps_bit_next(const unsigned long *map, unsigned int n,
				 unsigned int i)
{
	unsigned long w;

	if (i >= n)
		return n;
	w = map[i / BITS_PER_LONG] & (~0UL << (i % BITS_PER_LONG));
	for (;;) {
		if (w) {
			i = (i / BITS_PER_LONG) * BITS_PER_LONG + __builtin_ctzl(w);
			return i < n ? i : n;
		}
		i = (i / BITS_PER_LONG + 1) * BITS_PER_LONG;
		if (i >= n)
			return n;
		w = map[i / BITS_PER_LONG];
	}
}

/* Set bits of the first @n bits of @map, and not of @not (NULL: none). */
static unsigned int gps_bits_weight(const unsigned long *map,
				    const unsigned long *not, unsigned int n)
{
	unsigned int i, w = 0;

	for (i = 0; i < BITS_TO_LONGS(n); i++) {
		unsigned long v = map[i] & (not ? ~not[i] : ~0UL);

		if ((i + 1) * BITS_PER_LONG > n)
			v &= ~0UL >> ((i + 1) * BITS_PER_LONG - n);
		w += hweight_long(v);
	}
	return w;
}

static unsigned int gps_qhash_bits(unsigned int capacity)
{
	unsigned int b = 1;

	while ((1U << b) < 2 * capacity)
		b++;
	return b;
}

/**
 * gps_queue_bytes() - memory one queue of a capacity takes
 * @capacity: blocks, and so entries at most, from 1
 *
 * Return: bytes of the entries, their masks, the ring and the hash.
 */
size_t gps_queue_bytes(unsigned int capacity)
{
	return (size_t)capacity * (sizeof(struct gps_qentry) +
				   GPS_QMASK_LONGS * sizeof(long) +
				   2 * sizeof(u32)) +
	       sizeof(u32) * ((size_t)1 << gps_qhash_bits(capacity));
}

/**
 * gps_queue_init() - lay an empty queue out in @mem
 * @q: queue to set up
 * @mem: gps_queue_bytes(@capacity) bytes, aligned for a long
 * @capacity: blocks, and so entries at most (one block each)
 * @watermark: blocks above which the oldest are pushed
 * @block_size: bytes of a block, a power of two from 64 to PAGE_SIZE
 */
void gps_queue_init(struct gps_queue *q, void *mem, unsigned int capacity,
		    unsigned int watermark, unsigned int block_size)
{
	unsigned long *masks;
	unsigned int i;

	memset(mem, 0, gps_queue_bytes(capacity));
	memset(q, 0, sizeof(*q));
	q->capacity = capacity;
	q->watermark = watermark;
	q->block_size = block_size;
	q->hash_bits = gps_qhash_bits(capacity);
	q->entries = mem;
	masks = (unsigned long *)(q->entries + capacity);
	q->ring = (u32 *)(masks + (size_t)capacity * GPS_QMASK_LONGS);
	q->spare = q->ring + capacity;
	q->hash = q->spare + capacity;
	for (i = 0; i < capacity; i++) {
		q->entries[i].mask = masks + (size_t)i * GPS_QMASK_LONGS;
		q->spare[i] = i;
	}
}

static u32 *gps_qhead(struct gps_queue *q, const void *owner, u64 page)
{
	u64 k = ((u64)(uintptr_t)owner ^ page * 0x9e3779b97f4a7c15ULL) *
		0x9e3779b97f4a7c15ULL;

	return &q->hash[k >> (64 - q->hash_bits)];
}

/* Ring index @n places after @i. */
static unsigned int gps_qring(const struct gps_queue *q, unsigned int i,
			      unsigned int n)
{
	i += n;
	return i >= q->capacity ? i - q->capacity : i;
}

/* Index of the first mask word of block @k. */
static unsigned int gps_qword(const struct gps_queue *q, unsigned int k)
{
	return k * (q->block_size / BITS_PER_LONG);
}

static unsigned int gps_qblocks(const struct gps_queue *q)
{
	return PAGE_SIZE / q->block_size;
}

/**
 * gps_queue_lookup() - the entry of a small page
 * @q: queue
 * @owner: the page's allocation
 * @page: small page index in it
 *
 * Return: the entry, NULL if the page has none.
 */
struct gps_qentry *gps_queue_lookup(struct gps_queue *q, const void *owner,
				    u64 page)
{
	u32 i;

	for (i = *gps_qhead(q, owner, page); i; i = q->entries[i - 1].next) {
		struct gps_qentry *e = &q->entries[i - 1];

		if (e->owner == owner && e->page == page)
			return e;
	}
	return NULL;
}

/*
 * Clear the mask of @e's queued blocks below block @end, and their bits:
 * a word at a time, where a call per block costs more than the words; the
 * whole mask at once for a dense entry leaving whole.
 */
static unsigned int gps_qclear(struct gps_queue *q, struct gps_qentry *e,
			       unsigned int end)
{
	unsigned int k, w, n = 0, words = q->block_size / BITS_PER_LONG;

	if (end == gps_qblocks(q) && e->blocks * q->block_size >= PAGE_SIZE / 4) {
		memset(e->mask, 0, GPS_QMASK_LONGS * sizeof(long));
		memset(e->queued, 0, sizeof(e->queued));
		return e->blocks;
	}
	for (k = gps_bit_next(e->queued, end, 0); k < end;
	     k = gps_bit_next(e->queued, end, k + 1)) {
		unsigned long *m = e->mask + gps_qword(q, k);

		for (w = 0; w < words; w++)
			m[w] = 0;
		e->queued[k / BITS_PER_LONG] &= ~(1UL << (k % BITS_PER_LONG));
		n++;
	}
	return n;
}

/* Out of the lookup, back to the spares; the caller fixes the ring. */
static void gps_qfree(struct gps_queue *q, struct gps_qentry *e)
{
	u32 idx = e - q->entries, *p = gps_qhead(q, e->owner, e->page);

	gps_qclear(q, e, gps_qblocks(q));
	while (*p != idx + 1)
		p = &q->entries[*p - 1].next;
	*p = e->next;
	e->next = 0;
	e->owner = NULL;
	q->count -= e->blocks;
	e->blocks = 0;
	q->nr--;
	q->spare[q->capacity - q->nr - 1] = idx;
}

static void gps_qgrew(const struct gps_queue *q, struct gps_qstat *st,
		      unsigned int fresh, unsigned int merged)
{
	unsigned int held = min(q->count, q->capacity);

	st->queued += fresh;
	st->merged += merged;
	if (held > st->held)
		st->held = held;
}

/* Fold a page's changed bytes into its entry; its age is kept. */
static void gps_qmerge(struct gps_queue *q, struct gps_qentry *e,
		       const unsigned long *mask, const unsigned long *blocks,
		       struct gps_qstat *st)
{
	unsigned int nb = gps_qblocks(q), k, w;
	unsigned int all = gps_bits_weight(blocks, NULL, nb);
	unsigned int fresh = gps_bits_weight(blocks, e->queued, nb);

	for (k = gps_bit_next(blocks, nb, 0); k < nb;
	     k = gps_bit_next(blocks, nb, k + 1)) {
		unsigned long *to = e->mask + gps_qword(q, k);
		const unsigned long *from = mask + gps_qword(q, k);

		for (w = 0; w < q->block_size / BITS_PER_LONG; w++)
			to[w] |= from[w];
		gps_bit_set(e->queued, k);
	}
	e->blocks += fresh;
	q->count += fresh;
	gps_qgrew(q, st, fresh, all - fresh);
}

/*
 * A new entry for a page that has none.  Return: false, nothing done, if
 * every entry is live (the caller failed to make room).
 */
static bool gps_qinsert(struct gps_queue *q, const void *owner, u64 page,
			const unsigned long *mask, const unsigned long *blocks,
			u64 now, struct gps_qstat *st)
{
	unsigned int nb = gps_qblocks(q), k, w;
	unsigned int words = q->block_size / BITS_PER_LONG;
	u32 idx, *head;
	struct gps_qentry *e;

	if (GPS_WARN_ONCE(q->nr >= q->capacity))
		return false;
	idx = q->spare[q->capacity - q->nr - 1];
	e = &q->entries[idx];
	e->owner = owner;
	e->page = page;
	e->added = now;
	e->blocks = gps_bits_weight(blocks, NULL, nb);
	memcpy(e->queued, blocks, sizeof(e->queued));
	/* A spare's mask is clear: a sparse page's blocks alone. */
	if (e->blocks * q->block_size >= PAGE_SIZE / 4)
		memcpy(e->mask, mask, GPS_QMASK_LONGS * sizeof(long));
	else
		for (k = gps_bit_next(blocks, nb, 0); k < nb;
		     k = gps_bit_next(blocks, nb, k + 1))
			for (w = 0; w < words; w++)
				e->mask[gps_qword(q, k) + w] =
					mask[gps_qword(q, k) + w];
	q->ring[gps_qring(q, q->head, q->nr)] = idx;
	head = gps_qhead(q, owner, page);
	e->next = *head;
	*head = idx + 1;
	q->nr++;
	q->count += e->blocks;
	gps_qgrew(q, st, e->blocks, 0);
	st->inserted = true;
	return true;
}

/*
 * Take the oldest entry's blocks below page offset @end, just pushed, out
 * of the queue: @end == PAGE_SIZE takes the entry.  Bytes merged later
 * are new: their blocks were queued again.
 */
static void gps_qtake(struct gps_queue *q, unsigned int end)
{
	struct gps_qentry *e = &q->entries[q->ring[q->head]];
	unsigned int n = gps_qclear(q, e, end / q->block_size);

	e->blocks -= n;
	q->count -= n;
	if (e->blocks)
		return;
	gps_qfree(q, e);
	q->head = gps_qring(q, q->head, 1);
}

const struct gps_qentry *gps_queue_oldest(const struct gps_queue *q)
{
	return q->nr ? &q->entries[q->ring[q->head]] : NULL;
}

/**
 * gps_queue_push_oldest() - push the oldest entry's lowest blocks
 * @q: queue
 * @max: blocks to push at most
 * @now: the caller's clock
 * @age: push only an entry added at least this long before @now
 * @early: tell the push it comes before any fence asked for it
 * @push: writes the span into the other replicas
 * @ctx: for @push
 *
 * Return: blocks pushed (and gone from the queue), 0 if the queue is
 * empty or its oldest entry is younger than @age.
 */
unsigned int gps_queue_push_oldest(struct gps_queue *q, unsigned int max,
				   u64 now, u64 age, bool early,
				   gps_qpush_t *push, void *ctx)
{
	const struct gps_qentry *e = gps_queue_oldest(q);
	unsigned int bs = q->block_size, nb = gps_qblocks(q);
	unsigned int n = 0, lo = 0, hi = 0, k;
	struct gps_qspan span;

	/* Ages compare signed: a clock may step back a little. */
	if (!e || !max || (age && (s64)(now - e->added - age) < 0))
		return 0;
	for (k = gps_bit_next(e->queued, nb, 0); k < nb;
	     k = gps_bit_next(e->queued, nb, k + 1)) {
		if (!n++)
			lo = k * bs;
		hi = (k + 1) * bs;
		if (n == max)
			break;
	}
	span = (struct gps_qspan){ .owner = e->owner, .page = e->page,
				   .mask = e->mask, .lo = lo, .hi = hi,
				   .blocks = n, .early = early };
	push(ctx, &span);
	gps_qtake(q, n < e->blocks ? hi : PAGE_SIZE);
	return n;
}

/**
 * gps_queue_add() - queue the changed blocks of a small page
 * @q: queue
 * @owner: the page's allocation, not NULL
 * @page: small page index in it
 * @mask: changed bytes, PAGE_SIZE bits, none outside @blocks
 * @blocks: blocks of the page with a changed byte, at least one
 * @now: the caller's clock, the entry's age if it is new
 * @push: writes blocks the policy sends now into the other replicas
 * @ctx: for @push
 * @st: what was queued and merged is added here
 *
 * A block already queued merges; the others join the page's entry, or a
 * new one, made room for by pushing the oldest when every entry is taken
 * (each then holds one block).  The queue is then pushed down to its
 * high watermark, oldest blocks first.
 *
 * Return: false, and nothing queued, for no block or no owner, or if no
 * entry could be freed (a broken push); the caller must then push the
 * page past the queue, or its stores are lost.
 */
bool gps_queue_add(struct gps_queue *q, const void *owner, u64 page,
		   const unsigned long *mask, const unsigned long *blocks,
		   u64 now, gps_qpush_t *push, void *ctx, struct gps_qstat *st)
{
	struct gps_qentry *e;

	if (GPS_WARN_ONCE(!owner ||
			  !gps_bits_weight(blocks, NULL, gps_qblocks(q))))
		return false;
	e = gps_queue_lookup(q, owner, page);
	if (e) {
		gps_qmerge(q, e, mask, blocks, st);
	} else {
		if (q->nr == q->capacity)
			gps_queue_push_oldest(q, ~0U, now, 0, true, push, ctx);
		if (!gps_qinsert(q, owner, page, mask, blocks, now, st))
			return false;
	}
	while (q->count > q->watermark)
		if (!gps_queue_push_oldest(q, q->count - q->watermark, now, 0,
					   true, push, ctx))
			break;
	return true;
}

/**
 * gps_queue_purge() - drop the entries of an allocation being freed
 * @q: queue
 * @owner: the allocation
 */
void gps_queue_purge(struct gps_queue *q, const void *owner)
{
	unsigned int i, live = q->nr, kept = 0;

	/* Close the ring up over the entries dropped, order kept. */
	for (i = 0; i < live; i++) {
		u32 idx = q->ring[gps_qring(q, q->head, i)];

		if (q->entries[idx].owner == owner)
			gps_qfree(q, &q->entries[idx]);
		else
			q->ring[gps_qring(q, q->head, kept++)] = idx;
	}
}
