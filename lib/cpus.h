/* SPDX-License-Identifier: MIT */
/*
 * The CPUs of a device: the context pins a device's threads to them, the
 * native engine its push thread (lib/cpus.c).
 */
#ifndef GPSU_CPUS_H
#define GPSU_CPUS_H

/*
 * The CPUs of @node this process may run on, into @cpus (at most @max);
 * all allowed CPUs when the node has none (a memory-only node still gets
 * compute). With @shares devices on the node, device share @share takes
 * every @shares-th of them (one CPU, shared, when there are fewer).
 * Returns how many, at least 1.
 */
int gpsu_cpus_of(int node, int share, int shares, int *cpus, int max);

#endif /* GPSU_CPUS_H */
