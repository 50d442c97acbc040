// SPDX-License-Identifier: MIT
/*
 * hit: the pseudo-spectral time step of homogeneous isotropic turbulence
 * (Tartan's HIT) reduced to one complex field on an N^3 grid (-z N,
 * default 64, quick 32; Tartan's default is 256^3): forward 3-D FFT, a
 * linear operator in spectral space (viscous decay exp(-nu k^2 dt)),
 * inverse 3-D FFT, a nonlinear term in physical space
 * (u -= dt u |u|^2).  The 3-D FFT is done as the paper's codes do it
 * on several GPUs, with x-slabs and a global transpose:
 *
 *   phase 0: 2-D FFTs (y, z) of each own x-plane of A ([x][y][z])
 *   phase 1: transpose: each device gathers its y-range of B ([y][z][x])
 *            from every device's x-slabs of A, FFT along x, the spectral
 *            operator, inverse FFT along x (all-to-all)
 *   phase 2: transpose back: each device gathers its x-planes of A from
 *            every device's B, inverse 2-D FFTs, 1/N^3, the nonlinear
 *            term (all-to-all)
 *
 * The paper calls HIT peer-to-peer, the dissertation all-to-all (the
 * transposes): this version is the latter.  Radix-2 FFTs in double with
 * one twiddle table; every line is transformed by one thread in a fixed
 * order: bit for bit against one device.
 */
#include <math.h>

#include "../workload.h"

#define HIT_NU	0.01
#define HIT_DT	0.1

struct hit {
	size_t n;
	double *tw;		/* exp(-2 pi i k / n), k < n / 2 */
};

struct hit_dev {
	size_t x0, x1, y0, y1, n;
	double *tw;
};

struct hit_args {
	double *a, *b;
	const struct hit_dev *g;
	int phase;
};

/* in-place radix-2 FFT of n complex values (interleaved) */
static void hit_fft(double *v, size_t n, const double *tw, int inverse)
{
	size_t i, j, len, k, half;

	for (i = 1, j = 0; i < n; i++) {
		size_t bit = n >> 1;

		for (; j & bit; bit >>= 1)
			j ^= bit;
		j |= bit;
		if (i < j) {
			double tr = v[2 * i], ti = v[2 * i + 1];

			v[2 * i] = v[2 * j];
			v[2 * i + 1] = v[2 * j + 1];
			v[2 * j] = tr;
			v[2 * j + 1] = ti;
		}
	}
	for (len = 2; len <= n; len <<= 1) {
		half = len / 2;
		for (i = 0; i < n; i += len)
			for (k = 0; k < half; k++) {
				size_t t = k * (n / len);
				double wr = tw[2 * t];
				double wi = inverse ? -tw[2 * t + 1] :
					    tw[2 * t + 1];
				double *p = v + 2 * (i + k);
				double *q = v + 2 * (i + k + half);
				double xr = q[0] * wr - q[1] * wi;
				double xi = q[0] * wi + q[1] * wr;

				q[0] = p[0] - xr;
				q[1] = p[1] - xi;
				p[0] += xr;
				p[1] += xi;
			}
	}
}

static inline double hit_k(size_t i, size_t n)
{
	return i < n / 2 ? (double)i : (double)i - (double)n;
}

/* 2-D FFT of the x-plane at @pl ([y][z]): z lines, then y lines */
static void hit_plane(double *pl, size_t n, const double *tw, int inverse,
		      double *line)
{
	size_t y, z;

	for (y = 0; y < n; y++)
		hit_fft(pl + 2 * y * n, n, tw, inverse);
	for (z = 0; z < n; z++) {
		for (y = 0; y < n; y++) {
			line[2 * y] = pl[2 * (y * n + z)];
			line[2 * y + 1] = pl[2 * (y * n + z) + 1];
		}
		hit_fft(line, n, tw, inverse);
		for (y = 0; y < n; y++) {
			pl[2 * (y * n + z)] = line[2 * y];
			pl[2 * (y * n + z) + 1] = line[2 * y + 1];
		}
	}
}

static void hit_kernel(void *p)
{
	const struct hit_args *a = p;
	const struct hit_dev *g = a->g;
	size_t n = g->n, i = gpsBlockIdx().x, x, y, z;
	double line[2 * 1024];

	if (a->phase == 0) {
		x = g->x0 + i;
		hit_plane(a->a + 2 * x * n * n, n, g->tw, 0, line);
		return;
	}
	if (a->phase == 1) {
		y = g->y0 + i;
		for (z = 0; z < n; z++) {
			double *out = a->b + 2 * (y * n + z) * n;

			for (x = 0; x < n; x++) {
				line[2 * x] = a->a[2 * ((x * n + y) * n + z)];
				line[2 * x + 1] =
					a->a[2 * ((x * n + y) * n + z) + 1];
			}
			hit_fft(line, n, g->tw, 0);
			for (x = 0; x < n; x++) {
				double k2 = hit_k(x, n) * hit_k(x, n) +
					hit_k(y, n) * hit_k(y, n) +
					hit_k(z, n) * hit_k(z, n);
				double f = exp(-HIT_NU * k2 * HIT_DT);

				line[2 * x] *= f;
				line[2 * x + 1] *= f;
			}
			hit_fft(line, n, g->tw, 1);
			memcpy(out, line, 2 * n * sizeof(double));
		}
		return;
	}
	x = g->x0 + i;
	{
		double *pl = a->a + 2 * x * n * n;
		double scale = 1.0 / ((double)n * (double)n * (double)n);

		for (y = 0; y < n; y++)
			for (z = 0; z < n; z++) {
				pl[2 * (y * n + z)] =
					a->b[2 * ((y * n + z) * n + x)];
				pl[2 * (y * n + z) + 1] =
					a->b[2 * ((y * n + z) * n + x) + 1];
			}
		hit_plane(pl, n, g->tw, 1, line);
		for (i = 0; i < n * n; i++) {
			double re = pl[2 * i] * scale, im = pl[2 * i + 1] * scale;
			double m = HIT_DT * (re * re + im * im);

			pl[2 * i] = re - m * re;
			pl[2 * i + 1] = im - m * im;
		}
	}
}

