// SPDX-License-Identifier: GPL-2.0
/*
 * Description: managed memory (GPS_MEM_MANAGED), the paper's plain unified
 * memory.  Each GPS page has exactly one copy, first on the home device;
 * a device whose view touches a page held elsewhere takes a fault that
 * moves the copy to its node (the page's subscriber mask follows it),
 * counted in "migrations" and "bytes_migrated" of the device it moved to
 * and in the traffic row of the device it left, charged to that device's
 * link.  A page that moved um_thrash_threshold times within
 * um_thrash_epoch_ms is pinned where it is for um_pin_ms: other devices
 * then map it remotely.  One copy at all times: every device sees every
 * store at once, without fences, and no store is lost to a move, even
 * when the devices' threads race on one word.  Subscription advice and
 * manual flags are refused.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_4K

FIXTURE(managed) {
	struct gps_fixture;
	volatile unsigned char *v[GPS_MAX_DEVICES];
	int node[GPS_MAX_DEVICES];
};

FIXTURE_SETUP(managed)
{
	static const char *const knobs[] = {
		"um_thrash_threshold", "um_thrash_epoch_ms", "um_pin_ms",
		"link_bandwidth", "link_latency_ns", NULL,
	};
	int d;

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	ASSERT_EQ(0, gps_set_knob("um_thrash_threshold", 0));	/* no guard */
	ASSERT_EQ(0, gps_alloc(self->fd, &self->b, 8 * PG, GPS_MEM_MANAGED,
			       0, 0, PG));
	self->have_b = 1;
	for (d = 0; d < self->nr; d++) {
		self->v[d] = gps_map(self->fd, &self->b, d);
		ASSERT_NE(NULL, self->v[d]);
		self->node[d] = gps_node_of(self->fd, d);
		ASSERT_LE(0, self->node[d]);
	}
}

FIXTURE_TEARDOWN(managed)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static long long moved_to(FIXTURE_DATA(managed) *self, int d)
{
	return gps_stat(self->node[d], "migrations");
}

/* Starts at home; a load or a store elsewhere moves it, data and all. */
TEST_F(managed, moves_to_the_device_that_touches_it)
{
	long long m1 = moved_to(self, 1), m0 = moved_to(self, 0);
	long long b1 = gps_stat(self->node[1], "bytes_migrated");

	ASSERT_EQ(1, gps_subs(self->fd, &self->b, 0));
	self->v[0][10] = 0x5a;			/* at home: no move */
	ASSERT_EQ(1, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(0x5a, self->v[1][10]);	/* a load moves it */
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(m1 + 1, moved_to(self, 1));
	ASSERT_EQ(b1 + PG, gps_stat(self->node[1], "bytes_migrated"));
	self->v[1][11] = 0xa5;
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 0));
	self->v[0][12] = 0x33;			/* a store moves it back */
	ASSERT_EQ(1, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(m0 + 1, moved_to(self, 0));
	ASSERT_EQ(0x5a, self->v[0][10]);
	ASSERT_EQ(0xa5, self->v[0][11]);
	/* the other pages never moved */
	ASSERT_EQ(1, gps_subs(self->fd, &self->b, 1));
	ASSERT_EQ(1, gps_subs(self->fd, &self->b, 7));
}

/* Every device in turn reads the last value and writes the next. */
TEST_F(managed, ping_pong_keeps_every_store)
{
	long long before = 0, after = 0;
	int i, d;

	for (d = 0; d < self->nr; d++)
		before += moved_to(self, d);
	self->v[0][PG + 100] = 0;
	for (i = 1; i <= 200; i++) {
		d = i % self->nr;
		ASSERT_EQ((i - 1) & 0xff, self->v[d][PG + 100]);
		self->v[d][PG + 100] = i & 0xff;
		ASSERT_EQ(1ULL << d, gps_subs(self->fd, &self->b, 1));
	}
	for (d = 0; d < self->nr; d++)
		after += moved_to(self, d);
	/* every turn is another device's: every turn moves it */
	ASSERT_EQ(200, after - before);
	ASSERT_EQ(200 & 0xff, self->v[0][PG + 100]);
}

/* A move is traffic from the device it left, charged to its link. */
TEST_F(managed, moves_are_traffic_on_the_link)
{
	long long bl0, by0, bl1, by1, wait0;

	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 0));
	/* 4 KiB at 400 KiB/s: 10 ms a move */
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 100 * PG));
	ASSERT_EQ(0, gps_traffic(self->node[0], 1, &bl0, &by0));
	wait0 = gps_stat(self->node[0], "link_wait_ns");
	ASSERT_EQ(0, self->v[1][2 * PG]);	/* 0 -> 1 */
	ASSERT_EQ(0, gps_traffic(self->node[0], 1, &bl1, &by1));
	ASSERT_EQ(by0 + PG, by1);
	ASSERT_LT(bl0, bl1);
	ASSERT_LT(wait0, gps_stat(self->node[0], "link_wait_ns"));
}

