// SPDX-License-Identifier: MIT
/*
 * Description: GPS_KERNEL_PHASES (a block's threads as loops between
 * barriers) against GPS_KERNEL_SYNC (fibers) on the in-process mock driver
 * (t_mock.h): the reductions, the tiled matrix product and the shared-
 * memory histogram of bench/barrier_kernels.h compute exactly what the fiber forms do,
 * and what a CPU reference does, for odd sizes and several block sizes;
 * each thread loop visits every thread once, in order, with its
 * coordinates, and per-thread values live across barriers; a barrier
 * inside a thread loop fails the launch with a line that says where the
 * barrier belongs.
 */
#define GPSU_CUDA_NAMES
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "t_mock.h"
#include "../../bench/barrier_kernels.h"
#include "t_stderr.h"

/* a fixed pseudo-random sequence (xorshift32) */
static unsigned int tp_rand(unsigned int *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static gpsError_t tp_launch(const gpsKernel *k, gpsDim3 g, gpsDim3 b,
			    void *args, size_t argsize, size_t shared)
{
	gpsKernelArgs ka = { .data = args, .size = argsize };
	gpsError_t err = gpsLaunch(k, g, b, &ka, shared, NULL);

	return err ? err : gpsDeviceSynchronize();
}

FIXTURE(phases) {
	int *in;
	long long *out_f, *out_p;
};

#define TP_N	100003u		/* odd: the last block is partial */

FIXTURE_SETUP(phases)
{
	unsigned int i, x = 12345;

	mock_setup();
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->in,
					    TP_N * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->out_f,
					    TP_N * sizeof(long long)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&self->out_p,
					    TP_N * sizeof(long long)));
	for (i = 0; i < TP_N; i++)
		self->in[i] = (int)(tp_rand(&x) % 2001) - 1000;
}

FIXTURE_TEARDOWN(phases)
{
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->in));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->out_f));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(self->out_p));
}

/* Runs @fib and @ph over n ints in blocks of @bs (and @grid blocks, or
 * enough for one element per thread): the per-block sums are the same,
 * and their total is the CPU's. */
static void tp_check_reduce(struct __test_metadata *_metadata,
			    FIXTURE_DATA(phases) *self, const gpsKernel *fib,
			    const gpsKernel *ph, unsigned int n,
			    unsigned int bs, unsigned int grid)
{
	struct tp_reduce a = { self->in, self->out_f, n };
	unsigned int nb = grid ? grid : (n + bs - 1) / bs, b;
	size_t sh = bs * sizeof(long long);
	long long want = 0, got = 0;

	for (b = 0; b < n; b++)
		want += self->in[b];
	memset(self->out_f, 0x55, nb * sizeof(long long));
	memset(self->out_p, 0x66, nb * sizeof(long long));
	ASSERT_EQ(gpsSuccess, tp_launch(fib, gpsDim(nb, 1, 1),
					gpsDim(bs, 1, 1), &a, sizeof(a), sh));
	a.out = self->out_p;
	ASSERT_EQ(gpsSuccess, tp_launch(ph, gpsDim(nb, 1, 1),
					gpsDim(bs, 1, 1), &a, sizeof(a), sh));
	for (b = 0; b < nb; b++) {
		ASSERT_EQ(self->out_f[b], self->out_p[b])
			TH_LOG("%s: n %u, blocks of %u: block %u", ph->name,
			       n, bs, b);
		got += self->out_p[b];
	}
	ASSERT_EQ(want, got) TH_LOG("%s: n %u, blocks of %u", ph->name, n,
				    bs);
}

TEST_F(phases, reduce0_as_fibers)
{
	unsigned int bs[] = { 1, 2, 7, 32, 100, 256, 1024 }, i;

	for (i = 0; i < sizeof(bs) / sizeof(bs[0]); i++) {
		tp_check_reduce(_metadata, self, &tp_reduce0_fib,
				&tp_reduce0_ph, TP_N, bs[i], 0);
		tp_check_reduce(_metadata, self, &tp_reduce0_fib,
				&tp_reduce0_ph, 1, bs[i], 0);
		tp_check_reduce(_metadata, self, &tp_reduce0_fib,
				&tp_reduce0_mask_ph, TP_N, bs[i], 0);
	}
}

TEST_F(phases, reduce_seq_as_fibers)
{
	unsigned int bs[] = { 1, 3, 64, 255, 256, 1000 }, i;

	for (i = 0; i < sizeof(bs) / sizeof(bs[0]); i++)
		tp_check_reduce(_metadata, self, &tp_reduce_seq_fib,
				&tp_reduce_seq_ph, TP_N - 2, bs[i], 0);
}

/* a value kept per thread across barriers, and a warp's shuffles as a
 * phase over it: grids smaller than the data (grid-stride sums) */
