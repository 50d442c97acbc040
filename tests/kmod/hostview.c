// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the host view (ABI version 2).  Every allocation has,
 * after its device views, a host view at offset + nr_devices *
 * view_stride, as long as a device view, that loads and stores as the
 * home device's view does: it maps the replica the home's view maps (the
 * home's own, or the subscriber nearest to the home when the home does
 * not subscribe), so a store through one is seen at once through the
 * other.  A fence with GPS_FENCE_HOST (only together with GPS_FENCE_MASK,
 * whose mask may then be empty) publishes every store made through the
 * host views of the file's allocations before it, by ioctl or io_uring;
 * one that finds no host store since the last does no work, and leaves
 * a device's pending stores to that device's fence.  The host view is
 * never kept writable across a harvest (keep_writable_ms), so each
 * round's host stores are published by that round's host fence, for
 * 4 KiB, 64 KiB and 2 MiB GPS pages.  A fence of the home device, or of
 * all, publishes host stores too.  Two host fences called at once both
 * return only once every host store made before them is published,
 * whichever took the work.  Conventional memory has a host view (and a
 * host view still mapped after GPS_IOC_FREE gets SIGBUS: errors.c).  mmap
 * past the host view, or across views, is -EINVAL.  The push thread is off in
 * every test: only fences publish.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "gps_test.h"
#include "t_ring.h"

#define GP		GPS_PAGE_64K	/* GPS page of most tests */
#define SMALL		4096UL

static const char *const host_knobs[] = {
	GPS_KNOBS_COMMON, "keep_writable_ms", NULL,
};

/* GPS_IOC_FENCE of @device with @flags and @mask: 0 or -errno. */
static int fence_flags(int fd, uint32_t device, uint32_t flags,
		       uint64_t mask, struct gps_fence_args *out)
{
	struct gps_fence_args f = {
		.device = device, .flags = flags, .device_mask = mask,
	};
	int ret = ioctl(fd, GPS_IOC_FENCE, &f) ? -errno : 0;

	if (out)
		*out = f;
	return ret;
}

/* A host fence (GPS_FENCE_HOST | GPS_FENCE_MASK) of @mask: 0 or -errno. */
static int host_fence(int fd, uint64_t mask, struct gps_fence_args *out)
{
	return fence_flags(fd, 0, GPS_FENCE_MASK | GPS_FENCE_HOST, mask, out);
}

/* mmap offset of @b's host view. */
static uint64_t host_off(struct gps_buf *b, int nr)
{
	return b->args.offset + (uint64_t)nr * b->args.view_stride;
}

/*
 * Allocate fx->b (freed by the teardown) and map the view of every
 * device and the host view: fx->b.view[d] for device d, fx->b.view[nr]
 * for the host.
 */
static void hv_alloc(struct __test_metadata *_metadata,
		       struct gps_fixture *fx, uint64_t size, uint32_t ps,
		       uint32_t kind, uint32_t flags, uint32_t home)
{
	int d;

	ASSERT_EQ(0, gps_alloc(fx->fd, &fx->b, size, kind, flags, home, ps));
	fx->have_b = 1;
	for (d = 0; d < fx->nr; d++)
		ASSERT_NE(NULL, gps_map(fx->fd, &fx->b, d))
			TH_LOG("mmap of device %d's view: %s", d,
			       strerror(errno));
	ASSERT_NE(NULL, gps_map(fx->fd, &fx->b, fx->nr))
		TH_LOG("mmap of the host view (offset + %d * view_stride): %s",
		       fx->nr, strerror(errno));
}

