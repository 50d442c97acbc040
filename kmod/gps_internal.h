/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gps internal interfaces: the objects the driver is made of and the rules
 * for locking them.
 *
 * Objects:
 *   struct gps_dev     one per device (= online NUMA node): its push thread,
 *                      its dirty list and its coalescing write queue
 *   struct gps_ctx     one per open of /dev/gps: the allocations it owns
 *   struct gps_alloc   one allocation: geometry, views, shadow page table
 *   struct gps_gpage   one GPS page: subscriber set and replicas
 *   struct gps_replica one device's copy of one GPS page: its small pages,
 *                      their twins and dirty bits
 */

/**
 * DOC: lock order
 *
 * Outermost first::
 *
 *   gps_knob_lock                      (knob changes)
 *   gps_dev.remote_lock                (several: in device order)
 *     gps_dev.harvest_lock             (several: in device order)
 *       gps_alloc.sub_sem              (write: subscription changes)
 *         page lock of replica pages   (several: ascending, harvest only)
 *           mapping->i_mmap_rwsem      (unmap_mapping_range)
 *         gps_gpage.lock               (spinlock)
 *           gps_dev.dirty_lock         (spinlock)
 *       gps_dev.link_lock              (spinlock, a leaf)
 *
 * Beside the tree: gps_ctx.host_lock -> gps_dev.remote_lock ->
 * gps_dev.harvest_lock: a host fence (gps_fence_host()), which nothing
 * else nests in.  A remote_lock is held only by fences
 * (gps_fence_owners()), around the harvest_locks of the owners they fence.
 * mmap_lock (or the VMA lock) -> gps_alloc.sub_sem ->
 * page lock: the fault paths (sub_sem for reading; inside the page lock,
 * gps_gpage.lock -> gps_dev.dirty_lock as in the tree).  mmap_lock ->
 * gps_ctx.lock: gps_mmap(); gps_ctx.lock is a leaf, held only to look up,
 * insert or remove allocations.  gps_all_allocs_lock -> sub_sem (read):
 * the debugfs histogram.  Nothing here takes mmap_lock, and nothing
 * copies from or to user memory while holding sub_sem or a harvest_lock,
 * since such a copy may fault on a GPS view and re-enter the fault path.
 */

/*
 * What protects what:
 *  - A replica's existence and a GPS page's subscriber set change only
 *    with every harvest_lock and sub_sem (write) held; for managed memory
 *    (gps_migrate.c), whose single copies no harvester ever reaches, with
 *    sub_sem (write) and the GPS page's lock.  The harvesters,
 *    holding their own harvest_lock, may therefore use replicas and
 *    subscriber sets without sub_sem; the fault paths use sub_sem (read).
 *  - gps_gpage.lock serialises every access to the contents of a GPS
 *    page's replicas done by the driver (diff, push, copy, memset) and
 *    the twins and dirty bits of its replicas.  The copies into a new
 *    replica (subscribe, a managed page's move) do without it: they hold
 *    sub_sem (write), subscribe every harvest_lock too, with the page's
 *    views zapped, so that no other access can run; the lock is taken
 *    only to publish the new replica.
 *  - A small page's dirty bit is set by page_mkwrite with the page locked
 *    and cleared by the harvester with the page locked, before the views
 *    are write-protected again: so a write that faults in between is
 *    never lost.
 *  - A small page's wmapped bit is set, under gps_gpage.lock, before any
 *    view may map it writable (page_mkwrite, a capture), and cleared by
 *    the harvester only once every view is write-protected, the page
 *    still locked: a page without it holds still but for the driver, and
 *    a push may write its words whole (GPS_BYTES_BLEND).  Its written
 *    bit is set with it and never cleared: a page without one has held
 *    nothing but what the driver wrote under that lock, the same bytes
 *    as every other replica's twin (or page, without one) but for the
 *    stores a pusher is publishing, so a push may copy it whole.
 *  - A queue (core/gps_queue.c) is used only under its device's
 *    harvest_lock.  A fence's
 *    helpers (gps_help.c, in gps_harvest.c's shared loop) harvest and
 *    push under the lock their fence holds, never using the queue.
 */
