// SPDX-License-Identifier: MIT
/*
 * Description: the knobs and counters of the native engine, by the
 * driver's names (gpsGetKnob, gpsSetKnob, gpsDeviceGetCounter), and
 * their publication for gpsctl: the driver's defaults and ranges; an
 * unknown name, a value out of range and one the engine cannot honour
 * each refused with its own error, nothing changed; $GPSU_KNOB_<name>
 * at start; block_size, queue_capacity and link_latency_ns honoured
 * (each seen in the bytes pushed, the blocks pushed early or the time
 * of a release); the counters per device; gpsctl --pid showing a
 * running program's knobs and counters, and the files gone at exit
 * (or, after a program that could not remove them, at the next start).
 * Each TEST runs in its own process (the harness forks), so each has a
 * fresh engine.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gpsu.h"

#define NDEV	4
#define GPSCTL	T_TOP "/build/tools/gpsctl"

static char stats_dir[64];

/* The native engine with NDEV devices, its files in a directory of ours. */
static void use_native(void)
{
	setenv("GPSU_ENGINE", "user", 1);
	setenv("GPSU_DEVICES", "4", 1);
	unsetenv("GPSU_TEST_MISSING");
	snprintf(stats_dir, sizeof(stats_dir), "/tmp/gps-knobs-test-%u",
		 (unsigned int)getuid());
	mkdir(stats_dir, 0700);
	setenv("GPSU_STATS_DIR", stats_dir, 1);
}

static unsigned long long knob(const char *name)
{
	unsigned long long v = ~0ULL;

	if (gpsGetKnob(&v, name) != gpsSuccess)
		return ~0ULL;
	return v;
}

static unsigned long long counter(const char *name, int d)
{
	unsigned long long v = ~0ULL;

	if (gpsDeviceGetCounter(&v, name, d) != gpsSuccess)
		return ~0ULL;
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A store of one byte at @off through device @d's view, then its release. */
static gpsError_t store_release(char *p, size_t off, int d)
{
	gpsError_t err = gpsSetDevice(d);
	char *v;

	if (err)
		return err;
	v = gpsDevicePtr(p);
	if (!v)
		return gpsErrorInvalidDevicePointer;
	v[off] = (char)(off + 1);
	return gpsDeviceSynchronize();
}

/* The driver's defaults (core/gps_knob_list.h) for the knobs it honours. */
TEST(defaults)
{
	use_native();
	ASSERT_EQ(65536, knob("page_size"));
	ASSERT_EQ(128, knob("block_size"));
	ASSERT_EQ(512, knob("queue_capacity"));
	ASSERT_EQ(511, knob("queue_watermark"));
	ASSERT_EQ(0, knob("link_bandwidth"));
	ASSERT_EQ(0, knob("link_latency_ns"));
	/* a push thread, the bulk path and fence helpers as the driver's */
	ASSERT_EQ(1000, knob("harvest_interval_us"));
	ASSERT_EQ(0, knob("harvest_ahead"));
	ASSERT_EQ(16, knob("bulk_blocks"));
	ASSERT_EQ(0, knob("fence_threads"));
	ASSERT_EQ(0, knob("track_policy"));	/* "touched" */
}

/* Bad names and values: each its error, nothing changed. */
TEST(refusals)
{
	unsigned long long v;

	use_native();
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetKnob(&v, "no_such_knob"));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("no_such_knob", 1));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetKnob(NULL, "page_size"));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetKnob(&v, NULL));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob(NULL, 1));
	/* out of range, or against a rule the range cannot say */
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("block_size", 32));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("block_size", 96));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("page_size", 8192));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("link_bandwidth", 999));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("queue_watermark", 513));
	ASSERT_EQ(gpsErrorInvalidValue, gpsSetKnob("track_policy", 2));
	ASSERT_EQ(128, knob("block_size"));
	ASSERT_EQ(65536, knob("page_size"));
	ASSERT_EQ(0, knob("link_bandwidth"));
	ASSERT_EQ(511, knob("queue_watermark"));
	/* valid for the driver, not honoured here */
	ASSERT_EQ(gpsErrorNotSupported, gpsSetKnob("capture_bytes", 65536));
	ASSERT_EQ(gpsErrorNotSupported, gpsSetKnob("keep_writable_ms", 100));
	ASSERT_EQ(0, knob("keep_writable_ms"));
	/* what it does already is accepted */
	ASSERT_EQ(gpsSuccess, gpsSetKnob("keep_writable_ms", 0));
	/* counters */
	ASSERT_EQ(gpsErrorInvalidValue, gpsDeviceGetCounter(&v, "nope", 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsDeviceGetCounter(NULL, "fences", 0));
	ASSERT_EQ(gpsErrorInvalidDevice, gpsDeviceGetCounter(&v, "fences", NDEV));
	ASSERT_EQ(gpsErrorInvalidDevice, gpsDeviceGetCounter(&v, "fences", -1));
	/* a driver counter the native engine does not keep: not a 0 */
	ASSERT_EQ(gpsErrorNotSupported,
		  gpsDeviceGetCounter(&v, "read_faults", 0));
}

