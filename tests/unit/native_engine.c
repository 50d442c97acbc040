// SPDX-License-Identifier: MIT
/*
 * Description: the native engine (GPSU_ENGINE=user) against the contract
 * of Documentation/memory-model.rst, on the host's own kernel: it is
 * chosen by GPSU_ENGINE and by default without a driver, and refuses
 * clearly where the kernel lacks a feature; a store through device A's
 * view reaches device B's view at A's release and, with the link
 * unlimited, not before; with the link modelled the push threads carry
 * it before; the host view's stores at a host release; two devices'
 * stores to different bytes of one word both survive; a reader never
 * sees a word torn by a push, nor one mixed from two stores; racing
 * stores to the same bytes converge; many threads per device storing and
 * releasing lose no published store; a non-subscriber is served by a
 * subscriber's replica and pushes skip it; the last subscriber cannot
 * leave; tracking keeps exactly the devices that touched a page; a
 * collapse leaves one copy; managed memory moves to the device that
 * touches it; a store racing a subscription change is kept; a first
 * access racing the end of tracking is retried, not a crash; user nobody
 * runs it, and a process that dropped root is told why it cannot. Every test
 * asserts the capture's counters or the stores themselves, so none
 * passes without userfaultfd write-protect and PAGEMAP_SCAN doing the
 * work.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gpsu.h"
#include "engine.h"
#include "engine_user.h"

#define NDEV	4

static void use_native(int ndev)
{
	char n[16];

	snprintf(n, sizeof(n), "%d", ndev);
	setenv("GPSU_ENGINE", "user", 1);
	setenv("GPSU_DEVICES", n, 1);
	unsetenv("GPSU_TEST_MISSING");
}

/* @p's view on device @d. */
static void *view(const void *p, int d)
{
	int old;
	void *v;

	gpsGetDevice(&old);
	gpsSetDevice(d);
	v = gpsDevicePtr(p);
	gpsSetDevice(old);
	return v;
}

/* A release of device @d (and the host views) from this thread. */
static gpsError_t release(int d)
{
	gpsError_t err = gpsSetDevice(d);

	return err ? err : gpsDeviceSynchronize();
}

/*
 * The keep rule at @k (GPSU_KEEP_PAGES), and no push-thread round that
 * could harvest between the releases whose counts a test asserts.
 */
static void keep_env(const char *k)
{
	setenv("GPSU_KEEP_PAGES", k, 1);
	setenv("GPSU_KNOB_harvest_ahead", "0", 1);
	setenv("GPSU_KNOB_link_bandwidth", "0", 1);
}

/*
 * A native engine with the keep rule at @k, an automatic allocation of
 * 16 GPS pages of 4 KiB at *@p, and devices 0's and 1's views of it.
 */
static void keep_alloc(const char *k, uint64_t **p, volatile uint64_t **a,
		       volatile uint64_t **b)
{
	use_native(NDEV);
	keep_env(k);
	if (gpsMallocGPS((void **)p, 65536, gpsMemGPSPage4K) != gpsSuccess)
		abort();
	*a = view(*p, 0);
	*b = view(*p, 1);
}

/* Stats after @d's release. */
static void release_stats(int d, struct gpsu_user_stats *s)
{
	if (release(d) != gpsSuccess)
		abort();
	gpsu_user_stats(s);
}

/*
 * Few written pages stay writable (GPSU_KEEP_PAGES: at most 4 a
 * harvest): a later store to a kept page faults no more, and is still
 * published at the next release; a release with no store diffs the kept
 * page again and sends nothing.
 */
TEST(a_kept_page_is_published_without_a_fault)
{
	struct gpsu_user_stats s0, s1;
	volatile uint64_t *a, *b;
	uint64_t *p;
	int e;

	keep_alloc("4", &p, &a, &b);
	gpsu_user_stats(&s0);
	a[3 * 512] = 1;
	release_stats(0, &s1);
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	ASSERT_EQ(0, s1.pages_protected - s0.pages_protected);
	ASSERT_EQ(1, b[3 * 512]);
	for (e = 2; e < 5; e++) {
		s0 = s1;
		a[3 * 512] = (uint64_t)e;
		release_stats(0, &s1);
		/* kept: found again, no write fault, published */
		ASSERT_EQ(0, s1.pages_written - s0.pages_written);
		ASSERT_EQ(1, s1.pages_rediffed - s0.pages_rediffed);
		ASSERT_EQ(1, s1.pages_changed - s0.pages_changed);
		ASSERT_EQ(NDEV - 1, s1.blocks_pushed - s0.blocks_pushed);
		ASSERT_EQ((uint64_t)e, b[3 * 512]);
	}
	/* no store: diffed again, nothing sent */
	s0 = s1;
	release_stats(0, &s1);
	ASSERT_EQ(1, s1.pages_rediffed - s0.pages_rediffed);
	ASSERT_EQ(0, s1.pages_changed - s0.pages_changed);
	ASSERT_EQ(0, s1.blocks_pushed - s0.blocks_pushed);
}

/*
 * Rent: after 4 diffs of kept pages since the view was last protected,
 * its next harvest protects it, and the store after that faults again.
 */
TEST(a_kept_page_is_protected_once_its_rent_is_paid)
{
	struct gpsu_user_stats s0, s1;
	volatile uint64_t *a, *b;
	uint64_t *p;
	int e;

	keep_alloc("4", &p, &a, &b);
	gpsu_user_stats(&s0);
	a[0] = 7;
	release_stats(0, &s1);			/* kept, rent 0 */
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	for (e = 0; e < 4; e++)
		release_stats(0, &s1);		/* rent 1 to 4 */
	ASSERT_EQ(4, s1.pages_rediffed - s0.pages_rediffed);
	ASSERT_EQ(0, s1.pages_protected - s0.pages_protected);
	release_stats(0, &s1);			/* paid: protected */
	ASSERT_EQ(1, s1.pages_protected - s0.pages_protected);
	s0 = s1;
	release_stats(0, &s1);			/* nothing written */
	ASSERT_EQ(0, s1.pages_rediffed - s0.pages_rediffed);
	ASSERT_EQ(0, s1.pages_written - s0.pages_written);
	a[0] = 8;
	release_stats(0, &s1);			/* a fault again */
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	ASSERT_EQ(8, b[0]);
}

/* More written pages in a harvest than it may keep: all protected. */
TEST(many_written_pages_are_protected)
{
	struct gpsu_user_stats s0, s1;
	volatile uint64_t *a, *b;
	uint64_t *p;
	int i;

	keep_alloc("4", &p, &a, &b);
	gpsu_user_stats(&s0);
	for (i = 0; i < 5; i++)
		a[i * 512] = 10 + (uint64_t)i;
	release_stats(0, &s1);
	ASSERT_EQ(5, s1.pages_written - s0.pages_written);
	ASSERT_EQ(5, s1.pages_protected - s0.pages_protected);
	s0 = s1;
	release_stats(0, &s1);
	ASSERT_EQ(0, s1.pages_written + s1.pages_rediffed -
		     s0.pages_written - s0.pages_rediffed);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(10 + (uint64_t)i, b[i * 512]);
}

/* GPSU_KEEP_PAGES=0: a store after every release is a write fault. */
TEST(keep_pages_0_protects_every_harvest)
{
	struct gpsu_user_stats s0, s1;
	volatile uint64_t *a, *b;
	uint64_t *p;
	int e;

	keep_alloc("0", &p, &a, &b);
	for (e = 0; e < 3; e++) {
		gpsu_user_stats(&s0);
		a[512] = 20 + (uint64_t)e;
		release_stats(0, &s1);
		ASSERT_EQ(1, s1.pages_written - s0.pages_written);
		ASSERT_EQ(1, s1.pages_protected - s0.pages_protected);
		ASSERT_EQ(0, s1.pages_rediffed - s0.pages_rediffed);
		ASSERT_EQ(20 + (uint64_t)e, b[512]);
	}
}

/*
 * A view of two runs (GPS page 8 has one subscriber): a page kept in the
 * first run is protected once its rent is paid, though the second run
 * has nothing kept (before, a paid rent protected the run the harvest
 * was at, and the first run's page was diffed blind at every release).
 */
TEST(a_kept_page_of_a_view_of_two_runs_is_protected)
{
	struct gpsu_user_stats s0, s1;
	volatile uint64_t *a;
	uint64_t *p;
	int d, e;

	use_native(NDEV);
	keep_env("4");
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 16 * 4096,
					   gpsMemGPSPage4K));
	for (d = 1; d < NDEV; d++)
		ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + 8 * 512, 4096,
					gpsMemAdviseGPSUnsubscribe, d));
	a = view(p, 0);
	gpsu_user_stats(&s0);
	a[0] = 5;
	release_stats(0, &s1);
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	for (e = 0; e < 20; e++)
		release_stats(0, &s1);
	/* 4 diffs of rent, then protected with the rest of the view */
	ASSERT_EQ(1, s1.pages_protected - s0.pages_protected);
	ASSERT_EQ(5, s1.pages_rediffed - s0.pages_rediffed);
	ASSERT_EQ(5, ((volatile uint64_t *)view(p, 1))[0]);
}

