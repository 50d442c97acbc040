// SPDX-License-Identifier: MIT
/*
 * Memory: GPS, conventional, host and managed allocations, copies, sets,
 * advice, prefetch, pointer translation, and the (future) tracking hook.
 *
 * Every allocation is entered in one sorted index of address ranges, one
 * range per mapped view, so that any pointer into any view is recognised.
 * The pointer handed out for a GPS allocation is its home device's view;
 * host code using it behaves as the home device would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"

#define GPSU_BOUNCE_CHUNK (1UL << 20)	/* device-to-device bounce buffer */

static size_t gpsu_sys_page(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* ---- the range index ---------------------------------------------- */

/* Index of the last range whose start <= p, or -1. Caller holds the lock. */
static long gpsu_range_find(uintptr_t p)
{
	long lo = 0, hi = (long)gpsu.nranges - 1, res = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (gpsu.ranges[mid].start <= p) {
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
	long i;

	if (gpsu.nranges == gpsu.cap_ranges) {
		size_t cap = gpsu.cap_ranges ? 2 * gpsu.cap_ranges : 64;
		struct gpsu_range *r;

		r = realloc(gpsu.ranges, cap * sizeof(*r));
		if (!r)
			return -1;
		gpsu.ranges = r;
		gpsu.cap_ranges = cap;
	}
	i = gpsu_range_find(start) + 1;
	memmove(&gpsu.ranges[i + 1], &gpsu.ranges[i],
		(gpsu.nranges - i) * sizeof(gpsu.ranges[0]));
	gpsu.ranges[i].start = start;
	gpsu.ranges[i].end = start + len;
	gpsu.ranges[i].a = a;
	gpsu.ranges[i].dev = dev;
	gpsu.nranges++;
	return 0;
}

static void gpsu_range_del_alloc(struct gpsu_alloc *a)
{
	size_t i, j = 0;

	for (i = 0; i < gpsu.nranges; i++)
		if (gpsu.ranges[i].a != a)
			gpsu.ranges[j++] = gpsu.ranges[i];
	gpsu.nranges = j;
}

static void gpsu_recompute_host_mask(void)
{
	uint64_t mask = 0;
	size_t i;

	for (i = 0; i < gpsu.nranges; i++)
		if (gpsu.ranges[i].a->kind == GPSU_KIND_GPS)
			mask |= 1ULL << gpsu.ranges[i].a->home;
	gpsu.host_mask = mask;
}

static gpsError_t gpsu_register(struct gpsu_alloc *a)
{
	int d;

	pthread_rwlock_wrlock(&gpsu.alloc_lock);
	if (a->kind == GPSU_KIND_GPS) {
		for (d = 0; d < a->nviews; d++)
			if (gpsu_range_add((uintptr_t)a->views[d], a->map_size,
					   a, d))
				goto err_nomem;
		gpsu.host_mask |= 1ULL << a->home;
	} else if (gpsu_range_add((uintptr_t)a->base, a->map_size, a, -1)) {
		goto err_nomem;
	}
	/* caches of "not an allocation" (gpsMemSystemScope) are stale now */
	__atomic_add_fetch(&gpsu.alloc_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&gpsu.alloc_lock);
	return gpsSuccess;

err_nomem:
	gpsu_range_del_alloc(a);
	pthread_rwlock_unlock(&gpsu.alloc_lock);
	return gpsErrorMemoryAllocation;
}

/*
 * The allocation holding @p (any view), the view's device in *@dev (-1
 * for non-GPS memory) and the offset of @p in it; NULL if none.
 */
struct gpsu_alloc *gpsu_lookup(const void *p, int *dev, size_t *off)
{
	struct gpsu_alloc *a = NULL;
	uintptr_t u = (uintptr_t)p;
	long i;

	pthread_rwlock_rdlock(&gpsu.alloc_lock);
	i = gpsu_range_find(u);
	if (i >= 0 && u < gpsu.ranges[i].end) {
		a = gpsu.ranges[i].a;
		if (dev)
			*dev = gpsu.ranges[i].dev;
		if (off)
			*off = u - gpsu.ranges[i].start;
	}
	pthread_rwlock_unlock(&gpsu.alloc_lock);
	return a;
}

uint64_t gpsu_host_mask(void)
{
	uint64_t m;

	pthread_rwlock_rdlock(&gpsu.alloc_lock);
	m = gpsu.host_mask;
	pthread_rwlock_unlock(&gpsu.alloc_lock);
	return m;
}

void *gpsu_translate(const void *p, int device)
{
	struct gpsu_alloc *a;
	size_t off;
	int dev;

	if (device < 0 || device >= gpsu.ndev)
		return (void *)p;
	a = gpsu_lookup(p, &dev, &off);
	if (!a || a->kind != GPSU_KIND_GPS)
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
	gen = __atomic_load_n(&gpsu.alloc_gen, __ATOMIC_ACQUIRE);
	if (t->cache_a && t->cache_gen == gen && u >= t->cache_start &&
	    u < t->cache_end)
		return t->cache_a->views[device] + (u - t->cache_start);
	a = gpsu_lookup(p, &dev, &off);
	if (!a || a->kind != GPSU_KIND_GPS)
		return (void *)p;
	t->cache_a = a;
	t->cache_gen = gen;
	t->cache_start = u - off;
	t->cache_end = u - off + a->map_size;
	return a->views[device] + off;
}

/* ---- allocation ---------------------------------------------------- */

static gpsError_t gpsu_driver_alloc(void **ptr, size_t size,
				    enum gpsu_kind kind, unsigned int flags,
				    unsigned int psize, int home)
{
	struct gpsu_alloc *a;
	gpsError_t err;
	int ret;

	if (home < 0 || home >= gpsu.ndev)
		return gpsErrorInvalidDevice;
	a = calloc(1, sizeof(*a));
	if (!a)
		return gpsErrorMemoryAllocation;
	a->kind = kind;
	a->size = size;
	a->home = home;
	a->flags = flags;
	ret = gpsu_engine_alloc(a, psize);
	if (ret) {
		err = gpsu_errno(ret);
		if (err == gpsErrorOperatingSystem ||
		    err == gpsErrorNotSupported)
			err = gpsErrorMemoryAllocation;
		free(a);
		return err;
	}
	a->base = a->views[home];
	err = gpsu_register(a);
	if (err) {
		gpsu_engine_free(a);
		free(a);
		return err;
	}
	*ptr = a->base;
	return gpsSuccess;
}

#define GPSU_PAGE_FLAGS (gpsMemGPSPage4K | gpsMemGPSPage64K | gpsMemGPSPage2M)

GPSU_API gpsError_t gpsMallocGPS(void **ptr, size_t size, unsigned int flags)
{
	unsigned int psize = 0, pflags = flags & GPSU_PAGE_FLAGS;
	gpsError_t err;

	if (!ptr || !size || size > (SIZE_MAX >> 2))
		return gpsu_ret(gpsErrorInvalidValue);
	if (flags & ~(gpsMemGPSManual | GPSU_PAGE_FLAGS))
		return gpsu_ret(gpsErrorInvalidValue);
	if (pflags & (pflags - 1))	/* more than one page size */
		return gpsu_ret(gpsErrorInvalidValue);
	if (pflags == gpsMemGPSPage4K)
		psize = GPS_PAGE_4K;
	else if (pflags == gpsMemGPSPage64K)
		psize = GPS_PAGE_64K;
	else if (pflags == gpsMemGPSPage2M)
		psize = GPS_PAGE_2M;
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	return gpsu_ret(gpsu_driver_alloc(ptr, size, GPSU_KIND_GPS,
			(flags & gpsMemGPSManual) ? GPS_ALLOC_MANUAL : 0,
			psize, gpsu_tls.device));
}

GPSU_API gpsError_t gpsMalloc(void **ptr, size_t size)
{
	gpsError_t err;

	if (!ptr || !size || size > (SIZE_MAX >> 2))
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	return gpsu_ret(gpsu_driver_alloc(ptr, size, GPSU_KIND_CONV, 0, 0,
					  gpsu_tls.device));
}

static gpsError_t gpsu_anon_alloc(void **ptr, size_t size,
				  enum gpsu_kind kind)
{
	size_t ps = gpsu_sys_page(), len;
	struct gpsu_alloc *a;
	gpsError_t err;
	void *p;

	if (!ptr || !size || size > (SIZE_MAX >> 2))
		return gpsErrorInvalidValue;
	err = gpsu_init();
	if (err)
		return err;
	len = (size + ps - 1) & ~(ps - 1);
	a = calloc(1, sizeof(*a));
	if (!a)
		return gpsErrorMemoryAllocation;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		free(a);
		return gpsErrorMemoryAllocation;
	}
	if (kind == GPSU_KIND_HOST) {
		unsigned long mask[GPS_MAX_DEVICES / 64 + 1] = { 0 };
		int node = gpsu.dev[gpsu_tls.device].node;

		if (node >= 0 && node < GPS_MAX_DEVICES) {
			mask[node / 64] |= 1UL << (node % 64);
			/* placement is best effort: ignore failures */
			(void)mbind(p, len, MPOL_PREFERRED, mask,
				    GPS_MAX_DEVICES + 1, 0);
		}
		(void)mlock(p, len);	/* page-locked when permitted */
	}
	a->kind = kind;
	a->size = size;
	a->map_size = len;
	a->page_size = ps;
	a->home = gpsu_tls.device;
	a->base = p;
	err = gpsu_register(a);
	if (err) {
		munmap(p, len);
		free(a);
		return err;
	}
	*ptr = p;
	return gpsSuccess;
}

GPSU_API gpsError_t gpsMallocHost(void **ptr, size_t size)
{
	return gpsu_ret(gpsu_anon_alloc(ptr, size, GPSU_KIND_HOST));
}

GPSU_API gpsError_t gpsMallocManaged(void **ptr, size_t size)
{
	return gpsu_ret(gpsu_anon_alloc(ptr, size, GPSU_KIND_MANAGED));
}

/* Forgets @a and gives its memory back (nothing may use it any more). */
static gpsError_t gpsu_release(struct gpsu_alloc *a)
{
	gpsError_t err = gpsSuccess;

	pthread_rwlock_wrlock(&gpsu.alloc_lock);
	gpsu_range_del_alloc(a);
	gpsu_recompute_host_mask();
	__atomic_add_fetch(&gpsu.alloc_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&gpsu.alloc_lock);

	if (a->kind == GPSU_KIND_GPS || a->kind == GPSU_KIND_CONV) {
		if (gpsu_engine_free(a))
			err = gpsErrorOperatingSystem;
	} else {
		munmap(a->base, a->map_size);
	}
	free(a->sys_pages);
	free(a);
	return err;
}

static gpsError_t gpsu_free(void *ptr, bool host_only)
{
	struct gpsu_alloc *a;
	gpsError_t err, e;
	size_t off;
	int d;

	if (!ptr)
		return gpsSuccess;
	err = gpsu_init();
	if (err)
		return err;
	a = gpsu_lookup(ptr, &d, &off);
	if (!a || off)
		return gpsErrorInvalidDevicePointer;
	if (host_only && a->kind != GPSU_KIND_HOST)
		return gpsErrorInvalidValue;
	/* as cudaFree: no kernel may still use it */
	err = gpsu_sync_all();
	e = gpsu_release(a);
	return err ? err : e;
}

/*
 * Conventional memory for the library's own use (the barrier's state):
 * on @home's node, not recorded as the caller's last error, and freed by
 * gpsu_conv_free without waiting for any stream (the caller knows that
 * nothing uses it any more).
 */
gpsError_t gpsu_conv_alloc(void **ptr, size_t size, int home)
{
	return gpsu_driver_alloc(ptr, size, GPSU_KIND_CONV, 0, 0, home);
}

gpsError_t gpsu_conv_free(void *ptr)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	a = gpsu_lookup(ptr, &d, &off);
	if (!a || off || a->kind != GPSU_KIND_CONV)
		return gpsErrorInvalidDevicePointer;
	return gpsu_release(a);
}

