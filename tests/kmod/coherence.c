// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the memory model of GPS allocations.  A store lands in the
 * writer's replica at once, reaches every other replica by the writer's
 * fence (and, with the push thread off, not before), the fence reports
 * exactly the work it did, bytes written by two devices into one block
 * both survive (also bytes of one word, stored while the other's pushes
 * land), racing stores end with every replica equal, and loads and
 * stores of a non-subscriber are correct.  Runs for each GPS page size.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "gps_test.h"

FIXTURE(gps) {
	struct gps_fixture;
};

FIXTURE_VARIANT(gps) {
	unsigned int page_size;
};

FIXTURE_VARIANT_ADD(gps, page_4k) { .page_size = GPS_PAGE_4K };
FIXTURE_VARIANT_ADD(gps, page_64k) { .page_size = GPS_PAGE_64K };
FIXTURE_VARIANT_ADD(gps, page_2m) { .page_size = GPS_PAGE_2M };

FIXTURE_SETUP(gps)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, gps_knobs_common))
		return;
	/* No proactive pushes: only fences publish, so counts are exact. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	gps_fixture_alloc(_metadata, gps_fx(self), 4 * variant->page_size,
			  variant->page_size, self->nr);
}

FIXTURE_TEARDOWN(gps)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* A new GPS allocation is zeroed, subscribed by every device. */
TEST_F(gps, starts_zeroed_and_fully_subscribed)
{
	uint64_t all = self->nr == 64 ? ~0ULL : (1ULL << self->nr) - 1;
	unsigned char *p;
	size_t i;
	int d;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(all, gps_subs(self->fd, &self->b, i));
	for (d = 0; d < self->nr; d++) {
		p = self->b.view[d];
		for (i = 0; i < self->b.args.alloc_size; i += 512)
			ASSERT_EQ(0, p[i]);
	}
}

/* A thread reads its own writes at once, before any fence. */
TEST_F(gps, reads_own_writes)
{
	volatile uint64_t *p = self->b.view[0];

	p[0] = 0x1122334455667788ULL;
	p[1000] = 42;
	ASSERT_EQ(0x1122334455667788ULL, p[0]);
	ASSERT_EQ(42, p[1000]);
}

/* A store reaches the other replicas at the writer's fence, not before. */
TEST_F(gps, store_published_by_fence)
{
	struct gps_fence_args f;
	uint32_t got = 0;
	uint32_t *src;
	int d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	src = self->b.view[0];
	src[3] = 0xdeadbeef;
	for (d = 1; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 12, &got, 4));
		ASSERT_EQ(0, got);	/* push thread off: nothing moved */
	}
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(1, f.pages_harvested);
	ASSERT_EQ(1, f.blocks_pushed);
	ASSERT_EQ(4 * (self->nr - 1), f.bytes_pushed);
	for (d = 1; d < self->nr; d++) {
		volatile uint32_t *dst = self->b.view[d];

		ASSERT_EQ(0xdeadbeef, dst[3]);
	}
	/* Nothing new: a second fence pushes nothing (a kept page is diffed). */
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_GE(1, f.pages_harvested);
	ASSERT_EQ(0, f.blocks_pushed);
	ASSERT_EQ(0, f.bytes_pushed);
}

/* GPS_FENCE_MASK publishes the stores of exactly the devices named. */
TEST_F(gps, fence_mask_names_devices)
{
	struct gps_fence_args f = { .flags = GPS_FENCE_MASK };
	uint64_t v;
	int d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (d = 0; d < self->nr; d++)
		((volatile uint64_t *)self->b.view[d])[d * 64] = 1000 + d;
	f.device_mask = 1;	/* device 0 only */
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(1, f.pages_harvested);
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 0, &v, 8));
	ASSERT_EQ(1000, v);
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, 64 * 8, &v, 8));
	ASSERT_EQ(0, v);	/* device 1's store not published yet */
	f.device_mask = (1ULL << self->nr) - 2;	/* all the others */
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(self->nr - 1, f.pages_harvested);
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, d * 64 * 8, &v, 8));
		ASSERT_EQ(1000 + d, v);
	}
	/* Malformed: empty mask, devices that do not exist, mask without
	 * the flag, a device with the flag. */
	f.device_mask = 0;
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(EINVAL, errno);
	f.device_mask = 1ULL << self->nr;
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(EINVAL, errno);
	f.flags = 0;
	f.device_mask = 1;
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(EINVAL, errno);
	f.flags = GPS_FENCE_MASK;
	f.device = 1;
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(EINVAL, errno);
}

/* Two devices writing different bytes of one block: both survive. */
TEST_F(gps, disjoint_bytes_of_one_block)
{
	unsigned char *a, *b;
	int d, i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	a = self->b.view[0];
	b = self->b.view[1];
	for (i = 0; i < 64; i++)
		a[i] = 0xa0 + (i & 15);
	for (i = 64; i < 128; i++)
		b[i] = 0xb0 + (i & 15);
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < self->nr; d++) {
		volatile unsigned char *p = self->b.view[d];

		for (i = 0; i < 64; i++)
			ASSERT_EQ(0xa0 + (i & 15), p[i]);
		for (i = 64; i < 128; i++)
			ASSERT_EQ(0xb0 + (i & 15), p[i]);
	}
}

