/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the gps.ko kselftests: open the device, allocate, map
 * a device's view, fence, read and write knobs and per-node counters, the
 * fixture every test file starts from (struct gps_fixture, at the end) and
 * the tests' random numbers (rnd()).  Include after kselftest_harness.h.
 */
#ifndef GPS_TEST_H
#define GPS_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
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

/* A file of /sys/kernel/gps: its first line, newline stripped; 0 or -1. */
static inline int gps_knob_str(const char *name, char *buf, size_t len)
{
	char path[256];
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, len, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* Write @val into the file @path (sysfs, debugfs); 0 or -errno. */
static inline int gps_write_num(const char *path, long long val)
{
	char buf[64];
	int fd, n, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%lld\n", val);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* The number the file @path starts with, or -1. */
static inline long long gps_read_num(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Write a knob; returns 0 or -errno of the write. */
static inline int gps_set_knob(const char *name, long long val)
{
	char path[256];

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	return gps_write_num(path, val);
}

/* The value of @name in a file of "name value" lines, or -1. */
static inline long long gps_file_value(const char *path, const char *name)
{
	char key[64];
	long long v, found = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/* A counter of node @node's debugfs stats, or -1. */
static inline long long gps_stat(int node, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/stats", node);
	return gps_file_value(path, name);
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

/*
 * Helpers of advise.c, errors.c, lifetime.c, queue.c and uring.c.
 */
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

/* Mask of every device. */
static inline uint64_t gps_all_mask(int nr)
{
	return nr >= 64 ? ~0ULL : (1ULL << nr) - 1;
}

/* GPS_IOC_WRITE: copy @len bytes from @src into every replica. */
static inline int gps_write(int fd, struct gps_buf *b, uint64_t off,
			    const void *src, uint64_t len)
{
	struct gps_copy_args c = {
		.handle = b->args.handle, .offset = off, .length = len,
		.uaddr = (uintptr_t)src,
	};

	return ioctl(fd, GPS_IOC_WRITE, &c) ? -errno : 0;
}

/* GPS_IOC_MEMSET: set @len bytes to @value in every replica. */
static inline int gps_memset(int fd, struct gps_buf *b, uint64_t off,
			     uint64_t len, uint32_t value)
{
	struct gps_memset_args m = {
		.handle = b->args.handle, .offset = off, .length = len,
		.value = value,
	};

	return ioctl(fd, GPS_IOC_MEMSET, &m) ? -errno : 0;
}

/* Traffic from node @node to node @dest: blocks and bytes; 0 or -1. */
static inline int gps_traffic(int node, int dest, long long *blocks,
			      long long *bytes)
{
	char path[256];
	long long bl, by;
	int n, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/traffic", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%d %lld %lld", &n, &bl, &by) == 3) {
		if (n == dest) {
			*blocks = bl;
			*bytes = by;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static inline long long gps_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait up to @ms for node @node's counter @name to exceed @old. */
static inline long long gps_wait_stat_above(int node, const char *name,
					    long long old, int ms)
{
	long long end = gps_now_ms() + ms, v;

	while ((v = gps_stat(node, name)) <= old && gps_now_ms() < end)
		usleep(1000);
	return v;
}

/* The driver's global counters of live state (/sys/kernel/gps). */
struct gps_usage {
	long long nr_allocs, replica_pages, twin_pages;
};

static inline struct gps_usage gps_usage(void)
{
	struct gps_usage u = {
		.nr_allocs = gps_knob("nr_allocs"),
		.replica_pages = gps_knob("replica_pages"),
		.twin_pages = gps_knob("twin_pages"),
	};

	return u;
}

static inline int gps_usage_eq(struct gps_usage a, struct gps_usage b)
{
	return a.nr_allocs == b.nr_allocs &&
	       a.replica_pages == b.replica_pages &&
	       a.twin_pages == b.twin_pages;
}

/*
 * Wait up to @ms for the counters to come back to @start (release of a
 * file may finish just after a waited-for child is reaped); the last
 * values read.
 */
static inline struct gps_usage gps_usage_wait(struct gps_usage start, int ms)
{
	long long end = gps_now_ms() + ms;
	struct gps_usage u;

	while (!gps_usage_eq(u = gps_usage(), start) && gps_now_ms() < end)
		usleep(2000);
	return u;
}

/* Wait for @pid; its wait status, or -1. */
static inline int gps_wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* True if the wait status says killed by signal @sig. */
static inline int gps_killed_by(int status, int sig)
{
	return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* Fork a child that reads (or writes) one byte at @addr: its status. */
static inline int gps_child_touch(volatile unsigned char *addr, int write)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (write)
			*addr = 1;
		else
			(void)*addr;
		_exit(0);
	}
	return gps_wait_child(pid);
}

/*
 * Fork a child that maps device @dev's view of @b itself (views are not
 * inherited: VM_DONTCOPY) and stores @v at byte @off of it: its status.
 */
static inline int gps_child_store(int fd, struct gps_buf *b, int dev,
				  uint64_t off, unsigned char v)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		struct gps_buf c = *b;
		volatile unsigned char *p = gps_map(fd, &c, dev);

		if (!p)
			_exit(2);
		p[off] = v;
		_exit(0);
	}
	return gps_wait_child(pid);
}

/*
 * Delay points (a module built with CONFIG_GPS_DEBUG):
 * GPS_DEBUGFS "delay_<point>/" with us, probability and hits.
 */
static inline int gps_have_delays(void)
{
	return access(GPS_DEBUGFS "delay_alloc_publish/us", F_OK) == 0;
}

static inline long long gps_delay_get(const char *point, const char *attr)
{
	char path[256];

	snprintf(path, sizeof(path), GPS_DEBUGFS "delay_%s/%s", point, attr);
	return gps_read_num(path);
}

static inline int gps_delay_set(const char *point, const char *attr,
				long long v)
{
	char path[256];

	snprintf(path, sizeof(path), GPS_DEBUGFS "delay_%s/%s", point, attr);
	return gps_write_num(path, v);
}

/* Every pass through @point sleeps @us; 0: off. */
static inline int gps_delay_arm(const char *point, long long us)
{
	return gps_delay_set(point, "us", us) ||
	       gps_delay_set(point, "probability", us ? 100 : 0) ? -1 : 0;
}

/* Wait up to 5 s for @point's hits to pass @old: 0, or -1. */
static inline int gps_delay_wait_hit(const char *point, long long old)
{
	long long end = gps_now_ms() + 5000;

	while (gps_delay_get(point, "hits") <= old)
		if (gps_now_ms() > end)
			return -1;
		else
			usleep(1000);
	return 0;
}

/*
 * Compare what every device's view holds at [@off, @off + @len) with
 * @expect (GPS_IOC_READ per device): -1 if all match, else the first
 * device that differs (or whose read fails).
 */
static inline int gps_replicas_differ(int fd, struct gps_buf *b, int nr,
				      uint64_t off, const void *expect,
				      uint64_t len)
{
	unsigned char *got = malloc(len);
	int d, bad = -1;

	if (!got)
		return 0;
	for (d = 0; d < nr && bad < 0; d++)
		if (gps_read(fd, b, d, off, got, len) ||
		    memcmp(got, expect, len))
			bad = d;
	free(got);
	return bad;
}

/* Write a string knob such as track_policy; returns 0 or -errno. */
static inline int gps_set_knob_str(const char *name, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Knobs saved by name, as their files hold them (a knob of words: its
 * current word), and written back by gps_knob_restore_saved() in the
 * order of the driver's table, /sys/kernel/gps/knobs, in which a knob's
 * write may change a later knob (queue_capacity sets queue_watermark),
 * never an earlier one; only those that differ are written.
 */
#define GPS_KNOB_SAVE_MAX	32
#define GPS_KNOB_NAME_LEN	48

struct gps_knob_save {
	int n;
	char name[GPS_KNOB_SAVE_MAX][GPS_KNOB_NAME_LEN];
	char val[GPS_KNOB_SAVE_MAX][32];
};

/* Knob @name's value: the number, or the bracketed word; 0 or -1. */
static inline int gps_knob_value(const char *name, char *buf, size_t len)
{
	char raw[128], *p;

	if (gps_knob_str(name, raw, sizeof(raw)))
		return -1;
	p = strchr(raw, '[');
	if (p) {
		p++;
		p[strcspn(p, "]")] = '\0';
	} else {
		p = raw;
	}
	snprintf(buf, len, "%s", p);
	return 0;
}

/*
 * The names of the driver's table of knobs, in its order, into @names
 * (at most @max); their number, or -1 if the table cannot be read.
 */
static inline int gps_knob_names(char (*names)[GPS_KNOB_NAME_LEN], int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(GPS_SYSFS "knobs", "r");

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%47s", names[n]) == 1)
			n++;
	fclose(f);
	return n;
}

/* Save knob @name once; 0, or -1 if it cannot be read or no room. */
static inline int gps_knob_save(struct gps_knob_save *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return 0;
	if (s->n == GPS_KNOB_SAVE_MAX ||
	    gps_knob_value(name, s->val[s->n], sizeof(s->val[0])))
		return -1;
	snprintf(s->name[s->n++], GPS_KNOB_NAME_LEN, "%s", name);
	return 0;
}

/* Save every knob of the driver's table; 0 or -1. */
static inline int gps_knob_save_all(struct gps_knob_save *s)
{
	char names[GPS_KNOB_SAVE_MAX][GPS_KNOB_NAME_LEN];
	int i, n = gps_knob_names(names, GPS_KNOB_SAVE_MAX);

	if (n <= 0)
		return -1;
	for (i = 0; i < n; i++)
		if (gps_knob_save(s, names[i]))
			return -1;
	return 0;
}

/* Write back saved knob @i if it differs; 0 or -errno. */
static inline int gps_knob_restore_one(struct gps_knob_save *s, int i)
{
	char now[32];

	if (!gps_knob_value(s->name[i], now, sizeof(now)) &&
	    !strcmp(now, s->val[i]))
		return 0;
	return gps_set_knob_str(s->name[i], s->val[i]);
}

/*
 * Every saved knob back, in the table's order (any the table lacks
 * after, last saved first); 0 or the first -errno.  Forgets them.
 */
static inline int gps_knob_restore_saved(struct gps_knob_save *s)
{
	char names[GPS_KNOB_SAVE_MAX][GPS_KNOB_NAME_LEN];
	int n = gps_knob_names(names, GPS_KNOB_SAVE_MAX);
	int done[GPS_KNOB_SAVE_MAX] = { 0 };
	int i, t, ret, first = 0;

	for (t = 0; t < n; t++)
		for (i = 0; i < s->n; i++)
			if (!done[i] && !strcmp(s->name[i], names[t])) {
				ret = gps_knob_restore_one(s, i);
				first = first ?: ret;
				done[i] = 1;
			}
	for (i = s->n - 1; i >= 0; i--)
		if (!done[i]) {
			ret = gps_knob_restore_one(s, i);
			first = first ?: ret;
		}
	s->n = 0;
	return first;
}

/* The value saved for knob @name, or -1 if it was not saved. */
static inline long long gps_knob_saved(const struct gps_knob_save *s,
				       const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return strtoll(s->val[i], NULL, 0);
	return -1;
}

static inline int gps_set_policy(const char *policy)
{
	return gps_set_knob_str("track_policy", policy);
}

/*
 * The driver's history ring (CONFIG_GPS_DEBUG modules only): its file, a
 * command written to it ("HANDLE [GIDX]", "all", "clear", "on", "off"),
 * and what it prints under a filter.
 */
#define GPS_HISTORY	GPS_DEBUGFS "history"

static inline int gps_history_cmd(const char *cmd)
{
	int fd = open(GPS_HISTORY, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * The history lines of GPS page @gidx of allocation @handle (every page
 * for @gidx < 0), of its small page @sub (every one for @sub < 0), oldest
 * first, in a malloc()ed string, or NULL.  The filter is left set.
 */
static inline char *gps_history_read(uint64_t handle, long gidx, int sub)
{
	size_t len = 0, cap = 1 << 16;
	char cmd[64], *buf = malloc(cap), *more;
	ssize_t n;
	int fd;

	if (gidx < 0)
		snprintf(cmd, sizeof(cmd), "%llu", (unsigned long long)handle);
	else if (sub < 0)
		snprintf(cmd, sizeof(cmd), "%llu %ld",
			 (unsigned long long)handle, gidx);
	else
		snprintf(cmd, sizeof(cmd), "%llu %ld %d",
			 (unsigned long long)handle, gidx, sub);
	if (!buf || gps_history_cmd(cmd))
		goto err;
	fd = open(GPS_HISTORY, O_RDONLY);
	if (fd < 0)
		goto err;
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len > 4096)
			continue;
		more = realloc(buf, cap * 2);
		if (!more) {
			close(fd);
			goto err;
		}
		buf = more;
		cap *= 2;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
err:
	free(buf);
	return NULL;
}

#ifdef CPU_SET
/* The CPUs of NUMA node @node (its sysfs cpulist); 0 or -1. */
static inline int gps_node_cpus(int node, cpu_set_t *set)
{
	char path[128], buf[1024], *s, *tok;
	FILE *f;
	int n = 0;

	CPU_ZERO(set);
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
		 node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	for (tok = strtok_r(buf, ",\n", &s); tok; tok = strtok_r(NULL, ",\n", &s)) {
		int lo, hi, c;

		if (sscanf(tok, "%d-%d", &lo, &hi) != 2)
			hi = lo = atoi(tok);
		for (c = lo; c <= hi && c < CPU_SETSIZE; c++, n++)
			CPU_SET(c, set);
	}
	return n ? 0 : -1;
}
#endif

/* GPS_IOC_TRACK start or stop; 0 or -errno, the counters in @out. */
static inline int gps_track(int fd, uint32_t op, struct gps_track_args *out)
{
	struct gps_track_args t = { .op = op };
	int ret = ioctl(fd, GPS_IOC_TRACK, &t) ? -errno : 0;

	if (out)
		*out = t;
	return ret;
}

/* The track_policy in force ("read" or "touched"), or NULL. */
static inline const char *gps_policy(void)
{
	char buf[64] = "";
	FILE *f = fopen(GPS_SYSFS "track_policy", "r");

	if (!f)
		return NULL;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (strstr(buf, "[read]"))
		return "read";
	if (strstr(buf, "[touched]"))
		return "touched";
	return NULL;
}

/* A number from the environment (soak settings), or @def. */
static inline long gps_env_long(const char *name, long def)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : def;
}

/* xorshift64*: the next number of the sequence whose state is @state. */
static inline uint64_t rnd(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * The fixture the test files share.  A FIXTURE embeds struct gps_fixture
 * unnamed and as its first member, so that its tests write self->fd,
 * self->nr, self->b (tests/Makefile builds them with -fms-extensions),
 * and hands gps_fx(self) to the helpers below:
 *
 *	FIXTURE(advise) {
 *		struct gps_fixture;
 *		size_t ps;
 *	};
 *
 *	FIXTURE_SETUP(advise)
 *	{
 *		if (gps_fixture_setup(_metadata, gps_fx(self), 1,
 *				      gps_knobs_common))
 *			return;
 *		(what this file's tests need more)
 *	}
 *
 *	FIXTURE_TEARDOWN(advise)
 *	{
 *		gps_fixture_teardown(_metadata, gps_fx(self));
 *	}
 */
struct gps_fixture {
	int fd;				/* /dev/gps; -1 once skipped */
	int nr;				/* its devices */
	struct gps_knob_save knobs;	/* restored by the teardown */
	const char *policy;		/* track_policy, restored likewise */
	struct gps_usage start;		/* the driver's counters at setup */
	struct gps_buf b;		/* gps_fixture_alloc()'s allocation */
	int have_b;
};

/* @self's struct gps_fixture; the build fails unless it comes first. */
#define gps_fx(self)							\
	((struct gps_fixture *)(self) +					\
	 0 * sizeof(char[offsetof(__typeof__(*(self)), fd) ? -1 : 1]))

/* The knobs most tests change (the fixture saves every knob anyway). */
#define GPS_KNOBS_COMMON	"max_bytes", "page_size", "queue_watermark", \
				"queue_capacity", "block_size", \
				"harvest_interval_us"

static const char *const gps_knobs_common[] = { GPS_KNOBS_COMMON, NULL };

/*
 * Open /dev/gps and count its devices (the test is skipped without the
 * device or with fewer than @min_devices), save every knob of the
 * driver's table (the NULL-terminated @knobs, which may be NULL, names
 * those the test changes: each must be a knob) and the track_policy, and
 * note the driver's counters in fx->start.  Returns 0, or 1 if the test
 * is skipped: FIXTURE_SETUP returns then.
 */
static inline int gps_fixture_setup(struct __test_metadata *_metadata,
				    struct gps_fixture *fx, int min_devices,
				    const char *const *knobs)
{
	fx->fd = open(GPS_DEV, O_RDWR);
	if (fx->fd < 0)
		SKIP(return 1, "no " GPS_DEV);
	fx->nr = gps_nr_devices(fx->fd);
	ASSERT_GT(fx->nr, 0);
	if (fx->nr < min_devices) {
		close(fx->fd);
		fx->fd = -1;
		SKIP(return 1, "needs %d devices", min_devices);
	}
	ASSERT_EQ(0, gps_knob_save_all(&fx->knobs));
	for (; knobs && *knobs; knobs++)
		ASSERT_EQ(0, gps_knob_save(&fx->knobs, *knobs));
	/*
	 * The push thread harvests ahead with the link unlimited too, as
	 * it did before harvest_ahead: the tests of the thread, and the
	 * torture's races of the thread with fences, count on it.  The
	 * default (0) has its own test, queue.thread_waits_for_a_link.
	 */
	ASSERT_EQ(0, gps_knob_save(&fx->knobs, "harvest_ahead"));
	ASSERT_EQ(0, gps_set_knob("harvest_ahead", 1));
	fx->policy = gps_policy();
	ASSERT_NE(NULL, fx->policy);
	fx->start = gps_usage();
	return 0;
}

/*
 * Allocate fx->b, @size bytes of automatic GPS memory in pages of
 * @page_size with device 0 as home, and map the views of devices 0 to
 * @views - 1.  The teardown frees it.
 */
static inline void gps_fixture_alloc(struct __test_metadata *_metadata,
				     struct gps_fixture *fx, uint64_t size,
				     uint32_t page_size, int views)
{
	int d;

	ASSERT_EQ(0, gps_alloc(fx->fd, &fx->b, size, GPS_MEM_GPS, 0, 0,
			       page_size));
	fx->have_b = 1;
	for (d = 0; d < views; d++)
		ASSERT_NE(NULL, gps_map(fx->fd, &fx->b, d));
}

/* Free fx->b, restore the knobs and the policy, close the device. */
static inline void gps_fixture_teardown(struct __test_metadata *_metadata,
					struct gps_fixture *fx)
{
	if (fx->fd < 0)
		return;
	if (fx->have_b)
		EXPECT_EQ(0, gps_free(fx->fd, &fx->b));
	EXPECT_EQ(0, gps_knob_restore_saved(&fx->knobs));
	EXPECT_EQ(0, gps_set_policy(fx->policy));
	EXPECT_EQ(0, close(fx->fd));
}

/*
 * Every byte of the first @len bytes of fx->b is @v in every replica
 * (read through the driver); logs the first that is not.
 */
static inline int gps_fixture_all_are(struct __test_metadata *_metadata,
				      struct gps_fixture *fx, size_t len,
				      unsigned char v)
{
	unsigned char *buf = malloc(len);
	size_t i;
	int d, ok = 1;

	if (!buf)
		return 0;
	for (d = 0; ok && d < fx->nr; d++) {
		EXPECT_EQ(0, gps_read(fx->fd, &fx->b, d, 0, buf, len));
		for (i = 0; i < len; i++)
			if (buf[i] != v) {
				TH_LOG("device %d byte %zu: %u, not %u", d, i,
				       buf[i], v);
				ok = 0;
				break;
			}
	}
	free(buf);
	return ok;
}

#endif /* GPS_TEST_H */