/* Open, save the knobs, push thread off: 1 if skipped. */
static int hv_setup(struct __test_metadata *_metadata,
		      struct gps_fixture *fx)
{
	if (gps_fixture_setup(_metadata, fx, 2, host_knobs))
		return 1;
	if (fx->nr >= GPS_MAX_DEVICES) {
		gps_knob_restore_saved(&fx->knobs);
		close(fx->fd);
		fx->fd = -1;
		SKIP(return 1, "the host view needs fewer than %d devices",
		     GPS_MAX_DEVICES);
	}
	/* No proactive pushes: only fences publish. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	return 0;
}

#define U32(p, off)	(*(volatile uint32_t *)((char *)(p) + (off)))
#define U64(p, off)	(*(volatile uint64_t *)((char *)(p) + (off)))

/* 4 bytes of device @d's view at @off, by GPS_IOC_READ (0xdeadbeef: failed). */
static uint32_t read32(int fd, struct gps_buf *b, int d, uint64_t off)
{
	uint32_t v = 0xdeadbeef;

	if (gps_read(fd, b, d, off, &v, sizeof(v)))
		return 0xdeadbeef;
	return v;
}

/* ------------------------------------------------------------------ */

/* Tests whose GPS page size is the variant's. */
FIXTURE(hostview_ps) {
	struct gps_fixture;
	size_t ps;
	int nr_pages;
};

FIXTURE_VARIANT(hostview_ps) {
	unsigned int page_size;
	int nr_pages;
};

FIXTURE_VARIANT_ADD(hostview_ps, page_4k) {
	.page_size = GPS_PAGE_4K, .nr_pages = 8,
};
FIXTURE_VARIANT_ADD(hostview_ps, page_64k) {
	.page_size = GPS_PAGE_64K, .nr_pages = 4,
};
FIXTURE_VARIANT_ADD(hostview_ps, page_2m) {
	.page_size = GPS_PAGE_2M, .nr_pages = 2,
};

FIXTURE_SETUP(hostview_ps)
{
	if (hv_setup(_metadata, gps_fx(self)))
		return;
	self->ps = variant->page_size;
	self->nr_pages = variant->nr_pages;
}

FIXTURE_TEARDOWN(hostview_ps)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * The variant's allocation, in the test (a failed setup would skip the
 * teardown, and its knob restores).
 */
#define PS_ALLOC()							\
	do {								\
		hv_alloc(_metadata, gps_fx(self),			\
			 self->nr_pages * self->ps, self->ps,		\
			 GPS_MEM_GPS, 0, 0);				\
		ASSERT_EQ(self->ps, self->b.args.out_page_size);	\
	} while (0)

/* The offsets stored to in GPS page @pg: its first, a middle, its last. */
#define NR_SPOTS	3
static uint64_t spot(size_t ps, int pg, int i)
{
	return pg * ps + (i == 0 ? 0 : i == 1 ? ps / 2 + 8 : ps - 4);
}

/*
 * The host view loads what the home holds; a host store is in the home's
 * view at once, not in device 1's (nothing is fenced); a host fence with
 * an empty mask publishes it to every replica and says it did work; a
 * store through the home's view is in the host view at once.
 */
TEST_F(hostview_ps, host_store_seen_by_home_then_published)
{
	size_t len = self->nr_pages * self->ps;
	struct gps_fence_args f;
	void *host, *v0, *v1;
	unsigned char *pat;
	uint32_t want;
	uint64_t off;
	int pg, i, d;

	PS_ALLOC();
	host = self->b.view[self->nr];
	v0 = self->b.view[0];
	v1 = self->b.view[1];
	pat = malloc(len);
	ASSERT_NE(NULL, pat);
	memset(pat, 0x5a, len);
	ASSERT_EQ(0, gps_write(self->fd, &self->b, 0, pat, len));
	free(pat);
	/* Loads: what every replica holds. */
	for (pg = 0; pg < self->nr_pages; pg++)
		for (i = 0; i < NR_SPOTS; i++)
			ASSERT_EQ(0x5a5a5a5a, U32(host, spot(self->ps, pg, i)))
				TH_LOG("page %d spot %d", pg, i);

	for (pg = 0; pg < self->nr_pages; pg++)
		for (i = 0; i < NR_SPOTS; i++)
			U32(host, spot(self->ps, pg, i)) = 0x1000 + pg * 16 + i;
	for (pg = 0; pg < self->nr_pages; pg++)
		for (i = 0; i < NR_SPOTS; i++) {
			off = spot(self->ps, pg, i);
			want = 0x1000 + pg * 16 + i;
			ASSERT_EQ(want, U32(host, off));
			ASSERT_EQ(want, U32(v0, off))
				TH_LOG("home's view, page %d spot %d", pg, i);
			ASSERT_EQ(want, read32(self->fd, &self->b, 0, off));
			/* The push thread is off: not published yet. */
			ASSERT_EQ(0x5a5a5a5a, U32(v1, off))
				TH_LOG("device 1 saw a host store unfenced");
		}

	ASSERT_EQ(0, host_fence(self->fd, 0, &f));
	EXPECT_LE(1, f.pages_harvested);
	EXPECT_LE(1, f.blocks_pushed);
	EXPECT_LE(4 * self->nr_pages * NR_SPOTS, f.bytes_pushed);
	for (pg = 0; pg < self->nr_pages; pg++)
		for (i = 0; i < NR_SPOTS; i++) {
			off = spot(self->ps, pg, i);
			want = 0x1000 + pg * 16 + i;
			ASSERT_EQ(want, U32(v1, off))
				TH_LOG("device 1, page %d spot %d", pg, i);
			for (d = 0; d < self->nr; d++)
				ASSERT_EQ(want, read32(self->fd, &self->b, d,
						       off))
					TH_LOG("device %d, page %d spot %d",
					       d, pg, i);
		}

	/* A store through the home's view is in the host view at once. */
	off = spot(self->ps, self->nr_pages - 1, 1) + 64;
	U32(v0, off) = 0xc0ffee;
	ASSERT_EQ(0xc0ffee, U32(host, off));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0xc0ffee, U32(v1, off));
}

