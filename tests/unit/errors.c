// SPDX-License-Identifier: MIT
/*
 * Description: error names and strings of every gpsError_t, and the
 * per-thread last error (gpsGetLastError resets, gpsPeekAtLastError does
 * not). Needs no driver.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "gpsu.h"

#define T_NOT_A_DEVICE "/nonexistent/gps"

static const gpsError_t all_errors[] = {
	gpsSuccess, gpsErrorInvalidValue, gpsErrorMemoryAllocation,
	gpsErrorInitializationError, gpsErrorNoDevice, gpsErrorInvalidDevice,
	gpsErrorInvalidDevicePointer, gpsErrorInvalidMemcpyDirection,
	gpsErrorInvalidResourceHandle, gpsErrorInvalidConfiguration,
	gpsErrorNotReady, gpsErrorNotSupported, gpsErrorBusy,
	gpsErrorLaunchFailure, gpsErrorDriverVersion,
	gpsErrorOperatingSystem, gpsErrorUnknown, gpsErrorNotPermitted,
};

/* Every code has its own name, spelled as the enumerator, and a string. */
TEST(names_and_strings)
{
	size_t i, j, n = sizeof(all_errors) / sizeof(all_errors[0]);

	for (i = 0; i < n; i++) {
		const char *name = gpsGetErrorName(all_errors[i]);
		const char *str = gpsGetErrorString(all_errors[i]);

		ASSERT_NE(NULL, name);
		ASSERT_NE(NULL, str);
		ASSERT_EQ(0, strncmp(name, "gps", 3));
		ASSERT_LT(0, strlen(str));
		for (j = 0; j < i; j++)
			ASSERT_NE(0, strcmp(name,
					    gpsGetErrorName(all_errors[j])));
	}
	ASSERT_STREQ("gpsSuccess", gpsGetErrorName(gpsSuccess));
	ASSERT_STREQ("gpsErrorNoDevice", gpsGetErrorName(gpsErrorNoDevice));
	ASSERT_STREQ("gpsErrorNotSupported",
		     gpsGetErrorName(gpsErrorNotSupported));
	ASSERT_NE(NULL, strstr(gpsGetErrorString(gpsErrorNoDevice),
			       "/dev/gps"));
}

/* Codes outside the enum get a fixed string, never NULL or a crash. */
TEST(unknown_codes)
{
	ASSERT_STREQ("unrecognized error code",
		     gpsGetErrorName((gpsError_t)9999));
	ASSERT_STREQ("unrecognized error code",
		     gpsGetErrorString((gpsError_t)-1));
	ASSERT_STREQ("unrecognized error code",
		     gpsGetErrorName((gpsError_t)(gpsErrorNotPermitted + 1)));
}

/* A failing call sets the last error; Get returns and resets it. */
TEST(last_error)
{
	setenv("GPSU_DEVICE", T_NOT_A_DEVICE, 1);
	ASSERT_EQ(gpsSuccess, gpsGetLastError());
	ASSERT_EQ(gpsErrorInvalidValue, gpsMallocGPS(NULL, 4096, 0));
	ASSERT_EQ(gpsErrorInvalidValue, gpsPeekAtLastError());
	ASSERT_EQ(gpsErrorInvalidValue, gpsPeekAtLastError());
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsGetLastError());
	ASSERT_EQ(gpsSuccess, gpsPeekAtLastError());
	/* a successful call leaves a pending error alone */
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetDeviceCount(NULL));
	ASSERT_STREQ("invalid argument", gpsGetErrorString(gpsErrorInvalidValue));
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
}

static void *other_thread(void *arg)
{
	gpsError_t *seen = arg;

	seen[0] = gpsPeekAtLastError();
	gpsMalloc(NULL, 1);
	seen[1] = gpsGetLastError();
	return NULL;
}

/* The last error belongs to the calling host thread. */
TEST(last_error_per_thread)
{
	gpsError_t seen[2] = { gpsErrorUnknown, gpsErrorUnknown };
	pthread_t th;

	ASSERT_EQ(gpsErrorInvalidValue, gpsMalloc(NULL, 1));
	ASSERT_EQ(0, pthread_create(&th, NULL, other_thread, seen));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(gpsSuccess, seen[0]);
	ASSERT_EQ(gpsErrorInvalidValue, seen[1]);
	ASSERT_EQ(gpsErrorInvalidValue, gpsGetLastError());
}

TEST_HARNESS_MAIN
