// SPDX-License-Identifier: MIT
/*
 * The native engine's asynchronous fences: a ring is a thread that runs
 * the fences its stream hands it, so that a stream's release at a
 * kernel's end publishes while the stream goes on (the driver's engine
 * uses io_uring). Fences handed in while one runs are merged into the
 * next (a fence of a device twice is one fence that publishes both
 * times' stores); a reap waits for the running one and the next.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "engine.h"
#include "engine_user.h"

struct gpsu_engine_ring {
	pthread_mutex_t lock;
	pthread_cond_t work, done;	/* to the thread; from it */
	gpsu_user_fence_fn fence;
	uint64_t mask;			/* the next fence: devices, */
	bool host, queued;		/* the host views, whether any */
	bool running, stop;
	int err;			/* first error not yet reported */
	pthread_t thread;
};

static void *gpsu_ring_thread(void *arg)
{
	struct gpsu_engine_ring *r = arg;
	uint64_t mask;
	bool host;
	int e;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->queued && !r->stop)
			pthread_cond_wait(&r->work, &r->lock);
		if (!r->queued)
			break;
		mask = r->mask;
		host = r->host;
		r->mask = 0;
		r->host = r->queued = false;
		r->running = true;
		pthread_mutex_unlock(&r->lock);
		e = r->fence(mask, host);
		pthread_mutex_lock(&r->lock);
		r->running = false;
		if (e && !r->err)
			r->err = e;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct gpsu_engine_ring *gpsu_user_ring_new(gpsu_user_fence_fn fence)
{
	struct gpsu_engine_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fence = fence;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->done, NULL);
	if (pthread_create(&r->thread, NULL, gpsu_ring_thread, r)) {
		pthread_cond_destroy(&r->done);
		pthread_cond_destroy(&r->work);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;	/* the stream fences synchronously */
	}
	return r;
}

/* Waits for every fence handed in; the first error not yet reported. */
int gpsu_user_ring_reap(struct gpsu_engine_ring *r)
{
	int e;

	pthread_mutex_lock(&r->lock);
	while (r->queued || r->running)
		pthread_cond_wait(&r->done, &r->lock);
	e = r->err;
	r->err = 0;
	pthread_mutex_unlock(&r->lock);
	return e;
}

void gpsu_user_ring_free(struct gpsu_engine_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;		/* what is queued still runs */
	pthread_cond_signal(&r->work);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->done);
	pthread_cond_destroy(&r->work);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int gpsu_user_ring_fence(struct gpsu_engine_ring *r, uint64_t mask, bool host)
{
	int e;

	pthread_mutex_lock(&r->lock);
	r->mask |= mask;
	r->host |= host;
	r->queued = true;
	pthread_cond_signal(&r->work);
	e = r->err;
	r->err = 0;
	pthread_mutex_unlock(&r->lock);
	return e;
}

unsigned int gpsu_user_ring_pending(const struct gpsu_engine_ring *r)
{
	struct gpsu_engine_ring *w = (struct gpsu_engine_ring *)r;
	unsigned int n;

	pthread_mutex_lock(&w->lock);
	n = w->queued + w->running;
	pthread_mutex_unlock(&w->lock);
	return n;
}
