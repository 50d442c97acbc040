// SPDX-License-Identifier: MIT
/*
 * Allocations: GPS, conventional and the driver's managed memory (made by
 * the engine, one view per device or the home's only), host and managed
 * memory (anonymous), each entered in the address index (range.c); their
 * release, and gpsPointerGetAttributes.
 *
 * gpsFree waits for every stream first (as cudaFree): this file calls
 * stream.c, which never calls it.
 */
#define _GNU_SOURCE
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"
#include "engine.h"
#include "range.h"
#include "stream.h"

static gpsError_t gpsu_alloc_driver(void **ptr, size_t size,
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
	a->base = a->host ? a->host : a->views[home];
	err = gpsu_range_insert(a);
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
		psize = GPSU_PAGE_4K;
	else if (pflags == gpsMemGPSPage64K)
		psize = GPSU_PAGE_64K;
	else if (pflags == gpsMemGPSPage2M)
		psize = GPSU_PAGE_2M;
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	return gpsu_ret(gpsu_alloc_driver(ptr, size, GPSU_KIND_GPS,
			(flags & gpsMemGPSManual) ? GPSU_ALLOC_MANUAL : 0,
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
	return gpsu_ret(gpsu_alloc_driver(ptr, size, GPSU_KIND_CONV, 0, 0,
					  gpsu_tls.device));
}

static gpsError_t gpsu_alloc_anon(void **ptr, size_t size,
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
		unsigned long mask[GPSU_MAX_DEVICES / 64 + 1] = { 0 };
		int node = gpsu.dev[gpsu_tls.device].node;

		if (node >= 0 && node < GPSU_MAX_DEVICES) {
			mask[node / 64] |= 1UL << (node % 64);
			/* placement is best effort: ignore failures */
			(void)mbind(p, len, MPOL_PREFERRED, mask,
				    GPSU_MAX_DEVICES + 1, 0);
		}
		(void)mlock(p, len);	/* page-locked when permitted */
	}
	a->kind = kind;
	a->size = size;
	a->map_size = len;
	a->page_size = ps;
	a->home = gpsu_tls.device;
	a->base = p;
	err = gpsu_range_insert(a);
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
	return gpsu_ret(gpsu_alloc_anon(ptr, size, GPSU_KIND_HOST));
}

GPSU_API gpsError_t gpsMallocManaged(void **ptr, size_t size)
{
	return gpsu_ret(gpsu_alloc_anon(ptr, size, GPSU_KIND_MANAGED));
}

GPSU_API gpsError_t gpsMallocManagedFlags(void **ptr, size_t size,
					  unsigned int flags)
{
	gpsError_t err;

	if (flags & ~(gpsMemAttachGlobal | gpsMemManagedOnFault))
		return gpsu_ret(gpsErrorInvalidValue);
	if (!(flags & gpsMemManagedOnFault))
		return gpsu_ret(gpsu_alloc_anon(ptr, size, GPSU_KIND_MANAGED));
	if (!ptr || !size || size > (SIZE_MAX >> 2))
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	/* the migration granule: a small page, as UVM's 4 KiB */
	return gpsu_ret(gpsu_alloc_driver(ptr, size, GPSU_KIND_UM, 0,
					  GPSU_PAGE_4K, gpsu_tls.device));
}

/* Forgets @a and gives its memory back (nothing may use it any more). */
static gpsError_t gpsu_alloc_release(struct gpsu_alloc *a)
{
	gpsError_t err = gpsSuccess;

	gpsu_range_remove(a);
	if (gpsu_is_driver(a)) {
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
	a = gpsu_range_lookup(ptr, &d, &off);
	if (!a || off)
		return gpsErrorInvalidDevicePointer;
	if (host_only && a->kind != GPSU_KIND_HOST)
		return gpsErrorInvalidValue;
	/* as cudaFree: no kernel may still use it */
	err = gpsu_sync_all();
	e = gpsu_alloc_release(a);
	return err ? err : e;
}

gpsError_t gpsu_alloc_conv(void **ptr, size_t size, int home)
{
	return gpsu_alloc_driver(ptr, size, GPSU_KIND_CONV, 0, 0, home);
}

gpsError_t gpsu_alloc_conv_free(void *ptr)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	a = gpsu_range_lookup(ptr, &d, &off);
	if (!a || off || a->kind != GPSU_KIND_CONV)
		return gpsErrorInvalidDevicePointer;
	return gpsu_alloc_release(a);
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

GPSU_API gpsError_t gpsPointerGetAttributes(gpsPointerAttributes *attr,
					    const void *ptr)
{
	static const enum gpsMemoryType types[] = {
		[GPSU_KIND_GPS] = gpsMemoryTypeGPS,
		[GPSU_KIND_CONV] = gpsMemoryTypeDevice,
		[GPSU_KIND_HOST] = gpsMemoryTypeHost,
		[GPSU_KIND_MANAGED] = gpsMemoryTypeManaged,
		[GPSU_KIND_UM] = gpsMemoryTypeManaged,
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
	a = gpsu_range_lookup(ptr, &d, &off);
	if (!a)
		return gpsSuccess;
	attr->type = types[a->kind];
	attr->device = a->home;
	attr->viewDevice = a->host && (char *)ptr - off == a->host ? -1 : d;
	attr->base = a->base;
	attr->size = a->size;
	attr->gpsPageSize = a->page_size;
	return gpsSuccess;
}
