// SPDX-License-Identifier: MIT
/*
 * Description: kernels against gps.ko: a kernel launched on device d runs
 * only on node d's CPUs and its loads of a subscribed page read node d's
 * memory; stores are published to every replica by the end of the kernel;
 * two devices writing different bytes of one block both survive;
 * untranslated pointers stay correct; kernels on different devices
 * overlap in time.
 */
#include <stdatomic.h>
#include <time.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define NBLOCKS 64

struct where_args {
	int *cpu;		/* host memory: NBLOCKS entries */
	int *page_node;		/* host memory: NBLOCKS entries */
	const char *data;	/* GPS, translated */
};

static void where(void *p)
{
	const struct where_args *a = p;
	unsigned int b = gpsBlockIdx().x;

	a->cpu[b] = sched_getcpu();
	(void)*(volatile const char *)a->data;	/* map it */
	a->page_node[b] = t_page_node(a->data);
}

/* Threads on node d's CPUs; a subscribed page read from node d. */
TEST(threads_and_loads_on_the_right_node)
{
	struct where_args a;
	gpsDeviceProp prop;
	char *data;
	int ndev, d, b;

	T_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.cpu,
					    NBLOCKS * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.page_node,
					    NBLOCKS * sizeof(int)));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&data, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(data, 1, 4096));
	a.data = data;
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsGetDeviceProperties(&prop, d));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(where,
				gpsDim(NBLOCKS, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct where_args, data)),
				NULL));
		ASSERT_EQ(gpsSuccess, gpsDeviceSynchronize());
		for (b = 0; b < NBLOCKS; b++) {
			if (t_node_has_cpus(prop.numaNode))
				ASSERT_EQ(prop.numaNode,
					  numa_node_of_cpu(a.cpu[b]));
			ASSERT_EQ(prop.numaNode, a.page_node[b]);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(data));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.cpu));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.page_node));
}

struct store_args {
	unsigned char *block;	/* GPS, translated */
	int device;
};

/* Device d writes byte d (and d + 64) of one 128-byte block. */
static void store_bytes(void *p)
{
	const struct store_args *a = p;

	a->block[a->device] = (unsigned char)(0xa0 + a->device);
	a->block[64 + a->device] = (unsigned char)(0x50 + a->device);
}

/* Byte-granular publication: every device's bytes in every replica. */
TEST(disjoint_bytes_of_one_block)
{
	struct store_args a;
	gpsStream_t s[64];
	unsigned char *blk, *v;
	int ndev, d, e;

	T_MIN_DEVICES(ndev, 2);
	if (ndev > 64)
		ndev = 64;
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&blk, 128, 0));
	ASSERT_EQ(gpsSuccess, gpsMemset(blk, 0, 128));
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		a.block = blk;
		a.device = d;
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(store_bytes,
				gpsDim(1, 1, 1), gpsDim(1, 1, 1),
				GPS_ARGS(&a, GPS_PTR(struct store_args, block)),
				s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	for (e = 0; e < ndev; e++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(e));
		v = gpsDevicePtr(blk);
		for (d = 0; d < ndev; d++) {
			ASSERT_EQ(0xa0 + d, v[d]);
			ASSERT_EQ(0x50 + d, v[64 + d]);
		}
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsFree(blk));
}

struct raw_args {
	int *data;		/* GPS, NOT translated: the home view */
	int *sum;		/* host */
	int n;
};

static void raw_kernel(void *p)
{
	const struct raw_args *a = p;
	int i, s = 0;

	for (i = 0; i < a->n; i++)
		s += a->data[i];	/* loads through the home view */
	*a->sum = s;
	for (i = 0; i < a->n; i++)
		a->data[i] = i + 1;	/* stores through the home view */
}

/* Untranslated pointers are slower, never wrong: loads see the data and
 * stores are published by the end of the kernel. */
TEST(untranslated_pointers_still_correct)
{
	struct raw_args a;
	gpsStream_t s;
	int ndev, d, i, *v;

	T_MIN_DEVICES(ndev, 2);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&a.data, 4096, 0));
	ASSERT_EQ(gpsSuccess, gpsMallocHost((void **)&a.sum, sizeof(int)));
	a.n = 1024;
	for (i = 0; i < a.n; i++)
		a.data[i] = 2;		/* host stores, home view */
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s));
	ASSERT_EQ(gpsSuccess, gpsLaunchKernel(raw_kernel, gpsDim(1, 1, 1),
			gpsDim(1, 1, 1), GPS_ARGS_RAW(&a), s));
	ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s));
	ASSERT_EQ(2 * a.n, *a.sum);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		v = gpsDevicePtr(a.data);
		for (i = 0; i < a.n; i++)
			ASSERT_EQ(i + 1, v[i]);
	}
	ASSERT_EQ(gpsSuccess, gpsSetDevice(ndev - 1));
	ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s));
	ASSERT_EQ(gpsSuccess, gpsFree(a.data));
	ASSERT_EQ(gpsSuccess, gpsFreeHost(a.sum));
}

static atomic_int started, met;
static int nstarted;

/*
 * Waits, up to 60 s, for every device's kernel to have started: they all
 * get there only if they run at the same time.
 */
static void meet(void *p)
{
	int i;

	(void)p;
	atomic_fetch_add(&started, 1);
	for (i = 0; i < 60000 && atomic_load(&started) < nstarted; i++)
		usleep(1000);
	if (atomic_load(&started) == nstarted)
		atomic_fetch_add(&met, 1);
}

/*
 * Kernels on different devices run at the same time: each waits for all
 * the others to start, which a serial launch never lets happen (a timed
 * sleep per kernel failed on a loaded 2-core machine).
 */
TEST(devices_run_concurrently)
{
	gpsStream_t s[64];
	int ndev, d;

	T_MIN_DEVICES(ndev, 2);
	if (ndev > 64)
		ndev = 64;
	nstarted = ndev;
	atomic_store(&started, 0);
	atomic_store(&met, 0);
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamCreate(&s[d]));
		ASSERT_EQ(gpsSuccess, gpsLaunchKernel(meet, gpsDim(1, 1, 1),
				gpsDim(1, 1, 1), NULL, s[d]));
	}
	for (d = 0; d < ndev; d++) {
		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		ASSERT_EQ(gpsSuccess, gpsStreamSynchronize(s[d]));
		ASSERT_EQ(gpsSuccess, gpsStreamDestroy(s[d]));
	}
	ASSERT_EQ(ndev, atomic_load(&met));
}

TEST_HARNESS_MAIN
