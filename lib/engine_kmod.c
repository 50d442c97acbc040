// SPDX-License-Identifier: MIT
/*
 * The engine for gps.ko ("kmod"): the ioctls on /dev/gps, the mappings of
 * its views and the io_uring fence (GPS_URING_CMD_FENCE). Nothing else in
 * libgpsu talks to the driver or includes its uapi header (engine.h).
 *
 * Fences: wherever a set of devices (and the host views) is fenced the
 * driver is asked once, with GPS_FENCE_MASK (and GPS_FENCE_HOST). A driver
 * without uring_cmd support, or a kernel without io_uring, gets ioctl
 * fences; an asynchronous fence the driver refuses with -EBUSY (the open
 * file has GPS_URING_FENCES_MAX in flight, from all streams together) is
 * done by ioctl when it is reaped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gps.h>

#include "engine.h"

#define GPSU_DEFAULT_DEV	"/dev/gps"
#define GPSU_COPY_CHUNK		(64UL << 20)	/* per READ/WRITE ioctl */
#define GPSU_RING_ENTRIES	16

static int gpsu_fd = -1;	/* /dev/gps, set up by gpsu_engine_open */
static int gpsu_ndev;		/* devices the driver reported */
static size_t gpsu_page_size;	/* the driver's default GPS page size */

/* GPSU_DEVICE overrides the device path (tests point it elsewhere). */
static const char *gpsu_dev_path(void)
{
	const char *p = getenv("GPSU_DEVICE");

	return p && *p ? p : GPSU_DEFAULT_DEV;
}

