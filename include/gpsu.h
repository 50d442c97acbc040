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
#define GPSU_VERSION_MINOR	6

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
	gpsErrorNotPermitted = 17,	/* a knob needs root (the driver's) */
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

/* What provides the devices (gpsGetEngine); chosen at the first call
 * that needs a device, by $GPSU_ENGINE or what the machine has. */
typedef enum gpsEngine {
	gpsEngineNone = 0,	/* none set up (yet, or none usable) */
	gpsEngineDriver = 1,	/* gps.ko through /dev/gps (GPSU_ENGINE=kmod) */
	gpsEngineNative = 2,	/* user space: userfaultfd write-protect
				 * and PAGEMAP_SCAN (GPSU_ENGINE=user) */
} gpsEngine;

/* Sets up the devices if needed and stores the engine in *engine; its
 * name ("kmod", "user") in *name when name is not NULL. */
gpsError_t gpsGetEngine(gpsEngine *engine, const char **name);

/* Knobs: the driver's /sys/kernel/gps names, units and ranges, for
 * either engine (the number of the word for track_policy). gpsSetKnob:
 * gpsErrorNotSupported when the engine cannot honour the value. */
gpsError_t gpsGetKnob(unsigned long long *value, const char *name);
gpsError_t gpsSetKnob(const char *name, unsigned long long value);
/* Counter @name of @device, the driver's debugfs names (node<N>/stats);
 * gpsErrorNotSupported for one the engine does not keep. */
gpsError_t gpsDeviceGetCounter(unsigned long long *value, const char *name,
			       int device);

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
/* gpsMallocManagedFlags flags */
#define gpsMemAttachGlobal	0x1u	/* CUDA's default: as gpsMallocManaged */
#define gpsMemManagedOnFault	0x100u	/* one copy per page, moved on faults */
/* Managed memory; with gpsMemManagedOnFault the driver's (plain UM): one
 * copy per GPS page, first on the current device, moved by a fault to
 * the device that touches it (thrashing pages pinned, mapped remotely);
 * kernels get their device's view; no hints, no prefetch. */
gpsError_t gpsMallocManagedFlags(void **ptr, size_t size, unsigned int flags);
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
	gpsMemoryTypeManaged = 3,	/* gpsMallocManaged(Flags) */
	gpsMemoryTypeGPS = 4,		/* gpsMallocGPS */
};

