// SPDX-License-Identifier: GPL-2.0
/*
 * Description: gpsctl (build/tools/gpsctl, or $GPSCTL) against the real
 * driver.  What it shows equals the files it reads: the devices (node,
 * CPUs, memory, replica pages of GPS_IOC_DEVICE_INFO), every file of
 * /sys/kernel/gps (knobs and counters), every debugfs counter of every
 * device, the traffic matrix (rows are senders) and the subscriber
 * histogram, as text and as JSON (each view's checked by a strict
 * parser: the guests have no python).  In the guests of 2 devices: set
 * changes knobs (and shows those a knob brings along), the ranges,
 * defaults, units and rules it shows are the driver's table's and the
 * driver agrees at both ends of every range, without the table (an older
 * driver) it says so and still shows and sets the knobs, and its errors
 * (unknown knob, out of range, refused by the driver, not a number, not
 * root, bad command line) exit non-zero and change nothing.  watch
 * prints COUNT samples of one row per device and its rates follow the
 * driver (fences of one device show on that device only).  Every knob
 * is restored.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"
#include "json.h"

FIXTURE(gpsctl) {
	struct gps_fixture;
	char bin[PATH_MAX];
};

/* A knob's value as gpsctl shows it: the number, or the bracketed word. */
static int knob_str(const char *name, char *buf, size_t len)
{
	return gps_knob_value(name, buf, len);
}

static unsigned long long knob_num(const char *name)
{
	char buf[64];

	if (knob_str(name, buf, sizeof(buf)))
		return ~0ULL - 1;
	return strtoull(buf, NULL, 0);
}

