// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the files of /sys/kernel/gps, as
 * Documentation/ABI/testing/sysfs-kernel-gps describes them.  Exactly
 * these files, tunables 0644 and counters 0444; every tunable takes its
 * range's ends and refuses one past them with EINVAL, text with EINVAL,
 * a number too large for its type with ERANGE, and keeps its old value
 * after a failed write; a writer without CAP_SYS_ADMIN gets EPERM; the
 * rules a range cannot say (page_size's three sizes, block_size a power
 * of two, the watermark at most the capacity and following it, the link
 * bandwidth's hole below 1000, track_policy's words) and the queue shape
 * reaching the queues and GPS_IOC_VERSION.  Every knob is restored.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define U64_MAX_STR	"18446744073709551615"
#define U64_OVER_STR	"18446744073709551616"
#define UINT_OVER_STR	"4294967296"

/* The numeric tunables: range and type. */
static const struct knob {
	const char *name;
	unsigned long long min, max;
	int is_u64;
} knobs[] = {
	{ "page_size", 4096, 2097152, 0 },
	{ "block_size", 64, 4096, 0 },
	{ "queue_capacity", 1, 65536, 0 },
	{ "queue_watermark", 1, 65536, 0 },
	{ "harvest_interval_us", 0, 10000000, 0 },
	{ "dirty_wake", 1, 1 << 20, 0 },
	{ "bulk_blocks", 0, 4096 / 64, 0 },
	{ "max_bytes", 0, ~0ULL, 1 },
	{ "node_max_bytes", 0, ~0ULL, 1 },
	{ "node_reserve_bytes", 0, ~0ULL, 1 },
	{ "link_bandwidth", 0, 1000000000000ULL, 1 },
	{ "link_latency_ns", 0, 1000000000ULL, 1 },
	{ "capture_bytes", 0, 2097152, 0 },
	{ "keep_writable_ms", 0, 10000, 0 },
	{ "fence_threads", 0, 64, 0 },
	{ "harvest_ahead", 0, 1, 0 },
	{ "um_thrash_threshold", 0, 1000, 0 },
	{ "um_thrash_epoch_ms", 1, 60000, 0 },
	{ "um_pin_ms", 0, 60000, 0 },
};

#define NR_KNOBS	(sizeof(knobs) / sizeof(knobs[0]))

static const char * const counters[] = {
	"abi_version", "nr_devices", "nr_allocs", "replica_pages",
	"twin_pages", "protect_in_place",
};

static unsigned long long knob_u64(const char *name)
{
	char buf[64];

	if (gps_knob_str(name, buf, sizeof(buf)))
		return ~0ULL - 1;
	return strtoull(buf, NULL, 0);
}

static int set_u64(const char *name, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	return gps_set_knob_str(name, buf);
}

/* Block size that GPS_IOC_VERSION reports. */
static unsigned int abi_block_size(int fd)
{
	struct gps_version_args v = {};

	if (ioctl(fd, GPS_IOC_VERSION, &v))
		return 0;
	return v.block_size;
}

FIXTURE(knobs) {
	int fd;
	char saved[NR_KNOBS][32];
	char policy[16];
};

FIXTURE_SETUP(knobs)
{
	const char *p;
	unsigned int i;

	self->fd = open(GPS_DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, "no " GPS_DEV);
	for (i = 0; i < NR_KNOBS; i++)
		ASSERT_EQ(0, gps_knob_str(knobs[i].name, self->saved[i],
				      sizeof(self->saved[i])));
	p = gps_policy();
	ASSERT_NE(NULL, p);
	strcpy(self->policy, p);
}

FIXTURE_TEARDOWN(knobs)
{
	unsigned int i;

	if (self->fd < 0)
		return;
	/* block_size and queue_capacity before the watermark they reset. */
	for (i = 0; i < NR_KNOBS; i++)
		if (strcmp(knobs[i].name, "queue_watermark"))
			EXPECT_EQ(0, gps_set_knob_str(knobs[i].name,
						      self->saved[i]));
	for (i = 0; i < NR_KNOBS; i++)
		if (!strcmp(knobs[i].name, "queue_watermark"))
			EXPECT_EQ(0, gps_set_knob_str(knobs[i].name,
						      self->saved[i]));
	EXPECT_EQ(0, gps_set_policy(self->policy));
	EXPECT_EQ(0, close(self->fd));
}

