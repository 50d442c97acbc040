// SPDX-License-Identifier: MIT
/*
 * Description: the driver's managed memory through libgpsu
 * (gpsMallocManagedFlags with gpsMemManagedOnFault): kernels get their
 * device's view; each device's kernel writing its own slice moves those
 * pages to it (gpsMemGetSubscribers shows one device per page, the
 * writer's), a kernel of another device reading everything sees every
 * store without a fence and moves what it touched, racing atomics from
 * every device add up exactly; copies and memset reach the single copy
 * wherever it is; bad flags, hints and prefetches are refused.  A page
 * that moved um_thrash_threshold times within um_thrash_epoch_ms is
 * pinned where it is for um_pin_ms (thrash_pins), the other devices then
 * reach it where it is, and both see each other's stores without a
 * fence; moves are counted in migrations and bytes_migrated of the
 * device a page moved to; threshold 0 moves the page on every fault.
 */
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define PAGE	4096
#define WORDS	(PAGE / sizeof(int))

struct slice_args {
	int *data;
	int value;
	size_t first, n;
};

/* One thread writes its device's slice (whole pages). */
static void write_slice(void *p)
{
	struct slice_args *a = p;
	size_t i;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	for (i = a->first; i < a->first + a->n; i++)
		a->data[i] = a->value + (int)i;
}

struct sum_args {
	int *data;
	size_t n;
	long long *out;
};

static void sum_all(void *p)
{
	struct sum_args *a = p;
	long long s = 0;
	size_t i;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	for (i = 0; i < a->n; i++)
		s += a->data[i];
	*a->out = s;
}

struct inc_args {
	int *counter;
	int iters;
};

static void inc_kernel(void *p)
{
	struct inc_args *a = p;
	int i;

	for (i = 0; i < a->iters; i++)
		__atomic_fetch_add(a->counter, 1, __ATOMIC_RELAXED);
}

/* Writers own their slices' pages; a reader sees all, no fence. */
TEST(pages_follow_their_writers)
{
	struct slice_args sa[64];
	struct sum_args su;
	unsigned long long masks[64];
	gpsPointerAttributes at;
	long long sum, want = 0;
	int ndev, d, *um;
	size_t np, i;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um,
			(size_t)ndev * PAGE, gpsMemManagedOnFault));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, um));
	ASSERT_EQ(gpsMemoryTypeManaged, at.type);
	ASSERT_EQ(PAGE, at.gpsPageSize);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, ndev * PAGE, masks,
						   64, &np));
	ASSERT_EQ(ndev, np);
	for (d = 0; d < ndev; d++)
		ASSERT_EQ(1ULL, masks[d]);	/* all at home: device 0 */

	for (d = 0; d < ndev; d++) {
		sa[d] = (struct slice_args){ um, 1000 * d, d * WORDS, WORDS };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(write_slice,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&sa[d], GPS_PTR(struct slice_args,
							 data)), 0));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	}
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, ndev * PAGE, masks,
						   64, &np));
	for (d = 0; d < ndev; d++)
		ASSERT_EQ(1ULL << d, masks[d]) TH_LOG("page %d", d);

	for (i = 0; i < ndev * WORDS; i++)
		want += 1000 * (long long)(i / WORDS) + (long long)i;
	su = (struct sum_args){ um, ndev * WORDS, &sum };
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(sum_all, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&su, GPS_PTR(struct sum_args, data)), 0));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(want, sum);
	/* the reader pulled every page (no thrashing: one move each) */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, ndev * PAGE, masks,
						   64, &np));
	for (d = 0; d < ndev; d++)
		ASSERT_EQ(1ULL << (ndev - 1), masks[d]);
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