static int gpsu_ioctl(unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(gpsu_fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? errno : 0;
}

/* ---- set-up --------------------------------------------------------- */

static void gpsu_kmod_close(void);

static gpsError_t gpsu_kmod_open(struct gpsu_engine_info *info)
{
	struct gps_version_args v, *ver = &v;
	gpsError_t err;
	int fd;

	fd = open(gpsu_dev_path(), O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		return (err == ENOENT || err == ENODEV || err == ENXIO ||
			err == ENOTDIR) ? gpsErrorNoDevice :
					  gpsErrorInitializationError;
	}
	gpsu_fd = fd;
	memset(ver, 0, sizeof(*ver));
	if (gpsu_ioctl(GPS_IOC_VERSION, ver)) {
		err = gpsErrorInitializationError;
		goto err_close;
	}
	if (ver->abi_version != GPS_ABI_VERSION) {
		err = gpsErrorDriverVersion;
		goto err_close;
	}
	if (!ver->nr_devices || ver->nr_devices > GPS_MAX_DEVICES) {
		err = gpsErrorInitializationError;
		goto err_close;
	}
	gpsu_ndev = (int)ver->nr_devices;
	gpsu_page_size = ver->page_size;
	info->ndev = gpsu_ndev;
	info->page_size = ver->page_size;
	info->block_size = ver->block_size;
	info->abi_version = ver->abi_version;
	return gpsSuccess;

err_close:
	gpsu_kmod_close();
	return err;
}

static void gpsu_kmod_close(void)
{
	if (gpsu_fd >= 0)
		close(gpsu_fd);
	gpsu_fd = -1;
	gpsu_ndev = 0;
}

static int gpsu_kmod_device_info(int device, struct gpsu_engine_dev *info)
{
	struct gps_device_args a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.device = (unsigned int)device;
	ret = gpsu_ioctl(GPS_IOC_DEVICE_INFO, &a);
	if (ret)
		return ret;
	memset(info, 0, sizeof(*info));
	info->node = (int)a.node;
	info->mem_total = a.mem_total;
	info->mem_free = a.mem_free;
	info->replica_pages = a.replica_pages;
	return 0;
}

/* ---- allocations ---------------------------------------------------- */

static void gpsu_kmod_unmap(struct gpsu_alloc *a)
{
	int d;

	for (d = 0; d < GPS_MAX_DEVICES; d++)
		if (a->views[d])
			munmap(a->views[d], a->map_size);
	if (a->host)
		munmap(a->host, a->map_size);
}

static void *gpsu_kmod_map(const struct gpsu_alloc *a, uint64_t offset)
{
	return mmap(NULL, a->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    gpsu_fd, (off_t)offset);
}

static int gpsu_kmod_free_handle(uint64_t handle)
{
	struct gps_free_args fr;

	memset(&fr, 0, sizeof(fr));
	fr.handle = handle;
	return gpsu_ioctl(GPS_IOC_FREE, &fr);
}

static int gpsu_kmod_alloc(struct gpsu_alloc *a, unsigned int page_size)
{
	struct gps_alloc_args args;
	int d, first, last, ret;

	memset(&args, 0, sizeof(args));
	args.size = a->size;
	args.kind = a->kind == GPSU_KIND_GPS ? GPS_MEM_GPS :
		    a->kind == GPSU_KIND_UM ? GPS_MEM_MANAGED :
					      GPS_MEM_CONVENTIONAL;
	args.flags = (a->flags & GPSU_ALLOC_MANUAL) ? GPS_ALLOC_MANUAL : 0;
	args.home = (unsigned int)a->home;
	args.page_size = page_size;
	ret = gpsu_ioctl(GPS_IOC_ALLOC, &args);
	if (ret)
		return ret;
	a->handle = args.handle;
	a->map_size = args.alloc_size;
	a->page_size = args.out_page_size ? args.out_page_size :
		       gpsu_page_size;
	/* GPS, UM: every device's view. Conventional: the home's only. */
	first = gpsu_has_views(a) ? 0 : a->home;
	last = gpsu_has_views(a) ? gpsu_ndev - 1 : a->home;
	for (d = first; d <= last; d++) {
		void *v = gpsu_kmod_map(a, args.offset + d * args.view_stride);

		if (v == MAP_FAILED)
			goto err_unmap;
		a->views[d] = v;
		a->nviews = d + 1;
	}
	/* GPS: the host view, after the devices' (UM: one copy, nothing to
	 * publish; the home's view serves) */
	if (a->kind == GPSU_KIND_GPS) {
		void *v = gpsu_kmod_map(a, args.offset +
					     gpsu_ndev * args.view_stride);

		if (v == MAP_FAILED)
			goto err_unmap;
		a->host = v;
	}
	return 0;

err_unmap:
	gpsu_kmod_unmap(a);
	gpsu_kmod_free_handle(a->handle);
	memset(a->views, 0, sizeof(a->views));
	a->host = NULL;
	a->nviews = 0;
	return ENOMEM;
}

static int gpsu_kmod_free(struct gpsu_alloc *a)
{
	/* views first: a view mapped at GPS_IOC_FREE would SIGBUS */
	gpsu_kmod_unmap(a);
	return gpsu_kmod_free_handle(a->handle);
}

/* ---- data ----------------------------------------------------------- */

static int gpsu_kmod_rw(unsigned long cmd, const struct gpsu_alloc *a,
			  size_t off, void *buf, size_t n, int device)
{
	struct gps_copy_args c;
	size_t done = 0;
	int ret;

	while (done < n) {
		size_t len = n - done;

		if (len > GPSU_COPY_CHUNK)
			len = GPSU_COPY_CHUNK;
		memset(&c, 0, sizeof(c));
		c.handle = a->handle;
		c.offset = off + done;
		c.length = len;
		c.uaddr = (uintptr_t)buf + done;
		c.device = cmd == GPS_IOC_READ ? (unsigned int)device : 0;
		ret = gpsu_ioctl(cmd, &c);
		if (ret)
			return ret;
		done += len;
	}
	return 0;
}

static int gpsu_kmod_read(const struct gpsu_alloc *a, size_t off, void *buf,
			  size_t n, int device)
{
	return gpsu_kmod_rw(GPS_IOC_READ, a, off, buf, n, device);
}

static int gpsu_kmod_write(const struct gpsu_alloc *a, size_t off,
			   const void *buf, size_t n)
{
	return gpsu_kmod_rw(GPS_IOC_WRITE, a, off, (void *)buf, n, 0);
}

static int gpsu_kmod_memset(const struct gpsu_alloc *a, size_t off,
			    int value, size_t n)
{
	struct gps_memset_args m;

	memset(&m, 0, sizeof(m));
	m.handle = a->handle;
	m.offset = off;
	m.length = n;
	m.value = (unsigned int)value & 0xff;
	return gpsu_ioctl(GPS_IOC_MEMSET, &m);
}

/* ---- subscriptions -------------------------------------------------- */

static int gpsu_kmod_advise(const struct gpsu_alloc *a, size_t off,
			    size_t len, enum gpsu_advice advice, int device)
{
	struct gps_advise_args args;

	memset(&args, 0, sizeof(args));
	args.handle = a->handle;
	args.offset = off;
	args.length = len;
	switch (advice) {
	case GPSU_ADVISE_SUBSCRIBE:
		args.advice = GPS_ADVISE_SUBSCRIBE;
		break;
	case GPSU_ADVISE_UNSUBSCRIBE:
		args.advice = GPS_ADVISE_UNSUBSCRIBE;
		break;
	case GPSU_ADVISE_COLLAPSE:
		args.advice = GPS_ADVISE_COLLAPSE;
		break;
	default:
		return EINVAL;
	}
	args.device = (unsigned int)device;
	return gpsu_ioctl(GPS_IOC_ADVISE, &args);
}

static int gpsu_kmod_query(const struct gpsu_alloc *a, size_t first,
			   uint32_t nr, unsigned long long *subs)
{
	struct gps_query_args q;

	memset(&q, 0, sizeof(q));
	q.handle = a->handle;
	q.first_page = first;
	q.nr_pages = nr;
	q.subs = (uintptr_t)subs;
	return gpsu_ioctl(GPS_IOC_QUERY, &q);
}

/*
 * GPS_IOC_TRACK: START subscribes every device to every page of this
 * process's automatic GPS allocations and records each device's accesses;
 * STOP keeps each device subscribed to the pages it used. A driver
 * without the command answers ENOTTY; EINVAL: START twice, STOP alone.
 */
static int gpsu_kmod_track(bool start)
{
#ifdef GPS_IOC_TRACK
	struct gps_track_args t;

	memset(&t, 0, sizeof(t));
	t.op = start ? GPS_TRACK_START : GPS_TRACK_STOP;
	return gpsu_ioctl(GPS_IOC_TRACK, &t);
#else
	(void)start;
	return ENOTTY;
#endif
}

/* ---- fences --------------------------------------------------------- */

/* GPSU_DEBUG=1: say on stderr when fences fall back to ioctl. */
static void gpsu_debug_fallback(const char *why, int err)
{
	const char *dbg = getenv("GPSU_DEBUG");

	if (dbg && *dbg && *dbg != '0')
		fprintf(stderr, "libgpsu: %s (%s): ioctl fences\n", why,
			strerror(err));
}

static void gpsu_first_err(int *err, int e)
{
	if (e && !*err)
		*err = e;
}

static int gpsu_kmod_fence(int device)
{
	struct gps_fence_args f;

	memset(&f, 0, sizeof(f));
	f.device = device < 0 ? GPS_FENCE_ALL : (unsigned int)device;
	return gpsu_ioctl(GPS_IOC_FENCE, &f);
}

/* One GPS_FENCE_MASK call; with @host, GPS_FENCE_HOST too. */
static int gpsu_kmod_fence_mask(uint64_t mask, bool host)
{
	struct gps_fence_args f;

	if (gpsu_ndev < 64)
		mask &= (1ULL << gpsu_ndev) - 1;
	if (!mask && !host)
		return 0;
	memset(&f, 0, sizeof(f));
	f.flags = GPS_FENCE_MASK | (host ? GPS_FENCE_HOST : 0);
	f.device_mask = mask;
	return gpsu_ioctl(GPS_IOC_FENCE, &f);
}

/* ---- asynchronous fences: io_uring ------------------------------------ */

struct gpsu_engine_ring {
	struct io_uring ring;
	bool ok;		/* usable; false once it broke or was refused */
	unsigned int pending;	/* fences submitted, not reaped */
	uint32_t busy;		/* slots in flight, one bit each */
	struct {
		uint64_t mask;	/* the devices it fences */
		bool host;	/* and the host (GPS_FENCE_HOST) */
	} slot[GPSU_RING_ENTRIES];	/* indexed by user_data */
};

static struct gpsu_engine_ring *gpsu_kmod_ring_new(void)
{
	const char *no_uring = getenv("GPSU_NO_URING");
	struct gpsu_engine_ring *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return NULL;
	/* GPSU_NO_URING=1: ioctl fences only (tests, comparisons) */
	if (!no_uring || !*no_uring || *no_uring == '0') {
		ret = io_uring_queue_init(GPSU_RING_ENTRIES, &r->ring, 0);
		r->ok = ret == 0;
		if (ret)
			gpsu_debug_fallback("no io_uring", -ret);
	}
	return r;
}

static void gpsu_kmod_ring_free(struct gpsu_engine_ring *r)
{
	if (!r)
		return;
	if (r->ok)
		io_uring_queue_exit(&r->ring);
	free(r);
}

static unsigned int gpsu_kmod_ring_pending(const struct gpsu_engine_ring *r)
{
	return r ? r->pending : 0;
}

/* Reaps every fence in flight; failures in *@err. */
static void gpsu_ring_reap(struct gpsu_engine_ring *r, int *err)
{
	struct io_uring_cqe *cqe;
	uint64_t mask;
	int ret, res;
	bool host;

	while (r->pending) {
		ret = io_uring_wait_cqe(&r->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			/* the ring broke: fence everything by ioctl */
			gpsu_debug_fallback("io_uring wait failed", -ret);
			r->ok = false;
			gpsu_first_err(err, gpsu_kmod_fence(-1));
			break;
		}
		res = cqe->res;
		mask = r->slot[cqe->user_data].mask;
		host = r->slot[cqe->user_data].host;
		r->busy &= ~(1U << cqe->user_data);
		io_uring_cqe_seen(&r->ring, cqe);
		r->pending--;
		if (res == -EOPNOTSUPP || res == -ENOTTY || res == -EINVAL) {
			/* no uring_cmd in this driver: ioctl from now on */
			gpsu_debug_fallback("uring fence refused", -res);
			r->ok = false;
			gpsu_first_err(err, gpsu_kmod_fence_mask(mask, host));
		} else if (res == -EBUSY) {
			/*
			 * the file had GPS_URING_FENCES_MAX in flight (other
			 * streams): this one fences now, by ioctl
			 */
			gpsu_first_err(err, gpsu_kmod_fence_mask(mask, host));
		} else if (res < 0) {
			gpsu_first_err(err, -res);
		}
	}
	r->pending = 0;
	r->busy = 0;
}

static int gpsu_kmod_ring_reap(struct gpsu_engine_ring *r)
{
	int err = 0;

	if (r)
		gpsu_ring_reap(r, &err);
	return err;
}

/* Submits one asynchronous fence of @f; false if it could not be. */
static bool gpsu_ring_submit(struct gpsu_engine_ring *r,
			     const struct gps_uring_fence *f, uint64_t mask,
			     int *err)
{
	struct io_uring_sqe *sqe;
	unsigned int i;
	int ret;

	/* never more in flight than the completion ring holds */
	if (r->pending >= GPSU_RING_ENTRIES)
		gpsu_ring_reap(r, err);
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		gpsu_ring_reap(r, err);
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			return false;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = gpsu_fd;
	sqe->cmd_op = GPS_URING_CMD_FENCE;
	/* the 16-byte cmd area starts at addr3 in a 64-byte SQE */
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, addr3), f,
	       sizeof(*f));
	/* a free slot: fewer than GPSU_RING_ENTRIES are in flight */
	i = (unsigned int)__builtin_ctz(~r->busy);
	r->slot[i].mask = mask;
	r->slot[i].host = f->flags & GPS_FENCE_HOST;
	sqe->user_data = i;
	/* liburing returns -errno and leaves errno alone */
	ret = io_uring_submit(&r->ring);
	if (ret < 0) {
		gpsu_debug_fallback("io_uring submit failed", -ret);
		r->ok = false;
		return false;
	}
	r->busy |= 1U << i;
	r->pending++;
	return true;
}