typedef struct gpsPointerAttributes {
	enum gpsMemoryType type;
	int device;		/* home device */
	int viewDevice;		/* GPS: whose view the pointer is in, -1 for
				 * the host view (as gpsMallocGPS returned) */
	void *base;		/* start of the allocation (host view) */
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
#define gpsArgsLocalStores	0x2u /* the kernel stores to GPS memory
				      * only through its device's view
				      * (translated pointers): its end
				      * releases that device alone */

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
 * GPS_ARGS_LOCAL(&a, ...): GPS_ARGS, and the promise gpsArgsLocalStores
 *	makes: every store to GPS memory goes through a translated pointer.
 * Pointers left untranslated still work: they name the host view, which
 * maps what the home device's view maps (loads may be remote), and their
 * stores are published by the kernel's end, which also fences the host
 * views, unless gpsArgsLocalStores is set (then a store through one is
 * published by the next host release or the home device's next release,
 * not by the kernel's end).
 */
#define GPS_PTR(type, field)	offsetof(type, field)
/* Listed pointers with @flags: the two macros below, not for callers. */
#define GPS_ARGS_FLAGS_(fl, p, ...)					\
	(&(const gpsKernelArgs){ .data = (p), .size = sizeof(*(p)),	\
		.flags = (fl),						\
		.nptrs = sizeof((size_t[]){ __VA_ARGS__ }) / sizeof(size_t), \
		.ptr = { __VA_ARGS__ } })
#define GPS_ARGS(p, ...)						\
	GPS_ARGS_FLAGS_(gpsArgsTranslateListed, p, __VA_ARGS__)
#define GPS_ARGS_LOCAL(p, ...)						\
	GPS_ARGS_FLAGS_(gpsArgsTranslateListed | gpsArgsLocalStores,	\
			p, __VA_ARGS__)
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

/*
 * Kernels defined with GPS_KERNEL: no per-thread call.
 *
 *	GPS_KERNEL(saxpy, struct saxpy_args, a)
 *	{
 *		unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
 *
 *		if (i < a->n)
 *			a->y[i] += a->alpha * a->x[i];
 *	}
 *	...
 *	gpsLaunch(&saxpy, grid, block, GPS_ARGS(&args, ...), 0, stream);
 *
 * GPS_KERNEL(name, T, a) defines `const gpsKernel name`; the body sees
 * `T *a`, the launch's copy of the argument block. The library runs
 * batches of blocks per worker; for each block a loop over its threads
 * (z, y, x) calls the body, which the compiler inlines: the coordinates
 * are loop variables, not function calls. Such a kernel must not call
 * gpsSyncThreads (the launch fails with gpsErrorLaunchFailure).
 *
 * GPS_KERNEL_SYNC(name, T, a) defines a kernel whose threads may call
 * gpsSyncThreads(): each thread of a block runs as a fiber on the worker
 * that runs the block; the barrier switches to the next thread of the
 * block (tens of nanoseconds), so every thread reaches the barrier before
 * any goes on. Only kernels defined so pay for fibers.
 *
 * The _SHARED forms add static shared memory: the body also sees `S *s`,
 * one S per block. gpsSharedMem() is the dynamic part (sharedMemBytes at
 * launch, 16-byte aligned, after the static part). Static plus dynamic is
 * at most GPS_MAX_SHARED_MEM_PER_BLOCK bytes. Shared memory is not zeroed.
 *
 * Inside a body, gpsThreadIdx() (threadIdx) and the others read the
 * body's own coordinates. A helper function called from the body sees
 * them through the library's functions in a GPS_KERNEL_SYNC kernel; in a
 * GPS_KERNEL kernel it sees the dimensions but zeros for threadIdx and
 * blockIdx: pass it the indices.
 */
#define GPS_MAX_SHARED_MEM_PER_BLOCK	(48u * 1024)

/* What a thread of a GPS_KERNEL body knows. */
typedef struct gpsThreadCtx {
	gpsDim3 tIdx, bIdx, bDim, gDim;	/* threadIdx ... gridDim */
	void *shared;		/* static shared memory of the block */
	void *dynShared;	/* dynamic shared memory of the block */
} gpsThreadCtx;

/* gpsKernel.flags */
#define gpsKernelSync	0x1u	/* threads are fibers: gpsSyncThreads */
#define gpsKernelPhases	0x2u	/* body per block, loops over its threads */

/* A kernel as GPS_KERNEL defines it; fill it only through the macros. */
typedef struct gpsKernel {
	unsigned int flags;
	size_t staticShared;
	/* runs blocks [first, first + count) (linear indices) */
	void (*blocks)(const gpsThreadCtx *c, unsigned long long first,
		       unsigned long long count, void *args);
	/* runs thread c->tIdx of block c->bIdx (gpsKernelSync) */
	void (*thread)(const gpsThreadCtx *c, void *args);
	const char *name;
} gpsKernel;

gpsError_t gpsLaunch(const gpsKernel *kernel, gpsDim3 grid, gpsDim3 block,
		     const gpsKernelArgs *args, size_t sharedMemBytes,
		     gpsStream_t stream);

/* Block barrier of a GPS_KERNEL_SYNC kernel (CUDA's __syncthreads); in
 * a GPS_KERNEL_PHASES body, between its thread loops, it costs nothing. */
void gpsSyncThreads(void);
/* Dynamic shared memory of the calling thread's block (extern __shared__);
 * NULL outside a gpsLaunch kernel or when none was asked for. */
void *gpsSharedMem(void);

/*
 * Warp functions (CUDA's __shfl_*_sync, __ballot_sync, __any_sync,
 * __all_sync, __syncwarp) in a GPS_KERNEL_SYNC kernel. A
 * warp is GPS_WARP_SIZE consecutive threads of a block (linear index
 * x + bDim.x * (y + bDim.y * z)); lane = that index % GPS_WARP_SIZE. Each
 * call waits until every live lane named in @mask (the caller's own lane
 * is always taken) is at a warp function with the same mask, as a
 * __syncwarp(mask) would, then reads the other lanes' values: a switch
 * between fibers per thread, as gpsSyncThreads. Lanes that returned count
 * as arrived; reading a lane that is not taking part (not in the mask,
 * returned, past the block's last thread) gives the caller's own value.
 * @width: a power of two up to 32 (anything else reads as 32), the
 * shuffles act within segments of that many lanes, as in CUDA.
 *
 * Outside a fiber (a GPS_KERNEL kernel, gpsLaunchKernel, host code) the
 * caller is alone: a mask that names another thread of its block fails
 * the launch (gpsErrorLaunchFailure), as gpsSyncThreads does.
 *
 * Shuffles move 64 bits; gpsShflSync(mask, v, lane, width) and its kin
 * take and return int, unsigned int, long long, unsigned long long, float
 * or double (C11 _Generic; typed ...I/U/LL/U64/F/D).
 *
 * There is no __activemask: the lanes of a warp run one after another,
 * so which of them run "together" at a point of the code is not known;
 * name the lanes (the full mask, or a ballot's result taken before the
 * branch) as CUDA recommends anyway.
 */
#define GPS_WARP_SIZE	32
#define GPSU_ARG1_(a, ...)	a
#define GPSU_ARG2_(a, b, ...)	b
unsigned long long gpsShflSyncU64(unsigned int mask, unsigned long long var,
				  int srcLane, int width);
unsigned long long gpsShflUpSyncU64(unsigned int mask,
				    unsigned long long var,
				    unsigned int delta, int width);
unsigned long long gpsShflDownSyncU64(unsigned int mask,
				      unsigned long long var,
				      unsigned int delta, int width);
unsigned long long gpsShflXorSyncU64(unsigned int mask,
				     unsigned long long var,
				     int laneMask, int width);
/* bit l set: lane l of the mask is live and its predicate non-zero */
unsigned int gpsBallotSync(unsigned int mask, int predicate);
int gpsAnySync(unsigned int mask, int predicate);
int gpsAllSync(unsigned int mask, int predicate);
void gpsSyncWarp(unsigned int mask);

#define GPSU_SHFL_T_(op, sfx, T, AT)					\
GPSU_INLINE T gps##op##sfx(unsigned int m, T v, AT a, int w)		\
{									\
	union { T t; unsigned long long u; } x;				\
									\
	x.u = 0;							\
	x.t = v;							\
	x.u = gps##op##U64(m, x.u, a, w);				\
	return x.t;							\
}
#define GPSU_SHFL_OP_(op, AT)						\
GPSU_SHFL_T_(op, I, int, AT)						\
GPSU_SHFL_T_(op, U, unsigned int, AT)					\
GPSU_SHFL_T_(op, LL, long long, AT)					\
GPSU_SHFL_T_(op, F, float, AT)						\
GPSU_SHFL_T_(op, D, double, AT)
GPSU_SHFL_OP_(ShflSync, int)
GPSU_SHFL_OP_(ShflUpSync, unsigned int)
GPSU_SHFL_OP_(ShflDownSync, unsigned int)
GPSU_SHFL_OP_(ShflXorSync, int)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define GPSU_SHFL_PICK_(v, op)						\
	_Generic((v), int: gps##op##I, unsigned int: gps##op##U,	\
		 long long: gps##op##LL, unsigned long long: gps##op##U64, \
		 float: gps##op##F, double: gps##op##D)
#define gpsShflSync(m, v, l, w)	GPSU_SHFL_PICK_(v, ShflSync)(m, v, l, w)
#define gpsShflUpSync(m, v, d, w) GPSU_SHFL_PICK_(v, ShflUpSync)(m, v, d, w)
#define gpsShflDownSync(m, v, d, w)					\
	GPSU_SHFL_PICK_(v, ShflDownSync)(m, v, d, w)
#define gpsShflXorSync(m, v, l, w) GPSU_SHFL_PICK_(v, ShflXorSync)(m, v, l, w)
#ifdef GPSU_CUDA_NAMES
/* the width is optional, as in CUDA */
#define __shfl_sync(m, v, ...)						\
	gpsShflSync(m, v, GPSU_ARG1_(__VA_ARGS__, 0),			\
		    GPSU_ARG2_(__VA_ARGS__, GPS_WARP_SIZE, 0))
#define __shfl_up_sync(m, v, ...)					\
	gpsShflUpSync(m, v, GPSU_ARG1_(__VA_ARGS__, 0),			\
		      GPSU_ARG2_(__VA_ARGS__, GPS_WARP_SIZE, 0))
#define __shfl_down_sync(m, v, ...)					\
	gpsShflDownSync(m, v, GPSU_ARG1_(__VA_ARGS__, 0),		\
			GPSU_ARG2_(__VA_ARGS__, GPS_WARP_SIZE, 0))
#define __shfl_xor_sync(m, v, ...)					\
	gpsShflXorSync(m, v, GPSU_ARG1_(__VA_ARGS__, 0),		\
		       GPSU_ARG2_(__VA_ARGS__, GPS_WARP_SIZE, 0))
#endif
#endif
#ifdef GPSU_CUDA_NAMES
#define warpSize		GPS_WARP_SIZE
#define __ballot_sync(m, p)	gpsBallotSync(m, p)
#define __any_sync(m, p)	gpsAnySync(m, p)
#define __all_sync(m, p)	gpsAllSync(m, p)
/* __syncwarp() is __syncwarp(0xffffffff) */
#define __syncwarp(...)							\
	gpsSyncWarp((__VA_ARGS__ + 0u) ? (__VA_ARGS__ + 0u) : 0xffffffffu)
#endif

/* Outside a GPS_KERNEL body these are null: the calls go to the library. */
static const gpsThreadCtx *const gpsu_k__ __attribute__((unused)) = 0;
static const gpsDim3 gpsu_tid__ __attribute__((unused)) = { 0, 0, 0 };
/* 1 in a GPS_KERNEL_PHASES body outside its thread loops, where every
 * thread of the block is at the same point: a barrier there is free */
static const int gpsu_phase__ __attribute__((unused)) = 0;
#define gpsSyncThreads()						\
	(gpsu_phase__ == 1 ? (void)0 : (gpsSyncThreads)())

#define gpsThreadIdx()	(gpsu_k__ ? gpsu_tid__ : (gpsThreadIdx)())
#define gpsBlockIdx()	(gpsu_k__ ? gpsu_k__->bIdx : (gpsBlockIdx)())
#define gpsBlockDim()	(gpsu_k__ ? gpsu_k__->bDim : (gpsBlockDim)())
#define gpsGridDim()	(gpsu_k__ ? gpsu_k__->gDim : (gpsGridDim)())
#define gpsSharedMem()	(gpsu_k__ ? gpsu_k__->dynShared : (gpsSharedMem)())

GPSU_INLINE void gpsu_block_idx(gpsThreadCtx *c, unsigned long long b)
{
	unsigned long long gxy = (unsigned long long)c->gDim.x *
				 c->gDim.y;

	c->bIdx.x = (unsigned int)(b % c->gDim.x);
	c->bIdx.y = (unsigned int)((b / c->gDim.x) % c->gDim.y);
	c->bIdx.z = (unsigned int)(b / gxy);
}

/* a const object has internal linkage in C++ unless declared extern */
#ifdef __cplusplus
#define GPSU_KEXTERN_	extern
#else
#define GPSU_KEXTERN_
#endif
#define GPSU_KERNEL_(name, T, a, S, s, ssize, kflags)			\
static inline __attribute__((always_inline)) void			\
name##_gpsu_body(const gpsThreadCtx *gpsu_k__, gpsDim3 gpsu_tid__,	\
		 T *a, S *s);						\
static void name##_gpsu_blocks(const gpsThreadCtx *c__,		\
			       unsigned long long b__,			\
			       unsigned long long n__, void *a__)	\
{									\
	gpsThreadCtx k__ = *c__;					\
	unsigned int x__, y__, z__;					\
									\
	for (; n__; n__--, b__++) {					\
		gpsu_block_idx(&k__, b__);				\
		for (z__ = 0; z__ < k__.bDim.z; z__++)		\
			for (y__ = 0; y__ < k__.bDim.y; y__++)	\
				for (x__ = 0; x__ < k__.bDim.x; x__++) \
					name##_gpsu_body(&k__,		\
						gpsDim(x__, y__, z__),	\
						(T *)a__, (S *)k__.shared); \
	}								\
}									\
static void name##_gpsu_thread(const gpsThreadCtx *c__, void *a__)	\
{									\
	name##_gpsu_body(c__, c__->tIdx, (T *)a__, (S *)c__->shared); \
}									\
GPSU_KEXTERN_ const gpsKernel name = { (kflags), (ssize),		\
	name##_gpsu_blocks,						\
	name##_gpsu_thread, #name };					\
static inline __attribute__((always_inline)) void			\
name##_gpsu_body(const gpsThreadCtx *gpsu_k__ __attribute__((unused)), \
		 gpsDim3 gpsu_tid__ __attribute__((unused)),		\
		 T *a __attribute__((unused)),				\
		 S *s __attribute__((unused)))

