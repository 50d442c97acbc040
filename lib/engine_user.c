// SPDX-License-Identifier: MIT
/*
 * The native engine ("user"): the GPS model in user space, no driver.
 *
 * Devices: the machine's NUMA nodes, or, on a machine with one node (or
 * with $GPSU_DEVICES set), $GPSU_DEVICES devices (4 by default) sharing
 * the nodes' CPUs, each device a share of them (context.c pins).
 *
 * Memory: an allocation is one memfd holding a region per device (a
 * replica; one region for conventional and managed memory). Each
 * device's view is a MAP_SHARED mapping of its replica, the host view a
 * second mapping of the home's; the engine keeps a mapping of every
 * region of its own (the back mapping, never handed out) through which
 * pushes, copies and diffs read and write. GPS views are armed for
 * capture (engine_user_capture.c): the kernel marks a page written at
 * its first store after a harvest, without calling us.
 *
 * Publication: asynchronous write-protect gives no chance to copy a page
 * before its first store, so each replica page has a twin, the contents
 * last published or received. A harvest of device d asks PAGEMAP_SCAN
 * for the pages written through its view (and through the host view of
 * the allocations it is the home of), protecting them again; each one is
 * diffed against its twin (core gps_diff_page, the twin updated), and
 * its changed blocks go into d's coalescing queue (core gps_queue_add),
 * whose policy pushes them when it must: a push writes the masked bytes
 * into every other replica (core gps_bytes_apply: never a torn word, a
 * receiver's own stores to the other bytes kept) and into its twin
 * (gps_bytes_blend), so that the receiver never publishes them as its
 * own. A fence of d is a harvest of d, then its queue drained, then the
 * wait the link model (core gps_linkmodel.h) asks for.
 *
 * Not yet (each fails with ENOTSUP, gpsErrorNotSupported, or is said so
 * in Documentation/engines.rst): every device subscribes to every page
 * (manual allocations too; unsubscribe, collapse and tracking are
 * refused); no push thread (a queue leaves at a fence or above its
 * watermark); asynchronous fences are synchronous; managed memory on
 * fault is one shared copy, never moved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "engine_user.h"

/* the pure core, after the library's headers: it defines min/max */
#include "gps_bytes.h"
#include "gps_diff.h"
#include "gps_linkmodel.h"
#include "gps_queue.h"

#define GPSU_USER_DEVICES	4	/* on a machine with one node */
#define GPSU_USER_STRIPES	64	/* page locks of an allocation */

struct gpsu_user_dev {
	pthread_mutex_t lock;		/* harvest and queue (engine_user.h) */
	struct gps_queue q;
	void *qmem;
	unsigned int block_size;	/* of the queue's blocks and diffs */
	int node;
	int share, shares;
	uint64_t link_busy;		/* link busy until (ns), under lock */
};

/* One allocation's engine state (struct gpsu_alloc.engine). */
struct gpsu_user_alloc {
	struct gpsu_alloc *a;
	struct gpsu_user_alloc *next;	/* gpsu_user.allocs */
	int memfd;
	int nrep;			/* replicas: ndev (GPS), else 1 */
	size_t len;			/* bytes of a replica (map_size) */
	char *back;			/* every replica, nrep * len */
	char *twin;			/* GPS: a twin per replica */
	/*
	 * Small page p of every replica and twin: its diff, the pushes and
	 * copies into it, under plock[p % GPSU_USER_STRIPES] (the driver's
	 * GPS page lock): a push sends what the source's twin holds, the
	 * words its diff read and the bytes received since, so racing
	 * stores converge and no word is sent mixed from two stores.
	 */
	pthread_mutex_t plock[GPSU_USER_STRIPES];
};

static struct {
	int ndev;
	unsigned int push_delay_us;	/* $GPSU_TEST_PUSH_DELAY_US: tests */
	struct gpsu_user_dev dev[GPSU_MAX_DEVICES];
	pthread_rwlock_t allocs_lock;
	struct gpsu_user_alloc *allocs;	/* GPS allocations */
	struct gpsu_user_stats st;	/* atomic adds */
} gpsu_user = {
	/* fences hold it to read: allocations must not wait behind them */
	.allocs_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
};

