// SPDX-License-Identifier: MIT
/*
 * System scope: the explicit fence and a barrier for kernels running on
 * several devices at once. The barrier's state lives in conventional
 * memory (one copy), where system-scope atomics are coherent; waiting
 * threads sleep on a futex.
 *
 * Both are releases. A thread's stores may have gone through any view:
 * its device's (translated pointers), a host view (a GPS pointer as
 * gpsMallocGPS returned it, untranslated) or another device's
 * (gpsDevicePtr on that device). gpsThreadFenceSystem fences every device
 * (GPS_FENCE_ALL), which covers them all (host views store into the home
 * devices' replicas); gpsBarrierWait fences what the end of a kernel
 * fences, the caller's device and the host views, in one call.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "engine.h"
#include "range.h"

#define GPSU_BARRIER_SPINS	2000
#define GPSU_BARRIER_MAGIC	0x67707362U	/* "gpsb" */

struct gpsu_barrier_state {
	uint32_t arrived;
	uint32_t generation;
};

/*
 * A barrier is found only through gpsu_barriers (a handle is compared with
 * the live barriers, never dereferenced first). gpsBarrierWait holds a
 * reference while it waits; the last reference frees the barrier and its
 * state, so a destroy during a wait leaves the waiter's memory alone.
 */
struct gpsBarrier {
	uint32_t magic;			/* GPSU_BARRIER_MAGIC while alive */
	struct gpsBarrier *next;	/* live barriers */
	int refs;			/* list + waiters; gpsu_barrier_lock */
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
	/* every device: stores through any view are the caller's */
	if (gpsu_engine_fence(-1))
		return gpsu_ret(gpsErrorLaunchFailure);
	return gpsSuccess;
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
	err = gpsu_alloc_conv(&st, sizeof(*b->st), gpsu_cur_device());
	if (err) {
		free(b);
		return gpsu_ret(err);
	}
	b->magic = GPSU_BARRIER_MAGIC;
	b->refs = 1;
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

/*
 * Takes a reference on a live barrier handle (with @unlink, the list's
 * own reference instead, the barrier leaving the list); NULL if none.
 */
static struct gpsBarrier *gpsu_barrier_get(gpsBarrier_t h, bool unlink)
{
	struct gpsBarrier **pp, *b;

	pthread_mutex_lock(&gpsu_barrier_lock);
	for (pp = &gpsu_barriers; (b = *pp); pp = &b->next)
		if (b == h)
			break;
	if (b && b->magic != GPSU_BARRIER_MAGIC)
		b = NULL;
	if (b) {
		if (unlink)
			*pp = b->next;
		else
			b->refs++;
	}
	pthread_mutex_unlock(&gpsu_barrier_lock);
	return b;
}

/* Drops a reference; the last one frees the barrier. */
static gpsError_t gpsu_barrier_put(struct gpsBarrier *b)
{
	gpsError_t err;
	int refs;

	pthread_mutex_lock(&gpsu_barrier_lock);
	refs = --b->refs;
	pthread_mutex_unlock(&gpsu_barrier_lock);
	if (refs)
		return gpsSuccess;
	err = gpsu_alloc_conv_free(b->st);
	b->magic = 0;
	free(b);
	return err;
}

GPSU_API gpsError_t gpsBarrierDestroy(gpsBarrier_t barrier)
{
	struct gpsBarrier *b;
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	b = barrier ? gpsu_barrier_get(barrier, true) : NULL;
	if (!b)
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	return gpsu_ret(gpsu_barrier_put(b));
}

GPSU_API gpsError_t gpsBarrierWait(gpsBarrier_t barrier)
{
	struct gpsu_barrier_state *st;
	struct gpsBarrier *b;
	uint32_t gen;
	gpsError_t err = gpsu_init();
	int spins;

	if (err)
		return gpsu_ret(err);
	b = barrier ? gpsu_barrier_get(barrier, false) : NULL;
	if (!b)
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	st = b->st;
	/*
	 * Release, as at the end of a kernel: the caller's device and the
	 * host views (stores through untranslated pointers) publish
	 * everything stored before the arrival. A failed
	 * fence still arrives (the others would wait forever) and is
	 * reported.
	 */
	if (gpsu_engine_fence_mask(1ULL << gpsu_cur_device(), true))
		err = gpsErrorLaunchFailure;
	gen = __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&st->arrived, 1, __ATOMIC_ACQ_REL) ==
	    b->count) {
		__atomic_store_n(&st->arrived, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &st->generation, FUTEX_WAKE_PRIVATE,
			INT_MAX, NULL, NULL, 0);
	} else {
		for (spins = 0; __atomic_load_n(&st->generation,
						__ATOMIC_ACQUIRE) == gen;
		     spins++) {
			if (spins < GPSU_BARRIER_SPINS)
				sched_yield();
			else
				syscall(SYS_futex, &st->generation,
					FUTEX_WAIT_PRIVATE, gen, NULL, NULL,
					0);
		}
	}
	gpsu_barrier_put(b);
	return gpsu_ret(err);
}
