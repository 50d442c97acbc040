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
 * into every other subscriber's replica (core gps_bytes_apply: never a
 * torn word, a receiver's own stores to the other bytes kept) and into
 * its twin (gps_bytes_blend), so that the receiver never publishes them
 * as its own. A fence of d is a harvest of d, then its queue drained,
 * then the wait the link model (core gps_linkmodel.h) asks for.
 *
 * Subscriptions: each GPS page has its subscribers (every device, or
 * the home alone for gpsMemGPSManual). A non-subscriber's view of the
 * page is a MAP_FIXED mapping of a subscriber's region of the memfd: it
 * loads that replica, and its stores land there, captured through its
 * own view and diffed against that replica's twin, so a queued page is
 * (replica, page). A change of subscription (advice, collapse, tracking)
 * publishes every pending store of the page, fills a new replica, points
 * the views again, publishes what reached a replica meanwhile, and
 * punches the dropped replicas out of the memfd.
 *
 * A push thread per device (engine_user_thread.c) harvests and pushes
 * while the kernels run where the link is modelled. A stream's fences
 * run on a thread of its ring (engine_user_ring.c).
 *
 * Tracking and managed memory on fault see a device's first access by
 * making its view (or page) PROT_NONE: the SIGSEGV goes through
 * engine_user_fault.c to gpsu_user_track_fault (the device recorded as a
 * user of the GPS page, the page opened) or gpsu_user_um_fault (the
 * small page moved to the device: the old owner's view closed).
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
#include "engine.h"
#include "engine_user.h"

/* the pure core, after the library's headers: it defines min/max */
#include "gps_bytes.h"
#include "gps_diff.h"
#include "gps_linkmodel.h"
#include "gps_queue.h"

#define GPSU_USER_DEVICES	4	/* on a machine with one node */
#define GPSU_USER_STRIPES	64	/* page locks of an allocation */
#define GPSU_USER_HELP_MIN	8	/* pages of a fence worth a helper */

struct gpsu_user_dev {
	pthread_mutex_t lock;		/* harvest and queue (engine_user.h) */
	struct gps_queue q;
	void *qmem;
	unsigned int block_size;	/* of the queue's blocks and diffs */
	int node;
	int share, shares;
	int ncpus;			/* its CPUs (cpus.c), at open */
	cpu_set_t cpus;
	uint64_t link_busy;		/* link busy until (ns), under lock */
	/* a fence's written pages and its helpers' harvests, under lock */
	struct gpsu_user_item *items;
	size_t nitems, cap;
	struct gpsu_harvest *hs[GPSU_HELP_MAX + 1];
};

/* A written page a fence found: diffed and pushed by it or a helper. */
struct gpsu_user_item {
	struct gpsu_user_alloc *ua;
	int view;
	size_t page;
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
	/*
	 * GPS: the subscriptions, under gpsu_user.allocs_lock (written with
	 * it held for writing). subs[g]: the devices holding a replica of
	 * GPS page g (never none); map[v * ngp + g]: the replica view v maps
	 * there (v == ndev: the host view), its own for a subscriber, a
	 * subscriber's for the others; collapsed[g]: system scope, one copy;
	 * touched[g]: the devices that accessed g while tracked (set in the
	 * fault handler).
	 */
	size_t ps, ngp;
	uint64_t *subs, *touched;
	uint8_t *map, *collapsed;
	bool tracked;			/* its device views watched (tracking) */
	/*
	 * Managed memory on fault: the device whose view has small page p
	 * (owner[p]); the others' views have it PROT_NONE, and their first
	 * access moves it (um_lock, a spinlock taken in the fault handler).
	 */
	uint8_t *owner;
	int um_lock;
};

static struct {
	int ndev;
	unsigned int push_delay_us;	/* $GPSU_TEST_PUSH_DELAY_US: tests */
	unsigned int change_delay_us;	/* $GPSU_TEST_CHANGE_DELAY_US */
	struct gpsu_user_dev dev[GPSU_MAX_DEVICES];
	pthread_rwlock_t allocs_lock;
	struct gpsu_user_alloc *allocs;	/* GPS allocations */
	bool tracking;			/* under allocs_lock */
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
static void gpsu_user_round(int d);

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
				"libgpsu: native engine: cannot use %s (%s)\n",
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
	/* holds a change before it fills new replicas, before it points */
	gpsu_user.change_delay_us = (unsigned int)
		gpsu_user_env("GPSU_TEST_CHANGE_DELAY_US", 0);
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
		dev->ncpus = gpsu_cpus_set(dev->node, dev->share, dev->shares,
					   &dev->cpus);
		gpsu_user_help_init(d, &dev->cpus);
		gps_queue_init(&dev->q, dev->qmem, cap,
			       (unsigned int)gpsu_user_knob(GPSU_K(queue_watermark)),
			       block);
	}
	memset(&gpsu_user.st, 0, sizeof(gpsu_user.st));
	for (d = 0; d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];

		if (gpsu_user_thread_start(d, &dev->cpus, gpsu_user_round)) {
			gpsu_user_close();
			return gpsErrorInitializationError;
		}
	}
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

	gpsu_user_threads_stop();
	gpsu_user_help_stop();
	gpsu_user_publish_stop();
	for (d = 0; d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];
		int w;

		for (w = 1; w <= GPSU_HELP_MAX; w++) {
			free(dev->hs[w]);
			dev->hs[w] = NULL;
		}
		free(dev->items);
		dev->items = NULL;
		dev->nitems = 0;
		dev->cap = 0;
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
	(void)gpsu_user_counter(device, GPSU_S(replica_pages),
				&info->replica_pages);
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

