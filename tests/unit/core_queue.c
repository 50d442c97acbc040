// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the coalescing write queue of the pure core
 * (core/gps_queue.c, the same code as in gps.ko), on the host, at block
 * sizes 64, 128, 256 and 4096 (512 where a test needs 8 blocks a page).
 * A block queued twice is one block, counted as merged, its masks OR-ed;
 * a new page (or the same page of another owner) is a new entry; past
 * the high watermark the oldest blocks are pushed, the lowest blocks of
 * the oldest entry first, down to the watermark exactly; with every
 * entry taken a new page first pushes the oldest entry; push_oldest()
 * with an age pushes only an entry at least that old, merging keeps an
 * entry's age, a block joining an entry leaves with it; a purge drops
 * exactly one owner's entries and keeps the others' order (across the
 * ring's wrap); a pushed mask holds exactly the entry's queued bytes,
 * none left from blocks pushed or purged before; a drain delivers
 * exactly the union of the masks added, and no byte never added; the
 * counters (queued, merged, held <= capacity) are exact; a clock that
 * steps back still makes room and keeps the watermark.  Then random
 * adds, pushes (with ages and limits) and purges against a reference
 * model of the whole policy, every span compared.  The queue lives in
 * malloc(gps_queue_bytes(capacity)), so ASan sees any access past it.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_bits.h"
#include "gps_queue.h"

#define PG		PAGE_SIZE
#define MASK_LONGS	BITS_TO_LONGS(PG)
#define QB_LONGS	BITS_TO_LONGS(GPS_QBLOCKS_MAX)

static const char owners[4];
#define A	(&owners[0])
#define B	(&owners[1])
#define C	(&owners[2])
#define D	(&owners[3])

/* ---- changes: a page's mask of changed bytes and its blocks ---------- */

struct change {
	unsigned long mask[MASK_LONGS];
	unsigned long blocks[QB_LONGS];
};

static void ch_clear(struct change *c)
{
	memset(c, 0, sizeof(*c));
}

/* Byte @at of the page changed, at block size @bs. */
static void ch_byte(struct change *c, unsigned int bs, unsigned int at)
{
	set_bit_at(c->mask, at);
	set_bit_at(c->blocks, at / bs);
}

/* A change of byte @j of block @k (and its mirror in the block). */
static void ch_block(struct change *c, unsigned int bs, unsigned int k,
		     unsigned int j)
{
	ch_byte(c, bs, k * bs + j % bs);
	ch_byte(c, bs, k * bs + bs - 1 - j % bs);
}

/* ---- what the queue pushed ------------------------------------------- */

struct span {
	const void *owner;
	u64 page;
	unsigned int lo, hi, blocks;
	bool early;
	unsigned long mask[MASK_LONGS];	/* the whole page's, as pushed */
};

struct rec {
	struct span *s;
	unsigned int n, size;
};

static struct span *rec_new(struct rec *r)
{
	if (r->n == r->size) {
		r->size = r->size ? 2 * r->size : 16;
		r->s = realloc(r->s, r->size * sizeof(*r->s));
		if (!r->s)
			abort();
	}
	return &r->s[r->n++];
}

static void rec_push(void *ctx, const struct gps_qspan *sp)
{
	struct span *s = rec_new(ctx);

	s->owner = sp->owner;
	s->page = sp->page;
	s->lo = sp->lo;
	s->hi = sp->hi;
	s->blocks = sp->blocks;
	s->early = sp->early;
	memcpy(s->mask, sp->mask, sizeof(s->mask));
}

/* ---- a queue under test ---------------------------------------------- */

struct qt {
	struct gps_queue q;
	void *mem;
	struct rec rec;
	struct gps_qstat st;
	unsigned int bs, nb;
};

static void qt_setup(struct qt *t, unsigned int bs)
{
	memset(t, 0, sizeof(*t));
	t->bs = bs;
	t->nb = PG / bs;
}

static void qt_teardown(struct qt *t)
{
	free(t->mem);
	free(t->rec.s);
}

static void qt_init(struct qt *t, unsigned int cap, unsigned int wm)
{
	free(t->mem);
	t->mem = malloc(gps_queue_bytes(cap));
	if (!t->mem)
		abort();
	memset(t->mem, 0x5a, gps_queue_bytes(cap));	/* init clears it */
	gps_queue_init(&t->q, t->mem, cap, wm, t->bs);
	t->rec.n = 0;
	memset(&t->st, 0, sizeof(t->st));
}

static bool qt_add(struct qt *t, const void *owner, u64 page,
		   const struct change *c, u64 now)
{
	return gps_queue_add(&t->q, owner, page, c->mask, c->blocks, now,
			     rec_push, &t->rec, &t->st);
}

/* One block, byte @j of block @k, of @owner's @page. */
static bool qt_add1(struct qt *t, const void *owner, u64 page,
		    unsigned int k, unsigned int j, u64 now)
{
	struct change c;

	ch_clear(&c);
	ch_byte(&c, t->bs, k * t->bs + j);
	return qt_add(t, owner, page, &c, now);
}

static unsigned int qt_push(struct qt *t, unsigned int max, u64 now,
			    u64 age, bool early)
{
	return gps_queue_push_oldest(&t->q, max, now, age, early, rec_push,
				     &t->rec);
}

static unsigned int qt_drain(struct qt *t, u64 now)
{
	unsigned int n, all = 0;

	while ((n = qt_push(t, ~0U, now, 0, false)))
		all += n;
	return all;
}

/* Span @i_ was @owner_'s @page_, its blocks [@lo_, @hi_), @blocks_ of them. */
#define ASSERT_SPAN(t_, i_, owner_, page_, lo_, hi_, blocks_) do {	\
	ASSERT_LT(i_, (t_)->rec.n);					\
	ASSERT_EQ(owner_, (t_)->rec.s[i_].owner);			\
	ASSERT_EQ(page_, (t_)->rec.s[i_].page);				\
	ASSERT_EQ((lo_) * (t_)->bs, (t_)->rec.s[i_].lo);		\
	ASSERT_EQ((hi_) * (t_)->bs, (t_)->rec.s[i_].hi);		\
	ASSERT_EQ(blocks_, (t_)->rec.s[i_].blocks);			\
} while (0)

