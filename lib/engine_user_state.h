/* SPDX-License-Identifier: MIT */
/*
 * The native engine's state, shared by its three files (calls flow
 * down this list; engine_user.h has the lock order):
 *
 *   engine_user.c          set-up, allocations and their views, copies,
 *                          the ops table
 *   engine_user_subs.c     subscriptions (advice, collapse), tracking,
 *                          managed memory on fault
 *   engine_user_publish.c  harvest, diff and push, fences, the push
 *                          threads' rounds, the queues' reshape
 */
#ifndef GPSU_ENGINE_USER_STATE_H
#define GPSU_ENGINE_USER_STATE_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "engine.h"
#include "engine_user.h"

/* the pure core, after the library's headers: it defines min/max */
#include "gps_diff.h"
#include "gps_linkmodel.h"
#include "gps_queue.h"
#include "gps_thrash.h"

#define GPSU_USER_STRIPES	64	/* page locks of an allocation */
#define GPSU_USER_HELP_MIN	8	/* pages of a fence worth a helper */
/*
 * Written pages a harvest may leave writable (engine_user_publish.c,
 * "Pages kept writable"): at most GPSU_KEEP_MAX; by default as many as
 * one protecting scan costs blind diffs of GPSU_KEEP_DIFF_NS each.
 */
#define GPSU_KEEP_MAX		512
#define GPSU_KEEP_DIFF_NS	500
#define GPSU_KEEP_START		64	/* before any scan was timed */
#define GPSU_KEEP_UNPEEKED	8	/* harvests unpeeked after too many */

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
	size_t *peek;			/* a run's written pages, under lock:
					 * GPSU_KEEP_MAX + 1 */
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
	off_t base;			/* its replicas in gpsu_user.memfd */
	bool placed;			/* mbind() gave the range a policy */
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
	 * touched[g]: the devices that accessed g while tracked, read[g]:
	 * those of them seen loading (set in the fault handler; kept at the
	 * stop by track_policy "touched" and "read").
	 */
	size_t ps, ngp;
	uint64_t *subs, *touched, *read;
	uint8_t *map, *collapsed;
	bool tracked;			/* its device views watched (tracking) */
	/*
	 * Managed memory on fault: the device that has small page p
	 * (owner[p]), the devices whose views reach it (reach[p]: the
	 * owner's, and others' while it is pinned; the rest have it
	 * PROT_NONE, and their first access moves it), and its thrashing
	 * guard (thrash[p], ns); under um_lock, a spinlock taken in the
	 * fault handler.
	 */
	uint8_t *owner;
	uint64_t *reach;
	struct gps_thrash *thrash;
	int um_lock;
	/*
	 * GPS: the small pages a harvest left writable, written, per view
	 * (v == ndev: the host view), kept_stride longs a view: under the
	 * lock of the device that harvests the view (the host view's: its
	 * home's), or allocs_lock for writing. Counts only: a kept page
	 * found again is no new write fault. rent[v]: the kept pages the
	 * harvests of view v diffed again since its runs were last all
	 * protected; unpeeked[v]: harvests of view v left to protect
	 * without a peek, after a peek found too many written pages.
	 */
	unsigned long *kept;
	size_t kept_stride;
	uint64_t *rent;
	uint64_t *unpeeked;
};

struct gpsu_user_state {
	int ndev;
	/*
	 * Every allocation's replicas, each at its own range, never used
	 * again once freed (the file is sparse, up to 2^62 bytes): one
	 * descriptor for the process, however many allocations it makes
	 * (a memfd each held one, and at ulimit -n 1024 the 1,018th
	 * failed). The file grows as ranges are handed out.
	 */
	int memfd;
	pthread_mutex_t memfd_lock;	/* the two below */
	uint64_t memfd_next;		/* bytes handed out */
	uint64_t memfd_size;		/* the file's size */
	unsigned int push_delay_us;	/* $GPSU_TEST_PUSH_DELAY_US: tests */
	unsigned int change_delay_us;	/* $GPSU_TEST_CHANGE_DELAY_US */
	int keep_pages;			/* $GPSU_KEEP_PAGES, -1: by cost */
	uint64_t protect_call_ns;	/* atomic: a protection, average */
	uint64_t walk_ns_mib;		/* atomic: a peek's walk of 1 MiB */
	struct gpsu_user_dev dev[GPSU_MAX_DEVICES];
	pthread_rwlock_t allocs_lock;
	struct gpsu_user_alloc *allocs;	/* GPS allocations */
	bool tracking;			/* under allocs_lock */
	uint64_t replica_pages;		/* every device's, atomic: max_bytes */
	struct gpsu_user_stats st;	/* atomic adds */
};

extern struct gpsu_user_state gpsu_user;

#define GPSU_STAT_ADD(field, n)						\
	__atomic_fetch_add(&gpsu_user.st.field, (n), __ATOMIC_RELAXED)

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
	uint64_t rediffed;		/* kept pages found again, diffed */
	uint64_t protected;		/* found pages protected again */
	size_t keep_left;		/* pages it may still keep writable */
	size_t keep_budget;		/* of the whole harvest */
	size_t ranges, last_range;	/* 2 MiB ranges a scan protected */
	bool keeping;			/* the run's pages stay writable */
	bool collect;			/* a fence's scan: list, diff later */
	struct gps_diff df;
};

