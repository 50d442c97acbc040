// SPDX-License-Identifier: GPL-2.0
/**
 * DOC: a push's writes into its destinations
 *
 * A push writes one span of masked bytes from its source into every
 * receiver's page and twin.  gps_bytes_push() does it in one pass over
 * the mask for all of them: each mask word (the bytes of BITS_PER_LONG
 * bytes of the span) is read once and, where part of it is set, turned
 * into byte masks once, by a table, then written into each destination
 * as that destination asks (enum gps_bytes_how).  A pass per destination
 * read and expanded the mask, and read the source, once per destination:
 * two to three times the work of this pass at three receivers
 * (Documentation/benchmarks.rst, "One pass for every receiver").
 *
 * What a destination sees is what gps_bytes.h promises of each write: an
 * aligned 8-byte word written whole (a WRITE_ONCE() or one cmpxchg), or
 * a single byte, never a word in part and then the rest.
 *
 * Pure core: no allocation, no lock; the caller holds the destinations
 * as gps_bytes_push() says.
 */
#include "gps_compat.h"
#include "gps_bytes.h"

/*
 * Entry m8: byte i, in memory order on a little-endian machine, 0xff
 * where bit i of m8 is set (tests/unit/core_bytes.c checks each one);
 * gps_bytes_mask8() reads it on any machine.
 */
