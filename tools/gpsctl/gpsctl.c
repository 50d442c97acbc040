// SPDX-License-Identifier: GPL-2.0
/*
 * gpsctl: look at and tune gps.ko from one command (man/gpsctl.8,
 * Documentation/gpsctl.rst).
 *
 *   gpsctl [--json]                       devices, knobs, counters
 *   gpsctl [--json] set KNOB=VALUE...     change knobs
 *   gpsctl [--json] traffic               device x device bytes and blocks
 *   gpsctl [--json] subscribers           the subscriber histogram
 *   gpsctl [--json] watch [-i SECS] [-n COUNT]   rates, one row per device
 *   gpsctl [--json] programs              running programs of the native
 *                                         engine
 *   gpsctl --pid PID [--json] [show|watch]   one of them, as the driver
 *
 * Exit status: 0; 1 when the driver is not loaded, a file cannot be read,
 * a knob is unknown, a value is out of range or refused, or permission is
 * missing; 2 for a bad command line.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpsctl.h"

#define GPSCTL_VERSION	"0.3"

static int json;		/* --json */
static const char *prog = "gpsctl";

static void usage(FILE *f)
{
	fprintf(f,
"usage: gpsctl [--json] [show]\n"
"       gpsctl [--json] set KNOB=VALUE...\n"
"       gpsctl [--json] traffic\n"
"       gpsctl [--json] subscribers\n"
"       gpsctl [--json] watch [-i SECS] [-n COUNT]\n"
"       gpsctl [--json] programs\n"
"       gpsctl --pid PID [--json] [show | watch [-i SECS] [-n COUNT]]\n"
"       gpsctl --help | --version\n"
"\n"
"  show         devices (node, CPUs, memory, replica pages), knobs with\n"
"               their values and ranges, per-device counters\n"
"  set          write knobs of /sys/kernel/gps (root); all are checked\n"
"               before any is written\n"
"  traffic      bytes and blocks pushed, from device (row) to device\n"
"  subscribers  GPS pages by number of subscribers\n"
"  watch        rates per device every SECS (default 1) seconds, COUNT\n"
"               times (default: until interrupted)\n"
"  programs     running programs of the native engine (libgpsu without\n"
"               gps.ko): pid, name, devices\n"
"  --pid PID    show or watch native program PID's devices, knobs and\n"
"               counters instead of the driver's\n"
"  --json       JSON instead of text (watch: one object per line)\n");
}

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * The state, or exit 1 with the reason; without the driver's table of
 * knobs, a warning (once) and no ranges.
 */
static void load(struct ctl_state *st)
{
	static int warned;
	int ret;

	if (!ctl_loaded()) {
		err("gps.ko is not loaded (no %s); programs of the native "
		    "engine: gpsctl programs", ctl_sysfs_dir());
		exit(1);
	}
	ret = ctl_read_state(st);
	if (ret) {
		err("cannot read the driver's state: %s", strerror(-ret));
		exit(1);
	}
	if (st->table_err && !warned++)
		err("%s/knobs: %s: no ranges, defaults or units of the knobs "
		    "(a gps.ko older than gpsctl?); the driver checks values",
		    ctl_sysfs_dir(), st->table_err == -EPROTO ?
		    "not a table of knobs" : strerror(-st->table_err));
}

/* Why a debugfs file could not be read, once. */
static void debugfs_warn(int ret)
{
	if (ret == -EACCES || ret == -EPERM)
		err("counters: " GPS_DEBUGFS_DIR ": %s (they need root)",
		    strerror(-ret));
	else
		err("counters: " GPS_DEBUGFS_DIR ": %s (is debugfs mounted? "
		    "mount -t debugfs none /sys/kernel/debug)", strerror(-ret));
}

/* Counters that hold a current value or a maximum: no rate. */
static int is_gauge(const char *name)
{
	return ctl_stat_kind(name) != CTL_STAT_COUNT;
}

