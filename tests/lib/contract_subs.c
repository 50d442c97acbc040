// SPDX-License-Identifier: MIT
/*
 * Description: contract tests of subscription changes (SPEC.md,
 * "Subscriptions are hints"; memory-model.rst, "Subscription changes"):
 * no change of subscription (advice, prefetch, tracking start or stop,
 * collapse) loses or reorders a store, the stores of non-subscribers
 * included, while kernels of other devices keep storing; each change is
 * a release for everyone; unsubscribing the last subscriber is
 * gpsErrorBusy and changes nothing; tracking keeps exactly the touched
 * pages; system-scope atomics give exact totals; managed memory keeps
 * every store; a replica refused by a budget leaves its device
 * unsubscribed and counted; bad arguments are refused with their error
 * and change nothing.  Written from the documents, before the code.
 *
 * change_publishes_its_whole_range fails on the native engine: a call
 * publishes only the GPS pages whose subscribers it changes (see the
 * commit that added it).  CONTRACT_SEED picks the churn's random
 * changes, CONTRACT_OPS_X multiplies their number; the engine's test
 * hooks (GPSU_TEST_CHANGE_DELAY_US, GPSU_TEST_PUSH_DELAY_US,
 * GPSU_TEST_FAULT_DELAY_US) and GPSU_KNOB_harvest_ahead=1 widen the
 * windows.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define MAXD	64

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static unsigned long long rnd_state;

static unsigned long long rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return rnd_state >> 33;
}

static void rnd_seed(struct __test_metadata *_metadata)
{
	const char *s = getenv("CONTRACT_SEED");

	rnd_state = s ? strtoull(s, NULL, 0) : 0x5eed;
	TH_LOG("seed %llu (CONTRACT_SEED)", rnd_state);
}

static size_t gps_page_size(struct __test_metadata *_metadata,
			    unsigned int flags)
{
	gpsPointerAttributes at;
	void *p;

	EXPECT_EQ(gpsSuccess, gpsMallocGPS(&p, 1, flags));
	EXPECT_EQ(gpsSuccess, gpsPointerGetAttributes(&at, p));
	EXPECT_EQ(gpsSuccess, gpsFree(p));
	return at.gpsPageSize;
}

/* ------------------------------------------------------------------ */
/* Storers: one kernel thread per device storing rounds to its words    */
/* ------------------------------------------------------------------ */

/*
 * Device d owns the 32-bit words i with i % nd == d, on every page: the
 * words of several devices share each 8-byte word and each block.  In
 * round r it checks that each of its words holds r - 1 (its own last
 * store: own writes seen, carried over, in order), stores r and reads
 * it back.  done[d] = r after the round.
 */
struct ctl {
	int stop;
	unsigned int done[MAXD];
	unsigned int errs[MAXD];
	size_t bad_i[MAXD];
	unsigned int bad_want[MAXD], bad_got[MAXD];
	int timed_out[MAXD];
	int active[MAXD];	/* 1 while the kernel runs */
};

struct st_args {
	uint32_t *buf;		/* GPS, translated */
	size_t words;
	int d, nd;
	struct ctl *c;
	long long deadline;	/* ns; the kernel gives up past it */
	unsigned int max_rounds; /* 0: until stop */
};

static void st_bad(struct ctl *c, int d, size_t i, unsigned int want,
		   unsigned int got)
{
	if (__atomic_fetch_add(&c->errs[d], 1, __ATOMIC_RELAXED) == 0) {
		c->bad_i[d] = i;
		c->bad_want[d] = want;
		c->bad_got[d] = got;
	}
}

static void storer(void *p)
{
	struct st_args *a = p;
	struct ctl *c = a->c;
	unsigned int r = __atomic_load_n(&c->done[a->d], __ATOMIC_ACQUIRE);
	unsigned int rounds = 0;
	size_t i;
	uint32_t got;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	__atomic_store_n(&c->active[a->d], 1, __ATOMIC_RELEASE);
	for (;;) {
		for (i = (size_t)a->d; i < a->words; i += (size_t)a->nd) {
			got = __atomic_load_n(&a->buf[i], __ATOMIC_RELAXED);
			if (got != r)
				st_bad(c, a->d, i, r, got);
			__atomic_store_n(&a->buf[i], r + 1, __ATOMIC_RELAXED);
			got = __atomic_load_n(&a->buf[i], __ATOMIC_RELAXED);
			if (got != r + 1)
				st_bad(c, a->d, i, r + 1, got);
		}
		r++;
		__atomic_store_n(&c->done[a->d], r, __ATOMIC_RELEASE);
		if (a->max_rounds && ++rounds >= a->max_rounds)
			break;
		if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			break;
		if (now_ns() > a->deadline) {
			__atomic_store_n(&c->timed_out[a->d], 1,
					 __ATOMIC_RELAXED);
			break;
		}
		/* leave the 2-core machine's CPUs to the changes too */
		if (r % 4 == 0)
			usleep(20);
		else
			sched_yield();
	}
	__atomic_store_n(&c->active[a->d], 0, __ATOMIC_RELEASE);
}

struct storers {
	gpsStream_t s[MAXD];
	struct ctl *c;
	int nd;
	int on[MAXD];
	int flags;		/* ST_* */
	uint32_t *buf;
	size_t words;
	pthread_t relauncher, host0, viewer[MAXD];
	gpsError_t err;		/* the relauncher's first error */
};

enum {
	ST_VIEWS = 4,		/* host threads store through device views
				 * (stores of those devices, no kernel) */
	ST_RELAUNCH = 1,	/* short kernels launched back to back by a
				 * host thread, each ending in a release */
	ST_HOST0 = 2,		/* device 0's words stored by a host thread
				 * through the allocation's own pointer */
};

static struct st_args st_args_of(struct storers *st, int d,
				 unsigned int max_rounds)
{
	struct st_args a = {
		.buf = st->buf, .words = st->words, .d = d, .nd = st->nd,
		.c = st->c, .deadline = now_ns() + 25000000000LL,
		.max_rounds = max_rounds,
	};

	return a;
}

static void *relauncher_main(void *p)
{
	struct storers *st = p;
	gpsError_t e = gpsSuccess;
	int d, k;

	for (k = 0; e == gpsSuccess; k++) {
		if (__atomic_load_n(&st->c->stop, __ATOMIC_ACQUIRE))
			break;
		for (d = 0; d < st->nd && e == gpsSuccess; d++) {
			struct st_args a = st_args_of(st, d, 2);

			if (!st->on[d])
				continue;
			e = gpsSetDevice(d);
			if (e == gpsSuccess)
				e = gpsLaunchKernel(storer, gpsDim(1, 1, 1),
					gpsDim(1, 1, 1),
					GPS_ARGS(&a, GPS_PTR(struct st_args,
							     buf)), st->s[d]);
		}
		if (k % 4 == 3)
			for (d = 0; d < st->nd && e == gpsSuccess; d++)
				if (st->on[d])
					e = gpsStreamSynchronize(st->s[d]);
	}
	for (d = 0; d < st->nd; d++)
		if (st->on[d]) {
			gpsError_t e2 = gpsStreamSynchronize(st->s[d]);

			if (e == gpsSuccess)
				e = e2;
		}
	st->err = e;
	return NULL;
}

struct viewer_arg {
	struct storers *st;
	int d;
	uint32_t *view;
};

static void *viewer_main(void *p)
{
	struct viewer_arg *v = p;
	struct st_args a = st_args_of(v->st, v->d, 0);

	a.buf = v->view;	/* device d's view: stores of device d */
	storer(&a);
	free(v);
	return NULL;
}

static void *host0_main(void *p)
{
	struct storers *st = p;
	struct st_args a = st_args_of(st, 0, 0);

	a.buf = st->buf;	/* the host pointer: the host view */
	storer(&a);
	return NULL;
}

/*
 * Starts a storer on every device whose bit is in @mask (device 0 on a
 * host thread with ST_HOST0).
 */
static void storers_start(struct __test_metadata *_metadata,
			  struct storers *st, uint32_t *buf, size_t words,
			  int nd, unsigned long long mask, int flags)
{
	int d;

	memset(st, 0, sizeof(*st));
	st->nd = nd;
	st->buf = buf;
	st->words = words;
	st->flags = flags;
	st->c = calloc(1, sizeof(*st->c));
	ASSERT_NE(NULL, st->c);
	for (d = 0; d < nd; d++) {
		struct st_args a = st_args_of(st, d, 0);

		st->on[d] = (int)(mask >> d & 1);
		if (d == 0 && (flags & ST_HOST0))
			st->on[d] = 0;
		if (!st->on[d])
			continue;
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		if (flags & ST_VIEWS) {
			struct viewer_arg *v = malloc(sizeof(*v));

			ASSERT_NE(NULL, v);
			v->st = st;
			v->d = d;
			v->view = gpsDevicePtr(buf);
			ASSERT_EQ(0, pthread_create(&st->viewer[d], NULL,
						    viewer_main, v));
			continue;
		}
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&st->s[d]));
		if (flags & ST_RELAUNCH)
			continue;
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(storer, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct st_args, buf)), st->s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	if (flags & ST_RELAUNCH)
		ASSERT_EQ(0, pthread_create(&st->relauncher, NULL,
					    relauncher_main, st));
	if (flags & ST_HOST0)
		ASSERT_EQ(0, pthread_create(&st->host0, NULL, host0_main, st));
	/* wait until every storer runs, so that changes meet them */
	for (d = 0; d < nd; d++)
		while ((st->on[d] || (d == 0 && (flags & ST_HOST0))) &&
		       !__atomic_load_n(&st->c->done[d], __ATOMIC_ACQUIRE))
			usleep(100);
}

/* Stops the storers, waits for their streams (the release) */
static void storers_stop(struct __test_metadata *_metadata,
			 struct storers *st)
{
	int d;

	__atomic_store_n(&st->c->stop, 1, __ATOMIC_RELEASE);
	if (st->flags & ST_RELAUNCH) {
		ASSERT_EQ(0, pthread_join(st->relauncher, NULL));
		EXPECT_EQ(gpsSuccess, st->err);
	}
	if (st->flags & ST_HOST0) {
		ASSERT_EQ(0, pthread_join(st->host0, NULL));
		/* the host's stores: a host release */
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	}
	for (d = 0; d < st->nd; d++) {
		if (!st->on[d])
			continue;
		if (st->flags & ST_VIEWS) {
			ASSERT_EQ(0, pthread_join(st->viewer[d], NULL));
			st->on[d] = 0;
			continue;
		}
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(st->s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(st->s[d]));
		st->on[d] = 0;
	}
	if (st->flags & ST_VIEWS)
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (d = 0; d < st->nd; d++) {
		EXPECT_EQ(0, st->c->timed_out[d]) TH_LOG("device %d ran past "
			"its deadline (a change hung it?)", d);
		EXPECT_EQ(0U, st->c->errs[d])
			TH_LOG("device %d: %u own words wrong, first word %zu "
			       "wanted %u got %u", d, st->c->errs[d],
			       st->c->bad_i[d], st->c->bad_want[d],
			       st->c->bad_got[d]);
	}
}

