// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: /sys/kernel/gps
 *
 * Tunables beside read-only counters, as /sys/kernel/mm/ksm does, all
 * from one table in the manner of null_blk's configfs attributes, made
 * from the list of gps_knob_list.h: a knob names its field of struct
 * gps_knobs, its type, its default, its range and unit, an optional
 * check of the rules a range cannot say, and what a change must do
 * (GPS_KNOB_WAKE, GPS_KNOB_LINK_RESET, GPS_KNOB_QUEUE,
 * GPS_KNOB_QUIESCE).  One show prints any knob; one store parses with
 * kstrto* (a word for WORDS), checks the range (-EINVAL, old value
 * kept), then, under gps_knob_lock, applies the knob's check to a copy of
 * the knobs, reshapes the queues if the knob is part of their shape
 * (every queue drained first; -ENOMEM or -EINTR keep the old queues and
 * value), publishes the copy and does the side effects.  Only
 * CAP_SYS_ADMIN may change knobs.  The read-only file knobs prints the
 * table itself, one line per knob, for gpsctl and the tests.
 * Documentation/ABI/testing/sysfs-kernel-gps describes each file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/capability.h>
#include <linux/log2.h>
#include "gps_internal.h"
#include "gps_knob_flags.h"

enum gps_knob_type {
	GPS_KNOB_UINT,		/* unsigned int, kstrtouint() */
	GPS_KNOB_U64,		/* u64, kstrtou64() */
	GPS_KNOB_WORDS,		/* unsigned int, one of ->words */
};


struct gps_knobs gps_knobs;	/* each at its default: gps_knobs_init() */
DEFINE_MUTEX(gps_knob_lock);	/* serialises knob changes */

/**
 * struct gps_knob - one tunable of /sys/kernel/gps
 * @attr: the sysfs file, named after the field
 * @offset: of the field in struct gps_knobs
 * @type: how the field is stored and parsed
 * @def: its value at load
 * @min: smallest value accepted (numbers)
 * @max: largest value accepted (numbers)
 * @unit: of the value, or NULL
 * @rule: what the range cannot say, in words, or NULL
 * @words: the values of a GPS_KNOB_WORDS, by number; NULL-terminated
 * @flags: GPS_KNOB_* side effects of a change
 * @check: rules the range cannot say, applied under gps_knob_lock to
 *	a copy of every knob holding the new value; may also adjust other
 *	fields of the copy; returns 0 or -EINVAL
 */
struct gps_knob {
	struct kobj_attribute attr;
	size_t offset;
	enum gps_knob_type type;
	u64 def;
	u64 min;
	u64 max;
	const char *unit;
	const char *rule;
	const char * const *words;
	unsigned int flags;
	int (*check)(struct gps_knobs *new);
};

static ssize_t gps_knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf);
static ssize_t gps_knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count);

static int gps_check_page_size(struct gps_knobs *new)
{
	return gps_page_size_ok(new->page_size) ? 0 : -EINVAL;
}

static int gps_check_block_size(struct gps_knobs *new)
{
	return is_power_of_2(new->block_size) ? 0 : -EINVAL;
}

/* A new capacity brings the watermark along, one below it. */
static int gps_check_queue_capacity(struct gps_knobs *new)
{
	new->queue_watermark = max(new->queue_capacity - 1, 1U);
	return 0;
}

static int gps_check_queue_watermark(struct gps_knobs *new)
{
	return new->queue_watermark > new->queue_capacity ? -EINVAL : 0;
}

/* 1 KB/s .. 1 TB/s, or 0: beyond that the model means nothing. */
static int gps_check_link_bandwidth(struct gps_knobs *new)
{
	return new->link_bandwidth && new->link_bandwidth < 1000 ? -EINVAL : 0;
}

/* 0 (the whole GPS page) or a power of two from PAGE_SIZE to 2 MiB. */
static int gps_check_capture_bytes(struct gps_knobs *new)
{
	unsigned int c = new->capture_bytes;

	return !c || (is_power_of_2(c) && c >= PAGE_SIZE) ? 0 : -EINVAL;
}

static const char * const gps_track_policy_words[] = {
	[GPS_TRACK_POLICY_TOUCHED] = "touched",
	[GPS_TRACK_POLICY_READ] = "read",
	NULL
};

/* A char per knob: the table's size. */
struct gps_knob_count {
#define GPS_KNOB(_name, ...)	char _name
#include "gps_knob_list.h"
#undef GPS_KNOB
};

