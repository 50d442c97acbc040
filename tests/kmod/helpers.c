// SPDX-License-Identifier: GPL-2.0
/*
 * Description: fence helpers (fence_threads).  Each device has one helper
 * thread per other CPU of its node, gps/<node>.<k>, bound to the node; a
 * fence of many dirty replicas harvests on them too and still publishes
 * every store made before it exactly, whether the pages were written
 * densely (words of floats changed in three bytes of four), sparsely
 * (one byte per small page) or by many threads of the device at once;
 * stores going on during helped fences are published by the next fence;
 * fence_threads = 1, and bulk_blocks = 0 (the paper's queue), fence on
 * the caller alone.  The push thread is off: harvests happen at the
 * test's fences.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define SMALL	4096UL
#define NPAGES	32
#define SIZE	(NPAGES * GPS_PAGE_64K)
#define WORDS	(SIZE / 4)
#define MAX_WRITERS	16

FIXTURE(helpers) {
	struct gps_fixture;
	int node0, cpus0;
	cpu_set_t set0;
	uint32_t *want;
};

FIXTURE_SETUP(helpers)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "fence_threads", "bulk_blocks", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	self->node0 = gps_node_of(self->fd, 0);
	ASSERT_EQ(0, gps_node_cpus(self->node0, &self->set0));
	self->cpus0 = CPU_COUNT(&self->set0);
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_set_knob("fence_threads", 0));
	self->want = malloc(SIZE);
	ASSERT_NE(NULL, self->want);
	gps_fixture_alloc(_metadata, gps_fx(self), SIZE, GPS_PAGE_64K, 1);
}

FIXTURE_TEARDOWN(helpers)
{
	free(self->want);
	gps_fixture_teardown(_metadata, gps_fx(self));
}

#define STAT(name)	gps_stat(self->node0, name)

/* The helpers a fence of device 0 may use. */
static int helpers_of(int cpus)
{
	return cpus < 2 ? 0 : cpus - 1 > 15 ? 15 : cpus - 1;
}

/* A float-like word: the top byte stays, the three others change. */
static uint32_t word(int epoch, size_t i)
{
	return 0x3f000000u | ((i * 7919u + epoch * 104729u) & 0xffffffu);
}

struct writer {
	uint32_t *view;
	cpu_set_t *cpus;
	int epoch, k, n;
};

/* Writer @k of @n: every @n-th small page, bound to node 0's CPUs. */
static void *write_pages(void *arg)
{
	struct writer *w = arg;
	size_t pg, i;

	sched_setaffinity(0, sizeof(*w->cpus), w->cpus);
	for (pg = w->k; pg < SIZE / SMALL; pg += w->n)
		for (i = pg * SMALL / 4; i < (pg + 1) * SMALL / 4; i++)
			w->view[i] = word(w->epoch, i);
	return NULL;
}

/* Every word of the allocation, through device 0's view, by @n threads. */
static void fill(struct __test_metadata *_metadata,
		 FIXTURE_DATA(helpers) *self, int epoch, int n)
{
	struct writer w[MAX_WRITERS];
	pthread_t t[MAX_WRITERS];
	size_t i;
	int k;

	for (k = 0; k < n; k++) {
		w[k] = (struct writer){ self->b.view[0], &self->set0, epoch,
					k, n };
		ASSERT_EQ(0, pthread_create(&t[k], NULL, write_pages, &w[k]));
	}
	for (k = 0; k < n; k++)
		ASSERT_EQ(0, pthread_join(t[k], NULL));
	for (i = 0; i < WORDS; i++)
		self->want[i] = word(epoch, i);
}

/* Every replica holds self->want. */
static int exact(struct __test_metadata *_metadata,
		 FIXTURE_DATA(helpers) *self, const char *what)
{
	static uint32_t buf[WORDS];
	size_t i;
	int d;

	for (d = 0; d < self->nr; d++) {
		EXPECT_EQ(0, gps_read(self->fd, &self->b, d, 0, buf, SIZE));
		for (i = 0; i < WORDS; i++)
			if (buf[i] != self->want[i]) {
				TH_LOG("%s: device %d word %zu: %#x, not %#x",
				       what, d, i, buf[i], self->want[i]);
				return 0;
			}
	}
	return 1;
}

static int writers(FIXTURE_DATA(helpers) *self)
{
	return self->cpus0 < 1 ? 1 :
	       self->cpus0 > MAX_WRITERS ? MAX_WRITERS : self->cpus0;
}

/* Threads named gps/<node>.<k>, one per other CPU, on the node's CPUs. */
TEST_F(helpers, threads_named_per_node_and_bound)
{
	char prefix[32], path[64], comm[32];
	struct dirent *de;
	cpu_set_t set;
	int found = 0, c;
	DIR *dir;
	FILE *f;

	snprintf(prefix, sizeof(prefix), "gps/%d.", self->node0);
	dir = opendir("/proc");
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		pid_t pid = atoi(de->d_name);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, prefix, strlen(prefix)))
			continue;
		found++;
		ASSERT_EQ(0, sched_getaffinity(pid, sizeof(set), &set));
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				EXPECT_TRUE(CPU_ISSET(c, &self->set0))
					TH_LOG("%s may run on CPU %d", comm, c);
	}
	closedir(dir);
	EXPECT_EQ(helpers_of(self->cpus0), found);
}

