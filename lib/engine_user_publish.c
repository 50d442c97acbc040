// SPDX-License-Identifier: MIT
/*
 * The native engine's publication (engine_user_state.h): a harvest asks
 * PAGEMAP_SCAN for the pages written through a device's views, diffs
 * each against its twin and queues or pushes what changed; a fence is a
 * harvest (helped by the device's helpers: engine_user_help.c), its
 * queue drained and the link model's wait; a push thread's round is a
 * harvest while the kernels run; a settle publishes a GPS page for a
 * change of subscription; a reshape drains and lays out the queues.
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

/* ---- harvest and push ----------------------------------------------- */

/*
 * The queue's push (gps_qpush_t): the span's masked bytes from the
 * source replica's twin (what its diffs read, and what it received
 * since) into every other subscriber's replica and its twin (the page's
 * subscribers cannot change meanwhile: allocs_lock), under the page's
 * lock: every byte
 * sent is then the same in the receivers and in the source's twin, so
 * racing stores converge whichever push comes last, and a store made
 * after the diff waits for the next one instead of being sent in part.
 */
static void gpsu_user_push(void *ctx, const struct gps_qspan *span)
{
	struct gpsu_harvest *h = ctx;
	const struct gpsu_user_alloc *ua = span->owner;
	size_t npp = ua->len / PAGE_SIZE;
	int src = (int)(span->page / npp);
	size_t page = (size_t)(span->page % npp);
	size_t at = page * PAGE_SIZE;
	uint64_t subs = ua->subs[at / ua->ps];
	unsigned int lo = span->lo, n = span->hi - span->lo;
	const unsigned long *mask = span->mask + lo / BITS_PER_LONG;
	pthread_mutex_t *l = gpsu_user_plock(ua, page);
	const u8 *from = (const u8 *)ua->twin + (size_t)src * ua->len +
			 at + lo;
	/* every receiver's page (its view may store) and twin, in one pass */
	struct gps_bytes_dst dst[2 * GPSU_MAX_DEVICES];
	unsigned int nbytes = 0, w, k = 0;
	int r;

	/* what is written, as the driver counts: the masked bytes */
	for (w = 0; w < n / BITS_PER_LONG; w++)
		nbytes += (unsigned int)__builtin_popcountl(mask[w]);
	for (r = 0; r < ua->nrep; r++) {
		if (r == src || !(subs & (1ULL << r)))
			continue;
		dst[k++] = (struct gps_bytes_dst){
			(u8 *)ua->back + (size_t)r * ua->len + at + lo,
			GPS_BYTES_APPLY,
		};
		dst[k++] = (struct gps_bytes_dst){
			(u8 *)ua->twin + (size_t)r * ua->len + at + lo,
			GPS_BYTES_BLEND,
		};
	}
	pthread_mutex_lock(l);
	if (gpsu_user.push_delay_us)
		usleep(gpsu_user.push_delay_us);
	gps_bytes_push(dst, k, from, mask, n);
	pthread_mutex_unlock(l);
	h->bytes += (u64)nbytes * (k / 2);
	h->blocks += (u64)span->blocks * (k / 2);
	if (span->early)
		h->early += (u64)span->blocks * (k / 2);
}

/*
 * Small page @page of @ua, written through view @view: diffed, and what
 * changed queued, or pushed at once (@direct: a helped fence's; or a
 * page with bulk_blocks changed blocks or more, as the driver's bulk
 * path, counted as blocks_bulk).
 */
