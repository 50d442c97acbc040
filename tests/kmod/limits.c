// SPDX-License-Identifier: GPL-2.0
/*
 * Description: limits and permissions.  Replicas are charged to the
 * memory cgroup of the process that allocates them, and a cgroup limit
 * turns an allocation that does not fit into -ENOMEM with nothing left
 * behind; the total cap max_bytes does the same; under a tight per-node
 * budget (node_max_bytes) an allocation still works, its devices without
 * a copy read remotely, and the missing copies are counted; /dev/gps is
 * usable by any user but only CAP_SYS_ADMIN changes a knob; a process
 * cannot map another process's allocation; one allocation has at most
 * max_maps mappings at once; with no cap set, replicas that
 * would take a node below its reserve fail softly, and the program that
 * filled the nodes goes on allocating host memory without an OOM kill.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define PG	GPS_PAGE_64K
#define CG_ROOT	"/sys/fs/cgroup"
#define CG	CG_ROOT "/gps-limits"

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

static long long read_ll(const char *path)
{
	char buf[64] = "";
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	fclose(f);
	return v;
}

/* A child cgroup with the memory controller; 0 or a reason to skip. */
static const char *cg_setup(void)
{
	struct stat st;
	char pid[32];

	if (stat(CG_ROOT "/cgroup.controllers", &st)) {
		mkdir(CG_ROOT, 0755);
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL))
			return "cannot mount cgroup2";
	}
	if (write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return "no memory controller";
	if (mkdir(CG, 0755) && errno != EEXIST)
		return "cannot create a cgroup";
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(CG "/cgroup.procs", pid))
		return "cannot enter the cgroup";
	return NULL;
}

static void cg_teardown(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	write_file(CG_ROOT "/cgroup.procs", pid);
	rmdir(CG);
}

FIXTURE(limits) {
	struct gps_fixture;
};

FIXTURE_SETUP(limits)
{
	static const char *const knobs[] = {
		"node_max_bytes", GPS_KNOBS_COMMON, NULL,
	};

	gps_fixture_setup(_metadata, gps_fx(self), 1, knobs);
}

FIXTURE_TEARDOWN(limits)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* Replicas count in the allocating process's memory cgroup. */
TEST_F(limits, replicas_charged_to_memcg)
{
	uint64_t size = 8 << 20;
	long long before, during, after;
	const char *why = cg_setup();
	struct gps_buf b;

	if (why)
		SKIP(return, "%s", why);
	before = read_ll(CG "/memory.current");
	ASSERT_GE(before, 0);
	ASSERT_EQ(0, gps_alloc(self->fd, &b, size, GPS_MEM_GPS, 0, 0, 0));
	during = read_ll(CG "/memory.current");
	/* Every device's replica is charged here. */
	EXPECT_GE(during - before, (long long)size * self->nr);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	after = read_ll(CG "/memory.current");
	EXPECT_LT(after - before, (long long)size);
	cg_teardown();
}

/* A cgroup limit: an allocation that does not fit fails whole. */
TEST_F(limits, memcg_limit_gives_enomem)
{
	long long replicas = gps_knob("replica_pages");
	const char *why = cg_setup();
	struct gps_buf b;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, write_file(CG "/memory.max", "16777216"));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &b, 64 << 20,
				     GPS_MEM_CONVENTIONAL, 0, 0, 0));
	ASSERT_EQ(replicas, gps_knob("replica_pages"));
	ASSERT_EQ(0, gps_knob("nr_allocs"));
	/* What fits still works. */
	ASSERT_EQ(0, gps_alloc(self->fd, &b, 1 << 20, GPS_MEM_CONVENTIONAL,
			       0, 0, 0));
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_EQ(0, write_file(CG "/memory.max", "max"));
	cg_teardown();
}

/* The max_bytes cap: over it, -ENOMEM and nothing half-made. */
TEST_F(limits, max_bytes_cap)
{
	long long replicas = gps_knob("replica_pages");
	struct gps_buf b;

	ASSERT_EQ(0, gps_set_knob("max_bytes", replicas * 4096 + (1 << 20)));
	ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &b, 2 << 20,
				     GPS_MEM_CONVENTIONAL, 0, 0, 0));
	ASSERT_EQ(replicas, gps_knob("replica_pages"));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, 1 << 20, GPS_MEM_CONVENTIONAL,
			       0, 0, 0));
	ASSERT_EQ(replicas + 256, gps_knob("replica_pages"));
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

/*
 * A failed allocation takes no view offsets, so failing on purpose cannot
 * use up the offset space for every user of /dev/gps: the next allocation
 * sits right after the last one that succeeded.
 */