GPSU_API gpsError_t gpsFree(void *ptr)
{
	GPSU_NOT_IN_KERNEL();
	return gpsu_ret(gpsu_free(ptr, false));
}

GPSU_API gpsError_t gpsFreeHost(void *ptr)
{
	GPSU_NOT_IN_KERNEL();
	return gpsu_ret(gpsu_free(ptr, true));
}

/* ---- copies and sets ---------------------------------------------- */

static bool gpsu_is_driver(const struct gpsu_alloc *a)
{
	return a && (a->kind == GPSU_KIND_GPS || a->kind == GPSU_KIND_CONV);
}

/* [p, p + n) must stay inside the allocation holding p, if any. */
static gpsError_t gpsu_check_range(const void *p, size_t n,
				   struct gpsu_alloc **ap)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	if ((uintptr_t)p + n < (uintptr_t)p)
		return gpsErrorInvalidValue;
	a = gpsu_lookup(p, &d, &off);
	if (a && (off > a->size || n > a->size - off))
		return gpsErrorInvalidValue;
	if (ap)
		*ap = a;
	return gpsSuccess;
}

gpsError_t gpsu_check_copy(void *dst, const void *src, size_t n,
			   gpsMemcpyKind kind)
{
	struct gpsu_alloc *da, *sa;
	bool ddev, sdev, dhost, shost;
	gpsError_t err;

	if (!dst || !src)
		return gpsErrorInvalidValue;
	if ((unsigned int)kind > gpsMemcpyDefault)
		return gpsErrorInvalidMemcpyDirection;
	err = gpsu_check_range(dst, n, &da);
	if (!err)
		err = gpsu_check_range(src, n, &sa);
	if (err)
		return err;
	/* managed memory is both, as on CUDA */
	ddev = gpsu_is_driver(da) || (da && da->kind == GPSU_KIND_MANAGED);
	sdev = gpsu_is_driver(sa) || (sa && sa->kind == GPSU_KIND_MANAGED);
	dhost = !gpsu_is_driver(da);
	shost = !gpsu_is_driver(sa);
	switch (kind) {
	case gpsMemcpyHostToHost:
		return dhost && shost ? gpsSuccess :
		       gpsErrorInvalidMemcpyDirection;
	case gpsMemcpyHostToDevice:
		return ddev && shost ? gpsSuccess :
		       gpsErrorInvalidMemcpyDirection;
	case gpsMemcpyDeviceToHost:
		return dhost && sdev ? gpsSuccess :
		       gpsErrorInvalidMemcpyDirection;
	case gpsMemcpyDeviceToDevice:
		return ddev && sdev ? gpsSuccess :
		       gpsErrorInvalidMemcpyDirection;
	default:
		return gpsSuccess;
	}
}

