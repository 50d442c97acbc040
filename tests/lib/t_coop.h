/* SPDX-License-Identifier: MIT */
/*
 * t_coop.h - the tests of GPS_KERNEL kernels, block barriers, shared
 * memory and device-scope atomics, shared by tests/lib/coop.c (gps.ko, in
 * the VM) and tests/unit/mock_coop.c (the host mock). The includer
 * defines GPSU_CUDA_NAMES before its first include of gpsu.h, and
 * COOP_DEVICES(ndev): sets ndev or skips the test.
 */
#ifndef T_COOP_H
#define T_COOP_H

#ifndef GPSU_CUDA_NAMES
#error "define GPSU_CUDA_NAMES before including gpsu.h"
#endif
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
	old = v->cas;
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

#endif /* T_COOP_H */
