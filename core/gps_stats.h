/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counters of one device, listed once: struct gps_dev_stats
 * (gps_internal.h) and the lines of debugfs node<N>/stats (gps_debugfs.c)
 * are made from this list, in its order, gpsctl (tools/gpsctl) includes
 * it to know how each line adds up, and libgpsu (lib/knob_table.c) for
 * the names of the native engine's counters.  A new counter is one row
 * here and its entry in Documentation/ABI/testing/debugfs-gps.  No
 * include guard: an includer defines GPS_STAT(), GPS_STATE() or both
 * first, and gets the rows of those it defined.
 *
 * GPS_STAT(name, kind): an atomic64_t of struct gps_dev_stats.
 * GPS_STATE(name, value, kind): a value debugfs reads from the device,
 * struct gps_dev *dev, printed after the counters.  @kind:
 *
 *   COUNT  cumulative since the module was loaded: a rate, summed
 *   LEVEL  a current amount: no rate, summed over the devices
 *   MAX    a maximum or a capacity: no rate, no sum
 */
#ifdef GPS_STAT
GPS_STAT(read_faults, COUNT);
GPS_STAT(write_faults, COUNT);
GPS_STAT(pages_captured, COUNT);	/* taken along by a write fault */
GPS_STAT(pages_harvested, COUNT);
GPS_STAT(pages_helped, COUNT);		/* of pages_harvested: by helpers */
GPS_STAT(blocks_queued, COUNT);
GPS_STAT(blocks_merged, COUNT);
GPS_STAT(blocks_pushed, COUNT);
GPS_STAT(bytes_pushed, COUNT);
GPS_STAT(blocks_pushed_early, COUNT);	/* by the thread or the watermark */
GPS_STAT(blocks_bulk, COUNT);		/* pushed by page, past the queue */
GPS_STAT(fences, COUNT);
GPS_STAT(host_write_faults, COUNT);	/* through the host view, as home */
GPS_STAT(host_fences, COUNT);		/* fences for stores of host views */
GPS_STAT(harvest_ns, COUNT);
GPS_STAT(protect_ns, COUNT);		/* of harvest_ns: write-protecting */
GPS_STAT(fence_ns, COUNT);		/* fences of this device, waits in */
GPS_STAT(fence_wait_ns, COUNT);		/* of fence_ns: for harvest_lock */
GPS_STAT(queue_hwm, MAX);
GPS_STAT(replica_pages, LEVEL);
GPS_STAT(twin_pages, LEVEL);
GPS_STAT(subscribe_failed, COUNT);	/* replicas the node could not hold */
GPS_STAT(tracking_faults, COUNT);
GPS_STAT(demotions, COUNT);
GPS_STAT(collapses, COUNT);
GPS_STAT(link_wait_ns, COUNT);
GPS_STAT(link_exposed_ns, COUNT);	/* link busy when a fence came */
GPS_STAT(migrations, COUNT);		/* managed pages moved here */
GPS_STAT(bytes_migrated, COUNT);	/* their bytes */
GPS_STAT(thrash_pins, COUNT);		/* managed pages pinned here */
GPS_STAT(thread_rounds, COUNT);		/* of the push thread */
#endif

#ifdef GPS_STATE
GPS_STATE(queue_blocks, READ_ONCE(dev->queue.count), LEVEL);
GPS_STATE(queue_capacity, READ_ONCE(dev->queue.capacity), MAX);
GPS_STATE(dirty_replicas, READ_ONCE(dev->nr_dirty), LEVEL);
GPS_STATE(writable_replicas, READ_ONCE(dev->nr_hot), LEVEL);
#endif
