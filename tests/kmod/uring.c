// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the asynchronous fence.  An IORING_OP_URING_CMD on
 * /dev/gps with cmd_op GPS_URING_CMD_FENCE and a struct gps_uring_fence
 * in the SQE's command area (filled by hand: liburing 2.3 has no prep
 * helper for it) completes with res 0 once every store made before it
 * is in every replica (of one device, all, or a GPS_FENCE_MASK of them);
 * a bad device, unknown flags or a bad mask complete with -EINVAL, an
 * unknown cmd_op with -ENOTTY; past GPS_URING_FENCES_MAX fences of one
 * file in flight, one more completes at once with -EBUSY.
 */
#include <liburing.h>
#include <stddef.h>

#include "kselftest_harness.h"
#include "gps_test.h"

/* The 16-byte payload sits where addr3 is, without IORING_SETUP_SQE128. */
_Static_assert(sizeof(struct gps_uring_fence) == 16, "payload size");
_Static_assert(offsetof(struct io_uring_sqe, addr3) ==
	       offsetof(struct io_uring_sqe, cmd), "cmd area");

FIXTURE(uring) {
	struct gps_fixture;
	struct io_uring ring;
};

FIXTURE_SETUP(uring)
{
	int ret;

	if (gps_fixture_setup(_metadata, gps_fx(self), 1, gps_knobs_common))
		return;
	ret = io_uring_queue_init(16, &self->ring, 0);
	if (ret) {
		close(self->fd);
		self->fd = -1;
		SKIP(return, "io_uring_queue_init: %s", strerror(-ret));
	}
	/* No proactive pushes: only fences publish. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	gps_fixture_alloc(_metadata, gps_fx(self), 4 * GPS_PAGE_64K,
			  GPS_PAGE_64K, self->nr);
}

FIXTURE_TEARDOWN(uring)
{
	if (self->fd < 0)
		return;
	io_uring_queue_exit(&self->ring);
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* Queue one fence command (not submitted); 0 or -EBUSY if the SQ is full. */
static int prep_fence(struct io_uring *ring, int fd, uint32_t cmd_op,
		      uint32_t device, uint32_t flags, uint64_t device_mask,
		      uint64_t user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct gps_uring_fence pl = {
		.device = device, .flags = flags, .device_mask = device_mask,
	};

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, &pl, sizeof(pl));
	sqe->user_data = user_data;
	return 0;
}

/* Submit one fence command and wait: the CQE's res (or a -errno). */
static int uring_fence(struct io_uring *ring, int fd, uint32_t cmd_op,
		       uint32_t device, uint32_t flags, uint64_t device_mask)
{
	struct io_uring_cqe *cqe;
	int ret;

	ret = prep_fence(ring, fd, cmd_op, device, flags, device_mask,
			 0x6750);
	if (ret)
		return ret;
	ret = io_uring_submit(ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->user_data == 0x6750 ? cqe->res : -EIO;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/* A store is in every replica once the fence's CQE has arrived. */
TEST_F(uring, fence_publishes_at_completion)
{
	volatile uint32_t *p = self->b.view[0];
	struct gps_fence_args f;
	long long fences;
	uint32_t v;
	int d, node0 = gps_node_of(self->fd, 0);

	p[7] = 0xfeedf00d;
	if (self->nr > 1) {	/* push thread off: nothing moved yet */
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 28, &v, 4));
		ASSERT_EQ(0, v);
	}
	fences = gps_stat(node0, "fences");
	ASSERT_EQ(0, uring_fence(&self->ring, self->fd, GPS_URING_CMD_FENCE,
				 0, 0, 0));
	ASSERT_EQ(fences + 1, gps_stat(node0, "fences"));
	for (d = 0; d < self->nr; d++) {
		v = 0;
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 28, &v, 4));
		ASSERT_EQ(0xfeedf00d, v);
	}
	/* Nothing left for a synchronous fence to do. */
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(0, f.blocks_pushed);
}

/* GPS_FENCE_ALL: every device's stores, in every replica. */
TEST_F(uring, fence_all_publishes_every_device)
{
	uint32_t v;
	int d, w;

	for (w = 0; w < self->nr; w++)
		((volatile uint32_t *)self->b.view[w])[100 + w] = 0x1000 + w;
	ASSERT_EQ(0, uring_fence(&self->ring, self->fd, GPS_URING_CMD_FENCE,
				 GPS_FENCE_ALL, 0, 0));
	for (d = 0; d < self->nr; d++)
		for (w = 0; w < self->nr; w++) {
			v = 0;
			ASSERT_EQ(0, gps_read(self->fd, &self->b, d,
					      4 * (100 + w), &v, 4));
			ASSERT_EQ(0x1000 + w, v);
		}
}

