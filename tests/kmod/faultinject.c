// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the failure paths of gps.ko's allocations, made to run by
 * its fault-injection points (a module built with CONFIG_GPS_DEBUG on a
 * kernel with CONFIG_FAULT_INJECTION_DEBUG_FS: the debug kernel;
 * elsewhere every test is skipped).  Each test turns one point on
 * through /sys/kernel/debug/gps/fail_<point>/ (probability 100, with
 * times and space saying which calls fail) and shows the clear error:
 * a replica that cannot be had leaves its device unsubscribed and
 * counted (subscribe_failed), or fails GPS_IOC_ALLOC with ENOMEM when a
 * page gets no copy at all; a twin that cannot be had is tried four times
 * by the write fault, which then fails with SIGBUS (a system call storing
 * into a view meanwhile gets EFAULT); a queue reshape fails the sysfs
 * write with ENOMEM and the old queues stay; an io_uring fence completes
 * with -ENOMEM.  Then that every replica still holds what was stored,
 * that the stores made around the failure are published, and that
 * nr_allocs, replica_pages and twin_pages come back to where they started
 * (no leak; the debug kernel's run also scans with kmemleak).  The
 * points' settings and the knobs are restored.
 */

#include "kselftest_harness.h"
#include "gps_test.h"
#include "t_ring.h"

#define FI_DIR		GPS_DEBUGFS
#define GP		GPS_PAGE_64K
#define NR_SMALL	(GP / 4096)	/* small pages per GPS page */

static const char * const fi_points[] = {
	"fail_replica_alloc", "fail_twin_alloc", "fail_capture_twin",
	"fail_queue_reshape", "fail_async_fence",
};

static const char * const fi_attrs[] = {
	"probability", "interval", "times", "space", "verbose",
};

#define NR_POINTS	(sizeof(fi_points) / sizeof(fi_points[0]))
#define NR_ATTRS	(sizeof(fi_attrs) / sizeof(fi_attrs[0]))

static long long fi_get(const char *point, const char *attr)
{
	char path[256], buf[64];
	long long v = -2;
	FILE *f;

	snprintf(path, sizeof(path), FI_DIR "%s/%s", point, attr);
	f = fopen(path, "r");
	if (!f)
		return -2;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

static int fi_set(const char *point, const char *attr, long long v)
{
	char path[256];

	snprintf(path, sizeof(path), FI_DIR "%s/%s", point, attr);
	return gps_write_num(path, v);
}

/*
 * Make @point fail: its first @space - 1 calls succeed, then the next
 * @times calls fail (-1: all of them).  One line in the kernel log per
 * failure (verbose 1: no stack dump, which the runner would take for a
 * report).
 */
static int fi_arm(const char *point, long long times, long long space)
{
	return fi_set(point, "probability", 0) ||
	       fi_set(point, "verbose", 1) ||
	       fi_set(point, "interval", 1) ||
	       fi_set(point, "space", space) ||
	       fi_set(point, "times", times) ||
	       fi_set(point, "probability", 100) ? -1 : 0;
}

static int fi_disarm(const char *point)
{
	return fi_set(point, "probability", 0);
}

FIXTURE(fi) {
	int fd;
	int nr;
	long long saved[NR_POINTS][NR_ATTRS];
	struct gps_knob_save knobs;
	struct gps_usage start;
	unsigned char *pattern;		/* SZ bytes */
};

#define SZ	(4 * GP)

FIXTURE_SETUP(fi)
{
	static const char * const knobs[] = {
		"harvest_interval_us", "queue_watermark", "queue_capacity",
		"block_size", "capture_bytes",
	};
	unsigned int i, j;

	self->fd = open(GPS_DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, "no " GPS_DEV);
	if (access(FI_DIR "fail_replica_alloc", F_OK)) {
		close(self->fd);
		self->fd = -1;
		SKIP(return, "no " FI_DIR "fail_*: gps.ko without CONFIG_GPS_DEBUG or a kernel without CONFIG_FAULT_INJECTION_DEBUG_FS");
	}
	self->nr = gps_nr_devices(self->fd);
	ASSERT_GT(self->nr, 0);
	for (i = 0; i < NR_POINTS; i++) {
		for (j = 0; j < NR_ATTRS; j++) {
			self->saved[i][j] = fi_get(fi_points[i], fi_attrs[j]);
			ASSERT_NE(-2, self->saved[i][j]);
		}
		ASSERT_EQ(0, fi_disarm(fi_points[i]));
	}
	/* Restored in reverse: capacity, then the watermark it resets. */
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		ASSERT_EQ(0, gps_knob_save(&self->knobs, knobs[i]));
	/* No proactive pushes: only fences publish. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	self->pattern = malloc(SZ);
	ASSERT_NE(NULL, self->pattern);
	for (i = 0; i < SZ; i++)
		self->pattern[i] = i * 7 + (i >> 12) + 1;
	self->start = gps_usage();
}

FIXTURE_TEARDOWN(fi)
{
	unsigned int i, j;

	if (self->fd < 0)
		return;
	/* probability last: it is what turns a point on. */
	for (i = 0; i < NR_POINTS; i++) {
		fi_disarm(fi_points[i]);
		for (j = NR_ATTRS; j-- > 0;)
			fi_set(fi_points[i], fi_attrs[j], self->saved[i][j]);
	}
	gps_knob_restore_saved(&self->knobs);
	free(self->pattern);
	EXPECT_EQ(0, close(self->fd));
}

/* Back where the fixture started: nothing leaked. */
#define ASSERT_NO_LEAK() do {						\
	struct gps_usage _u = gps_usage_wait(self->start, 2000);	\
	ASSERT_EQ(self->start.nr_allocs, _u.nr_allocs);			\
	ASSERT_EQ(self->start.replica_pages, _u.replica_pages);		\
	ASSERT_EQ(self->start.twin_pages, _u.twin_pages);		\
} while (0)

/* Every device's replica (or view target) holds the pattern. */
#define ASSERT_INTACT(b, len)						\
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, (b), self->nr, 0,	\
					  self->pattern, (len)))