static void gpsu_user_diff_one(struct gpsu_harvest *h,
			       struct gpsu_user_alloc *ua, int view,
			       size_t page, bool direct)
{
	unsigned int bulk = (unsigned int)gpsu_user_knob(GPSU_K(bulk_blocks));
	int r = *gpsu_user_mapp(ua, view, page * PAGE_SIZE / ua->ps);
	size_t at = (size_t)r * ua->len + page * PAGE_SIZE;
	pthread_mutex_t *l = gpsu_user_plock(ua, page);
	struct gps_qspan span = {
		.owner = ua, .page = gpsu_user_qpage(ua, r, page),
		.mask = h->df.mask, .lo = 0, .hi = PAGE_SIZE,
	};
	unsigned int n;

	pthread_mutex_lock(l);
	n = gps_diff_page(&h->df, ua->back + at, ua->twin + at,
			  gpsu_user.dev[h->dev].block_size, true);
	pthread_mutex_unlock(l);
	if (!n)
		return;
	h->changed++;
	span.blocks = n;
	if (direct || (bulk && n >= bulk)) {
		gpsu_user_push(h, &span);
		h->bulk += n;
		return;
	}
	if (!gps_queue_add(&gpsu_user.dev[h->dev].q, ua, span.page,
			   h->df.mask, h->df.blocks, h->now, gpsu_user_push, h,
			   &h->qst)) {
		/* refused (a broken push): past the queue, or it is lost */
		span.early = true;
		gpsu_user_push(h, &span);
	}
}

/*
 * A written page of the harvested view (gpsu_capture_harvest()'s
 * callback): diffed now, or, in a fence's scan, listed for the fence
 * and its helpers (kept inline where the list cannot grow).
 */
static void gpsu_user_page(void *ctx, size_t page)
{
	struct gpsu_harvest *h = ctx;
	struct gpsu_user_dev *dev = &gpsu_user.dev[h->dev];
	unsigned long *kw, kb;

	page += h->page0;
	/* a page kept writable is found again: no new write fault */
	kw = gpsu_user_kept_word(h->ua, h->view, page, &kb);
	if (*kw & kb)
		h->rediffed++;
	else
		h->written++;
	if (h->keeping) {
		*kw |= kb;
	} else {
		size_t r = ((uintptr_t)gpsu_user_view(h->ua, h->view) +
			    page * PAGE_SIZE) >> 21;

		*kw &= ~kb;
		h->protected++;
		h->ranges += r != h->last_range;
		h->last_range = r;
	}
	if (h->collect && dev->nitems == dev->cap) {
		size_t cap = dev->cap ? 2 * dev->cap : 256;
		struct gpsu_user_item *v = realloc(dev->items,
						   cap * sizeof(*v));

		if (v) {
			dev->items = v;
			dev->cap = cap;
		}
	}
	if (h->collect && dev->nitems < dev->cap) {
		dev->items[dev->nitems++] = (struct gpsu_user_item){
			.ua = h->ua, .view = h->view, .page = page,
		};
		return;
	}
	gpsu_user_diff_one(h, h->ua, h->view, page, false);
}

/*
 * Pages kept writable. Protecting a written page again flushes the TLB
 * of every CPU that runs the process (PAGEMAP_SCAN flushes once per
 * 2 MiB with pages it protected): 27 us on the 2-core machine, 67 us at
 * 4 devices and 178 us at 16 on the 16-core kind (bench/phase), where a
 * diff of a page costs about 0.5. So where a run of a view has few
 * written pages, a harvest diffs them and leaves them writable; each
 * later harvest finds them written again (PAGEMAP_SCAN reports them
 * until they are protected) and diffs them again, so every store is
 * still found, and a store racing the diff waits for the next harvest
 * as it does on a protected page. A harvest keeps at most keep_budget
 * pages (gpsu_user_keep_budget(): as many as one protection costs in
 * diffs), the kept ones among them. A run with more written pages is
 * protected whole, kept pages too (and the view's next
 * GPSU_KEEP_UNPEEKED harvests protect without peeking, so that a dense
 * writer does not pay two walks a harvest), and every run of a view whose
 * harvests have diffed keep_budget kept pages again since its runs were
 * last all protected (rent paid up to the price: a page kept but no
 * longer written is diffed blind at most that long, and a page written
 * every phase costs one protection per keep_budget pages diffed again,
 * not one per harvest).
 */