/* Span @i_'s mask is @c_'s, over the whole page. */
#define ASSERT_SPAN_MASK(t_, i_, c_) do {				\
	unsigned int _b;						\
									\
	for (_b = 0; _b < PG; _b++)					\
		ASSERT_EQ(bit((c_)->mask, _b),				\
			  bit((t_)->rec.s[i_].mask, _b))		\
			TH_LOG("span %u byte %u", (unsigned int)(i_), _b); \
} while (0)

/* ---- every block size ------------------------------------------------ */

FIXTURE(queue) {
	struct qt t;
};

FIXTURE_VARIANT(queue) {
	unsigned int bs;
};

FIXTURE_VARIANT_ADD(queue, bs64) { .bs = 64 };
FIXTURE_VARIANT_ADD(queue, bs128) { .bs = 128 };
FIXTURE_VARIANT_ADD(queue, bs256) { .bs = 256 };
FIXTURE_VARIANT_ADD(queue, bs4096) { .bs = 4096 };

FIXTURE_SETUP(queue)
{
	qt_setup(&self->t, variant->bs);
}

FIXTURE_TEARDOWN(queue)
{
	qt_teardown(&self->t);
}

TEST_F(queue, block_queued_twice_merges)
{
	struct qt *t = &self->t;
	struct change want;
	unsigned int last = t->nb - 1;

	qt_init(t, 16, 16);
	ASSERT_TRUE(qt_add1(t, A, 7, 0, 3, 1));
	ASSERT_EQ(1, t->st.queued);
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(1, t->q.count);
	ASSERT_EQ(1, t->q.nr);

	/* the same block again, another byte and the same one */
	ASSERT_TRUE(qt_add1(t, A, 7, 0, t->bs - 1, 2));
	ASSERT_TRUE(qt_add1(t, A, 7, 0, 3, 3));
	ASSERT_EQ(1, t->st.queued);
	ASSERT_EQ(2, t->st.merged);
	ASSERT_EQ(1, t->q.count);
	ASSERT_EQ(1, t->q.nr);
	ASSERT_EQ(1, t->st.held);

	/* another block of the page: the same entry, a new block */
	ch_clear(&want);
	ch_byte(&want, t->bs, 3);
	ch_byte(&want, t->bs, t->bs - 1);
	if (last) {
		ASSERT_TRUE(qt_add1(t, A, 7, last, 5, 4));
		ch_byte(&want, t->bs, last * t->bs + 5);
		ASSERT_EQ(2, t->st.queued);
		ASSERT_EQ(2, t->st.merged);
		ASSERT_EQ(2, t->q.count);
		ASSERT_EQ(1, t->q.nr);
		ASSERT_EQ(2, t->st.held);
	}
	ASSERT_EQ(1, gps_queue_oldest(&t->q)->added);	/* kept its age */
	ASSERT_EQ(0, t->rec.n);

	/* pushed together, the masks OR-ed */
	ASSERT_EQ(last ? 2 : 1, qt_drain(t, 5));
	ASSERT_EQ(1, t->rec.n);
	ASSERT_SPAN(t, 0, A, 7, 0, last + 1, last ? 2 : 1);
	ASSERT_SPAN_MASK(t, 0, &want);
	ASSERT_FALSE(t->rec.s[0].early);
	ASSERT_EQ(0, t->q.count);
	ASSERT_EQ(0, t->q.nr);
	ASSERT_NULL(gps_queue_oldest(&t->q));
	ASSERT_EQ(0, qt_push(t, ~0U, 6, 0, false));
	ASSERT_EQ(1, t->rec.n);
}

TEST_F(queue, new_page_is_a_new_entry)
{
	struct qt *t = &self->t;
	static const struct { const void *owner; u64 page; } pages[] = {
		{ A, 0 }, { A, 1 }, { B, 0 }, { A, 1ULL << 40 }, { B, ~0ULL },
	};
	unsigned int i;

	qt_init(t, 16, 16);
	for (i = 0; i < 5; i++)
		ASSERT_TRUE(qt_add1(t, pages[i].owner, pages[i].page, 0, i,
				    10 + i));
	ASSERT_EQ(5, t->q.nr);
	ASSERT_EQ(5, t->q.count);
	ASSERT_EQ(5, t->st.queued);
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(5, t->st.held);
	ASSERT_EQ(0, t->rec.n);

	/* one entry each, oldest first, each with its own byte */
	for (i = 0; i < 5; i++) {
		struct change want;

		ASSERT_EQ(10 + i, gps_queue_oldest(&t->q)->added);
		ASSERT_EQ(1, qt_push(t, ~0U, 20, 0, false));
		ASSERT_SPAN(t, i, pages[i].owner, pages[i].page, 0, 1, 1);
		ch_clear(&want);
		ch_byte(&want, t->bs, i);
		ASSERT_SPAN_MASK(t, i, &want);
	}
	ASSERT_EQ(0, t->q.nr);
}