/*
 * The device whose memory [@a, view @view] is, for the link model:
 * conventional memory its home's, GPS memory the view's device's (the
 * pointer gpsMallocGPS returns names the home device); -1 for host and
 * managed memory.
 */
static int gpsu_mem_device(const struct gpsu_alloc *a, int view)
{
	if (a && a->kind == GPSU_KIND_CONV)
		return a->home;
	if (a && a->kind == GPSU_KIND_GPS)
		return view;
	return -1;
}

/*
 * Performs a checked copy; GPS reads use @device's view. A copy between
 * the memory of two devices pays the link model (link.c): charged to the
 * source device, slept for after the copy, no lock held.
 */
gpsError_t gpsu_do_memcpy(void *dst, const void *src, size_t n, int device)
{
	struct gpsu_alloc *da, *sa;
	struct gpsu_link link;
	size_t doff = 0, soff = 0;
	uint64_t until = 0;
	int dd = -1, sd = -1, ret = 0, from, to;

	if (!n)
		return gpsSuccess;
	da = gpsu_lookup(dst, &dd, &doff);
	sa = gpsu_lookup(src, &sd, &soff);
	from = gpsu_mem_device(sa, sd);
	to = gpsu_mem_device(da, dd);
	if (from >= 0 && to >= 0 && from != to) {
		gpsu_link_read(&link);
		until = gpsu_link_charge(&link, from, n, 0);
	}
	if (!gpsu_is_driver(da))
		da = NULL;
	if (!gpsu_is_driver(sa))
		sa = NULL;
	if (sa && sa->kind == GPSU_KIND_CONV)
		device = sa->home;
	if (da && sa) {
		/* bounce: the driver copies from plain user memory only;
		 * a small buffer used again stays in the cache and faults
		 * in once */
		size_t chunk = n < GPSU_BOUNCE_CHUNK ? n : GPSU_BOUNCE_CHUNK;
		char *bounce = malloc(chunk);
		size_t done;

		if (!bounce)
			return gpsErrorMemoryAllocation;
		for (done = 0; done < n && !ret; done += chunk) {
			size_t len = n - done < chunk ? n - done : chunk;

			ret = gpsu_engine_read(sa, soff + done, bounce, len,
					       device);
			if (!ret)
				ret = gpsu_engine_write(da, doff + done,
							bounce, len);
		}
		free(bounce);
	} else if (da) {
		ret = gpsu_engine_write(da, doff, src, n);
	} else if (sa) {
		ret = gpsu_engine_read(sa, soff, dst, n, device);
	} else {
		memmove(dst, src, n);
	}
	if (!ret)
		gpsu_link_wait(until);
	return gpsu_errno(ret);
}

