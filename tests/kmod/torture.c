// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a torture test in the spirit of the kernel's locktorture.
 * Several processes share one open file and its GPS allocations (64 KiB,
 * 4 KiB and 2 MiB GPS pages); each process runs one thread per device,
 * storing through that device's view, and now and then through the host
 * view (with a fence of the view left before switching: stores of one
 * thread through two views are unordered until then; host fences run
 * concurrently with everything else).  Between releases the threads do
 * random stores, fences of their device, subscribe/unsubscribe of random
 * pages, collapses now and then, tracking start/stop (one thread per open
 * file toggles it) and alloc/free of extra allocations.  At each release
 * all threads stop at a barrier, one fences GPS_FENCE_ALL, and then:
 *
 *  - owned bytes: thread g owns the 32-bit slot g of every 128-byte block
 *    and writes increasing sequence numbers into it; every replica
 *    (GPS_IOC_READ per device) and every view of every process must hold
 *    exactly the last number each owner wrote: no published store lost;
 *  - racing bytes: in racing rounds every thread also writes the last
 *    slot of the blocks it touches; afterwards all replicas must agree.
 *
 * Prints the operations done and the anomalies found, and fails on any
 * anomaly.  Bounded in time: GPS_TORTURE_SECS (default 6) seconds of
 * rounds; GPS_TORTURE_PROCS (default 2) processes; GPS_TORTURE_SEED.
 *
 * The history of the first lost store (issue 29): the torture keeps its
 * own, in rings shared by the processes: the last TT_BHIST stores to each
 * block (thread, value, view), the last TT_PHIST subscription changes of
 * each GPS page (device, advice, result) and the last TT_GHIST fences,
 * host fences, view switches, tracking toggles and releases, each with
 * its CLOCK_MONOTONIC time (read through the TSC: a clock_gettime() per
 * store would read the emulated HPET under qemu).  At the first anomaly
 * of a block, recording stops here and in the driver's history ring
 * (/sys/kernel/debug/gps/history, modules built with CONFIG_GPS_DEBUG);
 * at the end both are printed, "# hist: " lines, after the anomalies:
 * the torture's events of that block and GPS page in time order, then
 * the driver's last TT_KHIST lines of that GPS page.  Each release is
 * written into both histories as "mark <round>", to line them up.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#ifdef __x86_64__
#include <x86intrin.h>
#endif

#include "kselftest_harness.h"
#include "gps_test.h"

#define TT_ALLOCS	3
#define TT_BLOCK	128		/* bytes per checked block */
#define TT_SLOTS	(TT_BLOCK / 4)	/* 32-bit slots per block */
#define TT_RACE_SLOT	(TT_SLOTS - 1)
#define TT_MAX_THREADS	(TT_SLOTS - 1)
#define TT_ROUND_MS	300
#define TT_MAX_PROCS	4

static const struct {
	uint64_t size;
	uint32_t ps;
} tt_geom[TT_ALLOCS] = {
	{ 256 * 1024, GPS_PAGE_64K },
	{ 64 * 1024, GPS_PAGE_4K },
	{ 2 * 1024 * 1024, GPS_PAGE_2M },
};

#define TT_BHIST	16		/* stores kept per block */
#define TT_PHIST	64		/* subscription changes per GPS page */
#define TT_GHIST	8192		/* fences, tracking, releases */
#define TT_KHIST	200		/* driver history lines printed */
#define TT_PRINT	200		/* torture history lines printed */

enum tt_ev_kind {
	E_STORE, E_FENCE, E_HOST_FENCE, E_VIEW, E_ADVISE, E_TRACK,
	E_RELEASE, E_ANOMALY,
};

/* One event of the torture's history. */
struct tt_ev {
	uint64_t ns;
	uint32_t v;		/* value stored, advice, mask, round */
	int32_t rc;		/* errno of a call, 0 */
	uint32_t arg;		/* advise: first page << 16 | pages */
	int16_t g;		/* thread */
	int8_t kind;
	int8_t dev;		/* view, device */
};

struct tt_ring {
	uint32_t n;		/* events ever recorded */
	struct tt_ev ev[];
};

enum tt_op {
	T_STORE, T_HOST_STORE, T_FENCE, T_HOST_FENCE, T_SUB, T_UNSUB,
	T_COLLAPSE, T_TRACK, T_EXTRA, T_RESUB, T_RELEASE, T_CHECKED, T_NR
};

static const char *const tt_op_name[T_NR] = {
	"stores", "host-stores", "fences", "host-fences", "subscribes",
	"unsubscribes", "collapses", "track-toggles", "extra-allocs",
	"resubscribes", "releases", "slots-checked",
};

