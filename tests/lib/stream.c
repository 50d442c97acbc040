// SPDX-License-Identifier: MIT
/*
 * Description: streams and events against gps.ko, with the asynchronous
 * io_uring fences: stream order across kernels and copies, events and
 * elapsed time, a cross-device dependency through gpsStreamWaitEvent, a
 * stream destroyed while other threads launch into it (every launch that
 * succeeded ran, the others got gpsErrorInvalidResourceHandle), more
 * fences in flight than the driver allows one open file (those it refuses
 * are done by ioctl), and the same with ioctl fences (GPSU_NO_URING is
 * read per stream).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"
#include "t_lib.h"

struct inc_args {
	int *v;			/* GPS, translated */
	int n;
};

static void inc(void *p)
{
	const struct inc_args *a = p;
	unsigned int i = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	if ((int)i < a->n)
		a->v[i] += 1;
}

struct fill_args {
	unsigned char *v;	/* GPS, translated */
	int n;
};

static void fill(void *p)
{
	const struct fill_args *a = p;
	int i;

	for (i = 0; i < a->n; i++)
		a->v[i] = 0x5a;
}

FIXTURE(streams) {
	int ndev;
	unsigned long long bw0;	/* link_bandwidth, when saved */
	int bw_saved;
};

FIXTURE_VARIANT(streams) {
	int no_uring;
};

FIXTURE_VARIANT_ADD(streams, uring) {
	.no_uring = 0,
};

FIXTURE_VARIANT_ADD(streams, ioctl) {
	.no_uring = 1,
};

FIXTURE_SETUP(streams)
{
	if (variant->no_uring)
		setenv("GPSU_NO_URING", "1", 1);
	self->ndev = 0;
	self->bw_saved = 0;
}

FIXTURE_TEARDOWN(streams)
{
	if (self->bw_saved)
		t_knob_set("link_bandwidth", self->bw0);
}

/* Kernels then a copy, in order; events time the kernels. */
TEST_F(streams, order_and_events)
{
	struct inc_args a;
	gpsStream_t s;
	gpsEvent_t e0, e1;
	int host[1024], i, k;
	float ms;

	T_DEVICES(self->ndev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(self->ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e0));
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&e1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.v, sizeof(host), 0));
	a.n = 1024;
	ASSERT_EQ(gpsSuccess, gpsMemsetAsync(a.v, 0, sizeof(host), s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e0, s));
	for (k = 0; k < 10; k++)
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(8, 1, 1),
				gpsDim(128, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(e1, s));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(host, a.v, sizeof(host),
					     gpsMemcpyDeviceToHost, s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(10, host[i]);
	ASSERT_EQ(gpsSuccess, gpsEventElapsedTime(&ms, e0, e1));
	ASSERT_LE(0.0, ms);
	/* every replica holds the result */
	for (k = 0; k < self->ndev; k++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(k));
		ASSERT_EQ(10, ((int *)gpsDevicePtr(a.v))[1023]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(self->ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(e1));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(a.v));
}

/* Device 1 waits on device 0's event, then reads what device 0 wrote. */
TEST_F(streams, cross_device_dependency)
{
	struct inc_args a;
	gpsStream_t s0, s1;
	gpsEvent_t done0;
	int i, host[256];

	T_MIN_DEVICES(self->ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.v, sizeof(host), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(a.v, 0, sizeof(host)));
	a.n = 256;
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&done0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(2, 1, 1),
			gpsDim(128, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s0));
	ASSERT_EQ(gpsSuccess, gpsEventRecord(done0, s0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsStreamWaitEvent(s1, done0, 0));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(inc, gpsDim(2, 1, 1),
			gpsDim(128, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct inc_args, v)), s1));
	ASSERT_EQ(gpsSuccess, gpsMemcpyAsync(host, a.v, sizeof(host),
					     gpsMemcpyDeviceToHost, s1));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s1));
	for (i = 0; i < 256; i++)
		ASSERT_EQ(2, host[i]);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s0));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(done0));
	ASSERT_EQ(gpsSuccess, gpsFree(a.v));
}

#define USERS	2

struct user {
	pthread_t thread;
	gpsStream_t s;
	struct inc_args *a;
	int device;
	int launched;		/* launches that succeeded */
	gpsError_t bad;		/* first error but a dead handle */
	int saw_dead;
};

