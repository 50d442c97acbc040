// SPDX-License-Identifier: MIT
/*
 * paradigms: the paper's eight workloads in the paper's multi-GPU
 * programming paradigms, side by side in one run (Figures 8-11, 13, 14).
 *
 * This file is the driver: the paradigms, timing, byte accounting and
 * records.  The workloads are in bench/workloads/, one file each, behind
 * the interface of bench/workload.h: shared buffers, an iteration of
 * phases (kernel boundaries), a slice kernel per device and phase, and
 * what each device reads and writes in each phase.
 *
 *   jacobi pagerank pagerank-push sssp als ct b2reqwp diffusion hit
 *
 * Paradigms (Documentation/benchmarks.rst says exactly what each does):
 *
 *   single         one device, conventional memory: the reference result
 *                  and the baseline of every speedup
 *   memcpy         the paper's: every buffer duplicated on every device
 *                  (conventional memory on its node); after each phase
 *                  each device's new data is broadcast to every other
 *                  device with gpsMemcpyAsync, no overlap with compute
 *   memcpy-needed  the same, but only the 4 KiB chunks of the new data
 *                  that the receiver reads: the lower bound of bulk copies
 *   ideal          not a run: memcpy's time minus its transfer time (the
 *                  paper's "infinite bandwidth")
 *   gps-auto       GPS memory, tracking around the first iteration, the
 *                  driver's knobs as they are (gps's own best mode)
 *   gps-paper      the same in the paper's mode: bulk_blocks=0 (every
 *                  changed block through the write queue) and
 *                  track_policy=touched (subscribe by touch)
 *   gps-all        GPS memory, every device subscribed to every page
 *   um             unified memory with the paper's hints: managed memory,
 *                  preferred location = the writer, and before every
 *                  phase a prefetch of each device's remote reads to it
 *                  and of its writes back to it (the library's
 *                  move_pages, charged to the link); what a device then
 *                  finds elsewhere it loads remotely (modelled)
 *   um-fault       the paper's plain UM: the driver's managed memory
 *                  (gpsMemManagedOnFault), one copy per 4 KiB page,
 *                  moved by a fault to the device that touches it, with
 *                  UVM's thrashing guard (pinned pages are then mapped
 *                  remotely); no hints; migrations counted by the
 *                  driver and charged to its link model, loads and
 *                  stores of pages that stayed elsewhere all phase
 *                  modelled as um's
 *   rdl            remote demand loads: each GPS page has one copy, on
 *                  the device that writes it (a manual GPS allocation
 *                  with that device as the only subscriber); loads of
 *                  another device's data go to its memory (modelled)
 *   home           one conventional copy on device 0 for everyone
 *   finepack       gps-auto, its pushes counted on the wire as FinePack
 *                  packs them: every block a sub-packet, many to one
 *                  destination in one packet (gps-auto: a packet each)
 *   proact         PROACT: private copies as memcpy's; the first
 *                  iteration profiles; then a polling agent per device
 *                  copies each chunk a consumer reads as soon as the
 *                  producer's blocks that write it are done (proact.h)
 *   carve          CARVE: private copies as memcpy's, a word's home the
 *                  device that last wrote it; each device's reads of
 *                  remote lines go through its Remote Data Cache of -R
 *                  bytes (128-byte lines, direct-mapped): a miss copies
 *                  the line from its home before the phase, a hit costs
 *                  nothing; a line another device wrote is invalidated
 *                  at the kernel boundary (carve.h)
 *
 * Every paradigm's buffers are compared with single's after the run (bit
 * for bit, or within the workload's stated tolerance); a difference
 * prints verify=FAIL and makes the exit status 1.  One key=value record
 * per line (tools/gps-plot reads them); time_s and the bytes cover the
 * iterations after the first (which holds the tracking of the gps
 * paradigms), time_first_s the first.
 *
 * Bytes (bytes_src): counted (what gpsMemcpy was given; the driver's
 * per-node traffic counters for GPS), model (remote loads and stores as
 * 128-byte lines, each line once per phase and device, plus um's page
 * migrations), and for every multi-device record bytes_needed, the
 * workload's exact count of the bytes a device read that another device
 * wrote.  Modelled bytes are charged to the same link model as the
 * driver's pushes and the library's copies (link_bandwidth,
 * link_latency_ns): after each phase the run waits until the busiest
 * source's link would have carried its bytes.
 *
 * Sweeps (need root; every knob changed is restored at exit):
 *   -L ratios   link model (Fig. 13): link_bandwidth = local / R
 *   -Q caps     write queue (Fig. 14): bulk_blocks = 0, queue_capacity
 *   -P sizes    GPS page size (the paper's 4 KiB / 64 KiB / 2 MiB study):
 *               page_size for the run's allocations; inside each -L
 *               ratio when both are given (records: sweep=page, with
 *               link_ratio when -L is given)
 *
 *   paradigms [-q] [-d devices] [-w workloads] [-p paradigms] [-i iters]
 *             [-z size] [-r rows] [-c cols] [-V vertices] [-k degree]
 *             [-L ratios] [-l latency_ns] [-Q capacities]
 *             [-P page_sizes] [-H header_bytes] [-M max_payload]
 *             [-S sub_header_bytes] [-C proact_chunk] [-A poll_us]
 *             [-R rdc_bytes]
 *
 * The packet model (-H, -M, -S; FinePack's): every record of a paradigm
 * that moves bytes carries wire_bytes (payload + a header per packet),
 * link_eff (payload / wire) and packets; finepack is gps-auto with its
 * pushes packed per destination; proact (proact.h) sends chunks of -C
 * bytes from a polling agent per device (polling every -A microseconds;
 * -A 0: the agent runs in the producer's blocks, at each one's end)
 * while the producer runs.
 *
 * carve's RDC (-R): bytes per device, by default a quarter of the
 * workload's state (rounded down to whole lines); its records carry
 * rdc_bytes and the RDCs' hits, misses, evictions and invalidations.
 */
#define BENCH_NAME "paradigms"
#include <stdint.h>

#include "bench_common.h"
#include "carve.h"
#include "proact.h"
#include "workload.h"

#define LINE		128	/* bytes of a modelled remote access */
#define UM_PAGE		4096	/* bytes of a managed page */
#define CHUNK		4096	/* memcpy-needed granularity */
#define NOBODY		0xff
#define WPL		(LINE / WL_WORD)	/* words per line */

enum paradigm {
	P_SINGLE, P_MEMCPY, P_MEMCPY_NEEDED, P_GPS_AUTO, P_GPS_PAPER,
	P_GPS_ALL, P_UM, P_UM_FAULT, P_RDL, P_HOME, P_FINEPACK, P_PROACT,
	P_CARVE, P_NR
};

static const char *const pnames[P_NR] = {
	"single", "memcpy", "memcpy-needed", "gps-auto", "gps-paper",
	"gps-all", "um", "um-fault", "rdl", "home", "finepack", "proact",
	"carve",
};

static const struct wl_ops *const all_workloads[] = {
	&wl_jacobi, &wl_pagerank, &wl_pagerank_push, &wl_sssp, &wl_als,
	&wl_ct, &wl_b2reqwp, &wl_diffusion, &wl_hit,
};
#define NWL	(int)(sizeof(all_workloads) / sizeof(all_workloads[0]))

/* pages of @size bytes that buffer @b of @w spans */
static size_t buf_pages(const struct wl *w, int b, size_t size)
{
	return (w->buf[b].bytes + size - 1) / size;
}

/* managed (4 KiB) pages of buffer @b of @w */
static size_t um_pages(const struct wl *w, int b)
{
	return buf_pages(w, b, UM_PAGE);
}

/* what one run of one paradigm measured */
struct result {
	double t_first, t;
	double copy_s, link_wait_s;	/* exchange and modelled link */
	unsigned long long bytes, migrated, needed;
	const char *bytes_src;		/* counted, model, none */
	unsigned long long wpages;	/* GPS pages written, per device
					 * and phase, over the timed
					 * iterations */
	struct bench_counters cnt;
	/* the packet model (wire_bytes): transfers of payload, and
	 * header-only requests (a remote load's read request) */
	unsigned long long xfers, reqs, wire;
	struct pa_stats pa;		/* proact's agents */
	struct carve_stats cv;		/* carve's RDCs */
	size_t rdc_bytes;		/* carve's RDC, per device */
	char subs[256];
	int verified;			/* 1 ok, 0 fail, -1 not checked */
};

static int ndev;
static gpsStream_t streams[BENCH_MAX_DEV];

/*
 * The packet model of the link (FinePack, the dissertation's ch. V):
 * every transfer pays a header of hdr_bytes per packet of at most
 * max_payload bytes; FinePack packs sub-packets (sub_hdr bytes of
 * header each) to one destination into one packet.  Defaults: PCIe's
 * 4 KiB maximum payload and 5-byte sub-headers (its Table 5.3), and
 * 24 bytes per packet (a 16-byte TLP header with a 64-bit address,
 * 2 bytes of sequence number, 4 of LCRC, 2 of framing).
 */
