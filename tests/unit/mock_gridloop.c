// SPDX-License-Identifier: MIT
/*
 * Description: GPS_GRID_STRIDE_LOOP with loop variables of any name
 * (i, pos, end, n, e: names that once collided with the macro's
 * internals) and type, against the in-process mock driver (t_mock.h):
 * every index of [0, n) runs exactly once, on both devices, for one
 * block of one thread, one block of several, several blocks and a 2-D
 * grid, in GPS_KERNEL and GPS_KERNEL_SYNC kernels and in host code.
 */
#include <stddef.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"

struct gl_k {
	int *hits;
	unsigned int n;
};

/* the loop variable's name and type are the macro's arguments */
#define GL_KERNEL(kname, var, T)					\
GPS_KERNEL(kname, struct gl_k, a)					\
{									\
	T var;								\
									\
	GPS_GRID_STRIDE_LOOP(var, (T)a->n)				\
		__atomic_fetch_add(&a->hits[var], 1, __ATOMIC_RELAXED);	\
}

GL_KERNEL(gl_i, i, unsigned int)
GL_KERNEL(gl_pos, pos, size_t)
GL_KERNEL(gl_end, end, unsigned long long)
GL_KERNEL(gl_n, n, int)
GL_KERNEL(gl_e, e, long)

GPS_KERNEL_SYNC(gl_sync_end, struct gl_k, a)
{
	unsigned int end;

	GPS_GRID_STRIDE_LOOP(end, a->n)
		__atomic_fetch_add(&a->hits[end], 1, __ATOMIC_RELAXED);
	gpsSyncThreads();
}

#define GL_MAX	1000

FIXTURE(gridloop) {
	struct gl_k a;
};

FIXTURE_SETUP(gridloop)
{
	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->a.hits,
					    GL_MAX * sizeof(int)));
}

FIXTURE_TEARDOWN(gridloop)
{
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->a.hits));
}

/* Each kernel, on each device, over each grid and n: hits[i] is 1 for
 * every i < n, 0 past it. */
TEST_F(gridloop, any_name_every_index_once)
{
	const gpsKernel *ks[] = { &gl_i, &gl_pos, &gl_end, &gl_n, &gl_e,
				  &gl_sync_end };
	struct { gpsDim3 g, b; } grids[] = {
		{ { 1, 1, 1 }, { 1, 1, 1 } },
		{ { 1, 1, 1 }, { 7, 1, 1 } },
		{ { 5, 1, 1 }, { 3, 1, 1 } },
		{ { 4, 3, 1 }, { 8, 2, 1 } },
	};
	unsigned int ns[] = { 0, 1, 37, 96, GL_MAX };
	unsigned int k, g, j, x;
	int d, ndev;

	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&ndev));
	ASSERT_LE(2, ndev);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		for (k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
			for (g = 0; g < sizeof(grids) / sizeof(grids[0]); g++)
				for (j = 0; j < sizeof(ns) / sizeof(ns[0]);
				     j++) {
					self->a.n = ns[j];
					memset(self->a.hits, 0,
					       GL_MAX * sizeof(int));
					ASSERT_EQ(gpsSuccess,
						  gpsLaunch(ks[k], grids[g].g,
							    grids[g].b,
							    GPS_ARGS_RAW(&self->a),
							    0, NULL));
					ASSERT_EQ(gpsSuccess,
						  gpsDeviceSynchronize());
					for (x = 0; x < GL_MAX; x++)
						if (self->a.hits[x] !=
						    (x < ns[j]))
							break;
					EXPECT_EQ(GL_MAX, x) {
						TH_LOG("%s, device %d, grid %u, n %u: hits[%u] = %d",
						       ks[k]->name, d, g,
						       ns[j], x,
						       self->a.hits[x]);
					}
				}
	}
}

/* Outside a kernel the loop runs all of [0, n) on the caller. */
TEST_F(gridloop, host_code)
{
	unsigned long end;
	int pos, count = 0;

	GPS_GRID_STRIDE_LOOP(end, 10ul)
		count++;
	ASSERT_EQ(10, count);
	count = 0;
	GPS_GRID_STRIDE_LOOP(pos, 5)
		count += pos;
	ASSERT_EQ(0 + 1 + 2 + 3 + 4, count);
}

TEST_HARNESS_MAIN