TEST_F(limits, failed_allocs_take_no_offsets)
{
	struct gps_buf a, b, c;
	int i;

	ASSERT_EQ(0, gps_alloc(self->fd, &a, 1 << 20, GPS_MEM_CONVENTIONAL, 0,
			       0, 0));
	ASSERT_EQ(0, gps_set_knob("max_bytes",
				  gps_knob("replica_pages") * 4096 + (1 << 20)));
	/* one leaked failure would already move b; 64 show it is none */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(-ENOMEM, gps_alloc(self->fd, &c, 64 << 20,
					     GPS_MEM_CONVENTIONAL, 0, 0, 0));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, 1 << 20, GPS_MEM_CONVENTIONAL, 0,
			       0, 0));
	/* right after a's views: the devices' and the host's */
	ASSERT_EQ(a.args.offset + a.args.view_stride * (self->nr + 1),
		  b.args.offset);
	ASSERT_EQ(0, gps_free(self->fd, &b));
	ASSERT_EQ(0, gps_free(self->fd, &a));
}

/* A tight per-node budget: allocation works, missing copies counted. */
TEST_F(limits, node_budget_oversubscription)
{
	int pages = 16, nr = self->nr, d, p, missing = 0;
	long long failed0 = gps_stat_sum(self->fd, "subscribe_failed");
	struct gps_advise_args adv;
	struct gps_buf b;

	if (nr < 2)
		SKIP(return, "needs two devices");
	/* Room for 12 pages per node: every page fits somewhere. */
	ASSERT_EQ(0, gps_set_knob("node_max_bytes", 12 * PG));
	ASSERT_EQ(0, gps_alloc(self->fd, &b, pages * PG, GPS_MEM_GPS, 0, 0,
			       PG));
	for (p = 0; p < pages; p++) {
		uint64_t s = gps_subs(self->fd, &b, p);

		ASSERT_NE(0, s);
		missing += nr - __builtin_popcountll(s);
	}
	ASSERT_GT(missing, 0);
	ASSERT_EQ(missing, gps_stat_sum(self->fd, "subscribe_failed") - failed0);
	/* Over-budget devices read remotely and get correct values. */
	for (d = 0; d < nr; d++)
		ASSERT_NE(NULL, gps_map(self->fd, &b, d));
	for (p = 0; p < pages; p++)
		((volatile uint64_t *)b.view[p % nr])[p * PG / 8] = p + 1000;
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
	for (d = 0; d < nr; d++)
		for (p = 0; p < pages; p++)
			ASSERT_EQ(p + 1000,
				  ((volatile uint64_t *)b.view[d])[p * PG / 8]);
	/* Subscribing over budget is a hint that fails softly. */
	ASSERT_EQ(0, gps_advise(self->fd, &b, 0, pages * PG,
				GPS_ADVISE_SUBSCRIBE, nr - 1, &adv));
	ASSERT_GT(adv.pages_failed, 0);
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

static long long vmstat(const char *name)
{
	return gps_file_value("/proc/vmstat", name);
}

/* MemFree of /proc/meminfo, in kB; -1 if not found. */
static long long mem_free_kb(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* MemFree of NUMA node @nid (device @nid in the guests), in kB; or -1. */
static long long node_free_kb(int nid)
{
	char path[64], line[128];
	long long v = -1;
	int n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 nid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %d MemFree: %lld", &n, &v) == 2)
			break;
	fclose(f);
	return v;
}

#define FILL_CHUNK	(32 << 20)
#define FILL_MAX	256

/*
 * Child of nodes_fill_without_oom: allocate automatic GPS memory until
 * no node can hold another copy, check the data of the last allocation,
 * then allocate and touch host memory.  Exit 0, or the failed step.
 * Device 0 starts two chunks fuller than the fullest other node: nodes
 * that fill in step could all run out within one allocation, which then
 * fails with no replica ever left out; with the skew, device 0's copies
 * are left out (and counted) while the other nodes still hold them.
 */
static int fill_nodes(int fd, int nr)
{
	static struct gps_buf bufs[FILL_MAX];
	unsigned char *want = malloc(1 << 20);
	long long lead = 0, kb;
	struct gps_buf skew;
	int n = 0, i, ret;

	if (!want)
		return 10;
	for (i = 1; i < nr; i++) {
		kb = node_free_kb(0) - node_free_kb(i);
		if (kb > lead)
			lead = kb;
	}
	if (gps_alloc(fd, &skew, (lead << 10) + 2 * FILL_CHUNK,
		      GPS_MEM_CONVENTIONAL, 0, 0, 0))
		return 17;
	for (i = 0; i < (1 << 20); i++)
		want[i] = (unsigned char)(i * 13 + 5);
	while (n < FILL_MAX) {
		ret = gps_alloc(fd, &bufs[n], FILL_CHUNK, GPS_MEM_GPS, 0,
				n % nr, 0);
		if (ret == -ENOMEM)
			break;
		if (ret)
			return 11;
		n++;
	}
	if (n == FILL_MAX || n == 0)
		return 12;	/* never full, or nothing fitted */
	/* what was allocated works: every device sees a write */
	if (gps_write(fd, &bufs[n - 1], 0, want, 1 << 20))
		return 13;
	if (gps_replicas_differ(fd, &bufs[n - 1], nr, 0, want, 1 << 20) >= 0)
		return 14;
	/* and the program can still allocate: 4 x 16 MiB, touched */
	for (i = 0; i < 4; i++) {
		char *p = malloc(16 << 20);

		if (!p)
			return 15;
		memset(p, i + 1, 16 << 20);
		free(p);
	}
	while (n--)
		if (gps_free(fd, &bufs[n]))
			return 16;
	if (gps_free(fd, &skew))
		return 18;
	free(want);
	return 0;
}

/*
 * No cap set: allocating more than the nodes hold ends in -ENOMEM with
 * every node above its reserve, replicas left out are counted, and no
 * process is OOM-killed, neither the filler nor anyone else.
 */
TEST_F_TIMEOUT(limits, nodes_fill_without_oom, 600)
{
	long long ooms = vmstat("oom_kill");
	long long failed = gps_stat_sum(self->fd, "subscribe_failed");
	struct gps_usage start = gps_usage();
	int status;
	pid_t pid;

	ASSERT_GE(ooms, 0);
	ASSERT_EQ(0, gps_knob("max_bytes"));
	ASSERT_EQ(0, gps_knob("node_max_bytes"));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(fill_nodes(self->fd, self->nr));
	status = gps_wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("filler killed by signal %d", WTERMSIG(status));
	}
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(ooms, vmstat("oom_kill"));
	if (self->nr > 1)
		ASSERT_LT(failed, gps_stat_sum(self->fd, "subscribe_failed"));
	ASSERT_TRUE(gps_usage_eq(start, gps_usage_wait(start, 2000)));
}

/* Direct reclaims so far (allocstall_* of /proc/vmstat, every zone). */
static long long direct_reclaims(void)
{
	static const char *const zones[] = { "allocstall_dma",
		"allocstall_dma32", "allocstall_normal", "allocstall_movable",
		"allocstall_device" };
	long long sum = 0, v;
	unsigned int i;

	for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		v = vmstat(zones[i]);
		if (v > 0)
			sum += v;
	}
	return sum;
}

