// SPDX-License-Identifier: MIT
/* Over 500 lines: a stream's worker, queue and waits share its struct. */
/*
 * Streams. Each stream has a worker pthread, pinned to its device's CPUs,
 * that runs the stream's operations in order: kernels on the device's
 * pool (pool.c), copies and sets (copy.c), prefetches (advise.c), event
 * records and waits (event.c). The release that ends every kernel is an
 * asynchronous fence on the worker's engine ring (engine.c): the next
 * kernel of the stream may start while the previous one's stores are
 * still being published; any operation that reads or writes memory,
 * records an event or completes a synchronize first reaps every fence in
 * flight.
 *
 * The entry points that queue here are the stream API below, launch.c and
 * memory.c; this file calls none of them.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>

#include "advise.h"
#include "copy.h"
#include "engine.h"
#include "event.h"
#include "pool.h"
#include "range.h"
#include "stream.h"

#define GPSU_STREAM_MAGIC	0x67707373U	/* "gpss" */

enum gpsu_op_type {
	GPSU_OP_KERNEL = 1,
	GPSU_OP_COPY,
	GPSU_OP_SET,
	GPSU_OP_PREFETCH,
	GPSU_OP_RECORD,
	GPSU_OP_WAIT,
};

struct gpsu_op {
	enum gpsu_op_type type;
	struct gpsu_op *next;
	struct gpsu_launch launch;		/* KERNEL */
	void *dst;				/* COPY, SET */
	const void *src;			/* COPY, PREFETCH */
	size_t n;
	int value;				/* SET */
	int device;				/* PREFETCH */
	struct gpsEvent *ev;			/* RECORD, WAIT */
	uint64_t seq;
	uint64_t ticket;			/* KERNEL: gpsu_hr.launches */
};

/*
 * A stream is found only through gpsu_stream_list (a handle is compared
 * with the live streams, never dereferenced first). Callers hold a
 * reference (gpsu_stream_get/put) for as long as they use it;
 * gpsStreamDestroy unlinks it, waits until no reference is left and its
 * queue has run, and only then frees it.
 */
struct gpsStream {
	uint32_t magic;			/* GPSU_STREAM_MAGIC while alive */
	int device;
	bool is_default;
	/* under gpsu.stream_lock: */
	bool dead;			/* unlinked by gpsStreamDestroy */
	int refs;			/* callers using it */
	pthread_cond_t cv_unref;	/* refs fell to 0 while dead */
	struct gpsStream *next;		/* gpsu_stream_list */

	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cv_work;
	pthread_cond_t cv_idle;
	struct gpsu_op *head, *tail;
	bool busy;			/* worker is running an op */
	bool stop;
	unsigned int inflight;		/* fences submitted, not reaped */
	gpsError_t err;			/* first asynchronous error */
	pthread_t thread;

	struct gpsu_engine_ring *ring;	/* worker-owned */
};

static struct gpsStream *gpsu_stream_list;		/* gpsu.stream_lock */
static struct gpsStream *gpsu_default_stream[GPSU_MAX_DEVICES];	/* same */

/* ---- the worker ------------------------------------------------------- */

static void gpsu_stream_error(struct gpsStream *s, gpsError_t err)
{
	pthread_mutex_lock(&s->lock);
	if (err && !s->err)
		s->err = err;
	pthread_mutex_unlock(&s->lock);
}

/* After an engine fence call: a failed fence is the stream's error, and
 * s->inflight follows the fences the ring still has in flight. */
static void gpsu_stream_fenced(struct gpsStream *s, int ret)
{
	pthread_mutex_lock(&s->lock);
	if (ret && !s->err)
		s->err = gpsErrorLaunchFailure;
	s->inflight = gpsu_engine_ring_pending(s->ring);
	pthread_mutex_unlock(&s->lock);
}

/* Reaps every fence in flight. */
static void gpsu_stream_drain(struct gpsStream *s)
{
	gpsu_stream_fenced(s, gpsu_engine_ring_reap(s->ring));
}

