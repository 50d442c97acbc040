// SPDX-License-Identifier: MIT
/*
 * Description: GPS memory against gps.ko: every device's view, copies and
 * sets reaching every replica, manual subscriptions and their masks,
 * conventional memory and the advice it takes (a collapse succeeds and
 * changes nothing), and replicas freed by gpsFree.
 */
#include "kselftest_harness.h"
#include "t_lib.h"

/* gpsMemcpy and gpsMemset into GPS memory update every replica. */
TEST(copy_set_every_replica)
{
	unsigned char src[8192], *p, *v;
	int ndev, d;
	size_t i;

	T_DEVICES(ndev);
	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 31);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(src), 0));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(p, src, sizeof(src),
					gpsMemcpyHostToDevice));
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		v = gpsDevicePtr(p);
		ASSERT_EQ(0, memcmp(v, src, sizeof(src)));
	}
	ASSERT_EQ(gpsSuccess, gpsMemset(p + 100, 0x5a, 1000));
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		v = gpsDevicePtr(p);
		ASSERT_EQ(src[99], v[99]);
		ASSERT_EQ(0x5a, v[100]);
		ASSERT_EQ(0x5a, v[1099]);
		ASSERT_EQ(src[1100], v[1100]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Host stores through device d's view reach every view after a fence. */
TEST(host_store_then_fence)
{
	int ndev, d, e;
	int *p, *v;

	T_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, 4096));
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		v = gpsDevicePtr(p);
		v[d] = 1000 + d;
		ASSERT_EQ(1000 + d, v[d]);	/* reads its own write */
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	}
	for (e = 0; e < ndev; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		v = gpsDevicePtr(p);
		for (d = 0; d < ndev; d++)
			ASSERT_EQ(1000 + d, v[d]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Manual allocations start with the home device; advice moves masks. */
TEST(manual_subscriptions)
{
	unsigned long long m[4];
	gpsPointerAttributes at;
	size_t np, ps;
	char *p;
	int ndev, home;

	T_MIN_DEVICES(ndev, 2);
	home = ndev - 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(home));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1, gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
	ps = at.gpsPageSize;
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4 * ps,
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 7, 4 * ps));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * ps, m, 4, &np));
	ASSERT_EQ(4, np);
	ASSERT_EQ(1ULL << home, m[0]);
	ASSERT_EQ(1ULL << home, m[3]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + ps, ps,
					   gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * ps, m, 4, &np));
	ASSERT_EQ(1ULL << home, m[0]);
	ASSERT_EQ((1ULL << home) | 1, m[1]);
	/* a new subscriber's replica is filled with the current data */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(7, *(char *)gpsDevicePtr(p + ps + 5));
	/* a non-subscriber still reads the right value (remotely) */
	ASSERT_EQ(7, *(char *)gpsDevicePtr(p + 5));
	ASSERT_EQ(gpsErrorBusy, gpsMemAdvise(p, ps,
					     gpsMemAdviseGPSUnsubscribe,
					     home));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + ps, ps,
					   gpsMemAdviseGPSUnsubscribe, home));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * ps, m, 4, &np));
	ASSERT_EQ(1, m[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Replicas come and go with allocations: counters return to start. */
TEST(free_releases_replicas)
{
	size_t before, during;
	void *p[4];
	int ndev, i;

	T_DEVICES(ndev);
	before = t_replica_pages(ndev);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p[i], 1 << 20, 0));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(gpsSuccess, gpsMemset(p[i], i, 1 << 20));
	during = t_replica_pages(ndev);
	ASSERT_LT(before, during);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(gpsSuccess, gpsFree(p[i]));
	ASSERT_EQ(before, t_replica_pages(ndev));
}

/* Conventional memory: one copy, on the current device's node. */
TEST(conventional_single_copy)
{
	gpsDeviceProp prop;
	int ndev, d, node;
	char *c;

	T_DEVICES(ndev);
	d = ndev - 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, d));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c, 8192));
	c[0] = 1;
	c[4096] = 2;
	ASSERT_EQ(c, gpsDevicePtr(c));
	node = t_page_node(c);
	if (node >= 0)
		ASSERT_EQ(prop.numaNode, node);
	ASSERT_EQ(gpsSuccess, gpsFree(c));
}

/* Advice on conventional memory: a collapse (it is one copy already)
 * succeeds and changes nothing, whatever the device named; subscribe and
 * unsubscribe are gpsErrorInvalidValue; placement and read-mostly
 * gpsErrorNotSupported. */
TEST(conventional_advice)
{
	int ndev, d, node, node0;
	char *c;

	T_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c, 8192));
	memset(c, 0x3c, 8192);
	node0 = t_page_node(c);
	for (d = 0; d < ndev; d++)
		ASSERT_EQ(gpsSuccess,
			  gpsMemAdvise(c, 8192, gpsMemAdviseGPSCollapse, d));
	ASSERT_EQ(0x3c, c[0]);
	ASSERT_EQ(0x3c, c[8191]);
	node = t_page_node(c);
	ASSERT_EQ(node0, node);
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(c, 8192, gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(c, 8192, gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(c, 8192, gpsMemAdviseSetPreferredLocation, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(c, 8192, gpsMemAdviseSetReadMostly, 0));
	gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsFree(c));
}

TEST_HARNESS_MAIN
