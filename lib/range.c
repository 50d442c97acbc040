// SPDX-License-Identifier: MIT
/*
 * The address index and pointer translation.
 *
 * Every allocation is entered in one sorted index of address ranges, one
 * range per mapped view, so that any pointer into any view is recognised.
 * The pointer handed out for a GPS allocation is its host view, which
 * loads and stores as the home device's view does, so its range names the
 * home device; host fences publish what is stored through it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "range.h"

struct gpsu_range {
	uintptr_t start, end;	/* [start, end) of one view */
	struct gpsu_alloc *a;
	int dev;		/* whose view, -1 when not a GPS view */
};

static struct {
	pthread_rwlock_t lock;		/* ranges, nranges, host_mask */
	struct gpsu_range *ranges;	/* sorted by start */
	size_t nranges, cap_ranges;
	uint64_t host_mask;		/* homes of live GPS allocations */
	uint64_t gen;			/* bumped when an allocation comes
					 * or goes (atomic) */
} gpsu_ranges = {
	.lock = PTHREAD_RWLOCK_INITIALIZER,
};

/* Index of the last range whose start <= p, or -1. Caller holds the lock. */
static long gpsu_range_find(uintptr_t p)
{
	long lo = 0, hi = (long)gpsu_ranges.nranges - 1, res = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (gpsu_ranges.ranges[mid].start <= p) {
			res = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return res;
}

static int gpsu_range_add(uintptr_t start, size_t len, struct gpsu_alloc *a,
			  int dev)
{
	struct gpsu_range *r;
	long i;

	if (gpsu_ranges.nranges == gpsu_ranges.cap_ranges) {
		size_t cap = gpsu_ranges.cap_ranges ?
			     2 * gpsu_ranges.cap_ranges : 64;

		r = realloc(gpsu_ranges.ranges, cap * sizeof(*r));
		if (!r)
			return -1;
		gpsu_ranges.ranges = r;
		gpsu_ranges.cap_ranges = cap;
	}
	i = gpsu_range_find(start) + 1;
	r = &gpsu_ranges.ranges[i];
	memmove(r + 1, r, (gpsu_ranges.nranges - i) * sizeof(*r));
	r->start = start;
	r->end = start + len;
	r->a = a;
	r->dev = dev;
	gpsu_ranges.nranges++;
	return 0;
}

static void gpsu_range_del_alloc(struct gpsu_alloc *a)
{
	size_t i, j = 0;

	for (i = 0; i < gpsu_ranges.nranges; i++)
		if (gpsu_ranges.ranges[i].a != a)
			gpsu_ranges.ranges[j++] = gpsu_ranges.ranges[i];
	gpsu_ranges.nranges = j;
}

static void gpsu_recompute_host_mask(void)
{
	uint64_t mask = 0;
	size_t i;

	for (i = 0; i < gpsu_ranges.nranges; i++)
		if (gpsu_ranges.ranges[i].a->kind == GPSU_KIND_GPS)
			mask |= 1ULL << gpsu_ranges.ranges[i].a->home;
	gpsu_ranges.host_mask = mask;
}

gpsError_t gpsu_range_insert(struct gpsu_alloc *a)
{
	int d;

	pthread_rwlock_wrlock(&gpsu_ranges.lock);
	if (gpsu_has_views(a)) {
		for (d = 0; d < a->nviews; d++)
			if (gpsu_range_add((uintptr_t)a->views[d], a->map_size,
					   a, d))
				goto err_nomem;
		if (a->host && gpsu_range_add((uintptr_t)a->host, a->map_size,
					      a, a->home))
			goto err_nomem;
		/* one copy of UM needs no publishing */
		if (a->kind == GPSU_KIND_GPS)
			gpsu_ranges.host_mask |= 1ULL << a->home;
	} else if (gpsu_range_add((uintptr_t)a->base, a->map_size, a, -1)) {
		goto err_nomem;
	}
	/* caches of "not an allocation" (gpsMemSystemScope) are stale now */
	__atomic_add_fetch(&gpsu_ranges.gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&gpsu_ranges.lock);
	return gpsSuccess;

err_nomem:
	gpsu_range_del_alloc(a);
	pthread_rwlock_unlock(&gpsu_ranges.lock);
	return gpsErrorMemoryAllocation;
}

void gpsu_range_remove(struct gpsu_alloc *a)
{
	pthread_rwlock_wrlock(&gpsu_ranges.lock);
	gpsu_range_del_alloc(a);
	gpsu_recompute_host_mask();
	__atomic_add_fetch(&gpsu_ranges.gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&gpsu_ranges.lock);
}

uint64_t gpsu_range_gen(void)
{
	return __atomic_load_n(&gpsu_ranges.gen, __ATOMIC_ACQUIRE);
}

struct gpsu_alloc *gpsu_range_lookup(const void *p, int *dev, size_t *off)
{
	struct gpsu_alloc *a = NULL;
	uintptr_t u = (uintptr_t)p;
	long i;

	pthread_rwlock_rdlock(&gpsu_ranges.lock);
	i = gpsu_range_find(u);
	if (i >= 0 && u < gpsu_ranges.ranges[i].end) {
		a = gpsu_ranges.ranges[i].a;
		if (dev)
			*dev = gpsu_ranges.ranges[i].dev;
		if (off)
			*off = u - gpsu_ranges.ranges[i].start;
	}
	pthread_rwlock_unlock(&gpsu_ranges.lock);
	return a;
}

gpsError_t gpsu_range_check(const void *p, size_t n, struct gpsu_alloc **ap)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	if ((uintptr_t)p + n < (uintptr_t)p)
		return gpsErrorInvalidValue;
	a = gpsu_range_lookup(p, &d, &off);
	if (a && (off > a->size || n > a->size - off))
		return gpsErrorInvalidValue;
	if (ap)
		*ap = a;
	return gpsSuccess;
}

