// SPDX-License-Identifier: MIT
/*
 * jacobi: Jacobi iterations x <- D^-1 (b - R x) for the five-point
 * Laplacian of a rows x cols grid with fixed borders (b = 0, D = 4: each
 * interior point becomes the mean of its four neighbours), the banded,
 * diagonally dominant system of PROACT's Jacobi with a half-bandwidth of
 * one grid row.  Split by rows; a device reads one halo row of each
 * neighbour: peer-to-peer, two subscribers per shared page (Fig. 9).
 * Double-buffered (A -> B, B -> A): one thread per row.  Bit for bit.
 *
 * Default 64 x 16384 floats (4 MiB per array), quick 16 x 16384: one row
 * is one 64 KiB GPS page.  -r rows, -c cols.
 */
#include "../workload.h"

struct jacobi {
	size_t rows, cols;
};

struct jacobi_args {
	const float *in;
	float *out;
	size_t r0, rows, cols;
};

static void jacobi_kernel(void *p)
{
	const struct jacobi_args *a = p;
	size_t r = a->r0 + gpsBlockIdx().x, c, C = a->cols;
	const float *in = a->in;
	float *out = a->out;

	if (r == 0 || r == a->rows - 1) {
		memcpy(out + r * C, in + r * C, C * sizeof(float));
		return;
	}
	out[r * C] = in[r * C];
	for (c = 1; c < C - 1; c++)
		out[r * C + c] = 0.25f * (in[(r - 1) * C + c] +
					  in[(r + 1) * C + c] +
					  in[r * C + c - 1] + in[r * C + c + 1]);
	out[r * C + C - 1] = in[r * C + C - 1];
}

static void jacobi_setup(struct wl *w, const struct wl_opts *o)
{
	struct jacobi *j = wl_xmalloc(sizeof(*j));
	size_t i, n;
	float *init;

	j->rows = o->rows ? o->rows : o->quick ? 16 : 64;
	j->cols = o->cols ? o->cols : 16384;
	if (j->rows < 3)
		j->rows = 3;
	if (j->cols < 3)
		j->cols = 3;
	n = j->rows * j->cols;
	init = wl_xmalloc(n * sizeof(float));
	for (i = 0; i < n; i++)
		init[i] = (float)((i * 2654435761u) % 1000);
	w->data = j;
	w->nbuf = 2;
	w->nphases = 2;
	w->buf[0] = (struct wl_buf){ "A", n * sizeof(float), init };
	w->buf[1] = (struct wl_buf){ "B", n * sizeof(float), NULL };
	w->buf[1].init = wl_xmalloc(n * sizeof(float));
	memcpy(w->buf[1].init, init, n * sizeof(float));
	snprintf(w->desc, sizeof(w->desc), "rows=%zu cols=%zu", j->rows,
		 j->cols);
}

static void jacobi_rows(const struct jacobi *j, int d, int nd, size_t *r0,
			size_t *r1)
{
	wl_split(j->rows, 1, d, nd, r0, r1);
}

static void jacobi_launch(const struct wl *w, int phase, int d, int nd,
			  void *const *buf, void *priv, gpsStream_t s)
{
	const struct jacobi *j = w->data;
	struct jacobi_args a = {
		.in = buf[phase], .out = buf[!phase],
		.rows = j->rows, .cols = j->cols,
	};
	size_t r1;

	(void)priv;
	jacobi_rows(j, d, nd, &a.r0, &r1);
	if (r1 > a.r0)
		wl_launch(jacobi_kernel, (unsigned int)(r1 - a.r0),
			  GPS_ARGS_LOCAL(&a, GPS_PTR(struct jacobi_args, in),
				   GPS_PTR(struct jacobi_args, out)), s);
}

static void jacobi_reads(const struct wl *w, int phase, int d, int nd,
			 struct wl_access *acc)
{
	const struct jacobi *j = w->data;
	size_t r0, r1, row = j->cols * sizeof(float);

	jacobi_rows(j, d, nd, &r0, &r1);
	if (r0 >= r1)
		return;
	if (r0 > 0)
		r0--;
	if (r1 < j->rows)
		r1++;
	wl_mark(acc, phase, r0 * row, (r1 - r0) * row);
}

static void jacobi_writes(const struct wl *w, int phase, int d, int nd,
			  struct wl_access *acc)
{
	const struct jacobi *j = w->data;
	size_t r0, r1, row = j->cols * sizeof(float);

	jacobi_rows(j, d, nd, &r0, &r1);
	if (r0 < r1)
		wl_mark(acc, !phase, r0 * row, (r1 - r0) * row);
}

const struct wl_ops wl_jacobi = {
	.name = "jacobi",
	.setup = jacobi_setup,
	.launch = jacobi_launch,
	.reads = jacobi_reads,
	.writes = jacobi_writes,
};