static size_t gpsu_user_keep_budget(void)
{
	uint64_t c;

	if (gpsu_user.keep_pages >= 0)
		return (size_t)gpsu_user.keep_pages;
	c = __atomic_load_n(&gpsu_user.protect_call_ns, __ATOMIC_RELAXED);
	if (!c)
		return GPSU_KEEP_START;
	c /= GPSU_KEEP_DIFF_NS;
	return c < GPSU_KEEP_MAX ? (size_t)c : GPSU_KEEP_MAX;
}

/*
 * *@avg averaged with @sample, each sample weighed 1/8 and, with @first
 * for the first, at most 4 times the average (0: any, the first taken
 * whole), so that one scan slowed by preemption does not set a budget.
 */
static void gpsu_user_average(uint64_t *avg, uint64_t sample, uint64_t first)
{
	uint64_t c = __atomic_load_n(avg, __ATOMIC_RELAXED);

	if (!c && !first) {
		__atomic_store_n(avg, sample ? sample : 1, __ATOMIC_RELAXED);
		return;
	}
	if (!c)
		c = first;
	if (sample > 4 * c)
		sample = 4 * c;
	__atomic_store_n(avg, (7 * c + sample) / 8, __ATOMIC_RELAXED);
}

/*
 * What one protection of a 2 MiB range cost: a protecting scan's ioctl
 * time (@ns) over a run of @bytes, net of what walking the run costs (a
 * peek's, per MiB), per range it protected pages in; averaged from the
 * starting guess.
 */
static void gpsu_user_protect_cost(uint64_t ns, size_t bytes, size_t ranges)
{
	uint64_t walk = __atomic_load_n(&gpsu_user.walk_ns_mib,
					__ATOMIC_RELAXED);

	walk = (uint64_t)((double)walk * bytes / (1 << 20));
	ns = ns > walk ? ns - walk : 0;
	gpsu_user_average(&gpsu_user.protect_call_ns, ns / (ranges ? ranges : 1),
			  (uint64_t)GPSU_KEEP_START * GPSU_KEEP_DIFF_NS);
}

/*
 * The run [@g, @e) of GPS pages of the harvested view, if it has at most
 * h->keep_left written pages: diffed, left writable. False: it has
 * more (or the scan failed), and is to be protected.
 */
static bool gpsu_user_harvest_kept(struct gpsu_harvest *h, char *view,
				   size_t g, size_t e)
{
	struct gpsu_user_alloc *ua = h->ua;
	size_t *peek = gpsu_user.dev[h->dev].peek;
	uint64_t t0 = gpsu_user_now(), ns;
	size_t n, i, walked = 0;
	int ret;

	ret = gpsu_capture_peek(view + g * ua->ps, (e - g) * ua->ps,
				h->keep_left + 1, peek, &n, &walked);
	ns = gpsu_user_now() - t0;
	h->scan_ns += ns;
	/* what a walk costs, that a protecting scan's time is net of */
	if (!ret && walked >= (64 << 10))
		gpsu_user_average(&gpsu_user.walk_ns_mib,
				  (uint64_t)((double)ns * (1 << 20) / walked),
				  0);
	if (ret || n > h->keep_left) {
		ua->unpeeked[h->view] = GPSU_KEEP_UNPEEKED;
		return false;
	}
	h->keep_left -= n;
	h->keeping = true;
	for (i = 0; i < n; i++)
		gpsu_user_page(h, peek[i]);
	h->keeping = false;
	return true;
}

/*
 * Harvests view @view of h->ua: the runs of GPS pages that have more
 * than one subscriber. A page with one has no one to publish to: its
 * stores are not diffed and its small pages, once written, stay
 * writable (no write fault each epoch). Its twin is then behind, and a
 * subscription change settles the page (every small page diffed) before
 * it gains a subscriber; where it gains one outside a harvest, its
 * written pages are still unprotected, so the next harvest finds them.
 * A run with few written pages keeps them writable (above).
 */
