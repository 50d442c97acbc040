// SPDX-License-Identifier: MIT
/*
 * publish: what publication costs a program, through libgpsu, on either
 * engine (gps_push's questions asked through the API: natively with
 * GPSU_ENGINE=user, no VM and no root; or against gps.ko in a guest).
 *
 * Device 0 stores into a GPS allocation that every device subscribes, in
 * a kernel of one block per worker, whose end publishes (the library's
 * release of device 0: GPS_ARGS_LOCAL); each timing is a launch and
 * gpsDeviceSynchronize. One repetition runs, back to back on device 0:
 *
 *   plain    the same stores into conventional memory of device 0: the
 *            stores and an empty release
 *   gps      the stores into the GPS allocation: stores, capture, push
 *   memcpy   the bytes a push moves, copied by the same workers from
 *            device 0's memory into conventional memory of every other
 *            device (the copy a push would be at best)
 *
 * publication = gps - plain; ratio = memcpy / publication (1.0: the push
 * as fast as memcpy of what it moves). Three kinds of stores:
 *
 *   dense    every byte of -s MiB (64 KiB GPS pages): against memcpy of
 *            those bytes (goal 0.9)
 *   sparse   one word per 4 KiB of -s MiB: against memcpy of the whole
 *            4 KiB pages (goal 1.0: a diff moves less than pages)
 *   capture  one word per 4 KiB GPS page of -c pages on one worker:
 *            publication per page (write fault, capture, diff, push)
 *            against a bare fault cycle per page (a write fault of an
 *            anonymous page, then MADV_DONTNEED) on the calling thread
 *            (goal: within 2x)
 *
 * Each figure: median, min and max over -r repetitions; the memcpy
 * baseline is flagged baseline=moved when its max is over 1.5 times its
 * min (its ratio is then the baseline's spread, not the push's). After
 * the repetitions, the last device checks that it sees the last stores
 * (exit 1 if not).
 *
 *   publish [-s MiB] [-c pages] [-r repetitions]
 */
#define BENCH_NAME "publish"
#include "bench_common.h"

#include <sys/mman.h>

enum job_kind { JOB_DENSE, JOB_SPARSE, JOB_COPY, JOB_CHECK };

struct job {
	unsigned char *dst;		/* stores (GPS or plain), or checked */
	const unsigned char *src;	/* JOB_COPY's source */
	unsigned char *out[BENCH_MAX_DEV]; /* JOB_COPY's destinations */
	int nout;
	int kind;
	size_t bytes;
	size_t chunk;			/* bytes per block */
	size_t stride;			/* JOB_SPARSE, JOB_CHECK: bytes */
	uint64_t val;
	unsigned int *bad;		/* JOB_CHECK: mismatches */
};

static void job_block(void *p)
{
	const struct job *j = p;
	size_t lo = gpsBlockIdx().x * j->chunk, hi = lo + j->chunk, o;
	unsigned int bad = 0;
	int d;

	if (hi > j->bytes)
		hi = j->bytes;
	if (lo >= hi)
		return;
	switch (j->kind) {
	case JOB_DENSE:
		memset(j->dst + lo, (int)(j->val & 0xff), hi - lo);
		break;
	case JOB_SPARSE:
		for (o = lo; o < hi; o += j->stride)
			*(volatile uint64_t *)(j->dst + o) = j->val;
		break;
	case JOB_COPY:
		for (d = 0; d < j->nout; d++)
			memcpy(j->out[d] + lo, j->src + lo, hi - lo);
		break;
	case JOB_CHECK:
		for (o = lo; o < hi; o += j->stride)
			bad += *(volatile uint64_t *)(j->dst + o) != j->val;
		if (bad)
			__atomic_fetch_add(j->bad, bad, __ATOMIC_RELAXED);
		break;
	}
}

/* seconds of one launch of @j on @dev over @blocks blocks, synchronised */
static double run(int dev, struct job *j, unsigned int blocks)
{
	double t;

	j->chunk = (j->bytes + blocks - 1) / blocks;
	j->chunk = (j->chunk + 4095) & ~(size_t)4095;
	CHECK(gpsSetDevice(dev));
	t = bench_now();
	CHECK(gpsLaunchKernel(job_block, gpsDim(blocks, 1, 1), gpsDim(1, 1, 1),
			      GPS_ARGS_LOCAL(j, GPS_PTR(struct job, dst)),
			      NULL));
	CHECK(gpsDeviceSynchronize());
	return bench_now() - t;
}

struct stat3 {
	double med, min, max;
};

static struct stat3 stat3(const double *v, int n)
{
	double *s = bench_xmalloc(n * sizeof(*s));
	struct stat3 r;

