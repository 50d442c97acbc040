/* SPDX-License-Identifier: MIT */
/*
 * Fibers (fiber.c): the threads of a block of a gpsKernelSync kernel as
 * user-level contexts on the worker that runs the block.
 */
#ifndef GPSU_FIBER_H
#define GPSU_FIBER_H

#include "gpsu_internal.h"

struct gpsu_fibers;

/* Runs the threads of the block whose coordinates and shared memory are in
 * @proto (tIdx ignored), one fiber each, until every thread has returned.
 * @fs is the calling worker's set (NULL at first: created; kept for the
 * next block). Returns gpsErrorMemoryAllocation if stacks run out. */
gpsError_t gpsu_fibers_run_block(struct gpsu_fibers **fs, const gpsKernel *k,
				 const gpsThreadCtx *proto, void *args);

/* gpsSyncThreads on a fiber: switches to the block's next live thread.
 * Returns 0 when the caller is not a fiber. */
int gpsu_fiber_yield(void);

#endif /* GPSU_FIBER_H */
