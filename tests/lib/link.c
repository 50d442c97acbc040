// SPDX-License-Identifier: MIT
/*
 * Description: the link model on the library's transfers against gps.ko:
 * with the knob link_bandwidth at 20 MB/s a 4 MiB device-to-device
 * gpsMemcpy (and gpsMemcpyAsync, and a managed-memory prefetch that
 * migrates the pages) takes at least 0.2 s, at 0 it is much faster;
 * link_latency_ns alone delays a small copy; host-to-device copies are
 * not charged; the push thread sends a kernel's stores while it runs, so
 * that its fence finds the link's time mostly spent (link_exposed_ns).
 * The knobs are saved and restored.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define SIZE	(4UL << 20)
#define BW	20000000ULL		/* bytes/s: 4 MiB take 0.21 s */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

FIXTURE(link) {
	int ndev;
	unsigned long long bw, lat, iv;
	int saved;		/* bw, lat and iv hold the knobs to restore */
	char *a, *b;		/* conventional, on devices 0 and 1 */
};

FIXTURE_SETUP(link)
{
	self->a = self->b = NULL;
	self->saved = 0;
	T_MIN_DEVICES(self->ndev, 2);
	ASSERT_EQ(0, t_knob_get("link_bandwidth", &self->bw));
	ASSERT_EQ(0, t_knob_get("link_latency_ns", &self->lat));
	ASSERT_EQ(0, t_knob_get("harvest_interval_us", &self->iv));
	self->saved = 1;
	T_KNOB_SET("link_latency_ns", 0);
	T_KNOB_SET("link_bandwidth", 0);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&self->a, SIZE));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&self->b, SIZE));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMemset(self->a, 0x5a, SIZE));
	ASSERT_EQ(gpsSuccess, gpsMemset(self->b, 0, SIZE));
}

FIXTURE_TEARDOWN(link)
{
	/* the knobs as they were, whatever happened */
	if (self->saved) {
		t_knob_set("link_bandwidth", self->bw);
		t_knob_set("link_latency_ns", self->lat);
		t_knob_set("harvest_interval_us", self->iv);
	}
	gpsSetDevice(0);
	if (self->a)
		EXPECT_EQ(gpsSuccess, gpsFree(self->a));
	if (self->b)
		EXPECT_EQ(gpsSuccess, gpsFree(self->b));
}

/* 4 MiB from device 0's memory to device 1's: 0.2 s at 20 MB/s. */
TEST_F(link, device_to_device_copy)
{
	double t0, fast, slow, async, h2d;
	gpsStream_t s;
	char *host;
	int i;

	/* unlimited: the best of three (the first one faults things in) */
	fast = 1e9;
	for (i = 0; i < 3; i++) {
		t0 = now_s();
		ASSERT_EQ(gpsSuccess, gpsMemcpy(self->b, self->a, SIZE,
						gpsMemcpyDeviceToDevice));
		if (now_s() - t0 < fast)
			fast = now_s() - t0;
	}
	ASSERT_EQ(0x5a, self->b[SIZE - 1]);

	ASSERT_EQ(0, t_knob_set("link_bandwidth", BW));
	ASSERT_EQ(gpsSuccess, gpsMemset(self->b, 0, SIZE));
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(self->b, self->a, SIZE,
					gpsMemcpyDefault));
	slow = now_s() - t0;
	ASSERT_EQ(0x5a, self->b[0]);
	ASSERT_EQ(0x5a, self->b[SIZE - 1]);

	/* the same in a stream, the other way */
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(self->a, self->b, SIZE,
					     gpsMemcpyDeviceToDevice, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	async = now_s() - t0;
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));

	/* host memory is not a device's: not charged */
	host = malloc(SIZE);
	ASSERT_NE(NULL, host);
	memset(host, 1, SIZE);
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(self->b, host, SIZE,
					gpsMemcpyHostToDevice));
	h2d = now_s() - t0;
	free(host);
	ASSERT_EQ(1, self->b[SIZE / 2]);

	TH_LOG("4 MiB device to device: %.3f s unlimited, %.3f s (%.3f s "
	       "async) at %llu B/s; host to device %.3f s", fast, slow, async,
	       BW, h2d);
	ASSERT_GE(slow, (double)SIZE / BW);
	ASSERT_GE(async, (double)SIZE / BW);
	/* unlimited: faster than the link allows (TCG copies at ~100 MB/s
	 * on a loaded host, so no tighter bound) */
	ASSERT_LT(fast, (double)SIZE / BW);
	ASSERT_LT(fast, slow);
	ASSERT_LT(h2d, (double)SIZE / BW);
}

