// SPDX-License-Identifier: MIT
/*
 * b2reqwp: 3-D elastic wave propagation (Tartan's B2rEqwp): nine fields
 * (velocities vx vy vz, stresses sxx syy szz sxy sxz syz) on a G x NY x G
 * grid (-z G, default 128 x 16 x 128, quick 32 x 8 x 32; Tartan's
 * default is 500 x 40 x 500), fourth-order central differences, the
 * explicit update of every field from the previous step's fields
 * (lambda 2, mu 1, density 1, dt 0.05, zero outside the domain).
 *
 * Decomposition and the B2R scheme: the x-z plane is cut into 8 x 8-cell
 * tiles stored tile after tile along a Z-order curve, and each device owns
 * a contiguous range of tiles (2 x 1 x 2 boxes in x and z on 4 devices,
 * halves in z on 2).  A phase is four time steps: each device loads its
 * box plus an 8-cell halo (the reach of 4 steps of a 2-cell stencil) from
 * the shared arrays, runs the 4 steps redundantly on that extended box in
 * its own memory, and stores its box: the halo is exchanged every 4 steps
 * (peer-to-peer).  The layout does not depend on the device count, and
 * every owned cell is computed from the same values in the same order:
 * bit for bit against one device.
 */
#include "../workload.h"

#define EQ_T		8	/* tile edge (x and z) */
#define EQ_H		8	/* halo */
#define EQ_STEPS	4	/* steps per exchange */
#define EQ_F		9	/* fields */
#define EQ_DT		0.05f
#define EQ_LAMBDA	2.0f
#define EQ_MU		1.0f

struct eq {
	size_t g, ny, tiles1, ntiles;	/* tiles1: tiles per edge */
};

/* a device's box [x0,x1) x [z0,z1), its extended box, its scratch */
struct eq_dev {
	size_t t0, t1;
	long x0, x1, z0, z1;
	long ex0, ex1, ez0, ez1;	/* extended */
	size_t g, ny, tiles1;
	float *s[2];			/* [f][z][y][x] over the ext box */
};

struct eq_args {
	const float *in;
	float *out;
	const struct eq_dev *g;
	int step;
};

static size_t eq_morton(size_t tx, size_t tz)
{
	size_t t = 0;
	int b;

	for (b = 0; b < 16; b++)
		t |= ((tx >> b) & 1) << (2 * b) | ((tz >> b) & 1) << (2 * b + 1);
	return t;
}

static void eq_unmorton(size_t t, size_t *tx, size_t *tz)
{
	int b;

	*tx = *tz = 0;
	for (b = 0; b < 16; b++) {
		*tx |= ((t >> (2 * b)) & 1) << b;
		*tz |= ((t >> (2 * b + 1)) & 1) << b;
	}
}

/* float index of (f, x, y, z) in a shared array */
static inline size_t eq_at(size_t ny, int f, size_t x, size_t y, size_t z)
{
	size_t t = eq_morton(x / EQ_T, z / EQ_T);

	return (((t * EQ_F + (size_t)f) * ny + y) * EQ_T + z % EQ_T) * EQ_T +
	       x % EQ_T;
}

static inline size_t eq_sat(const struct eq_dev *g, int f, long x, long y,
			    long z)
{
	size_t ex = (size_t)(g->ex1 - g->ex0), ez = (size_t)(g->ez1 - g->ez0);

	return (((size_t)f * ez + (size_t)(z - g->ez0)) * g->ny + (size_t)y) *
	       ex + (size_t)(x - g->ex0);
}

static void eq_load_kernel(void *p)
{
	const struct eq_args *a = p;
	const struct eq_dev *g = a->g;
	long z = g->ez0 + (long)gpsBlockIdx().x, x, y;
	int f;

	for (f = 0; f < EQ_F; f++)
		for (y = 0; y < (long)g->ny; y++)
			for (x = g->ex0; x < g->ex1; x++)
				g->s[0][eq_sat(g, f, x, y, z)] =
					a->in[eq_at(g->ny, f, (size_t)x,
						    (size_t)y, (size_t)z)];
}

/* fourth-order central difference of field f along (dx, dy, dz) */
static inline float eq_d(const struct eq_dev *g, const float *s, int f,
			 long x, long y, long z, int dx, int dy, int dz)
{
	float v[4];
	int k, o[4] = { -2, -1, 1, 2 };

	for (k = 0; k < 4; k++) {
		long X = x + o[k] * dx, Y = y + o[k] * dy, Z = z + o[k] * dz;

		v[k] = X < g->ex0 || X >= g->ex1 || Z < g->ez0 ||
		       Z >= g->ez1 || Y < 0 || Y >= (long)g->ny ? 0.0f :
		       s[eq_sat(g, f, X, Y, Z)];
	}
	return (8.0f * (v[2] - v[1]) - (v[3] - v[0])) * (1.0f / 12.0f);
}

enum { VX, VY, VZ, SXX, SYY, SZZ, SXY, SXZ, SYZ };

