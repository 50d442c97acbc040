// SPDX-License-Identifier: MIT
/*
 * halo: a 1-D three-point stencil split across devices, with manual
 * subscriptions.
 *
 * Two GPS arrays (manual flag: only the home device subscribes at first)
 * are cut into one slice of whole GPS pages per device. Each device
 * subscribes to its own slice and to the boundary page of each neighbour
 * (the halo), then the home device drops the pages it no longer needs, so
 * that every store is published only to the devices that read it. Each
 * iteration every device updates its slice, reading its neighbours'
 * boundary cells from its local replicas; the kernel's end publishes the
 * new boundary cells to the neighbours.
 *
 * The result is compared with the same program on one device; the exit
 * status is 1 on any difference.
 *
 *   halo [-p pages per device] [-i iterations] [-d devices]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpsu.h"

#define CHECK(call)							\
	do {								\
		gpsError_t err_ = (call);				\
		if (err_ != gpsSuccess) {				\
			fprintf(stderr, "halo: %s:%d: %s: %s\n",	\
				__FILE__, __LINE__, #call,		\
				gpsGetErrorString(err_));		\
			exit(2);					\
		}							\
	} while (0)

struct halo_args {
	const float *in;	/* translated */
	float *out;		/* translated */
	long first, count;	/* this device's cells */
	long total;		/* cells in the array */
};

static void stencil(void *p)
{
	const struct halo_args *a = p;
	long i = a->first + (long)(gpsBlockIdx().x * gpsBlockDim().x +
				   gpsThreadIdx().x);

	if (i >= a->first + a->count)
		return;
	if (i == 0 || i == a->total - 1) {
		a->out[i] = a->in[i];	/* fixed boundary */
		return;
	}
	a->out[i] = (a->in[i - 1] + a->in[i] + a->in[i + 1]) / 3.0f;
}

/* Subscribes device d to its slice plus one neighbour page each side. */
static void subscribe_halo(float *arr, int ndev, size_t slice, size_t page,
			   size_t bytes)
{
	int d;

	for (d = 0; d < ndev; d++) {
		size_t lo = d * slice, hi = lo + slice;

		if (lo >= page)
			lo -= page;
		hi = hi + page < bytes ? hi + page : bytes;
		CHECK(gpsMemAdvise((char *)arr + lo, hi - lo,
				   gpsMemAdviseGPSSubscribe, d));
	}
	/* the home device (0) keeps only its own slice and halo */
	if (ndev > 1 && slice + page < bytes)
		CHECK(gpsMemAdvise((char *)arr + slice + page,
				   bytes - slice - page,
				   gpsMemAdviseGPSUnsubscribe, 0));
}

static void report_subscriptions(const char *name, float *arr, size_t bytes,
				 int ndev)
{
	unsigned long long subs[4096];
	size_t np, k;
	int hist[65] = { 0 };

	if (gpsMemGetSubscribers(arr, bytes, subs, 4096, &np) != gpsSuccess)
		return;
	for (k = 0; k < np && k < 4096; k++)
		hist[__builtin_popcountll(subs[k])]++;
	printf("halo: %s: %zu pages by subscriber count:", name, np);
	for (k = 1; k <= (size_t)ndev; k++)
		printf(" %zu:%d", k, hist[k]);
	printf("\n");
}

