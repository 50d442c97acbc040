// SPDX-License-Identifier: MIT
/*
 * Description: replica budgets (Documentation/gps.rst, "Oversubscription:
 * replica budgets"), against either engine.  With node_max_bytes set, an
 * automatic GPS allocation larger than a device may hold still succeeds:
 * every page keeps at least one copy, no device holds more than its
 * budget, and every (page, device) left out is counted once in
 * subscribe_failed; a page's first copy goes to the home device, or the
 * next one that can hold it.  With max_bytes set below one copy of
 * every page the allocation fails with an out-of-memory error and leaves
 * no replica behind.  Advice to subscribe past a budget succeeds, the
 * device staying out of the pages it cannot hold (counted), and raising
 * the budget lets the same advice through; a page placed away from
 * its manual allocation's home counts against the home; a collapsed
 * page stays collapsed when a subscribe is refused.  Tracking started
 * under a budget subscribes each device to as many pages as it may,
 * counting the rest once, and an allocation born while tracking counts
 * its refusals once.  In every case each device's loads and stores,
 * subscriber or not, and the host's through the allocation's own
 * pointer see what the host and the other devices stored, and every
 * replica is given back at the end.  A node reserve above every node's
 * free memory refuses every replica: a new allocation fails and leaves
 * nothing, advice to subscribe succeeds and adds no copy (counted), every
 * device still loads what the host stored before (the driver refuses a
 * twin below the reserve too, so nothing stores meanwhile), and with the
 * reserve back the same advice adds the copies.
 */
#include "kselftest_harness.h"
#include "t_lib.h"

#define NPAGES	8

struct chk_args {
	unsigned int *buf;
	size_t words;
	unsigned int *bad;	/* host memory: not translated */
	int d, nd, mode;
};

enum { CHK_INPUT, CHK_STORE, CHK_STORED };

static unsigned int input(size_t i)
{
	return (unsigned int)(i * 7 + 1);
}

static unsigned int stored(size_t i, int nd)
{
	return (unsigned int)((i % nd) * 1000003u + i);
}

static void chk_kernel(void *p)
{
	struct chk_args *a = p;
	size_t i;

	for (i = 0; i < a->words; i++) {
		switch (a->mode) {
		case CHK_INPUT:
			if (a->buf[i] != input(i))
				__atomic_fetch_add(a->bad, 1, __ATOMIC_RELAXED);
			break;
		case CHK_STORE:
			if ((int)(i % a->nd) == a->d)
				a->buf[i] = stored(i, a->nd);
			break;
		default:
			if (a->buf[i] != stored(i, a->nd))
				__atomic_fetch_add(a->bad, 1, __ATOMIC_RELAXED);
		}
	}
}

FIXTURE(budget) {
	unsigned long long max0, node0, reserve0;
	int saved;
	int ndev;
	size_t ps, pages0;	/* replica pages when the test began */
};

FIXTURE_SETUP(budget)
{
	gpsPointerAttributes at;
	void *p;

	self->saved = 0;
	T_MIN_DEVICES(self->ndev, 2);
	ASSERT_EQ(0, t_knob_get("max_bytes", &self->max0));
	ASSERT_EQ(0, t_knob_get("node_max_bytes", &self->node0));
	ASSERT_EQ(0, t_knob_get("node_reserve_bytes", &self->reserve0));
	self->saved = 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
	self->ps = at.gpsPageSize;
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	self->pages0 = t_replica_pages(self->ndev);
}

FIXTURE_TEARDOWN(budget)
{
	if (!self->saved)
		return;
	t_knob_set("max_bytes", self->max0);
	t_knob_set("node_max_bytes", self->node0);
	t_knob_set("node_reserve_bytes", self->reserve0);
}

/* replica pages of device @d now */
static size_t dev_pages(int d)
{
	gpsDeviceProp prop;

	return gpsGetDeviceProperties(&prop, d) == gpsSuccess ?
	       prop.replicaPages : 0;
}

/* the most replica bytes any device holds now */
static size_t most_bytes(int ndev)
{
	size_t most = 0, n;
	int d;

	for (d = 0; d < ndev; d++) {
		n = dev_pages(d);
		if (n > most)
			most = n;
	}
	return most * 4096;
}

