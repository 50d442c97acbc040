/* SPDX-License-Identifier: MIT */
/*
 * proact.h - the PROACT paradigm's decoupled transfer agent (PROACT,
 * ISCA'21; the dissertation's chapter II), for bench/paradigms.c.
 *
 * Producers write their own private copy; each device has an agent, a
 * polling thread (or, with a polling interval of 0, the kernel's own
 * blocks as each finishes: the "at block end" agent), that copies the chunks its device writes to the
 * devices that read them as soon as the producer's kernel has finished
 * the blocks that write them, while the rest of the kernel runs.  The
 * producer marks its blocks done (a wrapper around each launch of the
 * phase), the stand-in for PROACT's per-chunk atomic counters; a chunk
 * is done when the blocks of the phase's last launch that precede its
 * end in the linear layout are (block k of G covers the k-th G-th of
 * the bytes the device writes in the phase: PROACT's stride mapping).
 *
 * The first iteration profiles: launches per phase are counted, and a
 * chunk whose content when the mapping called it done (a hash) is its
 * content at the kernel's end is marked early-safe; later iterations
 * send early only early-safe chunks and the rest at the kernel's end.
 * At the kernel's end the agent also compares every chunk it sent early
 * with what the producer holds and sends it again where they differ
 * (counted: resent), so a producer that breaks the mapping costs bytes,
 * never a wrong result.
 */
#ifndef BENCH_PROACT_H
#define BENCH_PROACT_H

#include "workload.h"

/* one transfer: bytes [off, off + len) of buffer @buf to device @to;
 * @end: the position of its last byte + 1 in the producer's linear
 * layout (the bytes it writes in the phase, in buffer then offset order) */
struct pa_xfer {
	int buf, to;
	size_t off, len;
	unsigned long long end;
};

/* what the agents did, summed over devices and phases */
struct pa_stats {
	unsigned long long bytes;	/* payload sent (resends included) */
	unsigned long long xfers;	/* packets of at most max_payload */
	unsigned long long chunks;	/* chunk transfers */
	unsigned long long early;	/* of them, while the kernel ran */
	unsigned long long resent;	/* chunks sent again at the end */
	unsigned long long resent_bytes;
	double lead_s;			/* most, over phases and devices, of
					 * the kernel's end minus the first
					 * early transfer's start */
};

struct proact;

/* agents for @nd devices and @nph phases; @poll_us between polls (0:
 * the agent runs in the producer's blocks, at each block's end) */
struct proact *proact_new(int nd, int nph, size_t max_payload,
			  unsigned int poll_us);
/* the transfers of (@ph, @d), sorted by end; @total: the layout's bytes;
 * takes @v */
void proact_set(struct proact *pa, int ph, int d, struct pa_xfer *v,
		size_t n, unsigned long long total);
/* before the launches of phase @ph; @profile: the first iteration;
 * @bufs: each device's private copies */
void proact_begin(struct proact *pa, int ph, int profile,
		  void *const (*bufs)[WL_MAX_BUF]);
/* a launch of device @d in the phase begun, wrapped */
void proact_launch(struct proact *pa, int d, gpsKernel_t fn,
		   unsigned int blocks, const gpsKernelArgs *a,
		   gpsStream_t s);
/* after every device's stream is synchronized: the agents' final pass;
 * @sent[d]: the bytes device d's agent sent in the phase */
void proact_end(struct proact *pa, unsigned long long *sent);
void proact_stats(const struct proact *pa, struct pa_stats *st);
void proact_reset_stats(struct proact *pa);
void proact_free(struct proact *pa);

#endif /* BENCH_PROACT_H */
