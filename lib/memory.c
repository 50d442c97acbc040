// SPDX-License-Identifier: MIT
/*
 * The memory calls that wait for or queue on streams: gpsMemcpy and
 * gpsMemset (after all of the device's work), their asynchronous forms and
 * gpsMemPrefetchAsync (queued on a stream), and tracking (between kernels).
 *
 * Each checks its arguments with the work's own check (copy.c, advise.c),
 * then waits or queues (stream.c); the stream's worker runs the work. The
 * other memory calls only call down and live with their work: allocation
 * and free in alloc.c, advice, system scope and subscribers in advise.c,
 * gpsDevicePtr in range.c.
 */
#define _GNU_SOURCE

#include "advise.h"
#include "copy.h"
#include "engine.h"
#include "stream.h"

GPSU_API gpsError_t gpsMemcpy(void *dst, const void *src, size_t count,
			      gpsMemcpyKind kind)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	err = gpsu_copy_check(dst, src, count, kind);
	if (err)
		return gpsu_ret(err);
	/* as CUDA's legacy default stream: after all of the device's work */
	err = gpsu_sync_device(gpsu_cur_device(), false);
	if (!err)
		err = gpsu_copy(dst, src, count, gpsu_cur_device());
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsMemset(void *ptr, int value, size_t count)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	GPSU_NOT_IN_KERNEL();
	err = gpsu_set_check(ptr, count);
	if (err)
		return gpsu_ret(err);
	err = gpsu_sync_device(gpsu_cur_device(), false);
	if (!err)
		err = gpsu_set(ptr, value, count);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsMemcpyAsync(void *dst, const void *src, size_t count,
				   gpsMemcpyKind kind, gpsStream_t stream)
{
	struct gpsStream *s;
	gpsError_t err = gpsu_init();

	if (!err)
		err = gpsu_copy_check(dst, src, count, kind);
	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	if (count)
		err = gpsu_stream_copy(s, dst, src, count);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsMemsetAsync(void *ptr, int value, size_t count,
				   gpsStream_t stream)
{
	struct gpsStream *s;
	gpsError_t err = gpsu_init();

	if (!err)
		err = gpsu_set_check(ptr, count);
	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	if (count)
		err = gpsu_stream_set(s, ptr, value, count);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsMemPrefetchAsync(const void *ptr, size_t count,
					int device, gpsStream_t stream)
{
	struct gpsStream *s;
	gpsError_t err = gpsu_init();

	if (!err)
		err = gpsu_prefetch_check(ptr, count, device);
	if (!err)
		err = gpsu_stream_get(stream, &s);
	if (err)
		return gpsu_ret(err);
	err = gpsu_stream_prefetch(s, ptr, count, device);
	gpsu_stream_put(s);
	return gpsu_ret(err);
}

/*
 * Automatic subscription (the engine's track operation): a driver without
 * it makes tracking gpsErrorNotSupported.
 */
static gpsError_t gpsu_tracking(bool start)
{
	gpsError_t err = gpsu_init();

	if (err)
		return err;
	if (gpsu_tls.in_kernel)
		return gpsErrorNotSupported;
	/* kernels in flight finish inside or outside the tracked phase */
	err = gpsu_sync_all();
	if (!err)
		err = gpsu_errno(gpsu_engine_track(start));
	return err;
}

GPSU_API gpsError_t gpsTrackingStart(void)
{
	return gpsu_ret(gpsu_tracking(true));
}

GPSU_API gpsError_t gpsTrackingStop(void)
{
	return gpsu_ret(gpsu_tracking(false));
}