/* GPSU_KEEP_PAGES: auto or 0 to 512; anything else fails the set-up. */
TEST(keep_pages_refused)
{
	static const char *const bad[] = { "513", "-1", "abc", "4k", "0x10" };
	static const char *const good[] = { "auto", "0", "512" };
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]) +
			sizeof(good) / sizeof(good[0]); i++) {
		bool ok = i >= sizeof(bad) / sizeof(bad[0]);
		const char *v = ok ? good[i - sizeof(bad) / sizeof(bad[0])] :
				     bad[i];
		pid_t pid = fork();
		int status;

		ASSERT_LE(0, pid);
		if (!pid) {
			use_native(NDEV);
			setenv("GPSU_KEEP_PAGES", v, 1);
			_exit((gpsGetDeviceCount(&n) == gpsSuccess) == ok ?
			      0 : 1);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) {
			TH_LOG("GPSU_KEEP_PAGES=%s", v);
		}
	}
}

/* GPSU_ENGINE=user chooses it; GPSU_DEVICES sets the device count. */
TEST(selected_by_environment)
{
	const char *name = NULL;
	gpsEngine e = gpsEngineNone;
	int n = 0;

	use_native(3);
	ASSERT_EQ(gpsSuccess, gpsGetEngine(&e, &name));
	ASSERT_EQ(gpsEngineNative, e);
	ASSERT_STREQ("user", name);
	ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&n));
	ASSERT_EQ(3, n);
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetEngine(NULL, NULL));
}

/* Without GPSU_ENGINE and without a driver, the native engine serves. */
TEST(default_without_driver)
{
	gpsEngine e = gpsEngineNone;

	if (access("/dev/gps", F_OK) == 0)
		SKIP(return, "gps.ko is loaded: it is the default");
	unsetenv("GPSU_ENGINE");
	unsetenv("GPSU_DEVICE");
	unsetenv("GPSU_DEVICES");
	ASSERT_EQ(gpsSuccess, gpsGetEngine(&e, NULL));
	ASSERT_EQ(gpsEngineNative, e);
}

/* GPSU_ENGINE=kmod without a driver: no device, no fallback. */
TEST(kmod_alone)
{
	gpsEngine e = gpsEngineNative;
	const char *name = NULL;

	setenv("GPSU_ENGINE", "kmod", 1);
	setenv("GPSU_DEVICE", "/nonexistent/gps", 1);
	ASSERT_EQ(gpsErrorNoDevice, gpsGetEngine(&e, &name));
	ASSERT_EQ(gpsEngineNone, e);
	ASSERT_STREQ("none", name);
}

/* A kernel without a feature: gpsErrorNotSupported, for each feature. */
TEST(missing_features)
{
	static const char *const what[] = { "userfaultfd", "wp_async",
					     "pagemap_scan" };
	unsigned int i;

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		pid_t pid = fork();
		int status;

		ASSERT_LE(0, pid);
		if (!pid) {
			gpsEngine e = gpsEngineNative;
			int n = -1;

			use_native(NDEV);
			setenv("GPSU_TEST_MISSING", what[i], 1);
			if (gpsGetDeviceCount(&n) != gpsErrorNotSupported ||
			    n != 0 ||
			    gpsGetEngine(&e, NULL) != gpsErrorNotSupported ||
			    e != gpsEngineNone)
				_exit(1);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) {
			TH_LOG("GPSU_TEST_MISSING=%s", what[i]);
		}
	}
}

/* A's store reaches B at A's release, not before; the harvest found it. */
TEST(publish_at_release)
{
	struct gpsu_user_stats s0, s1;
	volatile uint32_t *a, *b;
	uint32_t *p;
	int d;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 3 * 65536, 0));
	a = view(p, 0);
	b = view(p, 1);
	ASSERT_NE((void *)a, (void *)b);
	gpsu_user_stats(&s0);
	a[40000] = 0xabcd1234;
	/* the link unlimited: nothing moves before the release */
	usleep(10000);
	ASSERT_EQ(0, b[40000]);
	ASSERT_EQ(gpsSuccess, release(0));
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(0xabcd1234, ((volatile uint32_t *)view(p, d))[40000]);
	ASSERT_EQ(0xabcd1234, p[40000]);
	gpsu_user_stats(&s1);
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	ASSERT_EQ(1, s1.pages_changed - s0.pages_changed);
	/* one block, into each of the three other replicas */
	ASSERT_EQ(NDEV - 1, s1.blocks_pushed - s0.blocks_pushed);

	/* a release without a store finds no new write */
	ASSERT_EQ(gpsSuccess, release(0));
	gpsu_user_stats(&s0);
	ASSERT_EQ(s1.pages_written, s0.pages_written);

	/* a store through the host pointer: at a host release */
	p[5] = 77;
	ASSERT_EQ(0, b[5]);
	ASSERT_EQ(gpsSuccess, release(2));	/* device 2 and the host */
	ASSERT_EQ(77, b[5]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Different bytes of one word, by two devices: both survive. */
TEST(byte_masks)
{
	struct gpsu_user_stats s0, s1;
	volatile uint8_t *a, *b;
	uint8_t *p;
	int d, i;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	a = view(p, 0);
	b = view(p, 1);
	gpsu_user_stats(&s0);
	for (i = 0; i < 4; i++) {
		a[i] = 0x10 + i;	/* bytes 0-3 of word 0 */
		b[4 + i] = 0x20 + i;	/* bytes 4-7 */
	}
	a[8] = 0xaa;			/* same block, other word */
	b[9] = 0xbb;			/* same word as a[8] */
	ASSERT_EQ(gpsSuccess, release(0));
	ASSERT_EQ(gpsSuccess, release(1));
	for (d = 0; d < NDEV; d++) {
		volatile uint8_t *v = view(p, d);

		for (i = 0; i < 4; i++) {
			ASSERT_EQ(0x10 + i, v[i]);
			ASSERT_EQ(0x20 + i, v[4 + i]);
		}
		ASSERT_EQ(0xaa, v[8]);
		ASSERT_EQ(0xbb, v[9]);
	}
	gpsu_user_stats(&s1);
	ASSERT_EQ(2, s1.pages_changed - s0.pages_changed);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Copies reach every replica and are no device's store. */
TEST(copies)
{
	struct gpsu_user_stats s0, s1;
	char buf[100], out[100];
	char *p;
	int d;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 8192, 0));
	memset(buf, 'x', sizeof(buf));
	gpsu_user_stats(&s0);
	ASSERT_EQ(gpsSuccess, gpsMemcpy(p + 1000, buf, sizeof(buf),
					gpsMemcpyHostToDevice));
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(0, memcmp((char *)view(p, d) + 1000, buf,
				    sizeof(buf)));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(out, p + 1000, sizeof(out),
					gpsMemcpyDeviceToHost));
	ASSERT_EQ(0, memcmp(out, buf, sizeof(buf)));
	ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
	gpsu_user_stats(&s1);
	ASSERT_EQ(s0.pages_changed, s1.pages_changed);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* ---- subscriptions, tracking, system scope, managed memory -------- */


/* Subscription masks of @n GPS pages of @ps bytes from @p. */
static void masks(const void *p, size_t ps, int n, unsigned long long *m)
{
	size_t np = 0;

	gpsMemGetSubscribers(p, ps * (size_t)n, m, (size_t)n, &np);
}

/*
 * A manual allocation: the home's replica alone; a subscriber added is
 * filled; a non-subscriber's view is served by a subscriber's replica,
 * sees published stores, and its own stores are published; pushes go
 * to the subscribers only.
 */
TEST(non_subscribers_served)
{
	struct gpsu_user_stats s0, s1;
	volatile uint32_t *v0, *v1, *v2, *v3;
	unsigned long long m[1];
	size_t before;
	gpsDeviceProp prop;
	uint32_t *p;
	int d;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, 1));
	before = prop.replicaPages;
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536,
					   gpsMemGPSManual));
	masks(p, 65536, 1, m);
	ASSERT_EQ(1ULL, m[0]);
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 5, 65536));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSSubscribe, 1));
	masks(p, 65536, 1, m);
	ASSERT_EQ(3ULL, m[0]);
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, 1));
	ASSERT_EQ(before + 16, prop.replicaPages);
	v0 = view(p, 0);
	v1 = view(p, 1);
	v2 = view(p, 2);
	v3 = view(p, 3);
	ASSERT_EQ(0x05050505, v1[100]);		/* filled at subscribe */
	ASSERT_EQ(0x05050505, v2[100]);		/* served */

	gpsu_user_stats(&s0);
	v1[7] = 0x1234;
	ASSERT_EQ(gpsSuccess, release(1));
	gpsu_user_stats(&s1);
	/* one block into one receiver (device 0), not three */
	ASSERT_EQ(1, s1.blocks_pushed - s0.blocks_pushed);
	ASSERT_EQ(4, s1.bytes_pushed - s0.bytes_pushed);	/* changed */
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(0x1234, ((volatile uint32_t *)view(p, d))[7]);

	/* a non-subscriber's store, published at its release */
	gpsu_user_stats(&s0);
	v3[9000] = 0x777;
	ASSERT_EQ(0x777, v2[9000]);	/* both served by device 0's copy */
	ASSERT_EQ(0x05050505, v1[9000]);
	ASSERT_EQ(gpsSuccess, release(3));
	ASSERT_EQ(0x777, v1[9000]);
	ASSERT_EQ(0x777, v0[9000]);
	gpsu_user_stats(&s1);
	ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	ASSERT_EQ(1, s1.blocks_pushed - s0.blocks_pushed);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, 1));
	ASSERT_EQ(before, prop.replicaPages);
}