static int gpsu_user_harvest(struct gpsu_harvest *h, char *view,
			     uint64_t *scans)
{
	struct gpsu_user_alloc *ua = h->ua;
	/* rent paid up: every run protected, kept pages with the rest */
	bool paid = ua->rent[h->view] >= h->keep_budget;
	/* a peek found too many lately: protect without one for a while */
	bool unpeeked = ua->unpeeked[h->view] > 0;
	size_t g = 0, e;
	int ret = 0;

	while (!ret && g < ua->ngp) {
		uint64_t found, t0;

		for (; g < ua->ngp && !(ua->subs[g] & (ua->subs[g] - 1)); g++)
			;
		for (e = g; e < ua->ngp && (ua->subs[e] & (ua->subs[e] - 1));
		     e++)
			;
		if (e == g)
			break;
		h->page0 = g * ua->ps / PAGE_SIZE;
		(*scans)++;
		if (!paid && !unpeeked && h->keep_left) {
			uint64_t again = h->rediffed;

			if (gpsu_user_harvest_kept(h, view, g, e)) {
				ua->rent[h->view] += h->rediffed - again;
				g = e;
				continue;
			}
		}
		found = h->written + h->rediffed;
		h->ranges = 0;
		h->last_range = SIZE_MAX;
		t0 = h->scan_ns;
		ret = gpsu_capture_harvest(view + g * ua->ps, (e - g) * ua->ps,
					   gpsu_user_page, h, &h->scan_ns);
		if (!ret && h->written + h->rediffed > found)
			gpsu_user_protect_cost(h->scan_ns - t0,
					       (e - g) * ua->ps, h->ranges);
		g = e;
	}
	if (paid && !ret)
		ua->rent[h->view] = 0;
	if (unpeeked)
		ua->unpeeked[h->view]--;
	return ret;
}

/*
 * Harvests device @d into its queue: its views (@own), the host views of
 * the allocations it is the home of (@host); *@host_written: the pages
 * found through those. dev->lock and allocs_lock (for reading) held.
 */
static int gpsu_user_collect(int d, bool own, bool host,
			     struct gpsu_harvest *h, uint64_t *host_written,
			     uint64_t *scans)
{
	struct gpsu_user_alloc *ua;
	int ret = 0;

	h->keep_budget = gpsu_user_keep_budget();
	h->keep_left = h->keep_budget;
	for (ua = gpsu_user.allocs; ua && !ret; ua = ua->next) {
		h->ua = ua;
		if (own) {
			h->view = d;
			ret = gpsu_user_harvest(h, ua->a->views[d], scans);
		}
		if (!ret && host && ua->a->home == d) {
			uint64_t before = h->written;

			h->view = gpsu_user.ndev;
			ret = gpsu_user_harvest(h, ua->a->host, scans);
			*host_written += h->written - before;
		}
	}
	return ret;
}

/* What a harvest and its pushes did, on device @d and the engine's. */
static void gpsu_user_account(int d, const struct gpsu_harvest *h,
			      uint64_t host_written, uint64_t scans)
{
	gpsu_user_count(d, GPSU_S(write_faults), h->written - host_written);
	gpsu_user_count(d, GPSU_S(host_write_faults), host_written);
	gpsu_user_count(d, GPSU_S(pages_harvested), h->written + h->rediffed);
	gpsu_user_count(d, GPSU_S(blocks_queued), h->qst.queued);
	gpsu_user_count(d, GPSU_S(blocks_merged), h->qst.merged);
	gpsu_user_count(d, GPSU_S(blocks_pushed), h->blocks);
	gpsu_user_count(d, GPSU_S(blocks_pushed_early), h->early);
	gpsu_user_count(d, GPSU_S(bytes_pushed), h->bytes);
	gpsu_user_count(d, GPSU_S(protect_ns), h->scan_ns);
	gpsu_user_count(d, GPSU_S(blocks_bulk), h->bulk);
	gpsu_user_count(d, GPSU_S(pages_helped), h->helped);
	gpsu_user_count_max(d, GPSU_S(queue_hwm), h->qst.held);

	GPSU_STAT_ADD(scans, scans);
	GPSU_STAT_ADD(pages_written, h->written);
	GPSU_STAT_ADD(pages_rediffed, h->rediffed);
	GPSU_STAT_ADD(pages_protected, h->protected);
	GPSU_STAT_ADD(pages_changed, h->changed);
	GPSU_STAT_ADD(blocks_queued, h->qst.queued);
	GPSU_STAT_ADD(blocks_merged, h->qst.merged);
	GPSU_STAT_ADD(blocks_pushed, h->blocks);
	GPSU_STAT_ADD(bytes_pushed, h->bytes);
}

