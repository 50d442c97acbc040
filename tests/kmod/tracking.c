// SPDX-License-Identifier: GPL-2.0
/*
 * Description: automatic subscription (GPS_IOC_TRACK).  Tracking a halo
 * exchange leaves exactly the expected subscribers on every page and the
 * next iteration pushes only to neighbours; tracking again follows a new
 * pattern; the read/touched policy decides for write-only devices; manual
 * allocations are left alone.  Collapsed pages are tested in collapse.c,
 * the per-node budget in limits.c, the link model in link.c.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K

FIXTURE(track) {
	struct gps_fixture;
};

FIXTURE_SETUP(track)
{
	gps_fixture_setup(_metadata, gps_fx(self), 2, NULL);
}

FIXTURE_TEARDOWN(track)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static uint64_t bit(int d)
{
	return 1ULL << d;
}

/* Halo: device d reads its K pages and its neighbours' nearest pages. */
static void halo_iteration(struct gps_buf *b, int nr, int k, int shift)
{
	volatile uint64_t sink = 0;
	int d, p;

	for (d = 0; d < nr; d++) {
		volatile uint64_t *v = b->view[d];
		int own = ((d + shift) % nr) * k;

		for (p = own; p < own + k; p++) {
			sink += v[p * PG / 8];
			v[p * PG / 8 + 1] = d + 1;
		}
		if (own > 0)
			sink += v[(own - 1) * PG / 8];
		if (own + k < nr * k)
			sink += v[(own + k) * PG / 8];
	}
	(void)sink;
}

/* Expected subscribers of page p for the halo with owner shift @shift. */
static uint64_t halo_subs(int nr, int k, int p, int shift)
{
	int region = p / k, owner = (region - shift % nr + nr) % nr;
	uint64_t s = bit(owner);
	int d;

	for (d = 0; d < nr; d++) {
		int own = ((d + shift) % nr) * k;

		if (p == own - 1 || p == own + k)
			s |= bit(d);
	}
	return s;
}

static long long traffic(int node, int dest)
{
	char path[128];
	long long blocks, bytes, found = -1;
	int n;
	FILE *f;

	snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/traffic", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%d %lld %lld", &n, &blocks, &bytes) == 3)
		if (n == dest)
			found = blocks;
	fclose(f);
	return found;
}

/* Tracking one halo iteration leaves exactly the halo's subscribers. */
TEST_F(track, halo_subscribers_and_traffic)
{
	int k = 3, nr = self->nr, p, d, e;
	long long before[GPS_MAX_DEVICES][GPS_MAX_DEVICES];
	struct gps_track_args t;
	struct gps_buf b;

	ASSERT_EQ(0, gps_set_policy("read"));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, (uint64_t)nr * k * PG,
			       GPS_MEM_GPS, 0, 0, PG));
	for (d = 0; d < nr; d++)
		ASSERT_NE(NULL, gps_map(self->fd, &b, d));

	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, &t));
	ASSERT_EQ(1, t.allocs);
	ASSERT_EQ(nr * k, t.pages);
	halo_iteration(&b, nr, k, 0);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, &t));
	for (p = 0; p < nr * k; p++)
		ASSERT_EQ(halo_subs(nr, k, p, 0), gps_subs(self->fd, &b, p));
	/* Pages with one user (all but the 2 per neighbour pair) demoted. */
	ASSERT_EQ(nr * k - 2 * (nr - 1), t.demoted);

	/* Next iteration: pushes go to neighbours only. */
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < nr; d++)
		for (e = 0; e < nr; e++)
			before[d][e] = traffic(gps_node_of(self->fd, d),
					       gps_node_of(self->fd, e));
	halo_iteration(&b, nr, k, 0);
	for (d = 0; d < nr; d++) {
		volatile uint64_t *v = b.view[d];

		for (p = d * k; p < d * k + k; p++)
			v[p * PG / 8 + 2] = 100 + d;
	}
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < nr; d++) {
		for (e = 0; e < nr; e++) {
			long long n = traffic(gps_node_of(self->fd, d),
					      gps_node_of(self->fd, e)) -
				      before[d][e];

			if (e == d - 1 || e == d + 1) {
				EXPECT_GT(n, 0);
			} else {
				EXPECT_EQ(0, n);
			}
		}
	}
	/* And the data arrived: neighbours read the owner's stores. */
	for (d = 0; d < nr; d++) {
		volatile uint64_t *v = b.view[d];

		if (d > 0)
			ASSERT_EQ(100 + d - 1, v[(d * k - 1) * PG / 8 + 2]);
		if (d < nr - 1)
			ASSERT_EQ(100 + d + 1, v[((d + 1) * k) * PG / 8 + 2]);
	}
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

