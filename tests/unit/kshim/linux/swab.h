/* SPDX-License-Identifier: GPL-2.0 */
/* kmod/gps_bytes.h's swab64(), for host unit tests only (see bitmap.h). */
#ifndef _GPS_KSHIM_SWAB_H
#define _GPS_KSHIM_SWAB_H

#include <stdint.h>

#define swab64(x)	__builtin_bswap64(x)

#endif