/* A new capacity brings the watermark along, one below it. */
TEST(capacity_sets_watermark)
{
	use_native();
	ASSERT_EQ(gpsSuccess, gpsSetKnob("queue_capacity", 64));
	ASSERT_EQ(64, knob("queue_capacity"));
	ASSERT_EQ(63, knob("queue_watermark"));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("queue_watermark", 10));
	ASSERT_EQ(10, knob("queue_watermark"));
	ASSERT_EQ(64, counter("queue_capacity", 2));
}

/* $GPSU_KNOB_<name> at start; a bad one fails the set-up. */
TEST(environment)
{
	int n;

	use_native();
	setenv("GPSU_KNOB_block_size", "256", 1);
	setenv("GPSU_KNOB_link_latency_ns", "1000", 1);
	ASSERT_EQ(256, knob("block_size"));
	ASSERT_EQ(1000, knob("link_latency_ns"));
	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&n));
}

TEST(environment_refused)
{
	int n;

	use_native();
	setenv("GPSU_KNOB_block_size", "100", 1);
	ASSERT_NE(gpsSuccess, gpsGetDeviceCount(&n));
}

TEST(environment_not_honoured)
{
	int n;

	use_native();
	setenv("GPSU_KNOB_keep_writable_ms", "100", 1);
	ASSERT_NE(gpsSuccess, gpsGetDeviceCount(&n));
}

/* block_size: a store of two bytes across a boundary of 64 is one block
 * of 128 or 1024 and two of 64; the bytes written are the two changed,
 * to each of the other devices, counted on the writer (as the driver). */
TEST(block_size_honoured)
{
	static const unsigned long long sizes[] = { 128, 64, 1024 };
	static const unsigned long long blocks[] = { 1, 2, 1 };
	unsigned long long b0, b1, k0, k1;
	size_t i, off;
	char *p, *v;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 20, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v = gpsDevicePtr(p);
	ASSERT_NE(NULL, v);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(gpsSuccess, gpsSetKnob("block_size", sizes[i]));
		off = 4096 * i + 63;
		b0 = counter("bytes_pushed", 1);
		k0 = counter("blocks_pushed", 1);
		v[off] = 1;
		v[off + 1] = 2;
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		b1 = counter("bytes_pushed", 1);
		k1 = counter("blocks_pushed", 1);
		ASSERT_EQ((NDEV - 1) * 2, b1 - b0) TH_LOG("block %llu",
							  sizes[i]);
		ASSERT_EQ((NDEV - 1) * blocks[i], k1 - k0) TH_LOG("block %llu",
								  sizes[i]);
		/* the bytes reached the others */
		ASSERT_EQ(2, p[off + 1]);
	}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* The times of a release: the scans' (protect_ns) within the harvest's,
 * the harvest's within the fence's, each counted on the device. */
