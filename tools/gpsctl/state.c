// SPDX-License-Identifier: GPL-2.0
/*
 * What gps.ko shows, read the way Documentation/ABI/testing/ says:
 *
 *   /sys/kernel/gps/<knob>          tunables (0644) beside read-only
 *                                   counters (0444); track_policy prints
 *                                   its words, the current one in [ ]
 *   /sys/kernel/gps/knobs           the driver's table of its knobs:
 *                                   "<name> <type> <min> <max> <default>
 *                                   <unit>[ <rule>]" lines
 *   /sys/kernel/debug/gps/node<N>/  stats ("name value" lines) and
 *                                   traffic ("<node> <blocks> <bytes>",
 *                                   one line per receiving device)
 *   /sys/kernel/debug/gps/subscribers  "<n> <pages>" lines
 *   /dev/gps, GPS_IOC_DEVICE_INFO   node, CPUs, memory, replica pages of
 *                                   each device
 *
 * Ranges, defaults and units come from the driver's table, nowhere else:
 * a driver without one (older than gpsctl) still has its knobs shown and
 * set, with no range (st->table_err says why), and the driver's own
 * check stays the authority (a write out of its range fails with EINVAL
 * whatever gpsctl believed).  How each debugfs counter adds up comes
 * from the driver's list of them, core/gps_stats.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/gps.h>

#include "gpsctl.h"
#include "gps_stats.h"

/* A line this gpsctl does not know counts as cumulative. */
enum ctl_stat_kind ctl_stat_kind(const char *name)
{
#define GPS_STAT(_name, _kind)						\
	if (!strcmp(name, #_name))					\
		return CTL_STAT_##_kind
#define GPS_STATE(_name, _value, _kind)	GPS_STAT(_name, _kind)
#include "gps_stats.h"
#undef GPS_STATE
#undef GPS_STAT
	return CTL_STAT_COUNT;
}

/* A native program's files (ctl_use_pid); "" for the driver's. */
static char ctl_pid_dir[100];	/* "" when gpsctl looks at the driver */
static char ctl_pid_sys[110], ctl_pid_debug[110];

/* /sys/kernel/gps, or $GPSCTL_SYSFS (a copy of it, for tests). */
const char *ctl_sysfs_dir(void)
{
	const char *dir = getenv("GPSCTL_SYSFS");

	if (ctl_native())
		return ctl_pid_sys;
	return dir && *dir ? dir : GPS_SYSFS_DIR;
}

const char *ctl_debugfs_dir(void)
{
	return ctl_native() ? ctl_pid_debug : GPS_DEBUGFS_DIR;
}

int ctl_loaded(void)
{
	struct stat sb;

	return !stat(ctl_sysfs_dir(), &sb) && S_ISDIR(sb.st_mode);
}

/* A file's first line, newline stripped; 0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

/*
 * A program of the native engine (libgpsu's engine_user_knobs.c)
 * publishes its knobs and counters in <root>/<pid>/: sys/ as
 * /sys/kernel/gps, debug/node<device>/stats as debugfs, and devices
 * ("<device> <node> <cpus> <mem_total> <mem_free> <replica_pages>"
 * lines). <root> as the library finds it: $GPSU_STATS_DIR, else
 * $XDG_RUNTIME_DIR/gps, else /tmp/gps-<uid>.
 */

static void native_root(char *buf, size_t len)
{
	const char *e = getenv("GPSU_STATS_DIR");
	const char *x = getenv("XDG_RUNTIME_DIR");

	if (e && *e)
		snprintf(buf, len, "%s", e);
	else if (x && *x)
		snprintf(buf, len, "%s/gps", x);
	else
		snprintf(buf, len, "/tmp/gps-%u", (unsigned int)getuid());
}

/* A live process that publishes: its directory and /proc/<pid>. */
static int native_alive(const char *root, int pid)
{
	char path[400];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &sb))
		return 0;
	snprintf(path, sizeof(path), "%s/%d/sys/nr_devices", root, pid);
	return !stat(path, &sb);
}

/* Look at native program @pid from now on; 0 or -ESRCH. */
int ctl_use_pid(int pid)
{
	char root[80];

	native_root(root, sizeof(root));
	if (pid <= 0 || !native_alive(root, pid))
		return -ESRCH;
	snprintf(ctl_pid_dir, sizeof(ctl_pid_dir), "%s/%d", root, pid);
	snprintf(ctl_pid_sys, sizeof(ctl_pid_sys), "%s/sys", ctl_pid_dir);
	snprintf(ctl_pid_debug, sizeof(ctl_pid_debug), "%s/debug",
		 ctl_pid_dir);
	return 0;
}

