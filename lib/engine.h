/* SPDX-License-Identifier: MIT */
/*
 * The engine: the one seam where libgpsu asks for the GPS model's work.
 *
 * Today the engine is gps.ko: every ioctl on /dev/gps, every mapping of a
 * view and the io_uring fence are in engine.c, and no other file knows the
 * device's file descriptor or includes <sys/ioctl.h> or <liburing.h>. A
 * second engine (userfaultfd, no driver) implements these functions.
 *
 * Unless said otherwise a call returns 0 or a positive errno as the engine
 * answered it; callers map it with gpsu_errno().
 */
#ifndef GPSU_ENGINE_H
#define GPSU_ENGINE_H

#include "gpsu_internal.h"

/*
 * Opens the engine ($GPSU_DEVICE or /dev/gps), checks its ABI and fills
 * @ver. gpsErrorNoDevice when there is none, gpsErrorDriverVersion for
 * another ABI, gpsErrorInitializationError for anything else.
 */
gpsError_t gpsu_engine_open(struct gps_version_args *ver);
void gpsu_engine_close(void);
int gpsu_engine_device_info(int device, struct gps_device_args *info);

/*
 * Creates the allocation of @a (in: kind GPS or CONV, size, flags, home)
 * with the page size @page_size (0: the default) and maps its views (GPS:
 * every device's and the host's, UM: every device's, CONV: the home's);
 * fills handle, map_size, page_size, views, host and nviews. On failure
 * nothing is left.
 */
int gpsu_engine_alloc(struct gpsu_alloc *a, unsigned int page_size);
/* Unmaps the views of @a, then frees it. */
int gpsu_engine_free(struct gpsu_alloc *a);

/* Copies between [@off, @off + @n) of @a and plain memory; a read sees
 * @device's replica. */
int gpsu_engine_read(const struct gpsu_alloc *a, size_t off, void *buf,
		     size_t n, int device);
int gpsu_engine_write(const struct gpsu_alloc *a, size_t off,
		      const void *buf, size_t n);
int gpsu_engine_memset(const struct gpsu_alloc *a, size_t off, int value,
		       size_t n);
/* GPS_ADVISE_* on whole GPS pages [@off, @off + @len) for @device. */
int gpsu_engine_advise(const struct gpsu_alloc *a, size_t off, size_t len,
		       unsigned int advice, int device);
/* The subscriber masks of @nr GPS pages from @first into @subs. */
int gpsu_engine_query(const struct gpsu_alloc *a, size_t first,
		      uint32_t nr, unsigned long long *subs);
/* Automatic subscription: START or STOP (ENOTTY: not supported). */
int gpsu_engine_track(bool start);

/*
 * Releases: publishes the stores of @device (-1: of every device, and
 * so of the host views too).
 */
int gpsu_engine_fence(int device);
/*
 * Every device of @mask, in one call when the engine can; with @host
 * (@mask may be 0) also every store made through host views, in the same
 * call (which returns at once when there was none).
 */
int gpsu_engine_fence_mask(uint64_t mask, bool host);

/*
 * Asynchronous fences, one ring per thread that issues them (a stream's
 * worker). NULL, or a ring that broke, fences synchronously. The ring
 * counts what is in flight; reap it all before the next memory operation.
 */
struct gpsu_engine_ring;
struct gpsu_engine_ring *gpsu_engine_ring_new(void);
void gpsu_engine_ring_free(struct gpsu_engine_ring *r);
/* Fences every device of @mask, and with @host the host views; returns
 * the first error of the fences and reaps done meanwhile (those still in
 * flight report at the reap). */
int gpsu_engine_fence_async(struct gpsu_engine_ring *r, uint64_t mask,
			    bool host);
/* Waits for every fence in flight; the first error of any. */
int gpsu_engine_ring_reap(struct gpsu_engine_ring *r);
unsigned int gpsu_engine_ring_pending(const struct gpsu_engine_ring *r);

#endif /* GPSU_ENGINE_H */
