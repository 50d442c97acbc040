// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: asynchronous fences through io_uring
 *
 * GPS_URING_CMD_FENCE runs a fence (gps_fence_request()) on a worker of
 * one unbound workqueue and completes the command in the submitter's
 * task, so that a stream's release overlaps its host thread.  Each open
 * file has at most GPS_URING_FENCES_MAX of them in flight.
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#ifdef GPS_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#include "gps_internal.h"
#include "gps_inject.h"
#include "gps_uring.h"

static struct workqueue_struct *gps_wq;

/* An asynchronous fence: done by a worker, completed through io_uring. */
struct gps_async_fence {
	struct work_struct work;
	struct io_uring_cmd *cmd;
	struct gps_ctx *ctx;		/* the request holds the file */
	u32 flags;
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

	pdu->ret = gps_fence_request(af->ctx, af->flags, af->mask, &st);
	/* Before the completion: the file, and so the ctx, may go with it. */
	atomic_dec(&af->ctx->async_fences);
	io_uring_cmd_complete_in_task(af->cmd, gps_uring_complete);
	kfree(af);
}

/*
 * GPS_URING_CMD_FENCE: queue the fence on gps_wq, at most
 * GPS_URING_FENCES_MAX per open file at once.  Without the cap one user
 * could queue fences without end, each an unkillable work item of the
 * workqueue every user's asynchronous fences share, each allocated
 * before anything is done.
 */
int gps_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct gps_ctx *ctx = cmd->file->private_data;
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
	if (gps_fence_target(in.device, in.flags, in.device_mask, &mask))
		return -EINVAL;
	if (gps_should_fail(GPS_FAIL_ASYNC_FENCE))
		return -ENOMEM;
	if (!atomic_add_unless(&ctx->async_fences, 1, GPS_URING_FENCES_MAX))
		return -EBUSY;
	af = kmalloc(sizeof(*af), GFP_KERNEL_ACCOUNT);
	if (!af) {
		atomic_dec(&ctx->async_fences);
		return -ENOMEM;
	}
	INIT_WORK(&af->work, gps_async_fence_work);
	af->cmd = cmd;
	af->ctx = ctx;
	af->flags = in.flags;
	af->mask = mask;
	queue_work(gps_wq, &af->work);
	return -EIOCBQUEUED;
}

int __init gps_uring_init(void)
{
	gps_wq = alloc_workqueue("gps_fence", WQ_UNBOUND, 0);
	return gps_wq ? 0 : -ENOMEM;
}

/*
 * With no file left open (each holds the module): destroy_workqueue()
 * waits for the tail of a fence whose completion let its file go.
 */
void gps_uring_exit(void)
{
	destroy_workqueue(gps_wq);
}