#ifndef _GPS_INTERNAL_H
#define _GPS_INTERNAL_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/lockdep.h>
#include <linux/spinlock.h>
#include <linux/rwsem.h>
#include <linux/kref.h>
#include <linux/wait.h>
#include <linux/list.h>
#include <linux/xarray.h>
#include <linux/mm_types.h>
#include <linux/page-flags.h>
#include <linux/sched/clock.h>
#include <linux/gps.h>
#include "gps_queue.h"
#include "gps_diff.h"
#include "gps_knobs.h"

/* Every device's view, then the host view (gps_host_view()). */
#define GPS_MAX_VIEWS		(GPS_MAX_DEVICES + 1)

/* Values a fence reports back. */
struct gps_fence_stats {
	u64 pages_harvested;
	u64 blocks_pushed;
	u64 bytes_pushed;
};

/* Counters of one device; updated with atomics, read by debugfs. */
struct gps_dev_stats {
#define GPS_STAT(_name, ...)	atomic64_t _name
#include "gps_stats.h"
#undef GPS_STAT
	atomic64_t to_blocks[GPS_MAX_DEVICES];	/* traffic matrix row */
	atomic64_t to_bytes[GPS_MAX_DEVICES];
};

struct gps_helpers;

struct gps_dev {
	int id;				/* device index */
	int nid;			/* NUMA node */
	struct task_struct *thread;	/* gps/<nid> */
	wait_queue_head_t wait;		/* the thread sleeps here */
	struct mutex harvest_lock;	/* harvest and push of this device */
	atomic_t fences_waiting;	/* for harvest_lock: the thread yields */
	spinlock_t dirty_lock;		/* dirty, nr_dirty, nr_hot */
	struct list_head dirty;		/* replicas with dirty small pages */
	unsigned long nr_dirty;
	unsigned long nr_hot;		/* of nr_dirty: kept writable only */
	atomic_long_t remote_mask;	/* devices whose replicas we dirtied */
	struct mutex remote_lock;	/* taking and fencing remote_mask */
	struct gps_queue queue;
	struct gps_dev_stats stats;
	struct gps_diff *scratch;	/* diff output, under harvest_lock */
	spinlock_t link_lock;		/* link_free_ns */
	u64 link_free_ns;		/* link model: busy until */
	struct gps_helpers *helpers;	/* of fences: gps_help.c, or NULL */
	bool helped;			/* a fence's helpers are at work */
	struct dentry *debugfs;
};

/*
 * @dev's harvest_lock is held: by the caller, or by the fence the caller
 * helps (gps_help.c), which holds it until every helper is done.
 */
#define gps_assert_harvesting(dev)					\
	lockdep_assert(lockdep_is_held(&(dev)->harvest_lock) ||		\
		       READ_ONCE((dev)->helped))

/*
 * A fence waits for @dev's harvest_lock: the push thread ends its round
 * (harvest and aged pushes), since the fence does the same work on every
 * CPU of the node and would spin or sleep on the lock meanwhile.
 */
static inline bool gps_fence_waits(struct gps_dev *dev)
{
	return atomic_read(&dev->fences_waiting);
}

/*
 * The clock of the driver's own ages and time counters: local_clock(),
 * not ktime_get_ns(), which reads the clocksource, and where the TSC is
 * unstable (every TCG guest: "TSCs unsynchronized") that is the HPET, an
 * emulated device each read of which holds qemu's global lock, taken per
 * fault and twice per replica harvested.  Across CPUs it may be a tick
 * off: ages compare signed (a page dirtied "later" is young), durations
 * stop at zero.  The link model keeps ktime_get_ns(): it is one clock for
 * every device.
 */
static inline u64 gps_clock(void)
{
	return local_clock();
}

static inline u64 gps_clock_since(u64 t0)
{
	s64 d = gps_clock() - t0;

	return d > 0 ? d : 0;
}

