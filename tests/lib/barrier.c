// SPDX-License-Identifier: MIT
/*
 * Description: the system-wide barrier and system-scope atomics across
 * kernels running on every device: stores to GPS memory made before the
 * barrier are visible in every device's replica after it; atomics on
 * conventional memory count every arrival.
 */
#include "kselftest_harness.h"
#include "t_lib.h"

#define ROUNDS 5

struct bar_args {
	gpsBarrier_t bar;
	int *slots;		/* GPS, translated: one int per device */
	int *counter;		/* conventional: system-scope atomics */
	int *errors;		/* host */
	int ndev;
	int device;
};

static void exchange(void *p)
{
	const struct bar_args *a = p;
	int r, d;

	for (r = 1; r <= ROUNDS; r++) {
		a->slots[a->device] = r * 100 + a->device;
		gpsAtomicAddSystem(a->counter, 1);
		if (gpsBarrierWait(a->bar))
			gpsAtomicAddSystem(a->errors, 1000);
		if (gpsAtomicLoadSystem(a->counter) < r * a->ndev)
			gpsAtomicAddSystem(a->errors, 1);
		for (d = 0; d < a->ndev; d++)
			if (a->slots[d] != r * 100 + d)
				gpsAtomicAddSystem(a->errors, 1);
		/* nobody writes round r + 1 before all read round r */
		if (gpsBarrierWait(a->bar))
			gpsAtomicAddSystem(a->errors, 1000);
	}
}

/* Rounds of write, barrier, read-everyone's, barrier on every device. */
TEST(barrier_publishes)
{
	struct bar_args a;
	gpsStream_t s[64];
	int ndev, d;

	T_MIN_DEVICES(ndev, 2);
	if (ndev > 64)
		ndev = 64;
	ASSERT_EQ(gpsSuccess, gpsBarrierCreate(&a.bar, ndev));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.slots,
					   ndev * sizeof(int), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(a.slots, 0, ndev * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&a.counter, sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.errors, sizeof(int)));
	*a.counter = 0;
	*a.errors = 0;
	a.ndev = ndev;
	for (d = 0; d < ndev; d++) {
		a.device = d;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(exchange,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct bar_args, slots)),
				s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(0, *a.errors);
	ASSERT_EQ(ROUNDS * ndev, *a.counter);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsBarrierDestroy(a.bar));
	ASSERT_EQ(gpsSuccess, gpsFree(a.slots));
	ASSERT_EQ(gpsSuccess, gpsFree(a.counter));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.errors));
}

TEST_HARNESS_MAIN
