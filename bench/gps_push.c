// SPDX-License-Identifier: GPL-2.0
/*
 * gps_push: what publication costs, measured side by side in one run.
 *
 *  - push throughput: device 0 dirties an allocation (dense: every byte;
 *    sparse: one word per 4 KiB page), then a fence harvests and pushes
 *    it to every other subscriber.  Printed next to memcpy of the same
 *    bytes to the same destinations' nodes, from device 0's node, on
 *    device 0's CPUs, rep by rep between the pushes, on as many CPUs as
 *    the push (the fence's helpers: fence_threads, or every CPU of the
 *    node; the dense whole-page push is timed on the fence's CPU alone
 *    too, fence_threads = 1, against a memcpy on one).  Each figure
 *    has its min, median and max; a row whose memcpy median left the
 *    spread of the first row's memcpy of the same CPU count says
 *    baseline=moved, and the summary gives -1 for its ratio.
 *  - capture cost: one write fault + harvest + push cycle on a replicated
 *    page, next to a bare fault + re-arm cycle (write fault on a page with
 *    one copy, then MADV_DONTNEED to unmap it again).
 *  - write faults per GPS page per epoch of the dense writer (one is the
 *    goal: a fault captures the whole GPS page), from debugfs.
 *  - an empty fence: of one device, and of every device at once; and a
 *    host fence (what libgpsu issues before a kernel) with nothing stored
 *    through host views while device 0 holds dirty pages of its own,
 *    beside the fence of device 0 that the host release was before the
 *    host view (one fence publishing those pages, median of -r).
 *
 * Ends with one summary record of the ratios, so that a regression shows.
 *
 * Needs root (it turns the push thread off to time fences alone) and two
 * or more devices.  Under qemu's software emulation compare only the
 * ratios: absolute figures are the emulator's.
 *
 *   gps_push [-s MiB] [-r repeats] [-c cycles]
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/gps.h>

static int fd;
static int nr;
static unsigned int gps_page;

/* The record's figures, gathered for the summary line. */
static struct {
	double bulk, queue, bulk_one, sparse, capture, faults, fence_one,
	       fence_all, fence_host, fence_home;
	int cpus;			/* the fence's, and dense bulk's memcpy */
} sum;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "gps_push: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void knob(const char *name, const char *val, char *old, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/gps/%s", name);
	if (old) {
		f = fopen(path, "r");
		if (!f || !fgets(old, len, f))
			die(path);
		fclose(f);
	}
	f = fopen(path, "w");
	if (!f || fputs(val, f) < 0 || fclose(f))
		die(path);
}

/* The driver has knob @name (fence_threads came later than the others). */
static int has_knob(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/gps/%s", name);
	return access(path, W_OK) == 0;
}

struct buf {
	struct gps_alloc_args a;
	uint8_t *view[GPS_MAX_DEVICES];
};

static void alloc_map(struct buf *b, size_t size, uint32_t kind)
{
	int d;

	memset(b, 0, sizeof(*b));
	b->a.size = size;
	b->a.kind = kind;
	if (ioctl(fd, GPS_IOC_ALLOC, &b->a))
		die("GPS_IOC_ALLOC");
	for (d = 0; d < nr; d++) {
		b->view[d] = mmap(NULL, b->a.alloc_size, PROT_READ | PROT_WRITE,
				  MAP_SHARED, fd,
				  b->a.offset + d * b->a.view_stride);
		if (b->view[d] == MAP_FAILED)
			die("mmap");
	}
}

static void release(struct buf *b)
{
	struct gps_free_args f = { .handle = b->a.handle };
	int d;

	for (d = 0; d < nr; d++)
		munmap(b->view[d], b->a.alloc_size);
	if (ioctl(fd, GPS_IOC_FREE, &f))
		die("GPS_IOC_FREE");
}

/* write_faults of every node in debugfs; -1 if debugfs is not there. */
static long long write_faults(void)
{
	char path[96], line[128];
	long long total = 0, v;
	int node, found = 0;
	FILE *f;

	for (node = 0; node < 64; node++) {
		snprintf(path, sizeof(path),
			 "/sys/kernel/debug/gps/node%d/stats", node);
		f = fopen(path, "r");
		if (!f)
			continue;
		found = 1;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "write_faults %lld", &v) == 1)
				total += v;
		fclose(f);
	}
	return found ? total : -1;
}

static double fence0(struct gps_fence_args *out)
{
	struct gps_fence_args f = { .device = 0 };
	double t = now();

	if (ioctl(fd, GPS_IOC_FENCE, &f))
		die("GPS_IOC_FENCE");
	t = now() - t;
	if (out)
		*out = f;
	return t;
}