static void hit_setup(struct wl *w, const struct wl_opts *o)
{
	struct hit *h = wl_xmalloc(sizeof(*h));
	size_t n = 4, want = o->size ? o->size : o->quick ? 32 : 64, i, cnt;
	double *a;

	while (n * 2 <= want && n * 2 <= 1024)
		n *= 2;
	h->n = n;
	h->tw = wl_xmalloc(n * sizeof(double));
	for (i = 0; i < n / 2; i++) {
		h->tw[2 * i] = cos(-2.0 * M_PI * (double)i / (double)n);
		h->tw[2 * i + 1] = sin(-2.0 * M_PI * (double)i / (double)n);
	}
	cnt = n * n * n;
	a = wl_xmalloc(cnt * 2 * sizeof(double));
	for (i = 0; i < 2 * cnt; i++)
		a[i] = wl_hash01(i) - 0.5;
	w->data = h;
	w->nbuf = 2;
	w->nphases = 3;
	w->buf[0] = (struct wl_buf){ "A", cnt * 2 * sizeof(double), a };
	w->buf[1] = (struct wl_buf){ "B", cnt * 2 * sizeof(double), NULL };
	w->buf[1].init = wl_xmalloc(cnt * 2 * sizeof(double));
	snprintf(w->desc, sizeof(w->desc), "grid=%zu^3 complex double", n);
}

static void hit_cleanup(struct wl *w)
{
	free(((struct hit *)w->data)->tw);
}

static void *hit_dev_init(struct wl *w, int d, int nd)
{
	const struct hit *h = w->data;
	struct hit_dev *p = wl_host_alloc(sizeof(*p));

	p->n = h->n;
	wl_split(h->n, 1, d, nd, &p->x0, &p->x1);
	wl_split(h->n, 1, d, nd, &p->y0, &p->y1);
	p->tw = wl_host_alloc(h->n * sizeof(double));
	memcpy(p->tw, h->tw, h->n * sizeof(double));
	return p;
}

static void hit_dev_free(struct wl *w, int d, void *priv)
{
	struct hit_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->tw);
	wl_host_free(p);
}

static void hit_launch(const struct wl *w, int phase, int d, int nd,
		       void *const *buf, void *priv, gpsStream_t st)
{
	const struct hit_dev *p = priv;
	struct hit_args a = { .a = buf[0], .b = buf[1], .g = p,
			      .phase = phase };
	size_t cnt = phase == 1 ? p->y1 - p->y0 : p->x1 - p->x0;

	(void)w;
	(void)d;
	(void)nd;
	if (cnt)
		wl_launch(hit_kernel, (unsigned int)cnt,
			  GPS_ARGS_LOCAL(&a, GPS_PTR(struct hit_args, a),
				   GPS_PTR(struct hit_args, b)), st);
}

static void hit_reads(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct hit *h = w->data;
	size_t n = h->n, c = 2 * sizeof(double), x0, x1, x, y0, y1, y;

	wl_split(n, 1, d, nd, &x0, &x1);
	wl_split(n, 1, d, nd, &y0, &y1);
	if (phase == 0) {
		if (x1 > x0)
			wl_mark(acc, 0, x0 * n * n * c, (x1 - x0) * n * n * c);
	} else if (phase == 1) {
		for (x = 0; x < n && y1 > y0; x++)
			wl_mark(acc, 0, (x * n + y0) * n * c,
				(y1 - y0) * n * c);
	} else {
		for (y = 0; y < n && x1 > x0; y++)
			for (x = 0; x < n; x++)	/* B[y][z][x0..x1) */
				wl_mark(acc, 1, ((y * n + x) * n + x0) * c,
					(x1 - x0) * c);
	}
}

static void hit_writes(const struct wl *w, int phase, int d, int nd,
		       struct wl_access *acc)
{
	const struct hit *h = w->data;
	size_t n = h->n, c = 2 * sizeof(double), lo, hi;

	wl_split(n, 1, d, nd, &lo, &hi);
	if (hi > lo)
		wl_mark(acc, phase == 1, lo * n * n * c, (hi - lo) * n * n * c);
}

const struct wl_ops wl_hit = {
	.name = "hit",
	.setup = hit_setup,
	.dev_init = hit_dev_init,
	.dev_free = hit_dev_free,
	.launch = hit_launch,
	.reads = hit_reads,
	.writes = hit_writes,
	.cleanup = hit_cleanup,
};