/* ------------------------------------------------------------------ */
/* Observer: reads every device's view from the host thread            */
/* ------------------------------------------------------------------ */

struct obs {
	int nd;
	size_t words, bytes, ps, np;
	uint32_t *buf;
	uint32_t *view[MAXD];
	uint32_t *last;		/* nd x words: value seen last time */
	unsigned char *was_sub;	/* nd x np: subscribed at the last look */
	unsigned long long *m;	/* np masks now */
	unsigned long long *m0;	/* np masks before the change */
	long soft;		/* release misses on pages of a call that
				 * changed none of its pages */
	long soft2;		/* ... on unchanged pages of a call that
				 * changed others */
};

static void obs_masks(struct __test_metadata *_metadata, struct obs *o,
		      unsigned long long *m)
{
	size_t np = 0, i;

	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(o->buf, o->bytes, m,
						   o->np, &np));
	ASSERT_EQ(o->np, np);
	for (i = 0; i < np; i++) {
		ASSERT_NE(0ULL, m[i]) TH_LOG("page %zu has no subscriber", i);
	}
}

static void obs_init(struct __test_metadata *_metadata, struct obs *o,
		     uint32_t *buf, size_t bytes, size_t ps, int nd)
{
	int d;

	memset(o, 0, sizeof(*o));
	o->nd = nd;
	o->buf = buf;
	o->bytes = bytes;
	o->words = bytes / 4;
	o->ps = ps;
	o->np = (bytes + ps - 1) / ps;
	for (d = 0; d < nd; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		o->view[d] = gpsDevicePtr(buf);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	o->last = calloc((size_t)nd * o->words, 4);
	o->was_sub = calloc((size_t)nd * o->np, 1);
	o->m = calloc(o->np, 8);
	o->m0 = calloc(o->np, 8);
	ASSERT_TRUE(o->last && o->was_sub && o->m && o->m0);
	obs_masks(_metadata, o, o->m);
}

static void obs_free(struct obs *o)
{
	free(o->last);
	free(o->was_sub);
	free(o->m);
	free(o->m0);
}

/*
 * After a change that returned: every word of the pages [p0, p1] whose
 * mask changed holds, in every view, at least what its device had
 * stored before the change (snap); every replica that stayed a replica
 * of the same device since the last look never went back (program
 * order).  Returns the number of wrong words (first ones logged).
 */
static long obs_check(struct __test_metadata *_metadata, struct obs *o,
		      const unsigned int *snap, size_t p0, size_t p1,
		      const char *what)
{
	long bad = 0;
	size_t i, pg;
	int e, d, sub, any = 0;
	uint32_t v;

	obs_masks(_metadata, o, o->m);
	for (pg = p0; snap && pg <= p1; pg++)
		if (o->m[pg] != o->m0[pg])
			any = 1;
	for (e = 0; e < o->nd; e++) {
		for (i = 0; i < o->words; i++) {
			pg = i * 4 / o->ps;
			d = (int)(i % (size_t)o->nd);
			v = __atomic_load_n(&o->view[e][i], __ATOMIC_RELAXED);
			if (snap && pg >= p0 && pg <= p1 && v < snap[d]) {
				if (o->m[pg] != o->m0[pg]) {
					if (bad++ < 4)
						TH_LOG("%s: view %d word %zu "
						       "(page %zu, device %d's)"
						       " holds %u, %d stored "
						       "%u before the change",
						       what, e, i, pg, d, v, d,
						       snap[d]);
				} else if (any) {
					o->soft2++;
				} else {
					o->soft++;
				}
			}
			sub = (int)(o->m[pg] >> e & 1);
			if (sub && o->was_sub[(size_t)e * o->np + pg] &&
			    v < o->last[(size_t)e * o->words + i]) {
				if (bad++ < 4)
					TH_LOG("%s: replica of %d, word %zu "
					       "went back from %u to %u", what,
					       e, i,
					       o->last[(size_t)e * o->words +
						       i], v);
			}
			o->last[(size_t)e * o->words + i] = v;
		}
	}
	for (e = 0; e < o->nd; e++)
		for (pg = 0; pg < o->np; pg++)
			o->was_sub[(size_t)e * o->np + pg] =
				(unsigned char)(o->m[pg] >> e & 1);
	return bad;
}

/* Every word of every view holds exactly its device's last round. */
static long obs_final(struct __test_metadata *_metadata, struct obs *o,
		      const unsigned int *done)
{
	long bad = 0;
	size_t i;
	int e, d;
	uint32_t v;

	for (e = 0; e < o->nd; e++)
		for (i = 0; i < o->words; i++) {
			d = (int)(i % (size_t)o->nd);
			v = __atomic_load_n(&o->view[e][i], __ATOMIC_RELAXED);
			if (v != done[d] && bad++ < 4)
				TH_LOG("final: view %d word %zu (device %d's) "
				       "holds %u, wanted %u", e, i, d, v,
				       done[d]);
		}
	/* and through the host pointer and a copy */
	for (i = 0; i < o->words; i++) {
		d = (int)(i % (size_t)o->nd);
		v = __atomic_load_n(&o->buf[i], __ATOMIC_RELAXED);
		if (v != done[d] && bad++ < 8)
			TH_LOG("final: host view word %zu holds %u, wanted %u",
			       i, v, done[d]);
	}
	return bad;
}

static void snap_of(struct ctl *c, int nd, unsigned int *snap)
{
	int d;

	for (d = 0; d < nd; d++)
		snap[d] = __atomic_load_n(&c->done[d], __ATOMIC_ACQUIRE);
}

static int popc(unsigned long long m)
{
	return __builtin_popcountll(m);
}

/* ------------------------------------------------------------------ */
/* Advice churn while every device stores                              */
/* ------------------------------------------------------------------ */

FIXTURE(churn) {
	int nd;
};

FIXTURE_VARIANT(churn) {
	unsigned int flags;	/* gpsMallocGPS flags */
	size_t pages_x2;	/* allocation size in half GPS pages */
	int ops;
	int st_flags;		/* ST_* */
};

FIXTURE_VARIANT_ADD(churn, auto64k) {
	.flags = gpsMemGPSPage64K, .pages_x2 = 5, .ops = 12,
};

FIXTURE_VARIANT_ADD(churn, manual64k_relaunch) {
	.flags = gpsMemGPSPage64K | gpsMemGPSManual, .pages_x2 = 5, .ops = 12,
	.st_flags = ST_RELAUNCH,
};

FIXTURE_VARIANT_ADD(churn, manual4k_host) {
	.flags = gpsMemGPSPage4K | gpsMemGPSManual, .pages_x2 = 21, .ops = 24,
	.st_flags = ST_HOST0,
};

FIXTURE_SETUP(churn)
{
	T_CONTRACT_DEVICES(self->nd, 2);
	if (self->nd > MAXD)
		self->nd = MAXD;
}

FIXTURE_TEARDOWN(churn)
{
}

enum { OP_SUB, OP_UNSUB, OP_PREFETCH, OP_COLLAPSE, OP_RMOSTLY,
       OP_UNRMOSTLY, OP_PREFER, OP_PAST_END, OP_N };

static const char *const op_name[OP_N] = {
	"subscribe", "unsubscribe", "prefetch", "collapse", "read-mostly",
	"unset-read-mostly", "preferred-location", "past-the-end",
};

/*
 * Promise: no change of subscription may lose or reorder a store (SPEC).
 *
 * Every change of subscription (each advice, a prefetch, a collapse) on
 * random ranges (partial GPS pages, the last page, the whole
 * allocation) while every device stores: each change a release for
 * everyone, no replica goes back, the masks as the advice says, the
 * last subscriber's unsubscribe gpsErrorBusy with nothing changed, a
 * range past the end refused with nothing changed; at the end every
 * view holds every device's last store.
 */
TEST_F(churn, changes_while_every_device_stores)
{
	size_t ps = gps_page_size(_metadata, variant->flags);
	size_t bytes = variant->pages_x2 * ps / 2, off, len, p0, p1, pg;
	unsigned int snap[MAXD];
	unsigned long long all = (self->nd >= 64) ? ~0ULL :
				 (1ULL << self->nd) - 1;
	struct storers st;
	struct obs o;
	gpsStream_t ps_stream;
	uint32_t *buf;
	int k, d, op, busy, changed, vd, ops;
	gpsError_t e;
	char what[96], *vb;
	long long t0 = now_ns(), t1;

	rnd_seed(_metadata);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes,
					   variant->flags));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&ps_stream));
	obs_init(_metadata, &o, buf, bytes, ps, self->nd);
	storers_start(_metadata, &st, buf, bytes / 4, self->nd, all,
		      variant->st_flags);

	ops = variant->ops * (getenv("CONTRACT_OPS_X") ?
			      atoi(getenv("CONTRACT_OPS_X")) : 1);
	for (k = 0; k < ops; k++) {
		op = (int)(rnd() % OP_N);
		d = (int)(rnd() % (unsigned long long)self->nd);
		switch (rnd() % 4) {
		case 0:			/* the whole allocation */
			off = 0;
			len = bytes;
			break;
		case 1:			/* the last (half) page */
			off = bytes - 1 - rnd() % (ps / 2);
			len = bytes - off;
			break;
		default:		/* any bytes */
			off = rnd() % bytes;
			len = 1 + rnd() % (bytes - off);
		}
		if (op == OP_PAST_END)
			len = bytes - off + 1 + rnd() % ps;
		p0 = off / ps;
		p1 = (off + len - 1) / ps;
		if (p1 >= o.np)
			p1 = o.np - 1;
		snprintf(what, sizeof(what), "op %d: %s of [%zu, +%zu) "
			 "device %d", k, op_name[op], off, len, d);
		obs_masks(_metadata, &o, o.m0);
		busy = 0;
		for (pg = p0; pg <= p1; pg++)
			if (o.m0[pg] == 1ULL << d)
				busy = 1;
		/* any view's address names the same bytes */
		vd = rnd() % 2 ? -1 :
		     (int)(rnd() % (unsigned long long)self->nd);
		vb = vd < 0 ? (char *)buf : (char *)o.view[vd];
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 " (view %d)", vd);
		snap_of(st.c, self->nd, snap);
		t1 = now_ns();
		switch (op) {
		case OP_SUB:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseGPSSubscribe, d);
			break;
		case OP_UNSUB:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseGPSUnsubscribe, d);
			break;
		case OP_PREFETCH:
			e = gpsMemPrefetchAsync(vb + off, len, d,
						ps_stream);
			if (e == gpsSuccess)
				e = gpsStreamSynchronize(ps_stream);
			break;
		case OP_COLLAPSE:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseGPSCollapse, d);
			break;
		case OP_RMOSTLY:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseSetReadMostly, d);
			break;
		case OP_UNRMOSTLY:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseUnsetReadMostly, d);
			break;
		case OP_PREFER:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseSetPreferredLocation, d);
			break;
		default:
			e = gpsMemAdvise(vb + off, len,
					 gpsMemAdviseGPSSubscribe, d);
		}
		t1 = now_ns() - t1;
		if (t1 > 500000000LL)
			TH_LOG("%s took %.3f s", what, t1 / 1e9);
		if (op == OP_UNSUB && busy) {
			ASSERT_EQ(gpsErrorBusy, e) TH_LOG("%s", what);
			ASSERT_EQ(gpsErrorBusy, gpsGetLastError());
		} else if (op == OP_PAST_END) {
			ASSERT_EQ(gpsErrorInvalidValue, e) TH_LOG("%s", what);
			ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
		} else {
			ASSERT_EQ(gpsSuccess, e) TH_LOG("%s", what);
		}
		ASSERT_EQ(0, obs_check(_metadata, &o, snap, p0, p1, what));
		/* the masks the advice gives */
		changed = 0;
		for (pg = 0; pg < o.np; pg++) {
			unsigned long long was = o.m0[pg], now = o.m[pg];
			int in = pg >= p0 && pg <= p1;

			if (now != was)
				changed = 1;
			if (!in || e != gpsSuccess) {
				ASSERT_EQ(was, now) TH_LOG("%s: page %zu",
							   what, pg);
				continue;
			}
			switch (op) {
			case OP_SUB:
			case OP_PREFETCH:
			case OP_PREFER:
				ASSERT_EQ(was | 1ULL << d, now)
					TH_LOG("%s: page %zu", what, pg);
				break;
			case OP_UNSUB:
				ASSERT_EQ(was & ~(1ULL << d), now)
					TH_LOG("%s: page %zu", what, pg);
				break;
			case OP_COLLAPSE:
				ASSERT_EQ(1, popc(now))
					TH_LOG("%s: page %zu", what, pg);
				if (was >> d & 1) {
					ASSERT_EQ(1ULL << d, now)
						TH_LOG("%s: page %zu", what,
						       pg);
				} else {
					ASSERT_EQ(now, now & was)
						TH_LOG("%s: page %zu", what,
						       pg);
				}
				break;
			case OP_RMOSTLY:
				ASSERT_EQ(all, now)
					TH_LOG("%s: page %zu", what, pg);
				break;
			case OP_UNRMOSTLY:
				ASSERT_EQ(1ULL << d, now)
					TH_LOG("%s: page %zu", what, pg);
				break;
			}
		}
		(void)changed;
	}
	storers_stop(_metadata, &st);
	ASSERT_EQ(0, obs_final(_metadata, &o, st.c->done));
	for (d = 0; d < self->nd; d++)
		TH_LOG("device %d: %u rounds, %lld push-thread rounds", d,
		       st.c->done[d], t_dev_stat(d, "thread_rounds"));
	TH_LOG("%.3f s", (now_ns() - t0) / 1e9);
	if (o.soft2)
		TH_LOG("%ld words below the snapshot on unchanged pages of "
		       "calls that changed others", o.soft2);
	if (o.soft)
		TH_LOG("%ld words below the snapshot on pages the change left "
		       "as they were (no promise asked)", o.soft);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(ps_stream));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	obs_free(&o);
	free(st.c);
}

