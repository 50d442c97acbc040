// SPDX-License-Identifier: MIT
/*
 * The native engine's push threads: one per device, on the device's
 * CPUs, as the driver's gps/<node> threads. While harvest_interval_us is
 * set and there is a transfer to hide behind compute (link_bandwidth set)
 * or harvest_ahead asks for it, each wakes every interval and runs a
 * round (gpsu_user_round: harvest, push, the link charged), so that most
 * of a kernel's stores leave while it runs and its release waits for the
 * tail; not before the link has carried the last round's bytes (the
 * driver's rule: a round into a busy link only splits stores and takes
 * write faults from the kernels). Otherwise it sleeps: with the link
 * unlimited a round ahead only takes CPU time and TLB flushes from the
 * kernels (the driver's rule too). A change of the knobs of rounds wakes it
 * (gpsu_user_threads_kick()).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "engine.h"
#include "engine_user.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* on CLOCK_MONOTONIC */
	bool stop;			/* under lock */
	bool ready;			/* wake initialised */
	unsigned long links;		/* under lock: new links */
	unsigned int round_delay_us;	/* $GPSU_TEST_ROUND_DELAY_US: tests */
	int n;				/* threads started */
	gpsu_user_round_fn round;
	pthread_t t[GPSU_MAX_DEVICES];
} gpsu_thr = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The interval of rounds (ns), 0 for none: the driver's rule. */
static uint64_t gpsu_thread_interval(void)
{
	if (!gpsu_user_knob(GPSU_K(harvest_ahead)) &&
	    !gpsu_user_knob(GPSU_K(link_bandwidth)))
		return 0;
	return gpsu_user_knob(GPSU_K(harvest_interval_us)) * 1000;
}

static uint64_t gpsu_thread_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A round every interval, measured from the last one's start, and not
 * before the link frees (@link_free: as the last round found it); with no
 * interval, a sleep until the knobs change or the threads stop. A kick
 * cannot be missed: the knobs are stored before it takes the lock, and
 * they are read under it; a new link, counted in links, cuts the wait to
 * the link's end as it stands (the driver's gps_link_wait() follows it
 * too), also when it came while the thread ran a round unlocked.
 */
static void *gpsu_thread_main(void *arg)
{
	int d = (int)(intptr_t)arg;
	uint64_t iv, now, last = gpsu_thread_now(), until, link_free = 0;
	unsigned long seen;
	struct timespec ts;

	pthread_mutex_lock(&gpsu_thr.lock);
	seen = gpsu_thr.links;
	while (!gpsu_thr.stop) {
		/* a new link: its end as it stands (a round's charge kept) */
		if (seen != gpsu_thr.links) {
			uint64_t end = gpsu_user_link_end(d);

			seen = gpsu_thr.links;
			if (end < link_free)
				link_free = end;
		}
		iv = gpsu_thread_interval();
		now = gpsu_thread_now();
		if (!iv) {
			pthread_cond_wait(&gpsu_thr.wake, &gpsu_thr.lock);
			last = gpsu_thread_now();
			continue;
		}
		if (now - last >= iv && now >= link_free) {
			last = now;
			pthread_mutex_unlock(&gpsu_thr.lock);
			link_free = gpsu_thr.round(d);
			/* a window for a kick between the round and the lock */
			if (gpsu_thr.round_delay_us)
				usleep(gpsu_thr.round_delay_us);
			pthread_mutex_lock(&gpsu_thr.lock);
			continue;
		}
		until = last + iv > link_free ? last + iv : link_free;
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		pthread_cond_timedwait(&gpsu_thr.wake, &gpsu_thr.lock, &ts);
	}
	pthread_mutex_unlock(&gpsu_thr.lock);
	return NULL;
}

int gpsu_user_thread_start(int d, const cpu_set_t *cpus,
			   gpsu_user_round_fn round)
{
	pthread_condattr_t ca;
	const char *e;
	char name[16];
	int ret;

	if (!gpsu_thr.ready) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&gpsu_thr.wake, &ca);
		pthread_condattr_destroy(&ca);
		gpsu_thr.ready = true;
		gpsu_thr.stop = false;
		e = getenv("GPSU_TEST_ROUND_DELAY_US");
		gpsu_thr.round_delay_us = e ? (unsigned int)atoi(e) : 0;
	}
	gpsu_thr.round = round;
	snprintf(name, sizeof(name), "gps-push%d", d);
	ret = gpsu_cpus_thread(&gpsu_thr.t[gpsu_thr.n], cpus, name,
			       gpsu_thread_main, (void *)(intptr_t)d);
	if (!ret)
		gpsu_thr.n++;
	return ret;
}

void gpsu_user_threads_kick(bool link)
{
	if (!gpsu_thr.ready)
		return;
	pthread_mutex_lock(&gpsu_thr.lock);
	gpsu_thr.links += link;
	pthread_cond_broadcast(&gpsu_thr.wake);
	pthread_mutex_unlock(&gpsu_thr.lock);
}

void gpsu_user_threads_stop(void)
{
	int i;

	if (!gpsu_thr.ready)
		return;
	pthread_mutex_lock(&gpsu_thr.lock);
	gpsu_thr.stop = true;
	pthread_cond_broadcast(&gpsu_thr.wake);
	pthread_mutex_unlock(&gpsu_thr.lock);
	for (i = 0; i < gpsu_thr.n; i++)
		pthread_join(gpsu_thr.t[i], NULL);
	gpsu_thr.n = 0;
	pthread_cond_destroy(&gpsu_thr.wake);
	gpsu_thr.ready = false;
}