/* Every device's kernel adds to one word: the exact total. */
TEST(racing_atomics_add_up)
{
	gpsStream_t s[64];
	struct inc_args a;
	int ndev, d, *um, host;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, PAGE,
						    gpsMemManagedOnFault));
	ASSERT_EQ(gpsSuccess, gpsMemset(um, 0, PAGE));
	a.counter = um;
	a.iters = 200;
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc_kernel,
				gpsDim(2, 1, 1), gpsDim(4, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct inc_args, counter)),
				s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsMemcpy(&host, um, sizeof(host),
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(ndev * 2 * 4 * 200, host);
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

/* Copies reach the copy wherever it is; no hints, no prefetch. */
TEST(copies_and_refusals)
{
	int ndev, *um, *anon, in[4] = { 1, 2, 3, 4 }, out[4];
	unsigned long long mask;
	size_t np;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMallocManagedFlags((void **)&um, PAGE, 0x8));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&anon, PAGE,
						    gpsMemAttachGlobal));
	ASSERT_EQ(gpsSuccess, gpsFree(anon));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, PAGE,
						    gpsMemManagedOnFault));
	/* at home: the current device */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(2ULL, mask);
	ASSERT_EQ(gpsSuccess, gpsMemcpy(um, in, sizeof(in),
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(out, um, sizeof(out),
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(0, memcmp(in, out, sizeof(in)));
	/* a copy does not move it */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(2ULL, mask);
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemPrefetchAsync(um, PAGE, 0, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(um, PAGE, gpsMemAdviseSetPreferredLocation, 0));
	ASSERT_EQ(gpsSuccess,
		  gpsMemAdvise(um, PAGE, gpsMemAdviseSetAccessedBy, 0));
	(void)gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

/* One thread stores @value at a->data[a->first]. */
static void store_one(void *p)
{
	struct slice_args *a = p;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	a->data[a->first] = a->value;
}

/* One thread reads a->data[a->n] into *a->out. */
static void load_one(void *p)
{
	struct sum_args *a = p;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	*a->out = ((volatile int *)a->data)[a->n];
}

/* Device @d's kernel of one thread stores @value at @um[@i]. */
static gpsError_t store_on(int d, int *um, size_t i, int value)
{
	struct slice_args a = { um, value, i, 0 };
	gpsError_t e = gpsSetDevice(d);

	if (!e)
		e = gpsLaunchKernel(store_one, gpsDim(1, 1, 1),
				    gpsDim(1, 1, 1),
				    GPS_ARGS(&a, GPS_PTR(struct slice_args,
							 data)), 0);
	return e ? e : gpsDeviceSynchronize();
}

/* What device @d's kernel of one thread loads from @um[@i] (or -1000). */
static long long load_on(int d, int *um, size_t i)
{
	long long v = -1000;
	struct sum_args a = { um, i, &v };

	if (gpsSetDevice(d) || gpsLaunchKernel(load_one, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct sum_args, data)), 0) ||
	    gpsDeviceSynchronize())
		return -1000;
	return v;
}

/* Sum of counter @name over the devices (-1: not kept). */
static long long dev_sum(int ndev, const char *name)
{
	long long s = 0, v;
	int d;

	for (d = 0; d < ndev; d++) {
		v = t_dev_stat(d, name);
		if (v < 0)
			return -1;
		s += v;
	}
	return s;
}

FIXTURE(thrash) {
	unsigned long long knob0[3];
	int ndev;
};

static const char *const thrash_knobs[] = {
	"um_thrash_threshold", "um_thrash_epoch_ms", "um_pin_ms",
};

FIXTURE_SETUP(thrash)
{
	int i;

	T_MIN_DEVICES(self->ndev, 2);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, t_knob_get(thrash_knobs[i], &self->knob0[i]));
}

FIXTURE_TEARDOWN(thrash)
{
	int i;

	for (i = 0; i < 3 && self->ndev; i++)
		t_knob_set(thrash_knobs[i], self->knob0[i]);
}

/*
 * Two devices store to one page in turn: it moves three times, then the
 * fourth fault pins it on the device that has it; from then on both
 * reach that copy, see each other's stores without a fence, and it moves
 * no more, not even for a third device's first access.
 */
