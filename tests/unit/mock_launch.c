// SPDX-License-Identifier: MIT
/*
 * Description: kernels, streams, events and the barrier against the
 * in-process mock driver (t_mock.h): launch checks, every (block, thread)
 * run once with its coordinates, argument translation, the release at
 * the end of a kernel, stream order, events, asynchronous errors reported
 * at the next synchronize, a barrier across two devices, the fences of
 * gpsThreadFenceSystem (every device) and gpsBarrierWait (the caller's
 * device and the home devices of GPS memory), event flags.
 */
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"

FIXTURE(launch) {
	int unused;
};

FIXTURE_SETUP(launch)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
}

FIXTURE_TEARDOWN(launch)
{
	EXPECT_EQ(0, mock_nr_allocs);
}

static void nop(void *a)
{
	(void)a;
}

/* Bad grids, blocks, argument blocks and streams are refused. */
TEST_F(launch, checks)
{
	struct { void *p; int n; } a = { NULL, 1 };
	gpsKernelArgs bad = { .data = &a, .size = sizeof(a), .nptrs = 1,
			      .ptr = { sizeof(a) - 4 } };
	gpsStream_t s;
	gpsDim3 one = gpsDim(1, 1, 1);

	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(NULL, one, one, NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, gpsDim(0, 1, 1), one, NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, one, gpsDim(1, 0, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, one, gpsDim(1025, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, one, gpsDim(64, 32, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, gpsDim(1, 70000, 1), one, NULL, NULL));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(nop, one, one, &bad, NULL));
	bad.ptr[0] = 0;
	bad.nptrs = GPS_KERNEL_MAX_PTRS + 1;
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(nop, one, one, &bad, NULL));
	bad.nptrs = 0;
	bad.flags = 0x10;
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(nop, one, one, &bad, NULL));
	bad.flags = 0;
	bad.size = GPS_KERNEL_MAX_ARGS_SIZE + 1;
	ASSERT_EQ(gpsErrorInvalidConfiguration,
		  gpsLaunchKernel(nop, one, one, &bad, NULL));
	bad.size = 8;
	bad.data = NULL;
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunchKernel(nop, one, one, &bad, NULL));
	/* a stream of another device; a handle that is no stream */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsLaunchKernel(nop, one, one, NULL, s));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsLaunchKernel(nop, one, one, NULL, (gpsStream_t)&a));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsStreamSynchronize((gpsStream_t)&a));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamDestroy(s));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamDestroy(NULL));
}

struct cover_args {
	int *hits;		/* conventional memory */
	int bad;		/* coordinate errors seen */
};

static void cover(void *p)
{
	struct cover_args *a = *(struct cover_args **)p;
	gpsDim3 t = gpsThreadIdx(), b = gpsBlockIdx();
	gpsDim3 bd = gpsBlockDim(), gd = gpsGridDim();
	unsigned int block = b.x + gd.x * (b.y + gd.y * b.z);
	unsigned int thread = t.x + bd.x * (t.y + bd.y * t.z);
	int dev = -1;

	if (bd.x != 4 || bd.y != 2 || bd.z != 2 || gd.x != 3 || gd.y != 2 ||
	    gd.z != 2 || gpsGetDevice(&dev) || dev != 1)
		__atomic_fetch_add(&a->bad, 1, __ATOMIC_RELAXED);
	gpsAtomicAddSystem(&a->hits[block * 16 + thread], 1);
}

/* Every thread of every block runs once, on the launching device. */
TEST_F(launch, coverage)
{
	struct cover_args a = { NULL, 0 };
	struct cover_args *out;
	int i;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&a.hits, 12 * 16 *
					sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMemset(a.hits, 0, 12 * 16 * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&out, sizeof(*out)));
	*out = a;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(cover, gpsDim(3, 2, 2),
				gpsDim(4, 2, 2), GPS_ARGS_RAW(&out), NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (i = 0; i < 12 * 16; i++)
		ASSERT_EQ(1, out->hits[i]);
	ASSERT_EQ(0, out->bad);
	/* the end of the kernel released device 1 */
	ASSERT_LE(1, mock_fences[1]);
	ASSERT_EQ(0, gpsThreadIdx().x);
	ASSERT_EQ(gpsSuccess, gpsFree(a.hits));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(out));
}