static void eq_step_kernel(void *p)
{
	const struct eq_args *a = p;
	const struct eq_dev *g = a->g;
	const float *s = g->s[a->step & 1];
	float *n = g->s[!(a->step & 1)];
	long z = g->ez0 + (long)gpsBlockIdx().x, x, y;

	for (y = 0; y < (long)g->ny; y++)
		for (x = g->ex0; x < g->ex1; x++) {
			float dvx[3], dvy[3], dvz[3], div;
#define EQ_S(f)	s[eq_sat(g, f, x, y, z)]
#define EQ_N(f)	n[eq_sat(g, f, x, y, z)]
#define EQ_D(f, i) eq_d(g, s, f, x, y, z, (i) == 0, (i) == 1, (i) == 2)
			EQ_N(VX) = EQ_S(VX) + EQ_DT * (EQ_D(SXX, 0) +
				EQ_D(SXY, 1) + EQ_D(SXZ, 2));
			EQ_N(VY) = EQ_S(VY) + EQ_DT * (EQ_D(SXY, 0) +
				EQ_D(SYY, 1) + EQ_D(SYZ, 2));
			EQ_N(VZ) = EQ_S(VZ) + EQ_DT * (EQ_D(SXZ, 0) +
				EQ_D(SYZ, 1) + EQ_D(SZZ, 2));
			dvx[0] = EQ_D(VX, 0); dvx[1] = EQ_D(VX, 1);
			dvx[2] = EQ_D(VX, 2);
			dvy[0] = EQ_D(VY, 0); dvy[1] = EQ_D(VY, 1);
			dvy[2] = EQ_D(VY, 2);
			dvz[0] = EQ_D(VZ, 0); dvz[1] = EQ_D(VZ, 1);
			dvz[2] = EQ_D(VZ, 2);
			div = dvx[0] + dvy[1] + dvz[2];
			EQ_N(SXX) = EQ_S(SXX) + EQ_DT * (EQ_LAMBDA * div +
				2.0f * EQ_MU * dvx[0]);
			EQ_N(SYY) = EQ_S(SYY) + EQ_DT * (EQ_LAMBDA * div +
				2.0f * EQ_MU * dvy[1]);
			EQ_N(SZZ) = EQ_S(SZZ) + EQ_DT * (EQ_LAMBDA * div +
				2.0f * EQ_MU * dvz[2]);
			EQ_N(SXY) = EQ_S(SXY) + EQ_DT * EQ_MU *
				(dvx[1] + dvy[0]);
			EQ_N(SXZ) = EQ_S(SXZ) + EQ_DT * EQ_MU *
				(dvx[2] + dvz[0]);
			EQ_N(SYZ) = EQ_S(SYZ) + EQ_DT * EQ_MU *
				(dvy[2] + dvz[1]);
#undef EQ_S
#undef EQ_N
#undef EQ_D
		}
}

/* one own tile per thread */
static void eq_store_kernel(void *p)
{
	const struct eq_args *a = p;
	const struct eq_dev *g = a->g;
	const float *s = g->s[EQ_STEPS & 1];
	size_t t = g->t0 + gpsBlockIdx().x, tx, tz, x, y, z;
	int f;

	eq_unmorton(t, &tx, &tz);
	for (f = 0; f < EQ_F; f++)
		for (y = 0; y < g->ny; y++)
			for (z = tz * EQ_T; z < (tz + 1) * EQ_T; z++)
				for (x = tx * EQ_T; x < (tx + 1) * EQ_T; x++)
					a->out[eq_at(g->ny, f, x, y, z)] =
						s[eq_sat(g, f, (long)x,
							 (long)y, (long)z)];
}

static void eq_setup(struct wl *w, const struct wl_opts *o)
{
	struct eq *q = wl_xmalloc(sizeof(*q));
	size_t g = o->size ? o->size : o->quick ? 32 : 128, t1 = 1, n, i;
	float *init;

	while (t1 * 2 * EQ_T <= g)
		t1 *= 2;		/* a power of two of tiles */
	q->tiles1 = t1;
	q->g = t1 * EQ_T;
	q->ny = o->quick ? 8 : 16;
	q->ntiles = t1 * t1;
	n = q->g * q->ny * q->g * EQ_F;
	init = wl_xmalloc(n * sizeof(float));
	for (i = 0; i < n; i++)
		init[i] = (float)(wl_hash01(i) * 2.0 - 1.0);
	w->data = q;
	w->nbuf = 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "A", n * sizeof(float), init };
	w->buf[1] = (struct wl_buf){ "B", n * sizeof(float), NULL };
	w->buf[1].init = wl_xmalloc(n * sizeof(float));
	memcpy(w->buf[1].init, init, n * sizeof(float));
	snprintf(w->desc, sizeof(w->desc), "grid=%zux%zux%zu fields=%d "
		 "halo=%d steps_per_phase=%d", q->g, q->ny, q->g, EQ_F, EQ_H,
		 EQ_STEPS);
}