/* link_latency_ns alone: a 4 KiB copy across devices takes the latency. */
TEST_F(link, latency_alone)
{
	double t0, dt;

	ASSERT_EQ(0, t_knob_set("link_latency_ns", 100000000ULL));
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(self->b, self->a, 4096,
					gpsMemcpyDeviceToDevice));
	dt = now_s() - t0;
	ASSERT_EQ(0, t_knob_set("link_latency_ns", 0));
	TH_LOG("4 KiB device to device with 100 ms latency: %.3f s", dt);
	ASSERT_GE(dt, 0.1);
	/* within one device: no link */
	t0 = now_s();
	ASSERT_EQ(0, t_knob_set("link_latency_ns", 100000000ULL));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(self->a + 4096, self->a, 4096,
					gpsMemcpyDeviceToDevice));
	dt = now_s() - t0;
	ASSERT_EQ(0, t_knob_set("link_latency_ns", 0));
	ASSERT_LT(dt, 0.1);
}

/* Bytes of [p, p + n) present on another node than @node. */
static size_t bytes_off_node(const char *p, size_t n, int node)
{
	int status[256];
	void *pages[256];
	size_t off, i, cnt, bytes = 0;

	for (off = 0; off < n; off += cnt * 4096) {
		cnt = (n - off) / 4096 < 256 ? (n - off) / 4096 : 256;
		for (i = 0; i < cnt; i++)
			pages[i] = (void *)(p + off + i * 4096);
		if (move_pages(0, cnt, pages, NULL, status, 0))
			return 0;
		for (i = 0; i < cnt; i++)
			if (status[i] >= 0 && status[i] != node)
				bytes += 4096;
	}
	return bytes;
}

/* The unified-memory baseline's migration pays the link too: for the
 * bytes that move (a page the kernel could not move earlier is not). */
