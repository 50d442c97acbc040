/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the pure core (core/) takes from its host: the kernel's own
 * headers in gps.ko, their few equivalents over C11 and the compiler's
 * builtins in user space (the native engine, the host unit tests).  The
 * core allocates nothing and locks nothing: its callers own both.
 */
#ifndef _GPS_COMPAT_H
#define _GPS_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/bitmap.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/swab.h>
#include <linux/bug.h>
#include <asm/page.h>

#define GPS_WARN_ONCE(cond)	WARN_ON_ONCE(cond)

#else

#include "gps_compat_user.h"

#endif /* __KERNEL__ */

/* Blocks of a small page at the smallest block size, 64 bytes. */
#define GPS_QBLOCKS_MAX		(PAGE_SIZE / 64)

#endif /* _GPS_COMPAT_H */
