// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the foundation of /dev/gps: the test bed has the expected
 * NUMA nodes, GPS_IOC_VERSION reports the ABI and one device per online
 * node, the sysfs knobs under /sys/kernel/gps accept good values and
 * reject bad ones with EINVAL (keeping the old value), the counters are
 * read-only, debugfs has one node<N> directory per online node, and an
 * unknown ioctl fails with ENOTTY.
 *
 * GPS_VM_NODES (set by tools/gps-vm) is the node count the guest was booted
 * with; when set, the tests also assert it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/gps.h>

#include "kselftest_harness.h"

#define GPS_DEV		"/dev/gps"
#define GPS_SYSFS	"/sys/kernel/gps"
#define GPS_DEBUGFS	"/sys/kernel/debug/gps"
#define NODE_ONLINE	"/sys/devices/system/node/online"

/* Parse a cpulist-style node list ("0", "0-3", "0,2-3"); -1 on error. */
static int gps_parse_nodes(const char *s, unsigned long long *mask)
{
	*mask = 0;
	while (*s && *s != '\n') {
		char *end;
		unsigned long a, b;

		a = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s || b < a)
				return -1;
		}
		if (b >= 64)
			return -1;
		for (; a <= b; a++)
			*mask |= 1ULL << a;
		s = end;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* Read a small sysfs/debugfs file into buf (NUL-terminated); -errno. */
static int gps_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	buf[n] = '\0';
	close(fd);
	return 0;
}

/* Write val to a file in one write(); 0 or -errno. */
static int gps_write_file(const char *path, const char *val)
{
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(val))
		ret = -EIO;
	close(fd);
	return ret;
}

static int gps_online_nodes(unsigned long long *mask)
{
	char buf[256];

	if (gps_read_file(NODE_ONLINE, buf, sizeof(buf)))
		return -1;
	if (gps_parse_nodes(buf, mask))
		return -1;
	return __builtin_popcountll(*mask);
}

/* The node count the VM was booted with, or -1 outside gps-vm. */
static int gps_expected_nodes(void)
{
	const char *s = getenv("GPS_VM_NODES");

	return s && *s ? atoi(s) : -1;
}

static char *gps_knob_path(const char *knob, char *buf, size_t len)
{
	snprintf(buf, len, GPS_SYSFS "/%s", knob);
	return buf;
}