/* @h as new for device @d: all but its diff's scratch zeroed. */
static void gpsu_user_harvest_reset(struct gpsu_harvest *h, int d)
{
	memset(h, 0, offsetof(struct gpsu_harvest, df));
	h->dev = d;
}

static struct gpsu_harvest *gpsu_user_harvest_new(int d)
{
	struct gpsu_harvest *h = malloc(sizeof(*h));

	if (h)
		gpsu_user_harvest_reset(h, d);
	return h;
}

/* What the workers of a helped batch share. */
struct gpsu_user_batch {
	struct gpsu_user_dev *dev;
	bool direct;			/* helped: every page past the queue */
};

static void gpsu_user_help_page(void *ctx, int worker, size_t i)
{
	struct gpsu_user_batch *b = ctx;
	const struct gpsu_user_item *it = &b->dev->items[i];
	struct gpsu_harvest *h = b->dev->hs[worker];

	gpsu_user_diff_one(h, it->ua, it->view, it->page, b->direct);
	if (worker)
		h->helped++;
}

/*
 * The pages a fence of device @d listed (dev->items), diffed and pushed
 * by @h's caller and, where fence_threads and the batch allow, by the
 * device's helpers side by side (the driver's fence helpers: then every
 * changed page goes past the queue, which is the lock holder's; none
 * with bulk_blocks 0, the paper's queue for every block). Their counts
 * go into @h. dev->lock held.
 */
static void gpsu_user_help_batch(int d, struct gpsu_harvest *h)
{
	struct gpsu_user_dev *dev = &gpsu_user.dev[d];
	unsigned int ft = (unsigned int)gpsu_user_knob(GPSU_K(fence_threads));
	struct gpsu_user_batch b = { .dev = dev };
	int helpers = (int)(ft ? ft : (unsigned int)dev->ncpus) - 1, w, n;

	if (!gpsu_user_knob(GPSU_K(bulk_blocks)) ||
	    dev->nitems < GPSU_USER_HELP_MIN)
		helpers = 0;
	if (helpers > GPSU_HELP_MAX)
		helpers = GPSU_HELP_MAX;
	for (w = 1; w <= helpers; w++) {
		if (!dev->hs[w])
			dev->hs[w] = malloc(sizeof(*dev->hs[w]));
		if (!dev->hs[w])
			break;
		gpsu_user_harvest_reset(dev->hs[w], d);
		dev->hs[w]->now = h->now;
	}
	helpers = w - 1;
	b.direct = helpers > 0;
	dev->hs[0] = h;
	n = gpsu_user_help_run(d, helpers, gpsu_user_help_page, &b,
			       dev->nitems);
	for (w = 1; w <= n; w++) {
		const struct gpsu_harvest *x = dev->hs[w];

		h->changed += x->changed;
		h->bytes += x->bytes;
		h->blocks += x->blocks;
		h->bulk += x->bulk;
		h->helped += x->helped;
	}
	dev->hs[0] = NULL;
	dev->nitems = 0;
}

/*
 * Harvests device @d (its views, and with @host the host views of the
 * allocations it is the home of; @own false: those alone), then drains
 * its queue; *@until: when the link model lets the fence end. The
 * caller holds gpsu_user.allocs_lock for reading.
 */
