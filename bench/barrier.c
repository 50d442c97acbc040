// SPDX-License-Identifier: MIT
/*
 * barrier: kernels with block barriers (bench/barrier_kernels.h), as
 * fibers (GPS_KERNEL_SYNC) and as thread loops (GPS_KERNEL_PHASES), side
 * by side with the same work as a plain C loop, on one device
 * (Documentation/benchmarks.rst, "Barrier kernels"):
 *
 *   reduce       sum of -n ints (default 2^22) in blocks of 256, one
 *                element per thread, a barrier per level: reduce_seq
 *                (tid < s), reduce0 (tid % (2 * s), CUDA's first sample's
 *                shape), reduce0_mask (its test as a mask); reduce_reg (a grid-stride sum per thread, a grid of
 *                four blocks per worker, warp steps)
 *   matmul       C = A * B, -m x -m ints (default 512), tiles of 16 x 16
 *   hist         256 bins over 4 * n bytes, 4 blocks of 256 per worker
 *   fiber switch ns per switch: one block of 256 threads, 200 barriers
 *
 *   barrier [-n ints] [-m matrix side] [-r rounds] [-F]
 *
 * The plain loop (plain_*) runs on the device's workers as the kernels
 * do: a gpsLaunchKernel of one-thread blocks, each a plain loop over its
 * share (the host loop on one CPU is printed too). Each kernel run is
 * paired with a plain run just before it (a shared machine's slow spell
 * hits both) and its ratio is the pair's; the records are the medians
 * over -r rounds (default 5), and the ratio of the fastest run of each
 * (*_min_ratio: on a shared machine the runs that nothing preempted).
 * -F skips the fiber forms (slow: seconds).
 * Exit 1 if a kernel's result differs from the plain loop's.
 */
#define GPSU_CUDA_NAMES
#define BENCH_NAME "barrier"
#include "bench_common.h"
#include "barrier_kernels.h"

#define BS	256u
#define TILE	16u

struct plain {
	const int *in;
	const unsigned char *bytes;
	const int *A, *B;
	int *C;
	long long *sums;	/* per chunk */
	unsigned int *bins;	/* per chunk: TP_BINS each */
	unsigned int n, m, chunks;
	int what;		/* 0 sum, 1 matmul rows, 2 histogram */
};

/* one block: chunk blockIdx.x of the work, as a plain loop */
static void plain_chunk(void *p)
{
	const struct plain *a = p;
	unsigned int c = gpsBlockIdx().x, i, j, k;

	if (a->what == 0) {
		unsigned int lo = (unsigned int)((unsigned long long)a->n * c /
						 a->chunks);
		unsigned int hi = (unsigned int)((unsigned long long)a->n *
						 (c + 1) / a->chunks);
		long long s = 0;

		for (i = lo; i < hi; i++)
			s += a->in[i];
		a->sums[c] = s;
	} else if (a->what == 1) {
		unsigned int lo = a->m * c / a->chunks;
		unsigned int hi = a->m * (c + 1) / a->chunks;

		for (i = lo; i < hi; i++) {
			int *row = a->C + (size_t)i * a->m;

			for (j = 0; j < a->m; j++)
				row[j] = 0;
			for (k = 0; k < a->m; k++) {
				int x = a->A[(size_t)i * a->m + k];
				const int *b = a->B + (size_t)k * a->m;

				for (j = 0; j < a->m; j++)
					row[j] += x * b[j];
			}
		}
	} else {
		size_t nb = (size_t)a->n * 4;
		size_t lo = nb * c / a->chunks, hi = nb * (c + 1) / a->chunks;
		unsigned int *bins = a->bins + (size_t)c * TP_BINS;

		memset(bins, 0, TP_BINS * sizeof(*bins));
		for (; lo < hi; lo++)
			bins[a->bytes[lo]]++;
	}
}

static struct plain P;
static int workers;

static double plain_run(int what)
{
	double t = bench_now();

	P.what = what;
	CHECK(gpsLaunchKernel(plain_chunk, gpsDim(P.chunks, 1, 1),
			      gpsDim(1, 1, 1), GPS_ARGS_RAW(&P), NULL));
	CHECK(gpsDeviceSynchronize());
	return bench_now() - t;
}

static double kernel_run(const gpsKernel *k, gpsDim3 g, gpsDim3 b,
			 void *args, size_t argsize, size_t shared)
{
	gpsKernelArgs ka = { .data = args, .size = argsize };
	double t = bench_now();

	CHECK(gpsLaunch(k, g, b, &ka, shared, NULL));
	CHECK(gpsDeviceSynchronize());
	return bench_now() - t;
}

