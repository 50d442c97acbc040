/* SPDX-License-Identifier: MIT */
/*
 * t_coop.h - the tests of GPS_KERNEL kernels, block barriers, shared
 * memory and device-scope atomics, shared by tests/lib/coop.c (gps.ko, in
 * the VM) and tests/unit/mock_coop.c (the host mock). The includer
 * defines GPSU_CUDA_NAMES before its first include of gpsu.h, and
 * COOP_DEVICES(ndev): sets ndev or skips the test. Link with -lm
 * (fesetround).
 */
#ifndef T_COOP_H
#define T_COOP_H

#ifndef GPSU_CUDA_NAMES
#error "define GPSU_CUDA_NAMES before including gpsu.h"
#endif
#include <fenv.h>

#include "gpsu.h"

#define BX 32
#define BY 4
#define NT (BX * BY)

/* ---- every thread of every block once, coordinates as arguments ---- */

struct cover_k {
	int *hits;		/* grid x block entries */
	int *bad;
};

GPS_KERNEL(coop_cover, struct cover_k, a)
{
	unsigned int blk = blockIdx.x + gridDim.x *
			   (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned int t = threadIdx.x + blockDim.x *
			 (threadIdx.y + blockDim.y * threadIdx.z);

	if (blockDim.x != 8 || blockDim.y != 2 || blockDim.z != 2 ||
	    gridDim.x != 37 || gridDim.y != 3 || gridDim.z != 2)
		atomicAdd(a->bad, 1);
	atomicAdd(&a->hits[blk * 32 + t], 1);
}

/* GPS_KERNEL: every (block, thread) exactly once, in batches of blocks. */
TEST(kernel_macro_covers_the_grid)
{
	int ndev, i, n = 37 * 3 * 2 * 32;
	struct cover_k a;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.hits,
					    n * sizeof(int) + sizeof(int)));
	memset(a.hits, 0, n * sizeof(int) + sizeof(int));
	a.bad = a.hits + n;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_cover, gpsDim(37, 3, 2),
					gpsDim(8, 2, 2), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (i = 0; i < n; i++)
		ASSERT_EQ(1, a.hits[i]);
	ASSERT_EQ(0, *a.bad);
	ASSERT_EQ(0, gpsThreadIdx().x);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.hits));
}

/* ---- barriers ------------------------------------------------------ */

struct bar_k {
	int *global;		/* one row of NT per block */
	int *bad;
	int rounds;
};

struct bar_s {
	int v[NT];
};

/* a helper outside the body: the library's functions, set per fiber */
static __attribute__((noinline)) int coop_helper_tid(void)
{
	gpsDim3 t = (gpsThreadIdx)(), b = (gpsBlockIdx)();

	return (int)(t.x + BX * t.y + 100000 * (b.x + 1000 * b.y));
}

GPS_KERNEL_SYNC_SHARED(coop_barrier, struct bar_k, a, struct bar_s, s)
{
	unsigned int t = threadIdx.x + blockDim.x * threadIdx.y;
	unsigned int blk = blockIdx.x + gridDim.x * blockIdx.y;
	int *row = a->global + blk * NT;
	unsigned int i;
	int r;

	for (r = 0; r < a->rounds; r++) {
		s->v[t] = r * 100000 + (int)(blk * NT + t);
		row[t] = -s->v[t];
		__syncthreads();
		if (coop_helper_tid() != (int)(t + 100000 *
				(blockIdx.x + 1000 * blockIdx.y)))
			atomicAdd(a->bad, 1);
		/* every store of every thread of the block is visible */
		for (i = 0; i < NT; i++)
			if (s->v[i] != r * 100000 + (int)(blk * NT + i) ||
			    row[i] != -s->v[i])
				atomicAdd(a->bad, 1);
		__syncthreads();
	}
}

/* Every thread sees every store of its block made before the barrier,
 * round after round, in shared and in global memory. */
