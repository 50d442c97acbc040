// SPDX-License-Identifier: MIT
/*
 * sssp: single-source shortest paths by Bellman-Ford, as the paper's
 * (min,+) sparse matrix-vector product: d'[i] = min(d[i], min_j A_ij +
 * d[j]).  The paper's input (HV15R) is a 3-D CFD matrix; this one has its
 * shape: the 27-point stencil of an E x E x E grid (-z E, default 48,
 * quick 20) plus, for about 3 % of the vertices, one in-edge from a
 * random vertex anywhere (long-range nonzeros), integer weights 1..64
 * from a fixed seed.  Many sources (one vertex in 61, at a random
 * distance) so that every sweep changes distances everywhere.
 *
 * Each device owns a slab of z-planes (its rows); per sweep it copies its
 * d into d' and then, edge-parallel (2048 in-edges per thread), relaxes
 * with a device-scope atomic min on d'[i] (gpsAtomicMinU: only the owner
 * of i updates it).  Reads: the neighbouring planes (peer-to-peer) and
 * the long-range sources (many-to-many).  Double-buffered; integers:
 * bit for bit against one device.
 */
#include "../workload.h"

#define SS_ETILE	2048
#define SS_VTILE	1024
#define SS_INF		0x3fffffffu

struct sssp {
	size_t e, n;
	uint32_t *rowptr, *col, *wt;	/* in-edges by destination */
};

struct ss_dev {
	size_t lo, hi, ne;
	uint32_t *src, *dst, *wt;
};

struct ss_args {
	const unsigned int *in;
	unsigned int *out;
	const struct ss_dev *g;
};

static void ss_copy_kernel(void *p)
{
	const struct ss_args *a = p;
	size_t v0 = a->g->lo + (size_t)gpsBlockIdx().x * SS_VTILE, v;
	size_t v1 = v0 + SS_VTILE < a->g->hi ? v0 + SS_VTILE : a->g->hi;

	for (v = v0; v < v1; v++)
		a->out[v] = a->in[v];
}

static void ss_relax_kernel(void *p)
{
	const struct ss_args *a = p;
	const struct ss_dev *g = a->g;
	size_t e0 = (size_t)gpsBlockIdx().x * SS_ETILE, e;
	size_t e1 = e0 + SS_ETILE < g->ne ? e0 + SS_ETILE : g->ne;

	for (e = e0; e < e1; e++) {
		unsigned int du = a->in[g->src[e]];

		if (du < SS_INF)
			gpsAtomicMinU(&a->out[g->dst[e]], du + g->wt[e]);
	}
}

static void ss_setup(struct wl *w, const struct wl_opts *o)
{
	struct sssp *s = wl_xmalloc(sizeof(*s));
	size_t E = o->size ? o->size : o->quick ? 20 : 48, n, i, e = 0;
	uint64_t rs = 7;
	uint32_t *init;
	long x, y, z, dx, dy, dz;

	if (E < 2)
		E = 2;
	n = E * E * E;
	s->e = E;
	s->n = n;
	s->rowptr = wl_xmalloc((n + 1) * sizeof(uint32_t));
	s->col = wl_xmalloc(n * 27 * sizeof(uint32_t));
	s->wt = wl_xmalloc(n * 27 * sizeof(uint32_t));
	init = wl_xmalloc(n * sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		x = (long)(i % E);
		y = (long)(i / E % E);
		z = (long)(i / E / E);
		s->rowptr[i] = (uint32_t)e;
		for (dz = -1; dz <= 1; dz++)
			for (dy = -1; dy <= 1; dy++)
				for (dx = -1; dx <= 1; dx++) {
					long X = x + dx, Y = y + dy, Z = z + dz;

					if ((!dx && !dy && !dz) || X < 0 ||
					    Y < 0 || Z < 0 || X >= (long)E ||
					    Y >= (long)E || Z >= (long)E)
						continue;
					s->col[e] = (uint32_t)((Z * (long)E + Y)
							* (long)E + X);
					s->wt[e++] = 1 + (uint32_t)
						(wl_rng(&rs) % 64);
				}
		if (wl_rng(&rs) % 100 < 3) {	/* long range */
			s->col[e] = (uint32_t)(wl_rng(&rs) % n);
			s->wt[e++] = 1 + (uint32_t)(wl_rng(&rs) % 64);
		}
		init[i] = wl_rng(&rs) % 61 == 0 ?
			  (uint32_t)(wl_rng(&rs) % 1000) : SS_INF;
	}
	s->rowptr[n] = (uint32_t)e;
	w->data = s;
	w->nbuf = 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "D", n * sizeof(uint32_t), init };
	w->buf[1] = (struct wl_buf){ "D2", n * sizeof(uint32_t), NULL };
	w->buf[1].init = wl_xmalloc(n * sizeof(uint32_t));
	memcpy(w->buf[1].init, init, n * sizeof(uint32_t));
	snprintf(w->desc, sizeof(w->desc), "grid=%zu^3 edges=%zu", E, e);
}