/* The list's rows, in its order; made by gps_knobs_init(). */
static struct gps_knob gps_knob_table[sizeof(struct gps_knob_count)];

static void *gps_knob_field(const struct gps_knob *k, struct gps_knobs *knobs)
{
	return (char *)knobs + k->offset;
}

static u64 gps_knob_get(const struct gps_knob *k, struct gps_knobs *knobs)
{
	void *p = gps_knob_field(k, knobs);

	return k->type == GPS_KNOB_U64 ? READ_ONCE(*(u64 *)p) :
					 READ_ONCE(*(unsigned int *)p);
}

static void gps_knob_set(const struct gps_knob *k, struct gps_knobs *knobs,
			 u64 val)
{
	void *p = gps_knob_field(k, knobs);

	if (k->type == GPS_KNOB_U64)
		WRITE_ONCE(*(u64 *)p, val);
	else
		WRITE_ONCE(*(unsigned int *)p, val);
}

/**
 * gps_knobs_init() - the table of knobs, and each knob at its default
 *
 * First thing at load: the devices are made with the knobs' values.
 */
void gps_knobs_init(void)
{
	struct gps_knob *k = gps_knob_table;
	int i;

#define GPS_KNOB(_name, _type, _def, _min, _max, _unit, _flags, _check,	\
		 _words, _rule)						\
	(*k++ = (struct gps_knob){					\
		.attr = {						\
			.attr = { .name = #_name, .mode = 0644 },	\
			.show = gps_knob_show,				\
			.store = gps_knob_store,			\
		},							\
		.offset = offsetof(struct gps_knobs, _name),		\
		.type = GPS_KNOB_##_type,				\
		.def = _def,						\
		.min = _min,						\
		.max = _max,						\
		.unit = _unit,						\
		.rule = _rule,						\
		.words = _words,					\
		.flags = _flags,					\
		.check = _check,					\
	})
#include "gps_knob_list.h"
#undef GPS_KNOB
	for (i = 0; i < ARRAY_SIZE(gps_knob_table); i++)
		gps_knob_set(&gps_knob_table[i], &gps_knobs,
			     gps_knob_table[i].def);
}

static ssize_t gps_knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	const struct gps_knob *k = container_of(attr, struct gps_knob, attr);
	u64 val = gps_knob_get(k, &gps_knobs);
	unsigned int i;
	int len = 0;

	if (k->type != GPS_KNOB_WORDS)
		return sysfs_emit(buf, "%llu\n", val);
	/* Every word, the current one in brackets: "[touched] read". */
	for (i = 0; k->words[i]; i++)
		len += sysfs_emit_at(buf, len, i == val ? "[%s]%s" : "%s%s",
				     k->words[i], k->words[i + 1] ? " " : "\n");
	return len;
}

/* The number (or the word's number) written; 0 or -EINVAL/-ERANGE. */
static int gps_knob_parse(const struct gps_knob *k, const char *buf, u64 *val)
{
	unsigned int u;
	int ret;

	switch (k->type) {
	case GPS_KNOB_UINT:
		ret = kstrtouint(buf, 0, &u);
		*val = u;
		return ret;
	case GPS_KNOB_U64:
		return kstrtou64(buf, 0, val);
	case GPS_KNOB_WORDS:
		ret = __sysfs_match_string(k->words, -1, buf);
		*val = ret;
		return ret < 0 ? -EINVAL : 0;
	}
	return -EINVAL;
}

static ssize_t gps_knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	const struct gps_knob *k = container_of(attr, struct gps_knob, attr);
	struct gps_knobs new;
	u64 val;
	int i, ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = gps_knob_parse(k, buf, &val);
	if (ret)
		return ret;
	if (k->type != GPS_KNOB_WORDS && (val < k->min || val > k->max))
		return -EINVAL;

	mutex_lock(&gps_knob_lock);
	new = gps_knobs;
	gps_knob_set(k, &new, val);
	ret = k->check ? k->check(&new) : 0;
	if (!ret && (k->flags & GPS_KNOB_QUEUE))
		ret = gps_queues_reconfigure(new.queue_capacity,
					     new.queue_watermark,
					     new.block_size);
	if (!ret) {
		/* Field by field: readers use READ_ONCE() without the lock. */
		for (i = 0; i < ARRAY_SIZE(gps_knob_table); i++)
			gps_knob_set(&gps_knob_table[i], &gps_knobs,
				     gps_knob_get(&gps_knob_table[i], &new));
		if (k->flags & GPS_KNOB_LINK_RESET)
			gps_link_reset();
	}
	mutex_unlock(&gps_knob_lock);
	if (ret)
		return ret;
	if (k->flags & GPS_KNOB_WAKE)
		gps_wake_all();
	if (k->flags & GPS_KNOB_QUIESCE)
		gps_threads_quiesce();
	return count;
}

