// SPDX-License-Identifier: MIT
/*
 * paradigms: the paper's workloads (simplified) in the paper's multi-GPU
 * programming paradigms, side by side in one run (Figures 8-11, 13, 14).
 *
 * Workloads, each a double-buffered float array cut into contiguous
 * slices, one per device (one "iteration" = two sweeps, A -> B -> A):
 *
 *   jacobi    2-D five-point Jacobi stencil on a rows x cols grid with
 *             fixed borders, split by rows: each device reads one halo
 *             row of each neighbour (peer-to-peer).
 *   pagerank  pull PageRank on a synthetic graph (fixed seed): every
 *             vertex has `degree` in-edges, most from within +-32
 *             vertices, one in eight from a random vertex of one of two
 *             "partner" blocks of its block (irregular all-to-some).
 *
 * Paradigms:
 *
 *   single    one device, conventional memory: the reference result and
 *             the baseline of every speedup.
 *   memcpy    each device computes on its own full copy in conventional
 *             memory on its node; after each sweep the chunks of the new
 *             slice that another device reads are copied to it with
 *             gpsMemcpy (bulk, at kernel boundaries, no overlap).
 *   gps-auto  GPS memory, tracking around the first iteration: each
 *             device stays subscribed to what it read (Fig. 11 "with").
 *   gps-all   GPS memory, every device subscribed to everything, no
 *             tracking (Fig. 11 "without subscription").
 *   um        unified memory with hints: managed memory, each slice given
 *             its writer as preferred location and prefetched there; the
 *             other devices load their halo remotely (the paper's UM with
 *             hints, which with accessed-by is remote demand loads).
 *   home      one conventional copy on device 0; every other device loads
 *             and stores remotely.
 *
 * Every paradigm's final array is compared bit for bit with single's; a
 * difference prints verify=FAIL and makes the exit status 1.  One
 * key=value record per line (tools/gps-plot turns them into tables):
 * time_s and bytes_moved cover the iterations after the first (which
 * holds the tracking of gps-auto), time_first_s the first.
 *
 * Sweeps (need root; every knob changed is restored at exit):
 *   -L ratios   link model (Fig. 13): measure local memcpy bandwidth of
 *               device 0, then for each local:remote ratio R set
 *               link_bandwidth = local / R (R = 0: unlimited) and run the
 *               paradigms.  The memcpy paradigm is charged the same model
 *               by this program (the driver only delays its own pushes).
 *   -Q caps     write queue (Fig. 14): bulk_blocks = 0, and for each
 *               queue_capacity run the GPS paradigms; hit_rate =
 *               blocks_merged / (blocks_merged + blocks_queued).
 *
 *   paradigms [-q] [-d devices] [-w workloads] [-p paradigms] [-i iters]
 *             [-r rows] [-c cols] [-V vertices] [-k degree]
 *             [-L ratios] [-l latency_ns] [-Q capacities]
 */
#define BENCH_NAME "paradigms"
#include <stdint.h>

#include "bench_common.h"

#define PR_TILE		256	/* vertices per kernel thread */
#define PR_LOCAL	32	/* local in-edges come from v +- PR_LOCAL */
#define PR_PARTNERS	2	/* partner blocks per block */
#define PR_CHUNK	1024	/* memcpy granularity, vertices (4 KiB) */
#define PR_DAMP		0.85f

enum paradigm {
	P_SINGLE, P_MEMCPY, P_GPS_AUTO, P_GPS_ALL, P_UM, P_HOME, P_NR
};

static const char *const pnames[P_NR] = {
	"single", "memcpy", "gps-auto", "gps-all", "um", "home",
};

struct workload {
	const char *name;
	int is_jacobi;
	size_t n;		/* floats in the state array */
	size_t chunk;		/* floats per chunk: partition unit */
	size_t nchunks;
	float *init;		/* initial state, n floats */
	/* jacobi */
	size_t rows, cols;
	/* pagerank: in-edges in CSR, by destination */
	size_t nv, degree, block;
	uint32_t *rowptr, *col;
	float *invout;		/* 1 / out-degree (0: no out-edges) */
	/* single's result and time */
	float *ref;
	double t_single;
};

/* what one run of one paradigm measured */
struct result {
	double t_first, t;
	double copy_s, link_wait_s;	/* memcpy: exchange and modelled link */
	unsigned long long bytes;
	const char *bytes_src;		/* debugfs, counted, estimate */
	struct bench_counters cnt;
	char subs[256];
	int verified;			/* 1 ok, 0 fail, -1 not checked */
};