TEST_F(queue, no_owner_or_no_block_is_refused)
{
	struct qt *t = &self->t;
	struct change c;

	qt_init(t, 4, 4);
	ch_clear(&c);
	ch_byte(&c, t->bs, 9);
	ASSERT_FALSE(qt_add(t, NULL, 0, &c, 1));
	ch_clear(&c);
	ASSERT_FALSE(qt_add(t, A, 0, &c, 1));
	ASSERT_EQ(0, t->q.count);
	ASSERT_EQ(0, t->q.nr);
	ASSERT_EQ(0, t->st.queued);
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(0, t->rec.n);
}

/* One block a page: entries and blocks alike. */
TEST_F(queue, watermark_pushes_the_oldest)
{
	struct qt *t = &self->t;
	unsigned int i;

	qt_init(t, 16, 4);
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(qt_add1(t, A, i, 0, i, i));
	ASSERT_EQ(0, t->rec.n);
	for (i = 4; i < 10; i++) {
		ASSERT_TRUE(qt_add1(t, A, i, 0, i, i));
		ASSERT_EQ(i - 3, t->rec.n);
		ASSERT_SPAN(t, i - 4, A, i - 4, 0, 1, 1);
		ASSERT_TRUE(t->rec.s[i - 4].early);
		ASSERT_EQ(4, t->q.count);
		ASSERT_EQ(4, t->q.nr);
		ASSERT_EQ(i - 3, gps_queue_oldest(&t->q)->page);
	}
	/* merged blocks are no more: nothing pushed */
	ASSERT_TRUE(qt_add1(t, A, 7, 0, 100 % t->bs, 20));
	ASSERT_EQ(6, t->rec.n);
	ASSERT_EQ(1, t->st.merged);
	ASSERT_EQ(10, t->st.queued);
	ASSERT_EQ(5, t->st.held);	/* over the watermark for a moment */
}

TEST_F(queue, full_entries_push_the_oldest_entry)
{
	struct qt *t = &self->t;
	struct change want;
	unsigned int i;

	qt_init(t, 4, 4);
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(qt_add1(t, A, i, i % t->nb, i, 10 + i));
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(0, t->rec.n);
	/* a merge takes no entry */
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 40, 14));
	ASSERT_EQ(0, t->rec.n);
	ASSERT_EQ(1, t->st.merged);

	/* a new page: the oldest entry, both its bytes, makes room */
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 1, 15));
	ASSERT_EQ(1, t->rec.n);
	ASSERT_SPAN(t, 0, A, 0, 0, 1, 1);
	ASSERT_TRUE(t->rec.s[0].early);
	ch_clear(&want);
	ch_byte(&want, t->bs, 0);
	ch_byte(&want, t->bs, 40);
	ASSERT_SPAN_MASK(t, 0, &want);
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(4, t->q.count);
	ASSERT_EQ(1, gps_queue_oldest(&t->q)->page);

	ASSERT_TRUE(qt_add1(t, B, 1, 0, 1, 16));
	ASSERT_EQ(2, t->rec.n);
	ASSERT_SPAN(t, 1, A, 1, 1 % t->nb, 1 % t->nb + 1, 1);
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(4, t->st.held);
	ASSERT_EQ(6, t->st.queued);

	/* what is left, in order */
	ASSERT_EQ(4, qt_drain(t, 17));
	ASSERT_SPAN(t, 2, A, 2, 2 % t->nb, 2 % t->nb + 1, 1);
	ASSERT_SPAN(t, 3, A, 3, 3 % t->nb, 3 % t->nb + 1, 1);
	ASSERT_SPAN(t, 4, B, 0, 0, 1, 1);
	ASSERT_SPAN(t, 5, B, 1, 0, 1, 1);
}

TEST_F(queue, age_pushes_only_entries_that_old)
{
	struct qt *t = &self->t;

	qt_init(t, 16, 16);
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 0, 100));
	ASSERT_TRUE(qt_add1(t, A, 1, 0, 0, 150));

	ASSERT_EQ(0, qt_push(t, ~0U, 120, 50, true));
	ASSERT_EQ(0, qt_push(t, ~0U, 149, 50, true));
	ASSERT_EQ(0, t->rec.n);
	ASSERT_EQ(1, qt_push(t, ~0U, 150, 50, true));	/* just that old */
	ASSERT_SPAN(t, 0, A, 0, 0, 1, 1);
	ASSERT_TRUE(t->rec.s[0].early);
	ASSERT_EQ(0, qt_push(t, ~0U, 150, 50, true));
	ASSERT_EQ(0, qt_push(t, ~0U, 199, 50, true));
	ASSERT_EQ(1, t->rec.n);
	ASSERT_EQ(1, qt_push(t, ~0U, 5000, 50, false));
	ASSERT_SPAN(t, 1, A, 1, 0, 1, 1);
	ASSERT_FALSE(t->rec.s[1].early);
	ASSERT_EQ(0, t->q.nr);

	/* a merge keeps the entry's age and its place */
	ASSERT_TRUE(qt_add1(t, A, 2, 0, 0, 300));
	ASSERT_TRUE(qt_add1(t, A, 3, 0, 0, 310));
	ASSERT_TRUE(qt_add1(t, A, 2, 0, 1, 340));
	ASSERT_EQ(1, t->st.merged);
	ASSERT_EQ(1, qt_push(t, ~0U, 350, 50, true));
	ASSERT_SPAN(t, 2, A, 2, 0, 1, 1);
	ASSERT_EQ(0, qt_push(t, ~0U, 350, 50, true));
	ASSERT_EQ(3, t->rec.n);

	/* no block asked, or nothing queued: nothing pushed */
	ASSERT_EQ(0, qt_push(t, 0, 1000, 0, true));
	ASSERT_EQ(1, t->q.nr);
	ASSERT_EQ(1, qt_push(t, 1, 1000, 0, true));
	ASSERT_EQ(0, qt_push(t, ~0U, 1000, 0, true));
	ASSERT_EQ(4, t->rec.n);
}

