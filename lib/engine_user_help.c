// SPDX-License-Identifier: MIT
/*
 * The native engine's fence helpers, as the driver's gps/<node>.<k>
 * kthreads: a fence's diff and push of each written page is its whole
 * cost once its kernel has ended, and the device's CPUs are then idle,
 * so each device has up to GPSU_HELP_MAX helper threads on its CPUs.
 * gpsu_user_help_run() hands them one batch of items; the caller works
 * on it too, all taking the next item until none is left; then it
 * closes the batch (helpers not yet started do not join: a small batch
 * waits for no wake-up) and waits for those at work. Threads are made
 * when a fence first wants them and live until the engine closes.
 *
 * What the items are, and every lock they need, is the caller's: the
 * helpers work under the locks their fence holds (engine_user.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "cpus.h"
#include "engine.h"
#include "engine_user.h"

struct gpsu_help_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a batch, or stop */
	pthread_cond_t done;		/* the last worker left */
	int n;				/* threads made */
	pthread_t t[GPSU_HELP_MAX];
	bool stop;
	/* the batch, under lock but next */
	uint64_t gen;			/* batches handed out */
	int slots;			/* helpers that may still join */
	int joined;			/* workers given an index */
	int active;			/* helpers at work */
	gpsu_user_help_fn fn;
	void *ctx;
	size_t items;
	atomic_size_t next;		/* the next item to take */
	int dev;
	cpu_set_t cpus;			/* the device's, taken at open */
};

static struct gpsu_help_pool gpsu_help[GPSU_MAX_DEVICES];
static int gpsu_help_ndev;

static void gpsu_help_work(struct gpsu_help_pool *p, int worker)
{
	size_t i;

	while ((i = atomic_fetch_add_explicit(&p->next, 1,
					      memory_order_relaxed)) < p->items)
		p->fn(p->ctx, worker, i);
}

static void *gpsu_help_main(void *arg)
{
	struct gpsu_help_pool *p = arg;
	uint64_t seen = 0;
	int worker;

	/* seen 0: a helper made for the batch being handed out joins it */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && (p->gen == seen || !p->slots)) {
			seen = p->gen;
			pthread_cond_wait(&p->wake, &p->lock);
		}
		if (p->stop)
			break;
		seen = p->gen;
		p->slots--;
		p->active++;
		worker = ++p->joined;
		pthread_mutex_unlock(&p->lock);
		gpsu_help_work(p, worker);
		pthread_mutex_lock(&p->lock);
		if (!--p->active)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* One more helper of @p, on the device's CPUs; 0 or an errno. */
static int gpsu_help_spawn(struct gpsu_help_pool *p)
{
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "gps-help%d", p->dev);
	ret = gpsu_cpus_thread(&p->t[p->n], &p->cpus, name, gpsu_help_main, p);
	if (!ret)
		p->n++;
	return ret;
}

void gpsu_user_help_init(int d, const cpu_set_t *cpus)
{
	struct gpsu_help_pool *p = &gpsu_help[d];

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	p->n = 0;
	p->stop = false;
	p->gen = 0;
	p->slots = 0;
	p->active = 0;
	p->dev = d;
	p->cpus = *cpus;
	if (d + 1 > gpsu_help_ndev)
		gpsu_help_ndev = d + 1;
}

int gpsu_user_help_run(int d, int helpers, gpsu_user_help_fn fn, void *ctx,
		       size_t items)
{
	struct gpsu_help_pool *p = &gpsu_help[d];
	int joined;

	if (helpers > GPSU_HELP_MAX)
		helpers = GPSU_HELP_MAX;
	if ((size_t)helpers >= items)
		helpers = items ? (int)items - 1 : 0;
	/* threads are made by the fences, one at a time per device */
	while (p->n < helpers && !gpsu_help_spawn(p))
		;
	if (helpers > p->n)
		helpers = p->n;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->fn = fn;
	p->ctx = ctx;
	p->items = items;
	if (helpers > 0) {
		pthread_mutex_lock(&p->lock);
		p->slots = helpers;
		p->joined = 0;
		p->gen++;
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
	}
	gpsu_help_work(p, 0);
	if (helpers <= 0)
		return 0;
	pthread_mutex_lock(&p->lock);
	p->slots = 0;			/* those not started stay out */
	while (p->active)
		pthread_cond_wait(&p->done, &p->lock);
	joined = p->joined;
	pthread_mutex_unlock(&p->lock);
	return joined;
}

void gpsu_user_help_stop(void)
{
	int d, i;

	for (d = 0; d < gpsu_help_ndev; d++) {
		struct gpsu_help_pool *p = &gpsu_help[d];

		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
		for (i = 0; i < p->n; i++)
			pthread_join(p->t[i], NULL);
		p->n = 0;
		pthread_cond_destroy(&p->done);
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
	}
	gpsu_help_ndev = 0;
}
