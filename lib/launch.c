// SPDX-License-Identifier: MIT
/*
 * Kernels: gpsLaunchKernel and gpsLaunch check the launch, copy the
 * argument block and queue the kernel on a stream (stream.c), whose worker
 * runs it on the device's pool (pool.c); the coordinate, shared-memory,
 * barrier and warp functions a kernel calls.
 *
 * Argument blocks are copied at launch; listed (or scanned) GPS pointers
 * are rewritten to the launching device's view so that loads hit local
 * replicas. A pointer left untranslated still works: it names the host
 * view, which maps what the home device's view maps; its loads may be
 * remote (slower, never wrong).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"
#include "range.h"
#include "stream.h"

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
	if (a->flags & ~(gpsArgsTranslateScan | gpsArgsLocalStores))
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

/* GPSU_NO_LOCAL_STORES=1: gpsArgsLocalStores ignored, for comparisons */
static bool gpsu_local_stores_honoured(void)
{
	static int ignore = -1;

	return !gpsu_env_switch("GPSU_NO_LOCAL_STORES", &ignore);
}

static void gpsu_translate_at(char *copy, size_t off, int device)
{
	void *p;

	memcpy(&p, copy + off, sizeof(p));
	p = gpsu_range_translate(p, device);
	memcpy(copy + off, &p, sizeof(p));
}

