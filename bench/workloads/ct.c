// SPDX-License-Identifier: MIT
/*
 * ct: model-based iterative CT reconstruction, the structure of the
 * dissertation's PWLS-OS MBIR (ch. III) with a simpler projector: a
 * parallel-beam system matrix A (rays x pixels, one nonzero per pixel a
 * ray crosses, weight = the ray's length in it by unit-step sampling) of
 * an N x N slice (-z N, default 128, quick 64), N/4*3 views over 180
 * degrees, N detector bins, applied to S slices at once (16, quick 4: a
 * stack of parallel-beam slices, the image stored [y][slice][x], the
 * sinogram [view][slice][bin]).  The measured sinogram y is A times a
 * phantom (disks, fixed, scaled per slice), and each iteration is one
 * weighted least squares gradient step (SIRT-like: w_i / row sum,
 * 1 / column sum):
 *
 *   phase 0, forward projection split by views: r_i = w_i (y_i - A_i x)
 *            (reads the whole image: all-to-all)
 *   phase 1, back-projection split by slabs of image rows (y):
 *            x_j = max(0, x_j + (A^T r)_j / c_j)  (reads nearly the
 *            whole sinogram: all-to-all)
 *
 * Each output value is one thread's sum in a fixed order: bit for bit
 * against one device.  The matrices are per-device host data.
 */
#include <math.h>

#include "../workload.h"

#define CT_TILE		32	/* rays or pixels per thread */
#define CT_MAXSL	64	/* slices at most */

struct ct {
	size_t n, views, bins, rays, sl;
	uint32_t *rptr, *rcol;	/* A by ray */
	float *rval;
	uint32_t *pptr, *pcol;	/* A^T by pixel */
	float *pval;
	float *y, *w, *cinv;	/* sinogram, ray weights, 1/column sums */
};

struct ct_dev {
	size_t rlo, rhi, plo, phi, n, bins, sl;
	uint32_t *rptr, *rcol, *pptr, *pcol;
	float *rval, *pval, *y, *w, *cinv;
};

struct ct_args {
	float *x, *r;
	const struct ct_dev *g;
};

static void ct_fwd_kernel(void *p)
{
	const struct ct_args *a = p;
	const struct ct_dev *g = a->g;
	size_t i0 = g->rlo + (size_t)gpsBlockIdx().x * CT_TILE, i, e;
	size_t i1 = i0 + CT_TILE < g->rhi ? i0 + CT_TILE : g->rhi;

	for (i = i0; i < i1; i++) {
		size_t k = i - g->rlo, v = i / g->bins, b = i % g->bins, z;
		float s[CT_MAXSL] = { 0 };

		for (e = g->rptr[k]; e < g->rptr[k + 1]; e++) {
			size_t px = g->rcol[e];
			const float *x = a->x + px / g->n * g->sl * g->n +
					 px % g->n;

			for (z = 0; z < g->sl; z++)
				s[z] += g->rval[e] * x[z * g->n];
		}
		for (z = 0; z < g->sl; z++)
			a->r[(v * g->sl + z) * g->bins + b] =
				g->w[k * g->sl + z] *
				(g->y[k * g->sl + z] - s[z]);
	}
}

static void ct_back_kernel(void *p)
{
	const struct ct_args *a = p;
	const struct ct_dev *g = a->g;
	size_t j0 = g->plo + (size_t)gpsBlockIdx().x * CT_TILE, j, e;
	size_t j1 = j0 + CT_TILE < g->phi ? j0 + CT_TILE : g->phi;

	for (j = j0; j < j1; j++) {
		size_t k = j - g->plo, y = j / g->n, x = j % g->n, z;
		float s[CT_MAXSL] = { 0 };

		for (e = g->pptr[k]; e < g->pptr[k + 1]; e++) {
			size_t ray = g->pcol[e];
			const float *r = a->r + ray / g->bins * g->sl *
					 g->bins + ray % g->bins;

			for (z = 0; z < g->sl; z++)
				s[z] += g->pval[e] * r[z * g->bins];
		}
		for (z = 0; z < g->sl; z++) {
			size_t at = (y * g->sl + z) * g->n + x;
			float v = a->x[at] + s[z] * g->cinv[k];

			a->x[at] = v > 0.0f ? v : 0.0f;
		}
	}
}

