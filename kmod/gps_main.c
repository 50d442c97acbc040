// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: gps.ko, the GPU Publish-Subscribe address space on NUMA nodes
 *
 * Each online NUMA node plays a GPU ("device").  /dev/gps hands out
 * allocations whose GPS pages are replicated on their subscribers; stores
 * are captured by write faults, coalesced per cache block in per-device
 * queues and pushed to the other replicas by per-node threads, no later
 * than the writer's next fence.  See Documentation/gps.rst.
 *
 * This file: module init and exit, the misc device, per-open contexts and
 * ioctl dispatch.  The device table is gps_devices.c's, the knobs
 * gps_sysfs.c's, the io_uring fence command gps_uring.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/nodemask.h>
#include <linux/mm.h>
#include <linux/compat.h>
#include <linux/nospec.h>
#include "gps_internal.h"
#include "gps_history.h"
#include "gps_uring.h"

static int gps_open(struct inode *inode, struct file *file)
{
	struct gps_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return -ENOMEM;
	mutex_init(&ctx->lock);
	mutex_init(&ctx->host_lock);
	atomic_long_set(&ctx->host_dirty, 0);
	atomic_set(&ctx->async_fences, 0);
	xa_init(&ctx->allocs);
	ctx->mapping = file->f_mapping;
	file->private_data = ctx;
	return 0;
}

static int gps_release(struct inode *inode, struct file *file)
{
	struct gps_ctx *ctx = file->private_data;
	struct gps_alloc *a;
	unsigned long idx;

	/* No VMA is left: each holds the file. */
	xa_for_each(&ctx->allocs, idx, a)
		gps_alloc_free(ctx, idx);
	xa_destroy(&ctx->allocs);
	mutex_destroy(&ctx->host_lock);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
	return 0;
}

