/* SPDX-License-Identifier: MIT */
/*
 * bench_common.h - helpers shared by the workload benchmarks of bench/:
 * timing, key=value records, the driver's sysfs knobs (saved at the first
 * change, restored at exit and on SIGINT/SIGTERM) and its debugfs counters.
 *
 * Header-only: every function is static inline; a program includes it once.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpsu.h"

#ifndef BENCH_NAME
#define BENCH_NAME "bench"
#endif

#define BENCH_DEBUGFS	"/sys/kernel/debug/gps"
#define BENCH_MAX_DEV	64

#define CHECK(call)							\
	do {								\
		gpsError_t err_ = (call);				\
		if (err_ != gpsSuccess) {				\
			fprintf(stderr, BENCH_NAME ": %s:%d: %s: %s\n",	\
				__FILE__, __LINE__, #call,		\
				gpsGetErrorString(err_));		\
			exit(2);					\
		}							\
	} while (0)

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void bench_sleep(double secs)
{
	struct timespec ts;

	if (secs <= 0)
		return;
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* the median of @n samples at @v, which it sorts */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void *bench_xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, BENCH_NAME ": out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* sysfs knobs                                                         */
/* ------------------------------------------------------------------ */

struct bench_knob {
	char name[32];
	char old[64];
};

static struct bench_knob bench_knobs[16];
static int bench_nknobs;

/*
 * The knobs through the library (gpsGetKnob, gpsSetKnob: either engine).
 * track_policy is a number there; here, as in sysfs, its word.
 */
static const char *const bench_track_words[] = { "touched", "read" };

/* Reads knob @name into @buf as text; 0 or -EINVAL (the library says). */
static inline int bench_knob_get(const char *name, char *buf, size_t len)
{
	unsigned long long v;

	if (gpsGetKnob(&v, name) != gpsSuccess)
		return -EINVAL;
	if (!strcmp(name, "track_policy") && v < 2)
		snprintf(buf, len, "%s", bench_track_words[v]);
	else
		snprintf(buf, len, "%llu", v);
	return 0;
}