/*
 * Promise: each change is a release for everyone (memory-model.rst).
 *
 * "Each change is a release for everyone. After it returns, every store
 * made before it, by any device, is in every replica of the range"
 * (memory-model.rst): a pending store of device 1 on a page of the
 * range that the call leaves as it was (device 2 subscribes it
 * already) is in device 0's replica once a subscribe of device 2 to
 * both pages returns; and once a call that changes nothing returns.
 */
TEST(change_publishes_its_whole_range)
{
	unsigned long long m[2];
	size_t ps, pw;
	uint32_t *buf, *v0, *v1;
	int nd, pending;

	T_CONTRACT_DEVICES(nd, 3);
	ps = gps_page_size(_metadata, 0);
	pw = ps / 4;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, 2 * ps,
					   gpsMemGPSManual));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, 2 * ps));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(buf, 2 * ps,
					   gpsMemAdviseGPSSubscribe, 1));
	ASSERT_EQ(gpsSuccess, gpsMemAdvise((char *)buf + ps, ps,
					   gpsMemAdviseGPSSubscribe, 2));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, 2 * ps, m, 2, NULL));
	ASSERT_EQ(0x3ULL, m[0]);
	ASSERT_EQ(0x7ULL, m[1]);
	v0 = gpsDevicePtr(buf);		/* device 0's view */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v1 = gpsDevicePtr(buf);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));

	/* a call that changes page 0 and leaves page 1 as it was */
	((volatile uint32_t *)v1)[pw + 3] = 77;	/* a store of device 1 */
	((volatile uint32_t *)v1)[3] = 66;
	pending = ((volatile uint32_t *)v0)[pw + 3] != 77;
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(buf, 2 * ps,
					   gpsMemAdviseGPSSubscribe, 2));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, 2 * ps, m, 2, NULL));
	ASSERT_EQ(0x7ULL, m[0]);
	EXPECT_EQ(66U, ((volatile uint32_t *)v0)[3])
		TH_LOG("the changed page");
	EXPECT_EQ(77U, ((volatile uint32_t *)v0)[pw + 3])
		TH_LOG("the page the call left as it was (pending before: %d)",
		       pending);

	/* a call that changes nothing */
	((volatile uint32_t *)v1)[pw + 4] = 88;
	pending = ((volatile uint32_t *)v0)[pw + 4] != 88;
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(buf, 2 * ps,
					   gpsMemAdviseGPSSubscribe, 2));
	EXPECT_EQ(88U, ((volatile uint32_t *)v0)[pw + 4])
		TH_LOG("a call that changes nothing (pending before: %d)",
		       pending);

	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_EQ(77U, ((volatile uint32_t *)v0)[pw + 3]);
	ASSERT_EQ(88U, ((volatile uint32_t *)v0)[pw + 4]);
	ASSERT_EQ(gpsSuccess, gpsFree(buf));

	/* tracking start on pages every device subscribes already */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, ps));
	v0 = gpsDevicePtr(buf);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	v1 = gpsDevicePtr(buf);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	((volatile uint32_t *)v1)[5] = 99;
	pending = ((volatile uint32_t *)v0)[5] != 99;
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	EXPECT_EQ(99U, ((volatile uint32_t *)v0)[5])
		TH_LOG("tracking start (pending before: %d)", pending);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(99U, ((volatile uint32_t *)v0)[5]);
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
}

/* ------------------------------------------------------------------ */
/* Unsubscribing the writers, all but one, the last one, and back      */
/* ------------------------------------------------------------------ */

/* host thread: device 0's words through the host pointer, round h */
static void host_round(struct ctl *c, uint32_t *buf, size_t words, int nd)
{
	unsigned int h = c->done[0];
	size_t i;

	for (i = 0; i < words; i += (size_t)nd)
		__atomic_store_n(&buf[i], h + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->done[0], h + 1, __ATOMIC_RELEASE);
}

/*
 * Promise: unsubscribing the last subscriber is an error, nothing lost.
 *
 * Devices 1.. store without a pause and the host stores device 0's
 * words through the allocation's own pointer (the host view: the
 * home's) between changes, while each device in turn is unsubscribed
 * (the one storing right now), then every device but the last, whose
 * own unsubscribe is then gpsErrorBusy with nothing changed, then each
 * is subscribed again: after each change every view holds every store
 * made before it (the host's too) and no replica goes back; at the end
 * every view holds every last store.
 */
TEST(unsubscribe_writers_all_but_one_and_back)
{
	unsigned long long all, m0[8];
	unsigned int snap[MAXD];
	struct storers st;
	struct obs o;
	int nd, d, rep;
	size_t ps, bytes;
	uint32_t *buf;
	char what[64];

	T_CONTRACT_DEVICES(nd, 2);
	if (nd > MAXD)
		nd = MAXD;
	all = nd >= 64 ? ~0ULL : (1ULL << nd) - 1;
	ps = gps_page_size(_metadata, 0);
	bytes = ps + ps / 2;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	obs_init(_metadata, &o, buf, bytes, ps, nd);
	storers_start(_metadata, &st, buf, bytes / 4, nd, all & ~1ULL, 0);
#define CHANGE(call, fmt, ...) do {					\
		host_round(st.c, buf, o.words, nd);			\
		snap_of(st.c, nd, snap);				\
		obs_masks(_metadata, &o, o.m0);				\
		snprintf(what, sizeof(what), fmt, __VA_ARGS__);		\
		ASSERT_EQ(gpsSuccess, (call)) TH_LOG("%s", what);	\
		ASSERT_EQ(0, obs_check(_metadata, &o, snap, 0, o.np - 1, \
				       what));				\
	} while (0)
	for (rep = 0; rep < 1; rep++) {
		/* each device leaves, the one storing now, and comes back */
		for (d = 0; d < nd; d++) {
			CHANGE(gpsMemAdvise(buf, bytes,
					    gpsMemAdviseGPSUnsubscribe, d),
			       "rep %d: unsubscribe %d", rep, d);
			ASSERT_EQ(all & ~(1ULL << d), o.m[0]);
			CHANGE(gpsMemAdvise(buf, bytes,
					    gpsMemAdviseGPSSubscribe, d),
			       "rep %d: subscribe %d", rep, d);
			ASSERT_EQ(all, o.m[0]);
		}
		/* every device but the last leaves (the home first) */
		for (d = 0; d < nd - 1; d++)
			CHANGE(gpsMemAdvise(buf, bytes,
					    gpsMemAdviseGPSUnsubscribe, d),
			       "rep %d: all but one: unsubscribe %d", rep, d);
		ASSERT_EQ(1ULL << (nd - 1), o.m[0]);
		ASSERT_EQ(1ULL << (nd - 1), o.m[o.np - 1]);
		/* the last subscriber cannot leave: nothing changes */
		host_round(st.c, buf, o.words, nd);
		obs_masks(_metadata, &o, m0);
		ASSERT_EQ(gpsErrorBusy, gpsMemAdvise(buf, bytes,
				gpsMemAdviseGPSUnsubscribe, nd - 1));
		ASSERT_EQ(gpsErrorBusy, gpsGetLastError());
		ASSERT_EQ(gpsErrorBusy, gpsMemAdvise((char *)buf + ps, 1,
				gpsMemAdviseGPSUnsubscribe, nd - 1));
		ASSERT_EQ(gpsErrorBusy, gpsGetLastError());
		ASSERT_EQ(0, obs_check(_metadata, &o, NULL, 0, 0, "busy"));
		ASSERT_EQ(0, memcmp(m0, o.m, o.np * sizeof(*m0)));
		/* the host reads its own stores back */
		ASSERT_EQ(st.c->done[0], __atomic_load_n(&buf[0],
						       __ATOMIC_RELAXED));
		ASSERT_EQ(st.c->done[0], __atomic_load_n(
			&buf[(o.words - 1) / nd * nd], __ATOMIC_RELAXED));
		/* and back, one by one (the home last) */
		for (d = nd - 2; d >= 0; d--)
			CHANGE(gpsMemAdvise(buf, bytes,
					    gpsMemAdviseGPSSubscribe, d),
			       "rep %d: back: subscribe %d", rep, d);
		ASSERT_EQ(all, o.m[0]);
	}
