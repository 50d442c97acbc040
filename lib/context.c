// SPDX-License-Identifier: MIT
/*
 * The process-wide context: /dev/gps, the devices, the device API.
 *
 * The context is set up once, at the first call that needs a device. When
 * /dev/gps is absent every such call fails with gpsErrorNoDevice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpsu_internal.h"

struct gpsu_ctx gpsu = {
	.once = PTHREAD_ONCE_INIT,
	.fd = -1,
	.pool_lock = PTHREAD_MUTEX_INITIALIZER,
	.alloc_lock = PTHREAD_RWLOCK_INITIALIZER,
	.stream_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* GPSU_DEVICE overrides the device path (tests point it elsewhere). */
const char *gpsu_dev_path(void)
{
	const char *p = getenv("GPSU_DEVICE");

	return p && *p ? p : GPSU_DEFAULT_DEV;
}

int gpsu_ioctl(unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(gpsu.fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? errno : 0;
}

/* The CPUs of @node this process may run on; all allowed CPUs when the
 * node has none (a memory-only node still gets compute). */
static void gpsu_node_cpus(struct gpsu_device *dev)
{
	cpu_set_t allowed;
	struct bitmask *bm = NULL;
	int cpu, n = 0;

	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_SET(0, &allowed);
	if (numa_available() >= 0) {
		bm = numa_allocate_cpumask();
		if (bm && numa_node_to_cpus(dev->node, bm) < 0) {
			numa_free_cpumask(bm);
			bm = NULL;
		}
	}
	for (cpu = 0; cpu < CPU_SETSIZE && n < GPS_MAX_DEVICE_CPUS; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (bm && !numa_bitmask_isbitset(bm, cpu))
			continue;
		dev->cpus[n++] = cpu;
	}
	if (bm)
		numa_free_cpumask(bm);
	if (!n) {
		for (cpu = 0; cpu < CPU_SETSIZE && n < GPS_MAX_DEVICE_CPUS;
		     cpu++)
			if (CPU_ISSET(cpu, &allowed))
				dev->cpus[n++] = cpu;
	}
	dev->nr_cpus = n;
}

static void gpsu_do_init(void)
{
	int fd, d, err;

	fd = open(gpsu_dev_path(), O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		gpsu.init_err = (err == ENOENT || err == ENODEV ||
				 err == ENXIO || err == ENOTDIR) ?
				gpsErrorNoDevice : gpsErrorInitializationError;
		return;
	}
	gpsu.fd = fd;
	memset(&gpsu.ver, 0, sizeof(gpsu.ver));
	if (gpsu_ioctl(GPS_IOC_VERSION, &gpsu.ver)) {
		gpsu.init_err = gpsErrorInitializationError;
		goto err_close;
	}
	if (gpsu.ver.abi_version != GPS_ABI_VERSION) {
		gpsu.init_err = gpsErrorDriverVersion;
		goto err_close;
	}
	if (!gpsu.ver.nr_devices || gpsu.ver.nr_devices > GPS_MAX_DEVICES) {
		gpsu.init_err = gpsErrorInitializationError;
		goto err_close;
	}
	gpsu.ndev = gpsu.ver.nr_devices;
	for (d = 0; d < gpsu.ndev; d++) {
		struct gps_device_args a;

		memset(&a, 0, sizeof(a));
		a.device = d;
		if (gpsu_ioctl(GPS_IOC_DEVICE_INFO, &a)) {
			gpsu.init_err = gpsErrorInitializationError;
			goto err_close;
		}
		gpsu.dev[d].node = a.node;
		gpsu_node_cpus(&gpsu.dev[d]);
	}
	gpsu.init_err = gpsSuccess;
	return;

err_close:
	close(fd);
	gpsu.fd = -1;
	gpsu.ndev = 0;
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

gpsError_t gpsu_fence(int device)
{
	struct gps_fence_args f;

	memset(&f, 0, sizeof(f));
	f.device = device < 0 ? GPS_FENCE_ALL : (unsigned int)device;
	return gpsu_errno(gpsu_ioctl(GPS_IOC_FENCE, &f));
}

/* Set once a driver refused GPS_FENCE_MASK: fence device by device. */
static int gpsu_no_fence_mask;

bool gpsu_fence_mask_ok(void)
{
	return !__atomic_load_n(&gpsu_no_fence_mask, __ATOMIC_RELAXED);
}

void gpsu_fence_mask_refused(void)
{
	__atomic_store_n(&gpsu_no_fence_mask, 1, __ATOMIC_RELAXED);
}

/*
 * Fences every device of @mask: one GPS_FENCE_MASK call, or one call per
 * device with a driver older than the flag (it answers EINVAL to a flag,
 * which a valid mask of existing devices never gets from a newer one).
 */
gpsError_t gpsu_fence_mask(uint64_t mask)
{
	struct gps_fence_args f;
	gpsError_t err = gpsSuccess, e;
	int d, ret;

	if (gpsu.ndev < 64)
		mask &= (1ULL << gpsu.ndev) - 1;
	if (!mask)
		return gpsSuccess;
	if (mask & (mask - 1) && gpsu_fence_mask_ok()) {
		memset(&f, 0, sizeof(f));
		f.flags = GPS_FENCE_MASK;
		f.device_mask = mask;
		ret = gpsu_ioctl(GPS_IOC_FENCE, &f);
		if (ret != EINVAL)
			return gpsu_errno(ret);
		gpsu_fence_mask_refused();
	}
	for (d = 0; d < gpsu.ndev; d++) {
		if (!(mask & (1ULL << d)))
			continue;
		e = gpsu_fence(d);
		if (e && !err)
			err = e;
	}
	return err;
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
	struct gps_device_args a;
	struct gpsu_device *dev;
	gpsError_t err;

	if (!prop)
		return gpsu_ret(gpsErrorInvalidValue);
	err = gpsu_init();
	if (err)
		return gpsu_ret(err);
	if (device < 0 || device >= gpsu.ndev)
		return gpsu_ret(gpsErrorInvalidDevice);
	memset(&a, 0, sizeof(a));
	a.device = device;
	if (gpsu_ioctl(GPS_IOC_DEVICE_INFO, &a))
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
	prop->gpsPageSize = gpsu.ver.page_size;
	prop->gpsBlockSize = gpsu.ver.block_size;
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
	prop->driverAbiVersion = (int)gpsu.ver.abi_version;
	return gpsSuccess;
}