static long long failed_sum(int ndev)
{
	long long s = 0, v;
	int d;

	for (d = 0; d < ndev; d++) {
		v = t_dev_stat(d, "subscribe_failed");
		if (v < 0)
			return -1;
		s += v;
	}
	return s;
}

/* kernel @mode of device @d over @g; the words it found wrong */
static unsigned int run_chk(struct __test_metadata *_metadata, int d,
			    int nd, unsigned int *g, size_t words, int mode)
{
	unsigned int bad = 0;
	struct chk_args a = {
		.buf = g, .words = words, .bad = &bad, .d = d, .nd = nd,
		.mode = mode,
	};

	EXPECT_EQ(gpsSuccess, gpsSetDevice(d));
	EXPECT_EQ(gpsSuccess, gpsLaunchKernel(chk_kernel, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct chk_args, buf)), NULL));
	EXPECT_EQ(gpsSuccess, gpsDeviceSynchronize());
	return bad;
}

/*
 * The host's input is seen by every device; each device stores its
 * stripe of words; after every device's fence each sees all stripes.
 */
/* The host stores the input through the allocation's own pointer. */
static void host_input(struct __test_metadata *_metadata, unsigned int *g,
		       size_t bytes)
{
	size_t words = bytes / sizeof(*g), i;

	for (i = 0; i < words; i++)
		((volatile unsigned int *)g)[i] = input(i);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
}

static void every_device_sees(struct __test_metadata *_metadata, int nd,
			      unsigned int *g, size_t bytes)
{
	size_t words = bytes / sizeof(*g), i;
	unsigned int *in = malloc(bytes);
	int d;

	ASSERT_NE(NULL, in);
	host_input(_metadata, g, bytes);
	for (d = 0; d < nd; d++)
		EXPECT_EQ(0, run_chk(_metadata, d, nd, g, words, CHK_INPUT))
			TH_LOG("device %d read other input", d);
	for (d = 0; d < nd; d++)
		run_chk(_metadata, d, nd, g, words, CHK_STORE);
	for (d = 0; d < nd; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	}
	for (d = 0; d < nd; d++)
		EXPECT_EQ(0, run_chk(_metadata, d, nd, g, words, CHK_STORED))
			TH_LOG("device %d missed stores", d);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(in, g, bytes,
					gpsMemcpyDeviceToHost));
	for (i = 0; i < words; i++)
		ASSERT_EQ(stored(i, nd), in[i]) TH_LOG("copy, word %zu", i);
	for (i = 0; i < words; i++)
		ASSERT_EQ(stored(i, nd), ((volatile unsigned int *)g)[i])
			TH_LOG("host view, word %zu", i);
	free(in);
}

/* every replica given back */
#define T_ALL_BACK()							\
	EXPECT_EQ(self->pages0, t_replica_pages(self->ndev))

/* per page subscriber masks of @g; each page has one at least */
static void masks_of(struct __test_metadata *_metadata, void *g, size_t ps,
		     size_t n, unsigned long long *m)
{
	size_t got, i;

	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, n * ps, m, n, &got));
	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++)
		ASSERT_NE(0, m[i]) TH_LOG("page %zu has no copy", i);
}

/* GPS pages device @d may add under a node budget of @cap bytes */
static int room(size_t cap, size_t ps, size_t was)
{
	size_t used = was * 4096;

	return used >= cap ? 0 : (int)((cap - used) / ps);
}

