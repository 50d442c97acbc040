// SPDX-License-Identifier: MIT
/*
 * The native engine's subscriptions (engine_user_state.h): a change
 * (advice, collapse) holds the pages it points again, settles them
 * (engine_user_publish.c), fills new replicas, points the views and
 * drops the replicas left (charged to the budgets:
 * engine_user_budget.c); tracking watches the device views made
 * PROT_NONE and subscribes the devices that touch a page; managed memory
 * on fault moves a small page to the device that touches it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "engine_user_state.h"

/* the pure core, after the library's headers: it defines min/max */
#include "gps_bytes.h"

/* ---- subscriptions -------------------------------------------------- */

/*
 * The protection of GPS page @g in view @v: none where tracking waits
 * for its device's first access, read-only while a change holds it.
 */
static int gpsu_user_prot(const struct gpsu_user_alloc *ua, int v, size_t g,
			  bool held)
{
	if (ua->tracked && v < gpsu_user.ndev &&
	    !(__atomic_load_n(&ua->touched[g], __ATOMIC_RELAXED) &
	      (1ULL << v)))
		return PROT_NONE;
	return held ? PROT_READ : PROT_READ | PROT_WRITE;
}

/*
 * Points GPS pages [@g, @g + @n) of view @v at replica @r: one MAP_FIXED
 * mapping of that replica's region of the memfd, armed for capture (a
 * new mapping is not registered), @held as a change holds them (the
 * protection of page @g: the caller's pages share it).
 */
static int gpsu_user_point(struct gpsu_user_alloc *ua, int v, size_t g,
			   size_t n, int r, bool held)
{
	char *at = gpsu_user_view(ua, v) + g * ua->ps;
	int prot = gpsu_user_prot(ua, v, g, held);
	size_t i;
	long m;

	/*
	 * The system call itself: a remap changes which replica the view
	 * shows, not what the program stored there. ThreadSanitizer's mmap
	 * takes it for a write of the page by this thread, and a store made
	 * after the page opened again, before the hold ended, for a race
	 * (the kernel orders the two; nothing TSan sees does).
	 */
	m = syscall(SYS_mmap, at, n * ua->ps, prot, MAP_SHARED | MAP_FIXED,
		    gpsu_user.memfd,
		    ua->base + (off_t)((size_t)r * ua->len + g * ua->ps));
	if (m == -1)
		return errno;
	for (i = g; i < g + n; i++)
		*gpsu_user_mapp(ua, v, i) = (uint8_t)r;
	/* armed anew: no small page of the range is kept writable */
	for (i = g * ua->ps / PAGE_SIZE; i < (g + n) * ua->ps / PAGE_SIZE;
	     i++) {
		unsigned long bit, *w = gpsu_user_kept_word(ua, v, i, &bit);

		*w &= ~bit;
	}
	return gpsu_capture_arm(at, n * ua->ps);
}

/*
 * At birth, view @v mapped whole on the replica of its first page: the
 * pages whose replica differs (a budget left a device out) pointed at
 * theirs. Nothing else knows the allocation yet.
 */
int gpsu_user_point_born(struct gpsu_user_alloc *ua, int v)
{
	int base = *gpsu_user_mapp(ua, v, 0), r, ret;
	size_t g, e;

	for (g = 1; g < ua->ngp; g = e) {
		r = *gpsu_user_mapp(ua, v, g);
		for (e = g + 1; e < ua->ngp && *gpsu_user_mapp(ua, v, e) == r;
		     e++)
			;
		if (r == base)
			continue;
		/* a run on one replica: one mapping, armed, not held */
		ret = gpsu_user_point(ua, v, g, e - g, r, false);
		if (ret)
			return ret;
	}
	return 0;
}