static bool gps_zeroed(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/* Every command's reserved fields must be zero (-EINVAL otherwise). */
#define gps_reserved_zero(args) \
	gps_zeroed((args)->reserved, sizeof((args)->reserved))

/*
 * One handler per command.  Each checks the reserved fields of its
 * struct and clears its out-fields, so that nothing stale goes back,
 * then calls the gps_<verb>() that does the work.
 */
static int gps_ioc_version(struct gps_ctx *ctx, void *data)
{
	struct gps_version_args *args = data;
	int d;

	/* Out only: read back as the driver fills it. */
	memset(args, 0, sizeof(*args));
	args->abi_version = GPS_ABI_VERSION;
	args->nr_devices = gps_nr_devs;
	args->page_size = READ_ONCE(gps_knobs.page_size);
	args->block_size = READ_ONCE(gps_knobs.block_size);
	for (d = 0; d < gps_nr_devs; d++)
		if (gps_devs[d].nid < 64)
			args->node_mask |= BIT_ULL(gps_devs[d].nid);
	return 0;
}

static int gps_ioc_device_info(struct gps_ctx *ctx, void *data)
{
	struct gps_device_args *args = data;
	unsigned long free = 0;
	struct gps_dev *dev;
	pg_data_t *pgdat;
	int z;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	if (args->device >= gps_nr_devs)
		return -EINVAL;
	dev = &gps_devs[args->device];
	pgdat = NODE_DATA(dev->nid);
	args->node = dev->nid;
	args->nr_cpus = cpumask_weight(cpumask_of_node(dev->nid));
	args->mem_total = (u64)pgdat->node_present_pages << PAGE_SHIFT;
	for (z = 0; z < MAX_NR_ZONES; z++)
		free += zone_page_state(&pgdat->node_zones[z], NR_FREE_PAGES);
	args->mem_free = (u64)free << PAGE_SHIFT;
	args->replica_pages = atomic64_read(&dev->stats.replica_pages);
	return 0;
}

static int gps_ioc_alloc(struct gps_ctx *ctx, void *data)
{
	struct gps_alloc_args *args = data;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	args->handle = 0;
	args->offset = 0;
	args->view_stride = 0;
	args->alloc_size = 0;
	args->out_page_size = 0;
	return gps_alloc_create(ctx, args);
}

static int gps_ioc_free(struct gps_ctx *ctx, void *data)
{
	struct gps_free_args *args = data;

	if (!gps_reserved_zero(args))
		return -EINVAL;
	return gps_alloc_free(ctx, args->handle);
}

static int gps_ioc_advise(struct gps_ctx *ctx, void *data)
{
	struct gps_advise_args *args = data;

	if (!gps_reserved_zero(args))
		return -EINVAL;
	args->pages_changed = 0;
	args->pages_failed = 0;
	return gps_advise(ctx, args);
}

static int gps_ioc_fence(struct gps_ctx *ctx, void *data)
{
	struct gps_fence_args *args = data;
	struct gps_fence_stats st = {};
	u64 mask;
	int ret;

	if (!gps_reserved_zero(args))
		return -EINVAL;
	ret = gps_fence_target(args->device, args->flags, args->device_mask,
			       &mask);
	if (ret)
		return ret;
	ret = gps_fence_request(ctx, args->flags, mask, &st);
	args->pages_harvested = st.pages_harvested;
	args->blocks_pushed = st.blocks_pushed;
	args->bytes_pushed = st.bytes_pushed;
	return ret;
}

static int gps_ioc_memset(struct gps_ctx *ctx, void *data)
{
	struct gps_memset_args *args = data;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	return gps_memset(ctx, args);
}

static int gps_ioc_write(struct gps_ctx *ctx, void *data)
{
	struct gps_copy_args *args = data;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	return gps_write(ctx, args);
}

static int gps_ioc_read(struct gps_ctx *ctx, void *data)
{
	struct gps_copy_args *args = data;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	return gps_read(ctx, args);
}

static int gps_ioc_query(struct gps_ctx *ctx, void *data)
{
	struct gps_query_args *args = data;

	if (args->pad || !gps_reserved_zero(args))
		return -EINVAL;
	args->kind = 0;
	args->flags = 0;
	args->page_size = 0;
	args->home = 0;
	args->total_pages = 0;
	args->write_faults = 0;
	args->pushes = 0;
	return gps_query(ctx, args);
}

static int gps_ioc_track(struct gps_ctx *ctx, void *data)
{
	struct gps_track_args *args = data;

	if (!gps_reserved_zero(args))
		return -EINVAL;
	args->allocs = 0;
	args->pages = 0;
	args->subscribed = 0;
	args->unsubscribed = 0;
	args->demoted = 0;
	args->failed = 0;
	return gps_track(ctx, args);
}

/**
 * struct gps_ioctl_desc - one command of /dev/gps
 * @cmd: the command number, with its direction and size
 * @size: bytes of its struct: copied in for _IOC_WRITE, out for _IOC_READ
 * @handler: checks the struct and runs the command; 0 or -errno
 */
struct gps_ioctl_desc {
	unsigned int cmd;
	unsigned int size;
	int (*handler)(struct gps_ctx *ctx, void *data);
};

/* Room for the struct of any command. */
union gps_ioctl_args {
	struct gps_version_args version;
	struct gps_device_args device;
	struct gps_alloc_args alloc;
	struct gps_free_args free;
	struct gps_advise_args advise;
	struct gps_fence_args fence;
	struct gps_memset_args memset;
	struct gps_copy_args copy;
	struct gps_query_args query;
	struct gps_track_args track;
};

/*
 * Indexed by command number.  The struct must be the command's (same
 * size) and fit in union gps_ioctl_args.
 */
#define GPS_IOCTL(_cmd, _type, _handler)				\
	[_IOC_NR(_cmd)] = {						\
		.cmd = _cmd,						\
		.size = sizeof(struct _type) +				\
			BUILD_BUG_ON_ZERO(sizeof(struct _type) !=	\
					  _IOC_SIZE(_cmd)) +		\
			BUILD_BUG_ON_ZERO(sizeof(struct _type) >	\
					  sizeof(union gps_ioctl_args)), \
		.handler = _handler,					\
	}

static const struct gps_ioctl_desc gps_ioctls[] = {
	GPS_IOCTL(GPS_IOC_VERSION, gps_version_args, gps_ioc_version),
	GPS_IOCTL(GPS_IOC_DEVICE_INFO, gps_device_args, gps_ioc_device_info),
	GPS_IOCTL(GPS_IOC_ALLOC, gps_alloc_args, gps_ioc_alloc),
	GPS_IOCTL(GPS_IOC_FREE, gps_free_args, gps_ioc_free),
	GPS_IOCTL(GPS_IOC_ADVISE, gps_advise_args, gps_ioc_advise),
	GPS_IOCTL(GPS_IOC_FENCE, gps_fence_args, gps_ioc_fence),
	GPS_IOCTL(GPS_IOC_MEMSET, gps_memset_args, gps_ioc_memset),
	GPS_IOCTL(GPS_IOC_WRITE, gps_copy_args, gps_ioc_write),
	GPS_IOCTL(GPS_IOC_READ, gps_copy_args, gps_ioc_read),
	GPS_IOCTL(GPS_IOC_QUERY, gps_query_args, gps_ioc_query),
	GPS_IOCTL(GPS_IOC_TRACK, gps_track_args, gps_ioc_track),
};

static long gps_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	const struct gps_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(cmd);
	union gps_ioctl_args u;
	int ret;

	if (_IOC_TYPE(cmd) != GPS_IOC_MAGIC || nr >= ARRAY_SIZE(gps_ioctls))
		return -ENOTTY;
	desc = &gps_ioctls[array_index_nospec(nr, ARRAY_SIZE(gps_ioctls))];
	/* Unknown, or known with another size or direction. */
	if (!desc->handler || desc->cmd != cmd)
		return -ENOTTY;

	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		if (copy_from_user(&u, uarg, desc->size))
			return -EFAULT;
	} else {
		memset(&u, 0, desc->size);
	}
	ret = desc->handler(file->private_data, &u);
	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uarg, &u, desc->size))
		ret = -EFAULT;
	return ret;
}

