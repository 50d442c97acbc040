// SPDX-License-Identifier: GPL-2.0
/*
 * Description: pages kept writable (keep_writable_ms).  A device that
 * writes the same pages epoch after epoch takes write faults in the first
 * epoch only (where the harvest protects in place), and every epoch's
 * stores, whole pages or single bytes, are published exactly; a page
 * left alone for longer than the knob is write-protected again and its
 * twin freed, so its next store faults, but one stored to between
 * harvests further apart than that stays kept; keep_writable_ms = 0
 * gives one write fault per page and epoch; two devices writing
 * different bytes of kept pages both publish; a harvest leaves alone the
 * pages of another replica that a view maps since a subscription change
 * (then publishing them is that replica's harvest's); stores
 * through a view into another device's replica still fault every epoch,
 * so that the writer's fence fences the owner; the push thread pushes a
 * kept page's stores while it is being written.  The push thread is off
 * unless said: harvests happen at the test's fences.
 */
#include <time.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define SMALL	4096UL
#define SIZE	(4 * GPS_PAGE_64K)

FIXTURE(keep) {
	struct gps_fixture;
	int node0, in_place;
};

FIXTURE_SETUP(keep)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "keep_writable_ms", "capture_bytes", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	self->node0 = gps_node_of(self->fd, 0);
	self->in_place = gps_knob("protect_in_place");
	ASSERT_GE(self->in_place, 0);
	/* Harvests only at fences: epochs are the test's. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	/* One write fault per small page, whatever was set before. */
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 4096));
	/* Long enough for a slow emulated guest between two fences. */
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 5000));
}

FIXTURE_TEARDOWN(keep)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

#define STAT(name)	gps_stat(self->node0, name)

/* Whole pages rewritten each epoch: faults in the first epoch only. */
TEST_F(keep, rewriter_faults_in_first_epoch_only)
{
	long long wf;
	int e;

	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
	for (e = 1; e <= 5; e++) {
		wf = STAT("write_faults");
		memset((void *)self->b.view[0], e, SIZE);
		EXPECT_EQ(e == 1 || !self->in_place ? SIZE / SMALL : 0,
			  STAT("write_faults") - wf) TH_LOG("epoch %d", e);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self),
						SIZE, e))
			TH_LOG("epoch %d", e);
	}
}

/* One byte per epoch in a kept page: exactly that byte is pushed. */
TEST_F(keep, single_stores_published_exactly)
{
	volatile unsigned char *p;
	struct gps_fence_args f;
	unsigned char c;
	int e, d;

	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
	p = self->b.view[0];
	memset((void *)p, 0, SIZE);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	for (e = 1; e <= 40; e++) {
		size_t off = (e * 7919UL) % SIZE;

		p[off] = e;
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		EXPECT_EQ(self->nr - 1, f.bytes_pushed) TH_LOG("epoch %d", e);
		for (d = 1; d < self->nr; d++) {
			ASSERT_EQ(0, gps_read(self->fd, &self->b, d, off, &c,
					      1));
			ASSERT_EQ(e, c) TH_LOG("epoch %d device %d", e, d);
		}
	}
}

/* A store back to an earlier value, in a kept page, is published too. */
TEST_F(keep, value_put_back_is_published)
{
	volatile unsigned char *p;
	unsigned char c;
	int e;

	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
	p = self->b.view[0];
	for (e = 0; e < 6; e++) {
		p[100] = e & 1 ? 0xaa : 0x55;
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 100, &c, 1));
		ASSERT_EQ(e & 1 ? 0xaa : 0x55, c) TH_LOG("epoch %d", e);
	}
}

/*
 * One 64 KiB GPS page on device 0, written once and fenced: left writable
 * (kept) for @keep_ms.  Returns device 0's view of it.
 */
static volatile unsigned char *kept_page(struct __test_metadata *_metadata,
					 struct gps_fixture *fx, int keep_ms)
{
	volatile unsigned char *p;

	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", keep_ms));
	gps_fixture_alloc(_metadata, fx, GPS_PAGE_64K, GPS_PAGE_64K, 1);
	p = fx->b.view[0];
	p[0] = 1;
	ASSERT_EQ(0, gps_fence(fx->fd, 0, NULL));
	return p;
}

/* Past keep_writable_ms without a store: protected again, twin freed. */
TEST_F(keep, idle_page_goes_back_to_faulting)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	volatile unsigned char *p;
	long long wf;

	if (!self->in_place)
		SKIP(return, "harvests zap (protect_in_place = 0)");
	p = kept_page(_metadata, gps_fx(self), 20);
	EXPECT_EQ(1, STAT("twin_pages"));
	nanosleep(&ts, NULL);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));	/* idle: protected */
	EXPECT_EQ(0, STAT("twin_pages"));
	wf = STAT("write_faults");
	p[0] = 2;
	EXPECT_EQ(1, STAT("write_faults") - wf);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	EXPECT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self), 1, 2));
}

/*
 * Stored to in every epoch, but the harvests (fences) come further apart
 * than keep_writable_ms: each still finds the page stored to, by its
 * diff, so it stays writable and takes no fault after the first epoch.
 */
TEST_F(keep, page_stored_between_sparse_harvests_stays_kept)
{
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	volatile unsigned char *p;
	long long wf;
	int e;

	if (!self->in_place)
		SKIP(return, "harvests zap (protect_in_place = 0)");
	p = kept_page(_metadata, gps_fx(self), 40);
	wf = STAT("write_faults");
	for (e = 2; e <= 4; e++) {
		nanosleep(&ts, NULL);	/* past keep_writable_ms */
		p[0] = e;
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self), 1, e));
	}
	EXPECT_EQ(0, STAT("write_faults") - wf);
	EXPECT_EQ(1, STAT("twin_pages"));
}