/* The replica view @v should map at @g under the subscribers @subs. */
static int gpsu_user_serve(const struct gpsu_user_alloc *ua, int v,
			   size_t g, uint64_t subs)
{
	int cur = *gpsu_user_mapp(ua, v, g), home = ua->a->home;

	if (v < gpsu_user.ndev && (subs & (1ULL << v)))
		return v;
	if (v == gpsu_user.ndev && (subs & (1ULL << home)))
		return home;
	if (cur != v && (subs & (1ULL << cur)))
		return cur;	/* still a subscriber: stay on it */
	if (subs & (1ULL << home))
		return home;
	return __builtin_ctzll(subs);
}

/*
 * The change under way (allocs_lock held for writing: one at a time):
 * the views it holds, and the signal mask of the thread that holds.
 */
static struct {
	bool view[GPSU_MAX_DEVICES + 1];
	sigset_t mask;
	struct gpsu_harvest *h;		/* the settles' scratch */
	struct gpsu_written wr;		/* pages written, or no bits: all */
} gpsu_change;

/*
 * GPS pages [@g0, @g1) of the views the change holds at
 * gpsu_user_prot(), in runs. Where a view cannot open one run
 * (vm.max_map_count), it opens whole, splitting nothing; a tracked
 * device then counts as a user of every page.
 */
static int gpsu_user_protect(struct gpsu_user_alloc *ua, size_t g0,
			     size_t g1, bool held)
{
	size_t g, e;
	int v, prot, ret = 0;

	for (v = 0; v <= gpsu_user.ndev; v++) {
		char *view = gpsu_user_view(ua, v);
		bool whole = false;

		if (!gpsu_change.view[v])
			continue;
		for (g = g0; g < g1 && !whole; g = e) {
			prot = gpsu_user_prot(ua, v, g, held);
			for (e = g + 1; e < g1 &&
			     gpsu_user_prot(ua, v, e, held) == prot; e++)
				;
			if (!mprotect(view + g * ua->ps, (e - g) * ua->ps, prot))
				continue;
			if (held) {
				ret = errno;
				break;
			}
			whole = true;
		}
		if (!whole)
			continue;
		if (ua->tracked && v < gpsu_user.ndev)
			for (g = 0; g < ua->ngp; g++) {
				__atomic_fetch_or(&ua->touched[g], 1ULL << v,
						  __ATOMIC_RELAXED);
				__atomic_fetch_or(&ua->read[g], 1ULL << v,
						  __ATOMIC_RELAXED);
			}
		GPSU_STAT_ADD(opened_whole, 1);
		if (mprotect(view, ua->len, PROT_READ | PROT_WRITE) && !ret)
			ret = errno;
	}
	return ret;
}

/* The settles' scratch given back. */
static void gpsu_user_change_free(void)
{
	free(gpsu_change.h);
	gpsu_change.h = NULL;
}

/* The changing thread's signals as they were, the scratch given back. */
static void gpsu_user_change_done(void)
{
	pthread_sigmask(SIG_SETMASK, &gpsu_change.mask, NULL);
	gpsu_user_change_free();
}

/* The held views open again (to what tracking allows), the stores go on. */
static int gpsu_user_change_end(struct gpsu_user_alloc *ua, size_t g0,
				size_t g1)
{
	int ret = gpsu_user_protect(ua, g0, g1, false);

	gpsu_fault_unhold();
	gpsu_user_change_done();
	return ret;
}

/*
 * A change of the subscriptions of GPS pages [@g0, @g1) to @want[g -
 * @g0] (NULL: every view changes, tracking) begins: the stores of every
 * view it points again wait there until gpsu_user_change_end() (the
 * driver zaps the views). Else a store made while its view is pointed
 * again could reach the old replica and a newer one the new replica,
 * and the change's publication wrote the older over the newer, for
 * good. The views it does not point again go on. -1: no view to point
 * again, nothing held (the settles' scratch is made all the same: the
 * change publishes its range); 0; or an errno, nothing held. Nothing it does
 * while it holds allocates or takes a lock a program's thread may hold
 * (a signal handler's store would wait on the hold). allocs_lock held
 * for writing.
 */
