// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the per-device coalescing write queue and the push
 * thread.  Many stores to one block between harvests cost one pushed
 * block; a block harvested twice before it is pushed merges into one
 * entry; the queue never holds more than its capacity and pushes its
 * oldest blocks past the high watermark, a page's blocks sharing an
 * entry (cut from its lowest block); the thread pushes while user
 * code computes, before the fence, and a fence on its CPU returns while
 * it is pressed; a dense push keeps a receiver's queued store; the
 * block_size knob sets what one entry covers and rejects bad values.
 * Pages are not kept writable, so that stores fault and wake the
 * thread.  Knobs are saved and restored.
 */
#include <sched.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define SZ	(256 * 1024)

FIXTURE(queue) {
	struct gps_fixture;
	int node0;
	volatile unsigned char *p;	/* device 0's view */
};

FIXTURE_SETUP(queue)
{
	/* Restored in reverse: capacity before watermark, as they nest. */
	static const char *const knobs[] = {
		"harvest_interval_us", "dirty_wake", "bulk_blocks",
		"queue_watermark", "queue_capacity", "block_size",
		"keep_writable_ms", "link_bandwidth", "harvest_ahead", NULL,
	};

	if (gps_fixture_setup(_metadata, gps_fx(self), 1, knobs))
		return;
	self->node0 = gps_node_of(self->fd, 0);
	/* No proactive pushes unless a test turns them on. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	/* Every harvest protects: a store faults, and wakes the thread. */
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
	/* The blocks the tests count (not what an earlier program left). */
	ASSERT_EQ(0, gps_set_knob("block_size", 128));
	gps_fixture_alloc(_metadata, gps_fx(self), SZ, GPS_PAGE_64K, 1);
	self->p = self->b.view[0];
}

FIXTURE_TEARDOWN(queue)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

#define STAT(name)	gps_stat(self->node0, name)

/*
 * On device 0's CPUs (where its push thread runs, so a fence there is
 * often preempted by it), with every store waking the thread.
 */
static void press_the_thread(struct __test_metadata *_metadata, int node,
			     unsigned long long interval_us)
{
	cpu_set_t cpus;

	ASSERT_EQ(0, gps_node_cpus(node, &cpus));
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", interval_us));
}

/*
 * A fence on the push thread's own CPU, with dirty replicas pressing the
 * thread (dirty_wake 1), returns: the thread, finding its harvest_lock
 * taken, sleeps instead of looping in the kernel where the fence holder
 * would never get the CPU back (a soft lockup on one vCPU per node).
 */
