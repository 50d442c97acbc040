// SPDX-License-Identifier: MIT
/*
 * proact.c - the PROACT paradigm's transfer agents (proact.h says what
 * they model).  One polling thread per device; the main thread of
 * bench/paradigms launches through proact_launch(), whose wrapper kernel
 * runs the workload's block and then marks it done.
 */
#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "proact.h"

#define PA_SLOTS	32	/* launches of one device in one phase */

enum { PA_IDLE, PA_RUN, PA_END, PA_DONE, PA_QUIT };

/* one launch of a phase */
struct pa_slot {
	unsigned int blocks;
	unsigned int ndone;		/* atomic: blocks finished */
	unsigned char *done;		/* per block, atomic */
	double t_end;			/* the last block's end */
};

struct pa_agent;

/* the wrapper kernel's argument block */
struct pa_wrap {
	gpsKernel_t fn;
	struct pa_slot *slot;
	struct pa_agent *ag;		/* non-NULL: the agent at block end */
	unsigned char data[GPS_KERNEL_MAX_ARGS_SIZE - 32]
		__attribute__((aligned(16)));
};

/* the transfers of one (phase, device), and what profiling learnt */
struct pa_list {
	struct pa_xfer *v;
	size_t n;
	unsigned long long total;
	uint8_t *safe;			/* may go early */
	uint8_t *hashed;		/* profiling: hash taken at "done" */
	uint64_t *hash;
	int nlaunch;			/* launches of the phase */
};

struct pa_agent {
	struct proact *pa;
	int d;
	pthread_t th;
	int state;			/* under pa->mu */
	pthread_mutex_t adv;		/* serializes pa_advance() */
	/* the phase (written by the main thread while the agent is idle) */
	struct pa_list *l;
	int profile;
	struct pa_slot slots[PA_SLOTS];
	unsigned int nslots;		/* atomic: launches so far */
	uint8_t *sent;			/* per transfer: sent early */
	size_t sent_cap;
	/* the agent's */
	int followed;			/* the slot it follows, -1 none */
	unsigned int prefix;		/* its blocks done from 0 on */
	size_t cur;			/* next transfer to consider */
	unsigned long long bytes;	/* sent in the phase */
	double t_first;			/* first early transfer, 0 none */
	struct pa_stats st;
};

struct proact {
	int nd, nph;
	size_t maxp;
	unsigned int poll_us;
	struct pa_list *lists;		/* [ph * nd + d] */
	struct pa_agent *ag;
	pthread_mutex_t mu;		/* agents' state */
	pthread_cond_t cv;
	void *const (*bufs)[WL_MAX_BUF];
};

static double pa_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *pa_zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "paradigms: proact: out of memory\n");
		exit(2);
	}
	return p;
}

static uint64_t pa_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void pa_advance(struct pa_agent *a);

static void pa_kernel(void *p)
{
	struct pa_wrap *w = p;
	struct pa_slot *s = w->slot;
	unsigned int b = (gpsBlockIdx)().x;

	w->fn(w->data);
	if (b < s->blocks)
		__atomic_store_n(&s->done[b], 1, __ATOMIC_RELEASE);
	if (__atomic_add_fetch(&s->ndone, 1, __ATOMIC_ACQ_REL) == s->blocks)
		s->t_end = pa_now();
	else if (w->ag)
		/* the agent at block end: the block that finished sends
		 * what became done (the last block leaves it to the end) */
		pa_advance(w->ag);
}

static void *pa_src(const struct pa_agent *a, const struct pa_xfer *x)
{
	return (char *)a->pa->bufs[a->d][x->buf] + x->off;
}

static void *pa_dst(const struct pa_agent *a, const struct pa_xfer *x)
{
	return (char *)a->pa->bufs[x->to][x->buf] + x->off;
}