/*
 * Who harvests: @dev's push thread or a fence (its harvest_lock held), or
 * a helper of that fence.  @direct: push every changed page at once, past
 * the queue, which only its lock's holder may use.
 */
struct gps_harvester {
	struct gps_dev *dev;
	struct gps_diff *df;
	struct gps_fence_stats *st;	/* or NULL */
	bool direct;
};

/* Per open file. */
struct gps_ctx {
	struct mutex lock;		/* protects allocs */
	struct xarray allocs;		/* handle -> struct gps_alloc */
	struct address_space *mapping;	/* of the file: views live here */
	bool tracking;			/* between GPS_TRACK_START and STOP */
	struct mutex host_lock;		/* one host fence at a time */
	atomic_long_t host_dirty;	/* owners of replicas host views wrote */
	atomic_t async_fences;		/* io_uring fences in flight */
};

struct gps_replica {
	struct list_head dirty_link;	/* on the owner's dirty list */
	bool on_dirty_list;		/* under the owner's dirty_lock */
	bool hot;			/* on it only for pages kept writable */
	u8 idle;			/* hot: storeless harvests in a row */
	u64 dirtied_ns;			/* when it went on the list */
	struct gps_alloc *alloc;
	unsigned long gidx;		/* GPS page index */
	int dev;			/* owner device */
	DECLARE_BITMAP(mapped_views, GPS_MAX_VIEWS); /* may map these pages */
	bool narrow;			/* new, or one page written last */
	unsigned long *dirty;		/* small pages writable since harvest */
	unsigned long *seen;		/* jiffies | 1 a harvest saw a store */
	unsigned long *kept;		/* left writable by the last harvest */
	unsigned long *wmapped;		/* a view may map it writable */
	unsigned long *written;		/* a view has mapped it writable */
	struct page **twins;		/* snapshot per dirty small page */
#if IS_ENABLED(CONFIG_GPS_DEBUG)
	struct page **shadows;		/* gps_still.c */
#endif
	struct page *pages[];		/* nr_sub small pages */
};

struct gps_gpage {
	spinlock_t lock;		/* contents, twins and dirty bits */
	u64 subs;			/* subscriber devices */
	unsigned long touched_r;	/* tracking: devices that read it */
	unsigned long touched_w;	/* tracking: devices that wrote it */
	bool collapsed;			/* system scope: one copy for good */
	struct gps_replica *rep[];	/* per device, NULL if not subscribed */
};

struct gps_alloc {
	struct kref ref;		/* ctx, each VMA, in-flight users */
	struct gps_ctx *ctx;
	u64 handle;
	pgoff_t pgoff;			/* view of device 0 in the file */
	pgoff_t stride;			/* small pages per view */
	u64 size;
	u32 kind;
	u32 flags;
	u32 home;
	unsigned int gshift;		/* GPS page shift */
	unsigned int nr_sub;		/* small pages per GPS page */
	unsigned long nr_gpages;
	size_t gpage_bytes;		/* size of one struct gps_gpage */
	struct rw_semaphore sub_sem;
	bool dead;			/* freed: views SIGBUS; under sub_sem */
	bool tracking;			/* faults record accesses */
	struct list_head all_link;	/* on gps_all_allocs */
	atomic_t maps;			/* VMAs of its views (gps_mmap()) */
	atomic64_t write_faults;
	atomic64_t pushes;
	void *gpages;			/* nr_gpages struct gps_gpage */
	/* GPS_MEM_MANAGED: per GPS page, jiffies; under sub_sem (write) */
	struct gps_thrash *um;
};

/* gps_devices.c: the device table, and counters of the whole driver */
extern struct gps_dev *gps_devs;
extern unsigned int gps_nr_devs;
extern atomic64_t gps_nr_allocs;
extern atomic64_t gps_replica_pages;
extern atomic64_t gps_twin_pages;
int gps_devs_init(void);
void gps_devs_free(void);

/* Every device's harvest_lock is held (gps_lock_all()). */
static inline void gps_assert_all_harvesting(void)
{
#ifdef CONFIG_LOCKDEP
	unsigned int d;

	for (d = 0; d < gps_nr_devs; d++)
		lockdep_assert_held(&gps_devs[d].harvest_lock);
#endif
}