#define GPSU_STAT_ADD(field, n)						\
	__atomic_fetch_add(&gpsu_user.st.field, (n), __ATOMIC_RELAXED)

void gpsu_user_stats(struct gpsu_user_stats *st)
{
	const uint64_t *from = (const uint64_t *)&gpsu_user.st;
	uint64_t *to = (uint64_t *)st;
	size_t i;

	/* every field a uint64_t counter (engine_user.h), each read alone */
	_Static_assert(sizeof(*st) % sizeof(uint64_t) == 0, "counters only");
	for (i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}

static uint64_t gpsu_user_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * GPS_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A number from the environment, @def when unset or not a number. */
static unsigned long long gpsu_user_env(const char *name,
					unsigned long long def)
{
	const char *v = getenv(name);
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return def;
	n = strtoull(v, &end, 0);
	return *end ? def : n;
}

/* GPSU_DEBUG: say why the native engine could not be set up. */
static bool gpsu_user_debug(void)
{
	const char *d = getenv("GPSU_DEBUG");

	return d && *d && *d != '0';
}

/* ---- set-up --------------------------------------------------------- */

static void gpsu_user_close(void);

/* The devices: nodes, or shares of them; 0 or an errno. */
static int gpsu_user_devices(void)
{
	int nodes[GPSU_MAX_DEVICES], nnodes = 0, n, d, max;
	unsigned long long want = gpsu_user_env("GPSU_DEVICES", 0);

	if (numa_available() >= 0) {
		max = numa_max_node();
		for (n = 0; n <= max && nnodes < GPSU_MAX_DEVICES; n++)
			if (numa_bitmask_isbitset(numa_nodes_ptr, n))
				nodes[nnodes++] = n;
	}
	if (!nnodes)
		nodes[nnodes++] = 0;
	if (!want)
		want = nnodes > 1 ? (unsigned long long)nnodes :
				    GPSU_USER_DEVICES;
	if (want > GPSU_MAX_DEVICES)
		return EINVAL;
	gpsu_user.ndev = (int)want;
	for (d = 0; d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];

		dev->node = nodes[d % nnodes];
		dev->share = d / nnodes;
		dev->shares = (gpsu_user.ndev + nnodes - 1) / nnodes;
	}
	return 0;
}

static gpsError_t gpsu_user_open(struct gpsu_engine_info *info)
{
	const char *why = NULL;
	unsigned int cap, block;
	int d, ret;

	ret = gpsu_capture_open(&why);
	if (ret) {
		if (gpsu_user_debug() || getenv("GPSU_ENGINE"))
			fprintf(stderr,
				"libgpsu: native engine: this kernel lacks %s (%s)\n",
				why ? why : "write capture", strerror(ret));
		return gpsErrorNotSupported;
	}
	if (gpsu_user_devices()) {
		fprintf(stderr,
			"libgpsu: native engine: GPSU_DEVICES=%s: 1 to %d\n",
			getenv("GPSU_DEVICES"), GPSU_MAX_DEVICES);
		gpsu_capture_close();
		return gpsErrorInitializationError;
	}
	/* the driver's knobs: defaults, $GPSU_KNOB_<name> */
	if (gpsu_user_knobs_init(gpsu_user.ndev)) {
		gpsu_capture_close();
		return gpsErrorInitializationError;
	}
	/* holds a push in its page's lock: tests widen race windows */
	gpsu_user.push_delay_us = (unsigned int)
		gpsu_user_env("GPSU_TEST_PUSH_DELAY_US", 0);
	cap = (unsigned int)gpsu_user_knob(GPSU_K(queue_capacity));
	block = (unsigned int)gpsu_user_knob(GPSU_K(block_size));
	for (d = 0; d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];

		pthread_mutex_init(&dev->lock, NULL);
		dev->qmem = calloc(1, gps_queue_bytes(cap));
		if (!dev->qmem) {
			gpsu_user.ndev = d + 1;
			gpsu_user_close();
			return gpsErrorMemoryAllocation;
		}
		dev->block_size = block;
		gps_queue_init(&dev->q, dev->qmem, cap,
			       (unsigned int)gpsu_user_knob(GPSU_K(queue_watermark)),
			       block);
	}
	memset(&gpsu_user.st, 0, sizeof(gpsu_user.st));
	info->ndev = gpsu_user.ndev;
	info->page_size = (unsigned int)gpsu_user_knob(GPSU_K(page_size));
	info->block_size = block;
	info->abi_version = 0;
	gpsu_user_publish_start();
	return gpsSuccess;
}

