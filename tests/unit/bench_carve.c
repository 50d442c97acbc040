// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the remote data caches of bench/paradigms' carve paradigm
 * (bench/carve.c, the code the benchmark runs), on the host, with two or
 * three devices' copies in plain memory.  A device's first read of a
 * line homed elsewhere is a miss that copies the line's remote words
 * into its copy and charges a line to the home; the second read is a
 * hit, served from its copy (a change the home made without telling is
 * not seen) and charges nothing; a write by another device invalidates
 * the line, and the next read fetches the new words; the reader's own
 * writes keep its line and move the words' home to it; reads of words
 * it holds or nobody wrote are no accesses; a fetch copies only the
 * words homed elsewhere, from each home, a line charged to each; an RDC
 * of one line evicts on every other line; slices of one device filling
 * side by side (threads) count every line once.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "carve.h"

#define WORDS	1024			/* 32 lines of 32 words */
#define WPL	(CARVE_LINE / WL_WORD)
#define NDEV	3

FIXTURE(rdc) {
	uint32_t *copy[NDEV];
	void *bufs[NDEV][WL_MAX_BUF];
	uint8_t *bits;
	struct wl_access acc;
	struct carve *cv;
};

static void rdc_open(struct __test_metadata *_metadata,
		     FIXTURE_DATA(rdc) *self, size_t rdc_bytes)
{
	size_t bytes = WORDS * WL_WORD;
	int d;

	for (d = 0; d < NDEV; d++) {
		self->copy[d] = calloc(WORDS, WL_WORD);
		ASSERT_NE(NULL, self->copy[d]);
		self->bufs[d][0] = self->copy[d];
	}
	self->bits = calloc(WORDS / 8 + 8, 1);
	ASSERT_NE(NULL, self->bits);
	self->acc.bits[0] = self->bits;
	self->acc.words[0] = WORDS;
	self->cv = carve_new(NDEV, 1, &bytes, rdc_bytes);
	ASSERT_NE(NULL, self->cv);
}

FIXTURE_SETUP(rdc)
{
	rdc_open(_metadata, self, 4096);
}

FIXTURE_TEARDOWN(rdc)
{
	int d;

	carve_free(self->cv);
	for (d = 0; d < NDEV; d++)
		free(self->copy[d]);
	free(self->bits);
}

/* the access map marks words [w0, w1) alone */
static struct wl_access *marks(FIXTURE_DATA(rdc) *self, size_t w0, size_t w1)
{
	memset(self->bits, 0, WORDS / 8 + 8);
	wl_mark(&self->acc, 0, w0 * WL_WORD, (w1 - w0) * WL_WORD);
	return &self->acc;
}

/* device @d writes @v into words [w0, w1) of its copy and says so */
static void store(FIXTURE_DATA(rdc) *self, int d, size_t w0, size_t w1,
		  uint32_t v)
{
	uint32_t lines[WORDS / WPL], n = 0;
	size_t i;

	for (i = w0; i < w1; i++)
		self->copy[d][i] = v;
	for (i = w0 / WPL; i <= (w1 - 1) / WPL; i++)
		lines[n++] = (uint32_t)i;
	carve_wrote(self->cv, d, marks(self, w0, w1), lines, n);
}

/* device @d reads words [w0, w1), all in line w0 / WPL */
static void load(FIXTURE_DATA(rdc) *self, int d, size_t w0, size_t w1)
{
	uint32_t line = (uint32_t)(w0 / WPL);

	carve_fill(self->cv, d, marks(self, w0, w1), &line, 1,
		   (void *const (*)[WL_MAX_BUF])self->bufs);
}

static struct carve_stats stats(FIXTURE_DATA(rdc) *self)
{
	struct carve_stats st;

	carve_stats(self->cv, &st);
	return st;
}

TEST_F(rdc, second_read_is_a_hit)
{
	unsigned long long sent[NDEV];

	store(self, 0, 0, WPL, 7);
	load(self, 1, 5, 6);
	EXPECT_EQ(1, stats(self).misses);
	EXPECT_EQ(0, stats(self).hits);
	EXPECT_EQ(7, self->copy[1][5]);
	EXPECT_EQ(7, self->copy[1][WPL - 1]);	/* the whole line */
	carve_take_sent(self->cv, sent);
	EXPECT_EQ(CARVE_LINE, sent[0]);
	EXPECT_EQ(0, sent[1]);
	EXPECT_EQ(0, sent[2]);

	/* served locally: a change nobody announced is not fetched */
	self->copy[0][5] = 8;
	load(self, 1, 5, 6);
	EXPECT_EQ(1, stats(self).hits);
	EXPECT_EQ(1, stats(self).misses);
	EXPECT_EQ(7, self->copy[1][5]);
	carve_take_sent(self->cv, sent);
	EXPECT_EQ(0, sent[0]);
	EXPECT_EQ(CARVE_LINE, stats(self).bytes);
}

TEST_F(rdc, remote_write_invalidates)
{
	store(self, 0, 0, WPL, 7);
	load(self, 1, 0, WPL);
	load(self, 2, 0, WPL);
	EXPECT_EQ(2, stats(self).misses);
	store(self, 0, 3, 4, 9);
	EXPECT_EQ(2, stats(self).invalidations);
	load(self, 1, 3, 4);
	EXPECT_EQ(3, stats(self).misses);
	EXPECT_EQ(0, stats(self).hits);
	EXPECT_EQ(9, self->copy[1][3]);
	EXPECT_EQ(7, self->copy[1][4]);
	/* a write to another line of the RDC leaves this one */
	store(self, 0, 2 * WPL, 3 * WPL, 1);
	load(self, 1, 3, 4);
	EXPECT_EQ(1, stats(self).hits);
	EXPECT_EQ(2, stats(self).invalidations);	/* nobody held line 2 */
}