static int gpsu_user_change_begin(struct gpsu_user_alloc *ua, size_t g0,
				  size_t g1, const uint64_t *want)
{
	uintptr_t lo[GPSU_MAX_DEVICES + 1];
	sigset_t async;
	int v, n = 0, ret;
	size_t g;

	for (v = 0; v <= gpsu_user.ndev; v++) {
		gpsu_change.view[v] = !want;
		for (g = g0; want && g < g1 && !gpsu_change.view[v]; g++)
			gpsu_change.view[v] =
				want[g - g0] != ua->subs[g] &&
				gpsu_user_serve(ua, v, g, want[g - g0]) !=
				*gpsu_user_mapp(ua, v, g);
		if (gpsu_change.view[v])
			lo[n++] = (uintptr_t)gpsu_user_view(ua, v) +
				  g0 * ua->ps;
	}
	gpsu_change.h = malloc(sizeof(*gpsu_change.h));
	if (!gpsu_change.h)
		return ENOMEM;
	if (!n)
		return -1;
	/* a handler of the program's on this thread must not wait for it */
	gpsu_fault_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &gpsu_change.mask);
	ret = gpsu_fault_hold(lo, n, (g1 - g0) * ua->ps);
	if (ret) {
		gpsu_user_change_done();
		return ret;
	}
	ret = gpsu_user_protect(ua, g0, g1, true);
	if (ret)
		(void)gpsu_user_change_end(ua, g0, g1);
	return ret;
}

/*
 * Makes @want (not empty) the subscribers of GPS page @g: pending
 * stores published first, new replicas filled from what their device's
 * view maps, the views pointed again, then the dropped replicas' memory
 * given back. allocs_lock held for writing, inside a change
 * (gpsu_user_change_begin): nothing stores through a view pointed
 * again, so nothing is left to publish afterwards.
 */
static int gpsu_user_resub(struct gpsu_user_alloc *ua, size_t g,
			   uint64_t want)
{
	uint64_t old = ua->subs[g], add = want & ~old, drop = old & ~want;
	size_t at = g * ua->ps, p;
	int d, v, r, ret = 0, e;

	if (!want)
		return EBUSY;
	/* a device the budgets refuse stays out, counted: a soft failure */
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(add & (1ULL << d)) || gpsu_user_charge(ua, d, false))
			continue;
		add &= ~(1ULL << d);
		want &= ~(1ULL << d);
		gpsu_user_count(d, GPSU_S(subscribe_failed), 1);
	}
	if (!want)
		return EBUSY;	/* no caller asks it: every request keeps one */
	/*
	 * A change is a release for everyone, over its whole range, where
	 * nothing moves too (memory-model.rst; the driver's gps_quiesce()),
	 * but for a page of one subscriber that keeps it (no one to publish
	 * to). A page that changes is settled whatever it had: the twin of
	 * a lone replica is behind, and new replicas start from it.
	 */
	if (want != old || (old & (old - 1)))
		gpsu_user_settle(ua, g, old, gpsu_change.h,
				 want == old && gpsu_change.wr.bits ?
				 &gpsu_change.wr : NULL);
	if (want == old)
		return 0;
	if (gpsu_user.change_delay_us)
		usleep(gpsu_user.change_delay_us);
	/*
	 * A new replica starts from the twin of the one its view mapped:
	 * what is published. That replica's own device is not held, and a
	 * store of its not yet diffed reaches the new replica with its next
	 * push, as it reaches every other; copied from the replica itself,
	 * it could stay there alone where a later store of the same word
	 * changed fewer bytes (the torture saw the views disagree).
	 */
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(add & (1ULL << d)))
			continue;
		r = *gpsu_user_mapp(ua, d, g);
		for (p = at; p < at + ua->ps; p += PAGE_SIZE) {
			pthread_mutex_t *l = gpsu_user_plock(ua, p / PAGE_SIZE);
			const char *src = ua->twin + (size_t)r * ua->len + p;

			pthread_mutex_lock(l);
			memcpy(ua->back + (size_t)d * ua->len + p, src,
			       PAGE_SIZE);
			memcpy(ua->twin + (size_t)d * ua->len + p, src,
			       PAGE_SIZE);
			pthread_mutex_unlock(l);
		}
	}
	ua->subs[g] = want;
	gpsu_user_uncharge(ua, drop);
	if (gpsu_user.change_delay_us)
		usleep(gpsu_user.change_delay_us);
	for (v = 0; v <= gpsu_user.ndev; v++) {
		r = gpsu_user_serve(ua, v, g, want);
		if (r == *gpsu_user_mapp(ua, v, g))
			continue;
		e = gpsu_user_point(ua, v, g, 1, r, true);
		if (e && !ret)
			ret = e;
	}
	/* a view that could not be pointed again keeps its replica */
	for (v = 0; ret && v <= gpsu_user.ndev; v++) {
		uint64_t still = 1ULL << *gpsu_user_mapp(ua, v, g);

		if (!(drop & still))
			continue;
		drop &= ~still;
		ua->subs[g] |= still;
		(void)gpsu_user_charge(ua, *gpsu_user_mapp(ua, v, g), true);
	}
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(drop & (1ULL << d)))
			continue;
		(void)fallocate(gpsu_user.memfd,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				ua->base + (off_t)((size_t)d * ua->len + at),
				(off_t)ua->ps);
		(void)madvise(ua->twin + (size_t)d * ua->len + at, ua->ps,
			      MADV_DONTNEED);
	}
	GPSU_STAT_ADD(subscribes, (uint64_t)__builtin_popcountll(add));
	GPSU_STAT_ADD(unsubscribes, (uint64_t)__builtin_popcountll(drop));
	return ret;
}

