// SPDX-License-Identifier: MIT
/*
 * threads: what a kernel thread costs (Documentation/library.rst, "Kernel
 * definitions"). One device, conventional memory, y = a * x + y over n
 * floats, all in one process:
 *
 *   plain_host      a plain C loop on the calling host thread
 *   plain_blocks    gpsLaunchKernel, one call per block doing a plain loop
 *                   over its chunk (the device's workers, no per-thread
 *                   cost): the reference of the ratios
 *   legacy_thread   gpsLaunchKernel, one kernel thread per element
 *   kernel_thread   GPS_KERNEL, one kernel thread per element
 *   kernel_stride   GPS_KERNEL, CUDA's grid-stride loop written out, 8
 *                   elements per thread: each thread strides over the
 *                   array before the next thread of its block starts
 *   kernel_stride_fewblocks  the same, one block per worker: each thread
 *                   strides the whole array
 *   kernel_gridloop GPS_KERNEL with GPS_GRID_STRIDE_LOOP, same grid as
 *                   kernel_stride: each thread a contiguous run
 *   kernel_gridloop_fewblocks  the same, one block per worker
 *   sync_switch     GPS_KERNEL_SYNC, ns per fiber switch (barrier loop)
 *
 *   threads [-n elements] [-r runs] [-R repetitions] [-d device]
 *
 * Each variant's run is paired with a run of plain_blocks just before it
 * (a slow spell of a shared host, or of a TCG guest on one, hits both),
 * and its ratio is the pair's. A repetition is -r such rounds of every
 * variant; it prints the median of its ratios per variant. The records
 * at the end are the medians over all rounds (*_ms, *_ns_per_elem,
 * *_ratio), with the range of the repetitions' medians.
 * The goals: kernel_thread within 2x, a grid-stride kernel
 * (kernel_gridloop) within 1.2x. Exit 1 if a result is wrong.
 */
#define GPSU_CUDA_NAMES
#define BENCH_NAME "threads"
#include "bench_common.h"

struct saxpy {
	const float *x;
	float *y;
	float alpha;
	unsigned int n;
	unsigned int chunk;	/* plain_blocks: elements per block */
};

static void saxpy_blocks(void *p)
{
	const struct saxpy *a = p;
	unsigned int i = gpsBlockIdx().x * a->chunk;
	unsigned int end = i + a->chunk < a->n ? i + a->chunk : a->n;

	for (; i < end; i++)
		a->y[i] += a->alpha * a->x[i];
}

static void saxpy_legacy(void *p)
{
	const struct saxpy *a = p;
	unsigned int i = gpsBlockIdx().x * gpsBlockDim().x + gpsThreadIdx().x;

	if (i < a->n)
		a->y[i] += a->alpha * a->x[i];
}

GPS_KERNEL(saxpy_thread, struct saxpy, a)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < a->n)
		a->y[i] += a->alpha * a->x[i];
}

GPS_KERNEL(saxpy_stride, struct saxpy, a)
{
	unsigned int i;

	for (i = blockIdx.x * blockDim.x + threadIdx.x; i < a->n;
	     i += gridDim.x * blockDim.x)
		a->y[i] += a->alpha * a->x[i];
}

GPS_KERNEL(saxpy_gridloop, struct saxpy, a)
{
	unsigned int i;

	GPS_GRID_STRIDE_LOOP(i, a->n)
		a->y[i] += a->alpha * a->x[i];
}

struct sw {
	int rounds;
};

GPS_KERNEL_SYNC(switcher, struct sw, a)
{
	int r;

	for (r = 0; r < a->rounds; r++)
		__syncthreads();
}

struct ctx {
	struct saxpy a;
	int variant;
	int workers;
};

static void one(void *p)
{
	struct ctx *c = p;
	struct saxpy *a = &c->a;
	unsigned int i, bs = 256, nb = (a->n + bs - 1) / bs;

	switch (c->variant) {
	case 0:
		for (i = 0; i < a->n; i++)
			a->y[i] += a->alpha * a->x[i];
		return;
	case 1:
		a->chunk = (a->n + c->workers * 4 - 1) / (c->workers * 4);
		CHECK(gpsLaunchKernel(saxpy_blocks,
				      gpsDim((a->n + a->chunk - 1) / a->chunk,
					     1, 1),
				      gpsDim(1, 1, 1), GPS_ARGS_RAW(a), NULL));
		break;
	case 2:
		CHECK(gpsLaunchKernel(saxpy_legacy, gpsDim(nb, 1, 1),
				      gpsDim(bs, 1, 1), GPS_ARGS_RAW(a),
				      NULL));
		break;
	case 3:
		CHECK(gpsLaunch(&saxpy_thread, gpsDim(nb, 1, 1),
				gpsDim(bs, 1, 1), GPS_ARGS_RAW(a), 0, NULL));
		break;
	case 4:
		/* a capped grid: 8 elements per kernel thread */
		CHECK(gpsLaunch(&saxpy_stride, gpsDim((nb + 7) / 8, 1, 1),
				gpsDim(bs, 1, 1), GPS_ARGS_RAW(a), 0, NULL));
		break;
	case 5:
		/* one block per worker: each thread strides the whole array */
		CHECK(gpsLaunch(&saxpy_stride, gpsDim(c->workers, 1, 1),
				gpsDim(bs, 1, 1), GPS_ARGS_RAW(a), 0, NULL));
		break;
	case 6:
		CHECK(gpsLaunch(&saxpy_gridloop, gpsDim((nb + 7) / 8, 1, 1),
				gpsDim(bs, 1, 1), GPS_ARGS_RAW(a), 0, NULL));
		break;
	case 7:
		CHECK(gpsLaunch(&saxpy_gridloop, gpsDim(c->workers, 1, 1),
				gpsDim(bs, 1, 1), GPS_ARGS_RAW(a), 0, NULL));
		break;
	}
	CHECK(gpsDeviceSynchronize());
}