static int set_str(const char *name, const char *val)
{
	char path[256];
	int fd, ret = 0;
	ssize_t n = strlen(val);

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static int is_writable(const char *name)
{
	char path[256];
	struct stat sb;

	snprintf(path, sizeof(path), GPS_SYSFS "%s", name);
	return !stat(path, &sb) && S_ISREG(sb.st_mode) && (sb.st_mode & 0222);
}

/* The knobs, in the driver's table's order: the fixture saved them all. */
#define NR_KNOBS	(self->knobs.n)
#define KNOB(i)		(self->knobs.name[i])

/* All of @fd, appended to a malloc'd string; NULL on failure. */
static char *slurp(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *t;
	ssize_t n;

	while (buf) {
		if (len + 1024 + 1 > cap) {
			t = realloc(buf, cap *= 2);
			if (!t)
				break;
			buf = t;
		}
		n = read(fd, buf + len, 1024);
		if (n <= 0) {
			buf[len] = '\0';
			return buf;
		}
		len += n;
	}
	free(buf);
	return NULL;
}

/*
 * Run gpsctl with @args (words split at spaces; no shell: each exec
 * counts under emulation): its exit status (-1 if it did not exit),
 * stdout in *out and stderr in *err (malloc'd, NUL-terminated).
 */
static int ctl(const char *bin, const char *args, char **out, char **err)
{
	char *argv[32], *copy = strdup(args), *w, *save;
	int o[2], e[2], status, n = 0;
	pid_t pid;

	*out = *err = NULL;
	if (!copy || pipe(o) || pipe(e))
		return -1;
	argv[n++] = (char *)bin;
	for (w = strtok_r(copy, " ", &save); w && n < 31;
	     w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		execv(bin, argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	free(copy);
	/* stdout first: gpsctl's stderr is a line or two, never a pipe full */
	*out = slurp(o[0]);
	*err = slurp(e[0]);
	close(o[0]);
	close(e[0]);
	if (waitpid(pid, &status, 0) != pid || !*out || !*err)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * gpsctl @args, which must exit @want (the test fails otherwise): its
 * stdout, stderr in *err.  ASSERT longjmp()s out of helpers too.
 */
static char *ctl_run(struct __test_metadata *_metadata, const char *bin,
		     int want, const char *args, char **err)
{
	char *out = NULL;
	int rc = ctl(bin, args, &out, err);

	if (rc != want)
		TH_LOG("gpsctl %s: status %d; stderr: %s", args, rc,
		       *err ? *err : "");
	ASSERT_EQ(want, rc);
	return out;
}

#define CTL(want, args, err)	ctl_run(_metadata, self->bin, want, args, err)

/* A JSON document, or the test fails. */
static struct jv *parse(struct __test_metadata *_metadata, const char *text)
{
	struct jv *v = json_parse(text);

	if (!v)
		TH_LOG("not JSON: %s", text);
	ASSERT_NE(NULL, v);
	return v;
}

#define PARSE(text)		parse(_metadata, text)

FIXTURE_SETUP(gpsctl)
{
	char self_exe[PATH_MAX], *env = getenv("GPSCTL");
	ssize_t n;

	if (gps_fixture_setup(_metadata, gps_fx(self), 1, NULL))
		return;
	if (env) {
		snprintf(self->bin, sizeof(self->bin), "%s", env);
	} else {
		/* build/tests/kmod/gpsctl -> build/tools/gpsctl */
		n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
		ASSERT_GT(n, 0);
		self_exe[n] = '\0';
		snprintf(self->bin, sizeof(self->bin),
			 "%s/../../tools/gpsctl", dirname(self_exe));
	}
	if (access(self->bin, X_OK)) {
		close(self->fd);
		self->fd = -1;
		SKIP(return, "%.200s not built (make tools)", self->bin);
	}
}

FIXTURE_TEARDOWN(gpsctl)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * Work that moves every counter of interest: device 0 writes every page
 * of a GPS allocation all devices subscribe to and fences, so that
 * write_faults, pages_harvested, blocks_pushed, bytes_pushed, fences and
 * the traffic from device 0 are not 0 (with 2 devices or more).  The
 * allocation stays (replica_pages) until the teardown.
 */
static void workload(struct __test_metadata *_metadata,
		     FIXTURE_DATA(gpsctl) *self)
{
	size_t len = 4 * GPS_PAGE_64K;

	/* Counters hold still while compared: no thread harvests kept pages. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	gps_fixture_alloc(_metadata, gps_fx(self), len, GPS_PAGE_64K, 1);
	memset(self->b.view[0], 0x5a, len);
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_fence(self->fd, GPS_FENCE_ALL, NULL));
}

/* --json: devices, every sysfs file, every debugfs counter, exactly. */
TEST_F(gpsctl, show_json_matches_files)
{
	struct jv *doc, *knobs, *counters, *devs;
	char *out, *err, buf[128], path[256], name[64];
	int d, n, nglobal = 0, nknob = 0;
	struct dirent *de;
	long long v;
	FILE *f;
	DIR *dir;

	workload(_metadata, self);
	out = CTL(0, "--json", &err);
	doc = PARSE(out);
	knobs = jv_get(doc, "knobs");
	counters = jv_get(doc, "counters");
	devs = jv_get(doc, "devices");
	ASSERT_EQ(self->nr, jv_len(devs));

	dir = opendir(GPS_SYSFS);
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		/* the table of knobs is no counter: table_shown checks it */
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "knobs"))
			continue;
		ASSERT_EQ(0, knob_str(de->d_name, buf, sizeof(buf)));
		if (is_writable(de->d_name)) {
			struct jv *val = jv_get(jv_get(knobs, de->d_name),
						"value");

			nknob++;
			if (val && val->type == JV_STR) {
				EXPECT_STREQ(buf, jv_str(val));
			} else {
				EXPECT_EQ(strtoull(buf, NULL, 0),
					  jv_u64(val, ~0ULL - 1))
					TH_LOG("knob %s", de->d_name);
			}
		} else {
			nglobal++;
			EXPECT_EQ(strtoull(buf, NULL, 0),
				  jv_u64(jv_get(counters, de->d_name),
					 ~0ULL - 1))
				TH_LOG("counter %s", de->d_name);
		}
	}
	closedir(dir);
	EXPECT_EQ(nknob, jv_len(knobs));
	EXPECT_EQ(nglobal, jv_len(counters));

	for (d = 0; d < self->nr; d++) {
		struct gps_device_args a = { .device = d };
		struct jv *dev = jv_at(devs, d), *c = jv_get(dev, "counters");

		ASSERT_EQ(0, ioctl(self->fd, GPS_IOC_DEVICE_INFO, &a));
		EXPECT_EQ(d, jv_u64(jv_get(dev, "device"), ~0ULL));
		EXPECT_EQ(a.node, jv_u64(jv_get(dev, "node"), ~0ULL));
		EXPECT_EQ(a.nr_cpus, jv_u64(jv_get(dev, "cpus"), ~0ULL));
		EXPECT_EQ(a.mem_total, jv_u64(jv_get(dev, "mem_total"), 0));
		EXPECT_EQ(a.replica_pages,
			  jv_u64(jv_get(dev, "replica_pages"), ~0ULL));
		/* every line of the device's stats, and only those */
		snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/stats",
			 a.node);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		n = 0;
		while (fscanf(f, "%63s %lld", name, &v) == 2) {
			n++;
			EXPECT_EQ(v, (long long)jv_u64(jv_get(c, name), ~0ULL))
				TH_LOG("node%d %s", a.node, name);
		}
		fclose(f);
		EXPECT_EQ(n, jv_len(c));
	}
	if (self->nr > 1)
		EXPECT_LT(0, jv_u64(jv_get(jv_get(jv_at(devs, 0), "counters"),
					   "write_faults"), 0));
	jv_free(doc);
	free(out);
	free(err);
}

/* The word after @key at the start of a line of @text (in @buf). */
static const char *line_field(const char *text, const char *key, int field,
			      char *buf, size_t len)
{
	const char *p = text;
	size_t k = strlen(key);

	while (p && *p) {
		if (!strncmp(p, key, k) && (p[k] == ' ')) {
			const char *q = p;
			int i;

			for (i = 0; i < field; i++) {
				q += strcspn(q, " \n");
				q += strspn(q, " ");
			}
			snprintf(buf, len, "%.*s", (int)strcspn(q, " \n"), q);
			return buf;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* The text view: each knob's value, each device's counters, the total. */
TEST_F(gpsctl, show_text_matches_files)
{
	char *out, *err, want[128], got[128], path[256], name[64], *table;
	long long v, sum;
	int i, d;
	FILE *f;

	workload(_metadata, self);
	out = CTL(0, "show", &err);
	snprintf(want, sizeof(want), "nr_devices %d", self->nr);
	EXPECT_NE(NULL, strstr(out, want));
	for (i = 0; i < NR_KNOBS; i++) {
		ASSERT_EQ(0, knob_str(KNOB(i), want, sizeof(want)));
		ASSERT_NE(NULL, line_field(out, KNOB(i), 1, got, sizeof(got)))
			TH_LOG("no line for %s", KNOB(i));
		EXPECT_STREQ(want, got);
	}
	/* the counters table: one column per device, then the total */
	table = strstr(out, "\nCOUNTER ");
	ASSERT_NE(NULL, table);
	snprintf(path, sizeof(path), GPS_DEBUGFS "node%d/stats",
		 gps_node_of(self->fd, 0));
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fscanf(f, "%63s %lld", name, &v) == 2) {
		sum = 0;
		for (d = 0; d < self->nr; d++) {
			v = gps_stat(gps_node_of(self->fd, d), name);
			sum += v;
			ASSERT_NE(NULL, line_field(table + 1, name, d + 1, got,
						   sizeof(got)));
			EXPECT_EQ(v, strtoll(got, NULL, 10))
				TH_LOG("%s of device %d", name, d);
		}
		ASSERT_NE(NULL, line_field(table + 1, name, self->nr + 1, got,
					   sizeof(got)));
		if (strcmp(got, "-")) {
			EXPECT_EQ(sum, strtoll(got, NULL, 10));
		}
	}
	fclose(f);
	free(out);
	free(err);
}

/* traffic: bytes and blocks of every (from, to) pair, text and JSON. */
TEST_F(gpsctl, traffic_matches_debugfs)
{
	char *out, *err, *txt, *terr, key[32], got[64];
	long long blocks, bytes, bytes01, bytes10;
	struct jv *doc;
	int s, d;

	ASSERT_EQ(0, gps_traffic(gps_node_of(self->fd, 0),
				 gps_node_of(self->fd, self->nr - 1),
				 &blocks, &bytes01));
	ASSERT_EQ(0, gps_traffic(gps_node_of(self->fd, self->nr - 1),
				 gps_node_of(self->fd, 0), &blocks, &bytes10));
	workload(_metadata, self);
	out = CTL(0, "--json traffic", &err);
	txt = CTL(0, "traffic", &terr);
	doc = PARSE(out);
	ASSERT_EQ(self->nr, jv_len(jv_get(doc, "devices")));
	ASSERT_EQ(self->nr, jv_len(jv_get(doc, "bytes")));
	ASSERT_EQ(self->nr, jv_len(jv_get(doc, "blocks")));
	for (s = 0; s < self->nr; s++) {
		snprintf(key, sizeof(key), "from %d", s);
		for (d = 0; d < self->nr; d++) {
			ASSERT_EQ(0, gps_traffic(gps_node_of(self->fd, s),
						 gps_node_of(self->fd, d),
						 &blocks, &bytes));
			EXPECT_EQ(bytes, (long long)jv_u64(jv_at(jv_at(
				  jv_get(doc, "bytes"), s), d), ~0ULL));
			EXPECT_EQ(blocks, (long long)jv_u64(jv_at(jv_at(
				  jv_get(doc, "blocks"), s), d), ~0ULL));
			/* the first "from S" line is the bytes matrix */
			ASSERT_NE(NULL, line_field(txt, key, d + 2, got,
						   sizeof(got)));
			EXPECT_EQ(bytes, strtoll(got, NULL, 10));
		}
	}
	/*
	 * the workload: device 0 pushed its pages to the last device (row 0,
	 * its column), which pushed nothing back (its row, column 0)
	 */
	if (self->nr > 1) {
		EXPECT_LE(bytes01 + 4 * GPS_PAGE_64K, jv_u64(jv_at(jv_at(
			  jv_get(doc, "bytes"), 0), self->nr - 1), 0));
		EXPECT_EQ(bytes10, jv_u64(jv_at(jv_at(jv_get(doc, "bytes"),
					  self->nr - 1), 0), ~0ULL));
	}
	jv_free(doc);
	free(out);
	free(err);
	free(txt);
	free(terr);
}

/* subscribers: the histogram of debugfs, and the allocation in it. */
TEST_F(gpsctl, subscribers_matches_debugfs)
{
	char *out, *err, *txt, *terr, key[16], got[64];
	long long pages, n, total = 0;
	struct jv *doc, *h;
	FILE *f;
	int i;

	workload(_metadata, self);
	out = CTL(0, "--json subscribers", &err);
	txt = CTL(0, "subscribers", &terr);
	doc = PARSE(out);
	h = jv_get(doc, "histogram");
	ASSERT_EQ(self->nr, jv_len(h));
	f = fopen(GPS_DEBUGFS "subscribers", "r");
	ASSERT_NE(NULL, f);
	i = 0;
	while (fscanf(f, "%lld %lld", &n, &pages) == 2) {
		EXPECT_EQ(n, (long long)jv_u64(jv_get(jv_at(h, i),
						      "subscribers"), 0));
		EXPECT_EQ(pages, (long long)jv_u64(jv_get(jv_at(h, i),
							  "pages"), ~0ULL));
		snprintf(key, sizeof(key), "%lld", n);
		ASSERT_NE(NULL, line_field(txt, key, 1, got, sizeof(got)));
		EXPECT_EQ(pages, strtoll(got, NULL, 10));
		total += pages;
		i++;
	}
	fclose(f);
	EXPECT_EQ(self->nr, i);
	EXPECT_EQ(total, (long long)jv_u64(jv_get(doc, "pages"), ~0ULL));
	/* the workload's 4 pages, subscribed by every device */
	EXPECT_LE(4, jv_u64(jv_get(jv_at(h, self->nr - 1), "pages"), 0));
	jv_free(doc);
	free(out);
	free(err);
	free(txt);
	free(terr);
}

/*
 * The checks of set, of the ranges and of the errors involve no device:
 * they run in the guests of 2 devices only, not in every guest of make
 * check (each gpsctl run costs up to 0.25 s in the debug kernel's).
 */
#define ONLY_WITH_2_DEVICES()						\
	do {								\
		if (self->nr != 2)					\
			SKIP(return, "knob checks: in guests of 2 devices"); \
	} while (0)

/* set: the knobs change, and what came along is shown. */
TEST_F(gpsctl, set_changes_knobs)
{
	unsigned long long cap = knob_num("queue_capacity");
	char *out, *err, want[128], policy[32];
	struct jv *doc, *c;

	ONLY_WITH_2_DEVICES();
	out = CTL(0, "set queue_capacity=64 dirty_wake=100", &err);
	EXPECT_EQ(64, knob_num("queue_capacity"));
	EXPECT_EQ(63, knob_num("queue_watermark"));
	EXPECT_EQ(100, knob_num("dirty_wake"));
	snprintf(want, sizeof(want), "queue_capacity: %llu -> 64\n", cap);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "queue_watermark: %llu -> 63\n",
		 cap - 1);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	free(out);
	free(err);

	/* a word, in JSON; the old word is the one saved */
	ASSERT_EQ(0, knob_str("track_policy", policy, sizeof(policy)));
	out = CTL(0, strcmp(policy, "read") ? "--json set track_policy=read" :
		  "--json set track_policy=touched", &err);
	doc = PARSE(out);
	c = jv_at(jv_get(doc, "changed"), 0);
	EXPECT_EQ(1, jv_len(jv_get(doc, "changed")));
	EXPECT_STREQ("track_policy", jv_str(jv_get(c, "name")));
	EXPECT_STREQ(policy, jv_str(jv_get(c, "old")));
	ASSERT_EQ(0, knob_str("track_policy", want, sizeof(want)));
	EXPECT_STREQ(want, jv_str(jv_get(c, "new")));
	EXPECT_STRNE(policy, want);
	jv_free(doc);
	free(out);
	free(err);

	/* the same value again: nothing changed; hex is a number */
	out = CTL(0, "set dirty_wake=100", &err);
	EXPECT_STREQ("no change\n", out);
	free(out);
	free(err);
	out = CTL(0, "--json set dirty_wake=100", &err);
	doc = PARSE(out);
	EXPECT_EQ(0, jv_len(jv_get(doc, "changed")));
	jv_free(doc);
	free(out);
	free(err);
	out = CTL(0, "set dirty_wake=0x80", &err);
	EXPECT_EQ(128, knob_num("dirty_wake"));
	free(out);
	free(err);
}

/*
 * gpsctl's range of every knob is the driver's: gpsctl sets every knob to
 * the low end of its range in one call, then to the high end in another
 * (in gpsctl's order, the capacity before the watermark it bounds), and
 * the driver refuses one past either end (EINVAL).  set_errors checks
 * that gpsctl refuses what is out of its range.
 */
TEST_F(gpsctl, ranges_agree_with_the_driver)
{
	char *out, *err, *args, val[32];
	unsigned long long lo, hi, end;
	struct jv *doc, *k;
	int i, n, pass;

	ONLY_WITH_2_DEVICES();
	out = CTL(0, "--json", &err);
	doc = PARSE(out);
	free(out);
	free(err);
	/* every knob of the driver has a range in gpsctl (or words) */
	for (i = 0; i < NR_KNOBS; i++) {
		k = jv_get(jv_get(doc, "knobs"), KNOB(i));
		ASSERT_NE(NULL, k) TH_LOG("gpsctl lacks %s", KNOB(i));
		if (jv_get(k, "values"))
			continue;
		ASSERT_LE(jv_u64(jv_get(k, "min"), ~0ULL),
			  jv_u64(jv_get(k, "max"), 0))
			TH_LOG("gpsctl has no range for %s", KNOB(i));
	}
	args = calloc(1, 4096);
	ASSERT_NE(NULL, args);
	/*
	 * Pass 0: every low end; pass 1: every high end but block_size's;
	 * pass 2: block_size's, with the capacity back at 512 (4096-byte
	 * blocks x 65536 entries are 300 MB per node: more than a guest's
	 * node has, and the knob's write is OOM-killed).
	 */
	for (pass = 0; pass < 3; pass++) {
		n = snprintf(args, 4096, "set%s",
			     pass == 2 ? " queue_capacity=512" : "");
		for (k = jv_get(doc, "knobs")->child; k; k = k->next) {
			if (jv_get(k, "values") ||
			    (pass == 1 && !strcmp(k->key, "block_size")) ||
			    (pass == 2 && strcmp(k->key, "block_size")))
				continue;
			end = jv_u64(jv_get(k, pass ? "max" : "min"), 0);
			n += snprintf(args + n, 4096 - n, " %s=%llu", k->key,
				      end);
		}
		out = CTL(0, args, &err);
		free(out);
		free(err);
		for (k = jv_get(doc, "knobs")->child; k; k = k->next) {
			if (jv_get(k, "values") ||
			    (pass == 2 && strcmp(k->key, "block_size")) ||
			    (pass == 1 && !strcmp(k->key, "block_size")))
				continue;
			lo = jv_u64(jv_get(k, "min"), 0);
			hi = jv_u64(jv_get(k, "max"), 0);
			end = pass ? hi : lo;
			EXPECT_EQ(end, knob_num(k->key)) TH_LOG("%s", k->key);
			/* one past this end */
			if (pass ? hi == ~0ULL : lo == 0)
				continue;
			snprintf(val, sizeof(val), "%llu",
				 pass ? hi + 1 : lo - 1);
			EXPECT_EQ(-EINVAL, set_str(k->key, val))
				TH_LOG("the driver takes %s=%s", k->key, val);
			EXPECT_EQ(end, knob_num(k->key));
		}
	}
	free(args);
	jv_free(doc);
}

/* A number's text or a string of a JSON document, or NULL. */
static const char *jv_text(const struct jv *v)
{
	return v && (v->type == JV_NUM || v->type == JV_STR) ? v->text : NULL;
}

/*
 * What gpsctl shows of each knob's range, default, unit and rule is the
 * driver's table (/sys/kernel/gps/knobs) word for word.
 */
TEST_F(gpsctl, table_shown)
{
	char line[512], name[64], type[8], lo[32], hi[32], def[64], unit[16];
	struct jv *doc, *k;
	char *out, *err;
	int n, lines = 0;
	FILE *f;

	ONLY_WITH_2_DEVICES();
	out = CTL(0, "--json", &err);
	EXPECT_STREQ("", err);
	doc = PARSE(out);
	f = fopen(GPS_SYSFS "knobs", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		n = 0;
		ASSERT_EQ(6, sscanf(line, "%63s %7s %31s %31s %63s %15s%n",
				    name, type, lo, hi, def, unit, &n))
			TH_LOG("%s", line);
		lines++;
		k = jv_get(jv_get(doc, "knobs"), name);
		ASSERT_NE(NULL, k) TH_LOG("gpsctl lacks %s", name);
		EXPECT_STREQ(def, jv_text(jv_get(k, "default")))
			TH_LOG("%s", name);
		if (!strcmp(type, "word")) {
			EXPECT_LT(0, jv_len(jv_get(k, "values")));
			continue;
		}
		EXPECT_STREQ(lo, jv_text(jv_get(k, "min"))) TH_LOG("%s", name);
		EXPECT_STREQ(hi, jv_text(jv_get(k, "max"))) TH_LOG("%s", name);
		if (strcmp(unit, "-")) {
			EXPECT_STREQ(unit, jv_str(jv_get(k, "unit")));
		} else {
			EXPECT_EQ(NULL, jv_get(k, "unit"));
		}
		if (line[n]) {
			EXPECT_STREQ(line + n + 1, jv_str(jv_get(k, "rule")));
		} else {
			EXPECT_EQ(NULL, jv_get(k, "rule"));
		}
	}
	fclose(f);
	EXPECT_EQ(lines, jv_len(jv_get(doc, "knobs")));
	EXPECT_EQ(NR_KNOBS, lines);
	jv_free(doc);
	free(out);
	free(err);
}

/*
 * A driver without the table (an older one; here a copy of
 * /sys/kernel/gps without the file, through $GPSCTL_SYSFS): gpsctl says
 * so once, shows every knob with no range, and set still writes.
 */
TEST_F(gpsctl, without_a_table)
{
	char dir[] = "/tmp/gpsctl-sysfs.XXXXXX", path[PATH_MAX], buf[128];
	char *out, *err, *txt, *terr;
	struct dirent *de;
	struct jv *doc, *k;
	int fd, n = 0;
	DIR *d;

	ONLY_WITH_2_DEVICES();
	ASSERT_NE(NULL, mkdtemp(dir));
	d = opendir(GPS_SYSFS);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "knobs"))
			continue;
		ASSERT_EQ(0, gps_knob_str(de->d_name, buf, sizeof(buf)));
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL,
			  is_writable(de->d_name) ? 0644 : 0444);
		ASSERT_LE(0, fd);
		ASSERT_EQ((ssize_t)strlen(buf), write(fd, buf, strlen(buf)));
		close(fd);
	}
	closedir(d);
	ASSERT_EQ(0, setenv("GPSCTL_SYSFS", dir, 1));
	out = CTL(0, "--json", &err);
	txt = CTL(0, "set dirty_wake=5", &terr);
	unsetenv("GPSCTL_SYSFS");
	EXPECT_NE(NULL, strstr(err, "/knobs: No such file or directory"))
		TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "older than gpsctl")) TH_LOG("%s", err);
	EXPECT_EQ(strchr(err, '\n'), strrchr(err, '\n')) TH_LOG("%s", err);
	doc = PARSE(out);
	for (k = jv_get(doc, "knobs")->child; k; k = k->next) {
		n++;
		EXPECT_EQ(NULL, jv_text(jv_get(k, "default")));
		EXPECT_EQ(NULL, jv_text(jv_get(k, "min")));
	}
	EXPECT_EQ(NR_KNOBS, n);
	/* the copy changed, not the driver */
	snprintf(buf, sizeof(buf), "dirty_wake: %lld -> 5\n",
		 gps_knob("dirty_wake"));
	EXPECT_STREQ(buf, txt);
	snprintf(path, sizeof(path), "%s/dirty_wake", dir);
	EXPECT_EQ(5, gps_read_num(path));
	EXPECT_EQ(gps_knob_saved(&self->knobs, "dirty_wake"),
		  gps_knob("dirty_wake"));
	jv_free(doc);
	free(out);
	free(err);
	free(txt);
	free(terr);
	d = opendir(dir);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	EXPECT_EQ(0, rmdir(dir));
}