/* Exactly the documented files: tunables 0644, counters 0444. */
TEST_F(knobs, files_and_modes)
{
	struct dirent *de;
	struct stat st;
	char path[256];
	int n = 0;
	unsigned int i;
	DIR *d;

	for (i = 0; i < NR_KNOBS; i++) {
		snprintf(path, sizeof(path), GPS_SYSFS "%s", knobs[i].name);
		ASSERT_EQ(0, stat(path, &st));
		ASSERT_EQ(0644, st.st_mode & 0777);
	}
	ASSERT_EQ(0, stat(GPS_SYSFS "track_policy", &st));
	ASSERT_EQ(0644, st.st_mode & 0777);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		snprintf(path, sizeof(path), GPS_SYSFS "%s", counters[i]);
		ASSERT_EQ(0, stat(path, &st));
		ASSERT_EQ(0444, st.st_mode & 0777);
		/* Even root cannot open a counter for writing. */
		ASSERT_EQ(-EACCES, gps_set_knob(counters[i], 1));
	}
	d = opendir(GPS_SYSFS);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	ASSERT_EQ(NR_KNOBS + 1 + sizeof(counters) / sizeof(counters[0]), n);
	ASSERT_EQ(GPS_ABI_VERSION, gps_knob("abi_version"));
	ASSERT_EQ(gps_nr_devices(self->fd), gps_knob("nr_devices"));
	ASSERT_TRUE(gps_knob("protect_in_place") == 0 ||
		    gps_knob("protect_in_place") == 1);
}

/* Put knob @i back as the fixture found it; 0 or -errno. */
static int restore(FIXTURE_DATA(knobs) *self, unsigned int i)
{
	return gps_set_knob_str(knobs[i].name, self->saved[i]);
}

static unsigned int knob_index(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_KNOBS && strcmp(knobs[i].name, name); i++)
		;
	return i;
}

/*
 * Every numeric tunable: both ends of its range are taken and read back;
 * one past them, text, an empty write and a number too large for the
 * type fail (EINVAL, EINVAL, EINVAL, ERANGE) and keep the value.
 */
TEST_F(knobs, ranges_and_errors)
{
	unsigned int i;

	for (i = 0; i < NR_KNOBS; i++) {
		const struct knob *k = &knobs[i];
		unsigned long long lo = k->min, hi = k->max, keep;

		TH_LOG("%s", k->name);
		/* Ends the other rules allow. */
		if (!strcmp(k->name, "queue_watermark")) {
			ASSERT_EQ(0, set_u64("queue_capacity", 65536));
			ASSERT_EQ(65535, knob_u64("queue_watermark"));
		}
		ASSERT_EQ(0, set_u64(k->name, lo));
		ASSERT_EQ(lo, knob_u64(k->name));
		ASSERT_EQ(0, set_u64(k->name, hi));
		ASSERT_EQ(hi, knob_u64(k->name));
		keep = hi;
		if (lo > 0)
			ASSERT_EQ(-EINVAL, set_u64(k->name, lo - 1));
		if (hi != ~0ULL)
			ASSERT_EQ(-EINVAL, set_u64(k->name, hi + 1));
		ASSERT_EQ(-EINVAL, gps_set_knob_str(k->name, "twelve"));
		ASSERT_EQ(-EINVAL, gps_set_knob_str(k->name, "12 apples"));
		ASSERT_EQ(-EINVAL, gps_set_knob_str(k->name, "-1"));
		ASSERT_EQ(-EINVAL, gps_set_knob_str(k->name, "\n"));
		ASSERT_EQ(-ERANGE, gps_set_knob_str(k->name, k->is_u64 ?
						    U64_OVER_STR :
						    UINT_OVER_STR));
		ASSERT_EQ(keep, knob_u64(k->name));
		/* Base 0: hex and octal, and a trailing newline. */
		if (!strcmp(k->name, "page_size")) {
			ASSERT_EQ(0, gps_set_knob_str(k->name, "0x1000\n"));
			ASSERT_EQ(4096, knob_u64(k->name));
			ASSERT_EQ(0, gps_set_knob_str(k->name, "0200000"));
			ASSERT_EQ(65536, knob_u64(k->name));
		}
		/* One at a time: no huge queue of huge blocks. */
		if (!strcmp(k->name, "queue_watermark"))
			ASSERT_EQ(0, restore(self,
					     knob_index("queue_capacity")));
		ASSERT_EQ(0, restore(self, i));
	}
	ASSERT_EQ(0, gps_set_knob_str("max_bytes", U64_MAX_STR));
	ASSERT_EQ(~0ULL, knob_u64("max_bytes"));
}

/* page_size: exactly 4096, 65536 or 2097152. */
TEST_F(knobs, page_size_three_sizes)
{
	static const unsigned long long bad[] = {
		8192, 16384, 32768, 131072, 1048576, 4097, 65535, 2097151,
	};
	struct gps_version_args v = {};
	unsigned int i;

	ASSERT_EQ(0, set_u64("page_size", 4096));
	ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_VERSION, &v));
	ASSERT_EQ(4096, v.page_size);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ(-EINVAL, set_u64("page_size", bad[i]));
	ASSERT_EQ(4096, knob_u64("page_size"));
	ASSERT_EQ(0, set_u64("page_size", 2097152));
	ASSERT_EQ(0, set_u64("page_size", 65536));
	ASSERT_EQ(65536, knob_u64("page_size"));
}

