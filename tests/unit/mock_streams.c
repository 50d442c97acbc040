// SPDX-License-Identifier: MIT
/*
 * Description: stream and event handles against the in-process mock
 * driver (t_mock.h): a stream destroyed while other threads launch into
 * it, copy into it, record events on it, query and synchronize it is
 * never used after it is freed (ASan watches), and every call that comes
 * after the destroy returns gpsErrorInvalidResourceHandle; handles that
 * were never streams or events are refused without being dereferenced.
 */
#include <stdatomic.h>
#include <time.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"

#define ROUNDS	1000
#define USERS	6

FIXTURE(streams) {
	int unused;
};

FIXTURE_SETUP(streams)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
}

FIXTURE_TEARDOWN(streams)
{
	EXPECT_EQ(0, mock_nr_allocs);
}

static void nop(void *a)
{
	(void)a;
}

/* A large argument block of GPS pointers: each launch translates every
 * word, which keeps the launching thread between the handle's lookup and
 * the enqueue for a while (the window a destroy used to free it in). */
struct big_args {
	void *p[GPS_KERNEL_MAX_ARGS_SIZE / sizeof(void *)];
};

struct user {
	pthread_t thread;
	struct big_args *args;
	gpsStream_t s;
	gpsEvent_t ev;
	char *buf;		/* host memory, 64 bytes per user */
	atomic_int *go;
	unsigned long calls;	/* calls that succeeded */
	gpsError_t bad;		/* first error other than a dead handle */
	int saw_dead;		/* ended on gpsErrorInvalidResourceHandle */
};

/* Uses the stream in every way until it is gone. */
static void *user_main(void *p)
{
	struct user *u = p;
	gpsError_t err;
	unsigned long i;

	while (!atomic_load(u->go))
		sched_yield();
	for (i = 0;; i++) {
		/* mostly launches: slow to submit, quick to run */
		switch (i % 16 < 8 ? 0 : i % 16 - 7) {
		case 0:
			err = gpsLaunchKernel(nop, gpsDim(1, 1, 1),
					      gpsDim(1, 1, 1),
					      GPS_ARGS_SCAN(u->args), u->s);
			break;
		case 1:
			err = gpsMemsetAsync(u->buf, (int)i, 64, u->s);
			break;
		case 2:
			err = gpsStreamQuery(u->s);
			if (err == gpsErrorNotReady)
				err = gpsSuccess;
			break;
		case 3:
			err = gpsEventRecord(u->ev, u->s);
			break;
		case 4:
			err = gpsStreamWaitEvent(u->s, u->ev, 0);
			break;
		case 5:
			err = gpsMemPrefetchAsync(u->buf, 64, 0, u->s);
			break;
		default:
			err = gpsStreamSynchronize(u->s);
			break;
		}
		if (err == gpsErrorInvalidResourceHandle) {
			u->saw_dead = 1;
			break;
		}
		if (err) {
			u->bad = err;
			break;
		}
		u->calls++;
	}
	return NULL;
}

/* Streams destroyed while USERS threads use them: no use after free, the
 * destroy succeeds, and the users then get a dead handle, nothing else. */
TEST_F(streams, destroy_while_used)
{
	struct user u[USERS];
	struct big_args args;
	atomic_int go;
	gpsEvent_t ev;
	gpsStream_t s;
	char *buf, *g;
	size_t i;
	int r;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&buf, USERS * 64));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, 4096, 0));
	for (i = 0; i < sizeof(args.p) / sizeof(args.p[0]); i++)
		args.p[i] = g + i % 4096;
	ASSERT_EQ(gpsSuccess, gpsEventCreate(&ev));
	for (r = 0; r < ROUNDS; r++) {
		struct timespec pause = { 0, (r % 4) * 250000L };

		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
		atomic_store(&go, 0);
		for (i = 0; i < USERS; i++) {
			memset(&u[i], 0, sizeof(u[i]));
			u[i].s = s;
			u[i].args = &args;
			u[i].ev = ev;
			u[i].buf = buf + i * 64;
			u[i].go = &go;
			ASSERT_EQ(0, pthread_create(&u[i].thread, NULL,
						    user_main, &u[i]));
		}
		atomic_store(&go, 1);
		nanosleep(&pause, NULL);
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
		/* after the destroy: a dead handle, whatever the call */
		ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamQuery(s));
		ASSERT_EQ(gpsErrorInvalidResourceHandle,
			  gpsStreamSynchronize(s));
		ASSERT_EQ(gpsErrorInvalidResourceHandle,
			  gpsLaunchKernel(nop, gpsDim(1, 1, 1),
					  gpsDim(1, 1, 1), NULL, s));
		ASSERT_EQ(gpsErrorInvalidResourceHandle,
			  gpsEventRecord(ev, s));
		ASSERT_EQ(gpsErrorInvalidResourceHandle,
			  gpsStreamDestroy(s));
		for (i = 0; i < USERS; i++) {
			ASSERT_EQ(0, pthread_join(u[i].thread, NULL));
			EXPECT_EQ(gpsSuccess, u[i].bad);
			EXPECT_EQ(1, u[i].saw_dead);
		}
	}
	gpsGetLastError();
	ASSERT_EQ(gpsSuccess, gpsEventSynchronize(ev));
	ASSERT_EQ(gpsSuccess, gpsEventDestroy(ev));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(buf));
}

/* Handles that were never streams or events, and the default stream
 * passed to gpsStreamDestroy, are refused. */
TEST_F(streams, foreign_handles)
{
	gpsStream_t s, fake = (gpsStream_t)&s;
	gpsEvent_t fake_ev = (gpsEvent_t)&s;

	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamQuery(fake));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamSynchronize(fake));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamDestroy(fake));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamDestroy(NULL));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsEventQuery(fake_ev));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsEventRecord(fake_ev, NULL));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsEventDestroy(fake_ev));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsErrorInvalidResourceHandle, gpsStreamDestroy(s));
	gpsGetLastError();
}

TEST_HARNESS_MAIN