/* Moved threshold times within the epoch: pinned, mapped remotely. */
TEST_F(managed, thrashing_page_is_pinned)
{
	long long pins = 0, moves = 0;
	int i, d;

	ASSERT_EQ(0, gps_set_knob("um_thrash_epoch_ms", 60000));
	ASSERT_EQ(0, gps_set_knob("um_pin_ms", 60000));
	ASSERT_EQ(0, gps_set_knob("um_thrash_threshold", 3));
	for (d = 0; d < self->nr; d++) {
		pins -= gps_stat(self->node[d], "thrash_pins");
		moves -= moved_to(self, d);
	}
	for (i = 1; i <= 20; i++)
		self->v[i & 1][3 * PG + 8] = i;
	for (d = 0; d < self->nr; d++) {
		pins += gps_stat(self->node[d], "thrash_pins");
		moves += moved_to(self, d);
	}
	ASSERT_EQ(3, moves);		/* 0->1, 1->0, 0->1, then pinned */
	ASSERT_EQ(1, pins);
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 3));
	/* one copy, seen by both at once */
	for (i = 0; i < 10; i++) {
		self->v[i & 1][3 * PG + 9] = 0x70 + i;
		ASSERT_EQ(0x70 + i, self->v[!(i & 1)][3 * PG + 9]);
	}
	ASSERT_EQ(20, self->v[0][3 * PG + 8]);
}

struct racer {
	volatile unsigned long *word;
	int iters;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	int i;

	for (i = 0; i < r->iters; i++)
		__atomic_fetch_add(r->word, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Two threads per device add to one word: no increment is lost. */
TEST_F(managed, racing_devices_lose_nothing)
{
	struct racer r[2 * GPS_MAX_DEVICES];
	pthread_t t[2 * GPS_MAX_DEVICES];
	int n = self->nr > 4 ? 4 : self->nr, i, iters = 3000;
	int guard;

	for (guard = 0; guard < 2; guard++) {
		/* without the guard: a move per contended fault */
		ASSERT_EQ(0, gps_set_knob("um_thrash_threshold",
					  guard ? 3 : 0));
		ASSERT_EQ(0, gps_set_knob("um_thrash_epoch_ms", 100));
		ASSERT_EQ(0, gps_set_knob("um_pin_ms", 5));
		*(volatile unsigned long *)(self->v[0] + 4 * PG) = 0;
		for (i = 0; i < 2 * n; i++) {
			r[i].word = (volatile unsigned long *)
				    (self->v[i % n] + 4 * PG);
			r[i].iters = iters;
			ASSERT_EQ(0, pthread_create(&t[i], NULL, race, &r[i]));
		}
		for (i = 0; i < 2 * n; i++)
			ASSERT_EQ(0, pthread_join(t[i], NULL));
		ASSERT_EQ(2UL * n * iters,
			  *(volatile unsigned long *)(self->v[0] + 4 * PG))
			TH_LOG("guard %d", guard);
	}
}

/* The driver's own reads see the single copy wherever it is. */
TEST_F(managed, driver_reads_follow_the_copy)
{
	unsigned char got[4];
	int d;

	self->v[1][5 * PG + 1] = 0x11;		/* now on device 1 */
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 5));
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 5 * PG, got, 4));
		ASSERT_EQ(0x11, got[1]);
	}
	ASSERT_EQ(0, gps_memset(self->fd, &self->b, 5 * PG, 4, 0x22));
	ASSERT_EQ(0x22, self->v[0][5 * PG + 3]);
}

/* No subscriptions to change and no manual flag: refused. */
TEST_F(managed, advice_and_flags_refused)
{
	struct gps_track_args tr;
	struct gps_buf b;
	int adv;

	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &b, PG, GPS_MEM_MANAGED,
				     GPS_ALLOC_MANUAL, 0, PG));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &b, PG, GPS_MEM_MANAGED, 0,
				     GPS_MAX_DEVICES, PG));
	for (adv = GPS_ADVISE_SUBSCRIBE; adv <= GPS_ADVISE_COLLAPSE; adv++)
		ASSERT_EQ(-EINVAL, gps_advise(self->fd, &self->b, 0, PG, adv,
					      1, NULL));
	/* tracking leaves it alone */
	self->v[1][6 * PG] = 1;
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, &tr));
	ASSERT_EQ(0, tr.allocs);
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 6));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_EQ(2, gps_subs(self->fd, &self->b, 6));
}

TEST_HARNESS_MAIN
