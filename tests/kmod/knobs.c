// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the files of /sys/kernel/gps, as
 * Documentation/ABI/testing/sysfs-kernel-gps describes them.  Exactly
 * these files: the knobs the driver's table (the file knobs) lists, 0644,
 * the table 0444, the counters 0444; the table well formed, and true:
 * every numeric knob takes its range's ends and refuses one past them
 * with EINVAL, text with EINVAL, a number too large for its type (as the
 * table gives it) with ERANGE, and keeps its old value after a failed
 * write; every knob takes its default, and holds it after the module's
 * load; a writer without CAP_SYS_ADMIN gets EPERM; the rules a range
 * cannot say (page_size's three sizes, block_size a power of two, the
 * watermark at most the capacity and following it, the link bandwidth's
 * hole below 1000, track_policy's words) and the queue shape reaching the
 * queues and GPS_IOC_VERSION.  Every knob is restored.
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

/* One line of the driver's table of knobs. */
struct knob {
	char name[GPS_KNOB_NAME_LEN];
	char type[8];			/* u32, u64 or word */
	unsigned long long min, max;	/* numbers */
	char def[GPS_KNOB_NAME_LEN];
	char unit[16];
	char rule[128];
};

static struct knob knobs[GPS_KNOB_SAVE_MAX];
static unsigned int nr_knobs;

static const char * const counters[] = {
	"abi_version", "nr_devices", "nr_allocs", "replica_pages",
	"twin_pages", "protect_in_place",
};

/* A decimal number of the table, all of @s; 0 or -1. */
static int table_num(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end ? -1 : 0;
}

/*
 * The driver's table into knobs[]: "<name> <type> <min> <max> <default>
 * <unit>[ <rule>]" lines; 0, or -1 (and why, logged) if a line is not.
 */
static int read_table(struct __test_metadata *_metadata)
{
	char line[512], lo[32], hi[32];
	struct knob *k;
	FILE *f = fopen(GPS_SYSFS "knobs", "r");
	int n;

	nr_knobs = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (nr_knobs == GPS_KNOB_SAVE_MAX) {
			TH_LOG("more than %d knobs", GPS_KNOB_SAVE_MAX);
			break;
		}
		line[strcspn(line, "\n")] = '\0';
		k = &knobs[nr_knobs];
		memset(k, 0, sizeof(*k));
		n = 0;
		if (sscanf(line, "%47s %7s %31s %31s %47s %15s%n", k->name,
			   k->type, lo, hi, k->def, k->unit, &n) != 6 ||
		    (line[n] && line[n] != ' ') ||
		    (line[n] && !line[n + 1])) {
			TH_LOG("not a line of the table: '%s'", line);
			break;
		}
		snprintf(k->rule, sizeof(k->rule), "%s",
			 line[n] ? line + n + 1 : "");
		if (!strcmp(k->type, "word")) {
			if (strcmp(lo, "-") || strcmp(hi, "-")) {
				TH_LOG("%s: a range of words", k->name);
				break;
			}
		} else if ((strcmp(k->type, "u32") && strcmp(k->type, "u64")) ||
			   table_num(lo, &k->min) || table_num(hi, &k->max)) {
			TH_LOG("%s: type or range: '%s'", k->name, line);
			break;
		}
		nr_knobs++;
	}
	n = !feof(f);
	fclose(f);
	return n ? -1 : 0;
}

static int is_word(const struct knob *k)
{
	return !strcmp(k->type, "word");
}

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
	struct gps_knob_save saved;	/* every knob, as at setup */
	char policy[16];
};

FIXTURE_SETUP(knobs)
{
	const char *p;

	self->fd = open(GPS_DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, "no " GPS_DEV);
	ASSERT_EQ(0, read_table(_metadata));
	ASSERT_LT(0, nr_knobs);
	ASSERT_EQ(0, gps_knob_save_all(&self->saved));
	ASSERT_EQ(nr_knobs, self->saved.n);
	p = gps_policy();
	ASSERT_NE(NULL, p);
	strcpy(self->policy, p);
}

FIXTURE_TEARDOWN(knobs)
{
	if (self->fd < 0)
		return;
	EXPECT_EQ(0, gps_knob_restore_saved(&self->saved));
	EXPECT_EQ(0, gps_set_policy(self->policy));
	EXPECT_EQ(0, close(self->fd));
}

/* Exactly the files the table and the ABI name: knobs 0644, others 0444. */
TEST_F(knobs, files_and_modes)
{
	struct dirent *de;
	struct stat st;
	char path[256];
	int n = 0;
	unsigned int i;
	DIR *d;

	for (i = 0; i < nr_knobs; i++) {
		snprintf(path, sizeof(path), GPS_SYSFS "%s", knobs[i].name);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", knobs[i].name);
		ASSERT_EQ(0644, st.st_mode & 0777);
	}
	ASSERT_EQ(0, stat(GPS_SYSFS "knobs", &st));
	ASSERT_EQ(0444, st.st_mode & 0777);
	ASSERT_EQ(-EACCES, gps_set_knob_str("knobs", "page_size"));
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
	ASSERT_EQ(nr_knobs + 1 + sizeof(counters) / sizeof(counters[0]), n);
	ASSERT_EQ(GPS_ABI_VERSION, gps_knob("abi_version"));
	ASSERT_EQ(gps_nr_devices(self->fd), gps_knob("nr_devices"));
	ASSERT_TRUE(gps_knob("protect_in_place") == 0 ||
		    gps_knob("protect_in_place") == 1);
}

