/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device's fence helpers (gps_help.c) and the batch of replicas they
 * share with their fence, whose loop is gps_harvest.c's.
 */
#ifndef _GPS_HELP_H
#define _GPS_HELP_H

#include <linux/kthread.h>
#include "gps_internal.h"

#define GPS_HELP_BATCH	64

struct gps_helper {
	struct kthread_worker *worker;	/* gps/<node>.<k> */
	struct kthread_work work;
	struct gps_helpers *hs;
	struct gps_fence_stats st;	/* this batch's, summed by the fence */
	struct gps_harvester h;
	struct gps_diff df;
};

/* One device's helpers and the batch they share; under its harvest_lock. */
struct gps_helpers {
	unsigned int nr;
	unsigned int nr_batch;
	atomic_t next;			/* the batch's next replica to take */
	struct gps_replica *batch[GPS_HELP_BATCH];
	struct gps_helper helper[];
};

unsigned long gps_harvest_shared(struct gps_helpers *hs,
				 struct gps_harvester *h);

#endif /* _GPS_HELP_H */
