// SPDX-License-Identifier: MIT
/*
 * Description: the memory model's promises as a program ported from CUDA
 * exercises them, written from the contract (SPEC.md "Semantics",
 * Documentation/memory-model.rst, library.rst, the man pages) before the
 * code that keeps them was read.  Every kind of release publishes (kernel
 * end, stream, device and event synchronization, event queries, waits
 * across devices, fences inside kernels, the barrier, host stores through
 * the host view and through device views, non-subscriber writers);
 * disjoint bytes, 2- and 4-byte fields of one block and one word survive;
 * racing stores converge; one device's stores reach a receiver in order
 * and whole while fences run; copies and sets at odd offsets and lengths
 * across small and GPS pages, GPS to GPS, ordered after kernels of the
 * current device, over pending stores, racing with kernels; gpsFree waits
 * for work in flight and leaves nothing behind for the next allocation;
 * many small and odd-sized allocations; error paths return their codes
 * and lose nothing.  Each test runs in tens of milliseconds.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define MAXDEV	64

static long long t_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void t_busy(long long ns)
{
	long long end = t_ns() + ns;

	while (t_ns() < end)
		;
}

/* Waits up to 5 s for *flag >= want; 0 or -1. */
static int t_wait_flag(atomic_int *flag, int want)
{
	long long end = t_ns() + 5000000000LL;

	while (atomic_load(flag) < want) {
		if (t_ns() > end)
			return -1;
		usleep(20);
	}
	return 0;
}

/* First byte of device d's view of [p, p + n) that differs from want[],
 * -1 if none, -2 if the device cannot be set. */
static long t_view_diff(int d, const void *p, const void *want, size_t n)
{
	const unsigned char *v, *w = want;
	size_t i;

	if (gpsSetDevice(d) != gpsSuccess)
		return -2;
	v = gpsDevicePtr(p);
	if (!memcmp(v, w, n))
		return -1;
	for (i = 0; i < n; i++)
		if (__atomic_load_n(&v[i], __ATOMIC_RELAXED) != w[i])
			return (long)i;
	return -1;
}

static int t_view_byte(int d, const void *p, long at)
{
	if (at < 0 || gpsSetDevice(d) != gpsSuccess)
		return -1;
	return ((const unsigned char *)gpsDevicePtr(p))[at];
}

/* Every device's view of [p, p + n) holds want[0, n); the current
 * device is kept. */
#define ASSERT_VIEWS(ndev, p, want, n)					\
	do {								\
		int d_, cur_;						\
		long at_;						\
		ASSERT_EQ(gpsSuccess, gpsGetDevice(&cur_));		\
		for (d_ = 0; d_ < (ndev); d_++) {			\
			at_ = t_view_diff(d_, (p), (want), (n));	\
			ASSERT_EQ(-1, at_)				\
			TH_LOG("device %d's view, byte %ld: %#x, want %#x", \
			       d_, at_, t_view_byte(d_, (p), at_),	\
			       at_ >= 0 ? ((const unsigned char *)	\
					   (want))[at_] : 0);		\
		}							\
		ASSERT_EQ(gpsSuccess, gpsSetDevice(cur_));		\
	} while (0)

/* Every device's view of [p, p + n) holds what device 0's holds; that
 * copy is left in out[0, n). */
#define ASSERT_VIEWS_AGREE(ndev, p, out, n)				\
	do {								\
		int cur_;						\
		ASSERT_EQ(gpsSuccess, gpsGetDevice(&cur_));		\
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));			\
		memcpy((out), gpsDevicePtr(p), (n));			\
		ASSERT_EQ(gpsSuccess, gpsSetDevice(cur_));		\
		ASSERT_VIEWS(ndev, p, out, n);				\
	} while (0)

/* ------------------------------------------------------------------ */
/* Kernels                                                             */
/* ------------------------------------------------------------------ */

struct put_args {
	unsigned char *p;	/* GPS: translated, or raw */
	size_t off, len;
	int val;
	int reps;		/* memset the range this many times (>= 1) */
	long long delay_ns;	/* busy first, so that the caller goes on */
	atomic_int *started;	/* host memory, or NULL */
	atomic_int *done;	/* host memory, or NULL */
};

/* one thread: [off, off + len) = val, reps times, after a delay */
static void k_put(void *arg)
{
	const struct put_args *a = arg;
	int r;

	if (a->started)
		atomic_store(a->started, 1);
	if (a->delay_ns)
		t_busy(a->delay_ns);
	for (r = 0; r < (a->reps ? a->reps : 1); r++)
		memset(a->p + a->off, a->val, a->len);
	if (a->done)
		atomic_store(a->done, 1);
}

static gpsError_t t_put(void *p, size_t off, size_t len, int val,
			long long delay, atomic_int *done, int raw,
			gpsStream_t s)
{
	struct put_args a = { p, off, len, val, 1, delay, NULL, done };

	if (raw)
		return gpsLaunchKernel(k_put, gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				       GPS_ARGS_RAW(&a), s);
	return gpsLaunchKernel(k_put, gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			       GPS_ARGS(&a, GPS_PTR(struct put_args, p)), s);
}

static void k_nothing(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------------ */
/* Every kind of release publishes                                     */
/* ------------------------------------------------------------------ */

/* Kernel end, then stream sync / device sync (every stream of the device)
 * / event sync / event query / a sync from another current device: the
 * kernel's stores, translated or through the host view, in every replica. */
TEST(kernel_releases_publish)
{
	unsigned char want[4096], *p;
	gpsStream_t s, s2;
	gpsEvent_t ev;
	int ndev, home, w, n;
	gpsError_t e;
	long long end;

	T_CONTRACT_DEVICES(ndev, 2);
	home = ndev > 2 ? 2 : 0;	/* neither device 0 nor the writer */
	w = 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(home));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s2));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&ev));

	/* a created stream, gpsStreamSynchronize */
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 16, 0xa1, 0, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	memset(want, 0xa1, 16);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* the default stream, gpsDeviceSynchronize */
	ASSERT_EQ(gpsSuccess, t_put(p, 16, 16, 0xa2, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memset(want + 16, 0xa2, 16);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* two created streams and the default one, one device synchronize */
	ASSERT_EQ(gpsSuccess, t_put(p, 32, 8, 0xa3, 2000000, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, t_put(p, 40, 8, 0xa4, 2000000, NULL, 0, s2));
	ASSERT_EQ(gpsSuccess, t_put(p, 48, 8, 0xa5, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memset(want + 32, 0xa3, 8);
	memset(want + 40, 0xa4, 8);
	memset(want + 48, 0xa5, 8);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* an event, synchronized by a host thread on another device */
	ASSERT_EQ(gpsSuccess, t_put(p, 64, 64, 0xa6, 1000000, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(ev, s));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsEventSynchronize(ev));
	memset(want + 64, 0xa6, 64);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* an event polled with gpsEventQuery */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, t_put(p, 128, 3, 0xa7, 1000000, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(ev, s));
	end = t_ns() + 5000000000LL;
	while ((e = gpsEventQuery(ev)) == gpsErrorNotReady && t_ns() < end)
		usleep(50);
	ASSERT_EQ(gpsSuccess, e);
	memset(want + 128, 0xa7, 3);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* gpsStreamQuery polled until idle */
	ASSERT_EQ(gpsSuccess, t_put(p, 131, 5, 0xa8, 1000000, NULL, 0, s));
	end = t_ns() + 5000000000LL;
	while ((e = gpsStreamQuery(s)) == gpsErrorNotReady && t_ns() < end)
		usleep(50);
	ASSERT_EQ(gpsSuccess, e);
	memset(want + 131, 0xa8, 5);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* a store through the host view (untranslated) of another home */
	ASSERT_EQ(gpsSuccess, t_put(p, 200, 100, 0xa9, 0, NULL, 1, s));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	memset(want + 200, 0xa9, 100);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* every device in turn, translated, each synchronized alone */
	for (n = 0; n < ndev; n++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(n));
		ASSERT_EQ(gpsSuccess, t_put(p, 1000 + n, 1, 0xb0 + n, 0,
					    NULL, 0, NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		want[1000 + n] = (unsigned char)(0xb0 + n);
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}

	/* gpsStreamDestroy right after the launch: the queued work,
	 * its release included, has run when it returns */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, t_put(p, 3000, 50, 0xaa, 1000000, NULL, 0,
				    s2));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s2));
	memset(want + 3000, 0xaa, 50);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	ASSERT_EQ(gpsSuccess, gpsEventDestroy(ev));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Host stores, through a device's view or the host view (of a home
 * that is not the current device), published by gpsDeviceSynchronize and
 * by gpsThreadFenceSystem; a third device's view by the system fence. */
TEST(host_releases_publish)
{
	unsigned char want[4096], *p, *v;
	int ndev, home;

	T_CONTRACT_DEVICES(ndev, 2);
	home = ndev - 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(home));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));

	/* device 0's view, gpsDeviceSynchronize on device 0 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	v = gpsDevicePtr(p);
	memset(v, 0xc1, 8);
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memset(want, 0xc1, 8);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* the host view, gpsDeviceSynchronize of a device that is not the
	 * home: it fences the home devices of live GPS allocations */
	memset(p + 8, 0xc2, 8);
	ASSERT_EQ(0xc2, p[8]);		/* reads its own write */
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memset(want + 8, 0xc2, 8);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* device 0's view, system fence */
	memset(v + 16, 0xc3, 8);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	memset(want + 16, 0xc3, 8);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* the host view, system fence */
	memset(p + 24, 0xc4, 8);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	memset(want + 24, 0xc4, 8);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* another device's view from a host thread whose device is 0 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	memset(v + 4000, 0xc5, 96);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	memset(want + 4000, 0xc5, 96);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* every device's view in turn, each its own device synchronize */
	for (home = 0; home < ndev; home++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(home));
		v = gpsDevicePtr(p);
		v[2000 + home] = (unsigned char)(0xd0 + home);
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		want[2000 + home] = (unsigned char)(0xd0 + home);
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

static void k_peek_any(void *arg)
{
	const struct { const unsigned char *p; unsigned char *out; } *a = arg;

	*a->out = *(volatile const unsigned char *)a->p;
}

/* A writer that does not subscribe (kernel, and host thread through its
 * view) is published to every subscriber by its own release; so are
 * host-view stores of a home that does not subscribe. */
