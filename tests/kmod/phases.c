// SPDX-License-Identifier: GPL-2.0
/*
 * Description: phases of dense in-place writes, each page with one
 * writer, as bulk-synchronous programs (FFTs, transposes) make them.  In
 * each phase every device rewrites its own pages several times over, in
 * passes (the push thread harvests them between passes, while they are
 * still being written), then fences; after a barrier every device reads
 * every other device's pages and must see the phase's last values, byte
 * for byte.  With the queue path alone (bulk_blocks 0) and with the bulk
 * path; 4 KiB and 64 KiB GPS pages.  GPS_PHASES sets the phases (8).
 * Written after bench/paradigms' hit workload lost stores (an open
 * defect, Documentation/reliability.rst); this pattern alone does not.
 */
#include <pthread.h>
#include <sched.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define PAGES_PER_DEV	4
#define PASSES		4

struct ph_shared {
	int fd, nr;
	struct gps_buf *b;
	size_t per_dev;			/* bytes each device owns */
	int phases;
	int fence_all;			/* each device fences every device */
	pthread_barrier_t bar;
	long long bad;			/* words wrong, all readers */
	long long first_phase, first_word, first_dev;
	pthread_mutex_t lock;
};

struct ph_dev {
	struct ph_shared *s;
	int dev;
};

static uint64_t ph_value(int phase, int pass, size_t word)
{
	uint64_t x = ((uint64_t)phase << 40) ^ ((uint64_t)pass << 32) ^ word;

	x *= 0x9E3779B97F4A7C15ULL;
	return x ^ (x >> 29);
}

static void *ph_thread(void *arg)
{
	struct ph_dev *pd = arg;
	struct ph_shared *s = pd->s;
	volatile uint64_t *v = s->b->view[pd->dev];
	size_t words = s->per_dev / 8, mine = pd->dev * words, i;
	int phase, pass, d;
	cpu_set_t cpus;

	if (!gps_node_cpus(gps_node_of(s->fd, pd->dev), &cpus))
		sched_setaffinity(0, sizeof(cpus), &cpus);
	for (phase = 1; phase <= s->phases; phase++) {
		/* in place, line by line, as an FFT's passes do */
		for (pass = 0; pass < PASSES; pass++) {
			for (i = 0; i < words; i++) {
				v[mine + i] = ph_value(phase, pass, mine + i);
				if (!(i & 511))
					sched_yield();
			}
		}
		if (gps_fence(s->fd, s->fence_all ? GPS_FENCE_ALL : pd->dev,
			      NULL))
			__atomic_add_fetch(&s->bad, 1 << 20, __ATOMIC_RELAXED);
		pthread_barrier_wait(&s->bar);
		for (d = 0; d < s->nr; d++) {
			size_t base = d * words;

			if (d == pd->dev)
				continue;
			for (i = 0; i < words; i++) {
				uint64_t want = ph_value(phase, PASSES - 1,
							 base + i);

				if (v[base + i] == want)
					continue;
				pthread_mutex_lock(&s->lock);
				if (!s->bad++) {
					s->first_phase = phase;
					s->first_word = base + i;
					s->first_dev = pd->dev;
				}
				pthread_mutex_unlock(&s->lock);
			}
		}
		pthread_barrier_wait(&s->bar);
	}
	return NULL;
}

FIXTURE(phases) {
	struct gps_fixture;
};

FIXTURE_SETUP(phases)
{
	static const char *const knobs[] = {
		GPS_KNOBS_COMMON, "bulk_blocks", "dirty_wake", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	/* the push thread on, harvesting often: pages still being written */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 100));
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
}

FIXTURE_TEARDOWN(phases)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

static void run(struct __test_metadata *_metadata, struct gps_fixture *fx,
		uint32_t ps, int bulk, int fence_all)
{
	struct ph_shared s = {
		.fd = fx->fd, .nr = fx->nr, .b = &fx->b,
		.per_dev = PAGES_PER_DEV * (size_t)ps,
		.phases = gps_env_long("GPS_PHASES", 8),
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.fence_all = fence_all,
	};
	struct ph_dev pd[GPS_MAX_DEVICES];
	pthread_t t[GPS_MAX_DEVICES];
	int d;

	ASSERT_EQ(0, gps_set_knob("bulk_blocks", bulk));
	gps_fixture_alloc(_metadata, fx, s.per_dev * fx->nr, ps, fx->nr);
	ASSERT_EQ(0, pthread_barrier_init(&s.bar, NULL, fx->nr));
	for (d = 0; d < fx->nr; d++) {
		pd[d] = (struct ph_dev){ &s, d };
		ASSERT_EQ(0, pthread_create(&t[d], NULL, ph_thread, &pd[d]));
	}
	for (d = 0; d < fx->nr; d++)
		pthread_join(t[d], NULL);
	pthread_barrier_destroy(&s.bar);
	EXPECT_EQ(0, s.bad)
		TH_LOG("%lld words wrong; first: phase %lld, word %lld (page %lld), read by device %lld",
		       s.bad, s.first_phase, s.first_word,
		       s.first_word * 8 / ps, s.first_dev);
}

TEST_F_TIMEOUT(phases, queue_64k, 300)
{
	run(_metadata, gps_fx(self), GPS_PAGE_64K, 0, 0);
}

/* Every device's release fences the others too (the library's kernel
 * end fences the home device): harvests of pages still being written. */
TEST_F_TIMEOUT(phases, queue_64k_fence_all, 300)
{
	run(_metadata, gps_fx(self), GPS_PAGE_64K, 0, 1);
}

TEST_F_TIMEOUT(phases, bulk_64k, 300)
{
	run(_metadata, gps_fx(self), GPS_PAGE_64K, 16, 0);
}

TEST_F_TIMEOUT(phases, queue_4k, 300)
{
	run(_metadata, gps_fx(self), GPS_PAGE_4K, 0, 0);
}

TEST_HARNESS_MAIN