/*
 * Subscribing while replicas cannot be had: every page stays with its
 * one subscriber, counted in pages_failed and subscribe_failed, the data
 * intact; a replica that fails at its third small page is unwound the
 * same way; once the point is off, the same advice subscribes.
 */
TEST_F(fi, replica_alloc_subscribe)
{
	int node1 = self->nr > 1 ? gps_node_of(self->fd, 1) : -1;
	struct gps_advise_args a;
	struct gps_usage u;
	long long failed;
	struct gps_buf b;
	int g;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 0, GP));
	ASSERT_EQ(0, gps_write(self->fd, &b, 0, self->pattern, SZ));
	ASSERT_NE(NULL, gps_map(self->fd, &b, 1));
	u = gps_usage();
	ASSERT_EQ(self->start.replica_pages + 4 * NR_SMALL, u.replica_pages);
	failed = gps_stat(node1, "subscribe_failed");

	/* Every replica fails at its first small page. */
	ASSERT_EQ(0, fi_arm("fail_replica_alloc", -1, 0));
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, SZ, GPS_ADVISE_SUBSCRIBE, 1,
				&a));
	ASSERT_EQ(0, fi_disarm("fail_replica_alloc"));
	ASSERT_EQ(0, a.pages_changed);
	ASSERT_EQ(4, a.pages_failed);
	ASSERT_EQ(failed + 4, gps_stat(node1, "subscribe_failed"));
	for (g = 0; g < 4; g++)
		ASSERT_EQ(1, gps_subs(self->fd, &b, g));
	ASSERT_TRUE(gps_usage_eq(u, gps_usage()));
	ASSERT_INTACT(&b, SZ);

	/* Two small pages, then one failure: the first page's replica. */
	ASSERT_EQ(0, fi_arm("fail_replica_alloc", 1, 3));
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, SZ, GPS_ADVISE_SUBSCRIBE, 1,
				&a));
	ASSERT_EQ(0, fi_get("fail_replica_alloc", "times"));
	ASSERT_EQ(0, fi_disarm("fail_replica_alloc"));
	ASSERT_EQ(3, a.pages_changed);
	ASSERT_EQ(1, a.pages_failed);
	ASSERT_EQ(failed + 5, gps_stat(node1, "subscribe_failed"));
	ASSERT_EQ(1, gps_subs(self->fd, &b, 0));
	for (g = 1; g < 4; g++)
		ASSERT_EQ(3, gps_subs(self->fd, &b, g));
	ASSERT_EQ(u.replica_pages + 3 * NR_SMALL, gps_knob("replica_pages"));
	ASSERT_INTACT(&b, SZ);

	/* The point off: the page left out subscribes. */
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, SZ, GPS_ADVISE_SUBSCRIBE, 1,
				&a));
	ASSERT_EQ(1, a.pages_changed);
	ASSERT_EQ(0, a.pages_failed);
	ASSERT_EQ(3, gps_subs(self->fd, &b, 0));
	ASSERT_INTACT(&b, SZ);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

