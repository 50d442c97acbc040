// SPDX-License-Identifier: MIT
/*
 * phase: what a phase costs, the fixed part. Every device launches a
 * kernel on its own stream (one block per worker) that stores one word
 * into each of -p 4 KiB pages of its own slice of an allocation, then
 * every stream is synchronized: the loop of every workload of paradigms,
 * with almost no work in it. Two memories, run in turns (a slow spell of
 * a shared machine hits both):
 *
 *   plain    conventional memory (gpsMalloc): launches and waits alone
 *   gps      an automatic GPS allocation of 4 KiB GPS pages, every
 *            device subscribed: each phase also captures, diffs and
 *            pushes -p pages per device to every other device
 *
 * Each record: the median, min and max over -r repetitions of -n phases
 * of the time per phase (us), and for gps the engine's counters per phase
 * and device (fences, write faults, pages harvested; fence_ns, harvest_ns
 * and protect_ns, the time in the write-protect scan, as us). gps - plain
 * is what publication adds to a phase; with -p 0 what the fences cost
 * with nothing to publish. Exit 1 if a device does not see another's last
 * stores.
 *
 *   phase [-d devices] [-p pages,...] [-n phases] [-r repetitions]
 */
#define BENCH_NAME "phase"
#include "bench_common.h"

struct phase_args {
	double *p;		/* translated: the device's view */
	size_t first;		/* the device's first page */
	int pages;
	double val;
};

/* One word of each of the device's pages, the blocks striding. */
static void phase_block(void *v)
{
	const struct phase_args *a = v;
	unsigned int b = gpsBlockIdx().x, nb = gpsGridDim().x;
	int i;

	if (gpsThreadIdx().x)
		return;
	for (i = (int)b; i < a->pages; i += (int)nb)
		a->p[(a->first + (size_t)i) * 512] = a->val;
}

struct phase_run {
	int nd, pages, phases;
	gpsStream_t *streams;
	const unsigned int *workers;	/* blocks per device */
	double *mem;
	double val;
};

/* -n phases on @r->mem; seconds per phase. */
static double phase_loop(struct phase_run *r)
{
	double t0 = bench_now();
	int ph, d;

	for (ph = 0; ph < r->phases; ph++) {
		r->val += 1.0;
		for (d = 0; d < r->nd; d++) {
			struct phase_args a = {
				.p = r->mem, .first = (size_t)d * r->pages,
				.pages = r->pages, .val = r->val,
			};

			CHECK(gpsSetDevice(d));
			CHECK(gpsLaunchKernel(phase_block,
				gpsDim(r->workers[d], 1, 1),
				gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct phase_args, p)),
				r->streams[d]));
		}
		for (d = 0; d < r->nd; d++) {
			CHECK(gpsSetDevice(d));
			CHECK(gpsStreamSynchronize(r->streams[d]));
		}
	}
	return (bench_now() - t0) / r->phases;
}

static void phase_print(const char *mem, int nd, int pages, double *t,
			int reps)
{
	double lo = t[0], hi = t[0];
	int i;

	for (i = 1; i < reps; i++) {
		lo = t[i] < lo ? t[i] : lo;
		hi = t[i] > hi ? t[i] : hi;
	}
	printf("phase mem=%s devices=%d pages=%d us=%.1f min=%.1f max=%.1f",
	       mem, nd, pages, bench_median(t, reps) * 1e6, lo * 1e6,
	       hi * 1e6);
}

int main(int argc, char **argv)
{
	char plist[256] = "0,1,16,256", *tok, *save = NULL;
	int nd = 0, phases = 500, reps = 5, opt, d, bad = 0;
	gpsStream_t streams[BENCH_MAX_DEV];
	unsigned int workers[BENCH_MAX_DEV];
	gpsDeviceProp prop;

	while ((opt = getopt(argc, argv, "d:p:n:r:")) != -1) {
		switch (opt) {
		case 'd':
			nd = atoi(optarg);
			break;
		case 'p':
			snprintf(plist, sizeof(plist), "%s", optarg);
			break;
		case 'n':
			phases = atoi(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: phase [-d devices] "
				"[-p pages,...] [-n phases] [-r reps]\n");
			return 2;
		}
	}
	if (!nd)
		CHECK(gpsGetDeviceCount(&nd));
	if (nd < 2 || nd > BENCH_MAX_DEV || phases < 1 || reps < 1 ||
	    reps > 99) {
		fprintf(stderr, "phase: 2 to %d devices, -n and -r (1 to 99) "
			"at least 1\n", BENCH_MAX_DEV);
		return 2;
	}
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamCreate(&streams[d]));
		CHECK(gpsGetDeviceProperties(&prop, d));
		workers[d] = (unsigned int)prop.multiProcessorCount;
	}
	printf("# phase: %d devices, %d phases per repetition, %d "
	       "repetitions; us per phase, counters per phase and device\n",
	       nd, phases, reps);
	for (tok = strtok_r(plist, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int pages = atoi(tok), rep;
		size_t bytes = (size_t)nd * (pages ? pages : 1) * 4096;
		struct phase_run plain = { nd, pages, phases, streams, workers,
					  NULL, 0 };
		struct phase_run gps = plain;
		double tp[99], tg[99];
		struct bench_counters c0, c1, c;
		unsigned long long n;

		CHECK(gpsSetDevice(0));
		CHECK(gpsMalloc((void **)&plain.mem, bytes));
		CHECK(gpsMallocGPS((void **)&gps.mem, bytes,
				   gpsMemGPSAutomatic | gpsMemGPSPage4K));
		memset(plain.mem, 0, bytes);
		memset(gps.mem, 0, bytes);
		(void)phase_loop(&plain);	/* warm: first touches */
		(void)phase_loop(&gps);
		memset(&c, 0, sizeof(c));
		for (rep = 0; rep < reps; rep++) {
			tp[rep] = phase_loop(&plain);
			bench_counters_read(&c0);
			tg[rep] = phase_loop(&gps);
			bench_counters_read(&c1);
			bench_counters_diff(&c0, &c1, &c0);
#define PHASE_ADD(field)	c.field += c0.field;
			BENCH_COUNTERS(PHASE_ADD)
#undef PHASE_ADD
			c.valid = c0.valid;
		}
		phase_print("plain", nd, pages, tp, reps);
		printf("\n");
		phase_print("gps", nd, pages, tg, reps);
		n = (unsigned long long)reps * phases * nd;
		if (c.valid)
			printf(" fences=%.2f write_faults=%.2f "
			       "pages_harvested=%.2f fence_us=%.1f "
			       "harvest_us=%.1f protect_us=%.1f",
			       (double)c.fences / n,
			       (double)c.write_faults / n,
			       (double)c.pages_harvested / n,
			       c.fence_ns / 1e3 / n, c.harvest_ns / 1e3 / n,
			       c.protect_ns / 1e3 / n);
		printf(" added_us=%.1f\n",
		       (bench_median(tg, reps) - bench_median(tp, reps)) * 1e6);
		/* the last stores of device 0 reach the last device */
		if (pages) {
			const double *v;
			int i;

			CHECK(gpsSetDevice(nd - 1));
			v = gpsDevicePtr(gps.mem);
			for (i = 0; i < pages; i++)
				bad += v[(size_t)i * 512] != gps.val;
		}
		CHECK(gpsSetDevice(0));
		CHECK(gpsFree(plain.mem));
		CHECK(gpsFree(gps.mem));
	}
	if (bad)
		fprintf(stderr, "phase: %d stores not seen by device %d\n",
			bad, nd - 1);
	return bad ? 1 : 0;
}
