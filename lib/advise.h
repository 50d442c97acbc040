/* SPDX-License-Identifier: MIT */
/*
 * Advice and prefetch (advise.c): what a stream's prefetch runs.
 */
#ifndef GPSU_ADVISE_H
#define GPSU_ADVISE_H

#include "gpsu_internal.h"

gpsError_t gpsu_prefetch_check(const void *p, size_t n, int device);
/*
 * GPS: subscribe @device. Host, managed: move the present pages; the
 * pages that leave another device's node pay that device's link.
 */
gpsError_t gpsu_prefetch(const void *p, size_t n, int device);

#endif /* GPSU_ADVISE_H */
