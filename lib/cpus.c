// SPDX-License-Identifier: MIT
/* A device's CPUs (cpus.h): its node's, or its share of them. */
#define _GNU_SOURCE
#include <numa.h>
#include <sched.h>
#include <signal.h>

#include "cpus.h"
#include "gpsu.h"

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

int gpsu_cpus_set(int node, int share, int shares, cpu_set_t *set)
{
	int cpus[GPS_MAX_DEVICE_CPUS];
	int i, n = gpsu_cpus_of(node, share, shares, cpus,
				GPS_MAX_DEVICE_CPUS);

	CPU_ZERO(set);
	for (i = 0; i < n; i++)
		if (cpus[i] < CPU_SETSIZE)
			CPU_SET(cpus[i], set);
	return n;
}

int gpsu_cpus_thread(pthread_t *t, const cpu_set_t *set, const char *name,
		     void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(*set), set);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (!ret)
		pthread_setname_np(*t, name);	/* for top and the tests */
	return ret;
}