static void gpsu_user_close(void)
{
	int d;

	gpsu_user_publish_stop();
	for (d = 0; d < gpsu_user.ndev; d++) {
		free(gpsu_user.dev[d].qmem);
		gpsu_user.dev[d].qmem = NULL;
		pthread_mutex_destroy(&gpsu_user.dev[d].lock);
	}
	gpsu_user.ndev = 0;
	gpsu_capture_close();
}

static int gpsu_user_device_info(int device, struct gpsu_engine_dev *info)
{
	const struct gpsu_user_dev *dev;
	long long avail = 0;

	if (device < 0 || device >= gpsu_user.ndev)
		return EINVAL;
	dev = &gpsu_user.dev[device];
	memset(info, 0, sizeof(*info));
	info->node = dev->node;
	info->cpu_share = dev->share;
	info->cpu_shares = dev->shares;
	if (numa_available() >= 0) {
		long long total = numa_node_size64(dev->node, &avail);

		info->mem_total = total > 0 ? (uint64_t)total : 0;
		info->mem_free = avail > 0 ? (uint64_t)avail : 0;
	}
	return 0;
}

/* ---- allocations ---------------------------------------------------- */

static void gpsu_user_unmap(struct gpsu_alloc *a)
{
	int d;

	for (d = 0; d < GPSU_MAX_DEVICES; d++)
		if (a->views[d])
			munmap(a->views[d], a->map_size);
	if (a->host)
		munmap(a->host, a->map_size);
	memset(a->views, 0, sizeof(a->views));
	a->host = NULL;
	a->nviews = 0;
}

static void gpsu_user_release(struct gpsu_user_alloc *ua)
{
	int d;

	if (ua->back)
		munmap(ua->back, (size_t)ua->nrep * ua->len);
	if (ua->twin)
		munmap(ua->twin, (size_t)ua->nrep * ua->len);
	if (ua->memfd >= 0)
		close(ua->memfd);
	for (d = 0; d < GPSU_USER_STRIPES; d++)
		pthread_mutex_destroy(&ua->plock[d]);
	free(ua);
}

/* A view of replica @r: a mapping of its region of the memfd. */
static char *gpsu_user_map(struct gpsu_user_alloc *ua, int r)
{
	void *v = mmap(NULL, ua->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ua->memfd, (off_t)((size_t)r * ua->len));

	return v == MAP_FAILED ? NULL : v;
}

/* Replicas near their device: best effort where there are nodes. */
static void gpsu_user_place(struct gpsu_user_alloc *ua)
{
	unsigned long mask[GPSU_MAX_DEVICES / 64 + 1];
	int r;

	if (numa_available() < 0 || numa_max_node() < 1)
		return;
	for (r = 0; r < ua->nrep; r++) {
		int node = gpsu_user.dev[ua->nrep > 1 ? r : ua->a->home].node;

		if (node < 0 || node >= GPSU_MAX_DEVICES)
			continue;
		memset(mask, 0, sizeof(mask));
		mask[node / 64] |= 1UL << (node % 64);
		(void)mbind(ua->back + (size_t)r * ua->len, ua->len,
			    MPOL_PREFERRED, mask, GPSU_MAX_DEVICES + 1, 0);
	}
}

/* replica_pages and twin_pages of each device holding @ua: @sign 1, -1 */
static void gpsu_user_count_pages(const struct gpsu_user_alloc *ua, int sign)
{
	uint64_t n = (uint64_t)sign * (ua->len / PAGE_SIZE);
	int r;

	for (r = 0; r < ua->nrep; r++) {
		int d = ua->nrep > 1 ? r : ua->a->home;

		gpsu_user_count(d, GPSU_S(replica_pages), n);
		if (ua->twin)
			gpsu_user_count(d, GPSU_S(twin_pages), n);
	}
}

