// SPDX-License-Identifier: MIT
/*
 * Description: devices and memory against the in-process mock driver
 * (t_mock.h): device properties, the four allocation kinds, views and
 * gpsDevicePtr, copy directions and ranges, memset, advice and
 * subscriptions, tracking's not-supported answer, frees.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"

#define PAGE MOCK_PAGE

FIXTURE(mem) {
	int unused;
};

FIXTURE_SETUP(mem)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
}

FIXTURE_TEARDOWN(mem)
{
	/* every test frees what it allocated */
	EXPECT_EQ(0, mock_nr_allocs);
	gpsGetLastError();
}

/* Two devices, per-thread current device, properties from the driver. */
TEST_F(mem, devices)
{
	gpsDeviceProp prop;
	int n, d;

	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&n));
	ASSERT_EQ(MOCK_NDEV, n);
	ASSERT_EQ(gpsErrorInvalidDevice, gpsSetDevice(MOCK_NDEV));
	ASSERT_EQ(gpsErrorInvalidDevice, gpsSetDevice(-1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsGetDevice(&d));
	ASSERT_EQ(1, d);
	ASSERT_EQ(gpsErrorInvalidDevice, gpsGetDeviceProperties(&prop, 2));
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, 1));
	ASSERT_STREQ("gps node 1", prop.name);
	ASSERT_EQ(1, prop.numaNode);
	ASSERT_EQ(1, prop.device);
	ASSERT_LT(0, prop.numCpus);
	ASSERT_EQ(1ULL << 30, prop.totalGlobalMem);
	ASSERT_EQ(PAGE, prop.gpsPageSize);
	ASSERT_EQ(128, prop.gpsBlockSize);
	ASSERT_EQ(GPS_ABI_VERSION, prop.driverAbiVersion);
}

/* A GPS allocation: home view handed out, one view per device. */
TEST_F(mem, gps_views)
{
	gpsPointerAttributes at;
	char *p, *v0, *v1;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 3 * PAGE + 5, 0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p + 7));
	ASSERT_EQ(gpsMemoryTypeGPS, at.type);
	ASSERT_EQ(0, at.device);
	ASSERT_EQ(-1, at.viewDevice);	/* the host view */
	ASSERT_EQ(p, at.base);
	ASSERT_EQ(3 * PAGE + 5, at.size);
	ASSERT_EQ(PAGE, at.gpsPageSize);
	v0 = gpsDevicePtr(p + 9);	/* the home device's own view */
	ASSERT_NE(p + 9, v0);
	ASSERT_EQ(v0, gpsDevicePtr(v0));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, v0));
	ASSERT_EQ(0, at.viewDevice);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v1 = gpsDevicePtr(p + 9);
	ASSERT_NE(p + 9, v1);
	ASSERT_EQ(v1, gpsDevicePtr(v1));	/* already device 1's */
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, v1));
	ASSERT_EQ(1, at.viewDevice);
	ASSERT_EQ(p, at.base);
	p[9] = 42;	/* the mock has one copy behind every view */
	ASSERT_EQ(42, *v1);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(v0, gpsDevicePtr(v1));
	/* only the start of an allocation can be freed, and only once */
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(p + 1));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(p));
	ASSERT_EQ(p + 9, gpsDevicePtr(p + 9));	/* unknown again */
}

