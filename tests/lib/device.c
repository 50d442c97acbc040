// SPDX-License-Identifier: MIT
/*
 * Description: devices are the online NUMA nodes, in order; properties
 * name the node, its CPUs and memory; the current device is per thread.
 */
#include <pthread.h>

#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_lib.h"

/* One device per online node, device d = d-th node, its CPUs listed. */
TEST(devices_are_nodes)
{
	gpsDeviceProp prop;
	int ndev, d, node, i, expect = 0;

	gpsEngine eng;
	const char *want = getenv("GPSU_DEVICES");
	int shared = 0;	/* the native engine's devices on one node */
	cpu_set_t seen;

	T_DEVICES(ndev);
	ASSERT_LE(0, numa_available());
	ASSERT_EQ(gpsSuccess, gpsGetEngine(&eng, NULL));
	for (node = 0; node <= numa_max_node(); node++)
		if (numa_bitmask_isbitset(numa_nodes_ptr, node))
			expect++;
	if (eng == gpsEngineNative && expect == 1) {
		/* one node: GPSU_DEVICES devices (4 by default) share it */
		shared = 1;
		expect = want && *want ? atoi(want) : 4;
	}
	ASSERT_EQ(expect, ndev);
	node = -1;
	CPU_ZERO(&seen);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, d));
		if (shared) {
			/* each its own share of the node's CPUs, when
			 * there are enough to go round */
			ASSERT_EQ(numa_node_of_cpu(0), prop.numaNode);
			for (i = 0; i < prop.numCpus &&
				    ndev <= numa_num_configured_cpus(); i++) {
				ASSERT_FALSE(CPU_ISSET(prop.cpus[i], &seen));
				CPU_SET(prop.cpus[i], &seen);
			}
		} else {
			ASSERT_LT(node, prop.numaNode);
		}
		node = prop.numaNode;
		ASSERT_TRUE(numa_bitmask_isbitset(numa_nodes_ptr, node));
		ASSERT_LT(0, prop.totalGlobalMem);
		ASSERT_LE(prop.freeGlobalMem, prop.totalGlobalMem);
		ASSERT_LT(0, prop.numCpus);
		/* a node with CPUs runs its kernels on them only */
		if (t_node_has_cpus(node))
			for (i = 0; i < prop.numCpus; i++)
				ASSERT_EQ(node, numa_node_of_cpu(prop.cpus[i]));
		ASSERT_TRUE(prop.gpsPageSize == 4096 ||
			    prop.gpsPageSize == 65536 ||
			    prop.gpsPageSize == 2097152);
	}
	ASSERT_EQ(gpsErrorInvalidDevice, gpsGetDeviceProperties(&prop, ndev));
	ASSERT_EQ(gpsErrorInvalidDevice, gpsSetDevice(ndev));
}

static void *last_device(void *arg)
{
	int *d = arg;

	gpsGetDevice(d);
	return NULL;
}

/* gpsSetDevice is per host thread; a new thread starts on device 0. */
TEST(current_device_per_thread)
{
	pthread_t th;
	int ndev, d = -1;

	T_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(0, pthread_create(&th, NULL, last_device, &d));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, d);
	ASSERT_EQ(gpsSuccess, gpsGetDevice(&d));
	ASSERT_EQ(ndev - 1, d);
}

TEST_HARNESS_MAIN