/* Dense and sparse epochs, written by many threads: exact, and helped. */
TEST_F(helpers, helped_fences_publish_exactly)
{
	struct gps_fence_args f;
	long long helped = STAT("pages_helped"), before;
	volatile unsigned char *p = self->b.view[0];
	int e, n = writers(self);
	size_t pg;

	for (e = 1; e <= 4; e++) {
		before = STAT("pages_harvested");
		fill(_metadata, self, e, n);
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		ASSERT_TRUE(exact(_metadata, self, "dense"))
			TH_LOG("epoch %d", e);
		EXPECT_EQ(SIZE / SMALL, STAT("pages_harvested") - before);
	}
	/* One byte per small page: a block per page, past the queue. */
	for (e = 5; e <= 7; e++) {
		unsigned long long changed = 0;

		for (pg = 0; pg < SIZE / SMALL; pg++) {
			size_t off = pg * SMALL + (e * 131 + pg * 8) % SMALL;
			unsigned char *w = (unsigned char *)self->want + off;

			changed += *w != e;
			p[off] = e;
			*w = e;
		}
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		EXPECT_EQ((self->nr - 1) * changed, f.bytes_pushed)
			TH_LOG("epoch %d", e);
		ASSERT_TRUE(exact(_metadata, self, "sparse"))
			TH_LOG("epoch %d", e);
	}
	helped = STAT("pages_helped") - helped;
	if (helpers_of(self->cpus0)) {
		EXPECT_LT(0, helped);
	} else {
		EXPECT_EQ(0, helped);
	}
	TH_LOG("node %d: %d CPUs, %lld of %d pages harvested by helpers",
	       self->node0, self->cpus0, helped, 7 * (int)(SIZE / SMALL));
}

/* fence_threads = 1 and bulk_blocks = 0 fence on the caller alone. */
TEST_F(helpers, serial_fences_when_asked)
{
	long long helped = STAT("pages_helped"), queued;
	int e;

	ASSERT_EQ(0, gps_set_knob("fence_threads", 1));
	for (e = 1; e <= 2; e++) {
		fill(_metadata, self, e, writers(self));
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(exact(_metadata, self, "fence_threads=1"));
	}
	ASSERT_EQ(0, gps_set_knob("fence_threads", 0));
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));
	queued = STAT("blocks_queued");
	for (e = 3; e <= 4; e++) {
		fill(_metadata, self, e, writers(self));
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		ASSERT_TRUE(exact(_metadata, self, "bulk_blocks=0"));
	}
	EXPECT_LT(0, STAT("blocks_queued") - queued);
	EXPECT_EQ(0, STAT("pages_helped") - helped);
}

struct racer {
	volatile uint32_t *w;		/* the first half of the allocation */
	volatile int stop;
	uint32_t round;
	cpu_set_t *cpus;
};

/* Rewrite the first half, whole, round after round, until stopped. */
static void *race(void *arg)
{
	struct racer *r = arg;
	size_t i;

	sched_setaffinity(0, sizeof(*r->cpus), r->cpus);
	while (!r->stop) {
		r->round++;
		for (i = 0; i < WORDS / 2; i++)
			r->w[i] = word(r->round, i);
	}
	return NULL;
}

/*
 * One thread stores to one half all along, the test to the other half
 * between helped fences: each fence publishes the half written before
 * it, and the last, after the racer stopped, the racer's last round.
 */
TEST_F(helpers, stores_during_helped_fences)
{
	struct racer r = { .w = self->b.view[0], .cpus = &self->set0 };
	uint32_t *v = self->b.view[0];
	static uint32_t buf[WORDS];
	pthread_t t;
	size_t i;
	int e, d;

	ASSERT_EQ(0, pthread_create(&t, NULL, race, &r));
	for (e = 1; e <= 12; e++) {
		for (i = WORDS / 2; i < WORDS; i++)
			v[i] = word(e, i);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		for (d = 1; d < self->nr; d++) {
			ASSERT_EQ(0, gps_read(self->fd, &self->b, d, SIZE / 2,
					      buf, SIZE / 2));
			for (i = 0; i < WORDS / 2; i++)
				if (buf[i] != word(e, WORDS / 2 + i))
					break;
			ASSERT_EQ(WORDS / 2, i)
				TH_LOG("epoch %d device %d word %zu", e, d,
				       WORDS / 2 + i);
		}
	}
	r.stop = 1;
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_LT(0, r.round);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	for (i = 0; i < WORDS; i++)
		self->want[i] = i < WORDS / 2 ? word(r.round, i) :
						word(12, i);
	ASSERT_TRUE(exact(_metadata, self, "after the racer"));
}

TEST_HARNESS_MAIN