/* Asynchronous when possible: one GPS_FENCE_MASK command for the set. */
static int gpsu_kmod_fence_async(struct gpsu_engine_ring *r, uint64_t mask,
				 bool host)
{
	struct gps_uring_fence f;
	int err = 0;

	if (gpsu_ndev < 64)
		mask &= (1ULL << gpsu_ndev) - 1;
	if (!mask && !host)
		return 0;
	if (!r || !r->ok)
		return gpsu_kmod_fence_mask(mask, host);
	memset(&f, 0, sizeof(f));
	f.flags = GPS_FENCE_MASK | (host ? GPS_FENCE_HOST : 0);
	f.device_mask = mask;
	if (!gpsu_ring_submit(r, &f, mask, &err))
		gpsu_first_err(&err, gpsu_kmod_fence_mask(mask, host));
	return err;
}

/* ---- knobs (/sys/kernel/gps) and counters (debugfs) ----------------- */

/* /sys/kernel/gps, or $GPSU_SYSFS (a directory of fake knobs: tests). */
static const char *gpsu_kmod_sysfs(void)
{
	const char *dir = getenv("GPSU_SYSFS");

	return dir && *dir ? dir : "/sys/kernel/gps";
}

/* The first line of @path into @buf, newline stripped; 0 or an errno. */
static int gpsu_kmod_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int gpsu_kmod_knob_get(int i, uint64_t *v)
{
	const struct gpsu_knob *k = &gpsu_knobs[i];
	char path[256], buf[256], *end;
	int ret, w;

	snprintf(path, sizeof(path), "%s/%s", gpsu_kmod_sysfs(), k->name);
	ret = gpsu_kmod_read_line(path, buf, sizeof(buf));
	if (ret)
		return ret == ENOENT ? ENOTSUP : ret;
	if (k->type == GPSU_KNOB_WORDS) {
		/* every word, the current one in brackets: "[touched] read" */
		for (w = 0; k->words[w]; w++) {
			char cur[64];

			snprintf(cur, sizeof(cur), "[%s]", k->words[w]);
			if (strstr(buf, cur)) {
				*v = (uint64_t)w;
				return 0;
			}
		}
		return EPROTO;
	}
	errno = 0;
	*v = strtoull(buf, &end, 0);
	return errno || end == buf ? EPROTO : 0;
}