#undef CHANGE
	storers_stop(_metadata, &st);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	ASSERT_EQ(0, obs_final(_metadata, &o, st.c->done));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	obs_free(&o);
	free(st.c);
}

/* ------------------------------------------------------------------ */
/* Tracking                                                            */
/* ------------------------------------------------------------------ */

struct gen_args {
	uint32_t *buf;		/* GPS, translated */
	size_t pw;		/* words per GPS page */
	int d, nd;
	unsigned int g;
	struct ctl *c;
};

/*
 * Generation g on device d: its page d held g - 1 (its own stores), so
 * does page d + 1 (device d + 1's, released by the host's wait between
 * generations); it stores g to its page.
 */
static void gen_kernel(void *p)
{
	struct gen_args *a = p;
	uint32_t *own = a->buf + (size_t)a->d * a->pw;
	uint32_t *next = a->buf + (size_t)((a->d + 1) % a->nd) * a->pw;
	size_t i;
	uint32_t got;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	for (i = 0; i < a->pw; i++) {
		got = __atomic_load_n(&own[i], __ATOMIC_RELAXED);
		if (got != a->g - 1)
			st_bad(a->c, a->d, i, a->g - 1, got);
		__atomic_store_n(&own[i], a->g, __ATOMIC_RELAXED);
	}
	for (i = 0; i < a->pw; i += 7) {
		got = __atomic_load_n(&next[i], __ATOMIC_RELAXED);
		/* its owner may be storing g there right now */
		if (got != a->g - 1 && got != a->g)
			st_bad(a->c, a->d, a->pw + i, a->g - 1, got);
	}
}

struct launcher {
	struct __test_metadata *md;
	uint32_t *buf;
	size_t pw;
	int nd;
	unsigned int gens;
	struct ctl *c;
	gpsError_t err;
	int done;
};

static void *launcher_main(void *p)
{
	struct launcher *l = p;
	gpsStream_t s[MAXD];
	unsigned int g;
	gpsError_t e = gpsSuccess;
	int d;

	for (d = 0; d < l->nd && e == gpsSuccess; d++) {
		e = gpsSetDevice(d);
		if (e == gpsSuccess)
			e = gpsStreamCreate(&s[d]);
	}
	for (g = 1; g <= l->gens && e == gpsSuccess; g++) {
		for (d = 0; d < l->nd && e == gpsSuccess; d++) {
			struct gen_args a = { l->buf, l->pw, d, l->nd, g,
					      l->c };

			e = gpsSetDevice(d);
			if (e == gpsSuccess)
				e = gpsLaunchKernel(gen_kernel, gpsDim(1, 1, 1),
					gpsDim(1, 1, 1),
					GPS_ARGS(&a, GPS_PTR(struct gen_args,
							     buf)), s[d]);
		}
		for (d = 0; d < l->nd && e == gpsSuccess; d++)
			e = gpsStreamSynchronize(s[d]);
		__atomic_store_n(&l->c->done[0], g, __ATOMIC_RELEASE);
	}
	for (d = 0; d < l->nd; d++)
		gpsStreamDestroy(s[d]);
	l->err = e;
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Promise: tracking start or stop loses no store (SPEC).
 *
 * Tracking started and stopped again and again by the main thread
 * while another host thread launches generations of kernels on every
 * device (each reading its own page and its neighbour's): every load
 * sees the last released store, whatever tracking did in between, and
 * at the end every view holds the last generation.
 */
TEST(tracking_toggled_while_another_thread_launches)
{
	struct launcher l = { 0 };
	pthread_t t;
	size_t ps, bytes, i;
	uint32_t *buf, *w;
	int nd, d, e, toggles = 0;
	gpsError_t err;

	T_CONTRACT_DEVICES(nd, 2);
	if (nd > MAXD)
		nd = MAXD;
	ps = gps_page_size(_metadata, 0);
	bytes = (size_t)nd * ps + ps / 2;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	l.md = _metadata;
	l.buf = buf;
	l.pw = ps / 4;
	l.nd = nd;
	l.gens = 16;
	l.c = calloc(1, sizeof(*l.c));
	ASSERT_NE(NULL, l.c);
	ASSERT_EQ(0, pthread_create(&t, NULL, launcher_main, &l));
	while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE)) {
		err = gpsTrackingStart();
		ASSERT_EQ(gpsSuccess, err);
		usleep(1000 + rnd() % 2000);
		ASSERT_EQ(gpsSuccess, gpsTrackingStop());
		toggles++;
		usleep(rnd() % 1000);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(gpsSuccess, l.err);
	TH_LOG("%d tracking windows over %u generations", toggles, l.gens);
	for (d = 0; d < nd; d++) {
		EXPECT_EQ(0U, l.c->errs[d])
			TH_LOG("device %d: %u words wrong, first %zu wanted %u "
			       "got %u", d, l.c->errs[d], l.c->bad_i[d],
			       l.c->bad_want[d], l.c->bad_got[d]);
	}
	for (e = 0; e < nd; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		w = gpsDevicePtr(buf);
		for (i = 0; i < (size_t)nd * l.pw; i++) {
			ASSERT_EQ(l.gens, w[i]) TH_LOG("view %d word %zu", e,
						       i);
		}
		for (; i < bytes / 4; i++) {
			ASSERT_EQ(0U, w[i]) TH_LOG("view %d word %zu", e, i);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	free(l.c);
}

/*
 * Promise: tracking start or stop loses or reorders no store (SPEC).
 *
 * Tracking started and stopped while stores go on that tracking does
 * not wait for: host threads storing through the views of devices 1
 * and 2 (their stores) and through the allocation's own pointer (the
 * home's host view, which each stop points away from the home, which
 * touched nothing, and each start points back): each stop keeps
 * exactly devices 1 and 2, every store made before it is in every
 * view, no replica goes back, every own store is seen again.
 */
TEST(tracking_while_host_threads_store_through_views)
{
	unsigned int snap[MAXD];
	struct storers st;
	struct obs o;
	size_t ps, bytes, pg;
	uint32_t *buf;
	int nd, k;
	char what[48];

	T_CONTRACT_DEVICES(nd, 3);
	if (nd > MAXD)
		nd = MAXD;
	ps = gps_page_size(_metadata, 0);
	bytes = 3 * ps + ps / 2;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	obs_init(_metadata, &o, buf, bytes, ps, nd);
	storers_start(_metadata, &st, buf, bytes / 4, nd, 0x7,
		      ST_VIEWS | ST_HOST0);
	for (k = 0; k < 4; k++) {
		obs_masks(_metadata, &o, o.m0);
		ASSERT_EQ(gpsSuccess, gpsTrackingStart());
		snap_of(st.c, nd, snap);
		/* two whole rounds of devices 1 and 2 after the start
		 * returned: every page touched while tracking */
		while (__atomic_load_n(&st.c->done[1], __ATOMIC_ACQUIRE) <
		       snap[1] + 2 ||
		       __atomic_load_n(&st.c->done[2], __ATOMIC_ACQUIRE) <
		       snap[2] + 2)
			usleep(500);
		snap_of(st.c, nd, snap);
		ASSERT_EQ(gpsSuccess, gpsTrackingStop());
		snprintf(what, sizeof(what), "tracking %d", k);
		/* every page changed at the stop (the home left) */
		for (pg = 0; pg < o.np; pg++)
			o.m0[pg] = ~0ULL;
		ASSERT_EQ(0, obs_check(_metadata, &o, snap, 0, o.np - 1,
				       what));
		for (pg = 0; pg < o.np; pg++) {
			ASSERT_EQ(0x6ULL, o.m[pg])
				TH_LOG("%s: page %zu", what, pg);
		}
	}
	storers_stop(_metadata, &st);
	ASSERT_EQ(0, obs_final(_metadata, &o, st.c->done));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	obs_free(&o);
	free(st.c);
}

struct touch_args {
	uint32_t *p;		/* GPS, translated */
	size_t n;		/* words */
	uint32_t value;
	int mode;		/* TOUCH_* */
	uint64_t *sum;		/* host memory */
};

enum { TOUCH_STORE, TOUCH_LOAD, TOUCH_STORE_LOAD };

static void touch_kernel(void *p)
{
	struct touch_args *a = p;
	uint64_t s = 0;
	size_t i;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	if (a->mode != TOUCH_LOAD)
		for (i = 0; i < a->n; i++)
			((volatile uint32_t *)a->p)[i] = a->value + (uint32_t)i;
	if (a->mode != TOUCH_STORE)
		for (i = 0; i < a->n; i++)
			s += ((volatile uint32_t *)a->p)[i];
	*a->sum = s;
}

/* device @d's one-thread kernel on @n words at @p; returns the sum read */
static uint64_t touch(struct __test_metadata *_metadata, int d, void *p,
		      size_t n, uint32_t value, int mode)
{
	uint64_t sum = 0;
	struct touch_args a = { p, n, value, mode, &sum };

	EXPECT_EQ(gpsSuccess, gpsSetDevice(d));
	EXPECT_EQ(gpsSuccess, gpsLaunchKernel(touch_kernel, gpsDim(1, 1, 1),
		gpsDim(1, 1, 1), GPS_ARGS(&a, GPS_PTR(struct touch_args, p)),
		NULL));
	EXPECT_EQ(gpsSuccess, gpsDeviceSynchronize());
	EXPECT_EQ(gpsSuccess, gpsSetDevice(0));
	return sum;
}

static uint64_t pattern_sum(uint32_t value, size_t n)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += value + (uint32_t)i;
	return s;
}

/* every view of @p, and the host pointer, hold @value + i at word i */
static long views_hold(struct __test_metadata *_metadata, int nd,
		       uint32_t *p, size_t n, uint32_t value, const char *what)
{
	long bad = 0;
	size_t i;
	uint32_t *w;
	int e;

	for (e = -1; e < nd; e++) {
		if (e >= 0) {
			EXPECT_EQ(gpsSuccess, gpsSetDevice(e));
			w = gpsDevicePtr(p);
		} else {
			w = p;
		}
		for (i = 0; i < n; i++)
			if (((volatile uint32_t *)w)[i] != value + (uint32_t)i
			    && bad++ < 3)
				TH_LOG("%s: view %d word %zu holds %u, wanted "
				       "%u", what, e, i,
				       ((volatile uint32_t *)w)[i],
				       value + (uint32_t)i);
	}
	EXPECT_EQ(gpsSuccess, gpsSetDevice(0));
	return bad;
}

/*
 * Promise: at stop a device keeps exactly the pages it touched (SPEC).
 *
 * Tracking keeps exactly the touched pages, and loses no store: a
 * write-only device and a write-then-read device keep their pages, a
 * reader keeps its page, a page nobody used keeps one copy at home, a
 * collapsed page stays collapsed; an allocation born while tracking is
 * tracked, one freed while tracking is gone; the host's stores made
 * during tracking into the home's replica of a page the home leaves
 * at the stop are carried over; tracking repeated with another
 * pattern follows it; tracking with nothing touched leaves every page
 * at home; every view holds every store each time.
 */
TEST(tracking_keeps_the_touched_pages_and_every_store)
{
	unsigned long long m[8], all;
	size_t ps, pw, np;
	uint32_t *a, *b, *c;
	int nd, pg;
	gpsError_t err;

	T_CONTRACT_DEVICES(nd, 4);
	all = nd >= 64 ? ~0ULL : (1ULL << nd) - 1;
	ps = gps_page_size(_metadata, 0);
	pw = ps / 4;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a, 5 * ps, 0));
	/* every page: 100 * page + i, stored by device 1 */
	for (pg = 0; pg < 5; pg++)
		touch(_metadata, 1, a + pg * pw, pw, 100 * pg, TOUCH_STORE);
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(a + 4 * pw, ps,
					   gpsMemAdviseGPSCollapse, 3));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a + 4 * pw, 1, m, 1, NULL));
	ASSERT_EQ(1ULL << 3, m[0]);

	err = gpsTrackingStart();
	ASSERT_EQ(gpsSuccess, err);
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 5 * ps, m, 8, &np));
	ASSERT_EQ(5U, np);
	for (pg = 0; pg < 4; pg++) {
		EXPECT_EQ(all, m[pg]) TH_LOG("page %d while tracking", pg);
	}
	EXPECT_EQ(1ULL << 3, m[4]) TH_LOG("collapsed page while tracking");
	touch(_metadata, 1, a, pw, 1000, TOUCH_STORE);	/* write only */
	EXPECT_EQ(pattern_sum(2000, pw),		/* write, read */
		  touch(_metadata, 2, a + pw, pw, 2000, TOUCH_STORE_LOAD));
	EXPECT_EQ(pattern_sum(300, pw),			/* read only */
		  touch(_metadata, 3, a + 3 * pw, pw, 0, TOUCH_LOAD));
	touch(_metadata, 1, a + 4 * pw, pw, 4000, TOUCH_STORE);	/* collapsed */
	/* born while tracking: page 1 stored by device 2, page 0 by none */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&b, 2 * ps, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(b, 0, 2 * ps));
	touch(_metadata, 2, b + pw, pw, 5000, TOUCH_STORE);
	/* born and freed while tracking */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&c, ps, 0));
	touch(_metadata, 1, c, pw, 6000, TOUCH_STORE);
	ASSERT_EQ(gpsSuccess, gpsFree(c));
	/* the host stores into pages 2 (nobody's) and 3 (device 3's) */
	((volatile uint32_t *)a)[2 * pw + 5] = 7777;
	((volatile uint32_t *)a)[3 * pw + 6] = 8888;
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());

	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 5 * ps, m, 8, &np));
	EXPECT_EQ(1ULL << 1, m[0]) TH_LOG("write-only page");
	EXPECT_EQ(1ULL << 2, m[1]) TH_LOG("write-then-read page");
	EXPECT_EQ(1ULL << 0, m[2]) TH_LOG("page nobody used");
	EXPECT_EQ(1ULL << 3, m[3]) TH_LOG("read-only page");
	EXPECT_EQ(1ULL << 3, m[4]) TH_LOG("collapsed page");
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(b, 2 * ps, m, 8, &np));
	EXPECT_EQ(1ULL << 0, m[0]) TH_LOG("new allocation, untouched page");
	EXPECT_EQ(1ULL << 2, m[1]) TH_LOG("new allocation, stored page");
	EXPECT_EQ(0, views_hold(_metadata, nd, a, pw, 1000, "page 0"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + pw, pw, 2000, "page 1"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 2 * pw, 5, 200, "page 2"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 2 * pw + 5, 1, 7777,
				"page 2, the host's word"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 3 * pw, 6, 300, "page 3"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 3 * pw + 6, 1, 8888,
				"page 3, the host's word"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 4 * pw, pw, 4000,
				"page 4"));
	EXPECT_EQ(0, views_hold(_metadata, nd, b + pw, pw, 5000,
				"new allocation"));
	ASSERT_EQ(gpsErrorInvalidDevicePointer, gpsFree(c));
	(void)gpsGetLastError();

	/* again, another pattern: device 3 stores page 0, nothing else */
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 5 * ps, m, 8, &np));
	for (pg = 0; pg < 4; pg++) {
		EXPECT_EQ(all, m[pg]) TH_LOG("page %d, second tracking", pg);
	}
	touch(_metadata, 3, a, pw, 9000, TOUCH_STORE);
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 5 * ps, m, 8, &np));
	EXPECT_EQ(1ULL << 3, m[0]) TH_LOG("second tracking, page 0");
	for (pg = 1; pg < 4; pg++) {
		EXPECT_EQ(1ULL, m[pg]) TH_LOG("second tracking, page %d", pg);
	}
	EXPECT_EQ(0, views_hold(_metadata, nd, a, pw, 9000, "2nd: page 0"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + pw, pw, 2000,
				"2nd: page 1"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 3 * pw + 6, 1, 8888,
				"2nd: page 3, the host's word"));

	/* nothing touched: every page at home, the collapsed one where it is */
	ASSERT_EQ(gpsSuccess, gpsTrackingStart());
	ASSERT_EQ(gpsSuccess, gpsTrackingStop());
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(a, 5 * ps, m, 8, &np));
	for (pg = 0; pg < 4; pg++) {
		EXPECT_EQ(1ULL, m[pg]) TH_LOG("untouched tracking, page %d",
					      pg);
	}
	EXPECT_EQ(1ULL << 3, m[4]);
	EXPECT_EQ(0, views_hold(_metadata, nd, a, pw, 9000, "3rd: page 0"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + pw, pw, 2000,
				"3rd: page 1"));
	EXPECT_EQ(0, views_hold(_metadata, nd, a + 4 * pw, pw, 4000,
				"3rd: page 4"));
	EXPECT_EQ(0, views_hold(_metadata, nd, b + pw, pw, 5000,
				"3rd: new allocation"));
	ASSERT_EQ(gpsSuccess, gpsFree(a));
	ASSERT_EQ(gpsSuccess, gpsFree(b));
}