TEST(barrier_publishes_the_block)
{
	struct bar_k a;
	int ndev;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.global,
					    12 * NT * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad, sizeof(int)));
	*a.bad = 0;
	a.rounds = 5;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_barrier, gpsDim(4, 3, 1),
					gpsDim(BX, BY, 1), GPS_ARGS_RAW(&a),
					0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(0, *a.bad);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.global));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
}

struct early_k {
	int *count;
};

GPS_KERNEL_SYNC(coop_early_exit, struct early_k, a)
{
	/* half the threads end before the barrier: the others still meet */
	if (threadIdx.x & 1)
		return;
	__syncthreads();
	atomicAdd(a->count, 1);
}

/* Threads that end early do not hold their block at the barrier. */
TEST(barrier_after_threads_ended)
{
	struct early_k a;
	int ndev;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.count, sizeof(int)));
	*a.count = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_early_exit, gpsDim(3, 1, 1),
					gpsDim(64, 1, 1), GPS_ARGS_RAW(&a),
					0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(3 * 32, *a.count);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.count));
}

GPS_KERNEL(coop_bad_sync, struct early_k, a)
{
	gpsSyncThreads();
	atomicAdd(a->count, 1);
}

/* A barrier in a kernel not defined with GPS_KERNEL_SYNC cannot wait:
 * the launch fails (reported at the synchronize), a block of one thread
 * has nothing to wait for. */
TEST(barrier_outside_a_sync_kernel)
{
	struct early_k a;
	int ndev;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.count, sizeof(int)));
	*a.count = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_bad_sync, gpsDim(2, 1, 1),
					gpsDim(1, 1, 1), GPS_ARGS_RAW(&a),
					0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(2, *a.count);
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_bad_sync, gpsDim(2, 1, 1),
					gpsDim(4, 1, 1), GPS_ARGS_RAW(&a),
					0, NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorLaunchFailure, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.count));
}

/* ---- shared memory ------------------------------------------------- */

struct sh_k {
	int *bad;
	int *seen;		/* per block: dynamic pointer was aligned */
	size_t dyn;		/* dynamic bytes asked for */
};

struct sh_s {
	unsigned int owner;
	char pad[1000];
};

GPS_KERNEL_SYNC_SHARED(coop_shared, struct sh_k, a, struct sh_s, s)
{
	unsigned int blk = blockIdx.x;
	unsigned int t = threadIdx.x;
	unsigned int *dyn = gpsSharedMem();
	size_t i, n = a->dyn / sizeof(*dyn);

	if (t == 0)
		s->owner = blk;
	for (i = t; i < n; i += blockDim.x)
		dyn[i] = blk * 7 + 1;
	__syncthreads();
	if (s->owner != blk)
		atomicAdd(a->bad, 1);
	for (i = 0; i < n; i++)
		if (dyn[i] != blk * 7 + 1)
			atomicAdd(a->bad, 1);
	if (t == 0 && (uintptr_t)dyn % 16 == 0 &&
	    (void *)dyn != (void *)s && (n == 0) == (dyn == NULL))
		atomicAdd(&a->seen[blk], 1);
	__syncthreads();
}

/* Each block has its own static and dynamic shared memory, of the size
 * asked for, 16-byte aligned; blocks of several workers do not mix. */
TEST(shared_memory_per_block)
{
	size_t sizes[] = { 0, 4096,
		GPS_MAX_SHARED_MEM_PER_BLOCK - ((sizeof(struct sh_s) + 15) & ~15UL)
	};
	struct sh_k a;
	int ndev, i, b;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad, sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.seen,
					    40 * sizeof(int)));
	for (i = 0; i < 3; i++) {
		*a.bad = 0;
		memset(a.seen, 0, 40 * sizeof(int));
		a.dyn = sizes[i];
		ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_shared, gpsDim(40, 1, 1),
						gpsDim(16, 1, 1),
						GPS_ARGS_RAW(&a), a.dyn,
						NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		ASSERT_EQ(0, *a.bad);
		for (b = 0; b < 40; b++)
			ASSERT_EQ(1, a.seen[b]);
	}
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.seen));
}

