// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a fence publishes the stores made before it whole.  One
 * thread counts up a 32-bit word of device 0's view as fast as it can,
 * while another reads the word, fences device 0 and reads device 1's
 * replica, again and again: the replica must hold the value read before
 * the fence or a later one.  A push that sent the bytes of a diff's mask
 * from a later value of the word (the writer went on between the diff and
 * the push) put together a value never stored, older than the one
 * fenced.  With pages write-protected at each harvest and kept writable.
 *
 * And a push never lets a reader see a word torn: one thread stores whole
 * aligned 8-byte words over a small page of device 0's view, each store
 * changing every byte of its word (so whole blocks and pages are pushed
 * the way spans with every byte masked are) or four of its bytes (masked
 * words, into a page that device 1 keeps writing elsewhere), while
 * another fences device 0 and device 1 reads its view: every word it
 * reads must be one that was stored.  memcpy() of the whole spans ("rep
 * movsb" under the emulator) and the byte by byte write of masked words
 * let device 1 see words half old and half new.
 */
#include <pthread.h>
#include <time.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define TEAR_SECS	3
#define TEAR_FENCES	20000

FIXTURE(tear) {
	struct gps_fixture;
};

FIXTURE_VARIANT(tear) {
	int keep_ms;
};

FIXTURE_VARIANT_ADD(tear, protected) { .keep_ms = 0 };
FIXTURE_VARIANT_ADD(tear, kept) { .keep_ms = 100 };

FIXTURE_SETUP(tear)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "keep_writable_ms", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", variant->keep_ms));
	gps_fixture_alloc(_metadata, gps_fx(self), GPS_PAGE_64K, GPS_PAGE_64K,
			  1);
}

FIXTURE_TEARDOWN(tear)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

struct counter {
	volatile uint32_t *word;
	volatile int stop;
};

static void *count_up(void *arg)
{
	struct counter *c = arg;
	uint32_t k = 0;

	while (!c->stop)
		*c->word = ++k;
	return NULL;
}

TEST_F(tear, fenced_value_is_never_torn)
{
	struct counter c = { .word = self->b.view[0] };
	struct timespec t0, t;
	uint32_t before, v, bad_before = 0, bad = 0;
	long fences = 0, torn = 0;
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, count_up, &c));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		before = *c.word;
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 0, &v, sizeof(v)));
		if (v < before && !torn++) {
			bad_before = before;
			bad = v;
		}
		fences++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (fences < TEAR_FENCES && t.tv_sec - t0.tv_sec < TEAR_SECS);
	c.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%ld fences, %ld saw an older value", fences, torn);
	EXPECT_EQ(0, torn)
		TH_LOG("fenced 0x%x, device 1 held 0x%x", bad_before, bad);
}

#define TEAR_WORDS	(4096 / 8)	/* a small page */
#define ONES		0x0101010101010101ULL

struct word_writer {
	volatile uint64_t *words;
	int n;			/* words stored */
	uint64_t keep;		/* bytes that stay: ~0 in them */
	volatile int stop;
};

/* Store every word of the page, each pass a new value in its bytes. */
static void *write_words(void *arg)
{
	struct word_writer *w = arg;
	uint64_t k = 0;
	int i;

	while (!w->stop) {
		uint64_t v = (k % 255 + 1) * ONES;

		for (i = 0; i < w->n; i++)
			w->words[i] = (v & ~w->keep) | (0x5a5a5a5a5a5a5a5aULL &
							w->keep);
		k++;
	}
	return NULL;
}

struct fencer {
	int fd;
	volatile int stop;
	long fences;
};

static void *fence_loop(void *arg)
{
	struct fencer *f = arg;

	while (!f->stop) {
		if (gps_fence(f->fd, 0, NULL))
			break;
		f->fences++;
	}
	return NULL;
}

/*
 * Whether @v is a word that write_words() stored, or the page's zero: its
 * changing bytes (byte 0 among them) all equal, its kept ones 0x5a or 0.
 */
static int word_ok(uint64_t v, uint64_t keep)
{
	uint64_t kept = v & keep;

	return (v & ~keep) == ((v & 0xff) * ONES & ~keep) &&
	       (!kept || kept == (0x5a5a5a5a5a5a5a5aULL & keep));
}

/*
 * Device 1 reads the words of the page while device 0 stores them and
 * fences; with @scribble, device 1 also stores to the page's last word,
 * so that its page is mapped writable and masked words take the path that
 * keeps a receiver's own stores.
 */
static void check_words_whole(struct __test_metadata *_metadata,
			      FIXTURE_DATA(tear) *self, uint64_t keep,
			      int scribble)
{
	/* with @scribble, the last word is device 1's */
	struct word_writer w = { .words = self->b.view[0],
				 .n = TEAR_WORDS - !!scribble, .keep = keep };
	struct fencer f = { .fd = self->fd };
	volatile uint64_t *mine = gps_map(self->fd, &self->b, 1);
	uint64_t bad = 0;
	long scans = 0, torn = 0;
	pthread_t tw, tf;
	struct timespec t0, t;
	int i;

	ASSERT_NE(NULL, mine);
	ASSERT_EQ(0, pthread_create(&tw, NULL, write_words, &w));
	ASSERT_EQ(0, pthread_create(&tf, NULL, fence_loop, &f));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (scribble)
			mine[w.n] = scans;
		for (i = 0; i < w.n; i++) {
			uint64_t v = mine[i];

			if (!word_ok(v, keep) && !torn++)
				bad = v;
		}
		scans++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < TEAR_SECS);
	w.stop = 1;
	f.stop = 1;
	pthread_join(tw, NULL);
	pthread_join(tf, NULL);
	TH_LOG("%ld fences, %ld scans of %d words, %ld torn", f.fences, scans,
	       w.n, torn);
	EXPECT_LT(0, f.fences);
	EXPECT_EQ(0, torn)
		TH_LOG("device 1 read 0x%016llx", (unsigned long long)bad);
}

/* Every byte of every word changes: spans pushed whole are never torn. */
TEST_F(tear, whole_words_are_never_torn)
{
	check_words_whole(_metadata, self, 0, 0);
}

/* Four bytes of each word change: masked words are never torn. */
TEST_F(tear, masked_words_are_never_torn)
{
	check_words_whole(_metadata, self, 0xffffffff00000000ULL, 1);
}

TEST_HARNESS_MAIN
