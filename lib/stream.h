/* SPDX-License-Identifier: MIT */
/*
 * Streams (stream.c): what entry points queue, and what they wait for.
 */
#ifndef GPSU_STREAM_H
#define GPSU_STREAM_H

#include "gpsu_internal.h"
#include "pool.h"

/*
 * Resolves a handle (NULL: the current device's default stream) and takes
 * a reference on it, dropped by gpsu_stream_put().
 */
gpsError_t gpsu_stream_get(gpsStream_t h, struct gpsStream **out);
void gpsu_stream_put(struct gpsStream *s);
int gpsu_stream_device(struct gpsStream *s);

/* Operations queued on @s (a reference held); the work is pool.c's,
 * copy.c's and advise.c's. */
gpsError_t gpsu_stream_kernel(struct gpsStream *s, struct gpsu_launch *l);
gpsError_t gpsu_stream_copy(struct gpsStream *s, void *dst, const void *src,
			    size_t n);
gpsError_t gpsu_stream_set(struct gpsStream *s, void *p, int v, size_t n);
gpsError_t gpsu_stream_prefetch(struct gpsStream *s, const void *p,
				size_t n, int device);

/*
 * Waits for the streams of @device; with @fence, then fences the device
 * and the host views.
 */
gpsError_t gpsu_sync_device(int device, bool fence);
/* Waits for all work of all devices; errors stay for their synchronize. */
gpsError_t gpsu_sync_all(void);

#endif /* GPSU_STREAM_H */
