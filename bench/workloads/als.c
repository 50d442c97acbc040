// SPDX-License-Identifier: MIT
/*
 * als: alternating least squares for a ratings matrix R ~ U^T V of rank
 * K (16, quick 8; -z users = items, default 16384, quick 4096; -k ratings
 * per user, 16, quick 8).  The paper ran it on HV15R; here each user rates
 * -k items drawn uniformly from all items (fixed seed), so that, as in the
 * paper, the sharing is all-to-all: nearly every page of V is read by
 * every device and subscription cannot help (Fig. 9, 11).
 *
 * Phase 0 updates U: each device owns a range of users (whole 4 KiB of
 * U) and, for each, solves (V_u^T V_u + lambda I) u = V_u^T r_u by
 * Cholesky in double precision, reading the rows of V its users rated;
 * phase 1 updates V from U the same way (items as rows).  One thread per
 * 16 rows, each row computed by one thread in a fixed order: bit for bit
 * against one device.
 */
#include <math.h>

#include "../workload.h"

#define ALS_TILE	16
#define ALS_MAXK	32
#define ALS_LAMBDA	0.1

struct als {
	size_t m, n, k, per_user;
	/* ratings by user and by item (CSR), values */
	uint32_t *uptr, *ucol, *iptr, *icol;
	float *uval, *ival;
};

/* one device's rows of both phases, host memory on its node */
struct als_dev {
	size_t ulo, uhi, ilo, ihi;
	uint32_t *uptr, *ucol, *iptr, *icol;
	float *uval, *ival;
};

struct als_args {
	float *u, *v;
	const struct als_dev *g;
	size_t k;
	int phase;
};

/* x = (F_S^T F_S + lambda I)^-1 F_S^T r for the rows S of @f */
static void als_solve(const float *f, size_t k, const uint32_t *col,
		      const float *val, size_t cnt, float *x)
{
	double a[ALS_MAXK * ALS_MAXK], b[ALS_MAXK], y[ALS_MAXK];
	size_t i, j, l, e;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	for (e = 0; e < cnt; e++) {
		const float *fr = f + (size_t)col[e] * k;

		for (i = 0; i < k; i++) {
			b[i] += (double)val[e] * fr[i];
			for (j = 0; j <= i; j++)
				a[i * k + j] += (double)fr[i] * fr[j];
		}
	}
	for (i = 0; i < k; i++)
		a[i * k + i] += ALS_LAMBDA;
	/* Cholesky, lower triangle in place */
	for (j = 0; j < k; j++) {
		double s = a[j * k + j];

		for (l = 0; l < j; l++)
			s -= a[j * k + l] * a[j * k + l];
		a[j * k + j] = sqrt(s);
		for (i = j + 1; i < k; i++) {
			double t = a[i * k + j];

			for (l = 0; l < j; l++)
				t -= a[i * k + l] * a[j * k + l];
			a[i * k + j] = t / a[j * k + j];
		}
	}
	for (i = 0; i < k; i++) {	/* L y = b */
		double t = b[i];

		for (l = 0; l < i; l++)
			t -= a[i * k + l] * y[l];
		y[i] = t / a[i * k + i];
	}
	for (i = k; i-- > 0;) {		/* L^T x = y */
		double t = y[i];

		for (l = i + 1; l < k; l++)
			t -= a[l * k + i] * b[l];
		b[i] = t / a[i * k + i];
		x[i] = (float)b[i];
	}
}

