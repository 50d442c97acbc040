/* SPDX-License-Identifier: MIT */
/*
 * The engine: the one seam where libgpsu asks for the GPS model's work.
 *
 * An engine is a table of operations (struct gpsu_engine_ops) in the
 * library's own types; no file above this seam knows how an engine does
 * its work. Two engines exist:
 *
 *   kmod  gps.ko: ioctls on /dev/gps, mappings of its views, io_uring
 *         fences (engine_kmod.c, the only file that includes the uapi
 *         header <linux/gps.h>);
 *   user  the native engine: replicas in memfd memory, capture by
 *         asynchronous userfaultfd write-protect and PAGEMAP_SCAN, the
 *         pure core's diff, queue and byte masks (engine_user*.c).
 *
 * engine.c chooses one at set-up ($GPSU_ENGINE=kmod|user; by default the
 * driver when /dev/gps opens, else the native engine) and dispatches the
 * gpsu_engine_*() calls below to it.
 *
 * Unless said otherwise an operation returns 0 or a positive errno;
 * callers map it with gpsu_errno().
 */
#ifndef GPSU_ENGINE_H
#define GPSU_ENGINE_H

#include <errno.h>

#include "gpsu_internal.h"
#include "knob_table.h"

/* What an engine reports at set-up. */
struct gpsu_engine_info {
	int ndev;			/* devices, 1 to GPSU_MAX_DEVICES */
	unsigned int page_size;		/* default GPS page size */
	unsigned int block_size;	/* write-queue block size */
	unsigned int abi_version;	/* the driver's ABI; 0: none */
};

/* What an engine reports of one device. */
struct gpsu_engine_dev {
	int node;			/* NUMA node of its memory and CPUs */
	/*
	 * The device runs on share @cpu_share of @cpu_shares of the node's
	 * CPUs (several devices on one node); @cpu_shares 0 or 1: all.
	 */
	int cpu_share, cpu_shares;
	uint64_t mem_total;		/* bytes of memory of the node */
	uint64_t mem_free;		/* bytes free */
	uint64_t replica_pages;		/* pages of GPS replicas held */
};

/* Advice on whole GPS pages (gpsu_engine_advise). */
enum gpsu_advice {
	GPSU_ADVISE_SUBSCRIBE = 1,	/* a replica, filled with current data */
	GPSU_ADVISE_UNSUBSCRIBE,	/* drop it; EBUSY for the last one */
	GPSU_ADVISE_COLLAPSE,		/* system scope: one copy */
};

struct gpsu_engine_ring;

struct gpsu_engine_ops {
	const char *name;		/* "kmod", "user" */
	gpsEngine kind;
	/*
	 * Sets the engine up and fills @info. gpsErrorNoDevice when there
	 * is none, gpsErrorDriverVersion for another ABI,
	 * gpsErrorNotSupported when the kernel lacks a feature the engine
	 * needs (it says which on stderr), gpsErrorInitializationError for
	 * anything else. On failure nothing is left.
	 */
	gpsError_t (*open)(struct gpsu_engine_info *info);
	void (*close)(void);
	int (*device_info)(int device, struct gpsu_engine_dev *info);
	/*
	 * Creates the allocation of @a (in: kind GPS, CONV or UM, size,
	 * flags GPSU_ALLOC_*, home) with the page size @page_size (0: the
	 * default) and maps its views (GPS: every device's and the
	 * host's, UM: every device's, CONV: the home's); fills handle,
	 * map_size, page_size, views, host and nviews, and may keep its
	 * own state in @a->engine. On failure nothing is left.
	 */
	int (*alloc)(struct gpsu_alloc *a, unsigned int page_size);
	/* Unmaps the views of @a, then frees it. */
	int (*free)(struct gpsu_alloc *a);
	/* Copies between [@off, @off + @n) of @a and plain memory; a read
	 * sees @device's replica, a write reaches every replica. */
	int (*read)(const struct gpsu_alloc *a, size_t off, void *buf,
		    size_t n, int device);
	int (*write)(const struct gpsu_alloc *a, size_t off, const void *buf,
		     size_t n);
	/* Optional: a copy from what @device sees of @sa into @da, with
	 * no buffer between; ENOTSUP: the library bounces it through
	 * read and write, as for an engine without it. */
	int (*copy)(const struct gpsu_alloc *da, size_t doff,
		    const struct gpsu_alloc *sa, size_t soff, size_t n,
		    int device);
	int (*memset)(const struct gpsu_alloc *a, size_t off, int value,
		      size_t n);
	/* @advice on whole GPS pages [@off, @off + @len) for @device. */
	int (*advise)(const struct gpsu_alloc *a, size_t off, size_t len,
		      enum gpsu_advice advice, int device);
	/* The subscriber masks of @nr GPS pages from @first into @subs. */
	int (*query)(const struct gpsu_alloc *a, size_t first, uint32_t nr,
		     unsigned long long *subs);
	/* Automatic subscription: START or STOP (ENOTTY: not supported). */
	int (*track)(bool start);
	/* Publishes the stores of @device (-1: of every device, and so of
	 * the host views too). */
	int (*fence)(int device);
	/* Every device of @mask, in one call when the engine can; with
	 * @host (@mask may be 0) also every store made through host views
	 * (which returns at once when there was none). */
	int (*fence_mask)(uint64_t mask, bool host);
	/*
	 * Asynchronous fences (optional: an engine without them leaves
	 * ring_new NULL and every fence is synchronous). One ring per
	 * thread that issues them (a stream's worker). A NULL ring, or one
	 * that broke, fences synchronously. The ring counts what is in
	 * flight; reap it all before the next memory operation.
	 */
	struct gpsu_engine_ring *(*ring_new)(void);
	void (*ring_free)(struct gpsu_engine_ring *r);
	/* Fences every device of @mask, and with @host the host views;
	 * returns the first error of the fences and reaps done meanwhile
	 * (those still in flight report at the reap). */
	int (*fence_async)(struct gpsu_engine_ring *r, uint64_t mask,
			   bool host);
	/* Waits for every fence in flight; the first error of any. */
	int (*ring_reap)(struct gpsu_engine_ring *r);
	unsigned int (*ring_pending)(const struct gpsu_engine_ring *r);
	/*
	 * Knob @i of knob_table.h (a number; a word's number): ENOTSUP when
	 * the engine has no such knob or cannot honour @v, EINVAL out of
	 * its range or rules, EACCES/EPERM without the right to change it.
	 */
	int (*knob_get)(int i, uint64_t *v);
	int (*knob_set)(int i, uint64_t v);
	/* Counter @i of knob_table.h of @device: ENOTSUP when the engine
	 * does not keep it, EACCES when it may not be read. */
	int (*counter)(int device, int i, uint64_t *v);
};

