// SPDX-License-Identifier: MIT
/*
 * mvmul: Listing 1 of the GPS paper (MICRO'21), ported to libgpsu.
 *
 * A vector-matrix multiply iterated across devices: each device computes
 * a slice of the output vector, which every device reads in the next
 * multiply. mat, vec1 and vec2 are GPS allocations; tracking runs around
 * the first iteration, so that each device ends up subscribed to the
 * pages it touched (while the driver lacks tracking, every device stays
 * subscribed to everything, and the program says so).
 *
 * The result is checked against the same computation on one device; the
 * program exits 1 on any difference. It then prints the driver's per-node
 * traffic counters from /sys/kernel/debug/gps (when readable).
 *
 *   mvmul [-n mat_dim] [-i iterations] [-d devices] [-t threads/block]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glob.h>

#include "gpsu.h"

#define CHECK(call)							\
	do {								\
		gpsError_t err_ = (call);				\
		if (err_ != gpsSuccess) {				\
			fprintf(stderr, "mvmul: %s:%d: %s: %s\n",	\
				__FILE__, __LINE__, #call,		\
				gpsGetErrorString(err_));		\
			exit(2);					\
		}							\
	} while (0)

struct mvmul_args {
	const float *mat;	/* translated: rows read from the local replica */
	const float *invec;	/* translated */
	float *outvec;		/* translated: stores published at kernel end */
	int mat_dim;
	int row0;		/* first row of this device's slice */
	int rows;		/* rows in the slice */
};