/* The last subscriber cannot leave; another can, its data kept. */
TEST(unsubscribe_keeps_one)
{
	struct gpsu_user_stats s0, s1;
	unsigned long long m[2];
	char *p;
	int d;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 2 * 65536,
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsErrorBusy, gpsMemAdvise(p, 2 * 65536,
					     gpsMemAdviseGPSUnsubscribe, 2));
	masks(p, 65536, 2, m);
	ASSERT_EQ(4ULL, m[0]);
	ASSERT_EQ(4ULL, m[1]);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + 65536, 65536,
					   gpsMemAdviseGPSSubscribe, 0));
	/* page 1 has two subscribers, page 0 one: refused as a whole */
	ASSERT_EQ(gpsErrorBusy, gpsMemAdvise(p, 2 * 65536,
					     gpsMemAdviseGPSUnsubscribe, 2));
	((volatile char *)view(p, 2))[65536 + 3] = 'x';
	gpsu_user_stats(&s0);
	/* unpublished when it leaves: published by the change itself */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p + 65536, 65536,
					   gpsMemAdviseGPSUnsubscribe, 2));
	gpsu_user_stats(&s1);
	ASSERT_EQ(1, s1.unsubscribes - s0.unsubscribes);
	masks(p, 65536, 2, m);
	ASSERT_EQ(4ULL, m[0]);
	ASSERT_EQ(1ULL, m[1]);
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ('x', ((volatile char *)view(p, d))[65536 + 3]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A GPS page with one subscriber has no one to publish to: its stores
 * (its own, a non-subscriber's through the replica it is served from)
 * are not harvested, at any release. When it gains a subscriber, the
 * change publishes every one of them, and from then on each release
 * publishes the page's new stores, also on small pages written while it
 * had one subscriber (left writable, not protected again).
 */
TEST(one_subscriber_is_not_captured)
{
	struct gpsu_user_stats s0, s1;
	volatile char *v0, *v1, *v2;
	char *p;
	int e;

	use_native(NDEV);
	/* every harvest protects again: a store each epoch is a fault */
	setenv("GPSU_KEEP_PAGES", "0", 1);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(2));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 2 * 65536,
					   gpsMemGPSManual));
	v0 = view(p, 0);
	v1 = view(p, 1);
	v2 = view(p, 2);
	gpsu_user_stats(&s0);
	for (e = 0; e < 3; e++) {
		v2[e] = (char)('a' + e);
		v2[3 * 4096 + e] = (char)('A' + e);
		v0[5 * 4096 + e] = (char)('0' + e);	/* served by 2's */
		ASSERT_EQ(gpsSuccess, release(2));
		ASSERT_EQ(gpsSuccess, release(0));
		ASSERT_EQ('0' + e, v2[5 * 4096 + e]);
	}
	gpsu_user_stats(&s1);
	ASSERT_EQ(s0.pages_written, s1.pages_written);
	ASSERT_EQ(s0.blocks_pushed, s1.blocks_pushed);

	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSSubscribe, 1));
	for (e = 0; e < 3; e++) {
		ASSERT_EQ('a' + e, v1[e]);
		ASSERT_EQ('A' + e, v1[3 * 4096 + e]);
		ASSERT_EQ('0' + e, v1[5 * 4096 + e]);
	}
	for (e = 0; e < 3; e++) {
		gpsu_user_stats(&s0);
		v2[3 * 4096 + 8] = (char)('x' + e);
		ASSERT_EQ(gpsSuccess, release(2));
		gpsu_user_stats(&s1);
		ASSERT_EQ('x' + e, v1[3 * 4096 + 8]);
		ASSERT_EQ(1, s1.pages_changed - s0.pages_changed);
		/* the first finds small page 0 too, written and settled */
		if (e)
			ASSERT_EQ(1, s1.pages_written - s0.pages_written);
	}
	/* page 1 still has one subscriber */
	gpsu_user_stats(&s0);
	v2[65536 + 9] = 'q';
	ASSERT_EQ(gpsSuccess, release(2));
	gpsu_user_stats(&s1);
	ASSERT_EQ(s0.pages_written, s1.pages_written);
	ASSERT_EQ('q', v1[65536 + 9]);		/* served by 2's */
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

static unsigned long long counter(const char *name, int d)
{
	unsigned long long v = ~0ULL;

	if (gpsDeviceGetCounter(&v, name, d) != gpsSuccess)
		return ~0ULL;
	return v;
}

static unsigned long long counter_knob(const char *name)
{
	unsigned long long v = ~0ULL;

	if (gpsGetKnob(&v, name) != gpsSuccess)
		return ~0ULL;
	return v;
}

/* Waits up to 5 s (any load) for counter @name of device @d to leave @r0. */
static bool counter_moves(const char *name, int d, unsigned long long r0)
{
	int i;

	for (i = 0; i < 5000 && counter(name, d) == r0; i++)
		usleep(1000);
	return counter(name, d) != r0;
}

/*
 * Three devices, device 2 current, the push threads on at every 100 µs
 * with the link at @bandwidth bytes/s; an allocation of device 2's
 * (every device subscribed) whose view on device 2 is returned.
 */
static volatile uint8_t *rounds_on_device_2(unsigned long long bandwidth)
{
	uint8_t *p;

	use_native(3);
	if (gpsSetDevice(2) || gpsMallocGPS((void **)&p, 65536, 0) ||
	    gpsSetKnob("harvest_interval_us", 100) ||
	    gpsSetKnob("link_bandwidth", bandwidth))
		return NULL;
	return view(p, 2);
}

/*
 * The push threads: with the link modelled (link_bandwidth set) and
 * harvest_interval_us set, a store reaches the other devices while its
 * kernel goes on, before any release, by a round of its device's thread;
 * with the link unlimited, or the interval 0, they do nothing ahead of a
 * release (the driver's rule: nothing to hide behind compute).
 */
TEST(push_thread_publishes_before_the_release)
{
	volatile uint32_t *a, *b;
	unsigned long long r0;
	uint32_t *p;
	int i;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536, 0));
	a = view(p, 0);
	b = view(p, 1);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 200));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 1000000000ULL));
	r0 = counter("thread_rounds", 0);
	a[100] = 0x5eed;
	/* no release: the thread's round carries it (5 s: any load) */
	for (i = 0; i < 5000 && b[100] != 0x5eed; i++)
		usleep(1000);
	ASSERT_EQ(0x5eed, b[100]);
	/* the round counts itself after its pushes */
	ASSERT_TRUE(counter_moves("thread_rounds", 0, r0));
	ASSERT_NE(~0ULL, counter("thread_rounds", 0));
	ASSERT_LT(0, counter("blocks_pushed_early", 0));

	/* link unlimited: the threads idle, only the release publishes */
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
	usleep(300000);	/* a round under way ends */
	a[101] = 0xbeef;
	usleep(300000);
	ASSERT_EQ(0, b[101]);
	/* interval 0: none either, link or not */
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 0));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 1000000000ULL));
	usleep(300000);
	ASSERT_EQ(0, b[101]);
	ASSERT_EQ(gpsSuccess, release(0));
	ASSERT_EQ(0xbeef, b[101]);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 1000));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * A release of device 1 with the host views (a kernel's end:
 * fence_mask(1 << 1, true)) returns with device 1's store in every
 * subscriber's replica. Device 0, not a subscriber of P, is served from
 * replica 1 and wrote the same small pages; its push thread's round,
 * begun after the fence looked at device 0's lock, diffs the page
 * device 1 stored into and pushes it slowly (GPSU_TEST_PUSH_DELAY_US),
 * so device 1's harvest finds the page unchanged. The fence returned
 * before that push ended in 7 of 10 releases, before it waited for every
 * device's lock after its harvests. (From a review.)
 */