TEST(times_counted)
{
	unsigned long long p0, h0, f0, p1, h1, f1;
	char *p;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 20, 0));
	p0 = counter("protect_ns", 1);
	h0 = counter("harvest_ns", 1);
	f0 = counter("fence_ns", 1);
	ASSERT_NE(~0ULL, p0);
	ASSERT_EQ(gpsSuccess, store_release(p, 5000, 1));
	p1 = counter("protect_ns", 1);
	h1 = counter("harvest_ns", 1);
	f1 = counter("fence_ns", 1);
	ASSERT_LT(p0, p1);
	ASSERT_LE(p1 - p0, h1 - h0);
	ASSERT_LE(h1 - h0, f1 - f0);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* queue_capacity: with a queue of 2 blocks (watermark 1) blocks leave
 * before the release; with the default 512, none does. */
TEST(queue_capacity_honoured)
{
	unsigned long long e0, e1;
	char *p, *v;
	int i;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 20, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	v = gpsDevicePtr(p);
	ASSERT_NE(NULL, v);
	e0 = counter("blocks_pushed_early", 2);
	for (i = 0; i < 8; i++)
		v[i * 4096] = 1;
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	e1 = counter("blocks_pushed_early", 2);
	ASSERT_EQ(0, e1 - e0);
	/* the 8 blocks were held at once */
	ASSERT_EQ(8, counter("queue_hwm", 2));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("queue_capacity", 2));
	for (i = 0; i < 8; i++)
		v[i * 4096] = 2;
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	e1 = counter("blocks_pushed_early", 2);
	ASSERT_LT(0, e1 - e0);
	ASSERT_EQ(2, p[7 * 4096]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * bulk_blocks: a page with that many changed blocks or more goes past
 * the queue at once (blocks_bulk), a sparser one into it; 0 queues all.
 */
TEST(bulk_blocks_honoured)
{
	unsigned long long q0, b0, y0;
	char *p, *v;
	int i;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 20, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	v = gpsDevicePtr(p);
	ASSERT_NE(NULL, v);
	q0 = counter("blocks_queued", 2);
	b0 = counter("blocks_bulk", 2);
	memset(v, 1, 4096);		/* 32 blocks of 128 bytes */
	v[8192] = 1;			/* one */
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(32, counter("blocks_bulk", 2) - b0);
	ASSERT_EQ(1, counter("blocks_queued", 2) - q0);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("bulk_blocks", 0));
	memset(v, 2, 4096);
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(32, counter("blocks_bulk", 2) - b0);
	ASSERT_EQ(33, counter("blocks_queued", 2) - q0);
	ASSERT_EQ(2, p[4095]);
	/* every other block: 16 go at once, counted as the 16 bytes */
	ASSERT_EQ(gpsSuccess, gpsSetKnob("bulk_blocks", 16));
	y0 = counter("bytes_pushed", 2);
	for (i = 0; i < 32; i += 2)
		v[i * 128 + 5] = 3;
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	ASSERT_EQ(48, counter("blocks_bulk", 2) - b0);
	ASSERT_EQ((NDEV - 1) * 16, counter("bytes_pushed", 2) - y0);
	ASSERT_EQ(3, p[30 * 128 + 5]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * fence_threads: a release of many written pages is diffed and pushed by
 * the fence and its helpers side by side (pages_helped), every page past
 * the queue, and every store arrives; 1, or bulk_blocks 0, the fence
 * alone through the queue. Pushes slowed by GPSU_TEST_PUSH_DELAY_US, so
 * helpers join on any load.
 */
TEST(fence_threads_honoured)
{
	const size_t pages = 48;
	unsigned long long h0, q0, y0;
	size_t i;
	char *p, *v;
	int pass;

	use_native();
	setenv("GPSU_TEST_PUSH_DELAY_US", "2000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, pages * 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	v = gpsDevicePtr(p);
	ASSERT_NE(NULL, v);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("fence_threads", 4));
	for (pass = 1; pass <= 3; pass++) {
		if (pass == 2)
			ASSERT_EQ(gpsSuccess, gpsSetKnob("fence_threads", 1));
		if (pass == 3) {
			ASSERT_EQ(gpsSuccess, gpsSetKnob("fence_threads", 4));
			ASSERT_EQ(gpsSuccess, gpsSetKnob("bulk_blocks", 0));
		}
		h0 = counter("pages_helped", 2);
		q0 = counter("blocks_queued", 2);
		y0 = counter("bytes_pushed", 2);
		for (i = 0; i < pages; i++)
			v[i * 4096 + pass] = (char)(i + pass);
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		/* one byte a page, helped or not, to each other device */
		EXPECT_EQ((NDEV - 1) * pages, counter("bytes_pushed", 2) - y0);
		if (pass == 1) {
			EXPECT_LT(h0, counter("pages_helped", 2));
			EXPECT_EQ(q0, counter("blocks_queued", 2));
		} else {
			EXPECT_EQ(h0, counter("pages_helped", 2));
			EXPECT_EQ(q0 + pages, counter("blocks_queued", 2));
		}
		for (i = 0; i < pages; i++) {
			int d;

			for (d = 0; d < NDEV; d++) {
				char *w;

				ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
				w = gpsDevicePtr(p);
				ASSERT_EQ((char)(i + pass), w[i * 4096 + pass])
					TH_LOG("pass %d page %zu device %d",
					       pass, i, d);
			}
		}
		ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* link_latency_ns: a release that pushed waits for it. */
TEST(link_latency_honoured)
{
	double t0, dt;
	char *p;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 16, 0));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_latency_ns", 200000000ULL));
	t0 = now_s();
	ASSERT_EQ(gpsSuccess, store_release(p, 1, 3));
	dt = now_s() - t0;
	ASSERT_LE(0.2, dt);
	ASSERT_LT(0, counter("link_wait_ns", 3));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_latency_ns", 0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Counters per device: the writer's, not the others'. */
TEST(counters_per_device)
{
	char *p;
	int d;

	use_native();
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 16, 0));
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(16, counter("replica_pages", d));
	ASSERT_EQ(gpsSuccess, store_release(p, 100, 1));
	ASSERT_EQ(1, counter("write_faults", 1));
	ASSERT_EQ(0, counter("write_faults", 0));
	ASSERT_EQ(1, counter("blocks_queued", 1));
	ASSERT_EQ(1, counter("fences", 1));
	ASSERT_EQ(0, counter("fences", 2));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(0, counter("replica_pages", d));
}

/* Reads @cmd's output into @buf; its exit status. */
static int run(const char *cmd, char *buf, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	return pclose(f);
}

/* gpsctl --pid shows this program's knobs and counters, as it runs;
 * the files are gone when a program exits. */
TEST(gpsctl_shows_a_running_program)
{
	static char out[65536];
	char cmd[512], path[256];
	char *p;
	int i;

	if (access(GPSCTL, X_OK))
		SKIP(return, "build/tools/gpsctl not built");
	use_native();
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_latency_ns", 4321));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 1 << 16, 0));
	ASSERT_EQ(gpsSuccess, store_release(p, 0, 0));
	snprintf(cmd, sizeof(cmd), "%s --json --pid %d", GPSCTL,
		 (int)getpid());
	/* published within the publisher's period */
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, run(cmd, out, sizeof(out))) TH_LOG("%s", out);
		if (strstr(out, "\"value\": 4321") &&
		    strstr(out, "\"fences\": 1"))
			break;
		usleep(100000);
	}
	ASSERT_NE(NULL, strstr(out, "\"link_latency_ns\"")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "\"value\": 4321")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "\"fences\": 1")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s programs", GPSCTL);
	ASSERT_EQ(0, run(cmd, out, sizeof(out)));
	snprintf(path, sizeof(path), "%d ", (int)getpid());
	ASSERT_NE(NULL, strstr(out, path)) TH_LOG("%s", out);
	/* the driver's commands and set are refused for a native program */
	snprintf(cmd, sizeof(cmd), "%s --pid %d set page_size=4096 2>&1",
		 GPSCTL, (int)getpid());
	ASSERT_NE(0, run(cmd, out, sizeof(out)));
	ASSERT_EQ(4321, knob("link_latency_ns"));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* A child that set up the engine (@how 0: and exited, 1: and left by
 * _exit); its pid. */
