// SPDX-License-Identifier: MIT
/*
 * Description: GPS_KERNEL kernels, block barriers (fibers), shared memory
 * and device-scope atomics against gps.ko: every (block, thread) once,
 * every thread sees its block's stores after a barrier, shared memory per
 * block and its limit, exact atomic totals from every device at once
 * (conventional memory), per-device counters on GPS pages published
 * exactly (t_coop.h, which tests/unit/mock_coop.c runs on the host mock
 * too).
 */
#define GPSU_CUDA_NAMES
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define COOP_DEVICES(ndev)	T_DEVICES(ndev)

#include "t_coop.h"

TEST_HARNESS_MAIN
