// SPDX-License-Identifier: MIT
/*
 * pagerank, pagerank-push: PageRank (damping 0.85) by sparse
 * matrix-vector products on a synthetic power-law-free "web" graph of
 * -V vertices (default 2^18, quick 2^16) with -k in-edges each (8),
 * generated from a fixed seed: the graph is cut into blocks of 16384
 * vertices (one 64 KiB GPS page of state) and each block has two random
 * partner blocks; seven in-edges in eight come from within 32 vertices,
 * the eighth from a random vertex of a partner block.  This stands in for
 * the paper's Wikipedia graph ordered for locality: mostly peer-to-peer,
 * a page read by one to all devices.
 *
 * Each device owns a range of destination vertices (whole 1024-vertex
 * chunks) in both variants; the state is the contribution rank / out-degree,
 * double-buffered (A -> B, B -> A).
 *
 * pagerank       pull: one thread per 256 destinations sums the
 *                contributions of their in-neighbours in order.  Bit for
 *                bit against one device.
 * pagerank-push  the paper's (PROACT's) form: edge-parallel, one thread
 *                per 2048 in-edges of the device's destinations adds the
 *                source's contribution into next[dst] with a float atomic
 *                add, then a pass scales next.  next is a third array
 *                that only its owner reads and writes (subscribed by the
 *                owner alone after tracking).  Only the destination's
 *                owner updates next[dst], so the atomics are device-scope
 *                (gpsAtomicAddF): on GPS memory they act on the owner's
 *                replica and are published at the end of the kernel as
 *                stores (Documentation/memory-model.rst, "Device-scope
 *                atomics of the library"); no system scope is needed.
 *                The order of the adds depends on the workers: checked
 *                to a relative 1e-4 per value.
 */
#include <math.h>

#include "../workload.h"

#define PR_TILE		256	/* destinations per pull thread */
#define PR_ETILE	2048	/* in-edges per push thread */
#define PR_LOCAL	32	/* local in-edges come from v +- PR_LOCAL */
#define PR_PARTNERS	2	/* partner blocks per block */
#define PR_CHUNK	1024	/* partition unit, vertices (4 KiB) */
#define PR_DAMP		0.85f

struct pagerank {
	size_t nv, degree;
	uint32_t *rowptr, *col;	/* in-edges, CSR by destination */
	float *invout;		/* 1 / out-degree (0: none) */
};

/* one device's part of the graph, in host memory on its node */
struct pr_dev {
	size_t lo, hi, ne;
	uint32_t *rowptr;	/* pull: relative to the slice */
	uint32_t *col;		/* sources of the slice's in-edges */
	uint32_t *dst;		/* push: destination of each edge */
	float *invout;
};

struct pr_args {
	const float *in;
	float *out;
	float *acc;		/* push: the sums, owner only */
	const struct pr_dev *g;
	float base;
};

static void pr_pull_kernel(void *p)
{
	const struct pr_args *a = p;
	const struct pr_dev *g = a->g;
	size_t v0 = g->lo + (size_t)gpsBlockIdx().x * PR_TILE, v, e;
	size_t v1 = v0 + PR_TILE < g->hi ? v0 + PR_TILE : g->hi;

	for (v = v0; v < v1; v++) {
		size_t i = v - g->lo;
		float sum = 0.0f;

		for (e = g->rowptr[i]; e < g->rowptr[i + 1]; e++)
			sum += a->in[g->col[e]];
		a->out[v] = (a->base + PR_DAMP * sum) * g->invout[i];
	}
}

static void pr_zero_kernel(void *p)
{
	const struct pr_args *a = p;
	size_t v0 = a->g->lo + (size_t)gpsBlockIdx().x * PR_TILE, v;
	size_t v1 = v0 + PR_TILE < a->g->hi ? v0 + PR_TILE : a->g->hi;

	for (v = v0; v < v1; v++)
		a->acc[v] = 0.0f;
}

static void pr_push_kernel(void *p)
{
	const struct pr_args *a = p;
	const struct pr_dev *g = a->g;
	size_t e0 = (size_t)gpsBlockIdx().x * PR_ETILE, e;
	size_t e1 = e0 + PR_ETILE < g->ne ? e0 + PR_ETILE : g->ne;

	for (e = e0; e < e1; e++)
		gpsAtomicAddF(&a->acc[g->dst[e]], a->in[g->col[e]]);
}

static void pr_finish_kernel(void *p)
{
	const struct pr_args *a = p;
	const struct pr_dev *g = a->g;
	size_t v0 = g->lo + (size_t)gpsBlockIdx().x * PR_TILE, v;
	size_t v1 = v0 + PR_TILE < g->hi ? v0 + PR_TILE : g->hi;

	for (v = v0; v < v1; v++)
		a->out[v] = (a->base + PR_DAMP * a->acc[v]) *
			    g->invout[v - g->lo];
}

