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
 * This file: module init and exit, the misc device, per-open contexts,
 * ioctl dispatch and the io_uring fence command.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/nodemask.h>
#include <linux/mm.h>
#include <linux/workqueue.h>
#include <linux/compat.h>
#ifdef GPS_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#include "gps_internal.h"

struct gps_knobs gps_knobs = {
	.page_size = GPS_PAGE_64K,
	.block_size = 128,
	.queue_capacity = 512,
	.queue_watermark = 511,
	.harvest_interval_us = 1000,
	.dirty_wake = 64,
	.bulk_blocks = 16,
	.track_policy = GPS_TRACK_POLICY_TOUCHED,
	.max_bytes = 0,
	.node_reserve_bytes = 32 << 20,
};

DEFINE_MUTEX(gps_knob_lock);	/* serialises knob changes */

struct gps_dev *gps_devs;
unsigned int gps_nr_devs;
atomic64_t gps_nr_allocs;
atomic64_t gps_replica_pages;
atomic64_t gps_twin_pages;

/* harvest_locks nest in device order: one lockdep class per device. */
static struct lock_class_key gps_harvest_keys[GPS_MAX_DEVICES];
static struct workqueue_struct *gps_wq;

static int gps_open(struct inode *inode, struct file *file)
{
	struct gps_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	mutex_init(&ctx->lock);
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
	mutex_destroy(&ctx->lock);
	kfree(ctx);
	return 0;
}