gpsError_t gpsu_check_set(void *p, size_t n)
{
	struct gpsu_alloc *a;
	gpsError_t err;

	if (!p)
		return gpsErrorInvalidValue;
	err = gpsu_check_range(p, n, &a);
	if (err)
		return err;
	return a ? gpsSuccess : gpsErrorInvalidDevicePointer;
}

gpsError_t gpsu_do_memset(void *p, int value, size_t n)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	if (!n)
		return gpsSuccess;
	a = gpsu_lookup(p, &d, &off);
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (!gpsu_is_driver(a)) {
		memset(p, value, n);
		return gpsSuccess;
	}
	return gpsu_errno(gpsu_engine_memset(a, off, value, n));
}

GPSU_API gpsError_t gpsMemcpy(void *dst, const void *src, size_t count,
			      gpsMemcpyKind kind)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	err = gpsu_check_copy(dst, src, count, kind);
	if (err)
		return gpsu_ret(err);
	/* as CUDA's legacy default stream: after all of the device's work */
	err = gpsu_sync_device(gpsu_cur_device(), false);
	if (!err)
		err = gpsu_do_memcpy(dst, src, count, gpsu_cur_device());
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsMemset(void *ptr, int value, size_t count)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	err = gpsu_check_set(ptr, count);
	if (err)
		return gpsu_ret(err);
	err = gpsu_sync_device(gpsu_cur_device(), false);
	if (!err)
		err = gpsu_do_memset(ptr, value, count);
	return gpsu_ret(err);
}