static void ss_cleanup(struct wl *w)
{
	struct sssp *s = w->data;

	free(s->rowptr);
	free(s->col);
	free(s->wt);
}

static void ss_slice(const struct sssp *s, int d, int nd, size_t *lo,
		     size_t *hi)
{
	wl_split(s->n, s->e * s->e, d, nd, lo, hi);	/* z-planes */
}

static void *ss_dev_init(struct wl *w, int d, int nd)
{
	const struct sssp *s = w->data;
	struct ss_dev *p = wl_host_alloc(sizeof(*p));
	size_t i, e, e0;

	ss_slice(s, d, nd, &p->lo, &p->hi);
	e0 = s->rowptr[p->lo];
	p->ne = s->rowptr[p->hi] - e0;
	p->src = wl_host_alloc((p->ne + 1) * sizeof(uint32_t));
	p->dst = wl_host_alloc((p->ne + 1) * sizeof(uint32_t));
	p->wt = wl_host_alloc((p->ne + 1) * sizeof(uint32_t));
	for (i = p->lo; i < p->hi; i++)
		for (e = s->rowptr[i]; e < s->rowptr[i + 1]; e++)
			p->dst[e - e0] = (uint32_t)i;
	memcpy(p->src, s->col + e0, p->ne * sizeof(uint32_t));
	memcpy(p->wt, s->wt + e0, p->ne * sizeof(uint32_t));
	return p;
}

static void ss_dev_free(struct wl *w, int d, void *priv)
{
	struct ss_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->src);
	wl_host_free(p->dst);
	wl_host_free(p->wt);
	wl_host_free(p);
}

static void ss_launch(const struct wl *w, int phase, int d, int nd,
		      void *const *buf, void *priv, gpsStream_t st)
{
	const struct ss_dev *p = priv;
	struct ss_args a = { .in = buf[phase], .out = buf[!phase], .g = p };
	const gpsKernelArgs *ka = GPS_ARGS_LOCAL(&a, GPS_PTR(struct ss_args, in),
					   GPS_PTR(struct ss_args, out));

	(void)w;
	(void)d;
	(void)nd;
	if (p->hi <= p->lo)
		return;
	wl_launch(ss_copy_kernel, wl_blocks(p->hi - p->lo, SS_VTILE), ka, st);
	if (p->ne)
		wl_launch(ss_relax_kernel, wl_blocks(p->ne, SS_ETILE), ka, st);
}

static void ss_reads(const struct wl *w, int phase, int d, int nd,
		     struct wl_access *acc)
{
	const struct sssp *s = w->data;
	size_t lo, hi, e;

	ss_slice(s, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, phase, lo * 4, (hi - lo) * 4);
	for (e = s->rowptr[lo]; e < s->rowptr[hi]; e++)
		wl_mark(acc, phase, (size_t)s->col[e] * 4, 4);
}

static void ss_writes(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct sssp *s = w->data;
	size_t lo, hi;

	ss_slice(s, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, !phase, lo * 4, (hi - lo) * 4);
}

const struct wl_ops wl_sssp = {
	.name = "sssp",
	.setup = ss_setup,
	.dev_init = ss_dev_init,
	.dev_free = ss_dev_free,
	.launch = ss_launch,
	.reads = ss_reads,
	.writes = ss_writes,
	.cleanup = ss_cleanup,
};
