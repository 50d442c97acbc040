// SPDX-License-Identifier: MIT
/*
 * Description: a device path that opens but is not gps.ko (here
 * /dev/null, whose ioctls fail with ENOTTY) makes every call fail with
 * gpsErrorInitializationError, and keeps failing the same way.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "gpsu.h"

/* The version handshake fails: an initialization error, every time. */
TEST(not_a_gps_device)
{
	void *p = NULL;
	int n = -1;

	setenv("GPSU_DEVICE", "/dev/null", 1);
	ASSERT_EQ(gpsErrorInitializationError, gpsGetDeviceCount(&n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(gpsErrorInitializationError, gpsMallocGPS(&p, 4096, 0));
	ASSERT_EQ(gpsErrorInitializationError, gpsSetDevice(0));
	ASSERT_EQ(gpsErrorInitializationError, gpsDeviceSynchronize());
	ASSERT_EQ(NULL, p);
	ASSERT_EQ(gpsErrorInitializationError, gpsGetLastError());
}

TEST_HARNESS_MAIN