/*
 * Host stores through GPS pointers (host views) land in the home devices'
 * replicas: publish them, with a host fence, before a kernel of another
 * device may read them.  The engine knows whether the host stored at all
 * since the last one, and returns at once if not, without touching a
 * home device whose own kernel runs.  Only the stores made before the
 * kernel's launch call need to be published (later ones race with it),
 * so one host fence that starts after that call serves every kernel
 * launched by then: launches take a ticket, a fence notes the last ticket
 * given out when it starts, and a worker whose ticket is covered, or will
 * be by the fence running, needs none of its own.  With
 * GPSU_NO_HOST_COMBINE=1 every kernel fences alone (for comparisons).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv_done;
	uint64_t launches;	/* tickets given out (atomic) */
	uint64_t covered;	/* launches whose prior host stores are out */
	bool running;		/* a fence is out (its start is its own) */
	int alone;		/* GPSU_NO_HOST_COMBINE, -1: not read yet */
} gpsu_hr = {
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false, -1
};

static uint64_t gpsu_host_ticket(void)
{
	return __atomic_add_fetch(&gpsu_hr.launches, 1, __ATOMIC_SEQ_CST);
}

static void gpsu_host_release(struct gpsStream *s, int device,
			      uint64_t ticket)
{
	uint64_t start;
	int ret = 0;

	/* the kernel's device maps the replicas host views store into */
	if (!(gpsu_range_host_mask() & ~(1ULL << device)))
		return;
	pthread_mutex_lock(&gpsu_hr.lock);
	if (gpsu_env_switch("GPSU_NO_HOST_COMBINE", &gpsu_hr.alone)) {
		pthread_mutex_unlock(&gpsu_hr.lock);
		if (gpsu_engine_fence_mask(0, true))
			gpsu_stream_error(s, gpsErrorLaunchFailure);
		return;
	}
	while (!ret && gpsu_hr.covered < ticket) {
		if (gpsu_hr.running) {
			/* it covers us, or the next one will */
			pthread_cond_wait(&gpsu_hr.cv_done, &gpsu_hr.lock);
			continue;
		}
		start = __atomic_load_n(&gpsu_hr.launches, __ATOMIC_SEQ_CST);
		gpsu_hr.running = true;
		pthread_mutex_unlock(&gpsu_hr.lock);
		ret = gpsu_engine_fence_mask(0, true);
		pthread_mutex_lock(&gpsu_hr.lock);
		gpsu_hr.running = false;
		if (!ret && start > gpsu_hr.covered)
			gpsu_hr.covered = start;
		pthread_cond_broadcast(&gpsu_hr.cv_done);
	}
	pthread_mutex_unlock(&gpsu_hr.lock);
	if (ret)
		gpsu_stream_error(s, gpsErrorLaunchFailure);
}

/*
 * The release that ends a kernel on @device: that device, and the host
 * views, which untranslated pointers name (a kernel may store through
 * one), or @device alone for a kernel launched with gpsArgsLocalStores.
 * One fence, reaped before the stream's next memory operation.
 */
static void gpsu_kernel_release(struct gpsStream *s, int device,
				bool local_stores)
{
	gpsu_stream_fenced(s, gpsu_engine_fence_async(s->ring, 1ULL << device,
						      !local_stores));
}

static void gpsu_exec(struct gpsStream *s, struct gpsu_op *op)
{
	gpsError_t err = gpsSuccess;

	if (op->type != GPSU_OP_KERNEL && op->type != GPSU_OP_WAIT)
		gpsu_stream_drain(s);
	switch (op->type) {
	case GPSU_OP_KERNEL:
		gpsu_host_release(s, op->launch.device, op->ticket);
		err = gpsu_pool_run(&op->launch);
		gpsu_kernel_release(s, op->launch.device,
				    op->launch.local_stores);
		free(op->launch.args);
		break;
	case GPSU_OP_COPY:
		err = gpsu_copy(op->dst, op->src, op->n, s->device);
		break;
	case GPSU_OP_SET:
		err = gpsu_set(op->dst, op->value, op->n);
		break;
	case GPSU_OP_PREFETCH:
		err = gpsu_prefetch(op->src, op->n, op->device);
		break;
	case GPSU_OP_RECORD:
		/* the stream's work up to here is done: a query after the
		 * event completes must not see this op as still running */
		pthread_mutex_lock(&s->lock);
		s->busy = false;
		gpsu_event_complete(op->ev, op->seq);
		pthread_mutex_unlock(&s->lock);
		gpsu_event_put(op->ev);
		break;
	case GPSU_OP_WAIT:
		gpsu_event_wait(op->ev, op->seq);
		gpsu_event_put(op->ev);
		break;
	}
	if (err)
		gpsu_stream_error(s, err);
	free(op);
}

