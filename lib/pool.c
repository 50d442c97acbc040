// SPDX-License-Identifier: MIT
/*
 * The worker pool: per device, one pthread per CPU of the device's NUMA
 * node, pinned there, created at the device's first kernel.
 *
 * gpsLaunchKernel's kernels: the workers take the blocks of a grid one at
 * a time; inside a block the threads run one after another on one worker,
 * one call each, gpsu_tls carrying the coordinates.
 *
 * gpsLaunch's kernels (GPS_KERNEL): the workers take batches of blocks
 * and hand each batch to the kernel's own loop (gpsKernel.blocks), which
 * calls the inlined body per thread with the coordinates as arguments.
 * gpsKernelSync kernels run each block's threads as fibers (fiber.c).
 * Each worker keeps one shared-memory buffer, reused by the blocks it
 * runs, and its fibers' stacks.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"
#include "pool.h"

struct gpsu_pool {
	int device;
	int nthreads;
	pthread_mutex_t run_lock;	/* one kernel at a time */
	pthread_mutex_t lock;		/* job, job_seq, active */
	pthread_cond_t cv_work;
	pthread_cond_t cv_done;
	uint64_t job_seq;
	struct gpsu_launch *job;
	uint64_t nblocks;
	uint64_t next;			/* next block (atomic) */
	uint64_t chunk;			/* blocks per take (gpsLaunch) */
	int active;			/* workers still in the job */
	gpsError_t err;			/* first worker failure (atomic) */
};

/* What a worker keeps between kernels. */
struct gpsu_worker {
	void *shared;			/* shared memory of its blocks */
	size_t shared_size;
	struct gpsu_fibers *fibers;
};

static pthread_mutex_t gpsu_pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* under gpsu_pool_lock */
static struct gpsu_pool *gpsu_pools[GPSU_MAX_DEVICES];

static void gpsu_run_block(struct gpsu_launch *l, uint64_t b)
{
	struct gpsu_tls *t = &gpsu_tls;
	unsigned int x, y, z;

	t->block_idx.x = (unsigned int)(b % l->grid.x);
	t->block_idx.y = (unsigned int)((b / l->grid.x) % l->grid.y);
	t->block_idx.z = (unsigned int)(b / ((uint64_t)l->grid.x * l->grid.y));
	for (z = 0; z < l->block.z; z++) {
		for (y = 0; y < l->block.y; y++) {
			for (x = 0; x < l->block.x; x++) {
				t->thread_idx.x = x;
				t->thread_idx.y = y;
				t->thread_idx.z = z;
				l->fn(l->args);
			}
		}
	}
}