TEST(nonsubscriber_writer_published)
{
	unsigned char want[4096], *p, *v;
	unsigned long long m[1];
	size_t np;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 3);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want),
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, sizeof(want),
					   gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, sizeof(want), m, 1,
						   &np));
	ASSERT_EQ(3ULL, m[0]);
	memset(want, 0, sizeof(want));

	/* a kernel of device 2, translated pointer */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 32, 0xe1, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	memset(want, 0xe1, 32);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* a host thread through device 2's view, device 2's synchronize */
	v = gpsDevicePtr(p);
	memset(v + 32, 0xe2, 32);
	ASSERT_EQ(0xe2, v[40]);		/* reads its own write */
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memset(want + 32, 0xe2, 32);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* a kernel of the last device (a non-subscriber too) and of
	 * device 2 on disjoint bytes of one word */
	ASSERT_EQ(gpsSuccess, t_put(p, 64, 1, 0xe3, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, t_put(p, 65, 1, 0xe4, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	want[64] = 0xe3;
	want[65] = 0xe4;
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	/* publication changes no subscription */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, sizeof(want), m, 1,
						   &np));
	ASSERT_EQ(3ULL, m[0]);

	/* the home (0) no longer subscribes: host stores through the host
	 * view reach a kernel of device 2 and every replica */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, sizeof(want),
					   gpsMemAdviseGPSSubscribe, 2));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, sizeof(want),
					   gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, sizeof(want), m, 1,
						   &np));
	ASSERT_EQ(6ULL, m[0]);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	memset(p + 200, 0xe5, 5);
	memset(want + 200, 0xe5, 5);
	{
		unsigned char got = 0;
		struct { const unsigned char *p; unsigned char *out; } pa =
			{ p + 203, &got };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek_any,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&pa, 0), NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		ASSERT_EQ(0xe5, got);
	}
	/* kernels storing through the host view of that home: device 1
	 * (whose replica the host view maps) and the last device */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, t_put(p, 300, 7, 0xe6, 0, NULL, 1, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	memset(want + 300, 0xe6, 7);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, t_put(p, 310, 7, 0xe7, 0, NULL, 1, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	memset(want + 310, 0xe7, 7);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct pp_args {
	int *ctr;		/* GPS: translated or raw */
	int *seen;		/* host */
};

static void k_pingpong(void *arg)
{
	const struct pp_args *a = arg;
	int v = *(volatile int *)a->ctr;

	*a->seen = v;
	*(volatile int *)a->ctr = v + 1;
}

#define PP_ROUNDS 15

/* Events across devices: each kernel waits (gpsStreamWaitEvent) for the
 * previous device's record and sees its stores in its own replica; no
 * host synchronize until the end. */
TEST(event_chain_across_devices)
{
	gpsStream_t s[MAXDEV];
	gpsEvent_t ev[MAXDEV];
	int seen[PP_ROUNDS * 8];
	unsigned char want[4];
	struct pp_args a;
	int ndev, n, d, k, *ctr, total;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > 8 ? 8 : ndev;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&ctr, 256, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(ctr, 0, 256));
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsEventCreateWithFlags(&ev[d],
						gpsEventDisableTiming));
	}
	total = PP_ROUNDS * n;
	for (k = 0; k < total; k++) {
		d = k % n;
		seen[k] = -1;
		a.ctr = ctr;
		a.seen = &seen[k];
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		if (k)
			ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s[d],
						ev[(d + n - 1) % n], 0));
		/* odd kernels store through the host view (device 0's) */
		if (k & 1) {
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_pingpong,
					gpsDim(1, 1, 1), gpsDim(1, 1, 1),
					GPS_ARGS_RAW(&a), s[d]));
		} else {
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_pingpong,
					gpsDim(1, 1, 1), gpsDim(1, 1, 1),
					GPS_ARGS(&a, GPS_PTR(struct pp_args,
							     ctr)), s[d]));
		}
		ASSERT_EQ(gpsSuccess, gpsEventRecord(ev[d], s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsEventSynchronize(ev[(total - 1) % n]));
	for (k = 0; k < total; k++)
		ASSERT_EQ(k, seen[k]) TH_LOG("kernel %d on device %d", k,
					     k % n);
	memcpy(want, &total, sizeof(total));
	ASSERT_VIEWS(ndev, ctr, want, sizeof(want));
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
		ASSERT_EQ(gpsSuccess, gpsEventDestroy(ev[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsFree(ctr));
}

struct flag_args {
	volatile unsigned long long *data;	/* GPS, translated */
	atomic_int *flag;			/* host memory */
	unsigned long long v;
	int round;
	unsigned long long *out;		/* host */
};

static void k_flag_writer(void *arg)
{
	const struct flag_args *a = arg;

	a->data[0] = a->v;
	a->data[3] = ~a->v;
	gpsThreadFenceSystem();
	atomic_store(a->flag, a->round);
}

static void k_flag_reader(void *arg)
{
	const struct flag_args *a = arg;

	if (t_wait_flag(a->flag, a->round)) {
		a->out[0] = a->out[1] = 0xdeadULL;
		return;
	}
	a->out[0] = a->data[0];
	a->out[1] = a->data[3];
}

/* Fence inside a kernel, then a flag outside GPS memory: a kernel of
 * another device running at the same time that sees the flag reads the
 * stores in its own replica. */
TEST(fence_in_kernel_then_flag)
{
	struct flag_args a;
	unsigned long long out[2], *data;
	gpsStream_t sw, sr;
	static atomic_int flag;
	int ndev, r, wdev, rdev;

	T_CONTRACT_DEVICES(ndev, 2);
	wdev = 1;
	rdev = ndev - 1 == 1 ? 0 : ndev - 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&data, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(data, 0, 4096));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(wdev));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sw));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(rdev));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sr));
	atomic_store(&flag, 0);
	for (r = 1; r <= 3; r++) {
		a.data = data;
		a.flag = &flag;
		a.v = 0x1111111111111111ULL * (unsigned long long)r + 7;
		a.round = r;
		a.out = out;
		out[0] = out[1] = 0;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(rdev));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_flag_reader,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct flag_args, data)),
				sr));
		usleep(2000);		/* the reader waits first */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(wdev));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_flag_writer,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct flag_args, data)),
				sw));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sr));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sw));
		ASSERT_EQ(a.v, out[0]) TH_LOG("round %d", r);
		ASSERT_EQ(~a.v, out[1]) TH_LOG("round %d", r);
	}
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sr));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(wdev));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sw));
	ASSERT_EQ(gpsSuccess, gpsFree(data));
}

#define BAR_ROUNDS 3

struct bar_args {
	unsigned short *slot;	/* GPS, translated: one 64-byte block */
	unsigned short *raw;	/* the same, untranslated (host view) */
	gpsBarrier_t b;
	int d, n;
	unsigned short *out;	/* host: BAR_ROUNDS * n * n */
	int *rc;		/* host: the barrier's results */
};

static void k_bar(void *arg)
{
	const struct bar_args *a = arg;
	int r, e;

	for (r = 0; r < BAR_ROUNDS; r++) {
		unsigned short v = (unsigned short)(0x100 * (r + 1) + a->d);

		/* even rounds translated, odd rounds the host view */
		if (r & 1)
			((volatile unsigned short *)a->raw)[a->d] = v;
		else
			((volatile unsigned short *)a->slot)[a->d] = v;
		a->rc[2 * r] = gpsBarrierWait(a->b);
		for (e = 0; e < a->n; e++)
			a->out[(r * a->n + a->d) * a->n + e] =
				((volatile unsigned short *)a->slot)[e];
		a->rc[2 * r + 1] = gpsBarrierWait(a->b);
	}
}

/* gpsBarrierWait releases: each device's 2-byte field of one block,
 * stored before the barrier through its view or the host view, is in
 * every participant's replica after it, round after round. */
TEST(barrier_rounds_publish_fields)
{
	struct bar_args a[MAXDEV];
	gpsStream_t s[MAXDEV];
	unsigned short *slot, *out;
	int rc[MAXDEV][2 * BAR_ROUNDS];
	gpsBarrier_t b;
	int ndev, n, d, e, r;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > 32 ? 32 : ndev;
	out = calloc((size_t)BAR_ROUNDS * n * n, sizeof(*out));
	ASSERT_NE(NULL, out);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&slot, 64, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(slot, 0, 64));
	ASSERT_EQ(gpsSuccess, gpsBarrierCreate(&b, (unsigned int)n));
	for (d = 0; d < n; d++) {
		a[d] = (struct bar_args){ slot, slot, b, d, n, out, rc[d] };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_bar, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&a[d], GPS_PTR(struct bar_args, slot)),
				s[d]));
	}
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	for (d = 0; d < n; d++)
		for (r = 0; r < 2 * BAR_ROUNDS; r++)
			ASSERT_EQ(gpsSuccess, rc[d][r]);
	for (r = 0; r < BAR_ROUNDS; r++)
		for (d = 0; d < n; d++)
			for (e = 0; e < n; e++)
				ASSERT_EQ(0x100 * (r + 1) + e,
					  out[(r * n + d) * n + e])
				TH_LOG("round %d, device %d reading %d", r, d,
				       e);
	ASSERT_EQ(gpsSuccess, gpsBarrierDestroy(b));
	ASSERT_EQ(gpsSuccess, gpsFree(slot));
	free(out);
}

struct third_args {
	unsigned char *p;	/* raw: a third device's view */
	int fence;
};

static void k_third(void *arg)
{
	const struct third_args *a = arg;

	memset(a->p, 0xf1 + a->fence, 16);
	if (a->fence)
		gpsThreadFenceSystem();
}

/* A kernel storing through a third device's view (gpsDevicePtr on it,
 * passed raw): published by gpsThreadFenceSystem inside the kernel, or by
 * one on the host after the kernel. */