static int gpsu_user_fence_dev(int d, bool own, bool host, uint64_t *until)
{
	struct gpsu_user_dev *dev = &gpsu_user.dev[d];
	struct gpsu_harvest *h = gpsu_user_harvest_new(d);
	uint64_t scans = 0, host_written = 0, t0, t1, busy;
	int ret;

	if (!h)
		return ENOMEM;
	pthread_mutex_lock(&dev->lock);
	h->now = gpsu_user_now();
	h->collect = true;
	ret = gpsu_user_collect(d, own, host, h, &host_written, &scans);
	h->collect = false;
	gpsu_user_help_batch(d, h);
	t0 = gpsu_user_now();
	while (gps_queue_push_oldest(&dev->q, ~0U, h->now, 0, false,
				     gpsu_user_push, h))
		;
	__atomic_store_n(&dev->link_busy,
			 gps_link_busy_until(dev->link_busy, h->now, h->bytes,
					     gpsu_user_knob(GPSU_K(link_bandwidth))),
			 __ATOMIC_RELAXED);
	/*
	 * A visit for the host views alone waits for the link only if it
	 * sent something: else a release would wait for the tail of
	 * another device's pushes (its thread's rounds), which it did not
	 * fence (the driver's host fence: the host's dirty owners).
	 */
	*until = own || h->bytes ?
		 gps_link_fence_end(dev->link_busy, h->now,
				    gpsu_user_knob(GPSU_K(link_latency_ns))) :
		 0;
	busy = *until ? dev->link_busy : 0;
	pthread_mutex_unlock(&dev->lock);
	t1 = gpsu_user_now();
	/* the link's time compute did not hide: owed as the fence ends */
	if (busy > t1)
		gpsu_user_count(d, GPSU_S(link_exposed_ns), busy - t1);
	gpsu_user_account(d, h, host_written, scans);
	gpsu_user_count(d, own ? GPSU_S(fences) : GPSU_S(host_fences), 1);
	if (own && host)
		gpsu_user_count(d, GPSU_S(host_fences), 1);
	gpsu_user_count(d, GPSU_S(harvest_ns), t0 - h->now);
	gpsu_user_count(d, GPSU_S(fence_ns), t1 - h->now);
	gpsu_user_count(d, GPSU_S(link_wait_ns), *until > t1 ? *until - t1 : 0);
	GPSU_STAT_ADD(fences, 1);
	free(h);
	return ret;
}

/*
 * A push thread's round on device @d (engine_user_thread.c), while its
 * kernels run: its views harvested, its queue drained, the link charged
 * with what that carried, so that a fence is left the tail. The queue
 * is drained, not left its young entries as the driver's thread leaves
 * them: outside a fence or a round every queue is empty, which a change
 * of subscriptions relies on (its settle finds a store in a replica or
 * nowhere; a dropped replica has nothing queued). It gives up the round
 * where a fence or a change holds what it needs (the next round comes
 * soon). The host views are the host fence's. Returns when the link
 * frees: a round before that would charge its bytes behind the backlog
 * no sooner than one then, and split stores that one would take whole.
 */
