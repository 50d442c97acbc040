/* SPDX-License-Identifier: GPL-2.0 */
/*
 * t_ring.h - an io_uring by system calls, for kselftests that issue
 * GPS_URING_CMD_FENCE without linking liburing (faultinject, hostview).
 * Include after gps_test.h.
 */
#ifndef T_RING_H
#define T_RING_H

#include <sys/syscall.h>
#include <linux/io_uring.h>

/* A minimal io_uring: one fence at a time. */
struct ring {
	int fd;
	void *sq, *cq;
	size_t sq_len, cq_len, sqes_len;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void ring_exit(struct ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq && r->cq != MAP_FAILED && r->cq != r->sq)
		munmap(r->cq, r->cq_len);
	if (r->sq && r->sq != MAP_FAILED)
		munmap(r->sq, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* 0, or -errno (the ring torn down). */
static int ring_init(struct ring *r)
{
	struct io_uring_params p = {};
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_len > r->sq_len)
			r->sq_len = r->cq_len;
		r->cq_len = r->sq_len;
	}
	r->sq = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq == MAP_FAILED)
		goto err;
	r->cq = p.features & IORING_FEAT_SINGLE_MMAP ? r->sq :
		mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	if (r->cq == MAP_FAILED)
		goto err;
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto err;
	r->sq_tail = (unsigned int *)((char *)r->sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq + p.cq_off.cqes);
	return 0;
err:
	err = -errno;
	ring_exit(r);
	return err;
}

/* An io_uring fence: the CQE's res, or a -errno of ours. */
static int ring_fence(struct ring *r, int gfd, uint32_t device,
		      uint32_t flags, uint64_t mask)
{
	struct gps_uring_fence pl = {
		.device = device, .flags = flags, .device_mask = mask,
	};
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = gfd;
	sqe->cmd_op = GPS_URING_CMD_FENCE;
	memcpy(sqe->cmd, &pl, sizeof(pl));
	sqe->user_data = 0x6750;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 1,
		    IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -errno;
	head = __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE);
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return -EIO;
	res = r->cqes[head & *r->cq_mask].user_data == 0x6750 ?
	      r->cqes[head & *r->cq_mask].res : -EIO;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

#endif /* T_RING_H */
