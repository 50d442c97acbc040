// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the block diff of the pure core (core/gps_diff.c, the same
 * code as in gps.ko), on the host.  gps_diff_page() marks exactly the
 * bytes of a page that differ from its twin and exactly the blocks that
 * hold one (at every block size from 64 to 4096 bytes, for random, dense,
 * one-byte and block-edge changes, whatever the diff held before); it
 * returns the number of those blocks; with update the twin then equals
 * the page, without it the twin is left as it was; the blocks of bytes
 * scattered by hand are those bytes' blocks, and only those.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#define T_RND_SEED	0x2545f4914f6cdd1dULL
#include "t_bits.h"
#include "gps_diff.h"

#define PG	PAGE_SIZE

static const unsigned int block_sizes[] = { 64, 128, 256, 512, 1024, 2048,
					    4096 };
#define NR_BS	(sizeof(block_sizes) / sizeof(block_sizes[0]))

/* 8-byte aligned, as gps_diff_page() wants them */
static u64 cur64[PG / 8], twin64[PG / 8], orig64[PG / 8], base64[PG / 8];
#define cur	((u8 *)cur64)
#define twin	((u8 *)twin64)
#define orig	((u8 *)orig64)	/* the twin before the diff */
#define base	((u8 *)base64)	/* the page before it was written */

/*
 * Diff cur against twin (orig: its copy) at @bs; check the mask, the
 * blocks, the count and the twin.  Returns the count.
 */
static unsigned int check_diff(struct __test_metadata *_metadata,
			       unsigned int bs, bool update)
{
	struct gps_diff df;
	unsigned int i, k, n, nb = PG / bs, want = 0;

	memcpy(orig, twin, PG);
	memset(&df, 0xa5, sizeof(df));	/* the diff clears what it held */
	n = gps_diff_page(&df, cur, twin, bs, update);
	for (i = 0; i < PG; i++)
		ASSERT_EQ(cur[i] != orig[i], bit(df.mask, i))
			TH_LOG("bs %u byte %u", bs, i);
	for (k = 0; k < GPS_QBLOCKS_MAX; k++) {
		int changed = 0;

		for (i = k * bs; k < nb && i < (k + 1) * bs; i++)
			changed |= cur[i] != orig[i];
		ASSERT_EQ(changed, bit(df.blocks, k))
			TH_LOG("bs %u block %u", bs, k);
		want += changed;
	}
	ASSERT_EQ(want, n) TH_LOG("bs %u", bs);
	ASSERT_EQ(0, memcmp(twin, update ? cur : orig, PG))
		TH_LOG("bs %u update %d", bs, update);
	return n;
}

/* A page of random bytes and its twin, equal. */
static void fresh_page(void)
{
	unsigned int i;

	for (i = 0; i < PG / 8; i++)
		cur64[i] = twin64[i] = base64[i] = rnd();
}

/*
 * At every block size, from the twin of the page before it was written:
 * without update, then with, then again (nothing differs any more).
 */
static void check_every_size(struct __test_metadata *_metadata)
{
	unsigned int b;

	for (b = 0; b < NR_BS; b++) {
		unsigned int n;

		memcpy(twin, base, PG);
		n = check_diff(_metadata, block_sizes[b], false);
		ASSERT_EQ(n, check_diff(_metadata, block_sizes[b], true));
		ASSERT_EQ(0, check_diff(_metadata, block_sizes[b], false));
		ASSERT_EQ(0, check_diff(_metadata, block_sizes[b], true));
	}
}

TEST(random_changes_at_every_block_size)
{
	static const int pcts[] = { 0, 1, 5, 30, 90, 100 };
	unsigned int i, n;

	for (n = 0; n < 120; n++) {
		fresh_page();
		for (i = 0; i < PG; i++)
			if ((int)(rnd() % 100) < pcts[n % 6])
				cur[i] ^= (u8)(1 + rnd() % 255);
		/* a run of whole words changed, as dense writes do */
		if (n % 4 == 3) {
			unsigned int at = rnd() % (PG / 64) * 64;
			unsigned int end = at + 64 + rnd() % 256;

			for (i = at; i < end && i < PG; i++)
				cur[i] = (u8)~base[i];
		}
		check_every_size(_metadata);
	}
}

/* A byte at either edge of each block: that block alone. */
TEST(one_byte_at_block_edges)
{
	unsigned int b, k, e;

	fresh_page();
	for (b = 0; b < NR_BS; b++) {
		unsigned int bs = block_sizes[b];

		for (k = 0; k < PG / bs; k++) {
			for (e = 0; e < 2; e++) {
				unsigned int at = k * bs + (e ? bs - 1 : 0);
				struct gps_diff df;
				unsigned int i;

				memcpy(twin, base, PG);
				memcpy(cur, base, PG);
				cur[at] ^= 0x80;
				ASSERT_EQ(1, gps_diff_page(&df, cur, twin, bs,
							   true));
				for (i = 0; i < GPS_QBLOCKS_MAX; i++)
					ASSERT_EQ(i == k, bit(df.blocks, i))
						TH_LOG("bs %u byte %u", bs, at);
				for (i = 0; i < PG; i++)
					ASSERT_EQ(i == at, bit(df.mask, i));
				ASSERT_EQ(0, memcmp(twin, cur, PG));
			}
		}
	}
}

