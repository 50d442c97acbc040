// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what one user of /dev/gps can do to another, bounded
 * (Documentation/security.rst).  A GPS_IOC_READ that a delay point makes
 * last 26 s dies at once of SIGKILL; a free held before the zap of its
 * views (delay point free_zap) does not hold another file's fence; freeing
 * an allocation with dirty replicas leaves those of two others (same file,
 * other file) on the dirty lists, so their next fence publishes every one
 * of their stores; with node_reserve_bytes above what any node has, a
 * store that needs a twin gets SIGBUS (no OOM kill) and a write fault
 * captures only pages that have a twin already, while the stores made
 * before are published.  The delay-point tests run only with a module
 * built with CONFIG_GPS_DEBUG (the debug kernel's guests); the others
 * everywhere.  Delay settings and knobs are restored.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define GP		GPS_PAGE_64K
#define NR_SMALL	(GP / 4096)

static const char *const if_knobs[] = {
	GPS_KNOBS_COMMON, "capture_bytes", "node_reserve_bytes", NULL,
};

static const char *const if_points[] = { "read_page", "free_zap" };

FIXTURE(interference) {
	struct gps_fixture;
	int delays;
};

FIXTURE_SETUP(interference)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, if_knobs))
		return;
	self->delays = gps_have_delays();
	/* Only fences publish: the dirty lists hold what was stored. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
}

FIXTURE_TEARDOWN(interference)
{
	unsigned int i;

	if (self->fd >= 0 && self->delays)
		for (i = 0; i < sizeof(if_points) / sizeof(if_points[0]); i++)
			EXPECT_EQ(0, gps_delay_arm(if_points[i], 0));
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static long long vmstat(const char *name)
{
	return gps_file_value("/proc/vmstat", name);
}

/*
 * A read of 2 MiB whose every small page is held 50 ms (26 s in all) is
 * killed in its first pages: the reader is gone within 2 s, having read
 * at most one page more after the kill.
 */
TEST_F(interference, read_is_killable)
{
	const uint64_t sz = 2 << 20;
	long long h0, h1, h2, t0, dead_ms = -1;
	int status = -1;
	pid_t pid;

	if (!self->delays)
		SKIP(return, "no delay points (module without CONFIG_GPS_DEBUG)");
	gps_fixture_alloc(_metadata, gps_fx(self), sz, GP, 0);
	h0 = gps_delay_get("read_page", "hits");
	ASSERT_EQ(0, gps_delay_arm("read_page", 50000));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		void *buf = malloc(sz);

		_exit(buf && !gps_read(self->fd, &self->b, 0, 0, buf, sz) ?
		      0 : 1);
	}
	ASSERT_EQ(0, gps_delay_wait_hit("read_page", h0));
	h1 = gps_delay_get("read_page", "hits");
	t0 = gps_now_ms();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	while (gps_now_ms() - t0 < 2000) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			dead_ms = gps_now_ms() - t0;
			break;
		}
		usleep(2000);
	}
	h2 = gps_delay_get("read_page", "hits");
	/* An unkillable read ends fast once the point is off. */
	ASSERT_EQ(0, gps_delay_arm("read_page", 0));
	if (dead_ms < 0)
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(gps_killed_by(status, SIGKILL));
	ASSERT_LE(0, dead_ms) {
		TH_LOG("the reader lived on 2 s after SIGKILL, %lld pages read meanwhile",
		       h2 - h1);
	}
	ASSERT_GE(1, h2 - h1);
}

struct freer {
	int fd;
	struct gps_buf *b;
	int ret;
};

static void *free_thread(void *arg)
{
	struct freer *f = arg;

	f->ret = gps_free(f->fd, f->b);
	return NULL;
}

/*
 * A free held 3 s between its purge and the zap of its views (free_zap):
 * a fence of device 0 by another file meanwhile publishes that file's
 * store and returns within 1.5 s, not after the free.
 */