uint64_t gpsu_user_round(int d)
{
	struct gpsu_user_dev *dev = &gpsu_user.dev[d];
	struct gpsu_harvest *h;
	uint64_t scans = 0, host_written = 0, t0, busy;

	/* given up, the round keeps the link's end: no round into it */
	if (pthread_rwlock_tryrdlock(&gpsu_user.allocs_lock))
		return gpsu_user_link_end(d);
	if (pthread_mutex_trylock(&dev->lock)) {
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
		return gpsu_user_link_end(d);
	}
	h = gpsu_user_harvest_new(d);
	if (!h)
		goto out;
	h->now = gpsu_user_now();
	t0 = h->now;
	(void)gpsu_user_collect(d, true, false, h, &host_written, &scans);
	gpsu_user_count(d, GPSU_S(harvest_ns), gpsu_user_now() - t0);
	while (gps_queue_push_oldest(&dev->q, ~0U, h->now, 0, true,
				     gpsu_user_push, h))
		;
	__atomic_store_n(&dev->link_busy,
			 gps_link_busy_until(dev->link_busy, t0, h->bytes,
					     gpsu_user_knob(GPSU_K(link_bandwidth))),
			 __ATOMIC_RELAXED);
	gpsu_user_account(d, h, host_written, scans);
	gpsu_user_count(d, GPSU_S(thread_rounds), 1);
	GPSU_STAT_ADD(rounds, 1);
	free(h);
out:
	busy = dev->link_busy;
	pthread_mutex_unlock(&dev->lock);
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	return busy;
}

/* Sleeps until @until (ns, CLOCK_MONOTONIC), no lock held. */
static void gpsu_user_link_sleep(uint64_t until)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until / GPS_NS_PER_SEC),
		.tv_nsec = (long)(until % GPS_NS_PER_SEC),
	};

	if (until <= gpsu_user_now())
		return;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
			       NULL) == EINTR)
		;
}