static gpsError_t gpsu_launch(gpsKernel_t fn, const gpsKernel *k,
			      size_t shared, gpsDim3 grid, gpsDim3 block,
			      const gpsKernelArgs *args, gpsStream_t stream)
{
	struct gpsStream *s;
	struct gpsu_launch l;
	gpsError_t err;
	size_t off;
	unsigned int i;

	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	if (!fn && !k)
		return gpsu_ret(gpsErrorInvalidValue);
	GPSU_NOT_IN_KERNEL();	/* no dynamic parallelism */
	if (k && (!k->blocks || !k->thread ||
		  (k->flags & ~(gpsKernelSync | gpsKernelPhases)) ||
		  k->flags == (gpsKernelSync | gpsKernelPhases)))
		return gpsu_ret(gpsErrorInvalidValue);
	if (k && (k->staticShared > GPS_MAX_SHARED_MEM_PER_BLOCK ||
		  shared > GPS_MAX_SHARED_MEM_PER_BLOCK - k->staticShared)) {
		fprintf(stderr,
			"libgpsu: gpsLaunch(%s): %zu bytes of static and %zu of dynamic shared memory per block, more than GPS_MAX_SHARED_MEM_PER_BLOCK (%u)\n",
			k->name ? k->name : "?", k->staticShared, shared,
			GPS_MAX_SHARED_MEM_PER_BLOCK);
		return gpsu_ret(gpsErrorInvalidValue);
	}
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
	l.k = k;
	l.shared_dyn = shared;
	l.grid = grid;
	l.block = block;
	l.device = gpsu_stream_device(s);
	l.local_stores = args && (args->flags & gpsArgsLocalStores) &&
			 gpsu_local_stores_honoured();
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
	err = gpsu_stream_kernel(s, &l);
	if (err)
		free(l.args);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsLaunchKernel(gpsKernel_t fn, gpsDim3 grid,
				    gpsDim3 block, const gpsKernelArgs *args,
				    gpsStream_t stream)
{
	if (!fn)
		return gpsu_ret(gpsErrorInvalidValue);
	return gpsu_launch(fn, NULL, 0, grid, block, args, stream);
}

GPSU_API gpsError_t gpsLaunch(const gpsKernel *kernel, gpsDim3 grid,
			      gpsDim3 block, const gpsKernelArgs *args,
			      size_t sharedMemBytes, gpsStream_t stream)
{
	if (!kernel)
		return gpsu_ret(gpsErrorInvalidValue);
	return gpsu_launch(NULL, kernel, sharedMemBytes, grid, block, args,
			   stream);
}

/* The names in parentheses: gpsu.h defines function-like macros of them. */
GPSU_API gpsDim3 (gpsThreadIdx)(void)
{
	return gpsu_tls.thread_idx;
}

GPSU_API gpsDim3 (gpsBlockIdx)(void)
{
	return gpsu_tls.block_idx;
}

GPSU_API gpsDim3 (gpsBlockDim)(void)
{
	return gpsu_tls.block_dim;
}

GPSU_API gpsDim3 (gpsGridDim)(void)
{
	return gpsu_tls.grid_dim;
}

GPSU_API void *(gpsSharedMem)(void)
{
	return gpsu_tls.shared_dyn;
}

/*
 * A fiber of a gpsKernelSync block switches to the block's next thread.
 * Elsewhere a block of one thread has nothing to wait for; a block of
 * more cannot wait (its threads run one after another): the launch fails.
 */
GPSU_API void (gpsSyncThreads)(void)
{
	struct gpsu_tls *t = &gpsu_tls;

	if (gpsu_fiber_yield() || !t->in_kernel)
		return;
	if ((uint64_t)t->block_dim.x * t->block_dim.y * t->block_dim.z > 1)
		t->bad_sync = 1;
}

/* linear index of the calling thread in its block, and the block's size */
static unsigned int gpsu_linear_tid(const struct gpsu_tls *t, unsigned int *n)
{
	*n = t->block_dim.x * t->block_dim.y * t->block_dim.z;
	return t->thread_idx.x + t->block_dim.x *
	       (t->thread_idx.y + t->block_dim.y * t->thread_idx.z);
}

/*
 * A warp function. On a fiber it waits for the lanes of the mask. Else
 * the caller is alone: on a host thread, or a thread whose mask names no
 * other lane of its block; a mask that does cannot be met (the threads of
 * a GPS_KERNEL block run one after another): the launch fails.
 */
static struct gpsu_warp_res gpsu_warp(unsigned int mask, int kind, int arg,
				      int width, int pred,
				      unsigned long long val)
{
	struct gpsu_warp_op op = { mask, kind, arg, (unsigned int)width,
				   pred, val };
	struct gpsu_warp_res r;
	struct gpsu_tls *t = &gpsu_tls;
	unsigned int tid, n, lane, nw, own;

	if (gpsu_fiber_warp(&op, &r))
		return r;
	own = 1;
	if (t->in_kernel) {
		tid = gpsu_linear_tid(t, &n);
		lane = tid % GPS_WARP_SIZE;
		nw = n - (tid - lane);
		if (nw > GPS_WARP_SIZE)
			nw = GPS_WARP_SIZE;
		own = 1u << lane;
		if (mask & ~own & (nw == GPS_WARP_SIZE ? ~0u : (1u << nw) - 1))
			t->bad_sync = 1;
		/* a block of one thread: it knows its lane (0) */
		if (n == 1 && gpsu_warp_src(&op, lane) != lane) {
			gpsThreadCtx c;

			memset(&c, 0, sizeof(c));
			c.bIdx = t->block_idx;
			gpsu_warp_report_outside(NULL, &c, mask | own, own,
						 gpsu_warp_src(&op, lane));
		}
	}
	r.val = val;
	r.ballot = pred ? own : 0;
	r.members = own;
	return r;
}

GPSU_API unsigned long long gpsShflSyncU64(unsigned int mask,
					   unsigned long long var,
					   int srcLane, int width)
{
	return gpsu_warp(mask, GPSU_WARP_IDX, srcLane, width, 0, var).val;
}

GPSU_API unsigned long long gpsShflUpSyncU64(unsigned int mask,
					     unsigned long long var,
					     unsigned int delta, int width)
{
	if (delta >= GPS_WARP_SIZE)
		delta = GPS_WARP_SIZE;
	return gpsu_warp(mask, GPSU_WARP_UP, (int)delta, width, 0, var).val;
}

GPSU_API unsigned long long gpsShflDownSyncU64(unsigned int mask,
					       unsigned long long var,
					       unsigned int delta, int width)
{
	if (delta >= GPS_WARP_SIZE)
		delta = GPS_WARP_SIZE;
	return gpsu_warp(mask, GPSU_WARP_DOWN, (int)delta, width, 0, var).val;
}

GPSU_API unsigned long long gpsShflXorSyncU64(unsigned int mask,
					      unsigned long long var,
					      int laneMask, int width)
{
	return gpsu_warp(mask, GPSU_WARP_XOR, laneMask, width, 0, var).val;
}

GPSU_API unsigned int gpsBallotSync(unsigned int mask, int predicate)
{
	return gpsu_warp(mask, GPSU_WARP_VOTE, 0, 0, predicate, 0).ballot;
}

GPSU_API int gpsAnySync(unsigned int mask, int predicate)
{
	return gpsu_warp(mask, GPSU_WARP_VOTE, 0, 0, predicate, 0).ballot != 0;
}

GPSU_API int gpsAllSync(unsigned int mask, int predicate)
{
	struct gpsu_warp_res r = gpsu_warp(mask, GPSU_WARP_VOTE, 0, 0,
					   predicate, 0);

	return r.ballot == r.members;
}

GPSU_API void gpsSyncWarp(unsigned int mask)
{
	(void)gpsu_warp(mask, GPSU_WARP_VOTE, 0, 0, 0, 0);
}
