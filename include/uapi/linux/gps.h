/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gps: the GPU Publish-Subscribe address space on NUMA nodes.
 *
 * This header is the ABI between gps.ko (/dev/gps) and user space
 * (libgpsu, tests, tools).  Every struct is made of fixed-width fields,
 * user pointers travel as __u64, and every reserved field must be zero:
 * the driver rejects non-zero reserved fields with -EINVAL so that they
 * can be given a meaning later.  Value 0 of every enum is reserved so that
 * an uninitialised field is caught.
 */
#ifndef _UAPI_LINUX_GPS_H
#define _UAPI_LINUX_GPS_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define GPS_ABI_VERSION		2

/* Device d is the d-th online NUMA node; at most this many devices. */
#define GPS_MAX_DEVICES		64

/* The three GPS page sizes the driver supports. */
#define GPS_PAGE_4K		(1U << 12)
#define GPS_PAGE_64K		(1U << 16)
#define GPS_PAGE_2M		(1U << 21)

/**
 * struct gps_version_args - GPS_IOC_VERSION
 * @abi_version: (out) GPS_ABI_VERSION of the driver
 * @nr_devices: (out) number of devices (online NUMA nodes)
 * @page_size: (out) GPS page size that new allocations get by default
 * @block_size: (out) write-queue block size in bytes
 * @node_mask: (out) bit N set when NUMA node N is a device (nodes < 64)
 * @reserved: must be zero
 */
struct gps_version_args {
	__u32 abi_version;
	__u32 nr_devices;
	__u32 page_size;
	__u32 block_size;
	__u64 node_mask;
	__u64 reserved[4];
};

/**
 * struct gps_device_args - GPS_IOC_DEVICE_INFO
 * @device: (in) device index, below nr_devices
 * @node: (out) NUMA node id of the device
 * @nr_cpus: (out) number of online CPUs of the node
 * @mem_total: (out) bytes of memory of the node
 * @mem_free: (out) bytes of free memory of the node
 * @replica_pages: (out) pages of GPS replicas held on the node
 * @pad: must be zero
 * @reserved: must be zero
 */
struct gps_device_args {
	__u32 device;
	__u32 node;
	__u32 nr_cpus;
	__u32 pad;
	__u64 mem_total;
	__u64 mem_free;
	__u64 replica_pages;
	__u64 reserved[4];
};

/**
 * enum gps_mem_kind - what an allocation is
 * @GPS_MEM_GPS: replicated on every subscriber, stores published
 * @GPS_MEM_CONVENTIONAL: a single copy on the home device
 * @GPS_MEM_MANAGED: unified memory without hints: a single copy per GPS
 *	page, first on the home device, moved by a fault to the device
 *	whose view touches it; pinned where it is, and mapped remotely,
 *	while it thrashes (the um_* knobs)
 */
enum gps_mem_kind {
	GPS_MEM_GPS = 1,
	GPS_MEM_CONVENTIONAL = 2,
	GPS_MEM_MANAGED = 3,
};

/* gps_alloc_args.flags */
#define GPS_ALLOC_MANUAL	(1U << 0) /* only @home subscribes at first */
#define GPS_ALLOC_FLAGS		(GPS_ALLOC_MANUAL)

/**
 * struct gps_alloc_args - GPS_IOC_ALLOC
 * @size: (in) bytes, rounded up to a whole number of GPS pages
 * @kind: (in) enum gps_mem_kind
 * @flags: (in) GPS_ALLOC_* flags
 * @home: (in) home device: the only subscriber of a conventional or
 *	manual allocation, the keeper of untouched pages after tracking
 * @page_size: (in) GPS page size in bytes, 0 for the sysfs default
 * @handle: (out) the allocation's handle for other commands
 * @offset: (out) mmap offset of device 0's view of the allocation
 * @view_stride: (out) mmap offset distance between views: device d's
 *	view starts at @offset + d * @view_stride, and the host view, which
 *	loads and stores as @home does but whose stores a GPS_FENCE_HOST
 *	fence publishes, at @offset + nr_devices * @view_stride
 * @alloc_size: (out) @size rounded up to the GPS page size
 * @out_page_size: (out) the GPS page size in force for this allocation
 * @pad: must be zero
 * @reserved: must be zero
 */
struct gps_alloc_args {
	__u64 size;
	__u32 kind;
	__u32 flags;
	__u32 home;
	__u32 page_size;
	__u64 handle;
	__u64 offset;
	__u64 view_stride;
	__u64 alloc_size;
	__u32 out_page_size;
	__u32 pad;
	__u64 reserved[4];
};

/**
 * struct gps_free_args - GPS_IOC_FREE
 * @handle: (in) allocation to free; views still mapped then fault SIGBUS
 * @reserved: must be zero
 */
struct gps_free_args {
	__u64 handle;
	__u64 reserved[2];
};