TEST_F_TIMEOUT(budget, allocation_fits_the_node_budget, 120)
{
	unsigned long long m[NPAGES];
	size_t cap = most_bytes(self->ndev) + 4 * self->ps, i, was[64];
	long long f0, f1;
	int d, held[64] = { 0 }, subs = 0, want;
	unsigned int *g;

	for (d = 0; d < self->ndev; d++)
		was[d] = dev_pages(d);
	T_KNOB_SET("node_max_bytes", cap);
	f0 = failed_sum(self->ndev);
	ASSERT_LE(0, f0);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, NPAGES * self->ps,
					   0));
	masks_of(_metadata, g, self->ps, NPAGES, m);
	for (i = 0; i < NPAGES; i++)
		for (d = 0; d < self->ndev; d++)
			if (m[i] >> d & 1) {
				held[d]++;
				subs++;
			}
	/* each device holds all pages, or all it may */
	for (d = 0; d < self->ndev; d++) {
		EXPECT_LE(dev_pages(d) * 4096, cap) TH_LOG("device %d", d);
		want = room(cap, self->ps, was[d]);
		EXPECT_EQ(want < NPAGES ? want : NPAGES, held[d])
			TH_LOG("device %d", d);
	}
	/* the home first: it holds the first pages */
	EXPECT_EQ(1ULL, m[0] & 1);
	EXPECT_GT(self->ndev * NPAGES, subs);
	f1 = failed_sum(self->ndev);
	EXPECT_EQ(self->ndev * NPAGES - subs, f1 - f0);
	every_device_sees(_metadata, self->ndev, g, NPAGES * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

TEST_F_TIMEOUT(budget, no_copy_anywhere_fails_and_leaves_nothing, 120)
{
	unsigned long long m[2];
	size_t before = t_replica_pages(self->ndev);
	long long f0 = failed_sum(self->ndev);
	void *g = NULL;

	T_KNOB_SET("max_bytes", before * 4096 + 2 * self->ps);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	EXPECT_EQ(gpsErrorMemoryAllocation,
		  gpsMallocGPS(&g, 4 * self->ps, 0));
	(void)gpsGetLastError();
	EXPECT_EQ(before, t_replica_pages(self->ndev));
	/* only an allocation that exists counts devices left out */
	EXPECT_EQ(f0, failed_sum(self->ndev));
	/* two pages: one copy each, and no room for another */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&g, 2 * self->ps, 0));
	masks_of(_metadata, g, self->ps, 2, m);
	EXPECT_EQ(1, __builtin_popcountll(m[0]));
	EXPECT_EQ(1, __builtin_popcountll(m[1]));
	EXPECT_EQ(1ULL, m[0]);		/* at home */
	/* every other device refused both pages, counted once each */
	EXPECT_EQ(f0 + 2 * (self->ndev - 1), failed_sum(self->ndev));
	every_device_sees(_metadata, self->ndev, g, 2 * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	EXPECT_EQ(before, t_replica_pages(self->ndev));
}

