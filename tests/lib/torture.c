// SPDX-License-Identifier: MIT
/*
 * Description: the torture test of the library, against whichever engine
 * serves it (the driver in the VM, the native engine on the host).
 * Threads, several per device, each a host thread whose current device
 * is its own, store through their device's view into three GPS
 * allocations (4 KiB, 64 KiB and 2 MiB GPS pages, those the engine
 * gives). Between releases they do random stores, fences of their device,
 * subscribe and unsubscribe their device from random pages, collapse a
 * page now and then; one thread toggles tracking. At each release all
 * threads meet, one calls gpsThreadFenceSystem(), and then:
 *
 *  - owned bytes: thread g owns the 32-bit slot g of every 128-byte block
 *    and writes increasing numbers into it; every device's view must read
 *    exactly the last number each owner wrote: no published store lost;
 *  - racing bytes: in racing rounds every thread also writes the last
 *    slot of the blocks it touches; afterwards all views must agree.
 *
 * Subscription changes race the stores: each engine keeps a store made
 * while one runs (the driver zaps the views, the native engine holds
 * them write-protected). GPSU_TORTURE_ADVICE=release makes them at each
 * release instead, one thread while the others wait.
 *
 * The push threads race them too: with GPSU_TORTURE_PUSH=toggle (the
 * default on the native engine; off on the driver, whose knobs are the
 * machine's) thread 0 turns the link model on and off at random between
 * rounds, with a harvest interval of 100 us, so that rounds of the push
 * threads harvest and push while the stores and changes go on,
 * fence_threads between 4 and 1, so that fences are helped or not, and
 * node_max_bytes between none and 1 MiB, so that subscriptions and
 * tracking are refused replicas (soft failures) now and then.
 *
 * Bounded in time: GPSU_TORTURE_SECS (default 3) seconds of rounds;
 * GPSU_TORTURE_THREADS threads per device (default 2); GPSU_TORTURE_SEED.
 * What an engine refuses (gpsErrorNotSupported) is counted and printed,
 * never taken for a pass of the property it would have stressed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define TT_BLOCK	128			/* bytes per checked block */
#define TT_SLOTS	(TT_BLOCK / 4)
#define TT_RACE		(TT_SLOTS - 1)		/* the racing slot */
#define TT_MAX_THREADS	TT_RACE
#define TT_ALLOCS	3
#define TT_OPS		1000			/* operations per round */
#define TT_LINK		100000000000ULL		/* bytes/s: push threads on */
#define TT_BUDGET	(1ULL << 20)		/* node_max_bytes when tight */
#define TT_REPORT	8			/* anomalies printed */
#define TT_MAX_DEVICES	64

static const struct {
	size_t size;
	unsigned int flags;
	const char *name;
} tt_allocs[TT_ALLOCS] = {
	{ 64 << 10, gpsMemGPSPage4K, "4K" },
	{ 256 << 10, gpsMemGPSPage64K, "64K" },
	{ 2 << 20, gpsMemGPSPage2M, "2M" },
};

struct tt {
	int ndev, nthr;			/* devices, threads in all */
	char *base[TT_ALLOCS];		/* host view; NULL: not given */
	size_t ps[TT_ALLOCS], first[TT_ALLOCS];	/* page size, first block */
	size_t nblk;			/* blocks of all allocations */
	uint32_t *expect[TT_MAX_THREADS];	/* last value per block */
	uint32_t *race[TT_MAX_DEVICES];	/* racing slot per device */
	pthread_barrier_t bar;
	uint64_t deadline_ns, seed;
	int racing, last;		/* this round's, set by thread 0 */
	bool push_toggle;		/* GPSU_TORTURE_PUSH=toggle */
	int advice_racing;		/* advice among the stores */
	atomic_ullong stores, fences, subs, busy, collapses, rounds;
	atomic_ullong refused, anomalies;
	atomic_int tracking_refused, advice_refused;
	atomic_int failed;		/* an unexpected error */
};