TEST(third_view_needs_system_fence)
{
	unsigned char want[256], *p, *v2;
	struct third_args a;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 3);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	v2 = gpsDevicePtr(p);
	ASSERT_NE(p, v2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	a.p = v2;
	a.fence = 1;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_third, gpsDim(1, 1, 1),
					      gpsDim(1, 1, 1),
					      GPS_ARGS_RAW(&a), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	memset(want, 0xf2, 16);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	a.p = v2 + 100;
	a.fence = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_third, gpsDim(1, 1, 1),
					      gpsDim(1, 1, 1),
					      GPS_ARGS_RAW(&a), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	memset(want + 100, 0xf1, 16);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct bytes_args {
	unsigned char *p;	/* GPS, translated */
	unsigned int n;
	unsigned char salt;
};

static void k_bytes(void *arg)
{
	const struct bytes_args *a = arg;
	unsigned int i = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	if (i < a->n)
		a->p[i] = (unsigned char)(i * 7 + a->salt);
}

GPS_KERNEL(k_bytes_fast, struct bytes_args, a)
{
	unsigned int i = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	if (i < a->n)
		a->p[i] = (unsigned char)(i * 13 + a->salt);
}

/* Every thread of a many-block kernel stores its own byte (unaligned,
 * across a small page): all of them in every replica at the kernel end. */
TEST(many_threads_one_device)
{
	unsigned char want[8192 + 3], *p;
	struct bytes_args a;
	unsigned int i, n = 5000;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	a.p = p + 3;
	a.n = n;
	a.salt = 5;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_bytes, gpsDim(40, 1, 1),
			gpsDim(128, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct bytes_args, p)), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	for (i = 0; i < n; i++)
		want[3 + i] = (unsigned char)(i * 7 + 5);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	a.p = p + 1001;
	a.n = 7000;
	a.salt = 9;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsLaunch(&k_bytes_fast, gpsDim(28, 1, 1),
			gpsDim(256, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct bytes_args, p)), 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (i = 0; i < 7000; i++)
		want[1001 + i] = (unsigned char)(i * 13 + 9);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct hthr {
	unsigned char *p;
	int d;
	gpsError_t rc;
};

static void *host_writer(void *arg)
{
	struct hthr *h = arg;
	unsigned char *v;

	h->rc = gpsSetDevice(h->d);
	if (h->rc)
		return NULL;
	v = gpsDevicePtr(h->p);
	v[h->d] = (unsigned char)(0x40 + h->d);
	((unsigned short *)(v + 64))[h->d] = (unsigned short)(0x4000 + h->d);
	h->rc = gpsDeviceSynchronize();
	return NULL;
}

/* Host threads, each on its own device, storing disjoint bytes of one
 * block through their views at the same time: each device synchronize
 * publishes its thread's bytes, none is lost. */
TEST(host_threads_each_own_device)
{
	pthread_t t[MAXDEV];
	struct hthr h[MAXDEV];
	unsigned char want[256], *p;
	int ndev, n, d;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > 32 ? 32 : ndev;
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	for (d = 0; d < n; d++) {
		h[d] = (struct hthr){ p, d, gpsErrorUnknown };
		ASSERT_EQ(0, pthread_create(&t[d], NULL, host_writer, &h[d]));
	}
	for (d = 0; d < n; d++) {
		ASSERT_EQ(0, pthread_join(t[d], NULL));
		ASSERT_EQ(gpsSuccess, h[d].rc);
		want[d] = (unsigned char)(0x40 + d);
		want[64 + 2 * d] = (unsigned char)d;
		want[64 + 2 * d + 1] = 0x40;
	}
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* ------------------------------------------------------------------ */
/* Byte masks, races, program order                                    */
/* ------------------------------------------------------------------ */

struct fields_args {
	unsigned char *blk;	/* GPS, translated: one 64-byte block */
	int d, nw, r;
};

static unsigned char f8(int r, int j)
{
	return (unsigned char)(0x11 * (r % 15 + 1) + j);
}

static unsigned short f16(int r, int j)
{
	return (unsigned short)(0x1000 * (r % 15 + 1) + 0x101 * j);
}

static unsigned int f32(int r, int j)
{
	return 0x01000000u * (unsigned int)(r % 200 + 1) +
	       0x10101u * (unsigned int)j;
}

/* bytes [0, 8): u8 field j; [8, 40): u16 field j; [40, 64): u32 field
 * j; field j belongs to device j % nw; a few older values first */
static void k_fields(void *arg)
{
	const struct fields_args *a = arg;
	volatile unsigned char *b8 = a->blk;
	volatile unsigned short *b16 = (void *)(a->blk + 8);
	volatile unsigned int *b32 = (void *)(a->blk + 40);
	int j, rep;

	for (rep = 2; rep >= 0; rep--) {
		for (j = a->d; j < 8; j += a->nw)
			b8[j] = f8(a->r + rep * 3, j);
		for (j = a->d; j < 16; j += a->nw)
			b16[j] = f16(a->r + rep * 3, j);
		for (j = a->d; j < 6; j += a->nw)
			b32[j] = f32(a->r + rep * 3, j);
	}
}

static void fields_want(unsigned char *w, int r)
{
	int j;

	for (j = 0; j < 8; j++)
		w[j] = f8(r, j);
	for (j = 0; j < 16; j++) {
		unsigned short v = f16(r, j);

		memcpy(w + 8 + 2 * j, &v, 2);
	}
	for (j = 0; j < 6; j++) {
		unsigned int v = f32(r, j);

		memcpy(w + 40 + 4 * j, &v, 4);
	}
}

/* Devices storing interleaved bytes, 2-byte and 4-byte fields of one
 * cache block (and of one 8-byte word) at the same time, round after
 * round: after their releases every field is in every replica. */
TEST(disjoint_fields_of_one_block)
{
	gpsStream_t s[8];
	struct fields_args a;
	unsigned char want[64], *blk;
	int ndev, nw, d, r;

	T_CONTRACT_DEVICES(ndev, 2);
	nw = ndev > 8 ? 8 : ndev;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&blk, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(blk, 0, 4096));
	for (d = 0; d < nw; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
	}
	for (r = 1; r <= 8; r++) {
		for (d = 0; d < nw; d++) {
			a = (struct fields_args){ blk + 64 * (r % 3), d, nw,
						  r };
			ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_fields,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct fields_args, blk)),
				s[d]));
		}
		for (d = 0; d < nw; d++)
			ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		fields_want(want, r);
		ASSERT_VIEWS(ndev, blk + 64 * (r % 3), want, sizeof(want));
	}
	for (d = 0; d < nw; d++)
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	ASSERT_EQ(gpsSuccess, gpsFree(blk));
}

struct loop_args {
	unsigned char *p;	/* GPS, translated */
	size_t off;
	atomic_int *started, *stop;
	unsigned char last;
};

/* stores byte off until told to stop, then `last' */
static void k_loop_byte(void *arg)
{
	const struct loop_args *a = arg;
	long long end = t_ns() + 5000000000LL;
	unsigned int i = 0;

	atomic_store(a->started, 1);
	while (!atomic_load(a->stop) && t_ns() < end) {
		__atomic_store_n(&a->p[a->off], (unsigned char)(i++ % 100 + 1),
				 __ATOMIC_RELAXED);
		if (!(i & 1023))
			sched_yield();
	}
	__atomic_store_n(&a->p[a->off], a->last, __ATOMIC_RELAXED);
}

/* A receiver storing one byte of a word while another device's bytes of
 * that word arrive (and system fences harvest it) keeps them: its own
 * publication never sends the other bytes back stale. */
TEST(received_bytes_survive_receiver_stores)
{
	static atomic_int started, stop;
	unsigned char want[64], *p;
	struct loop_args la;
	gpsStream_t sa, sb;
	int ndev, r, da = 0, db = 1;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, 4096));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(da));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sa));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(db));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sb));
	for (r = 0; r < 3; r++) {
		atomic_store(&started, 0);
		atomic_store(&stop, 0);
		la = (struct loop_args){ p, 1, &started, &stop,
					 (unsigned char)(0xe0 + r) };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(db));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_loop_byte,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&la, GPS_PTR(struct loop_args, p)),
				sb));
		ASSERT_EQ(0, t_wait_flag(&started, 1));
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		/* device A: byte 0 and bytes 2..63 of the block */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(da));
		ASSERT_EQ(gpsSuccess, t_put(p, 0, 1, 0x50 + r, 0, NULL, 0,
					    sa));
		ASSERT_EQ(gpsSuccess, t_put(p, 2, 62, 0x60 + r, 0, NULL, 0,
					    sa));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sa));
		/* published: in B's replica while B's kernel still runs */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(db));
		ASSERT_EQ(0x50 + r, ((unsigned char *)gpsDevicePtr(p))[0]);
		ASSERT_EQ(0x60 + r, ((unsigned char *)gpsDevicePtr(p))[7]);
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		usleep(1000);
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		atomic_store(&stop, 1);
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sb));
		memset(want, 0x60 + r, sizeof(want));
		want[0] = (unsigned char)(0x50 + r);
		want[1] = (unsigned char)(0xe0 + r);
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sb));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(da));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sa));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct race_args {
	unsigned char *p;	/* GPS, translated: [0] a byte, [8] a word */
	unsigned char v;
	int reps;
};

static void k_race(void *arg)
{
	const struct race_args *a = arg;
	unsigned long long w = 0x0101010101010101ULL * a->v;
	int i;

	for (i = 0; i < a->reps; i++) {
		__atomic_store_n(&a->p[0], a->v, __ATOMIC_RELAXED);
		__atomic_store_n((unsigned long long *)(a->p + 8), w,
				 __ATOMIC_RELAXED);
		memcpy(a->p + 17, &w, 4);	/* unaligned */
	}
}

/* Racing stores of every device to the same byte and word: after the
 * release of every writer all replicas hold the same value, one of those
 * stored. */
TEST(racing_stores_converge)
{
	gpsStream_t s[MAXDEV];
	unsigned char got[32], *p;
	struct race_args a;
	int ndev, n, d, r, i, mixed = 0;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > 15 ? 15 : ndev;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, 4096));
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
	}
	for (r = 0; r < 8; r++) {
		for (d = 0; d < n; d++) {
			a = (struct race_args){ p + 64 * (r % 4),
				(unsigned char)(0x10 * (d + 1) + r % 16),
				50 };
			ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_race,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct race_args, p)),
				s[d]));
		}
		for (d = 0; d < n; d++)
			ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_VIEWS_AGREE(ndev, p + 64 * (r % 4), got, sizeof(got));
		for (i = 0; i < 21; i++) {
			if ((i > 0 && i < 8) || i == 16)
				continue;
			ASSERT_EQ(r % 16, got[i] & 0xf) TH_LOG("byte %d", i);
			ASSERT_LE(1, got[i] >> 4);
			ASSERT_GE(n, got[i] >> 4);
			if (i > 8 && i < 16 && got[i] != got[8])
				mixed++;
		}
	}
	if (mixed)
		TH_LOG("%d bytes of racing 8-byte words came from another "
		       "device than their byte 0", mixed);
	for (d = 0; d < n; d++)
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct ctr_args {
	unsigned long long *x;	/* GPS, translated */
	atomic_ullong *progress;
	atomic_int *started, *stop;
	unsigned long long *last;
};

/* x = i << 32 | i for i = 1, 2, ... until told to stop */
static void k_counter(void *arg)
{
	const struct ctr_args *a = arg;
	long long end = t_ns() + 5000000000LL;
	unsigned long long i = 0;

	atomic_store(a->started, 1);
	while (!atomic_load_explicit(a->stop, memory_order_relaxed) &&
	       t_ns() < end) {
		i++;
		__atomic_store_n(a->x, i << 32 | i, __ATOMIC_RELAXED);
		atomic_store_explicit(a->progress, i, memory_order_release);
		if (!(i & 4095))
			sched_yield();
	}
	*a->last = i;
}

/* One device's stores to one word while system fences run: each fence
 * publishes at least the value stored before it started, every receiver
 * sees the values whole and never going backwards, the last one after
 * the kernel's end. */
TEST(program_order_under_fences)
{
	static atomic_ullong progress;
	static atomic_int started, stop;
	unsigned long long prev[MAXDEV] = { 0 }, *x, last = 0, *vx[MAXDEV];
	unsigned char want[8];
	struct ctr_args a;
	int ndev, n, d, it, w = 1;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > MAXDEV ? MAXDEV : ndev;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&x, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(x, 0, 4096));
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		vx[d] = gpsDevicePtr(x);
	}
	a = (struct ctr_args){ x, &progress, &started, &stop, &last };
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_counter, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct ctr_args, x)), NULL));
	ASSERT_EQ(0, t_wait_flag(&started, 1));
	for (it = 0; it < 60; it++) {
		unsigned long long pr = atomic_load_explicit(&progress,
						memory_order_acquire);

		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		for (d = 0; d < n; d++) {
			unsigned long long v;

			if (d == w)
				continue;
			v = __atomic_load_n(vx[d], __ATOMIC_RELAXED);
			ASSERT_EQ(v >> 32, v & 0xffffffffULL)
			TH_LOG("device %d holds a torn %#llx", d, v);
			ASSERT_LE(pr, v & 0xffffffffULL)
			TH_LOG("fence %d: device %d holds %llu, %llu was "
			       "stored before the fence", it, d,
			       v & 0xffffffffULL, pr);
			ASSERT_LE(prev[d], v)
			TH_LOG("device %d went back", d);
			prev[d] = v;
		}
	}
	atomic_store(&stop, 1);
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_LT(0ULL, last);
	last = last << 32 | last;
	memcpy(want, &last, 8);
	ASSERT_VIEWS(ndev, x, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(x));
}

