// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the link model (link_bandwidth, link_latency_ns).  A fence
 * takes at least its bytes / bandwidth and pushes exactly its bytes; the
 * latency is paid by a fence that pushed, not by an empty one; out of
 * range values are refused.  The devices' links carry a release's pushes
 * at the same time: a fence of several devices costs the slowest link
 * and one link latency, not their sum.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K
#define LEN	(1 << 20)
#define BW	2500000		/* bytes/s: 1 MiB takes 0.42 s */

FIXTURE(link) {
	struct gps_fixture;
};

FIXTURE_SETUP(link)
{
	static const char *const knobs[] = {
		"harvest_interval_us", "link_bandwidth", "link_latency_ns",
		NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	/* device d writes its own MiB; everybody subscribes to all */
	gps_fixture_alloc(_metadata, gps_fx(self), self->nr * LEN, PG,
			  self->nr);
}

FIXTURE_TEARDOWN(link)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static double fence_time(int fd, struct gps_buf *b, size_t len, int val,
			 struct gps_fence_args *f)
{
	struct timespec t0, t1;

	memset(b->view[0], val, len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gps_fence(fd, 0, f))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

/* The link model: a fence takes at least bytes / bandwidth; exact bytes. */
TEST_F(link, link_model_bandwidth)
{
	size_t len = 4 << 20;
	struct timespec t0, t1;
	struct gps_fence_args f;
	double slow, fast;
	struct gps_buf b;

	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, len, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 0, PG));
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, len, GPS_ADVISE_SUBSCRIBE, 1,
				NULL));
	ASSERT_NE(NULL, gps_map(self->fd, &b, 0));

	/*
	 * Lower bounds are exact; the comparisons with the unthrottled run
	 * leave room for a loaded machine.
	 */
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 10000000));
	slow = fence_time(self->fd, &b, len, 1, &f);
	ASSERT_EQ(len, f.bytes_pushed);
	ASSERT_GE(slow, (double)len / 10000000);

	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 0));
	fast = fence_time(self->fd, &b, len, 2, &f);
	ASSERT_EQ(len, f.bytes_pushed);
	ASSERT_LT(fast, slow);

	/* Latency: paid by a fence that pushed, not by an empty one. */
	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 500000000));
	ASSERT_GE(fence_time(self->fd, &b, 4096, 3, &f), 0.5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(0, f.bytes_pushed);
	ASSERT_LT(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
		  0.5);
	/* Out of range values are refused. */
	ASSERT_EQ(-EINVAL, gps_set_knob("link_bandwidth", 999));
	ASSERT_EQ(-EINVAL, gps_set_knob("link_latency_ns", 2000000000LL));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

static double mask_fence_time(int fd, uint64_t mask, struct gps_fence_args *f)
{
	struct timespec t0, t1;

	memset(f, 0, sizeof(*f));
	f->flags = GPS_FENCE_MASK;
	f->device_mask = mask;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ioctl(fd, GPS_IOC_FENCE, f))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static void write_own(struct gps_buf *b, int nr, int val)
{
	int d;

	for (d = 0; d < nr; d++)
		memset((char *)b->view[d] + (size_t)d * LEN, val + d, LEN);
}

/* Every device pushed as much: the fence waits for one link's time. */
TEST_F(link, fence_of_several_waits_for_slowest_link)
{
	uint64_t all = gps_all_mask(self->nr);
	double one = (double)LEN * (self->nr - 1) / BW, t;
	struct gps_fence_args f;

	ASSERT_EQ(0, gps_set_knob("link_bandwidth", BW));
	write_own(&self->b, self->nr, 1);
	t = mask_fence_time(self->fd, all, &f);
	ASSERT_EQ((uint64_t)LEN * self->nr * (self->nr - 1), f.bytes_pushed);
	ASSERT_GE(t, one);
	/* the sum would be nr times as long */
	ASSERT_LT(t, one * (self->nr + 1) / 2.0) {
		TH_LOG("fence took %.3f s, one link %.3f s", t, one);
	}
}

/* The link latency is paid once per fence, not once per device. */
TEST_F(link, fence_of_several_pays_latency_once)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_fence_args f;
	double t;

	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 400000000));
	write_own(&self->b, self->nr, 5);
	t = mask_fence_time(self->fd, all, &f);
	ASSERT_EQ((uint64_t)LEN * self->nr * (self->nr - 1), f.bytes_pushed);
	ASSERT_GE(t, 0.4);
	ASSERT_LT(t, 0.4 * 1.75) {
		TH_LOG("fence took %.3f s for %d devices", t, self->nr);
	}
}

TEST_HARNESS_MAIN