TEST_F(queue, purge_drops_one_owner_keeps_the_order)
{
	struct qt *t = &self->t;
	struct change want;

	qt_init(t, 16, 16);
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 0, 1));
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 1, 2));
	ASSERT_TRUE(qt_add1(t, A, 1, 0, 2, 3));
	ASSERT_TRUE(qt_add1(t, B, 1, 0, 3, 4));
	ASSERT_TRUE(qt_add1(t, C, 0, 0, 4, 5));
	gps_queue_purge(&t->q, A);
	ASSERT_EQ(3, t->q.nr);
	ASSERT_EQ(3, t->q.count);
	ASSERT_EQ(0, t->rec.n);		/* dropped, not pushed */
	gps_queue_purge(&t->q, D);	/* none of its own */
	ASSERT_EQ(3, t->q.nr);

	/* A's page again: a new entry, last, without the bytes dropped */
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 9, 6));
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(4, qt_drain(t, 7));
	ASSERT_SPAN(t, 0, B, 0, 0, 1, 1);
	ASSERT_SPAN(t, 1, B, 1, 0, 1, 1);
	ASSERT_SPAN(t, 2, C, 0, 0, 1, 1);
	ASSERT_SPAN(t, 3, A, 0, 0, 1, 1);
	ch_clear(&want);
	ch_byte(&want, t->bs, 9);
	ASSERT_SPAN_MASK(t, 3, &want);

	/* everything of its owner */
	ASSERT_TRUE(qt_add1(t, B, 5, 0, 0, 8));
	ASSERT_TRUE(qt_add1(t, B, 6, 0, 0, 8));
	gps_queue_purge(&t->q, B);
	ASSERT_EQ(0, t->q.nr);
	ASSERT_EQ(0, t->q.count);
	ASSERT_NULL(gps_queue_oldest(&t->q));
	ASSERT_EQ(0, qt_drain(t, 9));
}

/* The ring wrapped: live entries from the end of the ring to its start. */
TEST_F(queue, purge_across_the_ring_wrap)
{
	struct qt *t = &self->t;

	qt_init(t, 4, 4);
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 0, 1));
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 0, 2));
	ASSERT_TRUE(qt_add1(t, A, 1, 0, 0, 3));
	ASSERT_TRUE(qt_add1(t, B, 1, 0, 0, 4));
	ASSERT_EQ(1, qt_push(t, 2, 5, 0, false));	/* one block each */
	ASSERT_EQ(1, qt_push(t, 1, 5, 0, false));
	ASSERT_TRUE(qt_add1(t, A, 2, 0, 0, 6));
	ASSERT_TRUE(qt_add1(t, B, 2, 0, 0, 7));
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(2, t->rec.n);

	gps_queue_purge(&t->q, A);
	ASSERT_EQ(2, t->q.nr);
	ASSERT_TRUE(qt_add1(t, C, 0, 0, 0, 8));
	ASSERT_TRUE(qt_add1(t, C, 1, 0, 0, 9));
	ASSERT_EQ(2, t->rec.n);
	ASSERT_EQ(4, qt_drain(t, 10));
	ASSERT_SPAN(t, 2, B, 1, 0, 1, 1);
	ASSERT_SPAN(t, 3, B, 2, 0, 1, 1);
	ASSERT_SPAN(t, 4, C, 0, 0, 1, 1);
	ASSERT_SPAN(t, 5, C, 1, 0, 1, 1);
}

/*
 * A clock that steps back (@now before the oldest entry's): making room
 * and the watermark push regardless; only an age is compared.
 */
TEST_F(queue, clock_stepping_back_still_makes_room)
{
	struct qt *t = &self->t;
	unsigned int i;

	qt_init(t, 4, 4);
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(qt_add1(t, A, i, 0, i, 100));
	ASSERT_TRUE(qt_add1(t, A, 10, 0, 0, 99));
	ASSERT_EQ(1, t->rec.n);
	ASSERT_SPAN(t, 0, A, 0, 0, 1, 1);
	ASSERT_EQ(4, t->q.nr);
	ASSERT_EQ(0, qt_push(t, ~0U, 98, 1, false));	/* aged: no */
	ASSERT_EQ(1, qt_push(t, ~0U, 98, 0, false));	/* a fence: yes */
	ASSERT_SPAN(t, 1, A, 1, 0, 1, 1);

	qt_init(t, 16, 2);
	for (i = 0; i < 2; i++)
		ASSERT_TRUE(qt_add1(t, A, i, 0, i, 100));
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 0, 50));
	ASSERT_EQ(1, t->rec.n);
	ASSERT_SPAN(t, 0, A, 0, 0, 1, 1);
	ASSERT_EQ(2, t->q.count);
}

/* ---- several blocks a page: 8 at least ------------------------------- */

FIXTURE(blocks) {
	struct qt t;
};

FIXTURE_VARIANT(blocks) {
	unsigned int bs;
};

FIXTURE_VARIANT_ADD(blocks, bs64) { .bs = 64 };
FIXTURE_VARIANT_ADD(blocks, bs128) { .bs = 128 };
FIXTURE_VARIANT_ADD(blocks, bs256) { .bs = 256 };
FIXTURE_VARIANT_ADD(blocks, bs512) { .bs = 512 };

FIXTURE_SETUP(blocks)
{
	qt_setup(&self->t, variant->bs);
}

FIXTURE_TEARDOWN(blocks)
{
	qt_teardown(&self->t);
}

/* Bits of span @i inside [lo, hi) are @c's, those outside @out's. */
static void check_span_bits(struct __test_metadata *_metadata,
			    const struct qt *t, unsigned int i,
			    const struct change *c, const struct change *out)
{
	const struct span *s = &t->rec.s[i];
	unsigned int b;

	ASSERT_LT(i, t->rec.n);
	for (b = 0; b < PG; b++) {
		int in = b >= s->lo && b < s->hi;

		ASSERT_EQ(bit(in ? c->mask : out->mask, b), bit(s->mask, b))
			TH_LOG("span %u byte %u", i, b);
	}
}