struct big_s {
	char c[GPS_MAX_SHARED_MEM_PER_BLOCK / 2];
};

GPS_KERNEL_SHARED(coop_big, struct sh_k, a, struct big_s, s)
{
	s->c[threadIdx.x] = 1;
}

/* More shared memory than GPS_MAX_SHARED_MEM_PER_BLOCK is refused at
 * launch with gpsErrorInvalidValue; the limit itself is accepted. */
TEST(shared_memory_limit)
{
	struct sh_k a = { NULL, NULL, 0 };
	size_t room = GPS_MAX_SHARED_MEM_PER_BLOCK - sizeof(struct big_s);
	int ndev;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_big, gpsDim(2, 1, 1),
					gpsDim(4, 1, 1), GPS_ARGS_RAW(&a),
					room, NULL));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunch(&coop_big, gpsDim(2, 1, 1), gpsDim(4, 1, 1),
			    GPS_ARGS_RAW(&a), room + 1, NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunch(&coop_big, gpsDim(2, 1, 1), gpsDim(4, 1, 1),
			    GPS_ARGS_RAW(&a), (size_t)-1, NULL));
	ASSERT_EQ(gpsErrorInvalidValue,
		  gpsLaunch(NULL, gpsDim(1, 1, 1), gpsDim(1, 1, 1), NULL, 0,
			    NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	(void)gpsGetLastError();
}

/* ---- device-scope atomics ------------------------------------------ */

struct at_v {
	int i, imin, imax;
	unsigned int u, uor, uxor, uand;
	unsigned long long ull, ullmax;
	float f, fmin;
	double d, dmax;
	int cas, exch;
};

struct at_k {
	struct at_v *v;
	int dev;
};

GPS_KERNEL(coop_atomics, struct at_k, a)
{
	struct at_v *v = a->v;
	unsigned int g = (blockIdx.x * blockDim.x + threadIdx.x) +
			 (unsigned int)a->dev * 100000u;
	int old;

	atomicAdd(&v->i, 2);
	atomicSub(&v->i, 1);
	atomicMin(&v->imin, -(int)g);
	atomicMax(&v->imax, (int)g);
	atomicAdd(&v->u, 1u);
	atomicOr(&v->uor, 1u << (g % 32));
	atomicXor(&v->uxor, 1u << (g % 32));
	atomicAnd(&v->uand, ~(1u << (g % 31)));
	atomicAdd(&v->ull, 1ULL << 33);
	atomicMax(&v->ullmax, (unsigned long long)g << 20);
	atomicAdd(&v->f, 1.0f);
	atomicMin(&v->fmin, -(float)g);
	atomicAdd(&v->d, 0.5);
	atomicMax(&v->dmax, (double)g);
	/* a CAS increment loop and an exchange count */
	old = __atomic_load_n(&v->cas, __ATOMIC_RELAXED);
	while (gpsAtomicCAS(&v->cas, old, old + 1) != old)
		old = __atomic_load_n(&v->cas, __ATOMIC_RELAXED);
	gpsAtomicExchI(&v->exch, 7);
}

/* Exact totals from every thread of every block of every device, all
 * devices at once on conventional memory. */
TEST(atomics_exact_totals)
{
	struct at_k *args;
	struct at_v *v;
	gpsStream_t *s;
	int ndev, d;
	unsigned int n, nb = 16, nt = 64;
	unsigned int maxg;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&v, sizeof(*v)));
	ASSERT_EQ(gpsSuccess, gpsMemset(v, 0, sizeof(*v)));
	v->uand = ~0u;
	v->uxor = 0;
	s = calloc(ndev, sizeof(*s));
	args = calloc(ndev, sizeof(*args));
	ASSERT_NE(NULL, s);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		args[d].v = v;
		args[d].dev = d;
		ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_atomics, gpsDim(nb, 1, 1),
						gpsDim(nt, 1, 1),
						GPS_ARGS_RAW(&args[d]), 0,
						s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	n = nb * nt * (unsigned int)ndev;
	maxg = nb * nt - 1 + (unsigned int)(ndev - 1) * 100000u;
	EXPECT_EQ((int)n, v->i);
	EXPECT_EQ(-(int)maxg, v->imin);
	EXPECT_EQ((int)maxg, v->imax);
	EXPECT_EQ(n, v->u);
	EXPECT_EQ(~0u, v->uor);
	/* each device flips every bit nb * nt / 32 times: an even number */
	EXPECT_EQ(0u, v->uxor);
	EXPECT_EQ(1u << 31, v->uand);
	EXPECT_EQ((unsigned long long)n << 33, v->ull);
	EXPECT_EQ((unsigned long long)maxg << 20, v->ullmax);
	EXPECT_EQ((float)n, v->f);
	EXPECT_EQ(-(float)maxg, v->fmin);
	EXPECT_EQ(n * 0.5, v->d);
	EXPECT_EQ((double)maxg, v->dmax);
	EXPECT_EQ((int)n, v->cas);
	EXPECT_EQ(7, v->exch);
	free(s);
	free(args);
	ASSERT_EQ(gpsSuccess, gpsFree(v));
}

