// SPDX-License-Identifier: MIT
/*
 * Copies and sets between any kinds of memory. GPS and conventional
 * memory is read and written through the engine (a store through a view
 * would be a store of that view's device); plain memory directly. A copy
 * between the memory of two devices pays the link model (link.c).
 *
 * The entry points (gpsMemcpy, gpsMemcpyAsync, ...) are in memory.c: they
 * wait for or queue on streams, and stream.c calls the work here.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "engine.h"
#include "link.h"
#include "range.h"

#define GPSU_BOUNCE_CHUNK (1UL << 20)	/* device-to-device bounce buffer */

gpsError_t gpsu_copy_check(void *dst, const void *src, size_t n,
			   gpsMemcpyKind kind)
{
	struct gpsu_alloc *da, *sa;
	bool ddev, sdev, dhost, shost;
	gpsError_t err;

	if (!dst || !src)
		return gpsErrorInvalidValue;
	if ((unsigned int)kind > gpsMemcpyDefault)
		return gpsErrorInvalidMemcpyDirection;
	err = gpsu_range_check(dst, n, &da);
	if (!err)
		err = gpsu_range_check(src, n, &sa);
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
 * GPS or conventional memory to another through a buffer, for an engine
 * that copies from plain memory only (the driver), or ranges of one
 * allocation that overlap: a small buffer used again stays in the cache
 * and faults in once.
 */
static int gpsu_copy_bounce(const struct gpsu_alloc *da, size_t doff,
			    const struct gpsu_alloc *sa, size_t soff,
			    size_t n, int device)
{
	size_t chunk = n < GPSU_BOUNCE_CHUNK ? n : GPSU_BOUNCE_CHUNK, done, len;
	char *bounce = malloc(chunk);
	int ret = 0;

	if (!bounce)
		return ENOMEM;
	for (done = 0; done < n && !ret; done += chunk) {
		len = n - done < chunk ? n - done : chunk;
		ret = gpsu_engine_read(sa, soff + done, bounce, len, device);
		if (!ret)
			ret = gpsu_engine_write(da, doff + done, bounce, len);
	}
	free(bounce);
	return ret;
}

/*
 * The link is charged to the source device and slept for after the copy,
 * no lock held.
 */
gpsError_t gpsu_copy(void *dst, const void *src, size_t n, int device)
{
	struct gpsu_alloc *da, *sa;
	struct gpsu_link link;
	size_t doff = 0, soff = 0;
	uint64_t until = 0;
	int dd = -1, sd = -1, ret = 0, from, to;

	if (!n)
		return gpsSuccess;
	da = gpsu_range_lookup(dst, &dd, &doff);
	sa = gpsu_range_lookup(src, &sd, &soff);
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
		ret = gpsu_engine_copy(da, doff, sa, soff, n, device);
		if (ret == ENOTSUP)
			ret = gpsu_copy_bounce(da, doff, sa, soff, n, device);
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

gpsError_t gpsu_set_check(void *p, size_t n)
{
	struct gpsu_alloc *a;
	gpsError_t err;

	if (!p)
		return gpsErrorInvalidValue;
	err = gpsu_range_check(p, n, &a);
	if (err)
		return err;
	return a ? gpsSuccess : gpsErrorInvalidDevicePointer;
}

gpsError_t gpsu_set(void *p, int value, size_t n)
{
	struct gpsu_alloc *a;
	size_t off;
	int d;

	if (!n)
		return gpsSuccess;
	a = gpsu_range_lookup(p, &d, &off);
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (!gpsu_is_driver(a)) {
		memset(p, value, n);
		return gpsSuccess;
	}
	return gpsu_errno(gpsu_engine_memset(a, off, value, n));
}