struct xl_args {
	char *listed;
	char *unlisted;
	long n;
	char *scanned;
	void **seen;		/* host memory: 4 slots */
};

static void xl_kernel(void *p)
{
	struct xl_args *a = p;

	a->seen[0] = a->listed;
	a->seen[1] = a->unlisted;
	a->seen[2] = a->scanned;
	a->seen[3] = gpsDevicePtr(a->unlisted);
}

/* Listed pointers become the device's view; others stay, all work. */
TEST_F(launch, translation)
{
	struct xl_args a;
	unsigned long hosts0;
	char *g;
	void **seen;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&seen, 4 * sizeof(void *)));
	a.listed = g + 1;
	a.unlisted = g + 2;
	a.n = 5;
	a.scanned = g + 3;
	a.seen = seen;
	/* handed out: the host view, no device's */
	ASSERT_NE((void *)g, gpsDevicePtr(g));
	hosts0 = mock_host_fences;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(xl_kernel, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct xl_args, listed)), NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	/* host fences before the kernel (host stores) and after it
	 * (stores through untranslated pointers) */
	ASSERT_LE(hosts0 + 2, mock_host_fences);
	ASSERT_EQ(gpsDevicePtr(g + 1), seen[0]);
	ASSERT_NE((void *)(g + 1), seen[0]);
	ASSERT_EQ((void *)(g + 2), seen[1]);
	ASSERT_EQ((void *)(g + 3), seen[2]);
	ASSERT_EQ(gpsDevicePtr(g + 2), seen[3]);
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(xl_kernel, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1), GPS_ARGS_SCAN(&a), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsDevicePtr(g + 1), seen[0]);
	ASSERT_EQ(gpsDevicePtr(g + 2), seen[1]);
	ASSERT_EQ(gpsDevicePtr(g + 3), seen[2]);
	/* the host pointer (host view) reads the same bytes */
	g[2] = 9;
	ASSERT_EQ(9, *(char *)seen[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(seen));
}

static void sleepy(void *p)
{
	(void)p;
	usleep(20000);
}

static void set_flag(void *p)
{
	int *flag = *(int **)p;

	*flag = 1;
}

/* Stream order, query, events, elapsed time, cross-stream waits. */
/* gpsEventCreateWithFlags: CUDA's flags; an event without timing orders
 * and waits as any other but cannot be timed; unknown flags refused. */
TEST_F(launch, event_flags)
{
	gpsEvent_t nt, t;
	float ms = -1;

	ASSERT_EQ(gpsErrorInvalidValue, gpsEventCreateWithFlags(&nt, 0x100));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsEventCreateWithFlags(NULL, gpsEventDefault));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsEventCreateWithFlags(&nt, gpsEventInterprocess |
					  gpsEventDisableTiming));
	ASSERT_EQ(gpsSuccess, gpsEventCreateWithFlags(&nt,
				gpsEventDisableTiming | gpsEventBlockingSync));
	ASSERT_EQ(gpsSuccess, gpsEventCreateWithFlags(&t, gpsEventDefault));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(t, NULL));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(nop, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(nt, NULL));
	ASSERT_EQ(gpsSuccess, gpsEventSynchronize(nt));
	ASSERT_EQ(gpsSuccess, gpsEventQuery(nt));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsEventElapsedTime(&ms, t, nt));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsEventElapsedTime(&ms, nt, t));
	ASSERT_EQ(gpsSuccess, gpsEventElapsedTime(&ms, t, t));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(nt));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(t));
	(void)gpsGetLastError();
}