static void *gpsu_stream_worker(void *arg)
{
	struct gpsStream *s = arg;
	struct gpsu_op *op;

	gpsu_tls.device = s->device;
	/* GPSU_NO_URING is read here, per stream */
	s->ring = gpsu_engine_ring_new();
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->head) {
			op = s->head;
			s->head = op->next;
			if (!s->head)
				s->tail = NULL;
			s->busy = true;
			pthread_mutex_unlock(&s->lock);
			gpsu_exec(s, op);
			pthread_mutex_lock(&s->lock);
			s->busy = false;
		} else if (s->inflight) {
			pthread_mutex_unlock(&s->lock);
			gpsu_stream_drain(s);
			pthread_mutex_lock(&s->lock);
		} else {
			pthread_cond_broadcast(&s->cv_idle);
			if (s->stop)
				break;
			pthread_cond_wait(&s->cv_work, &s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
	gpsu_engine_ring_free(s->ring);
	return NULL;
}

/* ---- stream objects ---------------------------------------------------- */

static struct gpsStream *gpsu_stream_new(int device, bool is_default)
{
	struct gpsu_device *dev = &gpsu.dev[device];
	struct gpsStream *s;
	pthread_attr_t attr;
	cpu_set_t set;
	int i, ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->magic = GPSU_STREAM_MAGIC;
	s->device = device;
	s->is_default = is_default;
	pthread_cond_init(&s->cv_unref, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cv_work, NULL);
	pthread_cond_init(&s->cv_idle, NULL);
	CPU_ZERO(&set);
	for (i = 0; i < dev->nr_cpus; i++)
		CPU_SET(dev->cpus[i], &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	ret = pthread_create(&s->thread, &attr, gpsu_stream_worker, s);
	pthread_attr_destroy(&attr);
	if (ret) {
		pthread_cond_destroy(&s->cv_unref);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cv_work);
		pthread_cond_destroy(&s->cv_idle);
		free(s);
		return NULL;
	}
	return s;
}

/* Stops the worker once the queue has run, then frees @s (unreferenced,
 * unlinked). */
static void gpsu_stream_free(struct gpsStream *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cv_work);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cv_unref);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cv_work);
	pthread_cond_destroy(&s->cv_idle);
	s->magic = 0;
	free(s);
}

/*
 * Resolves a handle (NULL: the current device's default stream) and takes
 * a reference on it: the stream stays allocated until gpsu_stream_put(),
 * even if gpsStreamDestroy runs meanwhile. A handle that is not a live
 * stream of the list, or whose magic is wrong, is refused.
 */
gpsError_t gpsu_stream_get(gpsStream_t h, struct gpsStream **out)
{
	struct gpsStream *s;
	int device = gpsu_cur_device();

	pthread_mutex_lock(&gpsu.stream_lock);
	if (!h) {
		s = gpsu_default_stream[device];
		if (!s) {
			s = gpsu_stream_new(device, true);
			if (!s) {
				pthread_mutex_unlock(&gpsu.stream_lock);
				return gpsErrorMemoryAllocation;
			}
			s->next = gpsu_stream_list;
			gpsu_stream_list = s;
			gpsu_default_stream[device] = s;
		}
	} else {
		for (s = gpsu_stream_list; s; s = s->next)
			if (s == h)
				break;
	}
	if (!s || (h && s->is_default) || s->dead ||
	    s->magic != GPSU_STREAM_MAGIC) {
		pthread_mutex_unlock(&gpsu.stream_lock);
		return gpsErrorInvalidResourceHandle;
	}
	s->refs++;
	pthread_mutex_unlock(&gpsu.stream_lock);
	*out = s;
	return gpsSuccess;
}

/* Drops a reference taken by gpsu_stream_get (or gpsu_wait_streams). */
void gpsu_stream_put(struct gpsStream *s)
{
	pthread_mutex_lock(&gpsu.stream_lock);
	if (!--s->refs && s->dead)
		pthread_cond_broadcast(&s->cv_unref);
	pthread_mutex_unlock(&gpsu.stream_lock);
}

int gpsu_stream_device(struct gpsStream *s)
{
	return s->device;
}

/* ---- queueing --------------------------------------------------------- */

