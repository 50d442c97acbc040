// SPDX-License-Identifier: MIT
/*
 * The native engine's replica budgets (engine_user_state.h), as the
 * driver's: all replicas against max_bytes, one device's against
 * node_max_bytes, and a node's available memory kept above its zones'
 * high watermarks plus node_reserve_bytes: a replica is a hint, so it
 * gives way before the program (or anyone) meets the OOM killer. Per
 * process: the process is the engine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_user_state.h"

/* How long a reading of a node's free memory stands. */
#define GPSU_FREE_NS	(20 * 1000 * 1000ULL)

/*
 * Per node of a device: the zones' high watermarks (none on a machine of
 * one node: MemAvailable is net of them) and the pages replicas may take
 * at set-up (free0), the replica and twin pages charged on it now
 * (total), and the last reading of those pages, less the pages charged
 * since.
 * memfd pages are allocated as they are first touched, so a reading
 * misses the replicas charged and not yet touched: the room is the
 * smaller of the last reading's and free0 less every page charged (as if
 * all were touched). What it misses: others' use of the node while this
 * process's replicas are not yet touched. Atomics: callers hold no
 * common lock.
 */
struct gpsu_node_mem {
	int node;
	uint64_t high;
	uint64_t free0;
	uint64_t total;
	uint64_t free;
	uint64_t charged;
	uint64_t read_at;
	int reading;
};

/* $GPSU_TEST_NODE_FREE_PAGES: every node's free pages, no watermark */
static uint64_t gpsu_test_free;
/* One NUMA node: MemAvailable, which is net of the watermarks */
static bool gpsu_one_node;

static struct gpsu_node_mem gpsu_node_mem[GPSU_MAX_DEVICES];
static int gpsu_nnodes;

/* The first unsigned number after @key in @buf, or @none. */
static uint64_t gpsu_number_after(const char *buf, const char *key,
				  uint64_t none)
{
	const char *p = strstr(buf, key);
	uint64_t v = 0;

	if (!p)
		return none;
	for (p += strlen(key); *p == ' ' || *p == '\t'; p++)
		;
	if (*p < '0' || *p > '9')
		return none;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	return v;
}

/* Up to @size - 1 bytes of file @path into @buf; false if unreadable. */
static bool gpsu_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return false;
	while ((size_t)got < size - 1 &&
	       (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got > 0;
}

/*
 * Pages of node @node replicas may take now, or UINT64_MAX where nothing
 * says: on a machine of one node, MemAvailable (free memory and what the
 * kernel would reclaim of the page cache and slab, less its watermarks:
 * a node's MemFree alone is near its watermarks whenever the page cache
 * has filled it, and some VMs' node files count less memory than the
 * machine has); on several, the node's MemFree and half its file pages
 * (about what MemAvailable keeps of a page cache).
 */
static uint64_t gpsu_node_free_now(int node)
{
	char path[64], buf[4096];
	uint64_t kb = UINT64_MAX, file;

	if (gpsu_test_free)
		return gpsu_test_free;
	if (gpsu_one_node) {
		if (gpsu_read_file("/proc/meminfo", buf, sizeof(buf)))
			kb = gpsu_number_after(buf, "MemAvailable:",
					       UINT64_MAX);
	} else {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/meminfo", node);
		if (gpsu_read_file(path, buf, sizeof(buf))) {
			kb = gpsu_number_after(buf, "MemFree:", UINT64_MAX);
			file = gpsu_number_after(buf, "Active(file):", 0) +
			       gpsu_number_after(buf, "Inactive(file):", 0);
			if (kb != UINT64_MAX)
				kb += file / 2;
		}
	}
	return kb == UINT64_MAX ? kb : kb * 1024 / PAGE_SIZE;
}

/* The entry of node @node, made at set-up; NULL for none. */
static struct gpsu_node_mem *gpsu_node_mem_of(int node)
{
	int i;

	for (i = 0; i < gpsu_nnodes; i++)
		if (gpsu_node_mem[i].node == node)
			return &gpsu_node_mem[i];
	return NULL;
}

void gpsu_user_budget_init(void)
{
	struct gpsu_node_mem *m = NULL;
	uint64_t high = 0;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int d, n;

	const char *t = getenv("GPSU_TEST_NODE_FREE_PAGES");

	memset(gpsu_node_mem, 0, sizeof(gpsu_node_mem));
	gpsu_test_free = t ? strtoull(t, NULL, 0) : 0;
	gpsu_one_node = numa_available() < 0 || numa_max_node() == 0;
	gpsu_nnodes = 0;
	for (d = 0; d < gpsu_user.ndev; d++)
		if (!gpsu_node_mem_of(gpsu_user.dev[d].node))
			gpsu_node_mem[gpsu_nnodes++].node = gpsu_user.dev[d].node;
	for (d = 0; d < gpsu_nnodes; d++)
		gpsu_node_mem[d].free0 =
			gpsu_node_free_now(gpsu_node_mem[d].node);
	/*
	 * "Node N, zone Z" heads each zone; its lines "high H" and then
	 * "managed M", in pages: the zones the kernel allocates from count
	 */
	f = gpsu_test_free || gpsu_one_node ? NULL :
	    fopen("/proc/zoneinfo", "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "Node %d, zone", &n) == 1) {
			m = gpsu_node_mem_of(n);
			high = 0;
		} else if (m && sscanf(line, " high %d", &n) == 1 && n > 0) {
			high = (uint64_t)n;
		} else if (m && sscanf(line, " managed %d", &n) == 1 && n > 0) {
			m->high += high;
			high = 0;
		}
	}
	free(line);
	fclose(f);
}