TEST(host_mode_release_waits_for_a_rounds_push)
{
	const size_t pg = 4096;
	volatile uint32_t *v1, *v2;
	volatile uint8_t *v0, *q1;
	uint8_t *p, *q;
	int it, bad = 0;
	size_t i;

	use_native(3);
	setenv("GPSU_TEST_PUSH_DELAY_US", "10000", 1);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 64 * pg,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 64 * pg,
					   gpsMemAdviseGPSUnsubscribe, 0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, 20 * pg,
					   gpsMemGPSPage4K));
	v0 = view(p, 0);
	v1 = view(p, 1);
	v2 = view(p, 2);
	q1 = view(q, 1);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_ahead", 1));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 100));
	for (it = 1; it <= 6; it++) {
		memset((void *)q1, it, 20 * pg);	/* the fence's harvest slow */
		v1[63 * pg / 4] = 0x1000 + it;
		for (i = 1; i <= 40; i++)
			v0[i * pg + 8] = (uint8_t)it;
		v0[63 * pg + 4] = (uint8_t)it;
		ASSERT_EQ(0, gpsu_engine_user.fence_mask(1ULL << 1, true));
		if (v2[63 * pg / 4] != 0x1000 + (uint32_t)it)
			bad++;
		usleep(200000);	/* the rounds under way end */
	}
	EXPECT_EQ(0, bad);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_ahead", 0));
	unsetenv("GPSU_TEST_PUSH_DELAY_US");
}

/*
 * A release with the host views of a device that stored nothing does not
 * wait for another device's link, busy with its push thread's early
 * pushes (the driver's host fence waits for the host's dirty owners and
 * the mask alone): it waited the other's 1.3 s. (From a review.)
 */
TEST(host_mode_release_waits_for_its_own_links)
{
	volatile uint8_t *v2 = rounds_on_device_2(100000);
	unsigned long long r0;
	double t0, host;

	ASSERT_NE(NULL, v2);
	r0 = counter("blocks_pushed", 2);	/* dense: the bulk path */
	memset((void *)v2, 0x5a, 65536);	/* 128 KiB at 100 kB/s: 1.3 s */
	ASSERT_TRUE(counter_moves("blocks_pushed", 2, r0));
	t0 = now_s();
	ASSERT_EQ(0, gpsu_engine_user.fence_mask(1ULL << 0, true));
	host = now_s() - t0;
	EXPECT_LT(host, 0.5) TH_LOG("device 0's release took %.3f s", host);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
}

/*
 * A new link_bandwidth forgets what the old one still owed (the
 * driver's gps_link_reset()): the backlog a round charged at 1000
 * bytes/s made a fence with the link unlimited sleep it out (2 s).
 * (From a review.)
 */
TEST(link_unlimited_forgets_the_backlog)
{
	volatile uint8_t *v2 = rounds_on_device_2(1000);
	unsigned long long r0;
	double t0, took;
	int i;

	ASSERT_NE(NULL, v2);
	r0 = counter("blocks_pushed_early", 2);
	for (i = 0; i < 8; i++)	/* 8 blocks to 2 receivers: 2 s */
		v2[i * 4096] = 1;
	ASSERT_TRUE(counter_moves("blocks_pushed_early", 2, r0));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
	t0 = now_s();
	ASSERT_EQ(0, gpsu_engine_user.fence_mask(1ULL << 2, false));
	took = now_s() - t0;
	EXPECT_LT(took, 0.5) TH_LOG("the fence took %.3f s", took);
}

/*
 * A new link_bandwidth just after a push thread's round ends the
 * thread's wait for the old link: at 1000 bytes/s the round's 16 KiB
 * keep it busy for 16 s. Returns the rounds in the 3 s after the set
 * (any load); the thread wants 2, one window (300 ms) apart. The stores
 * are made with no rounds, so that one round takes them all.
 */
static unsigned long long rounds_after_a_new_link(void)
{
	volatile uint8_t *v0, *v2;
	unsigned long long r0;
	int i, k, landed = 0;
	uint8_t *p;

	/* the window between a round and the thread's lock, 300 ms */
	setenv("GPSU_TEST_ROUND_DELAY_US", "300000", 1);
	use_native(3);
	if (gpsSetDevice(2) || gpsMallocGPS((void **)&p, 65536, 0) ||
	    gpsSetKnob("harvest_interval_us", 0) ||
	    gpsSetKnob("link_bandwidth", 1000))
		return 0;
	v0 = view(p, 0);
	v2 = view(p, 2);
	for (k = 0; k < 4; k++)
		memset((void *)(v2 + k * 4 * 4096), 0x77, 2048);
	if (gpsSetKnob("harvest_interval_us", 100))
		return 0;
	/* a round carried them all: the thread is in its window */
	for (i = 0; i < 5000 && landed < 4; i++) {
		for (k = landed = 0; k < 4; k++)
			landed += v0[k * 4 * 4096 + 2047] == 0x77;
		if (landed < 4)
			usleep(1000);
	}
	r0 = counter("thread_rounds", 2);
	if (landed < 4 || gpsSetKnob("link_bandwidth", 1000000000ULL))
		return 0;
	for (i = 0; i < 3000 && counter("thread_rounds", 2) < r0 + 2; i++)
		usleep(1000);
	unsetenv("GPSU_TEST_ROUND_DELAY_US");
	return counter("thread_rounds", 2) - r0;
}

/*
 * The kick of a new link_bandwidth, sent after a round and before the
 * thread took its lock again, was lost: the thread slept out the old
 * link's 16 s (no round in 3 s). (From a review.)
 */
TEST(a_new_bandwidth_after_a_round_ends_the_wait_for_the_old)
{
	unsigned long long n = rounds_after_a_new_link();

	EXPECT_LE(2, n) TH_LOG("%llu rounds in 3 s", n);
}

static atomic_int set_link_on_began;

static void *set_link_on(void *arg)
{
	atomic_store(&set_link_on_began, 1);
	*(gpsError_t *)arg = gpsSetKnob("link_bandwidth", 1000000000ULL);
	return NULL;
}

/*
 * Two sets of link_bandwidth race: A (on again, as it was) reads the
 * knobs, then B (off) stores and wakes the push threads, which go to
 * sleep, then A stores. A changed the rule against what was stored, so
 * it must wake them: it compared with what it read before B, saw no
 * change, and the threads slept through a modelled link (0 rounds in
 * 500 ms, from a review). GPSU_TEST_KNOB_DELAY_US holds A's first set.
 */
TEST(racing_knob_sets_wake_the_push_threads)
{
	unsigned long long r0, r1;
	gpsError_t err = gpsErrorUnknown;
	pthread_t th;
	char *p;
	int d, i;

	use_native(3);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 100));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 1000000000ULL));
	setenv("GPSU_TEST_KNOB_DELAY_US", "300000", 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, set_link_on, &err));
	while (!atomic_load(&set_link_on_began))
		usleep(1000);
	usleep(100000);		/* A waits in its set */
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(gpsSuccess, err);
	unsetenv("GPSU_TEST_KNOB_DELAY_US");
	/* a loaded machine may have run A after B's set: no race made */
	if (counter_knob("link_bandwidth") != 1000000000ULL) {
		ASSERT_EQ(gpsSuccess, gpsFree(p));
		SKIP(return, "A's set came after B's: the race was not made");
	}
	usleep(100000);
	for (r0 = 0, d = 0; d < 3; d++)
		r0 += counter("thread_rounds", d);
	for (i = 0; i < 50; i++) {	/* 500 ms */
		usleep(10000);
		for (r1 = 0, d = 0; d < 3; d++)
			r1 += counter("thread_rounds", d);
		if (r1 > r0)
			break;
	}
	EXPECT_LT(r0, r1) TH_LOG("no round in 500 ms with the link on");
	ASSERT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", 0));
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A device's fence helpers run on the device's CPUs, whichever thread
 * made them: made by a fence on a thread pinned elsewhere, they took its
 * CPU (from a review: all on CPU 0 for device 1 on CPU 1).
 */
TEST(helpers_run_on_their_devices_cpus)
{
	gpsDeviceProp prop;
	cpu_set_t want, pin, got;
	struct dirent *de;
	char path[300], comm[32], *p, *v;
	int i, found = 0, other = -1;
	DIR *dir;
	FILE *f;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, 1));
	CPU_ZERO(&want);
	for (i = 0; i < prop.numCpus; i++)
		CPU_SET(prop.cpus[i], &want);
	for (i = 0; i < CPU_SETSIZE && other < 0; i++) {
		CPU_ZERO(&pin);
		CPU_SET(i, &pin);
		if (!CPU_ISSET(i, &want) &&
		    !sched_setaffinity(0, sizeof(pin), &pin))
			other = i;
	}
	if (other < 0)
		SKIP(return, "device 1 has every CPU this process may use");
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 64 * 4096,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsSetKnob("fence_threads", 4));
	v = view(p, 1);
	for (i = 0; i < 64; i++)
		((volatile char *)v)[i * 4096] = 1;
	ASSERT_EQ(gpsSuccess, release(1));	/* on CPU @other */
	dir = opendir("/proc/self/task");
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "gps-help1\n", 10))
			continue;
		found++;
		ASSERT_EQ(0, sched_getaffinity(atoi(de->d_name), sizeof(got),
					       &got));
		EXPECT_TRUE(CPU_EQUAL(&got, &want))
			TH_LOG("helper %s on %d CPUs, CPU %d among them",
			       de->d_name, CPU_COUNT(&got), other);
	}
	closedir(dir);
	EXPECT_EQ(3, found);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Tracking keeps exactly the devices that touched each page. */