struct gpsat_k {
	unsigned long long *ctr;	/* GPS, translated: this device's */
};

GPS_KERNEL(coop_gps_atomics, struct gpsat_k, a)
{
	atomicAdd(a->ctr, 3ULL);
}

/* Device-scope atomics on GPS memory: each device updates a counter on a
 * GPS page of its own (its replica), all devices at once; the ends of the
 * kernels publish every total exactly (memory-model.rst). */
TEST(atomics_on_gps_memory_one_page_per_device)
{
	gpsPointerAttributes attr;
	struct gpsat_k *args;
	gpsStream_t *s;
	char *base;
	size_t pg;
	int ndev, d;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&base, 64 * 1024,
					   gpsMemGPSAutomatic));
	ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&attr, base));
	pg = attr.gpsPageSize;
	if (pg * ndev > 64 * 1024) {
		ASSERT_EQ(gpsSuccess, gpsFree(base));
		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&base, pg * ndev,
						   gpsMemGPSAutomatic));
	}
	ASSERT_EQ(gpsSuccess, gpsMemset(base, 0, pg * ndev));
	s = calloc(ndev, sizeof(*s));
	args = calloc(ndev, sizeof(*args));
	ASSERT_NE(NULL, args);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		args[d].ctr = (unsigned long long *)(base + pg * d);
		ASSERT_EQ(gpsSuccess,
			  gpsLaunch(&coop_gps_atomics, gpsDim(8, 1, 1),
				    gpsDim(100, 1, 1),
				    GPS_ARGS(&args[d],
					     GPS_PTR(struct gpsat_k, ctr)),
				    0, s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (d = 0; d < ndev; d++)
		EXPECT_EQ(3ULL * 800,
			  *(unsigned long long *)(base + pg * d));
	free(s);
	free(args);
	ASSERT_EQ(gpsSuccess, gpsFree(base));
}

/* ---- floating-point modes per fiber -------------------------------- */

static const int coop_modes[4] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD,
				   FE_TOWARDZERO };

struct fp_k {
	int *bad;
	int change;		/* threads set their own rounding mode */
	float third[4];		/* 1.0f / 3.0f in each mode (host) */
	long double lthird[4];	/* 1.0L / 3.0L in each mode (x87) */
	float one, three;
	long double lone, lthree;
};