struct page_args {
	unsigned long long *x;	/* GPS, translated: words [lo, hi) */
	int lo, hi;
	atomic_ullong *progress;
	atomic_int *started, *stop;
	unsigned long long *last;
};

/* every word of [lo, hi) = i << 32 | i, for i = 1, 2, ... */
static void k_page_counter(void *arg)
{
	const struct page_args *a = arg;
	long long end = t_ns() + 5000000000LL;
	unsigned long long i = 0;
	int j;

	atomic_fetch_add(a->started, 1);
	while (!atomic_load_explicit(a->stop, memory_order_relaxed) &&
	       t_ns() < end) {
		i++;
		for (j = a->lo; j < a->hi; j++)
			__atomic_store_n(&a->x[j], i << 32 | i,
					 __ATOMIC_RELAXED);
		atomic_store_explicit(a->progress, i, memory_order_release);
		if (!(i & 63))
			sched_yield();
	}
	*a->last = i;
}

/* Two devices storing every word of their halves of one 4 KiB GPS page
 * (every block dirty at each fence) while system fences run: every
 * receiver's words whole, never going backwards, at least what was
 * stored before each fence; the last values everywhere after the end. */
TEST(program_order_whole_page_two_writers)
{
	static atomic_ullong progress[2];
	static atomic_int started, stop;
	unsigned long long *prev, *x, last[2] = { 0, 0 }, *vx[MAXDEV];
	unsigned long long want[512];
	struct page_args a[2];
	gpsStream_t s[2];
	int ndev, n, nw, d, w, it, j, wdev[2] = { 1, 2 };

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > MAXDEV ? MAXDEV : ndev;
	nw = ndev > 2 ? 2 : 1;
	prev = calloc((size_t)n * 512, sizeof(*prev));
	ASSERT_NE(NULL, prev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&x, 4096,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(x, 0, 4096));
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		vx[d] = gpsDevicePtr(x);
	}
	atomic_store(&started, 0);
	atomic_store(&stop, 0);
	for (w = 0; w < nw; w++) {
		a[w] = (struct page_args){ x, w * 512 / nw, (w + 1) * 512 / nw,
					   &progress[w], &started, &stop,
					   &last[w] };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(wdev[w]));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[w]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_page_counter,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a[w], GPS_PTR(struct page_args, x)),
				s[w]));
	}
	ASSERT_EQ(0, t_wait_flag(&started, nw));
	for (it = 0; it < 40; it++) {
		unsigned long long pr[2];

		for (w = 0; w < nw; w++)
			pr[w] = atomic_load_explicit(&progress[w],
						     memory_order_acquire);
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		for (d = 0; d < n; d++) {
			if (d == wdev[0] || (nw > 1 && d == wdev[1]))
				continue;
			for (j = 0; j < 512; j++) {
				unsigned long long v =
					__atomic_load_n(&vx[d][j],
							__ATOMIC_RELAXED);

				w = j * nw / 512;
				ASSERT_EQ(v >> 32, v & 0xffffffffULL)
				TH_LOG("device %d word %d torn: %#llx", d, j,
				       v);
				ASSERT_LE(pr[w], v & 0xffffffffULL)
				TH_LOG("fence %d: device %d word %d holds "
				       "%llu, %llu stored before the fence",
				       it, d, j, v & 0xffffffffULL, pr[w]);
				ASSERT_LE(prev[d * 512 + j], v)
				TH_LOG("device %d word %d went back", d, j);
				prev[d * 512 + j] = v;
			}
		}
	}
	atomic_store(&stop, 1);
	for (w = 0; w < nw; w++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(wdev[w]));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[w]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[w]));
		ASSERT_LT(0ULL, last[w]);
	}
	for (j = 0; j < 512; j++) {
		w = j * nw / 512;
		want[j] = last[w] << 32 | last[w];
	}
	ASSERT_VIEWS(ndev, x, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(x));
	free(prev);
}

/* A value a device stored, published, overwritten by another device, and
 * stored again by the first device (while its page stays dirty with other
 * stores) is published again: the receiver's twin took the other value. */
TEST(value_stored_again_after_another_device)
{
	unsigned char want[4096], *p, *va, *vb;
	int ndev, r, A = 0, B = 1, kern;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(A));
	va = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(B));
	vb = gpsDevicePtr(p);
	for (kern = 0; kern < 2; kern++)
		for (r = 0; r < 3; r++) {
			size_t o = (size_t)(kern * 3 + r) * 8;

			/* A stores 1 and publishes it */
			ASSERT_EQ(gpsSuccess, gpsSetDevice(A));
			if (kern) {
				ASSERT_EQ(gpsSuccess, t_put(p, o, 1, 1, 0,
							    NULL, 0, NULL));
			} else {
				va[o] = 1;
			}
			ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
			want[o] = 1;
			ASSERT_VIEWS(ndev, p, want, sizeof(want));
			/* A's page dirty again (r > 0), not published */
			if (r)
				va[2048 + o] = (unsigned char)(0x30 + r);
			/* B stores 2 and publishes it */
			ASSERT_EQ(gpsSuccess, gpsSetDevice(B));
			if (kern) {
				ASSERT_EQ(gpsSuccess, t_put(p, o, 1, 2, 0,
							    NULL, 0, NULL));
			} else {
				vb[o] = 2;
			}
			ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
			want[o] = 2;
			ASSERT_VIEWS(ndev, p, want, 2048);
			/* A stores 1 again: published again */
			ASSERT_EQ(gpsSuccess, gpsSetDevice(A));
			if (r == 2)
				va[2049 + o] = 0x41;
			if (kern) {
				ASSERT_EQ(gpsSuccess, t_put(p, o, 1, 1, 0,
							    NULL, 0, NULL));
			} else {
				va[o] = 1;
			}
			ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
			want[o] = 1;
			if (r)
				want[2048 + o] = (unsigned char)(0x30 + r);
			if (r == 2)
				want[2049 + o] = 0x41;
			ASSERT_VIEWS(ndev, p, want, sizeof(want));
		}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct nop_args {
	unsigned char *p;	/* GPS, translated, never stored */
};

/* The host view and the home device's view map one replica: stores of
 * one value through the first, another through the second, then the
 * first value again, each followed by a release that covers its view
 * (a launch elsewhere for the host view, a local-stores kernel end of the
 * home device for its view): the last value everywhere.  The same for two
 * non-subscribers whose views map one subscriber's replica. */
TEST(one_replica_two_views_value_again)
{
	unsigned char want[4096], *p, *v0, *v2, *v3;
	struct nop_args na;
	int ndev, r;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	v0 = gpsDevicePtr(p);
	ASSERT_NE(p, v0);
	na.p = p;
	for (r = 0; r < 3; r++) {
		size_t o = (size_t)r * 64;

		/* the host view: 5, published before a kernel elsewhere */
		p[o] = 5;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_nothing,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL, NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		want[o] = 5;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		/* device 0's view: 6, published by its own release alone */
		v0[o] = 6;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_nothing,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS_LOCAL(&na,
					       GPS_PTR(struct nop_args, p)),
				NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		want[o] = 6;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		/* the host view: 5 again, then a kernel elsewhere sees it */
		p[o] = 5;
		want[o] = 5;
		ASSERT_EQ(5, v0[o]);		/* one replica */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_nothing,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL, NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	if (ndev < 4)
		return;

	/* two non-subscribers (2, 3) of a page of devices 0 and 1 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want),
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, sizeof(want),
					   gpsMemAdviseGPSSubscribe, 1));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	v2 = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(3));
	v3 = gpsDevicePtr(p);
	for (r = 0; r < 3; r++) {
		size_t o = (size_t)r * 64;

		v2[o] = 7;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		want[o] = 7;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		v3[o] = 8;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(3));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		want[o] = 8;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		v2[o] = 7;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		want[o] = 7;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct fenceall_args {
	unsigned char *p;	/* GPS, translated */
	int d;
	gpsError_t *rc;		/* host: one per thread */
};

static void k_store_fence(void *arg)
{
	const struct fenceall_args *a = arg;
	unsigned int t = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	a->p[a->d * 64 + t] = (unsigned char)(a->d * 64 + t + 1);
	a->rc[t] = gpsThreadFenceSystem();
}

/* Every thread of kernels on every device calling gpsThreadFenceSystem
 * at once: no deadlock, every call succeeds, every store published. */
TEST(fences_from_every_thread_at_once)
{
	gpsError_t rc[8][16];
	struct fenceall_args a;
	gpsStream_t s[8];
	unsigned char want[512], *p;
	int ndev, n, d, t;

	T_CONTRACT_DEVICES(ndev, 2);
	n = ndev > 8 ? 8 : ndev;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	for (d = 0; d < n; d++) {
		for (t = 0; t < 16; t++)
			rc[d][t] = gpsErrorUnknown;
		a = (struct fenceall_args){ p, d, rc[d] };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_store_fence,
				gpsDim(4, 1, 1), gpsDim(4, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct fenceall_args, p)),
				s[d]));
	}
	for (d = 0; d < n; d++) {
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
		for (t = 0; t < 16; t++) {
			ASSERT_EQ(gpsSuccess, rc[d][t]);
			want[d * 64 + t] = (unsigned char)(d * 64 + t + 1);
		}
	}
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct syncer {
	unsigned char *p;
	int d, k;
	gpsError_t rc;
};

static void *host_syncer(void *arg)
{
	struct syncer *h = arg;
	int i;

	h->rc = gpsSetDevice(h->d);
	for (i = 0; i < 10 && h->rc == gpsSuccess; i++) {
		h->rc = t_put(h->p, (size_t)h->k * 16 + (size_t)i, 1,
			      0x10 * h->k + i, 0, NULL, 0, NULL);
		if (h->rc == gpsSuccess)
			h->rc = i & 1 ? gpsDeviceSynchronize() :
					gpsStreamSynchronize(NULL);
	}
	return NULL;
}

/* Host threads sharing one device launching onto its default stream and
 * synchronizing it at the same time: no hang, every kernel's stores
 * published. */
