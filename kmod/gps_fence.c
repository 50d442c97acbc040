// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: fences and work on every device at once
 *
 * A fence runs in the caller's context: it harvests every replica that
 * was dirty when it started, with the node's other CPUs (gps_help.c), and
 * drains the queue, under the device's harvest_lock, taken killably.  A
 * fence of a device that wrote through remote replicas (it was not a
 * subscriber) fences their owners too.  Then it waits for the link
 * model, once for all the devices it fenced.
 *
 * Also here: the devices a fence request names (gps_fence_target()) and
 * the request itself (gps_fence_request()), for the ioctl and io_uring
 * (gps_uring.c); what holds every device's harvest_lock at once
 * (subscription changes, queue reshaping) and the drain of every device
 * done under it.
 *
 * Calls the harvest, its helpers, the push and the link model; called by
 * the ioctls, io_uring, allocations, tracking and the knobs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/lockdep.h>
#include "gps_internal.h"
#include "gps_inject.h"
#include "gps_delay.h"
#include "gps_history.h"
#include "gps_trace.h"

/*
 * Harvest what is dirty now and push everything: harvest_lock held.  With
 * @help, on every CPU of the node (gps_help.c); subscription changes and
 * queue reshaping, which hold every harvest_lock and more, do without.
 */
static void gps_fence_locked(struct gps_dev *dev, struct gps_fence_stats *st,
			     bool help)
{
	unsigned long nr;

	lockdep_assert_held(&dev->harvest_lock);
	spin_lock(&dev->dirty_lock);
	nr = dev->nr_dirty;
	spin_unlock(&dev->dirty_lock);
	gps_hist(GPS_H_FENCE_START, dev->id, help, NULL, 0, 0, nr);
	if (help)
		gps_harvest_helped(dev, nr, st);
	else
		gps_harvest(dev, nr, 0, st);
	gps_push_drain(dev, st);
	gps_hist(GPS_H_FENCE_END, dev->id, -1, NULL, 0, 0, 0);
	atomic64_inc(&dev->stats.fences);
}

static int gps_fence_one(struct gps_dev *dev, struct gps_fence_stats *st)
{
	u64 t0 = gps_clock(), t1;
	int ret;

	/* The push thread ends its round early for us: gps_harvest(). */
	atomic_inc(&dev->fences_waiting);
	ret = mutex_lock_killable(&dev->harvest_lock);
	atomic_dec(&dev->fences_waiting);
	if (ret)
		return -EINTR;
	t1 = gps_clock_since(t0);
	gps_fence_locked(dev, st, true);
	mutex_unlock(&dev->harvest_lock);
	atomic64_add(t1, &dev->stats.fence_wait_ns);
	atomic64_add(gps_clock_since(t0), &dev->stats.fence_ns);
	return 0;
}

/*
 * Take the record of the owners each device of @named wrote into as a
 * non-subscriber (their stores sit on the owners' dirty lists) into
 * @taken, under the device's remote_lock, which the caller holds until
 * it has fenced them: another fence of the device, which finds the record
 * empty, waits until they are out.  Returns the owners not in @named, or
 * -EINTR (in *@ret) with the locks taken so far in *@locked.
 */
static unsigned long gps_fence_take(unsigned long named, unsigned long *taken,
				    unsigned long *locked, int *ret)
{
	unsigned long owners = 0;
	int d;

	*ret = 0;
	for_each_set_bit(d, &named, gps_nr_devs) {
		if (mutex_lock_killable(&gps_devs[d].remote_lock)) {
			*ret = -EINTR;
			return 0;
		}
		__set_bit(d, locked);
		taken[d] = atomic_long_xchg(&gps_devs[d].remote_mask, 0);
		owners |= taken[d];
	}
	return owners & gps_all_devices() & ~named;
}

/* Unlock what gps_fence_take() locked; on failure, give its records back. */
static void gps_fence_give(unsigned long locked, const unsigned long *taken,
			   bool failed)
{
	int d;

	for_each_set_bit(d, &locked, gps_nr_devs) {
		if (failed && taken[d])
			atomic_long_or(taken[d], &gps_devs[d].remote_mask);
		mutex_unlock(&gps_devs[d].remote_lock);
	}
}