/* Shared by every process (MAP_SHARED anonymous). */
struct tt_shared {
	pthread_barrier_t bar;
	volatile int stop;
	volatile int race;		/* this round races */
	long ops[T_NR];
	long anomalies;
	long ebusy;
	char first[8][200];		/* the first anomalies */
	/* expected[a][block][g]: owner g's last sequence number */
	uint32_t *expected[TT_ALLOCS];
	/* the torture's history, and the first anomaly of a block */
	int have_khist;			/* the driver's ring exists */
	volatile int frozen;		/* recording stopped */
	int first_a;
	uint64_t first_b;
	uint32_t round;
	uint32_t *bidx[TT_ALLOCS];	/* per block: stores recorded */
	struct tt_ev *bev[TT_ALLOCS];	/* TT_BHIST per block */
	uint32_t *pidx[TT_ALLOCS];	/* per GPS page */
	struct tt_ev *pev[TT_ALLOCS];	/* TT_PHIST per GPS page */
	uint32_t gidx;
	struct tt_ev gev[TT_GHIST];
};

static struct tt_shared *sh;
static int tt_fd, tt_nr, tt_threads, tt_procs;
static struct gps_alloc_args tt_a[TT_ALLOCS];

struct tt_thread {
	int g;			/* global thread index */
	int dev;		/* device it stores from */
	int proc;
	int priv_fd;		/* the process's own file */
	int toggler;		/* toggles tracking on priv_fd (and shared) */
	uint64_t rng;
	int last_a;		/* the block of our last store, or -1 */
	uint64_t last_b;
	int via;		/* the view we store through: dev or tt_nr */
	/* [a][d]: device d's view, [a][tt_nr]: the host view */
	unsigned char *view[TT_ALLOCS][GPS_MAX_DEVICES + 1];
	unsigned char *touched[TT_ALLOCS];	/* blocks stored since check */
};

static uint64_t rnd_below(struct tt_thread *t, uint64_t n)
{
	return n ? rnd(&t->rng) % n : 0;
}

/* CLOCK_MONOTONIC in ns, through the TSC, calibrated at the start. */
static uint64_t tt_tsc0, tt_mono0;
static double tt_ns_per_tick = 1;

static uint64_t tt_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t tt_ns(void)
{
#ifdef __x86_64__
	return tt_mono0 + (uint64_t)((double)(__rdtsc() - tt_tsc0) *
				     tt_ns_per_tick);
#else
	return tt_mono();
#endif
}

static void tt_clock_init(void)
{
#ifdef __x86_64__
	uint64_t m0 = tt_mono(), c0 = __rdtsc(), m1, c1;

	usleep(20000);
	m1 = tt_mono();
	c1 = __rdtsc();
	if (c1 > c0)
		tt_ns_per_tick = (double)(m1 - m0) / (double)(c1 - c0);
	tt_tsc0 = c1;
	tt_mono0 = m1;
#endif
}

static void hrec(struct tt_ev *ring, uint32_t *n, unsigned int size, int kind,
		 int g, int dev, uint32_t v, int32_t rc, uint32_t arg)
{
	struct tt_ev *e;

	if (sh->frozen)
		return;
	e = &ring[__atomic_fetch_add(n, 1, __ATOMIC_RELAXED) % size];
	e->ns = tt_ns();
	e->kind = kind;
	e->g = g;
	e->dev = dev;
	e->v = v;
	e->rc = rc;
	e->arg = arg;
}

/* An event of no block or page: fences, tracking, releases. */
static void hglobal(int kind, int g, int dev, uint32_t v, int32_t rc)
{
	hrec(sh->gev, &sh->gidx, TT_GHIST, kind, g, dev, v, rc, 0);
}

static uint64_t tt_gpage(int a, uint64_t block)
{
	return block * TT_BLOCK / tt_a[a].out_page_size;
}

/* An advice on GPS pages [@first, @first + @nr) of allocation @a. */
static void hadvise(int a, uint64_t first, uint64_t nr, int g, int dev,
		    uint32_t advice, int32_t rc)
{
	uint64_t p;

	for (p = first; p < first + nr; p++)
		hrec(&sh->pev[a][p * TT_PHIST], &sh->pidx[a][p], TT_PHIST,
		     E_ADVISE, g, dev, advice, rc, first << 16 | nr);
}

static void tt_khist(const char *cmd)
{
	if (sh->have_khist)
		gps_history_cmd(cmd);
}

/*
 * A block's anomaly: the first one stops both histories, so that what
 * led to it is still there at the end.
 */
