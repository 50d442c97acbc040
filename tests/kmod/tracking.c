// SPDX-License-Identifier: GPL-2.0
/*
 * Description: automatic subscription and what goes with it.  Tracking a
 * halo exchange leaves exactly the expected subscribers on every page and
 * the next iteration pushes only to neighbours; tracking again follows a
 * new pattern; the read/touched policy decides for write-only devices;
 * manual allocations are left alone; a collapsed page has one copy seen
 * alike by every device; a low per-node budget still gives a working
 * allocation whose missing replicas are counted; the link model slows
 * fences by exactly the bytes pushed.
 */
#include <time.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K

FIXTURE(track) {
	int fd;
	int nr;
	struct gps_saved_knobs knobs;
	long long policy_read;
};

FIXTURE_SETUP(track)
{
	char buf[64] = "";
	FILE *f;

	self->fd = open(GPS_DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, "no " GPS_DEV);
	self->nr = gps_nr_devices(self->fd);
	gps_knobs_save(&self->knobs);
	f = fopen(GPS_SYSFS "track_policy", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(buf, sizeof(buf), f));
	fclose(f);
	self->policy_read = strstr(buf, "[read]") != NULL;
	if (self->nr < 2)
		SKIP(return, "needs two devices");
}

FIXTURE_TEARDOWN(track)
{
	if (self->fd < 0)
		return;
	gps_knobs_restore(&self->knobs);
	gps_set_knob("node_max_bytes", 0);
	gps_set_knob("link_bandwidth", 0);
	gps_set_knob("link_latency_ns", 0);
	gps_set_policy(self->policy_read ? "read" : "touched");
	EXPECT_EQ(0, close(self->fd));
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

/* A collapsed page has one copy: every device sees every store at once. */
TEST_F(track, collapse_single_copy)
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

/* A tight per-node budget: allocation works, missing copies counted. */
TEST_F(track, node_budget_oversubscription)
{
	int pages = 16, nr = self->nr, d, p, missing = 0;
	long long failed0 = gps_stat_sum(self->fd, "subscribe_failed");
	struct gps_advise_args adv;
	struct gps_buf b;

	/* Room for 12 pages per node: every page fits somewhere. */
	ASSERT_EQ(0, gps_set_knob("node_max_bytes", 12 * PG));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, pages * PG, GPS_MEM_GPS, 0, 0,
			       PG));
	for (p = 0; p < pages; p++) {
		uint64_t s = gps_subs(self->fd, &b, p);

		ASSERT_NE(0, s);
		missing += nr - __builtin_popcountll(s);
	}
	ASSERT_GT(missing, 0);
	ASSERT_EQ(missing, gps_stat_sum(self->fd, "subscribe_failed") - failed0);
	/* Over-budget devices read remotely and get correct values. */
	for (d = 0; d < nr; d++)
		ASSERT_NE(NULL, gps_map(self->fd, &b, d));
	for (p = 0; p < pages; p++)
		((volatile uint64_t *)b.view[p % nr])[p * PG / 8] = p + 1000;
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < nr; d++)
		for (p = 0; p < pages; p++)
			ASSERT_EQ(p + 1000,
				  ((volatile uint64_t *)b.view[d])[p * PG / 8]);
	/* Subscribing over budget is a hint that fails softly. */
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, pages * PG,
				GPS_ADVISE_SUBSCRIBE, nr - 1, &adv));
	ASSERT_GT(adv.pages_failed, 0);
	ASSERT_EQ(0, gps_free(self->fd, &b));
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
TEST_F(track, link_model_bandwidth)
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

TEST_HARNESS_MAIN