/* Page-size flags reach the driver; manual allocations start at home. */
TEST_F(mem, gps_flags)
{
	unsigned long long m[4];
	size_t np;
	void *p;

	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, 2 * GPS_PAGE_4K,
				gpsMemGPSManual | gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 2 * GPS_PAGE_4K, m, 4,
						   &np));
	ASSERT_EQ(2, np);
	ASSERT_EQ(2, m[0]);
	ASSERT_EQ(2, m[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&p, 1, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 1, m, 4, &np));
	ASSERT_EQ(1, np);
	ASSERT_EQ(3, m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Subscribe and unsubscribe whole GPS pages; the last one stays: Busy. */
TEST_F(mem, advise_subscriptions)
{
	unsigned long long m[4];
	char *p;
	size_t np;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4 * PAGE,
					   gpsMemGPSManual));
	/* bytes 1 .. PAGE+1 touch pages 0 and 1 */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + 1, PAGE + 1,
					   gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * PAGE, m, 4, &np));
	ASSERT_EQ(4, np);
	ASSERT_EQ(3, m[0]);
	ASSERT_EQ(3, m[1]);
	ASSERT_EQ(1, m[2]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, PAGE,
					   gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsErrorBusy, gpsMemAdvise(p, PAGE,
					     gpsMemAdviseGPSUnsubscribe, 1));
	ASSERT_EQ(gpsErrorBusy, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, PAGE, m, 1, NULL));
	ASSERT_EQ(2, m[0]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 4 * PAGE,
					   gpsMemAdviseSetReadMostly, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * PAGE, m, 4, &np));
	ASSERT_EQ(3, m[0] & m[1] & m[2] & m[3]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 4 * PAGE,
					   gpsMemAdviseUnsetReadMostly, 1));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 4 * PAGE, m, 4, &np));
	ASSERT_EQ(2, m[0] | m[1] | m[2] | m[3]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, PAGE,
					   gpsMemAdviseSetAccessedBy, 0));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, PAGE,
					   gpsMemAdviseSetPreferredLocation,
					   0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(p, PAGE, gpsMemAdviseUnsetPreferredLocation,
			       0));
	/* bad device, range beyond the allocation, unknown pointer */
	ASSERT_EQ(gpsErrorInvalidDevice,
		  gpsMemAdvise(p, PAGE, gpsMemAdviseGPSSubscribe, 2));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(p, 4 * PAGE + 1, gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsErrorInvalidDevicePointer,
		  gpsMemAdvise(m, 8, gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsSuccess, gpsMemPrefetchAsync(p, PAGE, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, PAGE, m, 1, NULL));
	ASSERT_EQ(3, m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Conventional, host and managed memory take the advice they can. */
TEST_F(mem, advise_other_kinds)
{
	gpsPointerAttributes at;
	unsigned long collapses;
	void *c, *h, *m;

	ASSERT_EQ(gpsSuccess, gpsMalloc(&c, 100));
	ASSERT_EQ(gpsSuccess, gpsMallocHost(&h, 100));
	ASSERT_EQ(gpsSuccess, gpsMallocManaged(&m, 100));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, c));
	ASSERT_EQ(gpsMemoryTypeDevice, at.type);
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, h));
	ASSERT_EQ(gpsMemoryTypeHost, at.type);
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, m));
	ASSERT_EQ(gpsMemoryTypeManaged, at.type);
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, &at));
	ASSERT_EQ(gpsMemoryTypeUnregistered, at.type);
	ASSERT_EQ(c, gpsDevicePtr(c));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(c, 8, gpsMemAdviseGPSSubscribe, 0));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(c, 8, gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(c, 8, gpsMemAdviseSetPreferredLocation, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(c, 8, gpsMemAdviseSetReadMostly, 0));
	/* conventional memory is one copy already: collapse is a no-op
	 * that succeeds without asking the driver */
	collapses = mock_collapses;
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(c, 8, gpsMemAdviseGPSCollapse, 1));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(c, 100, gpsMemAdviseGPSCollapse,
					   0));
	ASSERT_EQ(collapses, mock_collapses);
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(c, 101, gpsMemAdviseGPSCollapse, 0));
	ASSERT_EQ(gpsErrorInvalidDevice,
		  gpsMemAdvise(c, 8, gpsMemAdviseGPSCollapse, 2));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(h, 8, gpsMemAdviseGPSCollapse, 0));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(m, 8, gpsMemAdviseGPSCollapse, 0));
	gpsGetLastError();
	ASSERT_EQ(gpsErrorNotSupported, gpsMemPrefetchAsync(c, 8, 0, NULL));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemAdvise(m, 8, gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsSuccess,
		  gpsMemAdvise(m, 8, gpsMemAdviseSetAccessedBy, 1));
	ASSERT_EQ(gpsSuccess,
		  gpsMemAdvise(m, 8, gpsMemAdviseSetPreferredLocation, 0));
	ASSERT_EQ(gpsSuccess,
		  gpsMemAdvise(m, 8, gpsMemAdviseUnsetPreferredLocation, 0));
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsMemAdvise(m, 8, gpsMemAdviseSetReadMostly, 0));
	memset(m, 1, 100);
	ASSERT_EQ(gpsSuccess, gpsMemPrefetchAsync(m, 100, 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorInvalidValue, gpsFreeHost(m));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(h));
	ASSERT_EQ(gpsSuccess, gpsFree(m));
	ASSERT_EQ(gpsSuccess, gpsFree(c));
}