#define GPS_KERNEL(name, T, a)						\
	GPSU_KERNEL_(name, T, a, void, gpsu_ns__, 0, 0)
#define GPS_KERNEL_SHARED(name, T, a, S, s)				\
	GPSU_KERNEL_(name, T, a, S, s, sizeof(S), 0)
#define GPS_KERNEL_SYNC(name, T, a)					\
	GPSU_KERNEL_(name, T, a, void, gpsu_ns__, 0, gpsKernelSync)
#define GPS_KERNEL_SYNC_SHARED(name, T, a, S, s)			\
	GPSU_KERNEL_(name, T, a, S, s, sizeof(S), gpsKernelSync)
/* Declares a kernel defined in another file. */
#define GPS_KERNEL_DECLARE(name)	extern const gpsKernel name

/*
 * Barrier kernels as loops over the block's threads: GPS_KERNEL_PHASES.
 *
 *	GPS_KERNEL_PHASES(reduce, struct reduce_args, a)
 *	{
 *		int sdata[256];			// __shared__: one per block
 *		unsigned int s;
 *
 *		GPS_FOR_EACH_THREAD {
 *			unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
 *
 *			sdata[threadIdx.x] = i < a->n ? a->in[i] : 0;
 *		}
 *		__syncthreads();
 *		for (s = blockDim.x / 2; s > 0; s >>= 1) {
 *			GPS_FOR_EACH_THREAD
 *				if (threadIdx.x < s)
 *					sdata[threadIdx.x] +=
 *						sdata[threadIdx.x + s];
 *			__syncthreads();
 *		}
 *		a->out[blockIdx.x] = sdata[0];
 *	}
 *
 * The body runs once per block, on one worker; each GPS_FOR_EACH_THREAD
 * statement runs for every thread of the block in turn (x fastest), with
 * threadIdx (gpsThreadIdx()) its coordinates and GPS_TID its linear index
 * x + bDim.x * (y + bDim.y * z). A thread loop is a phase: every thread
 * finishes it before the next statement starts, so the end of each loop
 * is a block barrier, and __syncthreads() between loops costs nothing
 * (inside a loop it fails the launch, as in GPS_KERNEL). What is outside
 * the loops is the block's: a local array is __shared__ memory, control
 * flow there is the block's uniform control flow (CUDA requires it
 * around a barrier anyway). A value that a thread keeps across a barrier
 * lives in a per-thread array, GPS_PER_THREAD(T, v), one T per thread,
 * read and written as v[GPS_TID]. threadIdx outside a loop, or GPS_TID,
 * does not compile. `continue` ends the calling thread's turn in a loop
 * (CUDA's early return of one thread becomes a per-thread flag).
 *
 * No fiber, no switch: a barrier-per-level reduction runs near the speed
 * of a plain loop (Documentation/benchmarks.rst). Kernels whose barriers
 * sit in per-thread control flow stay GPS_KERNEL_SYNC, which always works.
 * Warp functions name other threads and fail in a phase; write a warp
 * step as a phase that reads the other lanes' GPS_PER_THREAD values.
 * GPS_KERNEL_PHASES_SHARED adds `S *s`, one S per block, as the _SHARED
 * forms above; gpsSharedMem() is the dynamic part.
 */