TEST(tracking_keeps_the_touchers)
{
	struct gpsu_user_stats s0, s1;
	unsigned long long m[4];
	uint32_t *p, *q;
	int d;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4 * 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&q, 65536,
					   gpsMemGPSManual));
	gpsu_user_stats(&s0);
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStart());
	/* page d by device d; page 3 also read by device 1 */
	for (d = 0; d < NDEV; d++)
		((volatile uint32_t *)view(p, d))[d * 16384 + 1] = 100 + d;
	ASSERT_EQ(0, ((volatile uint32_t *)view(p, 1))[3 * 16384 + 2]);
	/* a manual allocation is not tracked */
	((volatile uint32_t *)view(q, 2))[0] = 1;
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsErrorInvalidValue, gpsTrackingStop());
	gpsu_user_stats(&s1);
	ASSERT_EQ(5, s1.track_faults - s0.track_faults);
	masks(p, 65536, 4, m);
	ASSERT_EQ(1ULL, m[0]);
	ASSERT_EQ(2ULL, m[1]);
	ASSERT_EQ(4ULL, m[2]);
	ASSERT_EQ(8ULL | 2ULL, m[3]);
	masks(q, 65536, 1, m);
	ASSERT_EQ(1ULL, m[0]);
	/* the stores made while tracked reach every view */
	for (d = 0; d < NDEV; d++) {
		int e;

		for (e = 0; e < NDEV; e++)
			ASSERT_EQ(100 + e, ((volatile uint32_t *)view(p, d))
						[e * 16384 + 1]);
	}
	/* no fault cost outside tracking */
	gpsu_user_stats(&s0);
	((volatile uint32_t *)view(p, 2))[5] = 1;
	gpsu_user_stats(&s1);
	ASSERT_EQ(s0.track_faults, s1.track_faults);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsFree(q));
}

/* A collapse leaves one copy that every view maps: no fence needed. */
TEST(collapse_one_copy)
{
	unsigned long long m[2];
	volatile uint32_t *v0, *v3;
	uint32_t *p;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 2 * 65536, 0));
	((volatile uint32_t *)view(p, 2))[10] = 42;	/* unpublished */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSCollapse, 2));
	masks(p, 65536, 2, m);
	ASSERT_EQ(4ULL, m[0]);
	ASSERT_EQ(15ULL, m[1]);
	v0 = view(p, 0);
	v3 = view(p, 3);
	ASSERT_EQ(42, v0[10]);
	v0[11] = 43;
	ASSERT_EQ(43, v3[11]);		/* one copy: no release */
	/* a subscriber added again gets the current data */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSSubscribe, 0));
	masks(p, 65536, 1, m);
	ASSERT_EQ(5ULL, m[0]);
	ASSERT_EQ(43, v0[11]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * The node reserve counts replicas charged and not yet touched (memfd
 * pages are allocated at the first store): with room for five replicas
 * and twins of one GPS page, a first page takes four, and a second, once
 * the free memory was read again (the fake reading has not moved), one.
 */
TEST(node_reserve_counts_replicas_not_yet_touched)
{
	unsigned long long m[1];
	void *a, *b;
	size_t np;

	use_native(NDEV);
	/* a replica and its twin of a 64 KiB GPS page: 32 pages */
	setenv("GPSU_TEST_NODE_FREE_PAGES", "160", 1);
	ASSERT_EQ(gpsSuccess, gpsSetKnob("node_reserve_bytes", 0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&a, 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 65536, m, 1, &np));
	ASSERT_EQ((1ULL << NDEV) - 1, m[0]);
	usleep(50 * 1000);		/* past the reading's 20 ms */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&b, 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(b, 65536, m, 1, &np));
	ASSERT_EQ(1ULL, m[0]);
	/* given back: room again */
	ASSERT_EQ(gpsSuccess, gpsFree(a));
	ASSERT_EQ(gpsSuccess, gpsFree(b));
	usleep(50 * 1000);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&b, 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(b, 65536, m, 1, &np));
	ASSERT_EQ((1ULL << NDEV) - 1, m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(b));
}

/*
 * The reserve measures what the machine can give: an allocation whose
 * replicas and twins take a quarter of MemAvailable (untouched: memfd
 * pages cost nothing until stored to) gets a replica on every device.
 * A node's MemFree alone counted a quarter of the 2-core machine's
 * memory, and such an allocation got 1.2 replicas a page there.
 */
TEST(reserve_counts_the_memory_the_machine_has)
{
	unsigned long long *m, kb = 0;
	size_t bytes, pages, np, i;
	char line[256];
	FILE *f;
	void *a;

	f = fopen("/proc/meminfo", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	ASSERT_LT(0, kb);
	use_native(NDEV);
	/* a replica and a twin per device: 2 * NDEV copies, in GPS pages */
	bytes = (size_t)(kb * 1024 / 4 / (2 * NDEV)) & ~(size_t)65535;
	if (bytes < 65536)
		SKIP(return, "%llu kB available", kb);
	pages = bytes / 65536;
	m = calloc(pages, sizeof(*m));
	ASSERT_NE(NULL, m);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS(&a, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, bytes, m, pages, &np));
	ASSERT_EQ(pages, np);
	for (i = 0; i < pages; i++)
		ASSERT_EQ((1ULL << NDEV) - 1, m[i]) TH_LOG("page %zu of %zu",
							   i, pages);
	ASSERT_EQ(gpsSuccess, gpsFree(a));
	free(m);
}

/* Managed memory on fault: a page moves to the device that touches it. */
TEST(managed_moves_on_fault)
{
	unsigned long long m[2], s0, s1;
	size_t np;
	int *u;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&u, 8192,
						    gpsMemManagedOnFault));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(u, 8192, m, 2, &np));
	ASSERT_EQ(2ULL, m[0]);
	ASSERT_EQ(2ULL, m[1]);
	ASSERT_EQ(gpsSuccess, gpsDeviceGetCounter(&s0, "migrations", 3));
	((volatile int *)view(u, 3))[1024] = 9;		/* page 1 */
	ASSERT_EQ(gpsSuccess, gpsDeviceGetCounter(&s1, "migrations", 3));
	ASSERT_EQ(1, s1 - s0);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(u, 8192, m, 2, &np));
	ASSERT_EQ(2ULL, m[0]);
	ASSERT_EQ(8ULL, m[1]);
	/* one copy: device 1 reads it back (and takes the page back) */
	ASSERT_EQ(9, ((volatile int *)view(u, 1))[1024]);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(u, 8192, m, 2, &np));
	ASSERT_EQ(2ULL, m[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(u));
}

/* ---- a word is never torn -------------------------------------------- */

struct tear {
	volatile uint64_t *w, *r;
	atomic_int done;
	unsigned long seen, torn;
	uint64_t last;
};

static void *tear_reader(void *arg)
{
	struct tear *t = arg;

	while (!atomic_load(&t->done)) {
		uint64_t v = *t->r;

		if ((uint32_t)v != (uint32_t)(v >> 32))
			t->torn++;
		if (v != t->last)
			t->seen++;
		t->last = v;
	}
	return NULL;
}

/*
 * A's word holds k in both halves; k + 1 changes some bytes of each half
 * (a push of a partial word: a blend by cmpxchg); a reader of B's view
 * must never see the halves differ.
 */
TEST(never_torn)
{
	struct gpsu_user_stats s0, s1;
	struct tear t = { 0 };
	pthread_t th;
	uint64_t *p, k;
	time_t end;

	use_native(2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096, 0));
	t.w = view(p, 0);
	t.r = view(p, 1);
	gpsu_user_stats(&s0);
	ASSERT_EQ(0, pthread_create(&th, NULL, tear_reader, &t));
	end = time(NULL) + 2;
	for (k = 1; time(NULL) < end || k < 1000; k++) {
		*t.w = k << 32 | k;
		ASSERT_EQ(gpsSuccess, release(0));
	}
	atomic_store(&t.done, 1);
	pthread_join(th, NULL);
	k--;
	ASSERT_EQ(0, t.torn);
	ASSERT_EQ(k << 32 | k, *t.r);
	ASSERT_LT(1, t.seen);
	gpsu_user_stats(&s1);
	ASSERT_EQ(k, s1.pages_changed - s0.pages_changed);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* ---- torture: no published store lost --------------------------------- */

#define T_THREADS	3		/* per device */
#define T_SLOTS		2048		/* u16 slots per thread */
#define T_WRITERS	(NDEV * T_THREADS)

struct torture {
	uint16_t *p;			/* slot s of writer w: p[s * W + w] */
	atomic_int failed;
	int rounds;
};

struct writer {
	struct torture *t;
	int id, dev;
	unsigned int seed;
	unsigned long checks, bad;
};