/* Copies: directions checked, ranges checked, data lands everywhere. */
TEST_F(mem, memcpy_kinds)
{
	char host[256], back[256], *g, *c;
	int i;

	for (i = 0; i < 256; i++)
		host[i] = (char)i;
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 256, 0));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c, 256));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(g, host, 256, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c, g, 256,
					gpsMemcpyDeviceToDevice));
	memset(back, 0, sizeof(back));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(back, c, 256,
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(0, memcmp(host, back, 256));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(back, host + 1, 100,
					gpsMemcpyHostToHost));
	ASSERT_EQ(1, back[0]);
	ASSERT_EQ(gpsSuccess, gpsMemcpy(back, g + 10, 10, gpsMemcpyDefault));
	ASSERT_EQ(10, back[0]);
	ASSERT_EQ(gpsSuccess, gpsMemcpy(g, host, 0, gpsMemcpyHostToDevice));
	/* wrong directions */
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(back, host, 8, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(g, host, 8, gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(g, c, 8, gpsMemcpyHostToHost));
	ASSERT_EQ(gpsErrorInvalidMemcpyDirection,
		  gpsMemcpy(g, c, 8, (gpsMemcpyKind)77));
	/* past the end of an allocation, NULL, a bad host address */
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemcpy(g + 200, host, 57, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemcpy(back, c + 255, 2, gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemcpy(NULL, c, 2, gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemcpy(g, (void *)8, 16, gpsMemcpyHostToDevice));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsMemcpy((void *)8, g, 16, gpsMemcpyDeviceToHost));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
	/* async, in stream order */
	ASSERT_EQ(gpsSuccess, gpsMemsetAsync(g, 7, 256, NULL));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(back, g, 256,
					     gpsMemcpyDeviceToHost, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	for (i = 0; i < 256; i++)
		ASSERT_EQ(7, back[i]);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsFree(c));
}

/* Memset: every kind, ranges checked, unregistered memory refused. */
TEST_F(mem, memset)
{
	char host[16], *g, *h;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 64, 0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&h, 64));
	ASSERT_EQ(gpsSuccess, gpsMemset(g, 0x1ab, 64));
	ASSERT_EQ((char)0xab, g[63]);
	ASSERT_EQ(gpsSuccess, gpsMemset(h, 3, 64));
	ASSERT_EQ(3, h[0]);
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(g + 1, 0, 64));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemset(NULL, 0, 1));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsMemset(host, 0, 16));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(h));
}

/* A driver without GPS_IOC_TRACK: a clear error, no effect. */
TEST_F(mem, tracking_not_supported)
{
	mock_track = 0;
	ASSERT_EQ(gpsErrorNotSupported, gpsTrackingStart());
	ASSERT_EQ(gpsErrorNotSupported, gpsGetLastError());
	ASSERT_EQ(gpsErrorNotSupported, gpsTrackingStop());
}

/* With GPS_IOC_TRACK: start/stop pair up, misuse is InvalidValue. */
TEST_F(mem, tracking)
{
	mock_track = 1;
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	ASSERT_EQ(1, mock_tracking);
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStart());
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(0, mock_tracking);
}