struct variant {
	const char *name;
	int what;		/* the plain loop it is paired with */
	const gpsKernel *k;
	int fiber;
};

static const struct variant variants[] = {
	{ "reduce_seq_phases", 0, &tp_reduce_seq_ph, 0 },
	{ "reduce_seq_fibers", 0, &tp_reduce_seq_fib, 1 },
	{ "reduce0_phases", 0, &tp_reduce0_ph, 0 },
	{ "reduce0_fibers", 0, &tp_reduce0_fib, 1 },
	{ "reduce0_mask_phases", 0, &tp_reduce0_mask_ph, 0 },
	{ "reduce_reg_phases", 0, &tp_reduce_reg_ph, 0 },
	{ "reduce_reg_fibers", 0, &tp_reduce_reg_fib, 1 },
	{ "matmul_phases", 1, &tp_matmul_ph, 0 },
	{ "matmul_fibers", 1, &tp_matmul_fib, 1 },
	{ "hist_phases", 2, &tp_hist_ph, 0 },
	{ "hist_fibers", 2, &tp_hist_fib, 1 },
};
#define NV (sizeof(variants) / sizeof(variants[0]))

static long long *ksums;
static int *kC;
static unsigned int *kbins;

/* runs variant @v once; returns seconds; *bad set on a wrong result */
static double variant_run(const struct variant *v, int *bad)
{
	unsigned int i, j, nb;
	double t;

	if (v->what == 0) {
		int reg = v->k == &tp_reduce_reg_ph ||
			  v->k == &tp_reduce_reg_fib;
		struct tp_reduce a = { P.in, ksums, P.n };
		long long s = 0, want = 0;

		nb = reg ? (unsigned int)workers * 4 : (P.n + BS - 1) / BS;
		t = kernel_run(v->k, gpsDim(nb, 1, 1), gpsDim(BS, 1, 1), &a,
			       sizeof(a), BS * sizeof(long long));
		for (i = 0; i < nb; i++)
			s += ksums[i];
		for (i = 0; i < P.chunks; i++)
			want += P.sums[i];
		if (s != want)
			*bad = 1;
		return t;
	}
	if (v->what == 1) {
		struct tp_matmul a = { P.A, P.B, kC, P.m, P.m, P.m, TILE };

		nb = (P.m + TILE - 1) / TILE;
		t = kernel_run(v->k, gpsDim(nb, nb, 1), gpsDim(TILE, TILE, 1),
			       &a, sizeof(a), 2 * TILE * TILE * sizeof(int));
		if (memcmp(kC, P.C, (size_t)P.m * P.m * sizeof(int)))
			*bad = 1;
		return t;
	}
	{
		struct tp_hist a = { P.bytes, kbins, P.n * 4 };

		memset(kbins, 0, TP_BINS * sizeof(*kbins));
		t = kernel_run(v->k, gpsDim((unsigned int)workers * 4, 1, 1),
			       gpsDim(BS, 1, 1), &a, sizeof(a),
			       TP_BINS * sizeof(unsigned int));
		for (i = 0; i < TP_BINS; i++) {
			unsigned int want = 0;

			for (j = 0; j < P.chunks; j++)
				want += P.bins[(size_t)j * TP_BINS + i];
			if (kbins[i] != want)
				*bad = 1;
		}
		return t;
	}
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

/* ns per fiber switch: one block of BS threads, 200 barriers each */
static double switch_ns(void)
{
	struct sw sw = { 200 };
	double t = kernel_run(&switcher, gpsDim(1, 1, 1), gpsDim(BS, 1, 1),
			      &sw, sizeof(sw), 0);

	return t * 1e9 / ((double)BS * sw.rounds);
}

int main(int argc, char **argv)
{
	unsigned int n = 1u << 22, m = 512, i, x = 1;
	int rounds = 5, nofib = 0, opt, r, bad = 0;
	double *tk, *tp, *ratio, *col, host_ms, ts;
	gpsDeviceProp prop;
	size_t v;

	while ((opt = getopt(argc, argv, "n:m:r:Fh")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'm': m = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'F': nofib = 1; break;
		default:
			fprintf(stderr, "usage: barrier [-n ints] [-m matrix side] [-r rounds] [-F]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 1000 || n < 1 || n > (1u << 28) ||
	    m < 1 || m > 4096) {
		fprintf(stderr, "barrier: -r 1 to 1000, -n 1 to 2^28, -m 1 to 4096\n");
		return 2;
	}
	CHECK(gpsSetDevice(0));
	CHECK(gpsGetDeviceProperties(&prop, 0));
	workers = prop.numCpus;
	P.n = n;
	P.m = m;
	P.chunks = (unsigned int)workers * 4;
	CHECK(gpsMalloc((void **)&P.in, n * sizeof(int)));
	CHECK(gpsMalloc((void **)&P.bytes, (size_t)n * 4));
	CHECK(gpsMalloc((void **)&P.A, (size_t)m * m * sizeof(int)));
	CHECK(gpsMalloc((void **)&P.B, (size_t)m * m * sizeof(int)));
	CHECK(gpsMalloc((void **)&P.C, (size_t)m * m * sizeof(int)));
	CHECK(gpsMalloc((void **)&kC, (size_t)m * m * sizeof(int)));
	CHECK(gpsMalloc((void **)&P.sums, P.chunks * sizeof(long long)));
	CHECK(gpsMalloc((void **)&P.bins,
			(size_t)P.chunks * TP_BINS * sizeof(unsigned int)));
	CHECK(gpsMalloc((void **)&ksums, ((n + BS - 1) / BS) *
			sizeof(long long)));
	CHECK(gpsMalloc((void **)&kbins, TP_BINS * sizeof(unsigned int)));
	for (i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		((int *)P.in)[i] = (int)(x % 2001) - 1000;
	}
	for (i = 0; i < n * 4; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		((unsigned char *)P.bytes)[i] = (unsigned char)(x % 256 &
								(x >> 8) % 256);
	}
	for (i = 0; i < m * m; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		((int *)P.A)[i] = (int)(x % 201) - 100;
		((int *)P.B)[i] = (int)(x >> 16) % 201 - 100;
	}
	tk = calloc((size_t)rounds * NV, sizeof(*tk));
	tp = calloc((size_t)rounds * NV, sizeof(*tp));
	ratio = calloc((size_t)rounds * NV, sizeof(*ratio));
	col = calloc((size_t)rounds, sizeof(*col));
	if (!tk || !tp || !ratio || !col)
		return 2;
	printf("barrier: cpus=%d n=%u m=%u block=%u tile=%u rounds=%d\n",
	       workers, n, m, BS, TILE, rounds);
	/* warm-up: pools, fiber stacks, the plain results the kernels are
	 * checked against */
	for (v = 0; v < 3; v++)
		(void)plain_run((int)v);
	(void)switch_ns();
	for (r = 0; r < rounds; r++)
		for (v = 0; v < NV; v++) {
			if (nofib && variants[v].fiber)
				continue;
			tp[v * rounds + r] = plain_run(variants[v].what);
			tk[v * rounds + r] = variant_run(&variants[v], &bad);
			ratio[v * rounds + r] = tk[v * rounds + r] /
						tp[v * rounds + r];
		}
	for (v = 0; v < NV; v++) {
		double k_ms, p_ms, rt, k_min, p_min;

		if (nofib && variants[v].fiber)
			continue;
		memcpy(col, &tk[v * rounds], rounds * sizeof(*col));
		k_ms = bench_median(col, rounds) * 1e3;
		k_min = col[0] * 1e3;
		memcpy(col, &tp[v * rounds], rounds * sizeof(*col));
		p_ms = bench_median(col, rounds) * 1e3;
		p_min = col[0] * 1e3;
		memcpy(col, &ratio[v * rounds], rounds * sizeof(*col));
		rt = bench_median(col, rounds);
		printf("barrier: %s_ms=%.3f plain_ms=%.3f %s_ratio=%.2f (median of %d pairs; ratios %.2f to %.2f) %s_min_ratio=%.2f (fastest runs: %.3f / %.3f ms)\n",
		       variants[v].name, k_ms, p_ms, variants[v].name, rt,
		       rounds, col[0], col[rounds - 1], variants[v].name,
		       k_min / p_min, k_min, p_min);
	}
	/* the same sum as one plain loop on the calling thread */
	for (r = 0; r < rounds; r++) {
		volatile long long sink;
		long long s = 0;

		ts = bench_now();
		for (i = 0; i < n; i++)
			s += P.in[i];
		sink = s;
		(void)sink;
		col[r] = bench_now() - ts;
	}
	host_ms = bench_median(col, rounds) * 1e3;
	printf("barrier: reduce_host_loop_ms=%.3f (one CPU, median of %d)\n",
	       host_ms, rounds);
	for (r = 0; r < rounds; r++)
		col[r] = switch_ns();
	printf("barrier: fiber_switch_ns=%.1f (median of %d; block %u, 200 barriers)\n",
	       bench_median(col, rounds), rounds, BS);
	if (bad)
		fprintf(stderr, "barrier: a kernel's result differs from the plain loop's\n");
	return bad;
}