/*
 * keep_writable_ms keeps a device's pages writable across harvests; the
 * host view's never: round after round, the host stores the round
 * number into the same spots of every page, fences the host alone, and
 * device 1 must read that round's number (a host page left writable
 * takes no fault, the host fence finds nothing stored and returns at
 * once, and device 1 reads the round before).
 */
TEST_F(hostview_ps, never_kept_writable)
{
	struct gps_fence_args f;
	void *host, *v1;
	uint64_t off;
	uint32_t want;
	int k, pg, i, d;

	PS_ALLOC();
	host = self->b.view[self->nr];
	v1 = self->b.view[1];
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 5000));
	for (k = 1; k <= 10; k++) {
		for (pg = 0; pg < self->nr_pages; pg++)
			for (i = 0; i < NR_SPOTS; i++)
				U32(host, spot(self->ps, pg, i)) =
					k << 16 | pg << 4 | i;
		ASSERT_EQ(0, host_fence(self->fd, 0, &f)) TH_LOG("round %d", k);
		EXPECT_LE(1, f.pages_harvested) TH_LOG("round %d", k);
		EXPECT_LE(1, f.blocks_pushed) TH_LOG("round %d", k);
		for (pg = 0; pg < self->nr_pages; pg++)
			for (i = 0; i < NR_SPOTS; i++) {
				off = spot(self->ps, pg, i);
				want = k << 16 | pg << 4 | i;
				ASSERT_EQ(want, U32(v1, off))
					TH_LOG("round %d page %d spot %d: "
					       "device 1 reads 0x%x", k, pg, i,
					       U32(v1, off));
			}
		for (d = 2; d < self->nr; d++)
			ASSERT_EQ(k << 16, read32(self->fd, &self->b, d, 0))
				TH_LOG("round %d device %d", k, d);
	}
}

/* ------------------------------------------------------------------ */

/* Tests of 64 KiB GPS pages unless said, allocating for themselves. */
FIXTURE(hostview) {
	struct gps_fixture;
};

FIXTURE_SETUP(hostview)
{
	hv_setup(_metadata, gps_fx(self));
}

FIXTURE_TEARDOWN(hostview)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * The host view is one view more: mapped whole or in part; a range past
 * its end, past the last view, or across from the last device view
 * into it, is -EINVAL.
 */
TEST_F(hostview, mmap_bounds)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t hoff, size;
	void *p;

#define ASSERT_MMAP_EINVAL(_len, _off)					\
	do {								\
		p = mmap(NULL, _len, PROT_READ | PROT_WRITE,		\
			 MAP_SHARED, self->fd, _off);			\
		ASSERT_EQ(MAP_FAILED, p)				\
			TH_LOG("mmap of %#llx bytes at %#llx",		\
			       (unsigned long long)(_len),		\
			       (unsigned long long)(_off));		\
		ASSERT_EQ(EINVAL, errno);				\
	} while (0)

	ASSERT_EQ(0, gps_alloc(self->fd, &self->b, 4 * GP, GPS_MEM_GPS, 0, 0,
			       GP));
	self->have_b = 1;
	size = self->b.args.alloc_size;
	hoff = host_off(&self->b, self->nr);
	/* Whole, and one page inside. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 hoff);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap of the host view: %s",
					strerror(errno));
	U32(p, 4) = 7;
	ASSERT_EQ(0, munmap(p, size));
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 hoff + size - pg);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap of the host view's last page: %s",
					strerror(errno));
	ASSERT_EQ(0, munmap(p, pg));
	/* Past its end, and the view after it that is not. */
	ASSERT_MMAP_EINVAL(size + pg, hoff);
	ASSERT_MMAP_EINVAL(2 * pg, hoff + size - pg);
	ASSERT_MMAP_EINVAL(pg, hoff + self->b.args.view_stride);
	/* From the last device's view into the host view. */
	ASSERT_MMAP_EINVAL(2 * pg, hoff - pg);
	ASSERT_MMAP_EINVAL(self->b.args.view_stride + pg,
			   hoff - self->b.args.view_stride);