TEST_F(launch, streams_and_events)
{
	gpsStream_t s1, s2;
	gpsEvent_t e0, e1, never;
	int *flag, copy = 0;
	float ms = -1;

	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s2));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e0));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e1));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&never));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&flag, sizeof(int)));
	*flag = 0;
	ASSERT_EQ(gpsSuccess, gpsEventQuery(never));	/* nothing recorded */
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsEventElapsedTime(&ms, never, never));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e0, s1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(sleepy, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, s1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(set_flag, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), GPS_ARGS_RAW(&flag), s1));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e1, s1));
	/* s2 copies the flag only after e1 */
	ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s2, e1, 0));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(&copy, flag, sizeof(int),
					     gpsMemcpyDefault, s2));
	ASSERT_EQ(gpsErrorNotReady, gpsStreamQuery(s1));
	ASSERT_EQ(gpsErrorNotReady, gpsEventQuery(e1));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s2));
	ASSERT_EQ(1, copy);
	ASSERT_EQ(gpsSuccess, gpsEventSynchronize(e1));
	ASSERT_EQ(gpsSuccess, gpsEventQuery(e1));
	ASSERT_EQ(gpsSuccess, gpsStreamQuery(s1));
	ASSERT_EQ(gpsSuccess, gpsEventElapsedTime(&ms, e0, e1));
	ASSERT_LE(19.0, ms);
	ASSERT_GT(5000.0, ms);
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsEventRecord((gpsEvent_t)&ms, s1));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e0));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsEventDestroy(e0));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsEventQuery(e0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e1));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(never));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s2));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(flag));
}

/* A failed release is reported once, at the next synchronize. */
TEST_F(launch, async_error)
{
	mock_fence_fail = 1;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(nop, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsStreamSynchronize(NULL));
	mock_fence_fail = 0;
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	mock_fence_fail = 1;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(nop, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, NULL));
	while (gpsStreamQuery(NULL) == gpsErrorNotReady)
		usleep(1000);
	mock_fence_fail = 0;
	/* the launch itself succeeded; the device synchronize reports */
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
}

struct bar_args {
	gpsBarrier_t b;
	int *count;		/* conventional */
	int *after;		/* host: value of count seen after */
};

static void bar_kernel(void *p)
{
	struct bar_args *a = p;
	int dev;

	gpsGetDevice(&dev);
	gpsAtomicAddSystem(a->count, 1);
	if (gpsBarrierWait(a->b))
		a->after[dev] = -1;
	else
		a->after[dev] = gpsAtomicLoadSystem(a->count);
}

/* Kernels on two devices meet at a system-wide barrier. */
TEST_F(launch, barrier)
{
	struct bar_args a;
	gpsStream_t s[2];
	int d;

	ASSERT_EQ(gpsSuccess, gpsBarrierCreate(&a.b, 2));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&a.count, sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.after,
					    2 * sizeof(int)));
	*a.count = 0;
	for (d = 0; d < 2; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(bar_kernel,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS_RAW(&a), s[d]));
	}
	for (d = 0; d < 2; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(2, a.after[d]);
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsBarrierWait((gpsBarrier_t)&a));
	ASSERT_EQ(gpsSuccess, gpsBarrierDestroy(a.b));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsBarrierDestroy(a.b));
	ASSERT_EQ(gpsSuccess, gpsFree(a.count));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.after));
}

static void waits_inside(void *p)
{
	int *res = *(int **)p;
	int x;

	res[0] = gpsDeviceSynchronize();
	res[1] = gpsStreamSynchronize(NULL);
	res[2] = gpsMemset(res + 8, 0, 4);
	res[3] = gpsLaunchKernel(nop, gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL,
				 NULL);
	res[4] = gpsFree(res);
	res[5] = gpsMemcpy(&x, res, sizeof(x), gpsMemcpyDefault);
	res[6] = gpsThreadFenceSystem();
}

/* Calls that would wait for the kernel itself are refused inside one. */
TEST_F(launch, no_waiting_inside_a_kernel)
{
	int *res, i;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&res, 16 * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(waits_inside, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), GPS_ARGS_RAW(&res), NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (i = 0; i < 6; i++)
		ASSERT_EQ(gpsErrorNotSupported, res[i]);
	ASSERT_EQ(gpsSuccess, res[6]);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(res));
}