/*
 * The file knobs: the table, one line per knob in its order,
 * "<name> <type> <min> <max> <default> <unit>[ <rule>]": type u32, u64
 * or word; min and max "-" for words, whose default is a word; unit "-"
 * when there is none; the rule, free text, runs to the end of the line.
 */
static ssize_t gps_knobs_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	static const char * const types[] = {
		[GPS_KNOB_UINT] = "u32",
		[GPS_KNOB_U64] = "u64",
		[GPS_KNOB_WORDS] = "word",
	};
	int i, len = 0;

	for (i = 0; i < ARRAY_SIZE(gps_knob_table); i++) {
		const struct gps_knob *k = &gps_knob_table[i];
		const char *unit = k->unit ?: "-";

		if (k->type == GPS_KNOB_WORDS)
			len += sysfs_emit_at(buf, len, "%s %s - - %s %s",
					     k->attr.attr.name, types[k->type],
					     k->words[k->def], unit);
		else
			len += sysfs_emit_at(buf, len,
					     "%s %s %llu %llu %llu %s",
					     k->attr.attr.name, types[k->type],
					     k->min, k->max, k->def, unit);
		len += sysfs_emit_at(buf, len, "%s%s\n", k->rule ? " " : "",
				     k->rule ?: "");
	}
	return len;
}

static struct kobj_attribute gps_knobs_attr = __ATTR(knobs, 0444,
						     gps_knobs_show, NULL);

/**
 * struct gps_counter - a read-only file of /sys/kernel/gps
 * @attr: the sysfs file
 * @count: an atomic counter of live state, or NULL
 * @value: else a number fixed while the module is loaded
 */
struct gps_counter {
	struct kobj_attribute attr;
	atomic64_t *count;
	const unsigned int *value;
};

static ssize_t gps_counter_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	const struct gps_counter *c = container_of(attr, struct gps_counter,
						   attr);

	if (c->count)
		return sysfs_emit(buf, "%lld\n", atomic64_read(c->count));
	return sysfs_emit(buf, "%u\n", *c->value);
}

#define GPS_COUNTER(_name, _count, _value)				\
	{								\
		.attr = __ATTR(_name, 0444, gps_counter_show, NULL),	\
		.count = _count,					\
		.value = _value,					\
	}

static const unsigned int gps_abi_version = GPS_ABI_VERSION;
/* See gps_protect_range(). */
static const unsigned int gps_protect_in_place =
	IS_ENABLED(CONFIG_MAPPING_DIRTY_HELPERS);

static struct gps_counter gps_counter_table[] = {
	GPS_COUNTER(abi_version, NULL, &gps_abi_version),
	GPS_COUNTER(nr_devices, NULL, &gps_nr_devs),
	GPS_COUNTER(protect_in_place, NULL, &gps_protect_in_place),
	GPS_COUNTER(nr_allocs, &gps_nr_allocs, NULL),
	GPS_COUNTER(replica_pages, &gps_replica_pages, NULL),
	GPS_COUNTER(twin_pages, &gps_twin_pages, NULL),
};

static struct attribute *gps_attrs[ARRAY_SIZE(gps_knob_table) + 1 +
				   ARRAY_SIZE(gps_counter_table) + 1];

static const struct attribute_group gps_attr_group = {
	.attrs = gps_attrs,
};

static struct kobject *gps_kobj;

int gps_sysfs_init(void)
{
	int i, n = 0, ret;

	for (i = 0; i < ARRAY_SIZE(gps_knob_table); i++)
		gps_attrs[n++] = &gps_knob_table[i].attr.attr;
	gps_attrs[n++] = &gps_knobs_attr.attr;
	for (i = 0; i < ARRAY_SIZE(gps_counter_table); i++)
		gps_attrs[n++] = &gps_counter_table[i].attr.attr;

	gps_kobj = kobject_create_and_add("gps", kernel_kobj);
	if (!gps_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(gps_kobj, &gps_attr_group);
	if (ret) {
		kobject_put(gps_kobj);
		gps_kobj = NULL;
	}
	return ret;
}

void gps_sysfs_exit(void)
{
	sysfs_remove_group(gps_kobj, &gps_attr_group);
	kobject_put(gps_kobj);
}