/* __global__ void mvmul(float *invec, float *outvec, ...) */
static void mvmul(void *p)
{
	const struct mvmul_args *a = p;
	int tid = (int)(gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x);
	int row = a->row0 + tid;
	float acc = 0.0f;
	int i;

	if (tid >= a->rows)
		return;
	/* Stores to outvec in the GPS address space are forwarded to the
	 * replicas at each subscriber device. */
	for (i = 0; i < a->mat_dim; i++)
		acc += a->mat[(size_t)row * a->mat_dim + i] * a->invec[i];
	a->outvec[row] = acc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Launches one multiply on every device, then waits for all of them. */
static void step(int ndev, gpsStream_t *stream, int num_threads,
		 const float *mat, const float *in, float *out, int n)
{
	int rows_per = (n + ndev - 1) / ndev, device;

	for (device = 0; device < ndev; device++) {
		struct mvmul_args a = {
			.mat = mat, .invec = in, .outvec = out, .mat_dim = n,
			.row0 = device * rows_per,
		};
		int num_blocks;

		a.rows = n - a.row0 < rows_per ? n - a.row0 : rows_per;
		if (a.rows <= 0)
			continue;
		num_blocks = (a.rows + num_threads - 1) / num_threads;
		CHECK(gpsSetDevice(device));
		CHECK(gpsLaunchKernel(mvmul, gpsDim(num_blocks, 1, 1),
			gpsDim(num_threads, 1, 1),
			/* outvec, the only store, is translated: the
			 * kernel's end need fence this device alone */
			GPS_ARGS_LOCAL(&a, GPS_PTR(struct mvmul_args, mat),
				       GPS_PTR(struct mvmul_args, invec),
				       GPS_PTR(struct mvmul_args, outvec)),
			stream[device]));
	}
	/* the next multiply reads every slice: wait for every device */
	for (device = 0; device < ndev; device++) {
		CHECK(gpsSetDevice(device));
		CHECK(gpsStreamSynchronize(stream[device]));
	}
}

/* GPS pages of an allocation by number of subscribers (paper, fig. 9). */
static void report(const char *name, const void *p, size_t bytes, int ndev)
{
	static unsigned long long subs[1 << 16];
	size_t np, k;
	int hist[65] = { 0 };

	if (gpsMemGetSubscribers(p, bytes, subs, 1 << 16, &np) != gpsSuccess)
		return;
	for (k = 0; k < np && k < (1 << 16); k++)
		hist[__builtin_popcountll(subs[k])]++;
	printf("mvmul: %s: %zu GPS pages by subscriber count:", name, np);
	for (k = 1; k <= (size_t)ndev; k++)
		printf(" %zu:%d", k, hist[k]);
	printf("\n");
}

/* Runs the program on @ndev devices; returns the final vec1 (malloc). */
static float *run(int ndev, int n, int iters, int num_threads, double *secs,
		  int verbose)
{
	size_t mat_dim_size = (size_t)n * sizeof(float);
	gpsStream_t stream[64];
	float *mat, *vec1, *vec2, *host, *result;
	int iter, device, tracking = 0;
	size_t i, j;
	double t0;

	for (device = 0; device < ndev; device++) {
		CHECK(gpsSetDevice(device));
		CHECK(gpsStreamCreate(&stream[device]));
	}
	CHECK(gpsSetDevice(0));
	/* enable GPS for mat, vec1 and vec2 */
	CHECK(gpsMallocGPS((void **)&mat, (size_t)n * mat_dim_size,
			   gpsMemGPSAutomatic));
	CHECK(gpsMallocGPS((void **)&vec1, mat_dim_size, gpsMemGPSAutomatic));
	CHECK(gpsMallocGPS((void **)&vec2, mat_dim_size, gpsMemGPSAutomatic));
	CHECK(gpsMemset(vec2, 0, mat_dim_size));

	/* a row-stochastic matrix keeps the iterates bounded */
	host = malloc((size_t)n * mat_dim_size);
	if (!host)
		exit(2);
	for (i = 0; i < (size_t)n; i++) {
		float sum = 0.0f;

		for (j = 0; j < (size_t)n; j++) {
			host[i * n + j] = (float)((i * 7 + j * 13) % 17 + 1);
			sum += host[i * n + j];
		}
		for (j = 0; j < (size_t)n; j++)
			host[i * n + j] /= sum;
	}
	CHECK(gpsMemcpy(mat, host, (size_t)n * mat_dim_size,
			gpsMemcpyHostToDevice));
	for (i = 0; i < (size_t)n; i++)
		host[i] = (float)(i % 10);
	CHECK(gpsMemcpy(vec1, host, mat_dim_size, gpsMemcpyHostToDevice));

	t0 = now();
	for (iter = 0; iter < iters; iter++) {
		/* Automatic profiling: all devices are tentatively
		 * subscribed to all GPS pages at the start. */
		if (iter == 0) {
			gpsError_t err = gpsTrackingStart();

			if (err == gpsSuccess) {
				tracking = 1;
				if (verbose)
					printf("mvmul: tracking the first "
					       "iteration\n");
			}
			else if (err == gpsErrorNotSupported && verbose)
				printf("mvmul: tracking not supported by this "
				       "driver: falling back to subscribe-all "
				       "(every device keeps every page)\n");
			else if (err != gpsErrorNotSupported)
				CHECK(err);
		}
		step(ndev, stream, num_threads, mat, vec1, vec2, n);
		step(ndev, stream, num_threads, mat, vec2, vec1, n);
		/* devices are unsubscribed from pages they did not touch */
		if (iter == 0 && tracking)
			CHECK(gpsTrackingStop());
	}
	*secs = now() - t0;

	result = malloc(mat_dim_size);
	if (!result)
		exit(2);
	CHECK(gpsSetDevice(0));
	CHECK(gpsMemcpy(result, vec1, mat_dim_size, gpsMemcpyDeviceToHost));
	if (verbose && ndev > 1) {
		report("mat", mat, (size_t)n * mat_dim_size, ndev);
		report("vec1", vec1, mat_dim_size, ndev);
	}
	CHECK(gpsFree(mat));
	CHECK(gpsFree(vec1));
	CHECK(gpsFree(vec2));
	for (device = 0; device < ndev; device++) {
		CHECK(gpsSetDevice(device));
		CHECK(gpsStreamDestroy(stream[device]));
	}
	CHECK(gpsSetDevice(0));
	free(host);
	return result;
}

static void dump_file(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return;
	printf("--- %s\n", path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
}

/* The driver's per-node counters, when debugfs is mounted and readable. */
static void dump_traffic(void)
{
	glob_t g;
	size_t i;

	if (glob("/sys/kernel/debug/gps/node*/stats", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			dump_file(g.gl_pathv[i]);
		globfree(&g);
	}
	if (glob("/sys/kernel/debug/gps/node*/traffic", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			dump_file(g.gl_pathv[i]);
		globfree(&g);
	}
	dump_file("/sys/kernel/debug/gps/traffic");
	if (access("/sys/kernel/debug/gps", R_OK))
		printf("mvmul: /sys/kernel/debug/gps not readable: "
		       "no traffic counters\n");
}

int main(int argc, char **argv)
{
	int n = 512, iters = 3, ndev = 0, num_threads = 64, opt, count;
	double t1, tn;
	float *ref, *res;
	size_t i, bad = 0;

	while ((opt = getopt(argc, argv, "n:i:d:t:h")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'i': iters = atoi(optarg); break;
		case 'd': ndev = atoi(optarg); break;
		case 't': num_threads = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: mvmul [-n mat_dim] [-i iters] "
				"[-d devices] [-t threads/block]\n");
			return 2;
		}
	}
	CHECK(gpsGetDeviceCount(&count));
	if (ndev <= 0 || ndev > count)
		ndev = count;
	if (ndev > 64)
		ndev = 64;
	if (n <= 0 || iters <= 0 || num_threads <= 0 || num_threads > 1024) {
		fprintf(stderr, "mvmul: bad arguments\n");
		return 2;
	}
	printf("mvmul: mat_dim %d, %d iterations, %d device(s)\n", n, iters,
	       ndev);
	ref = run(1, n, iters, num_threads, &t1, 0);
	res = run(ndev, n, iters, num_threads, &tn, 1);
	for (i = 0; i < (size_t)n; i++)
		if (memcmp(&ref[i], &res[i], sizeof(float)))
			bad++;
	printf("mvmul: 1 device %.3f s, %d devices %.3f s\n", t1, ndev, tn);
	if (bad) {
		printf("mvmul: result check FAILED: %zu of %d elements differ "
		       "from the single-device run\n", bad, n);
	} else {
		printf("mvmul: result check PASSED: %d elements identical "
		       "to the single-device run (vec1[0] = %g)\n", n,
		       (double)res[0]);
	}
	dump_traffic();
	free(ref);
	free(res);
	return bad ? 1 : 0;
}
