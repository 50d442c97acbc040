/* SPDX-License-Identifier: MIT */
/*
 * The CPUs of a device: the context pins a device's threads to them, the
 * native engine its push thread and fence helpers (lib/cpus.c).
 */
#ifndef GPSU_CPUS_H
#define GPSU_CPUS_H

#include <pthread.h>
#include <sched.h>

/*
 * The CPUs of @node this process may run on, into @cpus (at most @max);
 * all allowed CPUs when the node has none (a memory-only node still gets
 * compute). With @shares devices on the node, device share @share takes
 * every @shares-th of them (one CPU, shared, when there are fewer).
 * Returns how many, at least 1.
 */
int gpsu_cpus_of(int node, int share, int shares, int *cpus, int max);

/*
 * The CPUs of gpsu_cpus_of() as a set, into @set; returns how many.
 * Taken once, by the thread that starts the library (the context's
 * rule): the affinity read is the calling thread's.
 */
int gpsu_cpus_set(int node, int share, int shares, cpu_set_t *set);

/*
 * A thread of the library's own named @name running @fn(@arg) on @set,
 * with every signal blocked (the program's signals are for its own
 * threads). 0 or an errno.
 */
int gpsu_cpus_thread(pthread_t *t, const cpu_set_t *set, const char *name,
		     void *(*fn)(void *), void *arg);

#endif /* GPSU_CPUS_H */