TEST_F(interference, free_zap_beside_fence)
{
	struct freer fr = { .fd = self->fd, .b = &self->b };
	unsigned char *p, got = 0;
	struct gps_buf y;
	long long h0, t0, fence_ms;
	pthread_t t;
	int fd2;

	if (!self->delays)
		SKIP(return, "no delay points (module without CONFIG_GPS_DEBUG)");
	if (self->nr < 2)
		SKIP(return, "needs two devices");
	gps_fixture_alloc(_metadata, gps_fx(self), 16 * GP, GP, 2);
	memset(self->b.view[0], 1, 16 * GP);
	fd2 = open(GPS_DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, gps_alloc(fd2, &y, GP, GPS_MEM_GPS, 0, 0, GP));
	p = gps_map(fd2, &y, 0);
	ASSERT_NE(NULL, p);
	p[100] = 7;

	h0 = gps_delay_get("free_zap", "hits");
	ASSERT_EQ(0, gps_delay_arm("free_zap", 3000000));
	ASSERT_EQ(0, pthread_create(&t, NULL, free_thread, &fr));
	ASSERT_EQ(0, gps_delay_wait_hit("free_zap", h0));
	ASSERT_EQ(0, gps_delay_arm("free_zap", 0));
	t0 = gps_now_ms();
	ASSERT_EQ(0, gps_fence(fd2, 0, NULL));
	fence_ms = gps_now_ms() - t0;
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, fr.ret);
	self->have_b = 0;
	ASSERT_GT(1500, fence_ms) {
		TH_LOG("the fence waited %lld ms for the free's zap", fence_ms);
	}
	ASSERT_EQ(0, gps_read(fd2, &y, 1, 100, &got, 1));
	ASSERT_EQ(7, got);
	ASSERT_EQ(0, gps_free(fd2, &y));
	ASSERT_EQ(0, close(fd2));
}

/* Store @v + the device into small page @sub of GPS page @g of each view. */
static void store_views(struct gps_buf *b, int nr, unsigned int g,
			unsigned int sub, unsigned char v)
{
	int d;

	for (d = 0; d < nr; d++)
		((volatile unsigned char *)b->view[d])[g * GP + sub * 4096 +
						       d] = v + d;
}

/*
 * Three allocations, x and y of one file and z of another, each with a
 * dirty small page in every device's replica of each of its GPS pages,
 * their replicas interleaved on every dirty list; freeing x leaves every
 * replica of y and z listed: the next fence of every device harvests
 * exactly their pages and publishes every store.
 */
TEST_F(interference, free_keeps_others_dirty)
{
	struct gps_buf x, y, z;
	struct gps_buf *keep[2] = { &y, &z };
	struct gps_fence_args f;
	unsigned char want[8], got[8];
	unsigned int g, k;
	int fd2, d;

	if (self->nr < 2)
		SKIP(return, "needs two devices: no dirty list with one copy");
	/* One small page per write fault: harvested pages are exact. */
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 4096));
	fd2 = open(GPS_DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, gps_alloc(self->fd, &x, 4 * GP, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_alloc(self->fd, &y, 4 * GP, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_alloc(fd2, &z, 4 * GP, GPS_MEM_GPS, 0, 0, GP));
	for (d = 0; d < self->nr; d++) {
		ASSERT_NE(NULL, gps_map(self->fd, &x, d));
		ASSERT_NE(NULL, gps_map(self->fd, &y, d));
		ASSERT_NE(NULL, gps_map(fd2, &z, d));
	}
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (g = 0; g < 4; g++) {
		store_views(&x, self->nr, g, 1, 0x10);
		store_views(&y, self->nr, g, 2, 0x20 + g);
		store_views(&z, self->nr, g, 3, 0x40 + g);
		store_views(&x, self->nr, g, 4, 0x60);
	}
	ASSERT_EQ(0, gps_free(self->fd, &x));
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, &f));
	/* y and z: 4 GPS pages x one small page per device each. */
	ASSERT_EQ(2 * 4 * self->nr, f.pages_harvested);
	for (k = 0; k < 2; k++)
		for (g = 0; g < 4; g++) {
			unsigned int sub = 2 + k;
			uint64_t off = g * GP + sub * 4096;

			for (d = 0; d < self->nr && d < 8; d++)
				want[d] = (k ? 0x40 : 0x20) + g + d;
			for (d = 0; d < self->nr; d++) {
				ASSERT_EQ(0, gps_read(k ? fd2 : self->fd,
						      keep[k], d, off, got,
						      self->nr < 8 ?
						      self->nr : 8));
				ASSERT_EQ(0, memcmp(want, got, self->nr < 8 ?
						    self->nr : 8)) {
					TH_LOG("%c page %u device %d",
					       k ? 'z' : 'y', g, d);
				}
			}
		}
	ASSERT_EQ(0, gps_free(self->fd, &y));
	ASSERT_EQ(0, gps_free(fd2, &z));
	ASSERT_EQ(0, close(fd2));
}

