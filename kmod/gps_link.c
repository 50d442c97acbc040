// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the interconnect model
 *
 * The arithmetic is the pure core's (core/gps_linkmodel.h); the clocks,
 * locks and sleeps are here, and the traffic matrix each send is counted
 * in (gps_link_send()).
 *
 * NUMA links are far faster, relative to local memory, than the PCIe or
 * NVLink links between GPUs.  To reproduce a GPU system's ratio of local
 * to remote bandwidth, each device gets a virtual outgoing link: every
 * push charges its bytes (one copy per destination) to the device's link
 * clock at link_bandwidth bytes/s.  Pushes themselves run at memory
 * speed; what the model delays is their completion: a fence returns only
 * when the link would have carried everything it pushed, plus
 * link_latency_ns, and the push thread does not start a new round while
 * its link is busy.  Time the link spent during compute is not waited
 * for again, so overlap of pushes with compute is modelled too.
 *
 * The clock advances under the device's link_lock, taken by whoever
 * pushes for the device (its harvest_lock's holder, the helpers of a
 * fence); every wait happens after the harvest_lock is dropped.
 * link_bandwidth = 0 stops charging (and forgets the backlog);
 * link_latency_ns alone still delays fences that pushed something; both
 * 0 turn the model off.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/delay.h>
#include <linux/freezer.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/jobctl.h>
#include <linux/kthread.h>
#include "gps_internal.h"
#include "gps_delay.h"
#include "gps_linkmodel.h"

/*
 * Account @bytes sent over @dev's link.  The bandwidth is read under
 * link_lock: a new one is stored before gps_link_reset() takes the lock,
 * so a charge either comes before the reset (and is forgotten) or sees
 * the new link; never the old link's cost after the reset.
 */
static void gps_link_charge(struct gps_dev *dev, u64 bytes)
{
	u64 bw, now;

	if (!bytes || !READ_ONCE(gps_knobs.link_bandwidth))
		return;
	gps_delay(GPS_DELAY_LINK_CHARGE);
	now = ktime_get_ns();
	spin_lock(&dev->link_lock);
	bw = READ_ONCE(gps_knobs.link_bandwidth);
	if (bw)
		WRITE_ONCE(dev->link_free_ns,
			   gps_link_busy_until(dev->link_free_ns, now, bytes,
					       bw));
	spin_unlock(&dev->link_lock);
}

/**
 * gps_link_send() - account what @dev sent each device of @to
 * @dev: device
 * @to: the receivers
 * @blocks: blocks sent each receiver
 * @bytes: bytes written into each receiver's replica
 *
 * Counted in @dev's row of the traffic matrix, and charged to its link.
 */
void gps_link_send(struct gps_dev *dev, u64 to, u64 blocks, u64 bytes)
{
	u64 left = to;
	int d;

	while (left) {
		d = __ffs64(left);
		left &= left - 1;
		atomic64_add(blocks, &dev->stats.to_blocks[d]);
		atomic64_add(bytes, &dev->stats.to_bytes[d]);
	}
	gps_link_charge(dev, bytes * hweight64(to));
}

/* A new bandwidth: forget what the old one still owed. */
void gps_link_reset(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++) {
		spin_lock(&gps_devs[d].link_lock);
		WRITE_ONCE(gps_devs[d].link_free_ns, 0);
		spin_unlock(&gps_devs[d].link_lock);
	}
}

/* Is any freeze (system or cgroup v1) under way? */
static bool gps_link_any_freeze(void)
{
#ifdef CONFIG_FREEZER
	return static_branch_unlikely(&freezer_active);
#else
	return false;
#endif
}

/*
 * Is a freeze (suspend, hibernation, a cgroup freezer) waiting for the
 * sleeper?  @dev's push thread freezes in place (no lock held).  A fence
 * or a fault (remote_lock, mmap_lock held: it must not freeze there)
 * stops waiting, and freezes on its way back to user space.  An io_uring
 * fence's kworker never freezes, but a user task can wait for the locks
 * it holds: it stops waiting while any freeze is under way.
 */
static bool gps_link_freezing(struct gps_dev *dev)
{
	if (current == dev->thread) {
		try_to_freeze();
		return false;
	}
	if (current->flags & PF_KTHREAD)
		return gps_link_any_freeze();
	return freezing(current) ||
	       (READ_ONCE(current->jobctl) & JOBCTL_TRAP_FREEZE);
}

/*
 * Sleep until @until (ns), killably: a fatal signal (or, for the push
 * thread, a stop), or a freeze of a task that holds locks, ends the wait:
 * the data is in place, only the model's timing is cut short.  With
 * @follow, also until @dev's link frees as it is now: gps_link_reset()
 * (a new link) ends the push thread's wait for the old one.  The time
 * waited is charged to @dev.
 */
static void gps_link_sleep(struct gps_dev *dev, u64 until, bool latency,
			   bool follow)
{
	u64 start, now;

	/* The link unlimited: nothing owed, no clock to read. */
	if (!until && (!latency || !READ_ONCE(gps_knobs.link_latency_ns)))
		return;
	start = ktime_get_ns();
	now = start;

	if (latency)
		until = gps_link_fence_end(until, start,
					   READ_ONCE(gps_knobs.link_latency_ns));
	while (now < until && !fatal_signal_pending(current) &&
	       !((current->flags & PF_KTHREAD) && kthread_should_stop()) &&
	       !gps_link_freezing(dev)) {
		/* Killable, not interruptible: a handled signal must not spin. */
		u64 us = div_u64(min_t(u64, until - now, 10 * NSEC_PER_MSEC),
				 NSEC_PER_USEC);

		usleep_range_state(us + 1, us + 50, TASK_KILLABLE);
		now = ktime_get_ns();
		if (follow)
			until = min(until, READ_ONCE(dev->link_free_ns));
	}
	if (now > start)
		atomic64_add(now - start, &dev->stats.link_wait_ns);
}

/**
 * gps_link_wait() - sleep until @dev's link has carried what it was given
 * @dev: device; no lock held
 * @latency: add link_latency_ns (a fence waits for the last byte to land);
 *	without it (the push thread's wait) a new link ends the wait
 */
void gps_link_wait(struct gps_dev *dev, bool latency)
{
	gps_link_sleep(dev, READ_ONCE(dev->link_free_ns), latency, !latency);
}

/**
 * gps_link_wait_all() - sleep until every link of @mask is idle
 * @mask: devices whose links carry a release's pushes at the same time
 * @latency: add link_latency_ns once
 *
 * A release of several devices costs the slowest link, not the sum.
 * The wait is charged to that device; each link's time still owed, what
 * compute did not hide, to its own (link_exposed_ns).
 */
void gps_link_wait_all(unsigned long mask, bool latency)
{
	u64 until = 0, now = 0;
	int d, last = -1;

	for_each_set_bit(d, &mask, gps_nr_devs) {
		u64 t = READ_ONCE(gps_devs[d].link_free_ns);

		if (t && !now)
			now = ktime_get_ns();
		if (t > now)
			atomic64_add(t - now,
				     &gps_devs[d].stats.link_exposed_ns);
		if (last < 0 || t > until) {
			until = t;
			last = d;
		}
	}
	if (last >= 0)
		gps_link_sleep(&gps_devs[last], until, latency, false);
}