/*
 * GPS_IOC_ALLOC while replicas cannot be had: a page with no copy
 * anywhere fails the call with ENOMEM and nothing stays allocated, even
 * with pages before it already populated; with the first copies made
 * and the others refused (two devices or more), the allocation exists
 * with one subscriber per page, the others counted in subscribe_failed,
 * and it works: a store through a non-subscriber's view is published.
 */
TEST_F(fi, replica_alloc_at_allocation)
{
	long long failed[GPS_MAX_DEVICES];
	volatile unsigned char *p;
	struct gps_buf b;
	int d, g;

	ASSERT_EQ(0, fi_arm("fail_replica_alloc", -1, 0));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_TRUE(gps_usage_eq(self->start, gps_usage()));
	/* Two pages and five small pages of the third, then nothing. */
	ASSERT_EQ(0, fi_arm("fail_replica_alloc", -1, 2 * NR_SMALL + 5 + 1));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, fi_disarm("fail_replica_alloc"));
	ASSERT_TRUE(gps_usage_eq(self->start, gps_usage()));
	if (self->nr < 2)
		return;

	for (d = 0; d < self->nr; d++)
		failed[d] = gps_stat(gps_node_of(self->fd, d),
				     "subscribe_failed");
	/* Every first copy (home 1), none of the others. */
	ASSERT_EQ(0, fi_arm("fail_replica_alloc", -1, 4 * NR_SMALL + 1));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 1, GP));
	ASSERT_EQ(0, fi_disarm("fail_replica_alloc"));
	for (g = 0; g < 4; g++)
		ASSERT_EQ(1ULL << 1, gps_subs(self->fd, &b, g));
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(failed[d] + (d == 1 ? 0 : 4),
			  gps_stat(gps_node_of(self->fd, d),
				   "subscribe_failed"));
	ASSERT_EQ(self->start.replica_pages + 4 * NR_SMALL,
		  gps_knob("replica_pages"));
	ASSERT_EQ(self->start.nr_allocs + 1, gps_knob("nr_allocs"));
	/* Device 0 writes into device 1's copy; everyone reads it. */
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	memcpy((void *)p, self->pattern, SZ);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_INTACT(&b, SZ);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

/*
 * A store whose twin cannot be had: the write fault tries four times,
 * 10 ms apart, and never returns VM_FAULT_OOM.  Three failures: the
 * fourth try gets the twin and the store is captured and published like
 * any other.  Four: the writer gets SIGBUS after exactly four tries, its
 * store not made and nothing else lost.  A system call that stores into
 * the view while no twin can be had fails with EFAULT and consumes
 * nothing.
 */