static void *torture_writer(void *arg)
{
	struct writer *w = arg;
	struct torture *t = w->t;
	volatile uint16_t *mine;
	int r, s;

	gpsSetDevice(w->dev);
	mine = gpsDevicePtr(t->p);
	for (r = 1; r <= t->rounds && !atomic_load(&t->failed); r++) {
		/* a random share of the slots: pages in and out of use */
		for (s = 0; s < T_SLOTS; s++)
			if (rand_r(&w->seed) % 4 == 0 || r == t->rounds)
				mine[s * T_WRITERS + w->id] = (uint16_t)r;
		if (gpsDeviceSynchronize() != gpsSuccess) {
			atomic_store(&t->failed, 1);
			break;
		}
		/* published: every other device sees what we last wrote */
		for (s = rand_r(&w->seed) % 64; s < T_SLOTS; s += 64) {
			int e = rand_r(&w->seed) % NDEV;
			volatile uint16_t *v = view(t->p, e);

			w->checks++;
			if (v[s * T_WRITERS + w->id] !=
			    mine[s * T_WRITERS + w->id])
				w->bad++;
		}
		gpsSetDevice(w->dev);
	}
	return NULL;
}

/*
 * NDEV devices x T_THREADS threads, each owning u16 slots interleaved
 * with everyone's (adjacent bytes of one word belong to other devices):
 * store a random share, release, check a sample in other devices'
 * views; at the end every view holds every writer's last round.
 */
TEST(torture)
{
	struct writer w[T_WRITERS];
	pthread_t th[T_WRITERS];
	struct gpsu_user_stats s0, s1;
	struct torture t = { .rounds = 60 };
	unsigned long checks = 0, bad = 0, lost = 0;
	int i, d, s;

	use_native(NDEV);
	ASSERT_EQ(gpsSuccess,
		  gpsMallocGPS((void **)&t.p,
			       sizeof(uint16_t) * T_SLOTS * T_WRITERS, 0));
	gpsu_user_stats(&s0);
	for (i = 0; i < T_WRITERS; i++) {
		w[i] = (struct writer){ .t = &t, .id = i, .dev = i % NDEV,
					.seed = (unsigned int)i * 7919u + 1 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, torture_writer,
					    &w[i]));
	}
	for (i = 0; i < T_WRITERS; i++) {
		pthread_join(th[i], NULL);
		checks += w[i].checks;
		bad += w[i].bad;
	}
	ASSERT_EQ(0, atomic_load(&t.failed));
	for (d = 0; d < NDEV; d++) {
		volatile uint16_t *v = view(t.p, d);

		for (s = 0; s < T_SLOTS * T_WRITERS; s++)
			if (v[s] != t.rounds)
				lost++;
	}
	gpsu_user_stats(&s1);
	TH_LOG("%lu checks, %lu stale; %lu slots lost; %lu pages written, %lu blocks pushed",
	       checks, bad, lost,
	       (unsigned long)(s1.pages_written - s0.pages_written),
	       (unsigned long)(s1.blocks_pushed - s0.blocks_pushed));
	ASSERT_LT(0, checks);
	ASSERT_EQ(0, bad);
	ASSERT_EQ(0, lost);
	ASSERT_LT(0, s1.pages_written - s0.pages_written);
	ASSERT_LT(0, s1.blocks_pushed - s0.blocks_pushed);
	ASSERT_EQ(gpsSuccess, gpsFree(t.p));
}

/* Two devices storing different values to the same bytes, then both
 * releasing at once. */
struct racer {
	uint8_t *p;
	int dev;
	uint8_t value;
	pthread_barrier_t *go;
	gpsError_t err;
};

static void *race_store(void *arg)
{
	struct racer *r = arg;

	memset(view(r->p, r->dev), r->value, 65536);
	pthread_barrier_wait(r->go);
	/*
	 * Device 1 first: its release takes device 0's lock only for the
	 * host views (nothing there), then pushes its own while device 0's
	 * release, 5 ms later, pushes device 0's: the two pushes overlap.
	 */
	if (r->dev == 0)
		usleep(5000);
	r->err = release(r->dev);
	return NULL;
}

/*
 * Racing stores converge: after both writers release and a system-wide
 * release, every view holds the same bytes.  A push held in its page's
 * lock (GPSU_TEST_PUSH_DELAY_US) lets the two releases overlap every
 * time: pushes that each read their own replica unlocked crossed, each
 * device ending with the other's value, for good.
 */
