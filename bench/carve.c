// SPDX-License-Identifier: MIT
/*
 * carve.c - the CARVE paradigm's remote data caches (carve.h).
 *
 * The directories are read and written with relaxed atomics: a device's
 * fill kernel runs its slices side by side, and two lines of one set can
 * race for it.  Either tag may stay; both lines were fetched in this
 * phase, so a valid tag still means the copy holds the line's current
 * words.  Only the counts of hits and misses depend on the race.
 */
#include "carve.h"

#define WPL	(CARVE_LINE / WL_WORD)	/* words per line */
#define LINE_OF(x)	((x) & ((1u << 28) - 1))

struct carve_dev {
	uint32_t *tag;			/* [set]: its line + 1, 0 empty */
	struct carve_stats st;
} __attribute__((aligned(64)));

struct carve {
	int nd, nbuf;
	size_t nsets;
	size_t words[WL_MAX_BUF], base[WL_MAX_BUF];
	uint8_t *home[WL_MAX_BUF];	/* per word */
	unsigned long long *sent;	/* [home]: bytes since taken */
	struct carve_dev *dev;
};

/*
 * The set of a line: a hash of its number, so that buffers whose sizes
 * are powers of two do not all fall on the same sets (DRAM caches hash
 * their index bits for the same reason).
 */
static size_t cv_set(const struct carve *cv, size_t line)
{
	uint64_t h = (uint64_t)line * 0x9e3779b97f4a7c15ull;

	return (size_t)((h ^ h >> 29) % cv->nsets);
}

static void *cv_zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "paradigms: carve: out of memory\n");
		exit(2);
	}
	return p;
}

struct carve *carve_new(int nd, int nbuf, const size_t *bytes,
			size_t rdc_bytes)
{
	struct carve *cv = cv_zalloc(sizeof(*cv));
	size_t lines = 0;
	int b, d;

	cv->nd = nd;
	cv->nbuf = nbuf;
	cv->nsets = rdc_bytes / CARVE_LINE ? rdc_bytes / CARVE_LINE : 1;
	for (b = 0; b < nbuf; b++) {
		cv->words[b] = bytes[b] / WL_WORD;
		cv->base[b] = lines;
		lines += (cv->words[b] + WPL - 1) / WPL;
		cv->home[b] = cv_zalloc(cv->words[b]);
		memset(cv->home[b], CARVE_NOBODY, cv->words[b]);
	}
	cv->sent = cv_zalloc((size_t)nd * sizeof(*cv->sent));
	cv->dev = aligned_alloc(64, (size_t)nd * sizeof(*cv->dev));
	if (!cv->dev) {
		fprintf(stderr, "paradigms: carve: out of memory\n");
		exit(2);
	}
	memset(cv->dev, 0, (size_t)nd * sizeof(*cv->dev));
	for (d = 0; d < nd; d++)
		cv->dev[d].tag = cv_zalloc(cv->nsets * sizeof(uint32_t));
	return cv;
}

size_t carve_rdc_bytes(const struct carve *cv)
{
	return cv->nsets * CARVE_LINE;
}

/* Line @x (buffer << 28 | line): its buffer, number and words [w0, w1). */
static int cv_line(const struct carve *cv, uint32_t x, size_t *gline,
		   size_t *w0, size_t *w1)
{
	int b = (int)(x >> 28);
	size_t k = LINE_OF(x);

	*gline = cv->base[b] + k;
	*w0 = k * WPL;
	*w1 = *w0 + WPL < cv->words[b] ? *w0 + WPL : cv->words[b];
	return b;
}

/* any word of [@w0, @w1) of buffer @b that @a marks and @d does not hold */
static int cv_remote(const struct carve *cv, int d, const struct wl_access *a,
		     int b, size_t w0, size_t w1)
{
	size_t i;

	for (i = w0; i < w1; i++) {
		uint8_t h = cv->home[b][i];

		if (h != CARVE_NOBODY && h != d && wl_marked(a, b, i))
			return 1;
	}
	return 0;
}

/* copies the words of [w0, w1) homed elsewhere; the homes it read */
static uint64_t cv_fetch(const struct carve *cv, int d, int b, size_t w0,
			 size_t w1, void *const (*bufs)[WL_MAX_BUF])
{
	uint64_t homes = 0;
	size_t i = w0, j;

	while (i < w1) {
		uint8_t h = cv->home[b][i];

		for (j = i + 1; j < w1 && cv->home[b][j] == h; j++)
			;
		if (h != CARVE_NOBODY && h != d) {
			memcpy((char *)bufs[d][b] + i * WL_WORD,
			       (const char *)bufs[h][b] + i * WL_WORD,
			       (j - i) * WL_WORD);
			homes |= 1ull << h;
		}
		i = j;
	}
	return homes;
}

