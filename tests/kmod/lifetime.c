// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what allocations cost and that it all comes back.  While
 * allocated, a GPS allocation holds one replica page per small page per
 * subscriber and a conventional one a single copy; the driver's counters
 * (/sys/kernel/gps/nr_allocs, replica_pages, twin_pages) return to their
 * starting values after GPS_IOC_FREE, after close with allocations left
 * (at once, or at the last munmap when a view keeps the file open), after
 * SIGKILL of a process that is writing or fencing, and after closing an
 * open with many allocations.  fork() does not hand views to the child.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define SZ	(256 * 1024)	/* bytes per allocation */
#define SMALL	4096

FIXTURE(lifetime) {
	struct gps_fixture;
};

FIXTURE_SETUP(lifetime)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, gps_knobs_common))
		return;
	ASSERT_LE(0, self->start.nr_allocs);
	ASSERT_LE(0, self->start.replica_pages);
	ASSERT_LE(0, self->start.twin_pages);
}

FIXTURE_TEARDOWN(lifetime)
{
	struct gps_usage u;

	if (self->fd < 0)
		return;
	gps_fixture_teardown(_metadata, gps_fx(self));
	/* Whatever a test did, nothing of it is left. */
	u = gps_usage_wait(self->start, 2000);
	EXPECT_TRUE(gps_usage_eq(self->start, u));
}

/* Counters back at the start: within @ms, the last values logged. */
#define ASSERT_USAGE_BACK(ms)						\
	do {								\
		struct gps_usage _u = gps_usage_wait(self->start, ms);	\
									\
		ASSERT_TRUE(gps_usage_eq(self->start, _u)) {		\
			TH_LOG("allocs %lld/%lld replica %lld/%lld "	\
			       "twins %lld/%lld", _u.nr_allocs,		\
			       self->start.nr_allocs,			\
			       _u.replica_pages,			\
			       self->start.replica_pages,		\
			       _u.twin_pages, self->start.twin_pages);	\
		}							\
	} while (0)

/* Write one byte in every small page of every mapped view. */
static void touch_views(struct gps_buf *b, int nr, unsigned char v)
{
	size_t i;
	int d;

	for (d = 0; d < nr; d++) {
		volatile unsigned char *p = b->view[d];

		if (!p)
			continue;
		for (i = d; i < b->args.alloc_size; i += SMALL)
			p[i] = v;
	}
}

/* Replica pages: nr_devs * S / 4096 for GPS, S / 4096 conventional. */
TEST_F(lifetime, replica_pages_while_allocated_then_free)
{
	struct gps_device_args before[GPS_MAX_DEVICES], dev;
	long long small = SZ / SMALL;
	struct gps_buf g, c;
	struct gps_usage u;
	int d;

	/* Push thread off: twins stay until a fence harvests them. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	for (d = 0; d < self->nr; d++) {
		before[d] = (struct gps_device_args){ .device = d };
		ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_DEVICE_INFO, &before[d]));
	}
	ASSERT_EQ(0, gps_alloc(self->fd, &g, SZ, GPS_MEM_GPS, 0, 0, 0));
	u = gps_usage();
	ASSERT_EQ(self->start.nr_allocs + 1, u.nr_allocs);
	ASSERT_EQ(self->start.replica_pages + self->nr * small,
		  u.replica_pages);
	for (d = 0; d < self->nr; d++) {
		dev = (struct gps_device_args){ .device = d };
		ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_DEVICE_INFO, &dev));
		ASSERT_EQ(before[d].replica_pages + small, dev.replica_pages);
	}

	ASSERT_EQ(0, gps_alloc(self->fd, &c, SZ, GPS_MEM_CONVENTIONAL, 0,
			       self->nr - 1, 0));
	u = gps_usage();
	ASSERT_EQ(self->start.nr_allocs + 2, u.nr_allocs);
	ASSERT_EQ(self->start.replica_pages + (self->nr + 1) * small,
		  u.replica_pages);

	/* Writes through every view: a twin per written small page. */
	for (d = 0; d < self->nr; d++) {
		ASSERT_NE(NULL, gps_map(self->fd, &g, d));
		ASSERT_NE(NULL, gps_map(self->fd, &c, d));
	}
	touch_views(&g, self->nr, 0x5a);
	touch_views(&c, self->nr, 0xa5);
	u = gps_usage();
	/* Every view wrote every small page; one copy: no capture. */
	ASSERT_EQ(self->start.twin_pages + (self->nr > 1 ? self->nr * small : 0),
		  u.twin_pages);

	ASSERT_EQ(0, gps_free(self->fd, &g));
	ASSERT_EQ(self->start.nr_allocs + 1, gps_knob("nr_allocs"));
	ASSERT_EQ(self->start.replica_pages + small,
		  gps_knob("replica_pages"));
	ASSERT_EQ(self->start.twin_pages, gps_knob("twin_pages"));
	ASSERT_EQ(0, gps_free(self->fd, &c));
	ASSERT_USAGE_BACK(0);
}

