// SPDX-License-Identifier: GPL-2.0
/*
 * Description: races of gps.ko made to happen every time.  In a module
 * built with CONFIG_GPS_DEBUG (the debug kernel's guests) each test opens
 * one window of the driver wide with a delay point,
 * /sys/kernel/debug/gps/delay_<point>/ (us, probability, hits), holds one
 * task in it and runs the racing call beside it:
 *
 *  - alloc_publish: GPS_IOC_FREE of an allocation's handle while
 *    GPS_IOC_ALLOC that made it has not returned yet.  The free succeeds,
 *    the allocation's reply is still right, and nothing is left counted
 *    (nr_allocs) or reported (KASAN, list debugging).
 *  - fence_owners: two fences of one device that wrote, as a
 *    non-subscriber, into another device's replica.  Neither returns
 *    before that store reached every subscriber.
 *  - killed_fence: the same, when the first fence is killed while it
 *    waits for the owner: the second still publishes the store.
 *  - harvest_snapshot: a view that maps a page writable for the first
 *    time while a harvest is about to write-protect it.  Its later stores
 *    are published by the next fence and survive a push into the page.
 *  - fence_beside_fence_all: a non-subscriber stores and fences while a
 *    fence of every device, which fenced its owner already, runs on.
 *  - captured_store_fenced: a store into a page that a write fault
 *    captured (mapped writable with no fault of its own), then a host
 *    fence, while that fault has not returned yet.
 *  - link_charge: a new link_bandwidth (unlimited) set while a fence's
 *    push is about to charge its bytes to the old, slow link.  The fence
 *    does not then wait for the old link.
 *
 * Without the delay points (stock kernels) each test runs the same calls
 * a number of rounds without widening anything, with the same asserts:
 * evidence only in proportion to the rounds.  Delay settings and knobs
 * are restored.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define GP		GPS_PAGE_64K
#define WINDOW_US	400000		/* a delay point's sleep */
#define PLAIN_ROUNDS	50		/* rounds without delay points */

static const char *const race_points[] = {
	"alloc_publish", "fence_owners", "fence_named", "harvest_lock",
	"mkwrite_captured", "link_charge",
};

#define NR_RACE_POINTS	(sizeof(race_points) / sizeof(race_points[0]))

FIXTURE(races) {
	struct gps_fixture;
	int delays;			/* the delay points exist */
	int rounds;			/* 1 with them, PLAIN_ROUNDS without */
};

FIXTURE_VARIANT(races) {
	int delayed;			/* widen the windows */
};

FIXTURE_VARIANT_ADD(races, delayed) {
	.delayed = 1,
};

FIXTURE_VARIANT_ADD(races, plain) {
	.delayed = 0,
};

static const char *const race_knobs[] = {
	GPS_KNOBS_COMMON, "keep_writable_ms", "capture_bytes",
	"link_bandwidth", "link_latency_ns", NULL,
};

FIXTURE_SETUP(races)
{
	/* Skipped before anything changes: a skipped setup has no teardown. */
	gps_fx(self)->fd = -1;
	self->delays = gps_have_delays();
	if (variant->delayed && !self->delays)
		SKIP(return, "no delay points (module without CONFIG_GPS_DEBUG)");
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, race_knobs))
		return;
	self->rounds = variant->delayed ? 1 : PLAIN_ROUNDS;
	/* Only fences publish: the push thread could close a window. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
}

FIXTURE_TEARDOWN(races)
{
	unsigned int i;

	if (self->delays)
		for (i = 0; i < NR_RACE_POINTS; i++)
			EXPECT_EQ(0, gps_delay_arm(race_points[i], 0));
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* Open @point's window when the variant widens windows. */
static int race_arm(const struct _fixture_variant_races *variant,
		    const char *point)
{
	return variant->delayed ? gps_delay_arm(point, WINDOW_US) : 0;
}

struct freer {
	int fd;
	uint64_t handle;
	volatile int stop;
	volatile int freed;
};