TEST_F(fi, twin_alloc_retries_then_sigbus)
{
	volatile unsigned char *p;
	struct gps_fence_args f;
	int fds[2], status;
	struct gps_buf b;
	char msg[8] = "gps-twin";

	if (self->nr < 2)
		SKIP(return, "needs two devices: no twins with one copy");
	/* One twin per write fault: no capture of the rest of a GPS page. */
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 4096));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_write(self->fd, &b, 0, self->pattern, SZ));
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(self->pattern[100], p[100]);	/* mapped read-only */

	ASSERT_EQ(0, fi_arm("fail_twin_alloc", 3, 0));
	p[100] = self->pattern[100] ^ 0xff;
	self->pattern[100] ^= 0xff;
	ASSERT_EQ(0, fi_get("fail_twin_alloc", "times"));
	ASSERT_EQ(self->start.twin_pages + 1, gps_knob("twin_pages"));

	/* Four failures of ten: SIGBUS, the byte as it was. */
	ASSERT_EQ(0, fi_arm("fail_twin_alloc", 10, 0));
	status = gps_child_store(self->fd, &b, 0, 4096 + 7,
				 self->pattern[4096 + 7] ^ 0xff);
	ASSERT_TRUE(gps_killed_by(status, SIGBUS)) {
		TH_LOG("child status 0x%x", status);
	}
	ASSERT_EQ(6, fi_get("fail_twin_alloc", "times"));
	ASSERT_EQ(0, fi_disarm("fail_twin_alloc"));
	ASSERT_EQ(self->start.twin_pages + 1, gps_knob("twin_pages"));

	/*
	 * read(2) into the view: EFAULT, the pipe keeps its bytes.  The
	 * kernel's copy retries a faulting access once, byte by byte, so
	 * the point fails every call here (up to 1000) and is then off.
	 */
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(sizeof(msg), write(fds[1], msg, sizeof(msg)));
	ASSERT_EQ(0, fi_arm("fail_twin_alloc", 1000, 0));
	ASSERT_EQ(-1, read(fds[0], (void *)(p + 2 * 4096), sizeof(msg)));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(0, fi_disarm("fail_twin_alloc"));
	ASSERT_GT(1000, fi_get("fail_twin_alloc", "times"));
	ASSERT_EQ(self->start.twin_pages + 1, gps_knob("twin_pages"));
	ASSERT_EQ(sizeof(msg), read(fds[0], (void *)(p + 2 * 4096),
				    sizeof(msg)));
	memcpy(self->pattern + 2 * 4096, msg, sizeof(msg));
	close(fds[0]);
	close(fds[1]);

	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(2, f.pages_harvested);
	ASSERT_INTACT(&b, SZ);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

/*
 * No twin for five pages a write fault would capture along: those five
 * are not captured; the first store to one of them faults and captures
 * the rest (the point is off by then).  The replica is new, so narrow:
 * its first store captures its own page alone and the second widens it,
 * so three write faults in all; every store is published, and the twins
 * are all freed by the fence.
 */
TEST_F(fi, capture_twin_fails_pages_fault_alone)
{
	long long wf, node0;
	struct gps_buf b;
	unsigned char *p;
	unsigned int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices: no capture with one copy");
	node0 = gps_node_of(self->fd, 0);
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 0));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, GP, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_write(self->fd, &b, 0, self->pattern, GP));
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, fi_arm("fail_capture_twin", 5, 0));
	wf = gps_stat(node0, "write_faults");
	for (i = 0; i < NR_SMALL; i++) {
		self->pattern[i * 4096 + 9] ^= 0x33;
		((volatile unsigned char *)p)[i * 4096 + 9] =
			self->pattern[i * 4096 + 9];
	}
	ASSERT_EQ(0, fi_get("fail_capture_twin", "times"));
	ASSERT_EQ(3, gps_stat(node0, "write_faults") - wf);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_INTACT(&b, GP);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

/*
 * Reshaping the queues while a new queue cannot be had: the write fails
 * with ENOMEM, for any of the three knobs, whether the first or a later
 * device's queue fails; the knobs and the queues stay as they were, and
 * a store pending meanwhile is published by the next fence.
 */