struct kargs {
	const float *in;	/* translated */
	float *out;		/* translated */
	size_t lo, hi;		/* owned floats */
	size_t rows, cols;	/* jacobi */
	const uint32_t *rowptr;	/* pagerank: this slice, relative */
	const uint32_t *col;
	const float *invout;	/* this slice */
	float base;
};

static int ndev;
static gpsStream_t streams[BENCH_MAX_DEV];
static int exit_status;
static char tags[160] = "sweep=none";

/* ------------------------------------------------------------------ */
/* kernels                                                             */
/* ------------------------------------------------------------------ */

/* one thread per row of the slice */
static void jacobi_kernel(void *p)
{
	const struct kargs *a = p;
	size_t r = a->lo / a->cols + gpsBlockIdx().x, c, C = a->cols;
	const float *in = a->in;
	float *out = a->out;

	if (r * C >= a->hi)
		return;
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

/* contribution form: state[v] = rank[v] / outdeg[v], so that a device
 * reads only the state of its in-neighbours */
static void pagerank_kernel(void *p)
{
	const struct kargs *a = p;
	size_t v0 = a->lo + (size_t)gpsBlockIdx().x * PR_TILE, v, e;
	size_t v1 = v0 + PR_TILE < a->hi ? v0 + PR_TILE : a->hi;

	for (v = v0; v < v1; v++) {
		size_t i = v - a->lo;
		float sum = 0.0f;

		for (e = a->rowptr[i]; e < a->rowptr[i + 1]; e++)
			sum += a->in[a->col[e]];
		a->out[v] = (a->base + PR_DAMP * sum) * a->invout[i];
	}
}

/* ------------------------------------------------------------------ */
/* workloads                                                           */
/* ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64: fixed seed, same graph for every device count */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void jacobi_setup(struct workload *w, size_t rows, size_t cols)
{
	size_t i;

	w->name = "jacobi";
	w->is_jacobi = 1;
	w->rows = rows;
	w->cols = cols;
	w->n = rows * cols;
	w->chunk = cols;
	w->nchunks = rows;
	w->init = bench_xmalloc(w->n * sizeof(float));
	for (i = 0; i < w->n; i++)
		w->init[i] = (float)((i * 2654435761u) % 1000);
}

static void pagerank_setup(struct workload *w, size_t nv, size_t degree)
{
	size_t nblocks, b, v, e, k;
	uint32_t *partner, *outdeg;

	w->name = "pagerank";
	w->nv = nv;
	w->degree = degree;
	w->block = 16384 < nv ? 16384 : nv;	/* 64 KiB of floats */
	w->n = nv;
	w->chunk = PR_CHUNK < nv ? PR_CHUNK : nv;
	w->nchunks = (nv + w->chunk - 1) / w->chunk;
	nblocks = (nv + w->block - 1) / w->block;

	rng_state = 42;
	partner = bench_xmalloc(nblocks * PR_PARTNERS * sizeof(*partner));
	for (b = 0; b < nblocks; b++)
		for (k = 0; k < PR_PARTNERS; k++) {
			uint32_t pb = (uint32_t)(rng() % nblocks);

			if (nblocks > 1 && pb == b)
				pb = (uint32_t)((pb + 1) % nblocks);
			partner[b * PR_PARTNERS + k] = pb;
		}
	w->rowptr = bench_xmalloc((nv + 1) * sizeof(uint32_t));
	w->col = bench_xmalloc(nv * degree * sizeof(uint32_t));
	outdeg = bench_xmalloc(nv * sizeof(*outdeg));
	for (v = 0, e = 0; v < nv; v++) {
		w->rowptr[v] = (uint32_t)e;
		for (k = 0; k < degree; k++, e++) {
			uint64_t r = rng();
			size_t u;

			if (r % 8 == 0) {	/* remote: a partner block */
				size_t pb = partner[(v / w->block) *
					PR_PARTNERS + (r >> 8) % PR_PARTNERS];
				size_t lo = pb * w->block;
				size_t len = nv - lo < w->block ?
					nv - lo : w->block;

				u = lo + (r >> 16) % len;
			} else {		/* local: v +- PR_LOCAL */
				long d = (long)((r >> 8) % (2 * PR_LOCAL)) -
					 PR_LOCAL;

				if (d >= 0)
					d++;
				u = (size_t)(((long)v + d + (long)nv) %
					     (long)nv);
			}
			w->col[e] = (uint32_t)u;
			outdeg[u]++;
		}
	}
	w->rowptr[nv] = (uint32_t)e;
	w->invout = bench_xmalloc(nv * sizeof(float));
	w->init = bench_xmalloc(nv * sizeof(float));
	for (v = 0; v < nv; v++) {
		w->invout[v] = outdeg[v] ? 1.0f / (float)outdeg[v] : 0.0f;
		w->init[v] = w->invout[v] / (float)nv;
	}
	free(outdeg);
	free(partner);
}

/* Slice of device @d of @nd: whole chunks. */
static void slice(const struct workload *w, int d, int nd, size_t *lo,
		  size_t *hi)
{
	size_t c0 = w->nchunks * d / nd, c1 = w->nchunks * (d + 1) / nd;

	*lo = c0 * w->chunk;
	*hi = c1 * w->chunk < w->n ? c1 * w->chunk : w->n;
}

static int owner(const struct workload *w, size_t chunk, int nd)
{
	int d;

	for (d = 0; d < nd; d++) {
		size_t lo, hi;

		slice(w, d, nd, &lo, &hi);
		if (chunk * w->chunk >= lo && chunk * w->chunk < hi)
			return d;
	}
	return nd - 1;
}

/*
 * need[d * nchunks + c]: device d reads chunk c, owned by another device.
 * remote[d]: distinct floats d reads from other devices' slices.
 */
static void needs(const struct workload *w, int nd, unsigned char *need,
		  size_t *remote)
{
	int d;

	memset(need, 0, (size_t)nd * w->nchunks);
	for (d = 0; d < nd; d++) {
		size_t lo, hi, v, e, c;

		slice(w, d, nd, &lo, &hi);
		remote[d] = 0;
		if (w->is_jacobi) {
			c = lo / w->cols;
			if (lo < hi && c > 0 && c < w->rows - 1) {
				need[d * w->nchunks + c - 1] = 1;
				remote[d] += w->cols;
			}
			c = hi / w->cols;
			if (lo < hi && c < w->rows && c >= 2) {
				need[d * w->nchunks + c] = 1;
				remote[d] += w->cols;
			}
			continue;
		}
		{
			unsigned char *seen = bench_xmalloc(w->nv);

			for (v = lo; v < hi; v++)
				for (e = w->rowptr[v]; e < w->rowptr[v + 1];
				     e++) {
					size_t u = w->col[e];

					if (u >= lo && u < hi)
						continue;
					need[d * w->nchunks + u / w->chunk] = 1;
					if (!seen[u]) {
						seen[u] = 1;
						remote[d]++;
					}
				}
			free(seen);
		}
	}
}

/* ------------------------------------------------------------------ */
/* one run                                                             */
/* ------------------------------------------------------------------ */

struct devdata {
	float *a, *b;			/* state buffers as this device uses */
	uint32_t *rowptr, *col;		/* pagerank slice, host memory */
	float *invout;
	size_t lo, hi;
};

static void sweep(const struct workload *w, struct devdata *dd, int nd,
		  int to_b)
{
	int d;

	for (d = 0; d < nd; d++) {
		struct kargs k = {
			.in = to_b ? dd[d].a : dd[d].b,
			.out = to_b ? dd[d].b : dd[d].a,
			.lo = dd[d].lo, .hi = dd[d].hi,
			.rows = w->rows, .cols = w->cols,
			.rowptr = dd[d].rowptr, .col = dd[d].col,
			.invout = dd[d].invout,
			.base = (1.0f - PR_DAMP) / (float)(w->nv ? w->nv : 1),
		};
		unsigned int blocks;

		if (dd[d].lo >= dd[d].hi)
			continue;
		if (w->is_jacobi)
			blocks = (unsigned int)((dd[d].hi - dd[d].lo) /
						w->cols);
		else
			blocks = (unsigned int)((dd[d].hi - dd[d].lo +
						 PR_TILE - 1) / PR_TILE);
		CHECK(gpsSetDevice(d));
		CHECK(gpsLaunchKernel(w->is_jacobi ? jacobi_kernel :
				      pagerank_kernel,
				      gpsDim(blocks, 1, 1), gpsDim(1, 1, 1),
				      GPS_ARGS(&k, GPS_PTR(struct kargs, in),
					       GPS_PTR(struct kargs, out)),
				      streams[d]));
	}
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamSynchronize(streams[d]));
	}
}