static void *free_loop(void *arg)
{
	struct freer *f = arg;
	struct gps_free_args a = { .handle = f->handle };

	while (!f->stop && !f->freed)
		if (!ioctl(f->fd, GPS_IOC_FREE, &a))
			f->freed = 1;
	return NULL;
}

/*
 * A handle freed by another thread while its GPS_IOC_ALLOC is still in
 * the driver: the allocation is gone for good (a second free fails),
 * the reply is still the allocation's, and nothing is left behind.
 */
TEST_F(races, alloc_publish)
{
	struct gps_fixture *fx = gps_fx(self);
	int r;

	for (r = 0; r < self->rounds; r++) {
		struct freer f = { .fd = fx->fd };
		long long hits = variant->delayed ?
				 gps_delay_get("alloc_publish", "hits") : 0;
		struct gps_buf b;
		pthread_t t;

		/* Handles come from one counter: the next one is known. */
		ASSERT_EQ(0, gps_alloc(fx->fd, &b, GP, GPS_MEM_GPS, 0, 0, GP));
		ASSERT_EQ(0, gps_free(fx->fd, &b));
		f.handle = b.args.handle + 1;
		ASSERT_EQ(0, race_arm(variant, "alloc_publish"));
		ASSERT_EQ(0, pthread_create(&t, NULL, free_loop, &f));
		ASSERT_EQ(0, gps_alloc(fx->fd, &b, 3 * GP, GPS_MEM_GPS, 0, 0,
				       GP));
		f.stop = 1;
		ASSERT_EQ(0, pthread_join(t, NULL));
		if (variant->delayed)
			ASSERT_EQ(0, gps_delay_arm("alloc_publish", 0));
		ASSERT_EQ(f.handle, b.args.handle);
		ASSERT_EQ(3 * GP, b.args.alloc_size);
		ASSERT_EQ(GP, b.args.out_page_size);
		if (variant->delayed) {
			/* The window was open, and the free went into it. */
			ASSERT_LT(hits, gps_delay_get("alloc_publish", "hits"));
			ASSERT_TRUE(f.freed);
		}
		if (f.freed) {
			ASSERT_EQ(-EINVAL, gps_free(fx->fd, &b));
		} else {
			ASSERT_EQ(0, gps_free(fx->fd, &b));
		}
	}
	/* No allocation, replica or twin left counted. */
	ASSERT_TRUE(gps_usage_eq(fx->start, gps_usage_wait(fx->start, 2000)));
}

struct fencer {
	int fd;
	uint32_t device;
	int ret;
};

/* A host fence (GPS_FENCE_HOST | GPS_FENCE_MASK, no device): 0 or -errno. */
static int host_fence(int fd)
{
	struct gps_fence_args f = {
		.flags = GPS_FENCE_MASK | GPS_FENCE_HOST,
	};

	return ioctl(fd, GPS_IOC_FENCE, &f) ? -errno : 0;
}

static void *fence_thread(void *arg)
{
	struct fencer *f = arg;

	f->ret = gps_fence(f->fd, f->device, NULL);
	return NULL;
}

/*
 * A manual allocation of one GPS page subscribed by devices 0 and 2,
 * with device 1 (not a subscriber) storing @v into byte @off through
 * its view, which maps a subscriber's replica.
 */
static void owners_setup(struct __test_metadata *_metadata,
			 struct gps_fixture *fx, unsigned char v)
{
	unsigned char *v1;

	ASSERT_EQ(0, gps_alloc(fx->fd, &fx->b, GP, GPS_MEM_GPS,
			       GPS_ALLOC_MANUAL, 0, GP));
	fx->have_b = 1;
	ASSERT_EQ(0, gps_advise(fx->fd, &fx->b, 0, GP, GPS_ADVISE_SUBSCRIBE,
				2, NULL));
	ASSERT_EQ(0x5ULL, gps_subs(fx->fd, &fx->b, 0));
	v1 = gps_map(fx->fd, &fx->b, 1);
	ASSERT_NE(NULL, v1);
	v1[100] = v;
}

