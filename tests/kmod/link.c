// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the link model (link_bandwidth, link_latency_ns).  A fence
 * takes at least its bytes / bandwidth and pushes exactly its bytes; the
 * latency is paid by a fence that pushed, not by an empty one; out of
 * range values are refused.  The devices' links carry a release's pushes
 * at the same time: a fence of several devices costs the slowest link
 * and one link latency, not their sum.  A system freeze does not wait
 * for a slow link, nor for an io_uring fence sleeping it out.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "gps_test.h"
#include "t_ring.h"

#define PG	GPS_PAGE_64K
#define LEN	(1 << 20)
#define PM_DELAY	"/sys/module/suspend/parameters/pm_test_delay"
#define BW	2500000		/* bytes/s: 1 MiB takes 0.42 s */

FIXTURE(link) {
	struct gps_fixture;
};

FIXTURE_SETUP(link)
{
	static const char *const knobs[] = {
		"harvest_interval_us", "link_bandwidth", "link_latency_ns",
		NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	/* device d writes its own MiB; everybody subscribes to all */
	gps_fixture_alloc(_metadata, gps_fx(self), self->nr * LEN, PG,
			  self->nr);
}

FIXTURE_TEARDOWN(link)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static double fence_time(int fd, struct gps_buf *b, size_t len, int val,
			 struct gps_fence_args *f)
{
	struct timespec t0, t1;

	memset(b->view[0], val, len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gps_fence(fd, 0, f))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

/* The link model: a fence takes at least bytes / bandwidth; exact bytes. */
TEST_F(link, link_model_bandwidth)
{
	size_t len = 4 << 20;
	struct timespec t0, t1;
	struct gps_fence_args f;
	double slow, fast;
	struct gps_buf b;

	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, len, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 0, PG));
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, len, GPS_ADVISE_SUBSCRIBE, 1,
				NULL));
	ASSERT_NE(NULL, gps_map(self->fd, &b, 0));

	/*
	 * Lower bounds are exact; the comparisons with the unthrottled run
	 * leave room for a loaded machine.
	 */
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 10000000));
	slow = fence_time(self->fd, &b, len, 1, &f);
	ASSERT_EQ(len, f.bytes_pushed);
	ASSERT_GE(slow, (double)len / 10000000);

	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 0));
	fast = fence_time(self->fd, &b, len, 2, &f);
	ASSERT_EQ(len, f.bytes_pushed);
	ASSERT_LT(fast, slow);

	/* Latency: paid by a fence that pushed, not by an empty one. */
	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 500000000));
	ASSERT_GE(fence_time(self->fd, &b, 4096, 3, &f), 0.5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(0, f.bytes_pushed);
	ASSERT_LT(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
		  0.5);
	/* Out of range values are refused. */
	ASSERT_EQ(-EINVAL, gps_set_knob("link_bandwidth", 999));
	ASSERT_EQ(-EINVAL, gps_set_knob("link_latency_ns", 2000000000LL));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

static double mask_fence_time(int fd, uint64_t mask, struct gps_fence_args *f)
{
	struct timespec t0, t1;

	memset(f, 0, sizeof(*f));
	f->flags = GPS_FENCE_MASK;
	f->device_mask = mask;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ioctl(fd, GPS_IOC_FENCE, f))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static void write_own(struct gps_buf *b, int nr, int val)
{
	int d;

	for (d = 0; d < nr; d++)
		memset((char *)b->view[d] + (size_t)d * LEN, val + d, LEN);
}

/* Every device pushed as much: the fence waits for one link's time. */
TEST_F(link, fence_of_several_waits_for_slowest_link)
{
	uint64_t all = gps_all_mask(self->nr);
	double one = (double)LEN * (self->nr - 1) / BW, t;
	struct gps_fence_args f;

	ASSERT_EQ(0, gps_set_knob("link_bandwidth", BW));
	write_own(&self->b, self->nr, 1);
	t = mask_fence_time(self->fd, all, &f);
	ASSERT_EQ((uint64_t)LEN * self->nr * (self->nr - 1), f.bytes_pushed);
	ASSERT_GE(t, one);
	/* the sum would be nr times as long */
	ASSERT_LT(t, one * (self->nr + 1) / 2.0) {
		TH_LOG("fence took %.3f s, one link %.3f s", t, one);
	}
}

/* The link latency is paid once per fence, not once per device. */
TEST_F(link, fence_of_several_pays_latency_once)
{
	uint64_t all = gps_all_mask(self->nr);
	struct gps_fence_args f;
	double t;

	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 400000000));
	write_own(&self->b, self->nr, 5);
	t = mask_fence_time(self->fd, all, &f);
	ASSERT_EQ((uint64_t)LEN * self->nr * (self->nr - 1), f.bytes_pushed);
	ASSERT_GE(t, 0.4);
	ASSERT_LT(t, 0.4 * 1.75) {
		TH_LOG("fence took %.3f s for %d devices", t, self->nr);
	}
}