/*
 * memcpy paradigm: copy every chunk of each device's new slice that
 * another device reads, runs of chunks at a time; then, when the link
 * model is on, wait as the driver would for pushes of the same bytes
 * (each source's outgoing link, plus the latency once).
 */
static void exchange(const struct workload *w, struct devdata *dd, int nd,
		     int to_b, const unsigned char *need, struct result *res,
		     unsigned long long bw, unsigned long long lat_ns)
{
	unsigned long long from[BENCH_MAX_DEV] = { 0 }, most = 0, total = 0;
	double t0 = bench_now(), need_s;
	int d, s;

	for (d = 0; d < nd; d++) {
		size_t c = 0;

		CHECK(gpsSetDevice(d));
		while (c < w->nchunks) {
			size_t c1 = c, off, len;

			if (!need[d * w->nchunks + c]) {
				c++;
				continue;
			}
			s = owner(w, c, nd);
			while (c1 < w->nchunks && need[d * w->nchunks + c1] &&
			       owner(w, c1, nd) == s)
				c1++;
			off = c * w->chunk;
			len = (c1 * w->chunk < w->n ? c1 * w->chunk : w->n) -
			      off;
			CHECK(gpsMemcpy((to_b ? dd[d].b : dd[d].a) + off,
					(to_b ? dd[s].b : dd[s].a) + off,
					len * sizeof(float),
					gpsMemcpyDeviceToDevice));
			from[s] += len * sizeof(float);
			c = c1;
		}
	}
	for (s = 0; s < nd; s++) {
		total += from[s];
		if (from[s] > most)
			most = from[s];
	}
	res->bytes += total;
	res->copy_s += bench_now() - t0;
	if ((bw || lat_ns) && total) {
		need_s = (bw ? (double)most / (double)bw : 0) + lat_ns * 1e-9;
		need_s -= bench_now() - t0;
		if (need_s > 0) {
			bench_sleep(need_s);
			res->link_wait_s += need_s;
		}
	}
}

