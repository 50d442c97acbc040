/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kmod/gps_bytes.h takes from the kernel, for host unit tests only
 * (tests/unit/bytes.c): the bitmap helpers it calls, with the kernel's
 * meaning, over plain C.  Not a general stand-in for <linux/bitmap.h>.
 */
#ifndef _GPS_KSHIM_BITMAP_H
#define _GPS_KSHIM_BITMAP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint64_t u64;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(__LITTLE_ENDIAN)
#define __LITTLE_ENDIAN 1234
#endif
#define BITS_PER_LONG		(__SIZEOF_LONG__ * CHAR_BIT)
#define BITS_TO_LONGS(n)	(((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

static inline unsigned long __ffs(unsigned long w)
{
	return (unsigned long)__builtin_ctzl(w);
}

static inline void bitmap_set_value8(unsigned long *map, unsigned long v,
				     unsigned long start)
{
	map[start / BITS_PER_LONG] &= ~(0xffUL << (start % BITS_PER_LONG));
	map[start / BITS_PER_LONG] |= (v & 0xff) << (start % BITS_PER_LONG);
}

#endif
