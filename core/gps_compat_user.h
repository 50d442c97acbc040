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

/*
 * Two adjacent words, 16-byte aligned, compared and exchanged at once
 * (x86-64's cmpxchg16b, where the CPU has it): gps_bytes_push() blends
 * two partly masked words with one locked instruction instead of two,
 * the cost of a push of changed doubles (Documentation/benchmarks.rst).
 * GCC 11 or later only (its __builtin_cpu_supports() name): clang does
 * not inline __sync builtins of 16 bytes without -mcx16; and not under
 * ThreadSanitizer, whose 16-byte exchange is a lock and two plain stores,
 * not atomic against an owner's plain store (found by review).  gps.ko
 * does not define it, and keeps one cmpxchg a word.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	__GNUC__ >= 11 && !defined(__SANITIZE_THREAD__)
#define GPS_HAVE_CMPXCHG128	1
#define gps_cmpxchg128_ok()	(__builtin_cpu_supports("cmpxchg16b") != 0)
/* on a function that may inline gps_try_cmpxchg128() */
#define GPS_CMPXCHG128_FN	__attribute__((target("cx16")))

__extension__ typedef unsigned __int128 gps_u128;

/* @p[0..1] from @old[0..1] to @new[0..1]; else @old is what @p holds */
GPS_CMPXCHG128_FN
static inline bool gps_try_cmpxchg128(u64 *p, u64 *old, const u64 *new)
{
	gps_u128 o = (gps_u128)old[1] << 64 | old[0];
	gps_u128 n = (gps_u128)new[1] << 64 | new[0];
	gps_u128 cur = __sync_val_compare_and_swap((gps_u128 *)p, o, n);

	if (cur == o)
		return true;
	old[0] = (u64)cur;
	old[1] = (u64)(cur >> 64);
	return false;
}
#endif

#endif /* _GPS_COMPAT_USER_H */