/* Every error exits non-zero with its reason and changes nothing. */
TEST_F(gpsctl, set_errors_exit_nonzero)
{
	unsigned long long dw = knob_num("dirty_wake");
	unsigned long long ps = knob_num("page_size");
	static const struct {
		const char *args;
		int status;
		const char *says;
	} bad[] = {
		{ "set no_such_knob=1", 1, "unknown knob 'no_such_knob'" },
		{ "set dirty_wake=abc", 1, "not a number" },
		{ "set dirty_wake=-1", 1, "not a number" },
		{ "set page_size=5000", 1, "refused by the driver" },
		{ "set track_policy=bogus", 1, "not one of" },
		/* all or nothing: the good one first is not written */
		{ "set dirty_wake=77 page_size=1", 1, "out of range" },
		{ "set dirty_wake", 2, "expected KNOB=VALUE" },
		{ "frobnicate", 2, "unknown command" },
		{ "traffic extra", 2, "unexpected" },
		{ "watch -n 0", 2, "-n 0" },
	};
	char errpath[] = "/tmp/gpsctl-err.XXXXXX", msg[512] = "";
	char *out, *err;
	int status, fd;
	size_t i;
	pid_t pid;

	ONLY_WITH_2_DEVICES();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = CTL(bad[i].status, bad[i].args, &err);
		EXPECT_NE(NULL, strstr(err, bad[i].says))
			TH_LOG("gpsctl %s said: %s", bad[i].args, err);
		EXPECT_EQ(dw, knob_num("dirty_wake"));
		EXPECT_EQ(ps, knob_num("page_size"));
		free(out);
		free(err);
	}

	/* not root: user nobody gets told, and nothing changes */
	fd = mkstemp(errpath);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (dup2(fd, 2) < 0 || fchmod(fd, 0666) ||
		    setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(100);
		execl(self->bin, self->bin, "set", "dirty_wake=99", NULL);
		_exit(101);
	}
	status = gps_wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(1, WEXITSTATUS(status));
	ASSERT_LE(0, lseek(fd, 0, SEEK_SET));
	ASSERT_LT(0, read(fd, msg, sizeof(msg) - 1));
	EXPECT_NE(NULL, strstr(msg, "needs root")) TH_LOG("%s", msg);
	EXPECT_EQ(dw, knob_num("dirty_wake"));
	close(fd);
	unlink(errpath);
}

