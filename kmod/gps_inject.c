// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: fault injection
 *
 * One struct fault_attr per point of enum gps_fail_point, each with its
 * directory fail_<point> in /sys/kernel/debug/gps/ made by
 * fault_create_debugfs_attr(), as null_blk does for its timeouts.  All
 * start disabled (probability 0).  Built only with CONFIG_GPS_DEBUG, and
 * empty unless the kernel has CONFIG_FAULT_INJECTION_DEBUG_FS.  What each
 * failure does is in Documentation/gps.rst ("Fault injection").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/* 6.1's fault-inject.h needs bool and gfp_t declared first. */
#include <linux/types.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include "gps_inject.h"

#if IS_ENABLED(CONFIG_FAULT_INJECTION_DEBUG_FS)

static DECLARE_FAULT_ATTR(gps_fail_replica_alloc);
static DECLARE_FAULT_ATTR(gps_fail_twin_alloc);
static DECLARE_FAULT_ATTR(gps_fail_capture_twin);
static DECLARE_FAULT_ATTR(gps_fail_queue_reshape);
static DECLARE_FAULT_ATTR(gps_fail_async_fence);

static const struct {
	const char *name;
	struct fault_attr *attr;
} gps_fail_points[GPS_NR_FAIL_POINTS] = {
	[GPS_FAIL_REPLICA_ALLOC] = { "fail_replica_alloc",
				     &gps_fail_replica_alloc },
	[GPS_FAIL_TWIN_ALLOC] = { "fail_twin_alloc", &gps_fail_twin_alloc },
	[GPS_FAIL_CAPTURE_TWIN] = { "fail_capture_twin",
				    &gps_fail_capture_twin },
	[GPS_FAIL_QUEUE_RESHAPE] = { "fail_queue_reshape",
				     &gps_fail_queue_reshape },
	[GPS_FAIL_ASYNC_FENCE] = { "fail_async_fence",
				   &gps_fail_async_fence },
};

/**
 * gps_should_fail() - should this allocation fail?
 * @point: the injection point asking
 *
 * Return: true when the point's fault_attr says so; the caller then
 * behaves exactly as if its allocation had returned NULL.
 */
bool gps_should_fail(enum gps_fail_point point)
{
	return should_fail(gps_fail_points[point].attr, 1);
}

/**
 * gps_inject_debugfs_init() - make the fail_<point> directories
 * @root: /sys/kernel/debug/gps, removed recursively at exit
 *
 * Like any debugfs file, a directory that cannot be made is left out.
 */
void gps_inject_debugfs_init(struct dentry *root)
{
	int i;

	for (i = 0; i < GPS_NR_FAIL_POINTS; i++)
		fault_create_debugfs_attr(gps_fail_points[i].name, root,
					  gps_fail_points[i].attr);
}

#endif /* CONFIG_FAULT_INJECTION_DEBUG_FS */