const u64 gps_bytes_lut[256] = {
	0x0000000000000000ULL, 0x00000000000000ffULL, 0x000000000000ff00ULL,
	0x000000000000ffffULL, 0x0000000000ff0000ULL, 0x0000000000ff00ffULL,
	0x0000000000ffff00ULL, 0x0000000000ffffffULL, 0x00000000ff000000ULL,
	0x00000000ff0000ffULL, 0x00000000ff00ff00ULL, 0x00000000ff00ffffULL,
	0x00000000ffff0000ULL, 0x00000000ffff00ffULL, 0x00000000ffffff00ULL,
	0x00000000ffffffffULL, 0x000000ff00000000ULL, 0x000000ff000000ffULL,
	0x000000ff0000ff00ULL, 0x000000ff0000ffffULL, 0x000000ff00ff0000ULL,
	0x000000ff00ff00ffULL, 0x000000ff00ffff00ULL, 0x000000ff00ffffffULL,
	0x000000ffff000000ULL, 0x000000ffff0000ffULL, 0x000000ffff00ff00ULL,
	0x000000ffff00ffffULL, 0x000000ffffff0000ULL, 0x000000ffffff00ffULL,
	0x000000ffffffff00ULL, 0x000000ffffffffffULL, 0x0000ff0000000000ULL,
	0x0000ff00000000ffULL, 0x0000ff000000ff00ULL, 0x0000ff000000ffffULL,
	0x0000ff0000ff0000ULL, 0x0000ff0000ff00ffULL, 0x0000ff0000ffff00ULL,
	0x0000ff0000ffffffULL, 0x0000ff00ff000000ULL, 0x0000ff00ff0000ffULL,
	0x0000ff00ff00ff00ULL, 0x0000ff00ff00ffffULL, 0x0000ff00ffff0000ULL,
	0x0000ff00ffff00ffULL, 0x0000ff00ffffff00ULL, 0x0000ff00ffffffffULL,
	0x0000ffff00000000ULL, 0x0000ffff000000ffULL, 0x0000ffff0000ff00ULL,
	0x0000ffff0000ffffULL, 0x0000ffff00ff0000ULL, 0x0000ffff00ff00ffULL,
	0x0000ffff00ffff00ULL, 0x0000ffff00ffffffULL, 0x0000ffffff000000ULL,
	0x0000ffffff0000ffULL, 0x0000ffffff00ff00ULL, 0x0000ffffff00ffffULL,
	0x0000ffffffff0000ULL, 0x0000ffffffff00ffULL, 0x0000ffffffffff00ULL,
	0x0000ffffffffffffULL, 0x00ff000000000000ULL, 0x00ff0000000000ffULL,
	0x00ff00000000ff00ULL, 0x00ff00000000ffffULL, 0x00ff000000ff0000ULL,
	0x00ff000000ff00ffULL, 0x00ff000000ffff00ULL, 0x00ff000000ffffffULL,
	0x00ff0000ff000000ULL, 0x00ff0000ff0000ffULL, 0x00ff0000ff00ff00ULL,
	0x00ff0000ff00ffffULL, 0x00ff0000ffff0000ULL, 0x00ff0000ffff00ffULL,
	0x00ff0000ffffff00ULL, 0x00ff0000ffffffffULL, 0x00ff00ff00000000ULL,
	0x00ff00ff000000ffULL, 0x00ff00ff0000ff00ULL, 0x00ff00ff0000ffffULL,
	0x00ff00ff00ff0000ULL, 0x00ff00ff00ff00ffULL, 0x00ff00ff00ffff00ULL,
	0x00ff00ff00ffffffULL, 0x00ff00ffff000000ULL, 0x00ff00ffff0000ffULL,
	0x00ff00ffff00ff00ULL, 0x00ff00ffff00ffffULL, 0x00ff00ffffff0000ULL,
	0x00ff00ffffff00ffULL, 0x00ff00ffffffff00ULL, 0x00ff00ffffffffffULL,
	0x00ffff0000000000ULL, 0x00ffff00000000ffULL, 0x00ffff000000ff00ULL,
	0x00ffff000000ffffULL, 0x00ffff0000ff0000ULL, 0x00ffff0000ff00ffULL,
	0x00ffff0000ffff00ULL, 0x00ffff0000ffffffULL, 0x00ffff00ff000000ULL,
	0x00ffff00ff0000ffULL, 0x00ffff00ff00ff00ULL, 0x00ffff00ff00ffffULL,
	0x00ffff00ffff0000ULL, 0x00ffff00ffff00ffULL, 0x00ffff00ffffff00ULL,
	0x00ffff00ffffffffULL, 0x00ffffff00000000ULL, 0x00ffffff000000ffULL,
	0x00ffffff0000ff00ULL, 0x00ffffff0000ffffULL, 0x00ffffff00ff0000ULL,
	0x00ffffff00ff00ffULL, 0x00ffffff00ffff00ULL, 0x00ffffff00ffffffULL,
	0x00ffffffff000000ULL, 0x00ffffffff0000ffULL, 0x00ffffffff00ff00ULL,
	0x00ffffffff00ffffULL, 0x00ffffffffff0000ULL, 0x00ffffffffff00ffULL,
	0x00ffffffffffff00ULL, 0x00ffffffffffffffULL, 0xff00000000000000ULL,
	0xff000000000000ffULL, 0xff0000000000ff00ULL, 0xff0000000000ffffULL,
	0xff00000000ff0000ULL, 0xff00000000ff00ffULL, 0xff00000000ffff00ULL,
	0xff00000000ffffffULL, 0xff000000ff000000ULL, 0xff000000ff0000ffULL,
	0xff000000ff00ff00ULL, 0xff000000ff00ffffULL, 0xff000000ffff0000ULL,
	0xff000000ffff00ffULL, 0xff000000ffffff00ULL, 0xff000000ffffffffULL,
	0xff0000ff00000000ULL, 0xff0000ff000000ffULL, 0xff0000ff0000ff00ULL,
	0xff0000ff0000ffffULL, 0xff0000ff00ff0000ULL, 0xff0000ff00ff00ffULL,
	0xff0000ff00ffff00ULL, 0xff0000ff00ffffffULL, 0xff0000ffff000000ULL,
	0xff0000ffff0000ffULL, 0xff0000ffff00ff00ULL, 0xff0000ffff00ffffULL,
	0xff0000ffffff0000ULL, 0xff0000ffffff00ffULL, 0xff0000ffffffff00ULL,
	0xff0000ffffffffffULL, 0xff00ff0000000000ULL, 0xff00ff00000000ffULL,
	0xff00ff000000ff00ULL, 0xff00ff000000ffffULL, 0xff00ff0000ff0000ULL,
	0xff00ff0000ff00ffULL, 0xff00ff0000ffff00ULL, 0xff00ff0000ffffffULL,
	0xff00ff00ff000000ULL, 0xff00ff00ff0000ffULL, 0xff00ff00ff00ff00ULL,
	0xff00ff00ff00ffffULL, 0xff00ff00ffff0000ULL, 0xff00ff00ffff00ffULL,
	0xff00ff00ffffff00ULL, 0xff00ff00ffffffffULL, 0xff00ffff00000000ULL,
	0xff00ffff000000ffULL, 0xff00ffff0000ff00ULL, 0xff00ffff0000ffffULL,
	0xff00ffff00ff0000ULL, 0xff00ffff00ff00ffULL, 0xff00ffff00ffff00ULL,
	0xff00ffff00ffffffULL, 0xff00ffffff000000ULL, 0xff00ffffff0000ffULL,
	0xff00ffffff00ff00ULL, 0xff00ffffff00ffffULL, 0xff00ffffffff0000ULL,
	0xff00ffffffff00ffULL, 0xff00ffffffffff00ULL, 0xff00ffffffffffffULL,
	0xffff000000000000ULL, 0xffff0000000000ffULL, 0xffff00000000ff00ULL,
	0xffff00000000ffffULL, 0xffff000000ff0000ULL, 0xffff000000ff00ffULL,
	0xffff000000ffff00ULL, 0xffff000000ffffffULL, 0xffff0000ff000000ULL,
	0xffff0000ff0000ffULL, 0xffff0000ff00ff00ULL, 0xffff0000ff00ffffULL,
	0xffff0000ffff0000ULL, 0xffff0000ffff00ffULL, 0xffff0000ffffff00ULL,
	0xffff0000ffffffffULL, 0xffff00ff00000000ULL, 0xffff00ff000000ffULL,
	0xffff00ff0000ff00ULL, 0xffff00ff0000ffffULL, 0xffff00ff00ff0000ULL,
	0xffff00ff00ff00ffULL, 0xffff00ff00ffff00ULL, 0xffff00ff00ffffffULL,
	0xffff00ffff000000ULL, 0xffff00ffff0000ffULL, 0xffff00ffff00ff00ULL,
	0xffff00ffff00ffffULL, 0xffff00ffffff0000ULL, 0xffff00ffffff00ffULL,
	0xffff00ffffffff00ULL, 0xffff00ffffffffffULL, 0xffffff0000000000ULL,
	0xffffff00000000ffULL, 0xffffff000000ff00ULL, 0xffffff000000ffffULL,
	0xffffff0000ff0000ULL, 0xffffff0000ff00ffULL, 0xffffff0000ffff00ULL,
	0xffffff0000ffffffULL, 0xffffff00ff000000ULL, 0xffffff00ff0000ffULL,
	0xffffff00ff00ff00ULL, 0xffffff00ff00ffffULL, 0xffffff00ffff0000ULL,
	0xffffff00ffff00ffULL, 0xffffff00ffffff00ULL, 0xffffff00ffffffffULL,
	0xffffffff00000000ULL, 0xffffffff000000ffULL, 0xffffffff0000ff00ULL,
	0xffffffff0000ffffULL, 0xffffffff00ff0000ULL, 0xffffffff00ff00ffULL,
	0xffffffff00ffff00ULL, 0xffffffff00ffffffULL, 0xffffffffff000000ULL,
	0xffffffffff0000ffULL, 0xffffffffff00ff00ULL, 0xffffffffff00ffffULL,
	0xffffffffffff0000ULL, 0xffffffffffff00ffULL, 0xffffffffffffff00ULL,
	0xffffffffffffffffULL,
};