static void gpsu_user_count_replicas(const struct gpsu_user_alloc *ua,
				     uint64_t subs, bool add);

static void gpsu_user_release(struct gpsu_user_alloc *ua)
{
	size_t g;
	int d;

	for (g = 0; ua->subs && g < ua->ngp; g++)
		gpsu_user_count_replicas(ua, ua->subs[g], false);

	if (ua->back)
		munmap(ua->back, (size_t)ua->nrep * ua->len);
	if (ua->twin)
		munmap(ua->twin, (size_t)ua->nrep * ua->len);
	if (ua->memfd >= 0)
		close(ua->memfd);
	for (d = 0; d < GPSU_USER_STRIPES; d++)
		pthread_mutex_destroy(&ua->plock[d]);
	free(ua->subs);
	free(ua->touched);
	free(ua->map);
	free(ua->collapsed);
	free(ua->owner);
	free(ua);
}

static int gpsu_user_track_on(struct gpsu_user_alloc *ua);
static int gpsu_user_um_on(struct gpsu_user_alloc *ua);

/* GPS: where view @v maps GPS page @g (v == ndev: the host view). */
static uint8_t *gpsu_user_mapp(const struct gpsu_user_alloc *ua, int v,
			       size_t g)
{
	return &ua->map[(size_t)v * ua->ngp + g];
}

static char *gpsu_user_view(const struct gpsu_user_alloc *ua, int v)
{
	return v == gpsu_user.ndev ? ua->a->host : ua->a->views[v];
}

/* Replica pages held by the subscribers of @subs, one GPS page each. */
static void gpsu_user_count_replicas(const struct gpsu_user_alloc *ua,
				     uint64_t subs, bool add)
{
	uint64_t n = ua->ps / PAGE_SIZE;
	int d;

	if (!add)
		n = -n;		/* the counters add modulo 2^64 */
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(subs & (1ULL << d)))
			continue;
		gpsu_user_count(d, GPSU_S(replica_pages), n);
		if (ua->twin)
			gpsu_user_count(d, GPSU_S(twin_pages), n);
	}
}

/*
 * GPS: the subscription state at birth: every device (automatic), or
 * the home alone (gpsMemGPSManual), whose replica the others' views map.
 */