/* System-scope atomics collapse a GPS page once, on the caller's device;
 * a subscribe forgets it; other memory is never collapsed. */
TEST_F(mem, system_scope)
{
	unsigned long long m[2];
	int *g, *c, *h, local = 0;
	size_t np;

	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 2 * PAGE, 0));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c, 64));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&h, 64));
	ASSERT_EQ(gpsSuccess, gpsMemset(g, 0, 2 * PAGE));
	ASSERT_EQ(0, mock_collapses);
	/* conventional, host and unregistered memory: nothing to do */
	ASSERT_EQ(0, gpsAtomicAddSystem(c, 1));
	ASSERT_EQ(0, gpsAtomicAddSystem(h, 1));
	ASSERT_EQ(0, gpsAtomicAddSystem(&local, 1));
	ASSERT_EQ(0, mock_collapses);
	/* first use on the second page of g, from device 1 */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(0, gpsAtomicAddSystem(g + PAGE / sizeof(int), 5));
	ASSERT_EQ(1, mock_collapses);
	ASSERT_EQ(5, gpsAtomicLoadSystem(g + PAGE / sizeof(int) + 0));
	ASSERT_EQ(5, gpsAtomicExchSystem(g + PAGE / sizeof(int), 7));
	ASSERT_EQ(7, gpsAtomicCASSystem(g + PAGE / sizeof(int) + 0, 7, 8));
	ASSERT_EQ(1, mock_collapses);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, 2 * PAGE, m, 2, &np));
	ASSERT_EQ(3, m[0]);		/* untouched page: still replicated */
	ASSERT_EQ(2, m[1]);		/* device 1's copy only */
	/* another thread's cache, another view: no second collapse */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(8, gpsAtomicLoadSystem(
		(int *)gpsDevicePtr(g) + PAGE / sizeof(int)));
	ASSERT_EQ(1, mock_collapses);
	/* a subscribe replicates it again: the next atomic collapses */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 2 * PAGE,
					   gpsMemAdviseGPSSubscribe, 0));
	gpsAtomicStoreSystem(g + PAGE / sizeof(int), 9);
	ASSERT_EQ(2, mock_collapses);
	/* explicit collapse advice fills the cache too */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, 4, gpsMemAdviseGPSCollapse, 0));
	ASSERT_EQ(3, mock_collapses);
	ASSERT_EQ(0ULL, gpsAtomicAddSystemU64((unsigned long long *)g, 1));
	ASSERT_EQ(3, mock_collapses);
	/* checks */
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemSystemScope(NULL, 4));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemSystemScope(g, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsMemSystemScope(g, 2 * PAGE + 1));
	ASSERT_EQ(gpsSuccess, gpsMemSystemScope(&local, sizeof(local)));
	/* a new allocation where the cache said "nothing": seen */
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, PAGE, 0));
	ASSERT_EQ(0, gpsAtomicAddSystem(g, 1));
	ASSERT_EQ(4, mock_collapses);
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsFree(c));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(h));
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put_knob(const char *dir, const char *name, const char *v)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(v, f);
		fclose(f);
	}
}

/* The first line of @dir/@name into @buf. */
static void get_file(const char *dir, const char *name, char *buf, int len)
{
	char path[300];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, len, f))
			buf[0] = '\0';
		fclose(f);
	}
}

/* The driver engine's knobs are the files of $GPSU_SYSFS (a fake of
 * /sys/kernel/gps): numbers, and track_policy's words by number; a knob
 * without its file, or an unknown name, refused. */