/* true when @err is the launch's first failure */
static bool gpsu_pool_fail(struct gpsu_pool *pool, gpsError_t err)
{
	gpsError_t none = gpsSuccess;

	return __atomic_compare_exchange_n(&pool->err, &none, err, 0,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * A barrier or a warp function naming other threads, in a kernel whose
 * threads run one after another (GPS_KERNEL, gpsLaunchKernel): none can
 * wait for the others. Forgetting GPS_KERNEL_SYNC is the commonest
 * porting mistake: one line says so, by the worker whose failure is the
 * launch's.
 */
static void gpsu_pool_say_bad_sync(const struct gpsu_launch *l)
{
	if (l->k && (l->k->flags & gpsKernelPhases))
		fprintf(stderr,
			"libgpsu: kernel %s (blocks of %u x %u x %u threads) calls gpsSyncThreads (__syncthreads) or a warp function inside a GPS_FOR_EACH_THREAD loop of its GPS_KERNEL_PHASES body, where the threads run one after another and cannot wait: end the loop there and start another after the barrier (a warp step is a loop of its own over GPS_PER_THREAD values), or define the kernel with GPS_KERNEL_SYNC\n",
			l->k->name ? l->k->name : "?", l->block.x, l->block.y,
			l->block.z);
	else if (l->k)
		fprintf(stderr,
			"libgpsu: kernel %s (blocks of %u x %u x %u threads) calls gpsSyncThreads (__syncthreads) or a warp function, but it is defined with GPS_KERNEL, whose threads run one after another and cannot wait: define it with GPS_KERNEL_SYNC (GPS_KERNEL_SYNC_SHARED with shared memory)\n",
			l->k->name ? l->k->name : "?", l->block.x, l->block.y,
			l->block.z);
	else
		fprintf(stderr,
			"libgpsu: gpsLaunchKernel kernel %p (blocks of %u x %u x %u threads) calls gpsSyncThreads (__syncthreads) or a warp function, but the threads of a gpsLaunchKernel block run one after another and cannot wait: define the kernel with GPS_KERNEL_SYNC and launch it with gpsLaunch\n",
			(void *)(uintptr_t)l->fn, l->block.x, l->block.y,
			l->block.z);
}

/* A gpsLaunch kernel: batches of blocks, or blocks of fibers. */
static void gpsu_run_kernel(struct gpsu_pool *pool, struct gpsu_worker *w,
			    struct gpsu_launch *l)
{
	const gpsKernel *k = l->k;
	size_t soff = (k->staticShared + 15) & ~(size_t)15;
	size_t need = soff + l->shared_dyn;
	gpsThreadCtx c;
	uint64_t b, n;
	gpsError_t err;

	if (need > w->shared_size) {
		void *p;

		if (posix_memalign(&p, 64, need)) {
			gpsu_pool_fail(pool, gpsErrorMemoryAllocation);
			return;
		}
		free(w->shared);
		w->shared = p;
		w->shared_size = need;
	}
	memset(&c, 0, sizeof(c));
	c.bDim = l->block;
	c.gDim = l->grid;
	c.shared = k->staticShared ? w->shared : NULL;
	c.dynShared = l->shared_dyn ? (char *)w->shared + soff : NULL;
	gpsu_tls.shared_dyn = c.dynShared;
	if (!(k->flags & gpsKernelSync)) {
		while ((b = __atomic_fetch_add(&pool->next, pool->chunk,
					       __ATOMIC_RELAXED)) <
		       pool->nblocks) {
			n = pool->nblocks - b;
			if (n > pool->chunk)
				n = pool->chunk;
			k->blocks(&c, b, n, l->args);
		}
		return;
	}
	while ((b = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED)) <
	       pool->nblocks) {
		gpsu_block_idx(&c, b);
		gpsu_tls.block_idx = c.bIdx;
		err = gpsu_fibers_run_block(&w->fibers, k, &c, l->args);
		if (err) {
			gpsu_pool_fail(pool, err);
			return;
		}
	}
}

static void *gpsu_pool_worker(void *arg)
{
	struct gpsu_worker w = { NULL, 0, NULL };
	struct gpsu_pool *pool = arg;
	struct gpsu_tls *t = &gpsu_tls;
	struct gpsu_launch *l;
	uint64_t seen = 0, b;

	t->device = pool->device;
	t->kdevice = pool->device;
	/* the node's memory first: stacks and kernel-side mallocs */
	if (numa_available() >= 0 &&
	    numa_bitmask_isbitset(numa_all_nodes_ptr,
				  gpsu.dev[pool->device].node))
		numa_set_preferred(gpsu.dev[pool->device].node);
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (pool->job_seq == seen)
			pthread_cond_wait(&pool->cv_work, &pool->lock);
		seen = pool->job_seq;
		l = pool->job;
		pthread_mutex_unlock(&pool->lock);

		t->in_kernel = 1;
		t->block_dim = l->block;
		t->grid_dim = l->grid;
		t->bad_sync = 0;
		if (l->k)
			gpsu_run_kernel(pool, &w, l);
		else
			while ((b = __atomic_fetch_add(&pool->next, 1,
						       __ATOMIC_RELAXED)) <
			       pool->nblocks)
				gpsu_run_block(l, b);
		if (t->bad_sync && gpsu_pool_fail(pool, gpsErrorLaunchFailure))
			gpsu_pool_say_bad_sync(l);
		t->in_kernel = 0;
		t->shared_dyn = NULL;
		memset(&t->thread_idx, 0, sizeof(t->thread_idx));
		memset(&t->block_idx, 0, sizeof(t->block_idx));
		memset(&t->block_dim, 0, sizeof(t->block_dim));
		memset(&t->grid_dim, 0, sizeof(t->grid_dim));

		pthread_mutex_lock(&pool->lock);
		if (--pool->active == 0)
			pthread_cond_signal(&pool->cv_done);
	}
	return NULL;
}

/* Threads pinned to @device's node CPUs; the caller holds gpsu_pool_lock. */
static struct gpsu_pool *gpsu_pool_create(int device)
{
	struct gpsu_device *dev = &gpsu.dev[device];
	struct gpsu_pool *pool;
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t th;
	int i;

	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->device = device;
	pthread_mutex_init(&pool->run_lock, NULL);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cv_work, NULL);
	pthread_cond_init(&pool->cv_done, NULL);
	CPU_ZERO(&set);
	for (i = 0; i < dev->nr_cpus; i++)
		CPU_SET(dev->cpus[i], &set);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	for (i = 0; i < dev->nr_cpus; i++) {
		if (pthread_create(&th, &attr, gpsu_pool_worker, pool))
			break;
		pool->nthreads++;
	}
	pthread_attr_destroy(&attr);
	if (!pool->nthreads) {
		/* nothing started: nothing can use the pool */
		free(pool);
		return NULL;
	}
	return pool;
}

gpsError_t gpsu_pool_run(struct gpsu_launch *l)
{
	struct gpsu_pool *pool;
	gpsError_t err;

	pthread_mutex_lock(&gpsu_pool_lock);
	pool = gpsu_pools[l->device];
	if (!pool)
		pool = gpsu_pools[l->device] = gpsu_pool_create(l->device);
	pthread_mutex_unlock(&gpsu_pool_lock);
	if (!pool)
		return gpsErrorLaunchFailure;

	pthread_mutex_lock(&pool->run_lock);
	pthread_mutex_lock(&pool->lock);
	pool->job = l;
	pool->nblocks = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
	__atomic_store_n(&pool->next, 0, __ATOMIC_RELAXED);
	pool->chunk = pool->nblocks / ((uint64_t)pool->nthreads * 4);
	if (!pool->chunk)
		pool->chunk = 1;
	pool->err = gpsSuccess;
	pool->active = pool->nthreads;
	pool->job_seq++;
	pthread_cond_broadcast(&pool->cv_work);
	while (pool->active)
		pthread_cond_wait(&pool->cv_done, &pool->lock);
	pool->job = NULL;
	err = pool->err;
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->run_lock);
	return err;
}
