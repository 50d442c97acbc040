// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: data the driver copies: memset, write and read
 *
 * GPS_IOC_MEMSET and GPS_IOC_WRITE store into every replica (and twin)
 * after a fence of every device; GPS_IOC_READ returns what one device's
 * view holds.  Data goes through a kernel bounce buffer: the user buffer
 * may itself be a GPS view whose fault would need sub_sem.
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
#include "gps_still.h"
#include "gps_delay.h"

/*
 * Apply @len bytes at @offset to every replica (and twin) of @a: from
 * @buf, or the byte @value when @buf is NULL.  Within one small page.
 */
static int gps_store_all(struct gps_alloc *a, u64 offset, const u8 *buf,
			 int value, unsigned int len)
{
	unsigned long g = offset >> a->gshift;
	unsigned int sub = (offset >> PAGE_SHIFT) & (a->nr_sub - 1);
	unsigned int poff = offset_in_page(offset);
	struct gps_gpage *gp;
	int d;

	down_read(&a->sub_sem);
	if (a->dead) {
		up_read(&a->sub_sem);
		return -EINVAL;
	}
	gp = gps_gpage(a, g);
	spin_lock(&gp->lock);
	for (d = 0; d < gps_nr_devs; d++) {
		struct gps_replica *r = gp->rep[d];
		struct page *pages[2];
		int k;

		if (!r)
			continue;
		gps_still_check(r, sub, poff, len, "store");
		pages[0] = r->pages[sub];
		pages[1] = r->twins[sub];
		for (k = 0; k < 2 && pages[k]; k++) {
			u8 *p = kmap_local_page(pages[k]);

			if (buf)
				memcpy(p + poff, buf, len);
			else
				memset(p + poff, value, len);
			kunmap_local(p);
		}
		gps_still_sync(r, sub, poff, len);
	}
	spin_unlock(&gp->lock);
	up_read(&a->sub_sem);
	return 0;
}

/*
 * memset and write: queued stores of the range are published first, so
 * that none of them lands after (and over) the new contents.
 */
static int gps_fill(struct gps_ctx *ctx, u64 handle, u64 offset, u64 length,
		    const u8 __user *src, int value)
{
	struct gps_fence_stats st = {};
	struct gps_alloc *a;
	u8 *bounce = NULL;
	int ret;

	a = gps_alloc_get(ctx, handle);
	if (!a)
		return -EINVAL;
	ret = -EINVAL;
	if (!gps_range_ok(a, offset, length))
		goto out;
	ret = -ENOMEM;
	if (src) {
		bounce = kmalloc(PAGE_SIZE, GFP_KERNEL_ACCOUNT);
		if (!bounce)
			goto out;
	}
	ret = gps_fence(GPS_FENCE_ALL, &st);
	while (!ret && length) {
		unsigned int len = min_t(u64, length,
					 PAGE_SIZE - offset_in_page(offset));

		if (src && copy_from_user(bounce, src, len)) {
			ret = -EFAULT;
			break;
		}
		ret = gps_store_all(a, offset, bounce, value, len);
		offset += len;
		length -= len;
		if (src)
			src += len;
		if (fatal_signal_pending(current))
			ret = -EINTR;
		cond_resched();
	}
	kfree(bounce);
out:
	gps_alloc_put(a);
	return ret;
}

int gps_memset(struct gps_ctx *ctx, struct gps_memset_args *args)
{
	if (args->value > 0xff)
		return -EINVAL;
	return gps_fill(ctx, args->handle, args->offset, args->length, NULL,
			args->value);
}

int gps_write(struct gps_ctx *ctx, struct gps_copy_args *args)
{
	if (args->device)
		return -EINVAL;
	return gps_fill(ctx, args->handle, args->offset, args->length,
			u64_to_user_ptr(args->uaddr), 0);
}

/**
 * gps_read() - GPS_IOC_READ: copy out what one device's view holds
 * @ctx: the open file
 * @args: the request
 *
 * Return: 0; -EINVAL for a bad device, an unknown or freed allocation or
 * a range outside it, -ENOMEM, -EFAULT if the bytes cannot be copied
 * out, or -EINTR if a fatal signal arrived (part of the range may have
 * been copied out).
 */
int gps_read(struct gps_ctx *ctx, struct gps_copy_args *args)
{
	u8 __user *dst = u64_to_user_ptr(args->uaddr);
	u64 offset = args->offset, length = args->length;
	struct gps_alloc *a;
	u8 *bounce;
	int ret = 0;

	if (args->device >= gps_nr_devs)
		return -EINVAL;
	a = gps_alloc_get(ctx, args->handle);
	if (!a)
		return -EINVAL;
	bounce = kmalloc(PAGE_SIZE, GFP_KERNEL_ACCOUNT);
	if (!bounce || !gps_range_ok(a, offset, length)) {
		ret = bounce ? -EINVAL : -ENOMEM;
		goto out;
	}
	while (length) {
		unsigned int len = min_t(u64, length,
					 PAGE_SIZE - offset_in_page(offset));
		unsigned long g = offset >> a->gshift;
		unsigned int sub = (offset >> PAGE_SHIFT) & (a->nr_sub - 1);
		struct gps_gpage *gp;
		u8 *p;

		down_read(&a->sub_sem);
		if (a->dead) {
			up_read(&a->sub_sem);
			ret = -EINVAL;
			break;
		}
		gp = gps_gpage(a, g);
		spin_lock(&gp->lock);
		p = kmap_local_page(gps_view_replica(a, gp, args->device)->pages[sub]);
		memcpy(bounce, p + offset_in_page(offset), len);
		kunmap_local(p);
		spin_unlock(&gp->lock);
		up_read(&a->sub_sem);

		if (copy_to_user(dst, bounce, len)) {
			ret = -EFAULT;
			break;
		}
		offset += len;
		length -= len;
		dst += len;
		gps_delay(GPS_DELAY_READ_PAGE);
		/* Up to the size of the allocation: killable, as gps_fill(). */
		if (length && fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
out:
	kfree(bounce);
	gps_alloc_put(a);
	return ret;
}