TEST_F(mem, knobs_are_sysfs_files)
{
	char dir[] = "/tmp/gpsu-knobs-XXXXXX", buf[64], path[300];
	unsigned long long v = 0;
	int ndev;

	ASSERT_NE(NULL, mkdtemp(dir));
	setenv("GPSU_SYSFS", dir, 1);
	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&ndev));
	put_knob(dir, "block_size", "128\n");
	put_knob(dir, "track_policy", "touched [read]\n");
	ASSERT_EQ(gpsSuccess, gpsGetKnob(&v, "block_size"));
	ASSERT_EQ(128, v);
	ASSERT_EQ(gpsSuccess, gpsGetKnob(&v, "track_policy"));
	ASSERT_EQ(1, v);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("block_size", 256));
	get_file(dir, "block_size", buf, sizeof(buf));
	ASSERT_STREQ("256\n", buf);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("track_policy", 0));
	get_file(dir, "track_policy", buf, sizeof(buf));
	ASSERT_STREQ("touched\n", buf);
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("track_policy", 2));
	/* a driver without the file: not supported; no such knob at all */
	ASSERT_EQ(gpsErrorNotSupported, gpsGetKnob(&v, "harvest_ahead"));
	ASSERT_EQ(gpsErrorNotSupported, gpsSetKnob("harvest_ahead", 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetKnob(&v, "no_such_knob"));
	/* without the right to write it (root writes any file) */
	snprintf(path, sizeof(path), "%s/block_size", dir);
	ASSERT_EQ(0, chmod(path, 0444));
	if (geteuid())
		ASSERT_EQ(gpsErrorNotPermitted, gpsSetKnob("block_size", 64));
	unsetenv("GPSU_SYSFS");
	unlink(path);
	snprintf(path, sizeof(path), "%s/track_policy", dir);
	unlink(path);
	ASSERT_EQ(0, rmdir(dir));
}

/* The link model ($GPSU_SYSFS: a fake knob directory): a copy between
 * two devices' memory takes bytes / bandwidth + latency; a copy within
 * one device, or from the host, takes no link. The latency is large so
 * that a loaded host cannot blur the two. */
TEST_F(mem, link_model)
{
	char dir[] = "/tmp/gpsu-link-XXXXXX", *c0, *c1, *g, host[64];
	char path[300];
	double t0, dt;

	ASSERT_NE(NULL, mkdtemp(dir));
	setenv("GPSU_SYSFS", dir, 1);
	put_knob(dir, "link_bandwidth", "1000000\n");	/* 1 MB/s */
	put_knob(dir, "link_latency_ns", "500000000\n");	/* 0.5 s */
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c0, 100000));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 100000, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&c1, 100000));
	/* 100 kB at 1 MB/s + 0.5 s: 0.6 s */
	t0 = mono_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c1, c0, 100000,
					gpsMemcpyDeviceToDevice));
	dt = mono_s() - t0;
	ASSERT_LE(0.6, dt);
	ASSERT_GT(3.0, dt);
	/* GPS memory is its view's device's: device 0 -> device 1 */
	t0 = mono_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(c1, g, 50000,
					     gpsMemcpyDefault, NULL));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(NULL));
	ASSERT_LE(0.55, mono_s() - t0);
	/* not across devices: no wait */
	t0 = mono_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c0, g, 100000, gpsMemcpyDefault));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c1, host, sizeof(host),
					gpsMemcpyHostToDevice));
	ASSERT_GT(0.3, mono_s() - t0);
	/* bandwidth 0 and latency 0: the model is off */
	put_knob(dir, "link_bandwidth", "0\n");
	put_knob(dir, "link_latency_ns", "0\n");
	t0 = mono_s();
	ASSERT_EQ(gpsSuccess, gpsMemcpy(c1, c0, 100000,
					gpsMemcpyDeviceToDevice));
	ASSERT_GT(0.3, mono_s() - t0);
	unsetenv("GPSU_SYSFS");
	ASSERT_EQ(gpsSuccess, gpsFree(c0));
	ASSERT_EQ(gpsSuccess, gpsFree(c1));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	snprintf(path, sizeof(path), "%s/link_bandwidth", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/link_latency_ns", dir);
	unlink(path);
	rmdir(dir);
}

TEST_HARNESS_MAIN