/* @page is locked by us; page locks have no lockdep: the debug build's. */
static inline void gps_assert_page_locked(struct page *page)
{
	if (IS_ENABLED(CONFIG_GPS_DEBUG))
		WARN_ON_ONCE(!PageLocked(page));
}

/*
 * Views: one per device, then the host view, which loads and stores as
 * the home device's but is never kept writable, so that its write faults
 * tell host fences whose replicas the host wrote (gps_fence_host()).
 */
/* Every device, as a mask. */
static inline u64 gps_all_devices(void)
{
	return gps_nr_devs == 64 ? ~0ULL : BIT_ULL(gps_nr_devs) - 1;
}

static inline unsigned int gps_nr_views(void)
{
	return gps_nr_devs + 1;
}

static inline int gps_host_view(void)
{
	return gps_nr_devs;
}

/* The device that @view loads and stores as. */
static inline int gps_view_dev(const struct gps_alloc *a, int view)
{
	return view < gps_nr_devs ? view : a->home;
}

static inline struct gps_gpage *gps_gpage(struct gps_alloc *a, unsigned long i)
{
	return (struct gps_gpage *)((char *)a->gpages + i * a->gpage_bytes);
}

/*
 * Small page @sub of @r may be mapped writable from now on: gp->lock
 * held, before any view does (see "What protects what").
 */
static inline void gps_set_wmapped(struct gps_replica *r, unsigned int sub)
{
	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	set_bit(sub, r->wmapped);
	set_bit(sub, r->written);
}

/* gps_pagetable.c */
bool gps_node_short(int nid, unsigned int nr);
struct gps_replica *gps_replica_alloc(struct gps_alloc *a, unsigned long gidx,
				      int dev, bool zero);
void gps_replica_free(struct gps_replica *r);
struct gps_replica *gps_view_replica(struct gps_alloc *a, struct gps_gpage *gp,
				     int view);
void gps_zap_views(struct gps_alloc *a, unsigned long first,
		   unsigned long nr, struct gps_replica *removed);
void gps_pagetable_free(struct gps_alloc *a);

/* gps_alloc.c */
int gps_alloc_create(struct gps_ctx *ctx, struct gps_alloc_args *args);
int gps_alloc_free(struct gps_ctx *ctx, u64 handle);
struct gps_alloc *gps_alloc_get(struct gps_ctx *ctx, u64 handle);
void gps_alloc_put(struct gps_alloc *a);
void gps_alloc_kill(struct gps_alloc *a);
bool gps_range_ok(struct gps_alloc *a, u64 offset, u64 length);
int gps_query(struct gps_ctx *ctx, struct gps_query_args *args);
struct gps_alloc *gps_alloc_find_view(struct gps_ctx *ctx, pgoff_t pgoff,
				      unsigned long npages);
extern struct mutex gps_all_allocs_lock;
extern struct list_head gps_all_allocs;

/* gps_migrate.c: managed memory */
int gps_um_init(struct gps_alloc *a);
bool gps_um_wants(struct gps_alloc *a, unsigned long g, int to);
void gps_um_migrate(struct gps_alloc *a, unsigned long g, int to);

/* gps_subscribe.c */
int gps_advise(struct gps_ctx *ctx, struct gps_advise_args *args);
void gps_quiesce(struct gps_alloc *a, unsigned long first, unsigned long nr);
int gps_subscribe_page(struct gps_alloc *a, unsigned long g, int dev);
void gps_unsubscribe_page(struct gps_alloc *a, unsigned long g, int dev,
			  bool zap);

/* gps_copy.c */
int gps_memset(struct gps_ctx *ctx, struct gps_memset_args *args);
int gps_write(struct gps_ctx *ctx, struct gps_copy_args *args);
int gps_read(struct gps_ctx *ctx, struct gps_copy_args *args);

/* gps_track.c */
int gps_track(struct gps_ctx *ctx, struct gps_track_args *args);