/**
 * enum gps_advice - GPS_IOC_ADVISE advice
 * @GPS_ADVISE_SUBSCRIBE: give @device a replica of each page, filled with
 *	current data
 * @GPS_ADVISE_UNSUBSCRIBE: drop @device's replicas; -EBUSY if @device is
 *	the last subscriber of any page of the range (nothing is changed)
 * @GPS_ADVISE_COLLAPSE: system scope: publish pending stores, then keep a
 *	single copy of each page (on @device, or the subscriber nearest to
 *	it) and make the page conventional; tracking leaves it so, an
 *	explicit subscribe replicates it again
 */
enum gps_advice {
	GPS_ADVISE_SUBSCRIBE = 1,
	GPS_ADVISE_UNSUBSCRIBE = 2,
	GPS_ADVISE_COLLAPSE = 3,
};

/**
 * struct gps_advise_args - GPS_IOC_ADVISE
 * @handle: (in) allocation
 * @offset: (in) start of the range, GPS-page aligned
 * @length: (in) length of the range, GPS-page aligned, not zero
 * @advice: (in) enum gps_advice
 * @device: (in) device the advice is about
 * @pages_changed: (out) GPS pages whose subscriber set changed
 * @pages_failed: (out) pages left unsubscribed because @device's node
 *	could not hold a replica (subscription is a hint)
 * @reserved: must be zero
 */
struct gps_advise_args {
	__u64 handle;
	__u64 offset;
	__u64 length;
	__u32 advice;
	__u32 device;
	__u64 pages_changed;
	__u64 pages_failed;
	__u64 reserved[2];
};

#define GPS_FENCE_ALL		0xffffffffU

/* gps_fence_args.flags and gps_uring_fence.flags */
#define GPS_FENCE_MASK		(1U << 0) /* the devices of @device_mask */
/*
 * With GPS_FENCE_MASK: also every store made through the host views of
 * the file's allocations before the call (@device_mask may then be
 * empty).  Host stores make a write fault each time a harvest has
 * write-protected their page, which records whose replica they went to:
 * a host fence fences those devices only, and returns at once when the
 * host stored nothing since the last one.  Host fences of one file are
 * serialised: one returns only once every host store made before it is
 * out, whichever fence took it.
 */
#define GPS_FENCE_HOST		(1U << 1)
#define GPS_FENCE_FLAGS		(GPS_FENCE_MASK | GPS_FENCE_HOST)

/**
 * struct gps_fence_args - GPS_IOC_FENCE
 * @device: (in) device whose stores are published, or GPS_FENCE_ALL;
 *	zero with GPS_FENCE_MASK
 * @flags: (in) GPS_FENCE_* flags
 * @pages_harvested: (out) dirty 4 KiB pages write-protected and diffed
 * @blocks_pushed: (out) blocks pushed into other replicas by this fence
 * @bytes_pushed: (out) bytes written into other replicas by this fence
 * @device_mask: (in) with GPS_FENCE_MASK: bit d fences device d (only
 *	existing devices; not empty without GPS_FENCE_HOST); else zero
 * @reserved: must be zero
 */
struct gps_fence_args {
	__u32 device;
	__u32 flags;
	__u64 pages_harvested;
	__u64 blocks_pushed;
	__u64 bytes_pushed;
	__u64 device_mask;
	__u64 reserved[1];
};

/**
 * struct gps_memset_args - GPS_IOC_MEMSET
 * @handle: (in) allocation
 * @offset: (in) first byte
 * @length: (in) bytes, not zero, within the allocation
 * @value: (in) byte value in the low 8 bits, the rest zero
 * @pad: must be zero
 * @reserved: must be zero
 */