static void hist_string(char *out, size_t len, const unsigned long long *h,
			int nd)
{
	size_t used = 0;
	int n;

	out[0] = '\0';
	for (n = 1; n <= nd && used < len; n++) {
		int wr = snprintf(out + used, len - used, "%s%d:%llu",
				  n > 1 ? "," : "", n, h[n]);

		if (wr < 0)
			break;
		used += (size_t)wr;
	}
}

static float *run(const struct workload *w, enum paradigm p, int nd,
		  int iters, struct result *res)
{
	struct devdata dd[BENCH_MAX_DEV];
	size_t bytes = w->n * sizeof(float), remote[BENCH_MAX_DEV];
	unsigned char *need = bench_xmalloc((size_t)nd * w->nchunks);
	unsigned long long bw = 0, lat = 0;
	struct bench_counters c0, c1;
	float *out, *ga = NULL, *gb = NULL;
	int d, it, tracking = 0;
	double t0, t1 = 0;

	memset(res, 0, sizeof(*res));
	memset(dd, 0, sizeof(dd));
	res->verified = -1;
	needs(w, nd, need, remote);
	if (p == P_MEMCPY) {
		bw = bench_knob_ull("link_bandwidth");
		lat = bench_knob_ull("link_latency_ns");
	}

	/* state buffers */
	CHECK(gpsSetDevice(0));
	switch (p) {
	case P_GPS_AUTO:
	case P_GPS_ALL:
		CHECK(gpsMallocGPS((void **)&ga, bytes, gpsMemGPSAutomatic));
		CHECK(gpsMallocGPS((void **)&gb, bytes, gpsMemGPSAutomatic));
		break;
	case P_UM:
		CHECK(gpsMallocManaged((void **)&ga, bytes));
		CHECK(gpsMallocManaged((void **)&gb, bytes));
		break;
	case P_SINGLE:
	case P_HOME:
		CHECK(gpsMalloc((void **)&ga, bytes));
		CHECK(gpsMalloc((void **)&gb, bytes));
		break;
	default:
		break;
	}
	for (d = 0; d < nd; d++) {
		slice(w, d, nd, &dd[d].lo, &dd[d].hi);
		CHECK(gpsSetDevice(d));
		if (p == P_MEMCPY) {
			/* a private full copy per device, on its node */
			CHECK(gpsMalloc((void **)&dd[d].a, bytes));
			CHECK(gpsMalloc((void **)&dd[d].b, bytes));
			CHECK(gpsMemcpy(dd[d].a, w->init, bytes,
					gpsMemcpyHostToDevice));
			CHECK(gpsMemcpy(dd[d].b, w->init, bytes,
					gpsMemcpyHostToDevice));
		} else {
			dd[d].a = ga;
			dd[d].b = gb;
		}
		if (!w->is_jacobi) {
			size_t nvs = dd[d].hi - dd[d].lo, i, e0, ne;

			e0 = w->rowptr[dd[d].lo];
			ne = w->rowptr[dd[d].hi] - e0;
			CHECK(gpsMallocHost((void **)&dd[d].rowptr,
					    (nvs + 1) * sizeof(uint32_t)));
			CHECK(gpsMallocHost((void **)&dd[d].col,
					    (ne ? ne : 1) * sizeof(uint32_t)));
			CHECK(gpsMallocHost((void **)&dd[d].invout,
					    (nvs ? nvs : 1) * sizeof(float)));
			for (i = 0; i <= nvs; i++)
				dd[d].rowptr[i] = (uint32_t)
					(w->rowptr[dd[d].lo + i] - e0);
			memcpy(dd[d].col, w->col + e0, ne * sizeof(uint32_t));
			memcpy(dd[d].invout, w->invout + dd[d].lo,
			       nvs * sizeof(float));
		}
	}
	CHECK(gpsSetDevice(0));
	if (ga) {
		CHECK(gpsMemcpy(ga, w->init, bytes, gpsMemcpyDefault));
		CHECK(gpsMemcpy(gb, w->init, bytes, gpsMemcpyDefault));
	}
	if (p == P_UM) {
		/* preferred location = the writer, then prefetch there */
		for (d = 0; d < nd; d++) {
			size_t off = dd[d].lo * sizeof(float);
			size_t len = (dd[d].hi - dd[d].lo) * sizeof(float);

			if (!len)
				continue;
			CHECK(gpsSetDevice(d));
			/* hints: a failure (a host without the node) leaves
			 * first-touch placement, and is said */
			if (gpsMemAdvise((char *)ga + off, len,
					 gpsMemAdviseSetPreferredLocation, d) ||
			    gpsMemAdvise((char *)gb + off, len,
					 gpsMemAdviseSetPreferredLocation, d) ||
			    gpsMemPrefetchAsync((char *)ga + off, len, d,
						NULL) ||
			    gpsMemPrefetchAsync((char *)gb + off, len, d,
						NULL))
				fprintf(stderr, "paradigms: um: placement "
					"hints for device %d failed: %s\n", d,
					gpsGetErrorString(gpsGetLastError()));
			CHECK(gpsDeviceSynchronize());
		}
	}

	t0 = bench_now();
	bench_counters_read(&c0);
	for (it = 0; it < iters; it++) {
		if (it == 0 && p == P_GPS_AUTO) {
			gpsError_t err = gpsTrackingStart();

			if (err == gpsSuccess)
				tracking = 1;
			else if (err == gpsErrorNotSupported)
				fprintf(stderr, "paradigms: tracking not "
					"supported: gps-auto = gps-all\n");
			else
				CHECK(err);
		}
		if (it == 1) {
			t1 = bench_now();
			res->t_first = t1 - t0;
			res->bytes = 0;
			res->copy_s = res->link_wait_s = 0;
			bench_counters_read(&c0);
		}
		sweep(w, dd, nd, 1);
		if (p == P_MEMCPY)
			exchange(w, dd, nd, 1, need, res, bw, lat);
		sweep(w, dd, nd, 0);
		if (p == P_MEMCPY)
			exchange(w, dd, nd, 0, need, res, bw, lat);
		if (it == 0 && tracking)
			CHECK(gpsTrackingStop());
	}
	res->t = bench_now() - t1;
	bench_counters_read(&c1);
	bench_counters_diff(&res->cnt, &c1, &c0);

	switch (p) {
	case P_GPS_AUTO:
	case P_GPS_ALL:
		res->bytes = res->cnt.traffic_bytes;
		res->bytes_src = res->cnt.valid ? "debugfs" : "n/a";
		bench_subscribers_debugfs(res->subs, sizeof(res->subs));
		if (!res->subs[0]) {
			unsigned long long h[BENCH_MAX_DEV + 1] = { 0 };

			if (!bench_subscribers_query(ga, bytes, h, nd) &&
			    !bench_subscribers_query(gb, bytes, h, nd))
				hist_string(res->subs, sizeof(res->subs), h,
					    nd);
		}
		break;
	case P_MEMCPY:
		res->bytes_src = "counted";
		break;
	case P_UM:
	case P_HOME:
		/* distinct remote floats per sweep: a lower bound */
		for (d = 0; d < nd; d++) {
			size_t own = dd[d].hi - dd[d].lo;

			if (p == P_UM)
				res->bytes += remote[d] * sizeof(float);
			else if (d != 0)
				res->bytes += (2 * own + remote[d]) *
					      sizeof(float);
		}
		res->bytes *= 2ull * (unsigned long long)(iters - 1);
		res->bytes_src = "estimate";
		break;
	default:
		res->bytes_src = "none";
		break;
	}

	/* the result: A after whole iterations */
	out = bench_xmalloc(bytes);
	for (d = 0; d < nd; d++) {
		size_t lo = p == P_MEMCPY ? dd[d].lo : 0;
		size_t hi = p == P_MEMCPY ? dd[d].hi : w->n;

		if (p != P_MEMCPY && d > 0)
			break;
		if (lo >= hi)
			continue;
		CHECK(gpsSetDevice(d));
		CHECK(gpsMemcpy(out + lo, dd[d].a + lo,
				(hi - lo) * sizeof(float), gpsMemcpyDefault));
	}
	CHECK(gpsSetDevice(0));
	for (d = 0; d < nd; d++) {
		if (p == P_MEMCPY) {
			CHECK(gpsFree(dd[d].a));
			CHECK(gpsFree(dd[d].b));
		}
		if (!w->is_jacobi) {
			CHECK(gpsFreeHost(dd[d].rowptr));
			CHECK(gpsFreeHost(dd[d].col));
			CHECK(gpsFreeHost(dd[d].invout));
		}
	}
	if (ga) {
		CHECK(gpsFree(ga));
		CHECK(gpsFree(gb));
	}
	free(need);
	return out;
}

