// SPDX-License-Identifier: GPL-2.0
/**
 * DOC: the block diff
 *
 * A harvested page is compared with its twin one 8-byte word at a time
 * (gps_diff_words()): each changed byte sets its bit of a page-sized mask,
 * and a block (block_size bytes) with a set bit is a changed block, the
 * unit the queue coalesces and the link counts.  The twin may take the
 * changed words as they were read, so that it equals what is published:
 * the page may be written meanwhile, and each word is loaded once.
 *
 * Pure core: no allocation, no lock; the caller holds the page still or
 * knows it may not.
 */
#include "gps_compat.h"
#include "gps_bytes.h"
#include "gps_diff.h"

/**
 * gps_diff_page() - diff a small page against its twin
 * @df: where the mask of changed bytes and their blocks go
 * @cur: the page, 8-byte aligned; it may be written meanwhile
 * @twin: its twin, PAGE_SIZE bytes, written only by the caller
 * @block_size: bytes of a block, a power of two from 64 to PAGE_SIZE
 * @update: copy the changed words into @twin (the page stays writable)
 *
 * The words first, then the blocks of the mask: one pass per block was
 * slower.
 *
 * Return: the number of changed blocks.
 */
unsigned int gps_diff_page(struct gps_diff *df, const void *cur, void *twin,
			   unsigned int block_size, bool update)
{
	unsigned int k, n = 0;

	memset(df->mask, 0, sizeof(df->mask));
	gps_diff_words(cur, twin, df->mask, PAGE_SIZE / sizeof(u64), update);
	memset(df->blocks, 0, sizeof(df->blocks));
	for (k = 0; k < PAGE_SIZE / block_size; k++) {
		if (gps_bytes_any(df->mask + k * block_size / BITS_PER_LONG,
				  block_size)) {
			df->blocks[k / BITS_PER_LONG] |= 1UL << (k % BITS_PER_LONG);
			n++;
		}
	}
	return n;
}
