// SPDX-License-Identifier: MIT
/*
 * Description: without /dev/gps every call fails cleanly: argument errors
 * first (a NULL out-pointer is gpsErrorInvalidValue), then
 * gpsErrorNoDevice; nothing crashes, nothing is left allocated. A device
 * file that is not gps.ko is an initialization error.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "gpsu.h"

static void kern(void *args)
{
	(void)args;
}

/* Each API group answers gpsErrorNoDevice. */
TEST(no_device)
{
	gpsDeviceProp prop;
	gpsPointerAttributes attr;
	gpsStream_t s = NULL;
	gpsEvent_t e = NULL;
	gpsBarrier_t b = NULL;
	unsigned long long masks[4];
	char buf[64];
	void *p = NULL;
	float ms;
	int n = -1, d = -1;

	setenv("GPSU_DEVICE", "/nonexistent/gps", 1);
	ASSERT_EQ(gpsErrorNoDevice, gpsGetDeviceCount(&n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(gpsErrorNoDevice, gpsSetDevice(0));
	ASSERT_EQ(gpsErrorNoDevice, gpsGetDevice(&d));
	ASSERT_EQ(gpsErrorNoDevice, gpsGetDeviceProperties(&prop, 0));
	ASSERT_EQ(gpsErrorNoDevice, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorNoDevice, gpsMallocGPS(&p, 4096, 0));
	ASSERT_EQ(NULL, p);
	ASSERT_EQ(gpsErrorNoDevice, gpsMallocGPS(&p, 4096, gpsMemGPSManual));
	ASSERT_EQ(gpsErrorNoDevice, gpsMalloc(&p, 4096));
	ASSERT_EQ(gpsErrorNoDevice, gpsMallocHost(&p, 4096));
	ASSERT_EQ(gpsErrorNoDevice, gpsMallocManaged(&p, 4096));
	ASSERT_EQ(NULL, p);
	ASSERT_EQ(gpsErrorNoDevice, gpsFree(buf));
	ASSERT_EQ(gpsErrorNoDevice, gpsFreeHost(buf));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemcpy(buf, buf + 32, 16,
					      gpsMemcpyHostToHost));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemcpyAsync(buf, buf + 32, 16,
					gpsMemcpyDefault, NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemset(buf, 0, 16));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemsetAsync(buf, 0, 16, NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemAdvise(buf, 16,
					gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemPrefetchAsync(buf, 16, 0, NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsMemGetSubscribers(buf, 16, masks, 4,
							 NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsTrackingStart());
	ASSERT_EQ(gpsErrorNoDevice, gpsTrackingStop());
	ASSERT_EQ(gpsErrorNoDevice, gpsPointerGetAttributes(&attr, buf));
	ASSERT_EQ(gpsErrorNoDevice, gpsLaunchKernel(kern, gpsDim(1, 1, 1),
					gpsDim(1, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsStreamCreate(&s));
	ASSERT_EQ(NULL, s);
	ASSERT_EQ(gpsErrorNoDevice, gpsStreamDestroy(s));
	ASSERT_EQ(gpsErrorNoDevice, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsStreamQuery(NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventCreate(&e));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventRecord(e, NULL));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventQuery(e));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventSynchronize(e));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventElapsedTime(&ms, e, e));
	ASSERT_EQ(gpsErrorNoDevice, gpsEventDestroy(e));
	ASSERT_EQ(gpsErrorNoDevice, gpsStreamWaitEvent(NULL, e, 0));
	ASSERT_EQ(gpsErrorNoDevice, gpsThreadFenceSystem());
	ASSERT_EQ(gpsErrorNoDevice, gpsBarrierCreate(&b, 2));
	ASSERT_EQ(gpsErrorNoDevice, gpsBarrierWait(b));
	ASSERT_EQ(gpsErrorNoDevice, gpsBarrierDestroy(b));
	ASSERT_EQ(gpsErrorNoDevice, gpsGetLastError());
	/* translation of an unknown pointer is the identity */
	ASSERT_EQ((void *)buf, gpsDevicePtr(buf));
	ASSERT_EQ(NULL, gpsDevicePtr(NULL));
	/* no coordinates outside a kernel */
	ASSERT_EQ(0, gpsThreadIdx().x);
	ASSERT_EQ(0, gpsBlockDim().x);
}

/* Missing out-pointers, sizes and flags are caught before the device. */
TEST(invalid_arguments_first)
{
	void *p = NULL;

	setenv("GPSU_DEVICE", "/nonexistent/gps", 1);
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetDeviceCount(NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetDevice(NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetDeviceProperties(NULL, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(NULL, 4096, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&p, 0, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&p, (size_t)-1, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&p, 4096, 0x8));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&p, 4096, 0x80000000u));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMallocGPS(&p, 4096, gpsMemGPSPage4K | gpsMemGPSPage2M));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMalloc(NULL, 16));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMalloc(&p, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocHost(&p, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocManaged(NULL, 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemAdvise(NULL, 16,
					gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemAdvise(&p, 0,
					gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemAdvise(&p, 8,
					(gpsMemoryAdvise)0, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemAdvise(&p, 8,
					(gpsMemoryAdvise)99, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemGetSubscribers(NULL, 1, NULL,
							     0, NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsStreamCreate(NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsEventCreate(NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsEventElapsedTime(NULL, NULL,
							    NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsStreamWaitEvent(NULL, NULL, 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsBarrierCreate(NULL, 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsPointerGetAttributes(NULL, &p));
	ASSERT_EQ(NULL, p);
	/* freeing NULL is a no-op, as cudaFree(NULL) */
	ASSERT_EQ(gpsSuccess, gpsFree(NULL));
}

TEST_HARNESS_MAIN