/* the type of threadIdx outside a thread loop: using it there fails */
struct gpsu_threadIdx_outside_GPS_FOR_EACH_THREAD_ {
	char unused;
};

#define GPSU_KERNEL_PHASES_(name, T, a, S, s, ssize)			\
static inline __attribute__((always_inline)) void			\
name##_gpsu_block(const gpsThreadCtx *gpsu_k__,			\
		  struct gpsu_threadIdx_outside_GPS_FOR_EACH_THREAD_	\
		  gpsu_tid__, int gpsu_phase__, T *a, S *s);		\
static void name##_gpsu_blocks(const gpsThreadCtx *c__,		\
			       unsigned long long b__,			\
			       unsigned long long n__, void *a__)	\
{									\
	struct gpsu_threadIdx_outside_GPS_FOR_EACH_THREAD_ t__ = { 0 };	\
	gpsThreadCtx k__ = *c__;					\
									\
	for (; n__; n__--, b__++) {					\
		gpsu_block_idx(&k__, b__);				\
		name##_gpsu_block(&k__, t__, 1, (T *)a__,		\
				  (S *)k__.shared);			\
	}								\
}									\
/* the whole block, for its thread (0, 0, 0); never called per thread */ \
static void name##_gpsu_thread(const gpsThreadCtx *c__, void *a__)	\
{									\
	struct gpsu_threadIdx_outside_GPS_FOR_EACH_THREAD_ t__ = { 0 };	\
									\
	if (!c__->tIdx.x && !c__->tIdx.y && !c__->tIdx.z)		\
		name##_gpsu_block(c__, t__, 1, (T *)a__,		\
				  (S *)c__->shared);			\
}									\
GPSU_KEXTERN_ const gpsKernel name = { gpsKernelPhases, (ssize),	\
	name##_gpsu_blocks,						\
	name##_gpsu_thread, #name };					\
static inline __attribute__((always_inline)) void			\
name##_gpsu_block(const gpsThreadCtx *gpsu_k__,			\
		  struct gpsu_threadIdx_outside_GPS_FOR_EACH_THREAD_	\
		  gpsu_tid__ __attribute__((unused)),			\
		  int gpsu_phase__ __attribute__((unused)),		\
		  T *a __attribute__((unused)),				\
		  S *s __attribute__((unused)))

