/* SPDX-License-Identifier: MIT */
/*
 * The native engine's internals, shared by its files:
 *
 *   engine_user_capture.c  write capture: the userfaultfd (asynchronous
 *                          write-protect) and PAGEMAP_SCAN, their probe
 *   engine_user_fault.c    access faults: SIGSEGV on views made
 *                          PROT_NONE, routed to the range's callback
 *                          (tracking, managed memory on fault); holds
 *   engine_user_ring.c     asynchronous fences: a thread per ring
 *   engine_user_thread.c   push threads: a round per interval
 *   engine_user_help.c     fence helpers: a batch on the device's CPUs
 *   engine_user_publish.c  harvest, diff and push, fences, rounds (over
 *                          the pure core: core/gps_diff, gps_queue,
 *                          gps_bytes, gps_linkmodel)
 *   engine_user_budget.c   replica budgets and the node reserve
 *   engine_user_subs.c     subscriptions, tracking, managed memory
 *   engine_user.c          devices, replicas and twins, copies, the ops
 *                          table (engine_user_state.h: their shared state)
 *
 * Lock order (outer to inner):
 *
 *   gpsu_user.allocs_lock (rwlock)  the list of allocations and every
 *                                   allocation's subscriptions (masks,
 *                                   which replica each view maps); fences,
 *                                   copies and reads hold it for reading;
 *                                   alloc, free, advice and tracking for
 *                                   writing (so every queue is empty then:
 *                                   a queue only holds blocks inside a
 *                                   fence)
 *     dev->lock                     device d's harvest and its queue
 *                                   (the driver's harvest_lock); one at
 *                                   a time. A fence's helpers work
 *                                   under the fence's allocs_lock and
 *                                   dev->lock and take only page locks
 *       ua->plock[p % 64]           small page p of every replica and
 *                                   twin of one allocation: its diff, and
 *                                   the pushes and copies into it (the
 *                                   driver's GPS page lock); one at a time
 *     gpsu_fault_lock               the fault table (engine_user_fault.c);
 *                                   alone
 *
 * The SIGSEGV handler takes none of them: it reads the fault table and
 * the hold without a lock, waits for a hold to end, and takes a managed
 * allocation's ownership spinlock (um_lock), which nothing else takes
 * while touching a view. A hold belongs to the allocs_lock writer: no
 * thread stores through a view while it holds any of these locks (the
 * engine writes through its back mapping), and the holder blocks
 * asynchronous signals until the hold ends.
 */
#ifndef GPSU_ENGINE_USER_H
#define GPSU_ENGINE_USER_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- capture (engine_user_capture.c) -------------------------------- */

/*
 * Probes the kernel and opens the process's userfaultfd in asynchronous
 * write-protect mode and /proc/self/pagemap. 0, or an errno with @why
 * naming what is missing. $GPSU_TEST_MISSING=userfaultfd, wp_async or
 * pagemap_scan pretends that one is missing (tests).
 */
int gpsu_capture_open(const char **why);
void gpsu_capture_close(void);
/* Registers [@addr, @addr + @len) for write-protect and protects it. */
int gpsu_capture_arm(void *addr, size_t len);
/*
 * Finds the pages of [@addr, @addr + @len) written since they were last
 * protected and protects them again, in one PAGEMAP_SCAN walk at a
 * time; calls @fn(@ctx, page index from @addr) for each. Adds the time
 * spent in the walks (ns) to *@scan_ns when not NULL. Returns 0 or an
 * errno.
 */
int gpsu_capture_harvest(void *addr, size_t len,
			 void (*fn)(void *ctx, size_t page), void *ctx,
			 uint64_t *scan_ns);
/* As gpsu_capture_harvest(), but protects nothing: the pages only. */
int gpsu_capture_written(void *addr, size_t len,
			 void (*fn)(void *ctx, size_t page), void *ctx);
/*
 * The first written pages of [@addr, @addr + @len), up to @max of them,
 * into @pages (indices from @addr), *@n how many, *@walked the bytes
 * walked; protects nothing, so no TLB is flushed. *@n == @max: there
 * may be more.
 */
int gpsu_capture_peek(void *addr, size_t len, size_t max, size_t *pages,
		      size_t *n, size_t *walked);