static void pr_setup(struct wl *w, const struct wl_opts *o)
{
	struct pagerank *g = wl_xmalloc(sizeof(*g));
	size_t nv, degree, block, nblocks, b, v, e, k;
	uint32_t *partner, *outdeg;
	uint64_t rs = 42;	/* the same graph for every device count */
	float *init;

	nv = o->nv ? o->nv : o->size ? o->size : o->quick ? 1 << 16 : 1 << 18;
	degree = o->degree ? o->degree : 8;
	if (nv < 2)
		nv = 2;
	g->nv = nv;
	g->degree = degree;
	block = 16384 < nv ? 16384 : nv;
	nblocks = (nv + block - 1) / block;
	partner = wl_xmalloc(nblocks * PR_PARTNERS * sizeof(*partner));
	for (b = 0; b < nblocks; b++)
		for (k = 0; k < PR_PARTNERS; k++) {
			uint32_t pb = (uint32_t)(wl_rng(&rs) % nblocks);

			if (nblocks > 1 && pb == b)
				pb = (uint32_t)((pb + 1) % nblocks);
			partner[b * PR_PARTNERS + k] = pb;
		}
	g->rowptr = wl_xmalloc((nv + 1) * sizeof(uint32_t));
	g->col = wl_xmalloc(nv * degree * sizeof(uint32_t));
	outdeg = wl_xmalloc(nv * sizeof(*outdeg));
	for (v = 0, e = 0; v < nv; v++) {
		g->rowptr[v] = (uint32_t)e;
		for (k = 0; k < degree; k++, e++) {
			uint64_t r = wl_rng(&rs);
			size_t u;

			if (r % 8 == 0) {	/* remote: a partner block */
				size_t pb = partner[(v / block) * PR_PARTNERS
						    + (r >> 8) % PR_PARTNERS];
				size_t lo = pb * block;
				size_t len = nv - lo < block ? nv - lo : block;

				u = lo + (r >> 16) % len;
			} else {		/* local: v +- PR_LOCAL */
				long dv = (long)((r >> 8) % (2 * PR_LOCAL)) -
					  PR_LOCAL;

				if (dv >= 0)
					dv++;
				u = (size_t)(((long)v + dv + (long)nv) %
					     (long)nv);
			}
			g->col[e] = (uint32_t)u;
			outdeg[u]++;
		}
	}
	g->rowptr[nv] = (uint32_t)e;
	g->invout = wl_xmalloc(nv * sizeof(float));
	init = wl_xmalloc(nv * sizeof(float));
	for (v = 0; v < nv; v++) {
		g->invout[v] = outdeg[v] ? 1.0f / (float)outdeg[v] : 0.0f;
		init[v] = g->invout[v] / (float)nv;
	}
	free(outdeg);
	free(partner);
	w->data = g;
	w->nbuf = w->ops == &wl_pagerank_push ? 3 : 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "A", nv * sizeof(float), init };
	w->buf[1] = (struct wl_buf){ "B", nv * sizeof(float), NULL };
	w->buf[1].init = wl_xmalloc(nv * sizeof(float));
	memcpy(w->buf[1].init, init, nv * sizeof(float));
	/* the push's sums */
	if (w->nbuf > 2) {
		w->buf[2] = (struct wl_buf){ "next", nv * sizeof(float), NULL };
		w->buf[2].init = wl_xmalloc(nv * sizeof(float));
	}
	snprintf(w->desc, sizeof(w->desc), "vertices=%zu degree=%zu", nv,
		 degree);
}

static void pr_cleanup(struct wl *w)
{
	struct pagerank *g = w->data;

	free(g->rowptr);
	free(g->col);
	free(g->invout);
}

static void pr_slice(const struct pagerank *g, int d, int nd, size_t *lo,
		     size_t *hi)
{
	wl_split(g->nv, PR_CHUNK, d, nd, lo, hi);
}

static void *pr_dev_init(struct wl *w, int d, int nd)
{
	const struct pagerank *g = w->data;
	struct pr_dev *p = wl_host_alloc(sizeof(*p));
	size_t i, e, e0, nvs;

	pr_slice(g, d, nd, &p->lo, &p->hi);
	nvs = p->hi - p->lo;
	e0 = g->rowptr[p->lo];
	p->ne = g->rowptr[p->hi] - e0;
	p->rowptr = wl_host_alloc((nvs + 1) * sizeof(uint32_t));
	p->col = wl_host_alloc((p->ne + 1) * sizeof(uint32_t));
	p->dst = wl_host_alloc((p->ne + 1) * sizeof(uint32_t));
	p->invout = wl_host_alloc((nvs + 1) * sizeof(float));
	for (i = 0; i <= nvs; i++)
		p->rowptr[i] = (uint32_t)(g->rowptr[p->lo + i] - e0);
	for (i = 0; i < nvs; i++)
		for (e = g->rowptr[p->lo + i]; e < g->rowptr[p->lo + i + 1];
		     e++)
			p->dst[e - e0] = (uint32_t)(p->lo + i);
	memcpy(p->col, g->col + e0, p->ne * sizeof(uint32_t));
	memcpy(p->invout, g->invout + p->lo, nvs * sizeof(float));
	return p;
}