/* Appends @op to the queue of @s; caller holds s->lock. */
static void gpsu_enqueue_locked(struct gpsStream *s, struct gpsu_op *op)
{
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->cv_work);
}

static gpsError_t gpsu_enqueue(struct gpsStream *s, struct gpsu_op *op)
{
	pthread_mutex_lock(&s->lock);
	gpsu_enqueue_locked(s, op);
	pthread_mutex_unlock(&s->lock);
	return gpsSuccess;
}

gpsError_t gpsu_stream_kernel(struct gpsStream *s, struct gpsu_launch *l)
{
	struct gpsu_op *op = calloc(1, sizeof(*op));

	if (!op)
		return gpsErrorMemoryAllocation;
	op->type = GPSU_OP_KERNEL;
	op->launch = *l;
	/* after every host store this launch must publish */
	op->ticket = gpsu_host_ticket();
	return gpsu_enqueue(s, op);
}

gpsError_t gpsu_stream_copy(struct gpsStream *s, void *dst, const void *src,
			    size_t n)
{
	struct gpsu_op *op = calloc(1, sizeof(*op));

	if (!op)
		return gpsErrorMemoryAllocation;
	op->type = GPSU_OP_COPY;
	op->dst = dst;
	op->src = src;
	op->n = n;
	return gpsu_enqueue(s, op);
}

gpsError_t gpsu_stream_set(struct gpsStream *s, void *p, int v, size_t n)
{
	struct gpsu_op *op = calloc(1, sizeof(*op));

	if (!op)
		return gpsErrorMemoryAllocation;
	op->type = GPSU_OP_SET;
	op->dst = p;
	op->value = v;
	op->n = n;
	return gpsu_enqueue(s, op);
}

gpsError_t gpsu_stream_prefetch(struct gpsStream *s, const void *p,
				size_t n, int device)
{
	struct gpsu_op *op = calloc(1, sizeof(*op));

	if (!op)
		return gpsErrorMemoryAllocation;
	op->type = GPSU_OP_PREFETCH;
	op->src = p;
	op->n = n;
	op->device = device;
	return gpsu_enqueue(s, op);
}

static gpsError_t gpsu_enqueue_event_op(gpsStream_t stream, gpsEvent_t e,
					enum gpsu_op_type type)
{
	struct gpsu_op *op;
	struct gpsStream *s;
	struct gpsEvent *ev;
	gpsError_t err = gpsu_init();

	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return err;
	op = calloc(1, sizeof(*op));
	if (!op) {
		gpsu_stream_put(s);
		return gpsErrorMemoryAllocation;
	}
	pthread_mutex_lock(&gpsu.stream_lock);
	ev = e ? gpsu_event_find(e) : NULL;
	if (!ev) {
		pthread_mutex_unlock(&gpsu.stream_lock);
		free(op);
		gpsu_stream_put(s);
		return gpsErrorInvalidResourceHandle;
	}
	op->type = type;
	op->ev = ev;
	/*
	 * The record's number and the op's place in the queue are taken
	 * together (all event ops hold gpsu.stream_lock): a wait never sits
	 * in a queue ahead of the record it waits for.
	 */
	pthread_mutex_lock(&s->lock);
	op->seq = gpsu_event_queue(ev, type == GPSU_OP_RECORD);
	gpsu_enqueue_locked(s, op);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&gpsu.stream_lock);
	gpsu_stream_put(s);
	return gpsSuccess;
}

/* ---- waiting ---------------------------------------------------------- */

/* Waits until @s has nothing queued, running or in flight. */
static gpsError_t gpsu_stream_wait_idle(struct gpsStream *s, bool consume)
{
	gpsError_t err;

	pthread_mutex_lock(&s->lock);
	while (s->head || s->busy || s->inflight)
		pthread_cond_wait(&s->cv_idle, &s->lock);
	err = s->err;
	if (consume)
		s->err = gpsSuccess;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* Waits for every stream of @device (-1: all devices). */
static gpsError_t gpsu_wait_streams(int device, bool consume)
{
	struct gpsStream **list, *s;
	gpsError_t err = gpsSuccess, e;
	size_t n = 0, i;

	pthread_mutex_lock(&gpsu.stream_lock);
	for (s = gpsu_stream_list; s; s = s->next)
		n++;
	list = calloc(n ? n : 1, sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&gpsu.stream_lock);
		return gpsErrorMemoryAllocation;
	}
	n = 0;
	for (s = gpsu_stream_list; s; s = s->next) {
		if (device >= 0 && s->device != device)
			continue;
		s->refs++;
		list[n++] = s;
	}
	pthread_mutex_unlock(&gpsu.stream_lock);
	for (i = 0; i < n; i++) {
		e = gpsu_stream_wait_idle(list[i], consume);
		if (e && !err)
			err = e;
		gpsu_stream_put(list[i]);
	}
	free(list);
	return err;
}