static pid_t child(int how)
{
	int status, n;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (gpsGetDeviceCount(&n) != gpsSuccess)
			_exit(1);
		if (how)
			_exit(0);
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return pid;
}

/* A program's files are gone when it exits; those of one that could
 * not remove them (killed, _exit) go at the next start. */
TEST(files_gone_at_exit)
{
	char path[256], cmd[512], out[4096];
	struct stat sb;
	pid_t a, b;
	int n;

	use_native();
	a = child(0);
	ASSERT_LT(0, a);
	snprintf(path, sizeof(path), "%s/%d", stats_dir, (int)a);
	ASSERT_NE(0, stat(path, &sb));
	b = child(1);
	ASSERT_LT(0, b);
	snprintf(path, sizeof(path), "%s/%d", stats_dir, (int)b);
	ASSERT_EQ(0, stat(path, &sb));
	if (!access(GPSCTL, X_OK)) {
		snprintf(cmd, sizeof(cmd), "%s --pid %d 2>&1", GPSCTL, (int)b);
		ASSERT_EQ(1, WEXITSTATUS(run(cmd, out, sizeof(out))));
	}
	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&n));
	ASSERT_NE(0, stat(path, &sb));
	snprintf(path, sizeof(path), "%s/%d/sys/knobs", stats_dir,
		 (int)getpid());
	ASSERT_EQ(0, stat(path, &sb));
}