/* ------------------------------------------------------------------ */
/* System scope: collapse by atomics while plain stores go on          */
/* ------------------------------------------------------------------ */

struct atom_args {
	uint32_t *buf;		/* GPS, translated; words 0-1: the counter */
	size_t words;
	int d, nd;
	unsigned int iters;
	int *go;		/* host memory: start together */
	struct ctl *c;
};

/*
 * iters times: a system-scope add to the counter, then a plain store
 * of the round to the device's own words (after the counter), each
 * checked to hold the round before (its own last store).
 */
static void atom_kernel(void *p)
{
	struct atom_args *a = p;
	unsigned long long *ctr = (unsigned long long *)a->buf;
	unsigned int r = __atomic_load_n(&a->c->done[a->d], __ATOMIC_ACQUIRE);
	unsigned int k;
	size_t i;
	uint32_t got;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	while (!__atomic_load_n(a->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (k = 0; k < a->iters; k++, r++) {
		gpsAtomicAddSystemU64(ctr, 1);
		for (i = 2 + (size_t)a->d; i < a->words; i += (size_t)a->nd) {
			got = __atomic_load_n(&a->buf[i], __ATOMIC_RELAXED);
			if (got != r)
				st_bad(a->c, a->d, i, r, got);
			__atomic_store_n(&a->buf[i], r + 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&a->c->done[a->d], r + 1, __ATOMIC_RELEASE);
		if (k % 8 == 0)
			sched_yield();
	}
}

static void atoms_run(struct __test_metadata *_metadata, uint32_t *buf,
		      size_t words, int nd, unsigned int iters, struct ctl *c)
{
	gpsStream_t s[MAXD];
	int go = 0, d;

	for (d = 0; d < nd; d++) {
		struct atom_args a = { buf, words, d, nd, iters, &go, c };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(atom_kernel,
			gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct atom_args, buf)), s[d]));
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (d = 0; d < nd; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (d = 0; d < nd; d++) {
		EXPECT_EQ(0U, c->errs[d])
			TH_LOG("device %d: %u own words wrong, first %zu "
			       "wanted %u got %u", d, c->errs[d], c->bad_i[d],
			       c->bad_want[d], c->bad_got[d]);
	}
}

/* every view: the counter @want, each device's words its last round */
static long atoms_hold(struct __test_metadata *_metadata, uint32_t *buf,
		       size_t words, int nd, unsigned long long want,
		       struct ctl *c)
{
	long bad = 0;
	size_t i;
	uint32_t *w;
	int e, d;

	for (e = 0; e < nd; e++) {
		EXPECT_EQ(gpsSuccess, gpsSetDevice(e));
		w = gpsDevicePtr(buf);
		if (__atomic_load_n((unsigned long long *)w,
				    __ATOMIC_RELAXED) != want && bad++ < 3)
			TH_LOG("view %d: counter %llu, wanted %llu", e,
			       *(unsigned long long *)w, want);
		for (i = 2; i < words; i++) {
			d = (int)((i - 2) % (size_t)nd);
			if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) !=
			    c->done[d] && bad++ < 3)
				TH_LOG("view %d word %zu: %u, wanted %u", e, i,
				       w[i], c->done[d]);
		}
	}
	EXPECT_EQ(gpsSuccess, gpsSetDevice(0));
	return bad;
}

/*
 * Promise: collapse loses no store; system-scope atomics are exact.
 *
 * Every device at once: system-scope adds to one counter (the first
 * ones collapsing its page, from every device at the same time) while
 * each stores plain words of the same page and of the next: an exact
 * total, every plain store kept, one subscriber left on the counter's
 * page; a subscribe of every device replicates it with the data; the
 * atomics again collapse it and the total is exact again.
 */