/* Close with allocations left and views unmapped first: all freed. */
TEST_F(lifetime, close_after_munmap_frees_all)
{
	int fd = open(GPS_DEV, O_RDWR), i;
	struct gps_buf b[3];

	ASSERT_LE(0, fd);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, gps_alloc(fd, &b[i], SZ, i == 2 ?
				       GPS_MEM_CONVENTIONAL : GPS_MEM_GPS,
				       i == 1 ? GPS_ALLOC_MANUAL : 0, 0, 0));
		ASSERT_NE(NULL, gps_map(fd, &b[i], 0));
		touch_views(&b[i], 1, i + 1);
	}
	ASSERT_EQ(self->start.nr_allocs + 3, gps_knob("nr_allocs"));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, munmap(b[i].view[0], SZ));
	ASSERT_EQ(0, close(fd));
	ASSERT_USAGE_BACK(0);
}

/* A mapped view keeps the file open: freed at the last munmap. */
TEST_F(lifetime, close_with_views_mapped)
{
	int fd = open(GPS_DEV, O_RDWR), d;
	struct gps_buf b, unmapped;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gps_alloc(fd, &b, SZ, GPS_MEM_GPS, 0, 0, 0));
	ASSERT_EQ(0, gps_alloc(fd, &unmapped, SZ, GPS_MEM_GPS, 0, 0, 0));
	for (d = 0; d < self->nr; d++)
		ASSERT_NE(NULL, gps_map(fd, &b, d));
	touch_views(&b, self->nr, 7);
	ASSERT_EQ(0, close(fd));

	/* The views still work and hold what was written. */
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(7, ((volatile unsigned char *)b.view[d])[d]);
	ASSERT_EQ(self->start.nr_allocs + 2, gps_knob("nr_allocs"));
	ASSERT_EQ(self->start.replica_pages + 2 * self->nr * (SZ / SMALL),
		  gps_knob("replica_pages"));

	for (d = 0; d < self->nr - 1; d++)
		ASSERT_EQ(0, munmap(b.view[d], SZ));
	ASSERT_EQ(self->start.nr_allocs + 2, gps_knob("nr_allocs"));
	ASSERT_EQ(0, munmap(b.view[self->nr - 1], SZ));
	ASSERT_USAGE_BACK(0);
}

/*
 * Fork a child that allocates, maps every view, writes, tells the
 * parent through @pfd, then loops writing (and fencing if @fence).
 */
static pid_t spawn_writer(int nr, int fence, int *pfd)
{
	int pipefd[2];
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid) {
		close(pipefd[1]);
		*pfd = pipefd[0];
		return pid;
	}
	{
		int fd = open(GPS_DEV, O_RDWR), d;
		struct gps_buf b;
		unsigned char v = 0;

		close(pipefd[0]);
		if (fd < 0 || gps_alloc(fd, &b, SZ, GPS_MEM_GPS, 0, 0, 0))
			_exit(10);
		for (d = 0; d < nr; d++)
			if (!gps_map(fd, &b, d))
				_exit(11);
		touch_views(&b, nr, ++v);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(12);
		for (;;) {
			touch_views(&b, nr, ++v);
			if (fence)
				gps_fence(fd, GPS_FENCE_ALL, NULL);
		}
	}
}