TEST_F(phases, reduce_reg_as_fibers)
{
	unsigned int bs[] = { 32, 64, 128, 256, 1024 }, i;

	for (i = 0; i < sizeof(bs) / sizeof(bs[0]); i++) {
		tp_check_reduce(_metadata, self, &tp_reduce_reg_fib,
				&tp_reduce_reg_ph, TP_N, bs[i], 7);
		tp_check_reduce(_metadata, self, &tp_reduce_reg_fib,
				&tp_reduce_reg_ph, 33, bs[i], 3);
	}
}

/* C = A * B for odd sizes, tiles of 1 to 16: fibers, phases and the CPU
 * agree on every element */
TEST_F(phases, matmul_as_fibers)
{
	const unsigned int M = 37, N = 41, K = 53;
	unsigned int tiles[] = { 1, 3, 8, 16 }, ti, i, j, k, x = 99;
	int *A, *B, *Cf, *Cp;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&A, M * K * 4));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&B, K * N * 4));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&Cf, M * N * 4));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&Cp, M * N * 4));
	for (i = 0; i < M * K; i++)
		A[i] = (int)(tp_rand(&x) % 201) - 100;
	for (i = 0; i < K * N; i++)
		B[i] = (int)(tp_rand(&x) % 201) - 100;
	for (ti = 0; ti < sizeof(tiles) / sizeof(tiles[0]); ti++) {
		unsigned int t = tiles[ti];
		struct tp_matmul a = { A, B, Cf, M, N, K, t };
		gpsDim3 g = gpsDim((N + t - 1) / t, (M + t - 1) / t, 1);
		size_t sh = 2 * t * t * sizeof(int);

		memset(Cf, 0x55, M * N * 4);
		memset(Cp, 0x66, M * N * 4);
		ASSERT_EQ(gpsSuccess, tp_launch(&tp_matmul_fib, g,
						gpsDim(t, t, 1), &a,
						sizeof(a), sh));
		a.C = Cp;
		ASSERT_EQ(gpsSuccess, tp_launch(&tp_matmul_ph, g,
						gpsDim(t, t, 1), &a,
						sizeof(a), sh));
		for (i = 0; i < M; i++)
			for (j = 0; j < N; j++) {
				int want = 0;

				for (k = 0; k < K; k++)
					want += A[i * K + k] * B[k * N + j];
				ASSERT_EQ(want, Cp[i * N + j])
					TH_LOG("tile %u: C[%u][%u]", t, i, j);
				ASSERT_EQ(Cf[i * N + j], Cp[i * N + j]);
			}
	}
	EXPECT_EQ(gpsSuccess, gpsFreeHost(A));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(B));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(Cf));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(Cp));
}

/* 256 bins over odd byte counts, blocks of 1 to 1024 threads */
TEST_F(phases, hist_as_fibers)
{
	unsigned int bs[] = { 1, 33, 64, 256, 1024 }, ns[] = { 1, 4099,
							      TP_N * 3 };
	unsigned int bi, ni, i, want[TP_BINS], x = 7;
	unsigned int *bf, *bp;
	unsigned char *in;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&in, TP_N * 3));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&bf, TP_BINS * 4));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&bp, TP_BINS * 4));
	for (i = 0; i < TP_N * 3; i++)	/* skewed: low bins crowd */
		in[i] = (unsigned char)(tp_rand(&x) % 256 & tp_rand(&x) % 256);
	for (ni = 0; ni < 3; ni++) {
		memset(want, 0, sizeof(want));
		for (i = 0; i < ns[ni]; i++)
			want[in[i]]++;
		for (bi = 0; bi < 5; bi++) {
			struct tp_hist a = { in, bf, ns[ni] };
			gpsDim3 g = gpsDim(5, 1, 1), b = gpsDim(bs[bi], 1, 1);

			memset(bf, 0, TP_BINS * 4);
			memset(bp, 0, TP_BINS * 4);
			ASSERT_EQ(gpsSuccess, tp_launch(&tp_hist_fib, g, b, &a,
							sizeof(a),
							TP_BINS * 4));
			a.bins = bp;
			ASSERT_EQ(gpsSuccess, tp_launch(&tp_hist_ph, g, b, &a,
							sizeof(a), 0));
			for (i = 0; i < TP_BINS; i++) {
				ASSERT_EQ(want[i], bp[i])
					TH_LOG("n %u, blocks of %u: bin %u",
					       ns[ni], bs[bi], i);
				ASSERT_EQ(bf[i], bp[i]);
			}
		}
	}
	EXPECT_EQ(gpsSuccess, gpsFreeHost(in));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(bf));
	EXPECT_EQ(gpsSuccess, gpsFreeHost(bp));
}

struct tp_order {
	unsigned int *seen;	/* per block, per phase, per step */
	unsigned int phases;
};

/* Each loop records, in visiting order, each thread's coordinates and
 * GPS_TID; a per-thread value set in the first loop is read in the last. */
