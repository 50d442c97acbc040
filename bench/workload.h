/* SPDX-License-Identifier: MIT */
/*
 * workload.h - the interface between bench/paradigms.c (the driver: the
 * paradigms, the timing, the byte accounting, the records) and the
 * workloads of bench/workloads/ (one file each).
 *
 * A workload is a set of shared arrays ("buffers") that every paradigm
 * places differently (private copies, GPS memory, managed memory, ...),
 * an iteration of @nphases phases, and for each phase and device a slice
 * kernel that the workload launches on the device's stream.  Between two
 * phases every device synchronizes: a phase is one kernel boundary of the
 * paper (several launches of one device may make up one phase, e.g. zero,
 * accumulate and finish a slice).  The partition is the same in every
 * paradigm.
 *
 * The driver learns what each device reads and writes in each phase from
 * two callbacks that mark bytes of buffers (wl_mark); from them it derives
 * the memcpy paradigms' copies, the owner of every byte (the device that
 * writes it) and the remote loads of the remote-load paradigms.  Marks need
 * not be exact for correctness (only the copies of memcpy-needed depend on
 * them, and a missing read mark makes that paradigm FAIL its check), but
 * they are the workload's exact count of remote bytes.
 *
 * Read-only inputs that do not change (graphs, matrices) are per-device
 * data in host memory on the device's node (dev_init), identical in every
 * paradigm and never counted as traffic, as the paper's partitioned inputs.
 */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpsu.h"

#define WL_MAX_BUF	4
#define WL_MAX_DEV	64
#define WL_WORD		4	/* bytes per bit of the access maps */

/* The sizes asked for on the command line (0: the workload's default). */
struct wl_opts {
	int quick;		/* -q: the quick size */
	size_t size;		/* -z: the main size (grid edge, vertices) */
	size_t rows, cols;	/* -r, -c (jacobi) */
	size_t nv, degree;	/* -V, -k (graphs) */
};

struct wl_buf {
	const char *name;
	size_t bytes;		/* a multiple of WL_WORD */
	void *init;		/* initial contents (host memory) */
};

/* Access maps of one (phase, device): one bit per WL_WORD bytes. */
struct wl_access {
	uint8_t *bits[WL_MAX_BUF];
	size_t words[WL_MAX_BUF];
};

struct wl;

struct wl_ops {
	const char *name;
	/* what the check compares: NULL = bit for bit, else said in the
	 * record (verify then decides) */
	const char *tolerance;
	/* sizes, buffers (w->buf, w->nbuf, w->nphases), generated input */
	void (*setup)(struct wl *w, const struct wl_opts *o);
	/* per-device read-only data, allocated while device @d is current;
	 * returns what launch gets as @priv */
	void *(*dev_init)(struct wl *w, int d, int nd);
	/* frees it (NULL: wl_host_free) */
	void (*dev_free)(struct wl *w, int d, void *priv);
	/* launches device @d's part of @phase on @s; @buf: the device's
	 * pointers to the buffers (GPS pointers: translate at launch) */
	void (*launch)(const struct wl *w, int phase, int d, int nd,
		       void *const *buf, void *priv, gpsStream_t s);
	/* marks what device @d reads / writes in @phase */
	void (*reads)(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *a);
	void (*writes)(const struct wl *w, int phase, int d, int nd,
		       struct wl_access *a);
	/* NULL: memcmp of every buffer; else 1 if @out (w->nbuf buffers)
	 * matches @ref, with a line in @msg when it does not */
	int (*verify)(const struct wl *w, void *const *out, void *const *ref,
		      char *msg, size_t len);
	/* frees what setup allocated beyond w->data and the inits (which
	 * the driver frees); may be NULL */
	void (*cleanup)(struct wl *w);
};

struct wl {
	const struct wl_ops *ops;
	int nbuf;
	struct wl_buf buf[WL_MAX_BUF];
	int nphases;		/* phases per iteration */
	char desc[128];		/* sizes, for the header line */
	void *data;		/* the workload's own */
	/* the driver's */
	void *ref[WL_MAX_BUF];
	double t_single;
};

/* ---- helpers for the workloads ------------------------------------- */

/* Marks bytes [off, off + len) of buffer @b (whole words). */
static inline void wl_mark(struct wl_access *a, int b, size_t off,
			   size_t len)
{
	size_t w0 = off / WL_WORD, w1 = (off + len + WL_WORD - 1) / WL_WORD;

	if (w1 > a->words[b])
		w1 = a->words[b];
	/* whole bytes of bits first */
	while (w0 < w1 && (w0 & 7)) {
		a->bits[b][w0 >> 3] |= (uint8_t)(1u << (w0 & 7));
		w0++;
	}
	if (w1 - w0 >= 8) {
		size_t nb = (w1 - w0) >> 3;

		memset(&a->bits[b][w0 >> 3], 0xff, nb);
		w0 += nb << 3;
	}
	while (w0 < w1) {
		a->bits[b][w0 >> 3] |= (uint8_t)(1u << (w0 & 7));
		w0++;
	}
}

static inline int wl_marked(const struct wl_access *a, int b, size_t word)
{
	return (a->bits[b][word >> 3] >> (word & 7)) & 1;
}

/* Items [*lo, *hi) of @n cut into @nd contiguous slices of whole @unit. */
static inline void wl_split(size_t n, size_t unit, int d, int nd, size_t *lo,
			    size_t *hi)
{
	size_t units = (n + unit - 1) / unit;
	size_t u0 = units * (size_t)d / (size_t)nd;
	size_t u1 = units * (size_t)(d + 1) / (size_t)nd;

	*lo = u0 * unit < n ? u0 * unit : n;
	*hi = u1 * unit < n ? u1 * unit : n;
}

/* splitmix64: the inputs' fixed-seed generator */
static inline uint64_t wl_rng(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A value in [0, 1) from a 64-bit hash of @i (stateless) */
static inline double wl_hash01(uint64_t i)
{
	uint64_t s = i * 0x2545f4914f6cdd1dull;

	return (double)(wl_rng(&s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Host memory of the current device for per-device data; exits on
 * failure (bench_common.h's CHECK is the driver's). */
void *wl_host_alloc(size_t bytes);
void wl_host_free(void *p);
/* calloc or exit */
void *wl_xmalloc(size_t bytes);
/* number of blocks of @tile items covering @n */
static inline unsigned int wl_blocks(size_t n, size_t tile)
{
	return (unsigned int)((n + tile - 1) / tile);
}
/* launch or exit */
void wl_launch(gpsKernel_t fn, unsigned int blocks, const gpsKernelArgs *a,
	       gpsStream_t s);

/* every workload, defined in its file */
extern const struct wl_ops wl_jacobi, wl_pagerank, wl_pagerank_push,
	wl_sssp, wl_als, wl_ct, wl_b2reqwp, wl_diffusion, wl_hit;

#endif /* BENCH_WORKLOAD_H */