/* A written page of view ctx->v (gpsu_capture_written()'s callback). */
struct gpsu_written_scan {
	struct gpsu_user_alloc *ua;
	int v;
};

static void gpsu_user_written_page(void *ctx, size_t page)
{
	struct gpsu_written_scan *sc = ctx;
	struct gpsu_user_alloc *ua = sc->ua;
	size_t p = gpsu_change.wr.p0 + page;
	int r = *gpsu_user_mapp(ua, sc->v, p * PAGE_SIZE / ua->ps);
	size_t b = (size_t)r * gpsu_change.wr.np + page;

	gpsu_change.wr.bits[b / BITS_PER_LONG] |= 1UL << (b % BITS_PER_LONG);
}

/*
 * The pages of GPS pages [@first, @last) that some view wrote since a
 * harvest last protected them (PAGEMAP_SCAN, nothing protected), for
 * the settles of the pages a change leaves as they are: they hold what
 * their twins hold elsewhere. Harvests, which protect, cannot run (the
 * caller holds allocs_lock for writing); a store made meanwhile may or
 * may not be seen, as any store made while a change runs. Without
 * memory, or where a scan fails, no bits: every page is diffed.
 */
static void gpsu_user_written_scan(struct gpsu_user_alloc *ua, size_t first,
				   size_t last)
{
	struct gpsu_written *wr = &gpsu_change.wr;
	struct gpsu_written_scan sc = { ua, 0 };
	size_t n;

	wr->p0 = first * ua->ps / PAGE_SIZE;
	wr->np = (last - first) * ua->ps / PAGE_SIZE;
	n = (size_t)ua->nrep * wr->np;
	wr->bits = calloc((n + BITS_PER_LONG - 1) / BITS_PER_LONG,
			  sizeof(long));
	for (sc.v = 0; wr->bits && sc.v <= gpsu_user.ndev; sc.v++) {
		char *view = gpsu_user_view(ua, sc.v);

		if (view && gpsu_capture_written(view + first * ua->ps,
						 (last - first) * ua->ps,
						 gpsu_user_written_page, &sc)) {
			free(wr->bits);
			wr->bits = NULL;
		}
	}
}