static void first_anomaly(int a, uint64_t b, int g, int view)
{
	int zero = 0;

	if (!__atomic_compare_exchange_n(&sh->frozen, &zero, 1, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	tt_khist("off");
	sh->first_a = a;
	sh->first_b = b;
	sh->gev[sh->gidx++ % TT_GHIST] = (struct tt_ev){
		.ns = tt_ns(), .kind = E_ANOMALY, .g = g, .dev = view,
	};
}

static void anomaly(const char *fmt, ...)
{
	long n = __atomic_fetch_add(&sh->anomalies, 1, __ATOMIC_SEQ_CST);
	va_list ap;

	if (n >= 8)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->first[n], sizeof(sh->first[n]), fmt, ap);
	va_end(ap);
}

static void op_done(int op, long n)
{
	__atomic_fetch_add(&sh->ops[op], n, __ATOMIC_RELAXED);
}

static uint32_t *expect_of(int a, uint64_t block)
{
	return &sh->expected[a][block * TT_MAX_THREADS];
}

/* A fence of our device, noted in the history; 0 or -1 with errno. */
static int tt_fence(struct tt_thread *t)
{
	int ret = gps_fence(tt_fd, t->dev, NULL);

	hglobal(E_FENCE, t->g, t->dev, 0, ret ? errno : 0);
	return ret;
}

/* A host fence (GPS_FENCE_HOST), sometimes naming our device too. */
static void host_fence(struct tt_thread *t)
{
	struct gps_fence_args f = {
		.flags = GPS_FENCE_MASK | GPS_FENCE_HOST,
		.device_mask = rnd_below(t, 4) ? 0 : 1ULL << t->dev,
	};

	int rc = ioctl(tt_fd, GPS_IOC_FENCE, &f) ? errno : 0;

	hglobal(E_HOST_FENCE, t->g, -1, f.device_mask, rc);
	if (rc)
		anomaly("host fence: errno %d", rc);
	else
		op_done(T_HOST_FENCE, 1);
}

/*
 * Store through the host view (1 in 8) or our device's.  Our stores
 * through the view we leave are released first: the same slot written
 * through two views is otherwise unordered.
 */
static void pick_view(struct tt_thread *t)
{
	int via = rnd_below(t, 8) ? t->dev : tt_nr;

	if (via == t->via)
		return;
	if (t->via == tt_nr) {
		host_fence(t);
	} else if (tt_fence(t)) {
		anomaly("fence %d: errno %d", t->dev, errno);
		return;
	}
	hglobal(E_VIEW, t->g, via, t->via, 0);
	t->via = via;
}

static void do_store(struct tt_thread *t)
{
	int a = rnd_below(t, TT_ALLOCS), i, n = 1 + rnd_below(t, 8);
	uint64_t blocks = tt_a[a].alloc_size / TT_BLOCK;
	volatile uint32_t *p;

	/* a run of neighbouring blocks: pages get dense, queues coalesce */
	uint64_t b0 = rnd_below(t, blocks);

	for (i = 0; i < n && b0 + i < blocks; i++) {
		uint64_t b = b0 + i;
		uint32_t *e = &expect_of(a, b)[t->g];
		uint32_t seq = *e + 1;

		p = (uint32_t *)(t->view[a][t->via] + b * TT_BLOCK);
		hrec(&sh->bev[a][b * TT_BHIST], &sh->bidx[a][b], TT_BHIST,
		     E_STORE, t->g, t->via, seq, 0, 0);
		p[t->g] = seq;
		*e = seq;
		t->touched[a][b] = 1;
		if (sh->race)
			p[TT_RACE_SLOT] = (t->g + 1) << 24 | (seq & 0xffffff);
		/* a thread reads its own writes, at once */
		if (p[t->g] != seq) {
			first_anomaly(a, b, t->g, t->via);
			anomaly("proc %d thread %d: alloc %d block %llu: "
				"own store %u read back as %u", t->proc, t->g,
				a, (unsigned long long)b, seq, p[t->g]);
		}
		t->last_a = a;
		t->last_b = b;
	}
	op_done(t->via == tt_nr ? T_HOST_STORE : T_STORE, i);
}

/*
 * After a change of subscription or tracking: our last store still
 * reads back through our view (the change must not reorder it behind an
 * older store of ours).
 */
static void check_last(struct tt_thread *t, const char *after)
{
	volatile uint32_t *p;
	uint32_t want;

	if (t->last_a < 0)
		return;
	p = (uint32_t *)(t->view[t->last_a][t->via] + t->last_b * TT_BLOCK);
	want = expect_of(t->last_a, t->last_b)[t->g];
	if (p[t->g] != want) {
		first_anomaly(t->last_a, t->last_b, t->g, t->via);
		anomaly("proc %d thread %d: alloc %d block %llu: after %s "
			"load %u, last store %u", t->proc, t->g, t->last_a,
			(unsigned long long)t->last_b, after, p[t->g], want);
	}
}

static void do_advise(struct tt_thread *t, uint32_t advice, int op)
{
	int a = rnd_below(t, TT_ALLOCS);
	uint64_t ps = tt_a[a].out_page_size, np = tt_a[a].alloc_size / ps;
	uint64_t first = rnd_below(t, np), len = 1 + rnd_below(t, np - first);
	struct gps_advise_args adv = {
		.handle = tt_a[a].handle, .offset = first * ps,
		.length = len * ps, .advice = advice,
		.device = rnd_below(t, tt_nr),
	};
	int rc = ioctl(tt_fd, GPS_IOC_ADVISE, &adv) ? errno : 0;

	hadvise(a, first, len, t->g, adv.device, advice, rc);
	if (rc) {
		errno = rc;
		if (errno == EBUSY && advice == GPS_ADVISE_UNSUBSCRIBE) {
			__atomic_fetch_add(&sh->ebusy, 1, __ATOMIC_RELAXED);
			return;
		}
		anomaly("advise %u dev %u alloc %d: errno %d", advice,
			adv.device, a, errno);
		return;
	}
	check_last(t, "advice");
	op_done(op, 1);
}

/*
 * Our device leaves the pages of our last store and comes back, with a
 * store pending before each change: the newest store must win.
 */
static void do_resubscribe(struct tt_thread *t)
{
	struct gps_advise_args adv = { .device = t->dev };
	uint64_t ps;
	int a, rc;

	if (t->via != t->dev) {
		host_fence(t);
		t->via = t->dev;
	}
	do_store(t);
	if (t->last_a < 0)
		return;
	a = t->last_a;
	ps = tt_a[a].out_page_size;
	adv.handle = tt_a[a].handle;
	adv.offset = t->last_b * TT_BLOCK / ps * ps;
	adv.length = ps;
	adv.advice = GPS_ADVISE_UNSUBSCRIBE;
	rc = ioctl(tt_fd, GPS_IOC_ADVISE, &adv) ? errno : 0;
	hadvise(a, adv.offset / ps, 1, t->g, t->dev, adv.advice, rc);
	if (rc && rc != EBUSY)
		anomaly("resubscribe: unsubscribe errno %d", rc);
	check_last(t, "unsubscribe");
	do_store(t);
	adv.advice = GPS_ADVISE_SUBSCRIBE;
	adv.pages_changed = 0;
	adv.pages_failed = 0;
	rc = ioctl(tt_fd, GPS_IOC_ADVISE, &adv) ? errno : 0;
	hadvise(a, adv.offset / ps, 1, t->g, t->dev, adv.advice, rc);
	if (rc)
		anomaly("resubscribe: subscribe errno %d", rc);
	check_last(t, "resubscribe");
	do_store(t);
	op_done(T_RESUB, 1);
}

/* Tracking on the file(s) this thread toggles. */
static void do_track(struct tt_thread *t, int *on_priv, int *on_shared)
{
	struct gps_track_args k = {};
	int fd = t->priv_fd, *on = on_priv;

	if (t->g == 0 && rnd_below(t, 2)) {
		fd = tt_fd;
		on = on_shared;
	}
	k.op = *on ? GPS_TRACK_STOP : GPS_TRACK_START;
	if (ioctl(fd, GPS_IOC_TRACK, &k)) {
		hglobal(E_TRACK, t->g, fd == tt_fd, k.op, errno);
		anomaly("track op %u: errno %d", k.op, errno);
		return;
	}
	hglobal(E_TRACK, t->g, fd == tt_fd, k.op, 0);
	check_last(t, k.op == GPS_TRACK_STOP ? "tracking stop" :
					       "tracking start");
	*on = !*on;
	op_done(T_TRACK, 1);
}

/*
 * An extra allocation on the process's own file: written through our
 * view, published by our fence, checked in every replica, freed.
 */
static void do_extra(struct tt_thread *t)
{
	uint32_t ps = rnd_below(t, 2) ? GPS_PAGE_4K : GPS_PAGE_64K;
	uint64_t size = ps * (1 + rnd_below(t, 4)), i;
	unsigned char *got;
	struct gps_buf b;
	unsigned char v = 1 + rnd_below(t, 250);
	int d, ret;

	ret = gps_alloc(t->priv_fd, &b, size, GPS_MEM_GPS, 0,
			rnd_below(t, tt_nr), ps);
	if (ret) {
		anomaly("extra alloc of %llu: %d", (unsigned long long)size,
			ret);
		return;
	}
	if (!gps_map(t->priv_fd, &b, t->dev)) {
		anomaly("extra map: errno %d", errno);
		gps_free(t->priv_fd, &b);
		return;
	}
	memset(b.view[t->dev], v, size);
	if (gps_fence(t->priv_fd, t->dev, NULL))
		anomaly("extra fence: errno %d", errno);
	got = malloc(size);
	for (d = 0; got && d < tt_nr; d++) {
		if (gps_read(t->priv_fd, &b, d, 0, got, size)) {
			anomaly("extra read dev %d: errno %d", d, errno);
			break;
		}
		for (i = 0; i < size; i++)
			if (got[i] != v) {
				anomaly("extra alloc: dev %d byte %llu is %u, "
					"not %u", d, (unsigned long long)i,
					got[i], v);
				break;
			}
	}
	free(got);
	if (gps_free(t->priv_fd, &b))
		anomaly("extra free: errno %d", errno);
	op_done(T_EXTRA, 1);
}

/*
 * After the release: our slots, loaded through every view we have; the
 * blocks we stored to since the last check and a random 1/64 of the
 * others (check_replicas() reads them all).
 */
static void check_own(struct tt_thread *t)
{
	long checked = 0;
	int a, d;

	for (a = 0; a < TT_ALLOCS; a++) {
		uint64_t b, blocks = tt_a[a].alloc_size / TT_BLOCK;

		for (b = 0; b < blocks; b++) {
			uint32_t want = expect_of(a, b)[t->g];

			if (!t->touched[a][b] && rnd_below(t, 64))
				continue;
			t->touched[a][b] = 0;
			for (d = 0; d <= tt_nr; d++) {
				volatile uint32_t *p = (uint32_t *)
					(t->view[a][d] + b * TT_BLOCK);

				if (p[t->g] != want) {
					first_anomaly(a, b, t->g, d);
					anomaly("proc %d thread %d: alloc %d "
						"view %d block %llu: load %u, "
						"last store %u", t->proc, t->g,
						a, d, (unsigned long long)b,
						p[t->g], want);
				}
				checked++;
			}
		}
	}
	op_done(T_CHECKED, checked);
}

/* After the release: every replica, through GPS_IOC_READ, all owners. */
static void check_replicas(void)
{
	int a, d, g;

	for (a = 0; a < TT_ALLOCS; a++) {
		uint64_t size = tt_a[a].alloc_size, b;
		uint32_t *got = malloc(size), *ref = malloc(size);
		struct gps_buf buf = { .args = tt_a[a] };

		for (d = 0; got && ref && d < tt_nr; d++) {
			if (gps_read(tt_fd, &buf, d, 0, d ? got : ref, size)) {
				anomaly("read alloc %d dev %d: errno %d", a, d,
					errno);
				continue;
			}
			for (b = 0; b < size / TT_BLOCK; b++) {
				uint32_t *s = (d ? got : ref) + b * TT_SLOTS;

				for (g = 0; g < tt_threads; g++) {
					if (s[g] == expect_of(a, b)[g])
						continue;
					first_anomaly(a, b, -1, d);
					anomaly("alloc %d dev %d block "
						"%llu owner %d: %u, "
						"last store %u", a, d,
						(unsigned long long)b,
						g, s[g],
						expect_of(a, b)[g]);
				}
				if (d && s[TT_RACE_SLOT] !=
				    ref[b * TT_SLOTS + TT_RACE_SLOT]) {
					first_anomaly(a, b, -1, d);
					anomaly("alloc %d block %llu racing "
						"slot: dev 0 %#x, dev %d %#x",
						a, (unsigned long long)b,
						ref[b * TT_SLOTS + TT_RACE_SLOT],
						d, s[TT_RACE_SLOT]);
				}
			}
			op_done(T_CHECKED, size / TT_BLOCK * tt_threads);
		}
		free(got);
		free(ref);
	}
}

static void *tt_thread_main(void *arg)
{
	struct tt_thread *t = arg;
	int on_priv = 0, on_shared = 0;
	struct gps_track_args k = { .op = GPS_TRACK_STOP };
	long long end;
	int r;
	cpu_set_t cpus;

	/* on our device's CPUs: with several per node they really race */
	if (gps_node_cpus(gps_node_of(tt_fd, t->dev), &cpus) == 0)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	for (;;) {
		end = gps_now_ms() + TT_ROUND_MS;
		while (gps_now_ms() < end) {
			r = rnd_below(t, 1000);
			if (r < 20)
				pick_view(t);
			else if (r < 30)
				host_fence(t);
			else if (r < 800)
				do_store(t);
			else if (r < 880) {
				if (tt_fence(t))
					anomaly("fence %d: errno %d", t->dev,
						errno);
				else
					op_done(T_FENCE, 1);
			} else if (r < 925)
				do_advise(t, GPS_ADVISE_SUBSCRIBE, T_SUB);
			else if (r < 970)
				do_advise(t, GPS_ADVISE_UNSUBSCRIBE, T_UNSUB);
			else if (r < 975)
				do_advise(t, GPS_ADVISE_COLLAPSE, T_COLLAPSE);
			else if (r < 990 && t->toggler)
				do_track(t, &on_priv, &on_shared);
			else if (r < 994)
				do_extra(t);
			else
				do_resubscribe(t);
		}
		/* the release: everyone stops, one fences everything */
		pthread_barrier_wait(&sh->bar);
		if (t->g == 0) {
			char mark[32];

			r = gps_fence(tt_fd, GPS_FENCE_ALL, NULL) ? errno : 0;
			hglobal(E_RELEASE, t->g, -1, sh->round, r);
			snprintf(mark, sizeof(mark), "mark %u", sh->round++);
			if (!sh->frozen)
				tt_khist(mark);
			if (r)
				anomaly("fence all: errno %d", r);
			op_done(T_RELEASE, 1);
		}
		pthread_barrier_wait(&sh->bar);
		check_own(t);
		if (t->g == 0)
			check_replicas();
		pthread_barrier_wait(&sh->bar);
		if (sh->stop)
			break;
		pthread_barrier_wait(&sh->bar);	/* g 0 sets stop, race */
	}
	if (on_priv && ioctl(t->priv_fd, GPS_IOC_TRACK, &k))
		anomaly("final track stop: errno %d", errno);
	if (on_shared && ioctl(tt_fd, GPS_IOC_TRACK, &k))
		anomaly("final track stop (shared): errno %d", errno);
	return NULL;
}

/* The history rings of allocation @a, shared by the processes. */
static int tt_hist_map(int a)
{
	uint64_t blocks = tt_a[a].alloc_size / TT_BLOCK;
	uint64_t pages = tt_a[a].alloc_size / tt_a[a].out_page_size;
	size_t len = blocks * (4 + TT_BHIST * sizeof(struct tt_ev)) +
		     pages * (4 + TT_PHIST * sizeof(struct tt_ev));
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	sh->bev[a] = (struct tt_ev *)p;
	p += blocks * TT_BHIST * sizeof(struct tt_ev);
	sh->pev[a] = (struct tt_ev *)p;
	p += pages * TT_PHIST * sizeof(struct tt_ev);
	sh->bidx[a] = (uint32_t *)p;
	sh->pidx[a] = sh->bidx[a] + blocks;
	return 0;
}

/* One process: a thread per device. */
static int tt_process(int proc, long seed, long long deadline)
{
	struct tt_thread *th = calloc(tt_nr, sizeof(*th));
	pthread_t *tid = calloc(tt_nr, sizeof(*tid));
	int priv_fd = open(GPS_DEV, O_RDWR);
	int a, d, i;

	if (!th || !tid || priv_fd < 0)
		return 1;
	for (i = 0; i < tt_nr; i++) {
		struct tt_thread *t = &th[i];

		t->g = proc * tt_nr + i;
		t->dev = i;
		t->proc = proc;
		t->priv_fd = priv_fd;
		t->toggler = i == 0;
		t->last_a = -1;
		t->via = i;
		t->rng = (seed + 1) * 0x9E3779B97F4A7C15ULL + t->g * 104729 + 1;
		for (a = 0; a < TT_ALLOCS; a++) {
			t->touched[a] = calloc(tt_a[a].alloc_size / TT_BLOCK,
					       1);
			if (!t->touched[a])
				return 4;
		}
		for (a = 0; a < TT_ALLOCS; a++)
			for (d = 0; d <= tt_nr; d++) {
				void *p = mmap(NULL, tt_a[a].alloc_size,
					       PROT_READ | PROT_WRITE,
					       MAP_SHARED, tt_fd,
					       tt_a[a].offset +
					       d * tt_a[a].view_stride);

				if (p == MAP_FAILED)
					return 2;
				t->view[a][d] = p;
			}
	}
	for (i = 0; i < tt_nr; i++)
		if (pthread_create(&tid[i], NULL, tt_thread_main, &th[i]))
			return 3;
	/* process 0's main thread paces the rounds */
	for (i = 0; i < tt_nr; i++)
		pthread_join(tid[i], NULL);
	(void)deadline;
	close(priv_fd);
	return 0;
}

static const char *const tt_ev_name[] = {
	[E_STORE] = "store", [E_FENCE] = "fence", [E_HOST_FENCE] = "host-fence",
	[E_VIEW] = "view", [E_ADVISE] = "advise", [E_TRACK] = "track",
	[E_RELEASE] = "release", [E_ANOMALY] = "anomaly",
};

static const char *const tt_advice_name[] = {
	[GPS_ADVISE_SUBSCRIBE] = "subscribe",
	[GPS_ADVISE_UNSUBSCRIBE] = "unsubscribe",
	[GPS_ADVISE_COLLAPSE] = "collapse",
};

static int ev_cmp(const void *x, const void *y)
{
	const struct tt_ev *a = x, *b = y;

	return a->ns < b->ns ? -1 : a->ns > b->ns;
}

/* The last @size (at most) events of a ring of @size, into @out. */
static int ring_take(struct tt_ev *out, const struct tt_ev *ring,
		     uint32_t n, unsigned int size, uint64_t since)
{
	uint32_t i = n > size ? n - size : 0;
	int k = 0;

	for (; i < n; i++)
		if (ring[i % size].ns >= since)
			out[k++] = ring[i % size];
	return k;
}

/*
 * The first anomaly's history: the torture's stores to its block, the
 * changes of its GPS page and, from the oldest of those on, the fences,
 * view switches, tracking toggles and releases, in time order; then the
 * driver's history of that GPS page.
 */
static void print_history(void)
{
	int a = sh->first_a, k = 0, i, nl = 0;
	uint64_t b = sh->first_b, g = tt_gpage(a, b), t0;
	/* the small page of the block, and the block's bytes in it */
	uint64_t sp = b * TT_BLOCK % tt_a[a].out_page_size / 4096;
	uint64_t off = b * TT_BLOCK % 4096;
	struct tt_ev *ev = calloc(TT_BHIST + TT_PHIST + TT_GHIST, sizeof(*ev));
	char *text, *line, *save = NULL, **lines;

	if (!ev)
		return;
	k += ring_take(ev + k, &sh->bev[a][b * TT_BHIST], sh->bidx[a][b],
		       TT_BHIST, 0);
	k += ring_take(ev + k, &sh->pev[a][g * TT_PHIST], sh->pidx[a][g],
		       TT_PHIST, 0);
	qsort(ev, k, sizeof(*ev), ev_cmp);
	k += ring_take(ev + k, sh->gev, sh->gidx, TT_GHIST, k ? ev[0].ns : 0);
	qsort(ev, k, sizeof(*ev), ev_cmp);
	printf("# hist: first anomaly: alloc %d (handle %llu, GPS pages of "
	       "%llu bytes) block %llu (GPS page %llu, small page %llu, "
	       "bytes %llu of it); torture events (CLOCK_MONOTONIC us), "
	       "the last %d of %d:\n", a,
	       (unsigned long long)tt_a[a].handle,
	       (unsigned long long)tt_a[a].out_page_size,
	       (unsigned long long)b, (unsigned long long)g,
	       (unsigned long long)sp, (unsigned long long)off,
	       k < TT_PRINT ? k : TT_PRINT, k);
	t0 = k ? ev[k > TT_PRINT ? k - TT_PRINT : 0].ns : 0;
	for (i = k > TT_PRINT ? k - TT_PRINT : 0; i < k; i++) {
		struct tt_ev *e = &ev[i];

		printf("# hist: %10.3f thread %2d %-10s", (e->ns - t0) / 1e3,
		       e->g, tt_ev_name[e->kind]);
		switch (e->kind) {
		case E_STORE:
			printf(" %u via view %d\n", e->v, e->dev);
			break;
		case E_ADVISE:
			printf(" %s dev %d GPS pages %u+%u: %d\n",
			       e->v < 4 ? tt_advice_name[e->v] : "?", e->dev,
			       e->arg >> 16, e->arg & 0xffff, e->rc);
			break;
		case E_VIEW:
			printf(" view %d to %d\n", e->v, e->dev);
			break;
		case E_HOST_FENCE:
			printf(" devices %#x: %d\n", e->v, e->rc);
			break;
		case E_TRACK:
			printf(" %s (%s file): %d\n",
			       e->v == GPS_TRACK_START ? "start" : "stop",
			       e->dev ? "shared" : "own", e->rc);
			break;
		case E_RELEASE:
			printf(" round %u (mark %u): %d\n", e->v, e->v, e->rc);
			break;
		case E_ANOMALY:
			printf(" found through view %d\n", e->dev);
			break;
		default:
			printf(" dev %d: %d\n", e->dev, e->rc);
		}
	}
	free(ev);
	if (!sh->have_khist) {
		printf("# hist: no driver history (module without "
		       "CONFIG_GPS_DEBUG)\n");
		return;
	}
	text = gps_history_read(tt_a[a].handle, g, sp);
	lines = calloc(TT_KHIST, sizeof(*lines));
	if (!text || !lines) {
		printf("# hist: driver history unreadable: errno %d\n", errno);
		free(text);
		free(lines);
		return;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		lines[nl++ % TT_KHIST] = line;
	printf("# hist: driver history of handle %llu GPS page %llu small "
	       "page %llu (local_clock us), the last %d of %d lines:\n",
	       (unsigned long long)tt_a[a].handle, (unsigned long long)g,
	       (unsigned long long)sp, nl < TT_KHIST ? nl : TT_KHIST, nl);
	for (i = nl > TT_KHIST ? nl - TT_KHIST : 0; i < nl; i++)
		printf("# hist: %s\n", lines[i % TT_KHIST]);
	free(lines);
	free(text);
}

FIXTURE(torture) {
	struct gps_fixture;
};

FIXTURE_SETUP(torture)
{
	gps_fixture_setup(_metadata, gps_fx(self), 1, NULL);
}

FIXTURE_TEARDOWN(torture)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * Rounds of random work and releases for GPS_TORTURE_SECS: no published
 * store lost, replicas equal after every release, no stray errno.
 */
TEST_F_TIMEOUT(torture, stores_fences_subscriptions_tracking, 86400)
{
	long secs = gps_env_long("GPS_TORTURE_SECS", 6);
	long seed = gps_env_long("GPS_TORTURE_SEED", 1);
	pthread_barrierattr_t ba;
	pid_t pid[TT_MAX_PROCS];
	struct gps_usage u;
	long long t0 = gps_now_ms(), deadline = t0 + secs * 1000;
	int a, p, status, race_rounds = 0, rounds = 0;
	long long ms_work = 0, ms_fence = 0, ms_check = 0;
	size_t tab;

	tt_procs = gps_env_long("GPS_TORTURE_PROCS", 2);
	ASSERT_GT(tt_procs, 0);
	ASSERT_LE(tt_procs, TT_MAX_PROCS);
	tt_fd = self->fd;
	tt_nr = self->nr;
	tt_threads = tt_procs * tt_nr;
	if (tt_threads > TT_MAX_THREADS)
		SKIP(return, "%d threads: at most %d", tt_threads,
		     TT_MAX_THREADS);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	tt_clock_init();
	sh->have_khist = !access(GPS_HISTORY, F_OK);
	tt_khist("on");
	for (a = 0; a < TT_ALLOCS; a++) {
		struct gps_buf b;

		ASSERT_EQ(0, gps_alloc(tt_fd, &b, tt_geom[a].size, GPS_MEM_GPS,
				       0, a % tt_nr, tt_geom[a].ps));
		tt_a[a] = b.args;
		tab = tt_a[a].alloc_size / TT_BLOCK * TT_MAX_THREADS * 4;
		sh->expected[a] = mmap(NULL, tab, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, sh->expected[a]);
		ASSERT_EQ(0, tt_hist_map(a));
	}
	/* every thread of every process, plus this pacing one */
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	ASSERT_EQ(0, pthread_barrier_init(&sh->bar, &ba, tt_threads + 1));

	for (p = 0; p < tt_procs; p++) {
		pid[p] = fork();
		ASSERT_LE(0, pid[p]);
		if (!pid[p])
			_exit(tt_process(p, seed, deadline));
	}
	/* The pacer: each round ends in a release, then the verdict. */
	for (;;) {
		long long w0 = gps_now_ms(), w1, w2;

		pthread_barrier_wait(&sh->bar);	/* work done */
		w1 = gps_now_ms();
		pthread_barrier_wait(&sh->bar);	/* released */
		w2 = gps_now_ms();
		rounds++;
		race_rounds += sh->race;
		if (gps_now_ms() >= deadline)
			sh->stop = 1;
		pthread_barrier_wait(&sh->bar);	/* checked */
		ms_work += w1 - w0;
		ms_fence += w2 - w1;
		ms_check += gps_now_ms() - w2;
		if (sh->stop)
			break;
		sh->race = rounds % 3 == 2;
		pthread_barrier_wait(&sh->bar);
	}
	for (p = 0; p < tt_procs; p++) {
		status = gps_wait_child(pid[p]);
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
			TH_LOG("process %d: status %#x", p, status);
		}
	}

	printf("# torture: %d processes x %d devices, %d rounds (%d racing) "
	       "in %lld ms, seed %ld\n", tt_procs, tt_nr, rounds, race_rounds,
	       gps_now_ms() - t0, seed);
	printf("# ms in work %lld, release %lld, checks %lld\n", ms_work,
	       ms_fence, ms_check);
	printf("#");
	for (a = 0; a < T_NR; a++)
		printf(" %s=%ld", tt_op_name[a], sh->ops[a]);
	printf(" unsubscribe-EBUSY=%ld\n", sh->ebusy);
	printf("# anomalies: %ld\n", sh->anomalies);
	for (a = 0; a < 8 && a < sh->anomalies; a++)
		printf("#   %s\n", sh->first[a]);
	if (sh->frozen) {
		print_history();
		tt_khist("all");
		tt_khist("on");
	}
	fflush(stdout);
	EXPECT_EQ(0, sh->anomalies);

	for (a = 0; a < TT_ALLOCS; a++) {
		struct gps_buf b = { .args = tt_a[a] };

		EXPECT_EQ(0, gps_free(tt_fd, &b));
	}
	u = gps_usage_wait(self->start, 5000);
	EXPECT_TRUE(gps_usage_eq(self->start, u)) {
		TH_LOG("allocs %lld/%lld replica %lld/%lld twins %lld/%lld",
		       u.nr_allocs, self->start.nr_allocs, u.replica_pages,
		       self->start.replica_pages, u.twin_pages,
		       self->start.twin_pages);
	}
}

TEST_HARNESS_MAIN
