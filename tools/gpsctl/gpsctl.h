/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpsctl: look at and tune gps.ko from one command.  Shared declarations
 * of its three files:
 *
 *   state.c   what the driver shows: /sys/kernel/gps (knobs, the table
 *             of their ranges, global counters), /sys/kernel/debug/gps
 *             (per-device counters, the traffic matrix, the subscriber
 *             histogram), GPS_IOC_DEVICE_INFO on /dev/gps (the devices);
 *             or what a program of the native engine publishes, laid
 *             out the same way (--pid)
 *   out.c     the two ways of printing: text tables and JSON
 *   gpsctl.c  the commands (show, set, traffic, subscribers, watch)
 *
 * Calls flow one way: gpsctl.c over state.c and out.c; those two never
 * call each other.
 */
#ifndef GPSCTL_H
#define GPSCTL_H

#include <stdint.h>
#include <stdio.h>

#define GPS_SYSFS_DIR	"/sys/kernel/gps"
#define GPS_DEBUGFS_DIR	"/sys/kernel/debug/gps"
#define GPS_DEV_PATH	"/dev/gps"

#define CTL_MAX_DEVS	64	/* GPS_MAX_DEVICES */
#define CTL_MAX_STATS	64	/* counters per device */
#define CTL_MAX_KNOBS	32
#define CTL_NAME_LEN	48

/* One device: what GPS_IOC_DEVICE_INFO says (or sysfs, without it). */
struct ctl_dev {
	int node;
	int cpus;
	uint64_t mem_total;	/* bytes */
	uint64_t mem_free;	/* bytes */
	uint64_t replica_pages;	/* PAGE_SIZE pages */
	int stats_id;		/* N of the counters' node<N>/: the node, or
				 * a native program's device */
};

/* One device's debugfs stats: its "name value" lines, in file order. */
struct ctl_stats {
	int n;
	char name[CTL_MAX_STATS][CTL_NAME_LEN];
	long long val[CTL_MAX_STATS];
};

enum ctl_knob_type {
	CTL_KNOB_NUM,		/* a number with a range */
	CTL_KNOB_WORD,		/* one of a list of words */
	CTL_KNOB_UNKNOWN,	/* a file gpsctl has no range for */
};

/* A knob as read now, with its line of the driver's table (knobs). */
struct ctl_knob {
	char name[CTL_NAME_LEN];
	enum ctl_knob_type type;
	uint64_t value;		/* CTL_KNOB_NUM */
	char word[CTL_NAME_LEN];/* CTL_KNOB_WORD: the current word */
	char words[128];	/* CTL_KNOB_WORD: every word, space separated */
	uint64_t min, max;	/* CTL_KNOB_NUM */
	char def[CTL_NAME_LEN];	/* the default, "" if unknown */
	char unit[16];		/* "" if none or unknown */
	char rule[128];		/* what the range cannot say, or "" */
};

/* One line of the driver's table, /sys/kernel/gps/knobs. */
struct ctl_knob_info {
	char name[CTL_NAME_LEN];
	int is_word;		/* a knob of words: no range */
	uint64_t min, max;
	char def[CTL_NAME_LEN];
	char unit[16];
	char rule[128];
};

/* The driver as a whole. */
struct ctl_state {
	int nr_devs;
	struct ctl_dev dev[CTL_MAX_DEVS];
	int nr_globals;		/* read-only files of /sys/kernel/gps */
	char global_name[CTL_MAX_KNOBS][CTL_NAME_LEN];
	long long global_val[CTL_MAX_KNOBS];
	int nr_knobs;
	struct ctl_knob knob[CTL_MAX_KNOBS];
	int table_err;		/* 0, or -errno: the table could not be read */
	int nr_info;
	struct ctl_knob_info info[CTL_MAX_KNOBS];
};

/* How a line of node<N>/stats adds up (core/gps_stats.h's kinds). */
enum ctl_stat_kind {
	CTL_STAT_COUNT,		/* cumulative: a rate, summed */
	CTL_STAT_LEVEL,		/* a current amount: no rate, summed */
	CTL_STAT_MAX,		/* a maximum or a capacity: no rate, no sum */
};

/* A running program of the native engine (gpsctl programs). */
struct ctl_program {
	int pid;
	char comm[32];
	int nr_devs;
};

/* state.c */
int ctl_use_pid(int pid);
int ctl_native(void);
int ctl_programs(struct ctl_program *p, int max, char *root, size_t len);
const char *ctl_sysfs_dir(void);
const char *ctl_debugfs_dir(void);
int ctl_loaded(void);
int ctl_read_state(struct ctl_state *st);
int ctl_read_stats(int node, struct ctl_stats *s);
long long ctl_stat(const struct ctl_stats *s, const char *name);
int ctl_read_traffic(const struct ctl_state *st, int src,
		     long long *blocks, long long *bytes);
int ctl_read_subscribers(long long *pages, int max);
enum ctl_stat_kind ctl_stat_kind(const char *name);
int ctl_knob_find(const struct ctl_state *st, const char *name);
int ctl_knob_write(const char *name, const char *value);

/* out.c: a JSON writer that places commas and (if pretty) indentation */
struct json {
	FILE *f;
	int pretty;
	int depth;
	int need_comma;
};

void json_begin(struct json *j, FILE *f, int pretty);
void json_obj(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_int(struct json *j, const char *key, long long v);
void json_uint(struct json *j, const char *key, uint64_t v);
void json_double(struct json *j, const char *key, double v);
void json_str(struct json *j, const char *key, const char *s);
void json_null(struct json *j, const char *key);
void json_end(struct json *j);

/* out.c: text tables; columns right-aligned, except those of @left */
struct table {
	int cols;
	unsigned long long left;	/* bit c: column c left-aligned */
	int rows;
	char **cell;		/* rows x cols strings */
};

void table_init(struct table *t, int cols);
void table_add(struct table *t, const char *const *cells);
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);
const char *fmt_bytes(char *buf, size_t len, uint64_t bytes);

#endif /* GPSCTL_H */