extern const struct gpsu_engine_ops gpsu_engine_kmod;	/* engine_kmod.c */
extern const struct gpsu_engine_ops gpsu_engine_user;	/* engine_user.c */

/* The engine in use, set by gpsu_engine_open (NULL before, or none). */
extern const struct gpsu_engine_ops *gpsu_engine;

/*
 * Chooses and opens the engine: $GPSU_ENGINE=kmod or user takes that
 * one alone; otherwise the driver ($GPSU_DEVICE or /dev/gps), and, when
 * there is no driver and $GPSU_DEVICE is not set, the native engine.
 */
gpsError_t gpsu_engine_open(struct gpsu_engine_info *info);
void gpsu_engine_close(void);

static inline int gpsu_engine_knob_get(int i, uint64_t *v)
{
	return gpsu_engine->knob_get(i, v);
}

static inline int gpsu_engine_knob_set(int i, uint64_t v)
{
	return gpsu_engine->knob_set(i, v);
}

static inline int gpsu_engine_counter(int device, int i, uint64_t *v)
{
	return gpsu_engine->counter(device, i, v);
}

static inline int gpsu_engine_device_info(int device,
					  struct gpsu_engine_dev *info)
{
	return gpsu_engine->device_info(device, info);
}

static inline int gpsu_engine_alloc(struct gpsu_alloc *a,
				    unsigned int page_size)
{
	return gpsu_engine->alloc(a, page_size);
}

static inline int gpsu_engine_free(struct gpsu_alloc *a)
{
	return gpsu_engine->free(a);
}

static inline int gpsu_engine_read(const struct gpsu_alloc *a, size_t off,
				   void *buf, size_t n, int device)
{
	return gpsu_engine->read(a, off, buf, n, device);
}

static inline int gpsu_engine_write(const struct gpsu_alloc *a, size_t off,
				    const void *buf, size_t n)
{
	return gpsu_engine->write(a, off, buf, n);
}

static inline int gpsu_engine_copy(const struct gpsu_alloc *da, size_t doff,
				   const struct gpsu_alloc *sa, size_t soff,
				   size_t n, int device)
{
	return gpsu_engine->copy ?
	       gpsu_engine->copy(da, doff, sa, soff, n, device) : ENOTSUP;
}

static inline int gpsu_engine_memset(const struct gpsu_alloc *a, size_t off,
				     int value, size_t n)
{
	return gpsu_engine->memset(a, off, value, n);
}

static inline int gpsu_engine_advise(const struct gpsu_alloc *a, size_t off,
				     size_t len, enum gpsu_advice advice,
				     int device)
{
	return gpsu_engine->advise(a, off, len, advice, device);
}

static inline int gpsu_engine_query(const struct gpsu_alloc *a, size_t first,
				    uint32_t nr, unsigned long long *subs)
{
	return gpsu_engine->query(a, first, nr, subs);
}

static inline int gpsu_engine_track(bool start)
{
	return gpsu_engine->track(start);
}

static inline int gpsu_engine_fence(int device)
{
	return gpsu_engine->fence(device);
}

static inline int gpsu_engine_fence_mask(uint64_t mask, bool host)
{
	return gpsu_engine->fence_mask(mask, host);
}

static inline struct gpsu_engine_ring *gpsu_engine_ring_new(void)
{
	return gpsu_engine->ring_new ? gpsu_engine->ring_new() : NULL;
}

static inline void gpsu_engine_ring_free(struct gpsu_engine_ring *r)
{
	if (r)
		gpsu_engine->ring_free(r);
}

static inline int gpsu_engine_fence_async(struct gpsu_engine_ring *r,
					  uint64_t mask, bool host)
{
	if (!r)
		return gpsu_engine->fence_mask(mask, host);
	return gpsu_engine->fence_async(r, mask, host);
}

static inline int gpsu_engine_ring_reap(struct gpsu_engine_ring *r)
{
	return r ? gpsu_engine->ring_reap(r) : 0;
}

static inline unsigned int
gpsu_engine_ring_pending(const struct gpsu_engine_ring *r)
{
	return r ? gpsu_engine->ring_pending(r) : 0;
}

#endif /* GPSU_ENGINE_H */
