// SPDX-License-Identifier: GPL-2.0
/* The one file that instantiates the gps tracepoints. */
#define CREATE_TRACE_POINTS
#include "gps_trace.h"
