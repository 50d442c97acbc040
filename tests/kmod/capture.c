// SPDX-License-Identifier: GPL-2.0
/*
 * Description: capture windows (capture_bytes = 0, the default: see
 * Documentation/reliability.rst), the capture of a whole GPS page at one
 * fault.  A device that
 * writes every small page of a GPS page takes one write fault for it per
 * epoch (release to release; two in the first, as a new replica starts
 * narrow), and a reader one read fault, whatever the GPS page size; a
 * page written sparsely (one small page per epoch) keeps one twin, not
 * one per small page, from its first store; small pages mapped writable
 * but never written publish nothing; capture never reaches outside the
 * faulting mapping; two devices writing different small pages of one GPS
 * page both publish; capture_bytes = PAGE_SIZE gives back one fault per
 * small page, and bad values are refused.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define SMALL	4096UL

FIXTURE(capture) {
	struct gps_fixture;
	int node0;
};

FIXTURE_SETUP(capture)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "dirty_wake", "capture_bytes",
		"keep_writable_ms", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	self->node0 = gps_node_of(self->fd, 0);
	/* Harvests only at fences: epochs are the test's. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1 << 20));
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 0));
	/* Every epoch captures again (keep.c: pages kept writable). */
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
}

FIXTURE_TEARDOWN(capture)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

#define STAT(name)	gps_stat(self->node0, name)

/* One store into each small page of @len bytes at @p, all @v. */
static void touch_each(volatile unsigned char *p, size_t len, unsigned char v)
{
	size_t off;

	for (off = 0; off < len; off += SMALL)
		p[off + 17] = v;
}

static unsigned long read_each(volatile unsigned char *p, size_t len)
{
	unsigned long sum = 0;
	size_t off;

	for (off = 0; off < len; off += SMALL)
		sum += p[off + 17];
	return sum;
}

/* Every replica holds @v at byte 17 of every small page. */
static int published(struct __test_metadata *_metadata, struct gps_fixture *fx,
		     size_t len, unsigned char v)
{
	size_t off;
	unsigned char c;
	int d;

	for (d = 0; d < fx->nr; d++)
		for (off = 0; off < len; off += SMALL) {
			EXPECT_EQ(0, gps_read(fx->fd, &fx->b, d, off + 17,
					      &c, 1));
			if (c != v)
				return 0;
		}
	return 1;
}

static void dense_epochs(struct __test_metadata *_metadata,
			 struct gps_fixture *fx, int node0, uint32_t ps,
			 size_t size)
{
	size_t gpages = size / ps;
	long long wf;
	int e;

	gps_fixture_alloc(_metadata, fx, size, ps, 1);
	for (e = 1; e <= 3; e++) {
		wf = gps_stat(node0, "write_faults");
		touch_each(fx->b.view[0], size, e);
		/* a new replica is narrow: its second small page widens it */
		EXPECT_EQ(e == 1 ? 2 * gpages : gpages,
			  gps_stat(node0, "write_faults") - wf)
			TH_LOG("epoch %d, %zu GPS pages of %u bytes", e,
			       gpages, ps);
		ASSERT_EQ(0, gps_fence(fx->fd, 0, NULL));
		EXPECT_TRUE(published(_metadata, fx, size, e));
	}
}

/* Every small page written, each epoch: one write fault per GPS page. */
TEST_F(capture, dense_writer_faults_once_per_gps_page_64k)
{
	dense_epochs(_metadata, gps_fx(self), self->node0, GPS_PAGE_64K,
		     16 * GPS_PAGE_64K);
}

TEST_F(capture, dense_writer_faults_once_per_gps_page_2m)
{
	dense_epochs(_metadata, gps_fx(self), self->node0, GPS_PAGE_2M,
		     2 * GPS_PAGE_2M);
}

