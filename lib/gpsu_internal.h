/* SPDX-License-Identifier: MIT */
/*
 * Internal state of libgpsu.
 *
 * Lock order (outer to inner):
 *
 *   gpsu.stream_lock          (lists of streams and events, default
 *                              streams, stream references)
 *     stream->lock            (its op queue and state)
 *       event->lock           (its completion state)
 *   gpsu.alloc_lock (rwlock)  (the allocation range index)
 *   pool->run_lock            (one kernel at a time per device pool)
 *     pool->lock              (the pool's current job)
 *
 * The driver is only reached through engine.h (engine.c).
 *
 * No lock is held while a kernel runs or while an ioctl sleeps, except
 * pool->run_lock, which only serialises kernels of one device.
 */
#ifndef GPSU_INTERNAL_H
#define GPSU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpsu.h"
#include <linux/gps.h>

#define GPSU_API __attribute__((visibility("default")))

enum gpsu_kind {
	GPSU_KIND_GPS = 1,
	GPSU_KIND_CONV,
	GPSU_KIND_HOST,
	GPSU_KIND_MANAGED,
};

/* One allocation of any kind; views[d] is device d's view (GPS only). */
struct gpsu_alloc {
	enum gpsu_kind kind;
	uint64_t handle;	/* driver handle (GPS, CONV) */
	size_t size;		/* bytes requested */
	size_t map_size;	/* bytes mapped per view */
	size_t page_size;	/* GPS page size or system page size */
	int home;		/* home device */
	unsigned int flags;
	int nviews;		/* number of mapped views */
	char *base;		/* the pointer handed out */
	char *views[GPS_MAX_DEVICES];
	/* GPS: bit g set once GPS page g was collapsed for system scope
	 * (allocated at the first one, installed with a CAS, bits set and
	 * cleared atomically; a subscribe clears the bits of its range) */
	uint64_t *sys_pages;
};

struct gpsu_device {
	int node;
	int nr_cpus;
	int cpus[GPS_MAX_DEVICE_CPUS];
	struct gpsu_pool *pool;	/* created at the first launch */
};

struct gpsu_ctx {
	pthread_once_t once;
	gpsError_t init_err;	/* gpsSuccess once usable */
	int ndev;		/* 0 until set up (atomic outside gpsu_init) */
	struct gps_version_args ver;
	struct gpsu_device dev[GPS_MAX_DEVICES];

	pthread_mutex_t pool_lock;	/* creation of dev[].pool */

	pthread_rwlock_t alloc_lock;	/* ranges, nranges, host_mask */
	struct gpsu_range *ranges;	/* sorted by start */
	size_t nranges, cap_ranges;
	uint64_t host_mask;	/* homes of live GPS allocations */
	uint64_t alloc_gen;	/* bumped when an allocation comes or goes */

	pthread_mutex_t stream_lock;	/* stream and event lists, refs,
					 * default_stream[] */
	struct gpsStream *default_stream[GPS_MAX_DEVICES];
};

struct gpsu_range {
	uintptr_t start, end;	/* [start, end) of one view */
	struct gpsu_alloc *a;
	int dev;		/* whose view, -1 when not a GPS view */
};

/* Per-thread state: current device, last error, kernel coordinates. */
struct gpsu_tls {
	int device;		/* current device (host thread) */
	int in_kernel;		/* 1 on a worker running a kernel */
	int kdevice;		/* device the kernel runs on */
	gpsError_t last_err;
	gpsDim3 thread_idx, block_idx, block_dim, grid_dim;
	/* gpsDevicePtr lookup cache */
	uint64_t cache_gen;
	uintptr_t cache_start, cache_end;
	struct gpsu_alloc *cache_a;
	/* gpsMemSystemScope cache: [sys_start, sys_end) is one GPS view
	 * (sys_a) or memory that needs nothing (sys_a NULL) */
	uint64_t sys_gen;
	uintptr_t sys_start, sys_end;
	struct gpsu_alloc *sys_a;
};

extern struct gpsu_ctx gpsu;
extern _Thread_local struct gpsu_tls gpsu_tls;

/* error.c */
gpsError_t gpsu_ret(gpsError_t err);
gpsError_t gpsu_errno(int err);

/* context.c */
gpsError_t gpsu_init(void);
int gpsu_cur_device(void);

/* Calls that wait for streams would wait for the caller's own kernel. */
#define GPSU_NOT_IN_KERNEL()						\
	do {								\
		if (gpsu_tls.in_kernel)					\
			return gpsu_ret(gpsErrorNotSupported);		\
	} while (0)

/* memory.c */
struct gpsu_alloc *gpsu_lookup(const void *p, int *dev, size_t *off);
void gpsu_free_all_allocs(void);
gpsError_t gpsu_do_memcpy(void *dst, const void *src, size_t n, int device);
gpsError_t gpsu_do_memset(void *p, int value, size_t n);
gpsError_t gpsu_check_copy(void *dst, const void *src, size_t n,
			   gpsMemcpyKind kind);
gpsError_t gpsu_check_set(void *p, size_t n);
gpsError_t gpsu_do_prefetch(const void *p, size_t n, int device);
gpsError_t gpsu_check_prefetch(const void *p, size_t n, int device);
void *gpsu_translate(const void *p, int device);
uint64_t gpsu_host_mask(void);
gpsError_t gpsu_conv_alloc(void **ptr, size_t size, int home);
gpsError_t gpsu_conv_free(void *ptr);

/* link.c */
struct gpsu_link {
	uint64_t bandwidth;	/* bytes/s, 0 = unlimited */
	uint64_t latency_ns;
};
void gpsu_link_read(struct gpsu_link *l);
uint64_t gpsu_link_now(void);
uint64_t gpsu_link_charge(const struct gpsu_link *l, int device,
			  uint64_t bytes, uint64_t now);
void gpsu_link_wait(uint64_t until);

/* launch.c */
struct gpsu_launch {
	gpsKernel_t fn;
	gpsDim3 grid, block;
	void *args;		/* per-launch copy, already translated */
	int device;
};
gpsError_t gpsu_run_kernel(struct gpsu_launch *l);

/* stream.c */
gpsError_t gpsu_stream_get(gpsStream_t s, struct gpsStream **out);
void gpsu_stream_put(struct gpsStream *s);
gpsError_t gpsu_enqueue_kernel(struct gpsStream *s, struct gpsu_launch *l);
int gpsu_stream_device(struct gpsStream *s);
gpsError_t gpsu_sync_device(int device, bool fence);
gpsError_t gpsu_sync_all(void);
gpsError_t gpsu_enqueue_copy(struct gpsStream *s, void *dst,
			     const void *src, size_t n);
gpsError_t gpsu_enqueue_set(struct gpsStream *s, void *p, int v, size_t n);
gpsError_t gpsu_enqueue_prefetch(struct gpsStream *s, const void *p,
				 size_t n, int device);

#endif /* GPSU_INTERNAL_H */
