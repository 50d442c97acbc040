/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the pure core (core/) takes from its host: the kernel's own
 * headers in gps.ko, their few equivalents over C11 and the compiler's
 * builtins in user space (the native engine, the host unit tests).  The
 * core allocates nothing and locks nothing: its callers own both.
 */
#ifndef _GPS_COMPAT_H
#define _GPS_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/bitmap.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/swab.h>
#include <linux/bug.h>
#include <asm/page.h>

#define GPS_WARN_ONCE(cond)	WARN_ON_ONCE(cond)

#else /* user space */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(__LITTLE_ENDIAN)
#define __LITTLE_ENDIAN 1234
#endif
#ifndef PAGE_SHIFT
#define PAGE_SHIFT		12	/* every target of the native engine */
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE		(1UL << PAGE_SHIFT)
#endif
#define BITS_PER_LONG		(__SIZEOF_LONG__ * CHAR_BIT)
#define BITS_TO_LONGS(n)	(((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define DECLARE_BITMAP(name, bits)	unsigned long name[BITS_TO_LONGS(bits)]
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define try_cmpxchg64(ptr, old, new)					\
	__atomic_compare_exchange_n((ptr), (old), (new), false,		\
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define swab64(x)		__builtin_bswap64(x)
#define hweight_long(w)		((unsigned int)__builtin_popcountl(w))
#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))
#define div64_u64(a, b)		((u64)(a) / (u64)(b))
/* A broken promise of a caller: reported once, the call then refused. */
#define GPS_WARN_ONCE(cond)	__builtin_expect(!!(cond), 0)

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

#endif /* __KERNEL__ */

/* Blocks of a small page at the smallest block size, 64 bytes. */
#define GPS_QBLOCKS_MAX		(PAGE_SIZE / 64)

/* Bit @i of @map; the core's own, the same in both hosts. */
static inline bool gps_bit(const unsigned long *map, unsigned int i)
{
	return (map[i / BITS_PER_LONG] >> (i % BITS_PER_LONG)) & 1;
}

static inline void gps_bit_set(unsigned long *map, unsigned int i)
{
	map[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
}

/* The next set bit of @map at or after @i, @n if none. */
static inline unsigned int gps_bit_next(const unsigned long *map,
					unsigned int n, unsigned int i)
{
	unsigned long w;

	if (i >= n)
		return n;
	w = map[i / BITS_PER_LONG] & (~0UL << (i % BITS_PER_LONG));
	for (;;) {
		if (w) {
			i = (i / BITS_PER_LONG) * BITS_PER_LONG + __ffs(w);
			return i < n ? i : n;
		}
		i = (i / BITS_PER_LONG + 1) * BITS_PER_LONG;
		if (i >= n)
			return n;
		w = map[i / BITS_PER_LONG];
	}
}

#define gps_for_each_bit(i, map, n)					\
	for ((i) = gps_bit_next((map), (n), 0); (i) < (n);		\
	     (i) = gps_bit_next((map), (n), (i) + 1))

/* Set bits of the first @n bits of @map, and not of @not (NULL: none). */
static inline unsigned int gps_bits_weight(const unsigned long *map,
					   const unsigned long *not,
					   unsigned int n)
{
	unsigned int i, w = 0;

	for (i = 0; i < BITS_TO_LONGS(n); i++) {
		unsigned long v = map[i] & (not ? ~not[i] : ~0UL);

		if ((i + 1) * BITS_PER_LONG > n)
			v &= ~0UL >> ((i + 1) * BITS_PER_LONG - n);
		w += hweight_long(v);
	}
	return w;
}

#endif /* _GPS_COMPAT_H */