TEST_F_TIMEOUT(queue, fences_on_the_threads_cpu_return, 120)
{
	unsigned char want[256];
	long long end;
	int i = 0;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	press_the_thread(_metadata, self->node0, 100);
	end = gps_now_ms() + 3000;
	do {
		memset((void *)self->p, ++i, SZ);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	} while (gps_now_ms() < end);
	TH_LOG("%d fences in 3 s", i);
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	memset(want, i, sizeof(want));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/*
 * A thread that found its harvest_lock taken by a fence still answers
 * dirty_wake once the fence is over: stores made after a burst of fences
 * racing the thread are harvested without a fence, well before the 10 s
 * interval.  Five bursts; a thread that lost one race must come back.
 */
TEST_F_TIMEOUT(queue, thread_that_lost_its_lock_answers_dirty_wake, 120)
{
	long long h, end;
	int burst, i = 0;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	press_the_thread(_metadata, self->node0, 10000000);
	for (burst = 0; burst < 5; burst++) {
		end = gps_now_ms() + 300;
		do {	/* a store wakes the thread; the fence races it */
			i++;
			self->p[(i % 4) * 65536] = i;
			ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		} while (gps_now_ms() < end);
		usleep(50 * 1000);
		h = STAT("pages_harvested");
		self->p[100] = burst + 1;
		ASSERT_LT(h, gps_wait_stat_above(self->node0, "pages_harvested",
						 h, 2000)) {
			TH_LOG("burst %d (%d fences): no harvest in 2 s",
			       burst, i);
		}
	}
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
}

/* 100 stores to one 128-byte block between harvests: one pushed block. */
TEST_F(queue, stores_to_one_block_coalesce)
{
	struct gps_fence_args f;
	unsigned char want[128] = {};
	int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (i = 0; i < 100; i++) {
		self->p[i % 64] = i + 1;
		want[i % 64] = i + 1;
	}
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(1, f.pages_harvested);
	ASSERT_EQ(1, f.blocks_pushed);
	ASSERT_EQ(64 * (self->nr - 1), f.bytes_pushed);
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/* One block harvested twice before it is pushed: one entry (a merge). */
TEST_F(queue, harvests_of_one_block_merge)
{
	unsigned char want[128] = { 1, 2 };
	long long queued, merged, h;
	struct gps_fence_args f;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	/* The thread harvests each newly dirty page; entries stay 10 s. */
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 10000000));
	/* Whatever the thread was doing is done when a fence returns. */
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	queued = STAT("blocks_queued");
	merged = STAT("blocks_merged");
	h = STAT("pages_harvested");

	/*
	 * The thread may also harvest the page between the write fault and
	 * the store (nothing changed yet): wait for the queued block, not
	 * for a harvest.
	 */
	self->p[0] = 1;
	ASSERT_EQ(queued + 1, gps_wait_stat_above(self->node0,
						  "blocks_queued", queued,
						  2000));
	ASSERT_EQ(1, STAT("queue_blocks"));
	self->p[1] = 2;
	ASSERT_EQ(merged + 1, gps_wait_stat_above(self->node0,
						  "blocks_merged", merged,
						  2000));
	ASSERT_EQ(1, STAT("queue_blocks"));
	ASSERT_EQ(queued + 1, STAT("blocks_queued"));
	ASSERT_LE(h + 2, STAT("pages_harvested"));
	TH_LOG("pages harvested by the thread: %lld",
	       STAT("pages_harvested") - h);

	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(1, f.blocks_pushed);
	ASSERT_EQ(2 * (self->nr - 1), f.bytes_pushed);
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/*
 * Entries of two allocations queued by the thread, interleaved (A B A B
 * ...); freeing B drops its entries and leaves A's, which a fence then
 * pushes, every one; the queue works on after (its ring closed up).
 */
TEST_F(queue, free_drops_only_its_own_entries)
{
	static unsigned char want[SZ];
	volatile unsigned char *q;
	struct gps_fence_args f;
	struct gps_buf other;
	long long queued;
	int i, round;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 10000000));
	ASSERT_EQ(0, gps_alloc(self->fd, &other, SZ, GPS_MEM_GPS, 0, 0,
			       GPS_PAGE_64K));
	q = gps_map(self->fd, &other, 0);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	for (round = 1; round <= 2; round++) {
		for (i = 0; i < 4; i++) {
			volatile unsigned char *w[2] = { self->p, q };
			int k;

			for (k = 0; k < 2; k++) {
				if (round == 2 && k == 1)
					continue;	/* freed */
				queued = STAT("blocks_queued");
				w[k][i * 65536] = round * 10 + i;
				w[k][i * 65536 + 256] = round * 10 + i;
				ASSERT_LE(queued + 2,
					  gps_wait_stat_above(self->node0,
							      "blocks_queued",
							      queued + 1,
							      2000));
			}
			want[i * 65536] = round * 10 + i;
			want[i * 65536 + 256] = round * 10 + i;
		}
		ASSERT_EQ(round == 1 ? 16 : 8, STAT("queue_blocks"));
		if (round == 1) {
			ASSERT_EQ(0, gps_free(self->fd, &other));
			ASSERT_EQ(8, STAT("queue_blocks"));
		}
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		ASSERT_EQ(8, f.blocks_pushed) TH_LOG("round %d", round);
		ASSERT_EQ(0, STAT("queue_blocks"));
		ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b,
						  self->nr, 0, want, SZ))
			TH_LOG("round %d", round);
	}
}

