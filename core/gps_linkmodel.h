/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The link model's arithmetic (pure core): each device has an outgoing
 * link of a bandwidth; what it pushes keeps the link busy, one transfer
 * after another, and a fence ends when the link has carried everything
 * pushed before it, plus the latency of the last byte.  Times in ns on
 * one clock for every device; the caller owns the clock and the lock.
 */
#ifndef _GPS_LINKMODEL_H
#define _GPS_LINKMODEL_H

#include "gps_compat.h"

#define GPS_NS_PER_SEC		1000000000ULL

/* ns the link takes to carry @bytes at @bw bytes/s; 0: nothing owed. */
static inline u64 gps_link_cost_ns(u64 bytes, u64 bw)
{
	u64 t;

	if (!bw || !bytes)
		return 0;
	/* Saturates where the time would not fit 64 bits of ns. */
	if (div64_u64(bytes, bw) >= ~0ULL / GPS_NS_PER_SEC)
		return ~0ULL;
	t = mul_u64_u64_div_u64(bytes, GPS_NS_PER_SEC, bw);
	return t ?: 1;
}

/*
 * When a link busy until @busy ns is free again after carrying @bytes
 * more, sent at @now: transfers queue behind each other, and an idle
 * link starts at once (time it was idle during compute is not owed).
 */
static inline u64 gps_link_busy_until(u64 busy, u64 now, u64 bytes, u64 bw)
{
	u64 t = gps_link_cost_ns(bytes, bw), from = max(busy, now);

	if (!t)
		return busy;
	return t > ~0ULL - from ? ~0ULL : from + t;
}

/*
 * When a fence at @now of links busy until @until may return: with
 * @latency_ns, the last byte lands that long after the link frees.
 */
static inline u64 gps_link_fence_end(u64 until, u64 now, u64 latency_ns)
{
	u64 from = max(until, now);

	if (!latency_ns)
		return until;
	return latency_ns > ~0ULL - from ? ~0ULL : from + latency_ns;
}

#endif /* _GPS_LINKMODEL_H */