#undef ASSERT_MMAP_EINVAL
}

/*
 * GPS_FENCE_HOST goes with GPS_FENCE_MASK only; with it the mask may be
 * empty, not wider than the devices, and @device stays zero.  A host
 * fence with device 1 in its mask publishes device 1's stores and the
 * host's.
 */
TEST_F(hostview, fence_flags)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_fence_args f;
	void *host;

	hv_alloc(_metadata, gps_fx(self), 4 * GP, GP, GPS_MEM_GPS, 0, 0);
	host = self->b.view[self->nr];

	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 0, GPS_FENCE_HOST, 0, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 0, GPS_FENCE_HOST, 1, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, GPS_FENCE_ALL,
				       GPS_FENCE_HOST, 0, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 0, GPS_FENCE_MASK, 0, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 0, GPS_FENCE_MASK |
				       GPS_FENCE_HOST, all + 1, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 1, GPS_FENCE_MASK |
				       GPS_FENCE_HOST, 0, NULL));
	ASSERT_EQ(-EINVAL, fence_flags(self->fd, 0, GPS_FENCE_MASK |
				       GPS_FENCE_HOST | 1U << 2, 0, NULL));
	f = (struct gps_fence_args){
		.flags = GPS_FENCE_MASK | GPS_FENCE_HOST, .reserved = { 1 },
	};
	ASSERT_EQ(-1, ioctl(self->fd, GPS_IOC_FENCE, &f));
	ASSERT_EQ(EINVAL, errno);

	ASSERT_EQ(0, fence_flags(self->fd, 0, GPS_FENCE_MASK |
				 GPS_FENCE_HOST, 0, NULL));
	ASSERT_EQ(0, fence_flags(self->fd, 0, GPS_FENCE_MASK |
				 GPS_FENCE_HOST, all, NULL));

	/* Host and device 1 both store; one fence of both. */
	U32(host, 64) = 0xa11;
	U32(self->b.view[1], GP + 64) = 0xb22;
	ASSERT_EQ(0, host_fence(self->fd, 1ULL << 1, &f));
	EXPECT_LE(2, f.blocks_pushed);
	ASSERT_EQ(0xa11, U32(self->b.view[1], 64));
	ASSERT_EQ(0xb22, U32(self->b.view[0], GP + 64));
	ASSERT_EQ(0xb22, U32(host, GP + 64));
	ASSERT_EQ(0xa11, read32(self->fd, &self->b, self->nr - 1, 64));
	ASSERT_EQ(0xb22, read32(self->fd, &self->b, self->nr - 1, GP + 64));
}

/*
 * A host fence with nothing stored through the host view since the last
 * one does no work, though devices 0 and 1 (and the last) have stores
 * pending in their own views: those stay where they are, unseen by the
 * others, until their devices' fences.
 */
