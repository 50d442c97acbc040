// SPDX-License-Identifier: MIT
/*
 * Description: automatic subscription through gpsTrackingStart/Stop: each
 * device reads and writes only its own slice of an automatic GPS
 * allocation during tracking; afterwards each page is subscribed by its
 * slice's device only, the data is right in every view, and tracking
 * twice in a row or stopping alone is gpsErrorInvalidValue.
 */
#include "kselftest_harness.h"
#include "t_lib.h"

struct slice_args {
	int *v;			/* GPS, translated */
	long first, count;
};

static void bump(void *p)
{
	const struct slice_args *a = p;
	long i = a->first + (long)(gpsBlockIdx().x * gpsBlockDim().x +
				   gpsThreadIdx().x);

	if (i < a->first + a->count)
		a->v[i] += 1;	/* a read, then a write */
}

static void run_slices(struct __test_metadata *_metadata, int *v, int ndev,
		       size_t ps)
{
	gpsStream_t s[64];
	long per = (long)(ps / sizeof(int));
	int d;

	for (d = 0; d < ndev; d++) {
		struct slice_args a = { v, d * per, per };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(bump,
			gpsDim((unsigned int)((per + 255) / 256), 1, 1),
			gpsDim(256, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct slice_args, v)), s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
}

/* One page per device, each device keeps exactly its page. */
TEST(each_device_keeps_its_pages)
{
	unsigned long long m[64];
	gpsPointerAttributes at;
	size_t ps, np, i;
	int ndev, d, e, *v, *w;
	gpsError_t err;

	T_MIN_DEVICES(ndev, 2);
	if (ndev > 64)
		ndev = 64;
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, v));
	ps = at.gpsPageSize;
	ASSERT_EQ(gpsSuccess, gpsFree(v));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, ndev * ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(v, 0, ndev * ps));

	err = gpsTrackingStart();
	if (err == gpsErrorNotSupported)
		SKIP(return, "engine without tracking (the native engine has none yet)");
	ASSERT_EQ(gpsSuccess, err);
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStart());
	run_slices(_metadata, v, ndev, ps);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStop());

	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(v, ndev * ps, m, 64, &np));
	ASSERT_EQ((size_t)ndev, np);
	for (d = 0; d < ndev; d++)
		ASSERT_EQ(1ULL << d, m[d]);
	/* after tracking: still correct, and subscriptions still follow */
	run_slices(_metadata, v, ndev, ps);
	for (e = 0; e < ndev; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		w = gpsDevicePtr(v);
		for (i = 0; i < ndev * ps / sizeof(int); i++)
			ASSERT_EQ(2, w[i]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

/* Manual allocations are left alone by tracking. */
TEST(manual_allocations_untouched)
{
	unsigned long long m[1];
	int ndev, *v;
	gpsError_t err;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, 4096,
					   gpsMemGPSManual));
	err = gpsTrackingStart();
	if (err == gpsErrorNotSupported)
		SKIP(return, "engine without tracking (the native engine has none yet)");
	ASSERT_EQ(gpsSuccess, err);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(v, 4096, m, 1, NULL));
	ASSERT_EQ(1ULL, m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

TEST_HARNESS_MAIN
