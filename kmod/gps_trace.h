/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of gps: write faults, harvests, pushes and fences, so that
 * perf and ftrace can follow stores from capture to publication.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gps

#if !defined(_GPS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _GPS_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(gps_write_fault,
	TP_PROTO(int view, int owner, u64 handle, unsigned long gidx,
		 unsigned int sub),
	TP_ARGS(view, owner, handle, gidx, sub),
	TP_STRUCT__entry(
		__field(int, view)
		__field(int, owner)
		__field(u64, handle)
		__field(unsigned long, gidx)
		__field(unsigned int, sub)
	),
	TP_fast_assign(
		__entry->view = view;
		__entry->owner = owner;
		__entry->handle = handle;
		__entry->gidx = gidx;
		__entry->sub = sub;
	),
	TP_printk("view=%d replica=%d alloc=%llu gpage=%lu sub=%u",
		  __entry->view, __entry->owner, __entry->handle,
		  __entry->gidx, __entry->sub)
);

DECLARE_EVENT_CLASS(gps_dev_work,
	TP_PROTO(int dev, u64 pages, u64 blocks, u64 bytes),
	TP_ARGS(dev, pages, blocks, bytes),
	TP_STRUCT__entry(
		__field(int, dev)
		__field(u64, pages)
		__field(u64, blocks)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->pages = pages;
		__entry->blocks = blocks;
		__entry->bytes = bytes;
	),
	TP_printk("dev=%d pages=%llu blocks=%llu bytes=%llu",
		  __entry->dev, __entry->pages, __entry->blocks,
		  __entry->bytes)
);

/*
 * pages: small pages harvested; blocks: queue occupancy after the harvest;
 * bytes: replicas (GPS pages) harvested
 */
DEFINE_EVENT(gps_dev_work, gps_harvest,
	TP_PROTO(int dev, u64 pages, u64 blocks, u64 bytes),
	TP_ARGS(dev, pages, blocks, bytes));

/* dev is -1 for a system-wide fence */
DEFINE_EVENT(gps_dev_work, gps_fence,
	TP_PROTO(int dev, u64 pages, u64 blocks, u64 bytes),
	TP_ARGS(dev, pages, blocks, bytes));

TRACE_EVENT(gps_push,
	TP_PROTO(int src, u64 handle, u64 block, u64 dests, u64 bytes),
	TP_ARGS(src, handle, block, dests, bytes),
	TP_STRUCT__entry(
		__field(int, src)
		__field(u64, handle)
		__field(u64, block)
		__field(u64, dests)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->src = src;
		__entry->handle = handle;
		__entry->block = block;
		__entry->dests = dests;
		__entry->bytes = bytes;
	),
	TP_printk("src=%d alloc=%llu block=%llu dests=%llu bytes=%llu",
		  __entry->src, __entry->handle, __entry->block,
		  __entry->dests, __entry->bytes)
);

#endif /* _GPS_TRACE_H */

/* Out of tree: the header is found through -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE gps_trace
#include <trace/define_trace.h>