TEST_F_TIMEOUT(budget, advice_past_the_budget_is_soft, 120)
{
	unsigned long long m[4];
	size_t cap = most_bytes(self->ndev) + 2 * self->ps;
	size_t was0 = dev_pages(0), was1 = dev_pages(1);
	long long f0, f1, h0 = t_dev_stat(0, "subscribe_failed");
	unsigned int *g;
	int i, on0 = 0, on1 = 0, want0, want1;

	T_KNOB_SET("node_max_bytes", cap);
	want0 = room(cap, self->ps, was0);
	want1 = room(cap, self->ps, was1);
	ASSERT_LE(2, want0);
	ASSERT_GT(4, want0);	/* else nothing is left for device 1 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4 * self->ps,
					   gpsMemGPSManual));
	masks_of(_metadata, g, self->ps, 4, m);
	/* device 0 holds the first pages it may; the rest went to 1 */
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(1, __builtin_popcountll(m[i]));
		EXPECT_EQ(i < want0 ? 1ULL : 2ULL, m[i]) TH_LOG("page %d", i);
		on0 += (int)(m[i] & 1);
	}
	EXPECT_EQ(want0, on0);
	/* a page away from home counts against the home */
	EXPECT_EQ(h0 + 4 - want0, t_dev_stat(0, "subscribe_failed"));
	f0 = t_dev_stat(1, "subscribe_failed");
	ASSERT_LE(0, f0);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 4 * self->ps,
					   gpsMemAdviseGPSSubscribe, 1));
	masks_of(_metadata, g, self->ps, 4, m);
	for (i = 0; i < 4; i++)
		on1 += (int)(m[i] >> 1 & 1);
	EXPECT_EQ(want1 < 4 ? want1 : 4, on1);
	EXPECT_LE(dev_pages(1) * 4096, cap);
	EXPECT_GT(4, on1);
	f1 = t_dev_stat(1, "subscribe_failed");
	EXPECT_EQ(4 - on1, f1 - f0);
	every_device_sees(_metadata, self->ndev, g, 4 * self->ps);

	/* room again: the same advice goes through */
	T_KNOB_SET("node_max_bytes", 0);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 4 * self->ps,
					   gpsMemAdviseGPSSubscribe, 1));
	masks_of(_metadata, g, self->ps, 4, m);
	for (i = 0; i < 4; i++)
		EXPECT_NE(0, m[i] >> 1 & 1) TH_LOG("page %d", i);
	every_device_sees(_metadata, self->ndev, g, 4 * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

/*
 * A collapsed page (system scope, one copy) is replicated again only by
 * a subscribe that gives a device a copy: refused by the budget, it
 * stays collapsed, and tracking leaves it at one copy.
 */
TEST_F_TIMEOUT(budget, refused_subscribe_keeps_a_page_collapsed, 120)
{
	unsigned long long m[2];
	unsigned int *g;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 2 * self->ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, self->ps,
					   gpsMemAdviseGPSCollapse, 0));
	/* device 1 holds page 1: no room for another */
	ASSERT_LT(0, dev_pages(1));
	T_KNOB_SET("node_max_bytes", dev_pages(1) * 4096);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, self->ps,
					   gpsMemAdviseGPSSubscribe, 1));
	masks_of(_metadata, g, self->ps, 2, m);
	EXPECT_EQ(1, __builtin_popcountll(m[0]));
	T_KNOB_SET("node_max_bytes", 0);
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	masks_of(_metadata, g, self->ps, 2, m);
	EXPECT_EQ(1, __builtin_popcountll(m[0])) TH_LOG("mask %#llx", m[0]);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