TEST(host_threads_share_a_device)
{
	pthread_t t[4];
	struct syncer h[4];
	unsigned char want[64], *p;
	int ndev, k, i;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	memset(want, 0, sizeof(want));
	for (k = 0; k < 4; k++) {
		h[k] = (struct syncer){ p, 1, k, gpsErrorUnknown };
		ASSERT_EQ(0, pthread_create(&t[k], NULL, host_syncer, &h[k]));
	}
	for (k = 0; k < 4; k++) {
		ASSERT_EQ(0, pthread_join(t[k], NULL));
		ASSERT_EQ(gpsSuccess, h[k].rc);
		for (i = 0; i < 10; i++)
			want[k * 16 + i] = (unsigned char)(0x10 * k + i);
	}
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct peek_args {
	const unsigned char *p;	/* GPS, translated */
	unsigned char *out;	/* host */
};

static void k_peek(void *arg)
{
	const struct peek_args *a = arg;

	*a->out = *(volatile const unsigned char *)a->p;
}

/* Host stores through the host view reach a kernel launched after them,
 * whichever devices are homes: the homes counted when the launch runs,
 * after allocations with new homes were made (and freed). */
TEST(host_stores_reach_kernels_as_homes_change)
{
	unsigned char *a, *b, *c, got;
	struct peek_args pa;
	int ndev, k;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(a, 0, 4096));
	/* kernels on device 0 while it is the home of everything */
	for (k = 0; k < 3; k++) {
		a[k] = (unsigned char)(k + 1);
		pa = (struct peek_args){ a + k, &got };
		got = 0;
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&pa, GPS_PTR(struct peek_args, p)),
				NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		ASSERT_EQ(k + 1, got);
	}
	/* a new home: device 1; its host view stores reach device 0 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&b, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(b, 0, 4096));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (k = 0; k < 3; k++) {
		b[k] = (unsigned char)(0x20 + k);
		pa = (struct peek_args){ b + k, &got };
		got = 0;
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&pa, GPS_PTR(struct peek_args, p)),
				NULL));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
		ASSERT_EQ(0x20 + k, got);
	}
	/* device 1's only allocation freed, another made there again */
	ASSERT_EQ(gpsSuccess, gpsFree(b));
	pa = (struct peek_args){ a, &got };
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&pa, GPS_PTR(struct peek_args, p)), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&c, 64, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(c, 0, 64));
	c[5] = 0x55;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	pa = (struct peek_args){ c + 5, &got };
	got = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&pa, GPS_PTR(struct peek_args, p)), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(0x55, got);
	ASSERT_EQ(gpsSuccess, gpsFree(c));
	ASSERT_EQ(gpsSuccess, gpsFree(a));
}

struct once_args {
	unsigned int *w;	/* GPS, translated: one 4 KiB page */
	atomic_int *started;
	long long gap_ns;
};

/* each word of [16, 1024) once, a gap between them */
static void k_words_once(void *arg)
{
	const struct once_args *a = arg;
	int j;

	atomic_store(a->started, 1);
	for (j = 16; j < 1024; j++) {
		__atomic_store_n(&a->w[j], (unsigned int)j * 3 + 1,
				 __ATOMIC_RELAXED);
		t_busy(a->gap_ns);
	}
}

struct sys_args {
	int *ctr;		/* GPS, translated: word 0 of the page */
	atomic_int *started;
	int n;
};

static void k_sys_adds(void *arg)
{
	const struct sys_args *a = arg;
	int i;

	t_wait_flag(a->started, 1);
	t_busy(1000000);
	for (i = 0; i < a->n; i++)
		gpsAtomicAddSystem(a->ctr, 1);
}

/* A system-scope atomic collapsing a GPS page while another device's
 * kernel stores, once each, to the other words of that page: no store is
 * lost (no change of subscription loses a store), the count is exact. */
TEST(collapse_during_a_kernel_loses_no_store)
{
	static atomic_int started;
	unsigned int want[1024], *w;
	unsigned long long m[1];
	struct once_args oa;
	struct sys_args sa;
	gpsStream_t s1, s2;
	size_t np;
	int ndev, j, d2;

	T_CONTRACT_DEVICES(ndev, 2);
	d2 = ndev > 2 ? 2 : 0;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&w, 4096,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(w, 0, 4096));
	memset(want, 0, sizeof(want));
	atomic_store(&started, 0);
	oa = (struct once_args){ w, &started, 5000 };
	sa = (struct sys_args){ (int *)w, &started, 100 };
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_words_once, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&oa, GPS_PTR(struct once_args, w)), s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(d2));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s2));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_sys_adds, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&sa, GPS_PTR(struct sys_args, ctr)), s2));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s2));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s1));
	want[0] = 100;
	for (j = 16; j < 1024; j++)
		want[j] = (unsigned int)j * 3 + 1;
	ASSERT_VIEWS(ndev, w, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(w, 4096, m, 1, &np));
	ASSERT_EQ(1, __builtin_popcountll(m[0]));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(d2));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s2));
	ASSERT_EQ(gpsSuccess, gpsFree(w));
}

/* ------------------------------------------------------------------ */
/* Copies and sets                                                     */
/* ------------------------------------------------------------------ */

/* memcpy, memset and read back at (off, len) of an allocation of @size
 * bytes of GPS page @ps, against a shadow copy */
static void copy_cases(struct __test_metadata *_metadata, int ndev,
		       unsigned int flags, size_t ps, size_t size)
{
	size_t cases[][2] = {
		{ 0, 1 }, { size - 1, 1 }, { 4095, 2 }, { ps - 1, 2 },
		{ ps - 3, 4103 }, { 1, size - 2 }, { size - 7, 7 },
		{ ps + 17, 1 }, { 2 * ps - 8, 16 }, { 3, 5 },
	};
	unsigned char *p, *shadow, *src, *back;
	size_t c, j;
	int d;

	shadow = calloc(1, size);
	src = malloc(size);
	back = malloc(size);
	ASSERT_NE(NULL, shadow);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, back);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, size, flags));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, size));
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t off = cases[c][0], len = cases[c][1];

		ASSERT_LE(off + len, size);
		for (j = 0; j < len; j++)
			src[j] = (unsigned char)(c * 37 + j * 13 + 1);
		ASSERT_EQ(gpsSuccess, gpsSetDevice((int)c % ndev));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(p + off, src, len,
				c & 1 ? gpsMemcpyDefault :
					gpsMemcpyHostToDevice));
		memcpy(shadow + off, src, len);
		ASSERT_VIEWS(ndev, p, shadow, size);
		/* read back from every device's view, at the same range */
		for (d = 0; d < ndev; d++) {
			ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
			memset(back, 0x5a, len);
			ASSERT_EQ(gpsSuccess, gpsMemcpy(back, p + off, len,
					gpsMemcpyDeviceToHost));
			ASSERT_EQ(0, memcmp(back, shadow + off, len))
			TH_LOG("case %zu read back on device %d", c, d);
		}
	}
	/* sets, in the other order, with values above 8 bits */
	for (c = sizeof(cases) / sizeof(cases[0]); c-- > 0;) {
		size_t off = cases[c][0], len = cases[c][1];
		int v = (int)(0x3a0 + c * 3) | (c & 1 ? -256 : 0);

		ASSERT_EQ(gpsSuccess, gpsSetDevice((int)(c + 1) % ndev));
		ASSERT_EQ(gpsSuccess, gpsMemset(p + off, v, len));
		memset(shadow + off, v & 0xff, len);
		ASSERT_VIEWS(ndev, p, shadow, size);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	free(shadow);
	free(src);
	free(back);
}

/* gpsMemcpy/gpsMemset into GPS memory at 1-byte, odd, unaligned ranges
 * across small pages and GPS pages update every replica and nothing
 * else; gpsMemcpy out of it reads the same bytes from every device. */
TEST(copy_set_unaligned_every_replica)
{
	gpsPointerAttributes at;
	void *q;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&q, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, q));
	ASSERT_EQ(gpsSuccess, gpsFree(q));
	copy_cases(_metadata, ndev, 0, at.gpsPageSize,
		   2 * at.gpsPageSize + 4096 + 5);
	copy_cases(_metadata, ndev, gpsMemGPSPage4K, 4096, 3 * 4096 + 5);
}

/* GPS to GPS copies (across allocations of other page sizes and
 * subscribers, within one allocation, from another device's view holding
 * a store not yet published) land in every replica of the destination. */
TEST(copy_gps_to_gps)
{
	static unsigned char sa[3 * 4096 + 3], sb[70000];
	unsigned char *a, *b, *v;
	size_t na = sizeof(sa), nb = sizeof(sb), i;
	int ndev, moved;

	T_CONTRACT_DEVICES(ndev, 2);
	for (i = 0; i < na; i++)
		sa[i] = (unsigned char)(i * 11 + 3);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a, na, gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(a, sa, na, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&b, nb, gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemset(b, 0, nb));
	if (ndev > 2)
		ASSERT_EQ(gpsSuccess, gpsMemAdvise(b, nb,
					gpsMemAdviseGPSSubscribe, 2));

	/* across allocations, odd offsets, crossing pages of both */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(b + 65530, a + 4093, 4100,
					gpsMemcpyDeviceToDevice));
	memcpy(sb + 65530, sa + 4093, 4100);
	ASSERT_VIEWS(ndev, b, sb, nb);
	ASSERT_VIEWS(ndev, a, sa, na);

	/* within one allocation, disjoint */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(a + 8195, a + 1, 4000,
					gpsMemcpyDefault));
	memmove(sa + 8195, sa + 1, 4000);
	ASSERT_VIEWS(ndev, a, sa, na);

	/* the source read through the current device's view, whose own
	 * store is not yet published */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v = gpsDevicePtr(a);
	v[7] = 0xee;
	sa[7] = 0xee;
	ASSERT_EQ(gpsSuccess, gpsMemcpy(b + 1, v, 16,
					gpsMemcpyDeviceToDevice));
	memcpy(sb + 1, sa, 16);
	ASSERT_VIEWS(ndev, b, sb, nb);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_VIEWS(ndev, a, sa, na);

	/* overlapping: undefined in CUDA; the replicas must still agree */
	ASSERT_EQ(gpsSuccess, gpsMemcpy(a + 1, a, 8000, gpsMemcpyDefault));
	ASSERT_VIEWS_AGREE(ndev, a, sb, na);
	memmove(sa + 1, sa, 8000);
	moved = !memcmp(sa, sb, na);
	TH_LOG("overlapping GPS to GPS copy %s memmove", moved ? "is" :
	       "is not");
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(a));
	ASSERT_EQ(gpsSuccess, gpsFree(b));
}

struct sum_args {
	const unsigned char *p;	/* GPS, translated */
	size_t n;
	unsigned long long *sum;
};

static void k_sum(void *arg)
{
	const struct sum_args *a = arg;
	unsigned long long s = 0;
	size_t i;

	for (i = 0; i < a->n; i++)
		s += a->p[i];
	*a->sum = s;
}

/* The synchronous copies and sets run after all work of the current
 * device (every stream) and see its kernels' stores; the asynchronous
 * ones run in stream order, after the kernel before them and before the
 * kernel after them. */