TEST(racing_stores_converge)
{
	struct racer r[2];
	pthread_barrier_t go;
	pthread_t th[2];
	uint8_t *p, *v0, *v1;
	int i, round;

	use_native(2);
	setenv("GPSU_TEST_PUSH_DELAY_US", "20000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536, 0));
	for (round = 0; round < 3; round++) {
		pthread_barrier_init(&go, NULL, 2);
		for (i = 0; i < 2; i++) {
			r[i] = (struct racer){ .p = p, .dev = i, .go = &go,
					       .value = 0x11 * (i + 1) +
							round };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, race_store,
						    &r[i]));
		}
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
			ASSERT_EQ(gpsSuccess, r[i].err);
		}
		pthread_barrier_destroy(&go);
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		v0 = view(p, 0);
		v1 = view(p, 1);
		for (i = 0; i < 65536; i++) {
			ASSERT_EQ(v0[i], v1[i]) TH_LOG("round %d byte %d",
						      round, i);
			ASSERT_TRUE(v0[i] == r[0].value ||
				    v0[i] == r[1].value);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct releaser {
	int dev;
	gpsError_t err;
};

static void *release_thread(void *arg)
{
	struct releaser *r = arg;

	r->err = release(r->dev);
	return NULL;
}

/*
 * A store made after its page's diff, while the push waits, is not sent
 * in part: the receiver holds a value some store made (the diff's, whole)
 * and the newer one comes whole with the next release.  The diff sees
 * byte 0 of the word change; the newer store changes bytes 0 and 7: a
 * push of the page's current bytes under the diff's mask made a value
 * nobody stored (0xcc alone).
 */
TEST(no_word_mixed_from_two_stores)
{
	const uint64_t x = 0xaa, y = 0xbb000000000000ccULL;
	struct releaser rel = { .dev = 0 };
	volatile uint64_t *a, *b;
	uint64_t got, *p;
	pthread_t th;

	use_native(2);
	setenv("GPSU_TEST_PUSH_DELAY_US", "200000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	a = view(p, 0);
	b = view(p, 1);
	a[0] = x;
	ASSERT_EQ(0, pthread_create(&th, NULL, release_thread, &rel));
	usleep(50000);		/* the diff is done, the push waits */
	a[0] = y;
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(gpsSuccess, rel.err);
	got = b[0];
	/* x, unless a loaded machine ran the diff after the second store */
	ASSERT_TRUE(got == x || got == y) TH_LOG("device 1 holds %#llx",
						 (unsigned long long)got);
	ASSERT_EQ(gpsSuccess, release(0));
	ASSERT_EQ(y, b[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A release of one device alone (a gpsArgsLocalStores kernel's: the
 * engine's fence_mask without the host views) returns only when its
 * stores are in every subscriber's replica, also when another device's
 * release took them: device 3, not a subscriber, maps replica 0, its
 * release diffs the page device 0 also wrote (taking device 0's store
 * into the twin and its queue) and pushes slowly; device 0's release
 * then found the page unchanged and returned before the store reached
 * replica 1 (found by review: it returned at once, replica 1 held 0).
 */
TEST(release_waits_for_another_devices_push_of_its_store)
{
	const size_t pg = 4096, np = 3;
	struct releaser r3 = { .dev = 3 };
	uint8_t *p, *v0, *v1, *v3;
	pthread_t th;
	size_t i;

	use_native(NDEV);
	setenv("GPSU_TEST_PUSH_DELAY_US", "1000000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, np * pg,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, np * pg,
					   gpsMemAdviseGPSUnsubscribe, 3));
	v0 = view(p, 0);
	v1 = view(p, 1);
	v3 = view(p, 3);
	for (i = 0; i < np; i++)
		v3[i * pg + 100] = 0x33;
	v0[(np - 1) * pg] = 0x42;
	ASSERT_EQ(0, pthread_create(&th, NULL, release_thread, &r3));
	usleep(300000);		/* device 3's release has diffed every page */
	ASSERT_EQ(0, gpsu_engine_user.fence_mask(1ULL << 0, false));
	EXPECT_EQ(0x42, v1[(np - 1) * pg]);
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(gpsSuccess, r3.err);
	EXPECT_EQ(0x42, v1[(np - 1) * pg]);
	unsetenv("GPSU_TEST_PUSH_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct change_writer {
	volatile uint32_t *word;	/* device 1's view of the page */
	atomic_int stop;
	uint32_t last;			/* the last value it stored */
};

static void *change_writer(void *arg)
{
	struct change_writer *w = arg;
	uint32_t v = w->last;

	gpsSetDevice(1);
	while (!atomic_load(&w->stop))
		*w->word = ++v;
	w->last = v;
	return NULL;
}

struct changer {
	void *p;
	gpsMemoryAdvise advice;
	gpsError_t err;
};

static void *change_thread(void *arg)
{
	struct changer *c = arg;

	c->err = gpsMemAdvise(c->p, 4096, c->advice, 1);
	return NULL;
}

/*
 * A store made while its page's subscription changes is kept: device 1
 * stores without a pause while it leaves the page and joins it again.
 * With GPSU_TEST_CHANGE_DELAY_US each change waits after it publishes
 * the page and again before it points device 1's view at the new
 * replica; the writer stops in the second wait. Without stores held
 * during the change a second publication after the point wrote the old
 * replica's older store over the new one's, in every replica, for good
 * (found by review; the torture with racing advice lost one in a third
 * of its runs); without either, they stay in a replica that goes.
 */
TEST(store_racing_a_subscription_change_is_kept)
{
	static const gpsMemoryAdvise adv[] = {
		gpsMemAdviseGPSUnsubscribe, gpsMemAdviseGPSSubscribe,
	};
	struct change_writer w = { 0 };
	struct changer c;
	pthread_t tw, tc;
	uint32_t *p;
	size_t i;
	int d;

	use_native(2);
	setenv("GPSU_TEST_CHANGE_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	w.word = view(p, 1);
	for (i = 0; i < sizeof(adv) / sizeof(adv[0]); i++) {
		atomic_store(&w.stop, 0);
		ASSERT_EQ(0, pthread_create(&tw, NULL, change_writer, &w));
		usleep(50000);
		c = (struct changer){ .p = p, .advice = adv[i] };
		ASSERT_EQ(0, pthread_create(&tc, NULL, change_thread, &c));
		usleep(450000);		/* in the second wait */
		atomic_store(&w.stop, 1);
		ASSERT_EQ(0, pthread_join(tc, NULL));
		ASSERT_EQ(gpsSuccess, c.err);
		ASSERT_EQ(0, pthread_join(tw, NULL));
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		for (d = 0; d < 2; d++) {
			uint32_t got = *(volatile uint32_t *)view(p, d);

			EXPECT_EQ(w.last, got)
				TH_LOG("after %s: device %d reads %u, not %u",
				       i ? "subscribe" : "unsubscribe", d, got,
				       w.last);
		}
	}
	unsetenv("GPSU_TEST_CHANGE_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A new replica starts from what is published: device 0, which the
 * change does not hold, stores a word while device 1 subscribes (after
 * the change published the page), then again a value that is back to
 * the published one in the byte the first changed. Filled from device
 * 0's replica itself, device 1's replica kept the first store's byte
 * for good, while every other view had the last store (the torture saw
 * views disagree after a release).
 */
TEST(new_replica_agrees_after_stores_during_its_fill)
{
	const uint32_t t = 0x11223344, x = 0x99223344, y = 0x11223355;
	volatile uint32_t *v0;
	struct changer c;
	pthread_t tc;
	uint32_t *p;

	use_native(2);
	setenv("GPSU_TEST_CHANGE_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K | gpsMemGPSManual));
	v0 = view(p, 0);
	v0[0] = t;
	ASSERT_EQ(gpsSuccess, release(0));
	c = (struct changer){ .p = p, .advice = gpsMemAdviseGPSSubscribe };
	ASSERT_EQ(0, pthread_create(&tc, NULL, change_thread, &c));
	usleep(100000);		/* published, not yet filled */
	v0[0] = x;
	usleep(300000);		/* filled, not yet pointed */
	v0[0] = y;
	ASSERT_EQ(0, pthread_join(tc, NULL));
	ASSERT_EQ(gpsSuccess, c.err);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	EXPECT_EQ(y, v0[0]);
	EXPECT_EQ(y, *(volatile uint32_t *)view(p, 1));
	unsetenv("GPSU_TEST_CHANGE_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A change holds only the views it points again: a system call that
 * writes into another view (the host's, while device 1 leaves the page)
 * goes on; the kernel raises no SIGSEGV for its own accesses, so a held
 * view would fail it with EFAULT.
 */
TEST(syscall_into_a_view_the_change_leaves_alone)
{
	struct changer c;
	pthread_t tc;
	char *p;
	ssize_t n;
	int fd;

	use_native(2);
	setenv("GPSU_TEST_CHANGE_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	fd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, fd);
	c = (struct changer){ .p = p, .advice = gpsMemAdviseGPSUnsubscribe };
	ASSERT_EQ(0, pthread_create(&tc, NULL, change_thread, &c));
	usleep(100000);			/* in the change's first wait */
	n = read(fd, p, 64);
	EXPECT_EQ(64, n) TH_LOG("read() into the host view: %s",
				n < 0 ? strerror(errno) : "short");
	ASSERT_EQ(0, pthread_join(tc, NULL));
	ASSERT_EQ(gpsSuccess, c.err);
	close(fd);
	unsetenv("GPSU_TEST_CHANGE_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

static volatile uint32_t *sig_target;
static volatile sig_atomic_t sig_done;

static void on_usr1(int sig)
{
	(void)sig;
	*sig_target = 42;
	sig_done = 1;
}

/*
 * A signal handler of the program's, on the thread that changes a
 * subscription, that stores into a page the change holds: the thread
 * blocks such signals until the change ends, so it does not wait on its
 * own hold for ever (found by review: it hung).
 */
TEST(signal_on_the_changing_thread_does_not_wait_on_its_hold)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct timespec ts;
	struct changer c;
	pthread_t tc;
	char *p;

	use_native(2);
	setenv("GPSU_TEST_CHANGE_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	sig_target = view(p, 1);	/* held by the change below */
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	c = (struct changer){ .p = p, .advice = gpsMemAdviseGPSUnsubscribe };
	ASSERT_EQ(0, pthread_create(&tc, NULL, change_thread, &c));
	usleep(100000);			/* it holds the page, asleep */
	ASSERT_EQ(0, pthread_kill(tc, SIGUSR1));
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(tc, NULL, &ts)) {
		TH_LOG("the changing thread hangs");
		_exit(1);		/* a hung holder cannot be cleaned up */
	}
	ASSERT_EQ(gpsSuccess, c.err);
	ASSERT_EQ(1, sig_done);
	ASSERT_EQ(gpsSuccess, release(0));
	ASSERT_EQ(42, ((volatile uint32_t *)view(p, 0))[0]);
	unsetenv("GPSU_TEST_CHANGE_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

struct toucher {
	volatile uint32_t *word;	/* device 1's view */
	uint32_t got;
};

static void *toucher(void *arg)
{
	struct toucher *t = arg;

	gpsSetDevice(1);
	t->got = *t->word;
	return NULL;
}

/*
 * A device's first access that faults while tracking runs, and whose
 * handler looks only after gpsTrackingStop() returned, is retried, not
 * taken for the program's crash: GPSU_TEST_FAULT_DELAY_US holds the
 * handler before it looks (found by review: the fault went to the
 * default action, SIGSEGV, the test's child killed).
 */
TEST(first_access_racing_tracking_stop)
{
	struct toucher t = { 0 };
	pthread_t th;
	uint32_t *p;

	use_native(2);
	setenv("GPSU_TEST_FAULT_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0x5a, 65536));
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	t.word = view(p, 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, toucher, &t));
	usleep(100000);		/* its handler sleeps */
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0x5a5a5a5aU, t.got);
	unsetenv("GPSU_TEST_FAULT_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * Fills the process's VMA budget (vm.max_map_count): every other page of
 * a PROT_NONE region made readable until mprotect fails. Returns the
 * region (munmap @len to give the budget back).
 */
static char *use_up_mappings(size_t *len)
{
	size_t n = 70000, i;
	char *r;

	*len = n * 4096;
	r = mmap(NULL, *len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	for (i = 1; i < n; i += 2)
		if (mprotect(r + i * 4096, 4096, PROT_READ))
			return r;
	munmap(r, *len);
	return NULL;		/* a limit above 70,000 mappings */
}

/*
 * With no mapping left to open one page (vm.max_map_count), a tracking
 * fault and a managed fault open the device's whole view instead: the
 * access goes on and nothing stored is lost (found by review: the
 * process got SIGSEGV).
 */
TEST(faults_past_max_map_count_open_the_view)
{
	struct gpsu_user_stats s0, s1;
	unsigned long long m[16];
	volatile uint32_t *v1, *u1;
	uint32_t *p, *u;
	size_t len, np;
	char *fill;

#ifdef __SANITIZE_THREAD__
	SKIP(return, "TSan cannot map its shadow with no mapping left");
#endif
	use_native(2);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 16 * 4096,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&u, 16 * 4096,
						    gpsMemManagedOnFault));
	ASSERT_EQ(gpsSuccess, gpsMemset(u, 0, 16 * 4096));
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	v1 = view(p, 1);
	u1 = view(u, 1);
	gpsu_user_stats(&s0);
	fill = use_up_mappings(&len);
	if (!fill)
		SKIP(return, "vm.max_map_count above 70,000");
	v1[5 * 1024] = 51;		/* a page inside the view */
	v1[9 * 1024] = 91;
	u1[7 * 1024] = 71;
	munmap(fill, len);
	gpsu_user_stats(&s1);
	EXPECT_LE(2, s1.opened_whole - s0.opened_whole);
	EXPECT_EQ(71, ((volatile uint32_t *)view(u, 0))[7 * 1024]);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(p, 16 * 4096, m, 16, &np));
	EXPECT_TRUE(m[5] & 2);
	EXPECT_TRUE(m[9] & 2);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	EXPECT_EQ(51, ((volatile uint32_t *)view(p, 0))[5 * 1024]);
	EXPECT_EQ(91, ((volatile uint32_t *)view(p, 0))[9 * 1024]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));
	ASSERT_EQ(gpsSuccess, gpsFree(u));
}

/*
 * A stream's fence is asynchronous: handed to its ring, it returns
 * while the push is still held (GPSU_TEST_PUSH_DELAY_US), counts as in
 * flight, and the reap returns when the store is in the other replica.
 * Fences handed in meanwhile merge into one.
 */
TEST(stream_fences_are_asynchronous)
{
	struct gpsu_engine_ring *r;
	volatile uint32_t *v0, *v1;
	uint32_t *p;

	use_native(2);
	setenv("GPSU_TEST_PUSH_DELAY_US", "1000000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 4096,
					   gpsMemGPSPage4K));
	ASSERT_NE(NULL, gpsu_engine_user.ring_new);
	r = gpsu_engine_user.ring_new();
	ASSERT_NE(NULL, r);
	v0 = view(p, 0);
	v1 = view(p, 1);
	v0[0] = 7;
	ASSERT_EQ(0, gpsu_engine_user.fence_async(r, 1ULL << 0, false));
	ASSERT_EQ(0, gpsu_engine_user.fence_async(r, 1ULL << 1, true));
	EXPECT_LE(1U, gpsu_engine_user.ring_pending(r));
	EXPECT_EQ(0, v1[0]);		/* the push is held for 1 s */
	ASSERT_EQ(0, gpsu_engine_user.ring_reap(r));
	EXPECT_EQ(0U, gpsu_engine_user.ring_pending(r));
	EXPECT_EQ(7, v1[0]);
	gpsu_engine_user.ring_free(r);
	unsetenv("GPSU_TEST_PUSH_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/*
 * A tracking fault past vm.max_map_count while a change holds the same
 * view's pages waits for the change before it opens the whole view:
 * opened at once, the held page took a store into the replica the
 * change then dropped (found by review: both views read the old value).
 */
TEST(view_opened_whole_waits_for_a_change)
{
	volatile uint32_t *v1;
	struct changer c;
	pthread_t tc;
	uint32_t *p;
	size_t len;
	char *fill;

#ifdef __SANITIZE_THREAD__
	SKIP(return, "TSan cannot map its shadow with no mapping left");
#endif
	use_native(2);
	setenv("GPSU_TEST_CHANGE_DELAY_US", "300000", 1);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 16 * 4096,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, 16 * 4096));
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	v1 = view(p, 1);
	v1[3 * 1024] = 1;		/* device 1 uses page 3 */
	c = (struct changer){ .p = (char *)p + 3 * 4096,
			      .advice = gpsMemAdviseGPSUnsubscribe };
	ASSERT_EQ(0, pthread_create(&tc, NULL, change_thread, &c));
	usleep(100000);			/* page 3 of view 1 held */
	fill = use_up_mappings(&len);
	if (!fill) {
		pthread_join(tc, NULL);
		SKIP(return, "vm.max_map_count above 70,000");
	}
	v1[9 * 1024] = 91;		/* opens the whole view */
	v1[3 * 1024] = 77;
	munmap(fill, len);
	ASSERT_EQ(0, pthread_join(tc, NULL));
	ASSERT_EQ(gpsSuccess, c.err);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	EXPECT_EQ(77, ((volatile uint32_t *)view(p, 0))[3 * 1024]);
	EXPECT_EQ(77, v1[3 * 1024]);
	EXPECT_EQ(91, ((volatile uint32_t *)view(p, 0))[9 * 1024]);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	unsetenv("GPSU_TEST_CHANGE_DELAY_US");
	ASSERT_EQ(gpsSuccess, gpsFree(p));
}

/* Root becomes user nobody: 0, or -1 (errno set). */
static int become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534))
		return -1;
	return setresuid(65534, 65534, 65534);
}

/*
 * The engine's point is machines where no module loads, for users with
 * no privilege: run as root, the test becomes user nobody first (with
 * vm.unprivileged_userfaultfd 0, the default, its userfaultfd then
 * takes user-mode faults only). Capture, a subscription change, tracking
 * and a read(2) into a view must all work, and the gpsctl files go into
 * a directory of the user's own.
 */
TEST(an_ordinary_user_runs_it)
{
	struct gpsu_user_stats s0, s1;
	unsigned long long m[1];
	char dir[64], *p;
	struct stat st;
	ssize_t n;
	int d, fd;

	if (geteuid() == 0) {
		ASSERT_EQ(0, become_nobody());
		/* as a user who logged in: dumpable, /proc/self its own */
		ASSERT_EQ(0, prctl(PR_SET_DUMPABLE, 1));
	}
	ASSERT_NE(0, geteuid());
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("GPSU_STATS_DIR");
	use_native(NDEV);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536,
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSSubscribe, 1));
	masks(p, 65536, 1, m);
	ASSERT_EQ(3ULL, m[0]);

	gpsu_user_stats(&s0);
	((volatile char *)view(p, 1))[100] = 'u';
	ASSERT_EQ(gpsSuccess, release(1));
	ASSERT_EQ('u', ((volatile char *)view(p, 0))[100]);
	ASSERT_EQ('u', ((volatile char *)view(p, 3))[100]);	/* served */

	/* the kernel's store into a view is captured like any other */
	fd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, (char *)view(p, 1) + 8192, 64);
	EXPECT_EQ(64, n) TH_LOG("read() into a view: %s",
				n < 0 ? strerror(errno) : "short");
	close(fd);
	((volatile char *)view(p, 0))[8192] = 'z';
	ASSERT_EQ(gpsSuccess, release(0));
	ASSERT_EQ('z', ((volatile char *)view(p, 1))[8192]);
	((volatile char *)view(p, 1))[8193] = 'y';	/* after the read */
	ASSERT_EQ(gpsSuccess, release(1));
	ASSERT_EQ('y', ((volatile char *)view(p, 0))[8193]);
	gpsu_user_stats(&s1);
	ASSERT_LE(3, s1.pages_written - s0.pages_written);

	/* a change of subscription: it holds pages by the fault handler */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(p, 65536,
					   gpsMemAdviseGPSUnsubscribe, 1));
	masks(p, 65536, 1, m);
	ASSERT_EQ(1ULL, m[0]);
	ASSERT_EQ('y', ((volatile char *)view(p, 1))[8193]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));

	/* tracking: first accesses by SIGSEGV */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&p, 65536, 0));
	gpsu_user_stats(&s0);
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	((volatile char *)view(p, 2))[1] = 1;
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	gpsu_user_stats(&s1);
	ASSERT_EQ(1, s1.track_faults - s0.track_faults);
	masks(p, 65536, 1, m);
	ASSERT_EQ(4ULL, m[0]);
	for (d = 0; d < NDEV; d++)
		ASSERT_EQ(1, ((volatile char *)view(p, d))[1]);
	ASSERT_EQ(gpsSuccess, gpsFree(p));

	snprintf(dir, sizeof(dir), "/tmp/gps-%u", (unsigned int)getuid());
	ASSERT_EQ(0, lstat(dir, &st)) TH_LOG("%s: %s", dir, strerror(errno));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(getuid(), st.st_uid);
	ASSERT_EQ(0, st.st_mode & 077);
}

/*
 * A process that changed its credentials is not dumpable, so its
 * /proc/self/pagemap is root's: the engine cannot start, and says why
 * and what to do, instead of blaming the kernel.
 */
TEST(a_process_that_dropped_privilege_is_told_why)
{
	char msg[512] = "";
	int fd[2], err2;
	ssize_t n;

	if (geteuid() != 0)
		SKIP(return, "needs root, to drop it");
	ASSERT_EQ(0, become_nobody());
	ASSERT_NE(1, prctl(PR_GET_DUMPABLE));
	use_native(NDEV);
	ASSERT_EQ(0, pipe(fd));
	err2 = dup(2);
	ASSERT_LE(0, err2);
	dup2(fd[1], 2);
	EXPECT_EQ(gpsErrorNotSupported, gpsSetDevice(0));
	dup2(err2, 2);
	close(fd[1]);
	n = read(fd[0], msg, sizeof(msg) - 1);
	ASSERT_LT(0, n);
	msg[n] = 0;
	EXPECT_NE(NULL, strstr(msg, "PR_SET_DUMPABLE")) TH_LOG("%s", msg);
	EXPECT_EQ(NULL, strstr(msg, "kernel lacks")) TH_LOG("%s", msg);
}

TEST_HARNESS_MAIN