/* Both subscribers' replicas hold @v at byte 100. */
static int owners_published(struct __test_metadata *_metadata,
			    struct gps_fixture *fx, unsigned char v)
{
	unsigned char got[2];

	EXPECT_EQ(0, gps_read(fx->fd, &fx->b, 0, 100, &got[0], 1));
	EXPECT_EQ(0, gps_read(fx->fd, &fx->b, 2, 100, &got[1], 1));
	if (got[0] != v || got[1] != v)
		TH_LOG("replica 0: %u, replica 2: %u, not %u", got[0], got[1],
		       v);
	return got[0] == v && got[1] == v;
}

/*
 * Two fences of device 1 at once, the first held after it took the
 * owners device 1 wrote into: the second returns only once device 1's
 * store is in both subscribers' replicas.
 */
TEST_F(races, fence_owners)
{
	struct gps_fixture *fx = gps_fx(self);
	int r;

	if (fx->nr < 3)
		SKIP(return, "needs 3 devices");
	for (r = 0; r < self->rounds; r++) {
		struct fencer first = { .fd = fx->fd, .device = 1 };
		long long hits = variant->delayed ?
				 gps_delay_get("fence_owners", "hits") : 0;
		unsigned char v = 1 + r % 250;
		pthread_t t;

		owners_setup(_metadata, fx, v);
		ASSERT_EQ(0, race_arm(variant, "fence_owners"));
		ASSERT_EQ(0, pthread_create(&t, NULL, fence_thread, &first));
		if (variant->delayed) {
			/* The first is in the window; the second passes. */
			ASSERT_EQ(0, gps_delay_wait_hit("fence_owners", hits));
			ASSERT_EQ(0, gps_delay_arm("fence_owners", 0));
		}
		ASSERT_EQ(0, gps_fence(fx->fd, 1, NULL));
		ASSERT_TRUE(owners_published(_metadata, fx, v));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, first.ret);
		ASSERT_EQ(0, gps_free(fx->fd, &fx->b));
		fx->have_b = 0;
	}
}

/*
 * The first fence of device 1 is killed while it waits for the harvest_lock
 * of the owner device 1 wrote into, held by a fence of the owner itself
 * (held in the harvest of another allocation): a later fence of device 1
 * still publishes device 1's store.
 */
TEST_F(races, killed_fence)
{
	struct gps_fixture *fx = gps_fx(self);
	struct fencer fo = { .fd = fx->fd };
	unsigned char got[2], *vx;
	struct gps_buf x;
	long long hits;
	int status;
	pthread_t t;
	pid_t pid;

	if (fx->nr < 3)
		SKIP(return, "needs 3 devices");
	if (!variant->delayed)
		SKIP(return, "needs the delay points to be killed in the window");
	/* No replica stays on a dirty list for pages kept writable. */
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
	/* The owner's own dirty page, for its fence to be held in. */
	ASSERT_EQ(0, gps_alloc(fx->fd, &x, GP, GPS_MEM_GPS, 0, 0, GP));
	ASSERT_EQ(0, gps_advise(fx->fd, &x, 0, GP, GPS_ADVISE_SUBSCRIBE, 2,
				NULL));
	owners_setup(_metadata, fx, 5);
	/* Device 1's store went into the replica of its view's owner. */
	ASSERT_EQ(0, gps_read(fx->fd, &fx->b, 0, 100, &got[0], 1));
	ASSERT_EQ(0, gps_read(fx->fd, &fx->b, 2, 100, &got[1], 1));
	ASSERT_EQ(5, got[0] | got[1]);
	fo.device = got[0] == 5 ? 0 : 2;
	ASSERT_EQ(0, gps_fence(fx->fd, GPS_FENCE_ALL, NULL));
	vx = gps_map(fx->fd, &x, fo.device);
	ASSERT_NE(NULL, vx);
	vx[0] = 1;
	/* The owner's fence takes one dirty replica, and is held in it. */
	hits = gps_delay_get("harvest_lock", "hits");
	ASSERT_EQ(0, gps_delay_arm("harvest_lock", 3 * WINDOW_US));
	ASSERT_EQ(0, pthread_create(&t, NULL, fence_thread, &fo));
	ASSERT_EQ(0, gps_delay_wait_hit("harvest_lock", hits));
	ASSERT_EQ(0, gps_delay_arm("harvest_lock", 0));
	/* Device 1 stores again: on the owner's list, after that fence. */
	((unsigned char *)fx->b.view[1])[100] = 7;
	hits = gps_delay_get("fence_owners", "hits");
	ASSERT_EQ(0, gps_delay_arm("fence_owners", WINDOW_US / 4));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Takes device 1's owners, then waits for the owner's lock. */
		gps_fence(fx->fd, 1, NULL);
		_exit(0);
	}
	/* Past the owners' window, into the wait for the owner's lock. */
	ASSERT_EQ(0, gps_delay_wait_hit("fence_owners", hits));
	ASSERT_EQ(0, gps_delay_arm("fence_owners", 0));
	usleep(WINDOW_US / 2);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, fo.ret);
	ASSERT_EQ(0, gps_fence(fx->fd, 1, NULL));
	ASSERT_TRUE(owners_published(_metadata, fx, 7));
	ASSERT_EQ(0, gps_free(fx->fd, &x));
}

