/* SPDX-License-Identifier: GPL-2.0 */
/*
 * History ring: a short record of what the driver did to which GPS page
 * (faults, captures, harvests, diffs, queueing, pushes, subscription
 * changes, zaps, fences, frees), so that a test that finds a store lost
 * can print the sequence that lost it (tests/kmod/torture.c).  Read and
 * filtered through /sys/kernel/debug/gps/history.  It exists only in a
 * module built with CONFIG_GPS_DEBUG; elsewhere gps_hist() compiles away.
 * Tracepoints would do the same, but switching them on in a guest of
 * several vCPUs under qemu's multi-threaded TCG breaks text patching
 * (Documentation/testing.rst, "qemu's defects").  gps_hist() takes no
 * lock and may be called anywhere, spinlocks held.
 */
#ifndef _GPS_HISTORY_H
#define _GPS_HISTORY_H

#include <linux/kconfig.h>
#include <linux/types.h>

struct dentry;
struct gps_alloc;

/**
 * enum gps_hist_type - what a history entry records
 * @GPS_H_FAULT: gps_fault(): @other the view, @extra GPS_HF_* flags and
 *	the small pages mapped around (bits 16 on)
 * @GPS_H_WFAULT: gps_page_mkwrite(): @other the view, @extra the owner of
 *	the replica written (bits 0-7) and GPS_HF_* flags
 * @GPS_H_CAPTURE: gps_capture_around(), one chunk: @dev the owner,
 *	@other the faulting device, @sub the chunk's first small page,
 *	@extra the captured pages of the chunk (bits 0-15) and new twins
 *	(bits 16 on)
 * @GPS_H_PROTECT: gps_write_protect(): @sub first small page of 32,
 *	@extra the dirty ones of them, @other 1 if kept writable
 * @GPS_H_RETIRE: gps_retire(): @sub first of 32, @extra the idle ones
 * @GPS_H_DIFF: gps_diff_page(): @extra changed blocks (bits 0-15),
 *	GPS_HF_KEEP (twin kept), GPS_HF_NOTWIN (nothing to diff)
 * @GPS_H_HARVEST: end of gps_harvest_replica(): @extra pages diffed
 *	(bits 0-15) and changed (bits 16 on), @other GPS_HH_* flags
 * @GPS_H_QINSERT: gps_push_diff(), a new entry: @extra its blocks
 * @GPS_H_QMERGE: gps_push_diff(), merged into an entry: @extra blocks
 * @GPS_H_PUSH: gps_push_bytes(), per receiver @other: @extra the way
 *	(bits 0-1, enum gps_bytes_how), GPS_HF_* flags, first block (bits 8-15),
 *	end block (bits 16-23), blocks (bits 24-31), in 64-byte units
 * @GPS_H_PUSH_NONE: gps_push_bytes() found no source or no receiver
 * @GPS_H_SUB: gps_subscribe_page(): @other the replica copied from
 * @GPS_H_UNSUB: gps_unsubscribe_page(): @extra 1 if it was dirty
 * @GPS_H_COLLAPSE: gps_collapse_page(): @dev the copy kept
 * @GPS_H_ZAP: gps_zap_views(): GPS pages [@gidx, @gidx + @extra)
 * @GPS_H_FENCE: gps_fence_devices(): @extra the devices named (bits
 *	0-15) and the owners they wrote into (bits 16-31)
 * @GPS_H_FENCE_START: gps_fence_locked() begins on @dev: @extra replicas
 *	dirty, @other 1 with helpers
 * @GPS_H_FENCE_END: gps_fence_locked() done on @dev
 * @GPS_H_TRACK: tracking starts (@extra 1) or stops (0) on an allocation
 * @GPS_H_FREE: an allocation is freed
 * @GPS_H_MARK: "mark N" written to the history file: @extra N, for a
 *	test to line its own clock up with the ring's
 * @GPS_NR_HIST_TYPES: number of types
 */
enum gps_hist_type {
	GPS_H_FAULT,
	GPS_H_WFAULT,
	GPS_H_CAPTURE,
	GPS_H_PROTECT,
	GPS_H_RETIRE,
	GPS_H_DIFF,
	GPS_H_HARVEST,
	GPS_H_QINSERT,
	GPS_H_QMERGE,
	GPS_H_PUSH,
	GPS_H_PUSH_NONE,
	GPS_H_SUB,
	GPS_H_UNSUB,
	GPS_H_COLLAPSE,
	GPS_H_ZAP,
	GPS_H_FENCE,
	GPS_H_FENCE_START,
	GPS_H_FENCE_END,
	GPS_H_TRACK,
	GPS_H_FREE,
	GPS_H_MARK,
	GPS_NR_HIST_TYPES
};

/* Flags in the extra field of GPS_H_FAULT, GPS_H_WFAULT and GPS_H_DIFF. */
#define GPS_HF_WRITE	BIT(8)		/* fault: a write fault */
#define GPS_HF_TRACK	BIT(9)		/* fault: tracking on */
#define GPS_HF_NEWTWIN	BIT(10)		/* wfault: a twin was made */
#define GPS_HF_ONLY	BIT(11)		/* wfault: one copy, no twin */
#define GPS_HF_RETRY	BIT(12)		/* wfault: target changed, refault */
#define GPS_HF_WIDE	BIT(13)		/* wfault: captures its window */
#define GPS_HF_KEEP	BIT(16)		/* diff: still dirty, twin kept */
#define GPS_HF_NOTWIN	BIT(17)		/* diff: no twin, nothing to diff */
#define GPS_HF_STILL	BIT(2)		/* push: blended, page not wmapped */
#define GPS_HF_RTWIN	BIT(3)		/* push: receiver's twin written too */
#define GPS_HF_FROMTWIN	BIT(4)		/* push: sent from the source's twin */

/* Flags in the other field of GPS_H_HARVEST. */
#define GPS_HH_KEPT	BIT(0)		/* pages left writable */
#define GPS_HH_STORED	BIT(1)		/* a kept page was stored to */
#define GPS_HH_HOT	BIT(2)		/* back on the dirty list, kept */

#if IS_ENABLED(CONFIG_GPS_DEBUG)
void gps_hist(enum gps_hist_type type, int dev, int other,
	      const struct gps_alloc *a, unsigned long gidx, unsigned int sub,
	      u32 extra);
void gps_hist_bits(enum gps_hist_type type, int dev, int other,
		   const struct gps_alloc *a, unsigned long gidx,
		   const unsigned long *bits, unsigned int nr);
void gps_history_debugfs_init(struct dentry *root);
void gps_history_free(void);
#else
static inline void gps_hist(enum gps_hist_type type, int dev, int other,
			    const struct gps_alloc *a, unsigned long gidx,
			    unsigned int sub, u32 extra)
{
}

static inline void gps_hist_bits(enum gps_hist_type type, int dev, int other,
				 const struct gps_alloc *a, unsigned long gidx,
				 const unsigned long *bits, unsigned int nr)
{
}

static inline void gps_history_debugfs_init(struct dentry *root)
{
}

static inline void gps_history_free(void)
{
}
#endif

#endif /* _GPS_HISTORY_H */
