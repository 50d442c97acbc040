// SPDX-License-Identifier: MIT
/*
 * transpose: the shared-memory matrix transpose and block reduction of
 * CUDA's samples and "efficient matrix transpose" write-ups, ported to
 * libgpsu (written here from the algorithm).
 *
 * Transpose: each block of TILE x ROWS threads loads a TILE x TILE tile of
 * the input into shared memory (rows read along x, so the loads are
 * contiguous), waits at a barrier, and writes the tile out transposed
 * (again along x, so the stores are contiguous too). The tile has one
 * extra column, as on a GPU, where it keeps the column reads off one bank.
 * The grid's rows of tiles are split across the devices; every device
 * reads the GPS input from its own replica and writes its own tiles of
 * the GPS output.
 *
 * Reduction: each block sums BLOCK elements of the output with a tree in
 * dynamic shared memory (a barrier per level), and thread 0 adds the
 * block's sum to a device-scope atomic double in conventional memory.
 *
 * Both are checked against a plain C reference; exit 1 on a mismatch.
 *
 *   transpose [-n size] [-d devices]
 */
#define _POSIX_C_SOURCE 200809L
#define GPSU_CUDA_NAMES
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpsu.h"

#define CHECK(call)							\
	do {								\
		gpsError_t err_ = (call);				\
		if (err_ != gpsSuccess) {				\
			fprintf(stderr, "transpose: %s:%d: %s: %s\n",	\
				__FILE__, __LINE__, #call,		\
				gpsGetErrorString(err_));		\
			exit(2);					\
		}							\
	} while (0)

#define TILE	32
#define ROWS	8
#define BLOCK	256

struct tr_args {
	const float *in;	/* n x n, translated */
	float *out;		/* n x n, translated */
	unsigned int n;
	unsigned int row0;	/* this device's first row of tiles */
};

struct tile {
	float t[TILE][TILE + 1];
};

GPS_KERNEL_SYNC_SHARED(transpose, struct tr_args, a, struct tile, s)
{
	unsigned int bx = blockIdx.x, by = blockIdx.y + a->row0;
	unsigned int x = bx * TILE + threadIdx.x;
	unsigned int y = by * TILE + threadIdx.y;
	unsigned int j;

	for (j = 0; j < TILE; j += ROWS)
		if (x < a->n && y + j < a->n)
			s->t[threadIdx.y + j][threadIdx.x] =
				a->in[(size_t)(y + j) * a->n + x];
	__syncthreads();
	/* the transposed tile: block (bx, by) goes to (by, bx) */
	x = by * TILE + threadIdx.x;
	y = bx * TILE + threadIdx.y;
	for (j = 0; j < TILE; j += ROWS)
		if (x < a->n && y + j < a->n)
			a->out[(size_t)(y + j) * a->n + x] =
				s->t[threadIdx.x][threadIdx.y + j];
}

struct red_args {
	const float *in;	/* translated */
	size_t first, count;	/* this device's elements */
	double *sum;		/* conventional memory */
};

GPS_KERNEL_SYNC(block_sum, struct red_args, a)
{
	double *part = gpsSharedMem();
	unsigned int t = threadIdx.x, half;
	size_t i = a->first + (size_t)blockIdx.x * blockDim.x + t;

	part[t] = i < a->first + a->count ? a->in[i] : 0.0;
	__syncthreads();
	for (half = blockDim.x / 2; half; half /= 2) {
		if (t < half)
			part[t] += part[t + half];
		__syncthreads();
	}
	if (t == 0)
		atomicAdd(a->sum, part[0]);
}

int main(int argc, char **argv)
{
	unsigned int n = 1000, tiles, per, d0;
	int ndev = 0, want = 0, opt, d, bad = 0;
	size_t i, j, nn;
	float *in, *out;
	double *sum, ref = 0;

	while ((opt = getopt(argc, argv, "n:d:h")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': want = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: transpose [-n size] [-d devices]\n");
			return 2;
		}
	}
	CHECK(gpsGetDeviceCount(&ndev));
	if (want > 0 && want < ndev)
		ndev = want;
	nn = (size_t)n * n;
	CHECK(gpsMallocGPS((void **)&in, nn * sizeof(float),
			   gpsMemGPSAutomatic));
	CHECK(gpsMallocGPS((void **)&out, nn * sizeof(float),
			   gpsMemGPSAutomatic));
	CHECK(gpsMalloc((void **)&sum, sizeof(*sum)));
	*sum = 0;
	for (i = 0; i < nn; i++)
		in[i] = (float)((i * 7919) % 1000) / 8.0f;	/* exact sums */
	for (i = 0; i < nn; i++)
		ref += in[i];

	tiles = (n + TILE - 1) / TILE;
	per = (tiles + (unsigned int)ndev - 1) / (unsigned int)ndev;
	for (d = 0; d < ndev; d++) {
		struct tr_args a = { in, out, n, 0 };

		d0 = (unsigned int)d * per;
		if (d0 >= tiles)
			break;
		a.row0 = d0;
		CHECK(gpsSetDevice(d));
		CHECK(gpsLaunch(&transpose,
				gpsDim(tiles, d0 + per > tiles ? tiles - d0 : per, 1),
				gpsDim(TILE, ROWS, 1),
				GPS_ARGS(&a, GPS_PTR(struct tr_args, in),
					 GPS_PTR(struct tr_args, out)),
				0, NULL));
	}
	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsDeviceSynchronize());
	}
	for (d = 0; d < ndev; d++) {
		size_t chunk = (nn + (size_t)ndev - 1) / (size_t)ndev;
		struct red_args r = { out, (size_t)d * chunk, chunk, sum };

		if (r.first >= nn)
			break;
		if (r.first + r.count > nn)
			r.count = nn - r.first;
		CHECK(gpsSetDevice(d));
		CHECK(gpsLaunch(&block_sum,
				gpsDim((unsigned int)((r.count + BLOCK - 1) / BLOCK),
				       1, 1),
				gpsDim(BLOCK, 1, 1),
				GPS_ARGS(&r, GPS_PTR(struct red_args, in)),
				BLOCK * sizeof(double), NULL));
	}
	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsDeviceSynchronize());
	}

	for (i = 0; i < n && !bad; i++)
		for (j = 0; j < n; j++)
			if (out[j * n + i] != in[i * n + j]) {
				fprintf(stderr, "transpose: out[%zu][%zu] = %g, expected %g\n",
					j, i, out[j * n + i], in[i * n + j]);
				bad = 1;
				break;
			}
	if (*sum != ref) {
		fprintf(stderr, "transpose: sum %.17g, expected %.17g\n",
			*sum, ref);
		bad = 1;
	}
	printf("transpose: n=%u devices=%d transpose=%s sum=%s\n", n, ndev,
	       bad ? "MISMATCH" : "ok", *sum == ref ? "ok" : "MISMATCH");
	CHECK(gpsFree(in));
	CHECK(gpsFree(out));
	CHECK(gpsFree(sum));
	return bad;
}
