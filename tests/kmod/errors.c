// SPDX-License-Identifier: GPL-2.0
/*
 * Description: bad input to /dev/gps.  Every command rejects non-zero
 * reserved and pad fields, bad sizes, kinds, flags, devices, page sizes,
 * handles and ranges with -EINVAL (a size beyond memory with -ENOMEM, a
 * bad user pointer with -EFAULT, an unknown command with -ENOTTY), mmap
 * only maps a shared range inside one view of one of this open's own
 * allocations, and a view used after GPS_IOC_FREE gets SIGBUS.  The
 * runner fails any of them that leaves a kernel warning behind.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define PS	GPS_PAGE_4K

FIXTURE(errors) {
	struct gps_fixture;
};

FIXTURE_SETUP(errors)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, gps_knobs_common))
		return;
	gps_fixture_alloc(_metadata, gps_fx(self), 4 * PS, PS, 0);
}

FIXTURE_TEARDOWN(errors)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* ioctl(@fd, @cmd, @arg) fails with errno @err. */
#define ASSERT_IOC_ERR(err, fd, cmd, arg)			\
	do {							\
		errno = 0;					\
		ASSERT_EQ(-1, ioctl(fd, cmd, arg));		\
		ASSERT_EQ(err, errno);				\
	} while (0)

/* Non-zero reserved or pad fields: -EINVAL from every command. */
TEST_F(errors, reserved_fields_nonzero)
{
	uint64_t h = self->b.args.handle, subs[4];
	struct gps_device_args dev;
	struct gps_alloc_args al;
	struct gps_free_args fr;
	struct gps_advise_args ad;
	struct gps_fence_args fe;
	struct gps_memset_args ms;
	struct gps_copy_args cp;
	struct gps_query_args q;
	char buf[8] = {};
	long long allocs = gps_knob("nr_allocs");
	int i;

	dev = (struct gps_device_args){ .pad = 1 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_DEVICE_INFO, &dev);
	for (i = 0; i < 4; i++) {
		dev = (struct gps_device_args){};
		dev.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_DEVICE_INFO, &dev);
	}

#define ALLOC_ARGS (struct gps_alloc_args){ .size = PS, .kind = GPS_MEM_GPS }
	al = ALLOC_ARGS;
	al.pad = 1;
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_ALLOC, &al);
	for (i = 0; i < 4; i++) {
		al = ALLOC_ARGS;
		al.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_ALLOC, &al);
	}
#undef ALLOC_ARGS
	ASSERT_EQ(allocs, gps_knob("nr_allocs"));

	for (i = 0; i < 2; i++) {
		fr = (struct gps_free_args){ .handle = h };
		fr.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FREE, &fr);

		ad = (struct gps_advise_args){
			.handle = h, .length = PS,
			.advice = GPS_ADVISE_SUBSCRIBE,
		};
		ad.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_ADVISE, &ad);

		ms = (struct gps_memset_args){ .handle = h, .length = 8 };
		ms.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_MEMSET, &ms);

		cp = (struct gps_copy_args){
			.handle = h, .length = 8, .uaddr = (uintptr_t)buf,
		};
		cp.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_WRITE, &cp);
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_READ, &cp);

		q = (struct gps_query_args){
			.handle = h, .nr_pages = 4, .subs = (uintptr_t)subs,
		};
		q.reserved[i] = 1;
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_QUERY, &q);
	}
	fe = (struct gps_fence_args){ .device = 0, .reserved = { 1 } };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &fe);
	ms = (struct gps_memset_args){ .handle = h, .length = 8, .pad = 1 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_MEMSET, &ms);
	cp = (struct gps_copy_args){
		.handle = h, .length = 8, .uaddr = (uintptr_t)buf, .pad = 1,
	};
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_WRITE, &cp);
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_READ, &cp);
	q = (struct gps_query_args){ .handle = h, .pad = 1 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_QUERY, &q);

	/* None of it freed or changed the allocation. */
	ASSERT_EQ(gps_all_mask(self->nr), gps_subs(self->fd, &self->b, 0));
}

/* Out-fields coming in with garbage are ignored and overwritten. */
TEST_F(errors, alloc_out_fields_ignored)
{
	struct gps_alloc_args al = {
		.size = PS, .kind = GPS_MEM_GPS, .page_size = PS,
		.handle = ~0ULL, .offset = 12345, .view_stride = 1,
		.alloc_size = 7, .out_page_size = 3,
	};
	struct gps_free_args f;

	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_ALLOC, &al));
	ASSERT_NE(~0ULL, al.handle);
	ASSERT_EQ(PS, al.alloc_size);
	ASSERT_EQ(PS, al.view_stride);
	ASSERT_EQ(0, al.offset % PS);
	f = (struct gps_free_args){ .handle = al.handle };
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_FREE, &f));
}

