// SPDX-License-Identifier: MIT
/*
 * Description: automatic subscription through gpsTrackingStart/Stop: each
 * device reads and writes only its own slice of an automatic GPS
 * allocation during tracking; afterwards each page is subscribed by its
 * slice's device only, the data is right in every view, and tracking
 * twice in a row or stopping alone is gpsErrorInvalidValue.  With
 * track_policy "read", a device whose first access to a page was a store
 * and that was never seen loading from it is dropped, the readers kept,
 * and its stores still reach them.
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
		SKIP(return, "engine without tracking");
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
		SKIP(return, "engine without tracking");
	ASSERT_EQ(gpsSuccess, err);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(v, 4096, m, 1, NULL));
	ASSERT_EQ(1ULL, m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

struct rw_args {
	int *v;			/* GPS, translated */
	long store_at, load_at, n;	/* words */
	int value;
	long long *sum;		/* host memory */
};

/* Stores @value to n words at store_at, then loads n words at load_at. */
static void store_then_load(void *p)
{
	const struct rw_args *a = p;
	long long s = 0;
	long i;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	for (i = 0; i < a->n; i++)
		((volatile int *)a->v)[a->store_at + i] = a->value;
	for (i = 0; i < a->n; i++)
		s += ((volatile int *)a->v)[a->load_at + i];
	*a->sum = s;
}

static long long rw_on(struct __test_metadata *_metadata, int d, int *v,
		       long store_at, long load_at, long n, int value)
{
	long long sum = -1;
	struct rw_args a = { v, store_at, load_at, n, value, &sum };

	EXPECT_EQ(gpsSuccess, gpsSetDevice(d));
	EXPECT_EQ(gpsSuccess, gpsLaunchKernel(store_then_load,
			gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct rw_args, v)), 0));
	EXPECT_EQ(gpsSuccess, gpsDeviceSynchronize());
	return sum;
}

/*
 * Device 0 stores to page 0 and loads page 1; device 1 stores to page 1
 * and loads page 0: "read" keeps each page's reader alone, and each
 * writer's later stores reach the reader through its replica.
 */
TEST(read_policy_keeps_the_readers)
{
	unsigned long long m[2], policy0;
	gpsPointerAttributes at;
	long per;
	int ndev, *v;
	size_t ps;
	gpsError_t err;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(0, t_knob_get("track_policy", &policy0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, v));
	ps = at.gpsPageSize;
	per = (long)(ps / sizeof(int));
	ASSERT_EQ(gpsSuccess, gpsFree(v));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, 2 * ps, 0));
	T_KNOB_SET("track_policy", 1);		/* "read" */
	err = gpsTrackingStart();
	if (err != gpsSuccess)
		t_knob_set("track_policy", policy0);
	ASSERT_EQ(gpsSuccess, err);
	EXPECT_EQ(0, rw_on(_metadata, 0, v, 0, per, per, 3));
	EXPECT_EQ(3 * per, rw_on(_metadata, 1, v, per, 0, per, 5));
	err = gpsTrackingStop();
	t_knob_set("track_policy", policy0);
	ASSERT_EQ(gpsSuccess, err);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(v, 2 * ps, m, 2, NULL));
	EXPECT_EQ(2ULL, m[0]);		/* read by device 1 only */
	EXPECT_EQ(1ULL, m[1]);		/* read by device 0 only */
	/* the writers' stores reach the readers at their releases */
	EXPECT_EQ(5 * per, rw_on(_metadata, 0, v, 0, per, per, 7));
	EXPECT_EQ(7 * per, rw_on(_metadata, 1, v, per, 0, per, 9));
	EXPECT_EQ(9 * per, rw_on(_metadata, 0, v, 0, per, per, 7));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

TEST_HARNESS_MAIN
