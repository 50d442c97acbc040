/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kmod/gps_bytes.h takes from <linux/atomic.h>, for host unit tests
 * only (tests/unit/bytes.c): try_cmpxchg64() with the kernel's meaning
 * (on failure *@old is updated to the value found), over the compiler's
 * atomics.
 */
#ifndef _GPS_KSHIM_ATOMIC_H
#define _GPS_KSHIM_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#define try_cmpxchg64(ptr, old, new)					\
	__atomic_compare_exchange_n((ptr), (old), (new), false,		\
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

#endif