#define GPS_KERNEL_PHASES(name, T, a)					\
	GPSU_KERNEL_PHASES_(name, T, a, void, gpsu_ns__, 0)
#define GPS_KERNEL_PHASES_SHARED(name, T, a, S, s)			\
	GPSU_KERNEL_PHASES_(name, T, a, S, s, sizeof(S))

/* one loop per dimension; the last "loop" runs once and declares the
 * thread's coordinates and its phase (2: a barrier here fails) */
#define GPS_FOR_EACH_THREAD						\
	for (unsigned int gpsu_z__ = 0, gpsu_t__ = 0;			\
	     gpsu_z__ < gpsu_k__->bDim.z; gpsu_z__++)			\
		for (unsigned int gpsu_y__ = 0;				\
		     gpsu_y__ < gpsu_k__->bDim.y; gpsu_y__++)		\
			for (unsigned int gpsu_x__ = 0;			\
			     gpsu_x__ < gpsu_k__->bDim.x;		\
			     gpsu_x__++, gpsu_t__++)			\
				for (int gpsu_phase__ = 2,		\
				     gpsu_1__ = ((void)gpsu_phase__, 1); \
				     gpsu_1__; gpsu_1__ = 0)		\
					for (gpsDim3 gpsu_tid__ = {	\
						gpsu_x__, gpsu_y__,	\
						gpsu_z__ },		\
					     *gpsu_2__ = &gpsu_tid__;	\
					     gpsu_2__; gpsu_2__ = 0)

