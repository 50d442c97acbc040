/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The thrashing guard of managed memory (pure core), after NVIDIA's UVM
 * driver: a page that moved @threshold times within an epoch is not moved
 * again but pinned where it is for a while, and the other devices reach
 * it there.  Times are the caller's clock (jiffies in the driver, ns in
 * the native engine), compared across its wrap; the caller owns the
 * state's lock.
 */
#ifndef _GPS_THRASH_H
#define _GPS_THRASH_H

#include "gps_compat.h"

/* The guard's state of one page; all zero: never moved, never pinned. */
struct gps_thrash {
	u64 epoch;		/* when the count of moves began */
	u64 pin_until;		/* pinned before this; 0: never pinned */
	u32 moves;		/* since epoch */
};

/* @a is before @b on a clock that may wrap. */
static inline bool gps_thrash_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/* Is the page pinned at @now? */
static inline bool gps_thrash_pinned(const struct gps_thrash *t, u64 now)
{
	return t->pin_until && gps_thrash_before(now, t->pin_until);
}

/*
 * A move of a page that is not pinned, asked at @now: returns true when
 * it would be the move past @threshold within @epoch (0: no guard), and
 * then pins the page for @pin instead and starts a new count; otherwise
 * counts the move, to be made.
 */
static inline bool gps_thrash_move(struct gps_thrash *t, u64 now,
				   u32 threshold, u64 epoch, u64 pin)
{
	if (gps_thrash_before(t->epoch + epoch, now)) {
		t->epoch = now;
		t->moves = 0;
	}
	if (threshold && t->moves >= threshold) {
		t->pin_until = now + pin;
		/* 0 means "never pinned" */
		t->pin_until |= !t->pin_until;
		t->epoch = now;
		t->moves = 0;
		return true;
	}
	t->moves++;
	return false;
}

/* A move counted by gps_thrash_move() that could not be made. */
static inline void gps_thrash_undo(struct gps_thrash *t)
{
	if (t->moves)
		t->moves--;
}

#endif /* _GPS_THRASH_H */
