// SPDX-License-Identifier: MIT
/*
 * Description: streams and events against gps.ko, with the asynchronous
 * io_uring fences: stream order across kernels and copies, events and
 * elapsed time, a cross-device dependency through gpsStreamWaitEvent, and
 * the same with ioctl fences (GPSU_NO_URING is read per stream).
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_lib.h"

struct inc_args {
	int *v;			/* GPS, translated */
	int n;
};

static void inc(void *p)
{
	const struct inc_args *a = p;
	unsigned int i = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	if ((int)i < a->n)
		a->v[i] += 1;
}

FIXTURE(streams) {
	int ndev;
};

FIXTURE_VARIANT(streams) {
	int no_uring;
};

FIXTURE_VARIANT_ADD(streams, uring) {
	.no_uring = 0,
};

FIXTURE_VARIANT_ADD(streams, ioctl) {
	.no_uring = 1,
};

FIXTURE_SETUP(streams)
{
	if (variant->no_uring)
		setenv("GPSU_NO_URING", "1", 1);
	self->ndev = 0;
}

FIXTURE_TEARDOWN(streams)
{
}

/* Kernels then a copy, in order; events time the kernels. */
TEST_F(streams, order_and_events)
{
	struct inc_args a;
	gpsStream_t s;
	gpsEvent_t e0, e1;
	int host[1024], i, k;
	float ms;

	T_DEVICES(self->ndev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(self->ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e0));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.v, sizeof(host), 0));
	a.n = 1024;
	ASSERT_EQ(gpsSuccess, gpsMemsetAsync(a.v, 0, sizeof(host), s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e0, s));
	for (k = 0; k < 10; k++)
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(8, 1, 1),
				gpsDim(128, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e1, s));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(host, a.v, sizeof(host),
					     gpsMemcpyDeviceToHost, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(10, host[i]);
	ASSERT_EQ(gpsSuccess, gpsEventElapsedTime(&ms, e0, e1));
	ASSERT_LE(0.0, ms);
	/* every replica holds the result */
	for (k = 0; k < self->ndev; k++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(k));
		ASSERT_EQ(10, ((int *)gpsDevicePtr(a.v))[1023]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(self->ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e1));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(a.v));
}

/* Device 1 waits on device 0's event, then reads what device 0 wrote. */
TEST_F(streams, cross_device_dependency)
{
	struct inc_args a;
	gpsStream_t s0, s1;
	gpsEvent_t done0;
	int i, host[256];

	T_MIN_DEVICES(self->ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.v, sizeof(host), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(a.v, 0, sizeof(host)));
	a.n = 256;
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&done0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(2, 1, 1),
			gpsDim(128, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s0));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(done0, s0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s1, done0, 0));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(2, 1, 1),
			gpsDim(128, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s1));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(host, a.v, sizeof(host),
					     gpsMemcpyDeviceToHost, s1));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s1));
	for (i = 0; i < 256; i++)
		ASSERT_EQ(2, host[i]);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(done0));
	ASSERT_EQ(gpsSuccess, gpsFree(a.v));
}

TEST_HARNESS_MAIN