/* Bad sizes, kinds, flags, home or page size: -EINVAL; too big: -ENOMEM. */
TEST_F(errors, alloc_bad_args)
{
	long long allocs = gps_knob("nr_allocs");
	long long pages = gps_knob("replica_pages");
	struct gps_buf x;

	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, 0, GPS_MEM_GPS, 0, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, 0, 0, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_MANAGED + 1,
				     0, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_MANAGED,
				     GPS_ALLOC_MANUAL, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS, 2, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS,
				     1U << 31, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_CONVENTIONAL,
				     GPS_ALLOC_MANUAL, 0, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS, 0,
				     self->nr, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_CONVENTIONAL, 0,
				     GPS_MAX_DEVICES, 0));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS, 0, 0,
				     12345));
	ASSERT_EQ(-EINVAL, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS, 0, 0,
				     8192));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &x, 1ULL << 50, GPS_MEM_GPS, 0,
				     0, 0));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &x, ~0ULL, GPS_MEM_GPS, 0, 0,
				     0));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &x, 1ULL << 50,
				     GPS_MEM_CONVENTIONAL, 0, 0, 0));
	/* Nothing half-made. */
	ASSERT_EQ(allocs, gps_knob("nr_allocs"));
	ASSERT_EQ(pages, gps_knob("replica_pages"));
}

/*
 * Beyond the max_bytes cap: -ENOMEM and nothing half-made; a GPS page
 * keeps the subscribers that fit, the home device first, and counts the
 * others in subscribe_failed.  The cap is lifted before asserting (a
 * failed ASSERT may skip the teardown).
 */
TEST_F(errors, alloc_beyond_cap)
{
	struct gps_usage start = gps_usage(), after_enomem, with_x;
	long long failed, failed_after;
	int ret_conv, ret_gps;
	uint64_t subs;
	struct gps_buf x;

	/* Room for exactly one more 64 KiB replica. */
	ASSERT_EQ(0, gps_set_knob("max_bytes", (start.replica_pages + 16) *
				  4096));
	ret_conv = gps_alloc(self->fd, &x, 2 * GPS_PAGE_64K,
			     GPS_MEM_CONVENTIONAL, 0, 0, GPS_PAGE_64K);
	after_enomem = gps_usage();
	failed = gps_stat_sum(self->fd, "subscribe_failed");
	ret_gps = gps_alloc(self->fd, &x, GPS_PAGE_64K, GPS_MEM_GPS, 0,
			    self->nr - 1, GPS_PAGE_64K);
	with_x = gps_usage();
	failed_after = gps_stat_sum(self->fd, "subscribe_failed");
	subs = gps_subs(self->fd, &x, 0);
	gps_set_knob("max_bytes", gps_knob_saved(&self->knobs, "max_bytes"));

	ASSERT_EQ(-ENOMEM, ret_conv);
	ASSERT_TRUE(gps_usage_eq(start, after_enomem));
	ASSERT_EQ(0, ret_gps);
	ASSERT_EQ(1ULL << (self->nr - 1), subs);
	ASSERT_EQ(failed + self->nr - 1, failed_after);
	ASSERT_EQ(start.replica_pages + 16, with_x.replica_pages);
	ASSERT_EQ(0, gps_free(self->fd, &x));
	ASSERT_TRUE(gps_usage_eq(start, gps_usage()));
}

/* Freeing an unknown handle, or twice: -EINVAL. */
TEST_F(errors, free_unknown_and_double)
{
	struct gps_free_args f = { .handle = self->b.args.handle + 1000 };
	struct gps_buf x;

	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FREE, &f);
	f.handle = 0;
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FREE, &f);
	ASSERT_EQ(0, gps_alloc(self->fd, &x, PS, GPS_MEM_GPS, 0, 0, 0));
	f.handle = x.args.handle;
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_FREE, &f));
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FREE, &f);
	/* Its views are gone: mmap of them is refused. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, PS, PROT_READ, MAP_SHARED, self->fd,
				   x.args.offset));
	ASSERT_EQ(EINVAL, errno);
	/* The fixture's allocation is still there. */
	ASSERT_EQ(gps_all_mask(self->nr), gps_subs(self->fd, &self->b, 0));
}