static unsigned long long hdr_bytes = 24, max_payload = 4096, sub_hdr = 5;
/* proact's knobs: chunk bytes, the agents' polling interval */
static unsigned long long pa_chunk = 65536, pa_poll_us = 20;
/* carve's RDC bytes per device; 0: a quarter of the state */
static unsigned long long rdc_opt;
/* proact's agents while a proact run launches (wl_launch wraps) */
static struct proact *cur_pa;
static int cur_dev;
static int exit_status;
static char tags[160] = "sweep=none";

/* ------------------------------------------------------------------ */
/* helpers the workloads use                                           */
/* ------------------------------------------------------------------ */

void *wl_host_alloc(size_t bytes)
{
	void *p;

	CHECK(gpsMallocHost(&p, bytes ? bytes : 1));
	memset(p, 0, bytes);
	return p;
}

void wl_host_free(void *p)
{
	CHECK(gpsFreeHost(p));
}

void *wl_xmalloc(size_t bytes)
{
	return bench_xmalloc(bytes);
}

void wl_launch(gpsKernel_t fn, unsigned int blocks, const gpsKernelArgs *a,
	       gpsStream_t s)
{
	if (cur_pa) {
		proact_launch(cur_pa, cur_dev, fn, blocks, a, s);
		return;
	}
	CHECK(gpsLaunchKernel(fn, gpsDim(blocks, 1, 1), gpsDim(1, 1, 1), a,
			      s));
}

/* ------------------------------------------------------------------ */
/* the plan: who reads and writes what, derived once per device count  */
/* ------------------------------------------------------------------ */

struct span {
	int buf;
	size_t off, len;
};

struct spans {
	struct span *v;
	size_t n, cap;
};

/* a list of (buffer << 28 | index) of lines or pages */
struct idx {
	uint32_t *v;
	size_t n, cap;
};

struct plan {
	int nd, nph;
	struct wl_access *rd, *wr;	/* [ph * nd + d] */
	uint8_t *owner[WL_MAX_BUF];	/* per word: its writer, NOBODY */
	unsigned long long *exact;	/* [ph * nd + e]: bytes_needed */
	unsigned long long *sends;	/* [ph * nd + s]: of those, from s */
	unsigned long long *rdl;	/* [ph * nd + s]: lines s serves */
	unsigned long long *home;	/* [ph * nd + s] */
	struct spans *bcast;		/* [ph * nd + d]: d's new data */
	struct spans *needed;		/* [(ph * nd + d) * nd + e] */
	struct spans *own;		/* [d]: what d writes (any phase) */
	struct spans unowned;		/* words no device writes */
	struct idx *rlines, *wlines;	/* [ph * nd + e]: um's loads, stores */
	struct idx *umr, *umw;		/* [ph * nd + e]: um's prefetches */
};

static void spans_add(struct spans *s, int buf, size_t off, size_t len)
{
	if (s->n && s->v[s->n - 1].buf == buf &&
	    s->v[s->n - 1].off + s->v[s->n - 1].len == off) {
		s->v[s->n - 1].len += len;
		return;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v) {
			fprintf(stderr, "paradigms: out of memory\n");
			exit(2);
		}
	}
	s->v[s->n++] = (struct span){ buf, off, len };
}

static void idx_add(struct idx *x, int buf, size_t i)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
		if (!x->v) {
			fprintf(stderr, "paradigms: out of memory\n");
			exit(2);
		}
	}
	x->v[x->n++] = (uint32_t)buf << 28 | (uint32_t)i;
}

static size_t nwords(const struct wl *w, int b)
{
	return w->buf[b].bytes / WL_WORD;
}

static void access_alloc(const struct wl *w, struct wl_access *a)
{
	int b;

	for (b = 0; b < w->nbuf; b++) {
		a->words[b] = nwords(w, b);
		a->bits[b] = bench_xmalloc((a->words[b] + 7) / 8 + 8);
	}
}

/* maximal runs of marked words of @a, as byte spans */
static void access_runs(const struct wl *w, const struct wl_access *a,
			struct spans *out)
{
	int b;

	for (b = 0; b < w->nbuf; b++) {
		size_t i = 0, n = a->words[b];

		while (i < n) {
			size_t j;

			if (!(i & 7) && !a->bits[b][i >> 3]) {
				i += 8;
				continue;
			}
			if (!wl_marked(a, b, i)) {
				i++;
				continue;
			}
			for (j = i; j < n && wl_marked(a, b, j); j++)
				if (!(j & 7) && a->bits[b][j >> 3] == 0xff &&
				    j + 8 <= n)
					j += 7;
			spans_add(out, b, i * WL_WORD, (j - i) * WL_WORD);
			i = j;
		}
	}
}

/* any marked word in words [w0, w0 + n) of buffer b */
static int access_any(const struct wl_access *a, int b, size_t w0, size_t n)
{
	size_t i;

	if (w0 + n > a->words[b])
		n = a->words[b] > w0 ? a->words[b] - w0 : 0;
	for (i = 0; i < n; i++) {
		if (!((w0 + i) & 7) && i + 8 <= n &&
		    !a->bits[b][(w0 + i) >> 3]) {
			i += 7;
			continue;
		}
		if (wl_marked(a, b, w0 + i))
			return 1;
	}
	return 0;
}

static void plan_build(struct plan *pl, struct wl *w, int nd)
{
	int nph = w->nphases, ph, d, e, b;
	size_t i, k;
	uint8_t *needc[WL_MAX_DEV][WL_MAX_BUF];

	memset(pl, 0, sizeof(*pl));
	pl->nd = nd;
	pl->nph = nph;
	pl->rd = bench_xmalloc((size_t)nph * nd * sizeof(*pl->rd));
	pl->wr = bench_xmalloc((size_t)nph * nd * sizeof(*pl->wr));
	for (ph = 0; ph < nph; ph++)
		for (d = 0; d < nd; d++) {
			struct wl_access *r = &pl->rd[ph * nd + d];
			struct wl_access *wr = &pl->wr[ph * nd + d];

			access_alloc(w, r);
			access_alloc(w, wr);
			w->ops->reads(w, ph, d, nd, r);
			w->ops->writes(w, ph, d, nd, wr);
		}
	/* owners */
	for (b = 0; b < w->nbuf; b++) {
		pl->owner[b] = bench_xmalloc(nwords(w, b) + 1);
		memset(pl->owner[b], NOBODY, nwords(w, b));
		for (ph = 0; ph < nph; ph++)
			for (d = 0; d < nd; d++) {
				const struct wl_access *a = &pl->wr[ph * nd + d];

				for (i = 0; i < nwords(w, b); i++)
					if (pl->owner[b][i] == NOBODY &&
					    wl_marked(a, b, i))
						pl->owner[b][i] = (uint8_t)d;
			}
	}
	pl->own = bench_xmalloc((size_t)nd * sizeof(*pl->own));
	for (b = 0; b < w->nbuf; b++) {
		size_t n = nwords(w, b), j;

		for (i = 0; i < n; i = j) {
			for (j = i; j < n && pl->owner[b][j] == pl->owner[b][i];
			     j++)
				;
			spans_add(pl->owner[b][i] == NOBODY ? &pl->unowned :
				  &pl->own[pl->owner[b][i]], b, i * WL_WORD,
				  (j - i) * WL_WORD);
		}
	}

	pl->exact = bench_xmalloc((size_t)nph * nd * sizeof(*pl->exact));
	pl->sends = bench_xmalloc((size_t)nph * nd * sizeof(*pl->sends));
	pl->rdl = bench_xmalloc((size_t)nph * nd * sizeof(*pl->rdl));
	pl->home = bench_xmalloc((size_t)nph * nd * sizeof(*pl->home));
	pl->rlines = bench_xmalloc((size_t)nph * nd * sizeof(*pl->rlines));
	pl->wlines = bench_xmalloc((size_t)nph * nd * sizeof(*pl->wlines));
	pl->umr = bench_xmalloc((size_t)nph * nd * sizeof(*pl->umr));
	pl->umw = bench_xmalloc((size_t)nph * nd * sizeof(*pl->umw));
	for (e = 0; e < nd; e++)
		for (b = 0; b < w->nbuf; b++)
			needc[e][b] = bench_xmalloc(w->buf[b].bytes / CHUNK + 1);
	for (ph = 0; ph < nph; ph++)
		for (e = 0; e < nd; e++) {
			const struct wl_access *r = &pl->rd[ph * nd + e];
			const struct wl_access *wr = &pl->wr[ph * nd + e];
			size_t x = (size_t)ph * nd + e;

			for (b = 0; b < w->nbuf; b++) {
				size_t n = nwords(w, b);
				size_t lines = (n + WPL - 1) / WPL;
				size_t pages = um_pages(w, b);
				size_t ppl = UM_PAGE / LINE, pg;

				for (k = 0; k < lines; k++) {
					uint64_t srcs = 0;
					size_t i0 = k * WPL;
					int s;

					if (access_any(wr, b, i0, WPL))
						idx_add(&pl->wlines[x], b, k);
					if (!access_any(r, b, i0, WPL))
						continue;
					idx_add(&pl->rlines[x], b, k);
					for (i = i0; i < i0 + WPL && i < n;
					     i++) {
						uint8_t o = pl->owner[b][i];

						if (!wl_marked(r, b, i) ||
						    o == NOBODY || o == e)
							continue;
						srcs |= 1ull << o;
						pl->exact[x] += WL_WORD;
						pl->sends[(size_t)ph * nd + o] +=
							WL_WORD;
						needc[e][b][i * WL_WORD /
							    CHUNK] = 1;
					}
					for (s = 0; s < nd; s++)
						if (srcs >> s & 1)
							pl->rdl[(size_t)ph *
								nd + s] += LINE;
					if (e)
						pl->home[(size_t)ph * nd] +=
							LINE;
				}
				/* pages: remote reads, writes */
				for (pg = 0; pg < pages; pg++) {
					int rem = 0;

					for (k = pg * ppl; k < (pg + 1) * ppl &&
					     k < lines && !rem; k++)
						for (i = k * WPL; i < (k + 1) *
						     WPL && i < n; i++)
							if (wl_marked(r, b, i) &&
							    pl->owner[b][i] != e) {
								rem = 1;
								break;
							}
					if (rem)
						idx_add(&pl->umr[x], b, pg);
					if (access_any(wr, b, pg * UM_PAGE /
						       WL_WORD, UM_PAGE /
						       WL_WORD))
						idx_add(&pl->umw[x], b, pg);
				}
			}
			/* home: remote stores of e */
			if (e)
				pl->home[x] += LINE * pl->wlines[x].n;
		}
	/* broadcast and needed spans */
	pl->bcast = bench_xmalloc((size_t)nph * nd * sizeof(*pl->bcast));
	pl->needed = bench_xmalloc((size_t)nph * nd * nd *
				   sizeof(*pl->needed));
	for (ph = 0; ph < nph; ph++)
		for (d = 0; d < nd; d++) {
			struct spans *bc = &pl->bcast[ph * nd + d];

			access_runs(w, &pl->wr[ph * nd + d], bc);
			for (e = 0; e < nd; e++) {
				struct spans *nd_ = &pl->needed[((size_t)ph *
							nd + d) * nd + e];

				if (e == d)
					continue;
				for (k = 0; k < bc->n; k++) {
					const struct span *s = &bc->v[k];
					size_t off = s->off, end = s->off +
						     s->len;

					while (off < end) {
						size_t c = off / CHUNK;
						size_t ce = (c + 1) * CHUNK;

						if (ce > end)
							ce = end;
						if (needc[e][s->buf][c])
							spans_add(nd_, s->buf,
								  off, ce - off);
						off = ce;
					}
				}
			}
		}
	for (e = 0; e < nd; e++)
		for (b = 0; b < w->nbuf; b++)
			free(needc[e][b]);
}