/* Tracking again after the pattern changed gives the new subscribers. */
TEST_F(track, retracking_follows_new_pattern)
{
	int k = 3, nr = self->nr, p, d;
	struct gps_buf b;

	ASSERT_EQ(0, gps_set_policy("read"));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, (uint64_t)nr * k * PG,
			       GPS_MEM_GPS, 0, 0, PG));
	for (d = 0; d < nr; d++)
		ASSERT_NE(NULL, gps_map(self->fd, &b, d));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	halo_iteration(&b, nr, k, 0);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));

	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	/* Everyone is subscribed again while tracking. */
	for (p = 0; p < nr * k; p++)
		ASSERT_EQ((1ULL << nr) - 1, gps_subs(self->fd, &b, p));
	halo_iteration(&b, nr, k, 1);
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	for (p = 0; p < nr * k; p++)
		ASSERT_EQ(halo_subs(nr, k, p, 1), gps_subs(self->fd, &b, p));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

/* A device that only writes a page keeps it under "touched" only. */
TEST_F(track, policy_read_vs_touched)
{
	const char *policies[2] = { "read", "touched" };
	int i;

	for (i = 0; i < 2; i++) {
		volatile uint64_t *w, *r;
		uint64_t got;
		struct gps_buf b;

		ASSERT_EQ(0, gps_set_policy(policies[i]));
		ASSERT_EQ(0, gps_alloc(self->fd, &b, 2 * PG, GPS_MEM_GPS, 0, 0,
				       PG));
		w = gps_map(self->fd, &b, 0);
		r = gps_map(self->fd, &b, 1);
		ASSERT_NE(NULL, w);
		ASSERT_NE(NULL, r);
		ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
		w[0] = 7;		/* device 0 writes page 0, never reads */
		got = r[0];		/* device 1 reads page 0 */
		(void)got;
		ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
		ASSERT_EQ(i ? 3 : 2, gps_subs(self->fd, &b, 0));
		/* Page 1: nobody touched it: one copy, at home (device 0). */
		ASSERT_EQ(1, gps_subs(self->fd, &b, 1));
		/* Either way the data is right everywhere after a fence. */
		ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
		ASSERT_EQ(7, r[0]);
		ASSERT_EQ(7, w[0]);
		ASSERT_EQ(0, gps_free(self->fd, &b));
	}
}

/* Manual allocations are never changed by tracking. */
TEST_F(track, manual_untouched)
{
	struct gps_track_args t;
	struct gps_buf b;

	ASSERT_EQ(0, gps_alloc(self->fd, &b, 2 * PG, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 1, PG));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, &t));
	ASSERT_EQ(0, t.allocs);
	ASSERT_EQ(2, gps_subs(self->fd, &b, 0));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, &t));
	ASSERT_EQ(0, t.allocs);
	ASSERT_EQ(2, gps_subs(self->fd, &b, 1));
	/* Misuse: stop twice, start twice, unknown op. */
	ASSERT_EQ(-EINVAL, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_START, NULL));
	ASSERT_EQ(-EINVAL, gps_track(self->fd, GPS_TRACK_START, NULL));
	ASSERT_EQ(0, gps_track(self->fd, GPS_TRACK_STOP, NULL));
	ASSERT_EQ(-EINVAL, gps_track(self->fd, 3, NULL));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

TEST_HARNESS_MAIN
