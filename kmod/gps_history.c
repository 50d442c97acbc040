// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: history ring
 *
 * A ring of GPS_HIST_SIZE entries, one per gps_hist() call, of what the
 * driver did to which GPS page, for a test that found a store lost to
 * print with it (Documentation/reliability.rst, "Reading a lost store's
 * history").  A writer takes the next index from one atomic counter and
 * fills the entry at that index modulo the size; its seq field is zero
 * while it is being written and the index plus one once it is whole, so
 * that a reader skips an entry being written or written over.  No lock:
 * gps_hist() may be called under spinlocks, from any context.
 *
 * /sys/kernel/debug/gps/history prints the entries matching its filter,
 * oldest first, one line each, times in microseconds from the first line
 * printed.  Writing to it:
 *
 *  - "HANDLE GIDX": only entries of that GPS page of that allocation,
 *    and those that concern every page (fences, zaps of a range holding
 *    it, tracking changes and the allocation's free); "HANDLE" alone:
 *    every page of the allocation; "HANDLE GIDX SUB": of the GPS page's
 *    entries, those of every small page (harvests, subscription changes)
 *    and those of small page SUB (faults, diffs, queueing and pushes of
 *    it, captures and write-protections that took it);
 *  - "all": no filter;
 *  - "clear": forget every entry recorded so far;
 *  - "off" and "on": stop and resume recording, so that a test that found
 *    an anomaly can read what led to it before it is written over;
 *  - "mark N": an entry of every allocation holding N, which a test also
 *    notes in its own history, to line the two up.
 *
 * Built only with CONFIG_GPS_DEBUG.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include "gps_internal.h"
#include "gps_history.h"

/* 256K entries of 40 bytes: about a second of a torture round's work. */
#define GPS_HIST_SHIFT	18
#define GPS_HIST_SIZE	BIT(GPS_HIST_SHIFT)

struct gps_hist_entry {
	u64 ns;			/* local_clock() */
	u64 handle;		/* allocation, 0 for none */
	u32 seq;		/* index + 1 once written, 0 while being */
	u32 gidx;
	u32 extra;
	u16 cpu;
	u16 sub;
	u8 type;
	s8 dev;
	s8 other;
};

static struct gps_hist_entry *gps_hist_ring;
static atomic64_t gps_hist_head = ATOMIC64_INIT(0);	/* next index */
static atomic64_t gps_hist_from = ATOMIC64_INIT(0);	/* after "clear" */
static bool gps_hist_on = true;

/* The filter of reads: set by writes, taken by each open. */
static DEFINE_MUTEX(gps_hist_filter_lock);
static u64 gps_hist_handle;		/* 0: every entry */
static long gps_hist_gidx = -1;		/* -1: every page */
static int gps_hist_sub = -1;		/* -1: every small page */

static const char *const gps_hist_names[GPS_NR_HIST_TYPES] = {
	[GPS_H_FAULT] = "fault",
	[GPS_H_WFAULT] = "wfault",
	[GPS_H_CAPTURE] = "capture",
	[GPS_H_PROTECT] = "protect",
	[GPS_H_RETIRE] = "retire",
	[GPS_H_DIFF] = "diff",
	[GPS_H_HARVEST] = "harvested",
	[GPS_H_QINSERT] = "q-insert",
	[GPS_H_QMERGE] = "q-merge",
	[GPS_H_PUSH] = "push",
	[GPS_H_PUSH_NONE] = "push-none",
	[GPS_H_SUB] = "subscribe",
	[GPS_H_UNSUB] = "unsubscribe",
	[GPS_H_COLLAPSE] = "collapse",
	[GPS_H_ZAP] = "zap",
	[GPS_H_FENCE] = "fence",
	[GPS_H_FENCE_START] = "fence-dev",
	[GPS_H_FENCE_END] = "fence-done",
	[GPS_H_TRACK] = "track",
	[GPS_H_FREE] = "free",
	[GPS_H_MARK] = "mark",
};

/**
 * gps_hist() - record one event in the history ring
 * @type: what happened
 * @dev: the device that did it or whose replica it concerns, or -1
 * @other: a second device or a view, or flags (see enum gps_hist_type)
 * @a: the allocation, or NULL for an event of no allocation
 * @gidx: GPS page index
 * @sub: small page index in the GPS page
 * @extra: what else the type records
 */
void gps_hist(enum gps_hist_type type, int dev, int other,
	      const struct gps_alloc *a, unsigned long gidx, unsigned int sub,
	      u32 extra)
{
	struct gps_hist_entry *e;
	u64 idx;

	if (!gps_hist_ring || !READ_ONCE(gps_hist_on))
		return;
	idx = atomic64_inc_return(&gps_hist_head) - 1;
	e = &gps_hist_ring[idx & (GPS_HIST_SIZE - 1)];
	WRITE_ONCE(e->seq, 0);
	smp_wmb();	/* seq 0 before the fields: pairs with gps_hist_get() */
	e->ns = local_clock();
	e->handle = a ? a->handle : 0;
	e->gidx = gidx;
	e->extra = extra;
	e->cpu = raw_smp_processor_id();
	e->sub = sub;
	e->type = type;
	e->dev = dev;
	e->other = other;
	/* the fields before seq: pairs with gps_hist_get()'s acquire */
	smp_store_release(&e->seq, (u32)(idx + 1));
}

/**
 * gps_hist_bits() - record a bitmap of small pages, 32 to an entry
 * @type: what happened to them
 * @dev: as for gps_hist()
 * @other: as for gps_hist()
 * @a: the allocation
 * @gidx: GPS page index
 * @bits: the small pages, @nr bits
 * @nr: small pages per GPS page
 *
 * One entry per 32 small pages with one set at least: sub is the first
 * of the 32, extra their bits.
 */
void gps_hist_bits(enum gps_hist_type type, int dev, int other,
		   const struct gps_alloc *a, unsigned long gidx,
		   const unsigned long *bits, unsigned int nr)
{
	unsigned int i;
	u32 w;

	for (i = 0; i < nr; i += 32) {
		w = bits[i / BITS_PER_LONG] >> (i % BITS_PER_LONG);
		if (nr - i < 32)
			w &= BIT(nr - i) - 1;
		if (w)
			gps_hist(type, dev, other, a, gidx, i, w);
	}
}

/* Entry @idx into @out, if it is whole and not yet written over. */
static bool gps_hist_get(u64 idx, struct gps_hist_entry *out)
{
	struct gps_hist_entry *e = &gps_hist_ring[idx & (GPS_HIST_SIZE - 1)];
	u32 seq;

	/* seq before the fields: pairs with gps_hist()'s release */
	seq = smp_load_acquire(&e->seq);
	if (seq != (u32)(idx + 1))
		return false;
	*out = *e;
	smp_rmb();	/* the copy before the second look at seq */
	return READ_ONCE(e->seq) == seq;
}

/* What one open of the file prints. */
struct gps_hist_reader {
	u64 first, end;			/* indices [first, end) */
	u64 handle;
	long gidx;
	int sub;
	u64 pos;			/* of the entry shown next */
	u64 t0;				/* ns of the first entry printed */
	bool started;
	struct gps_hist_entry cur;
};

static bool gps_hist_match(const struct gps_hist_reader *rd,
			   const struct gps_hist_entry *e)
{
	if (!rd->handle || !e->handle)
		return true;	/* no filter, or of every allocation */
	if (e->handle != rd->handle)
		return false;
	if (rd->gidx < 0 || e->type == GPS_H_TRACK || e->type == GPS_H_FREE)
		return true;
	if (e->type == GPS_H_ZAP)
		return rd->gidx >= e->gidx &&
		       rd->gidx - e->gidx < e->extra;
	if (e->gidx != rd->gidx)
		return false;
	switch (e->type) {
	case GPS_H_FAULT:
	case GPS_H_WFAULT:
	case GPS_H_DIFF:
	case GPS_H_QINSERT:
	case GPS_H_QMERGE:
	case GPS_H_PUSH:
	case GPS_H_PUSH_NONE:
		return rd->sub < 0 || e->sub == rd->sub;
	case GPS_H_CAPTURE:
	case GPS_H_PROTECT:
	case GPS_H_RETIRE:
		/* @extra: a bitmap of the small pages from @sub */
		return rd->sub < 0 ||
		       (rd->sub >= e->sub && rd->sub - e->sub < 32 &&
			(e->extra & BIT(rd->sub - e->sub)));
	default:
		return true;
	}
}

static const char *const gps_hist_how[] = { "apply", "blend", "copy", "?" };

static void gps_hist_show_entry(struct seq_file *m,
				const struct gps_hist_entry *e)
{
	u32 x = e->extra;

	switch (e->type) {
	case GPS_H_FAULT:
		seq_printf(m, " view %d dev %d%s%s around %u", e->other,
			   e->dev, x & GPS_HF_WRITE ? " write" : "",
			   x & GPS_HF_TRACK ? " tracking" : "", x >> 16);
		break;
	case GPS_H_WFAULT:
		seq_printf(m, " view %d dev %d owner %u%s%s%s%s", e->other,
			   e->dev, x & 0xff,
			   x & GPS_HF_NEWTWIN ? " newtwin" : "",
			   x & GPS_HF_ONLY ? " only-copy" : "",
			   x & GPS_HF_RETRY ? " retry" : "",
			   x & GPS_HF_WIDE ? " wide" : "");
		break;
	case GPS_H_CAPTURE:
		seq_printf(m, " owner %d dev %d pages %u+%#x newtwins %u",
			   e->dev, e->other, e->sub, x & 0xffff, x >> 16);
		break;
	case GPS_H_PROTECT:
		seq_printf(m, " dev %d pages %u+%#x %s", e->dev, e->sub, x,
			   e->other ? "kept" : "protected");
		break;
	case GPS_H_RETIRE:
		seq_printf(m, " dev %d pages %u+%#x", e->dev, e->sub, x);
		break;
	case GPS_H_DIFF:
		seq_printf(m, " dev %d blocks %u twin %s", e->dev, x & 0xffff,
			   x & GPS_HF_NOTWIN ? "none" :
			   x & GPS_HF_KEEP ? "kept" : "freed");
		break;
	case GPS_H_HARVEST:
		seq_printf(m, " dev %d diffed %u changed %u%s%s%s", e->dev,
			   x & 0xffff, x >> 16,
			   e->other & GPS_HH_KEPT ? " kept" : "",
			   e->other & GPS_HH_STORED ? " stored" : "",
			   e->other & GPS_HH_HOT ? " hot" : "");
		break;
	case GPS_H_QINSERT:
	case GPS_H_QMERGE:
		seq_printf(m, " dev %d blocks %u", e->dev, x);
		break;
	case GPS_H_PUSH:
		seq_printf(m, " dev %d -> %d bytes %u-%u blocks %u %s%s%s from %s",
			   e->dev, e->other, ((x >> 8) & 0xff) * 64,
			   ((x >> 16) & 0xff) * 64, x >> 24,
			   gps_hist_how[x & 3],
			   x & GPS_HF_STILL ? " still" : "",
			   x & GPS_HF_RTWIN ? " +twin" : "",
			   x & GPS_HF_FROMTWIN ? "twin" : "page");
		break;
	case GPS_H_PUSH_NONE:
		seq_printf(m, " dev %d %s", e->dev,
			   x ? "no receiver" : "no source");
		break;
	case GPS_H_SUB:
		seq_printf(m, " dev %d from %d", e->dev, e->other);
		break;
	case GPS_H_UNSUB:
		seq_printf(m, " dev %d%s", e->dev, x ? " was dirty" : "");
		break;
	case GPS_H_COLLAPSE:
		seq_printf(m, " keep %d", e->dev);
		break;
	case GPS_H_ZAP:
		seq_printf(m, " gpages %u+%u", e->gidx, x);
		break;
	case GPS_H_FENCE:
		seq_printf(m, " named %#x owners %#x", x & 0xffff, x >> 16);
		break;
	case GPS_H_FENCE_START:
		seq_printf(m, " dev %d dirty %u%s", e->dev, x,
			   e->other ? " helped" : "");
		break;
	case GPS_H_FENCE_END:
		seq_printf(m, " dev %d", e->dev);
		break;
	case GPS_H_TRACK:
		seq_puts(m, x ? " start" : " stop");
		break;
	case GPS_H_MARK:
		seq_printf(m, " %u", x);
		break;
	default:
		break;
	}
}

static void *gps_hist_seq_start(struct seq_file *m, loff_t *pos)
{
	struct gps_hist_reader *rd = m->private;

	if (rd->first + *pos >= rd->end)
		return NULL;
	rd->pos = *pos;
	return rd;
}

static void *gps_hist_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	struct gps_hist_reader *rd = m->private;

	rd->pos = ++*pos;
	if (!(*pos & 1023))
		cond_resched();
	return rd->first + *pos < rd->end ? rd : NULL;
}

static void gps_hist_seq_stop(struct seq_file *m, void *v)
{
}

static int gps_hist_seq_show(struct seq_file *m, void *v)
{
	struct gps_hist_reader *rd = v;
	struct gps_hist_entry *e = &rd->cur;
	u64 ns;
	s64 d;

	if (!gps_hist_get(rd->first + rd->pos, e) || !gps_hist_match(rd, e) ||
	    e->type >= GPS_NR_HIST_TYPES)
		return 0;
	if (!rd->started) {
		rd->t0 = e->ns;
		rd->started = true;
	}
	/* local_clock() of another CPU may be a little behind */
	d = e->ns - rd->t0;
	ns = d < 0 ? -d : d;
	seq_printf(m, "%c%9llu.%03llu cpu%-2u %-11s h%llu g%u s%u",
		   d < 0 ? '-' : ' ', ns / 1000, ns % 1000, e->cpu,
		   gps_hist_names[e->type], e->handle, e->gidx, e->sub);
	gps_hist_show_entry(m, e);
	seq_putc(m, '\n');
	return 0;
}

static const struct seq_operations gps_hist_seq_ops = {
	.start = gps_hist_seq_start,
	.next = gps_hist_seq_next,
	.stop = gps_hist_seq_stop,
	.show = gps_hist_seq_show,
};

static int gps_hist_open(struct inode *inode, struct file *file)
{
	struct gps_hist_reader *rd;
	u64 head, from;

	rd = __seq_open_private(file, &gps_hist_seq_ops, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	head = atomic64_read(&gps_hist_head);
	from = atomic64_read(&gps_hist_from);
	rd->end = head;
	rd->first = max(from, head > GPS_HIST_SIZE ? head - GPS_HIST_SIZE : 0);
	mutex_lock(&gps_hist_filter_lock);
	rd->handle = gps_hist_handle;
	rd->gidx = gps_hist_gidx;
	rd->sub = gps_hist_sub;
	mutex_unlock(&gps_hist_filter_lock);
	return 0;
}

static ssize_t gps_hist_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	unsigned long long handle;
	char buf[64], *cmd;
	long gidx = -1;
	int n, sub = -1;
	u32 mark;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	cmd = strim(buf);
	if (!strcmp(cmd, "clear")) {
		atomic64_set(&gps_hist_from, atomic64_read(&gps_hist_head));
		return count;
	}
	if (sscanf(cmd, "mark %u", &mark) == 1) {
		gps_hist(GPS_H_MARK, -1, -1, NULL, 0, 0, mark);
		return count;
	}
	if (!strcmp(cmd, "on") || !strcmp(cmd, "off")) {
		WRITE_ONCE(gps_hist_on, cmd[1] == 'n');
		return count;
	}
	if (!strcmp(cmd, "all")) {
		handle = 0;
	} else {
		n = sscanf(cmd, "%llu %ld %d", &handle, &gidx, &sub);
		if (n < 1 || !handle || (n >= 2 && gidx < 0) ||
		    (n == 3 && sub < 0))
			return -EINVAL;
	}
	mutex_lock(&gps_hist_filter_lock);
	gps_hist_handle = handle;
	gps_hist_gidx = gidx;
	gps_hist_sub = sub;
	mutex_unlock(&gps_hist_filter_lock);
	return count;
}

static const struct file_operations gps_hist_fops = {
	.owner = THIS_MODULE,
	.open = gps_hist_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = gps_hist_write,
	.release = seq_release_private,
};

/**
 * gps_history_debugfs_init() - make the ring and its file
 * @root: /sys/kernel/debug/gps, removed recursively at exit
 *
 * Without memory for the ring nothing is recorded, and there is no file.
 */
void gps_history_debugfs_init(struct dentry *root)
{
	gps_hist_ring = vzalloc(array_size(GPS_HIST_SIZE,
					   sizeof(*gps_hist_ring)));
	if (!gps_hist_ring)
		return;
	debugfs_create_file("history", 0600, root, NULL, &gps_hist_fops);
}

/**
 * gps_history_free() - free the ring, once nothing can record any more
 *
 * Called at module exit after the devices' threads are stopped.
 */
void gps_history_free(void)
{
	vfree(gps_hist_ring);
	gps_hist_ring = NULL;
}