/*
 * The host view maps a page writable for the first time while device 0's
 * harvest of it is held between reading its dirty pages and protecting
 * them (keep_writable_ms 0: every view is protected).  A store through
 * the host view after that fence still faults, so the next fence
 * publishes it; a push of device 1's store into the page keeps it.
 */
TEST_F(races, harvest_snapshot)
{
	struct gps_fixture *fx = gps_fx(self);
	int r;

	if (fx->nr < 2)
		SKIP(return, "needs 2 devices");
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
	for (r = 0; r < self->rounds; r++) {
		struct fencer f0 = { .fd = fx->fd, .device = 0 };
		long long hits = variant->delayed ?
				 gps_delay_get("harvest_lock", "hits") : 0;
		unsigned char *v0, *v1, *host, got[4];
		pthread_t t;
		int d;

		gps_fixture_alloc(_metadata, fx, GP, GP, 2);
		v0 = fx->b.view[0];
		v1 = fx->b.view[1];
		host = mmap(NULL, GP, PROT_READ | PROT_WRITE, MAP_SHARED,
			    fx->fd, fx->b.args.offset +
			    (uint64_t)fx->nr * fx->b.args.view_stride);
		ASSERT_NE(MAP_FAILED, host);
		v0[0] = 1;
		ASSERT_EQ(0, race_arm(variant, "harvest_lock"));
		ASSERT_EQ(0, pthread_create(&t, NULL, fence_thread, &f0));
		if (variant->delayed)
			ASSERT_EQ(0, gps_delay_wait_hit("harvest_lock", hits));
		host[100] = 2;		/* first store through the host view */
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, f0.ret);
		if (variant->delayed)
			ASSERT_EQ(0, gps_delay_arm("harvest_lock", 0));
		host[200] = 3;		/* after that fence */
		v1[300] = 4;		/* pushed into device 0's page */
		ASSERT_EQ(0, gps_fence(fx->fd, GPS_FENCE_ALL, NULL));
		for (d = 0; d < 2; d++) {
			ASSERT_EQ(0, gps_read(fx->fd, &fx->b, d, 0, &got[0], 1));
			ASSERT_EQ(0, gps_read(fx->fd, &fx->b, d, 100, &got[1], 1));
			ASSERT_EQ(0, gps_read(fx->fd, &fx->b, d, 200, &got[2], 1));
			ASSERT_EQ(0, gps_read(fx->fd, &fx->b, d, 300, &got[3], 1));
			EXPECT_EQ(1, got[0]);
			EXPECT_EQ(2, got[1]);
			EXPECT_EQ(3, got[2]) TH_LOG("device %d lost the host's "
						    "store after the harvest",
						    d);
			EXPECT_EQ(4, got[3]);
		}
		ASSERT_EQ(0, munmap(host, GP));
		ASSERT_EQ(0, gps_free(fx->fd, &fx->b));
		fx->have_b = 0;
		memset(fx->b.view, 0, sizeof(fx->b.view));
	}
}

