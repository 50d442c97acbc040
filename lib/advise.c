// SPDX-License-Identifier: MIT
/*
 * Advice, system scope, prefetch and subscribers.
 *
 * GPS memory takes its advice from the engine (subscribe, unsubscribe,
 * collapse, on whole GPS pages); host and managed memory a NUMA memory
 * policy (mbind); a prefetch of GPS memory is a subscription, of host and
 * managed memory a migration of its pages (move_pages) that pays the link
 * model. gpsMemPrefetchAsync (memory.c) queues gpsu_prefetch on a stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "engine.h"
#include "link.h"
#include "range.h"

/* ---- advice --------------------------------------------------------- */

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
				  enum gpsu_advice advice, int device)
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
	if (advice == GPSU_ADVISE_SUBSCRIBE)
		gpsu_sys_mark(a, start / ps, end / ps, false);
	else if (advice == GPSU_ADVISE_COLLAPSE && !ret)
		gpsu_sys_mark(a, start / ps, end / ps, true);
	return gpsu_errno(ret);
}

static gpsError_t gpsu_host_policy(struct gpsu_alloc *a, size_t off, size_t n,
				   int mode, int device)
{
	unsigned long mask[GPSU_MAX_DEVICES / 64 + 1] = { 0 };
	size_t ps = gpsu_sys_page();
	uintptr_t start = ((uintptr_t)a->base + off) & ~(ps - 1);
	uintptr_t end = ((uintptr_t)a->base + off + n + ps - 1) & ~(ps - 1);
	int node;

	if (mode != MPOL_DEFAULT) {
		node = gpsu.dev[device].node;
		if (node < 0 || node >= GPSU_MAX_DEVICES)
			return gpsErrorNotSupported;
		mask[node / 64] |= 1UL << (node % 64);
	}
	if (mbind((void *)start, end - start, mode,
		  mode == MPOL_DEFAULT ? NULL : mask,
		  mode == MPOL_DEFAULT ? 0 : GPSU_MAX_DEVICES + 1,
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
	err = gpsu_range_check(ptr, count, &a);
	if (err)
		return gpsu_ret(err);
	if (!a)
		return gpsu_ret(gpsErrorInvalidDevicePointer);
	gpsu_range_lookup(ptr, &v, &off);

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
					      GPSU_ADVISE_SUBSCRIBE, device);
			break;
		case gpsMemAdviseGPSUnsubscribe:
			err = gpsu_gps_advise(a, off, count,
					      GPSU_ADVISE_UNSUBSCRIBE, device);
			break;
		case gpsMemAdviseSetReadMostly:
			for (d = 0; d < gpsu.ndev && !err; d++)
				err = gpsu_gps_advise(a, off, count,
						GPSU_ADVISE_SUBSCRIBE, d);
			break;
		case gpsMemAdviseGPSCollapse:
			err = gpsu_gps_advise(a, off, count,
					      GPSU_ADVISE_COLLAPSE, device);
			break;
		case gpsMemAdviseUnsetReadMostly:
			/* collapse to the advised device's replica */
			err = gpsu_gps_advise(a, off, count,
					      GPSU_ADVISE_SUBSCRIBE, device);
			for (d = 0; d < gpsu.ndev && !err; d++)
				if (d != device)
					err = gpsu_gps_advise(a, off, count,
						GPSU_ADVISE_UNSUBSCRIBE, d);
			break;
		default:
			/* the subscription a preferred location made stays */
			err = gpsErrorNotSupported;
			break;
		}
		break;
	case GPSU_KIND_CONV:
	case GPSU_KIND_UM:
		/*
		 * A single copy that the driver keeps on its home node, or
		 * moves on faults (UM): it takes no subscription and no
		 * placement, and is collapsed already (one copy, no pending
		 * stores), so a collapse is a no-op that succeeds.
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
	struct gpsu_alloc *a;

	a = gpsu_range_span(u, &t->sys_start, &t->sys_end);
	if (a && a->kind != GPSU_KIND_GPS)
		a = NULL;
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
	gen = gpsu_range_gen();
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
			      GPSU_ADVISE_COLLAPSE, gpsu_cur_device());
	return gpsu_ret(err);
}

/* ---- prefetch ------------------------------------------------------- */

gpsError_t gpsu_prefetch_check(const void *p, size_t n, int device)
{
	struct gpsu_alloc *a;
	gpsError_t err;

	if (!p || !n)
		return gpsErrorInvalidValue;
	if (device < 0 || device >= gpsu.ndev)
		return gpsErrorInvalidDevice;
	err = gpsu_range_check(p, n, &a);
	if (err)
		return err;
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (a->kind == GPSU_KIND_CONV || a->kind == GPSU_KIND_UM)
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
gpsError_t gpsu_prefetch(const void *p, size_t n, int device)
{
	size_t ps = gpsu_sys_page(), off, i, cnt;
	uint64_t moved[GPSU_MAX_DEVICES] = { 0 }, t0, until, last = 0;
	struct gpsu_link link;
	uintptr_t first, start, end;
	struct gpsu_alloc *a;
	void *pages[512];
	int nodes[512], status[512];
	int d, from, target;

	a = gpsu_range_lookup(p, &d, &off);
	if (!a)
		return gpsErrorInvalidDevicePointer;
	if (a->kind == GPSU_KIND_GPS)
		return gpsu_gps_advise(a, off, n, GPSU_ADVISE_SUBSCRIBE,
				       device);
	if (a->kind == GPSU_KIND_CONV || a->kind == GPSU_KIND_UM)
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

/* ---- subscribers ---------------------------------------------------- */

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
	err = gpsu_range_check(ptr, count, &a);
	if (err)
		return gpsu_ret(err);
	if (!gpsu_is_driver(a))
		return gpsu_ret(gpsErrorInvalidDevicePointer);
	gpsu_range_lookup(ptr, &d, &off);
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