static const struct file_operations gps_fops = {
	.owner = THIS_MODULE,
	.open = gps_open,
	.release = gps_release,
	.unlocked_ioctl = gps_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = gps_mmap,
	.uring_cmd = gps_uring_cmd,
	.llseek = noop_llseek,
};

/*
 * /dev/gps's mode.  0666 as systemd gives /dev/kvm: what one user can do
 * to another through it is bounded by memcg and the max_bytes knobs, and
 * what is not is written in Documentation/security.rst; a site that wants
 * it for a group loads the module with dev_mode=0660 and sets the group
 * with a udev rule.
 */
static ushort dev_mode = 0666;
module_param(dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "mode of /dev/gps, at most 0666 (default 0666)");

static struct miscdevice gps_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gps",
	.fops = &gps_fops,
};

static int __init gps_init(void)
{
	int ret;

	gps_knobs_init();
	ret = gps_uring_init();
	if (ret)
		return ret;
	ret = gps_devs_init();
	if (ret)
		goto err_uring;
	ret = gps_sysfs_init();
	if (ret)
		goto err_free_devs;
	gps_debugfs_init();
	if (dev_mode & ~0666) {
		pr_err("dev_mode %#o: at most 0666\n", dev_mode);
		ret = -EINVAL;
		goto err_debugfs;
	}
	gps_misc.mode = dev_mode;
	ret = misc_register(&gps_misc);
	if (ret)
		goto err_debugfs;
	pr_info("%u devices, GPS page %u bytes, ABI %u\n", gps_nr_devs,
		gps_knobs.page_size, GPS_ABI_VERSION);
	return 0;

err_debugfs:
	gps_debugfs_exit();
	gps_sysfs_exit();
err_free_devs:
	gps_devs_free();
	gps_history_free();
err_uring:
	gps_uring_exit();
	return ret;
}

static void __exit gps_exit(void)
{
	misc_deregister(&gps_misc);
	gps_debugfs_exit();
	gps_sysfs_exit();
	gps_uring_exit();
	gps_devs_free();
	gps_history_free();
}

module_init(gps_init);
module_exit(gps_exit);
MODULE_DESCRIPTION("GPS: GPU Publish-Subscribe address space on NUMA nodes");
MODULE_LICENSE("GPL");
