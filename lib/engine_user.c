// SPDX-License-Identifier: MIT
/*
 * The native engine ("user"): the GPS model in user space, no driver.
 *
 * Devices: the machine's NUMA nodes, or, on a machine with one node (or
 * with $GPSU_DEVICES set), $GPSU_DEVICES devices (4 by default) sharing
 * the nodes' CPUs, each device a share of them (context.c pins).
 *
 * Memory: an allocation is a range of the process's memfd holding a
 * region per device (a replica; one region for conventional and managed
 * memory). Each
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
 * into every other subscriber's replica (core gps_bytes_push,
 * GPS_BYTES_APPLY: never a torn word, a receiver's own stores to the
 * other bytes kept) and into its twin (GPS_BYTES_BLEND), so that the
 * receiver never publishes them as its own. A fence of d is a harvest of d, then its queue drained,
 * then the wait the link model (core gps_linkmodel.h) asks for.
 *
 * Subscriptions: each GPS page has its subscribers (every device, or
 * the home alone for gpsMemGPSManual). A non-subscriber's view of the
 * page is a mapping of a subscriber's region of the memfd in its place: it
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
 *
 * This file: set-up, allocations and their views, copies, the ops
 * table; engine_user_subs.c the subscriptions, tracking and managed
 * memory, engine_user_publish.c the harvest, push, fences and rounds
 * (engine_user_state.h).
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
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "engine_user_state.h"

/* the pure core, after the library's headers: it defines min/max */
#include "gps_bytes.h"

/* Bytes of the process's memfd at most (gpsu_user.memfd), a range's step. */
#define GPSU_MEMFD_BYTES	(1ULL << 62)
#define GPSU_MEMFD_ALIGN	(2ULL << 20)

#define GPSU_USER_DEVICES	4	/* on a machine with one node */

/* The engine's state (engine_user_state.h). */
struct gpsu_user_state gpsu_user = {
	/* fences hold it to read: allocations must not wait behind them */
	.allocs_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
};

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

/*
 * $GPSU_KEEP_PAGES, the written pages a harvest may leave writable
 * (engine_user_publish.c): unset, empty or "auto": by cost (-1); else
 * 0 to GPSU_KEEP_MAX, in decimal; -2 for anything else.
 */
static int gpsu_user_keep_env(void)
{
	const char *v = getenv("GPSU_KEEP_PAGES");
	unsigned long n;
	char *end;

	if (!v || !*v || !strcmp(v, "auto"))
		return -1;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || end == v || *v < '0' || *v > '9' ||
	    n > GPSU_KEEP_MAX)
		return -2;
	return (int)n;
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