static inline uint64_t gpsu_user_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * GPS_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* GPS: where view @v maps GPS page @g (v == ndev: the host view). */
static inline uint8_t *gpsu_user_mapp(const struct gpsu_user_alloc *ua, int v,
			       size_t g)
{
	return &ua->map[(size_t)v * ua->ngp + g];
}

static inline char *gpsu_user_view(const struct gpsu_user_alloc *ua, int v)
{
	return v == gpsu_user.ndev ? ua->a->host : ua->a->views[v];
}

static inline char *gpsu_user_replica(const struct gpsu_user_alloc *ua, int r)
{
	return ua->back + (size_t)(ua->nrep > 1 ? r : 0) * ua->len;
}

/* The word and bit of small page @page of view @v in ua->kept. */
static inline unsigned long *gpsu_user_kept_word(const struct gpsu_user_alloc *ua,
						 int v, size_t page,
						 unsigned long *bit)
{
	*bit = 1UL << (page % (8 * sizeof(long)));
	return &ua->kept[(size_t)v * ua->kept_stride +
			 page / (8 * sizeof(long))];
}

/* The lock of small page @page of every replica of @ua. */
static inline pthread_mutex_t *gpsu_user_plock(const struct gpsu_user_alloc *ua,
					size_t page)
{
	return (pthread_mutex_t *)&ua->plock[page % GPSU_USER_STRIPES];
}

/*
 * A queued page is replica r's small page p, numbered r * (small pages
 * of a replica) + p: a view that maps another device's replica (a
 * non-subscriber's) stores into that replica, which is what is diffed
 * and sent from.
 */
static inline uint64_t gpsu_user_qpage(const struct gpsu_user_alloc *ua, int r,
				size_t p)
{
	return (uint64_t)r * (ua->len / PAGE_SIZE) + p;
}

/* ---- engine_user_budget.c -------------------------------------------- */

/* The nodes' watermarks read, once the devices are known. */
void gpsu_user_budget_init(void);
/*
 * A replica of one GPS page of @ua for device @d, charged to the budgets
 * (max_bytes, node_max_bytes, the node's reserve; @force: past them, for
 * memory already there); false when it would pass one: the device is
 * left out.
 */
bool gpsu_user_charge(const struct gpsu_user_alloc *ua, int d, bool force);
/* The replicas of the devices of @subs, one GPS page each, given back. */
void gpsu_user_uncharge(const struct gpsu_user_alloc *ua, uint64_t subs);

/* ---- engine_user_subs.c ---------------------------------------------- */

/* At birth: view @v's pages on the replicas the map says; an errno. */
int gpsu_user_point_born(struct gpsu_user_alloc *ua, int v);

/* ---- engine_user_publish.c ------------------------------------------- */

/* A fence of the devices of @mask, with @host the host views; an errno. */
int gpsu_user_fence_mask(uint64_t mask, bool host);
/* Of one device, or (-1) of every device and the host views. */
int gpsu_user_fence(int device);
/* A stream's ring: its fences on a thread of their own. */
struct gpsu_engine_ring *gpsu_user_ring_start(void);
/* One round of device @d's push thread. */
uint64_t gpsu_user_round(int d);
/* The knob hooks (engine_user.h): the queues laid out again, the links'
 * debts forgotten. */
int gpsu_user_queues_reconfigure(unsigned int capacity,
				 unsigned int watermark,
				 unsigned int block_size);
void gpsu_user_link_reset(void);
/* Every pending store of GPS page @g of the replicas of @mask published,
 * @h scratch; allocs_lock held for writing. */
/*
 * The small pages of a change's range some view wrote since a harvest
 * last protected them, a bit per (replica, page): replica r's page p0 + i
 * is bit r * np + i (gpsu_user_settle()).
 */
struct gpsu_written {
	unsigned long *bits;
	size_t p0, np;
};

void gpsu_user_settle(struct gpsu_user_alloc *ua, size_t g, uint64_t mask,
		      struct gpsu_harvest *h, const struct gpsu_written *wr);

/* ---- engine_user_subs.c ---------------------------------------------- */

int gpsu_user_advise(const struct gpsu_alloc *a, size_t off, size_t len,
		     enum gpsu_advice advice, int device);
int gpsu_user_query(const struct gpsu_alloc *a, size_t first, uint32_t nr,
		    unsigned long long *subs);
int gpsu_user_track(bool start);
/* track_policy "read" (its words: lib/knob_table.c) */
#define GPSU_TRACK_POLICY_READ	1
/* A new allocation watched: tracked (tracking on), managed on fault. */
int gpsu_user_track_on(struct gpsu_user_alloc *ua, bool born);
int gpsu_user_um_on(struct gpsu_user_alloc *ua);
/* The fault table's callbacks (engine_user_fault.c). */
int gpsu_user_track_fault(void *ctx, int d, uintptr_t addr, bool write,
			  uint64_t *sleep_ns);
int gpsu_user_um_fault(void *ctx, int d, uintptr_t addr, bool write,
		       uint64_t *sleep_ns);

#endif /* GPSU_ENGINE_USER_STATE_H */