TEST_F(hostview, idle_host_fence_does_no_work)
{
	void *host, *v0, *v1, *vl;
	struct gps_fence_args f;
	int last = self->nr - 1, k;

	hv_alloc(_metadata, gps_fx(self), 4 * GP, GP, GPS_MEM_GPS, 0, 0);
	host = self->b.view[self->nr];
	v0 = self->b.view[0];
	v1 = self->b.view[1];
	vl = self->b.view[last];

	/* Nothing stored at all: nothing to do. */
	ASSERT_EQ(0, host_fence(self->fd, 0, &f));
	EXPECT_EQ(0, f.pages_harvested);
	EXPECT_EQ(0, f.blocks_pushed);

	/* Work for one host fence, then none for the next ones. */
	U32(host, 0) = 0x11;
	ASSERT_EQ(0, host_fence(self->fd, 0, &f));
	ASSERT_LE(1, f.pages_harvested);
	ASSERT_LE(1, f.blocks_pushed);
	ASSERT_EQ(0x11, U32(v1, 0));

	/* Devices store into their own views; nothing publishes them. */
	U32(v1, GP + 128) = 0x1111;
	U32(v0, 2 * GP + 256) = 0x2222;
	if (last > 1)
		U32(vl, 3 * GP + 512) = 0x3333;
	ASSERT_EQ(0, U32(v0, GP + 128));
	ASSERT_EQ(0, read32(self->fd, &self->b, 0, GP + 128));
	ASSERT_EQ(0, U32(v1, 2 * GP + 256));
	ASSERT_EQ(0, read32(self->fd, &self->b, 1, 2 * GP + 256));

	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, host_fence(self->fd, 0, &f));
		EXPECT_EQ(0, f.pages_harvested) TH_LOG("idle host fence %d", k);
		EXPECT_EQ(0, f.blocks_pushed) TH_LOG("idle host fence %d", k);
		EXPECT_EQ(0, f.bytes_pushed) TH_LOG("idle host fence %d", k);
	}
	/* Still pending: seen only through their own devices' views. */
	ASSERT_EQ(0x1111, U32(v1, GP + 128));
	ASSERT_EQ(0, U32(v0, GP + 128))
		TH_LOG("device 1's store published by a host fence");
	ASSERT_EQ(0, U32(host, GP + 128));
	ASSERT_EQ(0, read32(self->fd, &self->b, 0, GP + 128));
	ASSERT_EQ(0, U32(v1, 2 * GP + 256))
		TH_LOG("device 0's store published by a host fence");
	ASSERT_EQ(0, read32(self->fd, &self->b, 1, 2 * GP + 256));
	if (last > 1) {
		ASSERT_EQ(0, U32(v1, 3 * GP + 512))
			TH_LOG("device %d's store published by a host fence",
			       last);
		ASSERT_EQ(0, U32(host, 3 * GP + 512));
	}

	/* Their own fences publish them. */
	ASSERT_EQ(0, gps_fence(self->fd, 1, &f));
	EXPECT_LE(1, f.blocks_pushed);
	ASSERT_EQ(0x1111, U32(v0, GP + 128));
	ASSERT_EQ(0x1111, U32(host, GP + 128));
	ASSERT_EQ(0x1111, read32(self->fd, &self->b, last, GP + 128));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0x2222, U32(v1, 2 * GP + 256));
	if (last > 1) {
		ASSERT_EQ(0, gps_fence(self->fd, last, NULL));
		ASSERT_EQ(0x3333, U32(v1, 3 * GP + 512));
		ASSERT_EQ(0x3333, U32(host, 3 * GP + 512));
	}
	/* And the host fence still has nothing to do. */
	ASSERT_EQ(0, host_fence(self->fd, 0, &f));
	EXPECT_EQ(0, f.pages_harvested);
	EXPECT_EQ(0, f.blocks_pushed);
}

/*
 * Host stores are stores into the home's replica: a fence of the home,
 * of all devices, or a mask fence naming the home, publishes them.
 */
TEST_F(hostview, home_fence_publishes_host_stores)
{
	void *host, *v1;
	int k;

	hv_alloc(_metadata, gps_fx(self), 4 * GP, GP, GPS_MEM_GPS, 0, 0);
	host = self->b.view[self->nr];
	v1 = self->b.view[1];
	for (k = 1; k <= 6; k++) {
		U32(host, (k % 4) * GP + 8 * k) = 0x500 + k;
		ASSERT_EQ(0, U32(v1, (k % 4) * GP + 8 * k))
			TH_LOG("round %d", k);
		switch (k % 3) {
		case 1:
			ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
			break;
		case 2:
			ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
			break;
		default:
			ASSERT_EQ(0, fence_flags(self->fd, 0, GPS_FENCE_MASK,
						 1, NULL));
			break;
		}
		ASSERT_EQ(0x500 + k, U32(v1, (k % 4) * GP + 8 * k))
			TH_LOG("round %d", k);
		ASSERT_EQ(0x500 + k, read32(self->fd, &self->b, self->nr - 1,
					    (k % 4) * GP + 8 * k))
			TH_LOG("round %d", k);
	}
}

/*
 * The host view follows the home, not device 0: with the last device as
 * home, a host store is in the home's view at once and in device 0's
 * only after a host fence; a store through the home's view is in the
 * host view at once.
 */