/* @free less @used pages below @high + @reserve?  Without wrapping. */
static bool gpsu_short(uint64_t free, uint64_t used, uint64_t high,
		       uint64_t reserve)
{
	return used > free || free - used < high ||
	       free - used - high < reserve;
}

/*
 * Would @n more pages take node @node's free memory below its high
 * watermarks plus node_reserve_bytes? The reading is renewed when it is
 * older than GPSU_FREE_NS, by one caller at a time.
 */
static bool gpsu_node_low(int node, uint64_t n)
{
	uint64_t reserve = gpsu_user_knob(GPSU_K(node_reserve_bytes)) /
			   PAGE_SIZE;
	struct gpsu_node_mem *m = gpsu_node_mem_of(node);
	uint64_t now = gpsu_user_now(), avail, used, total;

	if (!m)
		return false;
	if ((int64_t)(now - __atomic_load_n(&m->read_at, __ATOMIC_ACQUIRE)) >
	    (int64_t)GPSU_FREE_NS &&
	    !__atomic_exchange_n(&m->reading, 1, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&m->free, gpsu_node_free_now(node),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&m->charged, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&m->read_at, now, __ATOMIC_RELEASE);
		__atomic_store_n(&m->reading, 0, __ATOMIC_RELEASE);
	}
	avail = __atomic_load_n(&m->free, __ATOMIC_RELAXED);
	if (avail == UINT64_MAX)
		return false;
	used = __atomic_add_fetch(&m->charged, n, __ATOMIC_RELAXED);
	total = __atomic_load_n(&m->total, __ATOMIC_RELAXED) + n;
	if (gpsu_short(avail, used, m->high, reserve) ||
	    /* as if every replica charged were touched since set-up */
	    (m->free0 != UINT64_MAX &&
	     gpsu_short(m->free0, total, m->high, reserve))) {
		__atomic_sub_fetch(&m->charged, n, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

/* @n pages more (modulo 2^64: fewer) charged on node @node. */
static void gpsu_node_total(int node, uint64_t n)
{
	struct gpsu_node_mem *m = gpsu_node_mem_of(node);

	if (m)
		__atomic_fetch_add(&m->total, n, __ATOMIC_RELAXED);
}

/*
 * All replicas against max_bytes exactly (an atomic add, taken back on
 * failure), one device's against node_max_bytes as its replica_pages
 * counter stands (allocations placed side by side, outside allocs_lock,
 * may pass it by a few replicas), and the node's reserve.
 */
bool gpsu_user_charge(const struct gpsu_user_alloc *ua, int d, bool force)
{
	uint64_t n = ua->ps / PAGE_SIZE, held = 0, now;
	uint64_t cap = gpsu_user_knob(GPSU_K(max_bytes));
	uint64_t node_cap = gpsu_user_knob(GPSU_K(node_max_bytes));

	now = __atomic_add_fetch(&gpsu_user.replica_pages, n,
				 __ATOMIC_RELAXED);
	(void)gpsu_user_counter(d, GPSU_S(replica_pages), &held);
	if (!force && ((cap && now * PAGE_SIZE > cap) ||
		       (node_cap && (held + n) * PAGE_SIZE > node_cap) ||
		       gpsu_node_low(gpsu_user.dev[d].node,
				     ua->twin ? 2 * n : n))) {
		__atomic_sub_fetch(&gpsu_user.replica_pages, n,
				   __ATOMIC_RELAXED);
		return false;
	}
	gpsu_user_count(d, GPSU_S(replica_pages), n);
	if (ua->twin)
		gpsu_user_count(d, GPSU_S(twin_pages), n);
	gpsu_node_total(gpsu_user.dev[d].node, ua->twin ? 2 * n : n);
	return true;
}

void gpsu_user_uncharge(const struct gpsu_user_alloc *ua, uint64_t subs)
{
	uint64_t n = ua->ps / PAGE_SIZE;
	int d;

	for (d = 0; d < gpsu_user.ndev; d++) {
		if (!(subs & (1ULL << d)))
			continue;
		__atomic_sub_fetch(&gpsu_user.replica_pages, n,
				   __ATOMIC_RELAXED);
		/* the counters add modulo 2^64 */
		gpsu_user_count(d, GPSU_S(replica_pages), -n);
		if (ua->twin)
			gpsu_user_count(d, GPSU_S(twin_pages), -n);
		gpsu_node_total(gpsu_user.dev[d].node,
				-(ua->twin ? 2 * n : n));
	}
}
