// SPDX-License-Identifier: GPL-2.0
/*
 * Description: collapsed pages (GPS_ADVISE_COLLAPSE).  Collapsing a page
 * leaves one copy, on the device the advice names, with every store made
 * before it; every device then sees every store at once, without a
 * fence; tracking leaves the page collapsed.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K

FIXTURE(collapse) {
	struct gps_fixture;
};

FIXTURE_SETUP(collapse)
{
	gps_fixture_setup(_metadata, gps_fx(self), 2, NULL);
}

FIXTURE_TEARDOWN(collapse)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* A collapsed page has one copy: every device sees every store at once. */
TEST_F(collapse, collapse_single_copy)
{
	volatile unsigned char *v[GPS_MAX_DEVICES];
	struct gps_advise_args adv;
	struct gps_buf b;
	int d, e;

	ASSERT_EQ(0, gps_alloc(self->fd, &b, 2 * PG, GPS_MEM_GPS, 0, 0, PG));
	for (d = 0; d < self->nr; d++) {
		v[d] = gps_map(self->fd, &b, d);
		ASSERT_NE(NULL, v[d]);
		v[d][d] = 0x40 + d;	/* unpublished stores, all devices */
	}
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, PG, GPS_ADVISE_COLLAPSE, 1,
				&adv));
	ASSERT_EQ(1, adv.pages_changed);
	ASSERT_EQ(2, gps_subs(self->fd, &b, 0));	/* on device 1 */
	for (d = 0; d < self->nr; d++)
		for (e = 0; e < self->nr; e++)
			ASSERT_EQ(0x40 + e, v[d][e]);
	/* One copy: no fence needed to see another device's store. */
	for (d = 0; d < self->nr; d++) {
		v[d][100] = d + 1;
		for (e = 0; e < self->nr; e++)
			ASSERT_EQ(d + 1, v[e][100]);
	}
	/* Tracking leaves it collapsed. */
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	ASSERT_EQ(2, gps_subs(self->fd, &b, 0));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_EQ(2, gps_subs(self->fd, &b, 0));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

TEST_HARNESS_MAIN