TEST_F(blocks, watermark_pushes_lowest_blocks_of_oldest_entry)
{
	struct qt *t = &self->t;
	struct change c0, c1, cb, cb1, in, out;
	unsigned int last = t->nb - 1;

	qt_init(t, 16, 4);
	ch_clear(&c0);			/* A 0: blocks 1, 3, last */
	ch_block(&c0, t->bs, 1, 5);
	ch_block(&c0, t->bs, 3, 6);
	ch_block(&c0, t->bs, last, 7);
	ASSERT_TRUE(qt_add(t, A, 0, &c0, 1));
	ASSERT_EQ(3, t->q.count);
	ASSERT_EQ(0, t->rec.n);

	ch_clear(&c1);			/* A 1: blocks 0, 2, 5 */
	ch_block(&c1, t->bs, 0, 1);
	ch_block(&c1, t->bs, 2, 2);
	ch_block(&c1, t->bs, 5, 3);
	ASSERT_TRUE(qt_add(t, A, 1, &c1, 2));
	/* 6 > 4: A 0's blocks 1 and 3, one span */
	ASSERT_EQ(1, t->rec.n);
	ASSERT_SPAN(t, 0, A, 0, 1, 4, 2);
	ASSERT_TRUE(t->rec.s[0].early);
	ch_clear(&in);
	ch_block(&in, t->bs, 1, 5);
	ch_block(&in, t->bs, 3, 6);
	ch_clear(&out);			/* block last, still queued */
	ch_block(&out, t->bs, last, 7);
	check_span_bits(_metadata, t, 0, &in, &out);
	ASSERT_EQ(4, t->q.count);
	ASSERT_EQ(2, t->q.nr);
	ASSERT_EQ(6, t->st.held);
	ASSERT_EQ(0, gps_queue_oldest(&t->q)->page);

	ch_clear(&cb);			/* B 0: block 4 */
	ch_block(&cb, t->bs, 4, 0);
	ASSERT_TRUE(qt_add(t, B, 0, &cb, 3));
	/* A 0's last block alone: nothing left of blocks 1 and 3 */
	ASSERT_EQ(2, t->rec.n);
	ASSERT_SPAN(t, 1, A, 0, last, last + 1, 1);
	ch_clear(&in);
	ch_block(&in, t->bs, last, 7);
	ch_clear(&out);
	check_span_bits(_metadata, t, 1, &in, &out);
	ASSERT_EQ(4, t->q.count);
	ASSERT_EQ(2, t->q.nr);
	ASSERT_EQ(1, gps_queue_oldest(&t->q)->page);

	ch_clear(&cb1);			/* B 1: blocks 0..3 */
	ch_block(&cb1, t->bs, 0, 0);
	ch_block(&cb1, t->bs, 1, 0);
	ch_block(&cb1, t->bs, 2, 0);
	ch_block(&cb1, t->bs, 3, 0);
	ASSERT_TRUE(qt_add(t, B, 1, &cb1, 4));
	/* 8 > 4: A 1 whole (3 blocks), then B 0's one */
	ASSERT_EQ(4, t->rec.n);
	ASSERT_SPAN(t, 2, A, 1, 0, 6, 3);
	check_span_bits(_metadata, t, 2, &c1, &out);
	ASSERT_SPAN(t, 3, B, 0, 4, 5, 1);
	check_span_bits(_metadata, t, 3, &cb, &out);
	ASSERT_EQ(4, t->q.count);
	ASSERT_EQ(1, t->q.nr);
	ASSERT_EQ(11, t->st.queued);
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(8, t->st.held);
}

TEST_F(blocks, push_limit_takes_lowest_blocks_then_the_rest)
{
	struct qt *t = &self->t;
	struct change c, in, out, again;
	unsigned int last = t->nb - 1;

	qt_init(t, 64, 64);
	ch_clear(&c);			/* blocks 1, 4, last - 1 */
	ch_block(&c, t->bs, 1, 3);
	ch_block(&c, t->bs, 4, 9);
	ch_block(&c, t->bs, last - 1, 1);
	ASSERT_TRUE(qt_add(t, A, 0, &c, 1));
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 0, 2));

	ASSERT_EQ(2, qt_push(t, 2, 3, 0, false));
	ASSERT_SPAN(t, 0, A, 0, 1, 5, 2);
	ch_clear(&in);			/* blocks 1 and 4, gaps 2 and 3 */
	ch_block(&in, t->bs, 1, 3);
	ch_block(&in, t->bs, 4, 9);
	ch_clear(&out);
	ch_block(&out, t->bs, last - 1, 1);
	check_span_bits(_metadata, t, 0, &in, &out);
	ASSERT_EQ(2, t->q.count);
	ASSERT_EQ(A, gps_queue_oldest(&t->q)->owner);	/* still first */
	ASSERT_EQ(1, gps_queue_oldest(&t->q)->blocks);

	/* block 1 again: queued anew, its old bytes gone with the push */
	ch_clear(&again);
	ch_byte(&again, t->bs, t->bs + 20);
	ASSERT_TRUE(qt_add(t, A, 0, &again, 4));
	ASSERT_EQ(5, t->st.queued);
	ASSERT_EQ(0, t->st.merged);
	ASSERT_EQ(3, t->q.count);
	ASSERT_EQ(1, gps_queue_oldest(&t->q)->added);

	ASSERT_EQ(2, qt_push(t, ~0U, 5, 0, false));
	ASSERT_SPAN(t, 1, A, 0, 1, last, 2);
	ch_byte(&again, t->bs, (last - 1) * t->bs + 1);
	ch_byte(&again, t->bs, (last - 1) * t->bs + t->bs - 2);
	ch_clear(&out);
	check_span_bits(_metadata, t, 1, &again, &out);
	ASSERT_EQ(1, qt_push(t, ~0U, 5, 0, false));
	ASSERT_SPAN(t, 2, B, 0, 0, 1, 1);
}

