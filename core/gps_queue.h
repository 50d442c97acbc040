/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The coalescing write queue and its whole policy (pure core): see
 * core/gps_queue.c.  The caller owns the memory (gps_queue_bytes()) and
 * the lock; pushes are the caller's, through a callback.
 */
#ifndef _GPS_QUEUE_H
#define _GPS_QUEUE_H

#include "gps_compat.h"

/*
 * One entry: the queued blocks of one small page and the mask of their
 * changed bytes.  The bytes stay in the source replica, read by the push.
 */
struct gps_qentry {
	const void *owner;		/* the allocation; NULL: spare */
	u64 page;			/* small page index in it */
	u64 added;			/* the caller's clock when added */
	u32 next;			/* hash chain: entry index + 1, 0 ends */
	unsigned int blocks;		/* set bits of @queued */
	DECLARE_BITMAP(queued, GPS_QBLOCKS_MAX);
	/* changed bytes, PAGE_SIZE bits, none set outside @queued */
	unsigned long *mask;
};

/*
 * @capacity, @watermark and @count are in blocks, as in the paper; the
 * entries (@nr of them) are pages, as many as @capacity at most.  A FIFO
 * of pages: merging keeps an entry's age, so entries leave in the order
 * they came (but for a purge), and a block joining an entry leaves with it.
 */
struct gps_queue {
	unsigned int capacity;
	unsigned int watermark;
	unsigned int block_size;
	unsigned int count;		/* blocks queued */
	unsigned int nr;		/* entries live */
	unsigned int hash_bits;
	unsigned int head;		/* ring index of the oldest entry */
	u32 *ring;			/* live entries' indices from head */
	u32 *spare;			/* unused entries' indices */
	u32 *hash;			/* chain heads: index + 1, 0 empty */
	struct gps_qentry *entries;	/* capacity of them */
};

/*
 * What the queue asks its caller to push: the blocks of one entry in
 * [@lo, @hi), @blocks of them, bytes as @mask says (PAGE_SIZE bits, none
 * set outside the queued blocks, so a push may read across the gaps).
 */
struct gps_qspan {
	const void *owner;
	u64 page;
	const unsigned long *mask;
	unsigned int lo, hi;		/* page offsets, multiples of blocks */
	unsigned int blocks;
	bool early;			/* before any fence asked for it */
};

/* Push @span into the other replicas; it leaves the queue on return. */
typedef void gps_qpush_t(void *ctx, const struct gps_qspan *span);

/* What one gps_queue_add() did, for the caller's counters. */
struct gps_qstat {
	u64 queued;			/* blocks new to the queue */
	u64 merged;			/* blocks already queued: coalesced */
	unsigned int held;		/* most blocks held, capacity at most */
	bool inserted;			/* the page had no entry */
};

size_t gps_queue_bytes(unsigned int capacity);
void gps_queue_init(struct gps_queue *q, void *mem, unsigned int capacity,
		    unsigned int watermark, unsigned int block_size);
struct gps_qentry *gps_queue_lookup(struct gps_queue *q, const void *owner,
				    u64 page);
bool gps_queue_add(struct gps_queue *q, const void *owner, u64 page,
		   const unsigned long *mask, const unsigned long *blocks,
		   u64 now, gps_qpush_t *push, void *ctx, struct gps_qstat *st);
unsigned int gps_queue_push_oldest(struct gps_queue *q, unsigned int max,
				   u64 now, u64 age, bool early,
				   gps_qpush_t *push, void *ctx);
void gps_queue_purge(struct gps_queue *q, const void *owner);

/* The oldest entry of @q, NULL if empty. */
const struct gps_qentry *gps_queue_oldest(const struct gps_queue *q);

#endif /* _GPS_QUEUE_H */