/* copies transfer @x; @early: the producer's kernel still runs */
static void pa_send(struct pa_agent *a, const struct pa_xfer *x, int early)
{
	size_t m = a->pa->maxp;

	if (early && !a->t_first)
		a->t_first = pa_now();
	memcpy(pa_dst(a, x), pa_src(a, x), x->len);
	a->bytes += x->len;
	a->st.bytes += x->len;
	a->st.xfers += (x->len + m - 1) / m;
	a->st.chunks++;
	a->st.early += early != 0;
}

static void pa_advance_locked(struct pa_agent *a);

/* the transfers whose bytes the followed launch has finished */
static void pa_advance(struct pa_agent *a)
{
	pthread_mutex_lock(&a->adv);
	pa_advance_locked(a);
	pthread_mutex_unlock(&a->adv);
}

static void pa_advance_locked(struct pa_agent *a)
{
	struct pa_list *l = a->l;
	unsigned int ns = __atomic_load_n(&a->nslots, __ATOMIC_ACQUIRE);
	struct pa_slot *s;
	int target;

	if (!ns || !l->n)
		return;
	target = a->profile ? (int)ns - 1 : l->nlaunch - 1;
	if (target < 0 || target >= (int)ns)
		return;
	if (target != a->followed) {
		/* profiling: a later launch of the phase began; the
		 * hashes start again from its first block */
		a->followed = target;
		a->prefix = 0;
		a->cur = 0;
		if (a->profile)
			memset(l->hashed, 0, l->n);
	}
	s = &a->slots[target];
	while (a->prefix < s->blocks &&
	       __atomic_load_n(&s->done[a->prefix], __ATOMIC_ACQUIRE))
		a->prefix++;
	while (a->cur < l->n &&
	       (!s->blocks || l->v[a->cur].end * s->blocks <=
			      (unsigned long long)a->prefix * l->total)) {
		const struct pa_xfer *x = &l->v[a->cur];

		if (a->profile) {
			l->hash[a->cur] = pa_hash(pa_src(a, x), x->len);
			l->hashed[a->cur] = 1;
		} else if (l->safe[a->cur]) {
			pa_send(a, x, __atomic_load_n(&s->ndone,
				__ATOMIC_ACQUIRE) < s->blocks);
			a->sent[a->cur] = 1;
		}
		a->cur++;
	}
}

/* after the kernel: the rest, and every early chunk checked */
static void pa_final(struct pa_agent *a)
{
	struct pa_list *l = a->l;
	size_t i;

	for (i = 0; i < l->n; i++) {
		const struct pa_xfer *x = &l->v[i];

		if (a->profile) {
			/* a chunk the agent did not reach stays early-safe:
			 * the mapping's assumption, checked at every end */
			l->safe[i] = !l->hashed[i] ||
				     l->hash[i] == pa_hash(pa_src(a, x),
							   x->len);
			pa_send(a, x, 0);
		} else if (!a->sent[i]) {
			pa_send(a, x, 0);
		} else if (memcmp(pa_dst(a, x), pa_src(a, x), x->len)) {
			pa_send(a, x, 0);
			a->st.resent++;
			a->st.resent_bytes += x->len;
		}
	}
	if (a->t_first && a->followed >= 0) {
		double lead = a->slots[a->followed].t_end - a->t_first;

		if (lead > a->st.lead_s)
			a->st.lead_s = lead;
	}
}

static void *pa_main(void *p)
{
	struct pa_agent *a = p;
	struct proact *pa = a->pa;
	struct timespec nap = { 0, (long)pa->poll_us * 1000 };

	pthread_mutex_lock(&pa->mu);
	for (;;) {
		while (a->state == PA_IDLE || a->state == PA_DONE)
			pthread_cond_wait(&pa->cv, &pa->mu);
		if (a->state == PA_QUIT)
			break;
		if (a->state == PA_RUN && !pa->poll_us) {
			/* the agent runs at block end: nothing to poll */
			pthread_cond_wait(&pa->cv, &pa->mu);
			continue;
		}
		if (a->state == PA_RUN) {
			pthread_mutex_unlock(&pa->mu);
			pa_advance(a);
			nanosleep(&nap, NULL);
			pthread_mutex_lock(&pa->mu);
			continue;
		}
		/* PA_END: the main thread synchronized the streams */
		pthread_mutex_unlock(&pa->mu);
		pa_advance(a);
		pa_final(a);
		pthread_mutex_lock(&pa->mu);
		a->state = PA_DONE;
		pthread_cond_broadcast(&pa->cv);
	}
	pthread_mutex_unlock(&pa->mu);
	return NULL;
}

