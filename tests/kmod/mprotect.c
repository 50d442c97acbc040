// SPDX-License-Identifier: GPL-2.0
/*
 * Description: mprotect() of a view.  A page the harvest write-protected
 * keeps its PTE's dirty bit, and the kernel's mprotect() makes a dirty
 * PTE of a shared mapping writable again without a write fault when the
 * view gets PROT_WRITE back: a store through it then had no twin and no
 * dirty bit, and was never published.  After a round trip through
 * PROT_READ every store is published by the next fence, for pages
 * write-protected at each harvest and for pages kept writable; a store
 * to a read-only view still raises SIGSEGV, and other protections keep
 * working.  The push thread is off: harvests happen at the test's fences.
 */
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define SIZE	(4 * GPS_PAGE_64K)

FIXTURE(mprot) {
	struct gps_fixture;
	int node0;
};

FIXTURE_VARIANT(mprot) {
	int keep_ms;
};

FIXTURE_VARIANT_ADD(mprot, protected) { .keep_ms = 0 };
FIXTURE_VARIANT_ADD(mprot, kept) { .keep_ms = 5000 };

FIXTURE_SETUP(mprot)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "keep_writable_ms", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	self->node0 = gps_node_of(self->fd, 0);
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", variant->keep_ms));
	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
}

FIXTURE_TEARDOWN(mprot)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* Read-only and back, epoch after epoch: every store is published. */
TEST_F(mprot, stores_after_a_read_only_spell_are_published)
{
	void *p = self->b.view[0];
	int e;

	for (e = 1; e <= 4; e++) {
		memset(p, e, SIZE);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self),
						SIZE, e))
			TH_LOG("epoch %d", e);
		ASSERT_EQ(0, mprotect(p, SIZE, PROT_READ));
		ASSERT_EQ(e, ((volatile unsigned char *)p)[SIZE - 1]);
		ASSERT_EQ(0, mprotect(p, SIZE, PROT_READ | PROT_WRITE));
	}
	memset(p, 9, SIZE);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self), SIZE, 9));
}

/* Part of the view only: the pages around it too. */
TEST_F(mprot, part_of_the_view)
{
	unsigned char *p = self->b.view[0];

	memset(p, 1, SIZE);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, mprotect(p + GPS_PAGE_64K, GPS_PAGE_64K, PROT_READ));
	ASSERT_EQ(0, mprotect(p + GPS_PAGE_64K, GPS_PAGE_64K,
			      PROT_READ | PROT_WRITE));
	memset(p, 2, SIZE);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self), SIZE, 2));
}

static sigjmp_buf segv_jmp;

static void on_segv(int sig)
{
	siglongjmp(segv_jmp, 1);
}

/* A read-only view is read-only: the store faults, nothing changes. */
TEST_F(mprot, read_only_view_refuses_stores)
{
	volatile unsigned char *p = self->b.view[0];
	struct sigaction sa = { .sa_handler = on_segv }, old;
	volatile int faulted = 0;

	memset((void *)p, 3, SIZE);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, mprotect((void *)p, SIZE, PROT_READ));
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, &old));
	if (!sigsetjmp(segv_jmp, 1))
		p[5] = 4;
	else
		faulted = 1;
	ASSERT_EQ(0, sigaction(SIGSEGV, &old, NULL));
	EXPECT_EQ(1, faulted);
	ASSERT_EQ(0, mprotect((void *)p, SIZE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_TRUE(gps_fixture_all_are(_metadata, gps_fx(self), SIZE, 3));
}

TEST_HARNESS_MAIN