/*
 * Device 1 stores 7 at byte @off of small page 0 (and in @want) and its
 * push thread queues it; entries wait 10 s, so only fences push them.
 */
static void receiver_queues_a_byte(struct __test_metadata *_metadata,
				   struct gps_fixture *fx, unsigned int off,
				   unsigned char *want)
{
	volatile unsigned char *p1 = gps_map(fx->fd, &fx->b, 1);
	int node1 = gps_node_of(fx->fd, 1);
	long long queued;

	ASSERT_NE(NULL, p1);
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 10000000));
	ASSERT_EQ(0, gps_fence(fx->fd, GPS_FENCE_ALL, NULL));
	queued = gps_stat(node1, "blocks_queued");
	p1[off] = 7;
	want[off] = 7;
	ASSERT_EQ(queued + 1, gps_wait_stat_above(node1, "blocks_queued",
						  queued, 2000));
	ASSERT_EQ(1, gps_stat(node1, "queue_blocks"));
}

/*
 * A receiver's own store, harvested and queued but not yet pushed, stays
 * when another device's densely written page lands on it: a push copies
 * a page whole only into replicas that no view ever mapped writable.
 * Device 1 stores one byte of small page 0 and its thread queues it (and
 * write-protects the page); device 0 then writes every other byte of the
 * page and fences; device 1's fence must still publish its byte.
 */
TEST_F(queue, dense_push_keeps_a_receivers_queued_byte)
{
	static unsigned char want[4096];
	int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	receiver_queues_a_byte(_metadata, gps_fx(self), 0, want);
	for (i = 1; i < 4096; i++) {
		want[i] = i % 251 + 1;
		self->p[i] = want[i];
	}
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/*
 * The same through the queue alone (bulk_blocks 0): device 0 writes
 * every byte of small page 0 but those of block 2, where device 1 has
 * one byte of its own queued.  Device 0's push thread queues the 31
 * blocks, its fence drains them into device 1's page block by block, and
 * device 1's byte must survive there to be published by its fence: a
 * drain that wrote more than the queued blocks (a copy of the page, or
 * of a run of blocks across the gap) would lose it.
 */
TEST_F(queue, queue_drain_keeps_a_receivers_queued_byte)
{
	static unsigned char want[4096];
	long long q0;
	int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));
	receiver_queues_a_byte(_metadata, gps_fx(self), 2 * 128 + 5, want);
	q0 = STAT("blocks_queued");
	for (i = 0; i < 4096; i++) {
		if (i / 128 == 2)
			continue;
		want[i] = i % 251 + 1;
		self->p[i] = want[i];
	}
	/* the thread may have harvested the page more than once meanwhile */
	for (i = 0; i < 2000 && (STAT("queue_blocks") != 31 ||
				 STAT("dirty_replicas")); i++)
		usleep(1000);
	ASSERT_EQ(31, STAT("queue_blocks"));
	ASSERT_LE(q0 + 31, STAT("blocks_queued"));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, 1, NULL));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/* Write one byte in each of @n blocks, 256 bytes apart (bs = 128). */
static void write_spread(volatile unsigned char *p, unsigned char *want,
			 int n)
{
	int i;

	for (i = 0; i < n; i++) {
		p[i * 256 + (i & 127)] = i + 1;
		want[i * 256 + (i & 127)] = i + 1;
	}
}

/* Who harvested, when a fence found less than the test wrote. */
struct queue_who {
	long long harvested, rounds, fences;
};

static struct queue_who queue_who(int node)
{
	struct queue_who w = {
		.harvested = gps_stat(node, "pages_harvested"),
		.rounds = gps_stat(node, "thread_rounds"),
		.fences = gps_stat(node, "fences"),
	};

	return w;
}

#define WHO_LOG(w0, f)	who_log(_metadata, self->node0, w0, &(f))

static void who_log(struct __test_metadata *_metadata, int node,
		    struct queue_who w0, const struct gps_fence_args *f)
{
	struct queue_who w = queue_who(node);