#define FREEZE_BW	1000	/* bytes/s: 64 KiB keep a link busy 65 s */

/* Write @val to /sys/power/@file: 0 or -errno. */
static int power_write(const char *file, const char *val)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s%s", file[0] == '/' ? "" :
		 "/sys/power/", file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

/* /sys/power/@file's value (the bracketed one of a list) into @buf. */
static int power_read(const char *file, char *buf, size_t len)
{
	char path[128], raw[256], *b, *e;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s%s", file[0] == '/' ? "" :
		 "/sys/power/", file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, raw, sizeof(raw) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	raw[n] = 0;
	b = strchr(raw, '[');
	e = b ? strchr(b, ']') : NULL;
	if (b && e) {
		*e = 0;
		b++;
	} else {
		b = raw;
		b[strcspn(b, "\n")] = 0;
	}
	snprintf(buf, len, "%s", b);
	return 0;
}

/* 'D' once @pid sleeps in the kernel (killably), at most 10 s. */
static char sleep_state(pid_t pid)
{
	char path[64], buf[256], st = 0, *p;
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (i = 0; i < 10000 && st != 'D'; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 0;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strrchr(buf, ')');
		st = p && p[1] ? p[2] : 0;
		if (st != 'D')
			usleep(1000);
	}
	return st;
}

/*
 * In a child: its own /dev/gps and a GPS page with every view mapped,
 * @val written on device 0; the file (exits 2 or 3 on failure).
 */
static int child_writes_page(struct gps_buf *b, int val)
{
	int fd = open(GPS_DEV, O_RDWR), d, nr;

	nr = fd < 0 ? 0 : gps_nr_devices(fd);
	if (nr < 2 || gps_alloc(fd, b, PG, GPS_MEM_GPS, 0, 0, PG))
		_exit(2);
	for (d = 0; d < nr; d++)
		if (!gps_map(fd, b, d))
			_exit(3);
	memset(b->view[0], val, PG);
	return fd;
}

/* A process of its own that pushes 64 KiB from device 0 and fences. */
static void fence_slowly(void)
{
	struct gps_buf b;
	int fd = child_writes_page(&b, 7);

	_exit(gps_fence(fd, 0, NULL) ? 4 : 0);
}

/*
 * Freeze every task of the machine and thaw it again, in the freezer's
 * test mode (pm_test "freezer"), with pm_freeze_timeout 3 s: 0, or the
 * freeze's -errno (-EBUSY: a task did not freeze in time); *@secs: how
 * long it took.  pm_test, the timeout and pm_test_delay are restored.
 */