static void plan_free(struct plan *pl, const struct wl *w)
{
	size_t x, n = (size_t)pl->nph * pl->nd;
	int b;

	for (x = 0; x < n; x++) {
		for (b = 0; b < w->nbuf; b++) {
			free(pl->rd[x].bits[b]);
			free(pl->wr[x].bits[b]);
		}
		free(pl->bcast[x].v);
		free(pl->rlines[x].v);
		free(pl->wlines[x].v);
		free(pl->umr[x].v);
		free(pl->umw[x].v);
	}
	for (x = 0; x < n * pl->nd; x++)
		free(pl->needed[x].v);
	for (x = 0; x < (size_t)pl->nd; x++)
		free(pl->own[x].v);
	for (b = 0; b < w->nbuf; b++)
		free(pl->owner[b]);
	free(pl->unowned.v);
	free(pl->rd);
	free(pl->wr);
	free(pl->exact);
	free(pl->sends);
	free(pl->rdl);
	free(pl->home);
	free(pl->bcast);
	free(pl->needed);
	free(pl->own);
	free(pl->rlines);
	free(pl->wlines);
	free(pl->umr);
	free(pl->umw);
}

static int xfer_cmp(const void *a, const void *b)
{
	const struct pa_xfer *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->to - y->to;
}

/*
 * proact's agents and their transfers: for each (phase, producer), what
 * each consumer reads of what the producer writes (the needed spans,
 * which is what the profiling iteration of PROACT learns), cut at
 * multiples of @chunk bytes of the buffer, each with its end in the
 * producer's linear layout (its write runs, in order).
 */
static struct proact *proact_plan(const struct plan *pl, size_t chunk)
{
	int nd = pl->nd, ph, d, e;
	struct proact *pa = proact_new(nd, pl->nph, max_payload,
				       (unsigned int)pa_poll_us);

	for (ph = 0; ph < pl->nph; ph++)
		for (d = 0; d < nd; d++) {
			const struct spans *bc = &pl->bcast[ph * nd + d];
			unsigned long long *pre;
			struct pa_xfer *v = NULL;
			size_t n = 0, cap = 0, k, j;

			pre = bench_xmalloc((bc->n + 1) * sizeof(*pre));
			pre[0] = 0;
			for (k = 0; k < bc->n; k++)
				pre[k + 1] = pre[k] + bc->v[k].len;
			for (e = 0; e < nd; e++) {
				const struct spans *ns;

				if (e == d)
					continue;
				ns = &pl->needed[((size_t)ph * nd + d) * nd + e];
				for (j = 0, k = 0; j < ns->n; j++) {
					const struct span *sp = &ns->v[j];
					size_t off = sp->off;
					size_t end = sp->off + sp->len;

					/* the write run holding the span */
					while (k < bc->n &&
					       (bc->v[k].buf != sp->buf ||
						bc->v[k].off + bc->v[k].len <=
						off))
						k++;
					if (k == bc->n) {
						fprintf(stderr, "paradigms: "
							"proact: a needed span "
							"outside the writes\n");
						exit(2);
					}
					while (off < end) {
						size_t ce = (off / chunk + 1) *
							    chunk;

						if (ce > end)
							ce = end;
						if (n == cap) {
							cap = cap ? 2 * cap : 64;
							v = realloc(v, cap *
								    sizeof(*v));
							if (!v) {
								fprintf(stderr,
									"out of "
									"memory\n");
								exit(2);
							}
						}
						v[n++] = (struct pa_xfer){
							.buf = sp->buf, .to = e,
							.off = off,
							.len = ce - off,
							.end = pre[k] + ce -
							       bc->v[k].off,
						};
						off = ce;
					}
				}
			}
			if (n)
				qsort(v, n, sizeof(*v), xfer_cmp);
			proact_set(pa, ph, d, v, n, pre[bc->n]);
			free(pre);
		}
	return pa;
}

/* ------------------------------------------------------------------ */
/* the link model for the bytes this program models                    */
/* ------------------------------------------------------------------ */

struct link {
	unsigned long long bw, lat_ns;
};

/*
 * Waits until the busiest source of @bytes (per device) would have
 * carried them, from @t0 on: the remote accesses of a phase overlap its
 * compute, but no phase ends before its bytes have crossed.
 */
static void link_charge(const struct link *l, const unsigned long long
			*bytes, int nd, double t0, struct result *res)
{
	unsigned long long most = 0;
	double need;
	int s;

	for (s = 0; s < nd; s++)
		if (bytes[s] > most)
			most = bytes[s];
	if (!most || (!l->bw && !l->lat_ns))
		return;
	need = (l->bw ? (double)most / (double)l->bw : 0) + l->lat_ns * 1e-9;
	need -= bench_now() - t0;
	if (need > 0) {
		bench_sleep(need);
		res->link_wait_s += need;
	}
}

/* ------------------------------------------------------------------ */
/* one run                                                             */
/* ------------------------------------------------------------------ */

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

/* memcpy paradigms: the spans of phase @ph, every source at once */
static void exchange(const struct wl *w, const struct plan *pl, int ph,
		     int needed_only, void *bufs[][WL_MAX_BUF],
		     const struct link *l, struct result *res)
{
	unsigned long long from[BENCH_MAX_DEV] = { 0 };
	int nd = pl->nd, d, e;
	double t0 = bench_now();
	size_t k;

	(void)w;
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		for (e = 0; e < nd; e++) {
			const struct spans *s = needed_only ?
				&pl->needed[((size_t)ph * nd + d) * nd + e] :
				&pl->bcast[ph * nd + d];

			if (e == d)
				continue;
			for (k = 0; k < s->n; k++) {
				const struct span *sp = &s->v[k];

				CHECK(gpsMemcpyAsync((char *)bufs[e][sp->buf] +
						     sp->off,
						     (char *)bufs[d][sp->buf] +
						     sp->off, sp->len,
						     gpsMemcpyDeviceToDevice,
						     streams[d]));
				from[d] += sp->len;
				res->xfers += (sp->len + max_payload - 1) /
					      max_payload;
			}
		}
	}
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamSynchronize(streams[d]));
		res->bytes += from[d];
	}
	res->copy_s += bench_now() - t0;
	/* libgpsu charges its copies to the link itself; this waits only
	 * for what it would not have */
	link_charge(l, from, nd, t0, res);
}

/* um: prefetch a run of pages [p0, p1) of buffer b to device d */
static void um_prefetch(const struct wl *w, void *buf, int b, size_t p0,
			size_t p1, int d)
{
	size_t off = p0 * UM_PAGE, end = p1 * UM_PAGE;

	if (end > w->buf[b].bytes)
		end = w->buf[b].bytes;
	if (end <= off)
		return;
	if (gpsMemPrefetchAsync((char *)buf + off, end - off, d, streams[d]))
		CHECK(gpsGetLastError());
}

