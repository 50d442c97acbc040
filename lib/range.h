/* SPDX-License-Identifier: MIT */
/*
 * The address index (range.c): one sorted list of address ranges, one per
 * mapped view of every allocation, so that any pointer into any view is
 * recognised and translated to another device's view.
 */
#ifndef GPSU_RANGE_H
#define GPSU_RANGE_H

#include "gpsu_internal.h"

/* Enters every view of @a; gpsErrorMemoryAllocation if it cannot. */
gpsError_t gpsu_range_insert(struct gpsu_alloc *a);
/* Forgets every view of @a (nothing finds it any more). */
void gpsu_range_remove(struct gpsu_alloc *a);
/*
 * The allocation holding @p (any view), the view's device in *@dev (-1
 * for non-GPS memory) and the offset of @p in it; NULL if none.
 */
struct gpsu_alloc *gpsu_range_lookup(const void *p, int *dev, size_t *off);
/* [@p, @p + @n) stays inside the allocation holding @p, if any (*@ap). */
gpsError_t gpsu_range_check(const void *p, size_t n,
			    struct gpsu_alloc **ap);
/* The allocation whose view holds @u, or NULL with the gap around @u;
 * [*@start, *@end) is that view or gap. */
struct gpsu_alloc *gpsu_range_span(uintptr_t u, uintptr_t *start,
				   uintptr_t *end);
/* @p in @device's view when it points into GPS memory, else @p. */
void *gpsu_range_translate(const void *p, int device);
/* The home devices of live GPS allocations. */
uint64_t gpsu_range_host_mask(void);
/* Bumped whenever an allocation comes or goes (for per-thread caches). */
uint64_t gpsu_range_gen(void);

#endif /* GPSU_RANGE_H */