static int gpsu_user_alloc(struct gpsu_alloc *a, unsigned int page_size)
{
	size_t ps = page_size ? page_size :
				gpsu_user_knob(GPSU_K(page_size));
	struct gpsu_user_alloc *ua;
	int d, r, ret = ENOMEM;
	bool gps = a->kind == GPSU_KIND_GPS;

	ua = calloc(1, sizeof(*ua));
	if (!ua)
		return ENOMEM;
	ua->a = a;
	ua->memfd = -1;
	ua->nrep = gps ? gpsu_user.ndev : 1;
	ua->len = (a->size + ps - 1) & ~(ps - 1);
	for (r = 0; r < GPSU_USER_STRIPES; r++)
		pthread_mutex_init(&ua->plock[r], NULL);
	ua->memfd = memfd_create("gpsu", MFD_CLOEXEC);
	if (ua->memfd < 0 ||
	    ftruncate(ua->memfd, (off_t)((size_t)ua->nrep * ua->len))) {
		ret = errno;
		goto err_release;
	}
	ua->back = mmap(NULL, (size_t)ua->nrep * ua->len,
			PROT_READ | PROT_WRITE, MAP_SHARED, ua->memfd, 0);
	if (ua->back == MAP_FAILED) {
		ua->back = NULL;
		goto err_release;
	}
	if (gps) {
		/* zero, as every replica is at first */
		ua->twin = mmap(NULL, (size_t)ua->nrep * ua->len,
				PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ua->twin == MAP_FAILED) {
			ua->twin = NULL;
			goto err_release;
		}
	}
	a->map_size = ua->len;
	a->page_size = ps;
	gpsu_user_place(ua);

	/* GPS: a view per device on its replica, armed, and the host's.
	 * UM: every device's view on the one copy. CONV: the home's. */
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!gpsu_has_views(a) && d != a->home)
			continue;
		a->views[d] = gpsu_user_map(ua, gps ? d : 0);
		if (!a->views[d])
			goto err_unmap;
		a->nviews = d + 1;
		if (gps) {
			ret = gpsu_capture_arm(a->views[d], ua->len);
			if (ret)
				goto err_unmap;
		}
	}
	if (gps) {
		a->host = gpsu_user_map(ua, a->home);
		if (!a->host)
			goto err_unmap;
		ret = gpsu_capture_arm(a->host, ua->len);
		if (ret)
			goto err_unmap;
		pthread_rwlock_wrlock(&gpsu_user.allocs_lock);
		ua->next = gpsu_user.allocs;
		gpsu_user.allocs = ua;
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	}
	a->handle = (uintptr_t)ua;
	a->engine = ua;
	gpsu_user_count_pages(ua, 1);
	return 0;

err_unmap:
	gpsu_user_unmap(a);
err_release:
	gpsu_user_release(ua);
	return ret ? ret : ENOMEM;
}

static int gpsu_user_free(struct gpsu_alloc *a)
{
	struct gpsu_user_alloc *ua = a->engine, **p;
	int d;

	if (a->kind == GPSU_KIND_GPS) {
		/* out of every fence's sight, then out of every queue */
		pthread_rwlock_wrlock(&gpsu_user.allocs_lock);
		for (p = &gpsu_user.allocs; *p; p = &(*p)->next) {
			if (*p == ua) {
				*p = ua->next;
				break;
			}
		}
		for (d = 0; d < gpsu_user.ndev; d++) {
			pthread_mutex_lock(&gpsu_user.dev[d].lock);
			gps_queue_purge(&gpsu_user.dev[d].q, ua);
			pthread_mutex_unlock(&gpsu_user.dev[d].lock);
		}
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	}
	gpsu_user_count_pages(ua, -1);
	gpsu_user_unmap(a);
	gpsu_user_release(ua);
	a->engine = NULL;
	return 0;
}

/* ---- data ----------------------------------------------------------- */