static void als_kernel(void *p)
{
	const struct als_args *a = p;
	const struct als_dev *g = a->g;
	size_t lo = a->phase ? g->ilo : g->ulo, hi = a->phase ? g->ihi : g->uhi;
	size_t r0 = lo + (size_t)gpsBlockIdx().x * ALS_TILE, r;
	size_t r1 = r0 + ALS_TILE < hi ? r0 + ALS_TILE : hi;
	const uint32_t *ptr = a->phase ? g->iptr : g->uptr;
	const uint32_t *col = a->phase ? g->icol : g->ucol;
	const float *val = a->phase ? g->ival : g->uval;

	for (r = r0; r < r1; r++) {
		size_t i = r - lo;

		als_solve(a->phase ? a->u : a->v, a->k, col + ptr[i],
			  val + ptr[i], ptr[i + 1] - ptr[i],
			  (a->phase ? a->v : a->u) + r * a->k);
	}
}

/* CSR of the transpose */
static void als_transpose(size_t rows, size_t cols, const uint32_t *ptr,
			  const uint32_t *col, const float *val,
			  uint32_t **tptr, uint32_t **tcol, float **tval)
{
	size_t nnz = ptr[rows], r, e;
	uint32_t *fill;

	*tptr = wl_xmalloc((cols + 1) * sizeof(uint32_t));
	*tcol = wl_xmalloc((nnz + 1) * sizeof(uint32_t));
	*tval = wl_xmalloc((nnz + 1) * sizeof(float));
	fill = wl_xmalloc((cols + 1) * sizeof(uint32_t));
	for (e = 0; e < nnz; e++)
		(*tptr)[col[e] + 1]++;
	for (r = 0; r < cols; r++)
		(*tptr)[r + 1] += (*tptr)[r];
	memcpy(fill, *tptr, cols * sizeof(uint32_t));
	for (r = 0; r < rows; r++)
		for (e = ptr[r]; e < ptr[r + 1]; e++) {
			uint32_t at = fill[col[e]]++;

			(*tcol)[at] = (uint32_t)r;
			(*tval)[at] = val[e];
		}
	free(fill);
}

static void als_setup(struct wl *w, const struct wl_opts *o)
{
	struct als *s = wl_xmalloc(sizeof(*s));
	uint64_t rs = 11;
	size_t r, e, c;
	float *u, *v;

	s->m = s->n = o->size ? o->size : o->quick ? 4096 : 16384;
	s->k = o->quick ? 8 : 16;
	s->per_user = o->degree ? o->degree : o->quick ? 8 : 16;
	if (s->per_user > s->n)
		s->per_user = s->n;
	s->uptr = wl_xmalloc((s->m + 1) * sizeof(uint32_t));
	s->ucol = wl_xmalloc(s->m * s->per_user * sizeof(uint32_t));
	s->uval = wl_xmalloc(s->m * s->per_user * sizeof(float));
	for (r = 0, e = 0; r < s->m; r++) {
		s->uptr[r] = (uint32_t)e;
		for (c = 0; c < s->per_user; c++, e++) {
			s->ucol[e] = (uint32_t)(wl_rng(&rs) % s->n);
			s->uval[e] = 1.0f + (float)(wl_rng(&rs) % 5);
		}
	}
	s->uptr[s->m] = (uint32_t)e;
	als_transpose(s->m, s->n, s->uptr, s->ucol, s->uval, &s->iptr,
		      &s->icol, &s->ival);
	u = wl_xmalloc(s->m * s->k * sizeof(float));
	v = wl_xmalloc(s->n * s->k * sizeof(float));
	for (r = 0; r < s->m * s->k; r++)
		u[r] = (float)wl_hash01(r);
	for (r = 0; r < s->n * s->k; r++)
		v[r] = (float)wl_hash01(r + (1ull << 40));
	w->data = s;
	w->nbuf = 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "U", s->m * s->k * sizeof(float), u };
	w->buf[1] = (struct wl_buf){ "V", s->n * s->k * sizeof(float), v };
	snprintf(w->desc, sizeof(w->desc), "users=%zu items=%zu rank=%zu "
		 "ratings=%zu", s->m, s->n, s->k, s->m * s->per_user);
}

static void als_cleanup(struct wl *w)
{
	struct als *s = w->data;

	free(s->uptr);
	free(s->ucol);
	free(s->uval);
	free(s->iptr);
	free(s->icol);
	free(s->ival);
}

