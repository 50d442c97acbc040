// SPDX-License-Identifier: GPL-2.0
/*
 * Description: manual subscriptions (GPS_IOC_ADVISE).  Unsubscribing the
 * last subscriber is -EBUSY and changes nothing, a new subscriber's
 * replica is filled with the current data, advice changes exactly the
 * pages of its range and reports how many, bad advice is -EINVAL, an
 * unsubscribed device receives no more pushes, manual allocations start
 * with their home device alone, and GPS_IOC_MEMSET / GPS_IOC_WRITE reach
 * every replica.  Runs for 4 KiB and 64 KiB GPS pages.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define NR_PAGES	8

FIXTURE(advise) {
	struct gps_fixture;
	size_t ps;
};

FIXTURE_VARIANT(advise) {
	unsigned int page_size;
};

FIXTURE_VARIANT_ADD(advise, page_4k) { .page_size = GPS_PAGE_4K };
FIXTURE_VARIANT_ADD(advise, page_64k) { .page_size = GPS_PAGE_64K };

FIXTURE_SETUP(advise)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, gps_knobs_common))
		return;
	self->ps = variant->page_size;
	/* No proactive pushes: only fences publish, so counts are exact. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	gps_fixture_alloc(_metadata, gps_fx(self), NR_PAGES * self->ps,
			  self->ps, self->nr);
}

FIXTURE_TEARDOWN(advise)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + seed);
}

/* Unsubscribing the last subscriber: -EBUSY, masks and data unchanged. */
TEST_F(advise, unsubscribe_last_is_ebusy)
{
	size_t size = self->b.args.alloc_size, ps = self->ps;
	uint64_t before[NR_PAGES], after[NR_PAGES];
	struct gps_query_args q = {
		.handle = self->b.args.handle, .nr_pages = NR_PAGES,
	};
	unsigned char *data = malloc(size);
	int d;

	ASSERT_NE(NULL, data);
	fill(data, size, 3);
	ASSERT_EQ(0, gps_write(self->fd, &self->b, 0, data, size));
	/* Leave device 0 the only subscriber of page 0. */
	for (d = 1; d < self->nr; d++)
		ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, ps,
					GPS_ADVISE_UNSUBSCRIBE, d, NULL));
	q.subs = (uintptr_t)before;
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_QUERY, &q));
	ASSERT_EQ(1, before[0]);

	/* Pages 0 and 1: page 1 could be unsubscribed, page 0 cannot. */
	ASSERT_EQ(-EBUSY, gps_advise(self->fd, &self->b, 0, 2 * ps,
				     GPS_ADVISE_UNSUBSCRIBE, 0, NULL));
	ASSERT_EQ(-EBUSY, gps_advise(self->fd, &self->b, 0, size,
				     GPS_ADVISE_UNSUBSCRIBE, 0, NULL));
	q.subs = (uintptr_t)after;
	q.nr_pages = NR_PAGES;
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_QUERY, &q));
	ASSERT_EQ(0, memcmp(before, after, sizeof(before)));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  data, size));
	free(data);
}

/* Subscribe fills the new replica with the data of now, not of before. */
TEST_F(advise, subscribe_fills_new_replica)
{
	uint64_t all = gps_all_mask(self->nr);
	unsigned char *p0 = self->b.view[0];
	struct gps_advise_args adv;
	size_t ps = self->ps;
	unsigned char *want = malloc(ps), *got = malloc(ps);
	volatile unsigned char *p1 = self->b.view[1];

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, got);
	fill(want, ps, 1);
	memcpy(p0, want, ps);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));

	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, &adv));
	ASSERT_EQ(1, adv.pages_changed);
	ASSERT_EQ(0, adv.pages_failed);
	ASSERT_EQ(all & ~2ULL, gps_subs(self->fd, &self->b, 0));

	/* Newer data while device 1 holds no replica. */
	fill(want + 100, ps - 200, 77);
	memcpy(p0 + 100, want + 100, ps - 200);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));

	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, ps,
				GPS_ADVISE_SUBSCRIBE, 1, &adv));
	ASSERT_EQ(1, adv.pages_changed);
	ASSERT_EQ(0, adv.pages_failed);
	ASSERT_EQ(all, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 0, got, ps));
	ASSERT_EQ(0, memcmp(want, got, ps));
	ASSERT_EQ(want[ps / 2], p1[ps / 2]);
	free(want);
	free(got);
}

/* Subscribing a device that already subscribes changes no page. */
TEST_F(advise, subscribe_twice_changes_nothing)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_advise_args adv;
	int d, g;

	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0,
					self->b.args.alloc_size,
					GPS_ADVISE_SUBSCRIBE, d, &adv));
		ASSERT_EQ(0, adv.pages_changed);
		ASSERT_EQ(0, adv.pages_failed);
	}
	for (g = 0; g < NR_PAGES; g++)
		ASSERT_EQ(all, gps_subs(self->fd, &self->b, g));
}

