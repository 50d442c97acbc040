/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The diff of one small page against its twin (pure core): which bytes
 * changed, as a byte mask, and which blocks hold one.
 */
#ifndef _GPS_DIFF_H
#define _GPS_DIFF_H

#include "gps_compat.h"

/* Diff output of one small page. */
struct gps_diff {
	unsigned long mask[BITS_TO_LONGS(PAGE_SIZE)];	/* changed bytes */
	DECLARE_BITMAP(blocks, GPS_QBLOCKS_MAX);	/* with a changed byte */
};

unsigned int gps_diff_page(struct gps_diff *df, const void *cur, void *twin,
			   unsigned int block_size, bool update);

#endif /* _GPS_DIFF_H */