/* A reader of every small page: one read fault per GPS page. */
TEST_F(capture, reader_faults_once_per_gps_page)
{
	size_t size = 8 * GPS_PAGE_64K;
	long long rf;

	gps_fixture_alloc(_metadata, gps_fx(self), size, GPS_PAGE_64K, 2);
	rf = gps_stat(gps_node_of(self->fd, 1), "read_faults");
	EXPECT_EQ(0, read_each(self->b.view[1], size));
	EXPECT_EQ(8, gps_stat(gps_node_of(self->fd, 1), "read_faults") - rf);
}

/*
 * Read all, then write all, then the next epochs: one write fault per GPS
 * page each epoch (two the first); one read fault the first, and then
 * none where the harvest protects in place (loads stay mapped).
 */
TEST_F(capture, read_then_write_faults_once_each)
{
	size_t size = 4 * GPS_PAGE_64K;
	long long rf, wf;
	int e, in_place = gps_knob("protect_in_place");

	ASSERT_GE(in_place, 0);
	gps_fixture_alloc(_metadata, gps_fx(self), size, GPS_PAGE_64K, 1);
	for (e = 1; e <= 3; e++) {
		rf = STAT("read_faults");
		wf = STAT("write_faults");
		read_each(self->b.view[0], size);
		touch_each(self->b.view[0], size, e);
		/* a harvest that protects in place leaves loads mapped */
		EXPECT_EQ(e == 1 || !in_place ? 4 : 0,
			  STAT("read_faults") - rf) TH_LOG("epoch %d", e);
		EXPECT_EQ(e == 1 ? 8 : 4, STAT("write_faults") - wf)
			TH_LOG("epoch %d", e);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		EXPECT_TRUE(published(_metadata, gps_fx(self), size, e));
	}
}

/*
 * Captured but not written: nothing published for them.  One store in
 * small page 3 of a GPS page: one byte pushed to each other device.
 */
TEST_F(capture, unwritten_small_pages_push_nothing)
{
	volatile unsigned char *p;
	struct gps_fence_args f;
	int e;

	gps_fixture_alloc(_metadata, gps_fx(self), GPS_PAGE_64K, GPS_PAGE_64K,
			  1);
	p = self->b.view[0];
	for (e = 1; e <= 3; e++) {
		p[3 * SMALL + 5] = e;
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		EXPECT_EQ(self->nr - 1, f.bytes_pushed) TH_LOG("epoch %d", e);
	}
}

/*
 * A GPS page written in one small page per epoch keeps one twin, not one
 * per small page, and faults once, from its first epoch on.
 */
TEST_F(capture, sparse_writer_keeps_one_twin)
{
	volatile unsigned char *p;
	long long wf;
	int e;

	gps_fixture_alloc(_metadata, gps_fx(self), GPS_PAGE_64K, GPS_PAGE_64K,
			  1);
	p = self->b.view[0];
	for (e = 1; e <= 4; e++) {
		wf = STAT("write_faults");
		p[5 * SMALL] = e;
		EXPECT_EQ(1, STAT("write_faults") - wf);
		EXPECT_EQ(1, STAT("twin_pages")) TH_LOG("epoch %d", e);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	}
	/* Dense again: the whole GPS page at the second fault, at most. */
	wf = STAT("write_faults");
	touch_each(p, GPS_PAGE_64K, 9);
	EXPECT_GE(2, STAT("write_faults") - wf);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	EXPECT_TRUE(published(_metadata, gps_fx(self), GPS_PAGE_64K, 9));
}

/*
 * One store into a new replica of a 2 MiB GPS page: one twin, one small
 * page harvested, not 512 (a new replica starts narrow).
 */