	TH_LOG("since the writes: %lld pages harvested (%llu by the fence), "
	       "%lld thread rounds, %lld fences; interval %lld us",
	       w.harvested - w0.harvested,
	       (unsigned long long)f->pages_harvested, w.rounds - w0.rounds,
	       w.fences - w0.fences, gps_knob("harvest_interval_us"));
}

/* capacity 8: watermark 7; 100 blocks all arrive, never 9 entries held. */
TEST_F(queue, capacity_bounds_the_queue)
{
	size_t len = 100 * 256;
	unsigned char *want = calloc(1, len);
	struct gps_fence_args f;
	struct queue_who w0;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));	/* all via the queue */
	ASSERT_EQ(0, gps_set_knob("queue_capacity", 8));
	ASSERT_EQ(8, gps_knob("queue_capacity"));
	ASSERT_EQ(7, gps_knob("queue_watermark"));
	ASSERT_EQ(8, STAT("queue_capacity"));
	ASSERT_EQ(0, STAT("queue_hwm"));	/* reset by the new shape */

	w0 = queue_who(self->node0);
	write_spread(self->p, want, 100);
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(100, f.blocks_pushed) {
		WHO_LOG(w0, f);
	}
	ASSERT_EQ(100 * (self->nr - 1), f.bytes_pushed);
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, len));
	ASSERT_EQ(8, STAT("queue_hwm"));
	ASSERT_EQ(0, STAT("queue_blocks"));
	free(want);
}

/*
 * The blocks of a small page leave the queue together (one lock per
 * page's run of oldest entries): runs cut by a full queue, by the
 * watermark and by the page's end must still send each block's bytes to
 * its own offset, and every changed block once.  Blocks of 64 pages,
 * changed in a pattern of bytes that differs by page and block, some
 * left alone; capacities 1 and 20 cut the 32-block runs, 512 holds them
 * all.
 */
TEST_F(queue, runs_of_a_page_land_exact)
{
	static const unsigned int caps[] = { 1, 20, 512 };
	unsigned char *want = calloc(1, SZ);
	long long blocks, bytes;
	struct gps_fence_args f;
	unsigned int c, pg, k, j;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));
	for (c = 0; c < 3; c++) {
		ASSERT_EQ(0, gps_set_knob("queue_capacity", caps[c]));
		blocks = bytes = 0;
		for (pg = 0; pg < SZ / 4096; pg++) {
			for (k = 0; k < 4096 / 128; k++) {
				unsigned int step = 1 + (pg + k + c) % 5;
				size_t o = pg * 4096 + k * 128;

				if ((pg * 7 + k + c) % 3 == 0)
					continue;
				for (j = 0; j < 128; j += step) {
					want[o + j] = (pg + k + j + c) | 1;
					self->p[o + j] = want[o + j];
					bytes++;
				}
				blocks++;
			}
		}
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		EXPECT_EQ(blocks, f.blocks_pushed);
		EXPECT_EQ(bytes * (self->nr - 1), f.bytes_pushed);
		ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr,
						  0, want, SZ)) {
			TH_LOG("capacity %u", caps[c]);
		}
		ASSERT_EQ(0, STAT("queue_blocks"));
		/* Changed bytes only: the next round starts from zero. */
		memset((void *)self->p, 0, SZ);
		memset(want, 0, SZ);
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	}
	free(want);
}

/*
 * The blocks of a small page share an entry: the watermark cuts it from
 * its lowest block up, and a block of the page queued again later joins
 * the entry instead of waiting at the tail.  Capacity 8 (watermark 7):
 * one byte in each of blocks 0-9 of a page leaves 3-9 queued, whatever
 * harvests the thread split the stores into; new bytes in blocks 0 and 9
 * then join and merge, and the push past the watermark sends block 0
 * (lowest), not block 3 (oldest of a queue of blocks).
 */