int gpsu_user_advise(const struct gpsu_alloc *a, size_t off,
			    size_t len, enum gpsu_advice advice, int device)
{
	struct gpsu_user_alloc *ua = a->engine;
	size_t g, first, last;
	uint64_t *want, bit = 1ULL << device;
	int ret = 0, held = -1, e;

	if (a->kind != GPSU_KIND_GPS || device < 0 ||
	    device >= gpsu_user.ndev)
		return EINVAL;
	if (advice != GPSU_ADVISE_SUBSCRIBE &&
	    advice != GPSU_ADVISE_UNSUBSCRIBE &&
	    advice != GPSU_ADVISE_COLLAPSE)
		return EINVAL;
	if (off % ua->ps || len % ua->ps || off > ua->len ||
	    len > ua->len - off)
		return EINVAL;
	first = off / ua->ps;
	last = (off + len) / ua->ps;
	if (first == last)
		return 0;
	want = calloc(last - first, sizeof(*want));
	if (!want)
		return ENOMEM;
	pthread_rwlock_wrlock(&gpsu_user.allocs_lock);
	for (g = first; g < last; g++) {
		switch (advice) {
		case GPSU_ADVISE_SUBSCRIBE:
			want[g - first] = ua->subs[g] | bit;
			break;
		case GPSU_ADVISE_UNSUBSCRIBE:
			want[g - first] = ua->subs[g] & ~bit;
			/* the last subscriber: refused, nothing changed */
			if (!want[g - first])
				ret = EBUSY;
			break;
		default:
			/* one copy: the one @device sees */
			want[g - first] = 1ULL << *gpsu_user_mapp(ua, device, g);
			break;
		}
	}
	/* before the hold: nothing allocates while it holds */
	if (!ret)
		gpsu_user_written_scan(ua, first, last);
	if (!ret) {
		held = gpsu_user_change_begin(ua, first, last, want);
		if (held > 0)
			ret = held;
	}
	for (g = first; g < last && !ret; g++) {
		uint64_t was = ua->subs[g];

		if (advice == GPSU_ADVISE_COLLAPSE)
			ua->collapsed[g] = true;
		ret = gpsu_user_resub(ua, g, want[g - first]);
		/* replicated again only where the device was given a copy
		 * (not where it had one, nor where a budget refused it) */
		if (advice == GPSU_ADVISE_SUBSCRIBE && !(was & bit) &&
		    (ua->subs[g] & bit))
			ua->collapsed[g] = false;
	}
	if (!held) {
		e = gpsu_user_change_end(ua, first, last);
		if (e && !ret)
			ret = e;
	} else if (held < 0) {
		gpsu_user_change_free();
	}
	free(gpsu_change.wr.bits);
	gpsu_change.wr.bits = NULL;
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	free(want);
	return ret;
}