/* A manual allocation starts with its home alone; other views work. */
TEST_F(advise, manual_starts_with_home_only)
{
	int home = self->nr - 1, other = 0;
	struct gps_query_args q = {};
	volatile uint32_t *w, *r;
	struct gps_advise_args adv;
	struct gps_buf m;
	uint32_t v = 0;
	int g;

	ASSERT_EQ(0, gps_alloc(self->fd, &m, 4 * self->ps, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, home, self->ps));
	q.handle = m.args.handle;
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_QUERY, &q));
	ASSERT_EQ(GPS_ALLOC_MANUAL, q.flags);
	ASSERT_EQ(home, q.home);
	for (g = 0; g < 4; g++)
		ASSERT_EQ(1ULL << home, gps_subs(self->fd, &m, g));

	/* Device @other (not a subscriber when nr > 1) stores and loads. */
	w = gps_map(self->fd, &m, other);
	r = gps_map(self->fd, &m, home);
	ASSERT_NE(NULL, w);
	ASSERT_NE(NULL, r);
	w[9] = 0xabcd1234;
	ASSERT_EQ(0xabcd1234, w[9]);
	ASSERT_EQ(0, gps_fence(self->fd, other, NULL));
	ASSERT_EQ(0xabcd1234, r[9]);
	ASSERT_EQ(0, gps_read(self->fd, &m, home, 36, &v, 4));
	ASSERT_EQ(0xabcd1234, v);

	/* Subscribing @other gives it a filled replica of that page. */
	if (self->nr > 1) {
		ASSERT_EQ(0, gps_advise(self->fd, &m, 0, self->ps,
					GPS_ADVISE_SUBSCRIBE, other, &adv));
		ASSERT_EQ(1, adv.pages_changed);
		ASSERT_EQ((1ULL << home) | 1, gps_subs(self->fd, &m, 0));
		v = 0;
		ASSERT_EQ(0, gps_read(self->fd, &m, other, 36, &v, 4));
		ASSERT_EQ(0xabcd1234, v);
	}
	ASSERT_EQ(0, gps_free(self->fd, &m));
}

/* Advice over pages [2, 5) changes those three pages and no other. */
TEST_F(advise, range_changes_exactly_its_pages)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_advise_args adv;
	size_t ps = self->ps;
	int g;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 2 * ps, 3 * ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, &adv));
	ASSERT_EQ(3, adv.pages_changed);
	for (g = 0; g < NR_PAGES; g++)
		ASSERT_EQ(g >= 2 && g < 5 ? all & ~2ULL : all,
			  gps_subs(self->fd, &self->b, g));

	/* Again: already unsubscribed, nothing to change. */
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 2 * ps, 3 * ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, &adv));
	ASSERT_EQ(0, adv.pages_changed);

	/* Subscribing the whole allocation changes the three back. */
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, NR_PAGES * ps,
				GPS_ADVISE_SUBSCRIBE, 1, &adv));
	ASSERT_EQ(3, adv.pages_changed);
	for (g = 0; g < NR_PAGES; g++)
		ASSERT_EQ(all, gps_subs(self->fd, &self->b, g));
}

/* A replica beyond the max_bytes cap: counted in pages_failed, no error. */
TEST_F(advise, subscribe_beyond_cap_is_counted)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_advise_args adv;
	size_t ps = self->ps;
	long long pages;
	int ret;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, 2 * ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, &adv));
	ASSERT_EQ(2, adv.pages_changed);
	/* Room for one more GPS page; lifted before asserting. */
	pages = gps_knob("replica_pages");
	ASSERT_EQ(0, gps_set_knob("max_bytes", pages * 4096 + ps));
	ret = gps_advise(self->fd, &self->b, 0, 2 * ps,
			 GPS_ADVISE_SUBSCRIBE, 1, &adv);
	gps_set_knob("max_bytes", gps_knob_saved(&self->knobs, "max_bytes"));
	ASSERT_EQ(0, ret);
	ASSERT_EQ(1, adv.pages_changed);
	ASSERT_EQ(1, adv.pages_failed);
	ASSERT_EQ(all, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(all & ~2ULL, gps_subs(self->fd, &self->b, 1));
	ASSERT_EQ(pages + ps / 4096, gps_knob("replica_pages"));
}