/*
 * um, before phase @ph: each device's remote reads to it, then each
 * device's writes back to it (its preferred location); @loc follows
 * where every page is.  Pages moved count as migrated bytes.
 */
static void um_before(const struct wl *w, const struct plan *pl, int ph,
		      void *const *ga, uint8_t **loc, struct result *res)
{
	int nd = pl->nd, pass, d;

	for (pass = 0; pass < 2; pass++) {
		for (d = 0; d < nd; d++) {
			const struct idx *x = pass ? &pl->umw[ph * nd + d] :
					      &pl->umr[ph * nd + d];
			size_t k, start = 0, last = 0;
			int cur = -1;

			CHECK(gpsSetDevice(d));
			for (k = 0; k < x->n; k++) {
				int b = (int)(x->v[k] >> 28);
				size_t pg = x->v[k] & ((1u << 28) - 1);

				if (loc[b][pg] == d)
					continue;
				loc[b][pg] = (uint8_t)d;
				res->migrated += UM_PAGE;
				if (cur == b && pg == last + 1) {
					last = pg;
					continue;
				}
				if (cur >= 0)
					um_prefetch(w, ga[cur], cur, start,
						    last + 1, d);
				cur = b;
				start = last = pg;
			}
			if (cur >= 0)
				um_prefetch(w, ga[cur], cur, start, last + 1,
					    d);
		}
		for (d = 0; d < nd; d++) {
			CHECK(gpsSetDevice(d));
			CHECK(gpsStreamSynchronize(streams[d]));
		}
	}
}

/*
 * um, after phase @ph: the lines each device found elsewhere.  um-fault
 * passes @before, where the driver had each page when the phase began:
 * only pages that did not move count (a page that moved was brought to
 * the device that touched it, and the driver counted that).
 */
static void um_after(const struct plan *pl, int ph, uint8_t **loc,
		     uint8_t *const *before, unsigned long long *src)
{
	int nd = pl->nd, e;
	size_t k;

	for (e = 0; e < nd; e++) {
		const struct idx *r = &pl->rlines[ph * nd + e];
		const struct idx *wr = &pl->wlines[ph * nd + e];

		for (k = 0; k < r->n; k++) {
			int b = (int)(r->v[k] >> 28);
			size_t pg = (r->v[k] & ((1u << 28) - 1)) * LINE /
				    UM_PAGE;

			if (loc[b][pg] != e && loc[b][pg] < nd &&
			    (!before || before[b][pg] == loc[b][pg]))
				src[loc[b][pg]] += LINE;
		}
		for (k = 0; k < wr->n; k++) {
			int b = (int)(wr->v[k] >> 28);
			size_t pg = (wr->v[k] & ((1u << 28) - 1)) * LINE /
				    UM_PAGE;

			if (loc[b][pg] != e && loc[b][pg] < nd &&
			    (!before || before[b][pg] == loc[b][pg]))
				src[e] += LINE;
		}
	}
}

/* um-fault: where the driver has each page of every buffer, in @loc */
static void um_fault_locate(const struct wl *w, void *const *ga,
			    uint8_t **loc, unsigned long long *masks)
{
	size_t pages, np, pg;
	int b;

	for (b = 0; b < w->nbuf; b++) {
		pages = um_pages(w, b);
		CHECK(gpsMemGetSubscribers(ga[b], w->buf[b].bytes, masks,
					   pages, &np));
		for (pg = 0; pg < pages; pg++)
			loc[b][pg] = masks[pg] ?
				     (uint8_t)__builtin_ctzll(masks[pg]) :
				     NOBODY;
	}
}

/* owner of the first written word of [off, off + len) of buffer b, or 0 */
static int page_owner(const struct plan *pl, const struct wl *w, int b,
		      size_t off, size_t len)
{
	size_t i, n = nwords(w, b);

	for (i = off / WL_WORD; i < (off + len) / WL_WORD && i < n; i++)
		if (pl->owner[b][i] != NOBODY)
			return pl->owner[b][i];
	return 0;
}

/* rdl: each GPS page subscribed by its writer alone */
static void rdl_place(const struct wl *w, const struct plan *pl, int b,
		      void *p)
{
	gpsPointerAttributes at;
	size_t ps, off, bytes = w->buf[b].bytes;
	static int warned;

	CHECK(gpsPointerGetAttributes(&at, p));
	ps = at.gpsPageSize ? at.gpsPageSize : 65536;
	for (off = 0; off < bytes;) {
		int o = page_owner(pl, w, b, off, ps);
		size_t end = off + ps;

		while (end < bytes && page_owner(pl, w, b, end, ps) == o)
			end += ps;
		if (end > bytes)
			end = bytes;
		if (o && (gpsMemAdvise((char *)p + off, end - off,
				       gpsMemAdviseGPSSubscribe, o) ||
			  gpsMemAdvise((char *)p + off, end - off,
				       gpsMemAdviseGPSUnsubscribe, 0)) &&
		    !warned++)
			fprintf(stderr, "paradigms: rdl: placement failed: %s "
				"(the pages stay on device 0)\n",
				gpsGetErrorString(gpsGetLastError()));
		off = end;
	}
}

/* gps-paper's knobs, set around the run and put back after it */
static char saved_bulk[64], saved_policy[64];

static void paper_knobs(int on)
{
	if (on) {
		if (bench_knob_get("bulk_blocks", saved_bulk,
				   sizeof(saved_bulk)) ||
		    bench_knob_get("track_policy", saved_policy,
				   sizeof(saved_policy))) {
			saved_bulk[0] = '\0';
			fprintf(stderr, "paradigms: gps-paper: no bulk_blocks "
				"or track_policy knob: gps-auto's knobs\n");
			return;
		}
		bench_knob_set("bulk_blocks", "0");
		bench_knob_set("track_policy", "touched");
		return;
	}
	if (!saved_bulk[0])
		return;
	bench_knob_set("bulk_blocks", "%s", saved_bulk);
	bench_knob_set("track_policy", "%s", saved_policy);
}

/*
 * GPS pages of @page_size bytes that a device writes in a phase while
 * another device holds a replica (any device with @all, else one that
 * reads or writes the page in some phase: what tracking subscribes),
 * summed over the phases of one iteration.  A page nobody else holds
 * is never write-protected, so it takes no write fault; each counted
 * page is one epoch of one writer, and write faults / (this x timed
 * iterations) is the faults per GPS page per epoch.
 */
static unsigned long long written_pages(const struct wl *w,
					const struct plan *pl,
					size_t page_size, int all)
{
	size_t pw = page_size / WL_WORD, pg, pages;
	unsigned long long n = 0, held, *acc;
	int ph, d, b, i;

	for (b = 0; b < w->nbuf; b++) {
		pages = buf_pages(w, b, page_size);
		acc = bench_xmalloc(pages * sizeof(*acc));
		for (pg = 0; pg < pages; pg++) {
			acc[pg] = 0;
			for (i = 0; i < pl->nph * pl->nd; i++)
				if (access_any(&pl->rd[i], b, pg * pw, pw) ||
				    access_any(&pl->wr[i], b, pg * pw, pw))
					acc[pg] |= 1ULL << (i % pl->nd);
		}
		for (ph = 0; ph < pl->nph; ph++)
			for (d = 0; d < pl->nd; d++)
				for (pg = 0; pg < pages; pg++) {
					held = all ? ~0ULL : acc[pg];
					if ((held & ~(1ULL << d)) &&
					    access_any(&pl->wr[ph * pl->nd + d],
						       b, pg * pw, pw))
						n++;
				}
		free(acc);
	}
	return n;
}

/*
 * Bytes on the wire under the packet model: each transfer pays a header
 * per packet of at most max_payload bytes.  GPS: one transfer per block
 * the driver pushed to one receiver: blocks_pushed counts a block once
 * however many receive it and the bytes count each receiver, so the
 * transfers are at least bytes / block_size (and at least
 * blocks_pushed).
 * finepack: the same pushes packed per destination, each block a
 * sub-packet (sub_hdr bytes), packets filled up to max_payload, and at
 * most one partly filled packet per source, destination and release.
 * The others: the transfers and requests their runs counted.
 */
static unsigned long long wire_bytes(const struct plan *pl, enum paradigm p,
				     int iters, struct result *r)
{
	unsigned long long b = r->bytes, blocks = r->cnt.blocks_pushed;
	unsigned long long bs = bench_knob_ull("block_size"), flush = 0;
	size_t x;

	if (!b || p == P_SINGLE)
		return 0;
	if (!bs)
		bs = LINE;
	if ((b + bs - 1) / bs > blocks)
		blocks = (b + bs - 1) / bs;
	switch (p) {
	case P_GPS_AUTO:
	case P_GPS_PAPER:
	case P_GPS_ALL:
		if (!r->cnt.valid)
			return 0;
		r->xfers = blocks;
		return b + r->xfers * hdr_bytes;
	case P_FINEPACK:
		if (!r->cnt.valid)
			return 0;
		for (x = 0; x < (size_t)pl->nph * pl->nd * pl->nd; x++)
			flush += pl->needed[x].n > 0;
		flush *= (unsigned long long)(iters - 1);
		b += blocks * sub_hdr;
		r->xfers = (b + max_payload - 1) / max_payload + flush;
		return b + r->xfers * hdr_bytes;
	default:
		return b + (r->xfers + r->reqs) * hdr_bytes;
	}
}