/* Fence of a device that does not exist, bad flags or mask: -EINVAL. */
TEST_F(errors, fence_bad_args)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_device_args dev = { .device = self->nr };
	struct gps_fence_args f = { .device = self->nr };

	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	f.device = GPS_FENCE_ALL - 1;
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	/* Unknown flags. */
	f = (struct gps_fence_args){ .device = 0, .flags = 1U << 1 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	f = (struct gps_fence_args){ .device = GPS_FENCE_ALL, .flags = 1U << 31 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	/* A mask without GPS_FENCE_MASK; an empty or too wide mask. */
	f = (struct gps_fence_args){ .device = 0, .device_mask = 1 };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	f = (struct gps_fence_args){ .flags = GPS_FENCE_MASK };
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	f.device_mask = all + 1;	/* the first device that is not */
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	f.device_mask = ~0ULL;
	if (self->nr < 64)
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);
	/* With GPS_FENCE_MASK, @device must be zero. */
	f = (struct gps_fence_args){
		.device = GPS_FENCE_ALL, .flags = GPS_FENCE_MASK,
		.device_mask = 1,
	};
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_FENCE, &f);

	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, self->nr - 1, NULL));
	f = (struct gps_fence_args){ .flags = GPS_FENCE_MASK,
				     .device_mask = all };
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_DEVICE_INFO, &dev);
}

/* A private mapping would never be published: -EINVAL. */
TEST_F(errors, mmap_private)
{
	void *p = mmap(NULL, 4 * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		       self->fd, self->b.args.offset);

	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
	p = mmap(NULL, 4 * PS, PROT_READ, MAP_PRIVATE, self->fd,
		 self->b.args.offset);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
}

/* mmap outside one view of one of this open's allocations: -EINVAL. */
TEST_F(errors, mmap_outside_own_views)
{
	uint64_t off = self->b.args.offset, stride = self->b.args.view_stride;
	int other = open(GPS_DEV, O_RDWR);
	struct gps_buf x;
	void *p;

#define ASSERT_MMAP_EINVAL(_fd, _len, _off)				\
	do {								\
		p = mmap(NULL, _len, PROT_READ | PROT_WRITE,		\
			 MAP_SHARED, _fd, _off);			\
		ASSERT_EQ(MAP_FAILED, p);				\
		ASSERT_EQ(EINVAL, errno);				\
	} while (0)
	ASSERT_LE(0, other);
	ASSERT_EQ(0, gps_alloc(other, &x, 4 * PS, GPS_MEM_GPS, 0, 0, PS));
	/* Another open's allocation, through this open, and vice versa. */
	ASSERT_MMAP_EINVAL(self->fd, PS, x.args.offset);
	ASSERT_MMAP_EINVAL(other, PS, off);
	/* Across the end of a view (into the next one, the last device's
	 * into the host view, or past the host view, the last). */
	ASSERT_MMAP_EINVAL(self->fd, 2 * PS, off + stride - PS);
	ASSERT_MMAP_EINVAL(self->fd, stride + PS, off);
	ASSERT_MMAP_EINVAL(self->fd, 2 * PS,
			   off + self->nr * stride - PS);
	ASSERT_MMAP_EINVAL(self->fd, 2 * PS,
			   off + (self->nr + 1) * stride - PS);
	/* Past the end of the allocation, and before anything. */
	ASSERT_MMAP_EINVAL(self->fd, PS, off + (self->nr + 1) * stride);
	ASSERT_MMAP_EINVAL(self->fd, PS, 0);
#undef ASSERT_MMAP_EINVAL
	/* One page inside the last device's view, and the host view, is
	 * fine. */
	p = mmap(NULL, PS, PROT_READ, MAP_SHARED, self->fd,
		 off + (self->nr - 1) * stride + 3 * PS);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p, PS));
	p = mmap(NULL, PS, PROT_READ, MAP_SHARED, self->fd,
		 off + self->nr * stride + 3 * PS);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p, PS));
	ASSERT_EQ(0, gps_free(other, &x));
	ASSERT_EQ(0, close(other));
}

/* Unknown commands, in our magic or another: -ENOTTY. */
TEST_F(errors, unknown_ioctl)
{
	struct gps_alloc_args al = {};
	uint64_t word = 0;

	ASSERT_IOC_ERR(ENOTTY, self->fd, _IO(GPS_IOC_MAGIC, 0x7f), NULL);
	ASSERT_IOC_ERR(ENOTTY, self->fd,
		       _IOWR(GPS_IOC_MAGIC, 0x7f, struct gps_alloc_args), &al);
	ASSERT_IOC_ERR(ENOTTY, self->fd, _IOWR(0xBC, 0x02,
					       struct gps_alloc_args), &al);
	/* A known number with the wrong size is another command. */
	ASSERT_IOC_ERR(ENOTTY, self->fd, _IOWR(GPS_IOC_MAGIC, 0x02, uint64_t),
		       &word);
	ASSERT_IOC_ERR(ENOTTY, self->fd, _IOC(_IOC_READ | _IOC_WRITE,
					      GPS_IOC_MAGIC, 0x02, 4000), &al);
}

