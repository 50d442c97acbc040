// SPDX-License-Identifier: MIT
/* A device's CPUs (cpus.h): its node's, or its share of them. */
#define _GNU_SOURCE
#include <numa.h>
#include <sched.h>

#include "cpus.h"

int gpsu_cpus_of(int node, int share, int shares, int *cpus, int max)
{
	cpu_set_t allowed;
	struct bitmask *bm = NULL;
	int cpu, n = 0;

	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_SET(0, &allowed);
	if (numa_available() >= 0) {
		bm = numa_allocate_cpumask();
		if (bm && numa_node_to_cpus(node, bm) < 0) {
			numa_free_cpumask(bm);
			bm = NULL;
		}
	}
	for (cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (bm && !numa_bitmask_isbitset(bm, cpu))
			continue;
		cpus[n++] = cpu;
	}
	if (bm)
		numa_free_cpumask(bm);
	if (!n) {
		for (cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++)
			if (CPU_ISSET(cpu, &allowed))
				cpus[n++] = cpu;
	}
	if (!n)
		cpus[n++] = 0;
	if (shares > 1) {
		int i, k = 0;

		if (n < shares) {
			cpus[0] = cpus[share % n];
			k = 1;
		} else {
			for (i = share; i < n; i += shares)
				cpus[k++] = cpus[i];
		}
		n = k;
	}
	return n;
}