TEST_F(hostview, follows_the_home)
{
	int home = self->nr - 1;
	void *host, *vh, *v0;

	hv_alloc(_metadata, gps_fx(self), 2 * GP, GP, GPS_MEM_GPS, 0, home);
	host = self->b.view[self->nr];
	vh = self->b.view[home];
	v0 = self->b.view[0];
	U32(host, GP + 40) = 0x4040;
	ASSERT_EQ(0x4040, U32(vh, GP + 40));
	ASSERT_EQ(0x4040, read32(self->fd, &self->b, home, GP + 40));
	ASSERT_EQ(0, U32(v0, GP + 40))
		TH_LOG("the host view stored into device 0's replica");
	ASSERT_EQ(0, host_fence(self->fd, 0, NULL));
	ASSERT_EQ(0x4040, U32(v0, GP + 40));

	U32(vh, 80) = 0x8080;
	ASSERT_EQ(0x8080, U32(host, 80));
	ASSERT_EQ(0, U32(v0, 80));
	ASSERT_EQ(0, gps_fence(self->fd, home, NULL));
	ASSERT_EQ(0x8080, U32(v0, 80));
}

/* One host fence publishes the host stores of every allocation. */
TEST_F(hostview, every_allocation_of_the_file)
{
	struct gps_buf x;
	void *hx;
	int d;

	hv_alloc(_metadata, gps_fx(self), 2 * GP, GP, GPS_MEM_GPS, 0, 0);
	ASSERT_EQ(0, gps_alloc(self->fd, &x, 8 * SMALL, GPS_MEM_GPS, 0, 0,
			       GPS_PAGE_4K));
	hx = gps_map(self->fd, &x, self->nr);
	ASSERT_NE(NULL, hx) TH_LOG("mmap of the host view: %s",
				   strerror(errno));
	ASSERT_NE(NULL, gps_map(self->fd, &x, 1));
	U32(self->b.view[self->nr], GP + 12) = 0xaaa;
	U32(hx, 5 * SMALL + 12) = 0xbbb;
	ASSERT_EQ(0, U32(x.view[1], 5 * SMALL + 12));
	ASSERT_EQ(0, host_fence(self->fd, 0, NULL));
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0xaaa, read32(self->fd, &self->b, d, GP + 12))
			TH_LOG("device %d", d);
		ASSERT_EQ(0xbbb, read32(self->fd, &x, d, 5 * SMALL + 12))
			TH_LOG("device %d", d);
	}
	ASSERT_EQ(0xbbb, U32(x.view[1], 5 * SMALL + 12));
	ASSERT_EQ(0, gps_free(self->fd, &x));
}

/* ------------------------------------------------------------------ */

/*
 * GPS_URING_CMD_FENCE with GPS_FENCE_HOST: completes with 0 once the
 * host stores are published; -EINVAL without GPS_FENCE_MASK, and for an
 * empty mask without GPS_FENCE_HOST.
 */
TEST_F(hostview, uring_host_fence)
{
	const uint32_t hm = GPS_FENCE_MASK | GPS_FENCE_HOST;
	struct ring r;
	void *host, *v1;
	int k, ret;

	ret = ring_init(&r);
	if (ret)
		SKIP(return, "io_uring_setup: %s", strerror(-ret));
	hv_alloc(_metadata, gps_fx(self), 4 * GP, GP, GPS_MEM_GPS, 0, 0);
	host = self->b.view[self->nr];
	v1 = self->b.view[1];

	EXPECT_EQ(-EINVAL, ring_fence(&r, self->fd, 0, GPS_FENCE_HOST, 0));
	EXPECT_EQ(-EINVAL, ring_fence(&r, self->fd, 0, GPS_FENCE_HOST, 1));
	EXPECT_EQ(-EINVAL, ring_fence(&r, self->fd, 0, GPS_FENCE_MASK, 0));
	EXPECT_EQ(-EINVAL, ring_fence(&r, self->fd, 1, hm, 0));
	EXPECT_EQ(-EINVAL, ring_fence(&r, self->fd, 0, hm,
				      gps_all_mask(self->nr) + 1));
	for (k = 1; k <= 4; k++) {
		U32(host, (k % 4) * GP + 4 * k) = 0x700 + k;
		ASSERT_EQ(0, U32(v1, (k % 4) * GP + 4 * k))
			TH_LOG("round %d", k);
		ASSERT_EQ(0, ring_fence(&r, self->fd, 0, hm, 0))
			TH_LOG("round %d", k);
		ASSERT_EQ(0x700 + k, U32(v1, (k % 4) * GP + 4 * k))
			TH_LOG("round %d", k);
		ASSERT_EQ(0x700 + k, read32(self->fd, &self->b, self->nr - 1,
					    (k % 4) * GP + 4 * k));
	}
	/* With device 1 in the mask: its stores too. */
	U32(host, 100) = 0x7a;
	U32(v1, GP + 100) = 0x7b;
	ASSERT_EQ(0, ring_fence(&r, self->fd, 0, hm, 1ULL << 1));
	ASSERT_EQ(0x7a, U32(v1, 100));
	ASSERT_EQ(0x7b, U32(host, GP + 100));
	ASSERT_EQ(0x7b, read32(self->fd, &self->b, 0, GP + 100));
	ring_exit(&r);
}