GPS_KERNEL_SYNC(coop_fp_modes, struct fp_k, a)
{
	unsigned int t = threadIdx.x;
	int m = a->change ? (int)(t % 4) : 0;
	volatile float one = a->one, three = a->three;
	volatile long double lone = a->lone, lthree = a->lthree;
	int r;

	if (fegetround() != FE_TONEAREST)
		atomicAdd(a->bad, 1);
	if (a->change && fesetround(coop_modes[m]))
		atomicAdd(a->bad, 1000);
	for (r = 0; r < 3; r++) {
		/* the other threads of the block run (and set their modes)
		 * between here and the next check */
		__syncthreads();
		if (fegetround() != coop_modes[m] ||
		    one / three != a->third[m] ||
		    lone / lthree != a->lthird[m])
			atomicAdd(a->bad, 1);
	}
}

/* A fiber's rounding mode (x87 control word and MXCSR, callee-saved in
 * the SysV ABI) is its own: the other threads of its block, which run on
 * the same worker between its barriers, keep theirs, and the worker's
 * next blocks start in the mode the worker had. */
TEST(fiber_rounding_mode_is_per_thread)
{
	volatile float one = 1.0f, three = 3.0f;
	volatile long double lone = 1.0L, lthree = 3.0L;
	struct fp_k a;
	int ndev, m;

	COOP_DEVICES(ndev);
	memset(&a, 0, sizeof(a));
	for (m = 0; m < 4; m++) {
		ASSERT_EQ(0, fesetround(coop_modes[m]));
		a.third[m] = one / three;
		a.lthird[m] = lone / lthree;
	}
	ASSERT_EQ(0, fesetround(FE_TONEAREST));
	/* the modes give different results, so the check can fail */
	ASSERT_NE(a.third[1], a.third[2]);
	ASSERT_NE(a.lthird[1], a.lthird[2]);
	a.one = 1.0f;
	a.three = 3.0f;
	a.lone = 1.0L;
	a.lthree = 3.0L;
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad, sizeof(int)));
	*a.bad = 0;
	a.change = 1;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_fp_modes, gpsDim(6, 1, 1),
					gpsDim(8, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(0, *a.bad);
	/* nothing of the fibers' modes stayed with the workers */
	a.change = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_fp_modes, gpsDim(6, 1, 1),
					gpsDim(8, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(0, *a.bad);
	ASSERT_EQ(FE_TONEAREST, fegetround());
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
}

/* ---- warp functions ------------------------------------------------ */

struct warp_k {
	int *bad;		/* one counter per check */
	int nchecks;
};

#define WARP_BLOCK	80	/* two warps and one of 16 lanes */
#define FULL		0xffffffffu

/* counts a failed check @c */
#define WARP_CHECK(c, cond)						\
	do {								\
		if (!(cond))						\
			atomicAdd(&a->bad[c], 1);			\
	} while (0)

GPS_KERNEL_SYNC(coop_warp_ops, struct warp_k, a)
{
	unsigned int t = threadIdx.x, lane = t % warpSize, w = t - lane;
	unsigned int nw = blockDim.x - w < 32 ? blockDim.x - w : 32;
	unsigned int members = nw == 32 ? FULL : (1u << nw) - 1;
	int v = (int)(t * 10 + blockIdx.x), s;
	float f;
	double d;
	unsigned long long u;

#define VAL(l)	((int)(((w) + (l)) * 10 + blockIdx.x))
	WARP_CHECK(0, __shfl_sync(FULL, v, 3) == VAL(3));
	WARP_CHECK(1, __shfl_up_sync(FULL, v, 1) ==
		   (lane >= 1 ? VAL(lane - 1) : v));
	s = __shfl_down_sync(FULL, v, 4);
	WARP_CHECK(2, s == (lane + 4 < nw ? VAL(lane + 4) : v));
	WARP_CHECK(3, __shfl_xor_sync(FULL, v, 1) == VAL(lane ^ 1));
	/* segments of 8 and 4 lanes */
	WARP_CHECK(4, __shfl_sync(FULL, v, 5, 8) == VAL((lane & ~7u) + 5));
	WARP_CHECK(5, __shfl_down_sync(FULL, v, 2, 4) ==
		   ((lane & 3) + 2 < 4 ? VAL(lane + 2) : v));
	/* a source lane index past the width reads modulo it */
	WARP_CHECK(6, __shfl_sync(FULL, v, 33) == VAL(1));
	f = __shfl_xor_sync(FULL, 0.5f * (float)v, 2);
	WARP_CHECK(7, f == 0.5f * (float)VAL(lane ^ 2));
	d = __shfl_sync(FULL, (double)v / 4, nw - 1);
	WARP_CHECK(8, d == (double)VAL(nw - 1) / 4);
	u = __shfl_up_sync(FULL, (unsigned long long)v << 40, 2);
	WARP_CHECK(9, u == (unsigned long long)(lane >= 2 ? VAL(lane - 2)
							   : v) << 40);
	WARP_CHECK(10, __ballot_sync(FULL, lane & 1) == (0xaaaaaaaau & members));
	WARP_CHECK(11, __any_sync(FULL, lane == 5) == 1);
	WARP_CHECK(12, __any_sync(FULL, lane == 40) == 0);
	WARP_CHECK(13, __all_sync(FULL, lane < 100) == 1);
	WARP_CHECK(14, __all_sync(FULL, lane != 7) == 0);
	__syncwarp();
	WARP_CHECK(15, gpsShflSyncI(FULL, v, 0, 32) == VAL(0));
	/* the lanes of a ballot taken before a branch, as CUDA teaches */
	s = (int)__ballot_sync(FULL, lane < 8);
	if (lane < 8)
		WARP_CHECK(16, __shfl_xor_sync((unsigned int)s, v, 4) ==
			   VAL(lane ^ 4));
#undef VAL
}

/* Shuffles (index, up, down, xor, widths, int/float/double/u64) and
 * votes give CUDA's results in full and partial warps. */
TEST(warp_shuffles_and_votes)
{
	struct warp_k a;
	int ndev, c;

	COOP_DEVICES(ndev);
	a.nchecks = 17;
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad,
					    a.nchecks * sizeof(int)));
	memset(a.bad, 0, a.nchecks * sizeof(int));
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_ops, gpsDim(5, 1, 1),
					gpsDim(WARP_BLOCK, 1, 1),
					GPS_ARGS_RAW(&a), 0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (c = 0; c < a.nchecks; c++) {
		if (a.bad[c])
			TH_LOG("check %d failed %d times", c, a.bad[c]);
		EXPECT_EQ(0, a.bad[c]);
	}
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
}