/* gps_link.c: traffic counted and charged on the links, and the waits */
void gps_link_send(struct gps_dev *dev, u64 to, u64 blocks, u64 bytes);
void gps_link_wait(struct gps_dev *dev, bool latency);
void gps_link_wait_all(unsigned long mask, bool latency);
void gps_link_reset(void);

/* gps_fault.c */
vm_fault_t gps_fault(struct vm_fault *vmf);
vm_fault_t gps_page_mkwrite(struct vm_fault *vmf);

/* gps_mmap.c */
extern const struct vm_operations_struct gps_vm_ops;
int gps_mmap(struct file *file, struct vm_area_struct *vma);

/* gps_push.c: the device's queue, and pushes into the other replicas */
void gps_push_diff(const struct gps_harvester *h, struct gps_replica *src,
		   unsigned int sub, unsigned int nb);
void gps_push_drain(struct gps_dev *dev, struct gps_fence_stats *st);
void gps_push_aged(struct gps_dev *dev, unsigned long age);
int gps_push_queue_alloc(struct gps_queue *q, int nid, unsigned int capacity,
			 unsigned int watermark, unsigned int block_size);
void gps_push_queue_free(struct gps_queue *q);
void gps_push_queue_swap(struct gps_dev *dev, struct gps_queue *fresh);
void gps_push_queue_purge(struct gps_dev *dev, struct gps_alloc *a);

/* gps_dirty.c: the dirty lists */
void gps_mark_dirty(struct gps_replica *r);
void gps_mark_hot(struct gps_replica *r, bool stored);
void gps_dirty_del(struct gps_dev *dev, struct gps_replica *r);
struct gps_replica *gps_dirty_pop(struct gps_dev *dev, u64 min_age);
unsigned int gps_dirty_take(struct gps_dev *dev, struct gps_replica **batch,
			    unsigned int n);
void gps_dirty_purge(struct gps_alloc *a);

/* gps_protect.c: write-protection of harvested pages */
bool gps_write_protect(struct gps_replica *r, unsigned long *dirty,
		       unsigned long *expiring);
void gps_retire(struct gps_replica *r, const unsigned long *idle);

/*
 * gps_harvest.c: a replica's harvest, handing each page's diff to
 * gps_push_diff(), and the loops over the dirty list
 */
unsigned long gps_harvest(struct gps_dev *dev, unsigned long budget,
			  u64 min_age, struct gps_fence_stats *st);
unsigned int gps_harvest_replica(struct gps_harvester *h,
				 struct gps_replica *r);
unsigned long gps_harvest_helped(struct gps_dev *dev, unsigned long budget,
				 struct gps_fence_stats *st);

/* gps_help.c: the fence helpers' threads, on the node's CPUs */
int gps_helpers_start(struct gps_dev *dev);
void gps_helpers_stop(struct gps_dev *dev);

/* gps_thread.c */
int gps_thread_start(struct gps_dev *dev);
void gps_thread_stop(struct gps_dev *dev);
void gps_wake_all(void);
void gps_threads_quiesce(void);

/* gps_fence.c: fences, and work on every device at once */
int gps_fence(int device, struct gps_fence_stats *st);
int gps_fence_devices(u64 mask, struct gps_fence_stats *st);
int gps_fence_host(struct gps_ctx *ctx, u64 mask, struct gps_fence_stats *st);
int gps_fence_target(u32 device, u32 flags, u64 mask, u64 *out);
int gps_fence_request(struct gps_ctx *ctx, u32 flags, u64 mask,
		      struct gps_fence_stats *st);
int gps_lock_all(bool killable);
void gps_unlock_all(void);
void gps_drain_all_locked(struct gps_fence_stats *st);
int gps_queues_reconfigure(unsigned int capacity, unsigned int watermark,
			   unsigned int block_size);

/* gps_sysfs.c */
int gps_sysfs_init(void);
void gps_sysfs_exit(void);

/* gps_debugfs.c */
void gps_debugfs_init(void);
void gps_debugfs_exit(void);

#endif /* _GPS_INTERNAL_H */