/*
 * carve: a device's fill kernel (its read lines) and invalidation kernel
 * (its written lines), a slice of the lines a block
 */
struct carve_job {
	struct carve *cv;
	const struct wl_access *acc;
	const uint32_t *lines;
	size_t n;
	void *const (*bufs)[WL_MAX_BUF];
	unsigned int blocks;
	int d;
};

#define CARVE_TILE	256	/* lines a block */

static void carve_fill_kernel(void *p)
{
	const struct carve_job *j = p;
	size_t b = (gpsBlockIdx)().x;
	size_t lo = j->n * b / j->blocks, hi = j->n * (b + 1) / j->blocks;

	carve_fill(j->cv, j->d, j->acc, j->lines + lo, hi - lo, j->bufs);
}

static void carve_wrote_kernel(void *p)
{
	const struct carve_job *j = p;
	size_t b = (gpsBlockIdx)().x;
	size_t lo = j->n * b / j->blocks, hi = j->n * (b + 1) / j->blocks;

	carve_wrote(j->cv, j->d, j->acc, j->lines + lo, hi - lo);
}

/* @fn over the lines of @x with access map @acc, on device @d's stream */
static void carve_launch(gpsKernel_t fn, struct carve *cv, int d,
			 const struct idx *x, const struct wl_access *acc,
			 void *const (*bufs)[WL_MAX_BUF])
{
	struct carve_job j = {
		.cv = cv, .acc = acc, .lines = x->v, .n = x->n, .bufs = bufs,
		.d = d, .blocks = wl_blocks(x->n, CARVE_TILE),
	};

	if (x->n)
		CHECK(gpsLaunchKernel(fn, gpsDim(j.blocks, 1, 1),
				      gpsDim(1, 1, 1), GPS_ARGS_RAW(&j),
				      streams[d]));
}

/*
 * Before phase @ph: every device fetches the remote lines it will read
 * that its RDC misses, on its own stream, and the phase starts when all
 * have (a fetch must not see a store of the phase it precedes).
 */
static void carve_before(struct carve *cv, const struct plan *pl, int ph,
			 void *const (*bufs)[WL_MAX_BUF])
{
	int nd = pl->nd, d;

	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		carve_launch(carve_fill_kernel, cv, d,
			     &pl->rlines[(size_t)ph * nd + d],
			     &pl->rd[(size_t)ph * nd + d], bufs);
	}
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamSynchronize(streams[d]));
	}
}

/*
 * Behind device @d's launches of phase @ph on its stream: its stores
 * invalidate the other devices' lines (done before the next phase's
 * fills, which wait for every stream)
 */
static void carve_after(struct carve *cv, const struct plan *pl, int ph,
			int d)
{
	carve_launch(carve_wrote_kernel, cv, d,
		     &pl->wlines[(size_t)ph * pl->nd + d],
		     &pl->wr[(size_t)ph * pl->nd + d], NULL);
}

/* carve's result: each word from its home's copy (the input: device 0's) */
static void carve_gather(const struct wl *w, const struct carve *cv,
			 void *const (*bufs)[WL_MAX_BUF], void **out)
{
	int b;

	for (b = 0; b < w->nbuf; b++) {
		size_t n = nwords(w, b), i = 0, j;

		while (i < n) {
			int h = carve_home(cv, b, i);

			for (j = i + 1; j < n && carve_home(cv, b, j) == h; j++)
				;
			if (h == CARVE_NOBODY)
				h = 0;
			CHECK(gpsSetDevice(h));
			CHECK(gpsMemcpy((char *)out[b] + i * WL_WORD,
					(char *)bufs[h][b] + i * WL_WORD,
					(j - i) * WL_WORD, gpsMemcpyDefault));
			i = j;
		}
	}
}

