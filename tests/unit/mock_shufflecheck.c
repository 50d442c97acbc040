// SPDX-License-Identifier: MIT
/*
 * Description: GPSU_CHECK_SHUFFLE=1, the debug mode that reports shuffles
 * reading a lane that does not take part (not in the mask, returned, past
 * the block's last thread: CUDA leaves the value undefined, libgpsu gives
 * the caller's own), against the in-process mock driver (t_mock.h). The
 * warp reduction of a block of 8 threads with the full mask (what CUDA's
 * reduce4-reduce7 do in a last pass of few threads) is reported, naming
 * the kernel, the thread and the lane; a full warp is not; without the
 * variable nothing is said; the reports stop after 16 lines.
 */
#define GPSU_CUDA_NAMES
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"
#include "t_stderr.h"

struct sc_k {
	int *out;		/* per block: lane 0's sum */
};

/* a warp-shuffle sum of thread indices over the full mask */
GPS_KERNEL_SYNC(warp_sum_full_mask, struct sc_k, a)
{
	int v = (int)threadIdx.x, o;

	for (o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if (threadIdx.x == 0)
		a->out[blockIdx.x] = v;
}

/* a shuffle from a lane left out of the mask */
GPS_KERNEL_SYNC(shfl_outside_mask, struct sc_k, a)
{
	int v;

	if (threadIdx.x < 16) {
		v = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 20);
		if (threadIdx.x == 3)
			a->out[0] = v;
	}
}

FIXTURE(shflcheck) {
	struct sc_k a;
	struct t_stderr err;
};

FIXTURE_SETUP(shflcheck)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->a.out,
					    64 * sizeof(int)));
	memset(self->a.out, 0, 64 * sizeof(int));
	ASSERT_EQ(0, t_stderr_catch(&self->err));
}

FIXTURE_TEARDOWN(shflcheck)
{
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->a.out));
}

static gpsError_t sc_run(FIXTURE_DATA(shflcheck) *self, const gpsKernel *k,
			 unsigned int blocks, unsigned int threads)
{
	gpsError_t err = gpsLaunch(k, gpsDim(blocks, 1, 1),
				   gpsDim(threads, 1, 1),
				   GPS_ARGS_RAW(&self->a), 0, NULL);

	return err ? err : gpsDeviceSynchronize();
}

/* 8 threads, full mask: lane 0 reads lanes 16, 8 (past the block) and
 * gets its own value back; each such read is one line */
TEST_F(shflcheck, short_block_full_mask_reported)
{
	char buf[16384];

	setenv("GPSU_CHECK_SHUFFLE", "1", 1);
	ASSERT_EQ(gpsSuccess, sc_run(self, &warp_sum_full_mask, 1, 8));
	t_stderr_said(&self->err, buf, sizeof(buf));
	/* the result CUDA would not promise: 28 summed with own copies */
	EXPECT_NE(28, self->a.out[0]);
	EXPECT_NE(NULL, strstr(buf, "GPSU_CHECK_SHUFFLE")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "warp_sum_full_mask")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "thread (0, 0, 0)")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "reads lane 16")) TH_LOG("%s", buf);
	/* offsets 16 and 8 read past lane 7 for all 8 threads: 16 lines,
	 * the cap; offset 4 adds the line that says the rest is not said */
	EXPECT_EQ(17, t_lines(buf)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "no more are reported")) TH_LOG("%s",
								   buf);
}

/* lanes 0-15 read lane 20, left out of their mask 0x0000ffff */
TEST_F(shflcheck, lane_outside_mask_reported)
{
	char buf[16384];

	setenv("GPSU_CHECK_SHUFFLE", "1", 1);
	ASSERT_EQ(gpsSuccess, sc_run(self, &shfl_outside_mask, 1, 32));
	t_stderr_said(&self->err, buf, sizeof(buf));
	EXPECT_EQ(3, self->a.out[0]);	/* its own value */
	EXPECT_EQ(16, t_lines(buf)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "thread (3, 0, 0): a shuffle reads lane 20"))
		TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "mask 0x0000ffff")) TH_LOG("%s", buf);
}

/* a full warp reads only lanes that take part: nothing to say */
TEST_F(shflcheck, full_warp_silent)
{
	char buf[4096];

	setenv("GPSU_CHECK_SHUFFLE", "1", 1);
	ASSERT_EQ(gpsSuccess, sc_run(self, &warp_sum_full_mask, 3, 64));
	t_stderr_said(&self->err, buf, sizeof(buf));
	EXPECT_STREQ("", buf);
	EXPECT_EQ(31 * 32 / 2, self->a.out[0]);
	EXPECT_EQ(31 * 32 / 2, self->a.out[2]);
}

/* the mode is off unless asked for */
TEST_F(shflcheck, off_by_default)
{
	char buf[4096];

	unsetenv("GPSU_CHECK_SHUFFLE");
	ASSERT_EQ(gpsSuccess, sc_run(self, &warp_sum_full_mask, 1, 8));
	t_stderr_said(&self->err, buf, sizeof(buf));
	EXPECT_STREQ("", buf);
}

/* a block of one thread outside fibers (GPS_KERNEL): lane 0 reading
 * lane 1 is reported too */
GPS_KERNEL(lone_shfl, struct sc_k, a)
{
	a->out[0] = __shfl_down_sync(0xffffffffu, 5, 1);
}

TEST_F(shflcheck, lone_thread_reported)
{
	char buf[4096];

	setenv("GPSU_CHECK_SHUFFLE", "1", 1);
	ASSERT_EQ(gpsSuccess, sc_run(self, &lone_shfl, 1, 1));
	t_stderr_said(&self->err, buf, sizeof(buf));
	EXPECT_EQ(5, self->a.out[0]);
	EXPECT_EQ(1, t_lines(buf)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "reads lane 1,")) TH_LOG("%s", buf);
}

TEST_HARNESS_MAIN