/* ------------------------------------------------------------------ */
/* records                                                             */
/* ------------------------------------------------------------------ */

static unsigned long long memcpy_bytes;	/* of the current point */

static void record(const struct workload *w, const char *pname, int nd,
		   int iters, const struct result *r)
{
	const struct bench_counters *c = &r->cnt;

	printf("workload=%s paradigm=%s devices=%d %s iters=%d "
	       "state_bytes=%zu time_first_s=%.4f time_s=%.4f "
	       "speedup=%.3f bytes_moved=%llu bytes_src=%s "
	       "bytes_per_iter=%llu",
	       w->name, pname, nd, tags, iters, w->n * sizeof(float),
	       r->t_first, r->t, r->t > 0 ? w->t_single / r->t : 0.0,
	       r->bytes, r->bytes_src,
	       iters > 1 ? r->bytes / (unsigned long long)(iters - 1) : 0);
	if (memcpy_bytes)
		printf(" bytes_norm=%.3f", (double)r->bytes / memcpy_bytes);
	if (!strcmp(pname, "memcpy") || !strcmp(pname, "ideal"))
		printf(" copy_s=%.4f link_wait_s=%.4f", r->copy_s,
		       r->link_wait_s);
	if (!strncmp(pname, "gps", 3) && c->valid) {
		unsigned long long tot = c->blocks_merged + c->blocks_queued;

		printf(" subscribers=%s blocks_queued=%llu blocks_merged=%llu"
		       " hit_rate=%.4f blocks_pushed=%llu blocks_bulk=%llu"
		       " blocks_early=%llu write_faults=%llu fences=%llu"
		       " link_wait_s=%.4f",
		       r->subs[0] ? r->subs : "n/a", c->blocks_queued,
		       c->blocks_merged,
		       tot ? (double)c->blocks_merged / tot : 0.0,
		       c->blocks_pushed, c->blocks_bulk,
		       c->blocks_pushed_early, c->write_faults, c->fences,
		       c->link_wait_ns * 1e-9);
	} else if (!strncmp(pname, "gps", 3)) {
		printf(" subscribers=%s", r->subs[0] ? r->subs : "n/a");
	}
	printf(" verify=%s\n", r->verified < 0 ? "ref" :
	       r->verified ? "ok" : "FAIL");
	fflush(stdout);
}

