// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: views, faults and write capture
 *
 * Each device maps an allocation through its own view: a shared mapping
 * of /dev/gps at the view's offset.  A fault maps the small page of the
 * replica that the view should see (gps_view_replica()).  Because the
 * vm_ops have .page_mkwrite, the kernel maps that page read-only and
 * calls gps_page_mkwrite() on the first write: for a GPS page with more
 * than one subscriber this is the paper's store interception.  The small
 * page is marked dirty, a twin (snapshot of its contents) is kept for the
 * later diff, and the page becomes writable until the harvester
 * write-protects it again.  Pages with a single subscriber (conventional
 * memory) are simply made writable: no twin, no harvest, no cost later.
 *
 * Locking: see gps_internal.h.  Both handlers take sub_sem for reading to
 * look the page up and return with the page locked, which is what keeps
 * a concurrent harvest or subscription change from losing a write.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include "gps_internal.h"
#include "gps_inject.h"
#include "gps_trace.h"

static void gps_view_pos(struct gps_alloc *a, pgoff_t pgoff, int *view,
			 unsigned long *gidx, unsigned int *sub)
{
	pgoff_t off = pgoff - a->pgoff;

	*view = off / a->stride;
	off %= a->stride;
	*gidx = off >> (a->gshift - PAGE_SHIFT);
	*sub = off & (a->nr_sub - 1);
}

static vm_fault_t gps_fault(struct vm_fault *vmf)
{
	struct gps_alloc *a = vmf->vma->vm_private_data;
	struct gps_replica *r;
	unsigned long gidx;
	unsigned int sub;
	struct page *page;
	int view;

	gps_view_pos(a, vmf->pgoff, &view, &gidx, &sub);
	down_read(&a->sub_sem);
	if (a->dead) {
		up_read(&a->sub_sem);
		return VM_FAULT_SIGBUS;
	}
	r = gps_view_replica(a, gps_gpage(a, gidx), view);
	if (WARN_ON_ONCE(!r)) {
		up_read(&a->sub_sem);
		return VM_FAULT_SIGBUS;
	}
	if (READ_ONCE(a->tracking)) {
		struct gps_gpage *gp = gps_gpage(a, gidx);

		set_bit(view, vmf->flags & FAULT_FLAG_WRITE ? &gp->touched_w :
							      &gp->touched_r);
		atomic64_inc(&gps_devs[view].stats.tracking_faults);
	}
	page = r->pages[sub];
	get_page(page);
	set_bit(view, &r->mapped_views);
	lock_page(page);
	up_read(&a->sub_sem);

	if (!(vmf->flags & FAULT_FLAG_WRITE))
		atomic64_inc(&gps_devs[view].stats.read_faults);
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

static vm_fault_t gps_page_mkwrite(struct vm_fault *vmf)
{
	struct gps_alloc *a = vmf->vma->vm_private_data;
	struct page *page = vmf->page, *twin = NULL;
	struct gps_replica *r;
	struct gps_gpage *gp;
	unsigned long gidx;
	unsigned int sub;
	int view, owner;

	gps_view_pos(a, vmf->pgoff, &view, &gidx, &sub);
	gp = gps_gpage(a, gidx);
retry:
	down_read(&a->sub_sem);
	if (a->dead) {
		up_read(&a->sub_sem);
		goto out_sigbus;
	}
	r = gps_view_replica(a, gp, view);
	if (!r || r->pages[sub] != page) {
		/* The view's target changed under us: fault again. */
		up_read(&a->sub_sem);
		if (twin)
			put_page(twin);
		return VM_FAULT_NOPAGE;
	}
	lock_page(page);
	if (READ_ONCE(a->tracking))
		set_bit(view, &gp->touched_w);
	if (hweight64(READ_ONCE(gp->subs)) < 2) {
		/* One copy: nothing to publish, plain writable page. */
		up_read(&a->sub_sem);
		if (twin)
			put_page(twin);
		return VM_FAULT_LOCKED;
	}

	/* r may be freed once sub_sem is dropped: keep what we need of it */
	owner = r->dev;
	spin_lock(&gp->lock);
	if (!r->twins[sub] && !twin) {
		spin_unlock(&gp->lock);
		unlock_page(page);
		up_read(&a->sub_sem);
		if (gps_should_fail(GPS_FAIL_TWIN_ALLOC))
			return VM_FAULT_OOM;
		twin = alloc_pages_node(gps_devs[owner].nid,
					GFP_HIGHUSER | __GFP_ACCOUNT, 0);
		if (!twin)
			return VM_FAULT_OOM;
		goto retry;
	}
	if (!r->twins[sub]) {
		copy_highpage(twin, page);
		r->twins[sub] = twin;
		twin = NULL;
		atomic64_inc(&gps_twin_pages);
		atomic64_inc(&gps_devs[r->dev].stats.twin_pages);
	}
	set_bit(sub, r->dirty);
	gps_mark_dirty(r);
	spin_unlock(&gp->lock);
	up_read(&a->sub_sem);

	if (twin)
		put_page(twin);
	if (owner != view)
		atomic_long_or(BIT(owner), &gps_devs[view].remote_mask);
	atomic64_inc(&gps_devs[view].stats.write_faults);
	atomic64_inc(&a->write_faults);
	trace_gps_write_fault(view, owner, a->handle, gidx, sub);
	return VM_FAULT_LOCKED;

out_sigbus:
	if (twin)
		put_page(twin);
	return VM_FAULT_SIGBUS;
}

static void gps_vm_open(struct vm_area_struct *vma)
{
	struct gps_alloc *a = vma->vm_private_data;

	kref_get(&a->ref);
}

static void gps_vm_close(struct vm_area_struct *vma)
{
	gps_alloc_put(vma->vm_private_data);
}

const struct vm_operations_struct gps_vm_ops = {
	.open = gps_vm_open,
	.close = gps_vm_close,
	.fault = gps_fault,
	.page_mkwrite = gps_page_mkwrite,
};

/**
 * gps_mmap() - map one device's view of an allocation, or part of it
 * @file: /dev/gps, opened by the owner of the allocation
 * @vma: the new mapping; shared, within one view of one allocation
 *
 * Private mappings are refused: a private copy would never be published.
 *
 * Return: 0, or -EINVAL for a private mapping or one that is not inside
 * one view of one live allocation of the file.
 */
int gps_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct gps_ctx *ctx = file->private_data;
	struct gps_alloc *a;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	a = gps_alloc_find_view(ctx, vma->vm_pgoff, vma_pages(vma));
	if (!a)
		return -EINVAL;
#ifdef GPS_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
#endif
	vma->vm_ops = &gps_vm_ops;
	vma->vm_private_data = a;	/* reference from gps_alloc_find_view */
	return 0;
}
