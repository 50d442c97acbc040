// SPDX-License-Identifier: MIT
/*
 * The link model for the library's own device-to-device transfers.
 *
 * gps.ko charges its pushes to a virtual outgoing link per device
 * (/sys/kernel/gps/link_bandwidth in bytes/s, 0 = unlimited, and
 * link_latency_ns). So that every paradigm pays the same link, a copy
 * between the memory of two devices (gpsMemcpy, gpsMemcpyAsync) and a
 * migration of managed pages (gpsMemPrefetchAsync) pay it too: the
 * knobs are read from the engine (gpsGetKnob's, of either engine) once
 * per such call, the bytes are charged to the sending device's link
 * clock (one per device in this process, advanced with a CAS, so that
 * concurrent transfers of one device queue behind each other), the transfer runs at memory speed, and the caller then sleeps
 * until the link would have carried the bytes, plus the latency. No
 * library lock is held while it sleeps. The library's clocks are its
 * own: they do not see the driver's pushes, nor the driver the copies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#include "engine.h"
#include "link.h"

/* Each device's link is free from this CLOCK_MONOTONIC time (ns). */
static uint64_t gpsu_link_free_ns[GPSU_MAX_DEVICES];

static uint64_t gpsu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A knob of the engine, 0 when it cannot be read (no model). */
static uint64_t gpsu_link_knob(int i)
{
	uint64_t v = 0;

	return gpsu_engine && !gpsu_engine_knob_get(i, &v) ? v : 0;
}

/* Reads the engine's link_bandwidth and link_latency_ns. */
void gpsu_link_read(struct gpsu_link *l)
{
	l->bandwidth = gpsu_link_knob(GPSU_K(link_bandwidth));
	l->latency_ns = gpsu_link_knob(GPSU_K(link_latency_ns));
}

uint64_t gpsu_link_now(void)
{
	return gpsu_now_ns();
}

/*
 * Charges @bytes to @device's link from @now (gpsu_link_now() when the
 * transfer began; 0: now); returns the time (ns, CLOCK_MONOTONIC) until
 * which the transfer must last, 0 when the model is off. Wait for it
 * with gpsu_link_wait() once the transfer is done.
 */
uint64_t gpsu_link_charge(const struct gpsu_link *l, int device,
			  uint64_t bytes, uint64_t now)
{
	uint64_t old, start, end, cost;

	if (!bytes || device < 0 || device >= GPSU_MAX_DEVICES ||
	    (!l->bandwidth && !l->latency_ns))
		return 0;
	if (!now)
		now = gpsu_now_ns();
	if (!l->bandwidth)
		return now + l->latency_ns;
	cost = (uint64_t)((unsigned __int128)bytes * 1000000000ULL /
			  l->bandwidth);
	if (!cost)
		cost = 1;
	old = __atomic_load_n(&gpsu_link_free_ns[device], __ATOMIC_RELAXED);
	do {
		start = old > now ? old : now;
		end = start + cost;
	} while (!__atomic_compare_exchange_n(&gpsu_link_free_ns[device],
					      &old, end, false,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return end + l->latency_ns;
}

/* Sleeps until @until (from gpsu_link_charge); no lock may be held. */
void gpsu_link_wait(uint64_t until)
{
	struct timespec ts;

	if (!until)
		return;
	ts.tv_sec = (time_t)(until / 1000000000ULL);
	ts.tv_nsec = (long)(until % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}
