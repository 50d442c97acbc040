// SPDX-License-Identifier: GPL-2.0
/*
 * Description: subscription changes with stores pending.  A change of
 * subscription (subscribe advice, tracking start or stop) must not lose
 * or reorder a store: a replica is filled only after the stores pending
 * in the replica it is copied from have been published, so an older store
 * never lands later over a newer one.  A device that writes a page and
 * then reads it while tracking stays subscribed to it.  Each test runs
 * with the push thread off (only fences publish) and on, for 4 KiB and
 * 64 KiB GPS pages; fences are issued holder first, the order that lost
 * the store before.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define NR_PAGES	4
#define OFF		100	/* bytes stored start here in page 0 */
#define LEN		256

FIXTURE(resub) {
	struct gps_fixture;
	size_t ps;
};

FIXTURE_VARIANT(resub) {
	unsigned int page_size;
	int harvest_interval_us;
};

FIXTURE_VARIANT_ADD(resub, page_4k_fences_only) {
	.page_size = GPS_PAGE_4K, .harvest_interval_us = 0,
};
FIXTURE_VARIANT_ADD(resub, page_4k_thread) {
	.page_size = GPS_PAGE_4K, .harvest_interval_us = 1000,
};
FIXTURE_VARIANT_ADD(resub, page_64k_fences_only) {
	.page_size = GPS_PAGE_64K, .harvest_interval_us = 0,
};
FIXTURE_VARIANT_ADD(resub, page_64k_thread) {
	.page_size = GPS_PAGE_64K, .harvest_interval_us = 1000,
};

FIXTURE_SETUP(resub)
{
	static const char *const knobs[] = { "harvest_interval_us", NULL };

	if (gps_fixture_setup(_metadata, gps_fx(self), 1, knobs))
		return;
	self->ps = variant->page_size;
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us",
				  variant->harvest_interval_us));
	gps_fixture_alloc(_metadata, gps_fx(self), NR_PAGES * self->ps,
			  self->ps, self->nr);
}

FIXTURE_TEARDOWN(resub)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static void store(struct gps_buf *b, int dev, unsigned char v)
{
	memset((unsigned char *)b->view[dev] + OFF, v, LEN);
}

/* Every view and every replica holds @v in the stored range. */
static int all_hold(int fd, struct gps_buf *b, int nr, unsigned char v)
{
	unsigned char want[LEN];
	int d;

	memset(want, v, LEN);
	for (d = 0; d < nr; d++)
		if (memcmp((unsigned char *)b->view[d] + OFF, want, LEN))
			return d;
	return gps_replicas_differ(fd, b, nr, OFF, want, LEN);
}

/*
 * A non-subscriber's store sits in another device's replica when the
 * device subscribes again and stores anew: the new store wins.
 */
TEST_F(resub, own_later_store_survives_resubscribe)
{
	int w = self->nr - 1, d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_UNSUBSCRIBE, w, NULL));
	store(&self->b, w, 0xaa);	/* lands in device 0's replica */
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_SUBSCRIBE, w, NULL));
	store(&self->b, w, 0xbb);
	/* w reads its own write at once, before any fence */
	ASSERT_EQ(0xbb, ((unsigned char *)self->b.view[w])[OFF]);
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, gps_fence(self->fd, d, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, w, NULL));
	ASSERT_EQ(-1, all_hold(self->fd, &self->b, self->nr, 0xbb));
}

/*
 * Device 0 subscribes while the non-subscriber w has a store pending in
 * another replica; w's next store, now into device 0's new replica, wins.
 */
TEST_F(resub, joiner_copies_published_data)
{
	int w = self->nr - 1, d;

	if (self->nr < 3)
		SKIP(return, "needs three devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_UNSUBSCRIBE, 0, NULL));
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_UNSUBSCRIBE, w, NULL));
	store(&self->b, w, 0xaa);	/* lands in device 1's replica */
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_SUBSCRIBE, 0, NULL));
	store(&self->b, w, 0xbb);
	ASSERT_EQ(0xbb, ((unsigned char *)self->b.view[w])[OFF]);
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, gps_fence(self->fd, d, NULL));
	ASSERT_EQ(-1, all_hold(self->fd, &self->b, self->nr, 0xbb));
}

/* The same when tracking start is what subscribes w again. */
TEST_F(resub, tracking_start_over_pending_store)
{
	int w = self->nr - 1, d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_UNSUBSCRIBE, w, NULL));
	store(&self->b, w, 0xaa);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	store(&self->b, w, 0xbb);
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, gps_fence(self->fd, d, NULL));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	ASSERT_EQ(-1, all_hold(self->fd, &self->b, self->nr, 0xbb));
}

/*
 * Subscribe and unsubscribe in turn, one store between each change and
 * no fence: the last store of the writer is what every replica holds.
 */
TEST_F(resub, churn_keeps_program_order)
{
	int w = self->nr - 1, i, d;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (i = 0; i < 40; i++) {
		uint32_t adv = i & 1 ? GPS_ADVISE_SUBSCRIBE :
				       GPS_ADVISE_UNSUBSCRIBE;
		int dev = i % 3 ? w : 0;
		/* the last subscriber stays: -EBUSY, nothing changes */
		int want = adv == GPS_ADVISE_UNSUBSCRIBE &&
			   gps_subs(self->fd, &self->b, 0) == 1ULL << dev ?
			   -EBUSY : 0;

		store(&self->b, w, 1 + i);
		ASSERT_EQ(want, gps_advise(self->fd, &self->b, 0, self->ps,
					   adv, dev, NULL));
		ASSERT_EQ(1 + i, ((unsigned char *)self->b.view[w])[OFF]);
	}
	store(&self->b, w, 0xcc);
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, gps_fence(self->fd, d, NULL));
	ASSERT_EQ(-1, all_hold(self->fd, &self->b, self->nr, 0xcc));
}

/*
 * While tracking, w stores a whole page and then loads it in one go:
 * a read after one's own write is a read, w stays subscribed.
 */
TEST_F(resub, write_then_read_while_tracking)
{
	int w = self->nr - 1;
	volatile unsigned char *p = self->b.view[w];
	unsigned long sum = 0;
	size_t i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_policy("touched"));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	for (i = 0; i < self->ps; i++)
		p[self->ps + i] = (unsigned char)i;	/* page 1 */
	for (i = 0; i < self->ps; i++)
		sum += p[self->ps + i];
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_NE(0, sum);
	ASSERT_NE(0, gps_subs(self->fd, &self->b, 1) & (1ULL << w));
}

/* The same under the default policy, whatever the module was loaded with. */
TEST_F(resub, write_then_read_default_policy)
{
	int w = self->nr - 1;
	volatile unsigned char *p = self->b.view[w];

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	/* the default, as the module loads, is the paper's rule */
	ASSERT_STREQ("touched", self->policy);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	p[self->ps] = 1;
	ASSERT_EQ(1, p[self->ps]);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_NE(0, gps_subs(self->fd, &self->b, 1) & (1ULL << w));
}

TEST_HARNESS_MAIN