/*
 * node_reserve_bytes above what any node has: a store that needs a twin
 * is refused, its writer gets SIGBUS and no task is OOM-killed; the store
 * made before it is published; the reserve back, the same store works.
 */
TEST_F(interference, twin_refused_below_reserve)
{
	long long ooms = vmstat("oom_kill"), twins;
	volatile unsigned char *p;
	unsigned char got = 0;
	int status;

	if (self->nr < 2)
		SKIP(return, "needs two devices: no twins with one copy");
	ASSERT_LE(0, ooms);
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 4096));
	gps_fixture_alloc(_metadata, gps_fx(self), GP, GP, 1);
	p = self->b.view[0];
	p[10] = 5;
	twins = gps_knob("twin_pages");
	ASSERT_EQ(0, gps_set_knob("node_reserve_bytes", 1LL << 60));
	status = gps_child_store(self->fd, &self->b, 0, 4096 + 10, 6);
	ASSERT_TRUE(gps_killed_by(status, SIGBUS)) {
		TH_LOG("child status 0x%x", status);
	}
	ASSERT_EQ(twins, gps_knob("twin_pages"));
	ASSERT_EQ(0, gps_set_knob("node_reserve_bytes",
				  gps_knob_saved(&self->knobs,
						 "node_reserve_bytes")));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 10, &got, 1));
	ASSERT_EQ(5, got);
	p[4096 + 10] = 6;
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, 4096 + 10, &got, 1));
	ASSERT_EQ(6, got);
	ASSERT_EQ(ooms, vmstat("oom_kill"));
}

/*
 * The same reserve, for the pages a write fault captures along: with
 * small pages 0 and 1 twinned and a window of four, a store to page 0
 * through the host view captures page 1 alone (pages 2 and 3 would need
 * twins), and every store is published once the reserve is back.
 */
TEST_F(interference, capture_refused_below_reserve)
{
	long long ooms = vmstat("oom_kill"), twins, captured;
	volatile unsigned char *p, *h;
	int node0, d;
	unsigned char got[4];

	if (self->nr < 2)
		SKIP(return, "needs two devices: no capture with one copy");
	node0 = gps_node_of(self->fd, 0);
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 2 * 4096));
	gps_fixture_alloc(_metadata, gps_fx(self), GP, GP, 1);
	p = self->b.view[0];
	h = gps_map(self->fd, &self->b, self->nr);	/* the host view */
	ASSERT_NE(NULL, h);
	/* Page 0 alone (narrow), then page 1, which widens the replica. */
	p[0] = 1;
	p[4096] = 2;
	twins = gps_knob("twin_pages");
	captured = gps_stat(node0, "pages_captured");
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 4 * 4096));
	ASSERT_EQ(0, gps_set_knob("node_reserve_bytes", 1LL << 60));
	h[1] = 3;
	ASSERT_EQ(twins, gps_knob("twin_pages"));
	ASSERT_EQ(captured + 1, gps_stat(node0, "pages_captured"));
	ASSERT_EQ(0, gps_set_knob("node_reserve_bytes",
				  gps_knob_saved(&self->knobs,
						 "node_reserve_bytes")));
	/* Page 2 was not captured: its store faults and gets its twin. */
	h[2 * 4096] = 4;
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < self->nr; d++) {
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 0, got, 2));
		ASSERT_EQ(1, got[0]);
		ASSERT_EQ(3, got[1]);
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 4096, got, 1));
		ASSERT_EQ(2, got[0]);
		ASSERT_EQ(0, gps_read(self->fd, &self->b, d, 2 * 4096, got,
				      1));
		ASSERT_EQ(4, got[0]);
	}
	ASSERT_EQ(ooms, vmstat("oom_kill"));
}

TEST_HARNESS_MAIN
