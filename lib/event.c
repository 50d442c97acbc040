// SPDX-License-Identifier: MIT
/*
 * Events: created, destroyed, queried, waited for and timed here; recorded
 * on and waited for by streams (gpsEventRecord and gpsStreamWaitEvent are
 * stream operations, in stream.c, which calls this file).
 *
 * An event is found only through gpsu_event_list, under gpsu.stream_lock
 * (a handle is compared with the live events, never dereferenced first).
 * The user's handle and every queued operation hold a reference.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "event.h"

#define GPSU_EVENT_MAGIC	0x67707365U	/* "gpse" */

struct gpsEvent {
	uint32_t magic;
	struct gpsEvent *next;		/* gpsu_event_list */
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cv;
	int refs;			/* user + pending ops */
	uint64_t recorded;		/* records issued */
	uint64_t completed;		/* records done */
	struct timespec ts;		/* time of the last completed record */
	unsigned int flags;		/* gpsEventCreateWithFlags */
};

static struct gpsEvent *gpsu_event_list;	/* gpsu.stream_lock */

void gpsu_event_put(struct gpsEvent *ev)
{
	int refs;

	pthread_mutex_lock(&ev->lock);
	refs = --ev->refs;
	pthread_mutex_unlock(&ev->lock);
	if (!refs) {
		ev->magic = 0;
		pthread_mutex_destroy(&ev->lock);
		pthread_cond_destroy(&ev->cv);
		free(ev);
	}
}

struct gpsEvent *gpsu_event_find(gpsEvent_t e)
{
	struct gpsEvent *ev;

	for (ev = gpsu_event_list; ev; ev = ev->next)
		if (ev == e)
			return ev->magic == GPSU_EVENT_MAGIC ? ev : NULL;
	return NULL;
}

uint64_t gpsu_event_queue(struct gpsEvent *ev, bool record)
{
	uint64_t seq;

	pthread_mutex_lock(&ev->lock);
	ev->refs++;
	seq = record ? ++ev->recorded : ev->recorded;
	pthread_mutex_unlock(&ev->lock);
	return seq;
}

void gpsu_event_complete(struct gpsEvent *ev, uint64_t seq)
{
	pthread_mutex_lock(&ev->lock);
	if (!(ev->flags & gpsEventDisableTiming))
		clock_gettime(CLOCK_MONOTONIC, &ev->ts);
	if (seq > ev->completed)
		ev->completed = seq;
	pthread_cond_broadcast(&ev->cv);
	pthread_mutex_unlock(&ev->lock);
}

void gpsu_event_wait(struct gpsEvent *ev, uint64_t seq)
{
	pthread_mutex_lock(&ev->lock);
	while (ev->completed < seq)
		pthread_cond_wait(&ev->cv, &ev->lock);
	pthread_mutex_unlock(&ev->lock);
}

/* Takes a reference on a live event handle. */
static gpsError_t gpsu_event_get(gpsEvent_t e, struct gpsEvent **out)
{
	struct gpsEvent *ev;
	gpsError_t err = gpsu_init();

	if (err)
		return err;
	pthread_mutex_lock(&gpsu.stream_lock);
	ev = e ? gpsu_event_find(e) : NULL;
	if (ev) {
		pthread_mutex_lock(&ev->lock);
		ev->refs++;
		pthread_mutex_unlock(&ev->lock);
	}
	pthread_mutex_unlock(&gpsu.stream_lock);
	if (!ev)
		return gpsErrorInvalidResourceHandle;
	*out = ev;
	return gpsSuccess;
}

/*
 * gpsEventBlockingSync changes nothing: waits always sleep on a condition
 * variable. gpsEventDisableTiming skips the clock read of each record;
 * such an event cannot be timed.
 */
