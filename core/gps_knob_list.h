/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The knobs of /sys/kernel/gps, listed once (see kmod/gps_knobs.h, which
 * includes this file to make struct gps_knobs, as kmod/gps_sysfs.c does
 * to make its table; libgpsu's lib/knob_table.c makes the knobs of both
 * its engines from it).  A new knob is one row here and its block in
 * Documentation/ABI/testing/sysfs-kernel-gps.  No include guard: each
 * includer defines GPS_KNOB() first.
 *
 *	GPS_KNOB(name, type, default, min, max, unit, flags, check, words,
 *		 rule);
 *
 * @type: UINT (unsigned int), U64 (u64) or WORDS (unsigned int, the
 * number of one of @words); @min, @max: the range of a number (0 for
 * WORDS); @unit: a word, or NULL; @flags: the GPS_KNOB_* side effects of
 * a change; @check: a function of gps_sysfs.c for the rules a range
 * cannot say, or NULL; @words: for WORDS, the words, NULL-terminated;
 * @rule: what the range cannot say, in words for people, or NULL.
 *
 * The rows are in an order in which saved values can be written back
 * one by one: a knob's check may change a later knob (queue_capacity
 * sets queue_watermark), never an earlier one.
 */
GPS_KNOB(page_size, UINT, GPS_PAGE_64K, GPS_PAGE_4K, GPS_PAGE_2M, "bytes",
	 0, gps_check_page_size, NULL, "4096, 65536 or 2097152");
GPS_KNOB(block_size, UINT, 128, 64, PAGE_SIZE, "bytes",
	 GPS_KNOB_QUEUE | GPS_KNOB_WAKE, gps_check_block_size, NULL,
	 "a power of two");
GPS_KNOB(queue_capacity, UINT, 512, 1, 65536, "blocks",
	 GPS_KNOB_QUEUE | GPS_KNOB_WAKE, gps_check_queue_capacity, NULL,
	 "sets queue_watermark to capacity - 1");
GPS_KNOB(queue_watermark, UINT, 511, 1, 65536, "blocks",
	 GPS_KNOB_QUEUE | GPS_KNOB_WAKE, gps_check_queue_watermark, NULL,
	 "at most queue_capacity");
GPS_KNOB(harvest_interval_us, UINT, 1000, 0, 10 * USEC_PER_SEC, "us",
	 GPS_KNOB_WAKE | GPS_KNOB_QUIESCE, NULL, NULL,
	 "0: no proactive work");
/* dirty replicas that wake the thread */
GPS_KNOB(dirty_wake, UINT, 64, 1, 1U << 20, "replicas", GPS_KNOB_WAKE,
	 NULL, NULL, NULL);
/* changed blocks that skip the queue */
GPS_KNOB(bulk_blocks, UINT, 16, 0, PAGE_SIZE / 64, "blocks", 0, NULL, NULL,
	 "0: off");
/* replica memory: caps on all, on each node; left free on each node */
GPS_KNOB(max_bytes, U64, 0, 0, U64_MAX, "bytes", 0, NULL, NULL,
	 "0: no cap");
GPS_KNOB(node_max_bytes, U64, 0, 0, U64_MAX, "bytes", 0, NULL, NULL,
	 "0: no cap");
GPS_KNOB(node_reserve_bytes, U64, 32 << 20, 0, U64_MAX, "bytes", 0, NULL,
	 NULL, NULL);
GPS_KNOB(track_policy, WORDS, GPS_TRACK_POLICY_TOUCHED, 0, 0, NULL, 0, NULL,
	 gps_track_policy_words, NULL);
/* the link model: bytes/s of each device's link, and its latency */
GPS_KNOB(link_bandwidth, U64, 0, 0, 1000000000000ULL, "bytes/s",
	 GPS_KNOB_LINK_RESET | GPS_KNOB_WAKE | GPS_KNOB_QUIESCE,
	 gps_check_link_bandwidth, NULL, "0 (off) or at least 1000");
GPS_KNOB(link_latency_ns, U64, 0, 0, NSEC_PER_SEC, "ns", 0, NULL, NULL,
	 NULL);
/* mapped or captured per fault */
GPS_KNOB(capture_bytes, UINT, 0, 0, GPS_PAGE_2M, "bytes", 0,
	 gps_check_capture_bytes, NULL,
	 "0 (the GPS page) or a power of two from PAGE_SIZE");
GPS_KNOB(keep_writable_ms, UINT, 100, 0, 10000, "ms", 0, NULL, NULL,
	 "0: off");
/* CPUs of the node a fence uses */
GPS_KNOB(fence_threads, UINT, 0, 0, 64, "CPUs", 0, NULL, NULL,
	 "0: every CPU of the node; 1: the caller alone");
GPS_KNOB(harvest_ahead, UINT, 0, 0, 1, NULL,
	 GPS_KNOB_WAKE | GPS_KNOB_QUIESCE, NULL, NULL,
	 "1: the push thread harvests with the link unlimited too");
/* managed memory: UVM's defaults, 3 moves within 2 s pin for 300 ms */
GPS_KNOB(um_thrash_threshold, UINT, 3, 0, 1000, "moves", 0, NULL, NULL,
	 "0: no thrashing guard");
GPS_KNOB(um_thrash_epoch_ms, UINT, 2000, 1, 60000, "ms", 0, NULL, NULL,
	 NULL);
GPS_KNOB(um_pin_ms, UINT, 300, 0, 60000, "ms", 0, NULL, NULL, NULL);
