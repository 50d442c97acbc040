/* SPDX-License-Identifier: MIT */
/*
 * gpsu.h - libgpsu, the CUDA-shaped runtime of the GPS address space.
 *
 * Device d is the d-th online NUMA node. Kernels are C functions run by
 * pthreads bound to that node's CPUs. GPS memory (gpsMallocGPS) is
 * replicated on every subscribing device; stores are published to the other
 * replicas no later than the next release (end of a kernel, a synchronize,
 * gpsThreadFenceSystem). See Documentation/library.rst and man/.
 *
 * Every function returns a gpsError_t (gpsSuccess is 0) and records a
 * failure as the calling thread's last error (gpsGetLastError).
 */
#ifndef GPSU_H
#define GPSU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPSU_VERSION_MAJOR	0
#define GPSU_VERSION_MINOR	2

/* Helpers defined in this header are marked with this macro. */
#ifndef GPSU_INLINE
#define GPSU_INLINE static inline __attribute__((always_inline))
#endif

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

typedef enum gpsError {
	gpsSuccess = 0,
	gpsErrorInvalidValue = 1,	/* bad argument: NULL, size, flag */
	gpsErrorMemoryAllocation = 2,	/* out of memory (host or node) */
	gpsErrorInitializationError = 3, /* /dev/gps opened but unusable */
	gpsErrorNoDevice = 4,		/* /dev/gps absent: no gps driver */
	gpsErrorInvalidDevice = 5,	/* device index out of range */
	gpsErrorInvalidDevicePointer = 6, /* not (inside) a gps allocation */
	gpsErrorInvalidMemcpyDirection = 7, /* kind does not match pointers */
	gpsErrorInvalidResourceHandle = 8, /* bad or foreign stream/event */
	gpsErrorInvalidConfiguration = 9, /* bad grid/block/argument block */
	gpsErrorNotReady = 10,		/* queried work still pending */
	gpsErrorNotSupported = 11,	/* feature absent from the driver */
	gpsErrorBusy = 12,		/* unsubscribe of the last subscriber */
	gpsErrorLaunchFailure = 13,	/* a kernel or its release failed */
	gpsErrorDriverVersion = 14,	/* driver ABI this library lacks */
	gpsErrorOperatingSystem = 15,	/* an unexpected system call error */
	gpsErrorUnknown = 16,
} gpsError_t;

const char *gpsGetErrorName(gpsError_t err);
const char *gpsGetErrorString(gpsError_t err);
/* Returns the calling thread's last error and resets it to gpsSuccess. */
gpsError_t gpsGetLastError(void);
/* Returns the calling thread's last error without resetting it. */
gpsError_t gpsPeekAtLastError(void);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

#define GPS_MAX_DEVICE_CPUS	1024

typedef struct gpsDeviceProp {
	char name[64];		/* "gps node N" */
	int device;		/* device index */
	int numaNode;		/* NUMA node id of the device */
	int numCpus;		/* CPUs of the node that run kernels */
	int cpus[GPS_MAX_DEVICE_CPUS]; /* their ids, numCpus entries */
	size_t totalGlobalMem;	/* bytes of memory of the node */
	size_t freeGlobalMem;	/* bytes free when queried */
	size_t replicaPages;	/* pages of GPS replicas held on the node */
	size_t gpsPageSize;	/* default GPS page size of new allocations */
	size_t gpsBlockSize;	/* write-queue block (publication) size */
	int maxThreadsPerBlock;	/* 1024 as on CUDA devices */
	int maxThreadsDim[3];
	int maxGridSize[3];
	int multiProcessorCount; /* = numCpus: one worker pthread per CPU */
	int concurrentKernels;	/* 1: kernels on other devices overlap */
	int unifiedAddressing;	/* 1: one pointer is valid on every device */
	int driverAbiVersion;	/* GPS_ABI_VERSION of gps.ko */
} gpsDeviceProp;