static char *gpsu_user_replica(const struct gpsu_user_alloc *ua, int r)
{
	return ua->back + (size_t)(ua->nrep > 1 ? r : 0) * ua->len;
}

static int gpsu_user_read(const struct gpsu_alloc *a, size_t off, void *buf,
			  size_t n, int device)
{
	const struct gpsu_user_alloc *ua = a->engine;

	if (off > ua->len || n > ua->len - off)
		return EINVAL;
	if (device < 0 || device >= gpsu_user.ndev)
		return EINVAL;
	memcpy(buf, gpsu_user_replica(ua, device) + off, n);
	return 0;
}

/* The lock of small page @page of every replica of @ua. */
static pthread_mutex_t *gpsu_user_plock(const struct gpsu_user_alloc *ua,
					size_t page)
{
	return (pthread_mutex_t *)&ua->plock[page % GPSU_USER_STRIPES];
}

/*
 * Writes into every replica and its twin, a small page at a time under
 * its lock: a copy is everyone's at once, no device's store to publish.
 * The twins take the bytes written, not the replica's (a store racing
 * with the copy must still diff as changed). @buf NULL: @value in every
 * byte.
 */
static int gpsu_user_fill(const struct gpsu_alloc *a, size_t off,
			  const void *buf, int value, size_t n)
{
	struct gpsu_user_alloc *ua = a->engine;
	size_t at, end = off + n, part;
	int r;

	if (off > ua->len || n > ua->len - off)
		return EINVAL;
	for (at = off; at < end; at += part) {
		pthread_mutex_t *l = gpsu_user_plock(ua, at / PAGE_SIZE);

		part = PAGE_SIZE - at % PAGE_SIZE;
		if (part > end - at)
			part = end - at;
		pthread_mutex_lock(l);
		for (r = 0; r < ua->nrep; r++) {
			char *dst = ua->back + (size_t)r * ua->len + at;
			char *tw = ua->twin ? ua->twin + (size_t)r * ua->len + at :
					      NULL;

			if (buf) {
				memcpy(dst, (const char *)buf + (at - off), part);
				if (tw)
					memcpy(tw, (const char *)buf + (at - off),
					       part);
			} else {
				memset(dst, value, part);
				if (tw)
					memset(tw, value, part);
			}
		}
		pthread_mutex_unlock(l);
	}
	return 0;
}

static int gpsu_user_write(const struct gpsu_alloc *a, size_t off,
			   const void *buf, size_t n)
{
	return gpsu_user_fill(a, off, buf, 0, n);
}

static int gpsu_user_memset(const struct gpsu_alloc *a, size_t off,
			    int value, size_t n)
{
	return gpsu_user_fill(a, off, NULL, value & 0xff, n);
}

/* ---- subscriptions: every device subscribes to every page ----------- */

static int gpsu_user_advise(const struct gpsu_alloc *a, size_t off,
			    size_t len, enum gpsu_advice advice, int device)
{
	static const char *const what[] = {
		[GPSU_ADVISE_UNSUBSCRIBE] = "unsubscribe",
		[GPSU_ADVISE_COLLAPSE] = "collapse (system scope)",
	};

	(void)a;
	(void)off;
	(void)len;
	(void)device;
	if (advice == GPSU_ADVISE_SUBSCRIBE)
		return 0;	/* subscribed already */
	if (advice != GPSU_ADVISE_UNSUBSCRIBE &&
	    advice != GPSU_ADVISE_COLLAPSE)
		return EINVAL;
	fprintf(stderr,
		"libgpsu: native engine: %s is not supported yet (every device subscribes to every page)\n",
		what[advice]);
	return ENOTSUP;
}

static int gpsu_user_query(const struct gpsu_alloc *a, size_t first,
			   uint32_t nr, unsigned long long *subs)
{
	unsigned long long all = gpsu_user.ndev >= 64 ? ~0ULL :
				 (1ULL << gpsu_user.ndev) - 1;
	uint32_t i;

	if (first > a->map_size / a->page_size ||
	    nr > a->map_size / a->page_size - first)
		return EINVAL;
	for (i = 0; i < nr; i++)
		subs[i] = a->kind == GPSU_KIND_GPS ? all : 1ULL << a->home;
	return 0;
}

