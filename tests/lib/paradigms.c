// SPDX-License-Identifier: MIT
/*
 * Description: every workload of build/bench/paradigms, in every paradigm
 * (memcpy, memcpy-needed, gps-auto, gps-paper, gps-all, um, um-fault, rdl,
 * home) at the quick size on 2 devices, gives the single-device run's
 * result: 9 records verify=ok, none FAIL, exit status 0; the page-size
 * sweep (-P) tags each record with its size and restores the knob.  To
 * keep make check short
 * it runs in one guest shape only: 2 nodes of 1 vCPU on 6.12 (outside
 * gps-vm: any host with 2 devices); elsewhere it skips.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

#define T_PARADIGMS	9	/* records with verify=ok per workload */

FIXTURE(bench) {
	int unused;
};

/*
 * Why this guest is not the one of @ndev devices, 6.12, 1 vCPU per node
 * that the fixtures run in: a reason in @why, or NULL to run.
 */
static const char *other_guest(int has, int ndev, char *why, size_t len)
{
	const char *series = getenv("GPS_VM_SERIES");
	const char *cpus = getenv("GPS_VM_CPUS");

	if (has != ndev)
		snprintf(why, len, "runs in the %d-node guest only (has %d)",
			 ndev, has);
	else if (series && strcmp(series, "6.12"))
		snprintf(why, len, "runs in the 6.12 guest only (this: %s)",
			 series);
	else if (cpus && strcmp(cpus, "1"))
		snprintf(why, len,
			 "runs with 1 vCPU per node only (this: %s)", cpus);
	else
		return NULL;
	return why;
}

FIXTURE_SETUP(bench)
{
	char why[96];
	int ndev;

	T_DEVICES(ndev);
	if (other_guest(ndev, 2, why, sizeof(why)))
		SKIP(return, "%s", why);
}

FIXTURE_TEARDOWN(bench)
{
}

/* build/tests/lib/paradigms -> build/bench/paradigms; -1 if not built */
static int paradigms_bin(char *bin, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(bin, len, "%s/../../bench/paradigms", dirname(self));
	return access(bin, X_OK) ? -1 : 0;
}

/*
 * Runs paradigms with @args; returns its exit status (-2: not built) and
 * counts its records verify=ok and verify=FAIL, and in @hits[i] those
 * holding @need[i], for i < @nneed.
 */
static int run_args(const char *args, const char *const *need, int nneed,
		    int *ok, int *fail, int *hits)
{
	char bin[PATH_MAX], cmd[2 * PATH_MAX], line[4096];
	FILE *f;
	int i, status;

	*ok = *fail = 0;
	for (i = 0; i < nneed; i++)
		hits[i] = 0;
	if (paradigms_bin(bin, sizeof(bin)))
		return -2;
	snprintf(cmd, sizeof(cmd), "%s %s", bin, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "workload="))
			continue;
		*ok += strstr(line, " verify=ok") != NULL;
		*fail += strstr(line, " verify=FAIL") != NULL;
		for (i = 0; i < nneed; i++)
			hits[i] += strstr(line, need[i]) != NULL;
		if (strstr(line, " verify=FAIL"))
			fprintf(stderr, "# %s", line);
	}
	status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

/* paradigms -q -i 2 for @workload in @plist (NULL: the default set) */
static int run_workload(const char *workload, const char *plist, int ndev,
			int *ok, int *fail)
{
	char args[256];

	snprintf(args, sizeof(args), "-q -i 2 -d %d -w %s%s%s", ndev,
		 workload, plist ? " -p " : "", plist ? plist : "");
	return run_args(args, NULL, 0, ok, fail, NULL);
}

#define T_WORKLOAD_P(name, arg, plist, nr)				\
TEST_F_TIMEOUT(bench, name, 180)					\
{									\
	int ok, fail, ret = run_workload(arg, plist, 2, &ok, &fail);	\
									\
	if (ret == -2)							\
		SKIP(return, "build/bench/paradigms not built");	\
	ASSERT_EQ(0, fail);						\
	ASSERT_EQ(nr, ok);						\
	ASSERT_EQ(0, ret);						\
}
#define T_WORKLOAD(name, arg)	T_WORKLOAD_P(name, arg, NULL, T_PARADIGMS)

/* each: 9 paradigms, every result as the single-device run's */
T_WORKLOAD(jacobi, "jacobi")
T_WORKLOAD(pagerank, "pagerank")
T_WORKLOAD(pagerank_push, "pagerank-push")
T_WORKLOAD(sssp, "sssp")
T_WORKLOAD(als, "als")
T_WORKLOAD(ct, "ct")
T_WORKLOAD(b2reqwp, "b2reqwp")
T_WORKLOAD(diffusion, "diffusion")
T_WORKLOAD(hit, "hit")

/*
 * The page-size sweep (-P): one record per size, tagged with the size the
 * allocations got, each verified; the knob is put back afterwards.
 */
TEST_F_TIMEOUT(bench, page_size_sweep, 180)
{
	static const char *const sizes[] = {
		"sweep=page page_size=4096 ", "sweep=page page_size=65536 ",
		"sweep=page page_size=2097152 ",
	};
	unsigned long long before, after;
	int i, ok, fail, hits[3], ret;

	ASSERT_EQ(0, t_knob_get("page_size", &before));
	ret = run_args("-q -i 2 -d 2 -w jacobi -p gps-auto "
		       "-P 4096,65536,2097152", sizes, 3, &ok, &fail, hits);
	if (ret == -2)
		SKIP(return, "build/bench/paradigms not built");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, fail);
	/* gps-auto at each of the 3 sizes (single's record is verify=ref) */
	ASSERT_EQ(3, ok);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(1, hits[i]) TH_LOG("%s", sizes[i]);
	ASSERT_EQ(0, t_knob_get("page_size", &after));
	EXPECT_EQ(before, after);
}

/*
 * hit on 4 devices, 12 times in gps-all and gps-paper with every changed
 * block through the write queue (bulk_blocks 0): its FFTs write bytes of
 * doubles back to earlier values, which a push that dropped superseded
 * bytes without updating its twin lost (about 1 run in 5 before the
 * fix).  Only in the 6.12 guest of 4 nodes x 1 vCPU.
 */
FIXTURE(hit4) {
	unsigned long long bulk;
	int have_bulk;
};

FIXTURE_SETUP(hit4)
{
	char why[96];
	int ndev;

	self->have_bulk = 0;
	T_DEVICES(ndev);
	if (other_guest(ndev, 4, why, sizeof(why)))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, t_knob_get("bulk_blocks", &self->bulk));
	self->have_bulk = 1;
	T_KNOB_SET("bulk_blocks", 0);
}

FIXTURE_TEARDOWN(hit4)
{
	if (self->have_bulk)
		EXPECT_EQ(0, t_knob_set("bulk_blocks", self->bulk));
}

TEST_F_TIMEOUT(hit4, queue_path_repeated, 300)
{
	int i, ok, fail, ret, bad = 0;

	for (i = 0; i < 12; i++) {
		ret = run_workload("hit", "single,gps-all,gps-paper", 4, &ok,
				   &fail);
		if (ret == -2)
			SKIP(return, "build/bench/paradigms not built");
		bad += fail;
		EXPECT_EQ(2, ok + fail);
	}
	EXPECT_EQ(0, bad);
}

TEST_HARNESS_MAIN
