// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the link model's arithmetic (core/gps_linkmodel.h, the
 * same code as in gps.ko), on the host.  Nothing carried or no bandwidth
 * costs nothing; a byte costs at least 1 ns however fast the link; the
 * cost is bytes * 1e9 / bandwidth ns; an idle link starts a transfer at
 * @now, a busy one after what it carries; a fence ends when the links
 * are free, plus the latency of the last byte, and never before @now
 * when there is one.  Past 18 GB in one charge (bytes * 1e9 beyond 64
 * bits) and up to 2^64 - 1 bytes, the cost stays exact, or saturates at
 * 2^64 - 1 ns where the exact cost does not fit (or nearly), and never
 * shrinks as the bytes grow; busy and fence times never wrap.
 */
#include "kselftest_harness.h"
#include "gps_linkmodel.h"

#define GB	1000000000ULL

TEST(nothing_carried_costs_nothing)
{
	ASSERT_EQ(0, gps_link_cost_ns(0, 1));
	ASSERT_EQ(0, gps_link_cost_ns(0, 12 * GB));
	ASSERT_EQ(0, gps_link_cost_ns(0, 0));
	/* bandwidth 0: no link model */
	ASSERT_EQ(0, gps_link_cost_ns(1, 0));
	ASSERT_EQ(0, gps_link_cost_ns(4096, 0));
	ASSERT_EQ(0, gps_link_cost_ns(1ULL << 63, 0));
}

TEST(a_byte_costs_at_least_a_nanosecond)
{
	static const u64 bws[] = { GB + 1, 2 * GB, 100 * GB, 1ULL << 40,
				   1ULL << 62, ~0ULL };
	unsigned int i;

	for (i = 0; i < sizeof(bws) / sizeof(bws[0]); i++) {
		ASSERT_LE(1, gps_link_cost_ns(1, bws[i])) TH_LOG("bw %llu",
			(unsigned long long)bws[i]);
		/* below 1 ns each: one ns, not one per byte */
		ASSERT_GE(1, gps_link_cost_ns(1, bws[i]));
	}
}

TEST(cost_is_bytes_over_bandwidth)
{
	/* 1 GB at 1 GB/s; a page at 4 and 1 GB/s; 2 bytes at 1 B/s */
	ASSERT_EQ(GB, gps_link_cost_ns(GB, GB));
	ASSERT_EQ(1024, gps_link_cost_ns(4096, 4 * GB));
	ASSERT_EQ(4096, gps_link_cost_ns(4096, GB));
	ASSERT_EQ(2 * GB, gps_link_cost_ns(2, 1));
	/* 12.5 GB/s; 3 GB/s, rounded down */
	ASSERT_EQ(80, gps_link_cost_ns(1000, 12500000000ULL));
	ASSERT_EQ(333, gps_link_cost_ns(1000, 3 * GB));
}

TEST(idle_link_starts_at_now)
{
	/* free since 10, a transfer at 100: done 1000 ns after 100 */
	ASSERT_EQ(1100, gps_link_busy_until(10, 100, 1000, GB));
	/* free exactly now */
	ASSERT_EQ(1100, gps_link_busy_until(100, 100, 1000, GB));
	/* never used */
	ASSERT_EQ(5000 + 4096, gps_link_busy_until(0, 5000, 4096, GB));
}

TEST(busy_link_appends)
{
	u64 busy = 0, now = 7;
	int i;

	/* busy until 5000, a transfer at 100 waits for it */
	ASSERT_EQ(6000, gps_link_busy_until(5000, 100, 1000, GB));
	/* transfers sent at once queue one after another */
	for (i = 0; i < 10; i++)
		busy = gps_link_busy_until(busy, now, 500, GB);
	ASSERT_EQ(now + 10 * 500, busy);
}

TEST(nothing_carried_leaves_the_link_as_it_was)
{
	ASSERT_EQ(5000, gps_link_busy_until(5000, 100, 0, GB));
	ASSERT_EQ(10, gps_link_busy_until(10, 100, 0, GB));	/* not now */
	/* bandwidth 0: no link model */
	ASSERT_EQ(10, gps_link_busy_until(10, 100, 4096, 0));
	ASSERT_EQ(5000, gps_link_busy_until(5000, 100, 4096, 0));
}

TEST(fence_end_adds_the_latency)
{
	/* no latency: when the links are free, even if already */
	ASSERT_EQ(5000, gps_link_fence_end(5000, 100, 0));
	ASSERT_EQ(10, gps_link_fence_end(10, 100, 0));
	/* busy links: the last byte lands latency after they free */
	ASSERT_EQ(5000 + 700, gps_link_fence_end(5000, 100, 700));
	/* idle links: latency after now, not after they freed */
	ASSERT_EQ(100 + 700, gps_link_fence_end(10, 100, 700));
	ASSERT_EQ(100 + 700, gps_link_fence_end(100, 100, 700));
}