TEST(system_atomics_collapse_while_every_device_stores)
{
	unsigned long long m[2], all;
	struct ctl *c;
	size_t ps, bytes, words;
	const unsigned int iters = 200;
	uint32_t *buf;
	int nd;

	T_CONTRACT_DEVICES(nd, 2);
	if (nd > MAXD)
		nd = MAXD;
	all = nd >= 64 ? ~0ULL : (1ULL << nd) - 1;
	ps = gps_page_size(_metadata, gpsMemGPSPage4K);
	bytes = 2 * ps;
	words = bytes / 4;
	c = calloc(1, sizeof(*c));
	ASSERT_NE(NULL, c);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	atoms_run(_metadata, buf, words, nd, iters, c);
	ASSERT_EQ(0, atoms_hold(_metadata, buf, words, nd,
				(unsigned long long)nd * iters, c));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, bytes, m, 2, NULL));
	EXPECT_EQ(1, popc(m[0])) TH_LOG("counter page mask %#llx", m[0]);
	EXPECT_EQ(all, m[1]);
	/* replicated again, with the data */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise(buf, 4, gpsMemAdviseSetReadMostly,
					   0));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, bytes, m, 2, NULL));
	EXPECT_EQ(all, m[0]);
	ASSERT_EQ(0, atoms_hold(_metadata, buf, words, nd,
				(unsigned long long)nd * iters, c));
	/* and collapsed again by the atomics */
	atoms_run(_metadata, buf, words, nd, iters, c);
	ASSERT_EQ(0, atoms_hold(_metadata, buf, words, nd,
				2ULL * nd * iters, c));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, bytes, m, 2, NULL));
	EXPECT_EQ(1, popc(m[0])) TH_LOG("counter page mask %#llx", m[0]);
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	free(c);
}

struct ctr_args {
	int *ctr;		/* GPS, translated */
	unsigned int iters;
	int *go;
};

static void ctr_kernel(void *p)
{
	struct ctr_args *a = p;
	unsigned int k;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	while (!__atomic_load_n(a->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (k = 0; k < a->iters; k++) {
		gpsAtomicAddSystem(a->ctr, 1);
		if (k % 16 == 0)
			sched_yield();
	}
}

/* every device at once: iters system-scope adds to *ctr */
static void ctr_run(struct __test_metadata *_metadata, int *ctr, int nd,
		    unsigned int iters)
{
	gpsStream_t s[MAXD];
	int go = 0, d;

	for (d = 0; d < nd; d++) {
		struct ctr_args a = { ctr, iters, &go };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(ctr_kernel,
			gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct ctr_args, ctr)), s[d]));
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (d = 0; d < nd; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
}

enum { RP_SUB_LAST_BYTE, RP_RMOSTLY_ACROSS, RP_PREFER, RP_PREFETCH_MID,
       RP_UNRMOSTLY, RP_TRACKING, RP_N };

static const char *const rp_name[RP_N] = {
	"subscribe of the page's last byte",
	"read-mostly of a range across the page's end",
	"preferred location", "prefetch of one byte mid-page",
	"unset read-mostly on another device", "tracking start and stop",
};

/*
 * Promise: a subscribe replicates a collapsed page, atomics collapse it again.
 *
 * A page collapsed by a system-scope atomic, replicated again by each
 * path that subscribes (however little of the page its range covers),
 * is collapsed again by the next system-scope atomics: every device's
 * adds at once give the exact total, the page one copy, its other
 * words kept; a range of system scope across two pages collapses both.
 */
TEST(system_scope_after_every_replicating_path)
{
	unsigned long long m[2];
	const unsigned int iters = 100;
	size_t ps, bytes, i;
	gpsStream_t s;
	int nd, path, *g, want;
	uint32_t *w;

	T_CONTRACT_DEVICES(nd, 3);
	if (nd > MAXD)
		nd = MAXD;
	ps = gps_page_size(_metadata, 0);
	bytes = 2 * ps;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	for (path = 0; path < RP_N; path++) {
		ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, bytes, 0));
		ASSERT_EQ(gpsSuccess, gpsMemset(g, 0, bytes));
		g[1] = 42;	/* a plain word beside the counter */
		g[ps / 4 - 1] = 43;
		ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
		ASSERT_EQ(0, gpsAtomicAddSystem(g, 1));
		ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, bytes, m, 2,
							   NULL));
		ASSERT_EQ(1ULL, m[0]) TH_LOG("%s", rp_name[path]);
		switch (path) {
		case RP_SUB_LAST_BYTE:
			ASSERT_EQ(gpsSuccess, gpsMemAdvise((char *)g + ps - 1,
				1, gpsMemAdviseGPSSubscribe, 1));
			break;
		case RP_RMOSTLY_ACROSS:
			ASSERT_EQ(gpsSuccess, gpsMemAdvise((char *)g + ps - 1,
				2, gpsMemAdviseSetReadMostly, 2));
			break;
		case RP_PREFER:
			ASSERT_EQ(gpsSuccess, gpsMemAdvise(g, bytes,
				gpsMemAdviseSetPreferredLocation, 2));
			break;
		case RP_PREFETCH_MID:
			ASSERT_EQ(gpsSuccess, gpsMemPrefetchAsync(
				(char *)g + ps / 2, 1, 1, s));
			ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
			break;
		case RP_UNRMOSTLY:
			ASSERT_EQ(gpsSuccess, gpsMemAdvise((char *)g + 8, 4,
				gpsMemAdviseUnsetReadMostly, 1));
			break;
		case RP_TRACKING:
			ASSERT_EQ(gpsSuccess, gpsTrackingStart());
			ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, bytes, m,
								   2, NULL));
			EXPECT_EQ(1, popc(m[0]))
				TH_LOG("collapsed page while tracking: %#llx",
				       m[0]);
			break;
		}
		ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, bytes, m, 2,
							   NULL));
		TH_LOG("%s: counter page %#llx", rp_name[path], m[0]);
		ctr_run(_metadata, g, nd, iters);
		if (path == RP_TRACKING)
			ASSERT_EQ(gpsSuccess, gpsTrackingStop());
		want = 1 + nd * (int)iters;
		for (i = 0; i < (size_t)nd; i++) {
			ASSERT_EQ(gpsSuccess, gpsSetDevice((int)i));
			w = gpsDevicePtr(g);
			EXPECT_EQ(want, ((volatile int *)w)[0])
				TH_LOG("%s: view %zu", rp_name[path], i);
			EXPECT_EQ(42, ((volatile int *)w)[1])
				TH_LOG("%s: view %zu", rp_name[path], i);
			EXPECT_EQ(43, ((volatile int *)w)[ps / 4 - 1])
				TH_LOG("%s: view %zu", rp_name[path], i);
		}
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
		EXPECT_EQ(want, gpsAtomicLoadSystem(g)) TH_LOG("%s",
							       rp_name[path]);
		ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, bytes, m, 2,
							   NULL));
		EXPECT_EQ(1, popc(m[0])) TH_LOG("%s: %#llx", rp_name[path],
						m[0]);
		ASSERT_EQ(gpsSuccess, gpsFree(g));
	}
	/* a range across two pages: both collapse */
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&g, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemSystemScope((char *)g + ps - 4, 8));
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(g, bytes, m, 2, NULL));
	EXPECT_EQ(1, popc(m[0]));
	EXPECT_EQ(1, popc(m[1]));
	ASSERT_EQ(gpsSuccess, gpsFree(g));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
}

/* ------------------------------------------------------------------ */
/* Managed memory on fault                                             */
/* ------------------------------------------------------------------ */

struct um_args {
	uint32_t *p;		/* managed, translated */
	size_t words;
	int d, nd, mode;
	unsigned int iters, prev;
	int *go;
	struct ctl *c;
};

enum { UM_TURN, UM_ONCE };

/*
 * UM_TURN: every word holds prev * 1000 + i (the device before's),
 * then d * 1000 + i; UM_ONCE: iters times a device-scope add to word 0
 * of each 4 KiB page, and a plain store of the round to the device's
 * own words, each checked first.
 */
static void um_kernel(void *p)
{
	struct um_args *a = p;
	unsigned int k;
	size_t i;
	uint32_t got;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	if (a->mode == UM_TURN) {
		for (i = 0; i < a->words; i++) {
			got = __atomic_load_n(&a->p[i], __ATOMIC_RELAXED);
			if (got != a->prev * 1000 + i)
				st_bad(a->c, a->d, i, a->prev * 1000 + i, got);
			__atomic_store_n(&a->p[i], a->d * 1000 + i,
					 __ATOMIC_RELAXED);
		}
		return;
	}
	while (!__atomic_load_n(a->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (k = 0; k < a->iters; k++) {
		for (i = 0; i < a->words; i += 1024)
			gpsAtomicAddU(&a->p[i], 1);
		for (i = (size_t)a->d; i < a->words; i += (size_t)a->nd) {
			if (i % 1024 == 0)
				continue;
			got = __atomic_load_n(&a->p[i], __ATOMIC_RELAXED);
			if (got != k)
				st_bad(a->c, a->d, i, k, got);
			__atomic_store_n(&a->p[i], k + 1, __ATOMIC_RELAXED);
		}
		sched_yield();
	}
}

/*
 * Promise: managed memory has one copy; a move loses no store.
 *
 * Managed memory (gpsMemManagedOnFault) touched by every device in
 * turn, then by all at once (device-scope adds on shared words, plain
 * stores on their own): every store seen by the next device, exact
 * totals, one owner per page; while tracking too; the advice and
 * prefetch refused as documented, nothing changed.
 */
TEST(managed_memory_in_turn_and_at_once)
{
	const size_t bytes = 3 * 4096 + 256, words = bytes / 4;
	const unsigned int iters = 50;
	unsigned long long m[4];
	gpsStream_t s[MAXD];
	uint32_t *um, *host;
	struct ctl *c;
	int nd, d, go = 0, e, pass;
	size_t i, np;
	gpsError_t err;

	T_CONTRACT_DEVICES(nd, 2);
	if (nd > MAXD)
		nd = MAXD;
	c = calloc(1, sizeof(*c));
	host = malloc(bytes);
	ASSERT_TRUE(c && host);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocManagedFlags((void **)&um, bytes,
						    gpsMemManagedOnFault));
	for (i = 0; i < words; i++)
		host[i] = (uint32_t)((nd - 1) * 1000 + i);
	ASSERT_EQ(gpsSuccess, gpsMemcpy(um, host, bytes,
					gpsMemcpyHostToDevice));
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1)
			ASSERT_EQ(gpsSuccess, gpsTrackingStart());
		for (d = 0; d < nd; d++) {
			struct um_args a = { um, words, d, nd, UM_TURN, 0,
					     (unsigned int)(d ? d - 1 : nd - 1),
					     NULL, c };

			ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
			ASSERT_EQ(gpsSuccess, gpsLaunchKernel(um_kernel,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct um_args, p)),
				NULL));
			ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
			ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, bytes,
							m, 4, &np));
			ASSERT_EQ(4U, np);
			for (i = 0; i < np; i++) {
				ASSERT_EQ(1, popc(m[i]))
					TH_LOG("page %zu: %#llx", i, m[i]);
			}
		}
		if (pass == 1)
			ASSERT_EQ(gpsSuccess, gpsTrackingStop());
		for (d = 0; d < nd; d++) {
			EXPECT_EQ(0U, c->errs[d])
				TH_LOG("pass %d device %d: %u words wrong, "
				       "first %zu wanted %u got %u", pass, d,
				       c->errs[d], c->bad_i[d],
				       c->bad_want[d], c->bad_got[d]);
		}
	}
	/* all at once */
	memset(host, 0, bytes);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMemcpy(um, host, bytes,
					gpsMemcpyHostToDevice));
	for (d = 0; d < nd; d++) {
		struct um_args a = { um, words, d, nd, UM_ONCE, iters, 0,
				     &go, c };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(um_kernel,
			gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct um_args, p)), s[d]));
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (d = 0; d < nd; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	for (d = 0; d < nd; d++) {
		EXPECT_EQ(0U, c->errs[d])
			TH_LOG("at once, device %d: %u words wrong, first %zu "
			       "wanted %u got %u", d, c->errs[d], c->bad_i[d],
			       c->bad_want[d], c->bad_got[d]);
	}
	for (e = 0; e < nd; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		ASSERT_EQ(gpsSuccess, gpsMemcpy(host, um, bytes,
						gpsMemcpyDeviceToHost));
		for (i = 0; i < words; i++) {
			ASSERT_EQ(i % 1024 ? iters : (unsigned int)nd * iters,
				  host[i]) TH_LOG("copy on %d, word %zu", e, i);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	for (i = 0; i < words; i++) {
		ASSERT_EQ(i % 1024 ? iters : (unsigned int)nd * iters,
			  __atomic_load_n(&um[i], __ATOMIC_RELAXED))
			TH_LOG("host pointer, word %zu", i);
	}
	/* advice: refused as documented, nothing moved */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, bytes, m, 4, &np));
	EXPECT_EQ(gpsErrorInvalidValue, gpsMemAdvise(um, bytes,
		gpsMemAdviseGPSSubscribe, 1));
	EXPECT_EQ(gpsErrorInvalidValue, gpsMemAdvise(um, bytes,
		gpsMemAdviseGPSUnsubscribe, 0));
	EXPECT_EQ(gpsErrorNotSupported, gpsMemAdvise(um, bytes,
		gpsMemAdviseSetReadMostly, 1));
	EXPECT_EQ(gpsErrorNotSupported, gpsMemPrefetchAsync(um, bytes, 1,
							    NULL));
	err = gpsMemAdvise(um, bytes, gpsMemAdviseGPSCollapse, 1);
	/* gpsMemAdvise(3): InvalidValue; gpsMallocManagedFlags(3): success */
	EXPECT_TRUE(err == gpsSuccess || err == gpsErrorInvalidValue);
	TH_LOG("collapse of managed-on-fault memory: %s", gpsGetErrorName(err));
	(void)gpsGetLastError();
	{
		unsigned long long m2[4];

		ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(um, bytes, m2, 4,
							   &np));
		EXPECT_EQ(0, memcmp(m, m2, sizeof(m)));
	}
	ASSERT_EQ(gpsSuccess, gpsFree(um));
	free(host);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Budgets: refused replicas while every device stores                 */
