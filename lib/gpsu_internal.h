/* SPDX-License-Identifier: MIT */
/*
 * Internal state of libgpsu: what every file shares (the context, the
 * errors, the per-thread state, the allocation record).
 *
 * Layers. Calls flow one way, down; each file includes the header of
 * every file it calls, and nothing else:
 *
 *   entry points  launch.c   kernels: checks, argument copy and translation
 *                 memory.c   copies, sets, prefetch and tracking that wait
 *                            for or queue on streams
 *                 alloc.c    allocation and free (free waits for streams)
 *                 sync.c     system fence, barrier (its memory: alloc.c)
 *   streams       stream.c   streams, their queue and worker, synchronize
 *   work          pool.c     worker threads pinned to a device's CPUs
 *                 copy.c     copies and sets
 *                 advise.c   advice, system scope, prefetch, subscribers
 *                 event.c    event objects
 *   bottom        range.c    the address index, pointer translation
 *                 link.c     the link model
 *                 context.c  devices, set-up (this header's gpsu)
 *                 engine.c   the engine seam: choice and dispatch
 *                            (engine.h); below it engine_kmod.c (the
 *                            driver: every ioctl, view and uring
 *                            fence) or engine_user*.c (the native
 *                            engine, over the pure core in core/)
 *                 error.c    errors, the per-thread state
 *
 * Entry points that only call down live with their work (gpsMemAdvise in
 * advise.c, gpsEventQuery in event.c, gpsDevicePtr in range.c).
 *
 * Lock order (outer to inner):
 *
 *   gpsu.stream_lock          (stream.c, event.c: lists of streams and
 *                              events, default streams, stream references)
 *     stream->lock            (stream.c: its op queue and state)
 *       event->lock           (event.c: its completion state)
 *   gpsu_ranges.lock (rwlock) (range.c: the allocation range index)
 *   gpsu_pool_lock            (pool.c: creation of the pools)
 *   pool->run_lock            (pool.c: one kernel at a time per device)
 *     pool->lock              (pool.c: the pool's current job)
 *   gpsu_barrier_lock         (sync.c: the list of barriers)
 *
 * No lock is held while a kernel runs or while an ioctl sleeps, except
 * pool->run_lock, which only serialises kernels of one device.
 */
#ifndef GPSU_INTERNAL_H
#define GPSU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpsu.h"

#define GPSU_API __attribute__((visibility("default")))

/* Devices at most (the driver's GPS_MAX_DEVICES: one bit each in a u64). */
#define GPSU_MAX_DEVICES	64

/* GPS page sizes an allocation may ask for */
#define GPSU_PAGE_4K		(1U << 12)
#define GPSU_PAGE_64K		(1U << 16)
#define GPSU_PAGE_2M		(1U << 21)

/* struct gpsu_alloc flags */
#define GPSU_ALLOC_MANUAL	(1U << 0)	/* only home subscribes at first */

enum gpsu_kind {
	GPSU_KIND_GPS = 1,
	GPSU_KIND_CONV,
	GPSU_KIND_HOST,
	GPSU_KIND_MANAGED,
	GPSU_KIND_UM,		/* the driver's managed memory: moved on faults */
};

/* One allocation of any kind; views[d] is device d's view (GPS, UM). */
struct gpsu_alloc {
	enum gpsu_kind kind;
	uint64_t handle;	/* engine handle (GPS, CONV, UM) */
	size_t size;		/* bytes requested */
	size_t map_size;	/* bytes mapped per view */
	size_t page_size;	/* GPS page size or system page size */
	int home;		/* home device */
	unsigned int flags;
	int nviews;		/* number of mapped views */
	char *base;		/* the pointer handed out */
	char *views[GPSU_MAX_DEVICES];
	/* GPS: the host view, handed out: loads and stores as the home's,
	 * published by host fences */
	char *host;
	/* GPS: bit g set once GPS page g was collapsed for system scope
	 * (allocated at the first one, installed with a CAS, bits set and
	 * cleared atomically; a subscribe clears the bits of its range) */
	uint64_t *sys_pages;
	void *engine;		/* the engine's own state, if any */
};

/* Memory the engine holds (GPS, conventional, UM), not anonymous. */
static inline bool gpsu_is_driver(const struct gpsu_alloc *a)
{
	return a && (a->kind == GPSU_KIND_GPS || a->kind == GPSU_KIND_CONV ||
		     a->kind == GPSU_KIND_UM);
}

/* Memory with one view per device, pointers translated per device. */
static inline bool gpsu_has_views(const struct gpsu_alloc *a)
{
	return a && (a->kind == GPSU_KIND_GPS || a->kind == GPSU_KIND_UM);
}

struct gpsu_device {
	int node;
	int nr_cpus;
	int cpus[GPS_MAX_DEVICE_CPUS];
};

struct gpsu_ctx {
	pthread_once_t once;
	gpsError_t init_err;	/* gpsSuccess once usable */
	int ndev;		/* 0 until set up (atomic outside gpsu_init) */
	/* what the engine reported: ndev, page and block size, ABI */
	int page_size, block_size, abi_version;
	struct gpsu_device dev[GPSU_MAX_DEVICES];

	pthread_mutex_t stream_lock;	/* stream and event lists, refs,
					 * default streams */
};

/* Per-thread state: current device, last error, kernel coordinates. */
struct gpsu_tls {
	int device;		/* current device (host thread) */
	int in_kernel;		/* 1 on a worker running a kernel */
	int kdevice;		/* device the kernel runs on */
	gpsError_t last_err;
	gpsDim3 thread_idx, block_idx, block_dim, grid_dim;
	void *shared_dyn;	/* gpsSharedMem outside a GPS_KERNEL body */
	int bad_sync;		/* gpsSyncThreads where it cannot wait */
	/* gpsDevicePtr lookup cache (range.c) */
	uint64_t cache_gen;
	uintptr_t cache_start, cache_end;
	struct gpsu_alloc *cache_a;
	/* gpsMemSystemScope cache (advise.c): [sys_start, sys_end) is one
	 * GPS view (sys_a) or memory that needs nothing (sys_a NULL) */
	uint64_t sys_gen;
	uintptr_t sys_start, sys_end;
	struct gpsu_alloc *sys_a;
};

extern struct gpsu_ctx gpsu;
/*
 * initial-exec: one load relative to %fs instead of a __tls_get_addr call
 * per access (the coordinates of every kernel thread of gpsLaunchKernel
 * go through here). The few hundred bytes come from glibc's static TLS
 * surplus when the library is dlopen()ed.
 */
#define GPSU_TLS	_Thread_local __attribute__((tls_model("initial-exec")))
extern GPSU_TLS struct gpsu_tls gpsu_tls;

/* error.c */
gpsError_t gpsu_ret(gpsError_t err);
gpsError_t gpsu_errno(int err);

/* context.c */
gpsError_t gpsu_init(void);
int gpsu_cur_device(void);
size_t gpsu_sys_page(void);
bool gpsu_env_switch(const char *name, int *cache);

/* Calls that wait for streams would wait for the caller's own kernel. */
#define GPSU_NOT_IN_KERNEL()						\
	do {								\
		if (gpsu_tls.in_kernel)					\
			return gpsu_ret(gpsErrorNotSupported);		\
	} while (0)

#endif /* GPSU_INTERNAL_H */
