// SPDX-License-Identifier: MIT
/*
 * Description: a barrier (gpsSyncThreads, __syncthreads) or a warp function
 * in a kernel defined with GPS_KERNEL instead of GPS_KERNEL_SYNC, the
 * commonest porting mistake, against the in-process mock driver
 * (t_mock.h): the launch fails with gpsErrorLaunchFailure, whose string
 * names GPS_KERNEL_SYNC, and one line on stderr names the kernel and
 * says to define it with GPS_KERNEL_SYNC; a gpsLaunchKernel kernel too.
 */
#define GPSU_CUDA_NAMES
#include <stdio.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"

struct ns_k {
	int *count;
};

/* the mistake: GPS_KERNEL, not GPS_KERNEL_SYNC */
GPS_KERNEL(forgot_sync, struct ns_k, a)
{
	__atomic_fetch_add(a->count, 1, __ATOMIC_RELAXED);
	__syncthreads();
}

GPS_KERNEL(forgot_sync_warp, struct ns_k, a)
{
	(void)a;
	gpsSyncWarp(0xffffffffu);
}

static void plain_sync(void *args)
{
	(void)args;
	gpsSyncThreads();
}

FIXTURE(nosync) {
	struct ns_k a;
	FILE *err;		/* stderr while the kernel runs */
	int saved;		/* the real stderr */
};

FIXTURE_SETUP(nosync)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->a.count,
					    sizeof(int)));
	*self->a.count = 0;
	self->err = tmpfile();
	ASSERT_NE(NULL, self->err);
	fflush(stderr);
	self->saved = dup(2);
	ASSERT_LE(0, self->saved);
	ASSERT_EQ(2, dup2(fileno(self->err), 2));
}

FIXTURE_TEARDOWN(nosync)
{
	fflush(stderr);
	dup2(self->saved, 2);
	close(self->saved);
	fclose(self->err);
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->a.count));
}

/* what the library wrote on stderr since the setup, restored to the real
 * stderr so that the harness's messages go there */
static void said(FIXTURE_DATA(nosync) *self, char *buf, size_t size)
{
	size_t n;

	fflush(stderr);
	dup2(self->saved, 2);
	rewind(self->err);
	n = fread(buf, 1, size - 1, self->err);
	buf[n] = 0;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

TEST_F(nosync, syncthreads_in_gps_kernel)
{
	char buf[4096];

	ASSERT_EQ(gpsSuccess, gpsLaunch(&forgot_sync, gpsDim(3, 1, 1),
					gpsDim(4, 1, 1),
					GPS_ARGS_RAW(&self->a), 0, NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorLaunchFailure, gpsGetLastError());
	said(self, buf, sizeof(buf));
	ASSERT_NE(NULL, strstr(gpsGetErrorString(gpsErrorLaunchFailure),
			       "GPS_KERNEL_SYNC"));
	/* one line, naming the kernel and the fix */
	EXPECT_EQ(1, lines(buf)) TH_LOG("stderr: %s", buf);
	EXPECT_NE(NULL, strstr(buf, "forgot_sync")) TH_LOG("stderr: %s", buf);
	EXPECT_NE(NULL, strstr(buf, "GPS_KERNEL_SYNC")) TH_LOG("stderr: %s",
							      buf);
	EXPECT_NE(NULL, strstr(buf, "gpsSyncThreads")) TH_LOG("stderr: %s",
							     buf);
}

TEST_F(nosync, warp_function_in_gps_kernel)
{
	char buf[4096];

	ASSERT_EQ(gpsSuccess, gpsLaunch(&forgot_sync_warp, gpsDim(2, 1, 1),
					gpsDim(32, 1, 1),
					GPS_ARGS_RAW(&self->a), 0, NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	said(self, buf, sizeof(buf));
	EXPECT_EQ(1, lines(buf)) TH_LOG("stderr: %s", buf);
	EXPECT_NE(NULL, strstr(buf, "forgot_sync_warp")) TH_LOG("stderr: %s",
								buf);
	EXPECT_NE(NULL, strstr(buf, "GPS_KERNEL_SYNC")) TH_LOG("stderr: %s",
							      buf);
}

TEST_F(nosync, syncthreads_in_launch_kernel)
{
	char buf[4096];

	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(plain_sync, gpsDim(2, 1, 1),
					      gpsDim(8, 1, 1), NULL, NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	said(self, buf, sizeof(buf));
	EXPECT_EQ(1, lines(buf)) TH_LOG("stderr: %s", buf);
	EXPECT_NE(NULL, strstr(buf, "gpsLaunchKernel")) TH_LOG("stderr: %s",
							      buf);
	EXPECT_NE(NULL, strstr(buf, "GPS_KERNEL_SYNC")) TH_LOG("stderr: %s",
							      buf);
}

/* a block of one thread has nothing to wait for: no error, nothing said */
TEST_F(nosync, one_thread_blocks_are_fine)
{
	char buf[4096];

	ASSERT_EQ(gpsSuccess, gpsLaunch(&forgot_sync, gpsDim(3, 1, 1),
					gpsDim(1, 1, 1),
					GPS_ARGS_RAW(&self->a), 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	said(self, buf, sizeof(buf));
	EXPECT_STREQ("", buf);
	EXPECT_EQ(3, *self->a.count);
}

TEST_HARNESS_MAIN