/* max_bytes stops the second copies: every page has its first */
TEST_F_TIMEOUT(budget, max_bytes_stops_the_second_copies, 120)
{
	unsigned long long m[NPAGES];
	size_t before = t_replica_pages(self->ndev), i;
	long long f0 = failed_sum(self->ndev);
	int subs = 0, d;
	unsigned int *g;

	T_KNOB_SET("max_bytes", before * 4096 + (NPAGES + 3) * self->ps);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, NPAGES * self->ps,
					   0));
	masks_of(_metadata, g, self->ps, NPAGES, m);
	for (i = 0; i < NPAGES; i++) {
		EXPECT_EQ(1ULL, m[i] & 1) TH_LOG("page %zu", i);
		for (d = 0; d < self->ndev; d++)
			subs += (int)(m[i] >> d & 1);
	}
	EXPECT_EQ(NPAGES + 3, subs);
	EXPECT_EQ(f0 + self->ndev * NPAGES - subs, failed_sum(self->ndev));
	every_device_sees(_metadata, self->ndev, g, NPAGES * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

TEST_F_TIMEOUT(budget, tracking_subscribes_within_the_budget, 120)
{
	unsigned long long m[NPAGES];
	long long f0, f1, left = 0;
	size_t cap, was[64], i;
	unsigned int *g, *g2;
	int d, held, want, subs = 0;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, NPAGES * self->ps,
					   0));
	/* one copy each to begin with, at home */
	for (d = 1; d < self->ndev; d++)
		ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, NPAGES * self->ps,
					gpsMemAdviseGPSUnsubscribe, d));
	/* room for two pages on the others (device 0 is past it) */
	cap = 0;
	for (d = 1; d < self->ndev; d++)
		if (dev_pages(d) * 4096 > cap)
			cap = dev_pages(d) * 4096;
	cap += 2 * self->ps;
	T_KNOB_SET("node_max_bytes", cap);
	f0 = failed_sum(self->ndev);
	ASSERT_LE(0, f0);
	for (d = 0; d < self->ndev; d++)
		was[d] = dev_pages(d);
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	/* every device on as many pages as it may; the rest counted */
	masks_of(_metadata, g, self->ps, NPAGES, m);
	for (d = 1; d < self->ndev; d++) {
		for (i = 0, held = 0; i < NPAGES; i++)
			held += (int)(m[i] >> d & 1);
		want = room(cap, self->ps, was[d]);
		want = want < NPAGES ? want : NPAGES;
		EXPECT_EQ(want, held) TH_LOG("device %d", d);
		left += NPAGES - want;
		EXPECT_LE(dev_pages(d) * 4096, cap) TH_LOG("device %d", d);
	}
	f1 = failed_sum(self->ndev);
	EXPECT_EQ(f0 + left, f1);
	EXPECT_LT(0, left);
	/* born while tracking: its refusals counted once */
	T_KNOB_SET("node_max_bytes", most_bytes(self->ndev) + 4 * self->ps);
	f0 = failed_sum(self->ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g2, NPAGES * self->ps,
					   0));
	masks_of(_metadata, g2, self->ps, NPAGES, m);
	for (i = 0; i < NPAGES; i++)
		subs += __builtin_popcountll(m[i]);
	EXPECT_EQ(f0 + self->ndev * NPAGES - subs, failed_sum(self->ndev));
	ASSERT_EQ(gpsSuccess, gpsFree(g2));
	every_device_sees(_metadata, self->ndev, g, NPAGES * self->ps);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	for (d = 1; d < self->ndev; d++)
		EXPECT_LE(dev_pages(d) * 4096, cap) TH_LOG("device %d", d);
	masks_of(_metadata, g, self->ps, NPAGES, m);
	every_device_sees(_metadata, self->ndev, g, NPAGES * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

TEST_F_TIMEOUT(budget, a_reserve_above_free_memory_refuses_replicas, 120)
{
	unsigned long long m[2];
	size_t before;
	long long f0;
	unsigned int *g;
	void *h = NULL;
	int i;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 2 * self->ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 2 * self->ps,
					   gpsMemAdviseGPSUnsubscribe, 1));
	masks_of(_metadata, g, self->ps, 2, m);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, m[i] & 2) TH_LOG("page %d", i);
	before = t_replica_pages(self->ndev);
	f0 = failed_sum(self->ndev);
	ASSERT_LE(0, f0);
	/* stored while twins can be had: below the reserve, none can */
	host_input(_metadata, g, 2 * self->ps);
	/* 1 EiB: more than any node has free */
	T_KNOB_SET("node_reserve_bytes", 1ULL << 60);
	EXPECT_EQ(gpsErrorMemoryAllocation, gpsMallocGPS(&h, self->ps, 0));
	(void)gpsGetLastError();
	EXPECT_EQ(before, t_replica_pages(self->ndev));
	EXPECT_EQ(f0, failed_sum(self->ndev));
	EXPECT_EQ(gpsSuccess, gpsMemAdvise(g, 2 * self->ps,
					   gpsMemAdviseGPSSubscribe, 1));
	masks_of(_metadata, g, self->ps, 2, m);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, m[i] & 2) TH_LOG("page %d", i);
	EXPECT_EQ(f0 + 2, failed_sum(self->ndev));
	EXPECT_EQ(before, t_replica_pages(self->ndev));
	/* loads only: the driver refuses a store its twin (SIGBUS) */
	for (i = 0; i < self->ndev; i++)
		EXPECT_EQ(0, run_chk(_metadata, i, self->ndev, g,
				     2 * self->ps / sizeof(*g), CHK_INPUT))
			TH_LOG("device %d read other input", i);
	/* the reserve back: the same advice adds the copies */
	T_KNOB_SET("node_reserve_bytes", self->reserve0);
	EXPECT_EQ(gpsSuccess, gpsMemAdvise(g, 2 * self->ps,
					   gpsMemAdviseGPSSubscribe, 1));
	masks_of(_metadata, g, self->ps, 2, m);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(2, m[i] & 2) TH_LOG("page %d", i);
	every_device_sees(_metadata, self->ndev, g, 2 * self->ps);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	T_ALL_BACK();
}

TEST_HARNESS_MAIN