/* ------------------------------------------------------------------ */

FIXTURE(budget) {
	unsigned long long max0, node0;
	int saved, nd;
	size_t ps;
};

FIXTURE_SETUP(budget)
{
	self->saved = 0;
	T_CONTRACT_DEVICES(self->nd, 2);
	if (self->nd > MAXD)
		self->nd = MAXD;
	ASSERT_EQ(0, t_knob_get("max_bytes", &self->max0));
	ASSERT_EQ(0, t_knob_get("node_max_bytes", &self->node0));
	self->saved = 1;
	self->ps = gps_page_size(_metadata, gpsMemGPSPage4K);
}

FIXTURE_TEARDOWN(budget)
{
	if (!self->saved)
		return;
	t_knob_set("max_bytes", self->max0);
	t_knob_set("node_max_bytes", self->node0);
}

static size_t dev_pages(int d)
{
	gpsDeviceProp prop;

	return gpsGetDeviceProperties(&prop, d) == gpsSuccess ?
	       prop.replicaPages : 0;
}

static long long failed_of(int d)
{
	return t_dev_stat(d, "subscribe_failed");
}

/*
 * Promise: a refused replica leaves the device unsubscribed and counted.
 *
 * Under node_max_bytes, subscribe, prefetch and read-mostly advice of
 * every device while every device stores: each device holds what the
 * budget lets it, each page it was refused is counted, the call
 * succeeds; an unsubscribe gives the room back to a later subscribe;
 * under max_bytes read-mostly adds what the total allows; every change
 * a release, every store kept; the knobs restored at the end.
 */
TEST_F(budget, refused_replicas_while_every_device_stores)
{
	const size_t np = 4;
	size_t ps = self->ps, bytes = np * ps, cap, pg;
	unsigned long long all = self->nd >= 64 ? ~0ULL :
				 (1ULL << self->nd) - 1, v;
	unsigned int snap[MAXD];
	long long f0, f1, fsum0, fsum1;
	struct storers st;
	struct obs o;
	gpsStream_t pstream;
	uint32_t *buf;
	int d, held, want, subs0, subs1;
	char what[64];

	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes,
					   gpsMemGPSManual | gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&pstream));
	obs_init(_metadata, &o, buf, bytes, ps, self->nd);
	storers_start(_metadata, &st, buf, bytes / 4, self->nd, all, 0);
	/* room for two GPS pages on devices 1.. (the home is past it) */
	cap = 0;
	for (d = 1; d < self->nd; d++)
		if (dev_pages(d) * 4096 > cap)
			cap = dev_pages(d) * 4096;
	cap += 2 * ps;
	T_KNOB_SET("node_max_bytes", cap);
#define CHANGE(call, fmt, ...) do {					\
		snap_of(st.c, self->nd, snap);				\
		obs_masks(_metadata, &o, o.m0);				\
		snprintf(what, sizeof(what), fmt, __VA_ARGS__);		\
		ASSERT_EQ(gpsSuccess, (call)) TH_LOG("%s", what);	\
		ASSERT_EQ(0, obs_check(_metadata, &o, snap, 0, o.np - 1, \
				       what));				\
	} while (0)
	for (d = 1; d < self->nd; d++) {
		want = (int)((cap - dev_pages(d) * 4096) / ps);
		if (want > (int)np)
			want = (int)np;
		f0 = failed_of(d);
		ASSERT_LE(0, f0);
		CHANGE(gpsMemAdvise(buf, bytes, gpsMemAdviseGPSSubscribe, d),
		       "subscribe %d", d);
		held = 0;
		for (pg = 0; pg < np; pg++)
			held += (int)(o.m[pg] >> d & 1);
		EXPECT_EQ(want, held) TH_LOG("device %d", d);
		EXPECT_LE(dev_pages(d) * 4096, cap) TH_LOG("device %d", d);
		f1 = failed_of(d);
		EXPECT_EQ((long long)np - held, f1 - f0)
			TH_LOG("device %d: refusals counted", d);
	}
	/* an unsubscribe gives the room back */
	CHANGE(gpsMemAdvise(buf, bytes, gpsMemAdviseGPSUnsubscribe, 1),
	       "unsubscribe %d", 1);
	for (pg = 0; pg < np; pg++) {
		ASSERT_EQ(0ULL, o.m[pg] & 2);
	}
	f0 = failed_of(1);
	CHANGE(gpsMemAdvise((char *)buf + 2 * ps, 2 * ps,
			    gpsMemAdviseGPSSubscribe, 1), "subscribe 1 %s",
	       "back");
	EXPECT_EQ(2ULL, o.m[2] & 2);
	EXPECT_EQ(2ULL, o.m[3] & 2);
	EXPECT_EQ(f0, failed_of(1));
	/* a refused prefetch succeeds too */
	if (self->nd > 2) {
		f0 = failed_of(2);
		CHANGE(gpsMemPrefetchAsync(buf, bytes, 2, pstream) ||
		       gpsStreamSynchronize(pstream), "prefetch %d", 2);
		held = 0;
		for (pg = 0; pg < np; pg++)
			held += (int)(o.m[pg] >> 2 & 1);
		TH_LOG("prefetch at the budget: device 2 holds %d, %lld more "
		       "refusals counted", held, failed_of(2) - f0);
		EXPECT_GE(failed_of(2) - f0, 0);
	}
	/* max_bytes: one more replica in all */
	T_KNOB_SET("node_max_bytes", 0);
	subs0 = 0;
	fsum0 = 0;
	for (d = 0; d < self->nd; d++) {
		fsum0 += failed_of(d);
		for (pg = 0; pg < np; pg++)
			subs0 += (int)(o.m[pg] >> d & 1);
	}
	T_KNOB_SET("max_bytes", t_replica_pages(self->nd) * 4096 + ps);
	CHANGE(gpsMemAdvise(buf, bytes, gpsMemAdviseSetReadMostly, 0),
	       "read-mostly under max_bytes %d", 0);
	subs1 = 0;
	fsum1 = 0;
	for (d = 0; d < self->nd; d++) {
		fsum1 += failed_of(d);
		for (pg = 0; pg < np; pg++)
			subs1 += (int)(o.m[pg] >> d & 1);
	}
	EXPECT_EQ(subs0 + 1, subs1);
	EXPECT_EQ((long long)np * self->nd - subs1, fsum1 - fsum0);
#undef CHANGE
	storers_stop(_metadata, &st);
	ASSERT_EQ(0, obs_final(_metadata, &o, st.c->done));
	/* the knobs restored */
	ASSERT_EQ(0, t_knob_set("max_bytes", self->max0));
	ASSERT_EQ(0, t_knob_set("node_max_bytes", self->node0));
	ASSERT_EQ(0, t_knob_get("max_bytes", &v));
	ASSERT_EQ(self->max0, v);
	ASSERT_EQ(0, t_knob_get("node_max_bytes", &v));
	ASSERT_EQ(self->node0, v);
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(pstream));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	obs_free(&o);
	free(st.c);
}

/* ------------------------------------------------------------------ */
/* Error paths                                                         */
/* ------------------------------------------------------------------ */