static uint64_t tt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t tt_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static unsigned long long tt_env(const char *name, unsigned long long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/* Block @b of all allocations: its allocation, and its address in the
 * view of the calling thread's device. */
static uint32_t *tt_block(struct tt *t, size_t b)
{
	int i = TT_ALLOCS - 1;

	while (!t->base[i] || b < t->first[i])
		i--;
	return gpsDevicePtr(t->base[i] + (b - t->first[i]) * TT_BLOCK);
}

static int tt_alloc_of(struct tt *t, size_t b)
{
	int i = TT_ALLOCS - 1;

	while (!t->base[i] || b < t->first[i])
		i--;
	return i;
}

/* An error other than those the operation may give is a failure. */
static void tt_check(struct tt *t, gpsError_t e, const char *what)
{
	if (e == gpsSuccess)
		return;
	if (atomic_fetch_add(&t->failed, 1) == 0)
		fprintf(stderr, "# %s: %s\n", what, gpsGetErrorString(e));
}

/* A subscription change of the thread's device on the page of block @b. */
static void tt_advise(struct tt *t, size_t b, int dev, uint64_t r)
{
	int i = tt_alloc_of(t, b);
	char *p = t->base[i] + (b - t->first[i]) * TT_BLOCK;
	gpsMemoryAdvise adv;
	gpsError_t e;

	p = t->base[i] + ((size_t)(p - t->base[i]) & ~(t->ps[i] - 1));
	adv = (r & 1) ? gpsMemAdviseGPSSubscribe : gpsMemAdviseGPSUnsubscribe;
	if (r % 64 == 0)
		adv = gpsMemAdviseGPSCollapse;
	e = gpsMemAdvise(p, t->ps[i], adv, dev);
	if (e == gpsErrorNotSupported) {
		atomic_fetch_add(&t->refused, 1);
		atomic_store(&t->advice_refused, 1);
		return;
	}
	/* unsubscribing the last subscriber is refused */
	if (e == gpsErrorBusy && adv == gpsMemAdviseGPSUnsubscribe) {
		atomic_fetch_add(&t->busy, 1);
		return;
	}
	tt_check(t, e, "gpsMemAdvise");
	atomic_fetch_add(adv == gpsMemAdviseGPSCollapse ? &t->collapses :
			 &t->subs, 1);
}

static void tt_round(struct tt *t, int g, uint64_t *rng)
{
	int dev = g % t->ndev;
	uint32_t *exp = t->expect[g];
	uint32_t seq = exp[t->nblk];	/* the thread's last number */
	int n;

	for (n = 0; n < TT_OPS; n++) {
		uint64_t r = tt_rand(rng);
		size_t b = (r >> 16) % t->nblk;
		volatile uint32_t *blk;

		switch (r % 200) {
		case 0:
			tt_check(t, gpsDeviceSynchronize(),
				 "gpsDeviceSynchronize");
			atomic_fetch_add(&t->fences, 1);
			break;
		case 1 ... 2:
			if (t->advice_racing)
				tt_advise(t, b, dev, r >> 40);
			break;
		default:
			blk = tt_block(t, b);
			blk[g] = ++seq;
			exp[b] = seq;
			/* a race the model allows, not a C data race */
			if (t->racing)
				__atomic_store_n((uint32_t *)&blk[TT_RACE],
						 (uint32_t)g << 24 |
						 (seq & 0xffffff),
						 __ATOMIC_RELAXED);
			atomic_fetch_add(&t->stores, 1);
		}
	}
	exp[t->nblk] = seq;
}

/* After a release: the owned slots of this thread's share of the blocks,
 * read through its device's view. */
static void tt_verify(struct tt *t, int g)
{
	int dev = g % t->ndev, share = g / t->ndev, per = t->nthr / t->ndev;
	size_t b;
	int o;

	for (b = share; b < t->nblk; b += per) {
		volatile uint32_t *blk = tt_block(t, b);

		for (o = 0; o < t->nthr; o++) {
			uint32_t want = t->expect[o][b], got = blk[o];

			if (got == want)
				continue;
			if (atomic_fetch_add(&t->anomalies, 1) < TT_REPORT)
				fprintf(stderr,
					"# ANOMALY: device %d, alloc %s, block %zu, slot %d: %u, not %u\n",
					dev, tt_allocs[tt_alloc_of(t, b)].name,
					b, o, got, want);
		}
		if (t->racing)
			t->race[dev][b] = blk[TT_RACE];
	}
}

static void tt_verify_race(struct tt *t)
{
	size_t b;
	int d;

	for (d = 1; d < t->ndev; d++)
		for (b = 0; b < t->nblk; b++) {
			if (t->race[d][b] == t->race[0][b])
				continue;
			if (atomic_fetch_add(&t->anomalies, 1) < TT_REPORT)
				fprintf(stderr,
					"# ANOMALY: racing slot of block %zu: device %d reads %#x, device 0 %#x\n",
					b, d, t->race[d][b], t->race[0][b]);
		}
}

struct tt_arg {
	struct tt *t;
	int g;
};

static void *tt_thread(void *p)
{
	struct tt_arg *a = p;
	struct tt *t = a->t;
	uint64_t rng = t->seed * 0x9e3779b97f4a7c15ull + a->g + 1;
	int tracking = 0, n;

	tt_check(t, gpsSetDevice(a->g % t->ndev), "gpsSetDevice");
	for (;;) {
		if (a->g == 0) {
			t->racing = tt_rand(&rng) % 3 == 0;
			t->last = tt_now() >= t->deadline_ns;
			if (t->push_toggle) {
				/*
				 * The link (so the push threads) on in the
				 * first round, then at random: a run of one
				 * round, on a slow or busy machine, still
				 * has the threads' rounds it asserts.
				 */
				tt_check(t, gpsSetKnob("link_bandwidth",
						       !atomic_load(&t->rounds) ||
						       tt_rand(&rng) % 2 ?
						       TT_LINK : 0),
					 "gpsSetKnob(link_bandwidth)");
				/* fence helpers, whatever the CPUs */
				tt_check(t, gpsSetKnob("fence_threads",
						       tt_rand(&rng) % 2 ?
						       4 : 1),
					 "gpsSetKnob(fence_threads)");
				tt_check(t, gpsSetKnob("node_max_bytes",
						       tt_rand(&rng) % 2 ?
						       TT_BUDGET : 0),
					 "gpsSetKnob(node_max_bytes)");
			}
			if (tt_rand(&rng) % 4 == 0) {
				gpsError_t e = gpsTrackingStart();

				if (e == gpsErrorNotSupported)
					atomic_store(&t->tracking_refused, 1);
				else
					tt_check(t, e, "gpsTrackingStart");
				tracking = e == gpsSuccess;
			}
		}
		pthread_barrier_wait(&t->bar);
		if (t->last)
			break;
		tt_round(t, a->g, &rng);
		pthread_barrier_wait(&t->bar);
		if (a->g == 0) {
			if (tracking)
				tt_check(t, gpsTrackingStop(),
					 "gpsTrackingStop");
			tracking = 0;
			tt_check(t, gpsThreadFenceSystem(),
				 "gpsThreadFenceSystem");
			/* as many changes as the racing rounds make */
			for (n = 0; !t->advice_racing &&
				    n < t->nthr * TT_OPS / 100; n++) {
				uint64_t r = tt_rand(&rng);

				tt_advise(t, (r >> 16) % t->nblk,
					  (int)((r >> 8) % t->ndev), r >> 40);
			}
			atomic_fetch_add(&t->rounds, 1);
		}
		pthread_barrier_wait(&t->bar);
		tt_verify(t, a->g);
		pthread_barrier_wait(&t->bar);
		if (a->g == 0 && t->racing)
			tt_verify_race(t);
	}
	return NULL;
}

/* The push threads' rounds on every device so far. */
/* Counter @name summed over the devices. */
static unsigned long long tt_counter(const char *name, int ndev)
{
	unsigned long long sum = 0, v;
	int d;

	for (d = 0; d < ndev; d++)
		if (gpsDeviceGetCounter(&v, name, d) == gpsSuccess)
			sum += v;
	return sum;
}

/* no harness timeout of its own beyond the soak's: GPSU_TORTURE_SECS
 * bounds it (tests/runtests.sh's watchdog in make check) */
FIXTURE(tt) {
	int unused;
};

FIXTURE_SETUP(tt)
{
}

FIXTURE_TEARDOWN(tt)
{
}

TEST_F_TIMEOUT(tt, no_published_store_lost, 7200)
{
	unsigned long long secs = tt_env("GPSU_TORTURE_SECS", 3);
	int per = (int)tt_env("GPSU_TORTURE_THREADS", 2);
	struct tt_arg args[TT_MAX_THREADS];
	pthread_t th[TT_MAX_THREADS];
	const char *engine = "?", *push;
	unsigned long long link0 = 0, interval0 = 0, rounds0 = 0, rounds1;
	unsigned long long threads0 = 0, helped0 = 0, budget0 = 0;
	unsigned long long failed0 = 0;
	gpsEngine eng;
	struct tt *t;
	int ndev, i, g, d;

	T_DEVICES(ndev);
	ASSERT_LE(ndev, TT_MAX_DEVICES);
	ASSERT_EQ(gpsSuccess, gpsGetEngine(&eng, &engine));
	t = calloc(1, sizeof(*t));
	ASSERT_NE(NULL, t);
	t->ndev = ndev;
	if (per < 1)
		per = 1;
	t->nthr = ndev * per;
	if (t->nthr > TT_MAX_THREADS)
		t->nthr = ndev > TT_MAX_THREADS ? TT_MAX_THREADS : ndev *
			  (TT_MAX_THREADS / ndev);
	ASSERT_LE(ndev, t->nthr);
	t->seed = tt_env("GPSU_TORTURE_SEED", (unsigned long long)time(NULL));
	t->advice_racing = !getenv("GPSU_TORTURE_ADVICE") ||
			   strcmp(getenv("GPSU_TORTURE_ADVICE"), "release");
	push = getenv("GPSU_TORTURE_PUSH");
	t->push_toggle = push ? !strcmp(push, "toggle") :
			 eng == gpsEngineNative;
	if (t->push_toggle) {
		ASSERT_EQ(gpsSuccess, gpsGetKnob(&link0, "link_bandwidth"));
		ASSERT_EQ(gpsSuccess, gpsGetKnob(&interval0,
						 "harvest_interval_us"));
		ASSERT_EQ(gpsSuccess, gpsGetKnob(&threads0, "fence_threads"));
		ASSERT_EQ(gpsSuccess, gpsGetKnob(&budget0, "node_max_bytes"));
		failed0 = tt_counter("subscribe_failed", ndev);
		ASSERT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us", 100));
		rounds0 = tt_counter("thread_rounds", ndev);
		helped0 = tt_counter("pages_helped", ndev);
	}

	for (i = 0; i < TT_ALLOCS; i++) {
		gpsPointerAttributes at;
		void *p;
		gpsError_t e = gpsMallocGPS(&p, tt_allocs[i].size,
					    tt_allocs[i].flags);

		t->first[i] = t->nblk;
		if (e != gpsSuccess) {
			/* a page size this engine or machine lacks */
			TH_LOG("%s GPS pages: %s", tt_allocs[i].name,
			       gpsGetErrorString(e));
			continue;
		}
		ASSERT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
		t->base[i] = p;
		t->ps[i] = at.gpsPageSize;
		ASSERT_EQ(gpsSuccess, gpsMemset(p, 0, tt_allocs[i].size));
		t->nblk += tt_allocs[i].size / TT_BLOCK;
	}
	ASSERT_NE(NULL, t->base[0]);	/* every engine has 4 KiB pages */
	for (g = 0; g < t->nthr; g++) {
		/* one more word: the thread's last number */
		t->expect[g] = calloc(t->nblk + 1, sizeof(uint32_t));
		ASSERT_NE(NULL, t->expect[g]);
	}
	for (d = 0; d < ndev; d++) {
		t->race[d] = calloc(t->nblk, sizeof(uint32_t));
		ASSERT_NE(NULL, t->race[d]);
	}
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_EQ(0, pthread_barrier_init(&t->bar, NULL, t->nthr));
	t->deadline_ns = tt_now() + secs * 1000000000ull;
	for (g = 0; g < t->nthr; g++) {
		args[g] = (struct tt_arg){ t, g };
		ASSERT_EQ(0, pthread_create(&th[g], NULL, tt_thread, &args[g]));
	}
	for (g = 0; g < t->nthr; g++)
		pthread_join(th[g], NULL);
	rounds1 = t->push_toggle ? tt_counter("thread_rounds", ndev) : 0;
	if (t->push_toggle) {
		EXPECT_EQ(gpsSuccess, gpsSetKnob("link_bandwidth", link0));
		EXPECT_EQ(gpsSuccess, gpsSetKnob("harvest_interval_us",
						 interval0));
		EXPECT_EQ(gpsSuccess, gpsSetKnob("fence_threads", threads0));
		EXPECT_EQ(gpsSuccess, gpsSetKnob("node_max_bytes", budget0));
		printf("# push threads, fence helpers and budgets toggled: %llu rounds, %llu pages helped, %llu replicas refused\n",
		       rounds1 - rounds0,
		       tt_counter("pages_helped", ndev) - helped0,
		       tt_counter("subscribe_failed", ndev) - failed0);
		EXPECT_LT(rounds0, rounds1);
	}

	printf("# engine %s, %d devices x %d threads, seed %llu, advice %s: %llu rounds, %llu stores, %llu fences, %llu subscription changes (%llu refused busy), %llu collapses, %llu refused as not supported%s%s; %llu anomalies\n",
	       engine, ndev, t->nthr / ndev, (unsigned long long)t->seed,
	       t->advice_racing ? "racing the stores" : "at releases",
	       t->rounds, t->stores, t->fences, t->subs, t->busy,
	       t->collapses, t->refused,
	       t->advice_refused ? " (subscription advice)" : "",
	       t->tracking_refused ? " (tracking)" : "", t->anomalies);
	EXPECT_EQ(0, atomic_load(&t->failed));
	EXPECT_EQ(0, atomic_load(&t->anomalies));
	EXPECT_LT(0, atomic_load(&t->rounds));
	/* the driver serves every operation the torture makes */
	if (eng == gpsEngineDriver) {
		EXPECT_EQ(0, atomic_load(&t->refused));
		EXPECT_EQ(0, atomic_load(&t->tracking_refused));
	}

	pthread_barrier_destroy(&t->bar);
	for (i = 0; i < TT_ALLOCS; i++)
		if (t->base[i])
			EXPECT_EQ(gpsSuccess, gpsFree(t->base[i]));
	for (g = 0; g < t->nthr; g++)
		free(t->expect[g]);
	for (d = 0; d < ndev; d++)
		free(t->race[d]);
	free(t);
}

TEST_HARNESS_MAIN