/* Four words of @s into @d, each whole. */
static inline void gps_bytes_four(u64 *d, const u64 *s)
{
	WRITE_ONCE(d[0], s[0]);
	WRITE_ONCE(d[1], s[1]);
	WRITE_ONCE(d[2], s[2]);
	WRITE_ONCE(d[3], s[3]);
}

/* The words of one mask word's bytes, each whole. */
static inline void gps_bytes_words(u64 *d, const u64 *s)
{
	unsigned int w;

	for (w = 0; w < BITS_PER_LONG / 8; w += 4)
		gps_bytes_four(d + w, s + w);
}

/*
 * Bytes @bm (byte mask of mask byte @m8) of @sw into the word at @d, whose
 * other bytes its owner may store to meanwhile (%GPS_BYTES_APPLY).
 */
static inline void gps_bytes_apply_word(u64 *d, u64 sw, u64 bm,
					unsigned int m8)
{
	unsigned int tries;
	u64 old;

	if (m8 == 0xff) {
		WRITE_ONCE(*d, sw);
		return;
	}
	if (!(m8 & (m8 - 1))) {
		unsigned int b = __builtin_ctz(m8);

		WRITE_ONCE(((u8 *)d)[b], ((const u8 *)&sw)[b]);
		return;
	}
	old = READ_ONCE(*d);
	for (tries = 0; !try_cmpxchg64(d, &old, (old & ~bm) | (sw & bm));
	     tries++) {
		if (tries < GPS_BYTES_TRIES)
			continue;
		/* Stored to all along: a race; bytes. */
		for (; m8; m8 &= m8 - 1)
			WRITE_ONCE(((u8 *)d)[__builtin_ctz(m8)],
				   ((const u8 *)&sw)[__builtin_ctz(m8)]);
		return;
	}
}

#ifdef GPS_HAVE_CMPXCHG128
/* More than one byte of the word's eight masked, not all: a cmpxchg. */
static inline bool gps_bytes_partial(unsigned int m8)
{
	return m8 != 0xff && (m8 & (m8 - 1));
}

/*
 * Two partly masked words at @d (16-byte aligned) by one 16-byte cmpxchg:
 * half the locked instructions of a push of changed doubles.  False where
 * the CPU lacks it, or the owner stored to the pair all along.
 */
