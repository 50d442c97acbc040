// SPDX-License-Identifier: GPL-2.0
/*
 * Description: SIGKILL at random points.  A child opens /dev/gps, sets up
 * and runs threads that write through views (faults in flight), fence in
 * a loop, subscribe/unsubscribe/collapse and toggle tracking, allocate
 * and free; the parent kills it after a random delay (sometimes before
 * its setup is done: inside GPS_IOC_ALLOC of a large allocation).  After
 * every kill the driver's counters (nr_allocs, replica_pages, twin_pages)
 * return to their starting values; at the end no twin or replica page is
 * left.  GPS_KILL_ROUNDS (default 40) rounds, GPS_KILL_SEED.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#include <pthread.h>

#define KL_SIZE		(1 << 20)

enum kl_kind {
	KL_WRITE,	/* stores through every view */
	KL_FENCE,	/* stores and fences */
	KL_ADVISE,	/* stores, subscribe/unsubscribe/collapse, tracking */
	KL_ALLOC,	/* stores, alloc/free of others */
	KL_ALL,		/* all of the above at once */
	KL_NR
};

static const char *const kl_name[KL_NR] = {
	"writing", "fencing", "advising+tracking", "allocating", "all",
};

struct kl_child {
	int fd, nr, kind;
	struct gps_buf b;
	uint64_t rng;
};

static void *kl_writer(void *arg)
{
	struct kl_child *c = arg;
	uint64_t s = c->rng ^ 1;

	for (;;) {
		int d = rnd(&s) % c->nr;
		volatile unsigned char *p = c->b.view[d];

		if (p)
			p[rnd(&s) % KL_SIZE] = rnd(&s);
	}
	return NULL;
}

static void *kl_fencer(void *arg)
{
	struct kl_child *c = arg;
	uint64_t s = c->rng ^ 2;

	for (;;)
		gps_fence(c->fd, rnd(&s) % 3 ? rnd(&s) % c->nr :
			  GPS_FENCE_ALL, NULL);
	return NULL;
}

static void *kl_advisor(void *arg)
{
	struct kl_child *c = arg;
	uint64_t s = c->rng ^ 3, ps = c->b.args.out_page_size;
	uint64_t np = c->b.args.alloc_size / ps;
	struct gps_track_args k = {};
	int on = 0;

	for (;;) {
		uint64_t first = rnd(&s) % np, len = 1 + rnd(&s) % (np - first);
		uint32_t adv = 1 + rnd(&s) % 3;

		if (adv == GPS_ADVISE_COLLAPSE && rnd(&s) % 8)
			adv = GPS_ADVISE_SUBSCRIBE;
		gps_advise(c->fd, &c->b, first * ps, len * ps, adv,
			   rnd(&s) % c->nr, NULL);
		if (!(rnd(&s) % 8)) {
			k.op = on ? GPS_TRACK_STOP : GPS_TRACK_START;
			if (!ioctl(c->fd, GPS_IOC_TRACK, &k))
				on = !on;
		}
	}
	return NULL;
}

static void *kl_allocator(void *arg)
{
	struct kl_child *c = arg;
	uint64_t s = c->rng ^ 4;
	struct gps_buf b[4] = {};
	static const uint32_t ps[] = {
		GPS_PAGE_4K, GPS_PAGE_64K, GPS_PAGE_2M,
	};

	for (;;) {
		int i = rnd(&s) % 4, d;

		if (b[i].args.handle) {
			gps_free(c->fd, &b[i]);
			b[i].args.handle = 0;
			continue;
		}
		if (gps_alloc(c->fd, &b[i], 1 + rnd(&s) % (512 << 10),
			      GPS_MEM_GPS, rnd(&s) % 2 ? GPS_ALLOC_MANUAL : 0,
			      rnd(&s) % c->nr, ps[rnd(&s) % 3]))
			continue;
		d = rnd(&s) % c->nr;
		if (gps_map(c->fd, &b[i], d))
			memset(b[i].view[d], 7, b[i].args.alloc_size);
	}
	return NULL;
}