/* watch -n COUNT: a header, then COUNT samples of one row per device. */
TEST_F(gpsctl, watch_prints_count_rows)
{
	char *out, *err, *line, *save;
	int rows = 0, header = 0, dev;

	out = CTL(0, "watch -i 0.05 -n 3", &err);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "wfault/s")) {
			header++;
			continue;
		}
		/* "hh:mm:ss dev ..." */
		ASSERT_EQ(1, sscanf(line, "%*s %d", &dev)) TH_LOG("%s", line);
		EXPECT_EQ(rows % self->nr, dev);
		rows++;
	}
	EXPECT_EQ(1, header);
	EXPECT_EQ(3 * self->nr, rows);
	free(out);
	free(err);
}

/*
 * watch's rates: fences of device 0 show on device 0, only there; one
 * JSON document per line and sample, the interval measured.
 */
TEST_F(gpsctl, watch_rates_follow_the_driver)
{
	char *out, *err, *line, *save;
	struct jv *doc;
	int d, n = 0;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		for (;;)
			if (gps_fence(self->fd, 0, NULL))
				_exit(1);
	}
	out = CTL(0, "watch --json -i 0.2 -n 2", &err);
	kill(pid, SIGKILL);
	EXPECT_TRUE(gps_killed_by(gps_wait_child(pid), SIGKILL));
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		doc = PARSE(line);
		EXPECT_EQ(self->nr, jv_len(jv_get(doc, "devices")));
		EXPECT_LT(0.1, jv_num(jv_get(doc, "interval"), 0));
		for (d = 0; d < self->nr; d++) {
			double r = jv_num(jv_get(jv_get(jv_at(jv_get(doc,
					  "devices"), d), "rates"), "fences"),
					  -1);

			if (d == 0) {
				EXPECT_LT(0, r);
			} else {
				EXPECT_EQ(0, r);
			}
		}
		jv_free(doc);
		n++;
	}
	EXPECT_EQ(2, n);
	free(out);
	free(err);
}

TEST_HARNESS_MAIN