/* What a knob change asks of the publication (engine_user_knobs.c). */
static const struct gpsu_user_knob_hooks gpsu_user_hooks = {
	.reshape = gpsu_user_queues_reconfigure,
	.link_reset = gpsu_user_link_reset,
};

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
	if (gpsu_user_knobs_init(gpsu_user.ndev, &gpsu_user_hooks)) {
		gpsu_capture_close();
		return gpsErrorInitializationError;
	}
	gpsu_user.keep_pages = gpsu_user_keep_env();
	if (gpsu_user.keep_pages < -1) {
		fprintf(stderr,
			"libgpsu: native engine: GPSU_KEEP_PAGES=%s: auto, or 0 to %d (Documentation/engines.rst)\n",
			getenv("GPSU_KEEP_PAGES"), GPSU_KEEP_MAX);
		gpsu_capture_close();
		return gpsErrorInitializationError;
	}
	gpsu_user_budget_init();
	gpsu_user.memfd = memfd_create("gpsu", MFD_CLOEXEC);
	if (gpsu_user.memfd < 0) {
		fprintf(stderr, "libgpsu: native engine: memfd: %s\n",
			strerror(errno));
		gpsu_capture_close();
		return gpsErrorInitializationError;
	}
	pthread_mutex_init(&gpsu_user.memfd_lock, NULL);
	gpsu_user.memfd_next = 0;
	gpsu_user.memfd_size = 0;
	/* holds a push in its page's lock: tests widen race windows */
	gpsu_user.push_delay_us = (unsigned int)
		gpsu_user_env("GPSU_TEST_PUSH_DELAY_US", 0);
	/* holds a change before it fills new replicas, before it points */
	gpsu_user.change_delay_us = (unsigned int)
		gpsu_user_env("GPSU_TEST_CHANGE_DELAY_US", 0);
	gpsu_user.protect_call_ns = 0;
	gpsu_user.walk_ns_mib = 0;
	cap = (unsigned int)gpsu_user_knob(GPSU_K(queue_capacity));
	block = (unsigned int)gpsu_user_knob(GPSU_K(block_size));
	for (d = 0; d < gpsu_user.ndev; d++) {
		struct gpsu_user_dev *dev = &gpsu_user.dev[d];

		pthread_mutex_init(&dev->lock, NULL);
		dev->qmem = calloc(1, gps_queue_bytes(cap));
		dev->peek = calloc(GPSU_KEEP_MAX + 1, sizeof(*dev->peek));
		if (!dev->qmem || !dev->peek) {
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
		free(gpsu_user.dev[d].peek);
		gpsu_user.dev[d].qmem = NULL;
		gpsu_user.dev[d].peek = NULL;
		pthread_mutex_destroy(&gpsu_user.dev[d].lock);
	}
	gpsu_user.ndev = 0;
	if (gpsu_user.memfd >= 0) {
		close(gpsu_user.memfd);
		pthread_mutex_destroy(&gpsu_user.memfd_lock);
	}
	gpsu_user.memfd = -1;
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

static void gpsu_user_release(struct gpsu_user_alloc *ua)
{
	size_t g;
	int d;

	for (g = 0; ua->subs && g < ua->ngp; g++)
		gpsu_user_uncharge(ua, ua->subs[g]);

	/*
	 * The memfd keeps what no mapping shows any more: given back, and
	 * the placement's policy of the range with it (a policy set by
	 * mbind() lives in the file until it closes, a node of it each).
	 */
	if (ua->back && ua->placed)
		(void)mbind(ua->back, (size_t)ua->nrep * ua->len, MPOL_DEFAULT,
			    NULL, 0, 0);
	if (ua->back)
		munmap(ua->back, (size_t)ua->nrep * ua->len);
	if (ua->twin)
		munmap(ua->twin, (size_t)ua->nrep * ua->len);
	if (ua->base >= 0)
		(void)fallocate(gpsu_user.memfd,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				ua->base, (off_t)((size_t)ua->nrep * ua->len));
	for (d = 0; d < GPSU_USER_STRIPES; d++)
		pthread_mutex_destroy(&ua->plock[d]);
	free(ua->subs);
	free(ua->touched);
	free(ua->read);
	free(ua->map);
	free(ua->collapsed);
	free(ua->owner);
	free(ua->reach);
	free(ua->thrash);
	free(ua->kept);
	free(ua->rent);
	free(ua->unpeeked);
	free(ua);
}

/*
 * GPS: the subscription state at birth, as the driver's: every device
 * (automatic) or the home alone (gpsMemGPSManual), within the budgets,
 * in two passes so that a tight budget gives every page a copy before
 * any page a second: first one copy per page, at home or on the next
 * device that may hold it (home + 1, ...; counted against the home when
 * it is not there), then for an automatic allocation a copy on every
 * other device that may. ENOMEM, nothing charged, when a page fits
 * nowhere; else @failed[d]: the pages device d was left out of (counted
 * in subscribe_failed by the caller once the allocation exists).
 * A non-subscriber's view, and the host's, map the home's replica, else
 * the first subscriber's.
 */
static int gpsu_user_subs_init(struct gpsu_user_alloc *ua,
			       uint64_t *failed)
{
	bool manual = ua->a->flags & GPSU_ALLOC_MANUAL;
	int nd = gpsu_user.ndev, home = ua->a->home, pass, k, d, v;
	size_t g;

	ua->ngp = ua->len / ua->ps;
	ua->subs = calloc(ua->ngp, sizeof(*ua->subs));
	ua->touched = calloc(ua->ngp, sizeof(*ua->touched));
	ua->read = calloc(ua->ngp, sizeof(*ua->read));
	ua->collapsed = calloc(ua->ngp, 1);
	ua->map = calloc((size_t)(nd + 1) * ua->ngp, 1);
	if (!ua->subs || !ua->touched || !ua->read || !ua->collapsed ||
	    !ua->map)
		return ENOMEM;
	for (pass = 0; pass < (manual ? 1 : 2); pass++)
		for (g = 0; g < ua->ngp; g++) {
			for (k = 0; k < nd; k++) {
				d = (home + k) % nd;
				if ((!pass && ua->subs[g]) ||
				    (ua->subs[g] & (1ULL << d)))
					continue;
				if (gpsu_user_charge(ua, d, false))
					ua->subs[g] |= 1ULL << d;
				else if (pass == !manual)
					failed[d]++;	/* once, last pass */
			}
			if (!ua->subs[g])
				return ENOMEM;	/* released by the caller */
		}
	for (g = 0; g < ua->ngp; g++) {
		int first = (ua->subs[g] & (1ULL << home)) ? home :
			    __builtin_ctzll(ua->subs[g]);

		for (v = 0; v <= nd; v++)
			*gpsu_user_mapp(ua, v, g) =
				(v < nd && (ua->subs[g] & (1ULL << v))) ?
				(uint8_t)v : (uint8_t)first;
	}
	return 0;
}

/*
 * The allocation's range of the memfd, and the engine's own mapping of
 * it. The file grows to the ranges handed out, within RLIMIT_FSIZE
 * (past it the kernel would send SIGXFSZ), and a range is handed out
 * only where it fits: a request too large fails alone, and gives back
 * what it took if nothing came after it.
 */
static int gpsu_user_memfd(struct gpsu_user_alloc *ua)
{
	uint64_t size, step, at;
	struct rlimit fsize;
	int ret = 0;
	void *p;

	if (ua->len > GPSU_MEMFD_BYTES / (uint64_t)ua->nrep)
		return ENOMEM;
	size = (uint64_t)ua->nrep * ua->len;
	/* a 2 MiB step keeps a GPS page of 2 MiB on a huge page's bounds */
	step = (size + GPSU_MEMFD_ALIGN - 1) & ~(GPSU_MEMFD_ALIGN - 1);
	pthread_mutex_lock(&gpsu_user.memfd_lock);
	at = gpsu_user.memfd_next;
	if (step > GPSU_MEMFD_BYTES - at)
		ret = ENOMEM;
	else if (at + step > gpsu_user.memfd_size &&
		 !getrlimit(RLIMIT_FSIZE, &fsize) &&
		 fsize.rlim_cur != RLIM_INFINITY && at + step > fsize.rlim_cur)
		ret = EFBIG;
	else if (at + step > gpsu_user.memfd_size &&
		 ftruncate(gpsu_user.memfd, (off_t)(at + step)))
		ret = errno;
	if (!ret) {
		if (at + step > gpsu_user.memfd_size)
			gpsu_user.memfd_size = at + step;
		gpsu_user.memfd_next = at + step;
	}
	pthread_mutex_unlock(&gpsu_user.memfd_lock);
	if (ret)
		return ret;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 gpsu_user.memfd, (off_t)at);
	if (p == MAP_FAILED) {
		ret = errno;
		pthread_mutex_lock(&gpsu_user.memfd_lock);
		if (gpsu_user.memfd_next == at + step)
			gpsu_user.memfd_next = at;
		pthread_mutex_unlock(&gpsu_user.memfd_lock);
		return ret;
	}
	ua->base = (off_t)at;
	ua->back = p;
	return 0;
}

