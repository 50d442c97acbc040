/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host tests of byte masks and of the pure core share: a
 * reproducible random sequence (xorshift64; a test may set rnd_state, or
 * define T_RND_SEED before including this) and bit helpers of their own,
 * independent of the code under test.
 */
#ifndef T_BITS_H
#define T_BITS_H

#include <limits.h>

#ifndef T_RND_SEED
#define T_RND_SEED	0x9e3779b97f4a7c15ULL
#endif

#define T_BITS_PER_LONG	(sizeof(long) * CHAR_BIT)

static unsigned long long rnd_state = T_RND_SEED;

static inline unsigned long long rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static inline int bit(const unsigned long *m, unsigned int i)
{
	return !!(m[i / T_BITS_PER_LONG] & (1UL << (i % T_BITS_PER_LONG)));
}

static inline void set_bit_at(unsigned long *m, unsigned int i)
{
	m[i / T_BITS_PER_LONG] |= 1UL << (i % T_BITS_PER_LONG);
}

/* Set bits among the first @n of @m. */
static inline unsigned int weight(const unsigned long *m, unsigned int n)
{
	unsigned int i, w = 0;

	for (i = 0; i < n; i++)
		w += bit(m, i);
	return w;
}

#endif /* T_BITS_H */