#define NV 8

/* seconds of one run of variant @v */
static double timed(struct ctx *c, int v)
{
	double s;

	c->variant = v;
	s = bench_now();
	one(c);
	return bench_now() - s;
}

/* ns per fiber switch: a block of @bs threads, @rounds barriers each */
static double switch_ns(unsigned int bs, struct sw *sw)
{
	double ts;

	ts = bench_now();
	CHECK(gpsLaunch(&switcher, gpsDim(1, 1, 1), gpsDim(bs, 1, 1),
			GPS_ARGS_RAW(sw), 0, NULL));
	CHECK(gpsDeviceSynchronize());
	ts = bench_now() - ts;
	return ts * 1e9 / ((double)bs * sw->rounds);
}

int main(int argc, char **argv)
{
	static const char *names[NV] = { "plain_host", "plain_blocks",
		"legacy_thread", "kernel_thread", "kernel_stride",
		"kernel_stride_fewblocks", "kernel_gridloop",
		"kernel_gridloop_fewblocks" };
	unsigned int n = 1u << 22, i, bs = 256;
	int runs = 3, reps = 5, dev = 0, opt, v, r, k, nr, bad = 0;
	double *t, *ratio, *sws, *repm, *col;
	gpsDeviceProp prop;
	struct ctx c;
	struct sw sw = { 200 };
	float *x, *y;

	while ((opt = getopt(argc, argv, "n:r:R:d:h")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': runs = atoi(optarg); break;
		case 'R': reps = atoi(optarg); break;
		case 'd': dev = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: threads [-n elements] [-r runs] [-R repetitions] [-d device]\n");
			return 2;
		}
	}
	if (runs < 1 || reps < 1 || reps > 64) {
		fprintf(stderr, "threads: -r at least 1, -R 1 to 64\n");
		return 2;
	}
	nr = reps * runs;
	t = calloc((size_t)nr * NV, sizeof(*t));
	ratio = calloc((size_t)nr * NV, sizeof(*ratio));
	sws = calloc((size_t)reps, sizeof(*sws));
	repm = calloc((size_t)reps * NV, sizeof(*repm));
	col = calloc((size_t)nr, sizeof(*col));
	if (!t || !ratio || !sws || !repm || !col)
		return 2;
	CHECK(gpsSetDevice(dev));
	CHECK(gpsGetDeviceProperties(&prop, dev));
	CHECK(gpsMalloc((void **)&x, n * sizeof(float)));
	CHECK(gpsMalloc((void **)&y, n * sizeof(float)));
	for (i = 0; i < n; i++) {
		x[i] = (float)(i % 1000);
		y[i] = 0;
	}
	memset(&c, 0, sizeof(c));
	c.a.x = x;
	c.a.y = y;
	c.a.alpha = 0.5f;
	c.a.n = n;
	c.workers = prop.numCpus;
	printf("threads: device=%d cpus=%d n=%u runs=%d repetitions=%d\n",
	       dev, prop.numCpus, n, runs, reps);
	/* the fibers' stacks are mapped at the first block */
	(void)switch_ns(bs, &sw);
	for (k = 0; k < reps; k++) {
		for (r = k * runs; r < (k + 1) * runs; r++)
			for (v = 0; v < NV; v++) {
				double ref;

				if (v == 1)
					continue;
				ref = timed(&c, 1);
				t[v * nr + r] = timed(&c, v);
				t[1 * nr + r] = ref;
				ratio[v * nr + r] = t[v * nr + r] / ref;
				ratio[1 * nr + r] = 1;
			}
		sws[k] = switch_ns(bs, &sw);
		printf("threads: repetition=%d", k);
		for (v = 0; v < NV; v++) {
			memcpy(col, &ratio[v * nr + k * runs],
			       runs * sizeof(*col));
			repm[v * reps + k] = bench_median(col, runs);
			if (v != 1)
				printf(" %s_ratio=%.2f", names[v],
				       repm[v * reps + k]);
		}
		printf(" sync_switch_ns=%.1f\n", sws[k]);
	}
	/* each round: NV - 1 variants, each after a plain_blocks run, of
	 * y += 0.5 x */
	for (i = 0; i < n; i++)
		if (y[i] != 0.5f * (float)(i % 1000) * 2 * (NV - 1) * nr) {
			fprintf(stderr, "threads: y[%u] = %g, expected %g\n",
				i, y[i], 0.5 * (i % 1000) * 2 * (NV - 1) * nr);
			bad = 1;
			break;
		}
	for (v = 0; v < NV; v++) {
		double ms, rt, lo, hi;

		memcpy(col, &t[v * nr], nr * sizeof(*col));
		ms = bench_median(col, nr);
		memcpy(col, &ratio[v * nr], nr * sizeof(*col));
		rt = bench_median(col, nr);
		memcpy(col, &repm[v * reps], reps * sizeof(*col));
		(void)bench_median(col, reps);
		lo = col[0];
		hi = col[reps - 1];
		printf("threads: %s_ms=%.3f %s_ns_per_elem=%.3f %s_ratio=%.2f (median of %d rounds; repetitions from %.2f to %.2f)\n",
		       names[v], ms * 1e3, names[v], ms * 1e9 / n, names[v],
		       rt, nr, lo, hi);
	}
	printf("threads: sync_switch_ns=%.1f (median of %d; block %u, %d barriers)\n",
	       bench_median(sws, reps), reps, bs, sw.rounds);
	CHECK(gpsFree(x));
	CHECK(gpsFree(y));
	free(t);
	free(ratio);
	free(sws);
	free(repm);
	free(col);
	return bad;
}