/* A knob's value as a number; -1 if it cannot be read or parsed. */
static long long gps_knob_get(const char *knob)
{
	char path[128], buf[64], *end;
	long long v;

	if (gps_read_file(gps_knob_path(knob, path, sizeof(path)),
			  buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return -1;
	return v;
}

static int gps_knob_set(const char *knob, const char *val)
{
	char path[128];

	return gps_write_file(gps_knob_path(knob, path, sizeof(path)), val);
}

/* The test bed booted with the node count it was asked for. */
TEST(test_bed_nodes)
{
	unsigned long long mask;
	int nodes = gps_online_nodes(&mask);
	int expected = gps_expected_nodes();

	ASSERT_GE(nodes, 1);
	if (expected < 0)
		SKIP(return, "GPS_VM_NODES not set: not in gps-vm");
	ASSERT_EQ(nodes, expected);
	/* gps-vm nodes are numbered from 0 without holes */
	ASSERT_EQ(mask, (1ULL << expected) - 1);
}

FIXTURE(gps) {
	int fd;
	int nr_nodes;
	unsigned long long node_mask;
};

FIXTURE_SETUP(gps)
{
	self->fd = open(GPS_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, GPS_DEV " absent: gps.ko not loaded");
	ASSERT_GE(self->fd, 0);
	self->nr_nodes = gps_online_nodes(&self->node_mask);
	ASSERT_GE(self->nr_nodes, 1);
}

FIXTURE_TEARDOWN(gps)
{
	if (self->fd >= 0)
		ASSERT_EQ(close(self->fd), 0);
}

/* GPS_IOC_VERSION: the ABI version and one device per online node. */
TEST_F(gps, version)
{
	struct gps_version_args v;
	int expected = gps_expected_nodes();
	unsigned int i;

	memset(&v, 0xa5, sizeof(v));
	ASSERT_EQ(ioctl(self->fd, GPS_IOC_VERSION, &v), 0);
	ASSERT_EQ(v.abi_version, GPS_ABI_VERSION);
	ASSERT_EQ(v.nr_devices, (__u32)self->nr_nodes);
	if (expected > 0)
		ASSERT_EQ(v.nr_devices, (__u32)expected);
	ASSERT_EQ(v.node_mask, self->node_mask);
	ASSERT_EQ(v.page_size, (__u32)gps_knob_get("page_size"));
	ASSERT_EQ(v.block_size, (__u32)gps_knob_get("block_size"));
	for (i = 0; i < sizeof(v.reserved) / sizeof(v.reserved[0]); i++)
		ASSERT_EQ(v.reserved[i], 0);
}

/* Commands the driver does not know fail with ENOTTY, not EINVAL. */
TEST_F(gps, unknown_ioctl)
{
	struct gps_version_args v;

	memset(&v, 0, sizeof(v));
	errno = 0;
	ASSERT_EQ(ioctl(self->fd, _IO(GPS_IOC_MAGIC, 0xff), 0), -1);
	ASSERT_EQ(errno, ENOTTY);
	errno = 0;
	ASSERT_EQ(ioctl(self->fd, _IOR(GPS_IOC_MAGIC, 0xfe,
				       struct gps_version_args), &v), -1);
	ASSERT_EQ(errno, ENOTTY);
	/* another driver's letter with a known number and size */
	errno = 0;
	ASSERT_EQ(ioctl(self->fd, _IOR('x', 0x00, struct gps_version_args),
			&v), -1);
	ASSERT_EQ(errno, ENOTTY);
}

/* The read-only counters exist, are numbers and cannot be written. */
TEST_F(gps, counters)
{
	static const char * const counters[] = {
		"nr_devices", "nr_allocs", "replica_pages", "twin_pages",
	};
	unsigned int i;

	ASSERT_EQ(gps_knob_get("nr_devices"), self->nr_nodes);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		TH_LOG("counter %s", counters[i]);
		ASSERT_GE(gps_knob_get(counters[i]), 0);
		ASSERT_EQ(gps_knob_set(counters[i], "0"), -EACCES);
	}
}

/* Every supported GPS page size is accepted and reported by VERSION. */
TEST_F(gps, page_size_values)
{
	static const char * const good[] = { "4096", "65536", "2097152" };
	struct gps_version_args v;
	char old[32];
	long long saved = gps_knob_get("page_size");
	unsigned int i;

	ASSERT_GT(saved, 0);
	snprintf(old, sizeof(old), "%lld", saved);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		EXPECT_EQ(gps_knob_set("page_size", good[i]), 0);
		EXPECT_EQ(gps_knob_get("page_size"), atoll(good[i]));
		memset(&v, 0, sizeof(v));
		EXPECT_EQ(ioctl(self->fd, GPS_IOC_VERSION, &v), 0);
		EXPECT_EQ(v.page_size, (__u32)atoll(good[i]));
	}
	ASSERT_EQ(gps_knob_set("page_size", old), 0);
	ASSERT_EQ(gps_knob_get("page_size"), saved);
}

/* A bad value written to a knob fails with EINVAL; the old value stays. */
FIXTURE(gps_knob) {
	char saved[64];
	int have_saved;
};

FIXTURE_VARIANT(gps_knob) {
	const char *knob;
	const char *bad;
};

FIXTURE_VARIANT_ADD(gps_knob, page_size_12345) {
	.knob = "page_size", .bad = "12345",
};