/* One device's half of every word: the even or the odd bytes. */
struct half_writer {
	volatile unsigned char *p;	/* the device's view */
	int fd, dev, odd;
	volatile int *stop;
	unsigned int last, lost;
};

static unsigned char half_value(unsigned int v, int odd)
{
	return (unsigned char)(2 * v + odd);
}

/*
 * Rewrite the device's bytes of the first 256, read them back at once
 * (only the other device's pushes touch this replica meanwhile, and
 * they carry the other bytes), fence now and then so that its pushes
 * land while the other device stores.
 */
static void *half_writer_fn(void *arg)
{
	struct half_writer *w = arg;
	unsigned int v = 0, i;

	while (!*w->stop) {
		v++;
		for (i = w->odd; i < 256; i += 2)
			w->p[i] = half_value(v, w->odd);
		for (i = w->odd; i < 256; i += 2)
			w->lost += w->p[i] != half_value(v, w->odd);
		if (!(v & 3))
			gps_fence(w->fd, w->dev, NULL);
	}
	w->last = v;
	return NULL;
}

/*
 * Two devices store to the even and the odd bytes of the same words at
 * once, each fencing while the other stores: no push takes back a byte
 * of the receiver's (a push that wrote whole words into a replica being
 * stored to would), and after a release every replica holds both
 * devices' last values.
 */
TEST_F(gps, interleaved_bytes_stored_while_pushed)
{
	struct half_writer w[2];
	pthread_t t[2];
	volatile int stop;
	int d, k, round;
	unsigned int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (round = 0; round < 3; round++) {
		stop = 0;
		for (k = 0; k < 2; k++) {
			w[k] = (struct half_writer){
				.p = self->b.view[k], .fd = self->fd,
				.dev = k, .odd = k, .stop = &stop,
			};
			ASSERT_EQ(0, pthread_create(&t[k], NULL,
						    half_writer_fn, &w[k]));
		}
		usleep(300 * 1000);
		stop = 1;
		for (k = 0; k < 2; k++)
			ASSERT_EQ(0, pthread_join(t[k], NULL));
		TH_LOG("round %d: %u and %u passes", round, w[0].last,
		       w[1].last);
		ASSERT_EQ(0, w[0].lost + w[1].lost);
		ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
		for (d = 0; d < self->nr; d++) {
			volatile unsigned char *p = self->b.view[d];

			for (i = 0; i < 256; i++)
				ASSERT_EQ(half_value(w[i & 1].last, i & 1),
					  p[i]) TH_LOG("device %d byte %u", d, i);
		}
	}
}

/* Racing stores to the same bytes: after the release all replicas agree. */
TEST_F(gps, racing_stores_converge)
{
	uint64_t first, v;
	int d, round;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (round = 0; round < 8; round++) {
		for (d = 0; d < self->nr; d++) {
			volatile uint64_t *p = self->b.view[d];

			p[round] = 100 * round + d + 1;
			if (round & 1)	/* interleave partial fences */
				ASSERT_EQ(0, gps_fence(self->fd, d, NULL));
		}
		ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, round * 8,
				      &first, 8));
		ASSERT_GE(first, 100 * round + 1);
		ASSERT_LE(first, 100 * round + self->nr);
		for (d = 1; d < self->nr; d++) {
			ASSERT_EQ(0, gps_read(self->fd, &self->b, d, round * 8,
					      &v, 8));
			ASSERT_EQ(first, v);
		}
	}
}

/* A device that is not a subscriber reads and writes correct data. */
TEST_F(gps, non_subscriber_loads_and_stores)
{
	struct gps_advise_args adv;
	size_t ps = variant->page_size;
	volatile uint32_t *w, *r;
	int d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, &adv));
	ASSERT_EQ(1, adv.pages_changed);
	ASSERT_EQ(0, gps_subs(self->fd, &self->b, 0) & 2);

	/* Device 0 writes, device 1 (not subscribed) reads after the fence. */
	w = self->b.view[0];
	w[5] = 555;
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	r = self->b.view[1];
	ASSERT_EQ(555, r[5]);

	/* Device 1 writes remotely; its fence publishes to every replica. */
	r[6] = 666;
	ASSERT_EQ(666, r[6]);
	ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
	for (d = 0; d < self->nr; d++) {
		uint32_t v = 0;

		if (d == 1)
			continue;
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 24, &v, 4));
		ASSERT_EQ(666, v);
	}
}

/* Stores to every page by every device, then one release: all agree. */
TEST_F(gps, many_pages_many_writers)
{
	size_t words = self->b.args.alloc_size / 8, i;
	int d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (d = 0; d < self->nr; d++) {
		volatile uint64_t *p = self->b.view[d];

		for (i = d; i < words; i += self->nr * 3)
			p[i] = (i << 8) | d;
	}
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < self->nr; d++) {
		volatile uint64_t *p = self->b.view[d];
		int w;

		for (w = 0; w < self->nr; w++)
			for (i = w; i < words; i += self->nr * 3)
				ASSERT_EQ((i << 8) | w, p[i]);
	}
}

TEST_HARNESS_MAIN
