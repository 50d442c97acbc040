// SPDX-License-Identifier: MIT
/*
 * Description: host stores reach kernels.  The host thread stores a new
 * value into GPS memory (through the home device's view), then launches
 * a kernel on every other device's stream, round after round without
 * waiting: each kernel, reading its own replica, must see that round's
 * value or a later one, never an earlier one (stores before a launch call
 * are published before the kernel starts; later ones race with it).  The
 * launches of a round share one fence of the home device (tickets); the
 * same with every launch fencing alone (GPSU_NO_HOST_COMBINE=1), and with
 * a kernel on the home device launched first in each round, running while
 * the others' shared fence harvests it.
 */
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define ROUNDS	300

struct peek_args {
	volatile int *g;	/* GPS, translated: the device's replica */
	int *out;		/* host memory */
};

static void peek(void *p)
{
	const struct peek_args *a = p;

	*a->out = *a->g;
}

FIXTURE(host) {
	int ndev;
};

FIXTURE_VARIANT(host) {
	int alone;
};

FIXTURE_VARIANT_ADD(host, shared) {
	.alone = 0,
};

FIXTURE_VARIANT_ADD(host, alone) {
	.alone = 1,
};

FIXTURE_SETUP(host)
{
	/* read once per process: each test is a fresh child */
	if (variant->alone)
		setenv("GPSU_NO_HOST_COMBINE", "1", 1);
	else
		unsetenv("GPSU_NO_HOST_COMBINE");
	self->ndev = 0;
}

FIXTURE_TEARDOWN(host)
{
}

/* peek, then stay 2 ms: the home device's release comes late */
static void peek_and_dwell(void *p)
{
	struct timespec t0, t;

	peek(p);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L +
	       (t.tv_nsec - t0.tv_nsec) < 2000000L);
}

/*
 * ROUNDS rounds of a host store and a launch on each device from @first
 * on (on the home device, 0, the kernel dwells), without waiting; then
 * every kernel must have seen its round's store or a later one.
 */
static void host_rounds(struct __test_metadata *_metadata, int first)
{
	gpsStream_t s[64];
	struct peek_args a;
	int ndev, d, r, *seen;
	volatile int *g;

	T_MIN_DEVICES(ndev, 2);
	seen = calloc((size_t)ndev * (ROUNDS + 1), sizeof(*seen));
	ASSERT_NE(NULL, seen);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, sizeof(int), 0));
	*g = 0;
	for (d = first; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
	}
	for (r = 1; r <= ROUNDS; r++) {
		*g = r;			/* a host store: device 0's */
		for (d = first; d < ndev; d++) {
			a.g = g;
			a.out = &seen[d * (ROUNDS + 1) + r];
			ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(d ? peek :
							      peek_and_dwell,
					gpsDim(1, 1, 1), gpsDim(1, 1, 1),
					GPS_ARGS(&a, GPS_PTR(struct peek_args,
							     g)), s[d]));
		}
	}
	for (d = first; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	for (d = first; d < ndev; d++)
		for (r = 1; r <= ROUNDS; r++) {
			int v = seen[d * (ROUNDS + 1) + r];

			ASSERT_LE(r, v) TH_LOG("device %d, round %d", d, r);
			ASSERT_GE(ROUNDS, v);
		}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree((void *)g));
	free(seen);
}

TEST_F(host, stores_before_launch_are_seen)
{
	host_rounds(_metadata, 1);
}

/*
 * A kernel on the home device first, then the others (the order of a
 * multi-device loop): the shared fence of the home device then runs while
 * the home device's kernel does, whose own release comes late.
 */
TEST_F(host, home_kernel_first_then_the_others)
{
	host_rounds(_metadata, 0);
}

TEST_HARNESS_MAIN