/* the linear index of the thread a GPS_FOR_EACH_THREAD loop runs */
#define GPS_TID		(gpsu_t__ + 0)
/* one T per thread of the block, for values that live across a barrier */
#define GPS_PER_THREAD(T, v)						\
	T v[gpsu_k__->bDim.x * gpsu_k__->bDim.y * gpsu_k__->bDim.z]

/*
 * GPS_GRID_STRIDE_LOOP(i, n) { ... }: CUDA's grid-stride loop
 *
 *	for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
 *	     i += blockDim.x * gridDim.x)
 *
 * in the order a CPU runs fast. Every i in [0, n) runs exactly once, on
 * one thread of the grid (all of its threads, every dimension, take
 * part), but each thread gets a contiguous run of i, the block's threads
 * consecutive runs: the threads of a block run one after another on one
 * CPU, so the loop above would make each of them stride over the whole
 * array (gridDim.x * blockDim.x apart, often a multiple of 4 KiB, which
 * defeats the caches) before the next one starts. Use it where the body
 * does not depend on which thread runs which i (a reduction's partial
 * sums do not). i is an integer variable of any name whose type holds
 * n (the loop runs on it: the compiler vectorises it as a plain loop); n
 * is evaluated twice.
 */
/* member names no user identifier can be: the macro's first argument
 * (any name) is substituted wherever its parameter's name appears */
struct gpsu_span_ {
	unsigned long long gpsu_lo__, gpsu_hi__;
};

GPSU_INLINE struct gpsu_span_ gpsu_span_of_(gpsDim3 t, gpsDim3 b, gpsDim3 bd,
					    gpsDim3 gd, unsigned long long n)
{
	unsigned long long nt = (unsigned long long)bd.x * bd.y * bd.z;
	unsigned long long total = nt * gd.x * gd.y * gd.z;
	/* n = q * total + r: the first r threads take q + 1 (the division
	 * is the same for every thread: the compiler hoists it) */
	unsigned long long q = n / total, r = n % total;
	unsigned long long g = (b.x + (unsigned long long)gd.x *
				(b.y + (unsigned long long)gd.y * b.z)) * nt +
			       t.x + (unsigned long long)bd.x *
			       (t.y + (unsigned long long)bd.y * t.z);
	struct gpsu_span_ s;

	s.gpsu_lo__ = g * q + (g < r ? g : r);
	s.gpsu_hi__ = s.gpsu_lo__ + q + (g < r);
	return s;
}

