/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug check that a replica's page without a twin holds still
 * (gps_still.c).  Built with CONFIG_GPS_DEBUG only; elsewhere the hooks
 * compile away.
 */
#ifndef _GPS_STILL_H
#define _GPS_STILL_H

#include <linux/kconfig.h>
#include <linux/types.h>

struct page;
struct gps_replica;

#if IS_ENABLED(CONFIG_GPS_DEBUG)
#define GPS_STILL_SLOTS	1	/* struct page * per small page */
struct page *gps_still_adopt(struct gps_replica *r, unsigned int sub,
			     struct page *twin);
void gps_still_check(struct gps_replica *r, unsigned int sub,
		     unsigned int off, unsigned int len, const char *where);
void gps_still_sync(struct gps_replica *r, unsigned int sub,
		    unsigned int off, unsigned int len);
void gps_still_drop(struct gps_replica *r, unsigned int sub,
		    const char *where);
void gps_still_free(struct gps_replica *r);
#else
#define GPS_STILL_SLOTS	0
static inline struct page *gps_still_adopt(struct gps_replica *r,
					   unsigned int sub,
					   struct page *twin)
{
	return twin;
}

static inline void gps_still_check(struct gps_replica *r, unsigned int sub,
				   unsigned int off, unsigned int len,
				   const char *where)
{
}

static inline void gps_still_sync(struct gps_replica *r, unsigned int sub,
				  unsigned int off, unsigned int len)
{
}

static inline void gps_still_drop(struct gps_replica *r, unsigned int sub,
				  const char *where)
{
}

static inline void gps_still_free(struct gps_replica *r)
{
}
#endif

#endif /* _GPS_STILL_H */