/**
 * gps_fence_devices() - publish every store the devices of @mask made
 *	before the call
 * @mask: devices; all of them is a system-wide release
 * @st: statistics of the work done
 *
 * Each device named is fenced, then each device whose replicas they
 * wrote into as non-subscribers, taken from their records before the
 * named devices are fenced (gps_fence_take()): a store that sets a record
 * later may have missed an owner fenced already, and is left to the next
 * fence of its device, which waits for this one.  The devices' links
 * carry their pushes at the same time, so the fence then waits once, for
 * the link that finishes last, and pays the link latency once if anything
 * was pushed.  Stores through host views are in the home devices'
 * replicas (or the nearest subscribers'), so a fence of those devices
 * publishes them too.
 *
 * Return: 0, or -EINTR if a fatal signal arrived while waiting (the
 * records taken go back).
 */
int gps_fence_devices(u64 mask, struct gps_fence_stats *st)
{
	unsigned long taken[GPS_MAX_DEVICES] = {}, locked = 0;
	unsigned long named = mask & gps_all_devices(), owners;
	u64 before = st->bytes_pushed;
	int d, ret;

	owners = gps_fence_take(named, taken, &locked, &ret);
	if (ret)
		goto out;
	gps_hist(GPS_H_FENCE, -1, -1, NULL, 0, 0,
		 (named & 0xffff) | (owners & 0xffff) << 16);
	gps_delay(GPS_DELAY_FENCE_OWNERS);
	for_each_set_bit(d, &named, gps_nr_devs) {
		ret = gps_fence_one(&gps_devs[d], st);
		if (ret)
			goto out;
	}
	gps_delay(GPS_DELAY_FENCE_NAMED);
	for_each_set_bit(d, &owners, gps_nr_devs) {
		ret = gps_fence_one(&gps_devs[d], st);
		if (ret)
			goto out;
	}
	gps_link_wait_all(named | owners, st->bytes_pushed != before);
	trace_gps_fence(named == gps_all_devices() ? (int)GPS_FENCE_ALL :
			__ffs(named), st->pages_harvested, st->blocks_pushed,
			st->bytes_pushed);
out:
	gps_fence_give(locked, taken, ret);
	return ret;
}

/**
 * gps_fence_host() - publish every store made before the call through the
 *	host views of @ctx's allocations, and by the devices of @mask
 * @ctx: the open file
 * @mask: devices to fence too (may be empty)
 * @st: statistics of the work done
 *
 * A host view is never kept writable, so every store through it since a
 * harvest write-protected its page has faulted, and recorded in
 * host_dirty the owner of the replica it went to (whose dirty list holds
 * the page): those owners are the devices to fence, none when the host
 * stored nothing.  Taking the record and fencing are one step under
 * host_lock: a host fence that finds the record empty may not return
 * while another one still publishes what it took.  @mask is fenced
 * outside the lock, so that the ends of kernels on several devices do not
 * wait for each other.
 *
 * Return: 0, or -EINTR if a fatal signal arrived while waiting (what was
 * taken from the record goes back to it).
 */
int gps_fence_host(struct gps_ctx *ctx, u64 mask, struct gps_fence_stats *st)
{
	unsigned long host;
	int ret = 0, d;

	if (mutex_lock_killable(&ctx->host_lock))
		return -EINTR;
	host = atomic_long_xchg(&ctx->host_dirty, 0);
	for_each_set_bit(d, &host, gps_nr_devs)
		atomic64_inc(&gps_devs[d].stats.host_fences);
	if (host)
		ret = gps_fence_devices(host, st);
	if (ret)
		atomic_long_or(host, &ctx->host_dirty);
	mutex_unlock(&ctx->host_lock);
	if (!ret && mask)
		ret = gps_fence_devices(mask, st);
	return ret;
}

/**
 * gps_fence() - publish every store a device made before the call
 * @device: device index, or GPS_FENCE_ALL for a system-wide release
 * @st: statistics of the work this fence did
 *
 * Return: 0, or -EINTR if a fatal signal arrived while waiting.
 */