TEST_F(queue, a_pages_blocks_share_an_entry)
{
	unsigned char want[4096] = {};
	volatile unsigned char *v1;
	long long early, queued, merged;
	struct gps_fence_args f;
	int k;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	v1 = gps_map(self->fd, &self->b, 1);
	ASSERT_NE(NULL, v1);
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));
	ASSERT_EQ(0, gps_set_knob("queue_capacity", 8));
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 10000000));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	early = STAT("blocks_pushed_early");
	queued = STAT("blocks_queued");
	merged = STAT("blocks_merged");

	for (k = 0; k < 10; k++) {
		want[k * 128 + 5] = k + 1;
		self->p[k * 128 + 5] = k + 1;
	}
	/* The third push comes with the tenth block, in one harvest. */
	ASSERT_EQ(early + 3, gps_wait_stat_above(self->node0,
						 "blocks_pushed_early",
						 early + 2, 2000));
	ASSERT_EQ(queued + 10, STAT("blocks_queued"));
	ASSERT_EQ(7, STAT("queue_blocks"));
	ASSERT_EQ(8, STAT("queue_hwm"));
	for (k = 0; k < 10; k++)
		ASSERT_EQ(k < 3 ? k + 1 : 0, v1[k * 128 + 5]) {
			TH_LOG("block %d", k);
		}

	want[5] = 100;
	want[9 * 128 + 5] = 109;
	self->p[5] = 100;
	self->p[9 * 128 + 5] = 109;
	ASSERT_EQ(merged + 1, gps_wait_stat_above(self->node0,
						  "blocks_merged", merged,
						  2000));
	ASSERT_EQ(early + 4, gps_wait_stat_above(self->node0,
						 "blocks_pushed_early",
						 early + 3, 2000));
	ASSERT_EQ(queued + 11, STAT("blocks_queued"));
	ASSERT_EQ(7, STAT("queue_blocks"));
	ASSERT_EQ(100, v1[5]);
	ASSERT_EQ(0, v1[3 * 128 + 5]);

	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(7, f.blocks_pushed);
	ASSERT_EQ(7 * (self->nr - 1), f.bytes_pushed);
	ASSERT_EQ(0, STAT("queue_blocks"));
	ASSERT_EQ(-1, gps_replicas_differ(self->fd, &self->b, self->nr, 0,
					  want, sizeof(want)));
}

/* Past the watermark the oldest entries go out before the drain. */
TEST_F(queue, watermark_pushes_early)
{
	long long early = STAT("blocks_pushed_early");
	static unsigned char want[200 * 256];
	struct gps_fence_args f;
	struct queue_who w0;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_knob("bulk_blocks", 0));
	ASSERT_EQ(0, gps_set_knob("queue_capacity", 8));
	w0 = queue_who(self->node0);
	write_spread(self->p, want, 100);
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(100, f.blocks_pushed) {
		WHO_LOG(w0, f);
	}
	/* All but the 7 under the watermark were pushed by it. */
	ASSERT_EQ(early + 93, STAT("blocks_pushed_early"));

	/* The same through the thread: it harvests, the watermark pushes. */
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 10000000));
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	early = STAT("blocks_pushed_early");
	write_spread(self->p + 100 * 256, want + 100 * 256, 100);
	ASSERT_EQ(early + 93, gps_wait_stat_above(self->node0,
						  "blocks_pushed_early",
						  early + 92, 2000));
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_EQ(7, f.blocks_pushed);
}

/* With the thread on, most traffic is done while user code computes. */
TEST_F(queue, pushes_during_compute)
{
	long long early = STAT("blocks_pushed_early");
	struct gps_fence_args f;
	size_t i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 1000));
	for (i = 0; i < 64; i++)	/* one store in each small page */
		self->p[i * 4096 + i] = i + 1;
	usleep(200 * 1000);		/* "compute" */
	ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
	ASSERT_LT(early, STAT("blocks_pushed_early"));
	ASSERT_GT(64, f.blocks_pushed);
	for (i = 0; i < 64; i++) {
		unsigned char v = 0;

		ASSERT_EQ(0, gps_read(self->fd, &self->b, self->nr - 1,
				      i * 4096 + i, &v, 1));
		ASSERT_EQ(i + 1, v);
	}
}

