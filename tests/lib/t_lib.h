/* SPDX-License-Identifier: MIT */
/*
 * t_lib.h - shared helpers of the libgpsu tests that run against gps.ko
 * (in the VM). Each test skips when /dev/gps is absent.
 */
#ifndef T_LIB_H
#define T_LIB_H

#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpsu.h"

/* Skips the test without a gps device; sets *ndev otherwise. */
#define T_DEVICES(ndev)							\
	do {								\
		gpsError_t e_ = gpsGetDeviceCount(&(ndev));		\
		if (e_ == gpsErrorNoDevice)				\
			SKIP(return, "no /dev/gps (gps.ko not loaded)"); \
		ASSERT_EQ(gpsSuccess, e_);				\
		ASSERT_LT(0, (ndev));					\
	} while (0)

/* Skips unless at least @min devices exist. */
#define T_MIN_DEVICES(ndev, min)					\
	do {								\
		T_DEVICES(ndev);					\
		if ((ndev) < (min))					\
			SKIP(return, "needs %d devices, has %d", (min),	\
			     (ndev));					\
	} while (0)

/* NUMA node holding the page behind @p (-errno on failure). */
static inline int t_page_node(const void *p)
{
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
	int status = -1, node = -1;

	if (move_pages(0, 1, &page, NULL, &status, 0) == 0 && status >= 0)
		return status;
	if (get_mempolicy(&node, NULL, 0, page, MPOL_F_NODE | MPOL_F_ADDR) ==
	    0)
		return node;
	return status < 0 ? status : -1;
}

static inline int t_node_has_cpus(int node)
{
	struct bitmask *bm = numa_allocate_cpumask();
	int n = 0;

	if (bm && numa_node_to_cpus(node, bm) == 0)
		n = numa_bitmask_weight(bm);
	if (bm)
		numa_free_cpumask(bm);
	return n > 0;
}

/* Sum of the replica pages the driver reports on every device. */
static inline size_t t_replica_pages(int ndev)
{
	gpsDeviceProp prop;
	size_t sum = 0;
	int d;

	for (d = 0; d < ndev; d++)
		if (gpsGetDeviceProperties(&prop, d) == gpsSuccess)
			sum += prop.replicaPages;
	return sum;
}

#define T_KNOBS	"/sys/kernel/gps/"

/* Reads the driver's knob @name (a number); 0 or -1. */
static inline int t_knob_get(const char *name, unsigned long long *v)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), T_KNOBS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* Writes the driver's knob @name; 0 or -1. */
static inline int t_knob_set(const char *name, unsigned long long v)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), T_KNOBS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fprintf(f, "%llu\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Counter @name of device @d's node in debugfs stats, or -1. */
static inline long long t_dev_stat(int d, const char *name)
{
	char path[128], key[64];
	gpsDeviceProp prop;
	long long v, found = -1;
	FILE *f;

	if (gpsGetDeviceProperties(&prop, d) != gpsSuccess)
		return -1;
	snprintf(path, sizeof(path), "/sys/kernel/debug/gps/node%d/stats",
		 prop.numaNode);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

#endif /* T_LIB_H */