static void run_point(struct workload *w, const int *plist, int np,
		      int iters)
{
	int i;

	memcpy_bytes = 0;
	for (i = 0; i < np; i++) {
		enum paradigm p = (enum paradigm)plist[i];
		struct result r;
		float *out;

		if (p == P_SINGLE)
			continue;
		out = run(w, p, ndev, iters, &r);
		r.verified = !memcmp(out, w->ref, w->n * sizeof(float));
		if (!r.verified) {
			size_t k, bad = 0;

			for (k = 0; k < w->n; k++)
				bad += memcmp(&out[k], &w->ref[k],
					      sizeof(float)) != 0;
			fprintf(stderr, "paradigms: %s/%s: %zu of %zu floats "
				"differ from the single-device run\n",
				w->name, pnames[p], bad, w->n);
			exit_status = 1;
		}
		free(out);
		if (p == P_MEMCPY)
			memcpy_bytes = r.bytes;
		record(w, pnames[p], ndev, iters, &r);
		if (p == P_MEMCPY) {
			/* the paper's "infinite bandwidth": memcpy minus
			 * its transfers */
			struct result ideal = r;

			ideal.t = r.t - r.copy_s - r.link_wait_s;
			ideal.bytes = 0;
			ideal.bytes_src = "none";
			ideal.verified = -1;
			record(w, "ideal", ndev, iters, &ideal);
		}
	}
}