int ctl_native(void)
{
	return ctl_pid_dir[0] != '\0';
}

/* The running native programs into @p, their directory into @root. */
int ctl_programs(struct ctl_program *p, int max, char *root, size_t len)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	native_root(root, len);
	d = opendir(root);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char path[400], buf[64];
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || !native_alive(root, (int)pid))
			continue;
		p[n].pid = (int)pid;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		if (read_line(path, p[n].comm, sizeof(p[n].comm)))
			snprintf(p[n].comm, sizeof(p[n].comm), "?");
		snprintf(path, sizeof(path), "%s/%ld/sys/nr_devices", root,
			 pid);
		p[n].nr_devs = read_line(path, buf, sizeof(buf)) ? 0 :
			       atoi(buf);
		n++;
	}
	closedir(d);
	return n;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A number of the table; 0 or -1. */
static int table_num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end ? -1 : 0;
}

/* The driver's table of its knobs into st->info; 0 or -errno. */
static int read_table(struct ctl_state *st)
{
	char path[256], line[512], f[3][CTL_NAME_LEN];
	struct ctl_knob_info *in;
	FILE *fp;
	int n, ret = 0;

	st->nr_info = 0;
	snprintf(path, sizeof(path), "%s/knobs", ctl_sysfs_dir());
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (st->nr_info == CTL_MAX_KNOBS)
			break;
		in = &st->info[st->nr_info];
		memset(in, 0, sizeof(*in));
		n = 0;
		if (sscanf(line, "%47s %47s %47s %47s %47s %15s %n", in->name,
			   f[0], f[1], f[2], in->def, in->unit, &n) < 6 ||
		    !n) {
			ret = -EPROTO;
			break;
		}
		snprintf(in->rule, sizeof(in->rule), "%s", line + n);
		if (!strcmp(in->unit, "-"))
			in->unit[0] = '\0';
		if (!strcmp(f[0], "word")) {
			in->is_word = 1;
		} else if (table_num(f[1], &in->min) ||
			   table_num(f[2], &in->max)) {
			ret = -EPROTO;
			break;
		}
		st->nr_info++;
	}
	fclose(fp);
	return ret;
}

static const struct ctl_knob_info *knob_info(const struct ctl_state *st,
					     const char *name)
{
	int i;

	for (i = 0; i < st->nr_info; i++)
		if (!strcmp(st->info[i].name, name))
			return &st->info[i];
	return NULL;
}

