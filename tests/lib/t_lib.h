/* SPDX-License-Identifier: MIT */
/*
 * t_lib.h - shared helpers of the libgpsu tests, which run against
 * either engine: gps.ko (in the VM) or the native engine (on the host,
 * GPSU_ENGINE=user). Each test skips when there is no device.
 */
#ifndef T_LIB_H
#define T_LIB_H

#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * T_MIN_DEVICES for the contract tests (tests/lib/contract_*.c), which in
 * a gps-vm guest run in the guests of 4 nodes or more alone: make check's
 * guests have a time budget, and the native engine runs them all.
 */
#define T_CONTRACT_DEVICES(ndev, min)					\
	do {								\
		const char *n_ = getenv("GPS_VM_NODES");		\
		if (n_ && atoi(n_) < 4)					\
			SKIP(return, "in guests of 4 nodes only (this: %s)", \
			     n_);					\
		T_MIN_DEVICES(ndev, min);				\
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

/*
 * Knobs and counters through the library (gpsGetKnob, gpsSetKnob,
 * gpsDeviceGetCounter), so that a test runs against either engine: the
 * driver's /sys/kernel/gps and debugfs, or the native engine's own.
 */

/* Reads knob @name; 0 or -1 (the library said why on stderr). */
static inline int t_knob_get(const char *name, unsigned long long *v)
{
	return gpsGetKnob(v, name) == gpsSuccess ? 0 : -1;
}

/* Sets knob @name; 0 or -1 (the library said why on stderr). */
static inline int t_knob_set(const char *name, unsigned long long v)
{
	return gpsSetKnob(name, v) == gpsSuccess ? 0 : -1;
}

/*
 * Sets knob @name to @v for a test that needs it; skips the test when
 * the engine cannot honour it (the native engine has no push thread,
 * ...), fails it for any other error.
 */
#define T_KNOB_SET(name, v)						\
	do {								\
		gpsError_t e_ = gpsSetKnob((name), (v));		\
		if (e_ == gpsErrorNotSupported)				\
			SKIP(return, "the engine cannot set %s to %llu", \
			     (name), (unsigned long long)(v));		\
		ASSERT_EQ(gpsSuccess, e_);				\
	} while (0)

/* Counter @name of device @d, or -1 (not kept, or not readable). */
static inline long long t_dev_stat(int d, const char *name)
{
	unsigned long long v;

	if (gpsDeviceGetCounter(&v, name, d) != gpsSuccess)
		return -1;
	return (long long)v;
}

#endif /* T_LIB_H */