struct proact *proact_new(int nd, int nph, size_t max_payload,
			  unsigned int poll_us)
{
	struct proact *pa = pa_zalloc(sizeof(*pa));
	int d;

	pa->nd = nd;
	pa->nph = nph;
	pa->maxp = max_payload ? max_payload : 4096;
	pa->poll_us = poll_us;
	pa->lists = pa_zalloc((size_t)nd * nph * sizeof(*pa->lists));
	pa->ag = pa_zalloc((size_t)nd * sizeof(*pa->ag));
	pthread_mutex_init(&pa->mu, NULL);
	pthread_cond_init(&pa->cv, NULL);
	for (d = 0; d < nd; d++) {
		struct pa_agent *a = &pa->ag[d];

		a->pa = pa;
		a->d = d;
		a->state = PA_IDLE;
		a->followed = -1;
		pthread_mutex_init(&a->adv, NULL);
		if (pthread_create(&a->th, NULL, pa_main, a)) {
			fprintf(stderr, "paradigms: proact: no thread\n");
			exit(2);
		}
	}
	return pa;
}

void proact_set(struct proact *pa, int ph, int d, struct pa_xfer *v,
		size_t n, unsigned long long total)
{
	struct pa_list *l = &pa->lists[ph * pa->nd + d];

	l->v = v;
	l->n = n;
	l->total = total;
	l->safe = pa_zalloc(n);
	memset(l->safe, 1, n);
	l->hashed = pa_zalloc(n);
	l->hash = pa_zalloc(n * sizeof(*l->hash));
	if (n > pa->ag[d].sent_cap) {
		free(pa->ag[d].sent);
		pa->ag[d].sent = pa_zalloc(n);
		pa->ag[d].sent_cap = n;
	}
}

void proact_begin(struct proact *pa, int ph, int profile,
		  void *const (*bufs)[WL_MAX_BUF])
{
	int d;

	pthread_mutex_lock(&pa->mu);
	pa->bufs = bufs;
	for (d = 0; d < pa->nd; d++) {
		struct pa_agent *a = &pa->ag[d];

		a->l = &pa->lists[ph * pa->nd + d];
		a->profile = profile;
		if (profile)
			a->l->nlaunch = 0;
		a->nslots = 0;
		a->followed = -1;
		a->prefix = 0;
		a->cur = 0;
		a->bytes = 0;
		a->t_first = 0;
		if (a->sent_cap)
			memset(a->sent, 0, a->sent_cap);
		a->state = PA_RUN;
	}
	pthread_cond_broadcast(&pa->cv);
	pthread_mutex_unlock(&pa->mu);
}