TEST_F(blocks, joining_block_leaves_with_its_entry)
{
	struct qt *t = &self->t;

	qt_init(t, 64, 64);
	ASSERT_TRUE(qt_add1(t, A, 0, 0, 0, 1));
	ASSERT_TRUE(qt_add1(t, B, 0, 0, 0, 2));
	ASSERT_TRUE(qt_add1(t, A, 0, 3, 0, 3));
	ASSERT_EQ(2, t->q.nr);
	ASSERT_EQ(3, t->q.count);
	ASSERT_EQ(3, qt_drain(t, 4));
	ASSERT_SPAN(t, 0, A, 0, 0, 4, 2);
	ASSERT_SPAN(t, 1, B, 0, 0, 1, 1);
}

/* Dense pages take the whole-mask paths: nothing of them must remain. */
TEST_F(blocks, dense_page_leaves_nothing_behind)
{
	struct qt *t = &self->t;
	struct change all, one, in, out;
	unsigned int b;

	qt_init(t, 256, 256);
	ch_clear(&all);
	for (b = 0; b < PG; b++)
		ch_byte(&all, t->bs, b);
	ASSERT_TRUE(qt_add(t, A, 0, &all, 1));
	ASSERT_EQ(t->nb, t->q.count);
	ASSERT_EQ(t->nb, qt_drain(t, 2));
	ASSERT_SPAN(t, 0, A, 0, 0, t->nb, t->nb);
	ASSERT_SPAN_MASK(t, 0, &all);

	/* the same spare again, for a page of one byte */
	ch_clear(&one);
	ch_byte(&one, t->bs, PG - 1);
	ASSERT_TRUE(qt_add(t, A, 0, &one, 3));
	ASSERT_EQ(1, qt_drain(t, 4));
	ASSERT_SPAN(t, 1, A, 0, t->nb - 1, t->nb, 1);
	ASSERT_SPAN_MASK(t, 1, &one);

	/* half pushed, then a byte of the pushed half */
	ASSERT_TRUE(qt_add(t, A, 0, &all, 5));
	ASSERT_EQ(t->nb / 2, qt_push(t, t->nb / 2, 6, 0, false));
	ASSERT_SPAN(t, 2, A, 0, 0, t->nb / 2, t->nb / 2);
	ch_clear(&in);
	ch_clear(&out);
	for (b = 0; b < PG; b++)
		ch_byte(b < PG / 2 ? &in : &out, t->bs, b);
	check_span_bits(_metadata, t, 2, &in, &out);
	ch_clear(&one);
	ch_byte(&one, t->bs, 0);
	ASSERT_TRUE(qt_add(t, A, 0, &one, 7));
	ASSERT_EQ(t->nb / 2 + 1, qt_drain(t, 8));
	ASSERT_SPAN(t, 3, A, 0, 0, t->nb, t->nb / 2 + 1);
	ch_byte(&out, t->bs, 0);
	ASSERT_SPAN_MASK(t, 3, &out);
}

TEST_F(blocks, full_entries_then_watermark)
{
	struct qt *t = &self->t;
	struct change c;
	unsigned int i;

	qt_init(t, 4, 4);
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(qt_add1(t, A, i, 0, 0, i));
	ch_clear(&c);
	ch_block(&c, t->bs, 0, 0);
	ch_block(&c, t->bs, 2, 0);
	ch_block(&c, t->bs, 7, 0);
	/* room made by A 0, then 6 > 4 pushes A 1 and A 2 */
	ASSERT_TRUE(qt_add(t, B, 0, &c, 4));
	ASSERT_EQ(3, t->rec.n);
	for (i = 0; i < 3; i++)
		ASSERT_SPAN(t, i, A, i, 0, 1, 1);
	ASSERT_EQ(4, t->q.count);
	ASSERT_EQ(2, t->q.nr);
	ASSERT_EQ(4, t->st.held);	/* 6 queued for a moment, 4 held */
	ASSERT_EQ(7, t->st.queued);
}

/* ---- random: the union of what was added, against a model ----------- */

static const u64 page_ids[] = { 0, 1, 2, 3, 5, 8, 13, 64, 1000,
				1ULL << 32, (1ULL << 40) | 3, ~0ULL };
#define NR_PAGES	(sizeof(page_ids) / sizeof(page_ids[0]))
#define NR_OWNERS	4

/* A random change of one page: sparse, a few blocks, dense or whole. */
static void random_change(struct change *c, unsigned int bs)
{
	unsigned int i, k, n, shape = rnd() % 6;

	ch_clear(c);
	switch (shape) {
	case 0:		/* a few bytes anywhere */
		for (n = 1 + rnd() % 3; n; n--)
			ch_byte(c, bs, rnd() % PG);
		break;
	case 1:		/* a few blocks, a few bytes each */
		for (n = 1 + rnd() % 4; n; n--) {
			k = rnd() % (PG / bs);
			for (i = 1 + rnd() % 8; i; i--)
				ch_byte(c, bs, k * bs + rnd() % bs);
		}
		break;
	case 2:		/* a run of bytes */
		k = rnd() % PG;
		for (i = k, n = 1 + rnd() % 2048; i < PG && n; i++, n--)
			ch_byte(c, bs, i);
		break;
	case 3:		/* the whole page */
		for (i = 0; i < PG; i++)
			ch_byte(c, bs, i);
		break;
	default:	/* random bytes, sparse to dense */
		n = 1 + rnd() % 100;
		for (i = 0; i < PG; i++)
			if (rnd() % 100 < n)
				ch_byte(c, bs, i);
		if (!weight(c->blocks, GPS_QBLOCKS_MAX))
			ch_byte(c, bs, rnd() % PG);
		break;
	}
}

