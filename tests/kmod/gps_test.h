/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the gps.ko kselftests: open the device, allocate, map
 * a device's view, fence, read and write knobs and per-node counters.
 * Include after kselftest_harness.h.
 */
#ifndef GPS_TEST_H
#define GPS_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gps.h>

#define GPS_DEV		"/dev/gps"
#define GPS_SYSFS	"/sys/kernel/gps/"
#define GPS_DEBUGFS	"/sys/kernel/debug/gps/"

struct gps_buf {
	struct gps_alloc_args args;
	void *view[GPS_MAX_DEVICES];	/* mapped views, NULL if not */
};

static inline int gps_nr_devices(int fd)
{
	struct gps_version_args v = {};

	if (ioctl(fd, GPS_IOC_VERSION, &v))
		return -errno;
	return v.nr_devices;
}

static inline int gps_node_of(int fd, int dev)
{
	struct gps_device_args d = { .device = dev };

	if (ioctl(fd, GPS_IOC_DEVICE_INFO, &d))
		return -errno;
	return d.node;
}

/* Allocate; returns 0 or -errno.  page_size 0 = the sysfs default. */
static inline int gps_alloc(int fd, struct gps_buf *b, uint64_t size,
			    uint32_t kind, uint32_t flags, uint32_t home,
			    uint32_t page_size)
{
	memset(b, 0, sizeof(*b));
	b->args.size = size;
	b->args.kind = kind;
	b->args.flags = flags;
	b->args.home = home;
	b->args.page_size = page_size;
	return ioctl(fd, GPS_IOC_ALLOC, &b->args) ? -errno : 0;
}

/* Map device @dev's whole view; NULL on failure (errno set). */
static inline void *gps_map(int fd, struct gps_buf *b, int dev)
{
	void *p = mmap(NULL, b->args.alloc_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd,
		       b->args.offset + (uint64_t)dev * b->args.view_stride);

	if (p == MAP_FAILED)
		return NULL;
	b->view[dev] = p;
	return p;
}

static inline int gps_free(int fd, struct gps_buf *b)
{
	struct gps_free_args f = { .handle = b->args.handle };
	int d;

	for (d = 0; d < GPS_MAX_DEVICES; d++) {
		if (b->view[d])
			munmap(b->view[d], b->args.alloc_size);
		b->view[d] = NULL;
	}
	return ioctl(fd, GPS_IOC_FREE, &f) ? -errno : 0;
}

static inline int gps_fence(int fd, uint32_t dev, struct gps_fence_args *out)
{
	struct gps_fence_args f = { .device = dev };
	int ret = ioctl(fd, GPS_IOC_FENCE, &f) ? -errno : 0;

	if (out)
		*out = f;
	return ret;
}

static inline int gps_advise(int fd, struct gps_buf *b, uint64_t off,
			     uint64_t len, uint32_t advice, uint32_t dev,
			     struct gps_advise_args *out)
{
	struct gps_advise_args a = {
		.handle = b->args.handle, .offset = off, .length = len,
		.advice = advice, .device = dev,
	};
	int ret = ioctl(fd, GPS_IOC_ADVISE, &a) ? -errno : 0;

	if (out)
		*out = a;
	return ret;
}

/* Subscriber mask of GPS page @page, or 0 on failure. */
static inline uint64_t gps_subs(int fd, struct gps_buf *b, uint64_t page)
{
	uint64_t subs = 0;
	struct gps_query_args q = {
		.handle = b->args.handle, .first_page = page, .nr_pages = 1,
		.subs = (uintptr_t)&subs,
	};

	if (ioctl(fd, GPS_IOC_QUERY, &q) || q.nr_pages != 1)
		return 0;
	return subs;
}

/* Read what device @dev's replica (or view target) holds. */
static inline int gps_read(int fd, struct gps_buf *b, uint32_t dev,
			   uint64_t off, void *dst, uint64_t len)
{
	struct gps_copy_args c = {
		.handle = b->args.handle, .offset = off, .length = len,
		.uaddr = (uintptr_t)dst, .device = dev,
	};

	return ioctl(fd, GPS_IOC_READ, &c) ? -errno : 0;
}

static inline long long gps_knob(const char *name)
{
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

/* Write a knob; returns 0 or -errno of the write. */
static inline int gps_set_knob(const char *name, long long val)
{
	char path[256], buf[64];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%lld\n", val);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* A counter of node @node's debugfs stats, or -1. */
static inline long long gps_stat(int node, const char *name)
{
	char path[256], key[64];
	long long v, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/stats", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/* A counter summed over every node. */
static inline long long gps_stat_sum(int fd, const char *name)
{
	long long sum = 0;
	int d, n = gps_nr_devices(fd);

	for (d = 0; d < n; d++)
		sum += gps_stat(gps_node_of(fd, d), name);
	return sum;
}

/* Knobs a test changes, restored by gps_knobs_restore(). */
struct gps_saved_knobs {
	long long harvest_interval_us, queue_capacity, queue_watermark;
	long long block_size, page_size, max_bytes;
};

static inline void gps_knobs_save(struct gps_saved_knobs *s)
{
	s->harvest_interval_us = gps_knob("harvest_interval_us");
	s->queue_capacity = gps_knob("queue_capacity");
	s->queue_watermark = gps_knob("queue_watermark");
	s->block_size = gps_knob("block_size");
	s->page_size = gps_knob("page_size");
	s->max_bytes = gps_knob("max_bytes");
}

static inline void gps_knobs_restore(const struct gps_saved_knobs *s)
{
	gps_set_knob("harvest_interval_us", s->harvest_interval_us);
	gps_set_knob("block_size", s->block_size);
	gps_set_knob("queue_capacity", s->queue_capacity);
	gps_set_knob("queue_watermark", s->queue_watermark);
	gps_set_knob("page_size", s->page_size);
	gps_set_knob("max_bytes", s->max_bytes);
}

#endif /* GPS_TEST_H */