TEST_F(fi, queue_reshape_keeps_old_queues)
{
	long long cap = gps_knob("queue_capacity");
	long long wm = gps_knob("queue_watermark");
	long long bs = gps_knob("block_size");
	volatile unsigned char *p;
	struct gps_buf b;
	int d;

	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_write(self->fd, &b, 0, self->pattern, SZ));
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	p[5000] = self->pattern[5000] ^= 0x5a;	/* pending */

	ASSERT_EQ(0, fi_arm("fail_queue_reshape", -1, 0));
	ASSERT_EQ(-ENOMEM, gps_set_knob("queue_capacity", cap / 2));
	ASSERT_EQ(-ENOMEM, gps_set_knob("queue_watermark", wm / 2));
	ASSERT_EQ(-ENOMEM, gps_set_knob("block_size", bs * 2));
	if (self->nr > 1) {
		/* The first device's new queue made, the second's not. */
		ASSERT_EQ(0, fi_arm("fail_queue_reshape", 1, 2));
		ASSERT_EQ(-ENOMEM, gps_set_knob("queue_capacity", cap / 2));
		ASSERT_EQ(0, fi_get("fail_queue_reshape", "times"));
	}
	ASSERT_EQ(0, fi_disarm("fail_queue_reshape"));
	ASSERT_EQ(cap, gps_knob("queue_capacity"));
	ASSERT_EQ(wm, gps_knob("queue_watermark"));
	ASSERT_EQ(bs, gps_knob("block_size"));
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(cap, gps_stat(gps_node_of(self->fd, d),
					"queue_capacity"));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_INTACT(&b, SZ);

	/* The point off: the same write reshapes; stores go on. */
	ASSERT_EQ(0, gps_set_knob("queue_capacity", cap / 2));
	for (d = 0; d < self->nr; d++)
		ASSERT_EQ(cap / 2, gps_stat(gps_node_of(self->fd, d),
					    "queue_capacity"));
	p[9000] = self->pattern[9000] ^= 0xa5;
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_INTACT(&b, SZ);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

/*
 * An io_uring fence whose work item cannot be had completes with
 * -ENOMEM and fences nothing; the next one publishes the store.
 */
TEST_F(fi, async_fence_enomem)
{
	int node0 = gps_node_of(self->fd, 0);
	volatile unsigned char *p;
	long long fences;
	struct gps_buf b;
	struct ring r;
	unsigned char v;
	int ret;

	ret = ring_init(&r);
	if (ret)
		SKIP(return, "io_uring_setup: %s", strerror(-ret));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, SZ, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_write(self->fd, &b, 0, self->pattern, SZ));
	p = gps_map(self->fd, &b, 0);
	ASSERT_NE(NULL, p);
	p[300] = self->pattern[300] ^= 0x3c;
	fences = gps_stat(node0, "fences");

	ASSERT_EQ(0, fi_arm("fail_async_fence", 1, 0));
	ASSERT_EQ(-ENOMEM, ring_fence(&r, self->fd, 0, 0, 0));
	ASSERT_EQ(0, fi_get("fail_async_fence", "times"));
	ASSERT_EQ(0, fi_disarm("fail_async_fence"));
	ASSERT_EQ(fences, gps_stat(node0, "fences"));
	if (self->nr > 1) {	/* nothing pushed yet */
		ASSERT_EQ(0, gps_read(self->fd, &b, 1, 300, &v, 1));
		ASSERT_EQ((unsigned char)(self->pattern[300] ^ 0x3c), v);
	}
	ASSERT_EQ(0, ring_fence(&r, self->fd, 0, 0, 0));
	ASSERT_EQ(fences + 1, gps_stat(node0, "fences"));
	ASSERT_INTACT(&b, SZ);
	ring_exit(&r);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_NO_LEAK();
}

TEST_HARNESS_MAIN