/* ---- access faults (engine_user_fault.c) ---------------------------- */

/*
 * Called in the SIGSEGV handler for an access fault at @addr in a range
 * registered with @ctx and @tag, @write when the CPU says it was a store
 * (x86-64; elsewhere every access counts as a load): GPSU_FAULT_OPENED
 * when it opened the
 * page (the access is retried), GPSU_FAULT_WAIT to retry once the hold
 * under way ends (it would have to open a held page), GPSU_FAULT_PASS
 * to pass the signal on; *@sleep_ns: how long the faulting thread then
 * sleeps, out of the table (a managed move's time on the link), so that
 * no hold or removal waits for it. Async-signal-safe code only.
 */
enum { GPSU_FAULT_PASS, GPSU_FAULT_OPENED, GPSU_FAULT_WAIT };
typedef int (*gpsu_fault_fn)(void *ctx, int tag, uintptr_t addr, bool write,
			     uint64_t *sleep_ns);
/* Whether a hold is on (from a fault callback: then the hold's ranges
 * must not be opened). */
bool gpsu_fault_holding(void);

/* Routes access faults in [@addr, @addr + @len) to @fn; 0 or an errno. */
int gpsu_fault_add(void *addr, size_t len, gpsu_fault_fn fn, void *ctx,
		   int tag);
/* Removes every range of @ctx; no handler acts on them after it returns. */
void gpsu_fault_del(void *ctx);
/*
 * Holds the stores to [@lo[i], @lo[i] + @len), i < @n (at most
 * GPSU_MAX_DEVICES + 1 ranges), while a subscription changes: the caller
 * write-protects them after this returns (no handler that missed the
 * hold is still running then), and a write fault there waits until
 * gpsu_fault_unhold(), which the caller calls once they are open again.
 * One hold at a time; 0 or an errno.
 */
int gpsu_fault_hold(const uintptr_t *lo, int n, size_t len);
void gpsu_fault_unhold(void);
/* Every signal but the synchronous ones (SIGSEGV, SIGBUS, ...): those a
 * thread that holds blocks, so no handler of its own stores into a hold. */
void gpsu_fault_async_signals(sigset_t *set);

/* ---- asynchronous fences (engine_user_ring.c) ----------------------- */

/* A fence of the devices of @mask, with @host the host views; an errno. */
typedef int (*gpsu_user_fence_fn)(uint64_t mask, bool host);

/* A ring (engine.h) whose thread runs @fence; NULL: fence synchronously. */
struct gpsu_engine_ring *gpsu_user_ring_new(gpsu_user_fence_fn fence);
void gpsu_user_ring_free(struct gpsu_engine_ring *r);
int gpsu_user_ring_fence(struct gpsu_engine_ring *r, uint64_t mask,
			 bool host);
int gpsu_user_ring_reap(struct gpsu_engine_ring *r);
unsigned int gpsu_user_ring_pending(const struct gpsu_engine_ring *r);

/* ---- counters, for tests and gpsctl --------------------------------- */

/* uint64_t counters only: gpsu_user_stats() copies them as an array. */
struct gpsu_user_stats {
	uint64_t scans;			/* PAGEMAP_SCAN calls */
	uint64_t pages_written;		/* written pages they found */
	uint64_t pages_rediffed;	/* kept writable, found and diffed
					 * again: no new write fault */
	uint64_t pages_protected;	/* protected again by a scan */
	uint64_t pages_changed;		/* of those, with a changed byte */
	uint64_t blocks_queued;		/* blocks new to a queue */
	uint64_t blocks_merged;		/* blocks already queued */
	uint64_t blocks_pushed;		/* blocks written into other replicas */
	uint64_t bytes_pushed;		/* bytes written, per receiver */
	uint64_t fences;		/* fences of one device */
	uint64_t rounds;		/* push threads' rounds */
	uint64_t subscribes;		/* replicas of a GPS page added */
	uint64_t unsubscribes;		/* replicas of a GPS page dropped */
	uint64_t track_faults;		/* first accesses seen in tracking */
	uint64_t opened_whole;		/* views opened whole at a fault:
					 * vm.max_map_count reached */
};

