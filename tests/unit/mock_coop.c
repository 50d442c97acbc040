// SPDX-License-Identifier: MIT
/*
 * Description: GPS_KERNEL kernels, block barriers (fibers), shared memory
 * and device-scope atomics against the in-process mock driver (t_mock.h):
 * the tests of tests/lib/t_coop.h, with ASan and UBSan watching the fiber
 * stacks and the shared-memory buffers.
 */
#define GPSU_CUDA_NAMES
#include <stdlib.h>

#include "kselftest_harness.h"
#include "t_mock.h"

#define COOP_DEVICES(ndev)						\
	do {								\
		mock_setup();						\
		ASSERT_EQ(gpsSuccess, gpsGetDeviceCount(&(ndev)));	\
		ASSERT_EQ(gpsSuccess, gpsSetDevice(0));			\
	} while (0)

#include "../lib/t_coop.h"

TEST_HARNESS_MAIN