	memcpy(s, v, n * sizeof(*s));
	r.med = bench_median(s, n);	/* sorts the copy */
	r.min = s[0];
	r.max = s[n - 1];
	free(s);
	return r;
}

/* one word per @stride of @p as the last device sees it */
static unsigned int check(int dev, unsigned char *p, size_t bytes,
			  size_t stride, uint64_t val, unsigned int blocks)
{
	static unsigned int *bad;
	struct job j = { .dst = p, .kind = JOB_CHECK, .bytes = bytes,
			 .stride = stride, .val = val };

	if (!bad)
		CHECK(gpsMalloc((void **)&bad, sizeof(*bad)));
	*bad = 0;
	j.bad = bad;
	run(dev, &j, blocks);
	return *bad;
}

/* seconds per page of a bare fault cycle: write fault, MADV_DONTNEED */
static double bare_fault_cycle(size_t pages)
{
	size_t i, len = pages * 4096;
	unsigned char *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t;

	if (a == MAP_FAILED) {
		perror(BENCH_NAME ": mmap");
		exit(2);
	}
	for (i = 0; i < len; i += 4096)	/* the page tables, once */
		a[i] = 1;
	madvise(a, len, MADV_DONTNEED);
	t = bench_now();
	for (i = 0; i < len; i += 4096)
		*(volatile unsigned char *)(a + i) = 2;
	madvise(a, len, MADV_DONTNEED);
	t = bench_now() - t;
	munmap(a, len);
	return t / (double)pages;
}

struct mode {
	const char *name;
	int kind;
	size_t bytes, stride;
	unsigned int flags;	/* gpsMallocGPS */
	unsigned int blocks;
	double *plain, *gps, *copy, *bare;
	unsigned char *g, *c, *src, *out[BENCH_MAX_DEV];
};