GPSU_API gpsError_t gpsEventCreateWithFlags(gpsEvent_t *event,
					    unsigned int flags)
{
	struct gpsEvent *ev;
	gpsError_t err;

	if (!event || (flags & ~(gpsEventBlockingSync | gpsEventDisableTiming |
				 gpsEventInterprocess)))
		return gpsu_ret(gpsErrorInvalidValue);
	if (flags & gpsEventInterprocess)
		return gpsu_ret(gpsErrorNotSupported);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return gpsu_ret(gpsErrorMemoryAllocation);
	ev->magic = GPSU_EVENT_MAGIC;
	ev->refs = 1;
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cv, NULL);
	ev->flags = flags;
	pthread_mutex_lock(&gpsu.stream_lock);
	ev->next = gpsu_event_list;
	gpsu_event_list = ev;
	pthread_mutex_unlock(&gpsu.stream_lock);
	*event = ev;
	return gpsSuccess;
}

GPSU_API gpsError_t gpsEventCreate(gpsEvent_t *event)
{
	return gpsEventCreateWithFlags(event, gpsEventDefault);
}

GPSU_API gpsError_t gpsEventDestroy(gpsEvent_t event)
{
	struct gpsEvent *ev, **pp;
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	pthread_mutex_lock(&gpsu.stream_lock);
	for (pp = &gpsu_event_list; (ev = *pp); pp = &ev->next)
		if (ev == event)
			break;
	if (!ev || !event || ev->magic != GPSU_EVENT_MAGIC) {
		pthread_mutex_unlock(&gpsu.stream_lock);
		return gpsu_ret(gpsErrorInvalidResourceHandle);
	}
	*pp = ev->next;
	pthread_mutex_unlock(&gpsu.stream_lock);
	gpsu_event_put(ev);	/* pending operations keep their reference */
	return gpsSuccess;
}

GPSU_API gpsError_t gpsEventQuery(gpsEvent_t event)
{
	struct gpsEvent *ev;
	gpsError_t err = gpsu_event_get(event, &ev);

	if (err)
		return gpsu_ret(err);
	pthread_mutex_lock(&ev->lock);
	err = ev->completed >= ev->recorded ? gpsSuccess : gpsErrorNotReady;
	pthread_mutex_unlock(&ev->lock);
	gpsu_event_put(ev);
	return err;
}

GPSU_API gpsError_t gpsEventSynchronize(gpsEvent_t event)
{
	struct gpsEvent *ev;
	gpsError_t err = gpsu_event_get(event, &ev);
	uint64_t want;

	if (err)
		return gpsu_ret(err);
	if (gpsu_tls.in_kernel) {
		gpsu_event_put(ev);
		return gpsu_ret(gpsErrorNotSupported);
	}
	pthread_mutex_lock(&ev->lock);
	want = ev->recorded;
	pthread_mutex_unlock(&ev->lock);
	gpsu_event_wait(ev, want);
	gpsu_event_put(ev);
	return gpsSuccess;
}

GPSU_API gpsError_t gpsEventElapsedTime(float *ms, gpsEvent_t start,
					gpsEvent_t end)
{
	struct gpsEvent *a, *b;
	struct timespec ta, tb;
	gpsError_t err;
	bool ready;

	if (!ms)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_event_get(start, &a);
	if (err)
		return gpsu_ret(err);
	err = gpsu_event_get(end, &b);
	if (err) {
		gpsu_event_put(a);
		return gpsu_ret(err);
	}
	pthread_mutex_lock(&a->lock);
	ready = a->recorded && a->completed >= a->recorded;
	err = a->recorded ? gpsSuccess : gpsErrorInvalidResourceHandle;
	if (a->flags & gpsEventDisableTiming)
		err = gpsErrorInvalidResourceHandle;
	ta = a->ts;
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_lock(&b->lock);
	ready = ready && b->recorded && b->completed >= b->recorded;
	if (!b->recorded || (b->flags & gpsEventDisableTiming))
		err = gpsErrorInvalidResourceHandle;
	tb = b->ts;
	pthread_mutex_unlock(&b->lock);
	gpsu_event_put(a);
	gpsu_event_put(b);
	if (err)
		return gpsu_ret(err);
	if (!ready)
		return gpsu_ret(gpsErrorNotReady);
	*ms = (float)((tb.tv_sec - ta.tv_sec) * 1e3 +
		      (tb.tv_nsec - ta.tv_nsec) / 1e6);
	return gpsSuccess;
}