/* memcpy of @len bytes to @dests buffers, as the push does. */
static double time_memcpy(uint8_t *src, uint8_t **dst, int dests, size_t len,
			  size_t stride, size_t chunk)
{
	double t = now();
	size_t off;
	int k;

	for (k = 0; k < dests; k++)
		for (off = 0; off < len; off += stride)
			memcpy(dst[k] + off, src + off, chunk);
	return now() - t;
}

/* One share of a memcpy on several CPUs. */
struct share {
	uint8_t *src, **dst;
	int dests;
	size_t off, len;
};

static void *copy_share(void *p)
{
	struct share *s = p;
	int k;

	for (k = 0; k < s->dests; k++)
		memcpy(s->dst[k] + s->off, s->src + s->off, s->len);
	return NULL;
}

/* The same memcpy split over @cpus threads, as the fence's helpers
 * split a push (the threads inherit the process's CPUs: device 0's). */
static double time_memcpy_par(uint8_t *src, uint8_t **dst, int dests,
			      size_t len, int cpus)
{
	struct share sh[64];
	pthread_t th[64];
	size_t per = (len / cpus + 4095) & ~(size_t)4095;
	double t;
	int i, n = 0;

	t = now();
	for (i = 0; i < cpus && (size_t)i * per < len; i++, n++) {
		sh[i] = (struct share){ src, dst, dests, i * per,
					len - i * per < per ? len - i * per :
					per };
		if (pthread_create(&th[i], NULL, copy_share, &sh[i]))
			die("pthread_create");
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return now() - t;
}

/* min, median and max of @n samples, in @v's order lost */
struct spread {
	double min, med, max;
};

static struct spread spread_of(double *v, int n)
{
	struct spread s;

	s.med = median(v, n);	/* sorts */
	s.min = v[0];
	s.max = v[n - 1];
	return s;
}

/*
 * A baseline held still when its median lies within the spread of the
 * reference baseline of the same kind (the first row's), widened by its
 * own: otherwise the ratio says more about memcpy than about the push.
 */
static int baseline_moved(const struct spread *b, const struct spread *ref)
{
	double lo = ref->min - (b->med - b->min);
	double hi = ref->max + (b->max - b->med);

	return b->med < lo || b->med > hi;
}

static void print_spread(const char *name, const struct spread *s,
			 double bytes)
{
	/* GB/s: the fastest sample is the smallest time */
	printf(" %s_GBps=%.3f %s_GBps_min=%.3f %s_GBps_max=%.3f", name,
	       bytes / s->med / 1e9, name, bytes / s->max / 1e9, name,
	       bytes / s->min / 1e9);
}

/* CPUs the fence of device 0 pushes with: fence_threads, or its node's */
static int fence_cpus(int node)
{
	char path[] = "/sys/kernel/gps/fence_threads", buf[32] = "";
	struct bitmask *cpus = numa_allocate_cpumask();
	FILE *f = fopen(path, "r");
	int n = 0;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			n = atoi(buf);
		fclose(f);
	}
	if (n <= 0 && !numa_node_to_cpus(node, cpus))
		n = numa_bitmask_weight(cpus);
	numa_free_cpumask(cpus);
	return n < 1 ? 1 : n > 64 ? 64 : n;
}

static int dev_node(int d)
{
	struct gps_device_args a = { .device = d };

	if (ioctl(fd, GPS_IOC_DEVICE_INFO, &a))
		die("GPS_IOC_DEVICE_INFO");
	return a.node;
}

