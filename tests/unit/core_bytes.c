// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the byte masks of the pure core (core/gps_bytes.h, the
 * same code as in gps.ko), on the host.
 * gps_bytes_differ() sets exactly the bits of the bytes that differ;
 * gps_diff_words() marks every changed byte of a page and no other, and
 * updates the twin only when asked; gps_bytes_push() (core/gps_bytes.c):
 * GPS_BYTES_APPLY writes exactly the masked bytes of a page (the others
 * keep a receiver's own stores) for empty, full, sparse, one-byte and
 * random masks, and agrees with a copy of each run of masked bytes, the
 * way pushes were made once; GPS_BYTES_BLEND writes the same bytes a word
 * at a time, from gps_bytes_mask8()'s byte mask of each mask byte (higher
 * bits ignored);
 * GPS_BYTES_COPY copies every byte of its length and none past it; and
 * one push into many destinations of every kind leaves each as a push
 * into it alone would.  Pushes of partly masked words (changed doubles:
 * a pair by one 16-byte cmpxchg natively on x86-64, else one cmpxchg a
 * word) racing with an owner's stores to the other bytes keep every one
 * of those stores, and a reader racing with them sees each word old or
 * new, never torn.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_bits.h"
#include "gps_bytes.h"

#define PG	4096

/* Masks of every shape a push sees: byte i set with probability @pct. */
static void fill_mask(unsigned long *m, int pct)
{
	unsigned int i;

	memset(m, 0, PG / 8);
	for (i = 0; i < PG; i++)
		if ((int)(rnd() % 100) < pct)
			m[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
}

TEST(differ_marks_exactly_the_changed_bytes)
{
	int n, i;

	for (n = 0; n < 100000; n++) {
		u64 a = rnd(), b = a;
		unsigned long got;

		for (i = 0; i < 8; i++)
			if (rnd() & 1)
				((u8 *)&b)[i] ^= (u8)(1 + rnd() % 255);
		got = gps_bytes_differ(a, b);
		for (i = 0; i < 8; i++)
			ASSERT_EQ(((u8 *)&a)[i] != ((u8 *)&b)[i],
				  !!(got & (1UL << i)));
		ASSERT_EQ(0, got >> 8);
	}
}

TEST(diff_words_marks_changes_and_updates_twin_on_request)
{
	static u64 cur[PG / 8], twin[PG / 8], orig[PG / 8];
	unsigned long mask[PG / BITS_PER_LONG];
	int n, update;
	unsigned int i;

	for (n = 0; n < 200; n++) {
		update = (n / 6) & 1;
		for (i = 0; i < PG / 8; i++)
			twin[i] = cur[i] = rnd();
		/* some words untouched, some whole, some a few bytes */
		for (i = 0; i < PG; i++)
			if ((int)(rnd() % 100) < (n % 6) * 20)
				((u8 *)cur)[i] ^= (u8)(1 + rnd() % 255);
		/* runs of 64 bytes all rewritten, or all but one byte */
		for (i = 0; n % 3 == 2 && i < PG; i += 64) {
			unsigned int k, keep = rnd() % 4 ? 64 : rnd() % 64;

			if (rnd() % 2)
				continue;
			for (k = 0; k < 64; k++)
				if (k != keep)
					((u8 *)cur)[i + k] =
						((u8 *)twin)[i + k] ^ 0x5a;
		}
		memcpy(orig, twin, PG);
		memset(mask, 0, sizeof(mask));
		gps_diff_words(cur, twin, mask, PG / 8, update);
		for (i = 0; i < PG; i++)
			ASSERT_EQ(((u8 *)cur)[i] != ((u8 *)orig)[i],
				  bit(mask, i));
		ASSERT_EQ(0, memcmp(twin, update ? cur : orig, PG));
	}
}

typedef void (*apply_fn)(u8 *dst, const u8 *src, const unsigned long *mask,
			 unsigned int nbytes);

/* gps_bytes_push() into one destination, as @how says. */
static void push_one(u8 *dst, const u8 *src, const unsigned long *mask,
		     unsigned int nbytes, enum gps_bytes_how how)
{
	struct gps_bytes_dst d = { dst, how };

	gps_bytes_push(&d, 1, src, mask, nbytes);
}

static void push_apply(u8 *dst, const u8 *src, const unsigned long *mask,
		       unsigned int nbytes)
{
	push_one(dst, src, mask, nbytes, GPS_BYTES_APPLY);
}

static void push_blend(u8 *dst, const u8 *src, const unsigned long *mask,
		       unsigned int nbytes)
{
	push_one(dst, src, mask, nbytes, GPS_BYTES_BLEND);
}

static void check_masked_bytes(struct __test_metadata *_metadata,
			       apply_fn apply)
{
	static const int pcts[] = { 0, 100, 1, 50, 85, 99 };
	static u8 src[PG], dst[PG], old[PG], ref[PG];
	unsigned long mask[PG / BITS_PER_LONG];
	unsigned int i, s, e;
	int n;

	for (n = 0; n < 600; n++) {
		for (i = 0; i < PG; i++) {
			src[i] = (u8)rnd();
			dst[i] = old[i] = (u8)~src[i];
		}
		fill_mask(mask, pcts[n % 6]);
		if (n % 7 == 3) {	/* one byte only */
			memset(mask, 0, sizeof(mask));
			i = rnd() % PG;
			mask[i / BITS_PER_LONG] = 1UL << (i % BITS_PER_LONG);
		}
		/* the runs' copy, as pushes were made once */
		memcpy(ref, old, PG);
		for (s = 0; s < PG; s = e) {
			for (; s < PG && !bit(mask, s); s++)
				;
			for (e = s; e < PG && bit(mask, e); e++)
				;
			memcpy(ref + s, src + s, e - s);
		}
		apply(dst, src, mask, PG);
		for (i = 0; i < PG; i++)
			ASSERT_EQ(bit(mask, i) ? src[i] : old[i], dst[i]);
		ASSERT_EQ(0, memcmp(ref, dst, PG));
	}
}

/* Every mask of an 8-byte word, one word each. */
static void check_every_word_mask(struct __test_metadata *_metadata,
				  apply_fn apply)
{
	static u8 src[PG], dst[PG];
	unsigned long mask[PG / BITS_PER_LONG];
	unsigned int i, m;

	for (i = 0; i < PG; i++)
		src[i] = (u8)(i * 7 + 1);
	memset(dst, 0xee, PG);
	memset(mask, 0, sizeof(mask));
	for (m = 0; m < 256; m++)	/* word m gets mask m */
		((u8 *)mask)[m] = (u8)m;
	apply(dst, src, mask, PG);
	for (i = 0; i < PG; i++)
		ASSERT_EQ(bit(mask, i) ? src[i] : 0xee, dst[i]);
}

static void check_one_block(struct __test_metadata *_metadata,
			    apply_fn apply)
{
	static u8 src[PG], dst[PG];
	unsigned long mask[128 / BITS_PER_LONG];
	unsigned int i;

	for (i = 0; i < PG; i++) {
		src[i] = (u8)i;
		dst[i] = 0xee;
	}
	memset(mask, 0, sizeof(mask));
	mask[0] = 0xff00ff00f0UL;	/* partial words of the first long */
	mask[1] = ~0UL;			/* a whole long */
	apply(dst + 256, src + 256, mask, 128);
	for (i = 0; i < PG; i++)
		ASSERT_EQ(i >= 256 && i < 384 && bit(mask, i - 256) ?
			  src[i] : 0xee, dst[i]);
}

TEST(apply_writes_exactly_the_masked_bytes)
{
	check_masked_bytes(_metadata, push_apply);
}

TEST(apply_of_every_word_mask)
{
	check_every_word_mask(_metadata, push_apply);
}

TEST(apply_of_one_block)
{
	check_one_block(_metadata, push_apply);
}

/* Every one of the 256 byte patterns a mask byte can ask for. */
TEST(table_sets_the_bytes_of_each_bit)
{
	unsigned int m8, i;

	for (m8 = 0; m8 < 256; m8++) {
		u64 x = gps_bytes_mask8(m8 | 0x100 * (m8 ^ 0x5a));

		for (i = 0; i < 8; i++)
			ASSERT_EQ(m8 & (1u << i) ? 0xff : 0, ((u8 *)&x)[i]);
	}
}

/* The word-wise blend writes the same bytes as the byte-wise apply. */
TEST(blend_writes_exactly_the_masked_bytes)
{
	check_masked_bytes(_metadata, push_blend);
}

TEST(blend_of_every_word_mask)
{
	check_every_word_mask(_metadata, push_blend);
}

TEST(blend_of_one_block)
{
	check_one_block(_metadata, push_blend);
}

/*
 * A copy writes every byte of its length, masked or not, and none past
 * it.
 */
TEST(copy_writes_exactly_its_length)
{
	static u64 src[PG / 8 + 8], dst[PG / 8 + 8];
	unsigned long mask[PG / BITS_PER_LONG];
	unsigned int len, i;
	u64 after;

	for (len = BITS_PER_LONG; len <= PG; len += BITS_PER_LONG) {
		for (i = 0; i < PG / 8 + 8; i++) {
			src[i] = rnd();
			dst[i] = rnd();
		}
		after = dst[len / 8];
		fill_mask(mask, (int)(len % 3) * 40);

		push_one((u8 *)dst, (const u8 *)src, mask, len,
			 GPS_BYTES_COPY);
		ASSERT_EQ(0, memcmp(dst, src, len)) TH_LOG("len %u", len);
		ASSERT_EQ(after, dst[len / 8]) TH_LOG("len %u", len);
	}
}

/*
 * One push into many destinations, of every kind mixed (a receiver's
 * page and twin each): each ends as a push into it alone would leave it.
 */
TEST(every_destination_takes_what_it_asks_for)
{
	enum { N = 14 };
	static const int pcts[] = { 0, 100, 3, 50, 90 };
	static u8 src[PG], dst[N][PG], old[N][PG];
	struct gps_bytes_dst d[N];
	unsigned long mask[PG / BITS_PER_LONG];
	unsigned int i, lo, len, j;
	int n;

	for (n = 0; n < 200; n++) {
		for (i = 0; i < PG; i++)
			src[i] = (u8)rnd();
		for (j = 0; j < N; j++) {
			for (i = 0; i < PG; i++)
				dst[j][i] = old[j][i] = (u8)rnd();
			d[j].how = (enum gps_bytes_how)(rnd() % 3);
		}
		fill_mask(mask, pcts[n % 5]);
		/* a span of whole blocks of 64, anywhere in the page */
		lo = (unsigned int)(rnd() % (PG / 64)) * 64;
		len = (unsigned int)(1 + rnd() % ((PG - lo) / 64)) * 64;
		for (i = 0; i < PG; i++)	/* none outside the span */
			if (i < lo || i >= lo + len)
				mask[i / BITS_PER_LONG] &=
					~(1UL << (i % BITS_PER_LONG));
		for (j = 0; j < N; j++)
			d[j].to = dst[j] + lo;
		gps_bytes_push(d, N, src + lo, mask + lo / BITS_PER_LONG, len);
		for (j = 0; j < N; j++)
			for (i = 0; i < PG; i++) {
				bool in = i >= lo && i < lo + len;
				bool take = in && (d[j].how == GPS_BYTES_COPY ||
						   bit(mask, i));

				ASSERT_EQ(take ? src[i] : old[j][i], dst[j][i])
					TH_LOG("dst %u (how %d) byte %u", j,
					       d[j].how, i);
			}
	}
}

/*
 * The races: an owner stores to the unmasked bytes (6 and 7) of every
 * word of a page while pushes write the masked ones (0 to 5) over and
 * over; a reader checks that each word's masked bytes are all of one
 * push.  Each round ends with both sides stopped and checked, so a store
 * lost to a push's read-modify-write is seen in the round it was lost.
 */
enum { RACE_WORDS = PG / 8, RACE_ROUNDS = 2000 };

struct race {
	u64 *dst;
	pthread_barrier_t go, done;
	volatile int stop;
	volatile unsigned long torn;
};

static void *race_owner(void *arg)
{
	struct race *r = arg;
	int k;
	unsigned int i;

	for (k = 1; k <= RACE_ROUNDS; k++) {
		pthread_barrier_wait(&r->go);
		for (i = 0; i < RACE_WORDS; i++) {
			WRITE_ONCE(((u8 *)&r->dst[i])[6], (u8)k);
			WRITE_ONCE(((u8 *)&r->dst[i])[7], (u8)~k);
		}
		r->stop = 1;
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	unsigned int i;
	int k;

	for (k = 1; k <= RACE_ROUNDS; k++) {
		pthread_barrier_wait(&r->go);
		while (!r->stop)
			for (i = 0; i < RACE_WORDS; i++) {
				u64 w = READ_ONCE(r->dst[i]);
				u8 b0 = (u8)w;
				unsigned int j;

				/* a push's bytes 0..5 are all one value */
				for (j = 1; j < 6; j++)
					if (((u8 *)&w)[j] != b0)
						r->torn++;
			}
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

TEST(apply_keeps_racing_stores_and_never_tears)
{
	static u64 dst[RACE_WORDS] __attribute__((aligned(64)));
	static u64 src[2][RACE_WORDS] __attribute__((aligned(64)));
	unsigned long mask[PG / BITS_PER_LONG];
	pthread_t owner, reader;
	struct race r = { .dst = dst };
	unsigned long lost = 0, pushes = 0;
	unsigned int i, v;
	int k;

#ifdef GPS_HAVE_CMPXCHG128
	/* where the 16-byte exchange is built, it is the path under test:
	 * every pair below is partly masked in both words */
	ASSERT_TRUE(gps_cmpxchg128_ok())
		TH_LOG("the CPU lacks cmpxchg16b: the word-by-word path runs");
#endif
	/* bytes 0..5 of every word: a double that keeps its exponent */
	memset(mask, 0x3f, sizeof(mask));
	for (v = 0; v < 2; v++)
		for (i = 0; i < RACE_WORDS; i++)
			src[v][i] = 0x0101010101010101ULL *
				    (u8)(0x11 + 0x33 * v + i);
	memcpy(dst, src[0], sizeof(dst));
	ASSERT_EQ(0, pthread_barrier_init(&r.go, NULL, 3));
	ASSERT_EQ(0, pthread_barrier_init(&r.done, NULL, 3));
	ASSERT_EQ(0, pthread_create(&owner, NULL, race_owner, &r));
	ASSERT_EQ(0, pthread_create(&reader, NULL, race_reader, &r));
	for (k = 1; k <= RACE_ROUNDS; k++) {
		r.stop = 0;
		pthread_barrier_wait(&r.go);
		/* at least one push, then as many as the owner's stores take */
		do {
			push_apply((u8 *)dst, (const u8 *)src[pushes & 1],
				   mask, PG);
			pushes++;
		} while (!r.stop);
		pthread_barrier_wait(&r.done);
		for (i = 0; i < RACE_WORDS; i++)
			lost += ((u8 *)&dst[i])[6] != (u8)k ||
				((u8 *)&dst[i])[7] != (u8)~k;
	}
	pthread_join(owner, NULL);
	pthread_join(reader, NULL);
	TH_LOG("%lu pushes in %d rounds", pushes, RACE_ROUNDS);
	ASSERT_EQ(0, lost);
	ASSERT_EQ(0, r.torn);
	for (i = 0; i < RACE_WORDS; i++)
		ASSERT_EQ(((const u8 *)&src[(pushes - 1) & 1][i])[0],
			  ((u8 *)&dst[i])[0]);
}

TEST_HARNESS_MAIN
