// SPDX-License-Identifier: MIT
/*
 * Description: the system-wide barrier and system-scope atomics across
 * kernels running on every device: stores to GPS memory made before the
 * barrier are visible in every device's replica after it; atomics on
 * conventional memory count every arrival. Stores through untranslated
 * pointers (the home device's view) are published by gpsBarrierWait and
 * by gpsThreadFenceSystem, with the push threads stopped
 * (harvest_interval_us 0, restored after) so that only the release can
 * have published them.
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

struct raw_args {
	gpsBarrier_t bar;
	int *raw;		/* GPS, untranslated: device 0's view */
	int *mine;		/* the same, translated: the kernel's view */
	int *seen;		/* host: ndev x ndev, what each device read */
	int ndev;
	int fence;		/* 1: gpsThreadFenceSystem, 0: the barrier */
};

/* Devices 1..n-1: store through device 0's view, release, then read every
 * participant's slot through the own view (the own replica). */
static void raw_store(void *p)
{
	const struct raw_args *a = p;
	int dev, d;

	gpsGetDevice(&dev);
	a->raw[dev] = 1000 + dev;
	if (a->fence ? gpsThreadFenceSystem() : gpsBarrierWait(a->bar)) {
		a->seen[dev * a->ndev] = -1;
		return;
	}
	for (d = 1; d < a->ndev; d++)
		if (a->fence ? d == dev : 1)
			a->seen[dev * a->ndev + d] = a->mine[d];
}

FIXTURE(raw) {
	int ndev;
	unsigned long long interval;
	int saved;
	struct raw_args a;
	gpsStream_t s[64];
};

FIXTURE_SETUP(raw)
{
	int n;

	self->saved = 0;
	memset(&self->a, 0, sizeof(self->a));
	memset(self->s, 0, sizeof(self->s));
	T_MIN_DEVICES(self->ndev, 2);
	if (self->ndev > 64)
		self->ndev = 64;
	n = self->ndev;
	ASSERT_EQ(0, t_knob_get("harvest_interval_us", &self->interval));
	self->saved = 1;
	T_KNOB_SET("harvest_interval_us", 0);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&self->a.raw,
					   n * sizeof(int), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(self->a.raw, 0, n * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->a.seen,
					    n * n * sizeof(int)));
	memset(self->a.seen, 0, n * n * sizeof(int));
	self->a.mine = self->a.raw;
	self->a.ndev = n;
}

FIXTURE_TEARDOWN(raw)
{
	int d;

	for (d = 1; d < self->ndev && d < 64; d++) {
		if (!self->s[d])
			continue;
		gpsSetDevice(d);
		EXPECT_EQ(gpsSuccess, gpsStreamSynchronize(self->s[d]));
		EXPECT_EQ(gpsSuccess, gpsStreamDestroy(self->s[d]));
	}
	gpsSetDevice(0);
	if (self->saved)
		t_knob_set("harvest_interval_us", self->interval);
	if (self->a.bar)
		EXPECT_EQ(gpsSuccess, gpsBarrierDestroy(self->a.bar));
	if (self->a.raw)
		EXPECT_EQ(gpsSuccess, gpsFree(self->a.raw));
	if (self->a.seen)
		EXPECT_EQ(gpsSuccess, gpsFreeHost(self->a.seen));
}

/* Kernels launched with GPS_PTR(mine) only: raw stays device 0's view. */
static void raw_launch(struct __test_metadata *_metadata,
		       FIXTURE_DATA(raw) *self, int d)
{
	ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&self->s[d]));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(raw_store, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&self->a, GPS_PTR(struct raw_args, mine)),
			self->s[d]));
}

/* gpsBarrierWait publishes stores made through the home device's view:
 * after it every participant reads every participant's store in its own
 * replica. */
TEST_F(raw, barrier_publishes_untranslated)
{
	int n = self->ndev, d, e, bad = 0;

	ASSERT_EQ(gpsSuccess, gpsBarrierCreate(&self->a.bar, n - 1));
	for (d = 1; d < n; d++)
		raw_launch(_metadata, self, d);
	for (d = 1; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(self->s[d]));
	}
	for (d = 1; d < n; d++) {
		for (e = 1; e < n; e++) {
			if (self->a.seen[d * n + e] == 1000 + e)
				continue;
			TH_LOG("device %d read %d for device %d's store of %d",
			       d, self->a.seen[d * n + e], e, 1000 + e);
			bad++;
		}
	}
	ASSERT_EQ(0, bad);
}

/* gpsThreadFenceSystem publishes them too: a kernel of the last device
 * reads its own store back from its own replica. */
TEST_F(raw, fence_publishes_untranslated)
{
	int n = self->ndev;

	self->a.fence = 1;
	raw_launch(_metadata, self, n - 1);
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(self->s[n - 1]));
	ASSERT_EQ(1000 + n - 1, self->a.seen[(n - 1) * n + n - 1]);
}

TEST_HARNESS_MAIN