/*
 * The table: each knob once; a number's default within its range, a
 * word's one of the words its file shows; the ranges that follow
 * PAGE_SIZE follow it; track_policy the one knob of words.
 */
TEST_F(knobs, table_well_formed)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long def;
	char words[128], w[GPS_KNOB_NAME_LEN];
	unsigned int i, j, nr_words = 0;

	for (i = 0; i < nr_knobs; i++) {
		const struct knob *k = &knobs[i];

		for (j = 0; j < i; j++)
			ASSERT_STRNE(knobs[j].name, k->name);
		if (is_word(k)) {
			nr_words++;
			ASSERT_EQ(0, gps_knob_str(k->name, words,
						  sizeof(words)));
			snprintf(w, sizeof(w), "%s", k->def);
			ASSERT_NE(NULL, strstr(words, w)) TH_LOG("%s", k->name);
			continue;
		}
		ASSERT_EQ(0, table_num(k->def, &def)) TH_LOG("%s", k->name);
		ASSERT_LE(k->min, def) TH_LOG("%s", k->name);
		ASSERT_LE(def, k->max) TH_LOG("%s", k->name);
		if (!strcmp(k->type, "u32"))
			ASSERT_GE(0xffffffffULL, k->max) TH_LOG("%s", k->name);
	}
	ASSERT_EQ(1, nr_words);
	for (i = 0; i < nr_knobs; i++) {
		if (!strcmp(knobs[i].name, "block_size"))
			ASSERT_EQ(page, knobs[i].max);
		if (!strcmp(knobs[i].name, "bulk_blocks"))
			ASSERT_EQ(page / 64, knobs[i].max);
		if (!strcmp(knobs[i].name, "track_policy"))
			ASSERT_TRUE(is_word(&knobs[i]));
	}
}

/*
 * Each knob's default: what it holds after the module's load (known in
 * a gps-vm guest, where runtests.sh loaded the module and fails any
 * program that leaves a knob changed), and taken back after every knob
 * was changed, written in the table's order.
 */
TEST_F(knobs, defaults_hold_after_load_and_are_taken)
{
	char now[64];
	unsigned int i;

	if (getenv("GPS_VM_SERIES")) {
		for (i = 0; i < nr_knobs; i++) {
			ASSERT_EQ(0, gps_knob_value(knobs[i].name, now,
						    sizeof(now)));
			EXPECT_STREQ(knobs[i].def, now)
				TH_LOG("%s after load", knobs[i].name);
		}
	} else {
		TH_LOG("not in a gps-vm guest: the values at load unknown");
	}
	/* Away from every default that a write alone can leave. */
	ASSERT_EQ(0, set_u64("queue_capacity", 100));
	ASSERT_EQ(0, set_u64("page_size", 4096));
	ASSERT_EQ(0, set_u64("dirty_wake", 1));
	ASSERT_EQ(0, gps_set_policy("read"));
	for (i = 0; i < nr_knobs; i++)
		ASSERT_EQ(0, gps_set_knob_str(knobs[i].name, knobs[i].def))
			TH_LOG("%s=%s", knobs[i].name, knobs[i].def);
	for (i = 0; i < nr_knobs; i++) {
		ASSERT_EQ(0, gps_knob_value(knobs[i].name, now, sizeof(now)));
		EXPECT_STREQ(knobs[i].def, now) TH_LOG("%s", knobs[i].name);
	}
}

/* Put knob @name back as the fixture found it; 0 or -errno. */
static int restore(FIXTURE_DATA(knobs) *self, const char *name)
{
	int i;

	for (i = 0; i < self->saved.n; i++)
		if (!strcmp(self->saved.name[i], name))
			return gps_set_knob_str(name, self->saved.val[i]);
	return -ENOENT;
}

/*
 * Every numeric tunable, as the table gives it: both ends of its range
 * are taken and read back; one past them, text, an empty write and a
 * number too large for the type fail (EINVAL, EINVAL, EINVAL, ERANGE)
 * and keep the value.
 */
TEST_F(knobs, ranges_and_errors)
{
	unsigned int i;

	for (i = 0; i < nr_knobs; i++) {
		const struct knob *k = &knobs[i];
		unsigned long long lo = k->min, hi = k->max, keep;

		if (is_word(k))
			continue;
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
		ASSERT_EQ(-ERANGE, gps_set_knob_str(k->name,
						    strcmp(k->type, "u32") ?
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
			ASSERT_EQ(0, restore(self, "queue_capacity"));
		ASSERT_EQ(0, restore(self, k->name));
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
	struct gps_knob_save *s = &self->saved;
	int i, status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (drop_sys_admin())
			_exit(10);
		for (i = 0; i < s->n; i++)
			if (gps_set_knob_str(s->name[i], s->val[i]) != -EPERM ||
			    gps_set_knob_str(s->name[i], "junk") != -EPERM)
				_exit(20 + i);
		if (gps_set_policy("read") != -EPERM)
			_exit(11);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	for (i = 0; i < s->n; i++) {
		char buf[32];

		ASSERT_EQ(0, gps_knob_value(s->name[i], buf, sizeof(buf)));
		ASSERT_STREQ(s->val[i], buf);
	}
	ASSERT_STREQ(self->policy, gps_policy());
}

TEST_HARNESS_MAIN