struct wsum_k {
	const int *in;
	long long *out;		/* one sum per block */
};

struct wsum_s {
	long long part[32];	/* one per warp */
};

/* CUDA's two-level block reduction: shuffles within each warp, the
 * warps' sums through shared memory, then the first warp alone. */
GPS_KERNEL_SYNC_SHARED(coop_warp_sum, struct wsum_k, a, struct wsum_s, s)
{
	unsigned int t = threadIdx.x, lane = t % warpSize, wid = t / warpSize;
	unsigned int nwarps = (blockDim.x + warpSize - 1) / warpSize;
	long long v = a->in[blockIdx.x * blockDim.x + t];
	int o;

	for (o = 16; o > 0; o /= 2)
		v += __shfl_down_sync(FULL, v, o);
	if (lane == 0)
		s->part[wid] = v;
	__syncthreads();
	if (wid == 0) {
		v = lane < nwarps ? s->part[lane] : 0;
		for (o = 16; o > 0; o /= 2)
			v += __shfl_xor_sync(FULL, v, o);
		if (lane == 0)
			a->out[blockIdx.x] = v;
	}
}

/* A warp-shuffle block reduction, warp 0 alone in its second half, gives
 * each block's exact sum (full blocks of 1024 and blocks of 96). */
TEST(warp_block_reduction)
{
	unsigned int bs[2] = { 1024, 96 }, nb = 7, k, b, i;
	struct wsum_k a;
	int *in, ndev;
	long long *out;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&in,
					    nb * 1024 * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&out,
					    nb * sizeof(long long)));
	for (i = 0; i < nb * 1024; i++)
		in[i] = (int)(i * 2654435761u % 100003) - 50000;
	for (k = 0; k < 2; k++) {
		a.in = in;
		a.out = out;
		memset(out, 0, nb * sizeof(long long));
		ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_sum,
						gpsDim(nb, 1, 1),
						gpsDim(bs[k], 1, 1),
						GPS_ARGS_RAW(&a), 0, NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		for (b = 0; b < nb; b++) {
			long long want = 0;

			for (i = 0; i < bs[k]; i++)
				want += in[b * bs[k] + i];
			ASSERT_EQ(want, out[b]);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsFreeHost(in));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(out));
}