/*
 * The largest queue shape (65536 entries of 4 KiB blocks: 37 MiB a
 * device) while the child holds all but 400 MiB of the free memory: the
 * write fails with ENOMEM or succeeds, and nobody is OOM-killed for it;
 * the old shape stays on failure.  A refusal costs no direct reclaim: a
 * reshape that first drains the machine to its watermarks leaves
 * everyone else's allocations to the OOM killer meanwhile (CI's 4-node
 * guest saw it when an entry held a copy of its block: 272 MiB a
 * device).  Less than 400 MiB left is not safe for the fill itself: at
 * 128 MiB the child's own memset was OOM-killed on a 4-node guest.  In a
 * child, so that an OOM kill of the writer shows.  Filling a guest of 2
 * GiB takes emulated vCPUs on a busy host more than the default 30 s.
 */
TEST_F_TIMEOUT(limits, huge_queue_shape_without_oom, 180)
{
	long long ooms = vmstat("oom_kill");
	int status;
	pid_t pid;

	ASSERT_GE(ooms, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		long long free_kb = mem_free_kb();
		size_t hold = free_kb > 400 * 1024 ?
			      (size_t)(free_kb - 400 * 1024) << 10 : 0;
		char *p = hold ? mmap(NULL, hold, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) :
				 NULL;
		long long stalls;
		int ret;

		if (p == MAP_FAILED)
			_exit(5);
		if (p)
			memset(p, 1, hold);
		if (gps_set_knob("block_size", 4096))
			_exit(2);
		stalls = direct_reclaims();
		ret = gps_set_knob("queue_capacity", 65536);
		if (ret && ret != -ENOMEM)
			_exit(3);
		if (ret && gps_knob("queue_capacity") == 65536)
			_exit(4);
		if (ret && direct_reclaims() != stalls)
			_exit(6);
		_exit(0);
	}
	status = gps_wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("knob writer killed by signal %d", WTERMSIG(status));
	}
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(ooms, vmstat("oom_kill"));
}