static void pr_dev_free(struct wl *w, int d, void *priv)
{
	struct pr_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->rowptr);
	wl_host_free(p->col);
	wl_host_free(p->dst);
	wl_host_free(p->invout);
	wl_host_free(p);
}

static void pr_args_init(struct pr_args *a, const struct wl *w, int phase,
			 void *const *buf, const struct pr_dev *p)
{
	const struct pagerank *g = w->data;

	a->in = buf[phase];
	a->out = buf[!phase];
	a->acc = w->nbuf > 2 ? buf[2] : NULL;
	a->g = p;
	a->base = (1.0f - PR_DAMP) / (float)g->nv;
}

#define PR_ARGS(a)	GPS_ARGS_LOCAL(a, GPS_PTR(struct pr_args, in),	\
				 GPS_PTR(struct pr_args, out),		\
				 GPS_PTR(struct pr_args, acc))

static void pr_pull_launch(const struct wl *w, int phase, int d, int nd,
			   void *const *buf, void *priv, gpsStream_t s)
{
	const struct pr_dev *p = priv;
	struct pr_args a;

	(void)d;
	(void)nd;
	pr_args_init(&a, w, phase, buf, p);
	if (p->hi > p->lo)
		wl_launch(pr_pull_kernel, wl_blocks(p->hi - p->lo, PR_TILE),
			  PR_ARGS(&a), s);
}

static void pr_push_launch(const struct wl *w, int phase, int d, int nd,
			   void *const *buf, void *priv, gpsStream_t s)
{
	const struct pr_dev *p = priv;
	struct pr_args a;

	(void)d;
	(void)nd;
	pr_args_init(&a, w, phase, buf, p);
	if (p->hi <= p->lo)
		return;
	/* one stream: each launch starts after the previous one ended */
	wl_launch(pr_zero_kernel, wl_blocks(p->hi - p->lo, PR_TILE),
		  PR_ARGS(&a), s);
	if (p->ne)
		wl_launch(pr_push_kernel, wl_blocks(p->ne, PR_ETILE),
			  PR_ARGS(&a), s);
	wl_launch(pr_finish_kernel, wl_blocks(p->hi - p->lo, PR_TILE),
		  PR_ARGS(&a), s);
}

static void pr_reads(const struct wl *w, int phase, int d, int nd,
		     struct wl_access *acc)
{
	const struct pagerank *g = w->data;
	size_t lo, hi, e;

	pr_slice(g, d, nd, &lo, &hi);
	for (e = g->rowptr[lo]; e < g->rowptr[hi]; e++)
		wl_mark(acc, phase, (size_t)g->col[e] * sizeof(float),
			sizeof(float));
}

static void pr_writes(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct pagerank *g = w->data;
	size_t lo, hi;

	pr_slice(g, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, !phase, lo * sizeof(float),
			(hi - lo) * sizeof(float));
	if (hi > lo && w->nbuf > 2)
		wl_mark(acc, 2, lo * sizeof(float), (hi - lo) * sizeof(float));
}

/* relative 1e-4 per value (the push's atomic adds come in any order) */
static int pr_verify(const struct wl *w, void *const *out, void *const *ref,
		     char *msg, size_t len)
{
	const struct pagerank *g = w->data;
	size_t bad = 0, v, worst = 0;
	double wrel = 0;
	int b;

	for (b = 0; b < w->nbuf; b++) {
		const float *o = out[b], *r = ref[b];

		for (v = 0; v < g->nv; v++) {
			double diff = fabs((double)o[v] - (double)r[v]);
			double rel = diff / fmax(fabs((double)r[v]), 1e-30);

			if (diff > 1e-4 * fabs((double)r[v]) + 1e-30) {
				bad++;
				if (rel > wrel) {
					wrel = rel;
					worst = v;
				}
			}
		}
	}
	if (bad)
		snprintf(msg, len, "%zu values beyond a relative 1e-4 (worst: "
			 "vertex %zu, %g)", bad, worst, wrel);
	return !bad;
}

const struct wl_ops wl_pagerank = {
	.name = "pagerank",
	.setup = pr_setup,
	.dev_init = pr_dev_init,
	.dev_free = pr_dev_free,
	.launch = pr_pull_launch,
	.reads = pr_reads,
	.writes = pr_writes,
	.cleanup = pr_cleanup,
};

const struct wl_ops wl_pagerank_push = {
	.name = "pagerank-push",
	.tolerance = "rel:1e-4",
	.setup = pr_setup,
	.dev_init = pr_dev_init,
	.dev_free = pr_dev_free,
	.launch = pr_push_launch,
	.reads = pr_reads,
	.writes = pr_writes,
	.verify = pr_verify,
	.cleanup = pr_cleanup,
};