/* bytes * 1e9 / bw in 128 bits, at least 1: the cost's reference. */
static unsigned __int128 exact_cost(u64 bytes, u64 bw)
{
	unsigned __int128 t = (unsigned __int128)bytes * GB / bw;

	return t ? t : 1;
}

static const u64 bws[] = { 1, 3, 1000, GB, 12500000000ULL, 100 * GB,
			   1ULL << 40, 1ULL << 62, ~0ULL };
#define NR_BWS	(sizeof(bws) / sizeof(bws[0]))

/*
 * The cost of @bytes at @bw is exact, or saturated: ~0 where the exact
 * cost does not fit 64 bits, or is within a second of not fitting.
 */
static void check_cost(struct __test_metadata *_metadata, u64 bytes, u64 bw)
{
	unsigned __int128 x = exact_cost(bytes, bw);
	u64 c = gps_link_cost_ns(bytes, bw);

	if (x > ~0ULL || c != x) {
		ASSERT_EQ(~0ULL, c) TH_LOG("bytes %llu bw %llu",
			(unsigned long long)bytes, (unsigned long long)bw);
		ASSERT_LE(~0ULL - GB, x);
	}
}

/* The bytes of a sweep from 1 to 2^64 - 1: small, ~1.4x steps, the top. */
static u64 sweep_next(u64 b)
{
	if (b < 16)
		return b + 1;
	if (b > ~0ULL - b / 2 - 7)
		return b == ~0ULL ? 0 : ~0ULL;
	return b + b / 2 + 7;
}

TEST(cost_exact_or_saturated_and_monotonic)
{
	unsigned int i;

	for (i = 0; i < NR_BWS; i++) {
		u64 b, prev = 0;

		for (b = 1; b; b = sweep_next(b)) {
			u64 c = gps_link_cost_ns(b, bws[i]);

			check_cost(_metadata, b, bws[i]);
			ASSERT_LE(prev, c) TH_LOG("bytes %llu bw %llu",
				(unsigned long long)b,
				(unsigned long long)bws[i]);
			prev = c;
		}
	}
}

/* Around 18 GB, where bytes * 1e9 leaves 64 bits, and around 2^63. */
TEST(cost_near_the_wrap_points)
{
	static const u64 at[] = { ~0ULL / GB, 1ULL << 63, ~0ULL - 1000 };
	unsigned int i, k;
	int d;

	for (i = 0; i < NR_BWS; i++) {
		for (k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
			u64 prev = gps_link_cost_ns(at[k] - 1001, bws[i]);

			for (d = -1000; d <= 1000; d++) {
				u64 b = at[k] + d;
				u64 c = gps_link_cost_ns(b, bws[i]);

				check_cost(_metadata, b, bws[i]);
				ASSERT_LE(prev, c) TH_LOG("bytes %llu bw %llu",
					(unsigned long long)b,
					(unsigned long long)bws[i]);
				prev = c;
			}
		}
	}
	/* 2^63 bytes at 1 B/s: 2^63 s, past 2^64 ns; at 1 GB/s: 2^63 ns */
	ASSERT_EQ(~0ULL, gps_link_cost_ns(1ULL << 63, 1));
	ASSERT_EQ(1ULL << 63, gps_link_cost_ns(1ULL << 63, GB));
	/* 2^63 bytes at 2^62 B/s: 2 s */
	ASSERT_EQ(2 * GB, gps_link_cost_ns(1ULL << 63, 1ULL << 62));
}

/* Times near the end of the clock do not wrap to the past. */
TEST(busy_and_fence_never_wrap)
{
	const u64 late = ~0ULL - 100;

	ASSERT_LE(late, gps_link_busy_until(late, 5, 1000, GB));
	ASSERT_LE(late, gps_link_busy_until(5, late, 1000, GB));
	ASSERT_LE(late, gps_link_busy_until(late, 5, 1ULL << 63, 1));
	ASSERT_LE(GB, gps_link_busy_until(GB, 5, 1ULL << 63, 1));
	ASSERT_LE(late, gps_link_fence_end(late, 5, 1000));
	ASSERT_LE(late, gps_link_fence_end(5, late, 1000));
	ASSERT_LE(late, gps_link_fence_end(late, late, ~0ULL));
}

TEST_HARNESS_MAIN
