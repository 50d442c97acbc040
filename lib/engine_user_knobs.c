// SPDX-License-Identifier: MIT
/*
 * The native engine's knobs and counters, by the driver's names
 * (knob_table.c), and their publication for gpsctl.
 *
 * Knobs: per process, each at the driver's default, or at
 * $GPSU_KNOB_<name> when set at start. The knobs the engine honours take
 * any value the driver would take (page_size, block_size, queue_capacity,
 * queue_watermark, link_bandwidth, link_latency_ns, harvest_interval_us,
 * harvest_ahead, bulk_blocks, fence_threads, max_bytes, node_max_bytes);
 * every other knob holds what the engine does (node_reserve_bytes 0: no
 * reserve; ...) or, where no value says
 * it, the default, and refuses any other value with ENOTSUP.
 *
 * Counters: per device, the driver's names; those the engine does not
 * keep are refused with ENOTSUP, never reported as 0.
 *
 * Publication: a directory per process, $GPSU_STATS_DIR, else
 * $XDG_RUNTIME_DIR/gps, else /tmp/gps-<uid> (the user's own, no one else
 * may write it: else nothing is published), holding <pid>/ laid out as
 * the driver's files are (sys/: the knobs and their table knobs,
 * nr_devices; debug/node<d>/stats: device d's counters; devices: one
 * line per device), rewritten by a thread every GPSU_PUBLISH_MS and
 * removed at exit. gpsctl --pid reads it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "engine.h"
#include "engine_user.h"

#define GPSU_PUBLISH_MS		200

/* What the engine does, for the knobs it cannot change: -1, the default */
static const struct {
	int knob;
	uint64_t value;
} gpsu_user_fixed[] = {
	{ GPSU_K(dirty_wake), (uint64_t)-1 },
	{ GPSU_K(capture_bytes), 4096 },		/* PAGEMAP_SCAN's page */
	{ GPSU_K(keep_writable_ms), 0 },		/* kept by count, not time */
};

/* The counters the engine keeps (engine_user*.c count them). */
static const int gpsu_user_kept[] = {
	GPSU_S(write_faults), GPSU_S(pages_harvested), GPSU_S(blocks_queued),
	GPSU_S(blocks_merged), GPSU_S(blocks_pushed), GPSU_S(bytes_pushed),
	GPSU_S(blocks_pushed_early), GPSU_S(fences), GPSU_S(host_fences),
	GPSU_S(host_write_faults),
	GPSU_S(harvest_ns), GPSU_S(protect_ns), GPSU_S(fence_ns),
	GPSU_S(queue_hwm),
	GPSU_S(replica_pages), GPSU_S(twin_pages), GPSU_S(link_wait_ns),
	GPSU_S(link_exposed_ns),
	GPSU_S(queue_capacity), GPSU_S(thread_rounds),
	GPSU_S(blocks_bulk), GPSU_S(pages_helped), GPSU_S(subscribe_failed),
	GPSU_S(migrations), GPSU_S(bytes_migrated), GPSU_S(thrash_pins),
};

static struct {
	pthread_mutex_t lock;		/* changes of knobs; publication */
	uint64_t knob[GPSU_NKNOBS];	/* read with gpsu_user_knob() */
	uint64_t cnt[GPSU_MAX_DEVICES][GPSU_NSTATS];	/* atomic */
	bool kept[GPSU_NSTATS];
	int ndev;
	char dir[256];			/* <root>/<pid>, "" when none */
	pid_t owner;			/* the process that publishes */
	bool stop;			/* the thread's, under lock */
	pthread_cond_t wake;
	pthread_t thread;
	bool running;
	struct gpsu_user_knob_hooks hooks;	/* the engine's, set at init */
} gpsu_uk = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

/* Knob @i is held at *@v (the engine cannot change it), or honoured. */
static bool gpsu_user_held(int i, uint64_t *v)
{
	size_t f;

	for (f = 0; f < sizeof(gpsu_user_fixed) / sizeof(gpsu_user_fixed[0]);
	     f++)
		if (gpsu_user_fixed[f].knob == i) {
			*v = gpsu_user_fixed[f].value == (uint64_t)-1 ?
			     gpsu_knobs[i].def : gpsu_user_fixed[f].value;
			return true;
		}
	return false;
}

uint64_t gpsu_user_knob(int i)
{
	return __atomic_load_n(&gpsu_uk.knob[i], __ATOMIC_RELAXED);
}

/* ---- counters -------------------------------------------------------- */

void gpsu_user_count(int d, int i, uint64_t n)
{
	__atomic_fetch_add(&gpsu_uk.cnt[d][i], n, __ATOMIC_RELAXED);
}

