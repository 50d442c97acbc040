// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: the views' mappings
 *
 * A program maps each view of an allocation with mmap(MAP_SHARED) of
 * /dev/gps at the view's offset (gps_mmap()); the mapping's vm_ops send
 * its faults to gps_fault.c.  Here: what a mapping may be, how many one
 * allocation may have (max_maps), and what splits and mprotect() must do
 * so that no store escapes capture.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/module.h>
#include "gps_internal.h"

/*
 * Mappings of one allocation at once: each is walked by every harvest of
 * its pages (write-protection is per VMA, with a TLB flush), under the
 * device's harvest_lock that every user of the device shares, so the
 * number bounds what one user's mappings cost another's fences.
 */
static unsigned int max_maps = 256;
module_param(max_maps, uint, 0444);
MODULE_PARM_DESC(max_maps,
		 "mappings (VMAs) of one allocation's views at once, 0: no limit (default 256)");

/* One more mapping of @a would pass max_maps. */
static bool gps_maps_full(struct gps_alloc *a)
{
	return max_maps && atomic_read(&a->maps) >= max_maps;
}

/* A mapping copied or split off another (mremap, split): counted. */
static void gps_vm_open(struct vm_area_struct *vma)
{
	struct gps_alloc *a = vma->vm_private_data;

	kref_get(&a->ref);
	atomic_inc(&a->maps);
}

static void gps_vm_close(struct vm_area_struct *vma)
{
	struct gps_alloc *a = vma->vm_private_data;

	atomic_dec(&a->maps);
	gps_alloc_put(a);
}

/* A split (munmap or mprotect of a part) makes one mapping more. */
static int gps_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return gps_maps_full(vma->vm_private_data) ? -ENOMEM : 0;
}

/*
 * An mprotect() that leaves the view writable lets the kernel make dirty
 * read-only PTEs of a shared mapping writable without a write fault
 * (can_change_pte_writable(), 6.1 and 6.12), and a page the harvest
 * write-protected keeps its PTE's dirty bit: stores would land with no
 * twin and no dirty bit, never published.  So the range is zapped first;
 * every access then faults back in, stores into gps_page_mkwrite().  No
 * fault maps the range again before the change of protection: the caller
 * holds mmap_lock for writing, and faults under the VMA lock alone (6.4
 * on) are shut out by write-locking the VMA before the zap.
 */
static int gps_vm_mprotect(struct vm_area_struct *vma, unsigned long start,
			   unsigned long end, unsigned long newflags)
{
	pgoff_t pgoff = vma->vm_pgoff + ((start - vma->vm_start) >> PAGE_SHIFT);

	if (!(newflags & VM_WRITE))
		return 0;
#ifdef GPS_HAVE_VMA_START_WRITE
	vma_start_write(vma);
#endif
	unmap_mapping_range(vma->vm_file->f_mapping, (loff_t)pgoff << PAGE_SHIFT,
			    end - start, 0);
	return 0;
}

const struct vm_operations_struct gps_vm_ops = {
	.open = gps_vm_open,
	.close = gps_vm_close,
	.may_split = gps_vm_may_split,
	.mprotect = gps_vm_mprotect,
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
 * Return: 0, -EINVAL for a private mapping or one that is not inside
 * one view of one live allocation of the file, or -ENOMEM when the
 * allocation has max_maps mappings already.
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
	if (gps_maps_full(a)) {
		gps_alloc_put(a);
		return -ENOMEM;
	}
	atomic_inc(&a->maps);
#ifdef GPS_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY |
		     VM_MIXEDMAP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY |
			 VM_MIXEDMAP;
#endif
	/* VM_MIXEDMAP: capture maps pages with vm_insert_page() in faults. */
	vma->vm_ops = &gps_vm_ops;
	vma->vm_private_data = a;	/* reference from gps_alloc_find_view */
	return 0;
}