/* Two bytes astride each block boundary: both blocks. */
TEST(bytes_astride_a_boundary)
{
	unsigned int b, k;

	fresh_page();
	for (b = 0; b < NR_BS - 1; b++) {
		unsigned int bs = block_sizes[b];

		for (k = 1; k < PG / bs; k++) {
			struct gps_diff df;

			memcpy(twin, base, PG);
			memcpy(cur, base, PG);
			cur[k * bs - 1] ^= 1;
			cur[k * bs] ^= 1;
			ASSERT_EQ(2, gps_diff_page(&df, cur, twin, bs, false));
			ASSERT_TRUE(bit(df.blocks, k - 1));
			ASSERT_TRUE(bit(df.blocks, k));
			ASSERT_EQ(2, weight(df.blocks, GPS_QBLOCKS_MAX));
			ASSERT_EQ(0, memcmp(twin, base, PG));
		}
	}
}

TEST(whole_page_and_no_change)
{
	unsigned int i;

	fresh_page();
	check_every_size(_metadata);
	for (i = 0; i < PG; i++)
		cur[i] = (u8)~base[i];
	check_every_size(_metadata);
	/* every byte, and every block at each size */
	memcpy(twin, base, PG);
	ASSERT_EQ(PG / 64, check_diff(_metadata, 64, false));
	ASSERT_EQ(1, check_diff(_metadata, 4096, false));
}

/*
 * Bytes 0, 63, 64, 1000 and the last changed: the blocks of those bytes
 * at each size, and only those, whatever the diff held before.
 */
static unsigned int diff_at(struct gps_diff *df, unsigned int bs)
{
	static const unsigned int at[] = { 0, 63, 64, 1000, PG - 1 };
	unsigned int i;

	memset(twin, 0, PG);
	memset(cur, 0, PG);
	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		cur[at[i]] = 1;
	memset(df, 0xff, sizeof(*df));
	return gps_diff_page(df, cur, twin, bs, false);
}

TEST(blocks_of_scattered_bytes)
{
	struct gps_diff df;

	memset(twin, 0, PG);
	memset(cur, 0, PG);
	memset(&df, 0xff, sizeof(df));
	ASSERT_EQ(0, gps_diff_page(&df, cur, twin, 64, false));
	ASSERT_EQ(0, weight(df.blocks, GPS_QBLOCKS_MAX));
	ASSERT_EQ(0, weight(df.mask, PG));

	ASSERT_EQ(4, diff_at(&df, 64));
	ASSERT_TRUE(bit(df.blocks, 0));
	ASSERT_TRUE(bit(df.blocks, 1));
	ASSERT_TRUE(bit(df.blocks, 15));
	ASSERT_TRUE(bit(df.blocks, PG / 64 - 1));
	ASSERT_EQ(4, weight(df.blocks, GPS_QBLOCKS_MAX));
	ASSERT_EQ(5, weight(df.mask, PG));

	ASSERT_EQ(3, diff_at(&df, 128));
	ASSERT_TRUE(bit(df.blocks, 0));
	ASSERT_TRUE(bit(df.blocks, 7));
	ASSERT_TRUE(bit(df.blocks, PG / 128 - 1));
	ASSERT_EQ(3, weight(df.blocks, GPS_QBLOCKS_MAX));

	ASSERT_EQ(3, diff_at(&df, 256));
	ASSERT_TRUE(bit(df.blocks, 3));

	ASSERT_EQ(2, diff_at(&df, 1024));
	ASSERT_TRUE(bit(df.blocks, 0));
	ASSERT_TRUE(bit(df.blocks, 3));
	ASSERT_EQ(2, weight(df.blocks, GPS_QBLOCKS_MAX));

	ASSERT_EQ(1, diff_at(&df, 4096));
	ASSERT_EQ(1, df.blocks[0]);
	ASSERT_EQ(1, weight(df.blocks, GPS_QBLOCKS_MAX));

	/* only the last byte: the last block alone */
	memset(cur, 0, PG);
	cur[PG - 1] = 1;
	memset(&df, 0xff, sizeof(df));
	ASSERT_EQ(1, gps_diff_page(&df, cur, twin, 64, false));
	ASSERT_EQ(1UL << (PG / 64 - 1) % BITS_PER_LONG,
		  df.blocks[(PG / 64 - 1) / BITS_PER_LONG]);
	ASSERT_EQ(1, weight(df.blocks, GPS_QBLOCKS_MAX));
}

TEST_HARNESS_MAIN