/* Misaligned, empty, out-of-range, bad device or advice: -EINVAL. */
TEST_F(advise, bad_advice_is_einval)
{
	uint64_t size = self->b.args.alloc_size, ps = self->ps;
	uint64_t all = gps_all_mask(self->nr);
	struct gps_advise_args a;
	struct gps_buf conv;
	int g;

#define BAD(_off, _len, _adv, _dev) \
	ASSERT_EQ(-EINVAL, gps_advise(self->fd, &self->b, _off, _len, \
				      _adv, _dev, NULL))
	BAD(512, ps, GPS_ADVISE_UNSUBSCRIBE, 0);	/* misaligned offset */
	BAD(0, ps + 512, GPS_ADVISE_SUBSCRIBE, 0);	/* misaligned length */
	BAD(0, 0, GPS_ADVISE_UNSUBSCRIBE, 0);		/* zero length */
	BAD(size, ps, GPS_ADVISE_SUBSCRIBE, 0);	/* starts at the end */
	BAD(0, size + ps, GPS_ADVISE_SUBSCRIBE, 0);	/* ends past it */
	BAD(-ps, 2 * ps, GPS_ADVISE_SUBSCRIBE, 0);	/* wraps around */
	BAD(0, ps, GPS_ADVISE_SUBSCRIBE, self->nr);	/* no such device */
	BAD(0, ps, GPS_ADVISE_UNSUBSCRIBE, GPS_MAX_DEVICES);
	BAD(0, ps, 0, 0);				/* unknown advice */
	BAD(0, ps, 0x7f, 0);
	BAD(0, ps, ~0U, 0);
#undef BAD
	/* Unknown handle. */
	a = (struct gps_advise_args){
		.handle = self->b.args.handle + 1000, .length = ps,
		.advice = GPS_ADVISE_SUBSCRIBE,
	};
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_ADVISE, &a));
	ASSERT_EQ(EINVAL, errno);
	for (g = 0; g < NR_PAGES; g++)
		ASSERT_EQ(all, gps_subs(self->fd, &self->b, g));

	/* Conventional memory has one copy for good. */
	ASSERT_EQ(0, gps_alloc(self->fd, &conv, ps, GPS_MEM_CONVENTIONAL, 0,
			       0, self->ps));
	ASSERT_EQ(-EINVAL, gps_advise(self->fd, &conv, 0, ps,
				      GPS_ADVISE_SUBSCRIBE,
				      self->nr > 1 ? 1 : 0, NULL));
	ASSERT_EQ(-EINVAL, gps_advise(self->fd, &conv, 0, ps,
				      GPS_ADVISE_UNSUBSCRIBE, 0, NULL));
	ASSERT_EQ(1, gps_subs(self->fd, &conv, 0));
	ASSERT_EQ(0, gps_free(self->fd, &conv));
}

/* After unsubscribe, device 0's pushes no longer go to device 1. */
TEST_F(advise, unsubscribed_device_gets_no_pushes)
{
	long long bl[GPS_MAX_DEVICES], by[GPS_MAX_DEVICES], nb, nby;
	volatile unsigned char *p = self->b.view[0];
	int node0, d, three = self->nr > 2;
	struct gps_fence_args f;
	unsigned char v = 0;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	node0 = gps_node_of(self->fd, 0);
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, self->ps,
				GPS_ADVISE_UNSUBSCRIBE, 1, NULL));
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, gps_traffic(node0, gps_node_of(self->fd, d),
					 &bl[d], &by[d]));

	/* One byte in page 0 (device 1 unsubscribed), one in page 1. */
	p[10] = 0x11;
	p[self->ps + 10] = 0x22;
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	/* With two devices page 0 has one copy: nothing to push there. */
	ASSERT_EQ(three ? 2 : 1, f.blocks_pushed);
	ASSERT_EQ(0, gps_traffic(node0, gps_node_of(self->fd, 1), &nb, &nby));
	ASSERT_EQ(bl[1] + 1, nb);	/* page 1 only */
	ASSERT_EQ(by[1] + 1, nby);
	for (d = 2; d < self->nr; d++) {
		ASSERT_EQ(0, gps_traffic(node0, gps_node_of(self->fd, d),
					 &nb, &nby));
		ASSERT_EQ(bl[d] + 2, nb);
		ASSERT_EQ(by[d] + 2, nby);
	}
	/* Device 1's view of page 0 still sees the store (remotely). */
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 10, &v, 1));
	ASSERT_EQ(0x11, v);
	ASSERT_EQ(0x11, ((volatile unsigned char *)self->b.view[1])[10]);
}

/* GPS_IOC_MEMSET and GPS_IOC_WRITE reach every replica and view. */
TEST_F(advise, memset_and_write_reach_every_replica)
{
	size_t size = self->b.args.alloc_size, ps = self->ps, len = ps + 300;
	unsigned char *want = malloc(size);
	struct gps_fence_args f;
	int d;

	ASSERT_NE(NULL, want);
	if (self->nr > 1)	/* device 1: a non-subscriber of page 0 */
		ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, ps,
					GPS_ADVISE_UNSUBSCRIBE, 1, NULL));
	/* A store still pending: it must not land over the memset later. */
	((volatile unsigned char *)self->b.view[0])[ps + 5] = 0x77;

	ASSERT_EQ(0, gps_memset(self->fd, &self->b, 0, size, 0x5a));
	memset(want, 0x5a, size);
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, size));

	/* A write across a page boundary, unaligned at both ends. */
	fill(want + ps / 2, len, 9);
	ASSERT_EQ(0, gps_write(self->fd, &self->b, ps / 2, want + ps / 2,
			       len));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, size));
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(0, memcmp(want, self->b.view[d], size));

	/* Everything was written everywhere: nothing is left to push. */
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, &f));
	ASSERT_EQ(0, f.blocks_pushed);
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, size));
	free(want);
}

TEST_HARNESS_MAIN