struct gps_memset_args {
	__u64 handle;
	__u64 offset;
	__u64 length;
	__u32 value;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct gps_copy_args - GPS_IOC_WRITE and GPS_IOC_READ
 * @handle: (in) allocation
 * @offset: (in) first byte of the allocation
 * @length: (in) bytes, not zero, within the allocation
 * @uaddr: (in) user buffer to copy from (WRITE) or into (READ)
 * @device: (in) READ only: the device whose view is read
 * @pad: must be zero
 * @reserved: must be zero
 *
 * WRITE updates every replica; READ reads one device's view.
 */
struct gps_copy_args {
	__u64 handle;
	__u64 offset;
	__u64 length;
	__u64 uaddr;
	__u32 device;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct gps_query_args - GPS_IOC_QUERY
 * @handle: (in) allocation
 * @first_page: (in) first GPS page reported
 * @nr_pages: (in) entries in @subs; (out) entries written
 * @kind: (out) enum gps_mem_kind
 * @flags: (out) GPS_ALLOC_* flags of the allocation
 * @page_size: (out) GPS page size
 * @home: (out) home device
 * @total_pages: (out) GPS pages in the allocation
 * @subs: (in) user pointer to @nr_pages __u64: (out) per page, bit d set
 *	when device d subscribes (holds a replica)
 * @write_faults: (out) capture faults taken on this allocation
 * @pushes: (out) blocks pushed from this allocation
 * @pad: must be zero
 * @reserved: must be zero
 */
struct gps_query_args {
	__u64 handle;
	__u64 first_page;
	__u32 nr_pages;
	__u32 kind;
	__u32 flags;
	__u32 page_size;
	__u32 home;
	__u32 pad;
	__u64 total_pages;
	__u64 subs;
	__u64 write_faults;
	__u64 pushes;
	__u64 reserved[2];
};

/**
 * enum gps_track_op - GPS_IOC_TRACK operation
 * @GPS_TRACK_START: subscribe every device to every page of the caller's
 *	automatic GPS allocations and record each device's accesses
 * @GPS_TRACK_STOP: keep each device subscribed to the pages it used
 *	(per /sys/kernel/gps/track_policy) and stop recording
 */
enum gps_track_op {
	GPS_TRACK_START = 1,
	GPS_TRACK_STOP = 2,
};

/**
 * struct gps_track_args - GPS_IOC_TRACK
 * @op: (in) enum gps_track_op
 * @flags: (in) must be zero
 * @allocs: (out) automatic GPS allocations concerned
 * @pages: (out) GPS pages concerned
 * @subscribed: (out) START: replicas added
 * @unsubscribed: (out) STOP: replicas dropped
 * @demoted: (out) STOP: pages left with one subscriber (conventional)
 * @failed: (out) START: replicas that could not be allocated
 * @reserved: must be zero
 *
 * Tracking is per open file: it concerns the allocations of that file
 * that are GPS_MEM_GPS without GPS_ALLOC_MANUAL.  STOP without START, or
 * START twice, is -EINVAL.
 */
struct gps_track_args {
	__u32 op;
	__u32 flags;
	__u64 allocs;
	__u64 pages;
	__u64 subscribed;
	__u64 unsubscribed;
	__u64 demoted;
	__u64 failed;
	__u64 reserved[2];
};

#define GPS_IOC_MAGIC		0xBB

#define GPS_IOC_VERSION		_IOR(GPS_IOC_MAGIC, 0x00, struct gps_version_args)
#define GPS_IOC_DEVICE_INFO	_IOWR(GPS_IOC_MAGIC, 0x01, struct gps_device_args)
#define GPS_IOC_ALLOC		_IOWR(GPS_IOC_MAGIC, 0x02, struct gps_alloc_args)
#define GPS_IOC_FREE		_IOW(GPS_IOC_MAGIC, 0x03, struct gps_free_args)
#define GPS_IOC_ADVISE		_IOWR(GPS_IOC_MAGIC, 0x04, struct gps_advise_args)
#define GPS_IOC_FENCE		_IOWR(GPS_IOC_MAGIC, 0x05, struct gps_fence_args)
#define GPS_IOC_MEMSET		_IOW(GPS_IOC_MAGIC, 0x06, struct gps_memset_args)
#define GPS_IOC_WRITE		_IOW(GPS_IOC_MAGIC, 0x07, struct gps_copy_args)
#define GPS_IOC_READ		_IOW(GPS_IOC_MAGIC, 0x08, struct gps_copy_args)
#define GPS_IOC_QUERY		_IOWR(GPS_IOC_MAGIC, 0x09, struct gps_query_args)
#define GPS_IOC_TRACK		_IOWR(GPS_IOC_MAGIC, 0x0a, struct gps_track_args)

/*
 * io_uring: an IORING_OP_URING_CMD on /dev/gps with cmd_op
 * GPS_URING_CMD_FENCE and a struct gps_uring_fence in the SQE's cmd area
 * completes with res 0 (or -errno) once the fence is done.
 */
#define GPS_URING_CMD_FENCE	0x4750

/*
 * At most this many GPS_URING_CMD_FENCE requests of one open file are in
 * flight (submitted, their fence not done) at once; one more completes
 * at once with res -EBUSY and fences nothing: fence with GPS_IOC_FENCE
 * instead, or reap a completion first.
 */
#define GPS_URING_FENCES_MAX	64

/**
 * struct gps_uring_fence - payload of GPS_URING_CMD_FENCE (16 bytes)
 * @device: (in) device or GPS_FENCE_ALL; zero with GPS_FENCE_MASK
 * @flags: (in) GPS_FENCE_* flags
 * @device_mask: (in) with GPS_FENCE_MASK: the devices to fence; else zero
 */
struct gps_uring_fence {
	__u32 device;
	__u32 flags;
	__u64 device_mask;
};

#endif /* _UAPI_LINUX_GPS_H */
