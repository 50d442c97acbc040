// SPDX-License-Identifier: MIT
/*
 * Kernels: a pool of worker pthreads per device, pinned to the CPUs of the
 * device's NUMA node, runs every block of a grid; inside a block the
 * threads run one after another on one worker (no intra-block barrier).
 *
 * Argument blocks are copied at launch; listed (or scanned) GPS pointers
 * are rewritten to the launching device's view so that loads hit local
 * replicas. A pointer left untranslated still works: it names the home
 * device's view, whose loads may be remote (slower, never wrong).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gpsu_internal.h"

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
	int active;			/* workers still in the job */
};

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

static void *gpsu_pool_worker(void *arg)
{
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
		while ((b = __atomic_fetch_add(&pool->next, 1,
					       __ATOMIC_RELAXED)) <
		       pool->nblocks)
			gpsu_run_block(l, b);
		t->in_kernel = 0;
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

/* Threads pinned to @dev's node CPUs; the caller holds gpsu.pool_lock. */
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

/* Runs every block of @l on its device's pool and returns when all ran. */
gpsError_t gpsu_run_kernel(struct gpsu_launch *l)
{
	struct gpsu_pool *pool;

	pthread_mutex_lock(&gpsu.pool_lock);
	pool = gpsu.dev[l->device].pool;
	if (!pool)
		pool = gpsu.dev[l->device].pool = gpsu_pool_create(l->device);
	pthread_mutex_unlock(&gpsu.pool_lock);
	if (!pool)
		return gpsErrorLaunchFailure;

	pthread_mutex_lock(&pool->run_lock);
	pthread_mutex_lock(&pool->lock);
	pool->job = l;
	pool->nblocks = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
	__atomic_store_n(&pool->next, 0, __ATOMIC_RELAXED);
	pool->active = pool->nthreads;
	pool->job_seq++;
	pthread_cond_broadcast(&pool->cv_work);
	while (pool->active)
		pthread_cond_wait(&pool->cv_done, &pool->lock);
	pool->job = NULL;
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->run_lock);
	return gpsSuccess;
}

static gpsError_t gpsu_check_config(gpsDim3 g, gpsDim3 b)
{
	if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
		return gpsErrorInvalidConfiguration;
	if (g.x > 0x7fffffffU || g.y > 65535 || g.z > 65535)
		return gpsErrorInvalidConfiguration;
	if (b.x > 1024 || b.y > 1024 || b.z > 64 ||
	    (uint64_t)b.x * b.y * b.z > 1024)
		return gpsErrorInvalidConfiguration;
	return gpsSuccess;
}

static gpsError_t gpsu_check_args(const gpsKernelArgs *a)
{
	unsigned int i;

	if (!a)
		return gpsSuccess;
	if (a->flags & ~gpsArgsTranslateScan)
		return gpsErrorInvalidValue;
	if (a->size > GPS_KERNEL_MAX_ARGS_SIZE)
		return gpsErrorInvalidConfiguration;
	if (a->size && !a->data)
		return gpsErrorInvalidValue;
	if (a->nptrs > GPS_KERNEL_MAX_PTRS)
		return gpsErrorInvalidValue;
	for (i = 0; i < a->nptrs; i++)
		if (a->ptr[i] > a->size ||
		    a->size - a->ptr[i] < sizeof(void *))
			return gpsErrorInvalidValue;
	return gpsSuccess;
}

static void gpsu_translate_at(char *copy, size_t off, int device)
{
	void *p;

	memcpy(&p, copy + off, sizeof(p));
	p = gpsu_translate(p, device);
	memcpy(copy + off, &p, sizeof(p));
}

GPSU_API gpsError_t gpsLaunchKernel(gpsKernel_t fn, gpsDim3 grid,
				    gpsDim3 block, const gpsKernelArgs *args,
				    gpsStream_t stream)
{
	struct gpsStream *s;
	struct gpsu_launch l;
	gpsError_t err;
	size_t off;
	unsigned int i;

	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	if (!fn)
		return gpsu_ret(gpsErrorInvalidValue);
	GPSU_NOT_IN_KERNEL();	/* no dynamic parallelism */
	err = gpsu_check_config(grid, block);
	if (!err)
		err = gpsu_check_args(args);
	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	/* as CUDA: a stream of another device is not ours to launch into */
	if (gpsu_stream_device(s) != gpsu_cur_device()) {
		gpsu_stream_put(s);
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	}

	memset(&l, 0, sizeof(l));
	l.fn = fn;
	l.grid = grid;
	l.block = block;
	l.device = gpsu_stream_device(s);
	if (args && args->size) {
		char *copy = malloc(args->size);

		if (!copy) {
			gpsu_stream_put(s);
			return gpsu_ret(gpsErrorMemoryAllocation);
		}
		memcpy(copy, args->data, args->size);
		for (i = 0; i < args->nptrs; i++)
			gpsu_translate_at(copy, args->ptr[i], l.device);
		if (args->flags & gpsArgsTranslateScan)
			for (off = 0; off + sizeof(void *) <= args->size;
			     off += sizeof(void *))
				gpsu_translate_at(copy, off, l.device);
		l.args = copy;
	}
	err = gpsu_enqueue_kernel(s, &l);
	if (err)
		free(l.args);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

GPSU_API gpsDim3 gpsThreadIdx(void)
{
	return gpsu_tls.thread_idx;
}

GPSU_API gpsDim3 gpsBlockIdx(void)
{
	return gpsu_tls.block_idx;
}

GPSU_API gpsDim3 gpsBlockDim(void)
{
	return gpsu_tls.block_dim;
}

GPSU_API gpsDim3 gpsGridDim(void)
{
	return gpsu_tls.grid_dim;
}