/* ------------------------------------------------------------------ */

#define RACE_SIZE	(2UL << 20)		/* of 4 KiB GPS pages */
#define RACE_PAGES	(RACE_SIZE / SMALL)
#define RACE_ROUNDS	30

/* Round @r's word in small page @i, and its value. */
static uint64_t race_off(int r, size_t i)
{
	return i * SMALL + ((r * 37 + i * 11) % (SMALL / 8)) * 8;
}

static uint64_t race_val(int r, size_t i)
{
	return (uint64_t)(r + 1) << 32 | 0x5a000000 | i;
}

struct racer {
	int fd, round, use_ring;
	struct ring ring;
	pthread_barrier_t *bar;
	void *v1;			/* device 1's view */
	/* results */
	int rc;
	long long harvested;
	size_t bad, first_bad;
	uint64_t got;
};

/* Fence the host with the other racer, then check device 1's view. */
static void *racer_fn(void *arg)
{
	struct racer *t = arg;
	struct gps_fence_args f = {};
	size_t i;
	uint64_t v;

	pthread_barrier_wait(t->bar);
	if (t->use_ring)
		t->rc = ring_fence(&t->ring, t->fd, 0,
				   GPS_FENCE_MASK | GPS_FENCE_HOST, 0);
	else
		t->rc = host_fence(t->fd, 0, &f);
	t->harvested = f.pages_harvested;
	t->bad = 0;
	if (t->rc)
		return NULL;
	for (i = 0; i < RACE_PAGES; i++) {
		v = U64(t->v1, race_off(t->round, i));
		if (v != race_val(t->round, i) && !t->bad++) {
			t->first_bad = i;
			t->got = v;
		}
	}
	return NULL;
}

/*
 * Host fences are serialised: the host stores into every small page of
 * 2 MiB, then two threads fence the host at once (by ioctl, or one by
 * io_uring in odd rounds); whichever fence took the work, each must
 * return only once it is done, so device 1's view shows every store.
 */
TEST_F(hostview, concurrent_host_fences_serialised)
{
	struct racer t[2] = {};
	pthread_barrier_t bar;
	pthread_t tid[2];
	void *host;
	int r, k, have_ring;
	size_t i;

	hv_alloc(_metadata, gps_fx(self), RACE_SIZE, GPS_PAGE_4K,
		   GPS_MEM_GPS, 0, 0);
	host = self->b.view[self->nr];
	have_ring = !ring_init(&t[1].ring);
	if (!have_ring)
		TH_LOG("no io_uring: ioctl fences only");
	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, 2));
	for (r = 0; r < RACE_ROUNDS; r++) {
		for (i = 0; i < RACE_PAGES; i++)
			U64(host, race_off(r, i)) = race_val(r, i);
		for (k = 0; k < 2; k++) {
			t[k].fd = self->fd;
			t[k].round = r;
			t[k].use_ring = k == 1 && have_ring && (r & 1);
			t[k].bar = &bar;
			t[k].v1 = self->b.view[1];
			ASSERT_EQ(0, pthread_create(&tid[k], NULL, racer_fn,
						    &t[k]));
		}
		for (k = 0; k < 2; k++)
			ASSERT_EQ(0, pthread_join(tid[k], NULL));
		for (k = 0; k < 2; k++) {
			ASSERT_EQ(0, t[k].rc) TH_LOG("round %d thread %d (%s)",
						    r, k, t[k].use_ring ?
						    "io_uring" : "ioctl");
			ASSERT_EQ(0, t[k].bad)
				TH_LOG("round %d thread %d (%s, harvested "
				       "%lld, other %lld): %zu of %lu stores "
				       "not in device 1's view when its fence "
				       "returned, first page %zu: %#llx",
				       r, k, t[k].use_ring ? "io_uring" :
				       "ioctl", t[k].harvested,
				       t[!k].harvested, t[k].bad, RACE_PAGES,
				       t[k].first_bad,
				       (unsigned long long)t[k].got);
		}
		if (!t[1].use_ring)
			EXPECT_LE(RACE_PAGES, t[0].harvested + t[1].harvested)
				TH_LOG("round %d", r);
	}
	pthread_barrier_destroy(&bar);
	if (have_ring)
		ring_exit(&t[1].ring);
}

