// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the thrashing guard of managed memory
 * (core/gps_thrash.h, the same code as in gps.ko and the native engine),
 * on the host.  A page moves freely below the threshold; the move that
 * would exceed it within one epoch is refused and pins the page for the
 * pin time, after which it moves again; an epoch that ended starts the
 * count anew; threshold 0 never pins; a move undone (no memory where it
 * was going) is not counted; a page never pinned is not pinned at time
 * 0, and times compare across the clock's wrap (the driver's jiffies
 * start 5 minutes before it).
 */
#include "kselftest_harness.h"
#include "gps_thrash.h"

#define EPOCH	2000
#define PIN	300

/* Moves @n times at @now; returns how many were refused (pinned). */
static int moves(struct gps_thrash *t, u64 now, int n, u32 threshold)
{
	int refused = 0;

	while (n--)
		refused += gps_thrash_move(t, now, threshold, EPOCH, PIN);
	return refused;
}

TEST(moves_below_the_threshold_are_free)
{
	struct gps_thrash t = { 0 };

	ASSERT_EQ(0, moves(&t, 1000, 3, 3));
	ASSERT_FALSE(gps_thrash_pinned(&t, 1000));
	ASSERT_EQ(3, t.moves);
}

TEST(the_next_move_pins_the_page_for_the_pin_time)
{
	struct gps_thrash t = { 0 };

	ASSERT_EQ(0, moves(&t, 1000, 3, 3));
	ASSERT_TRUE(gps_thrash_move(&t, 1001, 3, EPOCH, PIN));
	ASSERT_TRUE(gps_thrash_pinned(&t, 1001));
	ASSERT_TRUE(gps_thrash_pinned(&t, 1001 + PIN - 1));
	ASSERT_FALSE(gps_thrash_pinned(&t, 1001 + PIN));
	/* the count starts again from the pin */
	ASSERT_EQ(0, t.moves);
	ASSERT_EQ(0, moves(&t, 1001 + PIN, 3, 3));
	ASSERT_EQ(1, moves(&t, 1001 + PIN, 1, 3));
}

TEST(an_epoch_that_ended_starts_the_count_anew)
{
	struct gps_thrash t = { 0 };
	u64 now = 5000;
	int i;

	/* two moves an epoch apart, for ten epochs: never pinned */
	for (i = 0; i < 10; i++, now += EPOCH + 1)
		ASSERT_EQ(0, moves(&t, now, 2, 3)) TH_LOG("epoch %d", i);
	/* within one epoch the third and fourth: the fourth pins */
	ASSERT_EQ(0, moves(&t, now, 3, 3));
	ASSERT_EQ(1, moves(&t, now + EPOCH - 1, 1, 3));
}

TEST(threshold_zero_never_pins)
{
	struct gps_thrash t = { 0 };

	ASSERT_EQ(0, moves(&t, 1000, 1000, 0));
	ASSERT_FALSE(gps_thrash_pinned(&t, 1000));
}

TEST(a_move_undone_is_not_counted)
{
	struct gps_thrash t = { 0 };

	ASSERT_EQ(0, moves(&t, 1000, 3, 3));
	gps_thrash_undo(&t);
	gps_thrash_undo(&t);
	ASSERT_EQ(0, moves(&t, 1000, 2, 3));
	ASSERT_EQ(1, moves(&t, 1000, 1, 3));
	/* nothing to undo below zero */
	t.moves = 0;
	gps_thrash_undo(&t);
	ASSERT_EQ(0, t.moves);
}

TEST(never_pinned_is_not_pinned_at_any_time)
{
	struct gps_thrash t = { 0 };

	ASSERT_FALSE(gps_thrash_pinned(&t, 0));
	ASSERT_FALSE(gps_thrash_pinned(&t, 1));
	ASSERT_FALSE(gps_thrash_pinned(&t, ~0ULL));
	/* a pin that ends at time 0 still pins just before it */
	ASSERT_EQ(0, moves(&t, -(u64)PIN, 3, 3));
	ASSERT_TRUE(gps_thrash_move(&t, -(u64)PIN, 3, EPOCH, PIN));
	ASSERT_TRUE(gps_thrash_pinned(&t, -(u64)1));
	ASSERT_FALSE(gps_thrash_pinned(&t, 1));
}

TEST(times_compare_across_the_wrap)
{
	struct gps_thrash t = { 0 };
	u64 start = -(u64)1000;		/* 1000 before the wrap */

	t.epoch = start;
	ASSERT_EQ(0, moves(&t, start, 3, 3));
	/* 500 after the wrap: the same epoch, so the fourth pins */
	ASSERT_EQ(1, moves(&t, start + 1500, 1, 3));
	ASSERT_TRUE(gps_thrash_pinned(&t, start + 1500 + PIN - 1));
	ASSERT_FALSE(gps_thrash_pinned(&t, start + 1500 + PIN));
	/* an epoch after the wrap: a new count */
	ASSERT_EQ(0, moves(&t, start + 1500 + PIN + EPOCH + 1, 3, 3));
}

TEST_HARNESS_MAIN