static void bench_push(size_t size, int reps)
{
	double tp[64], tm[64], tms[64], tmp[64];
	struct gps_fence_args f = {};
	uint8_t *src, *dst[GPS_MAX_DEVICES];
	size_t pages = size / 4096, i;
	struct spread ref[2] = {};	/* one CPU, the fence's CPUs */
	int node0 = dev_node(0), cpus;
	struct buf b;
	int r, k;

	/*
	 * Baselines in the push's conditions: on device 0's CPUs, from
	 * its node into each receiver's node, interleaved with the pushes
	 * rep by rep, on as many CPUs as the push used.
	 */
	if (numa_run_on_node(node0))
		die("numa_run_on_node");
	cpus = fence_cpus(node0);
	alloc_map(&b, size, GPS_MEM_GPS);
	src = numa_alloc_onnode(size, node0);
	if (!src)
		die("numa_alloc_onnode");
	memset(src, 2, size);
	for (k = 0; k < nr - 1; k++) {
		dst[k] = numa_alloc_onnode(size, dev_node(k + 1));
		if (!dst[k])
			die("numa_alloc_onnode");
		memset(dst[k], 1, size);
	}

	/*
	 * Dense: every byte of every page changes; pages pushed whole
	 * (bulk_blocks as set) by the fence's CPUs, through the queue alone
	 * (bulk_blocks 0), and whole by the fence's own CPU (fence_threads
	 * 1): each against a memcpy on as many CPUs.
	 */
	sum.bulk_one = -1;
	for (k = 0; k < 3; k++) {
		static const char *const paths[] = { "bulk", "queue",
						     "bulk_one_cpu" };
		char bulk[32], threads[32];
		int par = k == 0 ? cpus : 1, moved;
		struct spread sp, sm;
		double bytes = (double)size * (nr - 1), ratio;

		long long wf = write_faults();

		if (k == 2 && !has_knob("fence_threads"))
			break;
		if (k == 1)
			knob("bulk_blocks", "0", bulk, sizeof(bulk));
		if (k == 2)
			knob("fence_threads", "1", threads, sizeof(threads));
		for (r = 0; r < reps; r++) {
			memset(b.view[0], r + 1 + k * 64, size);
			tp[r] = fence0(&f);
			tm[r] = par > 1 ?
				time_memcpy_par(src, dst, nr - 1, size, par) :
				time_memcpy(src, dst, nr - 1, size, size, size);
		}
		if (wf >= 0 && k == 0)
			sum.faults = (double)(write_faults() - wf) / reps /
				     (size / gps_page);
		if (k == 1)
			knob("bulk_blocks", bulk, NULL, 0);
		if (k == 2)
			knob("fence_threads", threads, NULL, 0);
		sp = spread_of(tp, reps);
		sm = spread_of(tm, reps);
		if (!ref[par > 1].med)
			ref[par > 1] = sm;
		moved = baseline_moved(&sm, &ref[par > 1]);
		ratio = sm.med / sp.med;
		printf("push_dense: path=%s size_MiB=%zu dests=%d cpus=%d "
		       "bytes_pushed=%llu", paths[k], size >> 20, nr - 1,
		       par, (unsigned long long)f.bytes_pushed);
		print_spread("push", &sp, (double)f.bytes_pushed);
		print_spread("memcpy", &sm, bytes);
		printf(" ratio=%.3f baseline=%s\n", ratio,
		       moved ? "moved" : "held");
		*(k == 2 ? &sum.bulk_one : k ? &sum.queue : &sum.bulk) =
			moved ? -1 : ratio;
	}
	sum.cpus = cpus;

	/* Sparse: one 8-byte word per 4 KiB page, on the fence's CPUs. */
	for (r = 0; r < reps; r++) {
		for (i = 0; i < pages; i++)
			((volatile uint64_t *)b.view[0])[i * 512] = r + 7;
		tp[r] = fence0(&f);
		tms[r] = time_memcpy(src, dst, nr - 1, size, 4096, 8);
		tmp[r] = cpus > 1 ?
			 time_memcpy_par(src, dst, nr - 1, size, cpus) :
			 time_memcpy(src, dst, nr - 1, size, size, size);
	}
	{
		struct spread sp = spread_of(tp, reps);
		struct spread sw = spread_of(tmp, reps);
		int moved = baseline_moved(&sw, &ref[cpus > 1]);

		printf("push_sparse: pages=%zu dests=%d cpus=%d "
		       "bytes_pushed=%llu blocks_pushed=%llu push_s=%.6f "
		       "push_s_min=%.6f push_s_max=%.6f "
		       "memcpy_same_bytes_s=%.6f memcpy_whole_pages_s=%.6f "
		       "memcpy_whole_pages_s_min=%.6f "
		       "memcpy_whole_pages_s_max=%.6f "
		       "ratio_vs_whole_pages=%.3f baseline=%s\n",
		       pages, nr - 1, cpus, (unsigned long long)f.bytes_pushed,
		       (unsigned long long)f.blocks_pushed, sp.med, sp.min,
		       sp.max, median(tms, reps), sw.med, sw.min, sw.max,
		       sw.med / sp.med, moved ? "moved" : "held");
		sum.sparse = moved ? -1 : sw.med / sp.med;
	}
	for (k = 0; k < nr - 1; k++)
		numa_free(dst[k], size);
	numa_free(src, size);
	release(&b);
}

static void bench_capture(int cycles)
{
	volatile uint8_t *p;
	struct buf one, rep;
	double bare, capture;
	int i;

	/* Bare: write fault on a single-copy page, unmap, again. */
	alloc_map(&one, 4096, GPS_MEM_CONVENTIONAL);
	p = one.view[0];
	bare = now();
	for (i = 0; i < cycles; i++) {
		p[0] = i;
		if (madvise((void *)p, 4096, MADV_DONTNEED))
			die("madvise");
	}
	bare = (now() - bare) / cycles;
	release(&one);

	/* Capture: write fault with twin, then harvest + push by a fence. */
	alloc_map(&rep, 4096, GPS_MEM_GPS);
	p = rep.view[0];
	capture = now();
	for (i = 0; i < cycles; i++) {
		p[0] = i;
		fence0(NULL);
	}
	capture = (now() - capture) / cycles;
	release(&rep);

	printf("capture_cycle: cycles=%d bare_fault_rearm_us=%.2f "
	       "capture_fault_harvest_push_us=%.2f ratio=%.2f\n",
	       cycles, bare * 1e6, capture * 1e6, capture / bare);
	sum.capture = capture / bare;
}

