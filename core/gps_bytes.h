/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte masks of changed bytes, a word at a time: the diff of a page
 * against its twin needs, for two 8-byte words, which of their bytes
 * differ, and a push writes exactly the masked bytes (gps_bytes_push(),
 * core/gps_bytes.c).
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

extern const u64 gps_bytes_lut[256];

/* The byte mask of 8 mask bits: byte i of the word 0xff if bit i is set. */
static inline u64 gps_bytes_mask8(unsigned int m8)
{
#ifdef __LITTLE_ENDIAN
	return gps_bytes_lut[m8 & 0xff];
#else
	return swab64(gps_bytes_lut[m8 & 0xff]);
#endif
}

/*
 * How a destination of a push takes the masked bytes (gps_bytes_push()):
 *
 * %GPS_BYTES_APPLY: exactly the masked bytes, and no other byte: the
 * destination's owner may store to the others while the push runs (a
 * receiver's page that a view may map writable), and those stores must
 * stay.  A word fully masked is one WRITE_ONCE(), a word with one masked
 * byte one byte store, a word with some masked bytes one cmpxchg of the
 * word blended with what it holds, retried if the owner stored to it
 * meanwhile: doubles that keep their sign and exponent change 6 or 7
 * bytes of 8, and readers must not see some of them new and others old.
 * A word stored to through GPS_BYTES_TRIES cmpxchgs in a row takes its
 * bytes one by one: the push runs under a lock, and those stores race
 * with it anyway.
 *
 * %GPS_BYTES_BLEND: the masked bytes of a destination that nothing else
 * stores to while the caller holds its lock (a receiver's twin, or its
 * page while no view may map it writable): each word with a masked byte
 * read, blended and written back whole, cheaper than a cmpxchg or a byte
 * store per changed byte (Documentation/benchmarks.rst).
 *
 * %GPS_BYTES_COPY: every byte of the span, a word at a time: for spans
 * whose every byte is masked, and for pages that hold what the source
 * holds but for the bytes being published (gps_push.c's unwritten pages).
 *
 * Readers of a destination see each aligned 8-byte word old or new, never
 * torn, which memcpy() does not promise.
 */
enum gps_bytes_how {
	GPS_BYTES_APPLY,
	GPS_BYTES_BLEND,
	GPS_BYTES_COPY,
};

#define GPS_BYTES_TRIES	16

/* One destination of a push: where the span's first byte goes, and how. */
struct gps_bytes_dst {
	u8 *to;
	enum gps_bytes_how how;
};

void gps_bytes_push(const struct gps_bytes_dst *dst, unsigned int n,
		    const u8 *src, const unsigned long *mask,
		    unsigned int nbytes);

#endif /* _GPS_BYTES_H */