/* query, read, write, memset outside the allocation or unknown: -EINVAL. */
TEST_F(errors, ops_out_of_range)
{
	uint64_t h = self->b.args.handle, size = self->b.args.alloc_size;
	unsigned char buf[64] = {};
	uint64_t subs[8];
	struct gps_query_args q = {
		.handle = h, .first_page = 5, .nr_pages = 1,
		.subs = (uintptr_t)subs,
	};
	struct gps_copy_args c = {
		.handle = h, .uaddr = (uintptr_t)buf,
	};
	struct gps_buf bad = self->b;
	uint64_t offs[][2] = {
		{ 0, 0 },			/* empty */
		{ size, 1 },			/* starts at the end */
		{ size - 8, 16 },		/* ends past it */
		{ -8ULL, 16 },			/* wraps */
		{ 8, -4ULL },
	};
	int i;

	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_QUERY, &q);
	q.first_page = 0;
	q.handle = h + 1000;
	ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_QUERY, &q);

	for (i = 0; i < 5; i++) {
		c.offset = offs[i][0];
		c.length = offs[i][1];
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_READ, &c);
		ASSERT_IOC_ERR(EINVAL, self->fd, GPS_IOC_WRITE, &c);
		ASSERT_EQ(-EINVAL, gps_memset(self->fd, &self->b, offs[i][0],
					      offs[i][1], 1));
	}
	/* A device that does not exist. */
	ASSERT_EQ(-EINVAL, gps_read(self->fd, &self->b, self->nr, 0, buf, 8));
	/* Unknown handle. */
	bad.args.handle = h + 1000;
	ASSERT_EQ(-EINVAL, gps_read(self->fd, &bad, 0, 0, buf, 8));
	ASSERT_EQ(-EINVAL, gps_write(self->fd, &bad, 0, buf, 8));
	ASSERT_EQ(-EINVAL, gps_memset(self->fd, &bad, 0, 8, 1));
	/* Nothing was written. */
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr,
					  size - 64, buf, 64));
}

/* memset takes a byte: a value above 0xff is -EINVAL. */
TEST_F(errors, memset_value_too_big)
{
	unsigned char v = 0;

	ASSERT_EQ(-EINVAL, gps_memset(self->fd, &self->b, 0, 8, 0x100));
	ASSERT_EQ(-EINVAL, gps_memset(self->fd, &self->b, 0, 8, ~0U));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, 0, &v, 1));
	ASSERT_EQ(0, v);
	ASSERT_EQ(0, gps_memset(self->fd, &self->b, 0, 8, 0xff));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 0, 7, &v, 1));
	ASSERT_EQ(0xff, v);
}

/* A user pointer that points nowhere: -EFAULT. */
TEST_F(errors, bad_user_pointer)
{
	struct gps_query_args q = {
		.handle = self->b.args.handle, .nr_pages = 1, .subs = 8,
	};
	void *hole = mmap(NULL, PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(-EFAULT, gps_write(self->fd, &self->b, 0, (void *)8, 8));
	ASSERT_EQ(-EFAULT, gps_write(self->fd, &self->b, 0, hole, 8));
	ASSERT_EQ(-EFAULT, gps_read(self->fd, &self->b, 0, 0, hole, 8));
	ASSERT_IOC_ERR(EFAULT, self->fd, GPS_IOC_QUERY, &q);
	ASSERT_IOC_ERR(EFAULT, self->fd, GPS_IOC_ALLOC, (void *)8);
	ASSERT_IOC_ERR(EFAULT, self->fd, GPS_IOC_FENCE, hole);
	ASSERT_EQ(0, munmap(hole, PS));
}

/*
 * A view touched after GPS_IOC_FREE: SIGBUS, for loads and stores, in a
 * device's view and in the host view (the one after the devices').
 */
TEST_F(errors, view_after_free_sigbus)
{
	int k, write, view, status;
	pid_t pid;

	/* Views are not inherited (VM_DONTCOPY): the child maps its own. */
	for (k = 0; k < 4; k++) {
		view = k / 2;
		write = k % 2;
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct gps_buf x;
			volatile unsigned char *p;
			struct gps_free_args f;

			if (gps_alloc(self->fd, &x, 4 * PS, GPS_MEM_GPS, 0, 0,
				      PS))
				_exit(10);
			p = mmap(NULL, x.args.alloc_size,
				 PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
				 x.args.offset + (view ? self->nr : 0) *
				 x.args.view_stride);
			if (p == MAP_FAILED)
				_exit(11);
			p[0] = 1;	/* mapped and written before */
			f = (struct gps_free_args){ .handle = x.args.handle };
			if (ioctl(self->fd, GPS_IOC_FREE, &f))
				_exit(12);
			if (write)
				p[PS] = 2;
			else
				(void)p[0];
			_exit(0);
		}
		status = gps_wait_child(pid);
		ASSERT_TRUE(gps_killed_by(status, SIGBUS)) {
			TH_LOG("%s view, write=%d: child status 0x%x",
			       view ? "host" : "device 0's", write, status);
		}
	}
}

TEST_HARNESS_MAIN
