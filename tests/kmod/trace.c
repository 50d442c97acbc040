// SPDX-License-Identifier: GPL-2.0
/*
 * Description: tools/gps-trace records the driver's trace events with a
 * real profiler and sums them per device.  The workload (this program
 * run as "trace workload") has device 0 store one byte into each of the
 * NR_STORES GPS pages of an allocation every device subscribes to, then
 * fence device 0 (no proactive harvest: harvest_interval_us 0): gps-trace
 * must count exactly NR_STORES write faults, one harvest pass
 * and NR_STORES pushed bytes per other device on device 0, harvests and
 * pushes, one fence of device 0, nothing on device 1, and the same growth
 * as the debugfs counters the events mirror.  Run through perf when the guest
 * carries it (tools/gps-vm -a /usr/bin/perf: then perf must be what
 * recorded) and through tracefs (-T) always, with tracefs's record-cmd
 * off while it records and as it was after; the text tables and the
 * event list agree with the key=value lines.
 */
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define NR_STORES	8

/* tracefs's record-cmd option: '0', '1', or 0 when it cannot be read. */
static char record_cmd(void)
{
	static const char *const paths[] = {
		"/sys/kernel/tracing/options/record-cmd",
		"/sys/kernel/debug/tracing/options/record-cmd",
	};
	char c = 0;
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]) && !c; i++) {
		FILE *f = fopen(paths[i], "r");

		if (f) {
			if (fread(&c, 1, 1, f) != 1)
				c = 0;
			fclose(f);
		}
	}
	return c;
}

/*
 * Device 0 stores into NR_STORES GPS pages, then fences; 0 or 1, and 3
 * if recorded through tracefs (GPS_TRACE_TRACEFS set) with record-cmd
 * on: that hooks sched_switch, patching __schedule under running CPUs,
 * which kills emulated guests (Documentation/testing.rst).
 */
static int workload(void)
{
	struct gps_buf b;
	unsigned char *p;
	int fd, i;

	const char *tracefs = getenv("GPS_TRACE_TRACEFS");

	if (tracefs && *tracefs == '1' && record_cmd() == '1') {
		fprintf(stderr, "trace: record-cmd on while recording\n");
		return 3;
	}
	fd = open(GPS_DEV, O_RDWR);
	if (fd < 0 || gps_alloc(fd, &b, NR_STORES * GPS_PAGE_64K, GPS_MEM_GPS,
				0, 0, GPS_PAGE_64K))
		return 1;
	p = gps_map(fd, &b, 0);
	if (!p)
		return 1;
	for (i = 0; i < NR_STORES; i++)
		p[i * GPS_PAGE_64K + i * 4099 % GPS_PAGE_64K] = i + 1;
	if (gps_fence(fd, 0, NULL) || gps_free(fd, &b))
		return 1;
	return close(fd) ? 1 : 0;
}

FIXTURE(trace) {
	struct gps_fixture;
	char tool[PATH_MAX];
	char self_exe[PATH_MAX];
	int perf;		/* the guest carries perf */
};

FIXTURE_VARIANT(trace) {
	int tracefs;		/* gps-trace -T */
};

FIXTURE_VARIANT_ADD(trace, profiler) {
	.tracefs = 0,
};

FIXTURE_VARIANT_ADD(trace, tracefs) {
	.tracefs = 1,
};

FIXTURE_SETUP(trace)
{
	static const char *const tries[] = {
		"%s/../../../tools/gps-trace",	/* build/tests/kmod */
		"/gps/tools/gps-trace",		/* a gps-vm guest */
	};
	char dir[PATH_MAX], *env = getenv("GPS_TRACE");
	ssize_t n;
	size_t i;

	static const char *const knobs[] = { "harvest_interval_us", NULL };

	if (gps_fixture_setup(_metadata, gps_fx(self), 2, knobs))
		return;
	/*
	 * No proactive harvest: a push thread that write-protects a page
	 * between a capture fault and the store's retry makes the store
	 * fault again (a second write fault for one store).  The fence
	 * harvests everything, once.
	 */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	n = readlink("/proc/self/exe", self->self_exe,
		     sizeof(self->self_exe) - 1);
	ASSERT_GT(n, 0);
	self->self_exe[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", self->self_exe);
	self->tool[0] = '\0';
	if (env)
		snprintf(self->tool, sizeof(self->tool), "%s", env);
	for (i = 0; !env && i < sizeof(tries) / sizeof(tries[0]); i++) {
		snprintf(self->tool, sizeof(self->tool), tries[i],
			 dirname(dir));
		if (!access(self->tool, X_OK))
			break;
	}
	if (access(self->tool, X_OK)) {
		close(self->fd);
		self->fd = -1;
		SKIP(return, "tools/gps-trace not found (GPS_TRACE=)");
	}
	self->perf = !access("/gps/usr/bin/perf", X_OK);
}

FIXTURE_TEARDOWN(trace)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/* gps-trace @opts over the workload: its stdout (malloc'd) and status. */
static char *run_trace(FIXTURE_DATA(trace) *self, const char *opts,
		       int *status)
{
	char cmd[3 * PATH_MAX];
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	FILE *p;

	snprintf(cmd, sizeof(cmd), "GPS_TRACE_TRACEFS=%d %s %s -- %s workload",
		 !!strstr(opts, "-T"), self->tool, opts, self->self_exe);
	p = popen(cmd, "r");
	if (!p || !buf)
		return NULL;
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			char *t = realloc(buf, cap *= 2);

			if (!t)
				break;
			buf = t;
		}
		n = fread(buf + len, 1, 4096, p);
		if (!n)
			break;
		len += n;
	}
	buf[len] = '\0';
	*status = pclose(p);
	return buf;
}