gpsError_t gpsGetDeviceCount(int *count);
/* Sets/gets the device of the calling host thread (default 0). */
gpsError_t gpsSetDevice(int device);
gpsError_t gpsGetDevice(int *device);
gpsError_t gpsGetDeviceProperties(gpsDeviceProp *prop, int device);
/* Waits for all work of the current device, then fences the device. */
gpsError_t gpsDeviceSynchronize(void);

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* gpsMallocGPS flags */
#define gpsMemGPSAutomatic	0x0u	/* every device subscribes at first */
#define gpsMemGPSManual		0x1u	/* only the current device at first */
#define gpsMemGPSPage4K		0x10u	/* GPS page size; default: sysfs */
#define gpsMemGPSPage64K	0x20u
#define gpsMemGPSPage2M		0x40u

gpsError_t gpsMallocGPS(void **ptr, size_t size, unsigned int flags);
/* Conventional memory: a single copy on the current device's node. */
gpsError_t gpsMalloc(void **ptr, size_t size);
/* Page-locked (best effort) host memory preferred on the current node. */
gpsError_t gpsMallocHost(void **ptr, size_t size);
/* Unified-memory baseline: anonymous memory placed by first touch,
 * migrated by gpsMemPrefetchAsync / gpsMemAdvise. */
gpsError_t gpsMallocManaged(void **ptr, size_t size);
/* Frees any of the four kinds; waits for all devices' work first. */
gpsError_t gpsFree(void *ptr);
gpsError_t gpsFreeHost(void *ptr);

typedef enum gpsMemcpyKind {
	gpsMemcpyHostToHost = 0,
	gpsMemcpyHostToDevice = 1,
	gpsMemcpyDeviceToHost = 2,
	gpsMemcpyDeviceToDevice = 3,
	gpsMemcpyDefault = 4,	/* inferred from the pointers */
} gpsMemcpyKind;

typedef struct gpsStream *gpsStream_t;
typedef struct gpsEvent *gpsEvent_t;

gpsError_t gpsMemcpy(void *dst, const void *src, size_t count,
		     gpsMemcpyKind kind);
gpsError_t gpsMemcpyAsync(void *dst, const void *src, size_t count,
			  gpsMemcpyKind kind, gpsStream_t stream);
gpsError_t gpsMemset(void *ptr, int value, size_t count);
gpsError_t gpsMemsetAsync(void *ptr, int value, size_t count,
			  gpsStream_t stream);

typedef enum gpsMemoryAdvise {
	gpsMemAdviseGPSSubscribe = 1,	/* give device a replica */
	gpsMemAdviseGPSUnsubscribe = 2,	/* drop device's replica */
	gpsMemAdviseSetReadMostly = 3,	/* GPS: subscribe every device */
	gpsMemAdviseUnsetReadMostly = 4,
	gpsMemAdviseSetPreferredLocation = 5,
	gpsMemAdviseUnsetPreferredLocation = 6,
	gpsMemAdviseSetAccessedBy = 7,
	gpsMemAdviseUnsetAccessedBy = 8,
	gpsMemAdviseGPSCollapse = 9,	/* system scope: one copy, on device
					 * (or the nearest subscriber) */
} gpsMemoryAdvise;

gpsError_t gpsMemAdvise(const void *ptr, size_t count,
			gpsMemoryAdvise advice, int device);
gpsError_t gpsMemPrefetchAsync(const void *ptr, size_t count, int device,
			       gpsStream_t stream);
/* Subscriber mask (bit d = device d) of each GPS page of [ptr, ptr+count):
 * at most n entries written to masks, *npages set to the pages covered. */
gpsError_t gpsMemGetSubscribers(const void *ptr, size_t count,
				unsigned long long *masks, size_t n,
				size_t *npages);

/* Automatic subscription: between start and stop the driver records every
 * device's accesses to the automatic GPS allocations; at stop each device
 * keeps the pages it used. gpsErrorNotSupported with a driver without
 * tracking; gpsErrorInvalidValue for start twice or stop alone. */
gpsError_t gpsTrackingStart(void);
gpsError_t gpsTrackingStop(void);

enum gpsMemoryType {
	gpsMemoryTypeUnregistered = 0,	/* not from libgpsu */
	gpsMemoryTypeHost = 1,		/* gpsMallocHost */
	gpsMemoryTypeDevice = 2,	/* gpsMalloc: conventional */
	gpsMemoryTypeManaged = 3,	/* gpsMallocManaged */
	gpsMemoryTypeGPS = 4,		/* gpsMallocGPS */
};