static void *user_main(void *p)
{
	struct user *u = p;
	gpsError_t err;

	gpsSetDevice(u->device);
	for (;;) {
		err = gpsLaunchKernel(inc, gpsDim(1, 1, 1), gpsDim(64, 1, 1),
				      GPS_ARGS(u->a, GPS_PTR(struct inc_args, v)),
				      u->s);
		if (!err) {
			u->launched++;
			err = gpsStreamQuery(u->s);
			if (err == gpsErrorNotReady)
				err = gpsSuccess;
		}
		if (err == gpsErrorInvalidResourceHandle) {
			u->saw_dead = 1;
			return NULL;
		}
		if (err) {
			u->bad = err;
			return NULL;
		}
	}
}

/* A stream destroyed while USERS threads launch into it: the destroy
 * waits for them, runs what they queued and frees it; they then get a
 * dead handle. Each kernel adds 1: the data counts the launches. */
TEST_F_TIMEOUT(streams, destroy_while_used, 300)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	struct user u[USERS];
	struct inc_args a;
	int host[64], total, round, i;
	gpsStream_t s;

	T_DEVICES(self->ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.v, sizeof(host), 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(a.v, 0, sizeof(host)));
	a.n = 64;
	total = 0;
	for (round = 0; round < 5; round++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(self->ndev - 1));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
		for (i = 0; i < USERS; i++) {
			memset(&u[i], 0, sizeof(u[i]));
			u[i].s = s;
			u[i].a = &a;
			u[i].device = self->ndev - 1;
			ASSERT_EQ(0, pthread_create(&u[i].thread, NULL,
						    user_main, &u[i]));
		}
		nanosleep(&pause, NULL);
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
		ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamQuery(s));
		for (i = 0; i < USERS; i++) {
			ASSERT_EQ(0, pthread_join(u[i].thread, NULL));
			ASSERT_EQ(gpsSuccess, u[i].bad);
			ASSERT_EQ(1, u[i].saw_dead);
			total += u[i].launched;
		}
		gpsGetLastError();
		ASSERT_EQ(gpsSuccess, gpsMemcpy(host, a.v, sizeof(host),
						gpsMemcpyDeviceToHost));
		for (i = 0; i < 64; i++)
			ASSERT_EQ(total, host[i]);
	}
	ASSERT_LT(0, total);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(a.v));
}

/*
 * More asynchronous fences at once than the driver lets one open file
 * have in flight (GPS_URING_FENCES_MAX, 64): six streams of device 0
 * end 16 kernels each while a slow link holds the first kernel's fence
 * (2 KiB to each other device at 1 KiB/s per receiver), so that the
 * driver refuses some with -EBUSY; those are fenced by ioctl, every
 * stream synchronizes with gpsSuccess and every device sees the store.
 */
TEST_F_TIMEOUT(streams, more_fences_than_the_driver_holds, 120)
{
	enum { NS = 6, NK = 16 };
	struct fill_args a0, a;
	gpsStream_t s[NS];
	unsigned char *v;
	int i, k;

	T_MIN_DEVICES(self->ndev, 2);
	ASSERT_EQ(0, t_knob_get("link_bandwidth", &self->bw0));
	self->bw_saved = 1;
	T_KNOB_SET("link_bandwidth", 1024ULL * (self->ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&v, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(v, 0, 4096));
	for (i = 0; i < NS; i++)
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[i]));
	a0.v = v;
	a0.n = 2048;
	a.v = v;
	a.n = 0;
	for (k = 0; k < NK; k++) {
		for (i = 0; i < NS; i++) {
			struct fill_args *ap = k || i ? &a : &a0;

			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(fill,
					gpsDim(1, 1, 1), gpsDim(1, 1, 1),
					GPS_ARGS(ap, GPS_PTR(struct fill_args,
							     v)),
					s[i]));
		}
	}
	for (i = 0; i < NS; i++)
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[i]));
	for (k = 0; k < self->ndev; k++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(k));
		ASSERT_EQ(0x5a, ((unsigned char *)gpsDevicePtr(v))[2047]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (i = 0; i < NS; i++)
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[i]));
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

TEST_HARNESS_MAIN