int main(int argc, char **argv)
{
	size_t mib = 16, cpages = 1024;
	int reps = 9, opt, nr, d, r, m, bad = 0;
	struct mode modes[3];
	gpsDeviceProp prop;
	gpsEngine engine;
	const char *ename;
	double sum_ratio[3] = { 0 };

	while ((opt = getopt(argc, argv, "s:c:r:h")) != -1) {
		switch (opt) {
		case 's': mib = strtoul(optarg, NULL, 0); break;
		case 'c': cpages = strtoul(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: publish [-s MiB] [-c pages] [-r repetitions]\n");
			return 2;
		}
	}
	if (!mib || mib > 4096 || !cpages || cpages > (1u << 20) ||
	    reps < 1 || reps > 200) {
		fprintf(stderr, "publish: -s 1 to 4096, -c 1 to 2^20, -r 1 to 200\n");
		return 2;
	}
	CHECK(gpsGetDeviceCount(&nr));
	if (nr < 2 || nr > BENCH_MAX_DEV) {
		fprintf(stderr, "publish: needs 2 to %d devices (%d)\n",
			BENCH_MAX_DEV, nr);
		return 2;
	}
	CHECK(gpsGetEngine(&engine, &ename));
	CHECK(gpsGetDeviceProperties(&prop, 0));
	memset(modes, 0, sizeof(modes));
	modes[0] = (struct mode){ .name = "dense", .kind = JOB_DENSE,
		.bytes = mib << 20, .flags = gpsMemGPSPage64K,
		.blocks = (unsigned int)prop.numCpus };
	modes[1] = (struct mode){ .name = "sparse", .kind = JOB_SPARSE,
		.bytes = mib << 20, .stride = 4096, .flags = gpsMemGPSPage64K,
		.blocks = (unsigned int)prop.numCpus };
	modes[2] = (struct mode){ .name = "capture", .kind = JOB_SPARSE,
		.bytes = cpages * 4096, .stride = 4096,
		.flags = gpsMemGPSPage4K, .blocks = 1 };
	for (m = 0; m < 3; m++) {
		struct mode *x = &modes[m];

		x->plain = bench_xmalloc(reps * sizeof(double));
		x->gps = bench_xmalloc(reps * sizeof(double));
		x->copy = bench_xmalloc(reps * sizeof(double));
		x->bare = bench_xmalloc(reps * sizeof(double));
		CHECK(gpsSetDevice(0));
		CHECK(gpsMallocGPS((void **)&x->g, x->bytes, x->flags));
		CHECK(gpsMalloc((void **)&x->c, x->bytes));
		CHECK(gpsMalloc((void **)&x->src, x->bytes));
		memset(x->c, 0, x->bytes);
		memset(x->src, 1, x->bytes);
		for (d = 1; d < nr; d++) {
			CHECK(gpsSetDevice(d));
			CHECK(gpsMalloc((void **)&x->out[d - 1], x->bytes));
			memset(x->out[d - 1], 0, x->bytes);
		}
	}
	printf("publish: engine=%s devices=%d cpus=%d dense_mib=%zu capture_pages=%zu repetitions=%d\n",
	       ename, nr, prop.numCpus, mib, cpages, reps);
	/* repetition -1 maps and replicates every page first */
	for (r = -1; r < reps; r++) {
		for (m = 0; m < 3; m++) {
			struct mode *x = &modes[m];
			struct job j = { .kind = x->kind, .bytes = x->bytes,
					 .stride = x->stride,
					 .val = (uint64_t)(r + 2) * 0x0101010101010101ull };
			struct job cp = { .kind = JOB_COPY, .src = x->src,
					  .nout = nr - 1 };
			double tp, tg, tc;

			/* the bytes a push moves: all (dense), pages (sparse,
			 * capture: the whole-page copy it is held against) */
			cp.bytes = x->bytes;
			memcpy(cp.out, x->out, sizeof(cp.out));
			j.dst = x->c;
			tp = run(0, &j, x->blocks);
			j.dst = x->g;
			tg = run(0, &j, x->blocks);
			tc = run(0, &cp, x->blocks);
			if (r < 0)
				continue;
			x->plain[r] = tp;
			x->gps[r] = tg;
			x->copy[r] = tc;
			if (m == 2)
				x->bare[r] = bare_fault_cycle(cpages);
		}
	}
	for (m = 0; m < 3; m++) {
		struct mode *x = &modes[m];
		uint64_t last = (uint64_t)(reps + 1) * 0x0101010101010101ull;
		unsigned int miss = check(nr - 1, x->g, x->bytes,
					  x->stride ? x->stride : 4096, last,
					  (unsigned int)prop.numCpus);
		double *pub = bench_xmalloc(reps * sizeof(double));
		struct stat3 sp, sg, sc, su, sb;
		const char *moved;

		for (r = 0; r < reps; r++)
			pub[r] = x->gps[r] - x->plain[r];
		sp = stat3(x->plain, reps);
		sg = stat3(x->gps, reps);
		sc = stat3(x->copy, reps);
		su = stat3(pub, reps);
		moved = sc.max > 1.5 * sc.min ? " baseline=moved" : "";
		if (m < 2) {
			sum_ratio[m] = su.med > 0 ? sc.med / su.med : -1;
			printf("publish: mode=%s bytes=%zu plain_ms=%.3f (%.3f-%.3f) gps_ms=%.3f (%.3f-%.3f) publication_ms=%.3f (%.3f-%.3f) memcpy_ms=%.3f (%.3f-%.3f) receivers=%d ratio=%.3f%s verify=%s\n",
			       x->name, x->bytes, sp.med * 1e3, sp.min * 1e3,
			       sp.max * 1e3, sg.med * 1e3, sg.min * 1e3,
			       sg.max * 1e3, su.med * 1e3, su.min * 1e3,
			       su.max * 1e3, sc.med * 1e3, sc.min * 1e3,
			       sc.max * 1e3, nr - 1, sum_ratio[m], moved,
			       miss ? "FAILED" : "ok");
		} else {
			sb = stat3(x->bare, reps);
			sum_ratio[2] = sb.med > 0 ? su.med / cpages / sb.med : -1;
			printf("publish: mode=capture pages=%zu publication_us_per_page=%.3f (%.3f-%.3f) bare_fault_us_per_page=%.3f (%.3f-%.3f) whole_page_memcpy_us_per_page=%.3f capture_vs_bare=%.2f verify=%s\n",
			       cpages, su.med * 1e6 / cpages,
			       su.min * 1e6 / cpages, su.max * 1e6 / cpages,
			       sb.med * 1e6, sb.min * 1e6, sb.max * 1e6,
			       sc.med * 1e6 / cpages, sum_ratio[2],
			       miss ? "FAILED" : "ok");
		}
		if (miss) {
			fprintf(stderr, "publish: %s: device %d missed %u of the last stores\n",
				x->name, nr - 1, miss);
			bad = 1;
		}
		free(pub);
		CHECK(gpsFree(x->g));
		CHECK(gpsFree(x->c));
		CHECK(gpsFree(x->src));
		for (d = 0; d < nr - 1; d++)
			CHECK(gpsFree(x->out[d]));
		free(x->plain);
		free(x->gps);
		free(x->copy);
		free(x->bare);
	}
	printf("publish_summary: engine=%s devices=%d dense_vs_memcpy=%.3f sparse_vs_whole_pages=%.3f capture_vs_bare=%.2f\n",
	       ename, nr, sum_ratio[0], sum_ratio[1], sum_ratio[2]);
	return bad;
}