static int gpsu_kmod_knob_set(int i, uint64_t v)
{
	const struct gpsu_knob *k = &gpsu_knobs[i];
	char path[256], buf[64];
	int fd, n, ret = 0;

	if (k->type == GPSU_KNOB_WORDS) {
		for (n = 0; k->words[n]; n++)
			;
		if (v >= (uint64_t)n)
			return EINVAL;
		n = snprintf(buf, sizeof(buf), "%s\n", k->words[v]);
	} else {
		n = snprintf(buf, sizeof(buf), "%llu\n",
			     (unsigned long long)v);
	}
	snprintf(path, sizeof(path), "%s/%s", gpsu_kmod_sysfs(), k->name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? ENOTSUP : errno;
	if (write(fd, buf, (size_t)n) != n)
		ret = errno ? errno : EIO;
	if (close(fd) && !ret)
		ret = errno;
	return ret;
}

/* A line "name value" of debugfs node<N>/stats of @device's node. */
static int gpsu_kmod_counter(int device, int i, uint64_t *v)
{
	struct gpsu_engine_dev info;
	char path[128], key[64];
	unsigned long long val;
	int ret = gpsu_kmod_device_info(device, &info);
	FILE *f;

	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/sys/kernel/debug/gps/node%d/stats",
		 info.node);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? ENOTSUP : errno;
	ret = ENOTSUP;
	while (fscanf(f, "%63s %llu", key, &val) == 2)
		if (!strcmp(key, gpsu_stats[i].name)) {
			*v = val;
			ret = 0;
		}
	fclose(f);
	return ret;
}

const struct gpsu_engine_ops gpsu_engine_kmod = {
	.name = "kmod",
	.kind = gpsEngineDriver,
	.open = gpsu_kmod_open,
	.close = gpsu_kmod_close,
	.device_info = gpsu_kmod_device_info,
	.alloc = gpsu_kmod_alloc,
	.free = gpsu_kmod_free,
	.read = gpsu_kmod_read,
	.write = gpsu_kmod_write,
	.memset = gpsu_kmod_memset,
	.advise = gpsu_kmod_advise,
	.query = gpsu_kmod_query,
	.track = gpsu_kmod_track,
	.fence = gpsu_kmod_fence,
	.fence_mask = gpsu_kmod_fence_mask,
	.ring_new = gpsu_kmod_ring_new,
	.ring_free = gpsu_kmod_ring_free,
	.fence_async = gpsu_kmod_fence_async,
	.ring_reap = gpsu_kmod_ring_reap,
	.ring_pending = gpsu_kmod_ring_pending,
	.knob_get = gpsu_kmod_knob_get,
	.knob_set = gpsu_kmod_knob_set,
	.counter = gpsu_kmod_counter,
};