/* Fences with nothing to publish: what a kernel end costs at least. */
static void bench_empty_fence(int cycles)
{
	struct gps_fence_args f = { .device = GPS_FENCE_ALL };
	double one, all;
	int i;

	one = now();
	for (i = 0; i < cycles; i++)
		fence0(NULL);
	one = (now() - one) / cycles;
	all = now();
	for (i = 0; i < cycles; i++)
		if (ioctl(fd, GPS_IOC_FENCE, &f))
			die("GPS_IOC_FENCE");
	all = (now() - all) / cycles;
	printf("fence_empty: cycles=%d one_device_us=%.2f all_devices_us=%.2f\n",
	       cycles, one * 1e6, all * 1e6);
	sum.fence_one = one * 1e6;
	sum.fence_all = all * 1e6;
}

/*
 * Device 0 writes @pages small pages (a kernel running on it); the host
 * stored nothing.  A host fence then has nothing to do, where a fence of
 * device 0 harvests and pushes them all.
 */
static void bench_host_fence(int cycles, int reps)
{
	struct gps_fence_args h = {
		.flags = GPS_FENCE_MASK | GPS_FENCE_HOST,
	};
	const size_t pages = 256;
	double host[64], home[64], t;
	struct buf b;
	size_t i;
	int r, c;

	alloc_map(&b, pages * 4096, GPS_MEM_GPS);
	for (r = 0; r < reps; r++) {
		for (i = 0; i < pages; i++)
			b.view[0][i * 4096 + r] = r + 1;
		t = now();
		for (c = 0; c < cycles; c++)
			if (ioctl(fd, GPS_IOC_FENCE, &h))
				die("GPS_IOC_FENCE host");
		host[r] = (now() - t) / cycles;
		if (h.pages_harvested)
			die("host fence harvested device 0's pages");
		home[r] = fence0(NULL);
	}
	release(&b);
	sum.fence_host = median(host, reps) * 1e6;
	sum.fence_home = median(home, reps) * 1e6;
	printf("fence_host: cycles=%d reps=%d device0_dirty_pages=%zu "
	       "host_fence_us=%.2f device0_fence_us=%.2f\n", cycles, reps,
	       pages, sum.fence_host, sum.fence_home);
}

int main(int argc, char **argv)
{
	struct gps_version_args v = {};
	size_t mib = 32;
	int reps = 5, cycles = 2000, opt;
	char old[32];

	while ((opt = getopt(argc, argv, "s:r:c:")) != -1) {
		switch (opt) {
		case 's':
			mib = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'c':
			cycles = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-s MiB] [-r repeats] [-c cycles]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > 64 || cycles < 1 || !mib)
		return 2;
	fd = open("/dev/gps", O_RDWR);
	if (fd < 0)
		die("/dev/gps");
	if (ioctl(fd, GPS_IOC_VERSION, &v))
		die("GPS_IOC_VERSION");
	nr = v.nr_devices;
	if (nr < 2) {
		printf("gps_push: needs two devices, have %d\n", nr);
		return 4;
	}
	knob("harvest_interval_us", "0", old, sizeof(old));
	printf("gps_push: devices=%d page_size=%u block_size=%u\n", nr,
	       v.page_size, v.block_size);
	gps_page = v.page_size;
	bench_push(mib << 20, reps);
	bench_capture(cycles);
	bench_empty_fence(cycles);
	bench_host_fence(cycles / 10 + 1, reps);
	printf("gps_push_summary: devices=%d cpus=%d "
	       "faults_per_gps_page_epoch=%.2f "
	       "capture_vs_bare=%.2f dense_bulk_vs_memcpy=%.3f "
	       "dense_queue_vs_memcpy=%.3f dense_bulk_one_cpu_vs_memcpy=%.3f "
	       "sparse_vs_whole_pages=%.3f "
	       "fence_empty_one_us=%.2f fence_empty_all_us=%.2f "
	       "fence_host_us=%.2f fence_device0_dirty_us=%.2f\n", nr,
	       sum.cpus, sum.faults, sum.capture, sum.bulk, sum.queue, sum.bulk_one,
	       sum.sparse, sum.fence_one, sum.fence_all, sum.fence_host,
	       sum.fence_home);
	knob("harvest_interval_us", old, NULL, 0);
	close(fd);
	return 0;
}