/* ------------------------------------------------------------------ */

/*
 * The home does not subscribe: the host view maps (as the home's view
 * does) the subscriber nearest to the home, and a host fence publishes
 * its stores to the other.  The host view is first read while the home
 * still subscribes.
 */
TEST_F(hostview, home_not_a_subscriber)
{
	void *host, *v0;
	unsigned char pat[2 * GP];
	uint64_t off;
	int k, d;

	if (self->nr < 3)
		SKIP(return, "needs three devices");
	hv_alloc(_metadata, gps_fx(self), 2 * GP, GP, GPS_MEM_GPS,
		   GPS_ALLOC_MANUAL, 0);
	host = self->b.view[self->nr];
	v0 = self->b.view[0];
	memset(pat, 0x33, sizeof(pat));
	ASSERT_EQ(0, gps_write(self->fd, &self->b, 0, pat, sizeof(pat)));
	ASSERT_EQ(0x33333333, U32(host, 0));
	ASSERT_EQ(0x33333333, U32(host, GP + 4));

	for (d = 1; d <= 2; d++)
		ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, 2 * GP,
					GPS_ADVISE_SUBSCRIBE, d, NULL));
	ASSERT_EQ(0, gps_advise(self->fd, &self->b, 0, 2 * GP,
				GPS_ADVISE_UNSUBSCRIBE, 0, NULL));
	ASSERT_EQ(0x6, gps_subs(self->fd, &self->b, 0));
	ASSERT_EQ(0x6, gps_subs(self->fd, &self->b, 1));
	ASSERT_EQ(0x33333333, U32(host, 8));

	for (k = 1; k <= 3; k++) {
		off = (k & 1) * GP + 256 * k;
		U32(host, off) = 0x900 + k;
		ASSERT_EQ(0x900 + k, U32(host, off));
		ASSERT_EQ(0x900 + k, U32(v0, off))
			TH_LOG("round %d: the home's view maps another replica",
			       k);
		ASSERT_EQ(0, host_fence(self->fd, 0, NULL))
			TH_LOG("round %d", k);
		for (d = 1; d <= 2; d++) {
			ASSERT_EQ(0x900 + k, U32(self->b.view[d], off))
				TH_LOG("round %d device %d", k, d);
			ASSERT_EQ(0x900 + k, read32(self->fd, &self->b, d, off))
				TH_LOG("round %d device %d", k, d);
		}
	}
}

/*
 * Conventional memory has a host view: its stores are in the home's
 * single copy, seen at once through every view; a host fence of them
 * works and has nowhere to push.
 */
TEST_F(hostview, conventional)
{
	struct gps_fence_args f;
	void *host, *v0;

	hv_alloc(_metadata, gps_fx(self), 2 * GP, GP, GPS_MEM_CONVENTIONAL,
		   0, 0);
	host = self->b.view[self->nr];
	v0 = self->b.view[0];
	U32(host, GP + 20) = 0xc0c0;
	ASSERT_EQ(0xc0c0, U32(v0, GP + 20));
	ASSERT_EQ(0xc0c0, U32(self->b.view[1], GP + 20));
	ASSERT_EQ(0xc0c0, read32(self->fd, &self->b, 0, GP + 20));
	U32(v0, 60) = 0xd0d0;
	ASSERT_EQ(0xd0d0, U32(host, 60));
	ASSERT_EQ(0, host_fence(self->fd, 0, &f));
	EXPECT_EQ(0, f.blocks_pushed);
	ASSERT_EQ(0xc0c0, U32(host, GP + 20));
	ASSERT_EQ(0xc0c0, read32(self->fd, &self->b, self->nr - 1, GP + 20));
	ASSERT_EQ(0xd0d0, read32(self->fd, &self->b, self->nr - 1, 60));
}

TEST_HARNESS_MAIN