/*
 * A fence of every device is held after it fenced them, before the
 * owners they wrote into; meanwhile device 1 (not a subscriber) stores
 * and fences itself: that fence returns only once the store is in both
 * subscribers' replicas, although the first fence had fenced its owner
 * already.
 */
TEST_F(races, fence_beside_fence_all)
{
	struct gps_fixture *fx = gps_fx(self);
	int r;

	if (fx->nr < 3)
		SKIP(return, "needs 3 devices");
	for (r = 0; r < self->rounds; r++) {
		struct fencer all = { .fd = fx->fd, .device = GPS_FENCE_ALL };
		long long hits = variant->delayed ?
				 gps_delay_get("fence_named", "hits") : 0;
		unsigned char v = 1 + r % 250, *v1;
		pthread_t t;

		ASSERT_EQ(0, gps_alloc(fx->fd, &fx->b, GP, GPS_MEM_GPS,
				       GPS_ALLOC_MANUAL, 0, GP));
		fx->have_b = 1;
		ASSERT_EQ(0, gps_advise(fx->fd, &fx->b, 0, GP,
					GPS_ADVISE_SUBSCRIBE, 2, NULL));
		v1 = gps_map(fx->fd, &fx->b, 1);
		ASSERT_NE(NULL, v1);
		ASSERT_EQ(0, race_arm(variant, "fence_named"));
		ASSERT_EQ(0, pthread_create(&t, NULL, fence_thread, &all));
		if (variant->delayed) {
			ASSERT_EQ(0, gps_delay_wait_hit("fence_named", hits));
			ASSERT_EQ(0, gps_delay_arm("fence_named", 0));
		}
		v1[100] = v;
		ASSERT_EQ(0, gps_fence(fx->fd, 1, NULL));
		ASSERT_TRUE(owners_published(_metadata, fx, v));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, all.ret);
		ASSERT_EQ(0, gps_free(fx->fd, &fx->b));
		fx->have_b = 0;
		memset(fx->b.view, 0, sizeof(fx->b.view));
	}
}

struct host_storer {
	volatile unsigned char *p;
	unsigned char v;
};

static void *host_store(void *arg)
{
	struct host_storer *h = arg;

	*h->p = h->v;
	return NULL;
}

/*
 * A host store's fault captures the other small pages of its GPS page
 * (capture_bytes 0) and is held before it returns; another thread stores
 * into a captured page, with no fault, and makes a host fence: the fence
 * publishes that store, which the first fault recorded before capturing.
 */
