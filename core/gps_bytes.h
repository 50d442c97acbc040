/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte masks of changed bytes, a word at a time: the diff of a page
 * against its twin needs, for two 8-byte words, which of their bytes
 * differ, and a push writes exactly the masked bytes.
 *
 * Every write into a destination is of whole aligned 8-byte words
 * (WRITE_ONCE() of a u64, or one cmpxchg), or of a single byte where only
 * one byte of a word is masked: a reader of the destination racing with
 * the push sees each aligned 8-byte word old or new, never torn.  None of
 * these helpers calls memcpy(), which promises no such thing (x86's
 * "rep movsb", taken with ERMS/FSRM as qemu's TCG CPUs have, may write
 * byte by byte; tests/kmod/tearing.c).  Part of the pure core: the
 * same code in gps.ko and in the native engine.
 */
#ifndef _GPS_BYTES_H
#define _GPS_BYTES_H

#include "gps_compat.h"

/*
 * A mask of @nbytes bits (a multiple of BITS_PER_LONG) has a set bit:
 * inline, where bitmap_empty() of a size not known at build time makes a
 * call, per block of every page harvested.
 */
static inline bool gps_bytes_any(const unsigned long *mask,
				 unsigned int nbytes)
{
	unsigned long any = 0;
	unsigned int i;

	for (i = 0; i < nbytes / BITS_PER_LONG; i++)
		any |= mask[i];
	return any;
}

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

/*
 * Diff @nwords words of @cur against @twin: set a bit in @mask (zeroed by
 * the caller) for each changed byte and, if @update, copy changed words
 * into @twin.  @cur may be written meanwhile: each word is loaded once,
 * so the twin holds exactly the value the mask was computed from.
 */