/* The child: set up, say so on @ready, run until killed. */
static void kl_child_main(int kind, int ready, uint64_t seed)
{
	struct kl_child c = { .kind = kind, .rng = seed | 1 };
	pthread_t tid;
	uint32_t ps;
	int d;

	c.fd = open(GPS_DEV, O_RDWR);
	if (c.fd < 0)
		_exit(10);
	c.nr = gps_nr_devices(c.fd);
	ps = (seed >> 8) % 3 == 0 ? GPS_PAGE_4K :
	     (seed >> 8) % 3 == 1 ? GPS_PAGE_64K : GPS_PAGE_2M;
	if (gps_alloc(c.fd, &c.b, ps == GPS_PAGE_2M ? 2 * GPS_PAGE_2M :
		      KL_SIZE, GPS_MEM_GPS, 0, 0, ps))
		_exit(11);
	for (d = 0; d < c.nr; d++)
		if (!gps_map(c.fd, &c.b, d))
			_exit(12);
	if (write(ready, "r", 1) != 1)
		_exit(13);
	if (kind == KL_FENCE || kind == KL_ALL)
		pthread_create(&tid, NULL, kl_fencer, &c);
	if (kind == KL_ADVISE || kind == KL_ALL)
		pthread_create(&tid, NULL, kl_advisor, &c);
	if (kind == KL_ALLOC || kind == KL_ALL)
		pthread_create(&tid, NULL, kl_allocator, &c);
	if (kind == KL_ALL)
		pthread_create(&tid, NULL, kl_writer, &c);
	kl_writer(&c);
	_exit(0);
}

FIXTURE(kill) {
	struct gps_fixture;
};

FIXTURE_SETUP(kill)
{
	if (gps_fixture_setup(_metadata, gps_fx(self), 1, NULL))
		return;
	ASSERT_LE(0, self->start.nr_allocs);
}

FIXTURE_TEARDOWN(kill)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* Kill -9 at random points: every round gives everything back. */
TEST_F_TIMEOUT(kill, sigkill_at_random_points, 86400)
{
	long rounds = gps_env_long("GPS_KILL_ROUNDS", 40);
	uint64_t seed = gps_env_long("GPS_KILL_SEED", 1) * 0x9E3779B97F4A7C15ULL;
	long kills[KL_NR] = {}, early = 0, leaks = 0, r;
	long long t0 = gps_now_ms();
	struct gps_usage u;
	int kind, status, p[2];
	char c;
	pid_t pid;

	for (r = 0; r < rounds; r++) {
		uint64_t s = rnd(&seed);
		int delay_us = s % 30000, before = !(s % 7);

		kind = r % KL_NR;
		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(p[0]);
			kl_child_main(kind, p[1], rnd(&seed));
		}
		close(p[1]);
		if (before) {
			/* inside setup: ALLOC, populate, the first mmaps */
			usleep(delay_us / 10);
			early++;
		} else {
			ASSERT_EQ(1, read(p[0], &c, 1)) {
				TH_LOG("round %ld: child not ready", r);
			}
			usleep(delay_us);
		}
		ASSERT_EQ(0, kill(pid, SIGKILL));
		status = gps_wait_child(pid);
		close(p[0]);
		ASSERT_TRUE(gps_killed_by(status, SIGKILL) ||
			    (WIFEXITED(status) && before)) {
			TH_LOG("round %ld (%s): status %#x", r, kl_name[kind],
			       status);
		}
		kills[kind]++;
		u = gps_usage_wait(self->start, 5000);
		if (!gps_usage_eq(self->start, u)) {
			leaks++;
			TH_LOG("round %ld (%s, %d us): allocs %lld/%lld "
			       "replica %lld/%lld twins %lld/%lld", r,
			       kl_name[kind], delay_us, u.nr_allocs,
			       self->start.nr_allocs, u.replica_pages,
			       self->start.replica_pages, u.twin_pages,
			       self->start.twin_pages);
		}
	}
	printf("# kill: %ld rounds in %lld ms, %ld before setup was done;",
	       rounds, gps_now_ms() - t0, early);
	for (kind = 0; kind < KL_NR; kind++)
		printf(" %s=%ld", kl_name[kind], kills[kind]);
	printf("; rounds that leaked: %ld\n", leaks);
	fflush(stdout);
	EXPECT_EQ(0, leaks);
	u = gps_usage();
	EXPECT_EQ(self->start.twin_pages, u.twin_pages);
	EXPECT_EQ(self->start.replica_pages, u.replica_pages);
	EXPECT_EQ(self->start.nr_allocs, u.nr_allocs);
}

TEST_HARNESS_MAIN