static void eq_box(const struct eq *q, int d, int nd, struct eq_dev *p)
{
	size_t t, tx, tz;

	wl_split(q->ntiles, 1, d, nd, &p->t0, &p->t1);
	p->x0 = p->z0 = (long)q->g;
	p->x1 = p->z1 = 0;
	for (t = p->t0; t < p->t1; t++) {
		eq_unmorton(t, &tx, &tz);
		if ((long)(tx * EQ_T) < p->x0)
			p->x0 = (long)(tx * EQ_T);
		if ((long)((tx + 1) * EQ_T) > p->x1)
			p->x1 = (long)((tx + 1) * EQ_T);
		if ((long)(tz * EQ_T) < p->z0)
			p->z0 = (long)(tz * EQ_T);
		if ((long)((tz + 1) * EQ_T) > p->z1)
			p->z1 = (long)((tz + 1) * EQ_T);
	}
	p->ex0 = p->x0 - EQ_H > 0 ? p->x0 - EQ_H : 0;
	p->ez0 = p->z0 - EQ_H > 0 ? p->z0 - EQ_H : 0;
	p->ex1 = p->x1 + EQ_H < (long)q->g ? p->x1 + EQ_H : (long)q->g;
	p->ez1 = p->z1 + EQ_H < (long)q->g ? p->z1 + EQ_H : (long)q->g;
	p->g = q->g;
	p->ny = q->ny;
	p->tiles1 = q->tiles1;
}

static void *eq_dev_init(struct wl *w, int d, int nd)
{
	const struct eq *q = w->data;
	struct eq_dev *p = wl_host_alloc(sizeof(*p));
	size_t cells;

	eq_box(q, d, nd, p);
	cells = p->t1 > p->t0 ? (size_t)(p->ex1 - p->ex0) *
		(size_t)(p->ez1 - p->ez0) * q->ny * EQ_F : 1;
	p->s[0] = wl_host_alloc(cells * sizeof(float));
	p->s[1] = wl_host_alloc(cells * sizeof(float));
	return p;
}

static void eq_dev_free(struct wl *w, int d, void *priv)
{
	struct eq_dev *p = priv;

	(void)w;
	(void)d;
	wl_host_free(p->s[0]);
	wl_host_free(p->s[1]);
	wl_host_free(p);
}

static void eq_launch(const struct wl *w, int phase, int d, int nd,
		      void *const *buf, void *priv, gpsStream_t st)
{
	const struct eq_dev *p = priv;
	struct eq_args a = { .in = buf[phase], .out = buf[!phase], .g = p };
	unsigned int planes = (unsigned int)(p->ez1 - p->ez0);

	(void)w;
	(void)d;
	(void)nd;
	if (p->t1 <= p->t0)
		return;
#define EQ_ARGS	GPS_ARGS_LOCAL(&a, GPS_PTR(struct eq_args, in),		\
			 GPS_PTR(struct eq_args, out))
	wl_launch(eq_load_kernel, planes, EQ_ARGS, st);
	for (a.step = 0; a.step < EQ_STEPS; a.step++)
		wl_launch(eq_step_kernel, planes, EQ_ARGS, st);
	wl_launch(eq_store_kernel, (unsigned int)(p->t1 - p->t0), EQ_ARGS,
		  st);
#undef EQ_ARGS
}

static void eq_reads(const struct wl *w, int phase, int d, int nd,
		     struct wl_access *acc)
{
	const struct eq *q = w->data;
	struct eq_dev p;
	long z, y;
	size_t tx;
	int f;

	eq_box(q, d, nd, &p);
	if (p.t1 <= p.t0)
		return;
	for (f = 0; f < EQ_F; f++)
		for (z = p.ez0; z < p.ez1; z++)
			for (y = 0; y < (long)q->ny; y++)
				for (tx = (size_t)p.ex0 / EQ_T;
				     tx * EQ_T < (size_t)p.ex1; tx++) {
					long a = (long)(tx * EQ_T), b = a + EQ_T;

					if (a < p.ex0)
						a = p.ex0;
					if (b > p.ex1)
						b = p.ex1;
					wl_mark(acc, phase, eq_at(q->ny, f,
						(size_t)a, (size_t)y,
						(size_t)z) * 4,
						(size_t)(b - a) * 4);
				}
}

static void eq_writes(const struct wl *w, int phase, int d, int nd,
		      struct wl_access *acc)
{
	const struct eq *q = w->data;
	size_t t0, t1, tile = EQ_F * q->ny * EQ_T * EQ_T * 4;

	wl_split(q->ntiles, 1, d, nd, &t0, &t1);
	if (t1 > t0)
		wl_mark(acc, !phase, t0 * tile, (t1 - t0) * tile);
}

const struct wl_ops wl_b2reqwp = {
	.name = "b2reqwp",
	.setup = eq_setup,
	.dev_init = eq_dev_init,
	.dev_free = eq_dev_free,
	.launch = eq_launch,
	.reads = eq_reads,
	.writes = eq_writes,
};
