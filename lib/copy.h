/* SPDX-License-Identifier: MIT */
/*
 * Copies and sets (copy.c): the checks an entry point makes before it
 * queues or waits, and the work a stream (or the entry point) then does.
 */
#ifndef GPSU_COPY_H
#define GPSU_COPY_H

#include "gpsu_internal.h"

gpsError_t gpsu_copy_check(void *dst, const void *src, size_t n,
			   gpsMemcpyKind kind);
/* A checked copy; GPS reads use @device's view. */
gpsError_t gpsu_copy(void *dst, const void *src, size_t n, int device);
gpsError_t gpsu_set_check(void *p, size_t n);
gpsError_t gpsu_set(void *p, int value, size_t n);

#endif /* GPSU_COPY_H */