int gpsu_user_query(const struct gpsu_alloc *a, size_t first,
			   uint32_t nr, unsigned long long *subs)
{
	const struct gpsu_user_alloc *ua = a->engine;
	size_t per = a->page_size / PAGE_SIZE;
	uint32_t i;

	if (first > a->map_size / a->page_size ||
	    nr > a->map_size / a->page_size - first)
		return EINVAL;
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (i = 0; i < nr; i++) {
		if (ua->subs)
			subs[i] = ua->subs[first + i];
		else if (ua->owner)
			subs[i] = 1ULL << __atomic_load_n(
					&ua->owner[(first + i) * per],
					__ATOMIC_RELAXED);
		else
			subs[i] = 1ULL << a->home;
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	return 0;
}

/* ---- tracking: automatic subscription ------------------------------- */

/*
 * A tracked device's first access to a GPS page (SIGSEGV on its
 * PROT_NONE view): the device is recorded as a user of the page, and as
 * a reader unless the access was a store, and the page opened in its
 * view (so, as with the driver, a device that stores to a page before
 * it loads from it is not seen reading). In the signal handler.
 */
int gpsu_user_track_fault(void *ctx, int d, uintptr_t addr, bool write,
			  uint64_t *sleep_ns)
{
	struct gpsu_user_alloc *ua = ctx;
	size_t g = (addr - (uintptr_t)ua->a->views[d]) / ua->ps;

	(void)sleep_ns;		/* opening costs no link time */
	if (!write)
		__atomic_fetch_or(&ua->read[g], 1ULL << d, __ATOMIC_RELAXED);
	__atomic_fetch_or(&ua->touched[g], 1ULL << d, __ATOMIC_RELAXED);
	GPSU_STAT_ADD(track_faults, 1);
	if (!mprotect(ua->a->views[d] + g * ua->ps, ua->ps,
		      PROT_READ | PROT_WRITE))
		return GPSU_FAULT_OPENED;
	/*
	 * No VMA left for the page alone (vm.max_map_count): the whole
	 * view opens, which splits nothing, and the device counts as a
	 * user of every page (more replicas kept, none missing); not
	 * while a change holds pages, which may be this view's.
	 */
	if (gpsu_fault_holding())
		return GPSU_FAULT_WAIT;
	for (g = 0; g < ua->ngp; g++) {
		__atomic_fetch_or(&ua->touched[g], 1ULL << d,
				  __ATOMIC_RELAXED);
		__atomic_fetch_or(&ua->read[g], 1ULL << d, __ATOMIC_RELAXED);
	}
	GPSU_STAT_ADD(opened_whole, 1);
	return mprotect(ua->a->views[d], ua->len, PROT_READ | PROT_WRITE) ?
	       GPSU_FAULT_PASS : GPSU_FAULT_OPENED;
}

/*
 * Starts tracking @ua: every device subscribed to every page but the
 * collapsed ones (so that each sees its own replica; @born: an
 * allocation just placed, where every device was tried already), the
 * touched masks cleared, every device view PROT_NONE with its faults
 * routed here. allocs_lock held for writing.
 */
int gpsu_user_track_on(struct gpsu_user_alloc *ua, bool born)
{
	uint64_t all = gpsu_user.ndev >= 64 ? ~0ULL :
		       (1ULL << gpsu_user.ndev) - 1;
	size_t g;
	int d, ret = 0, e;

	/* routed first: the table's lock is not taken while holding */
	for (d = 0; d < gpsu_user.ndev && !ret; d++)
		ret = gpsu_fault_add(ua->a->views[d], ua->len,
				     gpsu_user_track_fault, ua, d);
	if (!ret)
		ret = gpsu_user_change_begin(ua, 0, ua->ngp, NULL);
	if (ret) {
		gpsu_fault_del(ua);
		return ret;
	}
	for (g = 0; g < ua->ngp && !ret; g++) {
		__atomic_store_n(&ua->touched[g], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ua->read[g], 0, __ATOMIC_RELAXED);
		if (!ua->collapsed[g] && !born)
			ret = gpsu_user_resub(ua, g, all);
	}
	/* the device views close as the hold ends */
	ua->tracked = !ret;
	e = gpsu_user_change_end(ua, 0, ua->ngp);
	if (ret)
		gpsu_fault_del(ua);
	return ret ? ret : e;
}

/*
 * Stops tracking @ua: every view held, each page kept by the devices
 * that used it (track_policy "touched"), or that were seen reading it
 * ("read"); a page nobody used keeps one copy, at home if it has one;
 * collapsed pages are left alone; the views opened, then the faults no
 * longer routed (one from before is retried, not a kill).
 */
static int gpsu_user_track_off(struct gpsu_user_alloc *ua)
{
	uint64_t *used = gpsu_user_knob(GPSU_K(track_policy)) ==
			 GPSU_TRACK_POLICY_READ ? ua->read : ua->touched;
	uint64_t keep, home = 1ULL << ua->a->home;
	size_t g;
	int ret, e;

	/*
	 * What the devices touched stays as it is from here (a fault under
	 * way is waited for); untracked, every view is held read-only whole.
	 */
	ua->tracked = false;
	ret = gpsu_user_change_begin(ua, 0, ua->ngp, NULL);
	if (ret) {
		/* still tracked: the untouched pages closed again */
		ua->tracked = true;
		(void)gpsu_user_protect(ua, 0, ua->ngp, false);
		return ret;
	}
	for (g = 0; g < ua->ngp; g++) {
		if (ua->collapsed[g])
			continue;
		keep = __atomic_load_n(&used[g], __ATOMIC_RELAXED) &
		       ua->subs[g];
		if (!keep)
			keep = (ua->subs[g] & home) ? home :
			       1ULL << __builtin_ctzll(ua->subs[g]);
		e = gpsu_user_resub(ua, g, keep);
		if (e && !ret)
			ret = e;
	}
	e = gpsu_user_change_end(ua, 0, ua->ngp);
	if (e && !ret)
		ret = e;
	gpsu_fault_del(ua);
	return ret;
}

/* START or STOP for every automatic GPS allocation; EINVAL: no change. */
int gpsu_user_track(bool start)
{
	struct gpsu_user_alloc *ua;
	int ret = 0, e;

	pthread_rwlock_wrlock(&gpsu_user.allocs_lock);
	if (gpsu_user.tracking == start) {
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
		return EINVAL;
	}
	gpsu_user.tracking = start;
	for (ua = gpsu_user.allocs; ua; ua = ua->next) {
		if (ua->a->flags & GPSU_ALLOC_MANUAL)
			continue;
		e = start ? gpsu_user_track_on(ua, false) :
			    gpsu_user_track_off(ua);
		if (e && !ret)
			ret = e;
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	return ret;
}

/* ---- managed memory on fault ---------------------------------------- */

/*
 * Would moving small page @p now thrash (core/gps_thrash.h, the driver's
 * um_* knobs, in ns)?  Then pinned where it is; else the move is counted.
 * um_lock held.
 */
static bool gpsu_user_um_thrashing(struct gpsu_user_alloc *ua, size_t p,
				   uint64_t now)
{
	return gps_thrash_move(&ua->thrash[p], now,
			       (u32)gpsu_user_knob(GPSU_K(um_thrash_threshold)),
			       gpsu_user_knob(GPSU_K(um_thrash_epoch_ms)) * 1000000,
			       gpsu_user_knob(GPSU_K(um_pin_ms)) * 1000000);
}

/*
 * Small page @p moves to device @d: every other view that reaches it is
 * closed (one that cannot be, at vm.max_map_count, still reaches it and
 * is tried again at the next move), then the memory goes to @d's node
 * where there are several. One copy throughout, so nothing is copied and
 * no store is lost. um_lock held.
 */
static void gpsu_user_um_move(struct gpsu_user_alloc *ua, size_t p, int d)
{
	uint64_t others = ua->reach[p] & ~(1ULL << d), open = 0;
	size_t at = p * PAGE_SIZE;
	int v;

	for (v = 0; others; v++, others >>= 1)
		if ((others & 1) && mprotect(ua->a->views[v] + at, PAGE_SIZE,
					     PROT_NONE))
			open |= 1ULL << v;
	__atomic_store_n(&ua->owner[p], (uint8_t)d, __ATOMIC_RELAXED);
	ua->reach[p] = open;
	if (numa_max_node() > 0) {
		void *pg = ua->back + at;
		int node = gpsu_user.dev[d].node, status;

		(void)numa_move_pages(0, 1, &pg, &node, &status, MPOL_MF_MOVE);
	}
	gpsu_user_count(d, GPSU_S(migrations), 1);
	gpsu_user_count(d, GPSU_S(bytes_migrated), PAGE_SIZE);
}

/*
 * The move's time on the link of device @from, for the fault to wait as
 * a GPU's fault waits for its copy (alone on the link: the pushes' clock
 * is the fences' and rounds', under the device's lock).
 */
static uint64_t gpsu_user_um_charge(int from)
{
	uint64_t t = gps_link_cost_ns(PAGE_SIZE,
				      gpsu_user_knob(GPSU_K(link_bandwidth)));

	if (!t)
		return 0;
	t += gpsu_user_knob(GPSU_K(link_latency_ns));
	gpsu_user_count(from, GPSU_S(link_wait_ns), t);
	return t;
}

/*
 * Device @d's first access to a managed small page it does not reach:
 * the page moves to @d, or, pinned where it is (it thrashes, or did a
 * moment ago), @d's view reaches it there until it next moves. In the
 * signal handler.
 */
int gpsu_user_um_fault(void *ctx, int d, uintptr_t addr, bool write,
		       uint64_t *sleep_ns)
{
	struct gpsu_user_alloc *ua = ctx;
	size_t p = (addr - (uintptr_t)ua->a->views[d]) / PAGE_SIZE;
	size_t at = p * PAGE_SIZE;
	int saved = errno, from = -1;
	uint64_t now;
	bool ok;

	(void)write;	/* a load or a store moves the page alike */
	while (__atomic_exchange_n(&ua->um_lock, 1, __ATOMIC_ACQUIRE))
		;
	now = gpsu_user_now();
	if (!(ua->reach[p] & (1ULL << d))) {
		int old = ua->owner[p];

		if (gps_thrash_pinned(&ua->thrash[p], now)) {
			/* reached where it is */
		} else if (gpsu_user_um_thrashing(ua, p, now)) {
			gpsu_user_count(old, GPSU_S(thrash_pins), 1);
		} else {
			gpsu_user_um_move(ua, p, d);
			from = old;
		}
	}
	ok = !mprotect(ua->a->views[d] + at, PAGE_SIZE, PROT_READ | PROT_WRITE);
	if (!ok) {
		/*
		 * vm.max_map_count: the whole view opens (one copy, so
		 * nothing is lost; the device's accesses move no page after
		 * this). Other views may have stayed open too.
		 */
		ok = !mprotect(ua->a->views[d], ua->len,
			       PROT_READ | PROT_WRITE);
		GPSU_STAT_ADD(opened_whole, 1);
	}
	if (ok)
		ua->reach[p] |= 1ULL << d;
	__atomic_store_n(&ua->um_lock, 0, __ATOMIC_RELEASE);
	if (from >= 0)
		*sleep_ns = gpsu_user_um_charge(from);
	errno = saved;
	return ok ? GPSU_FAULT_OPENED : GPSU_FAULT_PASS;
}

/* Managed memory on fault at birth: every page with its home. */
int gpsu_user_um_on(struct gpsu_user_alloc *ua)
{
	size_t n = ua->len / PAGE_SIZE;
	int d, ret;

	ua->owner = malloc(n);
	ua->reach = malloc(n * sizeof(*ua->reach));
	ua->thrash = calloc(n, sizeof(*ua->thrash));
	if (!ua->owner || !ua->reach || !ua->thrash)
		return ENOMEM;
	memset(ua->owner, ua->a->home, n);
	for (size_t p = 0; p < n; p++)
		ua->reach[p] = 1ULL << ua->a->home;
	for (d = 0; d < gpsu_user.ndev; d++) {
		ret = gpsu_fault_add(ua->a->views[d], ua->len,
				     gpsu_user_um_fault, ua, d);
		if (ret)
			return ret;
		if (d != ua->a->home &&
		    mprotect(ua->a->views[d], ua->len, PROT_NONE))
			return errno;
	}
	return 0;
}