TEST_F(rdc, own_write_keeps_the_line_and_moves_the_home)
{
	store(self, 0, 0, WPL, 7);
	load(self, 1, 0, WPL);
	/* device 1 takes words 0-3 over: its line stays valid */
	store(self, 1, 0, 4, 5);
	EXPECT_EQ(0, stats(self).invalidations);
	EXPECT_EQ(1, carve_home(self->cv, 0, 0));
	EXPECT_EQ(0, carve_home(self->cv, 0, 4));
	load(self, 1, 0, WPL);
	EXPECT_EQ(1, stats(self).hits);
	/* device 0 now reads them from device 1 */
	load(self, 0, 0, 4);
	EXPECT_EQ(2, stats(self).misses);
	EXPECT_EQ(5, self->copy[0][0]);
	EXPECT_EQ(5, self->copy[0][3]);
}

TEST_F(rdc, local_reads_are_no_accesses)
{
	unsigned long long sent[NDEV];

	load(self, 1, 0, WPL);			/* nobody wrote it */
	store(self, 1, WPL, 2 * WPL, 3);
	load(self, 1, WPL, 2 * WPL);		/* its own */
	/* the line holds a word of device 0, but not one it reads */
	store(self, 0, 2 * WPL, 2 * WPL + 1, 4);
	load(self, 1, 2 * WPL + 1, 3 * WPL);
	EXPECT_EQ(0, stats(self).hits);
	EXPECT_EQ(0, stats(self).misses);
	carve_take_sent(self->cv, sent);
	EXPECT_EQ(0, sent[0] + sent[1] + sent[2]);
	EXPECT_EQ(0, self->copy[1][2 * WPL]);
}

TEST_F(rdc, fetch_copies_remote_words_from_each_home)
{
	unsigned long long sent[NDEV];
	size_t i;

	store(self, 0, 0, 8, 10);
	store(self, 2, 8, 16, 20);
	store(self, 1, 16, WPL, 30);
	for (i = 16; i < WPL; i++)
		self->copy[1][i] = 31;	/* its newer, unannounced stores */
	carve_take_sent(self->cv, sent);
	load(self, 1, 0, WPL);
	carve_take_sent(self->cv, sent);
	EXPECT_EQ(CARVE_LINE, sent[0]);
	EXPECT_EQ(0, sent[1]);
	EXPECT_EQ(CARVE_LINE, sent[2]);
	EXPECT_EQ(2 * CARVE_LINE, stats(self).bytes);
	for (i = 0; i < WPL; i++)
		ASSERT_EQ(i < 8 ? 10u : i < 16 ? 20u : 31u, self->copy[1][i])
			TH_LOG("word %zu", i);
}

TEST_F(rdc, one_line_evicts)
{
	carve_free(self->cv);
	{
		size_t bytes = WORDS * WL_WORD;

		self->cv = carve_new(NDEV, 1, &bytes, CARVE_LINE);
	}
	EXPECT_EQ(CARVE_LINE, carve_rdc_bytes(self->cv));
	store(self, 0, 0, 2 * WPL, 1);
	load(self, 1, 0, 1);
	load(self, 1, WPL, WPL + 1);
	load(self, 1, 0, 1);
	load(self, 1, 0, 1);
	EXPECT_EQ(3, stats(self).misses);
	EXPECT_EQ(2, stats(self).evictions);
	EXPECT_EQ(1, stats(self).hits);
	carve_reset_stats(self->cv);
	EXPECT_EQ(0, stats(self).misses + stats(self).hits);
}

struct slice {
	FIXTURE_DATA(rdc) *self;
	const struct wl_access *rd;
	const uint32_t *lines;
	size_t n;
};

static void *fill_slice(void *p)
{
	struct slice *s = p;

	carve_fill(s->self->cv, 1, s->rd, s->lines, s->n,
		   (void *const (*)[WL_MAX_BUF])s->self->bufs);
	return NULL;
}

TEST_F(rdc, slices_side_by_side_count_each_line_once)
{
	uint32_t lines[WORDS / WPL];
	struct slice sl[4];
	pthread_t t[4];
	size_t i;
	int k;

	carve_free(self->cv);
	{
		size_t bytes = WORDS * WL_WORD;

		self->cv = carve_new(NDEV, 1, &bytes, 1 << 20);
	}
	for (i = 0; i < WORDS; i++)
		self->copy[0][i] = (uint32_t)i;
	memset(self->bits, 0xff, WORDS / 8);
	for (i = 0; i < WORDS / WPL; i++)
		lines[i] = (uint32_t)i;
	carve_wrote(self->cv, 0, &self->acc, lines, WORDS / WPL);
	for (k = 0; k < 4; k++) {
		sl[k] = (struct slice){ self, &self->acc,
					lines + k * (WORDS / WPL / 4),
					WORDS / WPL / 4 };
		ASSERT_EQ(0, pthread_create(&t[k], NULL, fill_slice, &sl[k]));
	}
	for (k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	EXPECT_EQ(WORDS / WPL, stats(self).misses);
	EXPECT_EQ(0, memcmp(self->copy[0], self->copy[1], WORDS * WL_WORD));
	for (k = 0; k < 4; k++)
		ASSERT_EQ(0, pthread_create(&t[k], NULL, fill_slice, &sl[k]));
	for (k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	EXPECT_EQ(WORDS / WPL, stats(self).hits);
}

TEST_HARNESS_MAIN