/* Any user may use /dev/gps; only CAP_SYS_ADMIN changes knobs. */
TEST_F(limits, unprivileged_user)
{
	struct stat st;
	pid_t pid;
	int status;

	ASSERT_EQ(0, stat(GPS_DEV, &st));
	ASSERT_EQ(0666, st.st_mode & 0777);
	ASSERT_EQ(0, stat(GPS_SYSFS "queue_capacity", &st));
	ASSERT_EQ(0644, st.st_mode & 0777);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gps_buf b;
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(GPS_DEV, O_RDWR);
		if (fd < 0)
			_exit(11);
		if (gps_alloc(fd, &b, 1 << 16, GPS_MEM_GPS, 0, 0, 0))
			_exit(12);
		if (!gps_map(fd, &b, 0))
			_exit(13);
		((volatile char *)b.view[0])[0] = 1;
		if (gps_fence(fd, 0, NULL) || gps_free(fd, &b))
			_exit(14);
		/* Knobs: refused by the file mode already. */
		if (gps_set_knob("queue_capacity", 64) != -EACCES)
			_exit(15);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(gps_knob_saved(&self->knobs, "queue_capacity"),
		  gps_knob("queue_capacity"));
}

/* Another process's allocation cannot be mapped through its own file. */
TEST_F(limits, foreign_allocation_not_mappable)
{
	struct gps_buf b;
	pid_t pid;
	int status;

	ASSERT_EQ(0, gps_alloc(self->fd, &b, 1 << 16, GPS_MEM_GPS, 0, 0, 0));
	ASSERT_NE(NULL, gps_map(self->fd, &b, 0));
	((volatile char *)b.view[0])[0] = 42;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = open(GPS_DEV, O_RDWR);
		struct gps_free_args f = { .handle = b.args.handle };
		void *p;

		if (fd < 0)
			_exit(10);
		p = mmap(NULL, 1 << 16, PROT_READ, MAP_SHARED, fd,
			 b.args.offset);
		if (p != MAP_FAILED || errno != EINVAL)
			_exit(11);
		/* Nor freed, read or advised by handle. */
		if (!ioctl(fd, GPS_IOC_FREE, &f) || errno != EINVAL)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(42, ((volatile char *)b.view[0])[0]);
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

/*
 * One allocation has at most max_maps mappings (module parameter): one
 * more mmap, or a split of one by mprotect, fails with ENOMEM and leaves
 * the others as they were; unmapping one makes room again.
 */
TEST_F(limits, maps_per_allocation)
{
	long long max = gps_read_num("/sys/module/gps/parameters/max_maps");
	unsigned char **maps;
	struct gps_buf b;
	void *p;
	long long i;

	ASSERT_LE(0, max);
	if (!max)
		SKIP(return, "max_maps is 0: no limit");
	ASSERT_GE(4096, max);
	maps = calloc(max, sizeof(*maps));
	ASSERT_NE(NULL, maps);
	ASSERT_EQ(0, gps_alloc(self->fd, &b, 4 * 4096, GPS_MEM_GPS, 0, 0,
			       GPS_PAGE_4K));
	for (i = 0; i < max; i++) {
		p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, b.args.offset);
		ASSERT_NE(MAP_FAILED, p) TH_LOG("mapping %lld of %lld", i, max);
		maps[i] = p;
	}
	maps[0][0] = 7;
	p = mmap(NULL, 4 * 4096, PROT_READ, MAP_SHARED, self->fd,
		 b.args.offset);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(ENOMEM, errno);
	/* A split would make one more: refused, the mapping stays whole. */
	ASSERT_EQ(-1, mprotect(maps[1] + 4096, 4096, PROT_READ));
	ASSERT_EQ(ENOMEM, errno);
	maps[1][4096] = 8;
	ASSERT_EQ(0, munmap(maps[2], 4 * 4096));
	maps[2] = mmap(NULL, 4 * 4096, PROT_READ, MAP_SHARED, self->fd,
		       b.args.offset);
	ASSERT_NE(MAP_FAILED, maps[2]);
	ASSERT_EQ(7, maps[2][0]);
	ASSERT_EQ(8, maps[2][4096]);
	for (i = 0; i < max; i++)
		ASSERT_EQ(0, munmap(maps[i], 4 * 4096));
	free(maps);
	ASSERT_EQ(0, gps_free(self->fd, &b));
}

TEST_HARNESS_MAIN