typedef struct gpsPointerAttributes {
	enum gpsMemoryType type;
	int device;		/* home device */
	int viewDevice;		/* GPS: whose view the pointer is in */
	void *base;		/* start of the allocation (home view) */
	size_t size;		/* bytes requested */
	size_t gpsPageSize;	/* GPS and conventional: page size */
} gpsPointerAttributes;

gpsError_t gpsPointerGetAttributes(gpsPointerAttributes *attr,
				   const void *ptr);

/*
 * Translates a GPS pointer to the view of the device the caller runs on
 * (inside a kernel: the launching device; on a host thread: its current
 * device) so that loads hit the local replica. Any other pointer is
 * returned unchanged. Never fails.
 */
void *gpsDevicePtr(const void *ptr);

/* ------------------------------------------------------------------ */
/* Kernels                                                             */
/* ------------------------------------------------------------------ */

typedef struct gpsDim3 {
	unsigned int x, y, z;
} gpsDim3;

GPSU_INLINE gpsDim3 gpsDim(unsigned int x, unsigned int y, unsigned int z)
{
	gpsDim3 d = { x, y, z };
	return d;
}

/* A kernel: called once per thread of every block, args = the launch's
 * copy of the argument block. */
typedef void (*gpsKernel_t)(void *args);

#define GPS_KERNEL_MAX_ARGS_SIZE 4096
#define GPS_KERNEL_MAX_PTRS	32

/* gpsKernelArgs.flags */
#define gpsArgsTranslateListed	0x0u /* translate the listed offsets */
#define gpsArgsTranslateScan	0x1u /* translate every aligned word that
				      * points into a GPS allocation */

/*
 * The argument block of a launch. @size bytes at @data are copied at
 * launch time; the pointer at each of the @nptrs offsets in @ptr (and with
 * gpsArgsTranslateScan every pointer-aligned word) that points into a GPS
 * allocation is rewritten in the copy to the launching device's view.
 */
typedef struct gpsKernelArgs {
	const void *data;
	size_t size;
	unsigned int flags;
	unsigned int nptrs;
	size_t ptr[GPS_KERNEL_MAX_PTRS];
} gpsKernelArgs;

/*
 * GPS_ARGS(&a, GPS_PTR(struct t, field), ...): listed pointer fields (at
 *	least one; C only: compound literals).
 * GPS_ARGS_SCAN(&a): every pointer-aligned word that is a GPS pointer.
 * GPS_ARGS_RAW(&a): copy only, no translation.
 * Pointers left untranslated still work: they name the home device's view
 * (loads may be remote) and their stores are published by the kernel's
 * end, which also fences the home devices.
 */
#define GPS_PTR(type, field)	offsetof(type, field)
#define GPS_ARGS(p, ...)						\
	(&(const gpsKernelArgs){ .data = (p), .size = sizeof(*(p)),	\
		.flags = gpsArgsTranslateListed,			\
		.nptrs = sizeof((size_t[]){ __VA_ARGS__ }) / sizeof(size_t), \
		.ptr = { __VA_ARGS__ } })
#define GPS_ARGS_SCAN(p)						\
	(&(const gpsKernelArgs){ .data = (p), .size = sizeof(*(p)),	\
		.flags = gpsArgsTranslateScan })
#define GPS_ARGS_RAW(p)							\
	(&(const gpsKernelArgs){ .data = (p), .size = sizeof(*(p)) })

gpsError_t gpsLaunchKernel(gpsKernel_t fn, gpsDim3 grid, gpsDim3 block,
			   const gpsKernelArgs *args, gpsStream_t stream);

/* Coordinates of the calling kernel thread (zeros outside a kernel). */
gpsDim3 gpsThreadIdx(void);
gpsDim3 gpsBlockIdx(void);
gpsDim3 gpsBlockDim(void);
gpsDim3 gpsGridDim(void);

#ifdef GPSU_CUDA_NAMES
#define threadIdx	(gpsThreadIdx())
#define blockIdx	(gpsBlockIdx())
#define blockDim	(gpsBlockDim())
#define gridDim		(gpsGridDim())
#endif

/* ------------------------------------------------------------------ */
/* Streams and events                                                  */
/* ------------------------------------------------------------------ */