void proact_launch(struct proact *pa, int d, gpsKernel_t fn,
		   unsigned int blocks, const gpsKernelArgs *args,
		   gpsStream_t s)
{
	struct pa_agent *a = &pa->ag[d];
	unsigned int k = a->nslots, i;
	struct pa_wrap w;
	struct pa_slot *sl;
	gpsKernelArgs ka;
	gpsError_t err;

	if (k == PA_SLOTS || args->size > sizeof(w.data)) {
		fprintf(stderr, "paradigms: proact: launch %u of %zu bytes of "
			"arguments: too many or too large\n", k, args->size);
		exit(2);
	}
	sl = &a->slots[k];
	sl->blocks = blocks;
	sl->ndone = 0;
	sl->done = pa_zalloc(blocks);
	sl->t_end = blocks ? 0 : pa_now();
	w.fn = fn;
	w.slot = sl;
	w.ag = pa->poll_us ? NULL : a;
	memcpy(w.data, args->data, args->size);
	memset(&ka, 0, sizeof(ka));
	ka.data = &w;
	ka.size = offsetof(struct pa_wrap, data) + args->size;
	ka.flags = args->flags;
	ka.nptrs = args->nptrs;
	for (i = 0; i < args->nptrs && i < GPS_KERNEL_MAX_PTRS; i++)
		ka.ptr[i] = args->ptr[i] + offsetof(struct pa_wrap, data);
	if (a->profile)
		a->l->nlaunch = (int)k + 1;
	__atomic_store_n(&a->nslots, k + 1, __ATOMIC_RELEASE);
	err = gpsLaunchKernel(pa_kernel, gpsDim(blocks, 1, 1),
			      gpsDim(1, 1, 1), &ka, s);
	if (err != gpsSuccess) {
		fprintf(stderr, "paradigms: proact: launch: %s\n",
			gpsGetErrorString(err));
		exit(1);
	}
}

void proact_end(struct proact *pa, unsigned long long *sent)
{
	int d, busy = 1;
	unsigned int k;

	pthread_mutex_lock(&pa->mu);
	for (d = 0; d < pa->nd; d++)
		pa->ag[d].state = PA_END;
	pthread_cond_broadcast(&pa->cv);
	while (busy) {
		busy = 0;
		for (d = 0; d < pa->nd; d++)
			busy |= pa->ag[d].state != PA_DONE;
		if (busy)
			pthread_cond_wait(&pa->cv, &pa->mu);
	}
	for (d = 0; d < pa->nd; d++) {
		struct pa_agent *a = &pa->ag[d];

		sent[d] = a->bytes;
		for (k = 0; k < a->nslots; k++) {
			free(a->slots[k].done);
			a->slots[k].done = NULL;
		}
		a->nslots = 0;
		a->state = PA_IDLE;
	}
	pthread_mutex_unlock(&pa->mu);
}

void proact_stats(const struct proact *pa, struct pa_stats *st)
{
	int d;

	memset(st, 0, sizeof(*st));
	for (d = 0; d < pa->nd; d++) {
		const struct pa_stats *s = &pa->ag[d].st;

		st->bytes += s->bytes;
		st->xfers += s->xfers;
		st->chunks += s->chunks;
		st->early += s->early;
		st->resent += s->resent;
		st->resent_bytes += s->resent_bytes;
		if (s->lead_s > st->lead_s)
			st->lead_s = s->lead_s;
	}
}

void proact_reset_stats(struct proact *pa)
{
	int d;

	for (d = 0; d < pa->nd; d++)
		memset(&pa->ag[d].st, 0, sizeof(pa->ag[d].st));
}

void proact_free(struct proact *pa)
{
	int d, i;

	pthread_mutex_lock(&pa->mu);
	for (d = 0; d < pa->nd; d++)
		pa->ag[d].state = PA_QUIT;
	pthread_cond_broadcast(&pa->cv);
	pthread_mutex_unlock(&pa->mu);
	for (d = 0; d < pa->nd; d++) {
		pthread_join(pa->ag[d].th, NULL);
		pthread_mutex_destroy(&pa->ag[d].adv);
		free(pa->ag[d].sent);
	}
	for (i = 0; i < pa->nd * pa->nph; i++) {
		free(pa->lists[i].v);
		free(pa->lists[i].safe);
		free(pa->lists[i].hashed);
		free(pa->lists[i].hash);
	}
	free(pa->lists);
	free(pa->ag);
	pthread_cond_destroy(&pa->cv);
	pthread_mutex_destroy(&pa->mu);
	free(pa);
}
