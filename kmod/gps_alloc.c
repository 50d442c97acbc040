// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: allocations and what user space asks of them
 *
 * An allocation is a range of GPS pages with one view per device.  Views
 * sit at offsets of /dev/gps that are never reused, across every process,
 * so that write-protecting a view (unmap_mapping_range() on the file's
 * mapping) can only touch that view.  A GPS allocation starts with every
 * device subscribed (or only the home device with GPS_ALLOC_MANUAL); a
 * conventional allocation has one copy, on the home device, for good; a
 * managed one has one copy per page, first on the home device, which
 * faults move (gps_migrate.c).
 *
 * This file: creating, finding, freeing and querying allocations.
 * Subscriptions are changed in gps_subscribe.c, data copied by the driver
 * in gps_copy.c.
 *
 * Nothing here copies from or to user memory with a lock held, since the
 * user buffer may itself be a GPS view whose fault would need sub_sem.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/log2.h>
#include "gps_internal.h"
#include "gps_history.h"
#include "gps_delay.h"

/* Offsets of views in the file, in pages: never reused. */
static atomic64_t gps_next_pgoff = ATOMIC64_INIT(16);
static atomic64_t gps_next_handle = ATOMIC64_INIT(0);

/* Every live allocation, for debugfs's subscriber histogram. */
DEFINE_MUTEX(gps_all_allocs_lock);
LIST_HEAD(gps_all_allocs);

/* mmap offsets must stay positive loff_t values. */
#define GPS_PGOFF_LIMIT	(1ULL << (62 - PAGE_SHIFT))

static void gps_alloc_release(struct kref *ref)
{
	struct gps_alloc *a = container_of(ref, struct gps_alloc, ref);

	gps_pagetable_free(a);
	kvfree(a->gpages);
	kvfree(a->um);
	kfree(a);
}

void gps_alloc_put(struct gps_alloc *a)
{
	kref_put(&a->ref, gps_alloc_release);
}

/**
 * gps_alloc_get() - find an allocation of @ctx by handle, with a reference
 * @ctx: the open file
 * @handle: handle from GPS_IOC_ALLOC
 *
 * Return: the allocation, with a reference (gps_alloc_put()), or NULL if
 * @ctx has no allocation @handle.
 */
struct gps_alloc *gps_alloc_get(struct gps_ctx *ctx, u64 handle)
{
	struct gps_alloc *a;

	mutex_lock(&ctx->lock);
	a = xa_load(&ctx->allocs, handle);
	if (a)
		kref_get(&a->ref);
	mutex_unlock(&ctx->lock);
	return a;
}

/**
 * gps_alloc_find_view() - the allocation whose one view holds a range
 * @ctx: the open file
 * @pgoff: first page of the range in the file
 * @npages: pages in the range
 *
 * Return: the allocation, with a reference, or NULL when the range is not
 * entirely inside one view of one live allocation of @ctx.
 */
struct gps_alloc *gps_alloc_find_view(struct gps_ctx *ctx, pgoff_t pgoff,
				      unsigned long npages)
{
	struct gps_alloc *a, *found = NULL;
	unsigned long idx;

	mutex_lock(&ctx->lock);
	xa_for_each(&ctx->allocs, idx, a) {
		pgoff_t view, end;

		if (pgoff < a->pgoff ||
		    pgoff >= a->pgoff + gps_nr_views() * a->stride)
			continue;
		view = (pgoff - a->pgoff) / a->stride;
		end = a->pgoff + (view + 1) * a->stride;
		if (npages <= end - pgoff && !READ_ONCE(a->dead)) {
			kref_get(&a->ref);
			found = a;
		}
		break;
	}
	mutex_unlock(&ctx->lock);
	return found;
}

/*
 * First replicas, in two passes so that a tight node budget still gives
 * every page a copy: first one copy per page, on the home device or, if
 * its node cannot hold it, the next device that can (counted); then, for
 * an automatic GPS allocation, a copy on every other device that can
 * hold one.  A page no node can hold fails the call.
 */