static void **run(struct wl *w, const struct plan *pl, enum paradigm p,
		  int iters, struct result *res)
{
	int nd = pl->nd, nph = pl->nph, d, it, ph, b, tracking = 0;
	void *bufs[BENCH_MAX_DEV][WL_MAX_BUF], *ga[WL_MAX_BUF] = { 0 };
	void *priv[BENCH_MAX_DEV], **out;
	uint8_t *loc[WL_MAX_BUF] = { 0 }, *loc0[WL_MAX_BUF] = { 0 };
	unsigned long long *masks = NULL;
	struct bench_counters c0, c1;
	struct link l = { 0, 0 };
	double t0, t1 = 0;
	int copies = p == P_MEMCPY || p == P_MEMCPY_NEEDED || p == P_PROACT ||
		     p == P_CARVE;
	int gps = p == P_GPS_AUTO || p == P_GPS_PAPER || p == P_GPS_ALL ||
		  p == P_FINEPACK;
	struct proact *pa = NULL;
	struct carve *cv = NULL;
	size_t k;

	memset(res, 0, sizeof(*res));
	memset(bufs, 0, sizeof(bufs));
	res->verified = -1;
	l.bw = bench_knob_ull("link_bandwidth");
	l.lat_ns = bench_knob_ull("link_latency_ns");
	if (p == P_GPS_PAPER)
		paper_knobs(1);

	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		priv[d] = w->ops->dev_init ? w->ops->dev_init(w, d, nd) : NULL;
	}
	CHECK(gpsSetDevice(0));
	for (b = 0; b < w->nbuf; b++) {
		size_t bytes = w->buf[b].bytes;

		switch (p) {
		case P_GPS_AUTO:
		case P_GPS_PAPER:
		case P_GPS_ALL:
		case P_FINEPACK:
			CHECK(gpsMallocGPS(&ga[b], bytes, gpsMemGPSAutomatic));
			break;
		case P_RDL:
			CHECK(gpsMallocGPS(&ga[b], bytes, gpsMemGPSManual));
			rdl_place(w, pl, b, ga[b]);
			break;
		case P_UM:
			CHECK(gpsMallocManaged(&ga[b], bytes));
			break;
		case P_UM_FAULT:
			CHECK(gpsMallocManagedFlags(&ga[b], bytes,
						    gpsMemManagedOnFault));
			break;
		case P_SINGLE:
		case P_HOME:
			CHECK(gpsMalloc(&ga[b], bytes));
			break;
		default:
			break;
		}
		if (ga[b]) {
			CHECK(gpsMemcpy(ga[b], w->buf[b].init, bytes,
					gpsMemcpyDefault));
			for (d = 0; d < nd; d++)
				bufs[d][b] = ga[b];
			continue;
		}
		for (d = 0; d < nd; d++) {
			/* a private full copy per device, on its node */
			CHECK(gpsSetDevice(d));
			CHECK(gpsMalloc(&bufs[d][b], bytes));
			CHECK(gpsMemcpy(bufs[d][b], w->buf[b].init, bytes,
					gpsMemcpyHostToDevice));
		}
		CHECK(gpsSetDevice(0));
	}
	if (p == P_UM_FAULT) {
		size_t most = 0;

		for (b = 0; b < w->nbuf; b++) {
			size_t pages = um_pages(w, b);

			loc[b] = bench_xmalloc(pages);
			loc0[b] = bench_xmalloc(pages);
			if (pages > most)
				most = pages;
		}
		masks = bench_xmalloc(most * sizeof(*masks));
	}
	if (p == P_UM) {
		/* preferred location = the writer, and the pages there */
		for (b = 0; b < w->nbuf; b++) {
			size_t pages = um_pages(w, b), pg;

			loc[b] = bench_xmalloc(pages);
			for (pg = 0; pg < pages; pg++) {
				size_t off = pg * UM_PAGE;
				size_t len = w->buf[b].bytes - off < UM_PAGE ?
					     w->buf[b].bytes - off : UM_PAGE;

				loc[b][pg] = (uint8_t)page_owner(pl, w, b, off,
								 len);
				CHECK(gpsSetDevice(loc[b][pg]));
				/* a failure (a host without the node) leaves
				 * first-touch placement */
				if (gpsMemAdvise((char *)ga[b] + off, len,
					gpsMemAdviseSetPreferredLocation,
					loc[b][pg]) ||
				    gpsMemPrefetchAsync((char *)ga[b] + off,
							len, loc[b][pg], NULL))
					(void)gpsGetLastError();
			}
		}
		for (d = 0; d < nd; d++) {
			CHECK(gpsSetDevice(d));
			CHECK(gpsDeviceSynchronize());
		}
	}

	if (p == P_PROACT)
		pa = proact_plan(pl, pa_chunk);
	if (p == P_CARVE) {
		size_t bytes[WL_MAX_BUF], state = 0;

		for (b = 0; b < w->nbuf; b++) {
			bytes[b] = w->buf[b].bytes;
			state += bytes[b];
		}
		cv = carve_new(nd, w->nbuf, bytes, rdc_opt ? rdc_opt :
			       state / 4);
		res->rdc_bytes = carve_rdc_bytes(cv);
	}

	t0 = bench_now();
	bench_counters_read(&c0);
	for (it = 0; it < iters; it++) {
		if (it == 0 && (p == P_GPS_AUTO || p == P_GPS_PAPER ||
				p == P_FINEPACK)) {
			gpsError_t err = gpsTrackingStart();

			if (err == gpsSuccess)
				tracking = 1;
			else if (err == gpsErrorNotSupported)
				fprintf(stderr, "paradigms: tracking not "
					"supported: %s = gps-all\n",
					pnames[p]);
			else
				CHECK(err);
		}
		if (it == 1) {
			t1 = bench_now();
			res->t_first = t1 - t0;
			res->bytes = res->migrated = res->needed = 0;
			res->copy_s = res->link_wait_s = 0;
			res->xfers = res->reqs = 0;
			if (pa)
				proact_reset_stats(pa);
			if (cv)
				carve_reset_stats(cv);
			bench_counters_read(&c0);
		}
		for (ph = 0; ph < nph; ph++) {
			unsigned long long src[BENCH_MAX_DEV] = { 0 };
			double tp;

			if (p == P_UM)
				um_before(w, pl, ph, ga, loc, res);
			if (p == P_UM_FAULT)
				um_fault_locate(w, ga, loc0, masks);
			tp = bench_now();
			if (cv)
				carve_before(cv, pl, ph,
					     (void *const (*)[WL_MAX_BUF])bufs);
			if (pa) {
				/* the first iteration profiles */
				proact_begin(pa, ph, it == 0,
					     (void *const (*)[WL_MAX_BUF])bufs);
				cur_pa = pa;
			}
			for (d = 0; d < nd; d++) {
				CHECK(gpsSetDevice(d));
				cur_dev = d;
				w->ops->launch(w, ph, d, nd, bufs[d], priv[d],
					       streams[d]);
				if (cv)
					carve_after(cv, pl, ph, d);
			}
			cur_pa = NULL;
			for (d = 0; d < nd; d++) {
				CHECK(gpsSetDevice(d));
				CHECK(gpsStreamSynchronize(streams[d]));
				res->needed += pl->exact[ph * nd + d];
			}
			if (pa) {
				proact_end(pa, src);
				for (d = 0; d < nd; d++)
					res->bytes += src[d];
				link_charge(&l, src, nd, tp, res);
			}
			if (cv) {
				carve_take_sent(cv, src);
				for (d = 0; d < nd; d++) {
					res->bytes += src[d];
					/* a line a transfer and a request */
					res->xfers += src[d] / LINE;
					res->reqs += src[d] / LINE;
				}
				link_charge(&l, src, nd, tp, res);
			}
			if (p == P_RDL || p == P_HOME || p == P_UM ||
			    p == P_UM_FAULT) {
				if (p == P_UM)
					um_after(pl, ph, loc, NULL, src);
				if (p == P_UM_FAULT) {
					um_fault_locate(w, ga, loc, masks);
					um_after(pl, ph, loc, loc0, src);
				}
				for (d = 0; d < nd; d++) {
					if (p == P_RDL)
						src[d] = pl->rdl[ph * nd + d];
					else if (p == P_HOME)
						src[d] = pl->home[ph * nd + d];
					res->bytes += src[d];
					/* a line a transfer; a remote load
					 * also sends a request (um's loads:
					 * not told apart, not counted) */
					res->xfers += src[d] / LINE;
					if (p == P_RDL)
						res->reqs += src[d] / LINE;
				}
				if (p == P_HOME)
					res->reqs += pl->home[ph * nd] / LINE;
				link_charge(&l, src, nd, tp, res);
			}
			if (p == P_MEMCPY || p == P_MEMCPY_NEEDED)
				exchange(w, pl, ph, p == P_MEMCPY_NEEDED, bufs,
					 &l, res);
		}
		if (it == 0 && tracking)
			CHECK(gpsTrackingStop());
	}
	res->t = bench_now() - t1;
	bench_counters_read(&c1);
	bench_counters_diff(&res->cnt, &c1, &c0);
	if (pa) {
		proact_stats(pa, &res->pa);
		res->xfers = res->pa.xfers;
		proact_free(pa);
	}
	if (cv)
		carve_stats(cv, &res->cv);
	if (gps) {
		/* the GPS page size the allocations got */
		gpsPointerAttributes at;

		CHECK(gpsPointerGetAttributes(&at, ga[0]));
		res->wpages = written_pages(w, pl, at.gpsPageSize,
					    p == P_GPS_ALL) * (iters - 1);
	}

	switch (p) {
	case P_GPS_AUTO:
	case P_GPS_PAPER:
	case P_GPS_ALL:
	case P_FINEPACK:
		res->bytes = res->cnt.traffic_bytes;
		res->bytes_src = res->cnt.valid ? "counted" : "n/a";
		bench_subscribers_debugfs(res->subs, sizeof(res->subs));
		if (!res->subs[0]) {
			unsigned long long h[BENCH_MAX_DEV + 1] = { 0 };

			for (b = 0; b < w->nbuf; b++)
				if (bench_subscribers_query(ga[b],
						w->buf[b].bytes, h, nd))
					break;
			if (b == w->nbuf)
				hist_string(res->subs, sizeof(res->subs), h,
					    nd);
		}
		break;
	case P_MEMCPY:
	case P_MEMCPY_NEEDED:
	case P_PROACT:
	case P_CARVE:
		res->bytes_src = "counted";
		break;
	case P_UM:
		res->bytes += res->migrated;
		res->bytes_src = "model";
		break;
	case P_UM_FAULT:
		/* the driver's migrations, and the modelled remote lines */
		res->migrated = res->cnt.bytes_migrated;
		res->bytes += res->migrated;
		res->bytes_src = res->cnt.valid ? "counted+model" : "n/a";
		break;
	case P_RDL:
	case P_HOME:
		res->bytes_src = "model";
		break;
	default:
		res->bytes_src = "none";
		break;
	}
	if (p == P_UM || p == P_UM_FAULT)
		res->xfers += res->migrated / UM_PAGE *
			      ((UM_PAGE + max_payload - 1) / max_payload);
	res->wire = wire_bytes(pl, p, iters, res);

	/* the result: each device's own data from its copy */
	out = bench_xmalloc(WL_MAX_BUF * sizeof(*out));
	for (b = 0; b < w->nbuf; b++)
		out[b] = bench_xmalloc(w->buf[b].bytes);
	CHECK(gpsSetDevice(0));
	if (!copies) {
		for (b = 0; b < w->nbuf; b++)
			CHECK(gpsMemcpy(out[b], ga[b], w->buf[b].bytes,
					gpsMemcpyDefault));
	} else if (cv) {
		carve_gather(w, cv, (void *const (*)[WL_MAX_BUF])bufs, out);
		carve_free(cv);
	} else {
		for (d = 0; d <= nd; d++) {
			const struct spans *s = d < nd ? &pl->own[d] :
						&pl->unowned;
			int from = d < nd ? d : 0;

			CHECK(gpsSetDevice(from));
			for (k = 0; k < s->n; k++)
				CHECK(gpsMemcpy((char *)out[s->v[k].buf] +
						s->v[k].off,
						(char *)bufs[from][s->v[k].buf]
						+ s->v[k].off, s->v[k].len,
						gpsMemcpyDefault));
		}
	}
	for (d = 0; d < nd; d++) {
		CHECK(gpsSetDevice(d));
		if (w->ops->dev_free)
			w->ops->dev_free(w, d, priv[d]);
		else if (priv[d])
			wl_host_free(priv[d]);
		for (b = 0; b < w->nbuf && copies; b++)
			CHECK(gpsFree(bufs[d][b]));
	}
	CHECK(gpsSetDevice(0));
	for (b = 0; b < w->nbuf; b++) {
		if (ga[b])
			CHECK(gpsFree(ga[b]));
		free(loc[b]);
		free(loc0[b]);
	}
	free(masks);
	if (p == P_GPS_PAPER)
		paper_knobs(0);
	return out;
}

/* ------------------------------------------------------------------ */
/* records                                                             */
/* ------------------------------------------------------------------ */

static unsigned long long memcpy_bytes;	/* of the current point */
static double ideal_s;		/* ideal's time there; 0: not measured */
static double link_s;		/* the link's least time, per iteration */

/*
 * The least time the link model allows one iteration: each phase ends
 * when the busiest outgoing link has carried what its device wrote and
 * others read (bytes_needed, by source), plus the latency of the last
 * byte; 0 with the link unlimited.
 */
static double link_bound(const struct plan *pl)
{
	double bw = (double)bench_knob_ull("link_bandwidth");
	double lat = bench_knob_ull("link_latency_ns") * 1e-9, t = 0;
	int ph, s;

	if (bw <= 0)
		return 0;
	for (ph = 0; ph < pl->nph; ph++) {
		unsigned long long most = 0;

		for (s = 0; s < pl->nd; s++)
			if (pl->sends[(size_t)ph * pl->nd + s] > most)
				most = pl->sends[(size_t)ph * pl->nd + s];
		if (most)
			t += most / bw + lat;
	}
	return t;
}