GPS_KERNEL_PHASES_SHARED(tp_order_ph, struct tp_order, a, unsigned int,
			 step)
{
	unsigned int nt = blockDim.x * blockDim.y * blockDim.z, p;
	unsigned int blk = blockIdx.x + gridDim.x * blockIdx.y;
	unsigned int *rec = a->seen + (size_t)blk * (a->phases + 1) * nt * 4;
	GPS_PER_THREAD(unsigned int, kept);

	for (p = 0; p < a->phases; p++) {
		*step = 0;
		GPS_FOR_EACH_THREAD {
			unsigned int *r = rec + ((size_t)p * nt + *step) * 4;

			r[0] = threadIdx.x;
			r[1] = threadIdx.y;
			r[2] = threadIdx.z;
			r[3] = GPS_TID;
			(*step)++;
			if (p == 0)
				kept[GPS_TID] = GPS_TID * 7 + blk;
		}
		__syncthreads();
	}
	GPS_FOR_EACH_THREAD
		rec[((size_t)a->phases * nt + GPS_TID) * 4] = kept[GPS_TID];
}

TEST_F(phases, loops_visit_every_thread_in_order)
{
	const unsigned int bx = 3, by = 5, bz = 2, nt = bx * by * bz;
	const unsigned int gx = 4, gy = 3, phases = 3;
	size_t per = (size_t)(phases + 1) * nt * 4;
	struct tp_order a = { NULL, phases };
	unsigned int blk, p, t;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.seen,
					    gx * gy * per * 4));
	memset(a.seen, 0xff, gx * gy * per * 4);
	ASSERT_EQ(gpsSuccess, tp_launch(&tp_order_ph, gpsDim(gx, gy, 1),
					gpsDim(bx, by, bz), &a, sizeof(a),
					0));
	for (blk = 0; blk < gx * gy; blk++) {
		unsigned int *rec = a.seen + blk * per;

		for (p = 0; p < phases; p++)
			for (t = 0; t < nt; t++) {
				unsigned int *r = rec + ((size_t)p * nt + t) * 4;

				ASSERT_EQ(t % bx, r[0]);
				ASSERT_EQ(t / bx % by, r[1]);
				ASSERT_EQ(t / (bx * by), r[2]);
				ASSERT_EQ(t, r[3]);
			}
		for (t = 0; t < nt; t++)
			ASSERT_EQ(t * 7 + blk, rec[((size_t)phases * nt + t) * 4])
				TH_LOG("block %u thread %u", blk, t);
	}
	EXPECT_EQ(gpsSuccess, gpsFreeHost(a.seen));
}

struct tp_bad {
	int *count;
};

/* the barrier belongs between the loops, not inside one */
GPS_KERNEL_PHASES(tp_sync_in_loop, struct tp_bad, a)
{
	GPS_FOR_EACH_THREAD {
		__atomic_fetch_add(a->count, 1, __ATOMIC_RELAXED);
		__syncthreads();
	}
}

GPS_KERNEL_PHASES(tp_shfl_in_loop, struct tp_bad, a)
{
	GPS_FOR_EACH_THREAD
		*a->count += __shfl_down_sync(0xffffffffu, 1, 1);
}

TEST_F(phases, barrier_inside_a_loop_fails_and_says_so)
{
	const gpsKernel *ks[] = { &tp_sync_in_loop, &tp_shfl_in_loop };
	struct t_stderr err;
	char buf[4096];
	unsigned int k;
	int *count;

	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&count, sizeof(int)));
	for (k = 0; k < 2; k++) {
		struct tp_bad a = { count };

		ASSERT_EQ(0, t_stderr_catch(&err));
		ASSERT_EQ(gpsErrorLaunchFailure,
			  tp_launch(ks[k], gpsDim(2, 1, 1), gpsDim(64, 1, 1),
				    &a, sizeof(a), 0));
		t_stderr_said(&err, buf, sizeof(buf));
		EXPECT_EQ(gpsErrorLaunchFailure, gpsGetLastError());
		EXPECT_EQ(1, t_lines(buf)) TH_LOG("%s", buf);
		EXPECT_NE(NULL, strstr(buf, ks[k]->name)) TH_LOG("%s", buf);
		EXPECT_NE(NULL, strstr(buf, "GPS_FOR_EACH_THREAD"))
			TH_LOG("%s", buf);
		EXPECT_NE(NULL, strstr(buf, "GPS_KERNEL_PHASES"))
			TH_LOG("%s", buf);
	}
	/* a block of one thread has no one to wait for */
	{
		struct tp_bad a = { count };

		*count = 0;
		ASSERT_EQ(gpsSuccess, tp_launch(&tp_sync_in_loop,
						gpsDim(3, 1, 1),
						gpsDim(1, 1, 1), &a,
						sizeof(a), 0));
		EXPECT_EQ(3, *count);
	}
	EXPECT_EQ(gpsSuccess, gpsFreeHost(count));
}

TEST_HARNESS_MAIN
