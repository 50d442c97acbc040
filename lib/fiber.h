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
 * next block). Returns gpsErrorMemoryAllocation if stacks run out,
 * gpsErrorLaunchFailure if its threads wait at different barriers and
 * none can go on (said on stderr). */
gpsError_t gpsu_fibers_run_block(struct gpsu_fibers **fs, const gpsKernel *k,
				 const gpsThreadCtx *proto, void *args);

/* gpsSyncThreads on a fiber: waits for the block's live threads.
 * Returns 0 when the caller is not a fiber. */
int gpsu_fiber_yield(void);

/* What a warp function asks (gpsShflSync & co., gpsBallotSync) */
enum gpsu_warp_kind {
	GPSU_WARP_IDX,		/* read lane arg (mod width) */
	GPSU_WARP_UP,		/* read lane - arg */
	GPSU_WARP_DOWN,		/* read lane + arg */
	GPSU_WARP_XOR,		/* read lane ^ arg */
	GPSU_WARP_VOTE,		/* ballot, any, all, syncwarp */
};

struct gpsu_warp_op {
	unsigned int mask;	/* lanes that take part */
	int kind;		/* enum gpsu_warp_kind */
	int arg;
	unsigned int width;	/* power of two <= 32, else 32 */
	int pred;
	unsigned long long val;
};

struct gpsu_warp_res {
	unsigned long long val;	/* the source lane's value (or one's own) */
	unsigned int ballot;	/* members whose predicate was non-zero */
	unsigned int members;	/* live lanes of the mask */
};

/* The lane whose value a shuffle @op of lane @lane reads (its own lane
 * where CUDA's shuffle returns the caller's value). */
unsigned int gpsu_warp_src(const struct gpsu_warp_op *op, unsigned int lane);

/* GPSU_CHECK_SHUFFLE=1: says on stderr that the thread @c of kernel @kname
 * read lane @src, not among the lanes taking part (@members of @mask). */
void gpsu_warp_report_outside(const char *kname, const gpsThreadCtx *c,
			      unsigned int mask, unsigned int members,
			      unsigned int src);

/* A warp function on a fiber: waits for the lanes of op->mask, fills
 * @res. Returns 0 when the caller is not a fiber. */
int gpsu_fiber_warp(const struct gpsu_warp_op *op, struct gpsu_warp_res *res);

#endif /* GPSU_FIBER_H */