static int pm_test_freeze(struct __test_metadata *_metadata, double *secs)
{
	char test[64], tmo[32], delay[32];
	struct timespec t0, t1;
	int ret;

	ASSERT_EQ(0, power_read("pm_test", test, sizeof(test))) {
		*secs = 0;
		return -ENOENT;
	}
	ASSERT_EQ(0, power_read("pm_freeze_timeout", tmo, sizeof(tmo))) {
		*secs = 0;
		return -ENOENT;
	}
	if (power_read(PM_DELAY, delay, sizeof(delay)))
		delay[0] = 0;
	EXPECT_EQ(0, power_write("pm_freeze_timeout", "3000"));
	if (delay[0])
		power_write(PM_DELAY, "0");
	EXPECT_EQ(0, power_write("pm_test", "freezer"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = power_write("state", "freeze");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	EXPECT_EQ(0, power_write("pm_test", test));
	EXPECT_EQ(0, power_write("pm_freeze_timeout", tmo));
	if (delay[0])
		EXPECT_EQ(0, power_write(PM_DELAY, delay));
	return ret;
}

/* Skip unless in a gps-vm guest with the freezer's test mode. */
#define FREEZE_SKIP_UNLESS_ABLE()					\
	do {								\
		char _b[64];						\
									\
		if (!getenv("GPS_VM_SERIES"))				\
			SKIP(return, "freezes every task of the machine: " \
				     "only in gps-vm's guests "		\
				     "(GPS_VM_SERIES)");		\
		if (power_read("pm_test", _b, sizeof(_b)))		\
			SKIP(return, "no /sys/power/pm_test "		\
				     "(CONFIG_PM_DEBUG)");		\
	} while (0)

/* Wait up to 5 s for @pid: its wait status, or -1 (then it is killed). */
static int reap_within_5s(pid_t pid)
{
	int st, i;

	for (i = 0; i < 5000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/*
 * A system freeze (suspend, hibernation) does not wait for the link: the
 * push thread freezes where it sleeps out a slow link and sleeps on after
 * the thaw (no new round); a fence sleeping out the link (it holds locks:
 * it must not freeze there) stops waiting, returns 0 and freezes on its
 * way out.  The freezer's test mode freezes every
 * task and thaws it again; a task that will not freeze within
 * pm_freeze_timeout fails the freeze (-EBUSY).  It freezes the whole
 * machine: run only in gps-vm's guests.
 */
TEST_F_TIMEOUT(link, a_freeze_does_not_wait_for_the_link, 120)
{
	int node = gps_node_of(self->fd, 0), ret, st;
	long long p0, r0, r1;
	double t;
	pid_t pid;

	FREEZE_SKIP_UNLESS_ABLE();
	ASSERT_LE(0, node);
	p0 = gps_stat(node, "bytes_pushed");
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", FREEZE_BW));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 1000));
	/* device 0's push thread sends it, then sleeps out its link */
	memset(self->b.view[0], 3, PG);
	for (ret = 0; ret < 20000 && gps_stat(node, "bytes_pushed") <= p0;
	     ret++)
		usleep(1000);
	ASSERT_GT(gps_stat(node, "bytes_pushed"), p0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		fence_slowly();
	ASSERT_EQ('D', sleep_state(pid));
	usleep(50000);	/* the thread's round over: it sleeps too */
	r0 = gps_stat(node, "thread_rounds");

	ret = pm_test_freeze(_metadata, &t);
	/* the fence's wait was cut short, with success; the thread's not */
	st = reap_within_5s(pid);
	r1 = gps_stat(node, "thread_rounds");
	ASSERT_EQ(0, ret) {
		TH_LOG("the freeze failed after %.1f s (%s): a task "
		       "sleeping out the link did not freeze", t,
		       strerror(-ret));
	}
	TH_LOG("froze and thawed in %.2f s", t);
	ASSERT_NE(-1, st);
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	ASSERT_EQ(r0, r1);
}

/* Pushes 64 KiB from device 0 and fences it through an io_uring. */
static void ring_fence_slowly(void)
{
	struct gps_buf b;
	int fd = child_writes_page(&b, 9), res;
	struct ring r;

	if (ring_init(&r))
		_exit(5);
	res = ring_fence(&r, fd, 0, 0, 0);
	/* the wait for its completion is interrupted by the freeze */
	_exit(!res || res == -EINTR ? 0 : 4);
}

/*
 * The same for an io_uring fence, which runs on a kworker: that never
 * freezes, but it holds device 0's remote_lock while it sleeps out the
 * link, and an ioctl fence of device 0 waits for that lock killably,
 * which no freeze ends.  The kworker stops waiting while a freeze is
 * under way; both fences return and the freeze succeeds.
 */
TEST_F_TIMEOUT(link, a_freeze_does_not_wait_for_an_async_fence, 120)
{
	int node = gps_node_of(self->fd, 0), ret, st1, st2, i;
	pid_t ring_pid, pid;
	long long p0;
	double t;

	FREEZE_SKIP_UNLESS_ABLE();
	ASSERT_LE(0, node);
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", FREEZE_BW));
	p0 = gps_stat(node, "bytes_pushed");
	ring_pid = fork();
	ASSERT_LE(0, ring_pid);
	if (!ring_pid)
		ring_fence_slowly();
	/* the kworker pushed (harvest_interval_us is 0): it sleeps now */
	for (i = 0; i < 20000 && gps_stat(node, "bytes_pushed") <= p0; i++)
		usleep(1000);
	ASSERT_GT(gps_stat(node, "bytes_pushed"), p0);
	usleep(50000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		fence_slowly();
	ASSERT_EQ('D', sleep_state(pid));

	ret = pm_test_freeze(_metadata, &t);
	st1 = reap_within_5s(ring_pid);
	st2 = reap_within_5s(pid);
	ASSERT_EQ(0, ret) {
		TH_LOG("the freeze failed after %.1f s (%s): a fence waiting "
		       "for an io_uring fence's locks did not freeze", t,
		       strerror(-ret));
	}
	TH_LOG("froze and thawed in %.2f s", t);
	ASSERT_NE(-1, st1);
	ASSERT_TRUE(WIFEXITED(st1) && !WEXITSTATUS(st1));
	ASSERT_NE(-1, st2);
	ASSERT_TRUE(WIFEXITED(st2) && !WEXITSTATUS(st2));
}

TEST_HARNESS_MAIN
