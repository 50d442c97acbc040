// SPDX-License-Identifier: GPL-2.0
/*
 * The pure core (core/: the block diff, the coalescing queue and its
 * policy, a push's writes), compiled into gps.ko as one unit: the same sources build the
 * native engine of libgpsu.  Kbuild builds objects only below the
 * module's own directory, so they come in by #include.
 */
#include "../core/gps_bytes.c"
#include "../core/gps_diff.c"
#include "../core/gps_queue.c"