struct gpsu_alloc *gpsu_range_span(uintptr_t u, uintptr_t *start,
				   uintptr_t *end)
{
	struct gpsu_alloc *a = NULL;
	long i;

	pthread_rwlock_rdlock(&gpsu_ranges.lock);
	i = gpsu_range_find(u);
	if (i >= 0 && u < gpsu_ranges.ranges[i].end) {
		*start = gpsu_ranges.ranges[i].start;
		*end = gpsu_ranges.ranges[i].end;
		a = gpsu_ranges.ranges[i].a;
	} else {
		*start = i >= 0 ? gpsu_ranges.ranges[i].end : 0;
		*end = (size_t)(i + 1) < gpsu_ranges.nranges ?
		       gpsu_ranges.ranges[i + 1].start : UINTPTR_MAX;
	}
	pthread_rwlock_unlock(&gpsu_ranges.lock);
	return a;
}

uint64_t gpsu_range_host_mask(void)
{
	uint64_t m;

	pthread_rwlock_rdlock(&gpsu_ranges.lock);
	m = gpsu_ranges.host_mask;
	pthread_rwlock_unlock(&gpsu_ranges.lock);
	return m;
}

void *gpsu_range_translate(const void *p, int device)
{
	struct gpsu_alloc *a;
	size_t off;
	int dev;

	if (device < 0 || device >= gpsu.ndev)
		return (void *)p;
	a = gpsu_range_lookup(p, &dev, &off);
	if (!gpsu_has_views(a))
		return (void *)p;
	return a->views[device] + off;
}

GPSU_API void *gpsDevicePtr(const void *p)
{
	struct gpsu_tls *t = &gpsu_tls;
	uintptr_t u = (uintptr_t)p;
	int device = gpsu_cur_device();
	uint64_t gen;
	struct gpsu_alloc *a;
	size_t off;
	int dev;

	if (!p || device >= gpsu.ndev)
		return (void *)p;
	gen = gpsu_range_gen();
	if (t->cache_a && t->cache_gen == gen && u >= t->cache_start &&
	    u < t->cache_end)
		return t->cache_a->views[device] + (u - t->cache_start);
	a = gpsu_range_lookup(p, &dev, &off);
	if (!gpsu_has_views(a))
		return (void *)p;
	t->cache_a = a;
	t->cache_gen = gen;
	t->cache_start = u - off;
	t->cache_end = u - off + a->map_size;
	return a->views[device] + off;
}