TEST(copies_ordered_after_kernels)
{
	unsigned char buf[4096], src[4096], want[4096], *p;
	unsigned long long sum;
	struct sum_args sa;
	gpsStream_t s;
	int ndev, D = 1;
	size_t i;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(buf), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(buf)));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(D));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));

	/* a kernel on a created stream, then gpsMemcpy to the host */
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0xab, 2000000, NULL, 0, s));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(buf, p, sizeof(buf),
					gpsMemcpyDeviceToHost));
	memset(want, 0xab, sizeof(want));
	ASSERT_EQ(0, memcmp(buf, want, sizeof(buf)));

	/* a kernel on the default stream, then gpsMemset over it */
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0xcd, 2000000, NULL, 0,
				    NULL));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x11, 4096));
	memset(want, 0x11, sizeof(want));
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* a kernel on a created stream, then gpsMemcpy from the host */
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0x22, 2000000, NULL, 1, s));
	memset(src, 0x33, sizeof(src));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(p, src, sizeof(src),
					gpsMemcpyHostToDevice));
	memset(want, 0x33, sizeof(want));
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_VIEWS(ndev, p, want, sizeof(want));

	/* kernel (through the host view), then gpsMemcpyAsync to the
	 * host, on one stream */
	ASSERT_EQ(gpsSuccess, t_put(p, 5, 4000, 0x44, 2000000, NULL, 1, s));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(buf, p, sizeof(buf),
					     gpsMemcpyDeviceToHost, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	memset(want + 5, 0x44, 4000);
	ASSERT_EQ(0, memcmp(buf, want, sizeof(buf)));

	/* gpsMemcpyAsync from the host, then a kernel reading it */
	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)i;
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0x99, 2000000, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(p, src, sizeof(src),
					     gpsMemcpyHostToDevice, s));
	sa = (struct sum_args){ p, sizeof(src), &sum };
	sum = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_sum, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&sa, GPS_PTR(struct sum_args, p)), s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	ASSERT_EQ(16ULL * (255 * 256 / 2), sum);
	ASSERT_VIEWS(ndev, p, src, sizeof(src));

	/* gpsMemsetAsync on the default stream, then a kernel on it */
	ASSERT_EQ(gpsSuccess, gpsMemsetAsync(p, 0x66, 4096, NULL));
	sum = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_sum, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&sa, GPS_PTR(struct sum_args, p)), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(4096ULL * 0x66, sum);

	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Events order copies across devices: a copy on a stream that waits for
 * another device's kernel reads that kernel's stores in its own device's
 * replica; a kernel that waits for another device's set or copy sees it;
 * a synchronous copy of a device whose default stream waits for an
 * event runs after that event. */
TEST(events_order_copies_across_devices)
{
	unsigned char buf[4096], want[4096], src[4096], got, *p;
	struct peek_args pa;
	gpsStream_t s0, s1;
	gpsEvent_t e0, e1;
	int ndev, r;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(buf), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(buf)));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s0));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e1));
	for (r = 0; r < 3; r++) {
		unsigned char v = (unsigned char)(0x31 + r);

		/* device 0's kernel, then a copy out on device 1's stream */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, v, 1000000, NULL,
					    r & 1, s0));
		ASSERT_EQ(gpsSuccess, gpsEventRecord(e0, s0));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s1, e0, 0));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(buf, p, sizeof(buf),
					gpsMemcpyDeviceToHost, s1));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s1));
		memset(want, v, sizeof(want));
		ASSERT_EQ(0, memcmp(buf, want, sizeof(buf))) TH_LOG("round %d",
								   r);

		/* device 1's set and copy in, then device 0's kernel */
		ASSERT_EQ(gpsSuccess, gpsMemsetAsync(p, v + 0x40, 2048, s1));
		memset(src, v + 0x50, sizeof(src));
		ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(p + 4095, src, 1,
					gpsMemcpyHostToDevice, s1));
		ASSERT_EQ(gpsSuccess, gpsEventRecord(e1, s1));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s0, e1, 0));
		got = 0;
		pa = (struct peek_args){ p + 2047, &got };
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_peek, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&pa, GPS_PTR(struct peek_args, p)),
				s0));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s0));
		ASSERT_EQ(v + 0x40, got);
		memset(want, v + 0x40, 2048);
		want[4095] = (unsigned char)(v + 0x50);
		ASSERT_VIEWS(ndev, p, want, sizeof(want));

		/* device 0's kernel; device 1's default stream waits for it;
		 * gpsMemcpy on device 1 runs after the wait */
		ASSERT_EQ(gpsSuccess, t_put(p, 100, 10, v + 0x60, 1000000,
					    NULL, 0, s0));
		ASSERT_EQ(gpsSuccess, gpsEventRecord(e0, s0));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(NULL, e0, 0));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(buf, p + 100, 10,
						gpsMemcpyDeviceToHost));
		memset(want, v + 0x60, 10);
		ASSERT_EQ(0, memcmp(buf, want, 10));
	}
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* A copy or set over bytes that devices (and the host view) stored but
 * did not publish: the new contents in every replica, the old stores
 * never landing after them, later stores published over them. */
TEST(copy_set_over_pending_stores)
{
	unsigned char want[4096], src[64], *p, *v1, *v2;
	gpsStream_t s;
	int ndev, round;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v1 = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	v2 = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (round = 0; round < 3; round++) {
		unsigned char nv = (unsigned char)(0x90 + round);

		v1[10] = 0x11;			/* device 1's replica */
		v2[20] = 0x12;			/* the last device's */
		p[30] = 0x13;		/* the host view (device 0) */
		v1[100] = 0x14;			/* outside the copy */
		want[100] = 0x14;
		memset(src, nv, sizeof(src));
		if (round == 0) {
			ASSERT_EQ(gpsSuccess, gpsMemcpy(p, src, 64,
						gpsMemcpyHostToDevice));
		} else if (round == 1) {
			ASSERT_EQ(gpsSuccess, gpsMemset(p, nv, 64));
		} else {
			ASSERT_EQ(gpsSuccess, gpsMemsetAsync(p, nv, 64, s));
			ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
		}
		memset(want, nv, 64);
		/* byte 100 may or may not be published yet: leave it out */
		ASSERT_VIEWS(ndev, p, want, 64);
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		/* a kernel's end on device 1 brings nothing back */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_nothing,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL, NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
		/* a store after the copy is newer and wins */
		v1[10] = 0x44;
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		want[10] = 0x44;
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* A copy or set on another device's stream racing with a kernel that
 * stores the neighbouring bytes (same word, same block): both survive in
 * every replica. */
TEST(copy_races_kernel_disjoint_bytes)
{
	unsigned char want[4096], src[4096], *p;
	struct put_args pa;
	gpsStream_t sk, sc;
	int ndev, r, dk = 1, dc;
	const size_t cut = 2051;

	T_CONTRACT_DEVICES(ndev, 2);
	dc = ndev > 2 ? 2 : 0;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sk));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(dc));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sc));
	for (r = 0; r < 4; r++) {
		pa = (struct put_args){ p, 0, cut, 0x70 + r, 400, 0, NULL,
					NULL };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_put, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&pa, GPS_PTR(struct put_args, p)),
				sk));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(dc));
		memset(src, 0x80 + r, sizeof(src));
		if (r & 1) {
			ASSERT_EQ(gpsSuccess, gpsMemsetAsync(p + cut, 0x80 + r,
						sizeof(want) - cut, sc));
		} else {
			ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(p + cut, src,
						sizeof(want) - cut,
						gpsMemcpyHostToDevice, sc));
		}
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sc));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sk));
		memset(want, 0x70 + r, cut);
		memset(want + cut, 0x80 + r, sizeof(want) - cut);
		ASSERT_VIEWS(ndev, p, want, sizeof(want));
	}
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sc));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sk));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* A set (on another device's stream, or another stream of the kernel's
 * device) racing with a kernel storing the same bytes: after the
 * kernel's release every replica agrees, each byte one of the two
 * values. */
TEST(set_races_kernel_same_bytes_converge)
{
	unsigned char got[4096], *p;
	struct put_args pa;
	gpsStream_t sk, sc, ss;
	int ndev, r, dk = 1, dc, a = 0, b = 0;
	size_t i;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(got), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(got)));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sk));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&ss));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev > 2 ? 2 : 0));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&sc));
	for (r = 0; r < 4; r++) {
		dc = r & 1 ? dk : ndev > 2 ? 2 : 0;
		pa = (struct put_args){ p, 0, sizeof(got), 0xa0 + r, 100, 0,
					NULL, NULL };
		ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_put, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&pa, GPS_PTR(struct put_args, p)),
				sk));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(dc));
		ASSERT_EQ(gpsSuccess, gpsMemsetAsync(p, 0x50 + r, sizeof(got),
						     r & 1 ? ss : sc));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(r & 1 ? ss : sc));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(sk));
		ASSERT_VIEWS_AGREE(ndev, p, got, sizeof(got));
		for (i = 0; i < sizeof(got); i++) {
			ASSERT_TRUE(got[i] == 0xa0 + r || got[i] == 0x50 + r)
			TH_LOG("round %d byte %zu: %#x", r, i, got[i]);
			if (got[i] == 0xa0 + r)
				a++;
			else
				b++;
		}
	}
	TH_LOG("kernel won %d bytes, set %d", a, b);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sc));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(dk));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(ss));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(sk));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}


/* Copies through any view's address (destination named by another
 * device's view, source by a third's) and between conventional and GPS
 * memory, both ways: every replica of a GPS destination. */
TEST(copies_through_views_and_conventional)
{
	unsigned char src[3000], want[4096], buf[3000], *p, *v2, *c;
	int ndev;
	size_t i;

	T_CONTRACT_DEVICES(ndev, 2);
	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 5 + 1);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsMemset(c, 0x3c, sizeof(want)));
	memset(want, 0, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	v2 = gpsDevicePtr(p);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	/* into another device's view address */
	ASSERT_EQ(gpsSuccess, gpsMemcpy(v2 + 11, src, sizeof(src),
					gpsMemcpyHostToDevice));
	memcpy(want + 11, src, sizeof(src));
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsMemset(v2 + 4000, 0x7e, 96));
	memset(want + 4000, 0x7e, 96);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	/* out of another device's view address, from every device */
	for (i = 0; i < (size_t)ndev; i++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice((int)i));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(buf, v2 + 11, sizeof(buf),
						gpsMemcpyDeviceToHost));
		ASSERT_EQ(0, memcmp(buf, src, sizeof(buf)));
	}
	/* conventional to GPS, GPS to conventional */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(p + 3, c, 100,
					gpsMemcpyDeviceToDevice));
	memset(want + 3, 0x3c, 100);
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c + 1, p, 4095, gpsMemcpyDefault));
	ASSERT_EQ(0x3c, c[0]);
	ASSERT_EQ(0, memcmp(c + 1, want, 4095));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(c));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* ------------------------------------------------------------------ */
/* Free, reuse, many and odd allocations                               */
/* ------------------------------------------------------------------ */

/* gpsFree waits for the work of every device: a kernel of another device
 * still storing into the allocation, and a copy queued after it, finish
 * first; the stream goes on working afterwards. */
