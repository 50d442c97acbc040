// SPDX-License-Identifier: MIT
/*
 * diffusion: the 3-D heat equation u_t = Laplacian(u) (Tartan's
 * Diffusion) on an E^3 grid of doubles (-z E, default 96, quick 32;
 * Tartan's default is 400^3), fourth-order central differences (reach 2,
 * zero outside the domain), time stepping by the three-stage SSP
 * Runge-Kutta scheme (dt 0.05):
 *
 *   phase 0: u1 = u + dt L(u)
 *   phase 1: u2 = 3/4 u + 1/4 (u1 + dt L(u1))
 *   phase 2: u  = 1/3 u + 2/3 (u2 + dt L(u2))
 *
 * one iteration = one time step.  Split in z-slabs: each RK stage reads 2
 * ghost planes of each neighbour (Tartan's code exchanges 3): peer-to-
 * peer.  One thread per plane: bit for bit against one device.
 */
#include "../workload.h"

#define DF_DT	0.05

struct diffusion {
	size_t e;
};

struct df_args {
	double *u, *u1, *u2;
	size_t e, z0;
	int phase;
};

static inline double df_at(const double *f, size_t e, long x, long y,
			   long z)
{
	if (x < 0 || y < 0 || z < 0 || x >= (long)e || y >= (long)e ||
	    z >= (long)e)
		return 0.0;
	return f[((size_t)z * e + (size_t)y) * e + (size_t)x];
}

static inline double df_lap(const double *f, size_t e, long x, long y,
			    long z)
{
	double c = df_at(f, e, x, y, z), s = 0.0;
	int k;

	for (k = 0; k < 3; k++) {
		int dx = k == 0, dy = k == 1, dz = k == 2;

		s += (-df_at(f, e, x - 2 * dx, y - 2 * dy, z - 2 * dz) +
		      16.0 * df_at(f, e, x - dx, y - dy, z - dz) - 30.0 * c +
		      16.0 * df_at(f, e, x + dx, y + dy, z + dz) -
		      df_at(f, e, x + 2 * dx, y + 2 * dy, z + 2 * dz)) /
		     12.0;
	}
	return s;
}

static void df_kernel(void *p)
{
	const struct df_args *a = p;
	size_t e = a->e, z = a->z0 + gpsBlockIdx().x, y, x, i;

	for (y = 0; y < e; y++)
		for (x = 0; x < e; x++) {
			i = (z * e + y) * e + x;
			switch (a->phase) {
			case 0:
				a->u1[i] = a->u[i] + DF_DT *
					df_lap(a->u, e, (long)x, (long)y,
					       (long)z);
				break;
			case 1:
				a->u2[i] = 0.75 * a->u[i] + 0.25 *
					(a->u1[i] + DF_DT *
					 df_lap(a->u1, e, (long)x, (long)y,
						(long)z));
				break;
			default:
				a->u[i] = a->u[i] / 3.0 + 2.0 / 3.0 *
					(a->u2[i] + DF_DT *
					 df_lap(a->u2, e, (long)x, (long)y,
						(long)z));
				break;
			}
		}
}

static void df_setup(struct wl *w, const struct wl_opts *o)
{
	struct diffusion *f = wl_xmalloc(sizeof(*f));
	size_t e = o->size ? o->size : o->quick ? 32 : 96, n, i;
	double *u;

	if (e < 4)
		e = 4;
	f->e = e;
	n = e * e * e;
	u = wl_xmalloc(n * sizeof(double));
	for (i = 0; i < n; i++)
		u[i] = wl_hash01(i);
	w->data = f;
	w->nbuf = 3;
	w->nphases = 3;
	w->buf[0] = (struct wl_buf){ "u", n * sizeof(double), u };
	w->buf[1] = (struct wl_buf){ "u1", n * sizeof(double), NULL };
	w->buf[2] = (struct wl_buf){ "u2", n * sizeof(double), NULL };
	w->buf[1].init = wl_xmalloc(n * sizeof(double));
	w->buf[2].init = wl_xmalloc(n * sizeof(double));
	snprintf(w->desc, sizeof(w->desc), "grid=%zu^3 double", e);
}

static void df_planes(const struct diffusion *f, int d, int nd, size_t *z0,
		      size_t *z1)
{
	wl_split(f->e, 1, d, nd, z0, z1);
}

static void df_launch(const struct wl *w, int phase, int d, int nd,
		      void *const *buf, void *priv, gpsStream_t st)
{
	const struct diffusion *f = w->data;
	struct df_args a = { .u = buf[0], .u1 = buf[1], .u2 = buf[2],
			     .e = f->e, .phase = phase };
	size_t z1;

	(void)priv;
	df_planes(f, d, nd, &a.z0, &z1);
	if (z1 > a.z0)
		wl_launch(df_kernel, (unsigned int)(z1 - a.z0),
			  GPS_ARGS_LOCAL(&a, GPS_PTR(struct df_args, u),
				   GPS_PTR(struct df_args, u1),
				   GPS_PTR(struct df_args, u2)), st);
}

static void df_reads(const struct wl *w, int phase, int d, int nd,
		     struct wl_access *acc)
{
	const struct diffusion *f = w->data;
	size_t z0, z1, plane = f->e * f->e * sizeof(double);
	size_t h0, h1;

	df_planes(f, d, nd, &z0, &z1);
	if (z1 <= z0)
		return;
	h0 = z0 >= 2 ? z0 - 2 : 0;
	h1 = z1 + 2 <= f->e ? z1 + 2 : f->e;
	/* the stage's input with its ghost planes; u itself, own planes */
	wl_mark(acc, phase, h0 * plane, (h1 - h0) * plane);
	if (phase)
		wl_mark(acc, 0, z0 * plane, (z1 - z0) * plane);
}

static void df_writes(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct diffusion *f = w->data;
	size_t z0, z1, plane = f->e * f->e * sizeof(double);

	df_planes(f, d, nd, &z0, &z1);
	if (z1 > z0)
		wl_mark(acc, (phase + 1) % 3, z0 * plane, (z1 - z0) * plane);
}

const struct wl_ops wl_diffusion = {
	.name = "diffusion",
	.setup = df_setup,
	.launch = df_launch,
	.reads = df_reads,
	.writes = df_writes,
};