static int gpsu_user_track(bool start)
{
	(void)start;
	return ENOTTY;	/* automatic subscription: not yet */
}

/* ---- harvest and push ----------------------------------------------- */

/* What a harvest of one device needs in the callbacks. */
struct gpsu_harvest {
	int dev;
	struct gpsu_user_alloc *ua;
	struct gps_qstat qst;
	uint64_t now;
	uint64_t written, changed, bytes, blocks, early;
	struct gps_diff df;
};

/*
 * The queue's push (gps_qpush_t): the span's masked bytes from the
 * source's twin (what its diffs read, and what it received since) into
 * every other replica and its twin, under the page's lock: every byte
 * sent is then the same in the receivers and in the source's twin, so
 * racing stores converge whichever push comes last, and a store made
 * after the diff waits for the next one instead of being sent in part.
 */
static void gpsu_user_push(void *ctx, const struct gps_qspan *span)
{
	struct gpsu_harvest *h = ctx;
	const struct gpsu_user_alloc *ua = span->owner;
	size_t at = (size_t)span->page * PAGE_SIZE;
	unsigned int lo = span->lo, n = span->hi - span->lo;
	const unsigned long *mask = span->mask + lo / BITS_PER_LONG;
	pthread_mutex_t *l = gpsu_user_plock(ua, span->page);
	const u8 *from = (const u8 *)ua->twin + (size_t)h->dev * ua->len +
			 at + lo;
	int r;

	pthread_mutex_lock(l);
	if (gpsu_user.push_delay_us)
		usleep(gpsu_user.push_delay_us);
	for (r = 0; r < ua->nrep; r++) {
		if (r == h->dev)
			continue;
		gps_bytes_apply((u8 *)ua->back + (size_t)r * ua->len + at + lo,
				from, mask, n);
		gps_bytes_blend((u8 *)ua->twin + (size_t)r * ua->len + at + lo,
				from, mask, n);
		h->bytes += n;
		h->blocks += span->blocks;
		if (span->early)
			h->early += span->blocks;
	}
	pthread_mutex_unlock(l);
}