static size_t state_bytes(const struct wl *w)
{
	size_t s = 0;
	int b;

	for (b = 0; b < w->nbuf; b++)
		s += w->buf[b].bytes;
	return s;
}

/*
 * The link time of @bytes pushed (each device's outgoing link busy for
 * its bytes / bandwidth, summed over the links), what of it the fences
 * found still owed (@exposed_ns: link_exposed_ns summed over the
 * devices) and the share hidden under the kernels.  1: the pushes left
 * during compute and the fences found the links free; 0: every byte
 * was pushed or carried at a fence (or more: fences of several threads
 * each count a backlog they wait for together); n/a: nothing pushed.
 */
static void link_share(unsigned long long bytes,
		       unsigned long long exposed_ns, unsigned long long bw)
{
	double busy = (double)bytes / (double)bw, exp = exposed_ns * 1e-9;

	printf(" link_busy_s=%.4f link_exposed_s=%.4f", busy, exp);
	if (busy > 0)
		printf(" link_hidden=%.3f", exp < busy ? 1 - exp / busy : 0.0);
	else
		printf(" link_hidden=n/a");
}

static void record(const struct wl *w, const char *pname, int nd,
		   int iters, const struct result *r)
{
	const struct bench_counters *c = &r->cnt;
	unsigned long long per = iters > 1 ? (unsigned long long)(iters - 1) :
				 1;
	unsigned long long bw = bench_knob_ull("link_bandwidth");

	printf("workload=%s paradigm=%s devices=%d %s iters=%d phases=%d "
	       "state_bytes=%zu time_first_s=%.4f time_s=%.4f "
	       "speedup=%.3f bytes_moved=%llu bytes_src=%s "
	       "bytes_per_iter=%llu",
	       w->ops->name, pname, nd, tags, iters, w->nphases,
	       state_bytes(w), r->t_first, r->t,
	       r->t > 0 ? w->t_single / r->t : 0.0, r->bytes, r->bytes_src,
	       r->bytes / per);
	if (nd > 1)
		printf(" bytes_needed=%llu", r->needed);
	if (nd > 1 && (ideal_s > 0 || link_s > 0)) {
		/* the bound: no implementation beats it with this link */
		double b = link_s * per > ideal_s ? link_s * per : ideal_s;

		/* without memcpy in the run the link's alone: no yardstick */
		if (ideal_s > 0)
			printf(" bound_s=%.4f bound_by=%s efficiency=%.3f", b,
			       link_s * per > ideal_s ? "link" : "ideal",
			       r->t > 0 ? b / r->t : 0.0);
		else
			printf(" bound_s=%.4f bound_by=link-only "
			       "efficiency=n/a", b);
	}
	if (memcpy_bytes)
		printf(" bytes_norm=%.3f", (double)r->bytes / memcpy_bytes);
	if (!strncmp(pname, "memcpy", 6) || !strcmp(pname, "ideal"))
		printf(" copy_s=%.4f link_wait_s=%.4f", r->copy_s,
		       r->link_wait_s);
	if (!strcmp(pname, "um") || !strcmp(pname, "rdl") ||
	    !strcmp(pname, "home"))
		printf(" link_wait_s=%.4f", r->link_wait_s);
	if (!strcmp(pname, "um"))
		printf(" bytes_migrated=%llu", r->migrated);
	/* link_wait_s: the driver's waits (migrations) and the model's */
	if (!strcmp(pname, "um-fault") && c->valid)
		printf(" bytes_migrated=%llu migrations=%llu thrash_pins=%llu"
		       " link_wait_s=%.4f", c->bytes_migrated, c->migrations,
		       c->thrash_pins,
		       c->link_wait_ns * 1e-9 + r->link_wait_s);
	if (r->wire)
		printf(" wire_bytes=%llu link_eff=%.3f packets=%llu"
		       " requests=%llu", r->wire, (double)r->bytes / r->wire,
		       r->xfers, r->reqs);
	if (!strcmp(pname, "proact"))
		printf(" chunk_bytes=%llu chunks=%llu chunks_early=%llu"
		       " chunks_resent=%llu bytes_resent=%llu lead_s=%.6f"
		       " link_wait_s=%.4f", pa_chunk, r->pa.chunks,
		       r->pa.early, r->pa.resent, r->pa.resent_bytes,
		       r->pa.lead_s, r->link_wait_s);
	if (!strcmp(pname, "carve")) {
		unsigned long long rd = r->cv.hits + r->cv.misses;

		printf(" rdc_bytes=%zu rdc_hits=%llu rdc_misses=%llu"
		       " rdc_hit_rate=%.4f rdc_evictions=%llu"
		       " rdc_invalidations=%llu link_wait_s=%.4f",
		       r->rdc_bytes, r->cv.hits, r->cv.misses,
		       rd ? (double)r->cv.hits / rd : 0.0, r->cv.evictions,
		       r->cv.invalidations, r->link_wait_s);
	}
	if ((!strncmp(pname, "gps", 3) || !strcmp(pname, "finepack")) &&
	    c->valid) {
		unsigned long long tot = c->blocks_merged + c->blocks_queued;

		printf(" subscribers=%s blocks_queued=%llu blocks_merged=%llu"
		       " hit_rate=%.4f blocks_pushed=%llu blocks_bulk=%llu"
		       " blocks_early=%llu write_faults=%llu fences=%llu"
		       " pages_harvested=%llu pages_helped=%llu"
		       " thread_rounds=%llu link_wait_s=%.4f harvest_s=%.4f protect_s=%.4f"
		       " fence_s=%.4f fence_wait_s=%.4f",
		       r->subs[0] ? r->subs : "n/a", c->blocks_queued,
		       c->blocks_merged,
		       tot ? (double)c->blocks_merged / tot : 0.0,
		       c->blocks_pushed, c->blocks_bulk,
		       c->blocks_pushed_early, c->write_faults, c->fences,
		       c->pages_harvested, c->pages_helped, c->thread_rounds,
		       c->link_wait_ns * 1e-9, c->harvest_ns * 1e-9,
		       c->protect_ns * 1e-9, c->fence_ns * 1e-9,
		       c->fence_wait_ns * 1e-9);
		if (r->wpages)
			printf(" wfaults_per_page_epoch=%.2f",
			       (double)c->write_faults / r->wpages);
		if (bw && !strcmp(r->bytes_src, "counted"))
			link_share(r->bytes, c->link_exposed_ns, bw);
	} else if (!strncmp(pname, "gps", 3) || !strcmp(pname, "finepack")) {
		printf(" subscribers=%s", r->subs[0] ? r->subs : "n/a");
	}
	printf(" check=%s verify=%s\n",
	       w->ops->tolerance ? w->ops->tolerance : "exact",
	       r->verified < 0 ? "ref" : r->verified ? "ok" : "FAIL");
	fflush(stdout);
}

static int check(const struct wl *w, void **out, const char *pname)
{
	char msg[256] = "";
	int b, ok = 1;

	if (w->ops->verify) {
		ok = w->ops->verify(w, out, w->ref, msg, sizeof(msg));
	} else {
		for (b = 0; b < w->nbuf; b++) {
			const uint8_t *o = out[b], *r = w->ref[b];
			size_t k, bad = 0, n = w->buf[b].bytes / WL_WORD;

			if (!memcmp(o, r, w->buf[b].bytes))
				continue;
			for (k = 0; k < n; k++)
				bad += memcmp(o + k * WL_WORD, r + k * WL_WORD,
					      WL_WORD) != 0;
			snprintf(msg, sizeof(msg), "%zu of %zu words of %s "
				 "differ from the single-device run", bad, n,
				 w->buf[b].name);
			ok = 0;
			break;
		}
	}
	if (!ok) {
		fprintf(stderr, "paradigms: %s/%s: %s\n", w->ops->name, pname,
			msg);
		exit_status = 1;
	}
	return ok;
}

static void free_out(const struct wl *w, void **out)
{
	int b;

	for (b = 0; b < w->nbuf; b++)
		free(out[b]);
	free(out);
}