TEST(free_waits_for_work_in_flight)
{
	unsigned char buf[4096], want[4096], *p, *q;
	static atomic_int done;
	gpsStream_t s;
	int ndev, w;

	T_CONTRACT_DEVICES(ndev, 2);
	w = ndev - 1;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(buf), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, sizeof(buf)));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	atomic_store(&done, 0);
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0x5a, 10000000, &done, 0, s));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(buf, p, sizeof(buf),
					     gpsMemcpyDeviceToHost, s));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(1, atomic_load(&done));
	memset(want, 0x5a, sizeof(want));
	ASSERT_EQ(0, memcmp(buf, want, sizeof(buf)));
	/* the same on the default stream of a device, conventional memory */
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&p, sizeof(buf)));
	atomic_store(&done, 0);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, t_put(p, 0, 4096, 0x5b, 10000000, &done, 0,
				    NULL));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(1, atomic_load(&done));
	/* the stream still works and has no error to report */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(w));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, sizeof(buf), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(q, 0, sizeof(buf)));
	ASSERT_EQ(gpsSuccess, t_put(q, 7, 9, 0x5c, 0, NULL, 0, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	memset(want, 0, sizeof(want));
	memset(want + 7, 0x5c, 9);
	ASSERT_VIEWS(ndev, q, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(q));
}

/* Stores never published when an allocation is freed (device views, the
 * host view, a kernel's) are discarded: the next allocation, at the same
 * address or not, holds only what is put in it, in every replica. */
TEST(free_then_reuse_no_stale_stores)
{
	unsigned char *want, *p, *q, *v;
	size_t size;
	int ndev, i, same = 0;

	T_CONTRACT_DEVICES(ndev, 2);
	want = calloc(1, 3 * 65536);
	ASSERT_NE(NULL, want);
	for (i = 0; i < 3; i++) {
		size = 8192 + (size_t)i * 60000;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, size,
					i & 1 ? gpsMemGPSPage4K : 0));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		v = gpsDevicePtr(p);
		memset(v, 0x77, size);			/* device 1's */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		memset(p + size / 2, 0x78, size / 2);	/* host view */
		ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
		ASSERT_EQ(gpsSuccess, t_put(p, 1, size - 2, 0x79,
					    0, NULL, 0, NULL));
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		ASSERT_EQ(gpsSuccess, gpsFree(p));

		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, size,
					i & 1 ? gpsMemGPSPage4K : 0));
		same += p == q;
		/* a fresh allocation: whatever it holds, every replica the
		 * same after a fence of every device */
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		ASSERT_VIEWS_AGREE(ndev, q, want, size);
		memset(want, 0, size);
		ASSERT_EQ(gpsSuccess, gpsMemset(q, 0, size));
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		ASSERT_VIEWS(ndev, q, want, size);
		ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_nothing,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL, NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		ASSERT_VIEWS(ndev, q, want, size);
		ASSERT_EQ(gpsSuccess, gpsFree(q));
	}
	TH_LOG("%d of 3 reallocations came back at the freed address", same);
	free(want);
}

struct lastb_args {
	unsigned char **ptr;	/* host: untranslated GPS pointers */
	size_t *size;
	int n;
};

static void k_last_bytes(void *arg)
{
	const struct lastb_args *a = arg;
	int i;

	for (i = 0; i < a->n; i++)
		a->ptr[i][a->size[i] - 1] = (unsigned char)(0xf0 ^ i);
}

#define NSMALL 32

/* Many small allocations of odd sizes, flags and homes: disjoint, the
 * attributes they were asked with, each byte in every replica after a
 * kernel writes through pointers it finds in memory; freeing half leaves
 * the others intact; every bound checked. */
TEST(many_small_allocations)
{
	static const unsigned int fl[4] = { 0, gpsMemGPSManual,
		gpsMemGPSPage4K, gpsMemGPSManual | gpsMemGPSPage4K };
	unsigned char *ptr[NSMALL], want[256], one = 0;
	size_t size[NSMALL];
	struct lastb_args la;
	gpsPointerAttributes at;
	int ndev, i, j;

	T_CONTRACT_DEVICES(ndev, 2);
	for (i = 0; i < NSMALL; i++) {
		size[i] = 1 + (size_t)(i * 37) % 200;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(i % ndev));
		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&ptr[i], size[i],
						   fl[i % 4]));
		ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, ptr[i]));
		ASSERT_EQ(gpsMemoryTypeGPS, at.type);
		ASSERT_EQ(i % ndev, at.device);
		ASSERT_EQ(-1, at.viewDevice);
		ASSERT_EQ((void *)ptr[i], at.base);
		ASSERT_EQ(size[i], at.size);
		ASSERT_EQ(gpsSuccess, gpsMemset(ptr[i], i + 1, size[i]));
		ASSERT_EQ(gpsErrorInvalidValue,
			  gpsMemset(ptr[i], 0, size[i] + 1));
		ASSERT_EQ(gpsErrorInvalidValue,
			  gpsMemcpy(ptr[i] + 1, want, size[i],
				    gpsMemcpyHostToDevice));
	}
	gpsGetLastError();
	for (i = 0; i < NSMALL; i++)
		for (j = 0; j < NSMALL; j++)
			if (i != j)
				ASSERT_TRUE(ptr[i] + size[i] <= ptr[j] ||
					    ptr[j] + size[j] <= ptr[i]);
	la = (struct lastb_args){ ptr, size, NSMALL };
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_last_bytes, gpsDim(1, 1, 1),
					      gpsDim(1, 1, 1),
					      GPS_ARGS_RAW(&la), NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	for (i = 0; i < NSMALL; i++) {
		memset(want, i + 1, size[i]);
		want[size[i] - 1] = (unsigned char)(0xf0 ^ i);
		ASSERT_VIEWS(ndev, ptr[i], want, size[i]);
	}
	for (i = 1; i < NSMALL; i += 2)
		ASSERT_EQ(gpsSuccess, gpsFree(ptr[i]));
	for (i = 0; i < NSMALL; i += 2) {
		memset(want, i + 1, size[i]);
		want[size[i] - 1] = (unsigned char)(0xf0 ^ i);
		ASSERT_VIEWS(ndev, ptr[i], want, size[i]);
		/* the freed neighbours are gone for the library */
		ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at,
							      ptr[i + 1]));
		ASSERT_NE(gpsMemoryTypeGPS, at.type);
	}
	for (i = 1; i < NSMALL; i += 2)
		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&ptr[i], 1, 0));
	for (i = 0; i < NSMALL; i++) {
		ASSERT_EQ(gpsSuccess, gpsMemcpy(ptr[i], &one, 1,
						gpsMemcpyHostToDevice));
		ASSERT_EQ(gpsSuccess, gpsFree(ptr[i]));
	}
}

/* open files of the process (the directory's own included) */
static int t_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (!dir)
		return 1024;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n - 2;		/* . and .. */
}

#define NFD_ALLOCS 150

/* Allocations are memory, not files: with the soft limit on open files
 * 32 above the number the process has open (as the common default of
 * 1024 is for a program with ~1000 buffers), NFD_ALLOCS more small GPS
 * allocations all succeed and hold their data. */
TEST(allocations_not_bounded_by_open_files)
{
	unsigned char *p[NFD_ALLOCS], want[64];
	struct rlimit rl, low;
	int ndev, i, made = 0;
	gpsError_t e = gpsSuccess;

	T_CONTRACT_DEVICES(ndev, 2);
	/* the library set up (streams, rings) before the limit */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p[0], 64, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p[0], 1, 64));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsSuccess, gpsFree(p[0]));
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	low = rl;
	low.rlim_cur = (rlim_t)t_open_fds() + 32;
	if (low.rlim_cur > rl.rlim_cur)
		SKIP(return, "the soft limit is already below %lu",
		     (unsigned long)low.rlim_cur);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	for (i = 0; i < NFD_ALLOCS; i++) {
		e = gpsMallocGPS((void **)&p[i], 64, 0);
		if (e != gpsSuccess)
			break;
		made++;
		ASSERT_EQ(gpsSuccess, gpsMemset(p[i], i, 64));
	}
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	EXPECT_EQ(NFD_ALLOCS, made)
	TH_LOG("allocation %d of %d failed (%s) with %lu files allowed",
	       made + 1, NFD_ALLOCS, gpsGetErrorName(e),
	       (unsigned long)low.rlim_cur);
	gpsGetLastError();
	for (i = 0; i < made; i++) {
		memset(want, i, sizeof(want));
		ASSERT_VIEWS(ndev, p[i], want, sizeof(want));
		ASSERT_EQ(gpsSuccess, gpsFree(p[i]));
	}
}

/* An allocation of an odd size (a GPS page and one byte): its last byte
 * is written and read everywhere; every range past the end is refused
 * and changes nothing. */
TEST(odd_size_bounds)
{
	gpsPointerAttributes at;
	unsigned char *p, *want, *src, buf[16];
	size_t size;
	gpsError_t e;
	int ndev, d;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	size = at.gpsPageSize + 1;
	want = malloc(size + 1);
	src = malloc(size + 1);
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, src);
	memset(src, 0x3e, size + 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, size, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x31, size));
	ASSERT_EQ(gpsSuccess, gpsMemset(p + size - 1, 0x32, 1));
	memset(want, 0x31, size);
	want[size - 1] = 0x32;
	ASSERT_VIEWS(ndev, p, want, size);

	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(p, 0, size + 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(p + size - 1, 0, 2));
	e = gpsMemset(p + size, 0, 1);
	ASSERT_TRUE(e == gpsErrorInvalidValue ||
		    e == gpsErrorInvalidDevicePointer)
	TH_LOG("gpsMemset one past the end: %s", gpsGetErrorName(e));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p, src, size + 1,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p + 1, src, size,
					gpsMemcpyHostToDevice));
	memset(buf, 0xcc, sizeof(buf));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(buf, p + size - 3, 4,
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(0xcc, buf[0]);
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemsetAsync(p + size - 1, 0, 2,
						       NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpyAsync(p + 2, src, size - 1,
					gpsMemcpyHostToDevice, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_VIEWS(ndev, p, want, size);

	/* a kernel's store to the last byte, read back at the end */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, t_put(p, size - 1, 1, 0x33, 0, NULL, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	want[size - 1] = 0x33;
	ASSERT_VIEWS(ndev, p, want, size);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(buf, p + size - 5, 5,
						gpsMemcpyDeviceToHost));
		ASSERT_EQ(0, memcmp(buf, want + size - 5, 5));
	}
	gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	free(want);
	free(src);
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

static void overflowing_counts(struct __test_metadata *_metadata, int ndev);
static void freed_pointers(struct __test_metadata *_metadata, int ndev);

/* Bad arguments (overflowing counts and freed pointers too) return their
 * codes (and a last error with a message), change nothing (*ptr left
 * alone), and lose no store made before. */
TEST(bad_arguments_lose_nothing)
{
	unsigned char want[4096], src[64], host[64], *p, *q, *v1;
	void *keep = (void *)0x1234;
	gpsStream_t s1;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, 64, 0));
	memset(want, 0x21, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x21, sizeof(want)));
	memset(src, 0x22, sizeof(src));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v1 = gpsDevicePtr(p);
	v1[100] = 0x42;			/* not yet published */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));

	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(NULL, 16, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&keep, 0, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&keep, SIZE_MAX, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&keep, 16, 0x8000));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(&keep, 16,
				gpsMemGPSPage4K | gpsMemGPSPage64K));
	ASSERT_EQ((void *)0x1234, keep);
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsGetLastError());
	ASSERT_NE(NULL, gpsGetErrorString(gpsErrorInvalidValue));
	ASSERT_LT(0, (int)strlen(gpsGetErrorString(gpsErrorInvalidValue)));
	ASSERT_STRNE(gpsGetErrorString(gpsSuccess),
		     gpsGetErrorString(gpsErrorInvalidValue));

	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsMemset(host, 0, 16));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(NULL, 0, 16));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(p + 4090, 0, 16));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(NULL, src, 16,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p, NULL, 16,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection, gpsMemcpy(p, q, 16,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection, gpsMemcpy(host, p, 16,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection, gpsMemcpy(p, src, 16,
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection, gpsMemcpy(p, src, 16,
					(gpsMemcpyKind)7));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection, gpsMemcpy(p, host, 16,
					gpsMemcpyHostToHost));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p + 4000, src, 97,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsMemcpyAsync(p, src, 16, gpsMemcpyHostToDevice,
				 (gpsStream_t)host));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  gpsMemsetAsync(p, 0, 16, (gpsStream_t)host));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(p + 1));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(host));
	ASSERT_EQ(gpsSuccess, gpsFree(NULL));
	/* a launch on a stream of another device is refused, runs nothing */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsErrorInvalidResourceHandle,
		  t_put(p, 0, 64, 0x99, 0, NULL, 0, s1));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s1));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	gpsGetLastError();

	/* what was there, and the pending store, all still there */
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	want[100] = 0x42;
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(q));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	overflowing_counts(_metadata, ndev);
	freed_pointers(_metadata, ndev);
}