static void ct_setup(struct wl *w, const struct wl_opts *o)
{
	struct ct *c = wl_xmalloc(sizeof(*c));
	size_t N = o->size ? o->size : o->quick ? 64 : 128, z;
	size_t v, b, i, e = 0, cap, j;
	float *x0, *phantom, *rsum;
	double half;

	if (N < 8)
		N = 8;
	c->n = N;
	c->views = N / 4 * 3;
	c->bins = N;
	c->rays = c->views * c->bins;
	c->sl = o->quick ? 4 : 16;	/* at most CT_MAXSL */
	half = (double)N / 2;
	cap = c->rays * (2 * N + 2);
	c->rptr = wl_xmalloc((c->rays + 1) * sizeof(uint32_t));
	c->rcol = wl_xmalloc(cap * sizeof(uint32_t));
	c->rval = wl_xmalloc(cap * sizeof(float));
	for (v = 0; v < c->views; v++) {
		double th = M_PI * (double)v / (double)c->views;
		double dx = cos(th), dy = sin(th);

		for (b = 0; b < c->bins; b++) {
			double s = (double)b - half + 0.5, t;
			long last = -1;

			c->rptr[v * c->bins + b] = (uint32_t)e;
			/* unit steps along the ray through the image disk */
			for (t = -half * 1.5; t <= half * 1.5; t += 1.0) {
				double px = half + s * -dy + t * dx;
				double py = half + s * dx + t * dy;
				long ix = (long)floor(px), iy = (long)floor(py);
				long pix;

				if (ix < 0 || iy < 0 || ix >= (long)N ||
				    iy >= (long)N)
					continue;
				pix = iy * (long)N + ix;
				if (pix == last) {
					c->rval[e - 1] += 1.0f;
					continue;
				}
				c->rcol[e] = (uint32_t)pix;
				c->rval[e++] = 1.0f;
				last = pix;
			}
		}
	}
	c->rptr[c->rays] = (uint32_t)e;
	/* A^T */
	c->pptr = wl_xmalloc((N * N + 1) * sizeof(uint32_t));
	c->pcol = wl_xmalloc((e + 1) * sizeof(uint32_t));
	c->pval = wl_xmalloc((e + 1) * sizeof(float));
	{
		uint32_t *fill = wl_xmalloc((N * N + 1) * sizeof(uint32_t));

		for (j = 0; j < e; j++)
			c->pptr[c->rcol[j] + 1]++;
		for (j = 0; j < N * N; j++)
			c->pptr[j + 1] += c->pptr[j];
		memcpy(fill, c->pptr, N * N * sizeof(uint32_t));
		for (i = 0; i < c->rays; i++)
			for (j = c->rptr[i]; j < c->rptr[i + 1]; j++) {
				uint32_t at = fill[c->rcol[j]]++;

				c->pcol[at] = (uint32_t)i;
				c->pval[at] = c->rval[j];
			}
		free(fill);
	}
	/* phantom: a disk with two inner disks; y = A phantom */
	phantom = wl_xmalloc(N * N * sizeof(float));
	for (i = 0; i < N * N; i++) {
		double px = (double)(i % N) + 0.5 - half;
		double py = (double)(i / N) + 0.5 - half;
		double r2 = px * px + py * py, R = half * 0.8;

		phantom[i] = r2 < R * R ? 1.0f : 0.0f;
		if ((px - R / 3) * (px - R / 3) + py * py < R * R / 16)
			phantom[i] += 0.5f;
		if (px * px + (py + R / 2) * (py + R / 2) < R * R / 36)
			phantom[i] -= 0.5f;
	}
	c->y = wl_xmalloc(c->rays * c->sl * sizeof(float));
	c->w = wl_xmalloc(c->rays * c->sl * sizeof(float));
	rsum = wl_xmalloc(c->rays * sizeof(float));
	for (i = 0; i < c->rays; i++) {
		float s = 0.0f, l = 0.0f;

		for (j = c->rptr[i]; j < c->rptr[i + 1]; j++) {
			s += c->rval[j] * phantom[c->rcol[j]];
			l += c->rval[j];
		}
		rsum[i] = l;
		for (z = 0; z < c->sl; z++) {
			float sz = s * (1.0f + 0.1f * (float)z);

			c->y[i * c->sl + z] = sz;
			/* PWLS statistical weight over the row sum */
			c->w[i * c->sl + z] = l > 0 ?
				(1.0f / (1.0f + 0.01f * sz)) / l : 0.0f;
		}
	}
	c->cinv = wl_xmalloc(N * N * sizeof(float));
	for (j = 0; j < N * N; j++) {
		float s = 0.0f;

		for (i = c->pptr[j]; i < c->pptr[j + 1]; i++)
			s += c->pval[i];
		c->cinv[j] = s > 0 ? 1.0f / s : 0.0f;
	}
	free(rsum);
	free(phantom);
	x0 = wl_xmalloc(N * N * c->sl * sizeof(float));
	w->data = c;
	w->nbuf = 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "image", N * N * c->sl * sizeof(float),
				     x0 };
	w->buf[1] = (struct wl_buf){ "residual",
				     c->rays * c->sl * sizeof(float), NULL };
	w->buf[1].init = wl_xmalloc(c->rays * c->sl * sizeof(float));
	snprintf(w->desc, sizeof(w->desc), "image=%zux%zu slices=%zu "
		 "views=%zu bins=%zu nonzeros=%zu", N, N, c->sl, c->views,
		 c->bins, e);
}

static void ct_cleanup(struct wl *w)
{
	struct ct *c = w->data;

	free(c->rptr);
	free(c->rcol);
	free(c->rval);
	free(c->pptr);
	free(c->pcol);
	free(c->pval);
	free(c->y);
	free(c->w);
	free(c->cinv);
}

/* views (whole) and image rows (whole) */
static void ct_rays(const struct ct *c, int d, int nd, size_t *lo,
		    size_t *hi)
{
	wl_split(c->rays, c->bins, d, nd, lo, hi);
}

