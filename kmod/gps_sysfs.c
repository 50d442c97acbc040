// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: /sys/kernel/gps
 *
 * Tunables beside read-only counters, as /sys/kernel/mm/ksm does.  A
 * store parses with kstrto*, checks the range (-EINVAL, old value kept)
 * and sets the knob; knobs the push threads act on wake them.  The queue
 * shape (capacity, watermark, block size) changes under gps_knob_lock
 * and drains every queue first.  Only CAP_SYS_ADMIN may change knobs.  Documentation/ABI/testing/
 * sysfs-kernel-gps describes each file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/capability.h>
#include <linux/log2.h>
#include "gps_internal.h"

static struct kobject *gps_kobj;

#define GPS_ATTR(_name) \
	static struct kobj_attribute _name##_attr = __ATTR_RW(_name)
#define GPS_ATTR_RO(_name) \
	static struct kobj_attribute _name##_attr = __ATTR_RO(_name)

static int gps_parse_uint(const char *buf, unsigned int min, unsigned int max,
			  unsigned int *val)
{
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = kstrtouint(buf, 0, val);
	if (ret)
		return ret;
	return *val < min || *val > max ? -EINVAL : 0;
}

static int gps_parse_u64(const char *buf, u64 min, u64 max, u64 *val)
{
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = kstrtou64(buf, 0, val);
	if (ret)
		return ret;
	return *val < min || *val > max ? -EINVAL : 0;
}

static ssize_t page_size_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.page_size));
}

static ssize_t page_size_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	unsigned int val;
	int ret = gps_parse_uint(buf, GPS_PAGE_4K, GPS_PAGE_2M, &val);

	if (ret)
		return ret;
	if (val != GPS_PAGE_4K && val != GPS_PAGE_64K && val != GPS_PAGE_2M)
		return -EINVAL;
	WRITE_ONCE(gps_knobs.page_size, val);
	return count;
}
GPS_ATTR(page_size);

/* The queue shape: capacity, watermark and block size change together. */
static ssize_t gps_set_queue(const char *buf, size_t count, int which)
{
	unsigned int cap, wm, bs, val;
	int ret;

	switch (which) {
	case 0:
		ret = gps_parse_uint(buf, 1, 65536, &val);
		break;
	case 1:
		ret = gps_parse_uint(buf, 64, PAGE_SIZE, &val);
		if (!ret && !is_power_of_2(val))
			ret = -EINVAL;
		break;
	default:
		ret = gps_parse_uint(buf, 1, 65536, &val);
		break;
	}
	if (ret)
		return ret;

	mutex_lock(&gps_knob_lock);
	cap = gps_knobs.queue_capacity;
	wm = gps_knobs.queue_watermark;
	bs = gps_knobs.block_size;
	switch (which) {
	case 0:		/* capacity: the watermark follows, one below */
		cap = val;
		wm = max(cap - 1, 1U);
		break;
	case 1:
		bs = val;
		break;
	default:
		if (val > cap) {
			ret = -EINVAL;
			goto out;
		}
		wm = val;
		break;
	}
	ret = gps_queues_reconfigure(cap, wm, bs);
	if (!ret) {
		gps_knobs.queue_capacity = cap;
		gps_knobs.queue_watermark = wm;
		gps_knobs.block_size = bs;
	}
out:
	mutex_unlock(&gps_knob_lock);
	gps_wake_all();
	return ret ? ret : count;
}

static ssize_t queue_capacity_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.queue_capacity));
}

static ssize_t queue_capacity_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	return gps_set_queue(buf, count, 0);
}
GPS_ATTR(queue_capacity);

static ssize_t block_size_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.block_size));
}

static ssize_t block_size_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	return gps_set_queue(buf, count, 1);
}
GPS_ATTR(block_size);

static ssize_t queue_watermark_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.queue_watermark));
}

static ssize_t queue_watermark_store(struct kobject *kobj,
				     struct kobj_attribute *attr,
				     const char *buf, size_t count)
{
	return gps_set_queue(buf, count, 2);
}
GPS_ATTR(queue_watermark);

static ssize_t harvest_interval_us_show(struct kobject *kobj,
					struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(gps_knobs.harvest_interval_us));
}

static ssize_t harvest_interval_us_store(struct kobject *kobj,
					 struct kobj_attribute *attr,
					 const char *buf, size_t count)
{
	unsigned int val;
	int ret = gps_parse_uint(buf, 0, 10 * USEC_PER_SEC, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.harvest_interval_us, val);
	gps_wake_all();
	return count;
}
GPS_ATTR(harvest_interval_us);

static ssize_t dirty_wake_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.dirty_wake));
}

static ssize_t dirty_wake_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	unsigned int val;
	int ret = gps_parse_uint(buf, 1, 1U << 20, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.dirty_wake, val);
	gps_wake_all();
	return count;
}
GPS_ATTR(dirty_wake);