static int gps_populate(struct gps_alloc *a, bool all)
{
	unsigned int failed[GPS_MAX_DEVICES] = {};
	unsigned long g;
	int pass, d;

	for (pass = 0; pass < (all ? 2 : 1); pass++) {
		for (g = 0; g < a->nr_gpages; g++) {
			struct gps_gpage *gp = gps_gpage(a, g);

			if (!pass)
				spin_lock_init(&gp->lock);
			for (d = 0; d < gps_nr_devs; d++) {
				int dev = (a->home + d) % gps_nr_devs;
				struct gps_replica *r;

				if ((!pass && gp->subs) || gp->rep[dev])
					continue;
				r = gps_replica_alloc(a, g, dev, true);
				if (!r) {
					/* Counted once, in the last pass. */
					if (pass == all)
						failed[dev]++;
					continue;
				}
				gp->rep[dev] = r;
				gp->subs |= BIT_ULL(dev);
			}
			if (!gp->subs)
				return -ENOMEM;
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	/* Only an allocation that exists has devices left unsubscribed. */
	for (d = 0; d < gps_nr_devs; d++)
		atomic64_add(failed[d], &gps_devs[d].stats.subscribe_failed);
	return 0;
}

/**
 * gps_alloc_create() - GPS_IOC_ALLOC
 * @ctx: the open file
 * @args: checked for reserved fields by the caller
 *
 * Return: 0, with the handle, offset, view stride, size and page size in
 * @args; -EINVAL for a bad kind, flags, home, page size or a zero size;
 * -ENOMEM for a size beyond the machine's memory, when memory runs out or
 * when a page fits on no node; -EINTR if killed while the replicas were
 * made; -ENOSPC when the file offsets run out.
 */
int gps_alloc_create(struct gps_ctx *ctx, struct gps_alloc_args *args)
{
	unsigned int ps = args->page_size ? args->page_size :
					    READ_ONCE(gps_knobs.page_size);
	struct gps_alloc *a;
	u64 size, views;
	int ret;

	if (args->kind != GPS_MEM_GPS && args->kind != GPS_MEM_CONVENTIONAL &&
	    args->kind != GPS_MEM_MANAGED)
		return -EINVAL;
	if (args->flags & ~GPS_ALLOC_FLAGS)
		return -EINVAL;
	if (args->kind != GPS_MEM_GPS && args->flags)
		return -EINVAL;
	if (args->home >= gps_nr_devs)
		return -EINVAL;
	if (!gps_page_size_ok(ps))
		return -EINVAL;
	if (!args->size || args->size > (u64)totalram_pages() << PAGE_SHIFT)
		return args->size ? -ENOMEM : -EINVAL;
	size = round_up(args->size, ps);

	views = (size >> PAGE_SHIFT) * gps_nr_views();
	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	kref_init(&a->ref);
	init_rwsem(&a->sub_sem);
	INIT_LIST_HEAD(&a->all_link);
	a->ctx = ctx;
	a->size = size;
	a->kind = args->kind;
	a->flags = args->flags;
	a->home = args->home;
	a->gshift = ilog2(ps);
	a->nr_sub = ps >> PAGE_SHIFT;
	a->nr_gpages = size >> a->gshift;
	a->stride = size >> PAGE_SHIFT;
	a->gpage_bytes = struct_size((struct gps_gpage *)NULL, rep, gps_nr_devs);
	a->gpages = kvzalloc(a->nr_gpages * a->gpage_bytes,
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
			     __GFP_RETRY_MAYFAIL);
	if (!a->gpages) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = gps_populate(a, args->kind == GPS_MEM_GPS &&
			   !(args->flags & GPS_ALLOC_MANUAL));
	if (!ret && args->kind == GPS_MEM_MANAGED)
		ret = gps_um_init(a);
	if (ret)
		goto err_free;
	/*
	 * Offsets only for an allocation that exists: a failed one costs
	 * none, so the space (2^50 pages) runs out only after allocating,
	 * really, that much memory.
	 */
	a->pgoff = atomic64_fetch_add(views, &gps_next_pgoff);
	if (a->pgoff + views > GPS_PGOFF_LIMIT) {
		ret = -ENOSPC;
		goto err_free;
	}

	a->handle = atomic64_inc_return(&gps_next_handle);
	args->handle = a->handle;
	args->offset = (u64)a->pgoff << PAGE_SHIFT;
	args->view_stride = (u64)a->stride << PAGE_SHIFT;
	args->alloc_size = size;
	args->out_page_size = ps;
	/*
	 * Complete before the handle is published: from then on another
	 * thread of the file may free @a, so nothing here touches it after.
	 */
	atomic64_inc(&gps_nr_allocs);
	mutex_lock(&gps_all_allocs_lock);
	list_add_tail(&a->all_link, &gps_all_allocs);
	mutex_unlock(&gps_all_allocs_lock);
	mutex_lock(&ctx->lock);
	/* Born during tracking: recorded like the others. */
	a->tracking = ctx->tracking && args->kind == GPS_MEM_GPS &&
		      !(args->flags & GPS_ALLOC_MANUAL);
	ret = xa_insert(&ctx->allocs, a->handle, a, GFP_KERNEL_ACCOUNT);
	mutex_unlock(&ctx->lock);
	if (ret)
		goto err_unlist;
	gps_delay(GPS_DELAY_ALLOC_PUBLISH);
	return 0;

err_unlist:
	mutex_lock(&gps_all_allocs_lock);
	list_del_init(&a->all_link);
	mutex_unlock(&gps_all_allocs_lock);
	atomic64_dec(&gps_nr_allocs);
err_free:
	gps_alloc_put(a);	/* frees replicas made so far */
	return ret;
}

/**
 * gps_alloc_kill() - free the memory of an allocation taken from its ctx
 * @a: allocation no longer reachable by handle
 *
 * Queued blocks and dirty pages of @a are dropped and every view is
 * zapped (later faults get SIGBUS); the caller then frees the replicas
 * with gps_pagetable_free().  Runs to the end even if the task is being
 * killed: it is also the exit path.
 *
 * The harvest_locks are held only while @a is marked dead and purged:
 * a harvester reaches replicas only through the dirty lists and queues,
 * and once @a is on none and no fault can list it again, its replicas
 * are out of every harvester's reach, as when gps_alloc_free() frees
 * them under sub_sem alone.  The zap, whose work grows with @a's size,
 * then runs under sub_sem (write) only, and no fence or push thread of
 * any user waits for it.
 */
void gps_alloc_kill(struct gps_alloc *a)
{
	int d;

	gps_lock_all(false);
	down_write(&a->sub_sem);
	/* From here page_mkwrite sees dead: nothing gets dirty again. */
	WRITE_ONCE(a->dead, true);
	for (d = 0; d < gps_nr_devs; d++)
		gps_push_queue_purge(&gps_devs[d], a);
	gps_dirty_purge(a);
	gps_unlock_all();
	gps_delay(GPS_DELAY_FREE_ZAP);
	gps_zap_views(a, 0, a->nr_gpages, NULL);
	up_write(&a->sub_sem);
	mutex_lock(&gps_all_allocs_lock);
	list_del_init(&a->all_link);
	mutex_unlock(&gps_all_allocs_lock);
	atomic64_dec(&gps_nr_allocs);
}

/**
 * gps_alloc_free() - GPS_IOC_FREE
 * @ctx: the open file
 * @handle: allocation to free
 *
 * Return: 0, or -EINVAL for a handle that is not (or no longer) allocated.
 */
int gps_alloc_free(struct gps_ctx *ctx, u64 handle)
{
	struct gps_alloc *a;

	mutex_lock(&ctx->lock);
	a = xa_erase(&ctx->allocs, handle);
	mutex_unlock(&ctx->lock);
	if (!a)
		return -EINVAL;
	gps_hist(GPS_H_FREE, -1, -1, a, 0, 0, 0);
	gps_alloc_kill(a);
	down_write(&a->sub_sem);
	gps_pagetable_free(a);
	up_write(&a->sub_sem);
	gps_alloc_put(a);
	return 0;
}

/* The range [offset, offset + length) inside an allocation of @a. */
bool gps_range_ok(struct gps_alloc *a, u64 offset, u64 length)
{
	u64 end;

	return length && !check_add_overflow(offset, length, &end) &&
	       end <= a->size;
}

#define GPS_QUERY_CHUNK	512

/**
 * gps_query() - GPS_IOC_QUERY: geometry, counters and subscriber masks
 * @ctx: the open file
 * @args: the request; nr_pages is cut to the pages that exist
 *
 * Return: 0; -EINVAL for an unknown or freed allocation or a first page
 * past its end, -ENOMEM, or -EFAULT if the masks cannot be copied out.
 */
int gps_query(struct gps_ctx *ctx, struct gps_query_args *args)
{
	u64 __user *out = u64_to_user_ptr(args->subs);
	struct gps_alloc *a;
	u64 *buf = NULL;
	u64 done = 0, nr;
	int ret = 0;

	a = gps_alloc_get(ctx, args->handle);
	if (!a)
		return -EINVAL;
	if (args->first_page > a->nr_gpages || READ_ONCE(a->dead)) {
		ret = -EINVAL;
		goto out;
	}
	nr = min_t(u64, args->nr_pages, a->nr_gpages - args->first_page);
	if (nr) {
		buf = kmalloc_array(GPS_QUERY_CHUNK, sizeof(*buf),
				    GFP_KERNEL_ACCOUNT);
		if (!buf) {
			ret = -ENOMEM;
			goto out;
		}
	}
	while (done < nr) {
		unsigned int n = min_t(u64, nr - done, GPS_QUERY_CHUNK), i;

		down_read(&a->sub_sem);
		for (i = 0; i < n; i++)
			buf[i] = gps_gpage(a, args->first_page + done + i)->subs;
		up_read(&a->sub_sem);
		if (copy_to_user(out + done, buf, n * sizeof(*buf))) {
			ret = -EFAULT;
			goto out;
		}
		done += n;
	}
	args->nr_pages = nr;
	args->kind = a->kind;
	args->flags = a->flags;
	args->page_size = 1U << a->gshift;
	args->home = a->home;
	args->total_pages = a->nr_gpages;
	args->write_faults = atomic64_read(&a->write_faults);
	args->pushes = atomic64_read(&a->pushes);
out:
	kfree(buf);
	gps_alloc_put(a);
	return ret;
}