/* rows of whole 4 KiB of the factor */
static void als_rows(const struct als *s, int phase, int d, int nd,
		     size_t *lo, size_t *hi)
{
	wl_split(phase ? s->n : s->m, 1024 / s->k, d, nd, lo, hi);
}

static void als_part(size_t lo, size_t hi, const uint32_t *ptr,
		     const uint32_t *col, const float *val, uint32_t **dptr,
		     uint32_t **dcol, float **dval)
{
	size_t e0 = ptr[lo], ne = ptr[hi] - e0, i;

	*dptr = wl_host_alloc((hi - lo + 1) * sizeof(uint32_t));
	*dcol = wl_host_alloc((ne + 1) * sizeof(uint32_t));
	*dval = wl_host_alloc((ne + 1) * sizeof(float));
	for (i = 0; i <= hi - lo; i++)
		(*dptr)[i] = (uint32_t)(ptr[lo + i] - e0);
	memcpy(*dcol, col + e0, ne * sizeof(uint32_t));
	memcpy(*dval, val + e0, ne * sizeof(float));
}

static void *als_dev_init(struct wl *w, int d, int nd)
{
	const struct als *s = w->data;
	struct als_dev *p = wl_host_alloc(sizeof(*p));

	als_rows(s, 0, d, nd, &p->ulo, &p->uhi);
	als_rows(s, 1, d, nd, &p->ilo, &p->ihi);
	als_part(p->ulo, p->uhi, s->uptr, s->ucol, s->uval, &p->uptr,
		 &p->ucol, &p->uval);
	als_part(p->ilo, p->ihi, s->iptr, s->icol, s->ival, &p->iptr,
		 &p->icol, &p->ival);
	return p;
}

static void als_dev_free(struct wl *w, int d, void *priv)
{
	struct als_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->uptr);
	wl_host_free(p->ucol);
	wl_host_free(p->uval);
	wl_host_free(p->iptr);
	wl_host_free(p->icol);
	wl_host_free(p->ival);
	wl_host_free(p);
}

static void als_launch(const struct wl *w, int phase, int d, int nd,
		       void *const *buf, void *priv, gpsStream_t st)
{
	const struct als *s = w->data;
	const struct als_dev *p = priv;
	struct als_args a = { .u = buf[0], .v = buf[1], .g = p, .k = s->k,
			      .phase = phase };
	size_t lo = phase ? p->ilo : p->ulo, hi = phase ? p->ihi : p->uhi;

	(void)d;
	(void)nd;
	if (hi > lo)
		wl_launch(als_kernel, wl_blocks(hi - lo, ALS_TILE),
			  GPS_ARGS_LOCAL(&a, GPS_PTR(struct als_args, u),
				   GPS_PTR(struct als_args, v)), st);
}

static void als_reads(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct als *s = w->data;
	const uint32_t *ptr = phase ? s->iptr : s->uptr;
	const uint32_t *col = phase ? s->icol : s->ucol;
	size_t lo, hi, e, row = s->k * sizeof(float);

	als_rows(s, phase, d, nd, &lo, &hi);
	for (e = ptr[lo]; e < ptr[hi]; e++)
		wl_mark(acc, !phase, col[e] * row, row);
}

static void als_writes(const struct wl *w, int phase, int d, int nd,
		       struct wl_access *acc)
{
	const struct als *s = w->data;
	size_t lo, hi, row = s->k * sizeof(float);

	als_rows(s, phase, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, phase, lo * row, (hi - lo) * row);
}

const struct wl_ops wl_als = {
	.name = "als",
	.setup = als_setup,
	.dev_init = als_dev_init,
	.dev_free = als_dev_free,
	.launch = als_launch,
	.reads = als_reads,
	.writes = als_writes,
	.cleanup = als_cleanup,
};