void carve_fill(struct carve *cv, int d, const struct wl_access *rd,
		const uint32_t *lines, size_t n,
		void *const (*bufs)[WL_MAX_BUF])
{
	struct carve_dev *dv = &cv->dev[d];
	struct carve_stats st = { 0 };
	size_t x;

	for (x = 0; x < n; x++) {
		size_t gl, w0, w1;
		int b = cv_line(cv, lines[x], &gl, &w0, &w1), h;
		uint32_t want = (uint32_t)(gl + 1), t;
		uint32_t *slot;
		uint64_t homes;

		if (!cv_remote(cv, d, rd, b, w0, w1))
			continue;
		slot = &dv->tag[cv_set(cv, gl)];
		t = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (t == want) {
			st.hits++;
			continue;
		}
		st.misses++;
		st.evictions += t != 0;
		homes = cv_fetch(cv, d, b, w0, w1, bufs);
		for (h = 0; h < cv->nd; h++)
			if (homes >> h & 1) {
				__atomic_fetch_add(&cv->sent[h], CARVE_LINE,
						   __ATOMIC_RELAXED);
				st.bytes += CARVE_LINE;
			}
		__atomic_store_n(slot, want, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&dv->st.hits, st.hits, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dv->st.misses, st.misses, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dv->st.evictions, st.evictions, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dv->st.bytes, st.bytes, __ATOMIC_RELAXED);
}

void carve_take_sent(struct carve *cv, unsigned long long *sent)
{
	int h;

	for (h = 0; h < cv->nd; h++)
		sent[h] = __atomic_exchange_n(&cv->sent[h], 0,
					      __ATOMIC_RELAXED);
}

/* @d becomes the home of the words of [w0, w1) that @wr marks */
static void cv_rehome(struct carve *cv, int d, const struct wl_access *wr,
		      int b, size_t w0, size_t w1)
{
	uint8_t *home = cv->home[b];
	size_t i = w0;

	while (i < w1) {
		uint8_t m = wr->bits[b][i >> 3];

		if (!(i & 7) && i + 8 <= w1 && (m == 0 || m == 0xff)) {
			if (m)
				memset(home + i, d, 8);
			i += 8;
			continue;
		}
		if (wl_marked(wr, b, i))
			home[i] = (uint8_t)d;
		i++;
	}
}

void carve_wrote(struct carve *cv, int d, const struct wl_access *wr,
		 const uint32_t *lines, size_t n)
{
	size_t x;
	int e;

	for (x = 0; x < n; x++) {
		size_t gl, w0, w1;
		int b = cv_line(cv, lines[x], &gl, &w0, &w1);
		size_t set = cv_set(cv, gl);
		uint32_t want = (uint32_t)(gl + 1);

		for (e = 0; e < cv->nd; e++) {
			uint32_t t = want;

			if (e != d &&
			    __atomic_compare_exchange_n(&cv->dev[e].tag[set], &t,
							0, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				__atomic_fetch_add(&cv->dev[e].st.invalidations,
						   1, __ATOMIC_RELAXED);
		}
		cv_rehome(cv, d, wr, b, w0, w1);
	}
}

int carve_home(const struct carve *cv, int b, size_t i)
{
	return cv->home[b][i];
}

void carve_stats(const struct carve *cv, struct carve_stats *st)
{
	int d;

	memset(st, 0, sizeof(*st));
	for (d = 0; d < cv->nd; d++) {
		const struct carve_stats *s = &cv->dev[d].st;

		st->hits += s->hits;
		st->misses += s->misses;
		st->evictions += s->evictions;
		st->invalidations += s->invalidations;
		st->bytes += s->bytes;
	}
}

void carve_reset_stats(struct carve *cv)
{
	int d;

	for (d = 0; d < cv->nd; d++)
		memset(&cv->dev[d].st, 0, sizeof(cv->dev[d].st));
}

void carve_free(struct carve *cv)
{
	int b, d;

	for (d = 0; d < cv->nd; d++)
		free(cv->dev[d].tag);
	for (b = 0; b < cv->nbuf; b++)
		free(cv->home[b]);
	free(cv->dev);
	free(cv->sent);
	free(cv);
}