void gpsu_user_count_max(int d, int i, uint64_t n)
{
	uint64_t old = __atomic_load_n(&gpsu_uk.cnt[d][i], __ATOMIC_RELAXED);

	while (n > old &&
	       !__atomic_compare_exchange_n(&gpsu_uk.cnt[d][i], &old, n, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int gpsu_user_counter(int device, int i, uint64_t *v)
{
	if (device < 0 || device >= gpsu_uk.ndev)
		return EINVAL;
	if (!gpsu_uk.kept[i])
		return ENOTSUP;
	if (i == GPSU_S(queue_capacity))
		*v = gpsu_user_knob(GPSU_K(queue_capacity));
	else
		*v = __atomic_load_n(&gpsu_uk.cnt[device][i],
				     __ATOMIC_RELAXED);
	return 0;
}

/* ---- knobs ----------------------------------------------------------- */

int gpsu_user_knob_get(int i, uint64_t *v)
{
	*v = gpsu_user_knob(i);
	return 0;
}

/* $GPSU_TEST_KNOB_DELAY_US: the first set waits that long first (tests). */
static void gpsu_user_knob_test_delay(void)
{
	static atomic_bool used;
	const char *e = getenv("GPSU_TEST_KNOB_DELAY_US");

	if (e && *e && !atomic_exchange(&used, true))
		usleep((useconds_t)strtoul(e, NULL, 10));
}

unsigned int gpsu_user_knob_set(int i, uint64_t v, int *err)
{
	uint64_t vals[GPSU_NKNOBS], held;
	unsigned int changed = 0;
	int ret, k;

	gpsu_user_knob_test_delay();
	pthread_mutex_lock(&gpsu_uk.lock);
	for (k = 0; k < GPSU_NKNOBS; k++)
		vals[k] = gpsu_user_knob(k);
	ret = gpsu_knob_apply(vals, i, v);
	/* a knob the engine cannot change keeps what it does */
	for (k = 0; !ret && k < GPSU_NKNOBS; k++)
		if (gpsu_user_held(k, &held) && vals[k] != held)
			ret = ENOTSUP;
	/*
	 * The rows' flags, the driver's rule, of what changed against what
	 * is stored, under the lock: racing sets each see their change.
	 */
	for (k = 0; !ret && k < GPSU_NKNOBS; k++)
		if (vals[k] != gpsu_user_knob(k))
			changed |= gpsu_knobs[k].flags;
	if (!ret && (changed & GPS_KNOB_QUEUE))
		ret = gpsu_uk.hooks.reshape(
			(unsigned int)vals[GPSU_K(queue_capacity)],
			(unsigned int)vals[GPSU_K(queue_watermark)],
			(unsigned int)vals[GPSU_K(block_size)]);
	if (!ret)
		for (k = 0; k < GPSU_NKNOBS; k++)
			__atomic_store_n(&gpsu_uk.knob[k], vals[k],
					 __ATOMIC_RELAXED);
	/* after the stores: a round charging after it sees the new link */
	if (!ret && (changed & GPS_KNOB_LINK_RESET))
		gpsu_uk.hooks.link_reset();
	/* the publisher shows it at once */
	if (!ret)
		pthread_cond_signal(&gpsu_uk.wake);
	pthread_mutex_unlock(&gpsu_uk.lock);
	*err = ret;
	return ret ? 0 : changed;
}

/*
 * Every knob at its default or at what the engine does, then
 * $GPSU_KNOB_<name> (a number, or a word of a knob of words) in the
 * list's order; a bad one is said on stderr and EINVAL.
 */
int gpsu_user_knobs_init(int ndev, const struct gpsu_user_knob_hooks *hooks)
{
	uint64_t held;
	size_t s;
	int i, w;

	gpsu_uk.hooks = *hooks;
	memset(gpsu_uk.cnt, 0, sizeof(gpsu_uk.cnt));
	memset(gpsu_uk.kept, 0, sizeof(gpsu_uk.kept));
	for (s = 0; s < sizeof(gpsu_user_kept) / sizeof(gpsu_user_kept[0]); s++)
		gpsu_uk.kept[gpsu_user_kept[s]] = true;
	gpsu_uk.ndev = ndev;
	for (i = 0; i < GPSU_NKNOBS; i++)
		gpsu_uk.knob[i] = gpsu_user_held(i, &held) ? held :
				  gpsu_knobs[i].def;
	for (i = 0; i < GPSU_NKNOBS; i++) {
		const struct gpsu_knob *k = &gpsu_knobs[i];
		char env[64], *end;
		const char *e;
		uint64_t v;

		snprintf(env, sizeof(env), "GPSU_KNOB_%s", k->name);
		e = getenv(env);
		if (!e || !*e)
			continue;
		errno = 0;
		v = strtoull(e, &end, 0);
		if (k->type == GPSU_KNOB_WORDS)
			for (w = 0, v = ~0ULL, end = (char *)""; k->words[w]; w++)
				if (!strcmp(k->words[w], e))
					v = (uint64_t)w;
		if (errno || *end || end == e ||
		    gpsu_knob_apply(gpsu_uk.knob, i, v)) {
			fprintf(stderr,
				"libgpsu: native engine: %s=%s: not a value of the knob (Documentation/engines.rst)\n",
				env, e);
			return EINVAL;
		}
		if (gpsu_user_held(i, &held) && gpsu_uk.knob[i] != held) {
			fprintf(stderr,
				"libgpsu: native engine: %s=%s: the native engine cannot honour this knob\n",
				env, e);
			return ENOTSUP;
		}
	}
	return 0;
}

/* ---- publication for gpsctl ----------------------------------------- */

/* The directory of every native program's files; 0 or an errno. */
int gpsu_user_publish_root(char *buf, size_t len)
{
	const char *e = getenv("GPSU_STATS_DIR"), *x;
	int n;

	if (e && *e)
		n = snprintf(buf, len, "%s", e);
	else if ((x = getenv("XDG_RUNTIME_DIR")) && *x)
		n = snprintf(buf, len, "%s/gps", x);
	else
		n = snprintf(buf, len, "/tmp/gps-%u", (unsigned int)getuid());
	return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

/* @text into @dir/@name, whole or not at all (a new file renamed). */
static void gpsu_user_put(const char *dir, const char *name, const char *text)
{
	char path[512], tmp[520];
	size_t n = strlen(text);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return;
	if (write(fd, text, n) != (ssize_t)n) {
		close(fd);
		unlink(tmp);
		return;
	}
	close(fd);
	if (rename(tmp, path))
		unlink(tmp);
}

/*
 * The CPUs a device runs on, counted as the context counts them (the
 * publisher inherits the affinity of the thread that started the
 * library, where the context counted them).
 */
static int gpsu_user_cpus(const struct gpsu_engine_dev *info)
{
	static int cpus[GPS_MAX_DEVICE_CPUS];	/* under gpsu_uk.lock */

	return gpsu_cpus_of(info->node, info->cpu_share, info->cpu_shares,
			    cpus, GPS_MAX_DEVICE_CPUS);
}

/* Everything, under gpsu_uk.lock. */
static void gpsu_user_publish_locked(void)
{
	char sub[320], line[256], text[4096];
	size_t at;
	int d, i;

	if (!gpsu_uk.dir[0])
		return;
	snprintf(sub, sizeof(sub), "%s/sys", gpsu_uk.dir);
	for (i = 0, at = 0; i < GPSU_NKNOBS; i++) {
		const struct gpsu_knob *k = &gpsu_knobs[i];
		uint64_t v = gpsu_user_knob(i);
		int w;

		if (gpsu_knob_line(i, line, sizeof(line)) > 0 &&
		    at + strlen(line) < sizeof(text))
			at += (size_t)snprintf(text + at, sizeof(text) - at,
					       "%s", line);
		if (k->type == GPSU_KNOB_WORDS) {
			size_t l = 0;

			for (w = 0; k->words[w]; w++)
				l += (size_t)snprintf(line + l, sizeof(line) - l,
						      (uint64_t)w == v ? "[%s]%s" : "%s%s",
						      k->words[w],
						      k->words[w + 1] ? " " : "\n");
		} else {
			snprintf(line, sizeof(line), "%llu\n",
				 (unsigned long long)v);
		}
		gpsu_user_put(sub, k->name, line);
	}
	gpsu_user_put(sub, "knobs", text);
	snprintf(line, sizeof(line), "%d\n", gpsu_uk.ndev);
	gpsu_user_put(sub, "nr_devices", line);
	/* "<device> <node> <cpus> <mem_total> <mem_free> <replica_pages>" */
	for (d = 0, at = 0; d < gpsu_uk.ndev; d++) {
		struct gpsu_engine_dev info = { 0 };

		(void)gpsu_engine_user.device_info(d, &info);
		at += (size_t)snprintf(text + at, sizeof(text) - at,
				       "%d %d %d %llu %llu %llu\n", d, info.node,
				       gpsu_user_cpus(&info),
				       (unsigned long long)info.mem_total,
				       (unsigned long long)info.mem_free,
				       (unsigned long long)__atomic_load_n(
					       &gpsu_uk.cnt[d][GPSU_S(replica_pages)],
					       __ATOMIC_RELAXED));
	}
	gpsu_user_put(gpsu_uk.dir, "devices", text);
	for (d = 0; d < gpsu_uk.ndev; d++) {
		snprintf(sub, sizeof(sub), "%s/debug/node%d", gpsu_uk.dir, d);
		(void)mkdir(sub, 0755);
		for (i = 0, at = 0; i < GPSU_NSTATS; i++) {
			uint64_t v;

			if (gpsu_user_counter(d, i, &v))
				continue;
			at += (size_t)snprintf(text + at, sizeof(text) - at,
					       "%s %llu\n", gpsu_stats[i].name,
					       (unsigned long long)v);
		}
		gpsu_user_put(sub, "stats", text);
	}
}

static void gpsu_user_rm(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char path[512];

	if (!dp)
		return;
	while ((de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			gpsu_user_rm(path);
		else
			unlink(path);
	}
	closedir(dp);
	rmdir(dir);
}

/* Removes the files, under gpsu_uk.lock; nothing is published after. */
static void gpsu_user_unpublish_locked(void)
{
	if (gpsu_uk.dir[0])
		gpsu_user_rm(gpsu_uk.dir);
	gpsu_uk.dir[0] = '\0';
}

/*
 * A child after fork() does not own its parent's files, and must not
 * take the lock: the fork may have copied it held by the publisher,
 * which the child does not have.
 */
static void gpsu_user_at_exit(void)
{
	if (__atomic_load_n(&gpsu_uk.owner, __ATOMIC_RELAXED) != getpid())
		return;
	pthread_mutex_lock(&gpsu_uk.lock);
	gpsu_user_unpublish_locked();
	pthread_mutex_unlock(&gpsu_uk.lock);
}

/* The files of programs that are gone without exit() (killed, _exit). */
static void gpsu_user_sweep(const char *root)
{
	DIR *dp = opendir(root);
	struct dirent *de;
	char path[400];

	if (!dp)
		return;
	while ((de = readdir(dp))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld", pid);
		if (!access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%ld", root, pid);
		gpsu_user_rm(path);
	}
	closedir(dp);
}

static void *gpsu_user_publisher(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&gpsu_uk.lock);
	while (!gpsu_uk.stop) {
		gpsu_user_publish_locked();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += GPSU_PUBLISH_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&gpsu_uk.wake, &gpsu_uk.lock, &ts);
	}
	pthread_mutex_unlock(&gpsu_uk.lock);
	return NULL;
}

/*
 * Makes @root if it is not there; true when it is a directory (not a
 * link) of this user's that no one else can write. Else another user
 * could have made it first (/tmp/gps-<uid>), or a link there, and have
 * us write and sweep where it points.
 */
static bool gpsu_user_own_dir(const char *root)
{
	struct stat st;

	(void)mkdir(root, 0700);
	return !lstat(root, &st) && S_ISDIR(st.st_mode) &&
	       st.st_uid == getuid() && !(st.st_mode & 022);
}

/* Starts publishing (best effort: gpsctl alone depends on it). */
void gpsu_user_publish_start(void)
{
	static bool at_exit;
	char root[200], dir[sizeof(gpsu_uk.dir)], sub[sizeof(dir) + 8];
	pthread_condattr_t ca;
	const char *e = getenv("GPSU_STATS");

	if (e && !strcmp(e, "0"))
		return;
	if (gpsu_user_publish_root(root, sizeof(root)) ||
	    !gpsu_user_own_dir(root))
		return;
	gpsu_user_sweep(root);
	snprintf(dir, sizeof(dir), "%s/%d", root, (int)getpid());
	snprintf(sub, sizeof(sub), "%s/sys", dir);
	if ((mkdir(dir, 0755) && errno != EEXIST) ||
	    (mkdir(sub, 0755) && errno != EEXIST))
		return;
	snprintf(sub, sizeof(sub), "%s/debug", dir);
	(void)mkdir(sub, 0755);
	pthread_mutex_lock(&gpsu_uk.lock);
	memcpy(gpsu_uk.dir, dir, sizeof(dir));
	__atomic_store_n(&gpsu_uk.owner, getpid(), __ATOMIC_RELAXED);
	gpsu_uk.stop = false;
	/* there from the start: gpsctl lists the program at once */
	gpsu_user_publish_locked();
	pthread_mutex_unlock(&gpsu_uk.lock);
	if (!at_exit)
		at_exit = !atexit(gpsu_user_at_exit);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gpsu_uk.wake, &ca);
	pthread_condattr_destroy(&ca);
	gpsu_uk.running = !pthread_create(&gpsu_uk.thread, NULL,
					  gpsu_user_publisher, NULL);
}

void gpsu_user_publish_stop(void)
{
	pthread_mutex_lock(&gpsu_uk.lock);
	gpsu_uk.stop = true;
	pthread_cond_signal(&gpsu_uk.wake);
	pthread_mutex_unlock(&gpsu_uk.lock);
	if (gpsu_uk.running)
		pthread_join(gpsu_uk.thread, NULL);
	gpsu_uk.running = false;
	gpsu_user_at_exit();
}