TEST_F(link, managed_prefetch_migrates_over_the_link)
{
	double t0, dt;
	size_t moving;
	char *m;
	int n1;

	n1 = t_page_node(self->b);
	ASSERT_LE(0, n1);
	/* no migration between devices that share a node (native engine
	 * on a machine of one node) */
	if (t_page_node(self->a) == n1)
		SKIP(return, "devices 0 and 1 share NUMA node %d: nothing moves",
		     n1);
	ASSERT_EQ(gpsSuccess, gpsMallocManaged((void **)&m, SIZE));
	memset(m, 7, SIZE);
	ASSERT_EQ(gpsSuccess, gpsMemPrefetchAsync(m, SIZE, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	moving = bytes_off_node(m, SIZE, n1);
	ASSERT_LE(SIZE / 2, moving);
	ASSERT_EQ(0, t_knob_set("link_bandwidth", BW));
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, gpsMemPrefetchAsync(m, SIZE, 1, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	dt = now_s() - t0;
	ASSERT_EQ(0, t_knob_set("link_bandwidth", 0));
	TH_LOG("managed prefetch 0 -> 1 of %zu bytes off node %d at %llu B/s: "
	       "%.3f s", moving, n1, BW, dt);
	ASSERT_GT(moving / 2, bytes_off_node(m, SIZE, n1));
	ASSERT_EQ(7, m[SIZE - 1]);
	ASSERT_GE(dt, (double)moving / BW);
	ASSERT_EQ(gpsSuccess, gpsFree(m));
}

#define SPUN	(512UL << 10)	/* the spinning kernel's GPS bytes */

struct spin_args {
	unsigned char *g;	/* GPS, translated */
	const int *go;		/* host memory: the kernel may end */
	int v;
	int *bad;		/* the checking kernel's count of others */
};

/* Stores @v to every byte, then waits for *go (at most 60 s). */
static void store_and_spin(void *p)
{
	const struct spin_args *a = p;
	int i;

	memset(a->g, a->v, SPUN);
	for (i = 0; i < 60000 && !__atomic_load_n(a->go, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
}

static void count_others(void *p)
{
	const struct spin_args *a = p;
	size_t i;

	for (i = 0; i < SPUN; i++)
		*a->bad += a->g[i] != a->v;
}

/* On device 0: @a->g zeroed everywhere, and a stream for the kernel. */
static gpsError_t spin_alloc(struct spin_args *a, gpsStream_t *s)
{
	gpsError_t e = gpsSetDevice(0);

	if (e == gpsSuccess)
		e = gpsMallocGPS((void **)&a->g, SPUN, gpsMemGPSAutomatic);
	if (e == gpsSuccess)
		e = gpsMemset(a->g, 0, SPUN);
	if (e == gpsSuccess)
		e = gpsDeviceSynchronize();
	if (e == gpsSuccess)
		e = gpsStreamCreate(s);
	return e;
}

/* @fn on one thread of the current device, @a->g translated. */
static gpsError_t spin_launch(void (*fn)(void *), struct spin_args *a,
			      gpsStream_t s)
{
	return gpsLaunchKernel(fn, gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			       GPS_ARGS(a, GPS_PTR(struct spin_args, g)), s);
}

/* The spinning kernel of @s let end, and @s synchronized and destroyed. */
static gpsError_t spin_end(int *go, gpsStream_t s)
{
	gpsError_t e;

	__atomic_store_n(go, 1, __ATOMIC_RELEASE);
	e = gpsStreamSynchronize(s);
	if (e == gpsSuccess)
		e = gpsStreamDestroy(s);
	return e;
}

/* Device 0's bytes_pushed past @p0 once it moves (at most 20 s). */
static long long first_push(long long p0)
{
	double t0 = now_s();
	long long pushed;

	while ((pushed = t_dev_stat(0, "bytes_pushed") - p0) <= 0 &&
	       now_s() - t0 < 20)
		usleep(200);
	return pushed;
}

/*
 * Pushes leave while the kernel runs, and the link is charged as they
 * leave (the benchmarks' link_hidden): with the link modelled, device
 * 0's push thread sends most of a kernel's stores before the kernel
 * ends, and the fence at its end, once the link has had the time to
 * carry them, finds at most half of the link's time still owed
 * (link_exposed_ns: the tail the thread had not sent); device 1 then
 * holds every store.
 */
TEST_F_TIMEOUT(link, pushes_leave_while_the_kernel_runs, 120)
{
	struct spin_args a = { .v = 0x6b };
	long long p0, w0, pushed = 0;
	double t0, busy, wait;
	gpsStream_t s;
	int go = 0, bad = 0;

	a.go = &go;
	a.bad = &bad;
	ASSERT_EQ(gpsSuccess, spin_alloc(&a, &s));
	T_KNOB_SET("link_bandwidth", BW);
	p0 = t_dev_stat(0, "bytes_pushed");
	w0 = t_dev_stat(0, "link_exposed_ns");
	ASSERT_LE(0, p0);
	ASSERT_LE(0, w0);
	ASSERT_EQ(gpsSuccess, spin_launch(store_and_spin, &a, s));
	/* at most 20 s for the thread to send 3/4 of one receiver's */
	t0 = now_s();
	while (now_s() - t0 < 20 &&
	       (pushed = t_dev_stat(0, "bytes_pushed") - p0) <
	       (long long)(3 * SPUN / 4))
		usleep(1000);
	TH_LOG("%lld bytes pushed while the kernel ran, after %.3f s", pushed,
	       now_s() - t0);
	/* then twice the link's time for what was pushed, as it grows */
	while (now_s() - t0 < 40 &&
	       (pushed = t_dev_stat(0, "bytes_pushed") - p0) > 0 &&
	       now_s() - t0 < 2 * (double)pushed / BW + 0.02)
		usleep(1000);
	ASSERT_EQ(gpsSuccess, spin_end(&go, s));
	busy = (double)(t_dev_stat(0, "bytes_pushed") - p0) / BW;
	wait = (double)(t_dev_stat(0, "link_exposed_ns") - w0) / 1e9;
	TH_LOG("the link busy %.3f s for device 0's pushes, %.3f s of it "
	       "left to the fence", busy, wait);
	ASSERT_GE(pushed, (long long)(3 * SPUN / 4));
	ASSERT_LE(wait, busy / 2);
	/* and device 1 holds the stores */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, spin_launch(count_others, &a, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(0, bad);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(a.g));
}

#define FENCE_BW	500000ULL	/* bytes/s: 512 KiB take 1.05 s */

/*
 * Without the push thread's rounds (harvest_interval_us 0) a kernel's
 * stores leave at its fence, and the fence finds the link's time for
 * them still owed: link_exposed_ns is at least half the link's time for
 * device 0's pushes (the kernel and the pushes, at memory speed, take
 * far less), at most all of it. The counter of the test above, kept.
 */
TEST_F_TIMEOUT(link, a_fence_alone_finds_the_link_owed, 120)
{
	struct spin_args a = { .v = 0x4e };
	long long p0, w0;
	double busy, exposed, t0, took;
	gpsStream_t s;
	int go = 1, bad = 0;

	a.go = &go;
	a.bad = &bad;
	ASSERT_EQ(gpsSuccess, spin_alloc(&a, &s));
	T_KNOB_SET("harvest_interval_us", 0);
	T_KNOB_SET("link_bandwidth", FENCE_BW);
	p0 = t_dev_stat(0, "bytes_pushed");
	w0 = t_dev_stat(0, "link_exposed_ns");
	ASSERT_LE(0, p0);
	ASSERT_LE(0, w0);
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, spin_launch(store_and_spin, &a, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	took = now_s() - t0;
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	busy = (double)(t_dev_stat(0, "bytes_pushed") - p0) / FENCE_BW;
	exposed = (double)(t_dev_stat(0, "link_exposed_ns") - w0) / 1e9;
	TH_LOG("the link busy %.3f s for device 0's pushes, %.3f s of it "
	       "left to the fence", busy, exposed);
	ASSERT_LE((double)SPUN / FENCE_BW, busy);
	ASSERT_LE(busy, took);		/* the fence waited for the link */
	ASSERT_LE(busy / 2, exposed);
	ASSERT_GE(busy * 1.01, exposed);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, spin_launch(count_others, &a, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(0, bad);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(a.g));
}

#define SLOW_BW	100000ULL	/* bytes/s: a 4 KiB page takes 41 ms */

/*
 * The push thread starts no round while its link is busy (the driver's
 * rule, the native engine's since it learnt it): a round then would
 * charge its bytes behind the backlog no sooner, split stores a later
 * one takes whole and take write faults from the kernels.  With the
 * link at 100 KB/s, once device 0's first round has pushed some of a
 * kernel's 512 KiB, a window of a quarter of that push's link time (at
 * most 50 ms) holds at most 2 rounds, not one a millisecond.
 */
TEST_F_TIMEOUT(link, no_round_while_the_link_is_busy, 120)
{
	struct spin_args a = { .v = 0x3c };
	long long p0, pushed = 0, r1, r2;
	double t1, t2, busy, window;
	gpsStream_t s;
	int go = 0;

	a.go = &go;
	ASSERT_EQ(gpsSuccess, spin_alloc(&a, &s));
	T_KNOB_SET("link_bandwidth", SLOW_BW);
	p0 = t_dev_stat(0, "bytes_pushed");
	ASSERT_LE(0, p0);
	ASSERT_LE(0, t_dev_stat(0, "thread_rounds"));
	ASSERT_EQ(gpsSuccess, spin_launch(store_and_spin, &a, s));
	pushed = first_push(p0);
	t1 = now_s();		/* the push seen: before the rounds are read */
	r1 = t_dev_stat(0, "thread_rounds");
	/* the first push keeps the link busy for its bytes' time at least */
	busy = (double)pushed / SLOW_BW;
	window = busy / 4 < 0.05 ? busy / 4 : 0.05;
	usleep((useconds_t)(window * 1e6));
	r2 = t_dev_stat(0, "thread_rounds");
	t2 = now_s();
	/* a new bandwidth forgets the backlog: the kernel's end is quick */
	ASSERT_EQ(0, t_knob_set("link_bandwidth", 0));
	ASSERT_EQ(gpsSuccess, spin_end(&go, s));
	TH_LOG("%lld bytes in the first push (the link busy %.3f s); %lld "
	       "rounds in the %.3f s after it", pushed, busy, r2 - r1,
	       t2 - t1);
	ASSERT_LT(0, pushed);
	/* a window the machine's load stretched past the push proves no
	 * more than that the thread ran */
	if (t2 - t1 < busy * 0.8)
		ASSERT_GE(2, r2 - r1);
	ASSERT_EQ(gpsSuccess, gpsFree(a.g));
}

#define CRAWL_BW	1000ULL	/* bytes/s, the least: a 4 KiB page takes 4 s */

/*
 * A new link_bandwidth ends the push thread's wait for the old link (the
 * backlog is forgotten: gps_link_reset()): with the link at 1000 bytes/s,
 * once device 0's thread has pushed some of a kernel's 512 KiB (seconds
 * of link time at least) and is waiting for its link, the link at
 * 1 GB/s has it back at its rounds, 2 within 3 s. The driver's thread
 * slept out the old link's time (no round in 3 s, from a review).
 */
TEST_F_TIMEOUT(link, a_new_bandwidth_ends_the_threads_wait, 120)
{
	struct spin_args a = { .v = 0x2d };
	long long p0, pushed = 0, r0, r = 0;
	double t0, busy;
	gpsStream_t s;
	int go = 0;

	a.go = &go;
	ASSERT_EQ(gpsSuccess, spin_alloc(&a, &s));
	T_KNOB_SET("link_bandwidth", CRAWL_BW);
	p0 = t_dev_stat(0, "bytes_pushed");
	ASSERT_LE(0, p0);
	ASSERT_EQ(gpsSuccess, spin_launch(store_and_spin, &a, s));
	(void)first_push(p0);
	usleep(200000);		/* the round ends: the thread waits */
	pushed = t_dev_stat(0, "bytes_pushed") - p0;
	busy = (double)pushed / CRAWL_BW;
	r0 = t_dev_stat(0, "thread_rounds");
	ASSERT_LE(0, r0);
	ASSERT_EQ(0, t_knob_set("link_bandwidth", 1000000000ULL));
	t0 = now_s();
	while (now_s() - t0 < 3 &&
	       (r = t_dev_stat(0, "thread_rounds") - r0) < 2)
		usleep(1000);
	ASSERT_EQ(gpsSuccess, spin_end(&go, s));
	TH_LOG("%lld bytes pushed (the old link busy %.1f s); %lld rounds in "
	       "the %.3f s after the new one", pushed, busy, r,
	       now_s() - t0);
	ASSERT_LT(0, pushed);
	ASSERT_LE(2, r);
	ASSERT_EQ(gpsSuccess, gpsFree(a.g));
}

TEST_HARNESS_MAIN
