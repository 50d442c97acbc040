/* SPDX-License-Identifier: MIT */
/*
 * The link model (link.c): what the library's own device-to-device
 * transfers pay, as gps.ko's pushes do.
 */
#ifndef GPSU_LINK_H
#define GPSU_LINK_H

#include <stdint.h>

struct gpsu_link {
	uint64_t bandwidth;	/* bytes/s, 0 = unlimited */
	uint64_t latency_ns;
};

void gpsu_link_read(struct gpsu_link *l);
uint64_t gpsu_link_now(void);
uint64_t gpsu_link_charge(const struct gpsu_link *l, int device,
			  uint64_t bytes, uint64_t now);
void gpsu_link_wait(uint64_t until);

#endif /* GPSU_LINK_H */
