/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's names the pure core uses, over C11 and the compiler's
 * builtins, for user space (the native engine, the host unit tests):
 * included by gps_compat.h outside the kernel only.  Little-endian hosts
 * with 4 KiB pages, as the native engine's targets are.
 */
#ifndef _GPS_COMPAT_USER_H
#define _GPS_COMPAT_USER_H

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
#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))
#define div64_u64(a, b)		((u64)(a) / (u64)(b))
#define mul_u64_u64_div_u64(a, b, c)					\
	((u64)((unsigned __int128)(a) * (b) / (c)))
/* A broken promise of a caller: reported once, the call then refused. */
#define GPS_WARN_ONCE(cond)	__builtin_expect(!!(cond), 0)
#define hweight_long(w)		((unsigned int)__builtin_popcountl(w))

#endif /* _GPS_COMPAT_USER_H */
