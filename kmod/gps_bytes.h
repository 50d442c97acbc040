/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte masks of changed bytes, a word at a time: the diff of a page
 * against its twin and the source check of a push both need, for two
 * 8-byte words, which of their bytes differ.
 */
#ifndef _GPS_BYTES_H
#define _GPS_BYTES_H

#include <linux/types.h>
#include <linux/bitmap.h>

/* Bit i set when byte i (in memory order) of @a and @b differ. */
static inline unsigned long gps_bytes_differ(u64 a, u64 b)
{
	u64 x = a ^ b;

	x |= x >> 4;
	x |= x >> 2;
	x |= x >> 1;
	x &= 0x0101010101010101ULL;
#ifdef __LITTLE_ENDIAN
	/* Gathers bit 8i into bit 56 + i: no carries, the terms differ. */
	return (x * 0x0102040810204080ULL) >> 56;
#else
	return (x * 0x8040201008040201ULL) >> 56;
#endif
}

#endif /* _GPS_BYTES_H */
