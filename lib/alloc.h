/* SPDX-License-Identifier: MIT */
/*
 * Allocations (alloc.c): the library's own conventional memory.
 */
#ifndef GPSU_ALLOC_H
#define GPSU_ALLOC_H

#include "gpsu_internal.h"

/*
 * Conventional memory for the library's own use (the barrier's state):
 * on @home's node, not recorded as the caller's last error, and freed by
 * gpsu_alloc_conv_free without waiting for any stream (the caller knows
 * that nothing uses it any more).
 */
gpsError_t gpsu_alloc_conv(void **ptr, size_t size, int home);
gpsError_t gpsu_alloc_conv_free(void *ptr);

#endif /* GPSU_ALLOC_H */
