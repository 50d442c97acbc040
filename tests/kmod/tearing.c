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

TEST_HARNESS_MAIN