struct pagebits {
	unsigned long added[MASK_LONGS];	/* every byte added */
	unsigned long pushed[MASK_LONGS];	/* every byte pushed */
};

struct union_ctx {
	struct pagebits pb[NR_OWNERS][NR_PAGES];
	bool bad;				/* a span out of place */
};

static struct pagebits *page_bits(struct union_ctx *u, const void *owner,
				  u64 page)
{
	unsigned int o = (const char *)owner - owners, p;

	for (p = 0; p < NR_PAGES; p++)
		if (page_ids[p] == page && o < NR_OWNERS)
			return &u->pb[o][p];
	return NULL;
}

/* Folds a span into what was pushed; no byte never added. */
static void union_push(void *ctx, const struct gps_qspan *sp)
{
	struct union_ctx *u = ctx;
	struct pagebits *pb = page_bits(u, sp->owner, sp->page);
	unsigned int w;

	if (!pb || sp->lo >= sp->hi || sp->hi > PG) {
		u->bad = true;
		return;
	}
	for (w = 0; w < MASK_LONGS; w++) {
		if (sp->mask[w] & ~pb->added[w])
			u->bad = true;
		if (w >= sp->lo / BITS_PER_LONG && w < sp->hi / BITS_PER_LONG)
			pb->pushed[w] |= sp->mask[w];
	}
}

TEST_F(queue, drain_delivers_the_union_of_the_adds)
{
	struct qt *t = &self->t;
	struct union_ctx *u = calloc(1, sizeof(*u));
	unsigned int round, i, w, o, p;
	u64 now = 1;

	ASSERT_NE(NULL, u);
	rnd_state = 0x9e3779b97f4a7c15ULL ^ t->bs;
	for (round = 0; round < 12; round++) {
		unsigned int cap = 1 + rnd() % (round < 6 ? 8 : 200);
		/* every fourth round: the entries all taken at times */
		unsigned int wm = round % 4 ? 1 + rnd() % cap : cap;
		unsigned int adds = 200 + rnd() % 800;

		memset(u, 0, sizeof(*u));
		qt_init(t, cap, wm);
		for (i = 0; i < adds; i++) {
			struct change c;
			const void *owner = &owners[rnd() % NR_OWNERS];
			u64 page = page_ids[rnd() % (round & 1 ? NR_PAGES : 3)];
			struct pagebits *pb;

			random_change(&c, t->bs);
			pb = page_bits(u, owner, page);
			for (w = 0; w < MASK_LONGS; w++)
				pb->added[w] |= c.mask[w];
			now += rnd() % 3;
			ASSERT_TRUE(gps_queue_add(&t->q, owner, page, c.mask,
						  c.blocks, now, union_push, u,
						  &t->st));
			ASSERT_FALSE(u->bad)
				TH_LOG("round %u add %u", round, i);
			ASSERT_LE(t->q.count, wm);
			ASSERT_LE(t->q.nr, cap);
			ASSERT_LE(t->st.held, cap);
		}
		while (gps_queue_push_oldest(&t->q, ~0U, now, 0, false,
					     union_push, u))
			;
		ASSERT_FALSE(u->bad);
		ASSERT_EQ(0, t->q.count);
		ASSERT_EQ(0, t->q.nr);
		for (o = 0; o < NR_OWNERS; o++)
			for (p = 0; p < NR_PAGES; p++)
				ASSERT_EQ(0, memcmp(u->pb[o][p].added,
						    u->pb[o][p].pushed,
						    sizeof(u->pb[o][p].added)))
					TH_LOG("round %u owner %u page %llu",
					       round, o,
					       (unsigned long long)page_ids[p]);
	}
	free(u);
}

/*
 * The model: the whole policy over plain arrays, entries in FIFO order,
 * each span it expects recorded as the queue's push would see it.
 */
struct ment {
	const void *owner;
	u64 page;
	u64 added;
	unsigned int blocks;
	unsigned long queued[QB_LONGS];
	unsigned long mask[MASK_LONGS];
};

struct model {
	unsigned int cap, wm, bs, nb, count, nr;
	struct ment *e;			/* [0] the oldest */
	struct gps_qstat st;
	struct rec exp;
};

static unsigned int model_push(struct model *m, unsigned int max, u64 now,
			       u64 age, bool early)
{
	struct ment *e = m->e;
	struct span *s;
	unsigned int k, n = 0, lo = 0, hi = 0, b;

	if (!m->nr || !max || (s64)(now - e->added - age) < 0)
		return 0;
	for (k = 0; k < m->nb && n < max; k++) {
		if (!bit(e->queued, k))
			continue;
		if (!n++)
			lo = k * m->bs;
		hi = (k + 1) * m->bs;
	}
	s = rec_new(&m->exp);
	s->owner = e->owner;
	s->page = e->page;
	s->lo = lo;
	s->hi = hi;
	s->blocks = n;
	s->early = early;
	memcpy(s->mask, e->mask, sizeof(s->mask));
	for (b = lo; b < hi; b++)
		e->mask[b / BITS_PER_LONG] &= ~(1UL << (b % BITS_PER_LONG));
	for (k = lo / m->bs; k < hi / m->bs; k++)
		e->queued[k / BITS_PER_LONG] &= ~(1UL << (k % BITS_PER_LONG));
	e->blocks -= n;
	m->count -= n;
	if (!e->blocks) {
		m->nr--;
		memmove(m->e, m->e + 1, m->nr * sizeof(*m->e));
	}
	return n;
}