/* The value of @key on the "trace: dev=@dev " line of @out, or -1. */
static long long kv(const char *out, const char *dev, const char *key)
{
	char head[32], k[64];
	const char *line, *p;
	size_t n;

	snprintf(head, sizeof(head), "trace: dev=%s ", dev);
	line = strstr(out, head);
	if (!line)
		return -1;
	n = strcspn(line, "\n");
	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(line, k);
	if (!p || p >= line + n)
		return -1;
	return strtoll(p + strlen(k), NULL, 10);
}

static long long node_stat(int fd, int dev, const char *name)
{
	return gps_stat(gps_node_of(fd, dev), name);
}

/* The store + fence workload, exactly, and the counters' growth. */
TEST_F(trace, store_fence_events)
{
	static const char *const counters[][2] = {
		{ "write_faults", "write_faults" },
		{ "pages_harvested", "harvest_pages" },
		{ "bytes_pushed", "push_bytes" },
		{ "fences", "fences" },
	};
	long long before[2][4];
	char *out, want[64], cmd_before;
	int status, d, i;

	if (!variant->tracefs && !self->perf)
		SKIP(return, "no perf in the guest (tools/gps-vm -a /usr/bin/perf)");
	for (d = 0; d < 2; d++)
		for (i = 0; i < 4; i++)
			before[d][i] = node_stat(self->fd, d, counters[i][0]);
	cmd_before = record_cmd();
	out = run_trace(self, variant->tracefs ? "-T -k" : "-k", &status);
	ASSERT_NE(NULL, out);
	TH_LOG("%s", out);
	ASSERT_TRUE(WIFEXITED(status));
	/* 3: record-cmd was on while tracefs recorded */
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* and it is back as it was */
	EXPECT_EQ(cmd_before, record_cmd());
	snprintf(want, sizeof(want), "trace: source=%s ",
		 variant->tracefs ? "tracefs" : "perf");
	EXPECT_NE(NULL, strstr(out, want));

	EXPECT_EQ(NR_STORES, kv(out, "0", "write_faults"));
	EXPECT_LE(NR_STORES, kv(out, "0", "harvest_pages"));
	EXPECT_EQ(1, kv(out, "0", "harvests"));
	/* the push thread is off; the fence's helpers push for it */
	EXPECT_EQ(0, kv(out, "0", "pushes_by_thread"));
	EXPECT_GE(kv(out, "0", "pushes"), kv(out, "0", "pushes_by_helpers"));
	EXPECT_LE(1, kv(out, "0", "pushes"));
	EXPECT_EQ(NR_STORES * (self->nr - 1), kv(out, "0", "push_bytes"));
	EXPECT_LE(1, kv(out, "0", "push_replicas"));
	EXPECT_EQ(1, kv(out, "0", "fences"));
	EXPECT_EQ(0, kv(out, "0", "link_wait_ns"));
	EXPECT_EQ(0, kv(out, "1", "write_faults"));
	EXPECT_EQ(0, kv(out, "1", "pushes"));
	EXPECT_EQ(0, kv(out, "1", "fences"));
	EXPECT_EQ(0, kv(out, "all", "fences"));
	/* each event mirrors a debugfs counter: same growth */
	for (d = 0; d < 2; d++) {
		snprintf(want, sizeof(want), "%d", d);
		for (i = 0; i < 4; i++)
			EXPECT_EQ(node_stat(self->fd, d, counters[i][0]) -
				  before[d][i], kv(out, want, counters[i][1]))
				TH_LOG("device %d %s", d, counters[i][0]);
	}
	free(out);
}

/* The tables and the event list say what the key=value lines say. */
TEST_F(trace, tables_and_event_list)
{
	int status, faults = 0, fences = 0, dev, wf, hv, pages, pu, bytes;
	int wf0 = -1, pages0 = -1, bytes0 = -1;
	char *out, *line, *save;

	if (!variant->tracefs)
		SKIP(return, "once, through tracefs");
	out = run_trace(self, "-T -e -b 4", &status);
	ASSERT_NE(NULL, out);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_NE(NULL, strstr(out, "DEVICE NODE  WFAULTS"));
	EXPECT_NE(NULL, strstr(out, "timeline: 4 slices"));
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* DEVICE NODE WFAULTS HARVESTS PAGES PUSHES PUSH_BYTES */
		if (sscanf(line, "%d %*d %d %d %d %d %d", &dev, &wf, &hv,
			   &pages, &pu, &bytes) == 6 && dev == 0) {
			wf0 = wf;
			pages0 = pages;
			bytes0 = bytes;
		}
		if (strstr(line, " write_fault ") && strstr(line, "view=0 "))
			faults++;
		if (strstr(line, " fence ") && strstr(line, "dev=0 "))
			fences++;
	}
	EXPECT_EQ(NR_STORES, wf0);
	EXPECT_LE(NR_STORES, pages0);
	EXPECT_EQ(NR_STORES * (self->nr - 1), bytes0);
	EXPECT_EQ(NR_STORES, faults);
	EXPECT_EQ(1, fences);
	free(out);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "workload"))
		return workload();
	return test_harness_run(argc, argv);
}