GPS_KERNEL_SYNC(coop_warp_groups, struct warp_k, a)
{
	unsigned int lane = threadIdx.x % warpSize;
	unsigned int lo = 0x0000ffffu, hi = 0xffff0000u;
	int v = (int)lane + 1;

	/* lanes 28 to 31 leave: the high half goes on without them */
	if (lane >= 28)
		return;
	if (lane < 16) {
		WARP_CHECK(0, __shfl_sync(lo, v, 15) == 16);
		WARP_CHECK(1, __ballot_sync(lo, 1) == lo);
		WARP_CHECK(2, __shfl_sync(lo, v, 0) == 1);
	} else {
		/* lane 30 has returned: one's own value */
		WARP_CHECK(3, __shfl_sync(hi, v, 30) == v);
		WARP_CHECK(4, __ballot_sync(hi, 1) == 0x0fff0000u);
		WARP_CHECK(5, __all_sync(hi, lane >= 16) == 1);
	}
	/* reconverged: the full warp, without the lanes that left */
	WARP_CHECK(6, __ballot_sync(FULL, 1) == 0x0fffffffu);
	WARP_CHECK(7, __shfl_down_sync(FULL, v, 1) == (lane < 27 ? v + 1 : v));
}

/* Lanes in two groups (masks) shuffle within their group at the same
 * time; lanes that returned count as arrived and read as absent. */
TEST(warp_divergent_groups)
{
	struct warp_k a;
	int ndev, c;

	COOP_DEVICES(ndev);
	a.nchecks = 8;
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad,
					    a.nchecks * sizeof(int)));
	memset(a.bad, 0, a.nchecks * sizeof(int));
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_groups, gpsDim(3, 1, 1),
					gpsDim(64, 1, 1), GPS_ARGS_RAW(&a),
					0, NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	for (c = 0; c < a.nchecks; c++) {
		if (a.bad[c])
			TH_LOG("check %d failed %d times", c, a.bad[c]);
		EXPECT_EQ(0, a.bad[c]);
	}
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
}

GPS_KERNEL(coop_warp_nosync, struct warp_k, a)
{
	atomicAdd(&a->bad[0], __shfl_sync(FULL, 1, 0));
}

GPS_KERNEL_SYNC(coop_warp_stuck, struct warp_k, a)
{
	/* thread 0 at the block barrier, thread 1 at a shuffle that
	 * waits for thread 0: neither can go on */
	if (threadIdx.x == 0)
		__syncthreads();
	else
		atomicAdd(&a->bad[0], __shfl_sync(0x3, 1, 0));
}

/* Warp functions where they cannot wait fail the launch: in a GPS_KERNEL
 * (no fibers) with a mask naming other threads, and threads of a block
 * at different barriers; a block of one thread is alone and fine. */