static void model_add(struct model *m, const void *owner, u64 page,
		      const struct change *c, u64 now)
{
	unsigned int i, k, all = 0, fresh = 0;
	struct ment *e = NULL;

	for (i = 0; i < m->nr; i++)
		if (m->e[i].owner == owner && m->e[i].page == page)
			e = &m->e[i];
	if (!e) {
		if (m->nr == m->cap)
			model_push(m, ~0U, now, 0, true);
		e = &m->e[m->nr++];
		memset(e, 0, sizeof(*e));
		e->owner = owner;
		e->page = page;
		e->added = now;
	}
	for (k = 0; k < m->nb; k++) {
		if (!bit(c->blocks, k))
			continue;
		all++;
		fresh += !bit(e->queued, k);
		set_bit_at(e->queued, k);
	}
	for (i = 0; i < MASK_LONGS; i++)
		e->mask[i] |= c->mask[i];
	e->blocks += fresh;
	m->count += fresh;
	m->st.queued += fresh;
	m->st.merged += all - fresh;
	if (min(m->count, m->cap) > m->st.held)
		m->st.held = min(m->count, m->cap);
	while (m->count > m->wm)
		model_push(m, m->count - m->wm, now, 0, true);
}

static void model_purge(struct model *m, const void *owner)
{
	unsigned int i, kept = 0;

	for (i = 0; i < m->nr; i++)
		if (m->e[i].owner != owner)
			m->e[kept++] = m->e[i];
		else
			m->count -= m->e[i].blocks;
	m->nr = kept;
}

/* The queue pushed what the model expected, and they agree now. */
static void model_check(struct __test_metadata *_metadata, struct qt *t,
			struct model *m, unsigned int op)
{
	const struct gps_qentry *o = gps_queue_oldest(&t->q);
	unsigned int i;

	ASSERT_EQ(m->exp.n, t->rec.n) TH_LOG("op %u", op);
	for (i = 0; i < m->exp.n; i++) {
		const struct span *x = &m->exp.s[i], *s = &t->rec.s[i];

		ASSERT_EQ(x->owner, s->owner) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(x->page, s->page) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(x->lo, s->lo) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(x->hi, s->hi) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(x->blocks, s->blocks) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(x->early, s->early) TH_LOG("op %u span %u", op, i);
		ASSERT_EQ(0, memcmp(x->mask, s->mask, sizeof(x->mask)))
			TH_LOG("op %u span %u", op, i);
	}
	ASSERT_EQ(m->count, t->q.count) TH_LOG("op %u", op);
	ASSERT_EQ(m->nr, t->q.nr) TH_LOG("op %u", op);
	ASSERT_EQ(m->st.queued, t->st.queued) TH_LOG("op %u", op);
	ASSERT_EQ(m->st.merged, t->st.merged) TH_LOG("op %u", op);
	ASSERT_EQ(m->st.held, t->st.held) TH_LOG("op %u", op);
	ASSERT_LE(t->st.held, m->cap);
	ASSERT_LE(t->q.count, m->wm);
	ASSERT_EQ(!m->nr, !o);
	if (o) {
		ASSERT_EQ(m->e[0].owner, o->owner);
		ASSERT_EQ(m->e[0].page, o->page);
		ASSERT_EQ(m->e[0].added, o->added);
		ASSERT_EQ(m->e[0].blocks, o->blocks);
	}
	t->rec.n = 0;
	m->exp.n = 0;
}

TEST_F(queue, random_against_a_model)
{
	struct qt *t = &self->t;
	struct model m = {};
	unsigned int round, op;
	u64 now = 1000;

	rnd_state = 0x2545f4914f6cdd1dULL ^ ((u64)t->bs << 32);
	m.bs = t->bs;
	m.nb = t->nb;
	for (round = 0; round < 16; round++) {
		unsigned int ops = 500 + rnd() % 1500;

		m.cap = 1 + rnd() % (round < 8 ? 8 : 300);
		m.wm = round % 3 == 0 ? m.cap : 1 + rnd() % m.cap;
		m.count = m.nr = 0;
		memset(&m.st, 0, sizeof(m.st));
		free(m.e);
		m.e = calloc(m.cap, sizeof(*m.e));
		ASSERT_NE(NULL, m.e);
		qt_init(t, m.cap, m.wm);

		for (op = 0; op < ops; op++) {
			unsigned int r = rnd() % 100;
			const void *owner = &owners[rnd() % NR_OWNERS];

			now += rnd() % 4;
			if (r < 75) {
				struct change c;
				u64 page = page_ids[rnd() % (round & 1 ?
							     NR_PAGES : 4)];

				random_change(&c, t->bs);
				model_add(&m, owner, page, &c, now);
				ASSERT_TRUE(qt_add(t, owner, page, &c, now));
			} else if (r < 95) {
				unsigned int max = rnd() % 3 ? 1 + rnd() % 8 :
						   ~0U;
				u64 age = rnd() % 3 ? rnd() % 40 : 0;
				bool early = rnd() & 1;

				ASSERT_EQ(model_push(&m, max, now, age, early),
					  qt_push(t, max, now, age, early))
					TH_LOG("round %u op %u", round, op);
			} else if (r < 98) {
				model_purge(&m, owner);
				gps_queue_purge(&t->q, owner);
			} else {
				while (model_push(&m, ~0U, now, 0, false))
					;
				qt_drain(t, now);
			}
			model_check(_metadata, t, &m, round * 10000 + op);
		}
	}
	free(m.e);
	free(m.exp.s);
}

TEST_HARNESS_MAIN