/* Several fences in flight at once: each completes with 0. */
TEST_F(uring, many_fences_in_flight)
{
	struct io_uring_cqe *cqe;
	uint64_t seen = 0;
	int i;

	for (i = 0; i < 8; i++) {
		((volatile uint8_t *)self->b.view[i % self->nr])[4096 * i] = i + 1;
		ASSERT_EQ(0, prep_fence(&self->ring, self->fd,
					GPS_URING_CMD_FENCE,
					i % 2 ? GPS_FENCE_ALL : i % self->nr,
					0, 0, i));
	}
	ASSERT_EQ(8, io_uring_submit(&self->ring));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
		ASSERT_EQ(0, cqe->res);
		ASSERT_GT(8, cqe->user_data);
		seen |= 1ULL << cqe->user_data;
		io_uring_cqe_seen(&self->ring, cqe);
	}
	ASSERT_EQ(0xff, seen);
	for (i = 0; i < 8; i++) {
		uint8_t want = i + 1;

		ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b,
						  self->nr, 4096 * i,
						  &want, 1));
	}
}

/* A device that does not exist: the CQE says -EINVAL. */
TEST_F(uring, bad_device)
{
	ASSERT_EQ(-EINVAL, uring_fence(&self->ring, self->fd,
				       GPS_URING_CMD_FENCE, self->nr, 0, 0));
	ASSERT_EQ(-EINVAL, uring_fence(&self->ring, self->fd,
				       GPS_URING_CMD_FENCE, GPS_FENCE_ALL - 1,
				       0, 0));
}

/* A cmd_op the driver does not know: -ENOTTY. */
TEST_F(uring, unknown_cmd_op)
{
	ASSERT_EQ(-ENOTTY, uring_fence(&self->ring, self->fd,
				       GPS_URING_CMD_FENCE + 1, 0, 0, 0));
	ASSERT_EQ(-ENOTTY, uring_fence(&self->ring, self->fd, 0, 0, 0, 0));
}

/* Unknown flags, a mask without GPS_FENCE_MASK, bad masks: -EINVAL. */
TEST_F(uring, bad_flags_and_masks)
{
	uint64_t all = gps_all_mask(self->nr);
	struct io_uring *r = &self->ring;
	int fd = self->fd;

	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE, 0,
				       1U << 1, 0));
	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE,
				       GPS_FENCE_ALL, 1U << 31, 0));
	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE, 0, 0, 1));
	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE, 0,
				       GPS_FENCE_MASK, 0));
	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE, 0,
				       GPS_FENCE_MASK, all + 1));
	ASSERT_EQ(-EINVAL, uring_fence(r, fd, GPS_URING_CMD_FENCE, 1,
				       GPS_FENCE_MASK, 1));
	/* The ring still works. */
	ASSERT_EQ(0, uring_fence(r, fd, GPS_URING_CMD_FENCE, 0, 0, 0));
}

/* GPS_FENCE_MASK of the first and last device: both publish. */
TEST_F(uring, fence_mask_publishes_named_devices)
{
	int last = self->nr - 1, d;
	uint64_t mask = 1ULL | 1ULL << last;
	uint32_t v;

	((volatile uint32_t *)self->b.view[0])[200] = 0xaaaa;
	((volatile uint32_t *)self->b.view[last])[201] = 0xbbbb;
	ASSERT_EQ(0, uring_fence(&self->ring, self->fd, GPS_URING_CMD_FENCE,
				 0, GPS_FENCE_MASK, mask));
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 800, &v, 4));
		ASSERT_EQ(0xaaaa, v);
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 804, &v, 4));
		ASSERT_EQ(0xbbbb, v);
	}
}

/*
 * At most GPS_URING_FENCES_MAX fences of one open file in flight.  With
 * device 0's link held busy (2 KiB pushed to each other device at 1 KiB/s
 * per receiver: about 2 s) no fence completes while 64 + 16 are
 * submitted at once: the last 16 complete at once with -EBUSY, before
 * any other, the first 64 with 0 once the link is free, the store is in
 * every replica, and the file has 64 in flight again afterwards.
 */
TEST_F(uring, fences_in_flight_capped)
{
	const int cap = GPS_URING_FENCES_MAX, extra = 16;
	volatile uint8_t *p = self->b.view[0];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int i, busy = 0, done = 0, round;
	uint8_t want = 0x5a;

	if (self->nr < 2)
		SKIP(return, "needs two devices: a push to keep the link busy");
	ASSERT_EQ(0, io_uring_queue_init(2 * (cap + extra), &ring, 0));
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 1024LL * (self->nr - 1)));
	/* 16 whole blocks of one small page: pushed whole, 2 KiB each. */
	for (i = 0; i < 2048; i++)
		p[i] = want;
	for (round = 0; round < 2; round++) {
		int n = round ? cap : cap + extra;

		for (i = 0; i < n; i++)
			ASSERT_EQ(0, prep_fence(&ring, self->fd,
						GPS_URING_CMD_FENCE, 0, 0, 0,
						i));
		ASSERT_EQ(n, io_uring_submit(&ring));
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
			if (cqe->res == -EBUSY) {
				/* Refused at submission: before any fence. */
				ASSERT_EQ(busy, done);
				ASSERT_LE(cap, cqe->user_data);
				busy++;
			} else {
				ASSERT_EQ(0, cqe->res);
				ASSERT_GT(cap, cqe->user_data);
			}
			done++;
			io_uring_cqe_seen(&ring, cqe);
		}
		ASSERT_EQ(round ? 0 : extra, busy);
		busy = 0;
		done = 0;
	}
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 2047,
					  &want, 1));
	io_uring_queue_exit(&ring);
}

TEST_HARNESS_MAIN
