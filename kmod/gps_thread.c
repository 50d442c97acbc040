// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: per-node push threads and fences
 *
 * Each device has a kernel thread, gps/<node>, created on its node and
 * allowed only on its node's CPUs.  While user code runs it harvests the
 * device's dirty pages and pushes queue entries older than the harvest
 * interval, so that most of the traffic is done before the release asks
 * for it.  It wakes every harvest_interval_us, when dirty_wake replicas
 * are dirty, and when a knob changes; each round is bounded (GPS_BATCH
 * replicas) and it yields between rounds.  harvest_interval_us = 0 stops
 * proactive work: then only watermarks and fences push.
 *
 * A fence runs in the caller's context: it harvests every replica that
 * was dirty when it started and drains the queue, under the device's
 * harvest_lock, taken killably.  A fence of a device that wrote through
 * remote replicas (it was not a subscriber) fences their owners too.
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

static bool gps_thread_pressed(struct gps_dev *dev)
{
	return READ_ONCE(dev->nr_dirty) >= READ_ONCE(gps_knobs.dirty_wake);
}

static bool gps_thread_wake(struct gps_dev *dev, unsigned int us)
{
	return kthread_should_stop() ||
	       READ_ONCE(gps_knobs.harvest_interval_us) != us ||
	       (us && gps_thread_pressed(dev));
}

static int gps_thread_fn(void *arg)
{
	struct gps_dev *dev = arg;

	set_freezable();
	while (!kthread_should_stop()) {
		unsigned int us = READ_ONCE(gps_knobs.harvest_interval_us);
		unsigned long timeout = us ? usecs_to_jiffies(us) :
					     MAX_SCHEDULE_TIMEOUT;
		bool more = false;

		if (us && mutex_trylock(&dev->harvest_lock)) {
			more = gps_harvest(dev, GPS_BATCH, GPS_MIN_AGE_NS,
					   NULL) == GPS_BATCH;
			gps_queue_push_aged(dev, timeout);
			/* Left young replicas: look again soon, not later. */
			if (!more && READ_ONCE(dev->nr_dirty))
				timeout = min(timeout, 1UL);
			mutex_unlock(&dev->harvest_lock);
			/* The link model: no new round while it is busy. */
			gps_link_wait(dev, false);
		}
		if (more) {
			cond_resched();
			continue;
		}
		/* A changed interval (from 0 too) ends the sleep at once. */
		wait_event_freezable_timeout(dev->wait,
					     gps_thread_wake(dev, us), timeout);
	}
	return 0;
}

/**
 * gps_thread_start() - start the push thread of a device on its node
 * @dev: device
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

/* After a knob change: let every thread re-read the knobs. */
void gps_wake_all(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++)
		wake_up(&gps_devs[d].wait);
}

/* Harvest what is dirty now and push everything: harvest_lock held. */
static void gps_fence_locked(struct gps_dev *dev, struct gps_fence_stats *st)
{
	unsigned long nr;

	spin_lock(&dev->dirty_lock);
	nr = dev->nr_dirty;
	spin_unlock(&dev->dirty_lock);
	gps_harvest(dev, nr, 0, st);
	gps_queue_drain(dev, st);
	atomic64_inc(&dev->stats.fences);
}

static int gps_fence_one(struct gps_dev *dev, struct gps_fence_stats *st)
{
	if (mutex_lock_killable(&dev->harvest_lock))
		return -EINTR;
	gps_fence_locked(dev, st);
	mutex_unlock(&dev->harvest_lock);
	return 0;
}

/**
 * gps_fence_devices() - publish every store the devices of @mask made
 *	before the call
 * @mask: devices; all of them is a system-wide release
 * @st: statistics of the work done
 *
 * Each device named is fenced, then each device whose replicas they
 * wrote into as non-subscribers (their stores sit on that owner's dirty
 * list).  The devices' links carry their pushes at the same time, so the
 * fence then waits once, for the link that finishes last, and pays the
 * link latency once if anything was pushed.
 *
 * Returns 0, or -EINTR if a fatal signal arrived while waiting.
 */
int gps_fence_devices(u64 mask, struct gps_fence_stats *st)
{
	u64 all = gps_nr_devs == 64 ? ~0ULL : BIT_ULL(gps_nr_devs) - 1;
	unsigned long named = mask & all, remote = 0, fenced;
	u64 before = st->bytes_pushed;
	int d, ret;

	for_each_set_bit(d, &named, gps_nr_devs)
		remote |= atomic_long_xchg(&gps_devs[d].remote_mask, 0);
	remote &= all & ~named;
	fenced = named | remote;
	/* The named devices in order, then the owners they wrote into. */
	for_each_set_bit(d, &named, gps_nr_devs) {
		ret = gps_fence_one(&gps_devs[d], st);
		if (ret)
			return ret;
	}
	for_each_set_bit(d, &remote, gps_nr_devs) {
		ret = gps_fence_one(&gps_devs[d], st);
		if (ret)
			return ret;
	}
	gps_link_wait_all(fenced, st->bytes_pushed != before);
	trace_gps_fence(named == all ? (int)GPS_FENCE_ALL : __ffs(named),
			st->pages_harvested, st->blocks_pushed,
			st->bytes_pushed);
	return 0;
}

/**
 * gps_fence() - publish every store a device made before the call
 * @device: device index, or GPS_FENCE_ALL for a system-wide release
 * @st: statistics of the work this fence did
 *
 * Returns 0, or -EINTR if a fatal signal arrived while waiting.
 */
int gps_fence(int device, struct gps_fence_stats *st)
{
	u64 all = gps_nr_devs == 64 ? ~0ULL : BIT_ULL(gps_nr_devs) - 1;

	return gps_fence_devices(device == (int)GPS_FENCE_ALL ? all :
				 BIT_ULL(device), st);
}

/**
 * gps_lock_all() - take every device's harvest_lock, in device order
 * @killable: give up with -EINTR on a fatal signal
 *
 * Held around changes to subscriber sets, replicas and queue shapes.
 */
int gps_lock_all(bool killable)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++) {
		if (!killable) {
			mutex_lock(&gps_devs[d].harvest_lock);
			continue;
		}
		if (mutex_lock_killable(&gps_devs[d].harvest_lock)) {
			while (d--)
				mutex_unlock(&gps_devs[d].harvest_lock);
			return -EINTR;
		}
	}
	return 0;
}

void gps_unlock_all(void)
{
	int d;

	for (d = gps_nr_devs - 1; d >= 0; d--)
		mutex_unlock(&gps_devs[d].harvest_lock);
}

/**
 * gps_drain_all_locked() - fence every device, all harvest_locks held
 * @st: statistics, or NULL
 */
void gps_drain_all_locked(struct gps_fence_stats *st)
{
	struct gps_fence_stats dummy = {};
	int d;

	for (d = 0; d < gps_nr_devs; d++)
		gps_fence_locked(&gps_devs[d], st ? st : &dummy);
}
