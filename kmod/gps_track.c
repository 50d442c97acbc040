// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: automatic subscription (tracking)
 *
 * The paper's profiling phase.  GPS_TRACK_START subscribes every device
 * to every page of the file's automatic GPS allocations (subscribed by
 * default) and zaps every view, so that each device's first touch of each
 * page faults; the fault paths then set the device's bit in the page's
 * touched_r (read fault) or touched_w (write fault, page_mkwrite) mask.
 * The MMU cannot see a load from a page its device made writable, so a
 * device that wrote a page first and read it afterwards may look like a
 * writer only.
 *
 * GPS_TRACK_STOP keeps, per page, the subscribers that used it: under
 * track_policy "touched" (the paper, and the default) those that read or
 * wrote it, which keeps a device that wrote and then read; under "read",
 * an opt-in for programs whose writers never read what they write, only
 * those seen reading it.  Stores made so far are published first.  A
 * page nobody used keeps one copy, on the home device if it has one; a
 * page left with one subscriber is conventional from then on (no
 * capture, no pushes): a demotion.  Collapsed pages are left alone.
 * Tracking again later starts from full subscription again, so the
 * subscriptions follow a program whose pattern changes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched/signal.h>
#include "gps_internal.h"
#include "gps_history.h"

static bool gps_tracked(struct gps_alloc *a)
{
	return a->kind == GPS_MEM_GPS && !(a->flags & GPS_ALLOC_MANUAL);
}

static void gps_track_start(struct gps_alloc *a, struct gps_track_args *args)
{
	unsigned long g;
	int d, ret;

	gps_quiesce(a, 0, a->nr_gpages);
	for (g = 0; g < a->nr_gpages; g++) {
		struct gps_gpage *gp = gps_gpage(a, g);

		gp->touched_r = 0;
		gp->touched_w = 0;
		if (gp->collapsed)
			continue;
		for (d = 0; d < gps_nr_devs; d++) {
			ret = gps_subscribe_page(a, g, d);
			if (ret < 0)
				args->failed++;
			else
				args->subscribed += ret;
		}
		cond_resched();
	}
	WRITE_ONCE(a->tracking, true);
}

static u64 gps_track_keep(struct gps_alloc *a, struct gps_gpage *gp,
			  unsigned int policy)
{
	u64 want = gp->touched_r;
	u64 keep;

	if (policy == GPS_TRACK_POLICY_TOUCHED)
		want |= gp->touched_w;
	keep = want & gp->subs;
	if (keep)
		return keep;
	/* Nobody (that could hold a copy) used it: one copy, at home. */
	if (gp->subs & BIT_ULL(a->home))
		return BIT_ULL(a->home);
	return BIT_ULL(__ffs64(gp->subs));
}

static void gps_track_stop(struct gps_alloc *a, struct gps_track_args *args)
{
	/* One policy for the whole stop, whatever the knob does meanwhile. */
	unsigned int policy = READ_ONCE(gps_knobs.track_policy);
	unsigned long g;
	int d;

	WRITE_ONCE(a->tracking, false);
	/* Stop writes, publish them, then drop the unused replicas. */
	gps_quiesce(a, 0, a->nr_gpages);
	for (g = 0; g < a->nr_gpages; g++) {
		struct gps_gpage *gp = gps_gpage(a, g);
		u64 keep, before = gp->subs;

		if (gp->collapsed)
			continue;
		keep = gps_track_keep(a, gp, policy);
		for (d = 0; d < gps_nr_devs; d++) {
			if (!(gp->subs & ~keep & BIT_ULL(d)))
				continue;
			gps_unsubscribe_page(a, g, d, false);
			args->unsubscribed++;
		}
		if (hweight64(before) > 1 && hweight64(gp->subs) == 1) {
			atomic64_inc(&gps_devs[__ffs64(gp->subs)].stats.demotions);
			args->demoted++;
		}
		cond_resched();
	}
}

/* One allocation: every harvest_lock and its sub_sem (write). */
static int gps_track_one(struct gps_alloc *a, struct gps_track_args *args)
{
	int ret = gps_lock_all(true);

	if (ret)
		return ret;
	down_write(&a->sub_sem);
	/* Born during this START: already tracked, already recording. */
	if (!a->dead && !(args->op == GPS_TRACK_START && a->tracking)) {
		gps_hist(GPS_H_TRACK, -1, -1, a, 0, 0,
			 args->op == GPS_TRACK_START);
		if (args->op == GPS_TRACK_START)
			gps_track_start(a, args);
		else
			gps_track_stop(a, args);
		args->allocs++;
		args->pages += a->nr_gpages;
	}
	up_write(&a->sub_sem);
	gps_unlock_all();
	return 0;
}

/**
 * gps_track() - GPS_IOC_TRACK
 * @ctx: the open file whose automatic allocations are concerned
 * @args: the request; the counters are filled in
 *
 * Return: 0; -EINVAL for an unknown op, STOP while not tracking or START
 * while tracking; -EINTR if killed midway (allocations done so far stay
 * as they are, all correct).
 */
int gps_track(struct gps_ctx *ctx, struct gps_track_args *args)
{
	bool start = args->op == GPS_TRACK_START;
	unsigned long idx = 0;
	struct gps_alloc *a;
	int ret = 0;

	if (args->flags || (!start && args->op != GPS_TRACK_STOP))
		return -EINVAL;
	mutex_lock(&ctx->lock);
	if (ctx->tracking == start) {
		mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	ctx->tracking = start;
	mutex_unlock(&ctx->lock);

	for (;;) {
		mutex_lock(&ctx->lock);
		a = xa_find(&ctx->allocs, &idx, ULONG_MAX, XA_PRESENT);
		if (a)
			kref_get(&a->ref);
		mutex_unlock(&ctx->lock);
		if (!a)
			break;
		if (gps_tracked(a))
			ret = gps_track_one(a, args);
		gps_alloc_put(a);
		if (ret)
			break;
		idx++;
	}
	return ret;
}