static void knob_range(const struct ctl_knob *k, char *buf, size_t len)
{
	if (k->type == CTL_KNOB_WORD)
		snprintf(buf, len, "%s", k->words);
	else if (k->type == CTL_KNOB_UNKNOWN)
		snprintf(buf, len, "?");
	else if (k->rule[0])
		snprintf(buf, len, "%" PRIu64 "-%" PRIu64 "; %s", k->min, k->max,
			 k->rule);
	else
		snprintf(buf, len, "%" PRIu64 "-%" PRIu64, k->min, k->max);
}

static void json_knob(struct json *j, const struct ctl_knob *k)
{
	char *words, *w, *save;

	json_obj(j, k->name);
	if (k->type == CTL_KNOB_WORD) {
		json_str(j, "value", k->word);
		if (k->def[0])
			json_str(j, "default", k->def);
		else
			json_null(j, "default");
		json_arr(j, "values");
		words = strdup(k->words);
		for (w = strtok_r(words, " ", &save); w;
		     w = strtok_r(NULL, " ", &save))
			json_str(j, NULL, w);
		free(words);
		json_arr_end(j);
	} else {
		json_uint(j, "value", k->value);
		if (k->type == CTL_KNOB_NUM) {
			json_uint(j, "min", k->min);
			json_uint(j, "max", k->max);
			json_uint(j, "default", strtoull(k->def, NULL, 10));
		} else {
			json_null(j, "min");
			json_null(j, "max");
			json_null(j, "default");
		}
		if (k->rule[0])
			json_str(j, "rule", k->rule);
		if (k->unit[0])
			json_str(j, "unit", k->unit);
	}
	json_obj_end(j);
}