TEST_F(thrash, thrashing_page_is_pinned)
{
	long long pins, moved, bytes;
	unsigned long long mask;
	int *um, i;
	size_t np;

	T_KNOB_SET("um_thrash_epoch_ms", 60000);
	T_KNOB_SET("um_pin_ms", 60000);
	T_KNOB_SET("um_thrash_threshold", 3);
	pins = dev_sum(self->ndev, "thrash_pins");
	moved = dev_sum(self->ndev, "migrations");
	bytes = dev_sum(self->ndev, "bytes_migrated");
	ASSERT_LE(0, pins);
	ASSERT_LE(0, moved);
	ASSERT_LE(0, bytes);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, 2 * PAGE,
						    gpsMemManagedOnFault));
	for (i = 1; i <= 20; i++)
		ASSERT_EQ(gpsSuccess, store_on(i & 1, um, 8, i));
	ASSERT_EQ(3, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(3 * PAGE, dev_sum(self->ndev, "bytes_migrated") - bytes);
	ASSERT_EQ(1, dev_sum(self->ndev, "thrash_pins") - pins);
	/* 0 -> 1, 1 -> 0, 0 -> 1: pinned on device 1 */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(2ULL, mask);
	/* one copy, reached by both: every store seen at once */
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(gpsSuccess, store_on(i & 1, um, 9, 0x70 + i));
		ASSERT_EQ(0x70 + i, load_on(!(i & 1), um, 9));
	}
	ASSERT_EQ(20, load_on(0, um, 8));
	/* a third device reaches it where it is pinned: no move, no pin */
	if (self->ndev >= 3) {
		ASSERT_EQ(gpsSuccess, store_on(2, um, 10, 0x55));
		ASSERT_EQ(0x55, load_on(0, um, 10));
		ASSERT_EQ(0x55, load_on(1, um, 10));
		ASSERT_EQ(20, load_on(2, um, 8));
	}
	ASSERT_EQ(3, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(1, dev_sum(self->ndev, "thrash_pins") - pins);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(2ULL, mask);
	/* the other page never moved */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers((char *)um + PAGE, PAGE,
						   &mask, 1, &np));
	ASSERT_EQ(1ULL, mask);
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

/* Threshold 0: the page follows every store, and is never pinned. */
TEST_F(thrash, threshold_zero_moves_on_every_fault)
{
	long long pins, moved;
	unsigned long long mask;
	int *um, i;
	size_t np;

	T_KNOB_SET("um_thrash_threshold", 0);
	pins = dev_sum(self->ndev, "thrash_pins");
	moved = dev_sum(self->ndev, "migrations");
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, PAGE,
						    gpsMemManagedOnFault));
	for (i = 1; i <= 20; i++) {
		ASSERT_EQ(gpsSuccess, store_on(i & 1, um, 8, i));
		ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1,
							   &np));
		ASSERT_EQ(1ULL << (i & 1), mask) TH_LOG("store %d", i);
	}
	ASSERT_EQ(20, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(0, dev_sum(self->ndev, "thrash_pins") - pins);
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

/*
 * A pin ends: with three devices, the one that never reached the page
 * moves it once the pin is over, and a device that reached it where it
 * was pinned loses that reach (its next access faults, and moves it).
 */
TEST_F(thrash, a_pin_ends)
{
	unsigned long long mask;
	long long moved;
	int *um, i;
	size_t np;

	if (self->ndev < 3)
		SKIP(return, "needs 3 devices, has %d", self->ndev);
	T_KNOB_SET("um_thrash_epoch_ms", 60000);
	T_KNOB_SET("um_pin_ms", 100);
	T_KNOB_SET("um_thrash_threshold", 1);
	moved = dev_sum(self->ndev, "migrations");
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, PAGE,
						    gpsMemManagedOnFault));
	/* 0 -> 1, then device 0's store pins it on 1 */
	for (i = 1; i <= 2; i++)
		ASSERT_EQ(gpsSuccess, store_on(i & 1, um, 0, i));
	ASSERT_EQ(1, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(2ULL, mask);
	usleep(200 * 1000);
	ASSERT_EQ(2, load_on(2, um, 0));
	ASSERT_EQ(2, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(4ULL, mask);
	/*
	 * Device 0 reached it on 1; it must fault again to reach it on 2,
	 * and with the guard off that fault moves it.
	 */
	T_KNOB_SET("um_thrash_threshold", 0);
	ASSERT_EQ(gpsSuccess, store_on(0, um, 0, 3));
	ASSERT_EQ(3, dev_sum(self->ndev, "migrations") - moved);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, PAGE, &mask, 1, &np));
	ASSERT_EQ(1ULL, mask);
	ASSERT_EQ(3, load_on(2, um, 0));
	ASSERT_EQ(gpsSuccess, gpsFree(um));
}

TEST_HARNESS_MAIN