/* The knob @name as its file holds it, described by the table. */
static int read_knob(const struct ctl_state *st, const char *name,
		     struct ctl_knob *k)
{
	const struct ctl_knob_info *info = knob_info(st, name);
	char path[256], buf[256], *end, *p;
	int ret;

	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
	snprintf(path, sizeof(path), "%s/%s", ctl_sysfs_dir(), name);
	ret = read_line(path, buf, sizeof(buf));
	if (ret)
		return ret;
	if (info) {
		snprintf(k->def, sizeof(k->def), "%s", info->def);
		snprintf(k->unit, sizeof(k->unit), "%s", info->unit);
		snprintf(k->rule, sizeof(k->rule), "%s", info->rule);
	}
	if (strchr(buf, '[')) {
		/* "touched [read]": the words, the current one bracketed */
		k->type = CTL_KNOB_WORD;
		for (p = strtok(buf, " "); p; p = strtok(NULL, " ")) {
			size_t n = strlen(k->words);

			if (*p == '[') {
				p++;
				p[strcspn(p, "]")] = '\0';
				snprintf(k->word, sizeof(k->word), "%s", p);
			}
			snprintf(k->words + n, sizeof(k->words) - n, "%s%s",
				 n ? " " : "", p);
		}
		return 0;
	}
	errno = 0;
	k->value = strtoull(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	if (!info || info->is_word) {
		k->type = CTL_KNOB_UNKNOWN;
		return 0;
	}
	k->type = CTL_KNOB_NUM;
	k->min = info->min;
	k->max = info->max;
	return 0;
}

/*
 * Knobs (writable files) in the table's order, then any the table does
 * not list, by name; read-only files but the table are the global
 * counters, by name.
 */
static int read_sysfs(struct ctl_state *st)
{
	char *names[2 * CTL_MAX_KNOBS], path[256];
	int n = 0, i, t, ret = 0;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	st->table_err = read_table(st);
	d = opendir(ctl_sysfs_dir());
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < 2 * CTL_MAX_KNOBS)
		if (de->d_name[0] != '.' && strcmp(de->d_name, "knobs"))
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);

	st->nr_knobs = 0;
	st->nr_globals = 0;
	for (t = 0; t < st->nr_info; t++)
		for (i = 0; i < n; i++)
			if (names[i] && !strcmp(names[i], st->info[t].name) &&
			    st->nr_knobs < CTL_MAX_KNOBS) {
				ret = read_knob(st, names[i],
						&st->knob[st->nr_knobs]);
				if (ret)
					goto out;
				st->nr_knobs++;
				free(names[i]);
				names[i] = NULL;
			}
	for (i = 0; i < n; i++) {
		char buf[64];

		if (!names[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", ctl_sysfs_dir(),
			 names[i]);
		if (stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		if (sb.st_mode & 0222) {
			if (st->nr_knobs == CTL_MAX_KNOBS)
				continue;
			ret = read_knob(st, names[i],
					&st->knob[st->nr_knobs]);
			if (ret)
				goto out;
			st->nr_knobs++;
		} else if (st->nr_globals < CTL_MAX_KNOBS) {
			ret = read_line(path, buf, sizeof(buf));
			if (ret)
				goto out;
			snprintf(st->global_name[st->nr_globals], CTL_NAME_LEN,
				 "%s", names[i]);
			st->global_val[st->nr_globals++] = strtoll(buf, NULL, 0);
		}
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	return ret;
}

static long long global(const struct ctl_state *st, const char *name)
{
	int i;

	for (i = 0; i < st->nr_globals; i++)
		if (!strcmp(st->global_name[i], name))
			return st->global_val[i];
	return -1;
}

/* The value of @key in a node's meminfo ("Node 0 MemTotal: 524288 kB"). */
static uint64_t node_meminfo(int node, const char *key)
{
	char path[128], line[256], *p;
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, key);
		if (p && p[strlen(key)] == ':') {
			kb = strtoull(p + strlen(key) + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

/* The number of CPUs of a cpulist such as "0-3,8". */
static int cpulist_count(const char *s)
{
	int n = 0, a, b;

	while (*s) {
		char *end;

		a = strtol(s, &end, 10);
		if (end == s)
			break;
		b = a;
		s = end;
		if (*s == '-')
			b = strtol(s + 1, (char **)&s, 10);
		n += b - a + 1;
		if (*s == ',')
			s++;
		else
			break;
	}
	return n;
}

/*
 * Without /dev/gps (not openable): device d is the d-th online node, as
 * the driver numbers them; memory and CPUs from the node's sysfs, replica
 * pages from debugfs (0 when it cannot be read).
 */
static int read_devs_sysfs(struct ctl_state *st)
{
	char buf[256], path[128];
	struct ctl_stats s;
	int d = 0, node, a, b;
	char *p = buf;

	if (read_line("/sys/devices/system/node/online", buf, sizeof(buf)))
		return -ENOENT;
	while (*p && d < st->nr_devs) {
		a = strtol(p, &p, 10);
		b = a;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (node = a; node <= b && d < st->nr_devs; node++, d++) {
			struct ctl_dev *dev = &st->dev[d];
			char cpus[256] = "";

			dev->node = node;
			dev->stats_id = node;
			snprintf(path, sizeof(path),
				 "/sys/devices/system/node/node%d/cpulist",
				 node);
			read_line(path, cpus, sizeof(cpus));
			dev->cpus = cpulist_count(cpus);
			dev->mem_total = node_meminfo(node, "MemTotal");
			dev->mem_free = node_meminfo(node, "MemFree");
			dev->replica_pages = 0;
			if (!ctl_read_stats(node, &s) &&
			    ctl_stat(&s, "replica_pages") >= 0)
				dev->replica_pages = ctl_stat(&s,
							      "replica_pages");
		}
		if (*p == ',')
			p++;
		else
			break;
	}
	return d == st->nr_devs ? 0 : -ENOENT;
}

/* A native program's devices file. */
static int read_devs_native(struct ctl_state *st)
{
	unsigned long long total, avail, pages;
	int d, node, cpus, n = 0;
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/devices", ctl_pid_dir);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (n < st->nr_devs &&
	       fscanf(f, "%d %d %d %llu %llu %llu", &d, &node, &cpus, &total,
		      &avail, &pages) == 6 && d == n) {
		st->dev[n].node = node;
		st->dev[n].cpus = cpus;
		st->dev[n].mem_total = total;
		st->dev[n].mem_free = avail;
		st->dev[n].replica_pages = pages;
		st->dev[n].stats_id = d;
		n++;
	}
	fclose(f);
	return n == st->nr_devs ? 0 : -EPROTO;
}

static int read_devs(struct ctl_state *st)
{
	int fd, d;

	if (ctl_native())
		return read_devs_native(st);
	fd = open(GPS_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return read_devs_sysfs(st);
	for (d = 0; d < st->nr_devs; d++) {
		struct gps_device_args a = { .device = d };

		if (ioctl(fd, GPS_IOC_DEVICE_INFO, &a)) {
			close(fd);
			return read_devs_sysfs(st);
		}
		st->dev[d].node = a.node;
		st->dev[d].stats_id = a.node;
		st->dev[d].cpus = a.nr_cpus;
		st->dev[d].mem_total = a.mem_total;
		st->dev[d].mem_free = a.mem_free;
		st->dev[d].replica_pages = a.replica_pages;
	}
	close(fd);
	return 0;
}

int ctl_read_state(struct ctl_state *st)
{
	long long n;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = read_sysfs(st);
	if (ret)
		return ret;
	n = global(st, "nr_devices");
	if (n < 1 || n > CTL_MAX_DEVS)
		return -EINVAL;
	st->nr_devs = n;
	return read_devs(st);
}

int ctl_read_stats(int node, struct ctl_stats *s)
{
	char path[128], name[CTL_NAME_LEN];
	long long v;
	FILE *f;

	s->n = 0;
	snprintf(path, sizeof(path), "%s/node%d/stats", ctl_debugfs_dir(),
		 node);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (s->n < CTL_MAX_STATS && fscanf(f, "%47s %lld", name, &v) == 2) {
		snprintf(s->name[s->n], CTL_NAME_LEN, "%s", name);
		s->val[s->n++] = v;
	}
	fclose(f);
	return s->n ? 0 : -ENODATA;
}

long long ctl_stat(const struct ctl_stats *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return s->val[i];
	return -1;
}

/* Row @src of the traffic matrix: blocks[d], bytes[d] for every device. */
int ctl_read_traffic(const struct ctl_state *st, int src, long long *blocks,
		     long long *bytes)
{
	char path[128];
	long long bl, by;
	int node, d, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/node%d/traffic", ctl_debugfs_dir(),
		 st->dev[src].stats_id);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	for (d = 0; d < st->nr_devs; d++)
		blocks[d] = bytes[d] = 0;
	while (fscanf(f, "%d %lld %lld", &node, &bl, &by) == 3)
		for (d = 0; d < st->nr_devs; d++)
			if (st->dev[d].node == node) {
				blocks[d] = bl;
				bytes[d] = by;
				found++;
			}
	fclose(f);
	return found ? 0 : -ENODATA;
}

/* pages[n] = GPS pages with n subscribers, n = 1..max; the largest n. */
int ctl_read_subscribers(long long *pages, int max)
{
	char path[400];
	long long p;
	int n, top = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/subscribers", ctl_debugfs_dir());
	f = fopen(path, "r");
	if (!f)
		return -errno;
	for (n = 0; n <= max; n++)
		pages[n] = 0;
	while (fscanf(f, "%d %lld", &n, &p) == 2)
		if (n >= 1 && n <= max) {
			pages[n] = p;
			if (n > top)
				top = n;
		}
	fclose(f);
	return top ? top : -ENODATA;
}

int ctl_knob_find(const struct ctl_state *st, const char *name)
{
	int i;

	for (i = 0; i < st->nr_knobs; i++)
		if (!strcmp(st->knob[i].name, name))
			return i;
	return -1;
}

/* Write @value (with a newline) to knob @name: 0 or -errno. */
int ctl_knob_write(const char *name, const char *value)
{
	char path[256], buf[128];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", ctl_sysfs_dir(), name);
	n = snprintf(buf, sizeof(buf), "%s\n", value);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n)
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}