/*
 * The push thread publishes stores to a kept page while it is being
 * written, without a fence and without a fault: it does not wait out
 * keep_writable_ms (10 s here) for a page whose last harvest saw a store.
 */
TEST_F(keep, thread_pushes_a_kept_page_being_written)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	volatile unsigned char *p;
	unsigned char c = 0;
	long long wf, end;
	int e;

	if (!self->in_place)
		SKIP(return, "harvests zap (protect_in_place = 0)");
	p = kept_page(_metadata, gps_fx(self), 10000);
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 1000));
	wf = STAT("write_faults");
	for (e = 2; e <= 4; e++) {
		p[0] = e;
		end = gps_now_ms() + 3000;	/* inside keep_writable_ms */
		do {
			ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 0, &c,
					      1));
			if (c == e)
				break;
			nanosleep(&ts, NULL);
		} while (gps_now_ms() < end);
		EXPECT_EQ(e, c) TH_LOG("store %d not pushed in 3 s", e);
	}
	EXPECT_EQ(0, STAT("write_faults") - wf);
}

/* keep_writable_ms = 0: one write fault per small page and epoch. */
TEST_F(keep, zero_protects_every_epoch)
{
	long long wf;
	int e;

	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
	for (e = 1; e <= 3; e++) {
		wf = STAT("write_faults");
		memset((void *)self->b.view[0], e, SIZE);
		EXPECT_EQ(SIZE / SMALL, STAT("write_faults") - wf)
			TH_LOG("epoch %d", e);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self),
						SIZE, e));
	}
}

/* Devices 0 and 1 each keep writing their half of every small page. */
TEST_F(keep, two_writers_of_kept_pages)
{
	volatile unsigned char *p0, *p1;
	unsigned char buf[SMALL];
	size_t off, i;
	int e, d;

	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 2);
	p0 = self->b.view[0];
	p1 = self->b.view[1];
	for (e = 1; e <= 4; e++) {
		for (off = 0; off < SIZE; off += SMALL)
			for (i = 0; i < SMALL / 2; i++) {
				p0[off + i] = e;
				p1[off + SMALL / 2 + i] = e + 100;
			}
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
		for (d = 0; d < self->nr; d++)
			for (off = 0; off < SIZE; off += SMALL) {
				ASSERT_EQ(0, gps_read(self->fd, &self->b, d,
						      off, buf, SMALL));
				for (i = 0; i < SMALL; i++)
					ASSERT_EQ(i < SMALL / 2 ? e : e + 100,
						  buf[i])
						TH_LOG("epoch %d device %d "
						       "byte %zu", e, d,
						       off + i);
			}
	}
}

/* A manual allocation of one 64 KiB GPS page on device 0, views 0..n-1. */
static void manual_page(struct __test_metadata *_metadata,
			struct gps_fixture *fx, int views)
{
	int d;

	ASSERT_EQ(0, gps_alloc(fx->fd, &fx->b, GPS_PAGE_64K, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 0, GPS_PAGE_64K));
	fx->have_b = 1;
	for (d = 0; d < views; d++)
		ASSERT_NE(NULL, gps_map(fx->fd, &fx->b, d));
}

/*
 * View 1 maps device 0's replica, then device 1 subscribes: view 1 maps
 * device 1's own replica from then on.  Device 0's harvest, fenced
 * first, must leave view 1 alone (it once cleaned the dirty bits of
 * device 1's stores there, and device 1's harvest took its kept page for
 * untouched and published nothing).
 */
TEST_F(keep, harvest_leaves_a_retargeted_view_alone)
{
	volatile unsigned char *p0, *p1;
	unsigned char c;
	int e;

	manual_page(_metadata, gps_fx(self), 2);
	p0 = self->b.view[0];
	p1 = self->b.view[1];
	c = p1[64];			/* view 1 maps device 0's replica */
	ASSERT_EQ(0, c);
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, GPS_PAGE_64K,
				GPS_ADVISE_SUBSCRIBE, 1, NULL));
	for (e = 1; e <= 4; e++) {
		/* epoch 1 leaves device 1's page kept; then both write */
		if (e > 1)
			p0[0] = e;	/* device 0's replica dirty too */
		p1[64] = e + 50;	/* same small page, device 1's */
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, 64, &c, 1));
		ASSERT_EQ(e + 50, c) TH_LOG("epoch %d", e);
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 0, &c, 1));
		ASSERT_EQ(e > 1 ? e : 0, c) TH_LOG("epoch %d", e);
	}
}

/*
 * Device 1 does not subscribe and stores into device 0's replica through
 * its view, epoch after epoch; device 2 subscribes.  Device 1's fence
 * alone must publish every epoch's store to device 2: the store faults
 * each epoch, so the fence knows to fence device 0 as well.
 */
TEST_F(keep, remote_store_published_by_the_writers_fence)
{
	volatile unsigned char *p1;
	unsigned char c;
	int e;

	if (self->nr < 3)
		SKIP(return, "needs three devices");
	manual_page(_metadata, gps_fx(self), 2);
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, GPS_PAGE_64K,
				GPS_ADVISE_SUBSCRIBE, 2, NULL));
	p1 = self->b.view[1];
	for (e = 1; e <= 4; e++) {
		p1[128] = e;
		ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 2, 128, &c, 1));
		ASSERT_EQ(e, c) TH_LOG("epoch %d", e);
	}
}

TEST_HARNESS_MAIN