static int gpsu_user_subs_init(struct gpsu_user_alloc *ua)
{
	uint64_t all = gpsu_user.ndev >= 64 ? ~0ULL :
		       (1ULL << gpsu_user.ndev) - 1;
	uint64_t subs = (ua->a->flags & GPSU_ALLOC_MANUAL) ?
			1ULL << ua->a->home : all;
	size_t g;
	int v;

	ua->ngp = ua->len / ua->ps;
	ua->subs = calloc(ua->ngp, sizeof(*ua->subs));
	ua->touched = calloc(ua->ngp, sizeof(*ua->touched));
	ua->collapsed = calloc(ua->ngp, 1);
	ua->map = calloc((size_t)(gpsu_user.ndev + 1) * ua->ngp, 1);
	if (!ua->subs || !ua->touched || !ua->collapsed || !ua->map)
		return ENOMEM;
	for (g = 0; g < ua->ngp; g++) {
		ua->subs[g] = subs;
		for (v = 0; v <= gpsu_user.ndev; v++)
			*gpsu_user_mapp(ua, v, g) =
				(v < gpsu_user.ndev && (subs & (1ULL << v))) ?
				(uint8_t)v : (uint8_t)ua->a->home;
		gpsu_user_count_replicas(ua, subs, true);
	}
	return 0;
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
	ua->ps = ps;
	if (gps) {
		ret = gpsu_user_subs_init(ua);
		if (ret)
			goto err_release;
	}
	gpsu_user_place(ua);

	/* GPS: a view per device on the replica it maps, armed, and the
	 * host's. UM: every device's view on the one copy. CONV: the
	 * home's. */
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!gpsu_has_views(a) && d != a->home)
			continue;
		a->views[d] = gpsu_user_map(ua, gps ? *gpsu_user_mapp(ua, d, 0) :
						      0);
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
		/* born while tracking: tracked, as the driver's */
		if (gpsu_user.tracking && !(a->flags & GPSU_ALLOC_MANUAL))
			ret = gpsu_user_track_on(ua);
		if (!ret) {
			ua->next = gpsu_user.allocs;
			gpsu_user.allocs = ua;
		}
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
		if (ret)
			goto err_unmap;
	} else if (a->kind == GPSU_KIND_UM) {
		ret = gpsu_user_um_on(ua);
		if (ret)
			goto err_unmap;
	}
	a->handle = (uintptr_t)ua;
	a->engine = ua;
	return 0;

err_unmap:
	gpsu_fault_del(ua);
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
	/* no fault handler acts on the views once they go */
	gpsu_fault_del(ua);
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