static bool gps_zeroed(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

static int gps_version(struct gps_version_args *args)
{
	int d;

	args->abi_version = GPS_ABI_VERSION;
	args->nr_devices = gps_nr_devs;
	args->page_size = READ_ONCE(gps_knobs.page_size);
	args->block_size = READ_ONCE(gps_knobs.block_size);
	for (d = 0; d < gps_nr_devs; d++)
		if (gps_devs[d].nid < 64)
			args->node_mask |= BIT_ULL(gps_devs[d].nid);
	return 0;
}

static int gps_device_info(struct gps_device_args *args)
{
	unsigned long free = 0;
	struct gps_dev *dev;
	pg_data_t *pgdat;
	int z;

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

/* The devices a fence request names, as a mask; 0 if it is malformed. */
static u64 gps_fence_target(u32 device, u32 flags, u64 mask)
{
	u64 all = gps_nr_devs == 64 ? ~0ULL : BIT_ULL(gps_nr_devs) - 1;

	if (flags & ~GPS_FENCE_FLAGS)
		return 0;
	if (flags & GPS_FENCE_MASK)
		return device || (mask & ~all) ? 0 : mask;
	if (mask)
		return 0;
	if (device == GPS_FENCE_ALL)
		return all;
	return device < gps_nr_devs ? BIT_ULL(device) : 0;
}

static int gps_do_fence(struct gps_fence_args *args)
{
	u64 mask = gps_fence_target(args->device, args->flags,
				    args->device_mask);
	struct gps_fence_stats st = {};
	int ret;

	if (!mask)
		return -EINVAL;
	ret = gps_fence_devices(mask, &st);
	args->pages_harvested = st.pages_harvested;
	args->blocks_pushed = st.blocks_pushed;
	args->bytes_pushed = st.bytes_pushed;
	return ret;
}

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
 * Reserved fields of every command must be zero and out-fields are
 * cleared before the command runs, so that nothing stale goes back.
 */
static int gps_check_args(unsigned int cmd, union gps_ioctl_args *u)
{
	switch (cmd) {
	case GPS_IOC_VERSION:
		memset(&u->version, 0, sizeof(u->version));
		return 0;
	case GPS_IOC_DEVICE_INFO:
		if (u->device.pad || !gps_zeroed(u->device.reserved,
						 sizeof(u->device.reserved)))
			return -EINVAL;
		u->device.node = 0;
		u->device.nr_cpus = 0;
		u->device.mem_total = 0;
		u->device.mem_free = 0;
		u->device.replica_pages = 0;
		return 0;
	case GPS_IOC_ALLOC:
		if (u->alloc.pad ||
		    !gps_zeroed(u->alloc.reserved, sizeof(u->alloc.reserved)))
			return -EINVAL;
		u->alloc.handle = 0;
		u->alloc.offset = 0;
		u->alloc.view_stride = 0;
		u->alloc.alloc_size = 0;
		u->alloc.out_page_size = 0;
		return 0;
	case GPS_IOC_FREE:
		return gps_zeroed(u->free.reserved, sizeof(u->free.reserved)) ?
		       0 : -EINVAL;
	case GPS_IOC_ADVISE:
		if (!gps_zeroed(u->advise.reserved, sizeof(u->advise.reserved)))
			return -EINVAL;
		u->advise.pages_changed = 0;
		u->advise.pages_failed = 0;
		return 0;
	case GPS_IOC_FENCE:
		if (!gps_zeroed(u->fence.reserved, sizeof(u->fence.reserved)))
			return -EINVAL;
		u->fence.pages_harvested = 0;
		u->fence.blocks_pushed = 0;
		u->fence.bytes_pushed = 0;
		return 0;
	case GPS_IOC_MEMSET:
		return u->memset.pad || !gps_zeroed(u->memset.reserved,
						    sizeof(u->memset.reserved)) ?
		       -EINVAL : 0;
	case GPS_IOC_WRITE:
	case GPS_IOC_READ:
		return u->copy.pad || !gps_zeroed(u->copy.reserved,
						  sizeof(u->copy.reserved)) ?
		       -EINVAL : 0;
	case GPS_IOC_QUERY:
		if (u->query.pad ||
		    !gps_zeroed(u->query.reserved, sizeof(u->query.reserved)))
			return -EINVAL;
		u->query.kind = 0;
		u->query.flags = 0;
		u->query.page_size = 0;
		u->query.home = 0;
		u->query.total_pages = 0;
		u->query.write_faults = 0;
		u->query.pushes = 0;
		return 0;
	case GPS_IOC_TRACK:
		if (!gps_zeroed(u->track.reserved, sizeof(u->track.reserved)))
			return -EINVAL;
		u->track.allocs = 0;
		u->track.pages = 0;
		u->track.subscribed = 0;
		u->track.unsubscribed = 0;
		u->track.demoted = 0;
		u->track.failed = 0;
		return 0;
	}
	return -ENOTTY;
}

static long gps_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gps_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	union gps_ioctl_args u;
	unsigned int size = _IOC_SIZE(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != GPS_IOC_MAGIC || size > sizeof(u))
		return -ENOTTY;
	memset(&u, 0, sizeof(u));
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&u, uarg, size))
		return -EFAULT;
	ret = gps_check_args(cmd, &u);
	if (ret)
		return ret;

	switch (cmd) {
	case GPS_IOC_VERSION:
		ret = gps_version(&u.version);
		break;
	case GPS_IOC_DEVICE_INFO:
		ret = gps_device_info(&u.device);
		break;
	case GPS_IOC_ALLOC:
		ret = gps_alloc_create(ctx, &u.alloc);
		break;
	case GPS_IOC_FREE:
		ret = gps_alloc_free(ctx, u.free.handle);
		break;
	case GPS_IOC_ADVISE:
		ret = gps_advise(ctx, &u.advise);
		break;
	case GPS_IOC_FENCE:
		ret = gps_do_fence(&u.fence);
		break;
	case GPS_IOC_MEMSET:
		ret = gps_memset(ctx, &u.memset);
		break;
	case GPS_IOC_WRITE:
		ret = gps_write(ctx, &u.copy);
		break;
	case GPS_IOC_READ:
		ret = gps_read(ctx, &u.copy);
		break;
	case GPS_IOC_QUERY:
		ret = gps_query(ctx, &u.query);
		break;
	case GPS_IOC_TRACK:
		ret = gps_track(ctx, &u.track);
		break;
	default:
		return -ENOTTY;
	}
	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uarg, &u, size))
		ret = -EFAULT;
	return ret;
}

/* An asynchronous fence: done by a worker, completed through io_uring. */
struct gps_async_fence {
	struct work_struct work;
	struct io_uring_cmd *cmd;
	u64 mask;
};

struct gps_uring_pdu {
	int ret;
};

static void gps_uring_complete(struct io_uring_cmd *cmd, unsigned int flags)
{
	struct gps_uring_pdu *pdu = (struct gps_uring_pdu *)cmd->pdu;

	io_uring_cmd_done(cmd, pdu->ret, 0, flags);
}