/* Whether the engine of this process published its files under @root. */
static bool published_under(const char *root)
{
	char path[256];
	struct stat sb;
	int n;

	setenv("GPSU_STATS_DIR", root, 1);
	if (gpsGetDeviceCount(&n) != gpsSuccess)
		return true;
	snprintf(path, sizeof(path), "%s/%d", root, (int)getpid());
	return !lstat(path, &sb);
}

/*
 * The files go only into a directory of the user's own that nobody else
 * can write: in /tmp another user could have made /tmp/gps-<uid> first,
 * or a link there, and had the program write (and sweep) where the link
 * points.
 */
TEST(files_not_in_a_directory_others_can_write)
{
	char dir[96];

	use_native();
	snprintf(dir, sizeof(dir), "%s/open", stats_dir);
	mkdir(dir, 0700);
	ASSERT_EQ(0, chmod(dir, 0777));
	ASSERT_FALSE(published_under(dir));
	rmdir(dir);
}

TEST(files_not_through_a_link)
{
	char dir[96], link[96];

	use_native();
	snprintf(dir, sizeof(dir), "%s/real", stats_dir);
	snprintf(link, sizeof(link), "%s/link", stats_dir);
	mkdir(dir, 0700);
	unlink(link);
	ASSERT_EQ(0, symlink(dir, link));
	ASSERT_FALSE(published_under(link));
	unlink(link);
	rmdir(dir);
}

TEST(files_in_a_directory_of_its_own)
{
	char dir[96];

	use_native();
	snprintf(dir, sizeof(dir), "%s/own", stats_dir);
	ASSERT_TRUE(published_under(dir));
}

TEST_HARNESS_MAIN
