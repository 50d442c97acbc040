/* SPDX-License-Identifier: MIT */
/*
 * Event objects (event.c); their records and waits are stream operations
 * (stream.c).
 */
#ifndef GPSU_EVENT_H
#define GPSU_EVENT_H

#include "gpsu_internal.h"

/* A live event handle, or NULL. Caller holds gpsu.stream_lock. */
struct gpsEvent *gpsu_event_find(gpsEvent_t e);
/*
 * Takes a reference for an operation about to be queued: a record
 * (@record) gets the next record number, a wait the last one issued.
 * Returns that number. Caller holds gpsu.stream_lock and the queue's lock.
 */
uint64_t gpsu_event_queue(struct gpsEvent *ev, bool record);
/* Record number @seq is done: time it, wake the waiters. */
void gpsu_event_complete(struct gpsEvent *ev, uint64_t seq);
/* Waits until record number @seq is done. */
void gpsu_event_wait(struct gpsEvent *ev, uint64_t seq);
/* Drops a reference; the last one frees the event. */
void gpsu_event_put(struct gpsEvent *ev);

#endif /* GPSU_EVENT_H */
