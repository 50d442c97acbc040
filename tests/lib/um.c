// SPDX-License-Identifier: MIT
/*
 * Description: the driver's managed memory through libgpsu
 * (gpsMallocManagedFlags with gpsMemManagedOnFault): kernels get their
 * device's view; each device's kernel writing its own slice moves those
 * pages to it (gpsMemGetSubscribers shows one device per page, the
 * writer's), a kernel of another device reading everything sees every
 * store without a fence and moves what it touched, racing atomics from
 * every device add up exactly; copies and memset reach the single copy
 * wherever it is; bad flags, hints and prefetches are refused.
 */
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

TEST_HARNESS_MAIN