static int cmd_show(void)
{
	static struct ctl_stats stats[CTL_MAX_DEVS];
	static struct ctl_state st;
	char b1[32], b2[32], b3[32], b4[32], b5[160];
	int d, i, ret = 0, have_stats = 1;
	struct table t;

	load(&st);
	for (d = 0; d < st.nr_devs && have_stats; d++) {
		ret = ctl_read_stats(st.dev[d].stats_id, &stats[d]);
		if (ret) {
			debugfs_warn(ret);
			have_stats = 0;
		}
	}

	if (json) {
		struct json j;

		json_begin(&j, stdout, 1);
		json_obj(&j, NULL);
		json_obj(&j, "counters");
		for (i = 0; i < st.nr_globals; i++)
			json_int(&j, st.global_name[i], st.global_val[i]);
		json_obj_end(&j);
		json_arr(&j, "devices");
		for (d = 0; d < st.nr_devs; d++) {
			json_obj(&j, NULL);
			json_int(&j, "device", d);
			json_int(&j, "node", st.dev[d].node);
			json_int(&j, "cpus", st.dev[d].cpus);
			json_uint(&j, "mem_total", st.dev[d].mem_total);
			json_uint(&j, "mem_free", st.dev[d].mem_free);
			json_uint(&j, "replica_pages", st.dev[d].replica_pages);
			if (have_stats) {
				json_obj(&j, "counters");
				for (i = 0; i < stats[d].n; i++)
					json_int(&j, stats[d].name[i],
						 stats[d].val[i]);
				json_obj_end(&j);
			} else {
				json_null(&j, "counters");
			}
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj(&j, "knobs");
		for (i = 0; i < st.nr_knobs; i++)
			json_knob(&j, &st.knob[i]);
		json_obj_end(&j);
		json_obj_end(&j);
		json_end(&j);
		return 0;
	}

	printf("%s:", ctl_native() ? "native engine" : "gps.ko");
	for (i = 0; i < st.nr_globals; i++)
		printf("%s %s %lld", i ? "," : "", st.global_name[i],
		       st.global_val[i]);
	printf("\n\n");

	table_init(&t, 6);
	table_add(&t, (const char *const[]){ "DEVICE", "NODE", "CPUS",
		  "MEMORY", "FREE", "REPLICA_PAGES" });
	for (d = 0; d < st.nr_devs; d++) {
		char dv[16], nd[16], cp[16];

		snprintf(dv, sizeof(dv), "%d", d);
		snprintf(nd, sizeof(nd), "%d", st.dev[d].node);
		snprintf(cp, sizeof(cp), "%d", st.dev[d].cpus);
		snprintf(b3, sizeof(b3), "%" PRIu64, st.dev[d].replica_pages);
		table_add(&t, (const char *const[]){ dv, nd, cp,
			  fmt_bytes(b1, sizeof(b1), st.dev[d].mem_total),
			  fmt_bytes(b2, sizeof(b2), st.dev[d].mem_free), b3 });
	}
	table_print(&t, stdout);
	table_free(&t);
	putchar('\n');

	table_init(&t, 5);
	t.left |= 1 << 3 | 1 << 4;
	table_add(&t, (const char *const[]){ "KNOB", "VALUE", "DEFAULT",
		  "UNIT", "RANGE" });
	for (i = 0; i < st.nr_knobs; i++) {
		const struct ctl_knob *k = &st.knob[i];

		if (k->type == CTL_KNOB_WORD)
			snprintf(b4, sizeof(b4), "%s", k->word);
		else
			snprintf(b4, sizeof(b4), "%" PRIu64, k->value);
		knob_range(k, b5, sizeof(b5));
		table_add(&t, (const char *const[]){ k->name, b4,
			  k->def[0] ? k->def : "?", k->unit, b5 });
	}
	table_print(&t, stdout);
	table_free(&t);

	if (!have_stats)
		return 0;
	putchar('\n');
	table_init(&t, st.nr_devs + 2);
	{
		const char *row[CTL_MAX_DEVS + 2];
		char cell[CTL_MAX_DEVS + 2][32];

		row[0] = "COUNTER";
		for (d = 0; d < st.nr_devs; d++) {
			snprintf(cell[d + 1], sizeof(cell[0]), "dev%d", d);
			row[d + 1] = cell[d + 1];
		}
		row[st.nr_devs + 1] = "total";
		table_add(&t, row);
		row[0] = "(node)";
		for (d = 0; d < st.nr_devs; d++) {
			snprintf(cell[d + 1], sizeof(cell[0]), "%d",
				 st.dev[d].node);
			row[d + 1] = cell[d + 1];
		}
		row[st.nr_devs + 1] = "";
		table_add(&t, row);
		for (i = 0; i < stats[0].n; i++) {
			long long sum = 0;

			row[0] = stats[0].name[i];
			for (d = 0; d < st.nr_devs; d++) {
				long long v = ctl_stat(&stats[d],
						       stats[0].name[i]);

				sum += v;
				snprintf(cell[d + 1], sizeof(cell[0]), "%lld",
					 v);
				row[d + 1] = cell[d + 1];
			}
			snprintf(cell[st.nr_devs + 1], sizeof(cell[0]), "%lld",
				 sum);
			row[st.nr_devs + 1] = ctl_stat_kind(stats[0].name[i]) ==
					      CTL_STAT_MAX ?
					      "-" : cell[st.nr_devs + 1];
			table_add(&t, row);
		}
	}
	table_print(&t, stdout);
	table_free(&t);
	return 0;
}

/* A number as the driver's kstrtou64(..., 0, ...) reads it; 0 or -1. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	return 0;
}

static int has_word(const char *words, const char *w)
{
	size_t n = strlen(w);
	const char *p = words;

	while ((p = strstr(p, w))) {
		if ((p == words || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return 1;
		p += n;
	}
	return 0;
}

static void knob_value_str(const struct ctl_knob *k, char *buf, size_t len)
{
	if (k->type == CTL_KNOB_WORD)
		snprintf(buf, len, "%s", k->word);
	else
		snprintf(buf, len, "%" PRIu64, k->value);
}

static int cmd_set(int argc, char **argv)
{
	static struct ctl_state before, after;
	char value[CTL_MAX_KNOBS][128];
	int idx[CTL_MAX_KNOBS];
	char b1[64], b2[64], range[160];
	int a, i, ret, changed = 0;
	struct json j;

	if (argc < 1) {
		err("set: no KNOB=VALUE given");
		usage(stderr);
		return 2;
	}
	if (argc > CTL_MAX_KNOBS) {
		err("set: at most %d knobs at once", CTL_MAX_KNOBS);
		return 2;
	}
	load(&before);
	/* every argument checked before anything is written */
	for (a = 0; a < argc; a++) {
		char *eq = strchr(argv[a], '=');
		const struct ctl_knob *k;
		uint64_t v;

		if (!eq || eq == argv[a]) {
			err("set: '%s': expected KNOB=VALUE", argv[a]);
			return 2;
		}
		*eq = '\0';
		snprintf(value[a], sizeof(value[a]), "%s", eq + 1);
		idx[a] = ctl_knob_find(&before, argv[a]);
		if (idx[a] < 0) {
			err("set: unknown knob '%s' (gpsctl lists the knobs)",
			    argv[a]);
			return 1;
		}
		k = &before.knob[idx[a]];
		knob_range(k, range, sizeof(range));
		if (k->type == CTL_KNOB_WORD) {
			if (!has_word(k->words, value[a])) {
				err("set: %s: '%s' is not one of: %s", k->name,
				    value[a], k->words);
				return 1;
			}
		} else if (parse_u64(value[a], &v)) {
			err("set: %s: '%s' is not a number (range %s)",
			    k->name, value[a], range);
			return 1;
		} else if (k->type == CTL_KNOB_NUM &&
			   (v < k->min || v > k->max)) {
			err("set: %s: %s is out of range (%s)", k->name,
			    value[a], range);
			return 1;
		} else {
			snprintf(value[a], sizeof(value[a]), "%" PRIu64, v);
		}
	}
	for (a = 0; a < argc; a++) {
		const struct ctl_knob *k = &before.knob[idx[a]];

		ret = ctl_knob_write(k->name, value[a]);
		if (!ret)
			continue;
		knob_range(k, range, sizeof(range));
		if (ret == -EACCES || ret == -EPERM)
			err("set: %s: %s: changing knobs needs root "
			    "(CAP_SYS_ADMIN)", k->name, strerror(-ret));
		else if (ret == -EINVAL)
			err("set: %s=%s refused by the driver (EINVAL): "
			    "range %s", k->name, value[a], range);
		else
			err("set: %s=%s: %s", k->name, value[a],
			    strerror(-ret));
		if (a)
			err("set: the knobs before %s were changed", k->name);
		return 1;
	}

	/* what changed, the knobs a write brought along included */
	load(&after);
	if (json) {
		json_begin(&j, stdout, 1);
		json_obj(&j, NULL);
		json_arr(&j, "changed");
	}
	for (i = 0; i < after.nr_knobs; i++) {
		const struct ctl_knob *k = &after.knob[i];
		int o = ctl_knob_find(&before, k->name);

		if (o < 0)
			continue;
		knob_value_str(&before.knob[o], b1, sizeof(b1));
		knob_value_str(k, b2, sizeof(b2));
		if (!strcmp(b1, b2))
			continue;
		changed++;
		if (!json) {
			printf("%s: %s -> %s\n", k->name, b1, b2);
			continue;
		}
		json_obj(&j, NULL);
		json_str(&j, "name", k->name);
		if (k->type == CTL_KNOB_WORD) {
			json_str(&j, "old", b1);
			json_str(&j, "new", b2);
		} else {
			json_uint(&j, "old", before.knob[o].value);
			json_uint(&j, "new", k->value);
		}
		json_obj_end(&j);
	}
	if (json) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else if (!changed) {
		printf("no change\n");
	}
	return 0;
}