TEST_F(capture, first_store_twins_one_small_page)
{
	volatile unsigned char *p;
	struct gps_fence_args f;
	long long twins;
	unsigned char c;
	int d;

	gps_fixture_alloc(_metadata, gps_fx(self), GPS_PAGE_2M, GPS_PAGE_2M,
			  1);
	p = self->b.view[0];
	twins = STAT("twin_pages");
	p[300 * SMALL + 9] = 7;
	EXPECT_EQ(1, STAT("twin_pages") - twins);
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	EXPECT_EQ(1, f.pages_harvested);
	EXPECT_EQ(self->nr - 1, f.bytes_pushed);
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 300 * SMALL + 9,
				      &c, 1));
		EXPECT_EQ(7, c) TH_LOG("device %d", d);
	}
}

/* A mapping of small pages 4..7 of a GPS page: capture stays inside. */
TEST_F(capture, stays_inside_the_mapping)
{
	volatile unsigned char *p;
	unsigned char c;
	long long wf;
	int i;

	ASSERT_EQ(0, gps_alloc(self->fd, &self->b, 2 * GPS_PAGE_64K,
			       GPS_MEM_GPS, 0, 0, GPS_PAGE_64K));
	self->have_b = 1;
	p = mmap(NULL, 4 * SMALL, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, self->b.args.offset + 4 * SMALL);
	ASSERT_NE(MAP_FAILED, p);
	wf = STAT("write_faults");
	for (i = 0; i < 4; i++)
		p[i * SMALL] = 40 + i;
	/* the second fault (page 5) widens the new replica: 5..7 captured */
	EXPECT_EQ(2, STAT("write_faults") - wf);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, i * SMALL, &c, 1));
		EXPECT_EQ(i >= 4 && i < 8 ? 40 + i - 4 : 0, c) TH_LOG("%d", i);
	}
	EXPECT_EQ(0, munmap((void *)p, 4 * SMALL));
}

/* Two devices write alternate small pages of one GPS page: both land. */
TEST_F(capture, two_writers_of_one_gps_page)
{
	volatile unsigned char *p0, *p1;
	unsigned char c;
	int i, d, e;

	gps_fixture_alloc(_metadata, gps_fx(self), GPS_PAGE_64K, GPS_PAGE_64K,
			  2);
	p0 = self->b.view[0];
	p1 = self->b.view[1];
	for (e = 1; e <= 3; e++) {
		for (i = 0; i < 16; i++)
			(i & 1 ? p1 : p0)[i * SMALL + e] = 10 * e + i;
		ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		for (d = 0; d < self->nr; d++)
			for (i = 0; i < 16; i++) {
				ASSERT_EQ(0, gps_read(self->fd, &self->b, d,
						      i * SMALL + e, &c, 1));
				EXPECT_EQ(10 * e + i, c)
					TH_LOG("epoch %d dev %d page %d", e,
					       d, i);
			}
	}
}

/* capture_bytes = one small page: the old one fault per small page. */
TEST_F(capture, knob_one_small_page)
{
	size_t size = 2 * GPS_PAGE_64K;
	long long wf;

	ASSERT_EQ(0, gps_set_knob("capture_bytes", SMALL));
	gps_fixture_alloc(_metadata, gps_fx(self), size, GPS_PAGE_64K, 1);
	wf = STAT("write_faults");
	touch_each(self->b.view[0], size, 3);
	EXPECT_EQ(size / SMALL, STAT("write_faults") - wf);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	EXPECT_TRUE(published(_metadata, gps_fx(self), size, 3));
}

TEST_F(capture, knob_rejects_bad_values)
{
	long long old = gps_knob("capture_bytes");

	EXPECT_EQ(-EINVAL, gps_set_knob("capture_bytes", 3000));
	EXPECT_EQ(-EINVAL, gps_set_knob("capture_bytes", 2048));
	EXPECT_EQ(-EINVAL, gps_set_knob("capture_bytes", 4 << 20));
	EXPECT_EQ(old, gps_knob("capture_bytes"));
	EXPECT_EQ(0, gps_set_knob("capture_bytes", 0));
	EXPECT_EQ(0, gps_set_knob("capture_bytes", 65536));
}

TEST_HARNESS_MAIN