static ssize_t bulk_blocks_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(gps_knobs.bulk_blocks));
}

static ssize_t bulk_blocks_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	unsigned int val;
	int ret = gps_parse_uint(buf, 0, PAGE_SIZE / 64, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.bulk_blocks, val);
	return count;
}
GPS_ATTR(bulk_blocks);

static ssize_t max_bytes_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(gps_knobs.max_bytes));
}

static ssize_t max_bytes_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	u64 val;
	int ret = gps_parse_u64(buf, 0, U64_MAX, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.max_bytes, val);
	return count;
}
GPS_ATTR(max_bytes);

static ssize_t node_max_bytes_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(gps_knobs.node_max_bytes));
}

static ssize_t node_max_bytes_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	u64 val;
	int ret = gps_parse_u64(buf, 0, U64_MAX, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.node_max_bytes, val);
	return count;
}
GPS_ATTR(node_max_bytes);

static ssize_t node_reserve_bytes_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(gps_knobs.node_reserve_bytes));
}

static ssize_t node_reserve_bytes_store(struct kobject *kobj,
					struct kobj_attribute *attr,
					const char *buf, size_t count)
{
	u64 val;
	int ret = gps_parse_u64(buf, 0, U64_MAX, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.node_reserve_bytes, val);
	return count;
}
GPS_ATTR(node_reserve_bytes);

static const char * const gps_track_policies[] = {
	[GPS_TRACK_POLICY_TOUCHED] = "touched",
	[GPS_TRACK_POLICY_READ] = "read",
};

static ssize_t track_policy_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	unsigned int p = READ_ONCE(gps_knobs.track_policy), i;
	int len = 0;

	for (i = 0; i < ARRAY_SIZE(gps_track_policies); i++)
		len += sysfs_emit_at(buf, len, i == p ? "[%s]%s" : "%s%s",
				     gps_track_policies[i],
				     i + 1 < ARRAY_SIZE(gps_track_policies) ?
				     " " : "\n");
	return len;
}

static ssize_t track_policy_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	int i;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	i = sysfs_match_string(gps_track_policies, buf);
	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(gps_knobs.track_policy, i);
	return count;
}
GPS_ATTR(track_policy);

static ssize_t link_bandwidth_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(gps_knobs.link_bandwidth));
}

static ssize_t link_bandwidth_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	u64 val;
	int ret = gps_parse_u64(buf, 0, 1000000000000ULL, &val);

	if (ret)
		return ret;
	/* 1 KB/s .. 1 TB/s, or 0: beyond that the model means nothing. */
	if (val && val < 1000)
		return -EINVAL;
	WRITE_ONCE(gps_knobs.link_bandwidth, val);
	gps_link_reset();
	gps_wake_all();
	return count;
}
GPS_ATTR(link_bandwidth);

static ssize_t link_latency_ns_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(gps_knobs.link_latency_ns));
}

static ssize_t link_latency_ns_store(struct kobject *kobj,
				     struct kobj_attribute *attr,
				     const char *buf, size_t count)
{
	u64 val;
	int ret = gps_parse_u64(buf, 0, NSEC_PER_SEC, &val);

	if (ret)
		return ret;
	WRITE_ONCE(gps_knobs.link_latency_ns, val);
	return count;
}
GPS_ATTR(link_latency_ns);

static ssize_t abi_version_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", GPS_ABI_VERSION);
}
GPS_ATTR_RO(abi_version);

static ssize_t nr_devices_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", gps_nr_devs);
}
GPS_ATTR_RO(nr_devices);

static ssize_t nr_allocs_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&gps_nr_allocs));
}
GPS_ATTR_RO(nr_allocs);

static ssize_t replica_pages_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&gps_replica_pages));
}
GPS_ATTR_RO(replica_pages);

static ssize_t twin_pages_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&gps_twin_pages));
}
GPS_ATTR_RO(twin_pages);

static struct attribute *gps_attrs[] = {
	&page_size_attr.attr,
	&block_size_attr.attr,
	&queue_capacity_attr.attr,
	&queue_watermark_attr.attr,
	&harvest_interval_us_attr.attr,
	&dirty_wake_attr.attr,
	&bulk_blocks_attr.attr,
	&max_bytes_attr.attr,
	&node_max_bytes_attr.attr,
	&node_reserve_bytes_attr.attr,
	&track_policy_attr.attr,
	&link_bandwidth_attr.attr,
	&link_latency_ns_attr.attr,
	&abi_version_attr.attr,
	&nr_devices_attr.attr,
	&nr_allocs_attr.attr,
	&replica_pages_attr.attr,
	&twin_pages_attr.attr,
	NULL,
};

static const struct attribute_group gps_attr_group = {
	.attrs = gps_attrs,
};

int gps_sysfs_init(void)
{
	int ret;

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