TEST(warp_functions_that_cannot_wait)
{
	struct warp_k a;
	int ndev;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.bad, sizeof(int)));
	*a.bad = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_nosync, gpsDim(3, 1, 1),
					gpsDim(1, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(3, *a.bad);
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_nosync, gpsDim(3, 1, 1),
					gpsDim(32, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorLaunchFailure, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_stuck, gpsDim(1, 1, 1),
					gpsDim(2, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsErrorLaunchFailure, gpsDeviceSynchronize());
	ASSERT_EQ(gpsErrorLaunchFailure, gpsGetLastError());
	/* the workers run the next kernel's blocks as usual */
	*a.bad = 0;
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_warp_nosync, gpsDim(2, 1, 1),
					gpsDim(1, 1, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(2, *a.bad);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.bad));
}

/* ---- grid-stride loops --------------------------------------------- */

struct gs_k {
	int *hits;
	unsigned int n;
	int *order_bad;		/* a thread's i not contiguous */
};

GPS_KERNEL(coop_grid_loop, struct gs_k, a)
{
	unsigned int i, prev = 0;
	int first = 1;

	GPS_GRID_STRIDE_LOOP(i, a->n) {
		if (!first && i != prev + 1)
			atomicAdd(a->order_bad, 1);
		first = 0;
		prev = i;
		atomicAdd(&a->hits[i], 1);
	}
}

struct gs_sum_s {
	long long part[128];
};

GPS_KERNEL_SYNC_SHARED(coop_grid_sum, struct gs_k, a, struct gs_sum_s, s)
{
	unsigned int t = threadIdx.x + blockDim.x * threadIdx.y;
	long long v = 0;
	int i;

	GPS_GRID_STRIDE_LOOP(i, (int)a->n)
		v += i;
	s->part[t] = v;
	__syncthreads();
	if (t == 0) {
		for (i = 1; i < (int)(blockDim.x * blockDim.y); i++)
			v += s->part[i];
		atomicAdd((unsigned long long *)a->hits, (unsigned long long)v);
	}
}

/* GPS_GRID_STRIDE_LOOP runs every i in [0, n) exactly once, in
 * contiguous runs per thread, for n below, equal to and above the
 * grid's thread count and for 2-D grids; in a GPS_KERNEL_SYNC kernel too;
 * outside a kernel it runs all of [0, n). */
TEST(grid_stride_loop_covers_n_once)
{
	unsigned int ns[] = { 1, 37, 4096, 4096 * 3 + 5, 100000 };
	struct gs_k a;
	unsigned int k, i;
	unsigned long long sum;
	int ndev, count = 0;

	COOP_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.hits,
					    100000 * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.order_bad,
					    sizeof(int)));
	*a.order_bad = 0;
	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		a.n = ns[k];
		memset(a.hits, 0, 100000 * sizeof(int));
		/* 16 x 2 blocks of 64 x 2 threads: 4096 threads */
		ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_grid_loop,
						gpsDim(16, 2, 1),
						gpsDim(64, 2, 1),
						GPS_ARGS_RAW(&a), 0, NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		for (i = 0; i < 100000; i++)
			ASSERT_EQ(i < a.n ? 1 : 0, a.hits[i]);
	}
	ASSERT_EQ(0, *a.order_bad);
	/* a fiber kernel: the sum of 0 .. n - 1 */
	a.n = 100000;
	memset(a.hits, 0, 2 * sizeof(int));
	ASSERT_EQ(gpsSuccess, gpsLaunch(&coop_grid_sum, gpsDim(5, 1, 1),
					gpsDim(32, 3, 1), GPS_ARGS_RAW(&a), 0,
					NULL));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	memcpy(&sum, a.hits, sizeof(sum));
	ASSERT_EQ(100000ULL * 99999 / 2, sum);
	/* host code: one thread, all of it */
	GPS_GRID_STRIDE_LOOP(i, 10u)
		count++;
	ASSERT_EQ(10, count);
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.hits));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.order_bad));
}

#endif /* T_COOP_H */