/* @call fails with @want, as the thread's last error, with a message */
#define T_FAILS(want, call) do {					\
		gpsError_t e_ = (call);					\
		const char *m_ = gpsGetErrorString(e_);			\
		EXPECT_EQ((want), e_) TH_LOG("%s", #call);		\
		EXPECT_EQ((want), gpsGetLastError()) TH_LOG("%s", #call); \
		EXPECT_TRUE(m_ && *m_) TH_LOG("%s", #call);		\
	} while (0)

/*
 * Promise: arguments are checked before anything happens (library.rst).
 *
 * Bad ranges, devices, advice, pointers (freed ones too) and streams
 * are refused with their documented error and a message, as the last
 * error, and change nothing: the masks stay, and every store made
 * before (a kernel's released, the host's not yet fenced) is kept and
 * then published.
 */
TEST(bad_arguments_change_nothing)
{
	unsigned long long m0[4], m1[4], mm;
	size_t ps, bytes, np, i;
	uint32_t *buf, *gone, *conv, *w;
	char stack[64];
	gpsStream_t s, dead;
	void *managed;
	int nd, e;

	T_CONTRACT_DEVICES(nd, 2);
	ps = gps_page_size(_metadata, 0);
	bytes = 3 * ps + 100;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	/* device 1 is the last subscriber of page 1 only */
	ASSERT_EQ(gpsSuccess, gpsMemAdvise((char *)buf + ps, 1,
					   gpsMemAdviseUnsetReadMostly, 1));
	/* a released store of device 1 on every page, the host's pending */
	touch(_metadata, 1, buf, bytes / 4, 11, TOUCH_STORE);
	for (i = 0; i < bytes / 4; i += 4096)
		((volatile uint32_t *)buf)[i] = 5;
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, bytes, m0, 4, &np));
	ASSERT_EQ(4U, np);
	ASSERT_EQ(2ULL, m0[1]);
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&gone, ps, 0));
	ASSERT_EQ(gpsSuccess, gpsFree(gone));
	ASSERT_EQ(gpsSuccess, gpsMalloc((void **)&conv, 4096));
	ASSERT_EQ(gpsSuccess, gpsMallocManaged(&managed, 4096));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&dead));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(dead));

	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(NULL, 1,
		gpsMemAdviseGPSSubscribe, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(buf, 0,
		gpsMemAdviseGPSSubscribe, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(buf, bytes + 1,
		gpsMemAdviseGPSUnsubscribe, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise((char *)buf + bytes - 1,
		2, gpsMemAdviseGPSCollapse, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(buf, SIZE_MAX,
		gpsMemAdviseGPSUnsubscribe, 0));
	T_FAILS(gpsErrorInvalidDevice, gpsMemAdvise(buf, bytes,
		gpsMemAdviseGPSUnsubscribe, -1));
	T_FAILS(gpsErrorInvalidDevice, gpsMemAdvise(buf, bytes,
		gpsMemAdviseGPSCollapse, nd));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(buf, bytes,
		(gpsMemoryAdvise)0, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(buf, bytes,
		(gpsMemoryAdvise)10, 0));
	T_FAILS(gpsErrorNotSupported, gpsMemAdvise(buf, bytes,
		gpsMemAdviseUnsetPreferredLocation, 0));
	/* the last subscriber of one page: nothing changes on the others */
	T_FAILS(gpsErrorBusy, gpsMemAdvise(buf, bytes,
		gpsMemAdviseGPSUnsubscribe, 1));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemAdvise(gone, ps,
		gpsMemAdviseGPSUnsubscribe, 0));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemAdvise(stack, 1,
		gpsMemAdviseGPSSubscribe, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(conv, 4096,
		gpsMemAdviseGPSSubscribe, 1));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(managed, 4096,
		gpsMemAdviseGPSUnsubscribe, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemAdvise(managed, 4096,
		gpsMemAdviseGPSCollapse, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemPrefetchAsync(NULL, 1, 0, s));
	T_FAILS(gpsErrorInvalidValue, gpsMemPrefetchAsync(buf, 0, 0, s));
	T_FAILS(gpsErrorInvalidValue, gpsMemPrefetchAsync(buf, bytes + 1, 0,
							  s));
	T_FAILS(gpsErrorInvalidDevice, gpsMemPrefetchAsync(buf, bytes, nd,
							   s));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemPrefetchAsync(gone, ps,
								  0, s));
	T_FAILS(gpsErrorNotSupported, gpsMemPrefetchAsync(conv, 4096, 1, s));
	T_FAILS(gpsErrorInvalidResourceHandle, gpsMemPrefetchAsync(buf,
		bytes, 1, dead));
	T_FAILS(gpsErrorInvalidValue, gpsMemGetSubscribers(buf, 0, &mm, 1,
							   NULL));
	T_FAILS(gpsErrorInvalidValue, gpsMemGetSubscribers(buf, bytes, NULL,
							   1, NULL));
	T_FAILS(gpsErrorInvalidValue, gpsMemGetSubscribers(buf, bytes, &mm,
							   0, NULL));
	T_FAILS(gpsErrorInvalidValue, gpsMemGetSubscribers(buf, bytes + 1,
							   &mm, 1, NULL));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemGetSubscribers(gone, 1,
		&mm, 1, NULL));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemGetSubscribers(stack, 1,
		&mm, 1, NULL));
	T_FAILS(gpsErrorInvalidValue, gpsMemSystemScope(NULL, 4));
	T_FAILS(gpsErrorInvalidValue, gpsMemSystemScope(buf, 0));
	T_FAILS(gpsErrorInvalidValue, gpsMemSystemScope(buf, bytes + 1));
	T_FAILS(gpsErrorInvalidValue, gpsMemSystemScope((char *)buf + 8,
							SIZE_MAX));
	T_FAILS(gpsErrorInvalidValue, gpsTrackingStop());
	T_FAILS(gpsErrorInvalidDevicePointer, gpsFree(gone));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsFree((char *)buf + 4));
	T_FAILS(gpsErrorInvalidDevice, gpsSetDevice(nd));

	/* nothing changed, nothing lost */
	ASSERT_EQ(gpsSuccess, gpsMemGetSubscribers(buf, bytes, m1, 4, &np));
	EXPECT_EQ(0, memcmp(m0, m1, sizeof(m0)));
	ASSERT_EQ(5U, ((volatile uint32_t *)buf)[0]);
	ASSERT_EQ(gpsSuccess, gpsThreadFenceSystem());
	for (e = 0; e < nd; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		w = gpsDevicePtr(buf);
		for (i = 0; i < bytes / 4; i++) {
			ASSERT_EQ(i % 4096 ? 11 + (uint32_t)i : 5U,
				  ((volatile uint32_t *)w)[i])
				TH_LOG("view %d word %zu", e, i);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(managed));
	ASSERT_EQ(gpsSuccess, gpsFree(conv));
	/* freed through another device's view: gone for every address */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(1));
	w = gpsDevicePtr(buf);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(w));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsFree(buf));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemAdvise(buf, 4,
		gpsMemAdviseGPSSubscribe, 1));
	T_FAILS(gpsErrorInvalidDevicePointer, gpsMemGetSubscribers(w, 4, &mm,
		1, NULL));
}

/* ------------------------------------------------------------------ */
/* Advice from inside a kernel                                          */
/* ------------------------------------------------------------------ */

struct self_args {
	uint32_t *buf;		/* GPS, translated */
	size_t words;
	int d, nd, rounds;
	gpsError_t *errs;	/* host memory: [0] unsub, [1] sub, [2] track */
	struct ctl *c;
};

/*
 * A kernel of device d stores its words, leaves the allocation by
 * advice, checks and stores them again, joins it again, checks them,
 * rounds times; tracking from inside a kernel is refused.
 */
static void self_kernel(void *p)
{
	struct self_args *a = p;
	unsigned int r = 0;
	size_t i;
	uint32_t got;
	int k;
	gpsError_t e;

	if (gpsThreadIdx().x || gpsBlockIdx().x)
		return;
	for (k = 0; k < 2 * a->rounds; k++) {
		for (i = (size_t)a->d; i < a->words; i += (size_t)a->nd) {
			got = __atomic_load_n(&a->buf[i], __ATOMIC_RELAXED);
			if (got != r)
				st_bad(a->c, a->d, i, r, got);
			__atomic_store_n(&a->buf[i], r + 1, __ATOMIC_RELAXED);
		}
		r++;
		__atomic_store_n(&a->c->done[a->d], r, __ATOMIC_RELEASE);
		e = gpsMemAdvise(a->buf, a->words * 4, k % 2 ?
				 gpsMemAdviseGPSSubscribe :
				 gpsMemAdviseGPSUnsubscribe, a->d);
		if (e != gpsSuccess)
			a->errs[k % 2] = e;
	}
	a->errs[2] = gpsTrackingStart();
	if (a->errs[2] == gpsSuccess)
		gpsTrackingStop();
}

/*
 * Promise: a kernel may call the advice functions (library.rst).
 *
 * Kernels that unsubscribe and subscribe their own device by advice
 * from inside (allowed: "the allocation, advice and query functions"),
 * while the other devices store: no hang, every advice succeeds, every
 * own store seen again, every store of every device in every view at
 * the end; gpsTrackingStart inside a kernel is gpsErrorNotSupported.
 */
TEST(advice_from_inside_a_kernel)
{
	gpsError_t errs[2][3] = { { 0 } };
	gpsStream_t s[2];
	struct storers st;
	struct obs o;
	size_t ps, bytes;
	uint32_t *buf;
	int nd, k, d;
	unsigned long long others;

	T_CONTRACT_DEVICES(nd, 3);
	if (nd > MAXD)
		nd = MAXD;
	ps = gps_page_size(_metadata, gpsMemGPSPage4K);
	bytes = 4 * ps;
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&buf, bytes,
					   gpsMemGPSPage4K));
	ASSERT_EQ(gpsSuccess, gpsMemset(buf, 0, bytes));
	obs_init(_metadata, &o, buf, bytes, ps, nd);
	/* devices 2.. store; devices 0 and 1 change their subscriptions */
	others = (nd >= 64 ? ~0ULL : (1ULL << nd) - 1) & ~3ULL;
	storers_start(_metadata, &st, buf, bytes / 4, nd, others, 0);
	for (k = 0; k < 2; k++) {
		struct self_args a = { buf, bytes / 4, k, nd, 5, errs[k],
				       st.c };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(k));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[k]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(self_kernel,
			gpsDim(1, 1, 1), gpsDim(1, 1, 1),
			GPS_ARGS(&a, GPS_PTR(struct self_args, buf)), s[k]));
	}
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(k));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[k]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[k]));
		EXPECT_EQ(gpsSuccess, errs[k][0]) TH_LOG("device %d", k);
		EXPECT_EQ(gpsSuccess, errs[k][1]) TH_LOG("device %d", k);
		EXPECT_EQ(gpsErrorNotSupported, errs[k][2])
			TH_LOG("device %d", k);
	}
	storers_stop(_metadata, &st);
	for (d = 0; d < 2; d++) {
		EXPECT_EQ(0U, st.c->errs[d])
			TH_LOG("device %d: %u own words wrong, first %zu "
			       "wanted %u got %u", d, st.c->errs[d],
			       st.c->bad_i[d], st.c->bad_want[d],
			       st.c->bad_got[d]);
	}
	ASSERT_EQ(0, obs_final(_metadata, &o, st.c->done));
	ASSERT_EQ(gpsSuccess, gpsFree(buf));
	obs_free(&o);
	free(st.c);
}

TEST_HARNESS_MAIN