static void kill_and_reap(struct __test_metadata *_metadata, pid_t pid,
			  int pfd, long long min_twins)
{
	char c;

	ASSERT_EQ(1, read(pfd, &c, 1));
	close(pfd);
	usleep(100 * 1000);	/* let it run: faults, harvests, pushes */
	ASSERT_LE(min_twins, gps_knob("twin_pages"));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_TRUE(gps_killed_by(gps_wait_child(pid), SIGKILL));
}

/* SIGKILL of a process writing into its views: everything freed. */
TEST_F(lifetime, sigkill_while_writing)
{
	int pfd;
	pid_t pid;

	/* Push thread off: twins are certainly held at the kill. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	pid = spawn_writer(self->nr, 0, &pfd);
	ASSERT_LT(0, pid);
	/* With two devices or more, it holds a twin per small page. */
	kill_and_reap(_metadata, pid, pfd, self->start.twin_pages +
		      (self->nr > 1 ? self->nr * SZ / SMALL : 0));
	ASSERT_USAGE_BACK(2000);
}

/* SIGKILL of a process in a loop of stores and fences: all freed. */
TEST_F(lifetime, sigkill_while_fencing)
{
	int pfd;
	pid_t pid;

	pid = spawn_writer(self->nr, 1, &pfd);
	ASSERT_LT(0, pid);
	kill_and_reap(_metadata, pid, pfd, self->start.twin_pages);
	ASSERT_USAGE_BACK(2000);
}

/* 64 allocations of every kind in one open, then close: all freed. */
TEST_F(lifetime, many_allocs_then_close)
{
	int fd = open(GPS_DEV, O_RDWR), i;
	static struct gps_buf b[64];
	long long pages = 0;

	ASSERT_LE(0, fd);
	for (i = 0; i < 64; i++) {
		int kind = i % 3 == 2 ? GPS_MEM_CONVENTIONAL : GPS_MEM_GPS;
		int manual = i % 3 == 1 ? GPS_ALLOC_MANUAL : 0;

		ASSERT_EQ(0, gps_alloc(fd, &b[i], 2 * SMALL, kind, manual,
				       i % self->nr, GPS_PAGE_4K));
		pages += 2 * (kind == GPS_MEM_GPS && !manual ? self->nr : 1);
		if (i % 4 == 0) {	/* some written, left mapped... */
			ASSERT_NE(NULL, gps_map(fd, &b[i], 0));
			touch_views(&b[i], 1, i);
		}
		if (i % 8 == 0) {	/* ...some unmapped again */
			ASSERT_EQ(0, munmap(b[i].view[0], 2 * SMALL));
			b[i].view[0] = NULL;
		}
	}
	ASSERT_EQ(self->start.nr_allocs + 64, gps_knob("nr_allocs"));
	ASSERT_EQ(self->start.replica_pages + pages,
		  gps_knob("replica_pages"));
	ASSERT_EQ(0, close(fd));
	/* Views still mapped hold the file: nothing freed yet. */
	ASSERT_EQ(self->start.nr_allocs + 64, gps_knob("nr_allocs"));
	for (i = 0; i < 64; i++)
		if (b[i].view[0])
			ASSERT_EQ(0, munmap(b[i].view[0], 2 * SMALL));
	ASSERT_USAGE_BACK(0);
}

/* fork(): the child gets no views (VM_DONTCOPY), touching one: SIGSEGV. */
TEST_F(lifetime, fork_does_not_inherit_views)
{
	volatile unsigned char *p;
	struct gps_buf b;
	int write;

	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, 0));
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	p[0] = 3;
	for (write = 0; write < 2; write++) {
		int status = gps_child_touch(p, write);

		ASSERT_TRUE(gps_killed_by(status, SIGSEGV)) {
			TH_LOG("write=%d: child status 0x%x", write, status);
		}
	}
	ASSERT_EQ(3, p[0]);	/* the parent's view is untouched */
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

TEST_HARNESS_MAIN