/*
 * Waits for the streams of @device; with @fence, then fences the device
 * and the host views (stores through GPS pointers as handed out) in one
 * call.
 */
gpsError_t gpsu_sync_device(int device, bool fence)
{
	gpsError_t err = gpsu_wait_streams(device, fence);

	if (fence) {
		int e = gpsu_engine_fence_mask(1ULL << device, true);

		if (e && !err)
			err = gpsErrorLaunchFailure;
	}
	return err;
}

/* Waits for all work of all devices; errors stay for their synchronize. */
gpsError_t gpsu_sync_all(void)
{
	gpsu_wait_streams(-1, false);
	return gpsSuccess;
}

/* ---- the stream API --------------------------------------------------- */

GPSU_API gpsError_t gpsDeviceSynchronize(void)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	return gpsu_ret(gpsu_sync_device(gpsu_cur_device(), true));
}

GPSU_API gpsError_t gpsStreamCreate(gpsStream_t *stream)
{
	struct gpsStream *s;
	gpsError_t err;

	if (!stream)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	s = gpsu_stream_new(gpsu_cur_device(), false);
	if (!s)
		return gpsu_ret(gpsErrorMemoryAllocation);
	pthread_mutex_lock(&gpsu.stream_lock);
	s->next = gpsu_stream_list;
	gpsu_stream_list = s;
	pthread_mutex_unlock(&gpsu.stream_lock);
	*stream = s;
	return gpsSuccess;
}

GPSU_API gpsError_t gpsStreamDestroy(gpsStream_t stream)
{
	struct gpsStream *s, **pp;
	gpsError_t err;

	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	if (!stream)
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	pthread_mutex_lock(&gpsu.stream_lock);
	for (pp = &gpsu_stream_list; (s = *pp); pp = &s->next)
		if (s == stream)
			break;
	if (!s || s->is_default || s->magic != GPSU_STREAM_MAGIC) {
		pthread_mutex_unlock(&gpsu.stream_lock);
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	}
	/* no new reference from now on; wait for the callers using it
	 * (their operations are queued by the time they let go) */
	*pp = s->next;
	s->dead = true;
	while (s->refs)
		pthread_cond_wait(&s->cv_unref, &gpsu.stream_lock);
	pthread_mutex_unlock(&gpsu.stream_lock);
	/* as CUDA: queued work completes, then the stream goes away */
	gpsu_stream_wait_idle(s, true);
	gpsu_stream_free(s);
	return gpsSuccess;
}

GPSU_API gpsError_t gpsStreamSynchronize(gpsStream_t stream)
{
	struct gpsStream *s;
	gpsError_t err = gpsu_init();

	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	if (gpsu_tls.in_kernel)
		err = gpsErrorNotSupported;	/* it would wait for itself */
	else
		err = gpsu_stream_wait_idle(s, true);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsStreamQuery(gpsStream_t stream)
{
	struct gpsStream *s;
	gpsError_t err = gpsu_init();
	bool idle;

	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	pthread_mutex_lock(&s->lock);
	idle = !s->head && !s->busy && !s->inflight;
	pthread_mutex_unlock(&s->lock);
	gpsu_stream_put(s);
	return idle ? gpsSuccess : gpsErrorNotReady;
}

GPSU_API gpsError_t gpsStreamWaitEvent(gpsStream_t stream, gpsEvent_t event,
				       unsigned int flags)
{
	if (flags)
		return gpsu_ret(gpsErrorInvalidValue);
	return gpsu_ret(gpsu_enqueue_event_op(stream, event, GPSU_OP_WAIT));
}

GPSU_API gpsError_t gpsEventRecord(gpsEvent_t event, gpsStream_t stream)
{
	return gpsu_ret(gpsu_enqueue_event_op(stream, event, GPSU_OP_RECORD));
}