static inline unsigned long long bench_knob_ull(const char *name)
{
	char buf[64];

	if (bench_knob_get(name, buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 10);
}

/* Writes knob @name from text; 0, -EOPNOTSUPP or -EINVAL. */
static inline int bench_knob_write(const char *name, const char *val)
{
	unsigned long long v;
	gpsError_t err;
	char *end;

	v = strtoull(val, &end, 0);
	if (end == val || *end) {
		if (!strcmp(val, bench_track_words[0]))
			v = 0;
		else if (!strcmp(val, bench_track_words[1]))
			v = 1;
		else
			return -EINVAL;
	}
	err = gpsSetKnob(name, v);
	return err == gpsSuccess ? 0 :
	       err == gpsErrorNotSupported ? -EOPNOTSUPP :
	       err == gpsErrorNotPermitted ? -EPERM : -EINVAL;
}

/* Restores every knob changed, in reverse order of the first change. */
static inline void bench_knobs_restore(void)
{
	while (bench_nknobs > 0) {
		struct bench_knob *k = &bench_knobs[--bench_nknobs];

		if (bench_knob_write(k->name, k->old))
			fprintf(stderr, BENCH_NAME ": cannot restore %s=%s\n",
				k->name, k->old);
	}
}

static inline void bench_on_signal(int sig)
{
	/* not async-signal-safe in theory; good enough for a benchmark */
	bench_knobs_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Sets a knob, saving its old value the first time; exits on failure. */
static inline void bench_knob_set(const char *name, const char *fmt, ...)
{
	char val[64];
	va_list ap;
	int i, ret;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	for (i = 0; i < bench_nknobs; i++)
		if (!strcmp(bench_knobs[i].name, name))
			break;
	if (i == bench_nknobs) {
		struct bench_knob *k = &bench_knobs[bench_nknobs];

		if (bench_nknobs == (int)(sizeof(bench_knobs) /
					  sizeof(bench_knobs[0]))) {
			fprintf(stderr, BENCH_NAME ": too many knobs\n");
			exit(2);
		}
		snprintf(k->name, sizeof(k->name), "%s", name);
		if (bench_knob_get(name, k->old, sizeof(k->old))) {
			fprintf(stderr, BENCH_NAME ": cannot read knob %s\n",
				name);
			exit(2);
		}
		if (!bench_nknobs) {
			atexit(bench_knobs_restore);
			signal(SIGINT, bench_on_signal);
			signal(SIGTERM, bench_on_signal);
		}
		bench_nknobs++;
	}
	ret = bench_knob_write(name, val);
	if (ret) {
		fprintf(stderr, BENCH_NAME ": cannot set knob %s=%s: %s\n",
			name, val, strerror(-ret));
		exit(2);
	}
}

/* ------------------------------------------------------------------ */
/* the engine's counters: debugfs, else the library                   */
/* ------------------------------------------------------------------ */

/* The driver's per-device counters this suite reads, by name. */
#define BENCH_COUNTERS(X)						\
	X(blocks_queued)						\
	X(blocks_merged)						\
	X(blocks_pushed)						\
	X(blocks_bulk)							\
	X(blocks_pushed_early)						\
	X(write_faults)							\
	X(read_faults)							\
	X(fences)							\
	X(pages_harvested)						\
	X(thread_rounds)						\
	X(pages_helped)							\
	X(link_wait_ns)							\
	X(link_exposed_ns)						\
	X(harvest_ns)							\
	X(protect_ns)							\
	X(fence_ns)							\
	X(fence_wait_ns)						\
	X(migrations)							\
	X(bytes_migrated)						\
	X(thrash_pins)

/* Sums of the per-device counters this suite reads, over every node. */
struct bench_counters {
	int valid;			/* the counters were readable */
	unsigned long long traffic_bytes;	/* sum over node<N>/traffic */
	unsigned long long traffic_blocks;
	unsigned long long blocks_queued;
	unsigned long long blocks_merged;
	unsigned long long blocks_pushed;
	unsigned long long blocks_bulk;
	unsigned long long blocks_pushed_early;
	unsigned long long write_faults;
	unsigned long long read_faults;
	unsigned long long fences;
	unsigned long long pages_harvested;	/* small pages diffed */
	unsigned long long thread_rounds;
	unsigned long long pages_helped;
	unsigned long long link_wait_ns;
	unsigned long long link_exposed_ns;	/* link owed at fences */
	unsigned long long harvest_ns;	/* all devices' time, summed */
	unsigned long long protect_ns;
	unsigned long long fence_ns;
	unsigned long long fence_wait_ns;
	unsigned long long migrations;	/* managed pages moved by faults */
	unsigned long long bytes_migrated;
	unsigned long long thrash_pins;
};

/*
 * Without debugfs (the native engine; a guest without it mounted): the
 * same counters by their names through the library, those the engine
 * keeps; the bytes pushed (per receiver) stand for the traffic files'.
 */
static inline void bench_counters_library(struct bench_counters *c)
{
	unsigned long long v;
	int n = 0, d;

	if (gpsGetDeviceCount(&n) != gpsSuccess)
		return;
	for (d = 0; d < n; d++) {
		if (gpsDeviceGetCounter(&v, "bytes_pushed", d) != gpsSuccess)
			return;
		c->valid = 1;
		c->traffic_bytes += v;
		if (gpsDeviceGetCounter(&v, "blocks_pushed", d) == gpsSuccess)
			c->traffic_blocks += v;
#define BENCH_CNT(field)						\
		if (gpsDeviceGetCounter(&v, #field, d) == gpsSuccess)	\
			c->field += v;
		BENCH_COUNTERS(BENCH_CNT)
#undef BENCH_CNT
	}
}

static inline void bench_counters_read(struct bench_counters *c)
{
	glob_t g;
	size_t i;

	memset(c, 0, sizeof(*c));
	if (glob(BENCH_DEBUGFS "/node*/stats", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++) {
			FILE *f = fopen(g.gl_pathv[i], "r");
			char name[64];
			unsigned long long v;

			if (!f)
				continue;
			c->valid = 1;
			while (fscanf(f, "%63s %llu", name, &v) == 2) {
#define BENCH_CNT(field)	if (!strcmp(name, #field)) c->field += v;
				BENCH_COUNTERS(BENCH_CNT)
#undef BENCH_CNT
			}
			fclose(f);
		}
		globfree(&g);
	}
	if (glob(BENCH_DEBUGFS "/node*/traffic", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++) {
			FILE *f = fopen(g.gl_pathv[i], "r");
			unsigned long long node, blocks, bytes;

			if (!f)
				continue;
			while (fscanf(f, "%llu %llu %llu", &node, &blocks,
				      &bytes) == 3) {
				c->traffic_blocks += blocks;
				c->traffic_bytes += bytes;
			}
			fclose(f);
		}
		globfree(&g);
	}
	if (!c->valid)
		bench_counters_library(c);
}

/* @after - @before, field by field. */
static inline void bench_counters_diff(struct bench_counters *d,
				const struct bench_counters *after,
				const struct bench_counters *before)
{
	d->valid = after->valid && before->valid;
#define BENCH_SUB(field)	d->field = after->field - before->field;
	BENCH_SUB(traffic_bytes)
	BENCH_SUB(traffic_blocks)
	BENCH_COUNTERS(BENCH_SUB)
#undef BENCH_SUB
}

/*
 * The debugfs subscriber histogram ("<n> <pages>" lines) as "1:a,2:b,...";
 * @out is left empty when debugfs is not readable.
 */
static inline void bench_subscribers_debugfs(char *out, size_t len)
{
	FILE *f = fopen(BENCH_DEBUGFS "/subscribers", "r");
	unsigned long long n, pages;
	size_t used = 0;

	out[0] = '\0';
	if (!f)
		return;
	while (fscanf(f, "%llu %llu", &n, &pages) == 2 && used < len) {
		int w = snprintf(out + used, len - used, "%s%llu:%llu",
				 used ? "," : "", n, pages);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	fclose(f);
}

/* The same histogram for one GPS allocation, from the library; adds to
 * @hist (hist[n] = pages with n subscribers). 0 on success. */
static inline int bench_subscribers_query(const void *p, size_t bytes,
				   unsigned long long *hist, int ndev)
{
	size_t cap = 1 << 16, np, k;
	unsigned long long *masks = bench_xmalloc(cap * sizeof(*masks));
	int n;

	if (gpsMemGetSubscribers(p, bytes, masks, cap, &np) != gpsSuccess) {
		free(masks);
		return -1;
	}
	for (k = 0; k < np && k < cap; k++) {
		n = __builtin_popcountll(masks[k]);
		if (n >= 0 && n <= ndev)
			hist[n]++;
	}
	free(masks);
	return 0;
}

#endif /* BENCH_COMMON_H */