/* ---- advice, prefetch, subscribers -------------------------------- */

/* The system-scope bitmap of @a, allocated at first use (NULL: no memory). */
static uint64_t *gpsu_sys_bits(struct gpsu_alloc *a, bool alloc)
{
	uint64_t *bits = __atomic_load_n(&a->sys_pages, __ATOMIC_ACQUIRE);
	uint64_t *expected = NULL;
	size_t words = (a->map_size / a->page_size + 63) / 64;

	if (bits || !alloc)
		return bits;
	bits = calloc(words, sizeof(*bits));
	if (!bits)
		return NULL;
	if (!__atomic_compare_exchange_n(&a->sys_pages, &expected, bits, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(bits);	/* another thread installed one first */
		bits = expected;
	}
	return bits;
}

/* Sets or clears the system-scope bits of GPS pages [first, last). */
static void gpsu_sys_mark(struct gpsu_alloc *a, size_t first, size_t last,
			  bool set)
{
	uint64_t *bits = gpsu_sys_bits(a, set);
	size_t g;

	if (!bits)
		return;		/* nothing marked yet: nothing to clear */
	for (g = first; g < last; g++) {
		if (set)
			__atomic_fetch_or(&bits[g / 64], 1ULL << (g % 64),
					  __ATOMIC_RELEASE);
		else
			__atomic_fetch_and(&bits[g / 64], ~(1ULL << (g % 64)),
					   __ATOMIC_RELEASE);
	}
}

static gpsError_t gpsu_gps_advise(struct gpsu_alloc *a, size_t off, size_t n,
				  unsigned int advice, int device)
{
	size_t ps = a->page_size, start, end;
	int ret;

	/* whole GPS pages overlapping the range, as cudaMemAdvise does */
	start = off & ~(ps - 1);
	end = (off + n + ps - 1) & ~(ps - 1);
	if (end > a->map_size)
		end = a->map_size;
	ret = gpsu_engine_advise(a, start, end - start, advice, device);
	/* a subscribe may replicate collapsed pages again */
	if (advice == GPS_ADVISE_SUBSCRIBE)
		gpsu_sys_mark(a, start / ps, end / ps, false);
	else if (advice == GPS_ADVISE_COLLAPSE && !ret)
		gpsu_sys_mark(a, start / ps, end / ps, true);
	return gpsu_errno(ret);
}

static gpsError_t gpsu_host_policy(struct gpsu_alloc *a, size_t off, size_t n,
				   int mode, int device)
{
	unsigned long mask[GPS_MAX_DEVICES / 64 + 1] = { 0 };
	size_t ps = gpsu_sys_page();
	uintptr_t start = ((uintptr_t)a->base + off) & ~(ps - 1);
	uintptr_t end = ((uintptr_t)a->base + off + n + ps - 1) & ~(ps - 1);
	int node;

	if (mode != MPOL_DEFAULT) {
		node = gpsu.dev[device].node;
		if (node < 0 || node >= GPS_MAX_DEVICES)
			return gpsErrorNotSupported;
		mask[node / 64] |= 1UL << (node % 64);
	}
	if (mbind((void *)start, end - start, mode,
		  mode == MPOL_DEFAULT ? NULL : mask,
		  mode == MPOL_DEFAULT ? 0 : GPS_MAX_DEVICES + 1,
		  mode == MPOL_DEFAULT ? 0 : MPOL_MF_MOVE))
		return gpsu_errno(errno);
	return gpsSuccess;
}

GPSU_API gpsError_t gpsMemAdvise(const void *ptr, size_t count,
				 gpsMemoryAdvise advice, int device)
{
	struct gpsu_alloc *a;
	gpsError_t err;
	size_t off;
	int d, v;

	if (!ptr || !count)
		return gpsu_ret(gpsErrorInvalidValue);
	if (advice < gpsMemAdviseGPSSubscribe ||
	    advice > gpsMemAdviseGPSCollapse)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	if (device < 0 || device >= gpsu.ndev)
		return gpsu_ret(gpsErrorInvalidDevice);
	err = gpsu_check_range(ptr, count, &a);
	if (err)
		return gpsu_ret(err);
	if (!a)
		return gpsu_ret(gpsErrorInvalidDevicePointer);
	gpsu_lookup(ptr, &v, &off);

	/* every device can load and store every byte: always true */
	if (advice == gpsMemAdviseSetAccessedBy ||
	    advice == gpsMemAdviseUnsetAccessedBy)
		return gpsSuccess;

	switch (a->kind) {
	case GPSU_KIND_GPS:
		switch (advice) {
		case gpsMemAdviseGPSSubscribe:
		case gpsMemAdviseSetPreferredLocation:
			err = gpsu_gps_advise(a, off, count,
					      GPS_ADVISE_SUBSCRIBE, device);
			break;
		case gpsMemAdviseGPSUnsubscribe:
			err = gpsu_gps_advise(a, off, count,
					      GPS_ADVISE_UNSUBSCRIBE, device);
			break;
		case gpsMemAdviseSetReadMostly:
			for (d = 0; d < gpsu.ndev && !err; d++)
				err = gpsu_gps_advise(a, off, count,
						GPS_ADVISE_SUBSCRIBE, d);
			break;
		case gpsMemAdviseGPSCollapse:
			err = gpsu_gps_advise(a, off, count,
					      GPS_ADVISE_COLLAPSE, device);
			break;
		case gpsMemAdviseUnsetReadMostly:
			/* collapse to the advised device's replica */
			err = gpsu_gps_advise(a, off, count,
					      GPS_ADVISE_SUBSCRIBE, device);
			for (d = 0; d < gpsu.ndev && !err; d++)
				if (d != device)
					err = gpsu_gps_advise(a, off, count,
						GPS_ADVISE_UNSUBSCRIBE, d);
			break;
		default:
			/* the subscription a preferred location made stays */
			err = gpsErrorNotSupported;
			break;
		}
		break;
	case GPSU_KIND_CONV:
		/*
		 * A single copy that the driver keeps on its home node: it
		 * takes no subscription and no placement, and is collapsed
		 * already (one copy, no pending stores), so a collapse is a
		 * no-op that succeeds, as it does in the driver.
		 */
		if (advice == gpsMemAdviseGPSCollapse)
			err = gpsSuccess;
		else if (advice == gpsMemAdviseGPSSubscribe ||
			 advice == gpsMemAdviseGPSUnsubscribe)
			err = gpsErrorInvalidValue;
		else
			err = gpsErrorNotSupported;
		break;
	default:	/* host and managed: NUMA memory policy */
		switch (advice) {
		case gpsMemAdviseSetPreferredLocation:
			err = gpsu_host_policy(a, off, count, MPOL_PREFERRED,
					       device);
			break;
		case gpsMemAdviseUnsetPreferredLocation:
			err = gpsu_host_policy(a, off, count, MPOL_DEFAULT,
					       device);
			break;
		case gpsMemAdviseGPSSubscribe:
		case gpsMemAdviseGPSUnsubscribe:
		case gpsMemAdviseGPSCollapse:
			err = gpsErrorInvalidValue;
			break;
		default:	/* no read duplication of anonymous memory */
			err = gpsErrorNotSupported;
			break;
		}
		break;
	}
	return gpsu_ret(err);
}

/* ---- system scope --------------------------------------------------- */

/* True if every GPS page of [first, last] is marked collapsed. */
static bool gpsu_sys_done(struct gpsu_alloc *a, size_t first, size_t last)
{
	uint64_t *bits = __atomic_load_n(&a->sys_pages, __ATOMIC_ACQUIRE);
	size_t g;

	if (!bits)
		return false;
	for (g = first; g <= last; g++)
		if (!(__atomic_load_n(&bits[g / 64], __ATOMIC_ACQUIRE) &
		      (1ULL << (g % 64))))
			return false;
	return true;
}

/*
 * Fills the calling thread's cache with what holds @u: one view of a GPS
 * allocation, or an allocation or gap between allocations that needs
 * nothing. Returns the GPS allocation or NULL.
 */
static struct gpsu_alloc *gpsu_sys_lookup(uintptr_t u, uint64_t gen)
{
	struct gpsu_tls *t = &gpsu_tls;
	struct gpsu_alloc *a = NULL;
	long i;

	pthread_rwlock_rdlock(&gpsu.alloc_lock);
	i = gpsu_range_find(u);
	if (i >= 0 && u < gpsu.ranges[i].end) {
		t->sys_start = gpsu.ranges[i].start;
		t->sys_end = gpsu.ranges[i].end;
		if (gpsu.ranges[i].a->kind == GPSU_KIND_GPS)
			a = gpsu.ranges[i].a;
	} else {
		t->sys_start = i >= 0 ? gpsu.ranges[i].end : 0;
		t->sys_end = (size_t)(i + 1) < gpsu.nranges ?
			     gpsu.ranges[i + 1].start : UINTPTR_MAX;
	}
	pthread_rwlock_unlock(&gpsu.alloc_lock);
	t->sys_a = a;
	t->sys_gen = gen;
	return a;
}

/*
 * System scope on GPS memory (the paper's 5.3): the first system-scope
 * operation on a GPS page collapses the page to a single copy, the one
 * the caller's device sees, and makes it conventional, so that every
 * device's atomics act on that copy. Pages already collapsed by this
 * process cost a cache check; other memory costs nothing more.
 */
GPSU_API gpsError_t gpsMemSystemScope(const void *ptr, size_t size)
{
	struct gpsu_tls *t = &gpsu_tls;
	uintptr_t u = (uintptr_t)ptr;
	struct gpsu_alloc *a;
	size_t off, first, last, ps;
	uint64_t gen;
	gpsError_t err;

	if (!ptr || !size || u + size < u)
		return gpsu_ret(gpsErrorInvalidValue);
	/* no context yet: no GPS memory either */
	if (!__atomic_load_n(&gpsu.ndev, __ATOMIC_ACQUIRE))
		return gpsSuccess;
	gen = __atomic_load_n(&gpsu.alloc_gen, __ATOMIC_ACQUIRE);
	if (t->sys_gen == gen && u >= t->sys_start && u < t->sys_end)
		a = t->sys_a;
	else
		a = gpsu_sys_lookup(u, gen);
	if (!a)
		return gpsSuccess;
	off = u - t->sys_start;
	if (off > a->size || size > a->size - off)
		return gpsu_ret(gpsErrorInvalidValue);
	ps = a->page_size;
	first = off / ps;
	last = (off + size - 1) / ps;
	if (gpsu_sys_done(a, first, last))
		return gpsSuccess;
	/* concurrent first uses each collapse: the driver keeps the copy
	 * that is already single, so the later calls change nothing */
	err = gpsu_gps_advise(a, first * ps, (last - first + 1) * ps,
			      GPS_ADVISE_COLLAPSE, gpsu_cur_device());
	return gpsu_ret(err);
}

gpsError_t gpsu_check_prefetch(const void *p, size_t n, int device)
{
	struct gpsu_alloc *a;
	gpsError_t err;

	if (!p || !n)
		return gpsErrorInvalidValue;
	if (device < 0 || device >= gpsu.ndev)
		return gpsErrorInvalidDevice;
	err = gpsu_check_range(p, n, &a);
	if (err)
		return err;
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (a->kind == GPSU_KIND_CONV)
		return gpsErrorNotSupported;
	return gpsSuccess;
}

/* The device of NUMA node @node, or -1. */
static int gpsu_node_device(int node)
{
	int d;

	for (d = 0; d < gpsu.ndev; d++)
		if (gpsu.dev[d].node == node)
			return d;
	return -1;
}

/* Fills @pages with up to 512 pages from @start; returns how many. */
static size_t gpsu_page_batch(void **pages, uintptr_t start, uintptr_t end,
			      size_t ps)
{
	size_t i, cnt = (end - start) / ps;

	if (cnt > 512)
		cnt = 512;
	for (i = 0; i < cnt; i++)
		pages[i] = (void *)(start + i * ps);
	return cnt;
}

/*
 * GPS: subscribe @device. Host, managed: move the present pages; the
 * pages that leave another device's node pay that device's link (the
 * link model, as device-to-device copies).
 */
gpsError_t gpsu_do_prefetch(const void *p, size_t n, int device)
{
	size_t ps = gpsu_sys_page(), off, i, cnt;
	uint64_t moved[GPS_MAX_DEVICES] = { 0 }, t0, until, last = 0;
	struct gpsu_link link;
	uintptr_t first, start, end;
	struct gpsu_alloc *a;
	void *pages[512];
	int nodes[512], status[512];
	int d, from, target;

	a = gpsu_lookup(p, &d, &off);
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (a->kind == GPSU_KIND_GPS)
		return gpsu_gps_advise(a, off, n, GPS_ADVISE_SUBSCRIBE,
				       device);
	if (a->kind == GPSU_KIND_CONV)
		return gpsErrorNotSupported;
	target = gpsu.dev[device].node;
	t0 = gpsu_link_now();
	first = (uintptr_t)p & ~(ps - 1);
	end = ((uintptr_t)p + n + ps - 1) & ~(ps - 1);
	/*
	 * Where the pages are before anything moves (a huge page moved for
	 * one batch would be gone from the next): the link model charges
	 * what leaves another device's node.
	 */
	for (start = first; start < end; start += cnt * ps) {
		cnt = gpsu_page_batch(pages, start, end, ps);
		if (move_pages(0, cnt, pages, NULL, status, 0))
			continue;
		for (i = 0; i < cnt; i++) {
			if (status[i] < 0 || status[i] == target)
				continue;
			from = gpsu_node_device(status[i]);
			if (from >= 0)
				moved[from] += ps;
		}
	}
	for (start = first; start < end; start += cnt * ps) {
		cnt = gpsu_page_batch(pages, start, end, ps);
		for (i = 0; i < cnt; i++)
			nodes[i] = target;
		/* pages never touched report -ENOENT and stay untouched */
		if (move_pages(0, cnt, pages, nodes, status, MPOL_MF_MOVE) <
		    0 && errno != ENOENT)
			return gpsu_errno(errno);
	}
	gpsu_link_read(&link);
	for (d = 0; d < gpsu.ndev; d++) {
		until = gpsu_link_charge(&link, d, moved[d], t0);
		if (until > last)
			last = until;
	}
	gpsu_link_wait(last);
	return gpsSuccess;
}

GPSU_API gpsError_t gpsMemGetSubscribers(const void *ptr, size_t count,
					 unsigned long long *masks, size_t n,
					 size_t *npages)
{
	struct gpsu_alloc *a;
	size_t off, first, last;
	gpsError_t err;
	int d;

	if (!ptr || !count || !masks || !n)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	err = gpsu_check_range(ptr, count, &a);
	if (err)
		return gpsu_ret(err);
	if (!gpsu_is_driver(a))
		return gpsu_ret(gpsErrorInvalidDevicePointer);
	gpsu_lookup(ptr, &d, &off);
	first = off / a->page_size;
	last = (off + count - 1) / a->page_size;
	if (npages)
		*npages = last - first + 1;
	if (n > last - first + 1)
		n = last - first + 1;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	return gpsu_ret(gpsu_errno(gpsu_engine_query(a, first, (uint32_t)n,
						    masks)));
}

GPSU_API gpsError_t gpsPointerGetAttributes(gpsPointerAttributes *attr,
					    const void *ptr)
{
	static const enum gpsMemoryType types[] = {
		[GPSU_KIND_GPS] = gpsMemoryTypeGPS,
		[GPSU_KIND_CONV] = gpsMemoryTypeDevice,
		[GPSU_KIND_HOST] = gpsMemoryTypeHost,
		[GPSU_KIND_MANAGED] = gpsMemoryTypeManaged,
	};
	struct gpsu_alloc *a;
	gpsError_t err;
	size_t off;
	int d;

	if (!attr || !ptr)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	memset(attr, 0, sizeof(*attr));
	attr->device = -1;
	attr->viewDevice = -1;
	a = gpsu_lookup(ptr, &d, &off);
	if (!a)
		return gpsSuccess;
	attr->type = types[a->kind];
	attr->device = a->home;
	attr->viewDevice = d;
	attr->base = a->base;
	attr->size = a->size;
	attr->gpsPageSize = a->page_size;
	return gpsSuccess;
}

/* ---- automatic subscription ---------------------------------------- */

/*
 * Automatic subscription (the engine's GPS_IOC_TRACK): a driver without
 * it makes tracking gpsErrorNotSupported.
 */
static gpsError_t gpsu_tracking(bool start)
{
	gpsError_t err = gpsu_init();

	if (err)
		return err;
	if (gpsu_tls.in_kernel)
		return gpsErrorNotSupported;
	/* kernels in flight finish inside or outside the tracked phase */
	err = gpsu_sync_all();
	if (!err)
		err = gpsu_errno(gpsu_engine_track(start));
	return err;
}

GPSU_API gpsError_t gpsTrackingStart(void)
{
	return gpsu_ret(gpsu_tracking(true));
}

GPSU_API gpsError_t gpsTrackingStop(void)
{
	return gpsu_ret(gpsu_tracking(false));
}