int gps_fence(int device, struct gps_fence_stats *st)
{
	return gps_fence_devices(device == (int)GPS_FENCE_ALL ?
				 gps_all_devices() : BIT_ULL(device), st);
}

/*
 * The devices a fence request names, in *@out; -EINVAL if it is
 * malformed.  A host fence (GPS_FENCE_HOST) may name none.
 */
int gps_fence_target(u32 device, u32 flags, u64 mask, u64 *out)
{
	u64 all = gps_all_devices();

	*out = 0;
	if (flags & ~GPS_FENCE_FLAGS)
		return -EINVAL;
	if (flags & GPS_FENCE_MASK) {
		if (device || (mask & ~all) ||
		    (!mask && !(flags & GPS_FENCE_HOST)))
			return -EINVAL;
		*out = mask;
		return 0;
	}
	if (mask || (flags & GPS_FENCE_HOST))
		return -EINVAL;
	if (device == GPS_FENCE_ALL)
		*out = all;
	else if (device < gps_nr_devs)
		*out = BIT_ULL(device);
	return *out ? 0 : -EINVAL;
}

/* The fence a request named: of the host views too with GPS_FENCE_HOST. */
int gps_fence_request(struct gps_ctx *ctx, u32 flags, u64 mask,
		      struct gps_fence_stats *st)
{
	if (flags & GPS_FENCE_HOST)
		return gps_fence_host(ctx, mask, st);
	return gps_fence_devices(mask, st);
}

/**
 * gps_lock_all() - take every device's harvest_lock, in device order
 * @killable: give up with -EINTR on a fatal signal
 *
 * Held around changes to subscriber sets, replicas and queue shapes.
 *
 * Return: 0 with every harvest_lock held, or -EINTR with none held if
 * @killable and a fatal signal arrived.
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
		lockdep_assert_held(&gps_devs[d].harvest_lock);
	for (d = 0; d < gps_nr_devs; d++)
		gps_fence_locked(&gps_devs[d], st ? st : &dummy, false);
}

/**
 * gps_queues_reconfigure() - give every device a queue of a new shape
 * @capacity: entries
 * @watermark: high watermark, 1..@capacity
 * @block_size: bytes per entry
 *
 * Every queue is drained first, so no published store is lost.  On
 * failure the old queues stay.  A shape whose queues would take more
 * than half the memory available is refused before anything is
 * allocated: reclaiming the machine down to its watermarks for it would
 * leave others' allocations to the OOM killer meanwhile.  Caller holds
 * gps_knob_lock.
 *
 * Return: 0, -ENOMEM, or -EINTR if a fatal signal arrived while taking
 * the harvest_locks.
 */
int gps_queues_reconfigure(unsigned int capacity, unsigned int watermark,
			   unsigned int block_size)
{
	struct gps_queue *fresh;
	size_t need;
	int d, ret;

	lockdep_assert_held(&gps_knob_lock);
	need = gps_nr_devs * gps_queue_bytes(capacity);
	if (need >> PAGE_SHIFT > si_mem_available() / 2)
		return -ENOMEM;
	fresh = kcalloc(gps_nr_devs, sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	for (d = 0; d < gps_nr_devs; d++) {
		ret = -ENOMEM;
		if (gps_should_fail(GPS_FAIL_QUEUE_RESHAPE))
			goto err_destroy;
		ret = gps_push_queue_alloc(&fresh[d], gps_devs[d].nid,
					   capacity, watermark, block_size);
		if (ret)
			goto err_destroy;
	}
	ret = gps_lock_all(true);
	if (ret)
		goto err_destroy;
	gps_drain_all_locked(NULL);
	for (d = 0; d < gps_nr_devs; d++)
		gps_push_queue_swap(&gps_devs[d], &fresh[d]);
	gps_unlock_all();
	ret = 0;
	d = gps_nr_devs;
err_destroy:
	while (d--)
		gps_push_queue_free(&fresh[d]);
	kfree(fresh);
	return ret;
}