GPSU_INLINE struct gpsu_span_ gpsu_grid_span_(const gpsThreadCtx *k,
					      gpsDim3 t, unsigned long long n)
{
	struct gpsu_span_ s = { 0, n };	/* not in a kernel: all of it */
	gpsDim3 bd;

	if (k)
		return gpsu_span_of_(t, k->bIdx, k->bDim, k->gDim, n);
	bd = (gpsBlockDim)();
	if (bd.x)
		s = gpsu_span_of_((gpsThreadIdx)(), (gpsBlockIdx)(), bd,
				  (gpsGridDim)(), n);
	return s;
}

#define GPS_GRID_STRIDE_LOOP(i, n)					\
	for (__typeof__(i) gpsu_e__ = ((i) = (__typeof__(i))		\
		gpsu_grid_span_(gpsu_k__, gpsu_tid__, (n)).gpsu_lo__,	\
		(__typeof__(i))						\
		gpsu_grid_span_(gpsu_k__, gpsu_tid__, (n)).gpsu_hi__);	\
	     (i) < gpsu_e__; (i)++)

#ifdef GPSU_CUDA_NAMES
#define threadIdx	(gpsThreadIdx())
#define blockIdx	(gpsBlockIdx())
#define blockDim	(gpsBlockDim())
#define gridDim		(gpsGridDim())
#define __syncthreads()	gpsSyncThreads()
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
/* gpsEventCreateWithFlags flags (CUDA's values) */
#define gpsEventDefault		0x0u
#define gpsEventBlockingSync	0x1u	/* accepted: waits always sleep */
#define gpsEventDisableTiming	0x2u	/* no timestamp: not for ElapsedTime */
#define gpsEventInterprocess	0x4u	/* gpsErrorNotSupported */
gpsError_t gpsEventCreateWithFlags(gpsEvent_t *event, unsigned int flags);
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
 * kernel does (the caller's device and the host views:
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

/* ------------------------------------------------------------------ */
/* Device-scope atomics                                                */
/* ------------------------------------------------------------------ */

/*
 * Device scope (CUDA's atomicAdd and its kin): the CPU's own atomic
 * instruction on the address, sequentially consistent, no library call.
 * They are atomic among the threads of every kernel that reach the same
 * memory: on conventional, host and managed memory that is every device;
 * on GPS memory each device's atomics act on its own replica, whose
 * stores are published at the next release (Documentation/
 * memory-model.rst): racing read-modify-writes from several devices on
 * one GPS page need system scope (gpsAtomic*System, gpsMemSystemScope).
 *
 * Each returns the old value. Typed forms: suffix I (int), U (unsigned
 * int), U64 (unsigned long long), F (float), D (double); in C11 the
 * names without suffix pick the form from the pointer's type. And, Or
 * and Xor exist for the integer types only; float and double Add, Min
 * and Max are compare-exchange loops on the bits.
 */
#define GPSU_SC_	__ATOMIC_SEQ_CST
#define GPSU_ATOMIC_CAS_LOOP_(sfx, T, UT, name, expr)			\
GPSU_INLINE T gpsAtomic##name##sfx(T *p, T v)				\
{									\
	union { T f; UT u; } o, n;					\
									\
	o.u = __atomic_load_n((UT *)p, __ATOMIC_RELAXED);		\
	do {								\
		n.f = (expr);						\
	} while (!__atomic_compare_exchange_n((UT *)p, &o.u, n.u, 0,	\
					      GPSU_SC_, __ATOMIC_RELAXED)); \
	return o.f;							\
}
#define GPSU_ATOMIC_COMMON_(sfx, T)					\
GPSU_INLINE T gpsAtomicExch##sfx(T *p, T v)				\
{									\
	T old;								\
									\
	__atomic_exchange(p, &v, &old, GPSU_SC_);			\
	return old;							\
}									\
GPSU_INLINE T gpsAtomicCAS##sfx(T *p, T expected, T desired)		\
{									\
	__atomic_compare_exchange(p, &expected, &desired, 0, GPSU_SC_,	\
				  GPSU_SC_);				\
	return expected;						\
}
#define GPSU_ATOMIC_INT_(sfx, T)					\
GPSU_INLINE T gpsAtomicAdd##sfx(T *p, T v)				\
{ return __atomic_fetch_add(p, v, GPSU_SC_); }				\
GPSU_INLINE T gpsAtomicSub##sfx(T *p, T v)				\
{ return __atomic_fetch_sub(p, v, GPSU_SC_); }				\
GPSU_INLINE T gpsAtomicAnd##sfx(T *p, T v)				\
{ return __atomic_fetch_and(p, v, GPSU_SC_); }				\
GPSU_INLINE T gpsAtomicOr##sfx(T *p, T v)				\
{ return __atomic_fetch_or(p, v, GPSU_SC_); }				\
GPSU_INLINE T gpsAtomicXor##sfx(T *p, T v)				\
{ return __atomic_fetch_xor(p, v, GPSU_SC_); }				\
GPSU_INLINE T gpsAtomicMin##sfx(T *p, T v)				\
{									\
	T o = __atomic_load_n(p, __ATOMIC_RELAXED);			\
									\
	while (v < o && !__atomic_compare_exchange_n(p, &o, v, 0,	\
					GPSU_SC_, __ATOMIC_RELAXED))	\
		;							\
	return o;							\
}									\
GPSU_INLINE T gpsAtomicMax##sfx(T *p, T v)				\
{									\
	T o = __atomic_load_n(p, __ATOMIC_RELAXED);			\
									\
	while (v > o && !__atomic_compare_exchange_n(p, &o, v, 0,	\
					GPSU_SC_, __ATOMIC_RELAXED))	\
		;							\
	return o;							\
}									\
GPSU_ATOMIC_COMMON_(sfx, T)
#define GPSU_ATOMIC_FP_(sfx, T, UT)					\
GPSU_ATOMIC_CAS_LOOP_(sfx, T, UT, Add, o.f + v)				\
GPSU_ATOMIC_CAS_LOOP_(sfx, T, UT, Sub, o.f - v)				\
GPSU_ATOMIC_CAS_LOOP_(sfx, T, UT, Min, v < o.f ? v : o.f)		\
GPSU_ATOMIC_CAS_LOOP_(sfx, T, UT, Max, v > o.f ? v : o.f)		\
GPSU_ATOMIC_COMMON_(sfx, T)

GPSU_ATOMIC_INT_(I, int)
GPSU_ATOMIC_INT_(U, unsigned int)
GPSU_ATOMIC_INT_(U64, unsigned long long)
GPSU_ATOMIC_FP_(F, float, uint32_t)
GPSU_ATOMIC_FP_(D, double, uint64_t)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define GPSU_PICK_(p, op)						\
	_Generic((p), int *: gpsAtomic##op##I,				\
		 unsigned int *: gpsAtomic##op##U,			\
		 unsigned long long *: gpsAtomic##op##U64,		\
		 float *: gpsAtomic##op##F,				\
		 double *: gpsAtomic##op##D)
#define GPSU_PICK_INT_(p, op)						\
	_Generic((p), int *: gpsAtomic##op##I,				\
		 unsigned int *: gpsAtomic##op##U,			\
		 unsigned long long *: gpsAtomic##op##U64)
#define gpsAtomicAdd(p, v)	GPSU_PICK_(p, Add)(p, v)
#define gpsAtomicSub(p, v)	GPSU_PICK_(p, Sub)(p, v)
#define gpsAtomicMin(p, v)	GPSU_PICK_(p, Min)(p, v)
#define gpsAtomicMax(p, v)	GPSU_PICK_(p, Max)(p, v)
#define gpsAtomicExch(p, v)	GPSU_PICK_(p, Exch)(p, v)
#define gpsAtomicCAS(p, e, d)	GPSU_PICK_(p, CAS)(p, e, d)
#define gpsAtomicAnd(p, v)	GPSU_PICK_INT_(p, And)(p, v)
#define gpsAtomicOr(p, v)	GPSU_PICK_INT_(p, Or)(p, v)
#define gpsAtomicXor(p, v)	GPSU_PICK_INT_(p, Xor)(p, v)
#ifdef GPSU_CUDA_NAMES
#define atomicAdd	gpsAtomicAdd
#define atomicSub	gpsAtomicSub
#define atomicMin	gpsAtomicMin
#define atomicMax	gpsAtomicMax
#define atomicExch	gpsAtomicExch
#define atomicCAS	gpsAtomicCAS
#define atomicAnd	gpsAtomicAnd
#define atomicOr	gpsAtomicOr
#define atomicXor	gpsAtomicXor
#endif
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPSU_H */
