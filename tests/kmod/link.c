// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the link model across devices.  The devices' links carry
 * a release's pushes at the same time: a fence of several devices costs
 * the slowest link and one link latency, not their sum.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K
#define LEN	(1 << 20)
#define BW	2500000		/* bytes/s: 1 MiB takes 0.42 s */

FIXTURE(link) {
	int fd;
	int nr;
	struct gps_knob_save knobs;
	struct gps_buf b;
};

FIXTURE_SETUP(link)
{
	int d;

	self->fd = open(GPS_DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, "no " GPS_DEV);
	self->nr = gps_nr_devices(self->fd);
	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_knob_save(&self->knobs, "harvest_interval_us"));
	ASSERT_EQ(0, gps_knob_save(&self->knobs, "link_bandwidth"));
	ASSERT_EQ(0, gps_knob_save(&self->knobs, "link_latency_ns"));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	/* device d writes its own MiB; everybody subscribes to all */
	ASSERT_EQ(0, gps_alloc(self->fd, &self->b, self->nr * LEN,
			       GPS_MEM_GPS, 0, 0, PG));
	for (d = 0; d < self->nr; d++)
		ASSERT_NE(NULL, gps_map(self->fd, &self->b, d));
}

FIXTURE_TEARDOWN(link)
{
	if (self->fd < 0 || self->nr < 2)
		return;
	gps_knob_restore_saved(&self->knobs);
	EXPECT_EQ(0, gps_free(self->fd, &self->b));
	EXPECT_EQ(0, close(self->fd));
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
