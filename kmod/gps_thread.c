// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: per-node push threads
 *
 * Each device has a kernel thread, gps/<node>, created on its node and
 * allowed only on its node's CPUs.  While user code runs it harvests the
 * device's dirty pages and pushes queue entries older than the harvest
 * interval, so that most of the traffic is done before the release asks
 * for it.  It wakes every harvest_interval_us, when dirty_wake replicas
 * are dirty, and when a knob changes; each round is bounded (GPS_BATCH
 * replicas) and it yields between rounds.  harvest_interval_us = 0 stops
 * proactive work: then only watermarks and fences push.  So does a link
 * left unlimited (link_bandwidth = 0) unless harvest_ahead is set: there
 * is no transfer to hide behind compute, a harvest ahead takes CPU time
 * and TLB flushes from the node's kernels and is done again for pages
 * written after it, and the fence harvests on every CPU of the node
 * (gps_help.c).
 *
 * Fences run in the caller's context: see gps_fence.c.  Calls the
 * harvest, the push and the link model.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/freezer.h>
#include <linux/sched/signal.h>
#include <linux/cpumask.h>
#include <linux/topology.h>
#include <linux/jiffies.h>
#include "gps_internal.h"
#include "gps_trace.h"

#define GPS_BATCH	64
/* The thread leaves pages dirtied less than this ago (see gps_harvest()). */
#define GPS_MIN_AGE_NS	(200 * NSEC_PER_USEC)

/* Replicas on the list for a fault; those left writable wait their turn. */
static unsigned long gps_thread_dirty(struct gps_dev *dev)
{
	return READ_ONCE(dev->nr_dirty) - READ_ONCE(dev->nr_hot);
}

/* The interval of proactive rounds, 0 for none (see the top). */
static unsigned int gps_thread_interval(void)
{
	if (!READ_ONCE(gps_knobs.harvest_ahead) &&
	    !READ_ONCE(gps_knobs.link_bandwidth))
		return 0;
	return READ_ONCE(gps_knobs.harvest_interval_us);
}

static bool gps_thread_pressed(struct gps_dev *dev)
{
	return gps_thread_dirty(dev) >= READ_ONCE(gps_knobs.dirty_wake);
}

/*
 * What ends the sleep: a stop, a changed interval, and, for a thread whose
 * round left nothing dirty (@eager), dirty_wake replicas.  Pressure never
 * ends the sleep of one that found its harvest_lock taken, or left
 * replicas too young to harvest: it sleeps one tick and tries again.  The
 * lock's holder (a fence, a subscription change) may be waiting for this
 * CPU (a flush, a work item), which a thread looping in the kernel would
 * not give back, and young replicas would make it spin until they age.
 * The tick is what brings it back: one that slept its whole interval
 * after losing the lock would leave dirty_wake unanswered that long.
 */
static bool gps_thread_wake(struct gps_dev *dev, unsigned int us,
			    bool eager)
{
	return kthread_should_stop() ||
	       gps_thread_interval() != us ||
	       (us && eager && gps_thread_pressed(dev));
}

static int gps_thread_fn(void *arg)
{
	struct gps_dev *dev = arg;

	set_freezable();
	while (!kthread_should_stop()) {
		unsigned int us = gps_thread_interval();
		unsigned long timeout = us ? usecs_to_jiffies(us) :
					     MAX_SCHEDULE_TIMEOUT;
		bool more = false, eager = false;

		if (us && mutex_trylock(&dev->harvest_lock)) {
			/* Changed since read: see gps_threads_quiesce(). */
			if (gps_thread_interval() != us) {
				mutex_unlock(&dev->harvest_lock);
				continue;
			}
			more = gps_harvest(dev, GPS_BATCH, GPS_MIN_AGE_NS,
					   NULL) == GPS_BATCH;
			gps_push_aged(dev, timeout);
			atomic64_inc(&dev->stats.thread_rounds);
			/* Left young replicas: look again soon, not later. */
			if (!more && gps_thread_dirty(dev))
				timeout = min(timeout, 1UL);
			else
				eager = true;
			mutex_unlock(&dev->harvest_lock);
			/* The link model: no new round while it is busy. */
			gps_link_wait(dev, false);
		} else if (us) {
			/* The holder harvests now; retry next tick, not later. */
			timeout = 1;
		}
		if (more) {
			cond_resched();
			continue;
		}
		/* A changed interval (from 0 too) ends the sleep at once. */
		wait_event_freezable_timeout(dev->wait,
					     gps_thread_wake(dev, us, eager),
					     timeout);
	}
	return 0;
}

/**
 * gps_thread_start() - start the push thread of a device on its node
 * @dev: device
 *
 * Return: 0, or the error of kthread_create_on_node().
 */
int gps_thread_start(struct gps_dev *dev)
{
	struct task_struct *t;

	t = kthread_create_on_node(gps_thread_fn, dev, dev->nid, "gps/%d",
				   dev->nid);
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (cpumask_weight(cpumask_of_node(dev->nid)))
		set_cpus_allowed_ptr(t, cpumask_of_node(dev->nid));
	dev->thread = t;
	wake_up_process(t);
	return 0;
}

void gps_thread_stop(struct gps_dev *dev)
{
	if (dev->thread) {
		kthread_stop(dev->thread);
		dev->thread = NULL;
	}
}

/**
 * gps_threads_quiesce() - wait out push-thread rounds of an old interval
 *
 * After harvest_interval_us, harvest_ahead or link_bandwidth changed:
 * returns once no thread runs a round under the old interval.  A thread
 * checks the interval again under its harvest_lock, so taking each lock
 * once after the store is enough; a thread whose vCPU stalled between
 * reading the old interval and its round then harvests nothing (0 stops
 * proactive harvests at once).
 */
void gps_threads_quiesce(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++) {
		mutex_lock(&gps_devs[d].harvest_lock);
		mutex_unlock(&gps_devs[d].harvest_lock);
	}
}

/* After a knob change: let every thread re-read the knobs. */
void gps_wake_all(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++)
		wake_up(&gps_devs[d].wait);
}