static int cmd_traffic(void)
{
	static long long blocks[CTL_MAX_DEVS][CTL_MAX_DEVS];
	static long long bytes[CTL_MAX_DEVS][CTL_MAX_DEVS];
	static struct ctl_state st;
	const char *row[CTL_MAX_DEVS + 1];
	char cell[CTL_MAX_DEVS + 1][32];
	int s, d, m, ret;
	struct table t;

	load(&st);
	for (s = 0; s < st.nr_devs; s++) {
		ret = ctl_read_traffic(&st, s, blocks[s], bytes[s]);
		if (ret) {
			debugfs_warn(ret);
			return 1;
		}
	}
	if (json) {
		struct json j;

		json_begin(&j, stdout, 1);
		json_obj(&j, NULL);
		json_arr(&j, "devices");
		for (d = 0; d < st.nr_devs; d++) {
			json_obj(&j, NULL);
			json_int(&j, "device", d);
			json_int(&j, "node", st.dev[d].node);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		for (m = 0; m < 2; m++) {
			json_arr(&j, m ? "blocks" : "bytes");
			for (s = 0; s < st.nr_devs; s++) {
				json_arr(&j, NULL);
				for (d = 0; d < st.nr_devs; d++)
					json_int(&j, NULL,
						 m ? blocks[s][d] : bytes[s][d]);
				json_arr_end(&j);
			}
			json_arr_end(&j);
		}
		json_obj_end(&j);
		json_end(&j);
		return 0;
	}
	for (m = 0; m < 2; m++) {
		printf("%s pushed, from device (row) to device (column):\n",
		       m ? "blocks" : "bytes");
		table_init(&t, st.nr_devs + 1);
		row[0] = "";
		for (d = 0; d < st.nr_devs; d++) {
			snprintf(cell[d + 1], sizeof(cell[0]), "to %d", d);
			row[d + 1] = cell[d + 1];
		}
		table_add(&t, row);
		for (s = 0; s < st.nr_devs; s++) {
			snprintf(cell[0], sizeof(cell[0]), "from %d", s);
			row[0] = cell[0];
			for (d = 0; d < st.nr_devs; d++) {
				snprintf(cell[d + 1], sizeof(cell[0]), "%lld",
					 m ? blocks[s][d] : bytes[s][d]);
				row[d + 1] = cell[d + 1];
			}
			table_add(&t, row);
		}
		table_print(&t, stdout);
		table_free(&t);
		if (!m)
			putchar('\n');
	}
	return 0;
}

static int cmd_subscribers(void)
{
	static struct ctl_state st;
	long long pages[CTL_MAX_DEVS + 1], total = 0;
	char c1[16], c2[32], c3[16];
	int n, top;
	struct table t;

	load(&st);
	top = ctl_read_subscribers(pages, CTL_MAX_DEVS);
	if (top < 0) {
		debugfs_warn(top);
		return 1;
	}
	for (n = 1; n <= top; n++)
		total += pages[n];
	if (json) {
		struct json j;

		json_begin(&j, stdout, 1);
		json_obj(&j, NULL);
		json_int(&j, "pages", total);
		json_arr(&j, "histogram");
		for (n = 1; n <= top; n++) {
			json_obj(&j, NULL);
			json_int(&j, "subscribers", n);
			json_int(&j, "pages", pages[n]);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
		return 0;
	}
	table_init(&t, 3);
	table_add(&t, (const char *const[]){ "SUBSCRIBERS", "GPS_PAGES",
		  "SHARE" });
	for (n = 1; n <= top; n++) {
		snprintf(c1, sizeof(c1), "%d", n);
		snprintf(c2, sizeof(c2), "%lld", pages[n]);
		snprintf(c3, sizeof(c3), "%.1f%%",
			 total ? 100.0 * pages[n] / total : 0.0);
		table_add(&t, (const char *const[]){ c1, c2, c3 });
	}
	snprintf(c2, sizeof(c2), "%lld", total);
	table_add(&t, (const char *const[]){ "total", c2, "" });
	table_print(&t, stdout);
	table_free(&t);
	return 0;
}

/* The columns of watch's text rows: a rate (per second) or a gauge. */
static const struct {
	const char *head;
	const char *stat;
	double scale;		/* rate multiplied by */
} watch_cols[] = {
	{ "rfault/s", "read_faults", 1 },
	{ "wfault/s", "write_faults", 1 },
	{ "harvest/s", "pages_harvested", 1 },
	{ "queued/s", "blocks_queued", 1 },
	{ "merged/s", "blocks_merged", 1 },
	{ "pushed/s", "blocks_pushed", 1 },
	{ "KiB/s", "bytes_pushed", 1.0 / 1024 },
	{ "fence/s", "fences", 1 },
	{ "linkwait%", "link_wait_ns", 100e-9 },
	{ "queue", "queue_blocks", 0 },
	{ "dirty", "dirty_replicas", 0 },
};

#define NR_WATCH_COLS	(sizeof(watch_cols) / sizeof(watch_cols[0]))

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_all_stats(const struct ctl_state *st, struct ctl_stats *s)
{
	int d, ret;

	for (d = 0; d < st->nr_devs; d++) {
		ret = ctl_read_stats(st->dev[d].stats_id, &s[d]);
		if (ret)
			return ret;
	}
	return 0;
}

static void watch_header(void)
{
	size_t c;

	printf("%8s %3s", "time", "dev");
	for (c = 0; c < NR_WATCH_COLS; c++)
		printf(" %9s", watch_cols[c].head);
	putchar('\n');
}

/* argv[0] is "watch" */
static int cmd_watch(int argc, char **argv)
{
	static struct ctl_stats prev[CTL_MAX_DEVS], cur[CTL_MAX_DEVS];
	static struct ctl_state st;
	double interval = 1, t0, t1, dt;
	long count = -1, k;
	struct timespec next;
	int opt, d, i, ret, tty = isatty(STDOUT_FILENO);
	char *end;

	optind = 1;
	while ((opt = getopt(argc, argv, "+i:n:")) != -1) {
		switch (opt) {
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.01 && interval <= 86400)) {
				err("watch: -i %s: seconds from 0.01 to 86400",
				    optarg);
				return 2;
			}
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				err("watch: -n %s: a count from 1", optarg);
				return 2;
			}
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		err("watch: unexpected '%s'", argv[optind]);
		return 2;
	}
	load(&st);
	ret = read_all_stats(&st, prev);
	if (ret) {
		debugfs_warn(ret);
		return 1;
	}
	t0 = now();
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (k = 0; count < 0 || k < count; k++) {
		time_t wall;
		char hms[16];

		next.tv_sec += (time_t)interval;
		next.tv_nsec += (long)((interval - floor(interval)) * 1e9);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
		ret = read_all_stats(&st, cur);
		if (ret) {
			debugfs_warn(ret);
			return 1;
		}
		t1 = now();
		dt = t1 - t0;
		wall = time(NULL);
		strftime(hms, sizeof(hms), "%H:%M:%S", localtime(&wall));
		if (json) {
			struct json j;

			json_begin(&j, stdout, 0);
			json_obj(&j, NULL);
			json_int(&j, "time", (long long)wall);
			json_double(&j, "interval", dt);
			json_arr(&j, "devices");
			for (d = 0; d < st.nr_devs; d++) {
				json_obj(&j, NULL);
				json_int(&j, "device", d);
				json_int(&j, "node", st.dev[d].node);
				json_obj(&j, "rates");
				for (i = 0; i < cur[d].n; i++)
					if (!is_gauge(cur[d].name[i]))
						json_double(&j, cur[d].name[i],
							(cur[d].val[i] -
							 ctl_stat(&prev[d],
							  cur[d].name[i])) / dt);
				json_obj_end(&j);
				json_obj(&j, "current");
				for (i = 0; i < cur[d].n; i++)
					if (is_gauge(cur[d].name[i]))
						json_int(&j, cur[d].name[i],
							 cur[d].val[i]);
				json_obj_end(&j);
				json_obj_end(&j);
			}
			json_arr_end(&j);
			json_obj_end(&j);
			json_end(&j);
		} else {
			if (k == 0 || (tty && k % 20 == 0))
				watch_header();
			for (d = 0; d < st.nr_devs; d++) {
				size_t c;

				printf("%8s %3d", hms, d);
				for (c = 0; c < NR_WATCH_COLS; c++) {
					long long v = ctl_stat(&cur[d],
							watch_cols[c].stat);
					long long p = ctl_stat(&prev[d],
							watch_cols[c].stat);

					if (!watch_cols[c].scale)
						printf(" %9lld", v);
					else
						printf(" %9.1f", (v - p) / dt *
						       watch_cols[c].scale);
				}
				putchar('\n');
			}
			fflush(stdout);
		}
		memcpy(prev, cur, sizeof(prev));
		t0 = t1;
	}
	return 0;
}

