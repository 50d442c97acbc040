// SPDX-License-Identifier: MIT
/*
 * threads: what a kernel thread costs (Documentation/library.rst, "Kernel
 * definitions"). One device, conventional memory, y = a * x + y over n
 * floats, each variant the best of several runs (the variants take
 * turns), all in one process:
 *
 *   plain_host      a plain C loop on the calling host thread
 *   plain_blocks    gpsLaunchKernel, one call per block doing a plain loop
 *                   over its chunk (the device's workers, no per-thread
 *                   cost): the reference of the ratios
 *   legacy_thread   gpsLaunchKernel, one kernel thread per element
 *   kernel_thread   GPS_KERNEL, one kernel thread per element
 *   kernel_stride   GPS_KERNEL, grid-stride loop, 8 elements per thread
 *   kernel_stride_fewblocks  the same, one block per worker: each thread
 *                   strides the whole array before the next runs (the
 *                   threads of a block run one after another on a CPU)
 *   sync_switch     GPS_KERNEL_SYNC, ns per fiber switch (barrier loop)
 *
 *   threads [-n elements] [-r runs] [-d device]
 *
 * Prints key=value records; the ratios *_ratio are times over
 * plain_blocks (the goals: kernel_thread within 2x, kernel_stride
 * within 1.2x). Exit 1 if a result is wrong.
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
	}
	CHECK(gpsDeviceSynchronize());
}

int main(int argc, char **argv)
{
	static const char *names[] = { "plain_host", "plain_blocks",
		"legacy_thread", "kernel_thread", "kernel_stride",
		"kernel_stride_fewblocks" };
	unsigned int n = 1u << 22, i;
	int runs = 5, dev = 0, opt, v, r, bad = 0;
	double t[6], ref;
	gpsDeviceProp prop;
	struct ctx c;
	struct sw sw = { 200 };
	float *x, *y;

	while ((opt = getopt(argc, argv, "n:r:d:h")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': runs = atoi(optarg); break;
		case 'd': dev = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: threads [-n elements] [-r runs] [-d device]\n");
			return 2;
		}
	}
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
	/* the variants take turns, so that a slow spell of a shared host
	 * hits them all; each keeps its best run */
	for (v = 0; v < 6; v++)
		t[v] = 1e30;
	for (r = 0; r < runs; r++)
		for (v = 0; v < 6; v++) {
			double s;

			c.variant = v;
			s = bench_now();
			one(&c);
			s = bench_now() - s;
			if (s < t[v])
				t[v] = s;
		}
	/* 6 variants x (runs) passes of y += 0.5 x */
	for (i = 0; i < n; i++)
		if (y[i] != 0.5f * (float)(i % 1000) * 6 * runs) {
			fprintf(stderr, "threads: y[%u] = %g, expected %g\n",
				i, y[i], 0.5 * (i % 1000) * 6 * runs);
			bad = 1;
			break;
		}
	printf("threads: device=%d cpus=%d n=%u runs=%d\n", dev,
	       prop.numCpus, n, runs);
	ref = t[1];
	for (v = 0; v < 6; v++)
		printf("threads: %s_ms=%.3f %s_ns_per_elem=%.3f %s_ratio=%.2f\n",
		       names[v], t[v] * 1e3, names[v], t[v] * 1e9 / n,
		       names[v], t[v] / ref);
	{
		double ts;
		unsigned int bs = 256;

		CHECK(gpsLaunch(&switcher, gpsDim(1, 1, 1), gpsDim(bs, 1, 1),
				GPS_ARGS_RAW(&sw), 0, NULL));
		CHECK(gpsDeviceSynchronize());
		ts = bench_now();
		CHECK(gpsLaunch(&switcher, gpsDim(1, 1, 1), gpsDim(bs, 1, 1),
				GPS_ARGS_RAW(&sw), 0, NULL));
		CHECK(gpsDeviceSynchronize());
		ts = bench_now() - ts;
		printf("threads: sync_switch_ns=%.1f (block %u, %d barriers)\n",
		       ts * 1e9 / ((double)bs * sw.rounds), bs, sw.rounds);
	}
	CHECK(gpsFree(x));
	CHECK(gpsFree(y));
	return bad;
}