/*
 * harvest_ahead = 0 (the default): with the link unlimited the thread
 * does no round on its interval, and stores wait for the fence; a link
 * to model (link_bandwidth), or harvest_ahead = 1, brings the rounds
 * back at once.  Each phase stores one byte per small page, waits 200
 * intervals, and looks at thread_rounds; the fence then publishes all.
 */
TEST_F(queue, thread_waits_for_a_link)
{
	static const struct {
		unsigned long long bw, ahead;
		int rounds;
	} phase[] = {
		{ 0, 0, 0 }, { 1000000000000ULL, 0, 1 }, { 0, 1, 1 },
		{ 0, 0, 0 },
	};
	unsigned char want[64];
	long long r0;
	size_t p, i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	ASSERT_EQ(0, gps_set_knob("dirty_wake", 1));
	for (p = 0; p < sizeof(phase) / sizeof(phase[0]); p++) {
		ASSERT_EQ(0, gps_set_knob("link_bandwidth", phase[p].bw));
		ASSERT_EQ(0, gps_set_knob("harvest_ahead", phase[p].ahead));
		ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 1000));
		ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
		r0 = STAT("thread_rounds");
		for (i = 0; i < 64; i++) {
			want[i] = p * 64 + i + 1;
			self->p[i * 4096 + i] = want[i];
		}
		if (phase[p].rounds) {
			ASSERT_LT(r0, gps_wait_stat_above(self->node0,
							  "thread_rounds", r0,
							  2000)) {
				TH_LOG("phase %zu: no round in 2 s", p);
			}
		} else {
			usleep(200 * 1000);
			ASSERT_EQ(r0, STAT("thread_rounds")) {
				TH_LOG("phase %zu: rounds with no link", p);
			}
		}
		ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
		for (i = 0; i < 64; i++) {
			unsigned char v = 0;

			ASSERT_EQ(0, gps_read(self->fd, &self->b, self->nr - 1,
					      i * 4096 + i, &v, 1));
			ASSERT_EQ(want[i], v);
		}
	}
}

/* Version ioctl's block_size: what the knob says. */
static unsigned int abi_block_size(int fd)
{
	struct gps_version_args v = {};

	return ioctl(fd, GPS_IOC_VERSION, &v) ? 0 : v.block_size;
}

/* block_size: 64 splits a 128-byte region in two blocks, 256 joins it. */
TEST_F(queue, block_size_knob)
{
	static const unsigned int sizes[] = { 64, 128, 256 };
	struct gps_fence_args f;
	unsigned int i;

	if (self->nr < 2)
		SKIP(return, "needs two devices");
	for (i = 0; i < 3; i++) {
		volatile unsigned char *r = self->p + 4096 * (i + 1);

		ASSERT_EQ(0, gps_set_knob("block_size", sizes[i]));
		ASSERT_EQ(sizes[i], gps_knob("block_size"));
		ASSERT_EQ(sizes[i], abi_block_size(self->fd));
		r[0] = 0x10 + i;	/* one byte in each 64-byte half */
		r[64] = 0x20 + i;
		ASSERT_EQ(0, gps_fence(self->fd, 0, &f));
		ASSERT_EQ(sizes[i] == 64 ? 2 : 1, f.blocks_pushed);
		ASSERT_EQ(2 * (self->nr - 1), f.bytes_pushed);
	}
	/* Not a power of two, too small, larger than a page: -EINVAL. */
	ASSERT_EQ(-EINVAL, gps_set_knob("block_size", 100));
	ASSERT_EQ(-EINVAL, gps_set_knob("block_size", 32));
	ASSERT_EQ(-EINVAL, gps_set_knob("block_size", 8192));
	ASSERT_EQ(-EINVAL, gps_set_knob("block_size", 0));
	ASSERT_EQ(256, gps_knob("block_size"));
	ASSERT_EQ(256, abi_block_size(self->fd));
}

TEST_HARNESS_MAIN