/* The running native programs: pid, name, devices. */
static int cmd_programs(void)
{
	static struct ctl_program p[256];
	char root[256], pid[16], devs[16];
	int i, n = ctl_programs(p, 256, root, sizeof(root));
	struct table t;

	if (json) {
		struct json j;

		json_begin(&j, stdout, 1);
		json_obj(&j, NULL);
		json_str(&j, "directory", root);
		json_arr(&j, "programs");
		for (i = 0; i < n; i++) {
			json_obj(&j, NULL);
			json_int(&j, "pid", p[i].pid);
			json_str(&j, "name", p[i].comm);
			json_int(&j, "devices", p[i].nr_devs);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
		return 0;
	}
	if (!n) {
		printf("no program of the native engine is running (%s)\n",
		       root);
		return 0;
	}
	table_init(&t, 3);
	t.left = 2;
	table_add(&t, (const char *const[]){ "PID", "NAME", "DEVICES" });
	for (i = 0; i < n; i++) {
		snprintf(pid, sizeof(pid), "%d", p[i].pid);
		snprintf(devs, sizeof(devs), "%d", p[i].nr_devs);
		table_add(&t, (const char *const[]){ pid, p[i].comm, devs });
	}
	table_print(&t, stdout);
	table_free(&t);
	return 0;
}

int main(int argc, char **argv)
{
	char *args[argc + 1];
	const char *cmd;
	int i, n = 0;

	/* --json anywhere before a set's KNOB=VALUE list */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") ||
			   !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("gpsctl %s\n", GPSCTL_VERSION);
			return 0;
		} else if (!n && (!strcmp(argv[i], "--pid") ||
				  !strcmp(argv[i], "-p"))) {
			char *end;
			long pid = i + 1 < argc ?
				   strtol(argv[i + 1], &end, 10) : 0;

			if (i + 1 >= argc || *end || pid <= 0) {
				err("--pid: expected a process id");
				return 2;
			}
			if (ctl_use_pid((int)pid)) {
				err("no program of the native engine with pid %ld "
				    "(gpsctl programs lists them)", pid);
				return 1;
			}
			i++;
		} else {
			args[n++] = argv[i];
		}
	}
	args[n] = NULL;
	cmd = n ? args[0] : "show";
	if (ctl_native() && strcmp(cmd, "show") && strcmp(cmd, "watch")) {
		err("--pid: %s: %s", cmd, !strcmp(cmd, "set") ?
		    "a native program's knobs are its own (gpsSetKnob in the "
		    "program, or GPSU_KNOB_<name> in its environment)" :
		    "not kept by the native engine (show or watch)");
		return 1;
	}
	if (!strcmp(cmd, "programs") && n == 1)
		return cmd_programs();
	if (!strcmp(cmd, "show") && n <= 1)
		return cmd_show();
	if (!strcmp(cmd, "set"))
		return cmd_set(n - 1, args + 1);
	if (!strcmp(cmd, "traffic") && n == 1)
		return cmd_traffic();
	if (!strcmp(cmd, "subscribers") && n == 1)
		return cmd_subscribers();
	if (!strcmp(cmd, "watch"))
		return cmd_watch(n, args);
	if (!strcmp(cmd, "help") && n == 1) {
		usage(stdout);
		return 0;
	}
	if (cmd[0] == '-')
		err("unknown option '%s'", cmd);
	else if (n > 1 && (!strcmp(cmd, "show") || !strcmp(cmd, "traffic") ||
			   !strcmp(cmd, "subscribers")))
		err("%s: unexpected '%s'", cmd, args[1]);
	else
		err("unknown command '%s'", cmd);
	usage(stderr);
	return 2;
}