GPS_CMPXCHG128_FN
static inline bool gps_bytes_apply_pair(u64 *d, const u64 *sw,
					const u64 *bm)
{
	u64 old[2], nw[2];
	unsigned int tries;

	old[0] = READ_ONCE(d[0]);
	old[1] = READ_ONCE(d[1]);
	for (tries = 0; tries < GPS_BYTES_TRIES; tries++) {
		nw[0] = (old[0] & ~bm[0]) | (sw[0] & bm[0]);
		nw[1] = (old[1] & ~bm[1]) | (sw[1] & bm[1]);
		if (gps_try_cmpxchg128(d, old, nw))
			return true;
	}
	return false;
}

/*
 * Words @d[0..1] (mask bits @m16, byte masks @bm) as %GPS_BYTES_APPLY
 * takes them: a pair both partly masked at once (@pair: the CPU can),
 * else word by word.
 * Only where the host defines GPS_HAVE_CMPXCHG128 (the native engine on
 * x86-64): gps.ko keeps its word-by-word loop, unchanged.
 */
GPS_CMPXCHG128_FN
static inline void gps_bytes_apply_two(u64 *d, const u64 *sw, const u64 *bm,
				       unsigned int m16, bool pair)
{
	unsigned int lo = m16 & 0xff, hi = (m16 >> 8) & 0xff;

	if (pair && gps_bytes_partial(lo) && gps_bytes_partial(hi) &&
	    gps_bytes_apply_pair(d, sw, bm))
		return;
	if (lo)
		gps_bytes_apply_word(d, sw[0], bm[0], lo);
	if (hi)
		gps_bytes_apply_word(d + 1, sw[1], bm[1], hi);
}
#else
#define GPS_CMPXCHG128_FN
#endif

/**
 * gps_bytes_push() - write a span of masked bytes into destinations
 * @dst: the destinations, each at the span's first byte, and how each
 *	takes the bytes
 * @n: how many
 * @src: the span's first byte
 * @mask: the span's mask, a bit per byte, from its first byte
 * @nbytes: bytes of the span, a multiple of BITS_PER_LONG
 *
 * Each destination takes the bytes as its enum gps_bytes_how says
 * (gps_bytes.h).  @src, @dst's pointers and @nbytes 32-byte aligned; each
 * word of @src is read once per destination at most, and sent whole.
 */
GPS_CMPXCHG128_FN
void gps_bytes_push(const struct gps_bytes_dst *dst, unsigned int n,
		    const u8 *src, const unsigned long *mask,
		    unsigned int nbytes)
{
	u64 bm[BITS_PER_LONG / 8];
	unsigned int i, j, w, copies = 0;
#ifdef GPS_HAVE_CMPXCHG128
	bool pair = gps_cmpxchg128_ok();
#endif

	for (j = 0; j < n; j++)
		copies += dst[j].how == GPS_BYTES_COPY;
	for (i = 0; i < nbytes / BITS_PER_LONG; i++) {
		unsigned long m = mask[i];
		const u64 *s = (const u64 *)(src + i * BITS_PER_LONG);
		size_t at = (size_t)i * BITS_PER_LONG;

		if (!m) {
			for (j = 0; copies && j < n; j++)
				if (dst[j].how == GPS_BYTES_COPY)
					gps_bytes_words((u64 *)(dst[j].to + at),
							s);
			continue;
		}
		if (m != ~0UL)
			for (w = 0; w < BITS_PER_LONG / 8; w++)
				bm[w] = gps_bytes_mask8(m >> (8 * w));
		for (j = 0; j < n; j++) {
			u64 *d = (u64 *)(dst[j].to + at);

			if (m == ~0UL || dst[j].how == GPS_BYTES_COPY) {
				gps_bytes_words(d, s);
			} else if (dst[j].how == GPS_BYTES_BLEND) {
				for (w = 0; w < BITS_PER_LONG / 8; w++)
					if (bm[w])
						WRITE_ONCE(d[w],
							   (READ_ONCE(d[w]) &
							    ~bm[w]) |
							   (s[w] & bm[w]));
			} else {
#ifdef GPS_HAVE_CMPXCHG128
				for (w = 0; w < BITS_PER_LONG / 8; w += 2)
					gps_bytes_apply_two(d + w, s + w,
							    bm + w,
							    (m >> (8 * w)) &
							    0xffff, pair);
#else
				for (w = 0; w < BITS_PER_LONG / 8; w++)
					if (bm[w])
						gps_bytes_apply_word(d + w,
								     s[w],
								     bm[w],
								     (m >> (8 * w)) &
								     0xff);
#endif
			}
		}
	}
}