static inline void gps_diff_words(const u64 *cur, u64 *twin,
				  unsigned long *mask, unsigned int nwords,
				  bool update)
{
	unsigned int w;

	for (w = 0; w < nwords; w++) {
		u64 c = READ_ONCE(cur[w]);
		u64 x = c ^ twin[w];
		unsigned long bits;

		if (!x)
			continue;
		/*
		 * No zero byte in x: all eight bytes changed (the common
		 * case of dense writes), skip the gather.
		 */
		if (!((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL))
			bits = 0xff;
		else
			bits = gps_bytes_differ(c, twin[w]);
#ifdef __LITTLE_ENDIAN
		((u8 *)mask)[w] = bits;
#else
		mask[w * 8 / BITS_PER_LONG] |= bits << (w * 8 % BITS_PER_LONG);
#endif
		if (update)
			twin[w] = c;
	}
}

/* The byte mask of 8 mask bits: byte i of the word 0xff if bit i is set. */
static inline u64 gps_bytes_expand(unsigned int m8)
{
	u64 x = m8 & 0xff;

	/* Bits 4-7 to 32-35, then pairs 16 apart, then each bit 8 apart. */
	x = (x | x << 28) & 0x0000000f0000000fULL;
	x = (x | x << 14) & 0x0003000300030003ULL;
	x = (x | x << 7) & 0x0101010101010101ULL;
	x *= 0xff;
#ifndef __LITTLE_ENDIAN
	x = swab64(x);
#endif
	return x;
}

/*
 * Copy the bytes of @src set in @mask into @dst, and no other byte: a
 * receiver's own stores to the others, racing with the push, must stay.
 * A mask word at a time (a run of unchanged or of changed bytes is one
 * test), then 8 bytes at a time: a word fully masked is one WRITE_ONCE(),
 * a word with one masked byte one byte store, a word with some masked
 * bytes one cmpxchg of the word blended with what it holds, retried if
 * the receiver stored to it meanwhile: doubles that keep their sign and
 * exponent change 6 or 7 bytes of 8, and readers must not see some of
 * them new and others old.  A word the receiver stores to through
 * GPS_BYTES_TRIES cmpxchgs in a row takes its bytes one by one: the push
 * runs under a spinlock, and those stores race with it anyway.  Each word
 * of @src is read once.  @dst and @src 8-byte aligned; @nbytes a multiple
 * of BITS_PER_LONG.
 */
#define GPS_BYTES_TRIES	16
static inline void gps_bytes_apply(u8 *dst, const u8 *src,
				   const unsigned long *mask,
				   unsigned int nbytes)
{
	unsigned int i, w, tries;

	for (i = 0; i < nbytes / BITS_PER_LONG; i++) {
		unsigned long m = mask[i];
		u64 *d = (u64 *)(dst + i * BITS_PER_LONG);
		const u64 *s = (const u64 *)(src + i * BITS_PER_LONG);

		if (!m)
			continue;
		for (w = 0; w < BITS_PER_LONG / 8; w++) {
			unsigned long m8 = (m >> (8 * w)) & 0xff;
			u64 sw, bm, old;

			if (!m8)
				continue;
			sw = s[w];
			if (m8 == 0xff) {
				WRITE_ONCE(d[w], sw);
				continue;
			}
			if (!(m8 & (m8 - 1))) {
				unsigned int b = __builtin_ctzl(m8);

				WRITE_ONCE(((u8 *)&d[w])[b],
					   ((const u8 *)&sw)[b]);
				continue;
			}
			bm = gps_bytes_expand(m8);
			old = READ_ONCE(d[w]);
			for (tries = 0; !try_cmpxchg64(&d[w], &old,
						       (old & ~bm) | (sw & bm));
			     tries++) {
				if (tries < GPS_BYTES_TRIES)
					continue;
				/* Stored to all along: a race; bytes. */
				for (; m8; m8 &= m8 - 1)
					WRITE_ONCE(((u8 *)&d[w])[__builtin_ctzl(m8)],
						   ((const u8 *)&sw)[__builtin_ctzl(m8)]);
				break;
			}
		}
	}
}

/*
 * Copy @nbytes (a multiple of 32) from @src to @dst four words at a time:
 * readers of @dst see each 8-byte word old or new, never torn, which
 * memcpy() does not promise.  Used for spans whose every byte is masked
 * and for unwritten pages (gps_push.c).  @dst and @src 8-byte aligned.
 */
static inline void gps_bytes_copy(u8 *dst, const u8 *src, unsigned int nbytes)
{
	u64 *d = (u64 *)dst;
	const u64 *s = (const u64 *)src;
	unsigned int w;

	for (w = 0; w < nbytes / 8; w += 4) {
		WRITE_ONCE(d[w], s[w]);
		WRITE_ONCE(d[w + 1], s[w + 1]);
		WRITE_ONCE(d[w + 2], s[w + 2]);
		WRITE_ONCE(d[w + 3], s[w + 3]);
	}
}

/*
 * gps_bytes_apply() into a destination that nothing else stores to while
 * the caller holds its lock (a receiver's twin, or its page while no view
 * may map it writable): each 8-byte word with a masked byte is read,
 * blended and written back whole, cheaper than a cmpxchg or a byte
 * store per changed byte (Documentation/benchmarks.rst); a mask word
 * fully set is 8 words written without being read.  Readers see each
 * word old or new, never torn.  @dst and @src 8-byte
 * aligned; @nbytes a multiple of BITS_PER_LONG.
 */
static inline void gps_bytes_blend(u8 *dst, const u8 *src,
				   const unsigned long *mask,
				   unsigned int nbytes)
{
	unsigned int i, w;

	for (i = 0; i < nbytes / BITS_PER_LONG; i++) {
		unsigned long m = mask[i];
		u64 *d = (u64 *)(dst + i * BITS_PER_LONG);
		const u64 *s = (const u64 *)(src + i * BITS_PER_LONG);

		if (!m)
			continue;
		if (m == ~0UL) {
			for (w = 0; w < BITS_PER_LONG / 8; w++)
				WRITE_ONCE(d[w], s[w]);
			continue;
		}
		for (w = 0; w < BITS_PER_LONG / 8; w++) {
			u64 bm = gps_bytes_expand(m >> (8 * w));

			if (bm)
				WRITE_ONCE(d[w], (READ_ONCE(d[w]) & ~bm) |
						 (s[w] & bm));
		}
	}
}

#endif /* _GPS_BYTES_H */