/*
 * The queue shape: block_size a power of two; queue_capacity sets the
 * watermark one below it (1 for a capacity of 1); queue_watermark at
 * most the capacity; the new shape reaches every device's queue and
 * GPS_IOC_VERSION.
 */
TEST_F(knobs, queue_shape_rules)
{
	int d, nr = gps_nr_devices(self->fd);

	ASSERT_EQ(-EINVAL, set_u64("block_size", 96));
	ASSERT_EQ(-EINVAL, set_u64("block_size", 3000));
	ASSERT_EQ(0, set_u64("block_size", 256));
	ASSERT_EQ(256, abi_block_size(self->fd));

	ASSERT_EQ(0, set_u64("queue_capacity", 100));
	ASSERT_EQ(100, knob_u64("queue_capacity"));
	ASSERT_EQ(99, knob_u64("queue_watermark"));
	for (d = 0; d < nr; d++)
		ASSERT_EQ(100, gps_stat(gps_node_of(self->fd, d),
					"queue_capacity"));
	ASSERT_EQ(-EINVAL, set_u64("queue_watermark", 101));
	ASSERT_EQ(99, knob_u64("queue_watermark"));
	ASSERT_EQ(0, set_u64("queue_watermark", 100));
	ASSERT_EQ(100, knob_u64("queue_watermark"));
	ASSERT_EQ(0, set_u64("queue_watermark", 1));
	ASSERT_EQ(1, knob_u64("queue_watermark"));
	ASSERT_EQ(0, set_u64("queue_capacity", 1));
	ASSERT_EQ(1, knob_u64("queue_watermark"));
	ASSERT_EQ(0, set_u64("queue_capacity", 2));
	ASSERT_EQ(1, knob_u64("queue_watermark"));
	ASSERT_EQ(-EINVAL, set_u64("queue_watermark", 3));
	ASSERT_EQ(256, knob_u64("block_size"));
}

/* link_bandwidth: 0 (unlimited) or 1000 to 10^12, nothing in between. */
TEST_F(knobs, link_bandwidth_hole)
{
	ASSERT_EQ(0, set_u64("link_bandwidth", 0));
	ASSERT_EQ(-EINVAL, set_u64("link_bandwidth", 1));
	ASSERT_EQ(-EINVAL, set_u64("link_bandwidth", 999));
	ASSERT_EQ(0, knob_u64("link_bandwidth"));
	ASSERT_EQ(0, set_u64("link_bandwidth", 1000));
	ASSERT_EQ(1000, knob_u64("link_bandwidth"));
	ASSERT_EQ(-EINVAL, set_u64("link_bandwidth", 500));
	ASSERT_EQ(1000, knob_u64("link_bandwidth"));
	ASSERT_EQ(0, set_u64("link_bandwidth", 0));
}

/* track_policy: both words, the current one in brackets; a word only. */
TEST_F(knobs, track_policy_words)
{
	char buf[64];

	ASSERT_EQ(0, gps_set_policy("touched"));
	ASSERT_EQ(0, gps_knob_str("track_policy", buf, sizeof(buf)));
	ASSERT_STREQ("[touched] read", buf);
	ASSERT_EQ(0, gps_set_policy("read\n"));
	ASSERT_EQ(0, gps_knob_str("track_policy", buf, sizeof(buf)));
	ASSERT_STREQ("touched [read]", buf);
	ASSERT_EQ(-EINVAL, gps_set_policy("readx"));
	ASSERT_EQ(-EINVAL, gps_set_policy("Touched"));
	ASSERT_EQ(-EINVAL, gps_set_policy("0"));
	ASSERT_EQ(-EINVAL, gps_set_policy("1"));
	ASSERT_EQ(-EINVAL, gps_set_policy("\n"));
	ASSERT_STREQ("read", gps_policy());
}

/* Drop CAP_SYS_ADMIN from the effective set; 0 or -1. */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c))
		return -1;
	c[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &h, c) ? -1 : 0;
}

/* Root without CAP_SYS_ADMIN opens the files but changes nothing. */
TEST_F(knobs, eperm_without_cap_sys_admin)
{
	unsigned int i;
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (drop_sys_admin())
			_exit(10);
		for (i = 0; i < NR_KNOBS; i++)
			if (gps_set_knob_str(knobs[i].name,
					     self->saved[i]) != -EPERM ||
			    gps_set_knob_str(knobs[i].name, "junk") != -EPERM)
				_exit(20 + i);
		if (gps_set_policy("read") != -EPERM)
			_exit(11);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	for (i = 0; i < NR_KNOBS; i++) {
		char buf[32];

		ASSERT_EQ(0, gps_knob_str(knobs[i].name, buf, sizeof(buf)));
		ASSERT_STREQ(self->saved[i], buf);
	}
	ASSERT_STREQ(self->policy, gps_policy());
}

TEST_HARNESS_MAIN