static void run_point(struct wl *w, const struct plan *pl, const int *plist,
		      int np, int iters)
{
	int i;

	memcpy_bytes = 0;
	ideal_s = 0;
	link_s = link_bound(pl);
	for (i = 0; i < np; i++) {
		enum paradigm p = (enum paradigm)plist[i];
		struct result r;
		void **out;

		if (p == P_SINGLE)
			continue;
		out = run(w, pl, p, iters, &r);
		r.verified = check(w, out, pnames[p]);
		free_out(w, out);
		if (p == P_MEMCPY) {
			memcpy_bytes = r.bytes;
			/* the paper's "infinite bandwidth": memcpy minus
			 * its transfers */
			ideal_s = r.t - r.copy_s - r.link_wait_s;
		}
		record(w, pnames[p], pl->nd, iters, &r);
		if (p == P_MEMCPY) {
			struct result ideal = r;

			ideal.t = ideal_s;
			ideal.bytes = 0;
			ideal.wire = 0;
			ideal.bytes_src = "none";
			ideal.verified = -1;
			record(w, "ideal", pl->nd, iters, &ideal);
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
	int i;

	fprintf(stderr,
		"usage: paradigms [-q] [-d devices] [-w all|workload,...]\n"
		"         [-p paradigm,...] [-i iterations] [-z size]\n"
		"         [-r rows] [-c cols] [-V vertices] [-k degree]\n"
		"         [-L ratios] [-l latency_ns] [-Q capacities]\n"
		"         [-P page_sizes] [-H header_bytes] [-M max_payload]\n"
		"         [-S sub_header_bytes] [-C proact_chunk] [-A poll_us]\n"
		"         [-R rdc_bytes]\n"
		"workloads:");
	for (i = 0; i < NWL; i++)
		fprintf(stderr, " %s", all_workloads[i]->name);
	fprintf(stderr, "\nparadigms:");
	for (i = 0; i < P_NR; i++)
		fprintf(stderr, " %s", pnames[i]);
	fprintf(stderr, "\n");
	exit(2);
}

/* the workloads of a comma-separated list ("all": every one) */
static int pick_workloads(const char *list, int *sel)
{
	char *dup = strdup(list), *tok, *save = NULL;
	int n = 0, i;

	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (i = 0; i < NWL; i++)
				sel[n++] = i;
			continue;
		}
		for (i = 0; i < NWL; i++)
			if (!strcmp(tok, all_workloads[i]->name))
				break;
		if (i == NWL) {
			fprintf(stderr, "paradigms: unknown workload '%s'\n",
				tok);
			usage();
		}
		if (n < 4 * NWL)
			sel[n++] = i;
	}
	free(dup);
	return n;
}

int main(int argc, char **argv)
{
	const char *wlist = "all", *plist_s = NULL;
	struct wl_opts o = { 0 };
	double ratios[16], caps[16], psizes[8];
	int nratios = 0, ncaps = 0, npsizes = 0, iters = 0, count, opt, i, d;
	int plist[P_NR * 2], np = 0, lat_set = 0, sel[4 * NWL], nwl;
	long long lat_ns = 0;
	struct wl *wls;
	struct plan *plans;

	while ((opt = getopt(argc, argv,
			     "qd:w:p:i:z:r:c:V:k:L:l:Q:P:H:M:S:C:A:R:h")) != -1) {
		switch (opt) {
		case 'q': o.quick = 1; break;
		case 'd': ndev = atoi(optarg); break;
		case 'w': wlist = optarg; break;
		case 'p': plist_s = optarg; break;
		case 'i': iters = atoi(optarg); break;
		case 'z': o.size = strtoul(optarg, NULL, 0); break;
		case 'r': o.rows = strtoul(optarg, NULL, 0); break;
		case 'c': o.cols = strtoul(optarg, NULL, 0); break;
		case 'V': o.nv = strtoul(optarg, NULL, 0); break;
		case 'k': o.degree = strtoul(optarg, NULL, 0); break;
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
		case 'P':
			npsizes = parse_list(optarg, psizes, 8);
			if (npsizes <= 0)
				usage();
			break;
		case 'H': hdr_bytes = strtoull(optarg, NULL, 0); break;
		case 'M': max_payload = strtoull(optarg, NULL, 0); break;
		case 'S': sub_hdr = strtoull(optarg, NULL, 0); break;
		case 'C': pa_chunk = strtoull(optarg, NULL, 0); break;
		case 'A': pa_poll_us = strtoull(optarg, NULL, 0); break;
		case 'R': rdc_opt = strtoull(optarg, NULL, 0); break;
		default:
			usage();
		}
	}
	if (!iters)
		iters = o.quick ? 3 : 5;
	if (iters < 2 || o.degree > 64 || !max_payload || !pa_chunk ||
	    pa_chunk % WL_WORD || pa_poll_us > 1000000)
		usage();

	if (!plist_s)
		plist_s = ncaps || npsizes ? "gps-auto,gps-all" :
			  nratios ? "memcpy,gps-auto,gps-all,rdl" :
			  "memcpy,memcpy-needed,gps-auto,gps-paper,gps-all,"
			  "um,um-fault,rdl,home,finepack,proact,carve";
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
	nwl = pick_workloads(wlist, sel);
	if (!nwl)
		usage();

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

	printf("# paradigms: %d device(s), %d iterations, "
	       "page_size=%llu block_size=%llu queue_capacity=%llu "
	       "bulk_blocks=%llu harvest_interval_us=%llu "
	       "keep_writable_ms=%llu fence_threads=%llu harvest_ahead=%llu "
	       "link_bandwidth=%llu link_latency_ns=%llu\n", ndev, iters,
	       bench_knob_ull("page_size"), bench_knob_ull("block_size"),
	       bench_knob_ull("queue_capacity"), bench_knob_ull("bulk_blocks"),
	       bench_knob_ull("harvest_interval_us"),
	       bench_knob_ull("keep_writable_ms"),
	       bench_knob_ull("fence_threads"),
	       bench_knob_ull("harvest_ahead"),
	       bench_knob_ull("link_bandwidth"),
	       bench_knob_ull("link_latency_ns"));
	printf("# packets: header_bytes=%llu max_payload=%llu "
	       "sub_header_bytes=%llu; proact: chunk_bytes=%llu poll_us=%llu; "
	       "carve: rdc_bytes=", hdr_bytes, max_payload, sub_hdr,
	       pa_chunk, pa_poll_us);
	if (rdc_opt)
		printf("%llu\n", rdc_opt);
	else
		printf("state/4\n");

	/* inputs, plans, and the reference and baseline: one device */
	wls = bench_xmalloc((size_t)nwl * sizeof(*wls));
	plans = bench_xmalloc((size_t)nwl * sizeof(*plans));
	for (i = 0; i < nwl; i++) {
		struct wl *w = &wls[i];
		struct plan one;
		struct result r;
		void **ref;
		int b;

		w->ops = all_workloads[sel[i]];
		w->ops->setup(w, &o);
		for (b = 0; b < w->nbuf; b++)
			if (w->buf[b].bytes % WL_WORD) {
				fprintf(stderr, "paradigms: %s: buffer %s is "
					"not whole words\n", w->ops->name,
					w->buf[b].name);
				return 2;
			}
		printf("# %s: %s, %d buffer(s) of %zu bytes in all, %d "
		       "phase(s) per iteration\n", w->ops->name, w->desc,
		       w->nbuf, state_bytes(w), w->nphases);
		plan_build(&one, w, 1);
		ref = run(w, &one, P_SINGLE, iters, &r);
		plan_free(&one, w);
		for (b = 0; b < w->nbuf; b++)
			w->ref[b] = ref[b];
		free(ref);
		w->t_single = r.t;
		record(w, "single", 1, iters, &r);
		plan_build(&plans[i], w, ndev);
	}

	if (lat_set)
		bench_knob_set("link_latency_ns", "%lld", lat_ns);
	if (nratios || npsizes) {
		double local = nratios ? local_bandwidth(16u << 20) : 0;
		int k, m;

		if (nratios)
			printf("# local memcpy bandwidth of device 0: %.0f "
			       "bytes/s\n", local);
		for (k = 0; k < (nratios ? nratios : 1); k++) {
			unsigned long long bw = nratios && ratios[k] > 0 ?
				(unsigned long long)(local / ratios[k]) : 0;
			char link[96] = "";

			if (bw && bw < 1000)
				bw = 1000;
			if (nratios) {
				bench_knob_set("link_bandwidth", "%llu", bw);
				snprintf(link, sizeof(link), "link_ratio=%g "
					 "link_bw=%llu local_bw=%.0f "
					 "link_latency_ns=%llu", ratios[k], bw,
					 local,
					 bench_knob_ull("link_latency_ns"));
			}
			for (m = 0; m < (npsizes ? npsizes : 1); m++) {
				if (npsizes) {
					bench_knob_set("page_size", "%.0f",
						       psizes[m]);
					snprintf(tags, sizeof(tags),
						 "sweep=page page_size=%llu %s",
						 bench_knob_ull("page_size"),
						 link);
				} else {
					snprintf(tags, sizeof(tags),
						 "sweep=link %s", link);
				}
				for (i = 0; i < nwl; i++)
					run_point(&wls[i], &plans[i], plist,
						  np, iters);
			}
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
				run_point(&wls[i], &plans[i], plist, np, iters);
		}
	}
	if (!nratios && !ncaps && !npsizes)
		for (i = 0; i < nwl; i++)
			run_point(&wls[i], &plans[i], plist, np, iters);

	for (d = 0; d < ndev; d++) {
		CHECK(gpsSetDevice(d));
		CHECK(gpsStreamDestroy(streams[d]));
	}
	for (i = 0; i < nwl; i++) {
		struct wl *w = &wls[i];
		int b;

		plan_free(&plans[i], w);
		if (w->ops->cleanup)
			w->ops->cleanup(w);
		for (b = 0; b < w->nbuf; b++) {
			free(w->ref[b]);
			free(w->buf[b].init);
		}
		free(w->data);
	}
	free(wls);
	free(plans);
	bench_knobs_restore();
	printf("# paradigms: %s\n", exit_status ? "VERIFY FAILED" :
	       "every result matches the single-device run");
	return exit_status;
}