FIXTURE_VARIANT_ADD(gps_knob, page_size_8192) {
	.knob = "page_size", .bad = "8192",
};

FIXTURE_VARIANT_ADD(gps_knob, page_size_zero) {
	.knob = "page_size", .bad = "0",
};

FIXTURE_VARIANT_ADD(gps_knob, page_size_text) {
	.knob = "page_size", .bad = "big",
};

FIXTURE_VARIANT_ADD(gps_knob, block_size_text) {
	.knob = "block_size", .bad = "x",
};

FIXTURE_VARIANT_ADD(gps_knob, queue_capacity_text) {
	.knob = "queue_capacity", .bad = "lots",
};

FIXTURE_VARIANT_ADD(gps_knob, queue_watermark_text) {
	.knob = "queue_watermark", .bad = "high",
};

FIXTURE_VARIANT_ADD(gps_knob, harvest_interval_us_text) {
	.knob = "harvest_interval_us", .bad = "soon",
};

FIXTURE_SETUP(gps_knob)
{
	char path[128];

	self->have_saved = 0;
	if (access(GPS_DEV, F_OK) && errno == ENOENT)
		SKIP(return, GPS_DEV " absent: gps.ko not loaded");
	ASSERT_EQ(gps_read_file(gps_knob_path(variant->knob, path,
					      sizeof(path)),
				self->saved, sizeof(self->saved)), 0);
	self->saved[strcspn(self->saved, "\n")] = '\0';
	self->have_saved = 1;
}

FIXTURE_TEARDOWN(gps_knob)
{
	char now[64], path[128];

	if (!self->have_saved)
		return;
	gps_knob_path(variant->knob, path, sizeof(path));
	ASSERT_EQ(gps_read_file(path, now, sizeof(now)), 0);
	now[strcspn(now, "\n")] = '\0';
	if (strcmp(now, self->saved))
		ASSERT_EQ(gps_write_file(path, self->saved), 0);
}

TEST_F(gps_knob, bad_value)
{
	long long before = gps_knob_get(variant->knob);

	ASSERT_GE(before, 0);
	ASSERT_EQ(gps_knob_set(variant->knob, variant->bad), -EINVAL);
	ASSERT_EQ(gps_knob_get(variant->knob), before);
}

/* debugfs: one node<N> directory per online node, with stats and traffic. */
TEST_F(gps, debugfs_nodes)
{
	unsigned long long seen = 0;
	struct dirent *de;
	DIR *dir;

	dir = opendir(GPS_DEBUGFS);
	if (!dir && errno == ENOENT && access("/sys/kernel/debug/", F_OK))
		SKIP(return, "debugfs not mounted");
	ASSERT_NE(dir, NULL);
	while ((de = readdir(dir))) {
		char path[512], buf[4096], *line, *save;
		unsigned int node;
		int lines = 0;

		if (sscanf(de->d_name, "node%u", &node) != 1)
			continue;
		TH_LOG("%s", de->d_name);
		ASSERT_LT(node, 64);
		ASSERT_EQ(seen & (1ULL << node), 0);
		seen |= 1ULL << node;

		snprintf(path, sizeof(path), GPS_DEBUGFS "/%s/traffic",
			 de->d_name);
		ASSERT_EQ(access(path, R_OK), 0);
		snprintf(path, sizeof(path), GPS_DEBUGFS "/%s/stats",
			 de->d_name);
		ASSERT_EQ(gps_read_file(path, buf, sizeof(buf)), 0);
		/* "name value" lines, values are numbers */
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char name[64];
			unsigned long long value;

			EXPECT_EQ(sscanf(line, "%63s %llu", name, &value), 2)
				TH_LOG("bad stats line '%s'", line);
			lines++;
		}
		ASSERT_GT(lines, 0);
	}
	closedir(dir);
	ASSERT_EQ(seen, self->node_mask);
}

TEST_HARNESS_MAIN