static float *run(int ndev, int pages_per_dev, int iters, int ndev_layout,
		  int verbose)
{
	gpsPointerAttributes at;
	gpsStream_t stream[64];
	size_t page, slice, bytes, cells;
	float *a, *b, *host;
	int iter, d;
	size_t i;

	CHECK(gpsSetDevice(0));
	/* probe the GPS page size with a one-byte allocation */
	CHECK(gpsMallocGPS((void **)&a, 1, gpsMemGPSManual));
	CHECK(gpsPointerGetAttributes(&at, a));
	CHECK(gpsFree(a));
	page = at.gpsPageSize;
	/* the same array for every device count: ndev_layout slices */
	slice = (size_t)pages_per_dev * page;
	bytes = slice * ndev_layout;
	cells = bytes / sizeof(float);
	slice = bytes / ndev;	/* this run's slices (whole pages) */

	CHECK(gpsMallocGPS((void **)&a, bytes, gpsMemGPSManual));
	CHECK(gpsMallocGPS((void **)&b, bytes, gpsMemGPSManual));
	subscribe_halo(a, ndev, slice, page, bytes);
	subscribe_halo(b, ndev, slice, page, bytes);
	if (verbose)
		report_subscriptions("a", a, bytes, ndev);

	host = malloc(bytes);
	if (!host)
		exit(2);
	for (i = 0; i < cells; i++)
		host[i] = (float)((i * 2654435761u) % 1000);
	CHECK(gpsMemcpy(a, host, bytes, gpsMemcpyHostToDevice));
	CHECK(gpsMemset(b, 0, bytes));

	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamCreate(&stream[d]));
	}
	for (iter = 0; iter < iters; iter++) {
		for (d = 0; d < ndev; d++) {
			struct halo_args args = {
				.in = a, .out = b,
				.first = (long)(d * slice / sizeof(float)),
				.count = (long)(slice / sizeof(float)),
				.total = (long)cells,
			};
			unsigned int threads = 256;
			unsigned int blocks = (unsigned int)
				((args.count + threads - 1) / threads);

			CHECK(gpsSetDevice(d));
			CHECK(gpsLaunchKernel(stencil, gpsDim(blocks, 1, 1),
				gpsDim(threads, 1, 1),
				/* stores only through out, translated */
				GPS_ARGS_LOCAL(&args,
					GPS_PTR(struct halo_args, in),
					GPS_PTR(struct halo_args, out)),
				stream[d]));
		}
		/* every device's boundary must be published before the
		 * next sweep reads it */
		for (d = 0; d < ndev; d++) {
			CHECK(gpsSetDevice(d));
			CHECK(gpsStreamSynchronize(stream[d]));
		}
		{
			float *t = a;

			a = b;
			b = t;
		}
	}
	CHECK(gpsSetDevice(0));
	CHECK(gpsMemcpy(host, a, bytes, gpsMemcpyDeviceToHost));
	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamDestroy(stream[d]));
	}
	CHECK(gpsSetDevice(0));
	CHECK(gpsFree(a));
	CHECK(gpsFree(b));
	return host;
}

int main(int argc, char **argv)
{
	int pages = 4, iters = 20, ndev = 0, count, opt;
	size_t i, n, bad = 0;
	float *ref, *res;
	gpsPointerAttributes at;
	void *probe;

	while ((opt = getopt(argc, argv, "p:i:d:h")) != -1) {
		switch (opt) {
		case 'p': pages = atoi(optarg); break;
		case 'i': iters = atoi(optarg); break;
		case 'd': ndev = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: halo [-p pages/device] "
				"[-i iterations] [-d devices]\n");
			return 2;
		}
	}
	CHECK(gpsGetDeviceCount(&count));
	if (ndev <= 0 || ndev > count)
		ndev = count;
	if (ndev > 64)
		ndev = 64;
	if (pages <= 0 || iters <= 0) {
		fprintf(stderr, "halo: bad arguments\n");
		return 2;
	}
	printf("halo: %d device(s), %d GPS pages per device, %d iterations\n",
	       ndev, pages, iters);
	ref = run(1, pages, iters, ndev, 0);
	res = run(ndev, pages, iters, ndev, 1);
	CHECK(gpsMallocGPS(&probe, 1, 0));
	CHECK(gpsPointerGetAttributes(&at, probe));
	CHECK(gpsFree(probe));
	n = (size_t)pages * at.gpsPageSize * ndev / sizeof(float);
	for (i = 0; i < n; i++)
		if (memcmp(&ref[i], &res[i], sizeof(float)))
			bad++;
	if (bad)
		printf("halo: result check FAILED: %zu of %zu cells differ "
		       "from the single-device run\n", bad, n);
	else
		printf("halo: result check PASSED: %zu cells identical to the "
		       "single-device run\n", n);
	free(ref);
	free(res);
	return bad ? 1 : 0;
}
