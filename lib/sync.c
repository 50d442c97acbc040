// SPDX-License-Identifier: MIT
/*
 * System scope: the explicit fence and a barrier for kernels running on
 * several devices at once. The barrier's state lives in conventional
 * memory (one copy), where system-scope atomics are coherent; waiting
 * threads sleep on a futex.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpsu_internal.h"

#define GPSU_BARRIER_SPINS	2000

struct gpsu_barrier_state {
	uint32_t arrived;
	uint32_t generation;
};

struct gpsBarrier {
	struct gpsBarrier *next;	/* live barriers */
	unsigned int count;
	struct gpsu_barrier_state *st;	/* conventional memory */
};

static pthread_mutex_t gpsu_barrier_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpsBarrier *gpsu_barriers;	/* under gpsu_barrier_lock */

GPSU_API gpsError_t gpsThreadFenceSystem(void)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	return gpsu_ret(gpsu_fence(gpsu_cur_device()));
}

GPSU_API gpsError_t gpsBarrierCreate(gpsBarrier_t *barrier,
				     unsigned int count)
{
	struct gpsBarrier *b;
	void *st;
	gpsError_t err;

	if (!barrier || !count)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	b = calloc(1, sizeof(*b));
	if (!b)
		return gpsu_ret(gpsErrorMemoryAllocation);
	err = gpsMalloc(&st, sizeof(*b->st));
	if (err) {
		free(b);
		return gpsu_ret(err);
	}
	b->count = count;
	b->st = st;
	__atomic_store_n(&b->st->arrived, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&b->st->generation, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&gpsu_barrier_lock);
	b->next = gpsu_barriers;
	gpsu_barriers = b;
	pthread_mutex_unlock(&gpsu_barrier_lock);
	*barrier = b;
	return gpsSuccess;
}

static bool gpsu_barrier_live(struct gpsBarrier *b, bool unlink)
{
	struct gpsBarrier **pp;

	pthread_mutex_lock(&gpsu_barrier_lock);
	for (pp = &gpsu_barriers; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			if (unlink)
				*pp = b->next;
			pthread_mutex_unlock(&gpsu_barrier_lock);
			return true;
		}
	}
	pthread_mutex_unlock(&gpsu_barrier_lock);
	return false;
}

GPSU_API gpsError_t gpsBarrierDestroy(gpsBarrier_t barrier)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	if (!barrier || !gpsu_barrier_live(barrier, true))
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	err = gpsFree(barrier->st);
	free(barrier);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsBarrierWait(gpsBarrier_t barrier)
{
	struct gpsu_barrier_state *st;
	uint32_t gen;
	gpsError_t err = gpsu_init();
	int spins;

	if (err)
		return gpsu_ret(err);
	if (!barrier || !gpsu_barrier_live(barrier, false))
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	st = barrier->st;
	/* release: this device's stores reach every replica first */
	err = gpsu_fence(gpsu_cur_device());
	if (err)
		return gpsu_ret(err);
	gen = __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&st->arrived, 1, __ATOMIC_ACQ_REL) ==
	    barrier->count) {
		__atomic_store_n(&st->arrived, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &st->generation, FUTEX_WAKE_PRIVATE,
			INT_MAX, NULL, NULL, 0);
		return gpsSuccess;
	}
	for (spins = 0; __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE) ==
			gen; spins++) {
		if (spins < GPSU_BARRIER_SPINS)
			sched_yield();
		else
			syscall(SYS_futex, &st->generation, FUTEX_WAIT_PRIVATE,
				gen, NULL, NULL, 0);
	}
	return gpsSuccess;
}