TEST_F(races, captured_store_fenced)
{
	struct gps_fixture *fx = gps_fx(self);
	int r, node;

	if (fx->nr < 2)
		SKIP(return, "needs 2 devices");
	node = gps_node_of(fx->fd, 0);
	ASSERT_LE(0, node);
	ASSERT_EQ(0, gps_set_knob("capture_bytes", 0));
	for (r = 0; r < self->rounds; r++) {
		long long hits = variant->delayed ?
				 gps_delay_get("mkwrite_captured", "hits") : 0;
		struct host_storer hs;
		volatile unsigned char *host;
		long long faults;
		unsigned char got;
		pthread_t t;

		gps_fixture_alloc(_metadata, fx, GP, GP, 0);
		host = mmap(NULL, GP, PROT_READ | PROT_WRITE, MAP_SHARED,
			    fx->fd, fx->b.args.offset +
			    (uint64_t)fx->nr * fx->b.args.view_stride);
		ASSERT_NE(MAP_FAILED, host);
		/* Two small pages changed in an epoch: the next fault captures. */
		host[0] = 1;
		host[4096] = 1;
		ASSERT_EQ(0, host_fence(fx->fd));
		hs.p = &host[2 * 4096];
		hs.v = 2;
		ASSERT_EQ(0, race_arm(variant, "mkwrite_captured"));
		ASSERT_EQ(0, pthread_create(&t, NULL, host_store, &hs));
		if (variant->delayed) {
			ASSERT_EQ(0, gps_delay_wait_hit("mkwrite_captured", hits));
			ASSERT_EQ(0, gps_delay_arm("mkwrite_captured", 0));
		}
		faults = gps_stat(node, "host_write_faults");
		host[3 * 4096 + 8] = 3;
		if (variant->delayed) {
			/* A captured page: the store took no fault. */
			ASSERT_EQ(faults, gps_stat(node, "host_write_faults"));
		}
		ASSERT_EQ(0, host_fence(fx->fd));
		ASSERT_EQ(0, gps_read(fx->fd, &fx->b, 1, 3 * 4096 + 8, &got, 1));
		EXPECT_EQ(3, got) TH_LOG("device 1 missed a store to a captured page");
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, host_fence(fx->fd));
		ASSERT_EQ(0, gps_read(fx->fd, &fx->b, 1, 2 * 4096, &got, 1));
		ASSERT_EQ(2, got);
		ASSERT_EQ(0, munmap((void *)host, GP));
		ASSERT_EQ(0, gps_free(fx->fd, &fx->b));
		fx->have_b = 0;
	}
}

/*
 * The slowest link (1000 bytes/s) owes a small page's push 4 s.  A
 * fence is held after its push sent the first small page, before its
 * bytes are charged; meanwhile the link is set unlimited, which forgets
 * what it owed.  The charge must see the new link: the fence does not
 * wait for the link at all (link_wait_ns stays), not the old link's 4 s
 * for that page.  Without the delay point there is no window to
 * hold (a fence already sleeping out the old link when the link changes
 * sleeps on): the plain variant is skipped.
 */
TEST_F_TIMEOUT(races, link_charge, 120)
{
	struct gps_fixture *fx = gps_fx(self);
	struct fencer f0 = { .fd = fx->fd, .device = 0 };
	long long hits, t0, t1, w0;
	unsigned char got;
	int node;
	pthread_t t;

	if (fx->nr < 2)
		SKIP(return, "needs 2 devices");
	if (!variant->delayed)
		SKIP(return, "a window only the delay point holds open");
	node = gps_node_of(fx->fd, 0);
	ASSERT_LE(0, node);
	gps_fixture_alloc(_metadata, fx, GP, GP, 2);
	ASSERT_EQ(0, gps_set_knob("link_latency_ns", 0));
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 1000));
	memset(fx->b.view[0], 5, GP);
	hits = gps_delay_get("link_charge", "hits");
	w0 = gps_stat(node, "link_wait_ns");
	ASSERT_EQ(0, race_arm(variant, "link_charge"));
	t0 = gps_now_ms();
	ASSERT_EQ(0, pthread_create(&t, NULL, fence_thread, &f0));
	ASSERT_EQ(0, gps_delay_wait_hit("link_charge", hits));
	ASSERT_EQ(0, gps_delay_arm("link_charge", 0));
	ASSERT_EQ(0, gps_set_knob("link_bandwidth", 0));
	ASSERT_EQ(0, pthread_join(t, NULL));
	t1 = gps_now_ms();
	ASSERT_EQ(0, f0.ret);
	EXPECT_EQ(w0, gps_stat(node, "link_wait_ns"))
		TH_LOG("the fence waited for the old link (%lld ms in all)",
		       t1 - t0);
	ASSERT_EQ(0, gps_read(fx->fd, &fx->b, 1, GP - 1, &got, 1));
	EXPECT_EQ(5, got);
}

TEST_HARNESS_MAIN
