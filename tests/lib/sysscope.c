// SPDX-License-Identifier: MIT
/*
 * Description: system-scope atomics on GPS memory against gps.ko: kernels
 * of every device incrementing one counter in a GPS page with
 * gpsAtomicAddSystem get the exact total, because the first system-scope
 * operation collapses the page to a single copy (the paper's 5.3); the
 * page has one subscriber afterwards, the other pages keep theirs.
 */
#include "kselftest_harness.h"
#include "t_lib.h"

#define BLOCKS	4
#define THREADS	8
#define ITERS	100

struct inc_args {
	int *counter;
	int iters;
};

static void inc_kernel(void *p)
{
	struct inc_args *a = p;
	int i;

	for (i = 0; i < a->iters; i++)
		gpsAtomicAddSystem(a->counter, 1);
}

static int popcount(unsigned long long m)
{
	return __builtin_popcountll(m);
}

/* Every device's kernel adds to one GPS counter: nothing is lost. */
TEST(devices_share_one_counter)
{
	gpsStream_t s[64];
	unsigned long long masks[2];
	gpsPointerAttributes at;
	struct inc_args a;
	int ndev, d, *g, host;
	size_t ps, np;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, g));
	ps = at.gpsPageSize;
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	/* two GPS pages: the counter's and an untouched one */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 2 * ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(g, 0, 2 * ps));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 2 * ps, masks, 2,
						   &np));
	ASSERT_EQ(2, np);
	ASSERT_EQ(ndev, popcount(masks[0]));

	a.counter = g;
	a.iters = ITERS;
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc_kernel,
				gpsDim(BLOCKS, 1, 1), gpsDim(THREADS, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct inc_args, counter)),
				s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	/* the exact total, seen from every device */
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(ndev * BLOCKS * THREADS * ITERS,
			  *(volatile int *)gpsDevicePtr(g));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(&host, g, sizeof(host),
						gpsMemcpyDeviceToHost));
		ASSERT_EQ(ndev * BLOCKS * THREADS * ITERS, host);
	}
	/* the counter's page has one copy; the other is still replicated */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 2 * ps, masks, 2,
						   &np));
	ASSERT_EQ(1, popcount(masks[0]));
	ASSERT_EQ(ndev, popcount(masks[1]));
	/* the host thread's atomics meet the same copy */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(ndev * BLOCKS * THREADS * ITERS,
		  gpsAtomicAddSystem((int *)gpsDevicePtr(g), 1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(ndev * BLOCKS * THREADS * ITERS + 1,
		  gpsAtomicLoadSystem(g));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
}

/* A subscribe replicates the page again; the next atomic collapses it. */
TEST(subscribe_then_collapse_again)
{
	unsigned long long mask;
	int ndev, d, *g;
	size_t np;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(g, 0, 4096));
	ASSERT_EQ(0, gpsAtomicAddSystem(g, 3));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 4, &mask, 1, &np));
	ASSERT_EQ(1ULL, mask);
	for (d = 1; d < ndev; d++)
		ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 4096,
					gpsMemAdviseGPSSubscribe, d));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 4, &mask, 1, &np));
	ASSERT_EQ(ndev, popcount(mask));
	/* from the last device: the copy it sees (its own) is kept */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(3, gpsAtomicAddSystem(g, 1));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 4, &mask, 1, &np));
	ASSERT_EQ(1ULL << (ndev - 1), mask);
	ASSERT_EQ(4, gpsAtomicLoadSystem(g));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
}

TEST_HARNESS_MAIN
