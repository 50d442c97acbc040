/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection: the allocations whose failure paths the tests make
 * run on demand (tests/kmod/faultinject.c).  Each point is a struct
 * fault_attr of the kernel's fault-injection framework
 * (Documentation/fault-injection/), set through its debugfs directory
 * /sys/kernel/debug/gps/fail_<point>/ (probability, interval, times,
 * space, verbose, ...).  They exist only in a module built with
 * CONFIG_GPS_DEBUG for a kernel with CONFIG_FAULT_INJECTION_DEBUG_FS;
 * elsewhere gps_should_fail() is the constant false and the hooks
 * compile away.
 */
#ifndef _GPS_INJECT_H
#define _GPS_INJECT_H

#include <linux/kconfig.h>
#include <linux/types.h>

struct dentry;

/**
 * enum gps_fail_point - where an allocation can be made to fail
 * @GPS_FAIL_REPLICA_ALLOC: one small page of a replica (gps_replica_alloc())
 * @GPS_FAIL_TWIN_ALLOC: a twin, in gps_page_mkwrite()
 * @GPS_FAIL_CAPTURE_TWIN: a twin of a page captured along with the faulting
 *	one (gps_capture_around()): that page is left to fault alone
 * @GPS_FAIL_QUEUE_RESHAPE: one device's new queue (gps_queues_reconfigure())
 * @GPS_FAIL_ASYNC_FENCE: the work item of an io_uring fence
 * @GPS_NR_FAIL_POINTS: number of points
 */
enum gps_fail_point {
	GPS_FAIL_REPLICA_ALLOC,
	GPS_FAIL_TWIN_ALLOC,
	GPS_FAIL_CAPTURE_TWIN,
	GPS_FAIL_QUEUE_RESHAPE,
	GPS_FAIL_ASYNC_FENCE,
	GPS_NR_FAIL_POINTS
};

#if IS_ENABLED(CONFIG_GPS_DEBUG) && IS_ENABLED(CONFIG_FAULT_INJECTION_DEBUG_FS)
bool gps_should_fail(enum gps_fail_point point);
void gps_inject_debugfs_init(struct dentry *root);
#else
static inline bool gps_should_fail(enum gps_fail_point point)
{
	return false;
}

static inline void gps_inject_debugfs_init(struct dentry *root)
{
}
#endif

#endif /* _GPS_INJECT_H */
