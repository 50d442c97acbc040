// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
/*
 * Errors: names, strings, the per-thread last error.
 */
#include <errno.h>

#include "gpsu_internal.h"

GPSU_TLS struct gpsu_tls gpsu_tls;

static const struct {
	const char *name;
	const char *str;
} gpsu_errors[] = {
	[gpsSuccess] = { "gpsSuccess", "no error" },
	[gpsErrorInvalidValue] = { "gpsErrorInvalidValue",
		"invalid argument" },
	[gpsErrorMemoryAllocation] = { "gpsErrorMemoryAllocation",
		"out of memory" },
	[gpsErrorInitializationError] = { "gpsErrorInitializationError",
		"initialization error: the gps device could not be set up" },
	[gpsErrorNoDevice] = { "gpsErrorNoDevice",
		"no gps device: /dev/gps is absent (is gps.ko loaded?)" },
	[gpsErrorInvalidDevice] = { "gpsErrorInvalidDevice",
		"invalid device ordinal" },
	[gpsErrorInvalidDevicePointer] = { "gpsErrorInvalidDevicePointer",
		"invalid device pointer: not inside a gps allocation" },
	[gpsErrorInvalidMemcpyDirection] = { "gpsErrorInvalidMemcpyDirection",
		"invalid copy direction for the given pointers" },
	[gpsErrorInvalidResourceHandle] = { "gpsErrorInvalidResourceHandle",
		"invalid resource handle (stream or event)" },
	[gpsErrorInvalidConfiguration] = { "gpsErrorInvalidConfiguration",
		"invalid launch configuration or argument block" },
	[gpsErrorNotReady] = { "gpsErrorNotReady",
		"device not ready: work still pending" },
	[gpsErrorNotSupported] = { "gpsErrorNotSupported",
		"operation not supported by this driver or memory kind" },
	[gpsErrorBusy] = { "gpsErrorBusy",
		"device is the last subscriber of a page: cannot unsubscribe" },
	[gpsErrorLaunchFailure] = { "gpsErrorLaunchFailure",
		"kernel launch or release failed (a kernel that calls gpsSyncThreads or a warp function must be defined with GPS_KERNEL_SYNC, not GPS_KERNEL; libgpsu's line on stderr names the kernel and the cause)" },
	[gpsErrorDriverVersion] = { "gpsErrorDriverVersion",
		"gps driver ABI version not supported by this library" },
	[gpsErrorOperatingSystem] = { "gpsErrorOperatingSystem",
		"operating system call failed" },
	[gpsErrorUnknown] = { "gpsErrorUnknown", "unknown error" },
	[gpsErrorNotPermitted] = { "gpsErrorNotPermitted",
				   "operation not permitted" },
};

#define GPSU_NR_ERRORS (sizeof(gpsu_errors) / sizeof(gpsu_errors[0]))

GPSU_API const char *gpsGetErrorName(gpsError_t err)
{
	if ((unsigned int)err >= GPSU_NR_ERRORS || !gpsu_errors[err].name)
		return "unrecognized error code";
	return gpsu_errors[err].name;
}

GPSU_API const char *gpsGetErrorString(gpsError_t err)
{
	if ((unsigned int)err >= GPSU_NR_ERRORS || !gpsu_errors[err].str)
		return "unrecognized error code";
	return gpsu_errors[err].str;
}

GPSU_API gpsError_t gpsGetLastError(void)
{
	gpsError_t err = gpsu_tls.last_err;

	gpsu_tls.last_err = gpsSuccess;
	return err;
}

GPSU_API gpsError_t gpsPeekAtLastError(void)
{
	return gpsu_tls.last_err;
}

/* Every public function returns through here: failures become last. */
gpsError_t gpsu_ret(gpsError_t err)
{
	if (err != gpsSuccess)
		gpsu_tls.last_err = err;
	return err;
}

/* Maps an errno from the driver or the system onto a gpsError_t. */
gpsError_t gpsu_errno(int err)
{
	switch (err) {
	case 0:
		return gpsSuccess;
	case EINVAL:
	case EFAULT:
	case EOVERFLOW:
	case E2BIG:
		return gpsErrorInvalidValue;
	case ENOMEM:
	case ENOSPC:
		return gpsErrorMemoryAllocation;
	case ENODEV:
	case ENOENT:
	case ENXIO:
		return gpsErrorNoDevice;
	case EBUSY:
		return gpsErrorBusy;
	case ENOTTY:
	case EOPNOTSUPP:
	case ENOSYS:
		return gpsErrorNotSupported;
	case EAGAIN:
		return gpsErrorNotReady;
	default:
		return gpsErrorOperatingSystem;
	}
}