/* ------------------------------------------------------------------ */
/* local memcpy bandwidth (for the link sweep)                          */
/* ------------------------------------------------------------------ */

struct bw_args {
	char *dst;
	char *src;
	size_t n;
	int reps;
	double *best;
};

static void bw_kernel(void *p)
{
	const struct bw_args *a = p;
	int r;

	memcpy(a->dst, a->src, a->n);	/* fault the pages in */
	for (r = 0; r < a->reps; r++) {
		double t = bench_now();

		memcpy(a->dst, a->src, a->n);
		t = bench_now() - t;
		if (*a->best == 0 || t < *a->best)
			*a->best = t;
	}
}

/* Best memcpy bandwidth, bytes/s, of a thread of device 0 between two
 * buffers on its node. */
static double local_bandwidth(size_t n)
{
	double best = 0;
	struct bw_args a = { .n = n, .reps = 5, .best = &best };

	CHECK(gpsSetDevice(0));
	CHECK(gpsMalloc((void **)&a.dst, n));
	CHECK(gpsMalloc((void **)&a.src, n));
	CHECK(gpsMemset(a.src, 1, n));
	CHECK(gpsLaunchKernel(bw_kernel, gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			      GPS_ARGS_RAW(&a), streams[0]));
	CHECK(gpsStreamSynchronize(streams[0]));
	CHECK(gpsFree(a.dst));
	CHECK(gpsFree(a.src));
	return best > 0 ? (double)n / best : 0;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static int parse_list(const char *s, double *v, int max)
{
	int n = 0;
	char *end;

	while (*s && n < max) {
		v[n++] = strtod(s, &end);
		if (end == s)
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: paradigms [-q] [-d devices] [-w jacobi,pagerank]\n"
		"         [-p single,memcpy,gps-auto,gps-all,um,home]\n"
		"         [-i iterations] [-r rows] [-c cols] [-V vertices]\n"
		"         [-k degree] [-L ratios] [-l latency_ns]"
		" [-Q capacities]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *wlist = "jacobi,pagerank", *plist_s = NULL;
	size_t rows = 0, cols = 0, nv = 0, degree = 8;
	double ratios[16], caps[16];
	int nratios = 0, ncaps = 0, quick = 0, iters = 0, count, opt, i, d;
	int plist[P_NR * 2], np = 0, lat_set = 0;
	long long lat_ns = 0;
	struct workload wls[2];
	int nwl = 0;

	while ((opt = getopt(argc, argv, "qd:w:p:i:r:c:V:k:L:l:Q:h")) != -1) {
		switch (opt) {
		case 'q': quick = 1; break;
		case 'd': ndev = atoi(optarg); break;
		case 'w': wlist = optarg; break;
		case 'p': plist_s = optarg; break;
		case 'i': iters = atoi(optarg); break;
		case 'r': rows = strtoul(optarg, NULL, 0); break;
		case 'c': cols = strtoul(optarg, NULL, 0); break;
		case 'V': nv = strtoul(optarg, NULL, 0); break;
		case 'k': degree = strtoul(optarg, NULL, 0); break;
		case 'L':
			nratios = parse_list(optarg, ratios, 16);
			if (nratios <= 0)
				usage();
			break;
		case 'l': lat_ns = atoll(optarg); lat_set = 1; break;
		case 'Q':
			ncaps = parse_list(optarg, caps, 16);
			if (ncaps <= 0)
				usage();
			break;
		default:
			usage();
		}
	}
	memset(wls, 0, sizeof(wls));
	if (!iters)
		iters = quick ? 3 : 5;
	if (!rows)
		rows = quick ? 16 : 64;
	if (!cols)
		cols = 16384;		/* one 64 KiB GPS page per row */
	if (!nv)
		nv = quick ? 1 << 16 : 1 << 18;
	if (iters < 2 || rows < 3 || cols < 3 || nv < 2 || !degree ||
	    degree > 64)
		usage();

	if (!plist_s)
		plist_s = ncaps ? "gps-auto,gps-all" :
			  nratios ? "memcpy,gps-auto,gps-all" :
			  "memcpy,gps-auto,gps-all,um,home";
	{
		char *dup = strdup(plist_s), *tok, *save = NULL;

		for (tok = strtok_r(dup, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			for (i = 0; i < P_NR; i++)
				if (!strcmp(tok, pnames[i]))
					break;
			if (i == P_NR) {
				fprintf(stderr, "paradigms: unknown paradigm "
					"'%s'\n", tok);
				usage();
			}
			if (np < (int)(sizeof(plist) / sizeof(plist[0])))
				plist[np++] = i;
		}
		free(dup);
	}

	CHECK(gpsGetDeviceCount(&count));
	if (ndev <= 0 || ndev > count)
		ndev = count;
	if (ndev > BENCH_MAX_DEV)
		ndev = BENCH_MAX_DEV;
	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamCreate(&streams[d]));
	}
	CHECK(gpsSetDevice(0));

	if (strstr(wlist, "jacobi"))
		jacobi_setup(&wls[nwl++], rows, cols);
	if (strstr(wlist, "pagerank"))
		pagerank_setup(&wls[nwl++], nv, degree);
	if (!nwl)
		usage();

	printf("# paradigms: %d device(s), %d iterations (2 sweeps each), "
	       "page_size=%llu block_size=%llu queue_capacity=%llu "
	       "bulk_blocks=%llu harvest_interval_us=%llu "
	       "link_bandwidth=%llu link_latency_ns=%llu\n", ndev, iters,
	       bench_knob_ull("page_size"), bench_knob_ull("block_size"),
	       bench_knob_ull("queue_capacity"), bench_knob_ull("bulk_blocks"),
	       bench_knob_ull("harvest_interval_us"),
	       bench_knob_ull("link_bandwidth"),
	       bench_knob_ull("link_latency_ns"));

	/* the reference and the baseline: one device */
	for (i = 0; i < nwl; i++) {
		struct result r;

		wls[i].ref = run(&wls[i], P_SINGLE, 1, iters, &r);
		wls[i].t_single = r.t;
		record(&wls[i], "single", 1, iters, &r);
	}

	if (lat_set)
		bench_knob_set("link_latency_ns", "%lld", lat_ns);
	if (nratios) {
		double local = local_bandwidth(16u << 20);
		int k;

		printf("# local memcpy bandwidth of device 0: %.0f bytes/s\n",
		       local);
		for (k = 0; k < nratios; k++) {
			unsigned long long bw = ratios[k] > 0 ?
				(unsigned long long)(local / ratios[k]) : 0;

			if (bw && bw < 1000)
				bw = 1000;
			bench_knob_set("link_bandwidth", "%llu", bw);
			snprintf(tags, sizeof(tags), "sweep=link "
				 "link_ratio=%g link_bw=%llu local_bw=%.0f "
				 "link_latency_ns=%llu", ratios[k], bw, local,
				 bench_knob_ull("link_latency_ns"));
			for (i = 0; i < nwl; i++)
				run_point(&wls[i], plist, np, iters);
		}
	}
	if (ncaps) {
		int k;

		bench_knob_set("bulk_blocks", "0");
		for (k = 0; k < ncaps; k++) {
			bench_knob_set("queue_capacity", "%.0f", caps[k]);
			snprintf(tags, sizeof(tags), "sweep=queue "
				 "queue_capacity=%llu queue_watermark=%llu "
				 "bulk_blocks=0",
				 bench_knob_ull("queue_capacity"),
				 bench_knob_ull("queue_watermark"));
			for (i = 0; i < nwl; i++)
				run_point(&wls[i], plist, np, iters);
		}
	}
	if (!nratios && !ncaps)
		for (i = 0; i < nwl; i++)
			run_point(&wls[i], plist, np, iters);

	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamDestroy(streams[d]));
	}
	for (i = 0; i < nwl; i++) {
		free(wls[i].ref);
		free(wls[i].init);
		free(wls[i].rowptr);
		free(wls[i].col);
		free(wls[i].invout);
	}
	bench_knobs_restore();
	printf("# paradigms: %s\n", exit_status ? "VERIFY FAILED" :
	       "every result identical to the single-device run");
	return exit_status;
}