/* A written page of the harvested view: diff, queue what changed. */
static void gpsu_user_page(void *ctx, size_t page)
{
	struct gpsu_harvest *h = ctx;
	struct gpsu_user_alloc *ua = h->ua;
	size_t at = (size_t)h->dev * ua->len + page * PAGE_SIZE;
	pthread_mutex_t *l = gpsu_user_plock(ua, page);
	unsigned int n;

	h->written++;
	pthread_mutex_lock(l);
	n = gps_diff_page(&h->df, ua->back + at, ua->twin + at,
			  gpsu_user.dev[h->dev].block_size, true);
	pthread_mutex_unlock(l);
	if (!n)
		return;
	h->changed++;
	if (!gps_queue_add(&gpsu_user.dev[h->dev].q, ua, page, h->df.mask,
			   h->df.blocks, h->now, gpsu_user_push, h, &h->qst)) {
		/* refused (a broken push): past the queue, or it is lost */
		struct gps_qspan span = {
			.owner = ua, .page = page, .mask = h->df.mask,
			.lo = 0, .hi = PAGE_SIZE, .blocks = n, .early = true,
		};

		gpsu_user_push(h, &span);
	}
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
	struct gpsu_harvest *h;
	struct gpsu_user_alloc *ua;
	uint64_t scans = 0, host_written = 0, t0, t1;
	int ret = 0;

	h = malloc(sizeof(*h));
	if (!h)
		return ENOMEM;
	memset(h, 0, offsetof(struct gpsu_harvest, df));
	h->dev = d;
	pthread_mutex_lock(&dev->lock);
	h->now = gpsu_user_now();
	for (ua = gpsu_user.allocs; ua && !ret; ua = ua->next) {
		h->ua = ua;
		if (own) {
			ret = gpsu_capture_harvest(ua->a->views[d], ua->len,
						   gpsu_user_page, h);
			scans++;
		}
		if (!ret && host && ua->a->home == d) {
			uint64_t before = h->written;

			ret = gpsu_capture_harvest(ua->a->host, ua->len,
						   gpsu_user_page, h);
			host_written += h->written - before;
			scans++;
		}
	}
	t0 = gpsu_user_now();
	while (gps_queue_push_oldest(&dev->q, ~0U, h->now, 0, false,
				     gpsu_user_push, h))
		;
	dev->link_busy = gps_link_busy_until(dev->link_busy, h->now, h->bytes,
					     gpsu_user_knob(GPSU_K(link_bandwidth)));
	*until = gps_link_fence_end(dev->link_busy, h->now,
				    gpsu_user_knob(GPSU_K(link_latency_ns)));
	pthread_mutex_unlock(&dev->lock);
	t1 = gpsu_user_now();
	gpsu_user_count(d, GPSU_S(write_faults), h->written - host_written);
	gpsu_user_count(d, GPSU_S(host_write_faults), host_written);
	gpsu_user_count(d, GPSU_S(pages_harvested), h->written);
	gpsu_user_count(d, GPSU_S(blocks_queued), h->qst.queued);
	gpsu_user_count(d, GPSU_S(blocks_merged), h->qst.merged);
	gpsu_user_count(d, GPSU_S(blocks_pushed), h->blocks);
	gpsu_user_count(d, GPSU_S(blocks_pushed_early), h->early);
	gpsu_user_count(d, GPSU_S(bytes_pushed), h->bytes);
	gpsu_user_count(d, own ? GPSU_S(fences) : GPSU_S(host_fences), 1);
	if (own && host)
		gpsu_user_count(d, GPSU_S(host_fences), 1);
	gpsu_user_count(d, GPSU_S(harvest_ns), t0 - h->now);
	gpsu_user_count(d, GPSU_S(fence_ns), t1 - h->now);
	gpsu_user_count(d, GPSU_S(link_wait_ns), *until > t1 ? *until - t1 : 0);
	gpsu_user_count_max(d, GPSU_S(queue_hwm), h->qst.held);

	GPSU_STAT_ADD(scans, scans);
	GPSU_STAT_ADD(pages_written, h->written);
	GPSU_STAT_ADD(pages_changed, h->changed);
	GPSU_STAT_ADD(blocks_queued, h->qst.queued);
	GPSU_STAT_ADD(blocks_merged, h->qst.merged);
	GPSU_STAT_ADD(blocks_pushed, h->blocks);
	GPSU_STAT_ADD(bytes_pushed, h->bytes);
	GPSU_STAT_ADD(fences, 1);
	free(h);
	return ret;
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

static int gpsu_user_fence_mask(uint64_t mask, bool host)
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
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	/* the links carry a release of several devices at once */
	gpsu_user_link_sleep(until);
	return ret;
}

/* -1: every device and the host views, as the driver's GPS_FENCE_ALL. */
static int gpsu_user_fence(int device)
{
	if (device < 0)
		return gpsu_user_fence_mask(~0ULL, true);
	if (device >= gpsu_user.ndev)
		return EINVAL;
	return gpsu_user_fence_mask(1ULL << device, false);
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

		memset(h, 0, offsetof(struct gpsu_harvest, df));
		h->dev = d;
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

const struct gpsu_engine_ops gpsu_engine_user = {
	.name = "user",
	.kind = gpsEngineNative,
	.open = gpsu_user_open,
	.close = gpsu_user_close,
	.device_info = gpsu_user_device_info,
	.alloc = gpsu_user_alloc,
	.free = gpsu_user_free,
	.read = gpsu_user_read,
	.write = gpsu_user_write,
	.memset = gpsu_user_memset,
	.advise = gpsu_user_advise,
	.query = gpsu_user_query,
	.track = gpsu_user_track,
	.fence = gpsu_user_fence,
	.fence_mask = gpsu_user_fence_mask,
	/* no ring: asynchronous fences are synchronous (engine.h) */
	.knob_get = gpsu_user_knob_get,
	.knob_set = gpsu_user_knob_set,
	.counter = gpsu_user_counter,
};