static void gps_async_fence_work(struct work_struct *work)
{
	struct gps_async_fence *af = container_of(work, struct gps_async_fence,
						  work);
	struct gps_uring_pdu *pdu = (struct gps_uring_pdu *)af->cmd->pdu;
	struct gps_fence_stats st = {};

	pdu->ret = gps_fence_devices(af->mask, &st);
	io_uring_cmd_complete_in_task(af->cmd, gps_uring_complete);
	kfree(af);
}

static int gps_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct gps_uring_fence in;
	struct gps_async_fence *af;
	u64 mask;

	BUILD_BUG_ON(sizeof(struct gps_uring_pdu) > sizeof(cmd->pdu));
	if (cmd->cmd_op != GPS_URING_CMD_FENCE)
		return -ENOTTY;
#ifdef GPS_HAVE_IO_URING_CMD_H
	memcpy(&in, io_uring_sqe_cmd(cmd->sqe), sizeof(in));
#else
	memcpy(&in, cmd->cmd, sizeof(in));
#endif
	mask = gps_fence_target(in.device, in.flags, in.device_mask);
	if (!mask)
		return -EINVAL;
	af = kmalloc(sizeof(*af), GFP_KERNEL);
	if (!af)
		return -ENOMEM;
	INIT_WORK(&af->work, gps_async_fence_work);
	af->cmd = cmd;
	af->mask = mask;
	queue_work(gps_wq, &af->work);
	return -EIOCBQUEUED;
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

static struct miscdevice gps_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gps",
	.fops = &gps_fops,
	.mode = 0666,
};

static void gps_devs_free(void)
{
	int d;

	for (d = 0; d < gps_nr_devs; d++) {
		gps_thread_stop(&gps_devs[d]);
		gps_queue_destroy(&gps_devs[d].queue);
		kfree(gps_devs[d].scratch);
	}
	kfree(gps_devs);
}

static int gps_devs_init(void)
{
	int nid, d = 0, ret;

	/* Device masks are unsigned longs (set_bit): one bit per device. */
	BUILD_BUG_ON(BITS_PER_LONG < GPS_MAX_DEVICES);
	gps_nr_devs = min_t(unsigned int, num_online_nodes(), GPS_MAX_DEVICES);
	gps_devs = kcalloc(gps_nr_devs, sizeof(*gps_devs), GFP_KERNEL);
	if (!gps_devs)
		return -ENOMEM;
	for_each_online_node(nid) {
		struct gps_dev *dev = &gps_devs[d];

		if (d == gps_nr_devs)
			break;
		dev->id = d;
		dev->nid = nid;
		init_waitqueue_head(&dev->wait);
		mutex_init(&dev->harvest_lock);
		lockdep_set_class(&dev->harvest_lock, &gps_harvest_keys[d]);
		spin_lock_init(&dev->dirty_lock);
		INIT_LIST_HEAD(&dev->dirty);
		d++;
		ret = gps_queue_init(&dev->queue, nid, gps_knobs.queue_capacity,
				     gps_knobs.queue_watermark,
				     gps_knobs.block_size);
		if (ret)
			goto err_free;
		dev->scratch = kmalloc_node(sizeof(unsigned long) *
					    BITS_TO_LONGS(PAGE_SIZE) +
					    PAGE_SIZE, GFP_KERNEL, nid);
		if (!dev->scratch) {
			ret = -ENOMEM;
			goto err_free;
		}
		ret = gps_thread_start(dev);
		if (ret)
			goto err_free;
	}
	return 0;

err_free:
	gps_nr_devs = d;
	gps_devs_free();
	return ret;
}

static int __init gps_init(void)
{
	int ret;

	gps_wq = alloc_workqueue("gps_fence", WQ_UNBOUND, 0);
	if (!gps_wq)
		return -ENOMEM;
	ret = gps_devs_init();
	if (ret)
		goto err_destroy_wq;
	ret = gps_sysfs_init();
	if (ret)
		goto err_free_devs;
	gps_debugfs_init();
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
err_destroy_wq:
	destroy_workqueue(gps_wq);
	return ret;
}

static void __exit gps_exit(void)
{
	misc_deregister(&gps_misc);
	gps_debugfs_exit();
	gps_sysfs_exit();
	destroy_workqueue(gps_wq);
	gps_devs_free();
}

module_init(gps_init);
module_exit(gps_exit);
MODULE_DESCRIPTION("GPS: GPU Publish-Subscribe address space on NUMA nodes");
MODULE_LICENSE("GPL");
