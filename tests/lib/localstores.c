// SPDX-License-Identifier: MIT
/*
 * Description: gpsArgsLocalStores and the release at a kernel's end.  A
 * kernel launched with the flag promises to store to GPS memory only
 * through translated pointers, so the release at its end fences its own
 * device and not the host views; its stores still reach every replica by
 * the end of the kernel (a host read after the stream's synchronize sees
 * each round's value).  Neither kind of kernel end fences the home device
 * (device 0) when the host did not store (host views), with or without
 * the flag (GPSU_NO_LOCAL_STORES=1 ignores it).  A kernel without the flag
 * that stores through an untranslated pointer (the host view, device 0's
 * replica) has its stores published by its end: device 1's own replica
 * holds them once the stream is synchronized.  Unknown flag bits are
 * refused.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define ROUNDS	50

struct put_args {
	int *g;		/* GPS, translated: the device's replica */
	int v;
};

static void put(void *p)
{
	const struct put_args *a = p;

	*a->g = a->v;
}

FIXTURE(local) {
	gpsStream_t s;
	int *g;
};

FIXTURE_VARIANT(local) {
	int ignored;	/* GPSU_NO_LOCAL_STORES=1 */
};

FIXTURE_VARIANT_ADD(local, honoured) {
	.ignored = 0,
};

FIXTURE_VARIANT_ADD(local, ignored) {
	.ignored = 1,
};

FIXTURE_SETUP(local)
{
	int ndev;

	/* read once per process: each test is a fresh child */
	if (variant->ignored)
		setenv("GPSU_NO_LOCAL_STORES", "1", 1);
	else
		unsetenv("GPSU_NO_LOCAL_STORES");
	self->g = NULL;
	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&self->g, sizeof(int),
					   0));
	*self->g = 0;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&self->s));
}

FIXTURE_TEARDOWN(local)
{
	if (!self->g)
		return;
	EXPECT_EQ(gpsSuccess, gpsSetDevice(1));
	EXPECT_EQ(gpsSuccess, gpsStreamDestroy(self->s));
	EXPECT_EQ(gpsSuccess, gpsSetDevice(0));
	EXPECT_EQ(gpsSuccess, gpsFree(self->g));
}

static gpsError_t launch_put(gpsStream_t s, int *g, int v, int local)
{
	struct put_args a = { g, v };

	return gpsLaunchKernel(put, gpsDim(1, 1, 1), gpsDim(1, 1, 1), local ?
			       GPS_ARGS_LOCAL(&a, GPS_PTR(struct put_args, g)) :
			       GPS_ARGS(&a, GPS_PTR(struct put_args, g)),
			       s);
}

/* device 1's stores are in device 0's replica when its stream is done */
TEST_F(local, stores_published_at_kernel_end)
{
	int r;

	for (r = 1; r <= ROUNDS; r++) {
		ASSERT_EQ(gpsSuccess, launch_put(self->s, self->g, r, 1));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(self->s));
		/* the host view is the home device's: device 0's replica */
		ASSERT_EQ(r, *(volatile int *)self->g) TH_LOG("round %d", r);
	}
}

/* fences of device 0 (the home) over ROUNDS launches on device 1 */
static long long home_fences(gpsStream_t s, int *g, int local)
{
	long long f0 = t_dev_stat(0, "fences"), f1;
	int r;

	for (r = 1; r <= ROUNDS; r++)
		if (launch_put(s, g, r, local) != gpsSuccess)
			return -1;
	if (gpsStreamSynchronize(s) != gpsSuccess)
		return -1;
	f1 = t_dev_stat(0, "fences");
	return f0 < 0 || f1 < 0 ? -1 : f1 - f0;
}

TEST_F(local, kernel_end_leaves_the_home_alone)
{
	long long plain, local;

	if (t_dev_stat(0, "fences") < 0)
		SKIP(return, "no counter fences (debugfs not mounted?)");
	/* at most the first host release, for the host's store in the
	 * setup: no kernel end fences device 0 */
	plain = home_fences(self->s, self->g, 0);
	ASSERT_LE(0, plain);
	ASSERT_GE(1, plain);
	local = home_fences(self->s, self->g, 1);
	ASSERT_EQ(0, local) TH_LOG("plain %lld", plain);
	ASSERT_EQ(ROUNDS, *(volatile int *)self->g);
}

static void put_raw(void *p)
{
	const struct put_args *a = p;

	*a->g = a->v;	/* untranslated: the host view */
}

TEST_F(local, untranslated_stores_published_at_kernel_end)
{
	struct put_args a = { self->g, 0 };
	unsigned long long interval;
	volatile int *mine;
	int r, bad = 0;

	/* only releases publish: the push thread stays off */
	ASSERT_EQ(0, t_knob_get("harvest_interval_us", &interval));
	T_KNOB_SET("harvest_interval_us", 0);
	/* device 1's own view reads device 1's replica */
	mine = gpsDevicePtr(self->g);
	for (r = 1; r <= ROUNDS && !bad; r++) {
		a.v = r;
		if (gpsLaunchKernel(put_raw, gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				    GPS_ARGS_RAW(&a), self->s) ||
		    gpsStreamSynchronize(self->s) || *mine != r)
			bad = r;
	}
	ASSERT_EQ(0, t_knob_set("harvest_interval_us", interval));
	ASSERT_NE((volatile int *)self->g, mine);
	ASSERT_EQ(0, bad);
}

TEST_F(local, unknown_flags_refused)
{
	struct put_args a = { self->g, 1 };
	gpsKernelArgs ka = { .data = &a, .size = sizeof(a), .nptrs = 1,
			     .ptr = { GPS_PTR(struct put_args, g) } };

	ka.flags = 0x4u;
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(put, gpsDim(1, 1, 1), gpsDim(1, 1, 1), &ka,
				  self->s));
	gpsGetLastError();
	ka.flags = gpsArgsLocalStores | gpsArgsTranslateScan;
	ka.nptrs = 0;
	ASSERT_EQ(gpsSuccess,
		  gpsLaunchKernel(put, gpsDim(1, 1, 1), gpsDim(1, 1, 1), &ka,
				  self->s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(self->s));
	ASSERT_EQ(1, *(volatile int *)self->g);
}

TEST_HARNESS_MAIN
