/* SPDX-License-Identifier: MIT */
/*
 * carve.h - the CARVE paradigm's remote data cache (CARVE, MICRO'18),
 * for bench/paradigms.c.
 *
 * Each device keeps a private full copy of every buffer; a word's home
 * is the device that last wrote it (a word nobody wrote is the input,
 * the same in every copy).  A device's reads of words homed elsewhere
 * go through its Remote Data Cache (RDC): a directory of 128-byte lines,
 * direct-mapped over the buffers' lines laid end to end (the paper's
 * Alloy organization), of a capacity set per device.  A read line whose
 * tag is there is served from the device's own copy (a hit); otherwise
 * (a miss) the line's remote words are copied from their homes into the
 * device's copy, a line charged to each home, and the tag installed,
 * replacing whatever line held its set (an eviction).
 *
 * Coherence at kernel boundaries, selectively: after a phase every line
 * a device wrote is invalidated in the other devices' RDCs (what the
 * paper's hardware coherence, GPU-VI, broadcasts on a store; its
 * software coherence instead empties the RDC at every boundary, which is
 * what rdl's model, a line once per phase, amounts to).  Stores are
 * write-through to the writer's own copy, which becomes the home.
 *
 * This file is the mechanism alone (no gps calls).  carve_fill() runs in
 * a device's fill kernel before its phase, side by side with the other
 * devices' fills and with other slices of its own; carve_wrote() runs in
 * a device's invalidation kernel after its phase, side by side with the
 * other devices' phases and invalidations, but never with a fill (a
 * device's writes of a phase are its own words: no two devices move one
 * word's home at once).
 */
#ifndef BENCH_CARVE_H
#define BENCH_CARVE_H

#include "workload.h"

#define CARVE_LINE	128	/* bytes of an RDC line */
#define CARVE_NOBODY	0xff	/* the home of a word nobody wrote */

/* what the RDCs did, summed over devices */
struct carve_stats {
	unsigned long long hits;	/* remote line reads served locally */
	unsigned long long misses;	/* remote line reads fetched */
	unsigned long long evictions;	/* of the misses, a valid line
					 * replaced (capacity or conflict) */
	unsigned long long invalidations;	/* lines dropped for another
						 * device's write */
	unsigned long long bytes;	/* fetched: a line per home */
};

struct carve;

/* RDCs of @rdc_bytes each (rounded down to whole lines, at least one)
 * for @nd devices over the @nbuf buffers of @bytes bytes */
struct carve *carve_new(int nd, int nbuf, const size_t *bytes,
			size_t rdc_bytes);
size_t carve_rdc_bytes(const struct carve *cv);
/*
 * Device @d reads the words @rd marks in the @n lines @lines (buffer <<
 * 28 | line): each line holding a marked word homed on another device
 * is a hit or a miss; a miss copies the line's remote words from
 * @bufs[home] into @bufs[d] and adds the bytes to carve_take_sent().
 */
void carve_fill(struct carve *cv, int d, const struct wl_access *rd,
		const uint32_t *lines, size_t n,
		void *const (*bufs)[WL_MAX_BUF]);
/* the bytes each device's copy sent since the last call, into @sent[nd] */
void carve_take_sent(struct carve *cv, unsigned long long *sent);
/*
 * After a phase: device @d wrote the words @wr marks in the @n lines
 * @lines; the other devices' RDCs drop those lines and @d becomes the
 * words' home.
 */
void carve_wrote(struct carve *cv, int d, const struct wl_access *wr,
		 const uint32_t *lines, size_t n);
/* the home of word @i of buffer @b: a device, or CARVE_NOBODY */
int carve_home(const struct carve *cv, int b, size_t i);
void carve_stats(const struct carve *cv, struct carve_stats *st);
void carve_reset_stats(struct carve *cv);
void carve_free(struct carve *cv);

#endif /* BENCH_CARVE_H */
