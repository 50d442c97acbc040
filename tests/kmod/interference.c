// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what one user of /dev/gps can do to another, bounded
 * (Documentation/security.rst).  A GPS_IOC_READ that a delay point makes
 * last 26 s dies at once of SIGKILL.  The delay-point tests run only with
 * a module built with CONFIG_GPS_DEBUG (the debug kernel's guests); the
 * others everywhere.  Delay settings and knobs are restored.
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

TEST_HARNESS_MAIN
