// SPDX-License-Identifier: MIT
/*
 * The process-wide context: the devices and the device API.
 *
 * The context is set up once, at the first call that needs a device: the
 * engine opens (engine.c), then each device's node and CPUs are read.
 * When no engine can serve (no /dev/gps, no native engine) every such
 * call fails with gpsErrorNoDevice.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpus.h"
#include "engine.h"

struct gpsu_ctx gpsu = {
	.once = PTHREAD_ONCE_INIT,
	.stream_lock = PTHREAD_MUTEX_INITIALIZER,
};

static void gpsu_do_init(void)
{
	int d, ndev;

	struct gpsu_engine_info info;

	gpsu.init_err = gpsu_engine_open(&info);
	if (gpsu.init_err)
		return;
	ndev = info.ndev;
	gpsu.page_size = (int)info.page_size;
	gpsu.block_size = (int)info.block_size;
	gpsu.abi_version = (int)info.abi_version;
	for (d = 0; d < ndev; d++) {
		struct gpsu_engine_dev a;

		if (gpsu_engine_device_info(d, &a)) {
			gpsu.init_err = gpsErrorInitializationError;
			gpsu_engine_close();
			return;
		}
		gpsu.dev[d].node = a.node;
		gpsu.dev[d].nr_cpus = gpsu_cpus_of(a.node, a.cpu_share,
						   a.cpu_shares, gpsu.dev[d].cpus,
						   GPS_MAX_DEVICE_CPUS);
	}
	__atomic_store_n(&gpsu.ndev, ndev, __ATOMIC_RELEASE);
	gpsu.init_err = gpsSuccess;
}

gpsError_t gpsu_init(void)
{
	pthread_once(&gpsu.once, gpsu_do_init);
	return gpsu.init_err;
}

/* The device the caller runs on: a kernel's device or the thread's. */
int gpsu_cur_device(void)
{
	return gpsu_tls.in_kernel ? gpsu_tls.kdevice : gpsu_tls.device;
}

/*
 * A switch for comparisons (GPSU_NO_...=1): true when @name is "1", read
 * once into *@cache (-1 until then), lock-free.
 */
bool gpsu_env_switch(const char *name, int *cache)
{
	int v = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv(name);

		v = e && *e == '1';
		__atomic_store_n(cache, v, __ATOMIC_RELAXED);
	}
	return v;
}

size_t gpsu_sys_page(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

GPSU_API gpsError_t gpsGetDeviceCount(int *count)
{
	gpsError_t err;

	if (!count)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	*count = err ? 0 : gpsu.ndev;
	return gpsu_ret(err);
}

GPSU_API gpsError_t gpsSetDevice(int device)
{
	gpsError_t err = gpsu_init();

	if (err)
		return gpsu_ret(err);
	if (device < 0 || device >= gpsu.ndev)
		return gpsu_ret(gpsErrorInvalidDevice);
	gpsu_tls.device = device;
	return gpsSuccess;
}

GPSU_API gpsError_t gpsGetDevice(int *device)
{
	gpsError_t err;

	if (!device)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	*device = gpsu_cur_device();
	return gpsSuccess;
}

GPSU_API gpsError_t gpsGetDeviceProperties(gpsDeviceProp *prop, int device)
{
	struct gpsu_engine_dev a;
	struct gpsu_device *dev;
	gpsError_t err;

	if (!prop)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	if (device < 0 || device >= gpsu.ndev)
		return gpsu_ret(gpsErrorInvalidDevice);
	if (gpsu_engine_device_info(device, &a))
		return gpsu_ret(gpsErrorOperatingSystem);
	dev = &gpsu.dev[device];
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "gps node %d", dev->node);
	prop->device = device;
	prop->numaNode = dev->node;
	prop->numCpus = dev->nr_cpus;
	memcpy(prop->cpus, dev->cpus, sizeof(int) * dev->nr_cpus);
	prop->totalGlobalMem = a.mem_total;
	prop->freeGlobalMem = a.mem_free;
	prop->replicaPages = a.replica_pages;
	prop->gpsPageSize = (size_t)gpsu.page_size;
	prop->gpsBlockSize = (size_t)gpsu.block_size;
	prop->maxThreadsPerBlock = 1024;
	prop->maxThreadsDim[0] = 1024;
	prop->maxThreadsDim[1] = 1024;
	prop->maxThreadsDim[2] = 64;
	prop->maxGridSize[0] = 0x7fffffff;
	prop->maxGridSize[1] = 65535;
	prop->maxGridSize[2] = 65535;
	prop->multiProcessorCount = dev->nr_cpus;
	prop->concurrentKernels = 1;
	prop->unifiedAddressing = 1;
	prop->driverAbiVersion = gpsu.abi_version;
	return gpsSuccess;
}