/* A view of replica @r: a mapping of its region of the memfd. */
static char *gpsu_user_map(struct gpsu_user_alloc *ua, int r)
{
	void *v = mmap(NULL, ua->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       gpsu_user.memfd,
		       ua->base + (off_t)((size_t)r * ua->len));

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
		ua->placed = true;
		(void)mbind(ua->back + (size_t)r * ua->len, ua->len,
			    MPOL_PREFERRED, mask, GPSU_MAX_DEVICES + 1, 0);
	}
}

static int gpsu_user_alloc(struct gpsu_alloc *a, unsigned int page_size)
{
	size_t ps = page_size ? page_size :
				gpsu_user_knob(GPSU_K(page_size));
	uint64_t failed[GPSU_MAX_DEVICES] = { 0 };
	struct gpsu_user_alloc *ua;
	int d, r, ret = ENOMEM;
	bool gps = a->kind == GPSU_KIND_GPS;

	ua = calloc(1, sizeof(*ua));
	if (!ua)
		return ENOMEM;
	ua->a = a;
	ua->base = -1;
	ua->nrep = gps ? gpsu_user.ndev : 1;
	ua->len = (a->size + ps - 1) & ~(ps - 1);
	for (r = 0; r < GPSU_USER_STRIPES; r++)
		pthread_mutex_init(&ua->plock[r], NULL);
	ret = gpsu_user_memfd(ua);
	if (ret)
		goto err_release;
	ret = ENOMEM;
	if (gps) {
		/* zero, as every replica is at first */
		ua->twin = mmap(NULL, (size_t)ua->nrep * ua->len,
				PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ua->twin == MAP_FAILED) {
			ua->twin = NULL;
			goto err_release;
		}
		ua->kept_stride = (ua->len / PAGE_SIZE + 8 * sizeof(long) - 1) /
				  (8 * sizeof(long));
		ua->kept = calloc((size_t)(gpsu_user.ndev + 1) *
				  ua->kept_stride, sizeof(long));
		ua->rent = calloc((size_t)gpsu_user.ndev + 1,
				  sizeof(*ua->rent));
		ua->unpeeked = calloc((size_t)gpsu_user.ndev + 1,
				      sizeof(*ua->unpeeked));
		if (!ua->kept || !ua->rent || !ua->unpeeked)
			goto err_release;
	}
	a->map_size = ua->len;
	a->page_size = ps;
	ua->ps = ps;
	if (gps) {
		ret = gpsu_user_subs_init(ua, failed);
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
			if (!ret)
				ret = gpsu_user_point_born(ua, d);
			if (ret)
				goto err_unmap;
		}
	}
	if (gps) {
		a->host = gpsu_user_map(ua, *gpsu_user_mapp(ua, gpsu_user.ndev,
							     0));
		if (!a->host)
			goto err_unmap;
		ret = gpsu_capture_arm(a->host, ua->len);
		if (!ret)
			ret = gpsu_user_point_born(ua, gpsu_user.ndev);
		if (ret)
			goto err_unmap;
		pthread_rwlock_wrlock(&gpsu_user.allocs_lock);
		/* born while tracking: tracked, as the driver's */
		if (gpsu_user.tracking && !(a->flags & GPSU_ALLOC_MANUAL))
			ret = gpsu_user_track_on(ua, true);
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
	/* only an allocation that exists has devices left out */
	for (d = 0; d < gpsu_user.ndev; d++)
		if (failed[d])
			gpsu_user_count(d, GPSU_S(subscribe_failed),
					failed[d]);
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

/* Bytes one process_vm_readv() moves at most (the kernel's cap: 2 GiB). */
#define GPSU_PVR_BYTES		(1UL << 30)

static int gpsu_pvr_refused;
static pthread_once_t gpsu_pvr_once = PTHREAD_ONCE_INIT;

/*
 * Whether process_vm_readv() may be used: where a seccomp filter is on
 * (Seccomp: 2 in /proc/self/status), a child tries it first, since a
 * filter may kill rather than refuse (systemd's SystemCallFilter without
 * SystemCallErrorNumber sends SIGSYS).
 */
static void gpsu_pvr_probe(void)
{
	char line[128], byte = 0, got = 1;
	struct iovec l = { &got, 1 }, r = { &byte, 1 };
	int filtered = 0, st;
	FILE *f = fopen("/proc/self/status", "r");
	pid_t pid;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			filtered = atoi(line + 8) == 2;
	if (f)
		fclose(f);
	if (!filtered)
		return;
	pid = fork();
	if (pid == 0)
		_exit(process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		gpsu_pvr_refused = 1;
}

/*
 * process_vm_readv() of this process, from the remote @r into the local
 * @l, @n bytes: the kernel checks both sides, so memory the
 * program cannot reach is EFAULT, not a signal. -1 where the call is
 * refused (then memcpy() serves). The calling thread's id, not the
 * process's: once the main thread has exited, its pid names no memory.
 */
static int gpsu_pvr(struct iovec *l, struct iovec *r, size_t n)
{
	pid_t me = (pid_t)syscall(SYS_gettid);
	ssize_t got;

	pthread_once(&gpsu_pvr_once, gpsu_pvr_probe);
	if (__atomic_load_n(&gpsu_pvr_refused, __ATOMIC_RELAXED))
		return -1;
	got = process_vm_readv(me, l, 1, r, 1, 0);
	if (got == (ssize_t)n)
		return 0;
	/* a part: it stopped at a page it could not reach */
	if (got >= 0 || errno == EFAULT)
		return EFAULT;
	if (errno != EPERM && errno != ENOSYS)
		return errno;
	__atomic_store_n(&gpsu_pvr_refused, 1, __ATOMIC_RELAXED);
	return -1;
}

/*
 * @n bytes from @src to @dst, one of them the program's buffer of a copy:
 * a buffer the program cannot read (or write) there is EFAULT, not a
 * signal, as with the driver, whose copies take the bytes with
 * copy_from_user() and copy_to_user(). Where the call is refused
 * (Docker's default seccomp profile asks CAP_SYS_PTRACE for it),
 * memcpy(), as before.
 */
static int gpsu_user_copy(void *dst, const void *src, size_t n)
{
	size_t done, len;
	int ret;

	for (done = 0; done < n; done += len) {
		struct iovec l, r;

		len = n - done < GPSU_PVR_BYTES ? n - done : GPSU_PVR_BYTES;
		l = (struct iovec){ (char *)dst + done, len };
		r = (struct iovec){ (char *)src + done, len };
		ret = gpsu_pvr(&l, &r, len);
		if (ret < 0) {
			memcpy((char *)dst + done, (const char *)src + done,
			       n - done);
			return 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* What @device sees: its replica, or the subscriber's its view maps. */
/*
 * @n bytes at @at of the memfd into or from the program's @buf: the
 * kernel's copy_to_user() or copy_from_user(), so memory the program
 * cannot reach is EFAULT, not a signal, with no page pinned (the page
 * cache is the replicas' memory).
 */
static int gpsu_user_rw(bool write, void *buf, off_t at, size_t n)
{
	size_t done;
	ssize_t got;

	for (done = 0; done < n; done += (size_t)got) {
		got = write ? pwrite(gpsu_user.memfd, (char *)buf + done,
				     n - done, at + (off_t)done) :
			      pread(gpsu_user.memfd, (char *)buf + done,
				    n - done, at + (off_t)done);
		if (got < 0 && errno == EINTR)
			got = 0;
		else if (got <= 0)
			return got < 0 ? errno : EIO;
	}
	return 0;
}

static int gpsu_user_read(const struct gpsu_alloc *a, size_t off, void *buf,
			  size_t n, int device)
{
	const struct gpsu_user_alloc *ua = a->engine;
	size_t at, end = off + n, part;
	int ret = 0, r;

	if (off > ua->len || n > ua->len - off)
		return EINVAL;
	if (device < 0 || device >= gpsu_user.ndev)
		return EINVAL;
	if (!ua->map)
		return gpsu_user_rw(false, buf, ua->base +
				    (off_t)((size_t)(ua->nrep > 1 ? device : 0) *
					    ua->len + off), n);
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	/* a run of GPS pages the view maps on one replica: one read */
	for (at = off; at < end && !ret; at += part) {
		r = *gpsu_user_mapp(ua, device, at / ua->ps);
		for (part = 0; at + part < end &&
		     *gpsu_user_mapp(ua, device, (at + part) / ua->ps) == r; )
			part += ((at + part) / ua->ps + 1) * ua->ps - (at + part);
		if (part > end - at)
			part = end - at;
		ret = gpsu_user_rw(false, (char *)buf + (at - off),
				   ua->base + (off_t)((size_t)r * ua->len + at),
				   part);
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	return ret;
}

/* Bytes of the program's buffer a fill takes in at a time. */
#define GPSU_FILL_CHUNK		(64 * 1024)

/*
 * Writes @n bytes from @off of every replica and its twin, a small page at
 * a time under its lock: a copy is everyone's at once, no device's store
 * to publish. The twins take the bytes written, not the replica's (a
 * store racing with the copy must still diff as changed). @src is the
 * engine's memory, or the program's bytes taken in; NULL: @value in every
 * byte. allocs_lock held for reading.
 */
static void gpsu_user_fill_in(struct gpsu_user_alloc *ua, size_t off,
			      const char *src, int value, size_t n)
{
	size_t at, end = off + n, part;
	int r;

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
			if (src) {
				memcpy(dst, src + (at - off), part);
				if (tw)
					memcpy(tw, src + (at - off), part);
			} else {
				memset(dst, value, part);
				if (tw)
					memset(tw, value, part);
			}
		}
		pthread_mutex_unlock(l);
	}
}

/*
 * A write or a set of [@off, @off + @n): the program's bytes (@buf) taken
 * in first, checked (gpsu_user_copy()), where they go to more than one
 * place; straight in where they go to one (conventional and managed
 * memory: one copy, no twin).
 */
static int gpsu_user_fill(const struct gpsu_alloc *a, size_t off,
			  const void *buf, int value, size_t n)
{
	struct gpsu_user_alloc *ua = a->engine;
	size_t at, len;
	char *in = NULL;
	int ret = 0;

	if (off > ua->len || n > ua->len - off)
		return EINVAL;
	if (buf && ua->nrep == 1 && !ua->twin)
		return gpsu_user_rw(true, (void *)buf, ua->base + (off_t)off, n);
	if (buf) {
		in = malloc(n < GPSU_FILL_CHUNK ? n : GPSU_FILL_CHUNK);
		if (!in)
			return ENOMEM;
	}
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (at = off; at < off + n && !ret; at += len) {
		len = off + n - at < GPSU_FILL_CHUNK ? off + n - at :
						       GPSU_FILL_CHUNK;
		if (buf)
			ret = gpsu_user_copy(in, (const char *)buf + (at - off),
					     len);
		if (!ret)
			gpsu_user_fill_in(ua, at, in, value, len);
	}
	pthread_rwlock_unlock(&gpsu_user.allocs_lock);
	free(in);
	return ret;
}

/*
 * A copy from what @device sees of [@soff, @soff + @n) of @sa into every
 * replica of @da: replica to replicas, no buffer between (the library's
 * bounce is for engines that copy from plain memory only). Overlapping
 * ranges of one allocation decline (ENOTSUP): the bounce gives them
 * memmove()'s meaning.
 */
static int gpsu_user_copy_op(const struct gpsu_alloc *da, size_t doff,
			     const struct gpsu_alloc *sa, size_t soff,
			     size_t n, int device)
{
	struct gpsu_user_alloc *dua = da->engine, *sua = sa->engine;
	size_t at, part;

	if (doff > dua->len || n > dua->len - doff || soff > sua->len ||
	    n > sua->len - soff || device < 0 || device >= gpsu_user.ndev)
		return EINVAL;
	if (dua == sua && doff < soff + n && soff < doff + n)
		return ENOTSUP;
	pthread_rwlock_rdlock(&gpsu_user.allocs_lock);
	for (at = soff; at < soff + n; at += part) {
		size_t g = at / sua->ps;
		int r = sua->map ? *gpsu_user_mapp(sua, device, g) : device;

		part = (g + 1) * sua->ps - at;
		if (part > soff + n - at)
			part = soff + n - at;
		gpsu_user_fill_in(dua, doff + (at - soff),
				  gpsu_user_replica(sua, r) + at, 0, part);
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

/* A knob set, then what its change must do (the driver's flags). */
static int gpsu_user_knob_set_op(int i, uint64_t v)
{
	int ret;
	unsigned int changed = gpsu_user_knob_set(i, v, &ret);

	if (changed & GPS_KNOB_WAKE)
		gpsu_user_threads_kick(changed & GPS_KNOB_LINK_RESET);
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
	.copy = gpsu_user_copy_op,
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
