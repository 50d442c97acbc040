/* SPDX-License-Identifier: MIT */
/*
 * The worker pool (pool.c): per device, pthreads pinned to the CPUs of
 * the device's NUMA node run the blocks of a kernel.
 */
#ifndef GPSU_POOL_H
#define GPSU_POOL_H

#include "gpsu_internal.h"

/* One kernel launch, as a stream queues it. */
struct gpsu_launch {
	gpsKernel_t fn;		/* gpsLaunchKernel: called per thread */
	const gpsKernel *k;	/* gpsLaunch: blocks or fibers */
	size_t shared_dyn;	/* gpsLaunch: dynamic shared bytes */
	gpsDim3 grid, block;
	void *args;		/* per-launch copy, already translated */
	int device;
	bool local_stores;	/* gpsArgsLocalStores: release device alone */
};

/* Runs every block of @l on its device's pool and returns when all ran. */
gpsError_t gpsu_pool_run(struct gpsu_launch *l);

#endif /* GPSU_POOL_H */