static void ct_pixels(const struct ct *c, int d, int nd, size_t *lo,
		      size_t *hi)
{
	wl_split(c->n * c->n, c->n, d, nd, lo, hi);
}

static void *ct_dup(const void *src, size_t bytes)
{
	void *p = wl_host_alloc(bytes ? bytes : 1);

	memcpy(p, src, bytes);
	return p;
}

static void *ct_dev_init(struct wl *w, int d, int nd)
{
	const struct ct *c = w->data;
	struct ct_dev *p = wl_host_alloc(sizeof(*p));
	size_t i, e0;

	ct_rays(c, d, nd, &p->rlo, &p->rhi);
	ct_pixels(c, d, nd, &p->plo, &p->phi);
	p->n = c->n;
	p->bins = c->bins;
	p->sl = c->sl;
	e0 = c->rptr[p->rlo];
	p->rptr = wl_host_alloc((p->rhi - p->rlo + 1) * sizeof(uint32_t));
	for (i = 0; i <= p->rhi - p->rlo; i++)
		p->rptr[i] = c->rptr[p->rlo + i] - (uint32_t)e0;
	p->rcol = ct_dup(c->rcol + e0, (c->rptr[p->rhi] - e0) * 4);
	p->rval = ct_dup(c->rval + e0, (c->rptr[p->rhi] - e0) * 4);
	p->y = ct_dup(c->y + p->rlo * c->sl, (p->rhi - p->rlo) * c->sl * 4);
	p->w = ct_dup(c->w + p->rlo * c->sl, (p->rhi - p->rlo) * c->sl * 4);
	e0 = c->pptr[p->plo];
	p->pptr = wl_host_alloc((p->phi - p->plo + 1) * sizeof(uint32_t));
	for (i = 0; i <= p->phi - p->plo; i++)
		p->pptr[i] = c->pptr[p->plo + i] - (uint32_t)e0;
	p->pcol = ct_dup(c->pcol + e0, (c->pptr[p->phi] - e0) * 4);
	p->pval = ct_dup(c->pval + e0, (c->pptr[p->phi] - e0) * 4);
	p->cinv = ct_dup(c->cinv + p->plo, (p->phi - p->plo) * 4);
	return p;
}

static void ct_dev_free(struct wl *w, int d, void *priv)
{
	struct ct_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->rptr);
	wl_host_free(p->rcol);
	wl_host_free(p->rval);
	wl_host_free(p->y);
	wl_host_free(p->w);
	wl_host_free(p->pptr);
	wl_host_free(p->pcol);
	wl_host_free(p->pval);
	wl_host_free(p->cinv);
	wl_host_free(p);
}

static void ct_launch(const struct wl *w, int phase, int d, int nd,
		      void *const *buf, void *priv, gpsStream_t st)
{
	const struct ct_dev *p = priv;
	struct ct_args a = { .x = buf[0], .r = buf[1], .g = p };
	size_t n = phase ? p->phi - p->plo : p->rhi - p->rlo;

	(void)w;
	(void)d;
	(void)nd;
	if (n)
		wl_launch(phase ? ct_back_kernel : ct_fwd_kernel,
			  wl_blocks(n, CT_TILE),
			  GPS_ARGS_LOCAL(&a, GPS_PTR(struct ct_args, x),
				   GPS_PTR(struct ct_args, r)), st);
}

static void ct_reads(const struct wl *w, int phase, int d, int nd,
		     struct wl_access *acc)
{
	const struct ct *c = w->data;
	size_t lo, hi, e;

	size_t z, n = c->n, sl = c->sl, bins = c->bins;

	if (!phase) {
		ct_rays(c, d, nd, &lo, &hi);
		for (e = c->rptr[lo]; e < c->rptr[hi]; e++)
			for (z = 0; z < sl; z++)
				wl_mark(acc, 0, ((c->rcol[e] / n * sl + z) * n +
						 c->rcol[e] % n) * 4, 4);
		return;
	}
	ct_pixels(c, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, 0, lo * sl * 4, (hi - lo) * sl * 4);
	for (e = c->pptr[lo]; e < c->pptr[hi]; e++)
		for (z = 0; z < sl; z++)
			wl_mark(acc, 1, ((c->pcol[e] / bins * sl + z) * bins +
					 c->pcol[e] % bins) * 4, 4);
}

static void ct_writes(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct ct *c = w->data;
	size_t lo, hi;

	if (phase)
		ct_pixels(c, d, nd, &lo, &hi);
	else
		ct_rays(c, d, nd, &lo, &hi);
	/* rays of whole views, pixels of whole rows: contiguous */
	if (hi > lo)
		wl_mark(acc, !phase, lo * c->sl * 4, (hi - lo) * c->sl * 4);
}

const struct wl_ops wl_ct = {
	.name = "ct",
	.setup = ct_setup,
	.dev_init = ct_dev_init,
	.dev_free = ct_dev_free,
	.launch = ct_launch,
	.reads = ct_reads,
	.writes = ct_writes,
	.cleanup = ct_cleanup,
};