int gpsu_user_fence_mask(uint64_t mask, bool host)
{
	uint64_t until = 0, t;
	int d, ret = 0, e;

	if (gpsu_user.ndev < 64)
		mask &= (1ULL << gpsu_user.ndev) - 1;
	if (!mask && !host)
		return 0;
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (d = 0; d < gpsu_user.ndev; d++) {
		bool own = mask & (1ULL << d);

		if (!own && !host)
			continue;
		t = 0;
		e = gpsu_user_fence_dev(d, own, host, &t);
		if (e && !ret)
			ret = e;
		if (t > until)
			until = t;
	}
	/*
	 * Another device's fence or push thread's round may have diffed a
	 * store of ours (a view of either that maps the other's replica: a
	 * non-subscriber's, a host view) and still be pushing it, so ours
	 * found the page unchanged: wait for every one under way to drain
	 * (each drains its queue before it lets go of its device's lock).
	 * Every device, those visited above too: a round may have begun on
	 * one after our visit and before our harvest of the page.
	 */
	for (d = 0; d < gpsu_user.ndev; d++) {
		pthread_mutex_lock(&gpsu_user.dev[d].lock);
		pthread_mutex_unlock(&gpsu_user.dev[d].lock);
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	/* the links carry a release of several devices at once */
	gpsu_user_link_sleep(until);
	return ret;
}

/* When device @d's link frees, as it stands (no lock: a push thread's). */
uint64_t gpsu_user_link_end(int d)
{
	return __atomic_load_n(&gpsu_user.dev[d].link_busy, __ATOMIC_RELAXED);
}

void gpsu_user_link_reset(void)
{
	int d;

	for (d = 0; d < gpsu_user.ndev; d++) {
		pthread_mutex_lock(&gpsu_user.dev[d].lock);
		__atomic_store_n(&gpsu_user.dev[d].link_busy, 0,
				 __ATOMIC_RELAXED);
		pthread_mutex_unlock(&gpsu_user.dev[d].lock);
	}
}

/* A stream's ring: its fences on a thread of their own. */
struct gpsu_engine_ring *gpsu_user_ring_start(void)
{
	return gpsu_user_ring_new(gpsu_user_fence_mask);
}

/* -1: every device and the host views, as the driver's GPS_FENCE_ALL. */
int gpsu_user_fence(int device)
{
	if (device < 0)
		return gpsu_user_fence_mask(~0ULL, true);
	if (device >= gpsu_user.ndev)
		return EINVAL;
	return gpsu_user_fence_mask(1ULL << device, false);
}

/*
 * Publishes every change in GPS page @g of the replicas of @mask: each
 * small page diffed against its twin, what changed pushed to the page's
 * other subscribers at once. The stores of every view that maps those
 * replicas, whether or not capture saw them, so nothing pending is left
 * when replicas are added or dropped (the driver's gps_quiesce); @h is
 * scratch. With @wr, a page no view wrote since a harvest protected it
 * is passed over: it holds what its twin holds (pushes write both).
 * allocs_lock held for writing.
 */
void gpsu_user_settle(struct gpsu_user_alloc *ua, size_t g,
		      uint64_t mask, struct gpsu_harvest *h,
		      const struct gpsu_written *wr)
{
	size_t p, first = g * ua->ps / PAGE_SIZE;
	size_t last = first + ua->ps / PAGE_SIZE;
	unsigned int n;
	int r;

	gpsu_user_harvest_reset(h, 0);
	h->ua = ua;
	for (r = 0; r < ua->nrep; r++) {
		uint64_t blocks = h->blocks, bytes = h->bytes;

		if (!(mask & (1ULL << r)))
			continue;
		for (p = first; p < last; p++) {
			size_t at = (size_t)r * ua->len + p * PAGE_SIZE;
			pthread_mutex_t *l = gpsu_user_plock(ua, p);
			struct gps_qspan span = {
				.owner = ua, .page = gpsu_user_qpage(ua, r, p),
				.mask = h->df.mask, .lo = 0, .hi = PAGE_SIZE,
				.early = true,
			};
			size_t b = wr ? (size_t)r * wr->np + (p - wr->p0) : 0;

			if (wr && !(wr->bits[b / BITS_PER_LONG] &
				    (1UL << (b % BITS_PER_LONG))))
				continue;
			pthread_mutex_lock(l);
			n = gps_diff_page(&h->df, ua->back + at, ua->twin + at,
					  gpsu_user.dev[r].block_size, true);
			pthread_mutex_unlock(l);
			if (!n)
				continue;
			h->changed++;
			span.blocks = n;
			gpsu_user_push(h, &span);
		}
		/* the driver's names: what replica r's device pushed */
		gpsu_user_count(r, GPSU_S(blocks_pushed), h->blocks - blocks);
		gpsu_user_count(r, GPSU_S(blocks_pushed_early),
				h->blocks - blocks);
		gpsu_user_count(r, GPSU_S(bytes_pushed), h->bytes - bytes);
	}
	GPSU_STAT_ADD(pages_changed, h->changed);
	GPSU_STAT_ADD(blocks_pushed, h->blocks);
	GPSU_STAT_ADD(bytes_pushed, h->bytes);
}

int gpsu_user_queues_reconfigure(unsigned int capacity,
				 unsigned int watermark,
				 unsigned int block_size)
{
	void *mem[GPSU_MAX_DEVICES] = { NULL };
	struct gpsu_harvest *h = malloc(sizeof(*h));
	int d, ret = h ? 0 : ENOMEM;

	for (d = 0; d < gpsu_user.ndev; d++) {
		mem[d] = calloc(1, gps_queue_bytes(capacity));
		if (!mem[d])
			ret = ENOMEM;
	}
	/* each queue drained, then laid out anew, under its device's lock */
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (d = 0; !ret && d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];
		void *old;

		gpsu_user_harvest_reset(h, d);
		pthread_mutex_lock(&dev->lock);
		h->now = gpsu_user_now();
		while (gps_queue_push_oldest(&dev->q, ~0U, h->now, 0, false,
					     gpsu_user_push, h))
			;
		old = dev->qmem;
		dev->qmem = mem[d];
		mem[d] = old;
		dev->block_size = block_size;
		gps_queue_init(&dev->q, dev->qmem, capacity, watermark,
			       block_size);
		pthread_mutex_unlock(&dev->lock);
		gpsu_user_count(d, GPSU_S(blocks_pushed), h->blocks);
		gpsu_user_count(d, GPSU_S(bytes_pushed), h->bytes);
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	for (d = 0; d < gpsu_user.ndev; d++)
		free(mem[d]);
	free(h);
	return ret;
}