/* A stream belongs to the current device of the creating thread. The
 * NULL stream is the current device's default stream. */
gpsError_t gpsStreamCreate(gpsStream_t *stream);
gpsError_t gpsStreamDestroy(gpsStream_t stream);
gpsError_t gpsStreamSynchronize(gpsStream_t stream);
gpsError_t gpsStreamQuery(gpsStream_t stream);
gpsError_t gpsStreamWaitEvent(gpsStream_t stream, gpsEvent_t event,
			      unsigned int flags);

gpsError_t gpsEventCreate(gpsEvent_t *event);
gpsError_t gpsEventDestroy(gpsEvent_t event);
gpsError_t gpsEventRecord(gpsEvent_t event, gpsStream_t stream);
gpsError_t gpsEventQuery(gpsEvent_t event);
gpsError_t gpsEventSynchronize(gpsEvent_t event);
gpsError_t gpsEventElapsedTime(float *ms, gpsEvent_t start, gpsEvent_t end);

/* ------------------------------------------------------------------ */
/* System scope: fences, barrier, atomics                              */
/* ------------------------------------------------------------------ */

/* System-scope fence: one fence of every device; every store made so far,
 * through any device's view, is in every replica when it returns. */
gpsError_t gpsThreadFenceSystem(void);

/*
 * A barrier for kernel threads running on several devices at once. It
 * lives in conventional memory; gpsBarrierWait releases as the end of a
 * kernel does (the caller's device and the home devices of GPS memory:
 * stores through translated and untranslated pointers are published
 * before it arrives). All @count participants must run concurrently (at
 * most one per worker pthread of each device, e.g. one block of one
 * thread per device).
 */
typedef struct gpsBarrier *gpsBarrier_t;

gpsError_t gpsBarrierCreate(gpsBarrier_t *barrier, unsigned int count);
gpsError_t gpsBarrierDestroy(gpsBarrier_t barrier);
gpsError_t gpsBarrierWait(gpsBarrier_t barrier);

/*
 * Prepares [ptr, ptr + size) for system-scope operations. On GPS memory
 * the first call collapses each GPS page of the range to a single copy
 * (the one the caller's device sees: gpsMemAdviseGPSCollapse) and makes
 * it conventional; later calls find the pages in a per-allocation cache
 * and return at once. Any other memory needs nothing. A subscribe of the
 * range (advice, prefetch) replicates the pages again and clears their
 * cache bits. The gpsAtomic*System helpers call it; call it before your
 * own atomics or synchronization flags on GPS memory.
 */
gpsError_t gpsMemSystemScope(const void *ptr, size_t size);

/*
 * System-scope atomics: sequentially consistent, visible to every device
 * at once. On conventional, host or managed memory they are plain
 * atomics (after a cache check); on GPS memory the page is collapsed to
 * one copy first (gpsMemSystemScope), as the paper's section 5.3 does on
 * a system-scope store, so that every device's atomics meet there.
 * Synchronization variables still belong in conventional memory
 * (gpsMalloc): a collapsed GPS page is no longer replicated.
 */
GPSU_INLINE int gpsAtomicAddSystem(int *p, int v)
{
	gpsMemSystemScope(p, sizeof(*p));
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

GPSU_INLINE unsigned long long
gpsAtomicAddSystemU64(unsigned long long *p, unsigned long long v)
{
	gpsMemSystemScope(p, sizeof(*p));
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

GPSU_INLINE int gpsAtomicExchSystem(int *p, int v)
{
	gpsMemSystemScope(p, sizeof(*p));
	return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}

GPSU_INLINE int gpsAtomicCASSystem(int *p, int expected, int desired)
{
	gpsMemSystemScope(p, sizeof(*p));
	__atomic_compare_exchange_n(p, &expected, desired, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expected;
}

GPSU_INLINE int gpsAtomicLoadSystem(const int *p)
{
	gpsMemSystemScope(p, sizeof(*p));
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

GPSU_INLINE void gpsAtomicStoreSystem(int *p, int v)
{
	gpsMemSystemScope(p, sizeof(*p));
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

#ifdef __cplusplus
}
#endif

#endif /* GPSU_H */