/* ---- push threads (engine_user_thread.c) ---------------------------- */

/*
 * One round of device @d's push thread (engine_user_publish.c); returns
 * when (ns, CLOCK_MONOTONIC) the device's link has carried what it was
 * given, 0 if it is not busy.
 */
typedef uint64_t (*gpsu_user_round_fn)(int d);
/*
 * Device @d's push thread, on @cpus (the device's, cpus.h): while
 * harvest_interval_us is set and the link is modelled (link_bandwidth)
 * or harvest_ahead is on, @round(@d) every interval, and not before the
 * link is free again (the driver's rule); else it sleeps. 0 or an errno.
 */
int gpsu_user_thread_start(int d, const cpu_set_t *cpus,
			   gpsu_user_round_fn round);
/* Every push thread stopped and joined. */
void gpsu_user_threads_stop(void);
/*
 * The push threads look at the knobs again (GPS_KNOB_WAKE); with @link
 * (GPS_KNOB_LINK_RESET), they also forget the old link's time.
 */
void gpsu_user_threads_kick(bool link);
/* When device @d's link frees, as it stands (engine_user_publish.c). */
uint64_t gpsu_user_link_end(int d);
/* ---- fence helpers (engine_user_help.c) ----------------------------- */

/* Helper threads of a device at most (the driver's: a node's CPUs but one). */
#define GPSU_HELP_MAX	15
/* Item @i of a helped batch, by worker @worker (0: the caller). */
typedef void (*gpsu_user_help_fn)(void *ctx, int worker, size_t i);
/* Device @d's helpers will run on @cpus, the device's (cpus.h). */
void gpsu_user_help_init(int d, const cpu_set_t *cpus);
/*
 * @fn for every item below @items, by the caller and up to @helpers of
 * device @d's helpers (made on first need), each taking the next item;
 * returns when every item is done: the number of helpers that worked
 * (workers 1 to it). The caller holds dev->lock: one batch per device.
 */
int gpsu_user_help_run(int d, int helpers, gpsu_user_help_fn fn, void *ctx,
		       size_t items);
/* Every device's helpers stopped and joined. */
void gpsu_user_help_stop(void);

/* Adds up the counters since the engine opened into @st. */
void gpsu_user_stats(struct gpsu_user_stats *st);

/* ---- knobs and counters by the driver's names (engine_user_knobs.c) - */

/*
 * What a knob change asks of the engine above (engine_user_publish.c),
 * called under the knobs' lock: @reshape, before the new values are
 * stored, drains every queue and lays it out again with @capacity,
 * @watermark and @block_size (0 or an errno: nothing changed);
 * @link_reset, after, forgets what the links owed (a new link_bandwidth,
 * the driver's gps_link_reset()), so that no charge at the old
 * bandwidth lands after it.
 */
struct gpsu_user_knob_hooks {
	int (*reshape)(unsigned int capacity, unsigned int watermark,
		       unsigned int block_size);
	void (*link_reset)(void);
};

/* Every knob at its default, then $GPSU_KNOB_<name>; 0 or an errno. */
int gpsu_user_knobs_init(int ndev, const struct gpsu_user_knob_hooks *hooks);
/* Knob @i (knob_table.h's GPSU_K_*) now. */
uint64_t gpsu_user_knob(int i);
int gpsu_user_knob_get(int i, uint64_t *v);
/*
 * Knob @i set to @v, *@err 0 or an errno; returns the GPS_KNOB_* flags
 * (gps_knob_flags.h) of what changed, for the caller to do after.
 */
unsigned int gpsu_user_knob_set(int i, uint64_t v, int *err);
/* Counter @i (GPSU_S_*) of device @d: add @n; raise to @n. */
void gpsu_user_count(int d, int i, uint64_t n);
void gpsu_user_count_max(int d, int i, uint64_t n);
int gpsu_user_counter(int device, int i, uint64_t *v);
/* The directory of every native program's files for gpsctl. */
int gpsu_user_publish_root(char *buf, size_t len);
void gpsu_user_publish_start(void);
void gpsu_user_publish_stop(void);


#endif /* GPSU_ENGINE_USER_H */