/* What @device sees: its replica, or the subscriber's its view maps. */
static int gpsu_user_read(const struct gpsu_alloc *a, size_t off, void *buf,
			  size_t n, int device)
{
	const struct gpsu_user_alloc *ua = a->engine;
	size_t at, end = off + n, part;

	if (off > ua->len || n > ua->len - off)
		return EINVAL;
	if (device < 0 || device >= gpsu_user.ndev)
		return EINVAL;
	if (!ua->map) {
		memcpy(buf, gpsu_user_replica(ua, device) + off, n);
		return 0;
	}
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (at = off; at < end; at += part) {
		size_t g = at / ua->ps;

		part = (g + 1) * ua->ps - at;
		if (part > end - at)
			part = end - at;
		memcpy((char *)buf + (at - off),
		       gpsu_user_replica(ua, *gpsu_user_mapp(ua, device, g)) +
		       at, part);
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
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
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (at = off; at < end; at += part) {
		pthread_mutex_t *l = gpsu_user_plock(ua, at / PAGE_SIZE);
		/* the subscribers' replicas: the others hold nothing */
		uint64_t subs = ua->subs ? ua->subs[at / ua->ps] : ~0ULL;

		part = PAGE_SIZE - at % PAGE_SIZE;
		if (part > end - at)
			part = end - at;
		pthread_mutex_lock(l);
		for (r = 0; r < ua->nrep; r++) {
			char *dst = ua->back + (size_t)r * ua->len + at;
			char *tw = ua->twin ? ua->twin + (size_t)r * ua->len + at :
					      NULL;

			if (!(subs & (1ULL << r)))
				continue;

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
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
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

/* ---- harvest and push ----------------------------------------------- */

/* What a harvest of one device needs in the callbacks. */
struct gpsu_harvest {
	int dev;
	int view;			/* the view harvested (ndev: host) */
	struct gpsu_user_alloc *ua;
	size_t page0;			/* of the run harvested */
	struct gps_qstat qst;
	uint64_t now;
	uint64_t written, changed, bytes, blocks, early, scan_ns;
	uint64_t bulk, helped;		/* blocks past the queue; pages */
	bool collect;			/* a fence's scan: list, diff later */
	struct gps_diff df;
};

/*
 * A queued page is replica r's small page p, numbered r * (small pages
 * of a replica) + p: a view that maps another device's replica (a
 * non-subscriber's) stores into that replica, which is what is diffed
 * and sent from.
 */
static uint64_t gpsu_user_qpage(const struct gpsu_user_alloc *ua, int r,
				size_t p)
{
	return (uint64_t)r * (ua->len / PAGE_SIZE) + p;
}

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
	unsigned int nbytes = 0, w;
	int r;

	/* what is written, as the driver counts: the masked bytes */
	for (w = 0; w < n / BITS_PER_LONG; w++)
		nbytes += (unsigned int)__builtin_popcountl(mask[w]);
	pthread_mutex_lock(l);
	if (gpsu_user.push_delay_us)
		usleep(gpsu_user.push_delay_us);
	for (r = 0; r < ua->nrep; r++) {
		if (r == src || !(subs & (1ULL << r)))
			continue;
		gps_bytes_apply((u8 *)ua->back + (size_t)r * ua->len + at + lo,
				from, mask, n);
		gps_bytes_blend((u8 *)ua->twin + (size_t)r * ua->len + at + lo,
				from, mask, n);
		h->bytes += nbytes;
		h->blocks += span->blocks;
		if (span->early)
			h->early += span->blocks;
	}
	pthread_mutex_unlock(l);
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

	page += h->page0;
	h->written++;
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
 * Harvests view @view of h->ua: the runs of GPS pages that have more
 * than one subscriber. A page with one has no one to publish to: its
 * stores are not diffed and its small pages, once written, stay
 * writable (no write fault each epoch). Its twin is then behind, and a
 * subscription change settles the page (every small page diffed) before
 * it gains a subscriber; where it gains one outside a harvest, its
 * written pages are still unprotected, so the next harvest finds them.
 */
static int gpsu_user_harvest(struct gpsu_harvest *h, char *view,
			     uint64_t *scans)
{
	const struct gpsu_user_alloc *ua = h->ua;
	size_t g = 0, e;
	int ret = 0;

	while (!ret && g < ua->ngp) {
		for (; g < ua->ngp && !(ua->subs[g] & (ua->subs[g] - 1)); g++)
			;
		for (e = g; e < ua->ngp && (ua->subs[e] & (ua->subs[e] - 1));
		     e++)
			;
		if (e == g)
			break;
		h->page0 = g * ua->ps / PAGE_SIZE;
		ret = gpsu_capture_harvest(view + g * ua->ps, (e - g) * ua->ps,
					   gpsu_user_page, h, &h->scan_ns);
		(*scans)++;
		g = e;
	}
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
	gpsu_user_count(d, GPSU_S(pages_harvested), h->written);
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
	uint64_t scans = 0, host_written = 0, t0, t1;
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
	dev->link_busy = gps_link_busy_until(dev->link_busy, h->now, h->bytes,
					     gpsu_user_knob(GPSU_K(link_bandwidth)));
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
	pthread_mutex_unlock(&dev->lock);
	t1 = gpsu_user_now();
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
 * soon). The host views are the host fence's.
 */
static void gpsu_user_round(int d)
{
	struct gpsu_user_dev *dev = &gpsu_user.dev[d];
	struct gpsu_harvest *h;
	uint64_t scans = 0, host_written = 0, t0;

	if (pthread_rwlock_tryrdlock(&gpsu_user.allocs_lock))
		return;
	if (pthread_mutex_trylock(&dev->lock)) {
		pthread_rwlock_unlock(&gpsu_user.allocs_lock);
		return;
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
	dev->link_busy = gps_link_busy_until(dev->link_busy, t0, h->bytes,
					     gpsu_user_knob(GPSU_K(link_bandwidth)));
	gpsu_user_account(d, h, host_written, scans);
	gpsu_user_count(d, GPSU_S(thread_rounds), 1);
	GPSU_STAT_ADD(rounds, 1);
	free(h);
out:
	pthread_mutex_unlock(&dev->lock);
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
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

void gpsu_user_link_reset(void)
{
	int d;

	for (d = 0; d < gpsu_user.ndev; d++) {
		pthread_mutex_lock(&gpsu_user.dev[d].lock);
		gpsu_user.dev[d].link_busy = 0;
		pthread_mutex_unlock(&gpsu_user.dev[d].lock);
	}
}

/* A stream's ring: its fences on a thread of their own. */
static struct gpsu_engine_ring *gpsu_user_ring_start(void)
{
	return gpsu_user_ring_new(gpsu_user_fence_mask);
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

/* ---- subscriptions -------------------------------------------------- */

/*
 * Publishes every change in GPS page @g of the replicas of @mask: each
 * small page diffed against its twin, what changed pushed to the page's
 * other subscribers at once. The stores of every view that maps those
 * replicas, whether or not capture saw them, so nothing pending is left
 * when replicas are added or dropped (the driver's gps_quiesce); @h is
 * scratch. allocs_lock held for writing.
 */
static void gpsu_user_settle(struct gpsu_user_alloc *ua, size_t g,
			     uint64_t mask, struct gpsu_harvest *h)
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
 * Points GPS page @g of view @v at replica @r: a MAP_FIXED mapping of
 * that replica's region of the memfd, armed for capture (a new mapping
 * is not registered), held as the change holds it.
 */
static int gpsu_user_point(struct gpsu_user_alloc *ua, int v, size_t g,
			   int r)
{
	char *at = gpsu_user_view(ua, v) + g * ua->ps;
	int prot = gpsu_user_prot(ua, v, g, true);
	long m;

	/*
	 * The system call itself: a remap changes which replica the view
	 * shows, not what the program stored there. ThreadSanitizer's mmap
	 * takes it for a write of the page by this thread, and a store made
	 * after the page opened again, before the hold ended, for a race
	 * (the kernel orders the two; nothing TSan sees does).
	 */
	m = syscall(SYS_mmap, at, ua->ps, prot, MAP_SHARED | MAP_FIXED,
		    ua->memfd, (off_t)((size_t)r * ua->len + g * ua->ps));
	if (m == -1)
		return errno;
	*gpsu_user_mapp(ua, v, g) = (uint8_t)r;
	return gpsu_capture_arm(at, ua->ps);
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
			for (g = 0; g < ua->ngp; g++)
				__atomic_fetch_or(&ua->touched[g], 1ULL << v,
						  __ATOMIC_RELAXED);
		GPSU_STAT_ADD(opened_whole, 1);
		if (mprotect(view, ua->len, PROT_READ | PROT_WRITE) && !ret)
			ret = errno;
	}
	return ret;
}

/* The changing thread's signals as they were, the scratch given back. */
static void gpsu_user_change_done(void)
{
	pthread_sigmask(SIG_SETMASK, &gpsu_change.mask, NULL);
	free(gpsu_change.h);
	gpsu_change.h = NULL;
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
 * good. The views it does not point again go on. -1: nothing to
 * change, nothing held; 0; or an errno, nothing held. Nothing it does
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
	if (!n)
		return -1;
	gpsu_change.h = malloc(sizeof(*gpsu_change.h));
	if (!gpsu_change.h)
		return ENOMEM;
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
	if (want == old)
		return 0;
	gpsu_user_settle(ua, g, old, gpsu_change.h);
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
	gpsu_user_count_replicas(ua, add, true);
	gpsu_user_count_replicas(ua, drop, false);
	if (gpsu_user.change_delay_us)
		usleep(gpsu_user.change_delay_us);
	for (v = 0; v <= gpsu_user.ndev; v++) {
		r = gpsu_user_serve(ua, v, g, want);
		if (r == *gpsu_user_mapp(ua, v, g))
			continue;
		e = gpsu_user_point(ua, v, g, r);
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
		gpsu_user_count_replicas(ua, still, true);
	}
	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(drop & (1ULL << d)))
			continue;
		(void)fallocate(ua->memfd,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)((size_t)d * ua->len + at),
				(off_t)ua->ps);
		(void)madvise(ua->twin + (size_t)d * ua->len + at, ua->ps,
			      MADV_DONTNEED);
	}
	GPSU_STAT_ADD(subscribes, (uint64_t)__builtin_popcountll(add));
	GPSU_STAT_ADD(unsubscribes, (uint64_t)__builtin_popcountll(drop));
	return ret;
}

static int gpsu_user_advise(const struct gpsu_alloc *a, size_t off,
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
	if (!ret) {
		held = gpsu_user_change_begin(ua, first, last, want);
		if (held > 0)
			ret = held;
	}
	for (g = first; g < last && !ret; g++) {
		if (advice != GPSU_ADVISE_UNSUBSCRIBE)
			ua->collapsed[g] = advice == GPSU_ADVISE_COLLAPSE;
		ret = gpsu_user_resub(ua, g, want[g - first]);
	}
	if (!held) {
		e = gpsu_user_change_end(ua, first, last);
		if (e && !ret)
			ret = e;
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	free(want);
	return ret;
}

static int gpsu_user_query(const struct gpsu_alloc *a, size_t first,
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
 * PROT_NONE view): the device is recorded as a user of the page, and
 * the page opened in its view. In the signal handler.
 */
static int gpsu_user_track_fault(void *ctx, int d, uintptr_t addr)
{
	struct gpsu_user_alloc *ua = ctx;
	size_t g = (addr - (uintptr_t)ua->a->views[d]) / ua->ps;

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
	for (g = 0; g < ua->ngp; g++)
		__atomic_fetch_or(&ua->touched[g], 1ULL << d,
				  __ATOMIC_RELAXED);
	GPSU_STAT_ADD(opened_whole, 1);
	return mprotect(ua->a->views[d], ua->len, PROT_READ | PROT_WRITE) ?
	       GPSU_FAULT_PASS : GPSU_FAULT_OPENED;
}

/*
 * Starts tracking @ua: every device subscribed to every page but the
 * collapsed ones (so that each sees its own replica), the touched masks
 * cleared, every device view PROT_NONE with its faults routed here.
 * allocs_lock held for writing.
 */
static int gpsu_user_track_on(struct gpsu_user_alloc *ua)
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
		if (!ua->collapsed[g])
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
 * that used it (a page nobody used keeps one copy, at home if it has
 * one; collapsed pages are left alone), the views opened, then the
 * faults no longer routed (one from before is retried, not a kill).
 */
static int gpsu_user_track_off(struct gpsu_user_alloc *ua)
{
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
		keep = __atomic_load_n(&ua->touched[g], __ATOMIC_RELAXED) &
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
static int gpsu_user_track(bool start)
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
		e = start ? gpsu_user_track_on(ua) : gpsu_user_track_off(ua);
		if (e && !ret)
			ret = e;
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	return ret;
}

/* ---- managed memory on fault ---------------------------------------- */

/*
 * Device @d's first access to a managed small page another device has:
 * it moves to @d (the old owner's view closed, @d's opened, the memory
 * moved to @d's node where there are several). One copy throughout, so
 * nothing is copied and no store is lost. In the signal handler.
 */
static int gpsu_user_um_fault(void *ctx, int d, uintptr_t addr)
{
	struct gpsu_user_alloc *ua = ctx;
	size_t p = (addr - (uintptr_t)ua->a->views[d]) / PAGE_SIZE;
	size_t at = p * PAGE_SIZE;
	bool ok;
	int old;

	while (__atomic_exchange_n(&ua->um_lock, 1, __ATOMIC_ACQUIRE))
		;
	old = ua->owner[p];
	if (old != d) {
		(void)mprotect(ua->a->views[old] + at, PAGE_SIZE, PROT_NONE);
		__atomic_store_n(&ua->owner[p], (uint8_t)d, __ATOMIC_RELAXED);
		if (numa_max_node() > 0) {
			void *pg = ua->back + at;
			int node = gpsu_user.dev[d].node, status;

			(void)numa_move_pages(0, 1, &pg, &node, &status,
					      MPOL_MF_MOVE);
		}
		GPSU_STAT_ADD(um_moves, 1);
	}
	ok = !mprotect(ua->a->views[d] + at, PAGE_SIZE, PROT_READ | PROT_WRITE);
	if (!ok) {
		/*
		 * vm.max_map_count: the whole view opens (one copy, so
		 * nothing is lost; the device's accesses move no page after
		 * this). The old owner's view may have stayed open too.
		 */
		ok = !mprotect(ua->a->views[d], ua->len,
			       PROT_READ | PROT_WRITE);
		GPSU_STAT_ADD(opened_whole, 1);
	}
	__atomic_store_n(&ua->um_lock, 0, __ATOMIC_RELEASE);
	return ok ? GPSU_FAULT_OPENED : GPSU_FAULT_PASS;
}

/* Managed memory on fault at birth: every page with its home. */
static int gpsu_user_um_on(struct gpsu_user_alloc *ua)
{
	size_t n = ua->len / PAGE_SIZE;
	int d, ret;

	ua->owner = malloc(n);
	if (!ua->owner)
		return ENOMEM;
	memset(ua->owner, ua->a->home, n);
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

/* A knob set; a change of the rule of rounds wakes the push threads. */
static int gpsu_user_knob_set_op(int i, uint64_t v)
{
	bool rounds = false;
	int ret = gpsu_user_knob_set(i, v, &rounds);

	if (rounds)
		gpsu_user_threads_kick();
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
	.ring_new = gpsu_user_ring_start,
	.ring_free = gpsu_user_ring_free,
	.fence_async = gpsu_user_ring_fence,
	.ring_reap = gpsu_user_ring_reap,
	.ring_pending = gpsu_user_ring_pending,
	.knob_get = gpsu_user_knob_get,
	.knob_set = gpsu_user_knob_set_op,
	.counter = gpsu_user_counter,
};