/* Counts that overflow an address (SIZE_MAX, or past the end of the
 * address space from an offset) are refused as leaving the allocation,
 * and nothing is written. */
static void overflowing_counts(struct __test_metadata *_metadata, int ndev)
{
	unsigned char want[4096], src[64], *p;
	unsigned long long m[4];
	size_t np;

	memset(src, 0x66, sizeof(src));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x12, sizeof(want)));
	memset(want, 0x12, sizeof(want));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(p + 16, 0, SIZE_MAX));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(p + 16, 0, SIZE_MAX - 8));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemsetAsync(p + 16, 0, SIZE_MAX - 8, NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p + 1, src, SIZE_MAX,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p + 8, src, SIZE_MAX - 4,
					gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpyAsync(p + 8, src,
					SIZE_MAX - 4, gpsMemcpyHostToDevice,
					NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(src, p + 8, SIZE_MAX - 4,
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p + 8, p, SIZE_MAX - 4,
					gpsMemcpyDeviceToDevice));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemAdvise(p + 8, SIZE_MAX - 4,
					gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemGetSubscribers(p + 8,
					SIZE_MAX - 4, m, 4, &np));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemPrefetchAsync(p + 8,
					SIZE_MAX - 4, 1, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	gpsGetLastError();
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* A freed pointer is no longer libgpsu memory: sets refuse it, copies
 * refuse its kind, a second free is gpsErrorInvalidDevicePointer; freeing
 * through another device's view works; other allocations keep their
 * data. */
static void freed_pointers(struct __test_metadata *_metadata, int ndev)
{
	unsigned char want[256], src[16], host[16], *p, *q, *v;
	gpsPointerAttributes at;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(q, 0x61, sizeof(want)));
	memset(want, 0x61, sizeof(want));
	memset(src, 1, sizeof(src));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(p));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsMemset(p, 0, 16));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(p, src, 16, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(host, p, 16, gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(q, p, 16, gpsMemcpyDeviceToDevice));
	ASSERT_EQ(gpsErrorInvalidDevicePointer,
		  gpsMemAdvise(p, 16, gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
	ASSERT_EQ(gpsMemoryTypeUnregistered, at.type);
	gpsGetLastError();

	/* freed through device 1's view of it */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v = gpsDevicePtr(p);
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(v + 8));
	ASSERT_EQ(gpsSuccess, gpsFree(v));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(p));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsMemset(v, 0, 16));
	gpsGetLastError();
	ASSERT_VIEWS(ndev, q, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(q));
}

/* A host buffer the process cannot read or write: gpsErrorInvalidValue
 * from the copy (now, or from the stream's next synchronize), no crash,
 * nothing stored before lost. */
TEST(bad_host_buffer_is_an_error)
{
	unsigned char want[4096], *p, *bad;
	gpsStream_t s;
	gpsError_t e;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 2);
	bad = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, bad);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, sizeof(want), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x2c, sizeof(want)));
	memset(want, 0x2c, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(bad, p, 64,
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemcpy(p, bad, 64,
					gpsMemcpyHostToDevice));
	/* an asynchronous one: checked now or reported at the sync */
	e = gpsMemcpyAsync(p, bad, 64, gpsMemcpyHostToDevice, s);
	if (e == gpsSuccess)
		e = gpsStreamSynchronize(s);
	ASSERT_EQ(gpsErrorInvalidValue, e);
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	gpsGetLastError();
	/* a failed copy from a bad source may have written part of the
	 * range (the docs do not say); the rest of the page is intact */
	ASSERT_VIEWS(ndev, p + 64, want + 64, sizeof(want) - 64);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	munmap(bad, 8192);
}

struct ink_out {
	gpsError_t rc[9];
	unsigned char *newp;
};

struct ink_args {
	unsigned char *p;	/* raw: the host view */
	gpsEvent_t ev;
	gpsStream_t s;
	struct ink_out *out;	/* host */
};

static void k_calls(void *arg)
{
	const struct ink_args *a = arg;
	struct ink_out *out = a->out;
	unsigned char b;

	out->rc[0] = gpsFree(a->p);
	out->rc[1] = gpsMemcpy(&b, a->p, 1, gpsMemcpyDeviceToHost);
	out->rc[2] = gpsMemset(a->p, 0, 1);
	out->rc[3] = gpsDeviceSynchronize();
	out->rc[4] = gpsStreamSynchronize(NULL);
	out->rc[5] = gpsEventSynchronize(a->ev);
	out->rc[6] = gpsLaunchKernel(k_nothing, gpsDim(1, 1, 1),
				     gpsDim(1, 1, 1), NULL, NULL);
	out->rc[7] = gpsStreamDestroy(a->s);
	out->rc[8] = gpsMallocGPS((void **)&out->newp, 300, 0);
	if (out->rc[8] == gpsSuccess)
		memset(out->newp, 0x5c, 300);	/* through its host view */
}

/* Calls that wait for streams return gpsErrorNotSupported inside a
 * kernel and free nothing; an allocation made inside a kernel holds the
 * kernel's stores in every replica after its end. */
TEST(waiting_calls_inside_a_kernel)
{
	unsigned char want[300], *p;
	struct ink_out out;
	struct ink_args a;
	gpsStream_t s;
	int ndev, i;

	T_CONTRACT_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 300, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x17, 300));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	memset(&a, 0, sizeof(a));
	memset(&out, 0, sizeof(out));
	a.p = p;
	a.out = &out;
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&a.ev));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&a.s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(a.ev, a.s));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(k_calls, gpsDim(1, 1, 1),
					      gpsDim(1, 1, 1),
					      GPS_ARGS_RAW(&a), s));
	/* only the kernel's end releases: no device synchronize */
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(gpsErrorNotSupported, out.rc[i]) TH_LOG("call %d", i);
	ASSERT_EQ(gpsSuccess, out.rc[8]);
	memset(want, 0x17, sizeof(want));
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	memset(want, 0x5c, sizeof(want));
	ASSERT_VIEWS(ndev, out.newp, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(a.s));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(a.ev));
	ASSERT_EQ(gpsSuccess, gpsFree(out.newp));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Copies from a thread left alone: 0 each (the child's exit status). */
static void *leader_gone(void *arg)
{
	unsigned char buf[64], back[64];
	unsigned char *p = arg;
	int bad = 0;

	usleep(100000);			/* the main thread is gone by now */
	memset(buf, 0x3c, sizeof(buf));
	bad |= gpsMemcpy(p, buf, sizeof(buf), gpsMemcpyHostToDevice) !=
	       gpsSuccess;
	memset(back, 0, sizeof(back));
	bad |= gpsMemcpy(back, p, sizeof(back), gpsMemcpyDeviceToHost) !=
	       gpsSuccess;
	bad |= memcmp(buf, back, sizeof(buf)) != 0;
	exit(bad);
}

/*
 * Copies work in a program whose main thread has exited: an engine that
 * named the process's first thread for its copies found no memory there
 * and failed each one. The thread leaves by the exit system call, as
 * pthread_exit() ends, without the unwinder that pthread_exit() loads
 * (libgcc_s, which the guests do not carry).
 */
TEST(copies_after_the_main_thread_exits)
{
	pthread_t t;
	void *p;
	int ndev;

	T_CONTRACT_DEVICES(ndev, 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, 1 << 16, 0));
	ASSERT_EQ(0, pthread_create(&t, NULL, leader_gone, p));
	syscall(SYS_exit, 0);		/* the test's result is leader_gone's */
}

/*
 * An allocation too large for the machine fails alone: every later one,
 * small, is made and holds its bytes.
 */
TEST(a_failed_huge_allocation_leaves_room)
{
	unsigned char want[4096];
	void *big = NULL, *p;
	int ndev, i;

	T_CONTRACT_DEVICES(ndev, 1);
	for (i = 0; i < 3; i++)
		ASSERT_NE(gpsSuccess, gpsMallocGPS(&big, 1ULL << 60, 0));
	(void)gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, sizeof(want), 0));
	memset(want, 0x6d, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(p, want, sizeof(want),
					gpsMemcpyHostToDevice));
	ASSERT_VIEWS(ndev, p, want, sizeof(want));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsMalloc(&p, sizeof(want)));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A file-size limit (ulimit -f) does not kill the program (SIGXFSZ): an
 * allocation past it fails with an error, one within it is made (the
 * native engine keeps replicas in a memfd, the driver does not).
 */
TEST(a_file_size_limit_fails_allocations_not_the_program)
{
	struct rlimit fsize = { 64 << 20, 64 << 20 };
	gpsEngine eng;
	const char *name;
	void *big, *p;
	gpsError_t e;
	int ndev;

	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &fsize));
	T_CONTRACT_DEVICES(ndev, 1);
	ASSERT_EQ(gpsSuccess, gpsGetEngine(&eng, &name));
	e = gpsMallocGPS(&big, 256 << 20, 0);
	if (eng == gpsEngineNative || e != gpsSuccess)
		ASSERT_EQ(gpsErrorMemoryAllocation, e);
	if (e == gpsSuccess)
		ASSERT_EQ(gpsSuccess, gpsFree(big));
	(void)gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, 1 << 20, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x21, 1 << 20));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

TEST_HARNESS_MAIN