static void fence_inside(void *p)
{
	**(int **)p = gpsThreadFenceSystem();
}

/* gpsThreadFenceSystem is a system-scope release: one fence of every
 * device (GPS_FENCE_ALL), on a host thread and inside a kernel, so that
 * stores through any view (host views store into the home devices'
 * replicas) are published; a failed fence is gpsErrorLaunchFailure. */
TEST_F(launch, fence)
{
	unsigned long all, f1, calls;
	int *res;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&res, sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	all = mock_fences[MOCK_NDEV];
	f1 = mock_fences[1];
	calls = mock_fence_calls;
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_EQ(all + 1, mock_fences[MOCK_NDEV]);
	ASSERT_EQ(f1, mock_fences[1]);
	ASSERT_EQ(calls + 1, mock_fence_calls);

	*res = -1;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(fence_inside, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), GPS_ARGS_RAW(&res), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsSuccess, *res);
	ASSERT_EQ(all + 2, mock_fences[MOCK_NDEV]);

	mock_fence_fail = 1;
	EXPECT_EQ(gpsErrorLaunchFailure, gpsThreadFenceSystem());
	mock_fence_fail = 0;
	gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsFreeHost(res));
}

/* gpsBarrierWait releases as the end of a kernel does: the caller's
 * device and the host views (which untranslated pointers name) in one
 * GPS_FENCE_MASK | GPS_FENCE_HOST fence. */
TEST_F(launch, barrier_release)
{
	unsigned long f0, f1, masks, hosts;
	gpsBarrier_t b;
	char *g;

	ASSERT_EQ(gpsSuccess, gpsBarrierCreate(&b, 1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	f0 = mock_fences[0];
	f1 = mock_fences[1];
	masks = mock_fence_masks;
	hosts = mock_host_fences;
	ASSERT_EQ(gpsSuccess, gpsBarrierWait(b));
	ASSERT_EQ(masks + 1, mock_fence_masks);
	ASSERT_EQ(hosts + 1, mock_host_fences);
	ASSERT_EQ(f0, mock_fences[0]);
	ASSERT_EQ(f1 + 1, mock_fences[1]);

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsBarrierWait(b));
	ASSERT_EQ(masks + 2, mock_fence_masks);
	ASSERT_EQ(hosts + 2, mock_host_fences);
	ASSERT_EQ(f0, mock_fences[0]);
	ASSERT_EQ(f1 + 2, mock_fences[1]);

	mock_fence_fail = 1;
	EXPECT_EQ(gpsErrorLaunchFailure, gpsBarrierWait(b));
	mock_fence_fail = 0;
	gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsBarrierDestroy(b));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsBarrierWait(b));
}

/* One kernel on device 1 with GPS memory homed on device 0, then a device
 * synchronize: a host fence before the kernel (host stores), then the
 * release after the kernel and the synchronize each fence device 1 and
 * the host views in one call; device 0 is never fenced.  Without GPS
 * memory no host fence precedes a launch. */
TEST_F(launch, fence_mask)
{
	unsigned long f0, f1, calls, masks, hosts;
	char *g;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	f0 = mock_fences[0];
	f1 = mock_fences[1];
	calls = mock_fence_calls;
	masks = mock_fence_masks;
	hosts = mock_host_fences;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(nop, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(masks + 3, mock_fence_masks);
	ASSERT_EQ(hosts + 3, mock_host_fences);
	ASSERT_EQ(calls + 3, mock_fence_calls);
	ASSERT_EQ(f0, mock_fences[0]);
	ASSERT_EQ(f1 + 2, mock_fences[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(nop, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(calls + 5, mock_fence_calls);
	ASSERT_EQ(hosts + 5, mock_host_fences);
	ASSERT_EQ(f0, mock_fences[0]);
	ASSERT_EQ(f1 + 4, mock_fences[1]);
}

TEST_HARNESS_MAIN
